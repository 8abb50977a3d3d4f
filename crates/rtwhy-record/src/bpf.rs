//! The eBPF breach detector: measures, in the kernel, how late each tracked thread ran
//! after its timer expired or it was woken, and reports every latency at or above a
//! threshold as a [`Breach`].
//!
//! The programs live in `bpf/detector.bpf.c` (compiled by `build.rs`). One object
//! carries three flavours of the same logic; [`BpfDetector::start`] loads the first that
//! works on the running kernel: `tp_btf`, then `raw_tp`, then classic `tracepoint`.
//! Times are `bpf_ktime_get_ns()` (CLOCK_MONOTONIC), equal to the timestamps of a
//! tracefs instance whose `trace_clock` is `mono`.
//!
//! ```no_run
//! use rtwhy_record::bpf::{BpfDetector, DetectorConfig};
//! use std::time::Duration;
//!
//! let cfg = DetectorConfig { threshold_ns: 100_000, ..DetectorConfig::default() };
//! let mut detector = BpfDetector::start(&cfg)?;
//! detector.track_process(4242)?;
//! for breach in detector.poll(Duration::from_millis(100))? {
//!     println!("{}", breach.record.to_marker());
//! }
//! # Ok::<(), rtwhy_record::RecordError>(())
//! ```

mod hist;
mod record;
mod sched;

use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, OpenObject, PrintLevel, RingBuffer};

use crate::{RecordError, Result};

pub use hist::{bounded, ThreadCpu, MAX_THREAD_CPUS};
pub use record::{parse_breach, BREACH_SIZE};
pub use sched::{
    parse_sched, CpuSched, SchedEncoder, SchedKind, SchedLog, SchedMode, SchedRecord,
    SCHED_REC_SIZE,
};

#[allow(
    clippy::all,
    clippy::pedantic,
    clippy::expect_used,
    clippy::unwrap_used,
    missing_docs,
    unsafe_code,
    unused_imports,
    unused_qualifications
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/detector.skel.rs"));
}

use skel::{DetectorSkel, DetectorSkelBuilder, OpenDetectorSkel};

/// How the detector's programs are attached to the kernel's tracepoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttachMode {
    /// BTF-typed tracepoints (`tp_btf`, kernel 5.5+ with BTF): typed task pointers.
    TpBtf,
    /// Raw tracepoints (`raw_tp`, 4.17+): the same arguments, read with probe reads.
    RawTp,
    /// Classic tracepoints (perf events on `events/<group>/<event>`): the event records,
    /// pids instead of task pointers; the woken task's run queue is only read when the
    /// wake-up targets the waker's CPU.
    Tracepoint,
}

impl AttachMode {
    /// The order [`BpfDetector::start`] tries them in.
    pub const ALL: [AttachMode; 3] = [AttachMode::TpBtf, AttachMode::RawTp, AttachMode::Tracepoint];

    /// The mode's name: `tp_btf`, `raw_tp` or `tracepoint`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AttachMode::TpBtf => "tp_btf",
            AttachMode::RawTp => "raw_tp",
            AttachMode::Tracepoint => "tracepoint",
        }
    }
}

impl std::fmt::Display for AttachMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the detector measures and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectorConfig {
    /// Latencies at or above this many nanoseconds are breaches.
    pub threshold_ns: u64,
    /// Measure only threads whose kernel prio is below 100 (SCHED_FIFO/SCHED_RR) when
    /// they are switched in.
    pub rt_only: bool,
    /// Try only this attach mode (tests); `None` tries `tp_btf`, `raw_tp`, `tracepoint`.
    pub force: Option<AttachMode>,
    /// Capture the kernel stack at the switch-in.
    pub stack: bool,
    /// The address of the kernel's `hrtimer_wakeup` (the callback of every sleeping
    /// thread's timer, [`crate::symbols::KernelSymbols::address_of`]): the timer programs
    /// then leave every other timer before their map lookup. `None`: every timer is
    /// looked up, as correct and slower.
    pub sleeper_fn: Option<u64>,
    /// Keep this many scheduler events per CPU in the detector's rings ([`SchedLog`]),
    /// for the captures; 0: none. Not in the `tracepoint` mode.
    pub sched_slots: u32,
}

