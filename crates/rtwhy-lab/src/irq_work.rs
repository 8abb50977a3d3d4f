//! How long a device interrupt keeps a CPU busy at a time: what decides whether the
//! selftest's `irq_on_isolated_cpu` can stand out of the CPU's own noise at all.
//!
//! From the driven interrupts' hard handlers (`irq_handler_entry`/`exit`) and their
//! threads' runs (`sched_switch` into and out of `irq/N-...`) on one CPU, traced while
//! the scenario's load runs alone, [`bursts_of`] cuts their work into bursts: pieces less
//! than [`BURST_GAP_NS`] apart are one, since a task woken meanwhile waits for all of
//! them. Those bursts and the CPU's own wake-up latencies ([`crate::noise`]), measured
//! apart, say how much of a victim's judged latency the interrupts can be the main part
//! of at most ([`attainable_share`]): a DMA queue's completion handler on a kernel
//! without threaded interrupts, in a VM whose CPU stalls for longer by itself, is the
//! main part of a few percent, whatever the diagnosis says. That is the machine's limit,
//! and the selftest says so with the numbers instead of failing.

use std::time::Duration;

use rtwhy_model::{human_duration, Comm, Event, EventKind};

/// Pieces of an interrupt's work closer than this are one burst (a hard handler and
/// the thread it wakes, two channels' handlers back to back).
pub const BURST_GAP_NS: u64 = 10_000;

/// The interrupts' work on one CPU, cut into bursts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqWork {
    /// Each burst's length (ns), shortest first.
    pub bursts: Vec<u64>,
    /// Hard handlers and thread runs seen.
    pub pieces: usize,
    /// How long the CPU was traced (ns): its first event to its last.
    pub span: u64,
}

impl IrqWork {
    /// The burst length at quantile `q` (nearest rank), 0 without bursts.
    pub fn quantile(&self, q: f64) -> u64 {
        rtwhy_model::quantile(&self.bursts, q).unwrap_or(0)
    }

    /// "412 bursts, p50 7.0 us, p99 15.0 us, max 140 us".
    pub fn summary(&self) -> String {
        format!(
            "{} bursts, p50 {}, p99 {}, max {}",
            self.bursts.len(),
            human_duration(self.quantile(0.5)),
            human_duration(self.quantile(0.99)),
            human_duration(self.bursts.last().copied().unwrap_or(0))
        )
    }
}

/// Whether `comm` is the thread of one of `irqs` (`irq/36-virtio1-`, cut at 15 bytes;
/// `irq/36-s-...` for a secondary handler).
fn is_thread_of(comm: &Comm, irqs: &[i32]) -> bool {
    comm.as_bytes()
        .strip_prefix(b"irq/")
        .and_then(|rest| rest.split(|b| *b == b'-').next())
        .and_then(|n| std::str::from_utf8(n).ok()?.parse::<i32>().ok())
        .is_some_and(|n| irqs.contains(&n))
}

