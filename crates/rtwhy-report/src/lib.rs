//! Every output format of a diagnosis: the text `rtwhy analyze` prints ([`text`]), the
//! typed `rtwhy.analysis/2` JSON document ([`json`]), Markdown to paste into an issue,
//! an SVG timeline of each spike's window, Chrome/Perfetto trace-event JSON, a whole
//! trace as Perfetto protobuf, and one `.tar.gz` bundle holding them with the trace
//! window, so whoever reads the bug can see and check the spike without installing
//! anything.
//!
//! The crate is pure formatting over the model's types: the caller runs the analysis,
//! cuts each spike's [`Window`] of events and its decisive trace lines, and hands over
//! a [`Report`].
//!
//! The other documents the binary prints are rendered here too, one file each:
//! `rtwhy info` ([`info`]), `rtwhy doctor` ([`doctor`]) and `rtwhy selftest`'s table
//! ([`selftest`]).
//!
//! ```
//! use rtwhy_model::{Nanos, SystemFacts};
//! use rtwhy_report::{markdown, Report};
//!
//! let mut facts = SystemFacts::default();
//! facts.set("kernel.release", "6.18.44");
//! facts.set("kernel.preempt", "none");
//! let report = Report {
//!     source: "capture-001.dat".to_string(),
//!     facts,
//!     threshold: Nanos(100_000),
//!     events: 1234,
//!     reproduce: "rtwhy analyze --threshold 100us capture-001.dat".to_string(),
//!     spikes: Vec::new(),
//!     spikes_found: 0,
//!     audit: Vec::new(),
//!     redacted: false,
//! };
//! let md = markdown::render(&report, &markdown::Links::default());
//! assert!(md.contains("| Preemption model | none |"));
//! assert!(md.contains("No spike above 100.0 us"));
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod breaches_svg;
pub mod bundle;
pub mod doctor;
pub mod info;
pub mod json;
pub mod lanes;
pub mod markdown;
pub mod overview;
pub mod overview_svg;
pub mod perfetto;
pub mod perfetto_trace;
#[cfg(test)]
mod png;
mod protobuf;
pub mod recording;
pub mod redact;
pub mod selftest;
mod sorted_spike;
pub mod summary;
pub mod svg;
pub mod system;
pub mod text;
pub mod timeline;

use std::path::PathBuf;

use rtwhy_model::{AuditFinding, Event, Nanos, Spike, SystemFacts};

pub use rtwhy_model::Timerlat;

pub use rtwhy_model::human_duration;

/// Where an analysis came from, for the text and JSON headers.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The file, as given.
    pub path: String,
    /// What it was recognised as (`trace.dat v7`, `trace-cmd report text`...).
    pub kind: &'static str,
    /// What the reader warned about.
    pub warnings: Vec<String>,
    /// The timerlat periods over the threshold, when the trace holds timerlat samples.
    pub timerlat: Option<Timerlat>,
}

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the bundle archive failed.
    #[error("cannot write the bundle {}: {source}", path.display())]
    Bundle {
        /// The archive (or member) being written.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// The events around one spike: from a little before the latency started to a little
/// after it ended, every CPU, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// First instant shown.
    pub from: Nanos,
    /// Last instant shown.
    pub to: Nanos,
    /// The events in `from..=to`.
    pub events: Vec<Event>,
}

impl Window {
    /// The window rtwhy shows for `spike`: the latency plus a quarter of it (at least
    /// 50 us) on each side.
    pub fn around(spike: &Spike) -> (Nanos, Nanos) {
        let pad = (spike.latency_ns / 4).max(50_000);
        (
            Nanos(spike.start.0.saturating_sub(pad)),
            Nanos(spike.end.0.saturating_add(pad)),
        )
    }
}

/// One spike with what the report shows of it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpikeReport {
    /// The diagnosis.
    pub spike: Spike,
    /// Its events.
    pub window: Window,
    /// The decisive events as `trace-cmd report` prints them, one per evidence item
    /// (in [`Spike::evidence`] order).
    pub trace_lines: Vec<String>,
}

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The trace, as the user named it.
    pub source: String,
    /// The recording machine's facts.
    pub facts: SystemFacts,
    /// The latency threshold of the analysis.
    pub threshold: Nanos,
    /// Events analyzed.
    pub events: u64,
    /// The `rtwhy analyze` command line that reproduces the analysis.
    pub reproduce: String,
    /// The spikes shown.
    pub spikes: Vec<SpikeReport>,
    /// Spikes the analysis found (some may not be shown).
    pub spikes_found: usize,
    /// `rtwhy doctor`'s findings on the recorded facts; warnings and errors are shown.
    pub audit: Vec<AuditFinding>,
    /// Whether the report went through [`redact`] (`rtwhy report --redact`); the
    /// Markdown says so at its end either way.
    pub redacted: bool,
}

impl SpikeReport {
    /// The timeline of this spike's window.
    pub fn timeline(&self) -> timeline::Timeline {
        timeline::build(&self.spike, &self.window)
    }

    /// The SVG timeline of this spike.
    pub fn svg(&self) -> String {
        svg::render(&self.spike, &self.timeline())
    }
}

impl Report {
    /// The Chrome/Perfetto trace-event document of every spike shown.
    pub fn perfetto(&self) -> serde_json::Value {
        let timelines: Vec<timeline::Timeline> =
            self.spikes.iter().map(SpikeReport::timeline).collect();
        let pairs: Vec<(&SpikeReport, &timeline::Timeline)> =
            self.spikes.iter().zip(timelines.iter()).collect();
        perfetto::document(&pairs)
    }
}
