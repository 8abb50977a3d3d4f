//! What `rtwhy selftest` concludes about each scenario: its [`Verdict`] and the row of
//! numbers behind it ([`ScenarioResult`]). rtwhy-lab judges, rtwhy-report prints the
//! table, the binary runs the scenarios; this is the data the three share.

use crate::Cause;

/// What became of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The expected cause is primary for more than the pass share of the latency of the
    /// victim's spikes during the load.
    Pass,
    /// Spikes of the victim, the expected cause primary for too little of their latency.
    Fail,
    /// The load ran but the victim was never late enough to be recorded.
    NoSpike,
    /// The kernel or hardware does not allow the scenario (not rtwhy's failure).
    NotInducible(String),
    /// The scenario could not run (a load or the recorder failed).
    Error(String),
    /// Stopped by Ctrl-C.
    Interrupted,
}

impl Verdict {
    /// Whether this verdict makes the selftest fail: a scenario that could run and did
    /// not name its cause (a scenario the machine does not allow, or Ctrl-C, does not).
    pub fn fails(&self) -> bool {
        matches!(self, Verdict::Fail | Verdict::NoSpike | Verdict::Error(_))
    }
}

/// One scenario's outcome: a row of the selftest's table.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioResult {
    /// The scenario's name (`rt_throttling`).
    pub scenario: &'static str,
    /// The cause it must be diagnosed as.
    pub expected: Cause,
    /// The victim's spikes judged.
    pub spikes: usize,
    /// The causes named for them, most frequent first ("softirq x2, hwlat x1"), or "-".
    pub diagnosis: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Attempts made (0 when the scenario was refused before anything ran).
    pub attempts: u32,
    /// The attempt the numbers are from: the last, or when every attempt failed, the one
    /// whose share of the expected cause was largest.
    pub shown: u32,
    /// The latency of the worst judged spike (ns), 0 without one.
    pub worst_ns: u64,
    /// The expected cause's share of the judged latency; `None` without spikes.
    pub share: Option<f64>,
}
