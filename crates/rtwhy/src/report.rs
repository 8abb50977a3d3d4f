//! `rtwhy report`: the analysis of a trace as a bug report (Markdown, SVG, Perfetto,
//! JSON, text) or as one `.tar.gz` bundle with the trace window that proves it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::Analysis;
use rtwhy_decode::input::{self, Header, Item, Raw, Sink};
use rtwhy_decode::mask;
use rtwhy_decode::tracedat::TraceBuilder;
use rtwhy_decode::TraceMeta;
use rtwhy_model::{EventKind, Nanos, Spike, FACT_PREFIX};
use rtwhy_report::markdown::{self, Links};
use rtwhy_report::redact::Redactor;
use rtwhy_report::{Report, SpikeReport, Window};

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
    if crate::record::is_recording(&args.file) {
        return session_report(args);
    }
    if args.baseline.is_some() {
        bail!(
            "{}: --baseline compares two recording sessions (`rtwhy report DIR --baseline DIR2`), not a trace file",
            args.file.display()
        );
    }
    let out = match (&args.out, args.bundle) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => Some(default_bundle_name(&args.file)),
        (None, false) => None,
    };
    if let Some(p) = &out {
        check_out(p)?;
    }
    // The trace's own names and symbols first: the analysis's evidence lines must get
    // the same tokens as the trace window's records.
    let mut redactor = if args.redact {
        Some(redactor_for(&args.file)?)
    } else {
        None
    };
    let (analysis, mut source) = analyze_file(&args.file, args.opts.config())?;
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
    let (analysis, selected) = match redactor.as_mut() {
        Some(r) => {
            // Tasks of the spikes shown keep their names; the rest of the report is
            // written from the redacted analysis.
            let mut shown = analysis.clone();
            let ids: Vec<u32> = selected.iter().map(|s| s.id).collect();
            shown.spikes.retain(|s| ids.contains(&s.id));
            r.keep_tasks_of(&shown);
            let redacted = r
                .analysis(&analysis)
                .context("cannot redact the analysis")?;
            source.path = file_name_of(&args.file);
            source.warnings = source.warnings.iter().map(|w| r.text(w)).collect();
            (redacted, ids)
        }
        None => {
            let ids = selected.iter().map(|s| s.id).collect();
            (analysis, ids)
        }
    };
    let selected: Vec<&Spike> = analysis
        .spikes
        .iter()
        .filter(|s| selected.contains(&s.id))
        .collect();
    // Only pictures and the bundle need the events around each spike; the rest is in
    // the analysis (its evidence lines are trace-cmd's already).
    let needs_windows = bundle || matches!(args.format, ReportFormat::Svg | ReportFormat::Perfetto);
    let (spikes, window_dat) = if needs_windows {
        collect(&args.file, &selected, bundle, redactor.as_mut())?
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
    let mut report = build(&analysis, &source, &args.opts, &trace_name, spikes);
    report.redacted = redactor.is_some();

    if bundle {
        return write_bundle(
            &report,
            &filtered,
            &source,
            out,
            window_dat,
            redactor.as_mut(),
        );
    }

    let bytes = match args.format {
        ReportFormat::Markdown if args.spike.is_none() => {
            render::markdown_of(&analysis, &source, &args.opts, redactor.is_some()).into_bytes()
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
    let bytes = match redactor.as_mut() {
        Some(r) => scrubbed(r, &bytes),
        None => bytes,
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

/// `rtwhy report --bundle`: the report in Markdown with a picture per spike, the analysis
/// in JSON, the Perfetto trace and the trace window, in one `.tar.gz` with its manifest.
fn write_bundle(
    report: &Report,
    filtered: &Analysis,
    source: &Source,
    out: Option<PathBuf>,
    window_dat: Option<WindowDat>,
    mut redactor: Option<&mut Redactor>,
) -> Result<ExitCode> {
    if report.spikes.is_empty() {
        bail!(
            "{}: no spike above {} to put in a bundle; lower --threshold or check --comm/--tid",
            source.path,
            rtwhy_model::human_duration(filtered.threshold.0)
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
    let mut members = vec![(
        "report.md".to_string(),
        markdown::render(report, &Links { svgs: true }).into_bytes(),
    )];
    for s in &report.spikes {
        members.push((markdown::svg_name(s.spike.id), s.svg().into_bytes()));
    }
    members.push(("analysis.json".to_string(), json_bytes(filtered, source)?));
    members.push((
        "perfetto.json".to_string(),
        serde_json::to_vec_pretty(&report.perfetto())?,
    ));
    if let Some(r) = redactor.as_mut() {
        for (_, bytes) in &mut members {
            *bytes = scrubbed(r, bytes);
        }
    }
    // The trace window last: its symbol table names every symbol any file placed.
    members.insert(
        0,
        (
            BUNDLE_TRACE.to_string(),
            dat.finish(redactor.as_deref_mut())?,
        ),
    );
    let sizes: Vec<(String, usize)> = members.iter().map(|(n, b)| (n.clone(), b.len())).collect();
    let counts = redactor.as_ref().map(|r| r.counts());
    members.push((
        rtwhy_report::bundle::MANIFEST.to_string(),
        rtwhy_report::bundle::manifest(&sizes, counts.as_ref()).into_bytes(),
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
    if redactor.is_none() {
        eprintln!(
            "rtwhy: note: not redacted: the bundle keeps kernel addresses and the symbol table, the whole kernel command line, the host name and every task's name; --redact replaces them (see {}/{})",
            root,
            rtwhy_report::bundle::MANIFEST
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A redactor for a report of `file`: keyed at random, looking for this machine's and
/// the trace's host name and this user's name, and knowing the trace's kernel symbols.
fn redactor_for(file: &Path) -> Result<Redactor> {
    let mut key = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .context("--redact: cannot read a key from /dev/urandom")?;
    let mut r = Redactor::new(key);
    if let Some(u) = rtwhy_sys::host::uname() {
        r.add_host(&u.nodename);
    }
    for var in ["USER", "SUDO_USER", "LOGNAME"] {
        if let Ok(name) = std::env::var(var) {
            r.add_user(&name);
        }
    }
    let mut head = HeadSink::default();
    input::read(file, &mut head)?;
    if head.kernel_long == Some(4) {
        bail!(
            "{}: --redact knows kernel addresses of 64-bit kernels only (this trace is from a 32-bit kernel); share it without --redact or not at all",
            crate::stdin::shown(file)
        );
    }
    if let Some(u) = &head.uname {
        r.add_uname(u);
    }
    r.set_symbols(head.symbols);
    Ok(r)
}

/// What a redaction needs from a trace before its events: its `uname`, kernel long size
/// and symbol addresses.
#[derive(Default)]
struct HeadSink {
    uname: Option<String>,
    kernel_long: Option<usize>,
    symbols: Vec<u64>,
}

impl Sink for HeadSink {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        if let Some(file) = header.trace_dat {
            self.uname = file.info().uname.clone();
            self.kernel_long = Some(file.meta().kernel_long_size);
            self.symbols = file.meta().kallsyms.iter().map(|(a, _, _)| a).collect();
        }
        Ok(false)
    }

    fn event(&mut self, _item: Item<'_>) -> Result<bool> {
        Ok(false)
    }
}

/// A text file of the report (Markdown, JSON, SVG) through the redactor once more, in
/// case a private value reached it by a way the analysis's redaction did not see.
fn scrubbed(r: &mut Redactor, bytes: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(bytes) {
        Ok(text) => r.text(text).into_bytes(),
        Err(_) => bytes.to_vec(),
    }
}

/// The name a redacted report gives the analysed file: its file name, without the
/// directories (a session's path names its owner and machine layout).
fn file_name_of(file: &Path) -> String {
    let shown = crate::stdin::shown(file);
    Path::new(&shown)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(shown)
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
/// trace window as a trace.dat (its records through `redactor` when there is one). The
/// decisive lines are the evidence's, which the analysis printed as `trace-cmd report`
/// does.
fn collect(
    path: &Path,
    spikes: &[&Spike],
    bundle: bool,
    redactor: Option<&mut Redactor>,
) -> Result<(Vec<SpikeReport>, Option<WindowDat>)> {
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
        meta: None,
        cpus: 0,
        max_cpu: 0,
        redactor,
        error: None,
    };
    input::read(path, &mut sink)?;
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    let dat = sink.builder.take().map(|builder| {
        let cpus = if sink.cpus > 0 {
            sink.cpus
        } else {
            sink.max_cpu + 1
        };
        WindowDat {
            builder,
            meta: sink.meta.take(),
            cpus,
        }
    });
    Ok((sink.reports, dat))
}

/// The bundle's trace window, cut but not yet written: a redacted window's symbol table
/// is written last, once every file of the report has placed its symbols.
struct WindowDat {
    builder: TraceBuilder,
    meta: Option<Arc<TraceMeta>>,
    cpus: u32,
}

impl WindowDat {
    /// The trace.dat's bytes; with `redactor`, its metadata redacted too.
    fn finish(mut self, redactor: Option<&mut Redactor>) -> Result<Vec<u8>> {
        self.builder.writer_mut().set_cpu_count(self.cpus as usize);
        if let (Some(r), Some(meta)) = (redactor, &self.meta) {
            let sources = mask::sources(&meta.sources, &meta.kallsyms, r);
            *self.builder.writer_mut().sources_mut() = sources;
        }
        let mut bytes = Vec::new();
        self.builder.finish(&mut bytes)?;
        Ok(bytes)
    }
}

/// Collects each spike's window of events, and the bundle's trace window.
struct WindowSink<'r> {
    reports: Vec<SpikeReport>,
    bundle: bool,
    cut: Option<(Nanos, Nanos)>,
    builder: Option<TraceBuilder>,
    meta: Option<Arc<TraceMeta>>,
    /// CPUs the trace.dat's buffers cover.
    cpus: u32,
    max_cpu: u32,
    redactor: Option<&'r mut Redactor>,
    /// A window event the redactor could not rewrite.
    error: Option<anyhow::Error>,
}

impl Sink for WindowSink<'_> {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        if let (true, Some(file)) = (self.bundle, header.trace_dat) {
            let meta = file.meta();
            let page = file
                .default_buffer()
                .map_or(meta.page_size, |b| b.page_size);
            let mut b = TraceBuilder::like(meta, page);
            if let Some(u) = &file.info().uname {
                let u = match self.redactor.as_mut() {
                    Some(r) => r.uname(u),
                    None => u.clone(),
                };
                b.writer_mut().set_uname(&u);
            }
            self.builder = Some(b);
            self.meta = Some(file.meta_arc());
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
        let in_window = self
            .reports
            .iter()
            .any(|r| ev.ts >= r.window.from && ev.ts <= r.window.to);
        if in_window {
            let shown = match self.redactor.as_mut() {
                Some(r) => match r.event(&ev) {
                    Ok(e) => e,
                    Err(e) => {
                        self.error =
                            Some(anyhow::anyhow!("cannot redact the event at {}: {e}", ev.ts));
                        return Ok(false);
                    }
                },
                None => ev.clone(),
            };
            for r in self.reports.iter_mut() {
                if ev.ts >= r.window.from && ev.ts <= r.window.to {
                    r.window.events.push(shown.clone());
                }
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
                let data = match (self.redactor.as_mut(), record.format) {
                    (None, _) => std::borrow::Cow::Borrowed(record.data),
                    (Some(r), Some(format)) => std::borrow::Cow::Owned(mask::record(
                        format,
                        record.endian,
                        record.data,
                        &mut **r,
                    )),
                    // An event without a format cannot be read, so cannot be redacted:
                    // a redacted window leaves it out (trace-cmd could not print it).
                    (Some(_), None) => return Ok(true),
                };
                b.push(record.cpu, record.ts, &data).map_err(|e| {
                    anyhow::anyhow!("cannot cut the trace window at {}: {e}", ev.ts)
                })?;
                self.max_cpu = self.max_cpu.max(record.cpu);
            }
        }
        Ok(true)
    }
}

/// `rtwhy report DIR` for a recording session: its overview (percentiles, tail by cause)
/// and its captures by cause, the worst of each linked, in Markdown; with `--out
/// FILE.md` the histograms' picture is written beside it as FILE.svg and shown. `--format
/// svg` is the picture alone.
fn session_report(args: &ReportArgs) -> Result<ExitCode> {
    let dir = &args.file;
    if args.bundle || args.redact || args.spike.is_some() {
        bail!(
            "{} is a recording session: --bundle, --redact and --spike work on one capture (give {}/spike-NNN.dat)",
            dir.display(),
            dir.display()
        );
    }
    let rec = crate::record::read_recording(dir)?;
    let (captures, overview) = (&rec.captures, &rec.overview);
    let baseline = match &args.baseline {
        Some(b) if crate::record::is_recording(b) => {
            let base = crate::record::read_recording(b)?;
            let o = rtwhy_report::recording::require_overview(b, base.overview)?;
            Some((b, o, rtwhy_report::recording::require_overview(dir, overview.clone())?))
        }
        Some(b) => bail!(
            "--baseline {}: not a recording session (`rtwhy record --out DIR`) nor a state directory holding some",
            b.display()
        ),
        None => None,
    };
    match args.format {
        ReportFormat::Markdown => {}
        ReportFormat::Svg if baseline.is_some() => bail!(
            "--baseline draws two pictures: give --out FILE.md (they are written beside it)"
        ),
        ReportFormat::Svg => {
            let o = rtwhy_report::recording::require_overview(dir, overview.clone())?;
            let svg = rtwhy_report::overview_svg::render(&o);
            return emit(args.out.as_deref(), svg.as_bytes());
        }
        other => bail!(
            "{} is a recording session: its report is Markdown (or --format svg for the histograms), not {other:?}",
            dir.display()
        ),
    }
    // Links to the captures: relative to where the Markdown is.
    let md_dir = args.out.as_deref().and_then(Path::parent).map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    let inside = md_dir.is_some_and(|m| same_dir(m, dir));
    let link = |file: &str| -> String {
        if inside {
            file.to_string()
        } else {
            dir.join(file).display().to_string()
        }
    };
    let mut picture = None;
    if let (Some(out), Some(o)) = (&args.out, &overview) {
        check_out(out)?;
        let svg_path = out.with_extension("svg");
        // Each bar's breaches of a cause lead to the capture behind them, linked as the
        // Markdown links (the picture is beside it).
        let bar_link = |t: &rtwhy_model::ThreadOverview, cause: &str, lo: u64, hi: u64| {
            rtwhy_report::overview::capture_for_bar(captures, &t.comm, cause, lo, hi).map(|c| {
                (
                    link(&c.file),
                    format!("{} ({})", c.file, rtwhy_model::human_duration(c.latency_ns)),
                )
            })
        };
        write_out(
            &svg_path,
            rtwhy_report::overview_svg::render_linked(o, &bar_link).as_bytes(),
        )?;
        picture = svg_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
    }
    // The captured breaches over time, beside the Markdown as FILE-time.svg: the dots
    // link to the captures as the Markdown does.
    let mut timeline = None;
    if let Some(out) = args
        .out
        .as_ref()
        .filter(|_| captures.iter().any(|c| c.end_ns > 0))
    {
        check_out(out)?;
        let stem = out
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".to_string());
        let svg_path = out.with_file_name(format!("{stem}-time.svg"));
        let (from, to, threshold) = match overview {
            Some(o) => (o.from_ns, o.to_ns, o.threshold_ns),
            None => (
                0,
                0,
                rec.sessions.last().map_or(0, |(_, doc, _)| {
                    doc["session"]["captures"][0]["trigger"]["record"]["threshold"]
                        .as_u64()
                        .unwrap_or(0)
                }),
            ),
        };
        let svg = rtwhy_report::breaches_svg::render(captures, from, to, threshold, &link);
        write_out(&svg_path, svg.as_bytes())?;
        timeline = svg_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
    }
    // The baseline's histograms beside the Markdown as FILE-baseline.svg, shown beside
    // this recording's.
    let mut baseline_picture = None;
    if let (Some(out), Some((_, base, _))) = (&args.out, &baseline) {
        let stem = out
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".to_string());
        let svg_path = out.with_file_name(format!("{stem}-baseline.svg"));
        write_out(
            &svg_path,
            rtwhy_report::overview_svg::render(base).as_bytes(),
        )?;
        baseline_picture = svg_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
    }
    let mut md = Vec::new();
    rtwhy_report::overview::render_markdown(
        &mut md,
        &dir.display().to_string(),
        overview.as_ref(),
        captures,
        picture.as_deref(),
        timeline.as_deref(),
        &link,
    )?;
    if let Some((name, base, this)) = &baseline {
        rtwhy_report::overview::render_baseline(
            &mut md,
            this,
            base,
            &name.display().to_string(),
            baseline_picture.as_deref().zip(picture.as_deref()),
        )?;
    }
    emit(args.out.as_deref(), &md)
}

/// Whether two paths name the same directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `bytes` to `out` (written whole under a temporary name, then renamed) or stdout.
fn emit(out: Option<&Path>, bytes: &[u8]) -> Result<ExitCode> {
    match out {
        Some(p) => write_out(p, bytes)?,
        None => std::io::stdout().lock().write_all(bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}
