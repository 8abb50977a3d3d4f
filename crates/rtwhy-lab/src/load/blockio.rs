//! Block I/O completions: many 4 KiB O_DIRECT writes in flight, so the device
//! interrupts often and each interrupt completes a batch.
//!
//! `depth` threads (`lab-blockio`), SCHED_OTHER on `cpu`, each write 4 KiB with
//! O_DIRECT to their own place of one 8 MiB file in `dir`, again and again. The
//! completions arrive on whatever CPU the device's interrupt is routed to. The file is
//! removed at the end.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rtwhy_sys as sys;

use super::{aligned, mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

const BLOCK: usize = 4096;
const FILE_BLOCKS: u64 = 2048;

/// What the writers do.
#[derive(Debug, Clone)]
pub struct BlockIo {
    /// CPU of the writing threads (not the victim's).
    pub cpu: u32,
    /// Directory on the block device whose interrupts are wanted.
    pub dir: PathBuf,
    /// Writes in flight (1-256 threads).
    pub depth: u32,
    /// Wait before writing.
    pub delay: Duration,
    /// How long to write.
    pub length: Duration,
}

/// Removes the scratch file when the last writer is done.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Starts the writers.
pub fn start(cfg: BlockIo, stop: Stop) -> Result<Load> {
    if !(1..=256).contains(&cfg.depth) || cfg.length.is_zero() || cfg.length > MAX_LOAD {
        return Err(LabError::Refused(format!(
            "blockio: 1-256 writes in flight, at most {} s",
            MAX_LOAD.as_secs()
        )));
    }
    let path = cfg
        .dir
        .join(format!(".rtwhy-lab-blockio-{}", std::process::id()));
    let io = |source| LabError::Io {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(io)?;
    let scratch = Arc::new(Scratch(path.clone()));
    file.set_len(FILE_BLOCKS * BLOCK as u64).map_err(io)?;
    let file = Arc::new(file);
    let start = sys::monotonic_ns() + cfg.delay.as_nanos() as u64;
    let end = start + cfg.length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    for i in 0..cfg.depth {
        let (file, stop, scratch) = (file.clone(), stop.clone(), scratch.clone());
        load.spawn("lab-blockio", move || {
            pin(cfg.cpu, "blockio")?;
            let mut raw = vec![0x5au8; 2 * BLOCK];
            let buf = aligned(&mut raw, BLOCK, BLOCK);
            if !stop.sleep_until(start) {
                return Ok("lab-blockio: stopped before it started".into());
            }
            let offset = (u64::from(i) * 2 % FILE_BLOCKS) * BLOCK as u64;
            let mut writes = 0u64;
            while sys::monotonic_ns() < end && !stop.requested() {
                file.write_at(buf, offset)
                    .map_err(|e| LabError::Load(format!("blockio: O_DIRECT write: {e}")))?;
                writes += 1;
            }
            drop(scratch);
            Ok(format!("lab-blockio: {writes} writes"))
        })?;
    }
    mark(&format!(
        "blockio: {} O_DIRECT 4 KiB writes in flight from CPU {} to {} for {} ms\n",
        cfg.depth,
        cfg.cpu,
        path.display(),
        cfg.length.as_millis()
    ));
    Ok(load)
}
