//! Memory shared with the kernel: a read-only mapping of a descriptor (a BPF array
//! map created with `BPF_F_MMAPABLE`), which the kernel's programs go on writing while
//! user space copies out of it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// A read-only shared mapping of the first `len` bytes of a descriptor, unmapped on drop.
#[derive(Debug)]
pub struct SharedMemory {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is only read, through `copy_out`, which takes no reference into
// it; the pointer stays valid until drop, whichever thread holds the value.
unsafe impl Send for SharedMemory {}
// SAFETY: as above: concurrent `copy_out`s only read.
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    /// Maps `len` bytes of `fd` from offset 0, shared and read-only.
    pub fn map_readonly(fd: BorrowedFd<'_>, len: usize) -> io::Result<SharedMemory> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty mapping"));
        }
        // SAFETY: a new mapping chosen by the kernel (no address given), of a descriptor
        // the caller keeps open for the call; the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMemory { ptr, len })
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: a mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `out.len()` bytes from `offset` into `out`; false (nothing copied) when
    /// the range is not inside the mapping. The kernel may be writing the same bytes:
    /// the copy is of whatever they hold meanwhile, and the caller checks what it got.
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> bool {
        match offset.checked_add(out.len()) {
            Some(end) if end <= self.len => {}
            _ => return false,
        }
        // SAFETY: [offset, offset + out.len()) lies inside the live mapping (checked
        // above), `out` is a distinct buffer of that length; byte copies of memory other
        // writers change are torn at worst, which the caller's checks allow for.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.cast::<u8>().add(offset),
                out.as_mut_ptr(),
                out.len(),
            );
        }
        true
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and nothing refers into
        // the mapping (copy_out hands out copies only).
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn copies_what_the_file_holds_and_refuses_outside_ranges() {
        let mut f = tempfile_in_tmp();
        f.write_all(b"0123456789").unwrap();
        let m = SharedMemory::map_readonly(f.as_fd(), 10).unwrap();
        let mut out = [0u8; 4];
        assert!(m.copy_out(3, &mut out));
        assert_eq!(&out, b"3456");
        assert!(!m.copy_out(8, &mut out));
        assert!(!m.copy_out(usize::MAX, &mut out));
        assert_eq!(m.len(), 10);
    }

    fn tempfile_in_tmp() -> std::fs::File {
        let path = std::env::temp_dir().join(format!("rtwhy-shared-{}", std::process::id()));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        f
    }
}
