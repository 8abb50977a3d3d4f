//! Live test of the eBPF breach detector against the real peer: cyclictest measuring its
//! own wake-ups on CPU 1 while a bounded SCHED_FIFO spinner makes them late. Each attach
//! mode is loaded in turn (forced) and must report breaches that agree with what
//! cyclictest itself sees, for the tracked cyclictest only.
//!
//! Needs root, BTF, cyclictest and a second CPU. Without them the test is skipped, but
//! under `CI=true` or `RTWHY_LIVE_TESTS=1` that is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rtwhy_record::bpf::{AttachMode, BpfDetector, Breach, DetectorConfig, SchedKind, SchedMode};

/// The modes run one at a time: they share CPU 1.
static SERIAL: Mutex<()> = Mutex::new(());

const THRESHOLD_NS: u64 = 50_000;
const SPINNER: &str = "rtwhy-spinner";
/// The victim's CPU; CPU 0 never gets a FIFO busy loop.
const CPU: u32 = 1;
/// Kernel addresses on x86_64 and arm64 are all above this.
const KERNEL_TEXT: u64 = 0xffff_0000_0000_0000;

fn live_capable() -> bool {
    let required = std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("RTWHY_LIVE_TESTS").is_ok_and(|v| v == "1");
    let mut missing = Vec::new();
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|v| v.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false);
    if !root {
        missing.push("root");
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        missing.push("kernel BTF (/sys/kernel/btf/vmlinux)");
    }
    if Command::new("cyclictest").arg("--help").output().is_err() {
        missing.push("cyclictest (rt-tests)");
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        missing.push("a second CPU");
    }
    if missing.is_empty() {
        return true;
    }
    let msg = format!("BPF live test needs {}", missing.join(", "));
    assert!(
        !required,
        "{msg} (required under CI=true / RTWHY_LIVE_TESTS=1)"
    );
    eprintln!("skipped: {msg}");
    false
}

/// A child process killed and reaped when dropped.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cyclictest_args(prio: u32) -> Vec<String> {
    let cpu = CPU.to_string();
    let prio = prio.to_string();
    [
        "-m", "-q", "-p", &prio, "-i", "1000", "-a", &cpu, "-t", "1", "-l", "2000",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn cyclictest(prio: u32) -> ChildGuard {
    let child = Command::new("cyclictest")
        .args(cyclictest_args(prio))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning cyclictest");
    ChildGuard(child)
}

/// A shell that forks cyclictest once a line arrives on its stdin (so the shell can be
/// tracked before it forks); its process group is killed when dropped.
struct ForkingShell(Child);

impl ForkingShell {
    fn spawn(prio: u32) -> ForkingShell {
        ForkingShell::spawn_loops(prio, 2000)
    }

    /// The same with cyclictest's thread taking `loops` samples.
    fn spawn_loops(prio: u32, loops: u64) -> ForkingShell {
        let mut args = cyclictest_args(prio);
        if let Some(l) = args.iter().position(|a| a == "-l") {
            args[l + 1] = loops.to_string();
        }
        let script = format!("read go; cyclictest {}; :", args.join(" "));
        let child = Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning sh");
        ForkingShell(child)
    }

    fn go(&mut self) {
        let stdin = self.0.stdin.as_mut().expect("sh stdin");
        stdin.write_all(b"go\n").expect("writing to sh");
    }

    /// The processes the shell forked.
    fn children(&self) -> Vec<u32> {
        let pid = self.0.id();
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

impl Drop for ForkingShell {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.wait();
    }
}

/// A SCHED_FIFO 90 thread pinned to CPU 1 that spins 300 us every 5 ms for at most
/// `length`; stopped and joined when dropped.
struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    fn start(length: Duration) -> Spinner {
        let stop = Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<bool>();
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(SPINNER.to_owned())
            .spawn(move || {
                let tid = std::fs::read_link("/proc/thread-self")
                    .ok()
                    .and_then(|p| p.file_name()?.to_str()?.parse::<i32>().ok());
                let _ = tid_tx.send(tid);
                // Spin only once pinned to CPU 1 and raised to FIFO 90.
                if !go_rx.recv().unwrap_or(false) {
                    return;
                }
                let end = Instant::now() + length;
                while Instant::now() < end && !flag.load(Ordering::Relaxed) {
                    let burst = Instant::now() + Duration::from_micros(300);
                    while Instant::now() < burst {
                        std::hint::spin_loop();
                    }
                    std::thread::sleep(Duration::from_micros(4700));
                }
            })
            .expect("spawning the spinner thread");
        let mut spinner = Spinner {
            stop,
            thread: Some(thread),
        };
        let tid = tid_rx.recv().ok().flatten().expect("spinner tid");
        let pinned = Command::new("taskset")
            .args(["-p", "-c", &CPU.to_string(), &tid.to_string()])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let raised = pinned
            && Command::new("chrt")
                .args(["-f", "-p", "90", &tid.to_string()])
                .status()
                .is_ok_and(|s| s.success());
        let _ = go_tx.send(pinned && raised);
        if !(pinned && raised) {
            spinner.stop();
            panic!("could not pin the spinner to CPU {CPU} and raise it to FIFO 90");
        }
        spinner
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
    }
}

fn tids_of(pid: u32, into: &mut HashSet<i32>) {
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        into.extend(
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()),
        );
    }
}

