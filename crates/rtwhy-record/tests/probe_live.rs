//! The built-in cyclic probe on this machine: needs root (SCHED_FIFO) and CPU 1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rtwhy_record::probe::{Probe, ProbeConfig};
use rtwhy_record::RecordError;

/// The tests share CPU 1: one at a time.
static CPU1: Mutex<()> = Mutex::new(());

/// Starts a probe, or says why the test cannot run: a failure under `CI=true` or
/// `RTWHY_LIVE_TESTS=1`, a skip otherwise.
fn start(cfg: &ProbeConfig) -> Option<Probe> {
    let required = std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("RTWHY_LIVE_TESTS").is_ok_and(|v| v == "1");
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    if online < 2 {
        assert!(
            !required,
            "the probe tests need CPU 1; this machine has one CPU"
        );
        eprintln!("skipped: the probe tests need CPU 1");
        return None;
    }
    match Probe::start(cfg) {
        Ok(p) => Some(p),
        Err(RecordError::Privilege(msg)) => {
            assert!(
                !required,
                "the probe needs SCHED_FIFO (root or CAP_SYS_NICE): {msg}"
            );
            eprintln!("skipped: {msg}");
            None
        }
        Err(e) => panic!("probe did not start: {e}"),
    }
}

/// `policy` and `rt_priority` from `/proc/self/task/TID/stat` (fields 41 and 40).
fn policy_and_priority(tid: i32) -> (u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // after_comm starts at field 3 (state).
    (
        fields[41 - 3].parse().unwrap(),
        fields[40 - 3].parse().unwrap(),
    )
}

#[test]
fn probe_threads_measure_every_interval_at_sched_fifo() {
    let _cpu1 = CPU1.lock().unwrap_or_else(|e| e.into_inner());
    let Some(probe) = start(&ProbeConfig {
        cpus: vec![0, 1],
        interval: Duration::from_millis(1),
        priority: 90,
        threshold_ns: 10_000_000,
    }) else {
        return;
    };
    let tids = probe.tids();
    assert_eq!(tids.len(), 2);
    for (&tid, cpu) in tids.iter().zip([0, 1]) {
        assert!(tid > 0);
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap();
        assert_eq!(comm.trim(), format!("rtwhy-probe/{cpu}"));
        assert_eq!(
            policy_and_priority(tid),
            (libc::SCHED_FIFO as u32, 90),
            "tid {tid}"
        );
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap();
        assert_eq!(allowed.trim(), cpu.to_string());
    }
    std::thread::sleep(Duration::from_secs(1));
    let live = probe.stats();
    let stats = probe.stop();
    for s in &stats {
        eprintln!("{s:?}");
        // A hypervisor pause skips expiries, like cyclictest: allow for a few.
        assert!((850..=1100).contains(&s.loops), "{s:?}");
        assert!(s.min_ns > 0, "{s:?}");
        assert!(s.min_ns <= s.avg_ns && s.avg_ns <= s.max_ns, "{s:?}");
    }
    assert_eq!(stats.iter().map(|s| s.tid).collect::<Vec<_>>(), tids);
    assert!(live.iter().zip(&stats).all(|(a, b)| a.loops <= b.loops));
    for tid in tids {
        assert!(!std::path::Path::new(&format!("/proc/self/task/{tid}")).exists());
    }
}

/// A SCHED_FIFO 95 thread on CPU 1 that spins 300 us every 5 ms for `run`.
fn spinner(run: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // Priority first, then the CPU: see rtwhy_sys::set_affinity.
        rtwhy_sys::set_fifo(95).unwrap();
        rtwhy_sys::set_affinity(&[1]).unwrap();
        let end = Instant::now() + run;
        while Instant::now() < end {
            let spin = Instant::now();
            while spin.elapsed() < Duration::from_micros(300) {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

#[test]
fn higher_priority_spinner_makes_probe_breach() {
    let _cpu1 = CPU1.lock().unwrap_or_else(|e| e.into_inner());
    let Some(probe) = start(&ProbeConfig {
        cpus: vec![1],
        interval: Duration::from_millis(1),
        priority: 90,
        threshold_ns: 50_000,
    }) else {
        return;
    };
    let tid = probe.tids()[0];
    spinner(Duration::from_secs(1)).join().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let breaches = probe.breaches();
    let stats = probe.stop();
    eprintln!("{stats:?}, {} breaches", breaches.len());
    // 300 us of every 5 ms covers a 1 ms expiry about 60 times a second.
    assert!(breaches.len() >= 10, "{} breaches", breaches.len());
    let spun = breaches.iter().filter(|b| b.latency_ns >= 100_000).count();
    assert!(spun >= 5, "{spun} breaches of 100 us or more");
    for b in &breaches {
        assert_eq!((b.cpu, b.tid), (1, tid));
        assert!(b.latency_ns >= 50_000, "{b:?}");
        assert_eq!(b.now_ns - b.expiry_ns, b.latency_ns);
    }
    assert!(breaches.windows(2).all(|w| w[0].expiry_ns < w[1].expiry_ns));
    assert!(stats[0].over_threshold >= breaches.len() as u64);
    assert!(stats[0].max_ns >= 100_000);
}
