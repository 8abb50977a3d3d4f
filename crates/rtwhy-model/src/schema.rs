//! The names of rtwhy's JSON documents, each with its version: every document carries its
//! own in a `schema` field, so that a reader knows what it holds before it reads on. A
//! version goes up with an incompatible change to its document. Every such name is
//! defined here; the tests spell them out, so that a change here shows as a change of
//! the documents.

/// `rtwhy analyze --format json` and a bundle's `analysis.json` (docs/analysis-json.md).
pub const ANALYSIS: &str = "rtwhy.analysis/2";

/// A recording session's `session.json` (docs/recording.md).
pub const SESSION: &str = "rtwhy.session/2";

/// The document name of a schema, without its version: `rtwhy.session` of
/// `rtwhy.session/2`; `None` for a string without a version. A reader takes any version
/// of a document it knows by name and reads the fields it finds.
pub fn name_of(schema: &str) -> Option<&str> {
    schema.split_once('/').map(|(name, _)| name)
}

/// `rtwhy doctor --format json`.
pub const DOCTOR: &str = "rtwhy.doctor/1";

/// A recording session's `overview.json` and `rtwhy summary --format json`: every
/// watched thread's wake-up latency histogram ([`crate::Overview`], docs/analysis-json.md).
pub const OVERVIEW: &str = "rtwhy.overview/1";
