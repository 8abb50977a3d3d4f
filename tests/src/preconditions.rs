//! The independent re-check of rtwhy's verdicts: for every spike `rtwhy analyze`
//! reports, the primary cause's preconditions are checked against the trace's own
//! events, with checks written here from docs/causes.md ("Evidence required"),
//! independently of the analyzer's rules (no code shared: these walk the whole decoded
//! trace). Used over every fixture and wild trace (tests/preconditions.rs) and over every
//! capture the live tests record (tests/record_live.rs).

use std::collections::{BTreeMap, HashMap};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use rtwhy_decode::text::TextReader;
use rtwhy_decode::tracedat::TraceFile;
use rtwhy_decode::EventDecoder;
use rtwhy_model::{Event, EventKind, Nanos};
use serde_json::Value;

use crate::{rtwhy, workspace};

/// What the re-check of one or more analyses found.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// Primary causes and how many spikes got each.
    pub distribution: BTreeMap<String, usize>,
    /// Verdicts re-checked.
    pub checked: usize,
    /// One line per verdict without its preconditions.
    pub failures: Vec<String>,
}

impl Report {
    /// Adds another report's counts and failures to this one.
    pub fn add(&mut self, other: Report) {
        for (c, n) in other.distribution {
            *self.distribution.entry(c).or_default() += n;
        }
        self.checked += other.checked;
        self.failures.extend(other.failures);
    }
}

/// Re-checks analyses of traces, decoding each trace once however many times it is
/// analysed.
#[derive(Default)]
pub struct Checker {
    traces: BTreeMap<PathBuf, Trace>,
}

impl Checker {
    /// A checker with no trace decoded yet.
    pub fn new() -> Checker {
        Checker::default()
    }

    /// Runs `rtwhy analyze PATH ARGS --format json` and re-checks every spike's primary
    /// cause; prints the verdict distribution. `None` when rtwhy refuses the trace (one
    /// line, no JSON: a trace without scheduler events has nothing to check).
    pub fn check(&mut self, path: &Path, args: &[String]) -> Option<Report> {
        let out = Command::new(rtwhy())
            .arg("analyze")
            .arg(path)
            .args(args)
            .args(["--format", "json"])
            .output()
            .ok()?;
        let doc = serde_json::from_slice::<Value>(&out.stdout).ok()?;
        let spikes = doc["spikes"].as_array().cloned().unwrap_or_default();
        let mut report = Report::default();
        for s in &spikes {
            *report
                .distribution
                .entry(s["primary"]["cause"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
        }
        let rel = path
            .strip_prefix(workspace())
            .unwrap_or(path)
            .display()
            .to_string();
        eprintln!("{rel} {}: {:?}", args.join(" "), report.distribution);
        if spikes.is_empty() {
            return Some(report);
        }
        let t = self.traces.entry(path.to_path_buf()).or_insert_with(|| {
            let (events, dropped) = events_of(path);
            Trace::new(events, &dropped)
        });
        let isolated_arg = args.iter().any(|a| a == "--isolated");
        let ends_of = |tid: i64| -> Vec<u64> {
            spikes
                .iter()
                .filter(|o| o["victim"]["tid"].as_i64() == Some(tid))
                .filter_map(|o| o["end"].as_u64())
                .collect()
        };
        for s in &spikes {
            let sp = SpikeView {
                victim_ends: ends_of(s["victim"]["tid"].as_i64().unwrap_or(-1)),
                s,
                cpu: s["cpu"].as_u64().unwrap_or(0) as u32,
                start: s["start"].as_u64().unwrap_or(0),
                end: s["end"].as_u64().unwrap_or(0),
                victim: s["victim"]["tid"].as_i64().unwrap_or(-1) as i32,
                vprio: s["victim"]["prio"].as_i64().unwrap_or(120) as i32,
                kind: s["kind"].as_str().unwrap_or(""),
            };
            report.checked += 1;
            if let Err(why) = check(t, &sp, &doc["facts"], isolated_arg) {
                report.failures.push(format!(
                    "{rel} {}: spike {} ({} at {}, CPU {}) is {} without its preconditions: {why}",
                    args.join(" "),
                    s["id"],
                    s["victim"]["comm"],
                    Nanos(sp.start),
                    sp.cpu,
                    s["primary"]["cause"]
                ));
            }
        }
        Some(report)
    }
}

/// Every capture (`*.dat`, at any depth) under `dir`, each analysed with `args` and
/// re-checked; prints each one's verdict distribution and the total.
pub fn check_captures(dir: &Path, args: &[String]) -> Report {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "dat") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut checker = Checker::new();
    let mut total = Report::default();
    for f in &files {
        if let Some(r) = checker.check(f, args) {
            total.add(r);
        }
    }
    eprintln!(
        "{} captures under {}: {} verdicts re-checked, {:?}",
        files.len(),
        dir.display(),
        total.checked,
        total.distribution
    );
    total
}

/// The events of a trace in time order, and per event whether the ring buffer dropped
/// events of its CPU just before it.
fn events_of(path: &Path) -> (Vec<Event>, Vec<bool>) {
    let mut out = Vec::new();
    if path.extension().is_some_and(|e| e == "dat") {
        let Ok(file) = TraceFile::open(path) else {
            return (Vec::new(), Vec::new());
        };
        let mut dec = EventDecoder::new();
        let Ok(mut recs) = file.records() else {
            return (Vec::new(), Vec::new());
        };
        while let Ok(Some(r)) = recs.next_record() {
            out.push((dec.decode(file.meta(), &r), r.missed_before.is_some()));
        }
    } else {
        let Ok(f) = std::fs::File::open(path) else {
            return (Vec::new(), Vec::new());
        };
        let mut rd = TextReader::new(BufReader::new(f));
        while let Some(Ok(e)) = rd.next_event() {
            out.push((e, rd.event_dropped().is_some()));
        }
    }
    out.sort_by_key(|(e, _)| e.ts);
    out.into_iter().unzip()
}

/// What the whole trace says, indexed for the checks.
struct Trace {
    events: Vec<Event>,
    /// Indexes into `events`, per CPU.
    per_cpu: HashMap<u32, Vec<usize>>,
    /// Any `ktimers/N` thread: a PREEMPT_RT kernel.
    rt_kernel: bool,
    max_freq: u32,
    /// Every task's priority and name as the scheduler events last gave them.
    tasks: HashMap<i32, (i32, String)>,
    /// Per CPU, the stretches (last event before, first event after) whose events the
    /// ring buffer dropped.
    drops: HashMap<u32, Vec<(u64, u64)>>,
}

impl Trace {
    fn new(events: Vec<Event>, dropped: &[bool]) -> Trace {
        let mut drops: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        let mut last: HashMap<u32, u64> = HashMap::new();
        for (e, d) in events.iter().zip(dropped) {
            if *d {
                let before = last.get(&e.cpu).copied().unwrap_or(0);
                drops.entry(e.cpu).or_default().push((before, e.ts.0));
            }
            last.insert(e.cpu, e.ts.0);
        }
        let mut per_cpu: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut rt_kernel = false;
        let mut max_freq = 0;
        let mut tasks = HashMap::new();
        for (i, e) in events.iter().enumerate() {
            per_cpu.entry(e.cpu).or_default().push(i);
            match &e.kind {
                EventKind::SchedSwitch {
                    next_comm,
                    next_pid,
                    next_prio,
                    prev_comm,
                    prev_pid,
                    prev_prio,
                    ..
                } => {
                    rt_kernel |= next_comm.as_bytes().starts_with(b"ktimers/");
                    tasks.insert(
                        *prev_pid,
                        (*prev_prio, prev_comm.to_str_lossy().into_owned()),
                    );
                    tasks.insert(
                        *next_pid,
                        (*next_prio, next_comm.to_str_lossy().into_owned()),
                    );
                }
                EventKind::CpuFrequency { state, .. } => max_freq = max_freq.max(*state),
                _ => {}
            }
        }
        Trace {
            events,
            per_cpu,
            rt_kernel,
            max_freq,
            tasks,
            drops,
        }
    }

