//! The detector's ring-buffer record, `struct breach` in `bpf/detector.bpf.c`: its only
//! definition. The skeleton generates it as `types::breach` (`#[repr(C)]`, the same bytes);
//! every field is read here at the offset that type gives, in the machine's byte order,
//! from a record that may be shorter than the type (never trusted to be whole).

use std::mem::{offset_of, size_of};

use rtwhy_model::{BreachRecord, Comm, Nanos};

use super::skel::types::breach as Layout;
use super::Breach;

/// Size of one record in bytes.
pub const BREACH_SIZE: usize = size_of::<Layout>();

/// The field `$f` of the record's layout: its offset.
macro_rules! at {
    ($f:ident) => {
        offset_of!(Layout, $f)
    };
}

/// Addresses in each of the record's stacks (the first array runs up to `timer_fired`).
const STACK_DEPTH: usize = (at!(timer_fired) - at!(stack)) / size_of::<u64>();

/// The addresses of a `bpf_get_stack` array whose result was `stack_bytes`.
fn stack_at(data: &[u8], bytes_at: usize, array_at: usize) -> Option<Vec<u64>> {
    let stack_bytes = usize::try_from(i32_at(data, bytes_at)?).unwrap_or(0);
    let frames = (stack_bytes / 8).min(STACK_DEPTH);
    Some(
        (0..frames)
            .filter_map(|i| u64_at(data, array_at + 8 * i))
            .take_while(|a| *a != 0)
            .collect(),
    )
}

fn bytes<const N: usize>(data: &[u8], at: usize) -> Option<[u8; N]> {
    data.get(at..at + N)?.try_into().ok()
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    bytes(data, at).map(u64::from_ne_bytes)
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    bytes(data, at).map(u32::from_ne_bytes)
}

fn i32_at(data: &[u8], at: usize) -> Option<i32> {
    bytes(data, at).map(i32::from_ne_bytes)
}

fn tid_at(data: &[u8], at: usize) -> Option<i32> {
    i32::try_from(u32_at(data, at)?).ok()
}

