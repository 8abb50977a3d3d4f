//! Facts about the running host that only a system call gives: the kernel's release
//! and version, the local time, locking memory.

use std::sync::OnceLock;

/// What `uname -a` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uname {
    /// The kernel's name (`Linux`).
    pub sysname: String,
    /// The host name.
    pub nodename: String,
    /// The kernel's release (`uname -r`).
    pub release: String,
    /// The kernel's version (`uname -v`): build number, preemption model, date.
    pub version: String,
    /// The machine (`x86_64`, `aarch64`).
    pub machine: String,
}

impl Uname {
    /// The five fields in `uname -a`'s order, separated by spaces.
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.sysname, self.nodename, self.release, self.version, self.machine
        )
    }
}

/// The running kernel and host, or `None` when uname fails.
pub fn uname() -> Option<Uname> {
    // SAFETY: utsname is plain bytes, valid when zeroed; uname fills it and returns 0 on
    // success, so the fields are NUL-terminated strings afterwards.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uts` is a valid, writable utsname.
    if unsafe { libc::uname(&mut uts) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    };
    Some(Uname {
        sysname: field(&uts.sysname),
        nodename: field(&uts.nodename),
        release: field(&uts.release),
        version: field(&uts.version),
        machine: field(&uts.machine),
    })
}

/// A calendar time in the local time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    /// Year, e.g. 2026.
    pub year: i32,
    /// Month, 1-12.
    pub month: u32,
    /// Day of the month, 1-31.
    pub day: u32,
    /// Hour, 0-23.
    pub hour: u32,
    /// Minute, 0-59.
    pub minute: u32,
    /// Second, 0-60.
    pub second: u32,
}

/// Now in the local time zone, or the seconds since the epoch when the zone cannot be
/// applied.
pub fn local_now() -> Result<LocalTime, i64> {
    // SAFETY: time with a null pointer only returns the time.
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: tm is plain old data; localtime_r fills it from `now`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return Err(now);
    }
    let part = |v: libc::c_int| u32::try_from(v).unwrap_or(0);
    Ok(LocalTime {
        year: tm.tm_year + 1900,
        month: part(tm.tm_mon + 1),
        day: part(tm.tm_mday),
        hour: part(tm.tm_hour),
        minute: part(tm.tm_min),
        second: part(tm.tm_sec),
    })
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`, tried once per process; true if it worked
/// (a real-time thread must not take page faults).
pub fn lock_memory() -> bool {
    static LOCKED: OnceLock<bool> = OnceLock::new();
    // SAFETY: mlockall takes flags only and changes no memory contents.
    *LOCKED.get_or_init(|| unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uname_names_this_kernel() {
        let u = uname().unwrap();
        let proc_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(u.release, proc_release.trim());
        assert_eq!(u.sysname, "Linux");
        assert!(!u.version.is_empty() && !u.machine.is_empty());
        assert!(u.line().contains(&format!(" {} ", u.release)));
    }

    #[test]
    fn local_time_is_a_calendar_time() {
        let t = local_now().unwrap();
        assert!(t.year >= 2024, "{t:?}");
        assert!(
            (1..=12).contains(&t.month) && (1..=31).contains(&t.day),
            "{t:?}"
        );
        assert!(t.hour < 24 && t.minute < 60 && t.second <= 60, "{t:?}");
    }
}
