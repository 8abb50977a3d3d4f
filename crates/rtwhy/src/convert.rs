//! `rtwhy convert`: a trace.dat as a Perfetto protobuf trace. A sink of
//! `input::read` feeds each event to the writer and the analysis pipeline at once, so
//! neither the trace nor the output is ever held whole; the spikes and timerlat periods
//! it finds are written as annotations.

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::{Config, Pipeline};
use rtwhy_decode::input::{self, Finish, Header, Item, Sink};
use rtwhy_report::perfetto_trace::{PerfettoStats, PerfettoWriter};

use crate::cli::ConvertArgs;
use crate::report::check_out;

/// Output buffer: large writes, few system calls.
const OUT_BUFFER: usize = 1 << 20;

/// What the decoder's warnings about a trace.dat start with when events are missing:
/// a buffer or a CPU's data could not be read (in part). The others (a skipped option
/// section, an unparsable format) lose no event.
fn loses_events(warning: &str) -> bool {
    warning.starts_with("CPU ") || warning.starts_with("buffer ")
}

struct ConvertSink {
    config: Option<Config>,
    no_spikes: bool,
    keep_going: bool,
    tmp: PathBuf,
    /// Set once the temporary file exists.
    writer: Option<PerfettoWriter<BufWriter<fs::File>>>,
    pipeline: Option<Pipeline>,
    warnings: Vec<String>,
    /// What was written and how many spikes the analysis did not keep.
    written: Option<(PerfettoStats, u64)>,
}

impl Sink for ConvertSink {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        let Some(file) = header.trace_dat else {
            bail!(
                "{} is report text; `rtwhy convert` reads trace.dat files (record with `trace-cmd record` or `rtwhy record`)",
                crate::stdin::shown(header.path)
            );
        };
        if !self.keep_going {
            if let Some(w) = file.warnings().iter().find(|w| loses_events(w)) {
                bail!(
                    "{}: {w} (--keep-going converts what can be read)",
                    crate::stdin::shown(header.path)
                );
            }
        }
        if !header.ts_in_nanos {
            let clock = header.meta.as_ref().and_then(|m| m.clock.clone());
            self.warnings.push(format!(
                "timestamps are raw counter values (clock {}), not nanoseconds: Perfetto will show them as nanoseconds",
                clock.as_deref().unwrap_or("?")
            ));
        }
        let created = fs::File::create(&self.tmp)
            .with_context(|| format!("cannot create {}", self.tmp.display()))?;
        self.writer = Some(PerfettoWriter::new(BufWriter::with_capacity(
            OUT_BUFFER, created,
        )));
        if !self.no_spikes {
            let config = self.config.take().unwrap_or_default();
            self.pipeline = Some(Pipeline::for_input(config, header));
        }
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let dropped = item.dropped_before();
        let lost = item.record().is_some_and(|r| r.missed_before.is_some());
        let ev = item.into_event();
        if let Some(w) = self.writer.as_mut() {
            w.push(&ev, lost)
                .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        }
        if let Some(p) = self.pipeline.as_mut() {
            p.push(ev, None, dropped);
        }
        Ok(true)
    }

    fn finish(&mut self, end: &Finish) -> Result<()> {
        if !self.keep_going {
            if let Some(w) = end.warnings.iter().find(|w| loses_events(w)) {
                bail!("{w} (--keep-going converts what can be read)");
            }
        }
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        let finished = self.pipeline.take().map(Pipeline::finish);
        if let Some(f) = &finished {
            self.warnings.extend(f.warnings.iter().cloned());
        }
        let spikes = finished
            .as_ref()
            .map_or(&[][..], |f| &f.analysis.spikes[..]);
        let periods = finished
            .as_ref()
            .and_then(|f| f.timerlat.as_ref())
            .map_or(&[][..], |t| &t.spikes[..]);
        let (buffered, stats) = writer
            .finish(spikes, periods)
            .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        let file = buffered
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        file.sync_all()
            .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        self.written = Some((stats, finished.map_or(0, |f| f.analysis.spikes_dropped)));
        Ok(())
    }
}

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    let out = match &args.out {
        Some(o) => o.clone(),
        None if crate::stdin::is_spooled(&args.file) => bail!(
            "{}: give the Perfetto trace's name with --out FILE",
            crate::stdin::shown(&args.file)
        ),
        None => args.file.with_extension("perfetto-trace"),
    };
    check_out(&out)?;
    if same_file(&args.file, &out) {
        bail!(
            "--out {} is the input trace; give another name",
            out.display()
        );
    }
    let mut sink = ConvertSink {
        config: Some(args.opts.config()),
        no_spikes: args.no_spikes,
        keep_going: args.keep_going,
        tmp: temp_name(&out),
        writer: None,
        pipeline: None,
        warnings: Vec::new(),
        written: None,
    };
    let read = input::read(&args.file, &mut sink);
    let (end, (stats, spikes_dropped)) = match (read, sink.written.take()) {
        (Ok(end), Some(written)) => (end, written),
        (read, _) => {
            // Whatever failed, the temporary file goes and `out` is untouched.
            drop(sink.writer.take());
            let started = fs::remove_file(&sink.tmp).is_ok();
            let e = match read {
                Err(e) => e,
                Ok(_) => {
                    anyhow::anyhow!("{}: no events were read", crate::stdin::shown(&args.file))
                }
            };
            return Err(if started {
                e.context(format!("{} was not written", out.display()))
            } else {
                e
            });
        }
    };
    if let Err(e) = fs::rename(&sink.tmp, &out) {
        let _ = fs::remove_file(&sink.tmp);
        return Err(e)
            .with_context(|| format!("cannot rename {} to {}", sink.tmp.display(), out.display()));
    }
    let display = crate::stdin::shown(&args.file);
    for w in sink.warnings.iter().chain(&end.warnings) {
        eprintln!("rtwhy: warning: {display}: {w}");
    }
    let skipped = if stats.skipped > 0 {
        format!(
            ", {} without a format (or on an impossible CPU) left out",
            stats.skipped
        )
    } else {
        String::new()
    };
    let lost = if stats.lost_bundles > 0 {
        format!(" ({} after dropped events)", stats.lost_bundles)
    } else {
        String::new()
    };
    let periods = if stats.timerlat_periods > 0 {
        format!(", {} timerlat periods annotated", stats.timerlat_periods)
    } else {
        String::new()
    };
    let spikes = if args.no_spikes {
        "no analysis".to_string()
    } else if spikes_dropped > 0 {
        format!(
            "{} spikes annotated ({spikes_dropped} more not kept){periods}",
            stats.spikes
        )
    } else {
        format!("{} spikes annotated{periods}", stats.spikes)
    };
    eprintln!(
        "rtwhy: wrote {}: {} events ({} typed, {} generic){skipped}, {} bundles{lost}, {spikes}",
        out.display(),
        stats.typed + stats.generic,
        stats.typed,
        stats.generic,
        stats.bundles,
    );
    Ok(ExitCode::SUCCESS)
}

/// `.NAME.tmpPID` beside `out`: the same file system, so the rename is atomic.
fn temp_name(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!(".{name}.tmp{}", std::process::id()))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
