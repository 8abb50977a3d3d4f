//! What the analyzer is asked to look for.

use rtwhy_model::{Comm, CpuList, Nanos};

/// Which threads count as victims.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Processes: the real-time threads among these thread ids and every thread or
    /// process they create in the trace.
    pub pids: Vec<i32>,
    /// Exact thread ids, whatever their scheduling policy.
    pub tids: Vec<i32>,
    /// Real-time threads with these names (a name cut by the kernel's 15-byte limit
    /// matches its longer form).
    pub comms: Vec<String>,
    /// Every thread is a victim, kernel threads and normal tasks included.
    pub all: bool,
}

impl TaskFilter {
    /// True when no thread was named: every user-space real-time thread is then a
    /// victim (kernel threads too with `all`).
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.tids.is_empty() && self.comms.is_empty()
    }

    pub(crate) fn matches_comm(&self, comm: &Comm) -> bool {
        let name = comm.to_str_lossy();
        self.comms.iter().any(|c| {
            c.as_str() == name
                || (name.len() >= 15 && c.starts_with(name.as_ref()))
                || (c.len() >= 15 && name.starts_with(c.as_str()))
        })
    }
}

/// Analysis settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Latency above which a wake-up is a spike.
    pub threshold: Nanos,
    /// Victims (empty: all real-time threads).
    pub filter: TaskFilter,
    /// CPUs to treat as isolated, overriding the recorded facts.
    pub isolated: Option<CpuList>,
    /// How far back each CPU's events are kept for breakdowns.
    pub horizon: Nanos,
    /// Most events kept per CPU.
    pub max_events_per_cpu: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            threshold: Nanos(100_000),
            filter: TaskFilter::default(),
            isolated: None,
            horizon: Nanos(2_000_000_000),
            max_events_per_cpu: 400_000,
        }
    }
}

/// Parses a duration with a unit (`100us`, `2ms`, `1.5ms`, `1s`, `250ns`); a bare number
/// is microseconds, as in cyclictest.
pub fn parse_duration(s: &str) -> Option<Nanos> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() || num.chars().filter(|&c| c == '.').count() > 1 {
        return None;
    }
    let scale: f64 = match unit.trim() {
        "ns" => 1.0,
        "" | "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    let ns = v * scale;
    if !ns.is_finite() || !(0.0..=1e18).contains(&ns) {
        return None;
    }
    Some(Nanos(ns.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("100us"), Some(Nanos(100_000)));
        assert_eq!(parse_duration("2ms"), Some(Nanos(2_000_000)));
        assert_eq!(parse_duration("1.5ms"), Some(Nanos(1_500_000)));
        assert_eq!(parse_duration("50"), Some(Nanos(50_000)));
        assert_eq!(parse_duration("1s"), Some(Nanos(1_000_000_000)));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration("10xs"), None);
        assert_eq!(parse_duration(""), None);
        assert_eq!(parse_duration("1.2.3ms"), None);
    }

    #[test]
    fn long_names_match_their_cut_form() {
        let f = TaskFilter {
            comms: vec!["pipewire-pulse-worker".into()],
            ..TaskFilter::default()
        };
        assert!(f.matches_comm(&Comm::new("pipewire-pulse-")));
        assert!(!f.matches_comm(&Comm::new("pipewire")));
    }
}
