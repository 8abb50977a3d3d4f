//! Whole-disk reads: every sector of some disks read again and again, so their
//! controller interrupts for each block it has ready.
//!
//! One thread per disk (`lab-diskread`), SCHED_OTHER on `cpu`, reads its disk from the
//! first sector to the last with O_DIRECT, 1 MiB at a time, then starts over. On a
//! controller that moves its data by programmed I/O (an old PATA one, or any SFF one
//! under `libata.dma=0`) each interrupt's handler copies the sectors word by word itself,
//! on whatever CPU the interrupt is routed to (on PREEMPT_RT, in its `irq/N-name`
//! thread there). The disks are opened read-only: nothing is written.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::Duration;

use rtwhy_sys as sys;

use super::{aligned, mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// One read's size.
const CHUNK: usize = 1 << 20;
/// The alignment O_DIRECT wants of the buffer (a page covers every logical block size).
const ALIGN: usize = 4096;

/// What the readers do.
#[derive(Debug, Clone)]
pub struct DiskReads {
    /// CPU of the reading threads (not the victim's).
    pub cpu: u32,
    /// The block devices to read (`/dev/sda`...), one thread each (1-8).
    pub disks: Vec<PathBuf>,
    /// Wait before reading.
    pub delay: Duration,
    /// How long to read.
    pub length: Duration,
}

/// Starts the readers.
pub fn start(cfg: DiskReads, stop: Stop) -> Result<Load> {
    if !(1..=8).contains(&cfg.disks.len()) || cfg.length.is_zero() || cfg.length > MAX_LOAD {
        return Err(LabError::Refused(format!(
            "diskreads: 1-8 disks, at most {} s",
            MAX_LOAD.as_secs()
        )));
    }
    // Opened here, so that a disk that cannot be read is an error before anything runs.
    let mut files = Vec::new();
    for disk in &cfg.disks {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(disk)
            .map_err(|source| LabError::Io {
                path: disk.clone(),
                source,
            })?;
        files.push((disk.clone(), file));
    }
    let start = sys::monotonic_ns() + cfg.delay.as_nanos() as u64;
    let end = start + cfg.length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    for (disk, file) in files {
        let stop = stop.clone();
        load.spawn("lab-diskread", move || {
            pin(cfg.cpu, "diskreads")?;
            let mut raw = vec![0u8; CHUNK + ALIGN];
            let buf = aligned(&mut raw, ALIGN, CHUNK);
            if !stop.sleep_until(start) {
                return Ok("lab-diskread: stopped before it started".into());
            }
            let (mut offset, mut bytes, mut passes) = (0u64, 0u64, 0u64);
            while sys::monotonic_ns() < end && !stop.requested() {
                let n = file.read_at(buf, offset).map_err(|e| {
                    LabError::Load(format!("diskreads: {}: O_DIRECT read: {e}", disk.display()))
                })?;
                if n == 0 {
                    if offset == 0 {
                        return Err(LabError::Load(format!(
                            "diskreads: {} is empty",
                            disk.display()
                        )));
                    }
                    offset = 0;
                    passes += 1;
                    continue;
                }
                offset += n as u64;
                bytes += n as u64;
            }
            Ok(format!(
                "lab-diskread: {} MiB of {} ({passes} whole passes)",
                bytes >> 20,
                disk.display()
            ))
        })?;
    }
    let names: Vec<String> = cfg.disks.iter().map(|d| d.display().to_string()).collect();
    mark(&format!(
        "diskreads: {} read with O_DIRECT, 1 MiB at a time, from CPU {} for {} ms\n",
        names.join(" and "),
        cfg.cpu,
        cfg.length.as_millis()
    ));
    Ok(load)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(disks: Vec<PathBuf>, length: Duration) -> DiskReads {
        DiskReads {
            cpu: 0,
            disks,
            delay: Duration::ZERO,
            length,
        }
    }

    #[test]
    fn no_disk_or_a_missing_one_is_refused_before_anything_runs() {
        let err = start(reads(vec![], Duration::from_millis(10)), Stop::default()).unwrap_err();
        assert!(matches!(err, LabError::Refused(_)), "{err}");
        let missing = PathBuf::from("/nonexistent/rtwhy-lab-disk");
        let err = start(
            reads(vec![missing.clone()], Duration::from_millis(10)),
            Stop::default(),
        )
        .unwrap_err();
        assert!(
            matches!(&err, LabError::Io { path, .. } if *path == missing),
            "{err}"
        );
    }

    /// A 3 MiB file stands in for a disk: read to its end, then again from its start.
    #[test]
    fn a_disk_is_read_whole_and_again() {
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("disk");
        std::fs::write(&disk, vec![7u8; 3 * CHUNK]).unwrap();
        let load = start(
            reads(vec![disk], Duration::from_millis(300)),
            Stop::default(),
        )
        .unwrap();
        let said = load.wait().unwrap().join("\n");
        let passes: u64 = said
            .split(" (")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{said}"));
        assert!(passes >= 1, "{said}");
    }
}