/// cyclictest's own maximum (us), from its summary line `... Max:     312`.
fn cyclictest_max(output: &str) -> Option<u64> {
    output
        .lines()
        .rev()
        .find_map(|l| l.split("Max:").nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// hrtimer_wakeup's address, as a session passes it: the timer programs then skip every
/// other timer, and the breaches below (expiries, late timers) show they still see the
/// sleepers' own.
fn sleeper_fn() -> Option<u64> {
    let f = rtwhy_record::symbols::KernelSymbols::load().address_of("hrtimer_wakeup");
    assert!(f.is_some(), "no hrtimer_wakeup in /proc/kallsyms");
    f
}

fn run_mode(mode: AttachMode) {
    if !live_capable() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = DetectorConfig {
        threshold_ns: THRESHOLD_NS,
        rt_only: true,
        force: Some(mode),
        stack: true,
        sleeper_fn: sleeper_fn(),
        sched_slots: 0,
    };
    let t0 = Instant::now();
    let mut detector = BpfDetector::start(&cfg).unwrap_or_else(|e| panic!("{mode}: {e}"));
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    assert_eq!(detector.mode(), mode);

    let mut tracked = cyclictest(80);
    let tracked_pid = tracked.0.id();
    detector
        .track_process(i32::try_from(tracked_pid).expect("pid"))
        .expect("track_process");
    // Followed through its fork: a shell tracked before it starts cyclictest.
    let mut shell = ForkingShell::spawn(75);
    detector
        .track_process(i32::try_from(shell.0.id()).expect("pid"))
        .expect("track_process");
    shell.go();
    // Lower priority on the same CPU: just as late, never tracked.
    let mut untracked = cyclictest(70);
    let untracked_pid = untracked.0.id();
    let spinner = Spinner::start(Duration::from_millis(2500));

    let mut breaches: Vec<Breach> = Vec::new();
    let mut tracked_tids = HashSet::new();
    let mut forked_tids = HashSet::new();
    let mut untracked_tids = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(6);
    while Instant::now() < deadline {
        tids_of(tracked_pid, &mut tracked_tids);
        for child in shell.children() {
            tids_of(child, &mut forked_tids);
        }
        tids_of(untracked_pid, &mut untracked_tids);
        breaches.extend(detector.poll(Duration::from_millis(50)).expect("poll"));
        if tracked.0.try_wait().ok().flatten().is_some() {
            break;
        }
    }
    drop(spinner);
    breaches.extend(detector.poll(Duration::from_millis(100)).expect("poll"));
    let _ = untracked.0.wait();
    let _ = shell.0.wait();
    let mut out = String::new();
    if let Some(mut s) = tracked.0.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    let max_us = cyclictest_max(&out);

    let direct: Vec<&Breach> = breaches
        .iter()
        .filter(|b| tracked_tids.contains(&b.record.tid))
        .collect();
    let forked = breaches
        .iter()
        .filter(|b| forked_tids.contains(&b.record.tid))
        .count();
    eprintln!(
        "{mode}: load+attach {load_ms:.1} ms, {} breaches ({} direct, {forked} forked), {} lost, \
         cyclictest max {max_us:?} us",
        breaches.len(),
        direct.len(),
        detector.lost()
    );
    for b in direct.iter().take(3) {
        eprintln!("  {}  stack {} frames", b.record.to_marker(), b.stack.len());
    }
    let worst = direct.iter().map(|b| b.record.latency.0).max();
    eprintln!("  worst breach {:?} us", worst.map(|n| n / 1000));

    assert!(
        !direct.is_empty(),
        "{mode}: no breach reported for cyclictest"
    );
    assert!(
        forked > 0,
        "{mode}: no breach from the cyclictest the tracked shell forked"
    );
    assert_eq!(detector.lost(), 0, "{mode}: breaches lost");
    let own: HashSet<i32> = {
        let mut s = HashSet::new();
        tids_of(std::process::id(), &mut s);
        s
    };
    for b in &breaches {
        let r = &b.record;
        assert!(
            !untracked_tids.contains(&r.tid) && !own.contains(&r.tid),
            "{mode}: an untracked thread was reported: {}",
            r.to_marker()
        );
        let prio = if tracked_tids.contains(&r.tid) {
            19 // FIFO 80
        } else {
            assert!(
                forked_tids.contains(&r.tid),
                "{mode}: breach of a thread of neither tracked process: {}",
                r.to_marker()
            );
            24 // FIFO 75
        };
        assert_eq!(r.comm.to_str_lossy(), "cyclictest");
        assert_eq!(r.cpu, CPU, "{}", r.to_marker());
        assert!(r.latency.0 >= THRESHOLD_NS, "{}", r.to_marker());
        assert_eq!(r.prio, Some(prio), "{}", r.to_marker());
        assert_eq!(r.detector.as_deref(), Some("bpf"));
        let origin = r.expiry.or(r.waking).expect("a start").0;
        assert_eq!(r.latency.0, r.switch_in.0 - origin, "{}", r.to_marker());
        if let Some(expiry) = r.expiry {
            assert!(r.switch_in > expiry, "{}", r.to_marker());
        }
        if mode != AttachMode::Tracepoint {
            assert!(!b.stack.is_empty(), "{mode}: no stack: {}", r.to_marker());
        }
        assert!(
            b.stack.iter().all(|a| *a >= KERNEL_TEXT),
            "{mode}: not kernel addresses: {:x?}",
            b.stack
        );
    }
    assert!(
        direct
            .iter()
            .any(|b| b.record.expiry.is_some() && b.record.waker_tid == Some(0)),
        "{mode}: cyclictest's wake-ups are its timer's, yet no breach carries an expiry"
    );
    assert!(
        breaches.iter().any(|b| b
            .record
            .prev_comm
            .is_some_and(|c| c.to_str_lossy() == SPINNER)),
        "{mode}: no breach names the spinner as the task it preempted"
    );
    // Every wake-up of the tracked threads is in their histograms, none of another
    // thread, and the histograms' tail holds the breaches reported: those in a bucket
    // wholly above the threshold, and at most all of the bucket holding it, less the
    // wake-ups counted unseen (the kernel ran none of the programs at their wake-up or
    // switch-in: in the histogram, never reported as a breach).
    let unseen = detector.wakeups_unseen();
    // A wake-up counted unseen has a bound from above (to its switch-out), none else.
    assert_eq!(
        detector.wakeups_unseen_latest_ns() > 0,
        unseen > 0,
        "{mode}: {unseen} wake-ups unseen, the latest {} ns",
        detector.wakeups_unseen_latest_ns()
    );
    let hists = detector.wakeups();
    let edge = rtwhy_model::bucket_of(THRESHOLD_NS);
    for tid in tracked_tids.iter().chain(&forked_tids) {
        let mine: Vec<_> = hists.iter().filter(|(at, _, _)| at.tid == *tid).collect();
        let wakeups: u64 = mine.iter().map(|(_, _, h)| h.wakeups()).sum();
        let reported = breaches.iter().filter(|b| b.record.tid == *tid).count() as u64;
        let count_from = |first: usize| -> u64 {
            mine.iter()
                .flat_map(|(_, _, h)| h.buckets())
                .filter(|b| rtwhy_model::bucket_of(b.lower_ns) >= first)
                .map(|b| b.count)
                .sum()
        };
        eprintln!("  thread {tid}: {wakeups} wake-ups counted ({unseen} unseen in all), {reported} breaches");
        if reported > 0 {
            assert!(
                wakeups >= reported,
                "{mode}: thread {tid}: {wakeups} wake-ups counted, {reported} breaches"
            );
            assert!(
                (count_from(edge + 1).saturating_sub(unseen)..=count_from(edge))
                    .contains(&reported),
                "{mode}: thread {tid}: {reported} breaches, histogram tail {}..={}, {unseen} wake-ups unseen",
                count_from(edge + 1),
                count_from(edge)
            );
        }
        assert!(
            mine.iter().all(|(_, comm, _)| comm == "cyclictest"),
            "{mode}: {mine:?}"
        );
    }
    assert!(
        hists
            .iter()
            .all(|(at, _, _)| !untracked_tids.contains(&at.tid) && !own.contains(&at.tid)),
        "{mode}: a histogram of an untracked thread"
    );
    assert_eq!(detector.wakeups_lost(), 0, "{mode}: wake-ups not counted");
    if let Some(max_us) = max_us {
        // Both measure the same wake-ups; cyclictest's clock read comes a little after
        // the switch-in, so its maximum is never much below the detector's.
        let worst_us = worst.unwrap_or(0) / 1000;
        assert!(
            max_us + 20 >= worst_us,
            "{mode}: detector saw {worst_us} us, cyclictest's max is {max_us} us"
        );
    }
}

#[test]
fn tp_btf_reports_cyclictest_breaches() {
    run_mode(AttachMode::TpBtf);
}

#[test]
fn raw_tp_reports_cyclictest_breaches() {
    run_mode(AttachMode::RawTp);
}

#[test]
fn tracepoint_reports_cyclictest_breaches() {
    run_mode(AttachMode::Tracepoint);
}

#[test]
fn default_start_picks_tp_btf_here() {
    if !live_capable() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = BpfDetector::start(&DetectorConfig::default()).expect("start");
    assert_eq!(d.mode(), AttachMode::TpBtf);
    assert!(d.track_thread(-1).is_err());
    assert!(d.track_thread(i32::MAX).is_err());
}

/// The breaches of a cyclictest (FIFO 80) at a 1 us threshold in `mode`, for up to
/// `secs` or until there are `max`.
fn breaches_at_1us(
    mode: AttachMode,
    sleeper_fn: Option<u64>,
    secs: Duration,
    max: usize,
) -> Vec<Breach> {
    let cfg = DetectorConfig {
        threshold_ns: 1_000,
        rt_only: true,
        force: Some(mode),
        stack: true,
        sleeper_fn,
        sched_slots: 0,
    };
    let mut detector = BpfDetector::start(&cfg).unwrap_or_else(|e| panic!("{mode}: {e}"));
    let mut tracked = cyclictest(80);
    detector
        .track_process(i32::try_from(tracked.0.id()).expect("pid"))
        .expect("track_process");
    let mut breaches: Vec<Breach> = Vec::new();
    let deadline = Instant::now() + secs;
    while Instant::now() < deadline && breaches.len() < max {
        breaches.extend(detector.poll(Duration::from_millis(50)).expect("poll"));
    }
    drop(tracked.0.kill());
    let _ = tracked.0.wait();
    breaches
}

/// With a 1 us threshold nearly every timer of cyclictest's runs "late" (expiry to
/// handler is a few microseconds anywhere), so the late-timer stack is taken on every
/// wake-up: it must be a real kernel stack from inside the timer interrupt, its time
/// at least the threshold after the expiry, in every attach mode.
#[test]
fn late_timer_stacks_come_from_inside_the_timer_interrupt() {
    if !live_capable() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let symbols = rtwhy_record::symbols::KernelSymbols::load();
    let sleeper = sleeper_fn();
    for mode in AttachMode::ALL {
        let breaches = breaches_at_1us(mode, sleeper, Duration::from_secs(3), 500);
        let late: Vec<&Breach> = breaches
            .iter()
            .filter(|b| b.record.timer_fired.is_some())
            .collect();
        eprintln!(
            "{mode}: {} breaches at 1 us, {} with a late-timer record",
            breaches.len(),
            late.len()
        );
        assert!(
            !late.is_empty(),
            "{mode}: no late-timer record at a 1 us threshold"
        );
        for b in &late {
            let (fired, expiry) = (b.record.timer_fired.unwrap().0, b.record.expiry.unwrap().0);
            assert!(
                fired >= expiry + 1_000,
                "{mode}: fired {fired} < expiry {expiry} + 1 us"
            );
            assert!(
                fired <= b.record.switch_in.0,
                "{mode}: the timer ran after the switch-in"
            );
            assert!(
                b.timer_stack.iter().all(|a| *a >= KERNEL_TEXT),
                "{mode}: not kernel addresses: {:x?}",
                b.timer_stack
            );
        }
        // The hrtimer code is on the stack: it was taken in the timer's own handler.
        let names = |b: &Breach| -> Vec<String> {
            b.timer_stack
                .iter()
                .filter_map(|a| symbols.name(*a))
                .collect()
        };
        let in_hrtimer = late
            .iter()
            .filter(|b| {
                names(b)
                    .iter()
                    .any(|n| n.contains("hrtimer_run_queues") || n.starts_with("hrtimer_interrupt"))
            })
            .count();
        if let Some(b) = late.first() {
            eprintln!("  e.g. {}", names(b).join(" <- "));
        }
        assert!(
            in_hrtimer * 2 >= late.len(),
            "{mode}: only {in_hrtimer} of {} late-timer stacks pass through the hrtimer code",
            late.len()
        );
    }
}

/// The timer filter is in force: told that sleepers' timers run some other function, the
/// programs leave cyclictest's own timer alone, so its breaches (still measured, from
/// the wake-up) carry no expiry and no late-timer record.
#[test]
fn timers_of_another_callback_are_left_alone() {
    if !live_capable() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let real = sleeper_fn().expect("hrtimer_wakeup");
    for mode in AttachMode::ALL {
        let breaches = breaches_at_1us(mode, Some(real + 1), Duration::from_secs(2), 200);
        assert!(
            !breaches.is_empty(),
            "{mode}: no breach at a 1 us threshold"
        );
        let timed = breaches
            .iter()
            .filter(|b| b.record.expiry.is_some() || b.record.timer_fired.is_some())
            .count();
        assert_eq!(
            timed,
            0,
            "{mode}: {timed} of {} breaches carry a timer the filter should have skipped",
            breaches.len()
        );
    }
}

// A thread's histogram lives in a slot of the kernel's table; when the thread has exited,
// `wakeups` moves the histogram out and gives the slot back, zeroed, and the next new
// thread takes that very slot (the free slots are a stack). So the second cyclictest's
// thread starts from zero, and the first's wake-ups stay reported under its own tid.
#[test]
fn an_exited_threads_histogram_slot_starts_the_next_thread_from_zero() {
    if !live_capable() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = DetectorConfig {
        threshold_ns: 20_000_000,
        rt_only: true,
        force: None,
        stack: false,
        sleeper_fn: sleeper_fn(),
        sched_slots: 0,
    };
    let mut detector = BpfDetector::start(&cfg).expect("detector");
    const LOOPS: u64 = 500;
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut shell = ForkingShell::spawn_loops(80, LOOPS);
        detector
            .track_process(i32::try_from(shell.0.id()).expect("pid"))
            .expect("track_process");
        shell.go();
        let mut tids = HashSet::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && shell.0.try_wait().ok().flatten().is_none() {
            for child in shell.children() {
                tids_of(child, &mut tids);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            shell.0.try_wait().ok().flatten().is_some(),
            "cyclictest -l {LOOPS} did not end in 10 s"
        );
        // Its threads have exited: their histograms move out, their slots are free.
        let _ = detector.wakeups();
        runs.push(tids);
    }
    let hists = detector.wakeups();
    let count = |tids: &HashSet<i32>| -> u64 {
        hists
            .iter()
            .filter(|(at, _, _)| tids.contains(&at.tid))
            .map(|(_, _, h)| h.wakeups())
            .sum()
    };
    let (first, second) = (count(&runs[0]), count(&runs[1]));
    eprintln!("first cyclictest {first} wake-ups, second {second}, {LOOPS} loops each");
    for n in [first, second] {
        assert!(
            (1..=LOOPS).contains(&n),
            "a cyclictest of {LOOPS} loops counted {n} wake-ups (first {first}, second {second})"
        );
    }
    assert_eq!(detector.wakeups_lost(), 0);
}

/// The scheduler events the programs keep for a CPU (`sched_slots`), in both modes that
/// read tasks: on CPU 1, where cyclictest sleeps and wakes every millisecond, its
/// switches in and out (out asleep: prev_state 1, `S`) and its wake-ups towards CPU 1;
/// nothing on CPU 0, set not to be recorded; a ring of 1024 records gone round says
/// from when it is complete.
fn sched_events_kept(mode: AttachMode) {
    if !live_capable() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = DetectorConfig {
        force: Some(mode),
        sched_slots: 1024,
        ..DetectorConfig::default()
    };
    let detector = BpfDetector::start(&cfg).unwrap_or_else(|e| panic!("{mode}: {e}"));
    let log = detector.sched_log().expect("scheduler events asked for");
    log.set_mode(0, SchedMode::Off).unwrap();
    log.set_mode(CPU, SchedMode::Full).unwrap();
    let mut ct = cyclictest(80);
    let _ = ct.0.wait();
    let cpus = log.records(0, u64::MAX);
    assert!(
        cpus[0].records.is_empty(),
        "{mode}: CPU 0 kept {}",
        cpus[0].records.len()
    );
    let one = &cpus[CPU as usize];
    assert!(
        one.records.len() > 900 && one.records.len() <= 1024,
        "{mode}: {}",
        one.records.len()
    );
    assert!(
        one.since.is_some(),
        "{mode}: 2000 wake-ups and no ring gone round"
    );
    assert!(
        one.records.windows(2).all(|w| w[0].ts <= w[1].ts),
        "{mode}: out of order"
    );
    // Its measuring thread: named cyclictest, FIFO 80 (prio 19); its main thread has
    // the same name at prio 120.
    let is_ct = |c: &[u8; 16], prio: i32| c.starts_with(b"cyclictest\0") && prio == 19;
    let (mut ins, mut outs, mut wakes) = (0, 0, 0);
    for r in &one.records {
        match r.kind {
            SchedKind::Switch if is_ct(&r.next_comm, r.next_prio) => ins += 1,
            SchedKind::Switch if is_ct(&r.comm, r.prio) => {
                assert_eq!(r.common_pid, r.pid, "{mode}: {r:?}");
                outs += usize::from(r.prev_state == 1);
            }
            SchedKind::Waking if is_ct(&r.comm, r.prio) => {
                assert_eq!(r.next_pid, CPU as i32, "{mode}: {r:?}");
                wakes += 1;
            }
            _ => {}
        }
    }
    // 1024 records are about 300 of cyclictest's periods (in, out, wake-up, and the
    // idle task's own); every one of its periods has all three.
    assert!(
        ins > 200 && outs > 200 && wakes > 200,
        "{mode}: {ins} in, {outs} out asleep, {wakes} wake-ups"
    );
}

#[test]
fn tp_btf_keeps_the_scheduler_events_of_the_cpus_asked_for() {
    sched_events_kept(AttachMode::TpBtf);
}

#[test]
fn raw_tp_keeps_the_scheduler_events_of_the_cpus_asked_for() {
    sched_events_kept(AttachMode::RawTp);
}
