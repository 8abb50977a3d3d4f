//! The scheduler events the detector keeps for the recorded CPUs (`rtwhy record
//! --sched-events bpf`): `struct sched_rec` in `bpf/detector.bpf.c`, one ring of
//! records per CPU in a map user space has mapped, read when a capture is saved and
//! written into it as the kernel's own `sched_switch` and `sched_waking` records.
//!
//! A tracefs event, once enabled, costs every CPU its probe at each occurrence, also
//! where the instance records nothing (`tracing_cpumask`); the detector's programs run
//! at every context switch and wake-up anyway, and on a CPU that is not recorded they
//! leave after one array lookup.

use std::mem::{offset_of, size_of};

use std::os::fd::AsFd;

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use rtwhy_decode::endian::Endian;
use rtwhy_decode::format::EventFormat;
use rtwhy_decode::meta::TraceMeta;
use rtwhy_sys::shared::SharedMemory;

use super::skel::types::sched_rec as Layout;
use crate::{RecordError, Result};

/// Size of one record in bytes.
pub const SCHED_REC_SIZE: usize = size_of::<Layout>();

/// `kind` values (`SCHED_REC_*` in `bpf/detector.bpf.c`).
const KIND_SWITCH: u32 = 1;
const KIND_WAKING: u32 = 2;

macro_rules! at {
    ($f:ident) => {
        offset_of!(Layout, $f)
    };
}

/// What the programs keep of one CPU's scheduler events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedMode {
    /// Nothing: the CPU is not recorded.
    Off = 0,
    /// Every context switch and wake-up.
    Full = 1,
    /// Every context switch; wake-ups only of real-time tasks and of tasks woken
    /// towards a full CPU (the lean rule, `crate::lean`).
    Lean = 2,
}

/// Which event a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedKind {
    /// `sched_switch`: `pid`/`prio`/`comm` are the task switched out, `next_*` the one in.
    Switch,
    /// `sched_waking`: `pid`/`prio`/`comm` are the woken task, `next_pid` its CPU.
    Waking,
}

/// One kept scheduler event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedRecord {
    /// CLOCK_MONOTONIC ns (the `mono` trace clock).
    pub ts: u64,
    /// Which event.
    pub kind: SchedKind,
    /// The task current when it happened (the waker; the task switched out).
    pub common_pid: i32,
    /// `prev_pid` / the woken task.
    pub pid: i32,
    /// `prev_prio` / the woken task's prio.
    pub prio: i32,
    /// `next_pid` / `target_cpu`.
    pub next_pid: i32,
    /// `next_prio`.
    pub next_prio: i32,
    /// `prev_state` as `sched_switch` reports it.
    pub prev_state: i64,
    /// `prev_comm` / the woken task's comm.
    pub comm: [u8; 16],
    /// `next_comm`.
    pub next_comm: [u8; 16],
}

fn bytes<const N: usize>(data: &[u8], at: usize) -> Option<[u8; N]> {
    data.get(at..at + N)?.try_into().ok()
}

fn i32_at(data: &[u8], at: usize) -> Option<i32> {
    bytes(data, at).map(i32::from_ne_bytes)
}

/// Parses one record; `None` for a slot never written or not a known kind.
pub fn parse_sched(data: &[u8]) -> Option<SchedRecord> {
    let kind = match bytes(data, at!(kind)).map(u32::from_ne_bytes)? {
        KIND_SWITCH => SchedKind::Switch,
        KIND_WAKING => SchedKind::Waking,
        _ => return None,
    };
    Some(SchedRecord {
        ts: bytes(data, at!(ts)).map(u64::from_ne_bytes)?,
        kind,
        common_pid: i32_at(data, at!(common_pid))?,
        pid: i32_at(data, at!(pid))?,
        prio: i32_at(data, at!(prio))?,
        next_pid: i32_at(data, at!(next_pid))?,
        next_prio: i32_at(data, at!(next_prio))?,
        prev_state: bytes(data, at!(prev_state)).map(i64::from_ne_bytes)?,
        comm: bytes(data, at!(comm))?,
        next_comm: bytes(data, at!(next_comm))?,
    })
}

