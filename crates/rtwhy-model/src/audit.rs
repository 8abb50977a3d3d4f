//! What `rtwhy doctor` says about a machine: one finding per check, with a severity,
//! the facts it rests on, and the fix. The rules that make findings live in the
//! analyzer (`rtwhy_analyze::audit`); these are the plain results.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How much a finding matters for real-time latency. Ordered: `Ok < Info < Warning <
/// Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Set up the way the tuning guides recommend.
    Ok,
    /// Worth knowing, or could not be checked (the evidence says why).
    Info,
    /// Costs latency on a real-time machine; the fix says what to change.
    Warning,
    /// Defeats real-time operation (an IRQ on an isolated CPU, no RT throttling guard).
    Error,
}

impl Severity {
    /// `ok`, `info`, `warning` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one audit check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFinding {
    /// Stable name of the check (`preempt_rt`, `irq_affinity`...; docs/report.md).
    pub check: String,
    /// How much it matters.
    pub severity: Severity,
    /// One sentence: what was found.
    pub summary: String,
    /// The facts it rests on (`/proc/cmdline: isolcpus=1`...), or what could not be read.
    pub evidence: Vec<String>,
    /// What to change, when something should change.
    pub fix: Option<String>,
}