    fn on(&self, cpu: u32) -> impl Iterator<Item = &Event> {
        self.per_cpu
            .get(&cpu)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.events.get(i))
    }

    fn on_between(&self, cpu: u32, from: u64, to: u64) -> impl Iterator<Item = &Event> {
        self.on(cpu).filter(move |e| e.ts.0 >= from && e.ts.0 <= to)
    }

    /// Who ran on `cpu` at some time in `[from, to]`, with the priority it ran at: the
    /// task current at `from` and every task switched in before `to`, or seen running by
    /// its own events (the VMs here drop most idle-to-task switches).
    /// The interrupts-off form of kernel_nonpreemptible (docs/causes.md): the recorder's
    /// `rtwhy-breach:` marker for this wake-up (its `switch_in_ns` nearer this spike's end
    /// than any other spike end of the victim in `ends`, and within
    /// [`rtwhy_model::MARKER_MATCH_NS`]) says the timer ran late (`timer_fired_ns`) and the first frame of
    /// what that interrupt interrupted (`timer_stack`) turns interrupts back on, with no
    /// idle-loop frame after it.
    fn irqs_off_at(&self, victim: i32, end: u64, ends: &[u64]) -> bool {
        const ENABLE: [&str; 9] = [
            "_raw_spin_unlock_irqrestore",
            "_raw_spin_unlock_irq",
            "_raw_read_unlock_irqrestore",
            "_raw_read_unlock_irq",
            "_raw_write_unlock_irqrestore",
            "_raw_write_unlock_irq",
            "arch_local_irq_restore",
            "arch_local_irq_enable",
            "multi_cpu_stop",
        ];
        self.events.iter().any(|e| {
            let EventKind::Print { text } = &e.kind else {
                return false;
            };
            let Some(rest) = text.strip_prefix("rtwhy-breach: ") else {
                return false;
            };
            let kv: HashMap<&str, &str> = rest
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            let num = |k: &str| kv.get(k).and_then(|v| v.parse::<u64>().ok());
            let frames: Vec<&str> = kv
                .get("timer_stack")
                .map(|v| {
                    v.split(',')
                        .map(|f| f.split('+').next().unwrap_or(f))
                        .collect()
                })
                .unwrap_or_default();
            num("tid") == Some(victim as u64)
                && num("switch_in_ns").is_some_and(|s| {
                    s.abs_diff(end) < rtwhy_model::MARKER_MATCH_NS
                        && ends.iter().all(|o| o.abs_diff(s) >= s.abs_diff(end))
                })
                && num("timer_fired_ns").is_some()
                && frames.first().is_some_and(|f| ENABLE.contains(f))
                && !frames
                    .iter()
                    .any(|f| f.contains("idle") || f.ends_with("safe_halt"))
        })
    }

