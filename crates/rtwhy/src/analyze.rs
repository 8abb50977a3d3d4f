//! `rtwhy analyze`: every spike in a trace, diagnosed.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_analyze::{Analysis, Analyzer, Config};
use rtwhy_decode::input::{self, Header, Item, Sink};
use rtwhy_decode::recent::{event_name, RecentLines};
use rtwhy_model::{parse_fact_marker, EventKind, SystemFacts};

/// Files up to this size are read twice: first for their `rtwhy-fact:` markers, which
/// rtwhy's recorder writes at the end of each capture, so that every spike (not only
/// those after the markers) is judged with the recorded facts (isolation, preemption
/// model, IRQ affinities). Captures are a few MB; longer traces keep one pass.
const FACTS_PRESCAN_MAX: u64 = 128 << 20;

/// Collects a trace's `rtwhy-fact:` markers.
#[derive(Default)]
struct FactsSink {
    facts: Vec<(String, String)>,
}

impl Sink for FactsSink {
    type Error = anyhow::Error;

    fn begin(&mut self, _header: &Header<'_>) -> Result<bool> {
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        if let EventKind::Print { text } = item.into_event().kind {
            if let Some((k, v)) = parse_fact_marker(&text) {
                self.facts.push((k.to_string(), v.to_string()));
            }
        }
        Ok(true)
    }
}

use crate::cli::{AnalyzeArgs, AnalyzeFormat};
use crate::render::{self, Source};

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let (analysis, source) = analyze_file(&args.file, config)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        AnalyzeFormat::Text => render::text(&mut out, &analysis, &source)?,
        AnalyzeFormat::Markdown => {
            out.write_all(render::markdown_of(&analysis, &source, &args.opts).as_bytes())?
        }
        AnalyzeFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &render::json(&analysis, &source))?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    for w in &source.warnings {
        eprintln!("rtwhy: warning: {}: {w}", source.path);
    }
    Ok(if analysis.spikes.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Runs the analyzer over the events the decoder pushes, and prints each spike's
/// evidence as the trace's tool printed those events (`trace-cmd report`'s line).
struct AnalyzeSink {
    config: Config,
    analyzer: Option<Analyzer>,
    warnings: Vec<String>,
    recent: Option<RecentLines>,
    /// Spikes whose evidence lines are printed.
    printed: usize,
    /// Printed lines by (spike index, timestamp, CPU), matched to the evidence again at
    /// the end: a spike diagnosed again may name other events.
    lines: HashMap<(usize, u64, u32), Vec<String>>,
    /// Facts read ahead from the trace's markers.
    facts: Vec<(String, String)>,
}

impl AnalyzeSink {
    /// Prints the evidence of the spikes diagnosed since the last call, while their
    /// events are still kept.
    fn print_evidence(&mut self) {
        let (Some(a), Some(recent)) = (self.analyzer.as_mut(), self.recent.as_mut()) else {
            return;
        };
        let again = a.take_rediagnosed();
        let new = self.printed..a.spikes().len();
        for i in again.into_iter().chain(new) {
            let Some(spike) = a.spikes().get(i) else {
                continue;
            };
            for e in &spike.evidence {
                let key = (i, e.ts.0, e.cpu);
                let Some(name) = event_name(&e.line) else {
                    continue;
                };
                let known = self
                    .lines
                    .get(&key)
                    .is_some_and(|v| v.iter().any(|l| event_name(l) == Some(name)));
                if known {
                    continue;
                }
                if let Some(line) = recent.line(e.ts.0, e.cpu, name) {
                    self.lines.entry(key).or_default().push(line);
                }
            }
        }
        self.printed = a.spikes().len();
    }
}

impl Sink for AnalyzeSink {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        if !header.ts_in_nanos {
            let clock = header
                .meta
                .as_ref()
                .and_then(|m| m.clock.clone())
                .unwrap_or_else(|| "?".to_string());
            self.warnings.push(format!(
                "timestamps are raw counter values (clock {clock}), not nanoseconds: latencies and the threshold are in counter ticks"
            ));
        }
        let mut facts = header.facts.clone();
        for (k, v) in &self.facts {
            facts.set(k, v);
        }
        self.analyzer = Some(Analyzer::new(self.config.clone(), facts));
        self.recent = Some(RecentLines::new(
            header,
            self.config.horizon.0,
            self.config.max_events_per_cpu,
        ));
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        if let Some(r) = self.recent.as_mut() {
            r.keep(&item);
        }
        let Some(a) = self.analyzer.as_mut() else {
            return Ok(true);
        };
        a.push(item.into_event());
        if a.spikes().len() > self.printed || a.has_rediagnosed() {
            self.print_evidence();
        }
        Ok(true)
    }
}

/// Decodes `path` (any input rtwhy-decode recognises) and runs the analyzer over it.
pub fn analyze_file(path: &std::path::Path, config: Config) -> Result<(Analysis, Source)> {
    let display = path.display().to_string();
    let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= FACTS_PRESCAN_MAX);
    let mut ahead = FactsSink::default();
    if small {
        input::read(path, &mut ahead)?;
    }
    let mut sink = AnalyzeSink {
        facts: ahead.facts,
        config: config.clone(),
        analyzer: None,
        warnings: Vec::new(),
        recent: None,
        printed: 0,
        lines: HashMap::new(),
    };
    let end = input::read(path, &mut sink)?;
    let mut warnings = sink.warnings;
    warnings.extend(end.warnings);
    let mut analysis = sink
        .analyzer
        .unwrap_or_else(|| Analyzer::new(config, SystemFacts::default()))
        .finish();
    for (i, spike) in analysis.spikes.iter_mut().enumerate() {
        for e in &mut spike.evidence {
            let printed = sink.lines.get(&(i, e.ts.0, e.cpu)).and_then(|v| {
                let name = event_name(&e.line)?;
                v.iter().find(|l| event_name(l) == Some(name))
            });
            if let Some(line) = printed {
                e.line = line.clone();
            }
        }
    }
    if !analysis.seen.switch && !analysis.seen.waking && !analysis.seen.wakeup {
        bail!(
            "{display}: no scheduler events (sched:sched_switch, sched_waking, sched_wakeup) in {} events; record with `rtwhy record` or `trace-cmd record -e sched -e irq -e timer`",
            analysis.events
        );
    }
    Ok((
        analysis,
        Source {
            path: display,
            kind: end.format,
            warnings,
        },
    ))
}
