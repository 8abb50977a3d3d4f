//! The detector's histogram table, `hists` in `bpf/detector.bpf.c`: keys `struct
//! hist_key` and values `struct wakeup_hist`, read at the offsets the skeleton's
//! generated types give, from byte strings never trusted to be whole.

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};

use rtwhy_model::{Comm, Histogram};

use super::skel::types::wakeup_hist as Layout;

/// A histogram's key: the thread and the CPU it was switched in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadCpu {
    /// Thread id.
    pub tid: i32,
    /// CPU.
    pub cpu: u32,
}

/// Thread-CPU pairs kept apart: a session whose threads come and go for days keeps the
/// first this many, and counts the wake-ups of those after them on each CPU under tid 0.
pub const MAX_THREAD_CPUS: usize = 4096;

/// Where the histogram of `at` goes in `table`: its own entry while there is room (or
/// it has one), else the CPU's entry for every other thread (tid 0).
pub fn bounded<V>(table: &BTreeMap<ThreadCpu, V>, at: ThreadCpu) -> ThreadCpu {
    if table.len() < MAX_THREAD_CPUS || table.contains_key(&at) {
        at
    } else {
        ThreadCpu {
            tid: 0,
            cpu: at.cpu,
        }
    }
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// A key of the table (`struct hist_key`: tid, cpu, each a u32).
pub(super) fn parse_key(key: &[u8]) -> Option<ThreadCpu> {
    let tid = u32::from_ne_bytes(key.get(0..4)?.try_into().ok()?);
    let cpu = u32::from_ne_bytes(key.get(4..8)?.try_into().ok()?);
    Some(ThreadCpu {
        tid: i32::try_from(tid).ok().filter(|t| *t > 0)?,
        cpu,
    })
}

/// A value of the table: the thread's name and its histogram. The wake-up count is the
/// buckets' sum (the kernel's `count` may be one ahead of them while it is being read).
pub(super) fn parse_value(value: &[u8]) -> Option<(String, Histogram)> {
    if value.len() < size_of::<Layout>() {
        return None;
    }
    let sum = u64_at(value, offset_of!(Layout, sum))?;
    let max = u64_at(value, offset_of!(Layout, max))?;
    let comm_at = offset_of!(Layout, comm);
    let comm = Comm::from_bytes(value.get(comm_at..offset_of!(Layout, buckets))?)
        .to_str_lossy()
        .into_owned();
    let buckets_at = offset_of!(Layout, buckets);
    let n = (size_of::<Layout>() - buckets_at) / size_of::<u64>();
    let counts: Vec<u64> = (0..n)
        .map(|i| u64_at(value, buckets_at + 8 * i))
        .collect::<Option<_>>()?;
    Some((comm, Histogram::from_counts(&counts, sum, max)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(comm: &str, latencies: &[u64]) -> Vec<u8> {
        let mut v = vec![0u8; size_of::<Layout>()];
        let buckets_at = offset_of!(Layout, buckets);
        for ns in latencies {
            let at = buckets_at + 8 * rtwhy_model::bucket_of(*ns);
            let c = u64_at(&v, at).unwrap() + 1;
            v[at..at + 8].copy_from_slice(&c.to_ne_bytes());
        }
        let put =
            |v: &mut Vec<u8>, at: usize, x: u64| v[at..at + 8].copy_from_slice(&x.to_ne_bytes());
        put(&mut v, offset_of!(Layout, count), latencies.len() as u64);
        put(&mut v, offset_of!(Layout, sum), latencies.iter().sum());
        put(
            &mut v,
            offset_of!(Layout, max),
            latencies.iter().copied().max().unwrap_or(0),
        );
        let c = offset_of!(Layout, comm);
        v[c..c + comm.len()].copy_from_slice(comm.as_bytes());
        v
    }

    #[test]
    fn reads_a_value_as_the_kernel_lays_it_out() {
        let lat = [4_000, 4_100, 250_000];
        let (comm, h) = parse_value(&value("cyclictest", &lat)).unwrap();
        assert_eq!(comm, "cyclictest");
        let mut want = Histogram::default();
        for ns in lat {
            want.add(ns);
        }
        assert_eq!(h, want);
    }

    #[test]
    fn short_values_and_bad_keys_are_refused() {
        let v = value("x", &[1]);
        assert_eq!(parse_value(&v[..v.len() - 1]), None);
        assert_eq!(parse_key(&[1, 0, 0]), None);
        assert_eq!(parse_key(&0u64.to_ne_bytes()), None);
        let mut k = 42u32.to_ne_bytes().to_vec();
        k.extend(3u32.to_ne_bytes());
        assert_eq!(parse_key(&k), Some(ThreadCpu { tid: 42, cpu: 3 }));
    }

    #[test]
    fn the_kernel_has_as_many_buckets_as_the_model() {
        let n = (size_of::<Layout>() - offset_of!(Layout, buckets)) / size_of::<u64>();
        assert_eq!(n, rtwhy_model::HIST_BUCKETS);
    }
}