impl Default for DetectorConfig {
    /// 100 us (the budget of a 1 kHz control loop), RT threads only, any mode, stacks.
    fn default() -> Self {
        DetectorConfig {
            threshold_ns: 100_000,
            rt_only: true,
            force: None,
            stack: true,
            sleeper_fn: None,
            sched_slots: 0,
        }
    }
}

/// One late wake-up, as the detector measured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// The measurement, `detector` set to `bpf`; `record.stack` is left empty.
    pub record: rtwhy_model::BreachRecord,
    /// Kernel stack at the switch-in, innermost first, as raw addresses (symbolize them
    /// with `/proc/kallsyms`). It is the stack of the task switched *out* (the
    /// tracepoint runs in its context): how it came to give up the CPU, e.g.
    /// `__schedule, schedule, do_nanosleep, ...` or a `cond_resched` deep in a kernel
    /// thread. The innermost frames are the probe's own plumbing (the BPF program,
    /// `bpf_trace_run4`, `__traceiter_sched_switch`; fewer in `tracepoint` mode): trim up
    /// to `__schedule`. Empty when stacks were not asked for or not available.
    pub stack: Vec<u64>,
    /// Kernel stack in the thread's timer interrupt when the timer ran at least the
    /// threshold after its expiry (`record.timer_fired` says when), innermost first:
    /// the probe's plumbing, the hrtimer code, the interrupt entry, then the code the
    /// interrupt interrupted. Empty when the timer was on time or stacks were off.
    pub timer_stack: Vec<u64>,
}

/// The loaded and attached detector. Dropping it detaches the programs.
pub struct BpfDetector {
    mode: AttachMode,
    // Field order is drop order: the ring buffer goes before the map it reads.
    ring: RingBuffer<'static>,
    received: Arc<Mutex<Vec<Breach>>>,
    // Never read: it keeps the ring buffer's map open for as long as `ring` polls it.
    _events: MapHandle,
    tracked_tgid: MapHandle,
    tracked_tid: MapHandle,
    lost: MapHandle,
    /// Per CPU, the largest upper bound of a wake-up counted unseen.
    unseen_latest: MapHandle,
    /// (thread, CPU) -> the slot of its histogram in `hist_slots`.
    hists: MapHandle,
    hist_slots: MapHandle,
    /// The slots free for the kernel to take.
    free_slots: MapHandle,
    /// Histograms of threads that exited, moved out of the kernel's table.
    retired: std::collections::BTreeMap<ThreadCpu, (String, rtwhy_model::Histogram)>,
    links: Vec<Link>,
    /// The scheduler events kept for the captures, when asked for.
    sched: Option<SchedLog>,
}

impl std::fmt::Debug for BpfDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfDetector")
            .field("mode", &self.mode)
            .field("links", &self.links.len())
            .finish_non_exhaustive()
    }
}

/// Indices of the `lost` map (see `detector.bpf.c`).
const LOST_BREACHES: u32 = 0;
const LOST_WAKEUPS: u32 = 1;
const UNSEEN_WAKEUPS: u32 = 2;

/// Values of the `tracked_tgid` map (see `detector.bpf.c`).
const TRACK_ALL_THREADS: u32 = 1;
const TRACK_LISTED_THREADS: u32 = 2;

const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

impl BpfDetector {
    /// Loads and attaches the detector, trying the attach modes in order (or only
    /// `cfg.force`). The error names what failed for each mode tried.
    pub fn start(cfg: &DetectorConfig) -> Result<BpfDetector> {
        let modes: Vec<AttachMode> = match cfg.force {
            Some(m) => vec![m],
            None => AttachMode::ALL.to_vec(),
        };
        let btf = Path::new(VMLINUX_BTF).exists();
        let mut failures: Vec<(AttachMode, String)> = Vec::new();
        for mode in modes {
            if mode != AttachMode::Tracepoint && !btf {
                failures.push((mode, format!("no BTF at {VMLINUX_BTF}")));
                continue;
            }
            match start_mode(cfg, mode) {
                Ok(d) => return Ok(d),
                Err(reason) => failures.push((mode, reason)),
            }
        }
        Err(RecordError::Bpf(explain(&failures)))
    }