/// The work of `irqs` on `cpu` in `events` (in time order): hard handlers and runs of
/// their threads, merged into bursts.
pub fn bursts_of(events: &[Event], cpu: u32, irqs: &[i32]) -> IrqWork {
    let mut pieces: Vec<(u64, u64)> = Vec::new();
    let mut hard: Option<u64> = None;
    let mut thread: Option<u64> = None;
    let mut traced: Option<(u64, u64)> = None;
    for ev in events.iter().filter(|e| e.cpu == cpu) {
        let ts = ev.ts.0;
        traced = Some(traced.map_or((ts, ts), |(first, _)| (first, ts)));
        match &ev.kind {
            EventKind::IrqHandlerEntry { irq, .. } if irqs.contains(irq) => hard = Some(ts),
            EventKind::IrqHandlerExit { irq, .. } if irqs.contains(irq) => {
                if let Some(start) = hard.take() {
                    pieces.push((start, ts));
                }
            }
            EventKind::SchedSwitch {
                prev_comm,
                next_comm,
                ..
            } => {
                if is_thread_of(prev_comm, irqs) {
                    if let Some(start) = thread.take() {
                        pieces.push((start, ts));
                    }
                }
                if is_thread_of(next_comm, irqs) {
                    thread = Some(ts);
                }
            }
            _ => {}
        }
    }
    pieces.sort_unstable();
    let mut bursts = Vec::new();
    let mut current: Option<(u64, u64)> = None;
    for &(start, end) in &pieces {
        current = match current {
            Some((s, e)) if start <= e.saturating_add(BURST_GAP_NS) => Some((s, e.max(end))),
            Some((s, e)) => {
                bursts.push(e - s);
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        bursts.push(e - s);
    }
    bursts.sort_unstable();
    IrqWork {
        bursts,
        pieces: pieces.len(),
        span: traced.map_or(0, |(first, last)| last - first),
    }
}

/// Points at which each burst is cut in [`attainable_share`]: where in it a wake-up falls.
const CUTS: u32 = 16;

/// The share of a victim's judged latency (its wake-ups later than `threshold`) whose
/// main part the interrupts' `work` can be on a CPU whose own wake-up latencies are
/// `noise` (sorted, ns), both measured apart; `None` when either is empty.
///
/// A wake-up falls at a random instant: outside the bursts (a `busy` fraction of the
/// traced time) it is late by the CPU's noise `B` alone; inside a burst of length `L`
/// (longer bursts catch more wake-ups) it waits for the rest of it, `D` (uniform in
/// `0..L`), on top of `B`. It is judged when `B + D` reaches the threshold, and the
/// interrupts are its main part when `D > B`. Every pairing of a measured `B` with a
/// measured burst is weighed, so the answer is what the two measurements imply, not
/// what the diagnosis found. The noise is measured between wake-ups 1 ms apart, where
/// an idle CPU may sleep deeper than between a faster victim's: the share leans low for
/// such a CPU, and that is said where the verdict is printed.
pub fn attainable_share(work: &IrqWork, noise: &[u64], threshold: Duration) -> Option<f64> {
    if work.bursts.is_empty() || noise.is_empty() || work.span == 0 {
        return None;
    }
    let t = threshold.as_nanos() as f64;
    let n = noise.len() as f64;
    let mut prefix = Vec::with_capacity(noise.len() + 1);
    prefix.push(0.0f64);
    for &b in noise {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + b as f64);
    }
    // Σ (b + d) over noise[from..to].
    let sum = |from: usize, to: usize, d: f64| -> f64 {
        let (Some(hi), Some(lo)) = (prefix.get(to), prefix.get(from)) else {
            return 0.0;
        };
        hi - lo + d * (to - from) as f64
    };
    let first_above = |x: f64| noise.partition_point(|&b| (b as f64) <= x);
    let first_not_below = |x: f64| noise.partition_point(|&b| (b as f64) < x);
    let total: f64 = work.bursts.iter().map(|&l| l as f64).sum();
    let busy = (total / work.span as f64).min(1.0);
    let outside = sum(first_above(t), noise.len(), 0.0) / n;
    let (mut mine, mut others) = (0.0, 0.0);
    for &l in &work.bursts {
        let weight = l as f64 / total / f64::from(CUTS) / n;
        for cut in 0..CUTS {
            let d = l as f64 * (f64::from(cut) + 0.5) / f64::from(CUTS);
            let judged = if d >= t { 0 } else { first_above(t - d) };
            let split = first_not_below(d).max(judged);
            mine += weight * sum(judged, split, d);
            others += weight * sum(split, noise.len(), d);
        }
    }
    let mine = busy * mine;
    let all = mine + busy * others + (1.0 - busy) * outside;
    Some(if all > 0.0 { mine / all } else { 0.0 })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rtwhy_model::{Nanos, TaskState};

    fn ev(ts_us: u64, cpu: u32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts_us * 1000),
            cpu,
            pid: 0,
            kind,
        }
    }

    fn entry(ts: u64, irq: i32) -> Event {
        ev(
            ts,
            1,
            EventKind::IrqHandlerEntry {
                irq,
                name: "x".into(),
            },
        )
    }

    fn exit(ts: u64, irq: i32) -> Event {
        ev(ts, 1, EventKind::IrqHandlerExit { irq, ret: 1 })
    }

    fn switch(ts: u64, prev: &str, next: &str) -> Event {
        ev(
            ts,
            1,
            EventKind::SchedSwitch {
                prev_comm: Comm::new(prev),
                prev_pid: 1,
                prev_prio: 120,
                prev_state: TaskState::default(),
                next_comm: Comm::new(next),
                next_pid: 2,
                next_prio: 49,
            },
        )
    }

    #[test]
    fn a_handler_and_the_thread_it_wakes_are_one_burst() {
        let events = [
            entry(100, 14),
            exit(103, 14),
            switch(105, "swapper/1", "irq/14-ata_piix"),
            switch(2105, "irq/14-ata_piix", "irq/15-ata_piix"),
            switch(3105, "irq/15-ata_piix", "swapper/1"),
            // Another IRQ's handler and an unrelated task are not the device's work.
            entry(5000, 9),
            exit(5100, 9),
            switch(6000, "swapper/1", "irq/9-acpi"),
            switch(7000, "irq/9-acpi", "swapper/1"),
            // A lone handler, well apart.
            entry(9000, 15),
            exit(9007, 15),
        ];
        let w = bursts_of(&events, 1, &[14, 15]);
        assert_eq!(w.pieces, 4);
        assert_eq!(w.bursts, vec![7_000, 3_005_000]);
        assert_eq!(w.quantile(0.5), 7_000);
        assert_eq!(w.quantile(0.99), 3_005_000);
    }

    #[test]
    fn another_cpus_events_and_unfinished_pieces_are_left_out() {
        let mut other = entry(10, 14);
        other.cpu = 0;
        let events = [other, entry(20, 14), exit(25, 14), entry(90, 14)];
        let w = bursts_of(&events, 1, &[14]);
        assert_eq!(w.bursts, vec![5_000]);
    }

    #[test]
    fn the_attainable_share_weighs_every_pairing_of_noise_and_burst() {
        // One 40 us burst in 80 us (half the wake-ups fall in it), noise 10 or 30 us,
        // threshold 20 us. Outside: only the 30 us wake-up is judged (mass 15 per
        // wake-up). Inside, at the burst's 16 cuts (d = 1.25, 3.75 .. 38.75 us): with
        // b = 10 the 12 cuts past 10 us are judged and the burst's (mass 420 / 16);
        // with b = 30 all are judged, the 4 cuts past 30 us the burst's (260 / 16), the
        // 12 others not (540 / 16). Mine 0.5 * 680 / 32 = 10.625 of
        // 10.625 + 0.5 * 540 / 32 + 0.5 * 15 = 26.5625: 40 %.
        let work = IrqWork {
            bursts: vec![40_000],
            pieces: 1,
            span: 80_000,
        };
        let share = attainable_share(&work, &[10_000, 30_000], Duration::from_micros(20));
        assert!((share.unwrap() - 0.4).abs() < 1e-9, "{share:?}");
    }

    #[test]
    fn a_short_handler_under_a_vms_noise_is_the_main_part_of_little() {
        let us = |n: u64| n * 1000;
        // This VM, measured 2026-11-26: 9p's handler on CPU 1, 13541 bursts in 2 s,
        // p50 6 us, p99 31 us, max 177 us; the CPU's wake-ups at 1 ms, p99 54.8 us.
        let mut bursts: Vec<u64> = (0..13_400).map(|i| us(4 + i % 5)).collect();
        bursts.extend((0..140).map(|i| us(31 + i)));
        bursts.sort_unstable();
        let work = IrqWork {
            bursts,
            pieces: 13_541,
            span: 2_000_000_000,
        };
        let mut noise: Vec<u64> = (0..1980).map(|i| us(8 + i % 40)).collect();
        noise.extend((0..20).map(|i| us(55 + 10 * i)));
        noise.sort_unstable();
        let share = attainable_share(&work, &noise, Duration::from_micros(30)).unwrap();
        assert!(share < 0.2, "{share}");
        // The same noise beside a PIO controller's thread: 2 ms at a time, 50 times.
        let pio = IrqWork {
            bursts: vec![2_000_000; 50],
            pieces: 50,
            span: 2_000_000_000,
        };
        let share = attainable_share(&pio, &noise, Duration::from_micros(30)).unwrap();
        assert!(share > 0.5, "{share}");
        // Nothing measured on either side: nothing concluded.
        let none = IrqWork {
            bursts: Vec::new(),
            pieces: 0,
            span: 2_000_000_000,
        };
        assert_eq!(
            attainable_share(&none, &noise, Duration::from_micros(30)),
            None
        );
        assert_eq!(attainable_share(&pio, &[], Duration::from_micros(30)), None);
    }

    #[test]
    fn irq_threads_are_told_by_their_number() {
        let irqs = [36];
        assert!(is_thread_of(&Comm::new("irq/36-virtio1-"), &irqs));
        assert!(is_thread_of(&Comm::new("irq/36-s-virtio"), &irqs));
        assert!(!is_thread_of(&Comm::new("irq/361-nvme0q"), &irqs));
        assert!(!is_thread_of(&Comm::new("ksoftirqd/1"), &irqs));
    }
}
