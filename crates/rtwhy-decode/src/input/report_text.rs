//! `trace-cmd report` (and `report -R`) text and the kernel's tracefs `trace` text.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::{Finish, Format, Header, Item, Push};
use crate::error::{Error, Result};
use crate::text::{looks_like_report_text, TextReader};
use crate::tracedat::FACT_MARKERS_MAX;

/// Report text, and the kernel's `trace` file, which shares its event lines.
pub(super) struct ReportText;

impl Format for ReportText {
    fn name(&self) -> &'static str {
        "report text"
    }

    fn recognises(&self, head: &[u8]) -> bool {
        looks_like_report_text(head)
    }

    fn read(&self, path: &Path, to: &mut dyn Push) -> Result<Finish> {
        let f = std::fs::File::open(path).map_err(|source| Error::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let header = Header {
            path,
            format: self.name(),
            facts: text_fact_markers(path),
            ts_in_nanos: true,
            trace_dat: None,
            meta: None,
        };
        let mut reader = TextReader::new(BufReader::new(f));
        if to.begin(&header) {
            while let Some(ev) = reader.next_event() {
                let ev = ev.map_err(|e| e.in_file(path))?;
                if !to.event(Item::from_line(
                    ev,
                    reader.event_text(),
                    reader.event_dropped(),
                )) {
                    break;
                }
            }
        }
        let mut warnings = Vec::new();
        if reader.skipped_lines() > 0 {
            warnings.push(format!(
                "{} lines were not events and were skipped",
                reader.skipped_lines()
            ));
        }
        Ok(Finish {
            format: self.name(),
            cpus: reader.cpus(),
            warnings,
        })
    }
}

/// The `rtwhy-fact:` markers of a text trace (`trace-cmd report` of one of rtwhy's
/// captures carries them, at its end), read ahead in a pass of their own for files up to
/// [`FACT_MARKERS_MAX`] bytes.
fn text_fact_markers(path: &Path) -> rtwhy_model::SystemFacts {
    let mut facts = rtwhy_model::SystemFacts::default();
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= FACT_MARKERS_MAX);
    if !small || !has_fact_marker(path) {
        return facts;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return facts;
    };
    let mut reader = TextReader::new(BufReader::new(f));
    // A line that cannot be read ends the search; the reading of the events reports it.
    while let Some(Ok(ev)) = reader.next_event() {
        if let rtwhy_model::EventKind::Print { text } = &ev.kind {
            if let Some((k, v)) = rtwhy_model::parse_fact_marker(text) {
                facts.set(k, v);
            }
        }
    }
    facts
}

/// Whether any line of the file mentions a fact marker: a scan far cheaper than parsing
/// the events, so text without markers (most of it) is parsed once.
fn has_fact_marker(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut r = BufReader::new(f);
    let mut line = Vec::new();
    let needle = rtwhy_model::FACT_PREFIX.as_bytes();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {
                if line.windows(needle.len()).any(|w| w == needle) {
                    return true;
                }
            }
        }
    }
}