/// Parses one ring-buffer record into a [`Breach`] (`threshold_ns`: the threshold the
/// detector ran with). `None` when the record is shorter than [`BREACH_SIZE`] or holds
/// an impossible tid.
pub fn parse_breach(data: &[u8], threshold_ns: u64) -> Option<Breach> {
    if data.len() < BREACH_SIZE {
        return None;
    }
    let expiry = u64_at(data, at!(expiry))?;
    let stack = stack_at(data, at!(stack_bytes), at!(stack))?;
    let timer_fired = u64_at(data, at!(timer_fired))?;
    let timer_stack = if timer_fired == 0 {
        Vec::new()
    } else {
        stack_at(data, at!(timer_stack_bytes), at!(timer_stack))?
    };
    let comm = |f: usize| data.get(f..f + size_of::<[i8; 16]>()).map(Comm::from_bytes);
    let record = BreachRecord {
        tid: tid_at(data, at!(tid))?,
        comm: comm(at!(comm))?,
        cpu: u32_at(data, at!(cpu))?,
        prio: Some(i32_at(data, at!(prio))?),
        latency: Nanos(u64_at(data, at!(latency))?),
        threshold: Some(Nanos(threshold_ns)),
        expiry: (expiry != 0).then_some(Nanos(expiry)),
        waking: Some(Nanos(u64_at(data, at!(waking))?)),
        switch_in: Nanos(u64_at(data, at!(switch_in))?),
        waker_tid: Some(tid_at(data, at!(waker_tid))?),
        prev_tid: Some(tid_at(data, at!(prev_tid))?),
        prev_comm: Some(comm(at!(prev_comm))?),
        rt_throttled: match u32_at(data, at!(rt_throttled))? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        },
        detector: Some("bpf".to_owned()),
        stack: Vec::new(),
        timer_fired: (timer_fired != 0).then_some(Nanos(timer_fired)),
        timer_stack: Vec::new(),
    };
    Some(Breach {
        record,
        stack,
        timer_stack,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A record laid out as the BPF program writes it.
    fn raw(stack: &[u64], stack_bytes: i32, throttled: u32, expiry: u64) -> Vec<u8> {
        let mut d = vec![0u8; BREACH_SIZE];
        let mut put = |at: usize, b: &[u8]| d[at..at + b.len()].copy_from_slice(b);
        put(at!(latency), &153_210u64.to_ne_bytes());
        put(at!(expiry), &expiry.to_ne_bytes());
        put(at!(waking), &308_556_570_000u64.to_ne_bytes());
        put(at!(switch_in), &308_556_723_000u64.to_ne_bytes());
        put(at!(tid), &4242u32.to_ne_bytes());
        put(at!(cpu), &1u32.to_ne_bytes());
        put(at!(prio), &19i32.to_ne_bytes());
        put(at!(waker_tid), &0u32.to_ne_bytes());
        put(at!(prev_tid), &11850u32.to_ne_bytes());
        put(at!(rt_throttled), &throttled.to_ne_bytes());
        put(at!(comm), b"cyclictest\0\0\0\0\0\0");
        put(at!(prev_comm), b"rtwhy-spinner-1\0");
        put(at!(stack_bytes), &stack_bytes.to_ne_bytes());
        for (i, a) in stack.iter().enumerate() {
            put(at!(stack) + 8 * i, &a.to_ne_bytes());
        }
        d
    }

    #[test]
    fn late_timer_and_its_stack() {
        let mut d = raw(&[], 0, 0, 308_556_569_790);
        let mut put = |at: usize, b: &[u8]| d[at..at + b.len()].copy_from_slice(b);
        put(at!(timer_fired), &308_556_690_000u64.to_ne_bytes());
        put(at!(timer_stack_bytes), &24i32.to_ne_bytes());
        for (i, a) in [
            0xffff_ffff_8100_0010u64,
            0xffff_ffff_8100_0020,
            0xffff_ffff_8100_0030,
        ]
        .iter()
        .enumerate()
        {
            put(at!(timer_stack) + 8 * i, &a.to_ne_bytes());
        }
        let b = parse_breach(&d, 100_000).unwrap();
        assert_eq!(b.record.timer_fired, Some(Nanos(308_556_690_000)));
        assert_eq!(b.timer_stack.len(), 3);
        // Not late: the timer stack's slots are not read.
        let mut d = d.clone();
        d[at!(timer_fired)..at!(timer_fired) + 8].copy_from_slice(&0u64.to_ne_bytes());
        let b = parse_breach(&d, 100_000).unwrap();
        assert_eq!(b.record.timer_fired, None);
        assert!(b.timer_stack.is_empty());
    }

    #[test]
    fn parses_every_field() {
        let stack = [0xffff_ffff_8100_0010u64, 0xffff_ffff_8100_0020];
        let b = parse_breach(&raw(&stack, 16, 0, 308_556_569_790), 100_000).unwrap();
        let r = &b.record;
        assert_eq!(r.tid, 4242);
        assert_eq!(r.comm.to_str_lossy(), "cyclictest");
        assert_eq!(r.cpu, 1);
        assert_eq!(r.prio, Some(19));
        assert_eq!(r.latency, Nanos(153_210));
        assert_eq!(r.threshold, Some(Nanos(100_000)));
        assert_eq!(r.expiry, Some(Nanos(308_556_569_790)));
        assert_eq!(r.waking, Some(Nanos(308_556_570_000)));
        assert_eq!(r.switch_in, Nanos(308_556_723_000));
        assert_eq!(r.waker_tid, Some(0));
        assert_eq!(r.prev_tid, Some(11850));
        assert_eq!(r.prev_comm.unwrap().to_str_lossy(), "rtwhy-spinner-1");
        assert_eq!(r.rt_throttled, Some(false));
        assert_eq!(r.detector.as_deref(), Some("bpf"));
        assert!(r.stack.is_empty());
        assert_eq!(b.stack, stack);
    }

    #[test]
    fn no_timer_no_expiry_and_unknown_throttling() {
        let b = parse_breach(&raw(&[], 0, 2, 0), 50_000).unwrap();
        assert_eq!(b.record.expiry, None);
        assert_eq!(b.record.rt_throttled, None);
        assert!(b.stack.is_empty());
        let b = parse_breach(&raw(&[], 0, 1, 0), 50_000).unwrap();
        assert_eq!(b.record.rt_throttled, Some(true));
    }

    #[test]
    fn failed_stack_capture_gives_no_frames() {
        // bpf_get_stack returns a negative errno on failure; the slots are garbage.
        let b = parse_breach(&raw(&[1, 2, 3], -14, 0, 0), 50_000).unwrap();
        assert!(b.stack.is_empty());
    }

    #[test]
    fn stack_bytes_beyond_the_array_are_capped() {
        let full: Vec<u64> = (1..=32).collect();
        let b = parse_breach(&raw(&full, 4096, 0, 0), 50_000).unwrap();
        assert_eq!(b.stack, full);
    }

    #[test]
    fn short_or_impossible_records_are_refused() {
        let d = raw(&[], 0, 0, 0);
        assert!(parse_breach(&d[..BREACH_SIZE - 1], 1).is_none());
        assert!(parse_breach(&[], 1).is_none());
        let mut bad = d.clone();
        bad[32..36].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(parse_breach(&bad, 1).is_none());
    }
}