    fn ran_on(&self, cpu: u32, from: u64, to: u64) -> Vec<(i32, i32, String)> {
        let mut cur: Option<(i32, i32, String)> = None;
        let mut out = Vec::new();
        let mut at_from: Option<(i32, i32, String)> = None;
        // Where the current run's entries begin in `out`: a switch-out at another
        // priority than the run began with (the task changed its own, which no event
        // shows) gives the whole run that priority, the one its latest event shows.
        let mut run_from = 0;
        for e in self.on(cpu) {
            if e.ts.0 > to {
                break;
            }
            if e.ts.0 <= from {
                at_from.clone_from(&cur);
            }
            match &e.kind {
                EventKind::SchedSwitch {
                    next_pid,
                    next_prio,
                    next_comm,
                    prev_pid,
                    prev_prio,
                    prev_comm,
                    ..
                } => {
                    if let Some(c) = cur
                        .as_mut()
                        .filter(|c| c.0 == *prev_pid && c.1 != *prev_prio)
                    {
                        c.1 = *prev_prio;
                        for r in out.iter_mut().skip(run_from) {
                            let r: &mut (i32, i32, String) = r;
                            if r.0 == *prev_pid {
                                r.1 = *prev_prio;
                            }
                        }
                        if let Some(a) = at_from.as_mut().filter(|a| a.0 == *prev_pid) {
                            a.1 = *prev_prio;
                        }
                    }
                    run_from = out.len();
                    // The task switched out was on the CPU up to the switch: with no
                    // earlier event of the CPU in the capture, the only proof of who
                    // ran in the window's first part.
                    if e.ts.0 > from && cur.is_none() {
                        out.push((*prev_pid, *prev_prio, prev_comm.to_str_lossy().into_owned()));
                    }
                    if e.ts.0 >= from && e.ts.0 < to {
                        out.push((*next_pid, *next_prio, next_comm.to_str_lossy().into_owned()));
                    }
                    cur = Some((*next_pid, *next_prio, next_comm.to_str_lossy().into_owned()));
                }
                EventKind::SchedPiSetprio { pid, newprio, .. } => {
                    if let Some(c) = cur.as_mut().filter(|c| c.0 == *pid) {
                        c.1 = *newprio;
                        if e.ts.0 >= from {
                            out.push(c.clone());
                        }
                    }
                }
                _ if !is_stack(e) && cur.as_ref().is_none_or(|c| c.0 != e.pid) => {
                    let (p, c) = self
                        .tasks
                        .get(&e.pid)
                        .cloned()
                        .unwrap_or((120, String::new()));
                    cur = Some((e.pid, p, c));
                    if e.ts.0 >= from && e.ts.0 < to {
                        out.extend(cur.clone());
                    }
                }
                _ => {}
            }
            if e.ts.0 <= from {
                at_from.clone_from(&cur);
            }
        }
        out.extend(at_from);
        out
    }
}

struct SpikeView<'a> {
    s: &'a Value,
    cpu: u32,
    start: u64,
    end: u64,
    victim: i32,
    vprio: i32,
    kind: &'a str,
    /// The ends of every spike of the same victim in the analysis (a breach marker
    /// belongs to the nearest).
    victim_ends: Vec<u64>,
}

/// ftrace's stack events carry the pid of the event they follow (a switch's stack shows
/// the task switched out): they say nothing about who runs.
fn is_stack(e: &Event) -> bool {
    matches!(&e.kind, EventKind::Generic(g) if g.name == "kernel_stack" || g.name == "user_stack")
}

fn is_stopper(comm: &str) -> bool {
    comm.starts_with("migration/")
}

