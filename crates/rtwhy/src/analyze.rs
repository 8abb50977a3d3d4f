//! `rtwhy analyze`: every spike in a trace, diagnosed.

use std::io::{BufReader, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::{Analysis, Analyzer, Config};
use rtwhy_decode::text::TextReader;
use rtwhy_decode::typed::EventDecoder;
use rtwhy_model::{parse_fact_marker, EventKind, SystemFacts};

/// Traces up to this size are read twice: first for their `rtwhy-fact:` markers, which
/// rtwhy's recorder writes at the end of each capture, so that every spike (not only
/// those after the markers) is judged with the recorded facts (isolation, preemption
/// model, IRQ affinities). Captures are a few MB; longer traces keep one pass.
const FACTS_PRESCAN_MAX: u64 = 128 << 20;

use crate::cli::{AnalyzeArgs, AnalyzeFormat};
use crate::input::{self, Input};
use crate::render;

/// Where the analysis came from, for the report header.
pub struct Source {
    pub path: String,
    pub kind: &'static str,
    pub warnings: Vec<String>,
}

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let (analysis, source) = analyze_file(&args.file, config)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        AnalyzeFormat::Text => render::text(&mut out, &analysis, &source)?,
        AnalyzeFormat::Markdown => render::markdown(&mut out, &analysis, &source)?,
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

/// Decodes `path` (trace.dat or report text) and runs the analyzer over it.
pub fn analyze_file(path: &std::path::Path, config: Config) -> Result<(Analysis, Source)> {
    let display = path.display().to_string();
    let mut warnings = Vec::new();
    let (analysis, kind) = match input::open(path)? {
        Input::TraceDat(file) => {
            let meta = file.meta();
            let mut facts = file.system_facts();
            let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= FACTS_PRESCAN_MAX);
            if small {
                let mut decoder = EventDecoder::new();
                let mut records = file.records()?;
                while let Some(rec) = records.next_record().with_context(|| display.clone())? {
                    if let EventKind::Print { text } = &decoder.decode(meta, &rec).kind {
                        if let Some((k, v)) = parse_fact_marker(text) {
                            facts.set(k, v);
                        }
                    }
                }
            }
            if !meta.ts_in_nanos() {
                warnings.push(format!(
                    "timestamps are raw counter values (clock {}), not nanoseconds: latencies and the threshold are in counter ticks",
                    meta.clock.as_deref().unwrap_or("?")
                ));
            }
            let mut analyzer = Analyzer::new(config, facts);
            let mut decoder = EventDecoder::new();
            let mut records = file.records()?;
            while let Some(rec) = records.next_record().with_context(|| display.clone())? {
                analyzer.push(decoder.decode(meta, &rec));
            }
            warnings.extend(file.warnings().iter().cloned());
            warnings.extend(records.warnings().iter().cloned());
            (analyzer.finish(), "trace.dat")
        }
        Input::Text => {
            let f = std::fs::File::open(path).with_context(|| format!("cannot open {display}"))?;
            let mut reader = TextReader::new(BufReader::new(f));
            let mut analyzer = Analyzer::new(config, SystemFacts::default());
            while let Some(ev) = reader.next_event() {
                analyzer.push(ev.with_context(|| display.clone())?);
            }
            if reader.skipped_lines() > 0 {
                warnings.push(format!(
                    "{} lines were not events and were skipped",
                    reader.skipped_lines()
                ));
            }
            (analyzer.finish(), "report text")
        }
    };
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
            kind,
            warnings,
        },
    ))
}
