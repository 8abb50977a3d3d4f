//! The two documents a recording session keeps beside its captures: `session.json` (the
//! session, the captures on disk with their diagnoses, what the disk budget dropped,
//! the recorder's own timing) and `overview.json` (every watched thread's wake-up
//! histogram with the captured breaches under their verdicts). Both are rewritten
//! atomically after every capture while the session runs, and once more at its end.

use std::io::Write;
use std::path::Path;

use rtwhy_model::{Nanos, Overview, SessionDir};
use serde_json::{json, Value};

use crate::capture::write_atomic;
use crate::error::Result;
use crate::ledger::Ledger;
use crate::session::{self, SessionReport};
use crate::wakeups::DiagnosedTail;

/// `session.json` for session `r` started by `argv`: `ended` false while it records.
/// With a state directory the disk budget and the bytes used are the whole directory's.
pub fn session_document(
    argv: &[String],
    r: &SessionReport,
    ledger: &Ledger,
    state_dir: Option<&Path>,
    ended: bool,
) -> Value {
    let mut freeze: Vec<u64> = r.captures.iter().map(|c| c.freeze_delay_ns).collect();
    let mut detect: Vec<u64> = r.captures.iter().map(|c| c.detect_delay_ns).collect();
    let mut dead: Vec<u64> = r.captures.iter().map(|c| c.dead_time_ns).collect();
    let pages_lost: u64 = r.captures.iter().map(|c| c.summary.pages_after_loss).sum();
    json!({
        "schema": rtwhy_model::schema::SESSION,
        "state": if ended { "ended" } else { "recording" },
        "command": argv,
        "session": r,
        "spikes": ledger.this_session().map(|e| &e.diag).collect::<Vec<_>>(),
        "dropped": ledger.dropped,
        "disk": {"budget_bytes": ledger.budget, "used_bytes": ledger.used(), "state_dir": state_dir},
        "timing": {
            "detect_delay_ns": {"p50": quantile(&mut detect, 0.5), "p99": quantile(&mut detect, 0.99)},
            "freeze_delay_ns": {"p50": quantile(&mut freeze, 0.5), "p99": quantile(&mut freeze, 0.99)},
            "dead_time_ns": {"p50": quantile(&mut dead, 0.5), "max": dead.iter().max().copied().unwrap_or(0)},
            "pages_after_loss": pages_lost,
        },
    })
}

/// The `q` quantile of `v` (nearest rank, as every figure of rtwhy), 0 for none.
fn quantile(v: &mut [u64], q: f64) -> u64 {
    v.sort_unstable();
    rtwhy_model::quantile(v, q).unwrap_or(0)
}

/// Writes `session.json` into session directory `dir`; returns its size.
pub fn write_session(dir: &Path, doc: &Value) -> Result<u64> {
    write_atomic(&SessionDir::new(dir).manifest(), |w| {
        serde_json::to_writer_pretty(&mut *w, doc)?;
        w.write_all(b"\n")
    })
}

/// The session's overview: its wake-up histograms with the captured breaches under
/// their verdicts (`diagnosed`), breaches over `threshold`.
pub fn overview(r: &SessionReport, diagnosed: &DiagnosedTail, threshold: Nanos) -> Overview {
    let detector = r.armed.as_ref().map_or("", |a| a.detector.as_str());
    let mut o = r
        .wakeups
        .overview(detector, threshold.0, r.detector_lost, diagnosed);
    // The wall clock at the session's start: what places the sessions of a state
    // directory, each with its own boot's monotonic clock, on one time line.
    let since_start = session::mono_ns().saturating_sub(o.from_ns);
    o.from_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|now| u64::try_from(now.as_nanos()).ok())
        .map(|now| now.saturating_sub(since_start));
    o
}

/// Writes `overview.json` into session directory `dir`; returns its size.
pub fn write_overview(dir: &Path, o: &Overview) -> Result<u64> {
    write_atomic(&SessionDir::new(dir).overview(), |w| {
        serde_json::to_writer_pretty(&mut *w, o)?;
        w.write_all(b"\n")
    })
}