/// The refusal of the RT class docs/causes.md requires, searched over the whole CPU
/// history: a switch to idle or prio >= 100 while an RT task was runnable there, and how
/// long the RT class then stayed off / had held the CPU before.
fn throttled(t: &Trace, sp: &SpikeView<'_>, facts: &Value) -> Result<(), String> {
    if sp.vprio >= 100 {
        return Err("victim not real-time".into());
    }
    if sp.vprio < 0 {
        return Err("victim SCHED_DEADLINE: limited by its own runtime".into());
    }
    // SCHED_FIFO/RR: the class sched_rt_runtime_us limits (not DEADLINE, prio -1).
    let fifo_rr = |p: i32| (0..100).contains(&p);
    let runtime = facts["rt_runtime_us"].as_i64().unwrap_or(950_000);
    let period = facts["rt_period_us"].as_i64().unwrap_or(1_000_000);
    let (runtime, period) = if runtime >= 0 && runtime < period {
        (runtime, period)
    } else {
        (950_000, 1_000_000)
    };
    let min_off = (period - runtime) as u64 * 1000 / 2;
    let min_held = runtime as u64 * 1000 / 2;
    // 6.12 and later: the fair server switches a running FIFO/RR task out for a normal
    // one, for as long as the normal task has work (no length required).
    let fair_server = facts["kernel_release"].as_str().is_some_and(|r| {
        let mut v = r
            .split(|c: char| !c.is_ascii_digit())
            .map(|x| x.parse::<u32>().ok());
        matches!((v.next(), v.next()), (Some(Some(a)), Some(Some(b))) if (a, b) >= (6, 12))
    });
    let mut prio: HashMap<i32, i32> = HashMap::new();
    let mut runnable: Vec<i32> = Vec::new();
    let mut held_since: Option<u64> = None;
    // (refused at, held before, a running FIFO/RR task switched out for a normal one)
    let mut open: Option<(u64, u64, bool)> = None;
    let mut best = String::from("no refusal of the RT class on the CPU");
    let mut ok = false;
    let mut judge = |(at, held, by_server): (u64, u64, bool), back: u64, best: &mut String| {
        if back > sp.start && at < sp.end {
            if back - at >= min_off || held >= min_held || (fair_server && by_server) {
                ok = true;
            } else {
                *best = format!("refusal at {at}: off {} ns, held {held} ns", back - at);
            }
        }
    };
    for e in t.on(sp.cpu) {
        if e.ts.0 >= sp.end {
            break;
        }
        match &e.kind {
            EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_state,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
            } => {
                prio.insert(*prev_pid, *prev_prio);
                prio.insert(*next_pid, *next_prio);
                runnable.retain(|p| p != prev_pid && p != next_pid);
                if *prev_pid > 0
                    && fifo_rr(*prev_prio)
                    && prev_state.is_runnable()
                    && !is_stopper(&prev_comm.to_str_lossy())
                {
                    runnable.push(*prev_pid);
                }
                if *next_pid > 0 && fifo_rr(*next_prio) && !is_stopper(&next_comm.to_str_lossy()) {
                    if let Some(o) = open.take() {
                        judge(o, e.ts.0, &mut best);
                    }
                    held_since.get_or_insert(e.ts.0);
                } else if *next_pid == 0 || *next_prio >= 100 {
                    if open.is_none() && !runnable.is_empty() {
                        let by_server = *next_pid != 0
                            && fifo_rr(*prev_prio)
                            && prev_state.is_runnable()
                            && !is_stopper(&prev_comm.to_str_lossy());
                        open = Some((e.ts.0, held_since.map_or(0, |h| e.ts.0 - h), by_server));
                    }
                    held_since = None;
                }
            }
            EventKind::SchedWaking {
                pid,
                prio: p,
                target_cpu,
                ..
            }
            | EventKind::SchedWakeup {
                pid,
                prio: p,
                target_cpu,
                ..
            } => {
                runnable.retain(|x| x != pid);
                if *target_cpu == sp.cpu as i32 && fifo_rr(*p) {
                    runnable.push(*pid);
                }
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, .. } if *orig_cpu == sp.cpu as i32 => {
                runnable.retain(|x| x != pid);
            }
            _ => {
                if e.pid > 0 && prio.get(&e.pid).is_some_and(|p| fifo_rr(*p)) {
                    if let Some(o) = open.take() {
                        judge(o, e.ts.0, &mut best);
                    }
                    held_since.get_or_insert(e.ts.0);
                }
            }
        }
    }
    if let Some(o) = open.take() {
        judge(o, sp.end, &mut best);
    }
    if ok {
        Ok(())
    } else {
        Err(best)
    }
}

