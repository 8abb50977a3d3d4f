//! The recorded command: forked and held at a gate until the detector follows it, so
//! not one of its threads or children escapes; its exit status passed through.

use std::ffi::{CString, OsStr};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the command could not be started.
#[derive(Debug)]
pub enum SpawnError {
    /// The command line is empty.
    NoCommand,
    /// An argument, the program path or the environment holds a NUL byte.
    Nul(&'static str),
    /// `command` could not be found, forked or executed.
    Io {
        /// The command as given.
        command: String,
        /// What the system said.
        source: io::Error,
    },
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::NoCommand => write!(f, "no command given"),
            SpawnError::Nul(what) => write!(f, "{what} contains a NUL byte"),
            SpawnError::Io { command, source } => write!(f, "cannot run {command}: {source}"),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

type Result<T> = std::result::Result<T, SpawnError>;

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

/// A command started by [`Child::spawn`]; released with [`Child::release`]; terminated
/// (SIGTERM, then SIGKILL after 2 s) if dropped while running.
#[derive(Debug)]
pub struct Child {
    pid: i32,
    gate: Option<OwnedFd>,
    exec_status: Option<OwnedFd>,
    exit: Option<Exit>,
}

fn find_program(name: &OsStr) -> Option<PathBuf> {
    let p = Path::new(name);
    if name.as_bytes().contains(&b'/') {
        return Some(p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(p))
        .find(|c| std::fs::metadata(c).is_ok_and(|m| m.is_file()))
}

fn cstr(s: &[u8], what: &'static str) -> Result<CString> {
    CString::new(s).map_err(|_| SpawnError::Nul(what))
}

/// A pipe whose both ends close on exec: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` holds two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are fresh descriptors nobody else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Child {
    /// Forks `argv`; the child waits at the gate until [`Child::release`]. With
    /// `affinity` the child gets that CPU mask back (the recorder may have moved itself
    /// off the real-time CPUs; the command keeps what the user gave).
    pub fn spawn(argv: &[String], affinity: Option<&libc::cpu_set_t>) -> Result<Child> {
        let Some(first) = argv.first() else {
            return Err(SpawnError::NoCommand);
        };
        let spawn_err = |source: io::Error| SpawnError::Io {
            command: first.clone(),
            source,
        };
        let program = find_program(OsStr::new(first)).ok_or_else(|| {
            spawn_err(io::Error::new(io::ErrorKind::NotFound, "not found in PATH"))
        })?;
        // Everything the child needs is prepared here: between fork and exec it may only
        // make async-signal-safe calls.
        let path = cstr(program.as_os_str().as_bytes(), "the program path")?;
        let args: Vec<CString> = argv
            .iter()
            .map(|a| cstr(a.as_bytes(), "an argument"))
            .collect::<Result<_>>()?;
        let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        arg_ptrs.push(std::ptr::null());
        let env: Vec<CString> = std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).ok()
            })
            .collect();
        let mut env_ptrs: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
        env_ptrs.push(std::ptr::null());

