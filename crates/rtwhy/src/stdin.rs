//! `-` as a trace: standard input (a pipe from `trace-cmd report`, a paste from the
//! clipboard, a streamed trace.dat) copied to an unlinked temporary file, which every
//! reader then opens by path like any trace.
//!
//! The readers need a file they can open more than once and seek in (the format is
//! recognised from the first bytes, a trace.dat is read by section, report text is read
//! ahead for its fact markers), so a pipe is spooled whole first, up to [`STDIN_MAX`].
//! The copy is unlinked as soon as it is created and reopened through
//! `/proc/self/fd/N`: nothing is left behind, even when rtwhy is killed.
//! Any other path that is not a regular file (`/dev/stdin`, `<(cmd)`, a FIFO) is
//! spooled the same way, since it too can be read only once.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};

/// At most this much of standard input is kept (a trace.dat of a long recording is
/// hundreds of megabytes; beyond this, save it to a file and give its path).
pub const STDIN_MAX: u64 = 4 << 30;

/// How the spooled input is named to the user.
pub const STDIN_NAME: &str = "<stdin>";

/// The path the spooled copy is opened by, and what the user gave.
static SPOOLED: OnceLock<(PathBuf, String)> = OnceLock::new();

/// The copy of a one-pass input; keeps it alive while it is read.
pub struct Spool {
    _file: File,
    /// A named copy where `/proc/self/fd` cannot reopen it, removed on drop.
    named: Option<PathBuf>,
}

impl Drop for Spool {
    fn drop(&mut self) {
        if let Some(p) = &self.named {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// When `path` is `-` or can be read only once, copies it to a temporary file and
/// points `path` at the copy; the returned [`Spool`] must outlive every read of it.
pub fn take(path: &mut PathBuf) -> Result<Option<Spool>> {
    let dash = path.as_os_str() == "-";
    if !dash {
        match std::fs::metadata(&*path) {
            // Regular files, directories (session directories) and missing paths are
            // left to the readers, which explain each.
            Ok(m) if m.is_file() || m.is_dir() => return Ok(None),
            Err(_) => return Ok(None),
            Ok(_) => {}
        }
    }
    let given = if dash {
        STDIN_NAME.to_string()
    } else {
        path.display().to_string()
    };
    let (spool, at) = if dash {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            bail!("{STDIN_NAME}: standard input is a terminal; pipe a trace into it (`trace-cmd report | rtwhy analyze -`) or give a file");
        }
        spool(&mut stdin.lock(), &given)?
    } else {
        let mut f = File::open(&*path).with_context(|| format!("cannot open {given}"))?;
        spool(&mut f, &given)?
    };
    let _ = SPOOLED.set((at.clone(), given));
    *path = at;
    Ok(Some(spool))
}

/// The name to show for `path`: what the user gave for a spooled input.
pub fn shown(path: &Path) -> String {
    match SPOOLED.get() {
        Some((at, given)) if at == path => given.clone(),
        _ => path.display().to_string(),
    }
}

/// Whether `path` is a spooled copy.
pub fn is_spooled(path: &Path) -> bool {
    SPOOLED.get().is_some_and(|(at, _)| at == path)
}

/// `msg` with the spooled copy's path replaced by what the user gave (errors of the
/// readers name the path they opened).
pub fn unalias(msg: &str) -> String {
    match SPOOLED.get() {
        Some((at, given)) => msg.replace(&at.display().to_string(), given),
        None => msg.to_string(),
    }
}

/// Copies `from` (at most [`STDIN_MAX`] bytes) into a new temporary file.
fn spool(from: &mut dyn Read, given: &str) -> Result<(Spool, PathBuf)> {
    let dir = std::env::temp_dir();
    let (mut file, named) = create_temp(&dir)
        .with_context(|| format!("cannot keep a copy of {given} in {}", dir.display()))?;
    // Unlinked at once: the open file is the only reference.
    let _ = std::fs::remove_file(&named);
    let copied = std::io::copy(&mut from.take(STDIN_MAX + 1), &mut file)
        .with_context(|| format!("cannot copy {given} to a temporary file"))?;
    if copied > STDIN_MAX {
        bail!(
            "{given}: more than {} GiB; save it to a file and give its path",
            STDIN_MAX >> 30
        );
    }
    file.flush()?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let by_fd = PathBuf::from(format!("/proc/self/fd/{fd}"));
    if File::open(&by_fd).is_ok() {
        return Ok((
            Spool {
                _file: file,
                named: None,
            },
            by_fd,
        ));
    }
    // No /proc: the copy needs a name again.
    let (mut again, named) = create_temp(&dir)
        .with_context(|| format!("cannot keep a copy of {given} in {}", dir.display()))?;
    let mut f = file;
    std::io::Seek::rewind(&mut f)?;
    std::io::copy(&mut f, &mut again)
        .with_context(|| format!("cannot copy {given} to {}", named.display()))?;
    Ok((
        Spool {
            _file: again,
            named: Some(named.clone()),
        },
        named,
    ))
}

/// A new file `rtwhy-stdin-PID-N` in `dir`, created exclusively.
fn create_temp(dir: &Path) -> std::io::Result<(File, PathBuf)> {
    let mut last = None;
    for n in 0..100u32 {
        let p = dir.join(format!("rtwhy-stdin-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(f) => return Ok((f, p)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}
