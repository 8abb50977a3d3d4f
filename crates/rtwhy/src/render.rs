//! The bug report of an analysis: which spikes a Markdown report, SVG, Perfetto trace or
//! bundle shows, and the command line that reproduces them. Every format itself is
//! rendered by rtwhy-report.

use rtwhy_model::{Analysis, Spike, SpikeSummary};
use rtwhy_report::markdown::{self, Links};
use rtwhy_report::{Report, Source, SpikeReport, Window};

use crate::cli::AnalysisOpts;

/// Most spikes a Markdown report, SVG, Perfetto trace or bundle shows: the first ranked.
pub const MAX_SHOWN: usize = 10;

/// A spike's report without the events around it (the Markdown does not show them).
pub fn without_window(s: &Spike) -> SpikeReport {
    let (from, to) = Window::around(s);
    SpikeReport {
        spike: s.clone(),
        window: Window {
            from,
            to,
            events: Vec::new(),
        },
        trace_lines: s.evidence.iter().map(|e| e.line.clone()).collect(),
    }
}

/// The report of `spikes` (chosen from `analysis`) of the trace `trace_name`.
pub fn build(
    analysis: &Analysis,
    source: &Source,
    opts: &AnalysisOpts,
    trace_name: &str,
    spikes: Vec<SpikeReport>,
) -> Report {
    let mut facts = analysis.facts.clone();
    if let Some(iso) = &opts.isolated {
        facts.isolated = iso.clone();
        facts.isolated_source = Some("--isolated".to_string());
    }
    Report {
        source: source.path.clone(),
        audit: rtwhy_analyze::audit(&facts),
        facts,
        threshold: analysis.threshold,
        events: analysis.events,
        reproduce: reproduce(opts, trace_name),
        spikes,
        spikes_found: analysis.spikes.len(),
        redacted: false,
    }
}

/// The first [`MAX_SHOWN`] spikes as they are ranked ([`rtwhy_model::rank`]: flagged
/// by a marker, then the victim's priority, then latency), in that order: a report
/// leads with the spike the user's own tool flagged.
pub fn first_shown(selected: Vec<&Spike>) -> Vec<&Spike> {
    let summaries: Vec<SpikeSummary> = selected.iter().map(|s| SpikeSummary::of(s)).collect();
    rtwhy_model::rank(&summaries)
        .into_iter()
        .take(MAX_SHOWN)
        .filter_map(|i| selected.get(i).copied())
        .collect()
}

/// The Markdown bug report of a whole analysis: what `rtwhy report --format markdown`
/// prints, and `rtwhy analyze --format markdown` too (the same bytes), `redacted` when
/// the analysis went through `rtwhy report --redact`'s redactor.
pub fn markdown_of(
    analysis: &Analysis,
    source: &Source,
    opts: &AnalysisOpts,
    redacted: bool,
) -> String {
    let selected = first_shown(analysis.spikes.iter().collect());
    markdown_of_shown(
        analysis,
        source,
        opts,
        &selected,
        analysis.spikes.len(),
        redacted,
    )
}

/// [`markdown_of`] of an analysis of `found` spikes whose [`first_shown`] are `shown`
/// (`analysis.spikes` is not read: an analysis written out as it went holds none).
pub fn markdown_of_shown(
    analysis: &Analysis,
    source: &Source,
    opts: &AnalysisOpts,
    shown: &[&Spike],
    found: usize,
    redacted: bool,
) -> String {
    let spikes = shown.iter().map(|s| without_window(s)).collect();
    let mut report = build(analysis, source, opts, &source.path, spikes);
    report.spikes_found = found;
    report.redacted = redacted;
    markdown::render(&report, &Links::default())
}

/// `word` as one shell word: as is when that is safe, else in single quotes.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The `rtwhy analyze` command line that gives the same spikes from `file`.
fn reproduce(a: &AnalysisOpts, file: &str) -> String {
    let t = a.threshold.0;
    let mut cmd = if t % 1_000 == 0 {
        format!("rtwhy analyze --threshold {}us", t / 1_000)
    } else {
        format!("rtwhy analyze --threshold {t}ns")
    };
    let ids = |v: &[i32]| {
        v.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    if !a.pid.is_empty() {
        cmd.push_str(&format!(" --pid {}", ids(&a.pid)));
    }
    if !a.tid.is_empty() {
        cmd.push_str(&format!(" --tid {}", ids(&a.tid)));
    }
    for c in &a.comm {
        cmd.push_str(&format!(" --comm {}", shell_word(c)));
    }
    if a.all {
        cmd.push_str(" --all");
    }
    if let Some(iso) = &a.isolated {
        cmd.push_str(&format!(" --isolated {iso}"));
    }
    for m in &a.marker {
        cmd.push_str(&format!(" --marker {}", shell_word(m.as_str())));
    }
    format!("{cmd} {}", shell_word(file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::Nanos;

    #[test]
    fn reproduce_lines_quote_only_what_the_shell_would_split() {
        let args = AnalysisOpts {
            threshold: Nanos(150_000),
            pid: Vec::new(),
            tid: vec![7, 8],
            comm: vec!["lto cgu.09".to_string(), "cyclictest".to_string()],
            all: false,
            isolated: rtwhy_model::CpuList::parse("1-2"),
            marker: rtwhy_analyze::MarkerRule::new("took (?P<us>[0-9]+) us")
                .into_iter()
                .collect(),
        };
        assert_eq!(
            reproduce(&args, "my trace.dat"),
            "rtwhy analyze --threshold 150us --tid 7,8 --comm 'lto cgu.09' --comm cyclictest --isolated 1-2 --marker 'took (?P<us>[0-9]+) us' 'my trace.dat'"
        );
        let odd = AnalysisOpts {
            threshold: Nanos(1_500),
            ..args
        };
        assert!(reproduce(&odd, "it's.dat").starts_with("rtwhy analyze --threshold 1500ns"));
        assert!(reproduce(&odd, "it's.dat").ends_with(" 'it'\\''s.dat'"));
    }
}