        let (gate_read, gate_write) = pipe().map_err(spawn_err)?;
        let (status_read, status_write) = pipe().map_err(spawn_err)?;
        let (gate_fd, status_fd) = (gate_read.as_raw_fd(), status_write.as_raw_fd());
        let parent = std::process::id() as i32;
        let mask = affinity.copied();
        // SAFETY: fork in a multi-threaded process; the child only calls async-signal-safe
        // functions (prctl, getppid, sched_setaffinity, read, write, execve, _exit) on
        // memory prepared above, and never returns or drops anything.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_err(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: see above; the child leaves this block only through execve or _exit.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                if libc::getppid() != parent {
                    libc::_exit(126);
                }
                if let Some(m) = &mask {
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), m);
                }
                let mut b = 0u8;
                loop {
                    let n = libc::read(gate_fd, (&mut b as *mut u8).cast(), 1);
                    if n >= 0 || *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
                libc::execve(path.as_ptr(), arg_ptrs.as_ptr(), env_ptrs.as_ptr());
                let err = *libc::__errno_location();
                libc::write(status_fd, (&err as *const i32).cast(), 4);
                libc::_exit(127);
            }
        }
        // The parent keeps the gate's write end and the status pipe's read end; the
        // other two close here.
        drop((gate_read, status_write));
        Ok(Child {
            pid,
            gate: Some(gate_write),
            exec_status: Some(status_read),
            exit: None,
        })
    }

    /// The command's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Opens the gate: the command executes now. Fails when it cannot be executed.
    pub fn release(&mut self, command: &str) -> Result<()> {
        if let Some(g) = self.gate.take() {
            // SAFETY: writes one byte from a static buffer to our write end of the gate
            // pipe, which `g` keeps open for the call.
            unsafe { libc::write(g.as_raw_fd(), b"g".as_ptr().cast(), 1) };
        }
        let Some(fd) = self.exec_status.take() else {
            return Ok(());
        };
        let mut err = 0i32;
        // SAFETY: reads at most 4 bytes into `err` from the status pipe `fd` keeps open;
        // the child's end closes at a successful exec.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut err as *mut i32).cast(), 4) };
        drop(fd);
        if n == 4 {
            let _ = self.wait();
            return Err(SpawnError::Io {
                command: command.to_string(),
                source: io::Error::from_raw_os_error(err),
            });
        }
        Ok(())
    }

    fn reap(&mut self, flags: i32) -> Option<Exit> {
        if self.exit.is_some() {
            return self.exit;
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(self.pid, &mut status, flags) };
        if r == self.pid {
            self.exit = Some(if libc::WIFSIGNALED(status) {
                Exit::Signal(libc::WTERMSIG(status))
            } else {
                Exit::Code(libc::WEXITSTATUS(status))
            });
        } else if r < 0 {
            // Not our child any more (reaped elsewhere): treat as gone.
            self.exit = Some(Exit::Code(0));
        }
        self.exit
    }

    /// Its exit, if it has ended (does not block).
    pub fn try_wait(&mut self) -> Option<Exit> {
        self.reap(libc::WNOHANG)
    }

    /// Waits for it to end.
    pub fn wait(&mut self) -> Option<Exit> {
        loop {
            match self.reap(0) {
                Some(e) => return Some(e),
                None if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => continue,
                None => return None,
            }
        }
    }

    /// Sends it a signal.
    pub fn signal(&self, sig: i32) {
        if self.exit.is_none() {
            // SAFETY: kill on our own, not yet reaped, child.
            unsafe { libc::kill(self.pid, sig) };
        }
    }

    /// SIGTERM, up to `grace` to end, then SIGKILL; returns how it ended.
    pub fn terminate(&mut self, grace: Duration) -> Option<Exit> {
        if self.try_wait().is_some() {
            return self.exit;
        }
        self.signal(libc::SIGTERM);
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if self.try_wait().is_some() {
                return self.exit;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.signal(libc::SIGKILL);
        self.wait()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(g) = self.gate.take() {
            // Never released: the command must not run at all.
            self.signal(libc::SIGKILL);
            let _ = self.wait();
            drop(g);
        }
        self.exec_status = None;
        if self.exit.is_none() {
            self.terminate(Duration::from_secs(2));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_signals_come_back() {
        let mut c = Child::spawn(&["sh".into(), "-c".into(), "exit 7".into()], None).unwrap();
        c.release("sh").unwrap();
        assert_eq!(c.wait(), Some(Exit::Code(7)));
        let mut c =
            Child::spawn(&["sh".into(), "-c".into(), "kill -SEGV $$".into()], None).unwrap();
        c.release("sh").unwrap();
        assert_eq!(c.wait(), Some(Exit::Signal(libc::SIGSEGV)));
    }

    #[test]
    fn a_missing_program_is_an_error_not_a_zombie() {
        assert!(Child::spawn(&["/nonexistent/prog".into()], None)
            .and_then(|mut c| c.release("/nonexistent/prog"))
            .is_err());
        assert!(Child::spawn(&["no-such-program-rtwhy".into()], None).is_err());
    }

    #[test]
    fn a_dropped_child_is_terminated() {
        let mut c = Child::spawn(&["sleep".into(), "30".into()], None).unwrap();
        c.release("sleep").unwrap();
        let pid = c.pid();
        let t = Instant::now();
        drop(c);
        assert!(t.elapsed() < Duration::from_secs(3));
        // SAFETY: probing a pid with signal 0.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1);
    }
}
