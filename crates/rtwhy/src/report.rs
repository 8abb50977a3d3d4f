//! `rtwhy report`: the analysis of a trace as a bug report (Markdown, SVG, Perfetto,
//! JSON, text) or as one `.tar.gz` bundle with the trace window that proves it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::Analysis;
use rtwhy_decode::input::{self, Header, Item, Raw, Sink};
use rtwhy_decode::tracedat::TraceBuilder;
use rtwhy_model::{EventKind, Nanos, Spike, FACT_PREFIX};
use rtwhy_report::markdown::{self, Links};
use rtwhy_report::{SpikeReport, Window};

use crate::analyze::analyze_file;
use crate::cli::{ReportArgs, ReportFormat};
use rtwhy_report::{json, text, Source};

use crate::render::{self, build, first_shown, without_window};

/// History kept before the first spike in a bundle's trace window: enough for the
/// analyzer to see the victim's previous sleep and timer, as a capture has.
const BUNDLE_BEFORE: u64 = 500_000_000;
/// Events kept after the last spike in a bundle's trace window.
const BUNDLE_AFTER: u64 = 10_000_000;
/// The trace window's name inside a bundle.
const BUNDLE_TRACE: &str = "trace-window.dat";

pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let out = match (&args.out, args.bundle) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => Some(default_bundle_name(&args.file)),
        (None, false) => None,
    };
    if let Some(p) = &out {
        check_out(p)?;
    }
    let (analysis, source) = analyze_file(&args.file, args.opts.config())?;
    let mut selected = select(&analysis, args)?;
    let bundle = args.bundle;
    let everything = matches!(args.format, ReportFormat::Json | ReportFormat::Text) && !bundle;
    if !everything {
        // A bug report with hundreds of spikes is read by nobody: the first ones ranked,
        // in that order.
        selected = first_shown(selected);
    }
    if args.format == ReportFormat::Svg && !bundle {
        // One picture: the chosen spike, else the first ranked.
        let summaries: Vec<rtwhy_model::SpikeSummary> = selected
            .iter()
            .map(|s| rtwhy_model::SpikeSummary::of(s))
            .collect();
        let first = rtwhy_model::first(&summaries).map(|f| f.id);
        selected.retain(|s| Some(s.id) == first);
        if selected.is_empty() {
            bail!(
                "{}: no spike above {} to draw; lower --threshold or pick one with --spike",
                source.path,
                rtwhy_model::human_duration(analysis.threshold.0)
            );
        }
    }
    // Only pictures and the bundle need the events around each spike; the rest is in
    // the analysis (its evidence lines are trace-cmd's already).
    let needs_windows = bundle || matches!(args.format, ReportFormat::Svg | ReportFormat::Perfetto);
    let (spikes, window_dat) = if needs_windows {
        collect(&args.file, &selected, bundle)?
    } else {
        (selected.iter().map(|s| without_window(s)).collect(), None)
    };
    let shown: Vec<u32> = selected.iter().map(|s| s.id).collect();
    let mut filtered = analysis.clone();
    filtered.spikes.retain(|s| shown.contains(&s.id));
    let trace_name = if bundle {
        BUNDLE_TRACE.to_string()
    } else {
        source.path.clone()
    };
    let report = build(&analysis, &source, &args.opts, &trace_name, spikes);

    if bundle {
        if report.spikes.is_empty() {
            bail!(
                "{}: no spike above {} to put in a bundle; lower --threshold or check --comm/--tid",
                source.path,
                rtwhy_model::human_duration(analysis.threshold.0)
            );
        }
        let Some(path) = out else {
            bail!("--bundle needs an output file");
        };
        let Some(dat) = window_dat else {
            bail!(
                "{}: --bundle needs a trace.dat (report text cannot be cut into a trace window); use --format markdown",
                source.path
            );
        };
        let mut members = vec![
            (BUNDLE_TRACE.to_string(), dat),
            (
                "report.md".to_string(),
                markdown::render(&report, &Links { svgs: true }).into_bytes(),
            ),
        ];
        for s in &report.spikes {
            members.push((markdown::svg_name(s.spike.id), s.svg().into_bytes()));
        }
        members.push(("analysis.json".to_string(), json_bytes(&filtered, &source)?));
        members.push((
            "perfetto.json".to_string(),
            serde_json::to_vec_pretty(&report.perfetto())?,
        ));
        let root = path
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".tar.gz").to_string())
            .unwrap_or_else(|| "rtwhy-report".to_string());
        let mtime = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut archive = Vec::new();
        rtwhy_report::bundle::write(&mut archive, &path, &root, &members, mtime)?;
        write_out(&path, &archive)?;
        eprintln!(
            "rtwhy: wrote {} ({} spike{}: {})",
            path.display(),
            report.spikes.len(),
            if report.spikes.len() == 1 { "" } else { "s" },
            members
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }

    let bytes = match args.format {
        ReportFormat::Markdown if args.spike.is_none() => {
            render::markdown_of(&analysis, &source, &args.opts).into_bytes()
        }
        ReportFormat::Markdown => markdown::render(&report, &Links::default()).into_bytes(),
        ReportFormat::Json => json_bytes(&filtered, &source)?,
        ReportFormat::Text => {
            let mut v = Vec::new();
            text::render(&mut v, &filtered, &source)?;
            v
        }
        ReportFormat::Svg => report
            .spikes
            .first()
            .map(|s| s.svg().into_bytes())
            .unwrap_or_default(),
        ReportFormat::Perfetto => {
            let mut v = serde_json::to_vec_pretty(&report.perfetto())?;
            v.push(b'\n');
            v
        }
    };
    match &out {
        Some(p) => write_out(p, &bytes)?,
        None => {
            let mut so = std::io::stdout().lock();
            so.write_all(&bytes)?;
            so.flush()?;
        }
    }
    for w in &source.warnings {
        eprintln!("rtwhy: warning: {}: {w}", source.path);
    }
    Ok(ExitCode::SUCCESS)
}