/// The loaded rings: `slots` records per CPU for `cpus` CPUs.
#[derive(Debug)]
pub struct SchedLog {
    memory: SharedMemory,
    heads: MapHandle,
    modes: MapHandle,
    slots: u64,
    cpus: usize,
    // Keeps the ring's map alive as long as it is mapped.
    _ring: MapHandle,
}

impl SchedLog {
    /// The rings of a loaded detector: maps `ring` (`slots` x `cpus` records).
    pub(super) fn open(
        ring: MapHandle,
        heads: MapHandle,
        modes: MapHandle,
        slots: u32,
        cpus: usize,
    ) -> Result<SchedLog> {
        let len = SCHED_REC_SIZE * slots as usize * cpus;
        let memory = SharedMemory::map_readonly(ring.as_fd(), len).map_err(|e| {
            RecordError::Bpf(format!(
                "mapping the scheduler events' rings ({len} bytes): {e}"
            ))
        })?;
        Ok(SchedLog {
            memory,
            heads,
            modes,
            slots: u64::from(slots),
            cpus,
            _ring: ring,
        })
    }

    /// Records kept per CPU.
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Sets what CPU `cpu` keeps from now on.
    pub fn set_mode(&self, cpu: u32, mode: SchedMode) -> Result<()> {
        if cpu as usize >= self.cpus {
            return Ok(());
        }
        self.modes
            .update(
                &cpu.to_ne_bytes(),
                &(mode as u32).to_ne_bytes(),
                MapFlags::ANY,
            )
            .map_err(|e| RecordError::Bpf(format!("setting CPU {cpu}'s scheduler events: {e}")))
    }

    fn heads(&self) -> Vec<u64> {
        match self.heads.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(per_cpu)) => per_cpu
                .iter()
                .map(|v| bytes(v, 0).map_or(0, u64::from_ne_bytes))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Every CPU's records from `from` to `to` (ns), oldest first. A record is taken
    /// only when it was complete before the copy began (below the head read then) and
    /// no newer one can have been written over it before the copy ended.
    pub fn records(&self, from: u64, to: u64) -> Vec<CpuSched> {
        let before = self.heads();
        let ring = SCHED_REC_SIZE * self.slots as usize;
        let mut copies = Vec::with_capacity(self.cpus);
        for cpu in 0..self.cpus {
            // A CPU never recorded (head 0: a CPU left out by --cpus) has nothing to copy.
            let mut buf = Vec::new();
            if before.get(cpu).is_some_and(|&h| h > 0) {
                buf.resize(ring, 0);
                if !self.memory.copy_out(cpu * ring, &mut buf) {
                    buf.clear();
                }
            }
            copies.push(buf);
        }
        let after = self.heads();
        let mut out = Vec::with_capacity(self.cpus);
        for (cpu, buf) in copies.iter().enumerate() {
            let (Some(&end), Some(&later)) = (before.get(cpu), after.get(cpu)) else {
                out.push(CpuSched::default());
                continue;
            };
            // Record i's slot is written again by record i + slots, which may have been
            // under way (head not yet moved) when `later` was read.
            let start = (later + 2).saturating_sub(self.slots);
            let mut all: Vec<SchedRecord> = (start..end)
                .filter_map(|i| {
                    let at = (i % self.slots) as usize * SCHED_REC_SIZE;
                    parse_sched(buf.get(at..at + SCHED_REC_SIZE)?)
                })
                .collect();
            all.sort_by_key(|r| r.ts);
            let since = (start > 0).then(|| all.first().map_or(to, |r| r.ts));
            all.retain(|r| r.ts >= from && r.ts <= to);
            out.push(CpuSched {
                records: all,
                since: since.filter(|&t| t > from),
            });
        }
        out
    }
}

/// One CPU's kept scheduler events in a window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSched {
    /// The records, oldest first.
    pub records: Vec<SchedRecord>,
    /// When older records of the window were overwritten (the ring went round): the
    /// time from which they are complete. `None`: complete for the whole window.
    pub since: Option<u64>,
}

