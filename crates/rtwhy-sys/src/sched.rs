//! Scheduling system calls the standard library lacks: scheduling policy, CPU
//! affinity, thread ids, absolute sleeps on `CLOCK_MONOTONIC`, and futex-based mutexes
//! with and without priority inheritance (the lab's priority-inversion scenarios need
//! both kinds, with the exact futex operations C programs use).

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether this process runs with effective uid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Makes the calling thread SCHED_FIFO at `priority` (1-99).
pub fn set_fifo(priority: i32) -> io::Result<()> {
    set_policy(libc::SCHED_FIFO, priority)
}

/// Makes task `pid` (another thread, a kernel thread) SCHED_FIFO at `priority`.
pub fn set_task_fifo(pid: i32, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; a wrong pid only fails with ESRCH.
    if unsafe { libc::sched_setscheduler(pid, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes the calling thread SCHED_OTHER again.
pub fn set_normal() -> io::Result<()> {
    set_policy(libc::SCHED_OTHER, 0)
}

fn set_policy(policy: i32, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Restricts the calling thread to `cpus`. Raise a thread's priority before pinning
/// it: a thread pinned first to a CPU monopolised by real-time work may never run again
/// to raise it.
pub fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    set_affinity_mask(&cpu_set(cpus)?)
}

/// `cpus` as a `cpu_set_t`.
fn cpu_set(cpus: &[u32]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array, valid when zeroed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: `c` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    Ok(set)
}

/// Restricts task `pid` (any thread, a kernel thread too) to `cpus`. Kernel threads
/// bound to one CPU refuse (EINVAL).
pub fn set_task_affinity(pid: i32, cpus: &[u32]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t of the size passed; a bad pid is an error.
    if unsafe { libc::sched_setaffinity(pid, std::mem::size_of_val(&set), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's CPU mask.
pub fn affinity_mask() -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain old data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(set)
}

/// The CPUs task `tid` may run on; `None` when it is gone (or not visible).
pub fn task_cpus(tid: i32) -> Option<Vec<u32>> {
    // SAFETY: cpu_set_t is plain old data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; a bad tid is an error.
    if unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) } != 0 {
        return None;
    }
    Some(
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .map(|c| c as u32)
            .collect(),
    )
}

/// Whether task `tid` runs in a real-time class (SCHED_FIFO, SCHED_RR or
/// SCHED_DEADLINE); `None` when it is gone.
pub fn task_is_realtime(tid: i32) -> Option<bool> {
    const SCHED_DEADLINE: i32 = 6;
    // SAFETY: plain system call on a pid; a bad one returns -1.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    if policy < 0 {
        return None;
    }
    // SCHED_RESET_ON_FORK may be or-ed in.
    let policy = policy & !0x4000_0000;
    Some(policy == libc::SCHED_FIFO || policy == libc::SCHED_RR || policy == SCHED_DEADLINE)
}

/// Sets the calling thread's CPU mask.
pub fn set_affinity_mask(set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(set), set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock of the BPF detector, the probe and
/// the recording instances.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clocks used here always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Sleeps until `CLOCK_MONOTONIC` reaches `deadline_ns` (an absolute hrtimer, as
/// cyclictest's), resuming after signals.
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(deadline_ns / 1_000_000_000).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::try_from(deadline_ns % 1_000_000_000).unwrap_or(0),
    };
    loop {
        // SAFETY: `ts` is a valid timespec; with TIMER_ABSTIME the remaining-time
        // pointer is unused and may be null.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Raises this process's soft limit of open files to its hard limit; returns the new
/// limit.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    lim.rlim_cur = lim.rlim_max;
    // SAFETY: `lim` is a valid rlimit whose soft value does not exceed its hard one.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(lim.rlim_cur)
}

/// One `poll()` with a timeout of zero over `fds` (for reading): the kernel visits
/// every descriptor in one pass. Returns how many are ready.
pub fn poll_now(fds: &[std::os::fd::BorrowedFd<'_>]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `set` is a valid array of `set.len()` pollfd entries, each naming a
    // descriptor kept open by the borrows in `fds`; a zero timeout never blocks.
    let n = unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Which kind of mutex a [`LabMutex`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// A plain mutex: waiters sleep in `FUTEX_WAIT`, as glibc's default
    /// `pthread_mutex_t` does. The kernel does not know who holds it, so a preempted
    /// holder is not boosted: priority inversion.
    Plain,
    /// A priority-inheritance mutex: the futex word holds the owner's tid and waiters
    /// call `FUTEX_LOCK_PI`, as glibc's `PTHREAD_PRIO_INHERIT` mutexes do; the kernel
    /// boosts the holder to the highest waiter's priority.
    PriorityInheritance,
}

const FUTEX_WAITERS: u32 = 0x8000_0000;

/// A mutex whose waits look in a trace exactly like a C program's (`sys_enter_futex`
/// with `FUTEX_WAIT` or `FUTEX_LOCK_PI`, private), without a guard: `lock` and
/// `unlock` are called by the lab's scenario code in pairs.
#[derive(Debug)]
pub struct LabMutex {
    word: AtomicU32,
    kind: LockKind,
}

impl LabMutex {
    /// An unlocked mutex.
    pub fn new(kind: LockKind) -> LabMutex {
        LabMutex {
            word: AtomicU32::new(0),
            kind,
        }
    }

    /// The kind given to [`LabMutex::new`].
    pub fn kind(&self) -> LockKind {
        self.kind
    }

    /// Takes the mutex, sleeping in the kernel while another thread holds it.
    pub fn lock(&self) {
        match self.kind {
            LockKind::Plain => {
                // 0 free, 1 held, 2 held with waiters.
                if self
                    .word
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                while self.word.swap(2, Ordering::Acquire) != 0 {
                    self.futex(libc::FUTEX_WAIT, 2);
                }
            }
            LockKind::PriorityInheritance => {
                let tid = gettid() as u32;
                if self
                    .word
                    .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                // The kernel takes the lock for us (owner tid written into the word)
                // or fails only on a bug of ours (EDEADLK); EINTR cannot happen
                // without a timeout, EAGAIN means the owner was exiting: retry.
                while self.futex(libc::FUTEX_LOCK_PI, 0) != 0 {
                    if self.word.load(Ordering::Relaxed) & !FUTEX_WAITERS == tid {
                        return;
                    }
                }
            }
        }
    }

    /// Releases the mutex taken by this thread, waking a waiter.
    pub fn unlock(&self) {
        match self.kind {
            LockKind::Plain => {
                if self.word.swap(0, Ordering::Release) == 2 {
                    self.futex(libc::FUTEX_WAKE, 1);
                }
            }
            LockKind::PriorityInheritance => {
                let tid = gettid() as u32;
                if self
                    .word
                    .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
                    .is_err()
                {
                    // Waiters queued in the kernel: it hands the lock over.
                    self.futex(libc::FUTEX_UNLOCK_PI, 0);
                }
            }
        }
    }

    fn futex(&self, op: i32, val: u32) -> i64 {
        // SAFETY: the futex word is a valid, aligned u32 that lives as long as `self`;
        // no timeout, second address or third value is used by these operations.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                val,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn hammer(kind: LockKind) {
        let m = Arc::new(LabMutex::new(kind));
        let counter = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                let counter = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        m.lock();
                        // A non-atomic read-modify-write under the lock: lost updates
                        // would show a broken mutex.
                        let v = counter.load(Ordering::Relaxed);
                        std::hint::spin_loop();
                        counter.store(v + 1, Ordering::Relaxed);
                        m.unlock();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.load(Ordering::Relaxed), 8000);
        assert_eq!(m.word.load(Ordering::Relaxed), 0, "left locked");
    }

    #[test]
    fn plain_mutex_excludes() {
        hammer(LockKind::Plain);
    }

    #[test]
    fn pi_mutex_excludes() {
        hammer(LockKind::PriorityInheritance);
    }

    #[test]
    fn sleep_until_waits_for_the_deadline() {
        let deadline = monotonic_ns() + 2_000_000;
        sleep_until(deadline);
        assert!(monotonic_ns() >= deadline);
    }

    #[test]
    fn poll_visits_every_descriptor() {
        use std::os::fd::AsFd;
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let clones: Vec<_> = (0..10).map(|_| a.try_clone().unwrap()).collect();
        let fds: Vec<_> = clones.iter().map(|c| c.as_fd()).collect();
        assert_eq!(poll_now(&fds).unwrap(), 0);
        use std::io::Write;
        (&b).write_all(b"x").unwrap();
        assert_eq!(poll_now(&fds).unwrap(), 10);
        assert!(raise_open_files_limit().unwrap() >= 10);
    }

    #[test]
    fn affinity_round_trips() {
        let saved = affinity_mask().unwrap();
        set_affinity(&[0]).unwrap();
        let now = affinity_mask().unwrap();
        // SAFETY: reads bit 0 (below CPU_SETSIZE) of a valid cpu_set_t.
        let cpu0 = unsafe { libc::CPU_ISSET(0, &now) };
        assert!(cpu0);
        set_affinity_mask(&saved).unwrap();
        assert!(set_affinity(&[u32::MAX]).is_err());
    }
}