fn json_bytes(a: &Analysis, src: &Source) -> Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(&json::to_value(&json::document(a, src))?)?;
    v.push(b'\n');
    Ok(v)
}

/// `NAME.rtwhy-report.tar.gz` in the current directory for trace `NAME.dat`.
fn default_bundle_name(file: &Path) -> PathBuf {
    if crate::stdin::is_spooled(file) {
        return PathBuf::from("stdin.rtwhy-report.tar.gz");
    }
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".to_string());
    PathBuf::from(format!("{stem}.rtwhy-report.tar.gz"))
}

/// Fails early, before the analysis, when `--out` cannot be written.
pub(crate) fn check_out(p: &Path) -> Result<()> {
    if p.is_dir() {
        bail!("--out {} is a directory; give a file name", p.display());
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        bail!(
            "--out {}: directory {} does not exist; create it or write elsewhere",
            p.display(),
            parent.display()
        );
    }
    Ok(())
}

fn write_out(p: &Path, bytes: &[u8]) -> Result<()> {
    rtwhy_record::capture::write_atomic(p, |w| w.write_all(bytes))
        .with_context(|| format!("--out {}: choose a writable file", p.display()))?;
    Ok(())
}

/// The spikes to report: `--spike N` or all.
fn select<'a>(a: &'a Analysis, args: &ReportArgs) -> Result<Vec<&'a Spike>> {
    match args.spike {
        None => Ok(a.spikes.iter().collect()),
        Some(n) => match a.spikes.iter().find(|s| s.id == n) {
            Some(s) => Ok(vec![s]),
            None => bail!(
                "{}: there is no spike {n} (the analysis found {} above {}); see `rtwhy analyze`",
                args.file.display(),
                a.spikes.len(),
                rtwhy_model::human_duration(a.threshold.0)
            ),
        },
    }
}