/// Writes [`SchedRecord`]s as the records of the kernel's `sched:sched_switch` and
/// `sched:sched_waking` events, field by field at the offsets of this kernel's formats
/// (`common_flags` and `common_preempt_count` are 0: the programs do not read them).
#[derive(Debug, Clone)]
pub struct SchedEncoder {
    endian: Endian,
    switch: Option<EventFormat>,
    waking: Option<EventFormat>,
}

impl SchedEncoder {
    /// The encoder for the machine `meta` describes; the formats it lacks are skipped.
    pub fn new(meta: &TraceMeta) -> SchedEncoder {
        SchedEncoder {
            endian: meta.endian,
            switch: meta.format_named("sched", "sched_switch").cloned(),
            waking: meta.format_named("sched", "sched_waking").cloned(),
        }
    }

    /// The record's payload (from `common_type`) into `out`; false when this kernel has
    /// no format for it.
    pub fn encode(&self, r: &SchedRecord, out: &mut Vec<u8>) -> bool {
        let format = match r.kind {
            SchedKind::Switch => self.switch.as_ref(),
            SchedKind::Waking => self.waking.as_ref(),
        };
        let Some(format) = format else {
            return false;
        };
        out.clear();
        let len = format
            .common_fields
            .iter()
            .chain(&format.fields)
            .map(|f| f.offset + f.size)
            .max()
            .unwrap_or(0);
        out.resize(len, 0);
        for f in format.common_fields.iter().chain(&format.fields) {
            let comm = |c: &[u8; 16]| Some(c.to_vec());
            let text = match (r.kind, f.name.as_str()) {
                (SchedKind::Switch, "prev_comm") | (SchedKind::Waking, "comm") => comm(&r.comm),
                (SchedKind::Switch, "next_comm") => comm(&r.next_comm),
                _ => None,
            };
            if let Some(t) = text {
                let n = t.len().min(f.size);
                out[f.offset..f.offset + n].copy_from_slice(&t[..n]);
                continue;
            }
            let value: i64 = match (r.kind, f.name.as_str()) {
                (_, "common_type") => i64::from(format.id),
                (_, "common_pid") => i64::from(r.common_pid),
                (SchedKind::Switch, "prev_pid") | (SchedKind::Waking, "pid") => i64::from(r.pid),
                (SchedKind::Switch, "prev_prio") | (SchedKind::Waking, "prio") => i64::from(r.prio),
                (SchedKind::Switch, "prev_state") => r.prev_state,
                (SchedKind::Switch, "next_pid") | (SchedKind::Waking, "target_cpu") => {
                    i64::from(r.next_pid)
                }
                (SchedKind::Switch, "next_prio") => i64::from(r.next_prio),
                // Kernels before 4.x had it; always 1 since.
                (SchedKind::Waking, "success") => 1,
                _ => 0,
            };
            if matches!(f.size, 1 | 2 | 4 | 8) {
                let mut word = Vec::with_capacity(8);
                self.endian.put_uint(&mut word, value as u64, f.size);
                out[f.offset..f.offset + f.size].copy_from_slice(&word);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(kind: u32, ts: u64) -> Vec<u8> {
        let mut b = vec![0u8; SCHED_REC_SIZE];
        b[at!(ts)..at!(ts) + 8].copy_from_slice(&ts.to_ne_bytes());
        b[at!(kind)..at!(kind) + 4].copy_from_slice(&kind.to_ne_bytes());
        b[at!(pid)..at!(pid) + 4].copy_from_slice(&42i32.to_ne_bytes());
        b[at!(comm)..at!(comm) + 4].copy_from_slice(b"cyc\0");
        b
    }

    #[test]
    fn records_parse_and_empty_slots_do_not() {
        let r = parse_sched(&raw(KIND_SWITCH, 7)).unwrap();
        assert_eq!((r.ts, r.kind, r.pid), (7, SchedKind::Switch, 42));
        assert_eq!(&r.comm[..4], b"cyc\0");
        assert_eq!(
            parse_sched(&raw(KIND_WAKING, 8)).unwrap().kind,
            SchedKind::Waking
        );
        assert!(parse_sched(&raw(0, 9)).is_none());
        assert!(parse_sched(&raw(KIND_SWITCH, 9)[..SCHED_REC_SIZE - 1]).is_none());
    }
}
