//! `rtwhy convert`: a trace.dat as a Perfetto protobuf trace, streamed record by record
//! into the writer and the analyzer at once, so neither the trace nor the output is
//! ever held whole.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::Analyzer;
use rtwhy_decode::tracedat::TraceFile;
use rtwhy_decode::typed::EventDecoder;
use rtwhy_report::perfetto_trace::{PerfettoStats, PerfettoWriter};

use crate::cli::ConvertArgs;
use crate::report::check_out;

/// Output buffer: large writes, few system calls.
const OUT_BUFFER: usize = 1 << 20;

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.file.with_extension("perfetto-trace"));
    check_out(&out)?;
    if same_file(&args.file, &out) {
        bail!(
            "--out {} is the input trace; give another name",
            out.display()
        );
    }
    let format = rtwhy_decode::input::recognise(&args.file)?;
    if format.name() != "trace.dat" {
        bail!(
            "{} is {}; `rtwhy convert` reads trace.dat files (record with `trace-cmd record` or `rtwhy record`)",
            args.file.display(),
            format.name()
        );
    }
    let file = TraceFile::open(&args.file)
        .with_context(|| format!("{} is not a readable trace.dat", args.file.display()))?;
    let display = args.file.display().to_string();
    let meta = file.meta();
    let mut warnings = Vec::new();
    if !meta.ts_in_nanos() {
        warnings.push(format!(
            "timestamps are raw counter values (clock {}), not nanoseconds: Perfetto will show them as nanoseconds",
            meta.clock.as_deref().unwrap_or("?")
        ));
    }

    if !args.keep_going {
        // The decoder reads past damage with a warning; of its warnings at open, those
        // about a buffer or a CPU's data (`buffer ...`, `CPU N data ...`) mean events
        // are missing. A conversion that looks whole must be whole.
        if let Some(w) = file
            .warnings()
            .iter()
            .find(|w| w.starts_with("CPU ") || w.starts_with("buffer "))
        {
            bail!("{display}: {w} (--keep-going converts what can be read)");
        }
    }
    let tmp = temp_name(&out);
    let created = fs::File::create(&tmp)
        .with_context(|| format!("--out {}: cannot create {}", out.display(), tmp.display()))?;
    // Whatever fails from here on, the temporary file goes and `out` is untouched.
    let converted = (|| -> Result<(PerfettoStats, u64)> {
        let mut writer = PerfettoWriter::new(BufWriter::with_capacity(OUT_BUFFER, &created));
        let mut analyzer =
            (!args.no_spikes).then(|| Analyzer::new(args.opts.config(), file.system_facts()));
        let mut decoder = EventDecoder::new();
        let mut records = file.records()?;
        while let Some(rec) = records.next_record().with_context(|| display.clone())? {
            let lost = rec.missed_before.is_some();
            let ev = decoder.decode(meta, &rec);
            writer
                .push(&ev, lost)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            if let Some(a) = analyzer.as_mut() {
                a.push(ev);
            }
            if let (false, Some(w)) = (args.keep_going, records.warnings().first()) {
                bail!("{display}: {w} (--keep-going converts what can be read)");
            }
        }
        warnings.extend(file.warnings().iter().cloned());
        warnings.extend(records.warnings().iter().cloned());
        let analysis = analyzer.map(Analyzer::finish);
        let spikes = analysis.as_ref().map_or(&[][..], |a| &a.spikes[..]);
        let (mut buffered, stats) = writer
            .finish(spikes)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        buffered.flush()?;
        drop(buffered);
        created.sync_all()?;
        Ok((stats, analysis.map_or(0, |a| a.spikes_dropped)))
    })();
    let (stats, spikes_dropped) = match converted {
        Ok(v) => v,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(e.context(format!("{} was not written", out.display())));
        }
    };
    if let Err(e) = fs::rename(&tmp, &out) {
        let _ = fs::remove_file(&tmp);
        return Err(e)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), out.display()));
    }
    for w in &warnings {
        eprintln!("rtwhy: warning: {display}: {w}");
    }
    let mut skipped = String::new();
    if stats.skipped > 0 {
        skipped = format!(
            ", {} without a format (or on an impossible CPU) left out",
            stats.skipped
        );
    }
    let mut spikes = format!("{} spikes annotated", stats.spikes);
    if spikes_dropped > 0 {
        spikes.push_str(&format!(" ({spikes_dropped} more not kept)"));
    }
    if args.no_spikes {
        spikes = "no analysis".to_string();
    }
    eprintln!(
        "rtwhy: wrote {}: {} events ({} typed, {} generic){skipped}, {} bundles{}, {spikes}",
        out.display(),
        stats.typed + stats.generic,
        stats.typed,
        stats.generic,
        stats.bundles,
        if stats.lost_bundles > 0 {
            format!(" ({} after dropped events)", stats.lost_bundles)
        } else {
            String::new()
        },
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
