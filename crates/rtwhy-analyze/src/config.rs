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
    /// The application's own markers, besides cyclictest's and rtwhy's: each one's
    /// number is a latency it measured, ending where it wrote the marker.
    pub markers: Vec<MarkerRule>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            threshold: Nanos(100_000),
            filter: TaskFilter::default(),
            isolated: None,
            horizon: Nanos(2_000_000_000),
            max_events_per_cpu: 400_000,
            markers: Vec::new(),
        }
    }
}

/// An application's `trace_marker` line that carries a latency it measured itself, as
/// cyclictest's `hit latency threshold (X > Y)` does: a regular expression with one
/// group named for the number's unit, `ns`, `us` or `ms` (`late by (?P<us>[0-9]+)`).
/// The marker is written when the measurement ends; its window is the number before it.
#[derive(Debug, Clone)]
pub struct MarkerRule {
    pattern: regex::Regex,
    /// Nanoseconds per unit of the number.
    scale: f64,
    /// The group that holds the number.
    group: &'static str,
}

impl MarkerRule {
    /// Compiles `pattern`; the error is one line that says what to change.
    pub fn new(pattern: &str) -> Result<MarkerRule, String> {
        let re = regex::Regex::new(pattern).map_err(|e| {
            // The parser's message spans lines; its last line says what is wrong.
            let why = e.to_string().lines().last().unwrap_or_default().to_string();
            format!("{pattern:?} is not a regular expression: {why}")
        })?;
        let units: Vec<(&'static str, f64)> = [("ns", 1.0), ("us", 1e3), ("ms", 1e6)]
            .into_iter()
            .filter(|(u, _)| re.capture_names().flatten().any(|n| n == *u))
            .collect();
        match units.as_slice() {
            [(group, scale)] => Ok(MarkerRule {
                pattern: re,
                scale: *scale,
                group,
            }),
            [] => Err(format!(
                "{pattern:?} names no number: put the latency in a group named for its unit, e.g. 'late by (?P<us>[0-9]+) us' (ns, us or ms)"
            )),
            _ => Err(format!(
                "{pattern:?} has more than one of the groups ns, us, ms: keep the one that holds the latency"
            )),
        }
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        self.pattern.as_str()
    }

    /// The latency in `text`, in nanoseconds, when the marker matches and its number
    /// reads as one (digits, at most one decimal point).
    pub fn latency(&self, text: &str) -> Option<u64> {
        let caps = self.pattern.captures(text)?;
        let n = caps.name(self.group)?.as_str().trim();
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return None;
        }
        let ns = n.parse::<f64>().ok()? * self.scale;
        (ns.is_finite() && (0.0..=1e18).contains(&ns)).then(|| ns.round() as u64)
    }
}

impl PartialEq for MarkerRule {
    fn eq(&self, other: &MarkerRule) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for MarkerRule {}

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
    fn a_marker_rule_reads_its_number_in_its_unit() {
        let us = MarkerRule::new(r"got the lock after (?P<us>[0-9]+) us").unwrap();
        assert_eq!(
            us.latency("inversion: high got the lock after 3307 us (iteration 2)"),
            Some(3_307_000)
        );
        assert_eq!(us.latency("inversion: high wants the lock"), None);
        let ms = MarkerRule::new(r"cycle took (?P<ms>[0-9.]+) ms").unwrap();
        assert_eq!(ms.latency("cycle took 1.25 ms"), Some(1_250_000));
        assert_eq!(ms.latency("cycle took . ms"), None);
        assert_eq!(ms.latency("cycle took 1.2.5 ms"), None);
        // The number must be named for its unit, once.
        let none = MarkerRule::new(r"late by ([0-9]+)").unwrap_err();
        assert!(none.contains("(?P<us>[0-9]+)"), "{none}");
        assert!(MarkerRule::new(r"(?P<us>[0-9]+) (?P<ms>[0-9]+)").is_err());
        let bad = MarkerRule::new(r"late by (").unwrap_err();
        assert!(
            bad.contains("not a regular expression") && !bad.contains('\n'),
            "{bad}"
        );
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