/// Reads the trace again for each spike's window of events, and with `bundle`, cuts the
/// trace window as a trace.dat. The decisive lines are the evidence's, which the
/// analysis printed as `trace-cmd report` does.
fn collect(
    path: &Path,
    spikes: &[&Spike],
    bundle: bool,
) -> Result<(Vec<SpikeReport>, Option<Vec<u8>>)> {
    let reports: Vec<SpikeReport> = spikes
        .iter()
        .map(|s| {
            let (from, to) = Window::around(s);
            SpikeReport {
                spike: (*s).clone(),
                window: Window {
                    from,
                    to,
                    events: Vec::new(),
                },
                trace_lines: s.evidence.iter().map(|e| e.line.clone()).collect(),
            }
        })
        .collect();
    // One contiguous stretch: a gap between two cut-out pieces would read as time with
    // no events (hwlat) to the analyzer.
    let first = reports.iter().map(|r| r.spike.start).min();
    let last = reports.iter().map(|r| r.spike.end).max();
    let cut = first.zip(last).map(|(a, b)| {
        (
            Nanos(a.0.saturating_sub(BUNDLE_BEFORE)),
            Nanos(b.0.saturating_add(BUNDLE_AFTER)),
        )
    });
    let mut sink = WindowSink {
        reports,
        bundle,
        cut,
        builder: None,
        cpus: 0,
        max_cpu: 0,
    };
    input::read(path, &mut sink)?;
    let dat = match sink.builder.take() {
        Some(mut b) => {
            let cpus = if sink.cpus > 0 {
                sink.cpus
            } else {
                sink.max_cpu + 1
            };
            b.writer_mut().set_cpu_count(cpus as usize);
            let mut bytes = Vec::new();
            b.finish(&mut bytes)?;
            Some(bytes)
        }
        None => None,
    };
    Ok((sink.reports, dat))
}

/// Collects each spike's window of events, and the bundle's trace window.
struct WindowSink {
    reports: Vec<SpikeReport>,
    bundle: bool,
    cut: Option<(Nanos, Nanos)>,
    builder: Option<TraceBuilder>,
    /// CPUs the trace.dat's buffers cover.
    cpus: u32,
    max_cpu: u32,
}

impl Sink for WindowSink {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        if let (true, Some(file)) = (self.bundle, header.trace_dat) {
            let meta = file.meta();
            let page = file
                .default_buffer()
                .map_or(meta.page_size, |b| b.page_size);
            let mut b = TraceBuilder::like(meta, page);
            if let Some(u) = &file.info().uname {
                b.writer_mut().set_uname(u);
            }
            self.builder = Some(b);
            self.cpus = file
                .buffers()
                .iter()
                .flat_map(|b| &b.cpus)
                .map(|c| c.cpu + 1)
                .max()
                .unwrap_or(0);
        }
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let raw = item.raw;
        let ev = item.into_event();
        for r in self.reports.iter_mut() {
            if ev.ts >= r.window.from && ev.ts <= r.window.to {
                r.window.events.push(ev.clone());
            }
        }
        if let (Some(b), Some((from, to)), Raw::Record { record, .. }) =
            (self.builder.as_mut(), self.cut, &raw)
        {
            let keep = (ev.ts >= from && ev.ts <= to)
                || matches!(&ev.kind, EventKind::Print { text } if text.starts_with(FACT_PREFIX));
            // Instances go into the one buffer of the window: the analyzer reads every
            // buffer alike, and a capture's events live in rtwhy's instance.
            if keep {
                b.push(record.cpu, record.ts, record.data).map_err(|e| {
                    anyhow::anyhow!("cannot cut the trace window at {}: {e}", ev.ts)
                })?;
                self.max_cpu = self.max_cpu.max(record.cpu);
            }
        }
        Ok(true)
    }
}