/// The holders of the locks a victim waited for: `h` over `[from, to]`, and while a
/// holder slept in a futex lock call (FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_LOCK_PI2 entered,
/// not exited) and was woken inside its stretch by another task that was itself in a
/// futex call (the release), that task over the time the holder slept in it. At most 4
/// holders after `h`; a repeat or a longer chain cuts it, with the reason.
fn lock_chain(
    t: &Trace,
    victim: i32,
    h: i32,
    from: u64,
    to: u64,
) -> (Vec<(i32, u64, u64)>, Option<String>) {
    let mut chain = vec![(h, from, to)];
    while let Some(&(cur, from, to)) = chain.last() {
        let mut in_futex: HashMap<i32, u64> = HashMap::new();
        let mut asleep: Option<u64> = None;
        let mut best: Option<(i32, u64, u64)> = None;
        for e in t.events.iter().take_while(|e| e.ts.0 <= to) {
            match &e.kind {
                EventKind::SyscallEnter {
                    call: rtwhy_model::SyscallKind::Futex,
                    args,
                } => {
                    in_futex.insert(e.pid, args.get(1).copied().unwrap_or(u64::MAX));
                }
                EventKind::SyscallExit {
                    call: rtwhy_model::SyscallKind::Futex,
                    ..
                } => {
                    in_futex.remove(&e.pid);
                }
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_state,
                    next_pid,
                    ..
                } => {
                    let locking = in_futex
                        .get(&cur)
                        .is_some_and(|op| matches!(op & 0x7f, 0 | 6 | 13));
                    if *prev_pid == cur && !prev_state.is_runnable() && locking {
                        asleep = Some(e.ts.0);
                    }
                    if *next_pid == cur {
                        asleep = None;
                    }
                }
                EventKind::SchedWaking { pid, .. } | EventKind::SchedWakeup { pid, .. }
                    if *pid == cur && e.ts.0 >= from =>
                {
                    if let Some(since) = asleep.take() {
                        if e.pid > 0 && e.pid != cur && in_futex.contains_key(&e.pid) {
                            let link = (e.pid, since.max(from), e.ts.0);
                            if best.is_none_or(|b| link.2 - link.1 > b.2 - b.1) {
                                best = Some(link);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let Some(next) = best else { break };
        if next.0 == victim || chain.iter().any(|c| c.0 == next.0) {
            return (
                chain,
                Some(format!("{} woken by {}, already in the chain", cur, next.0)),
            );
        }
        if chain.len() > 4 {
            return (
                chain,
                Some(format!(
                    "longer than 5 holders ({} waits for {})",
                    cur, next.0
                )),
            );
        }
        chain.push(next);
    }
    (chain, None)
}

/// Whether, while `h` was runnable at some time in `(from, until)`, a real-time task
/// with a priority strictly between `h`'s unboosted one and the victim's ran on the CPU
/// where `h` waited: the run state and who ran where, replayed over the whole trace.
/// `h`'s unboosted priority is the one its events last gave before `from` (a PI boost's
/// `oldprio`), raised by any it shows in the stretch; not the whole trace's highest
/// number, which is its SCHED_OTHER 120 when it raised itself to real time after it
/// started.
fn medium_ran(t: &Trace, vprio: i32, h: i32, from: u64, until: u64) -> bool {
    let mut base = 0;
    let mut holder_on: Option<u32> = None;
    let mut cur: HashMap<u32, (i32, i32)> = HashMap::new();
    let mut medium = false;
    // Whether, in the state before the next event, a medium task runs on the CPU where
    // the holder is runnable.
    let medium_now = |cur: &HashMap<u32, (i32, i32)>, holder_on: Option<u32>, base: i32| {
        holder_on
            .and_then(|c| cur.get(&c))
            .is_some_and(|(pid, p)| *pid != h && *p < 100 && *p > vprio && *p < base)
    };
    for e in t.events.iter().take_while(|e| e.ts.0 < until) {
        if e.ts.0 > from {
            medium |= medium_now(&cur, holder_on, base);
        }
        // Before the stretch the last priority seen counts; in it the lowest.
        let mut saw = |p: i32| base = if e.ts.0 <= from { p } else { base.max(p) };
        match &e.kind {
            EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_state,
                next_pid,
                next_prio,
                ..
            } => {
                if *prev_pid == h {
                    saw(*prev_prio);
                    holder_on = prev_state.is_runnable().then_some(e.cpu);
                }
                if *next_pid == h {
                    if e.ts.0 <= from {
                        saw(*next_prio);
                    }
                    holder_on = None;
                }
                cur.insert(e.cpu, (*next_pid, *next_prio));
            }
            EventKind::SchedWaking {
                pid,
                prio,
                target_cpu,
                ..
            }
            | EventKind::SchedWakeup {
                pid,
                prio,
                target_cpu,
                ..
            } if *pid == h && *target_cpu >= 0 => {
                saw(*prio);
                if holder_on.is_none() {
                    holder_on = Some(*target_cpu as u32);
                }
            }
            EventKind::SchedPiSetprio {
                pid,
                oldprio,
                newprio,
                ..
            } if *pid == h => {
                // A boost's oldprio, an unboost's newprio: the unboosted one.
                saw((*oldprio).max(*newprio));
            }
            _ => {}
        }
    }
    medium | medium_now(&cur, holder_on, base)
}

/// Whether task `pid` ran at `prio` by a priority-inheritance boost that `victim` lent
/// it (the latest `sched_pi_setprio` of `pid` before `until` raised it to `prio` in the
/// victim's context): a lock holder running for its waiter is the waiter's lock wait,
/// not a task that preempted it.
fn lent_by(t: &Trace, pid: i32, prio: i32, victim: i32, until: u64) -> bool {
    t.events
        .iter()
        .take_while(|e| e.ts.0 <= until)
        .filter(|e| matches!(&e.kind, EventKind::SchedPiSetprio { pid: p, .. } if *p == pid))
        .last()
        .is_some_and(|e| {
            e.pid == victim
                && matches!(&e.kind, EventKind::SchedPiSetprio { newprio, .. } if *newprio == prio)
        })
}

fn check(t: &Trace, sp: &SpikeView<'_>, facts: &Value, isolated_arg: bool) -> Result<(), String> {
    let cause = sp.s["primary"]["cause"].as_str().unwrap_or("");
    let (cpu, start, end) = (sp.cpu, sp.start, sp.end);
    let isolated = isolated_arg
        || facts["isolated"]
            .as_array()
            .is_some_and(|a| a.iter().any(|c| c.as_u64() == Some(u64::from(cpu))));
    // An event made by an IRQ's thread (`irq/N-name`): on PREEMPT_RT the softirqs its
    // handler raised run there.
    let by_irq_thread = |e: &Event| {
        t.tasks.get(&e.pid).is_some_and(|(_, c)| {
            c.starts_with("irq/") && c.as_bytes().get(4).is_some_and(u8::is_ascii_digit)
        })
    };
    let holder = sp.s["waker"]["tid"].as_i64().map(|t| t as i32);
    // A cause named from a window whose events were partly dropped is named from a
    // guess.
    if cause != "unknown" {
        let hole = t.drops.get(&cpu).into_iter().flatten();
        if let Some((a, b)) = hole.into_iter().find(|(a, b)| *b > start && *a < end) {
            return Err(format!(
                "the ring buffer dropped events of CPU {cpu} between {} and {}, in the window",
                Nanos(*a),
                Nanos(*b)
            ));
        }
    }
    match cause {
        "unknown" => Ok(()),
        "rt_throttling" => throttled(t, sp, facts),
        "softirq" => {
            let in_window = t.on_between(cpu, start, end).any(|e| {
                matches!(
                    e.kind,
                    EventKind::SoftirqEntry { .. } | EventKind::SoftirqExit { .. }
                )
            });
            // Or one entered before the window and still running at its start (on
            // PREEMPT_RT a softirq thread such as ktimers/N can be switched out in it).
            let mut open = 0u32;
            for e in t.on(cpu).take_while(|e| e.ts.0 < start) {
                match e.kind {
                    EventKind::SoftirqEntry { .. } => open += 1,
                    EventKind::SoftirqExit { .. } => open = open.saturating_sub(1),
                    _ => {}
                }
            }
            // On an isolated CPU, softirq work that only a device IRQ's thread ran is that
            // IRQ's (irq_on_isolated_cpu), not a softirq cause.
            let softirqs: Vec<&Event> = t
                .on_between(cpu, start, end)
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::SoftirqEntry { .. } | EventKind::SoftirqExit { .. }
                    )
                })
                .collect();
            if isolated && !softirqs.is_empty() && softirqs.iter().all(|e| by_irq_thread(e)) {
                return Err("isolated CPU: the softirqs ran in an IRQ thread only".into());
            }
            (in_window || open > 0)
                .then_some(())
                .ok_or_else(|| "no softirq entry/exit in the window".into())
        }
        "irq" | "irq_on_isolated_cpu" => {
            if cause == "irq_on_isolated_cpu" && !isolated {
                return Err("CPU not isolated".into());
            }
            let device = |n: &str| !(n.contains("timer") || n == "IPI" || n.starts_with("ipi"));
            let mut entered: Option<String> = None;
            let mut seen = false;
            for e in t.on(cpu) {
                if e.ts.0 > end {
                    break;
                }
                // An `irq/N-name` thread switched in or out is the handler's threaded
                // half (PREEMPT_RT runs every device handler so).
                let irq_thread = |c: &rtwhy_model::Comm| {
                    let b = c.as_bytes();
                    b.starts_with(b"irq/") && b.get(4).is_some_and(u8::is_ascii_digit)
                };
                let (is_handler, name) = match &e.kind {
                    EventKind::IrqHandlerEntry { name, .. } => {
                        entered = Some(name.clone());
                        (true, Some(name.clone()))
                    }
                    EventKind::IrqHandlerExit { .. } => (true, entered.take()),
                    EventKind::SchedSwitch {
                        prev_comm,
                        next_comm,
                        ..
                    } => match [prev_comm, next_comm].into_iter().find(|c| irq_thread(c)) {
                        Some(c) => (true, Some(c.to_str_lossy().into_owned())),
                        None => (false, None),
                    },
                    // The softirqs a device IRQ's thread runs after its handler.
                    EventKind::SoftirqEntry { .. } | EventKind::SoftirqExit { .. }
                        if cause == "irq_on_isolated_cpu" && by_irq_thread(e) =>
                    {
                        (true, t.tasks.get(&e.pid).map(|(_, c)| c.clone()))
                    }
                    _ => (false, None),
                };
                if is_handler && e.ts.0 >= start {
                    seen |= cause == "irq" || name.as_deref().is_some_and(device);
                }
            }
            seen.then_some(())
                .ok_or_else(|| "no handler in the window".into())
        }
        "hwlat" => {
            if sp.kind == "timer_wakeup" {
                return Ok(());
            }
            let mut expires: HashMap<u64, (i64, u64)> = HashMap::new();
            let mut late = false;
            // Who ran on the CPU after its previous event, and whether an interrupt was
            // open: a late timer that interrupts the task whose own event came last ends
            // a silence inside that task's run, which is the task running. A softirq
            // that a thread runs itself (ksoftirqd/N, ktimers/N, irq/N-name) is its run.
            let mut before: Option<(i32, bool)> = None;
            let (mut irqs, mut softirqs) = (0u32, 0u32);
            let threaded = |pid: i32| {
                t.tasks.get(&pid).is_some_and(|(_, c)| {
                    c.starts_with("ksoftirqd/")
                        || c.starts_with("ktimers/")
                        || (c.starts_with("irq/")
                            && c.as_bytes().get(4).is_some_and(u8::is_ascii_digit))
                })
            };
            // A timer may be started on another CPU than the one it expires on (a
            // nohz_full CPU's timers, for one): the starts of every CPU count.
            for e in t.events.iter() {
                if e.ts.0 > end + 20_000 {
                    break;
                }
                match &e.kind {
                    EventKind::HrtimerStart {
                        hrtimer,
                        expires: x,
                        ..
                    } => {
                        expires.insert(*hrtimer, (*x, e.ts.0));
                    }
                    EventKind::HrtimerExpireEntry { hrtimer, now, .. }
                        if e.ts.0 >= start && e.cpu == cpu =>
                    {
                        // Late from its expiry, or from its start when it was started
                        // already expired.
                        let lateness = expires
                            .get(hrtimer)
                            .map(|&(x, at)| (now - x).min(e.ts.0.saturating_sub(at) as i64));
                        let in_run =
                            before.is_some_and(|(pid, open)| pid > 0 && pid == e.pid && !open);
                        late |= !in_run && lateness.is_some_and(|l| l >= 20_000);
                    }
                    _ => {}
                }
                if e.cpu == cpu && !is_stack(e) {
                    let pid = match &e.kind {
                        EventKind::SchedSwitch { next_pid, .. } => {
                            (irqs, softirqs) = (0, 0);
                            *next_pid
                        }
                        EventKind::IrqHandlerEntry { .. } => {
                            irqs += 1;
                            e.pid
                        }
                        EventKind::IrqHandlerExit { .. } => {
                            irqs = irqs.saturating_sub(1);
                            e.pid
                        }
                        EventKind::SoftirqEntry { .. } => {
                            softirqs += 1;
                            e.pid
                        }
                        EventKind::SoftirqExit { .. } => {
                            softirqs = softirqs.saturating_sub(1);
                            e.pid
                        }
                        _ => e.pid,
                    };
                    let open = irqs > 0 || (softirqs > 0 && !threaded(pid));
                    before = Some((pid, open));
                }
            }
            late.then_some(()).ok_or_else(|| "no late timer".into())
        }
        "frequency_ramp" => t
            .events
            .iter()
            .filter(|e| e.ts.0 + 100_000_000 >= start && e.ts.0 <= end)
            .any(|e| match e.kind {
                EventKind::CpuFrequency { state, cpu_id } => {
                    cpu_id == cpu && u64::from(state) * 10 <= u64::from(t.max_freq) * 7
                }
                _ => false,
            })
            .then_some(())
            .ok_or_else(|| "no low clock".into()),
        "idle_exit" => {
            if sp.kind != "wakeup" && sp.kind != "timer_wakeup" {
                return Err("not a wake-up".into());
            }
            let mut idle = false;
            let mut last: Option<&Event> = None;
            for e in t.on(cpu) {
                if e.ts.0 > start {
                    break;
                }
                match &e.kind {
                    EventKind::SchedSwitch { next_pid, .. } => idle = *next_pid == 0,
                    _ if is_stack(e) => continue,
                    _ => idle = e.pid == 0,
                }
                last = Some(e);
            }
            if last.is_none() {
                // The CPU's history in the capture begins after the wake-up: its first
                // event says who held it then (a switch away from idle, or idle's own
                // event), as the analyzer's replay takes it.
                idle = t
                    .on(cpu)
                    .find(|e| !is_stack(e))
                    .is_some_and(|e| match &e.kind {
                        EventKind::SchedSwitch { prev_pid, .. } => *prev_pid == 0,
                        _ => e.pid == 0,
                    });
            }
            if !idle {
                return Err(format!("CPU not idle at the wake-up (since {last:?})"));
            }
            if let Some(e) = t.on_between(cpu, start, end.saturating_sub(1)).find(|e| {
                !is_stack(e) && e.pid != 0 && e.pid != sp.victim
                    || matches!(&e.kind, EventKind::SchedSwitch { next_pid, .. } if *next_pid != 0 && *next_pid != sp.victim)
            }) {
                return Err(format!("another task on the CPU at {}", e.ts));
            }
            // The exit delays the CPU's first event after the wake-up (the timer's handler,
            // the wake-up's IPI) by at most the deepest idle state's exit latency
            // (`name:latency_us,...` in the facts), 500 us when not recorded.
            let awake = t
                .on(cpu)
                .filter(|e| !is_stack(e))
                .find(|e| e.ts.0 >= start)
                .map_or(end, |e| e.ts.0.min(end));
            let bound = facts["idle_states"][cpu.to_string()]
                .as_str()
                .and_then(|s| {
                    s.split(',')
                        .filter_map(|x| x.rsplit_once(':')?.1.trim().parse::<u64>().ok())
                        .max()
                })
                .map_or(500_000, |us| us * 1000);
            if awake - start > bound {
                return Err(format!(
                    "the CPU's first event came {} ns after the wake-up, longer than an idle exit ({bound} ns)",
                    awake - start
                ));
            }
            Ok(())
        }
        "migration" => {
            // Moved while it waited: switched out runnable on another CPU, or a
            // sched_migrate_task that is not the wake-up's own placement (which follows
            // the victim's sched_waking on the same CPU within 50 us).
            let in_window = || t.events.iter().filter(|e| e.ts.0 >= start && e.ts.0 <= end);
            let wakings: Vec<(u32, u64)> = t
                .events
                .iter()
                .filter(|e| e.ts.0 + 50_000 >= start && e.ts.0 <= end)
                .filter(
                    |e| matches!(&e.kind, EventKind::SchedWaking { pid, .. } if *pid == sp.victim),
                )
                .map(|e| (e.cpu, e.ts.0))
                .collect();
            let moved = in_window().any(|e| match &e.kind {
                EventKind::SchedMigrateTask {
                    pid,
                    orig_cpu,
                    dest_cpu,
                    ..
                } => {
                    *pid == sp.victim
                        && orig_cpu != dest_cpu
                        && !wakings
                            .iter()
                            .any(|&(c, w)| c == e.cpu && e.ts.0 >= w && e.ts.0 - w <= 50_000)
                }
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_state,
                    ..
                } => *prev_pid == sp.victim && prev_state.is_runnable() && e.cpu != cpu,
                _ => false,
            });
            let stopper = t
                .ran_on(cpu, start, end)
                .iter()
                .any(|(_, _, c)| is_stopper(c));
            (moved || stopper)
                .then_some(())
                .ok_or_else(|| "not moved while waiting, no stopper".into())
        }
        "preemption" => t
            .ran_on(cpu, start, end)
            .iter()
            .any(|(pid, p, _)| {
                *pid != 0
                    && *pid != sp.victim
                    && (*p <= sp.vprio || (*p >= 100 && sp.vprio >= 100))
                    && !lent_by(t, *pid, *p, sp.victim, end)
            })
            .then_some(())
            .ok_or_else(|| "no task of equal or higher priority ran".into()),
        "kernel_nonpreemptible" if t.irqs_off_at(sp.victim, sp.end, &sp.victim_ends) => Ok(()),
        "kernel_nonpreemptible" => {
            if sp.vprio >= 100 {
                return Err("victim not real-time".into());
            }
            // Switched out runnable for lower work or idle: the scheduler refused the RT
            // class (throttling); the kernel did preempt.
            if sp.kind == "preempted" {
                let refused = t.on(cpu).filter(|e| e.ts.0 <= start).any(|e| {
                    e.ts.0 == start
                        && matches!(&e.kind, EventKind::SchedSwitch { prev_pid, prev_state, next_pid, next_prio, .. }
                            if *prev_pid == sp.victim && prev_state.is_runnable() && (*next_pid == 0 || *next_prio > sp.vprio))
                });
                if refused {
                    return Err("victim switched out runnable for lower work: throttling".into());
                }
            }
            let model = facts["preempt"].as_str().map(String::from).or_else(|| {
                let v = facts["kernel_version"].as_str()?;
                if v.contains("PREEMPT_RT") {
                    Some("rt".into())
                } else if v.contains("PREEMPT_DYNAMIC") {
                    None
                } else if v.contains("PREEMPT") {
                    Some("full".into())
                } else {
                    None
                }
            });
            if model
                .as_deref()
                .is_some_and(|m| m != "none" && m != "voluntary")
            {
                return Err(format!("preemption model {model:?}"));
            }
            if t.rt_kernel {
                return Err("ktimers threads: PREEMPT_RT".into());
            }
            t.ran_on(cpu, start, end)
                .iter()
                .any(|(pid, p, _)| *pid != 0 && *p > sp.vprio)
                .then_some(())
                .ok_or_else(|| "no lower task ran".into())
        }
        "lock_contention" | "priority_inversion" => {
            if sp.kind != "lock_wait" {
                return Err("not a lock wait".into());
            }
            let Some(h) = holder else {
                return Err("no holder (waker)".into());
            };
            // The wait ends when the holder wakes the victim.
            let until = t
                .events
                .iter()
                .take_while(|e| e.ts.0 <= end)
                .filter(|e| e.pid == h)
                .filter(|e| matches!(&e.kind, EventKind::SchedWaking { pid, .. } | EventKind::SchedWakeup { pid, .. } if *pid == sp.victim))
                .map(|e| e.ts.0)
                .last()
                .unwrap_or(end);
            let (chain, cut) = lock_chain(t, sp.victim, h, start, until);
            if cause == "lock_contention" {
                if let Some(why) = cut {
                    return Err(format!("chain of holders not followed to its end: {why}"));
                }
                let Some(&(last, from, to)) = chain.last() else {
                    return Err("no holder".into());
                };
                let ran = t.events.iter().filter(|e| e.ts.0 >= from && e.ts.0 <= to).any(|e| {
                    e.pid == last
                        || matches!(&e.kind, EventKind::SchedSwitch { next_pid, .. } if *next_pid == last)
                });
                return ran
                    .then_some(())
                    .ok_or_else(|| format!("holder {last} at the end of the chain never ran"));
            }
            chain
                .iter()
                .any(|&(holder, from, to)| medium_ran(t, sp.vprio, holder, from, to))
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "no medium task ran on the CPU of a holder (chain {chain:?}) while it was runnable"
                    )
                })
        }
        other => Err(format!("no check written for cause {other}")),
    }
}