    /// The attach mode that was loaded.
    pub fn mode(&self) -> AttachMode {
        self.mode
    }

    /// The scheduler events the programs keep (`DetectorConfig::sched_slots`); `None`
    /// when not asked for.
    pub fn sched_log(&self) -> Option<&SchedLog> {
        self.sched.as_ref()
    }

    /// Follows every thread of process `tgid`, present and future, and every process
    /// it forks from now on.
    pub fn track_process(&self, tgid: i32) -> Result<()> {
        let key = pid_key(tgid)?;
        self.tracked_tgid
            .update(&key, &TRACK_ALL_THREADS.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| RecordError::Bpf(format!("tracking process {tgid}: {e}")))
    }

    /// Follows the one thread `tid` (other threads of its process are left alone,
    /// unless the process is tracked as a whole).
    pub fn track_thread(&self, tid: i32) -> Result<()> {
        let key = pid_key(tid)?;
        let tgid = thread_group_of(tid)?;
        self.tracked_tid
            .update(&key, &1u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| RecordError::Bpf(format!("tracking thread {tid}: {e}")))?;
        // NO_EXIST: a process already tracked as a whole stays so.
        match self.tracked_tgid.update(
            &pid_key(tgid)?,
            &TRACK_LISTED_THREADS.to_ne_bytes(),
            MapFlags::NO_EXIST,
        ) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == libbpf_rs::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(RecordError::Bpf(format!("tracking thread {tid}: {e}"))),
        }
    }

    /// The processes followed as a whole and the single threads followed, as the
    /// kernel's maps hold them now (forked children included).
    pub fn tracked(&self) -> (Vec<i32>, Vec<i32>) {
        let keys = |m: &MapHandle, whole: Option<u32>| -> Vec<i32> {
            m.keys()
                .filter_map(|k| {
                    let key: [u8; 4] = k.as_slice().try_into().ok()?;
                    if let Some(want) = whole {
                        let v = m.lookup(&key, MapFlags::ANY).ok()??;
                        let v: [u8; 4] = v.as_slice().try_into().ok()?;
                        if u32::from_ne_bytes(v) != want {
                            return None;
                        }
                    }
                    i32::try_from(u32::from_ne_bytes(key)).ok()
                })
                .collect()
        };
        (
            keys(&self.tracked_tgid, Some(TRACK_ALL_THREADS)),
            keys(&self.tracked_tid, None),
        )
    }

    /// Waits at most `timeout` for breaches and returns those that arrived (possibly
    /// none).
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<Breach>> {
        if let Err(e) = self.ring.poll(timeout) {
            // A signal interrupting epoll_wait is not a failure of the detector.
            if e.kind() != libbpf_rs::ErrorKind::Interrupted {
                return Err(RecordError::Bpf(format!("reading the ring buffer: {e}")));
            }
        }
        Ok(std::mem::take(&mut *lock(&self.received)))
    }

    /// Breaches dropped in the kernel because the ring buffer was full.
    pub fn lost(&self) -> u64 {
        self.lost_count(LOST_BREACHES)
    }

    /// Wake-ups not counted because the kernel's table of histograms was full.
    pub fn wakeups_lost(&self) -> u64 {
        self.lost_count(LOST_WAKEUPS)
    }

    /// Wake-ups counted although no program ran at their wake-up or switch-in (found at
    /// the thread's switch-out; `unseen` in `bpf/detector.bpf.c`).
    pub fn wakeups_unseen(&self) -> u64 {
        self.lost_count(UNSEEN_WAKEUPS)
    }

    /// The latest any wake-up counted unseen can have been, ns: the largest time from
    /// its start to the thread's switch-out it was found at (its switch-in, estimated,
    /// lies before); 0 when none was.
    pub fn wakeups_unseen_latest_ns(&self) -> u64 {
        match self
            .unseen_latest
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        {
            Ok(Some(per_cpu)) => per_cpu
                .iter()
                .filter_map(|v| v.get(..8)?.try_into().ok().map(u64::from_ne_bytes))
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// Every measured wake-up so far, per thread and CPU, with the thread's name: the
    /// kernel's table, whose entries of threads that have exited are moved here (so the
    /// table holds the living threads only).
    pub fn wakeups(&mut self) -> Vec<(ThreadCpu, String, rtwhy_model::Histogram)> {
        let mut out: Vec<(ThreadCpu, String, rtwhy_model::Histogram)> = Vec::new();
        let keys: Vec<Vec<u8>> = self.hists.keys().collect();
        for key in keys {
            let Some(at) = hist::parse_key(&key) else {
                continue;
            };
            let Ok(Some(index)) = self.hists.lookup(&key, MapFlags::ANY) else {
                continue;
            };
            let Ok(Some(value)) = self.hist_slots.lookup(&index, MapFlags::ANY) else {
                continue;
            };
            let Some((comm, h)) = hist::parse_value(&value) else {
                continue;
            };
            if std::path::Path::new(&format!("/proc/{}", at.tid)).exists() {
                out.push((at, comm, h));
            } else if self.hists.delete(&key).is_ok() {
                // The slot goes back zeroed; a failure leaves it out of use (counted
                // as lost wake-ups once every slot is).
                let zero = vec![0u8; value.len()];
                if self.hist_slots.update(&index, &zero, MapFlags::ANY).is_ok() {
                    let _ = self.free_slots.update(&[], &index, MapFlags::ANY);
                }
                let at = bounded(&self.retired, at);
                let slot = self.retired.entry(at).or_default();
                if slot.0.is_empty() {
                    slot.0 = comm;
                }
                slot.1.merge(&h);
            }
        }
        for (at, (comm, h)) in &self.retired {
            match out.iter_mut().find(|(a, _, _)| a == at) {
                // A tid used again by a new thread: both counted under it.
                Some((_, _, live)) => live.merge(h),
                None => out.push((*at, comm.clone(), h.clone())),
            }
        }
        out.sort_by_key(|(at, _, _)| *at);
        out
    }

    fn lost_count(&self, index: u32) -> u64 {
        match self.lost.lookup(&index.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(v)) => v
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_ne_bytes),
            _ => 0,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn pid_key(pid: i32) -> Result<[u8; 4]> {
    u32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .map(u32::to_ne_bytes)
        .ok_or_else(|| RecordError::Bpf(format!("invalid pid {pid}")))
}

/// The process (thread group) a thread belongs to, from `/proc/<tid>/status`.
fn thread_group_of(tid: i32) -> Result<i32> {
    let path = format!("/proc/{tid}/status");
    let status = std::fs::read_to_string(&path)
        .map_err(|e| RecordError::Bpf(format!("thread {tid}: {path}: {e}")))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| RecordError::Bpf(format!("thread {tid}: no Tgid in {path}")))
}

/// libbpf's messages during one load, kept to explain a failure in one line instead of
/// letting libbpf print the verifier log to stderr.
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn capture_libbpf(level: PrintLevel, msg: String) {
    if level == PrintLevel::Debug {
        return;
    }
    let mut log = lock(&LIBBPF_LOG);
    // The verifier log of one program can run to thousands of lines; only the last
    // ones explain the failure.
    if log.len() > 200 {
        log.drain(..100);
    }
    log.extend(msg.lines().map(str::to_owned));
}

/// The most telling line libbpf logged: its last "failed" line, else the last line.
fn libbpf_reason(log: &[String]) -> Option<String> {
    log.iter()
        .rev()
        .find(|l| l.contains("failed") || l.contains("error"))
        .or_else(|| log.last())
        .map(|l| l.trim().trim_start_matches("libbpf: ").to_owned())
}

/// One line for all the modes that failed: the reason alone when they agree.
fn explain(failures: &[(AttachMode, String)]) -> String {
    match failures {
        [] => "no attach mode to try".to_owned(),
        [(_, first), rest @ ..] if rest.iter().all(|(_, r)| r == first) => first.clone(),
        _ => failures
            .iter()
            .map(|(m, r)| format!("{m}: {r}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn start_mode(cfg: &DetectorConfig, mode: AttachMode) -> std::result::Result<BpfDetector, String> {
    lock(&LIBBPF_LOG).clear();
    let previous = libbpf_rs::set_print(Some((PrintLevel::Warn, capture_libbpf)));
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let result = load_and_attach(cfg, mode, &mut storage);
    libbpf_rs::set_print(previous);
    let log = std::mem::take(&mut *lock(&LIBBPF_LOG));
    result.map_err(|(what, e)| {
        let reason = if e.kind() == libbpf_rs::ErrorKind::PermissionDenied {
            if rtwhy_sys::is_root() {
                // Root refused: the kernel's own policy (lockdown, an LSM, a user
                // namespace without the capabilities), not a missing privilege.
                format!(
                    "permission denied although rtwhy runs as root: the kernel refuses these BPF programs (kernel lockdown, a security module, or a namespace without CAP_BPF){}",
                    libbpf_reason(&log).map(|r| format!("; libbpf: {r}")).unwrap_or_default()
                )
            } else {
                "permission denied (need CAP_BPF+CAP_PERFMON or root)".to_owned()
            }
        } else {
            libbpf_reason(&log).unwrap_or_else(|| e.to_string())
        };
        format!("{what}: {reason}")
    })
}

type Step<T> = std::result::Result<T, (&'static str, libbpf_rs::Error)>;

fn load_and_attach(
    cfg: &DetectorConfig,
    mode: AttachMode,
    storage: &mut MaybeUninit<OpenObject>,
) -> Step<BpfDetector> {
    let open = DetectorSkelBuilder::default()
        .open(storage)
        .map_err(|e| ("opening the BPF object", e))?;
    let open = configure(open, cfg, mode).map_err(|e| ("configuring the BPF object", e))?;
    let mut skel: DetectorSkel<'_> = open.load().map_err(|e| ("loading programs", e))?;
    // Every histogram slot free before the first program runs.
    let free_slots = MapHandle::try_from(&skel.maps.free_slots).map_err(|e| ("opening maps", e))?;
    for slot in 0..skel.maps.hist_slots.max_entries() {
        free_slots
            .update(&[], &slot.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ("filling the histograms' free slots", e))?;
    }
    skel.attach().map_err(|e| ("attaching programs", e))?;

    let links = take_links(&mut skel.links);
    let handle = |m: &libbpf_rs::MapMut<'_>| MapHandle::try_from(m);
    let maps = &skel.maps;
    let events = handle(&maps.events).map_err(|e| ("opening the ring buffer", e))?;
    let tracked_tgid = handle(&maps.tracked_tgid).map_err(|e| ("opening maps", e))?;
    let tracked_tid = handle(&maps.tracked_tid).map_err(|e| ("opening maps", e))?;
    let lost = handle(&maps.lost).map_err(|e| ("opening maps", e))?;
    let unseen_latest = handle(&maps.unseen_latest).map_err(|e| ("opening maps", e))?;
    let hists = handle(&maps.hists).map_err(|e| ("opening maps", e))?;
    let hist_slots = handle(&maps.hist_slots).map_err(|e| ("opening maps", e))?;
    let sched = match sched_slots(cfg, mode) {
        0 => None,
        slots => {
            let ring = handle(&maps.sched_ring).map_err(|e| ("opening maps", e))?;
            let heads = handle(&maps.sched_head).map_err(|e| ("opening maps", e))?;
            let modes = handle(&maps.sched_mode).map_err(|e| ("opening maps", e))?;
            let cpus = maps.sched_mode.max_entries() as usize;
            Some(
                SchedLog::open(ring, heads, modes, slots, cpus).map_err(|e| {
                    (
                        "mapping the scheduler events",
                        libbpf_rs::Error::from(std::io::Error::other(e.to_string())),
                    )
                })?,
            )
        }
    };

    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&received);
    let threshold = cfg.threshold_ns;
    let mut builder = libbpf_rs::RingBufferBuilder::new();
    builder
        .add(&events, move |data: &[u8]| {
            if let Some(b) = parse_breach(data, threshold) {
                lock(&sink).push(b);
            }
            0
        })
        .map_err(|e| ("opening the ring buffer", e))?;
    let ring = builder
        .build()
        .map_err(|e| ("opening the ring buffer", e))?;
    // `skel` (the object and its program fds) is dropped here: the links keep the
    // programs attached and the map handles keep the maps.
    Ok(BpfDetector {
        mode,
        ring,
        received,
        _events: events,
        tracked_tgid,
        tracked_tid,
        lost,
        unseen_latest,
        hists,
        hist_slots,
        free_slots,
        retired: std::collections::BTreeMap::new(),
        links,
        sched,
    })
}

fn configure<'obj>(
    mut open: OpenDetectorSkel<'obj>,
    cfg: &DetectorConfig,
    mode: AttachMode,
) -> libbpf_rs::Result<OpenDetectorSkel<'obj>> {
    let rodata = open
        .maps
        .rodata_data
        .as_deref_mut()
        .ok_or_else(|| libbpf_rs::Error::from(std::io::Error::other("no .rodata")))?;
    rodata.threshold_ns = cfg.threshold_ns;
    rodata.rt_only = cfg.rt_only;
    rodata.want_stack = cfg.stack;
    rodata.sleeper_fn = cfg.sleeper_fn.unwrap_or(0);
    let slots = sched_slots(cfg, mode);
    rodata.sched_slots = slots;
    rodata.switch_state_arg = slots > 0 && switch_has_state_arg();
    if slots > 0 {
        let cpus = libbpf_rs::num_possible_cpus()
            .map_err(|e| libbpf_rs::Error::from(std::io::Error::other(e.to_string())))?
            .max(1) as u32;
        let records = slots.checked_mul(cpus).ok_or_else(|| {
            libbpf_rs::Error::from(std::io::Error::other(format!(
                "{slots} scheduler events x {cpus} CPUs do not fit one map"
            )))
        })?;
        open.maps.sched_ring.set_max_entries(records)?;
        open.maps.sched_mode.set_max_entries(cpus)?;
    }

    // A thread's state lives in task-local storage where the programs hold typed task
    // pointers (tp_btf), else in a table by tid: only the one in use is created, so a
    // kernel without task storage still loads the other flavours.
    let btf = mode == AttachMode::TpBtf;
    open.maps.thread_states.set_autocreate(btf)?;
    open.maps.threads.set_autocreate(!btf)?;

    let p = &mut open.progs;
    let flavours = [
        (
            AttachMode::TpBtf,
            [
                &mut p.btf_sched_switch,
                &mut p.btf_sched_waking,
                &mut p.btf_hrtimer_start,
                &mut p.btf_hrtimer_cancel,
                &mut p.btf_hrtimer_expire_entry,
                &mut p.btf_sched_process_fork,
                &mut p.btf_sched_process_exit,
            ],
        ),
        (
            AttachMode::RawTp,
            [
                &mut p.raw_sched_switch,
                &mut p.raw_sched_waking,
                &mut p.raw_hrtimer_start,
                &mut p.raw_hrtimer_cancel,
                &mut p.raw_hrtimer_expire_entry,
                &mut p.raw_sched_process_fork,
                &mut p.raw_sched_process_exit,
            ],
        ),
        (
            AttachMode::Tracepoint,
            [
                &mut p.tp_sched_switch,
                &mut p.tp_sched_waking,
                &mut p.tp_hrtimer_start,
                &mut p.tp_hrtimer_cancel,
                &mut p.tp_hrtimer_expire_entry,
                &mut p.tp_task_newtask,
                &mut p.tp_sched_process_exit,
            ],
        ),
    ];
    for (m, progs) in flavours {
        for prog in progs {
            prog.set_autoload(m == mode);
        }
    }
    Ok(open)
}

/// Whether this kernel's sched_switch tracepoint passes the task's state (its fourth
/// argument, 5.18 and later): the BTF type of its probe functions,
/// `btf_trace_sched_switch`, a pointer to a prototype with five parameters (the probe's
/// data pointer first).
fn switch_has_state_arg() -> bool {
    use libbpf_rs::btf::types::{FuncProto, Typedef};
    let Ok(btf) = libbpf_rs::btf::Btf::from_vmlinux() else {
        return false;
    };
    btf.type_by_name::<Typedef<'_>>("btf_trace_sched_switch")
        .and_then(|t| t.next_type())
        .and_then(|p| p.next_type())
        .and_then(|f| FuncProto::try_from(f).ok())
        .is_some_and(|f| f.len() >= 5)
}

/// The records per CPU the programs keep: none in the `tracepoint` mode, whose programs
/// have no task pointers to read them from.
fn sched_slots(cfg: &DetectorConfig, mode: AttachMode) -> u32 {
    if mode == AttachMode::Tracepoint {
        0
    } else {
        cfg.sched_slots
    }
}

fn take_links(l: &mut skel::DetectorLinks) -> Vec<Link> {
    [
        l.btf_sched_switch.take(),
        l.btf_sched_waking.take(),
        l.btf_hrtimer_start.take(),
        l.btf_hrtimer_cancel.take(),
        l.btf_hrtimer_expire_entry.take(),
        l.btf_sched_process_fork.take(),
        l.btf_sched_process_exit.take(),
        l.raw_sched_switch.take(),
        l.raw_sched_waking.take(),
        l.raw_hrtimer_start.take(),
        l.raw_hrtimer_cancel.take(),
        l.raw_hrtimer_expire_entry.take(),
        l.raw_sched_process_fork.take(),
        l.raw_sched_process_exit.take(),
        l.tp_sched_switch.take(),
        l.tp_sched_waking.take(),
        l.tp_hrtimer_start.take(),
        l.tp_hrtimer_cancel.take(),
        l.tp_hrtimer_expire_entry.take(),
        l.tp_task_newtask.take(),
        l.tp_sched_process_exit.take(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_reason_when_all_modes_agree() {
        let denied = "loading programs: permission denied".to_owned();
        let all: Vec<_> = AttachMode::ALL
            .iter()
            .map(|m| (*m, denied.clone()))
            .collect();
        assert_eq!(explain(&all), denied);
        let mixed = [
            (
                AttachMode::TpBtf,
                "no BTF at /sys/kernel/btf/vmlinux".to_owned(),
            ),
            (
                AttachMode::Tracepoint,
                "attaching programs: no tracefs".to_owned(),
            ),
        ];
        assert_eq!(
            explain(&mixed),
            "tp_btf: no BTF at /sys/kernel/btf/vmlinux; tracepoint: attaching programs: no tracefs"
        );
    }

    #[test]
    fn libbpf_reason_prefers_the_failure_line() {
        let log = [
            "libbpf: prog 'btf_sched_switch': BPF program load failed: Invalid argument",
            "libbpf: prog 'btf_sched_switch': -- BEGIN PROG LOAD LOG --",
            "R1 invalid mem access 'scalar'",
            "-- END PROG LOAD LOG --",
        ]
        .map(str::to_owned);
        assert_eq!(
            libbpf_reason(&log).unwrap(),
            "prog 'btf_sched_switch': BPF program load failed: Invalid argument"
        );
        assert_eq!(libbpf_reason(&[]), None);
    }

    #[test]
    fn detector_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<BpfDetector>();
    }

    #[test]
    fn mode_names() {
        let names: Vec<_> = AttachMode::ALL.iter().map(AttachMode::as_str).collect();
        assert_eq!(names, ["tp_btf", "raw_tp", "tracepoint"]);
    }

    #[test]
    fn pids_must_be_positive() {
        assert!(pid_key(0).is_err());
        assert!(pid_key(-5).is_err());
        assert_eq!(pid_key(7).unwrap(), 7u32.to_ne_bytes());
    }
}
