//! File-system system calls the standard library lacks: the type of a mounted file
//! system, mounting tracefs, unmounting.

use std::ffi::CString;
use std::io;
use std::path::Path;

/// tracefs's `f_type` in `statfs`.
pub const TRACEFS_MAGIC: i64 = 0x7472_6163;

/// The `f_type` of the file system mounted at (or holding) `path`.
pub fn fs_type(path: &Path) -> io::Result<i64> {
    let c = c_path(path)?;
    // SAFETY: statfs is plain old data; zeroed is a valid value for it.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid C string and `st` a valid out-pointer for the call.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.f_type as i64)
}

/// `mount -t tracefs nodev AT`.
pub fn mount_tracefs(at: &Path) -> io::Result<()> {
    let target = c_path(at)?;
    let (src, fstype) = (c"nodev", c"tracefs");
    // SAFETY: all pointers are valid NUL-terminated strings; data is null.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Unmounts the file system mounted at `at`.
pub fn umount(at: &Path) -> io::Result<()> {
    let c = c_path(at)?;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::umount(c.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("path {} contains a NUL byte", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_is_not_tracefs_and_a_nul_path_is_an_error() {
        assert_ne!(fs_type(Path::new("/proc")).unwrap(), TRACEFS_MAGIC);
        assert!(fs_type(Path::new("/no/such/dir/rtwhy")).is_err());
        let nul = std::ffi::OsStr::new("a\0b");
        let e = fs_type(Path::new(nul)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
