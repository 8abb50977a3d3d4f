//! Writes fuzz seeds cut from real traces, one directory per fuzz target:
//! `cargo run -p rtwhy-decode --example fuzz_seeds -- OUT_DIR TRACE.dat...`
//!
//! - `format/`: each distinct format text of the events in a trace's first records,
//!   of ftrace's own events, and each `header_page`;
//! - `page/`: the first ring-buffer page of CPUs 0 and 1, rebuilt from its records by
//!   rtwhy's page writer (so compressed v7 files give pages too);
//! - `tracedat/`: each trace rewritten as a small whole v6 file: its first records and
//!   only the formats they use, so the fuzzer starts from files that reach printing.
//!
//! `scripts/fuzz-seed.sh` runs it over the corpus and the fixtures.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rtwhy_decode::page::PageWriter;
use rtwhy_decode::tracedat::{TraceBuilder, TraceFile};

/// A seed file larger than this is not written: the corpus is committed, so it stays
/// small (the fuzz targets read at most 64 KiB anyway).
const MAX_SEED: usize = 32 * 1024;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(out) = args.next().map(PathBuf::from) else {
        eprintln!("usage: fuzz_seeds OUT_DIR TRACE.dat...");
        return ExitCode::from(2);
    };
    let mut seen_formats = HashSet::new();
    for path in args.map(PathBuf::from) {
        if let Err(e) = seed(&out, &path, &mut seen_formats) {
            eprintln!("fuzz_seeds: {}: {e}", path.display());
        }
    }
    ExitCode::SUCCESS
}

fn write(out: &Path, target: &str, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.is_empty() || bytes.len() > MAX_SEED {
        return Ok(());
    }
    let dir = out.join(target);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(name), bytes)
}

fn seed(out: &Path, path: &Path, seen: &mut HashSet<String>) -> Result<(), String> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = TraceFile::open(path).map_err(|e| e.to_string())?;
    let meta = file.meta();
    let io = |e: std::io::Error| e.to_string();

    let mut records = file.records().map_err(|e| e.to_string())?;
    let mut pagers: Vec<Option<PageWriter>> = Vec::new();
    let mut pages = 0;
    let mut used = BTreeSet::new();
    let mut builder = TraceBuilder::like(meta, meta.page_size);
    let mut kept = 0;
    while let Ok(Some(r)) = records.next_record() {
        if kept < 300 && builder.push(r.cpu, r.ts, r.data).is_ok() {
            kept += 1;
            used.extend(r.event_id());
        }
        let cpu = r.cpu as usize;
        // Two CPUs' pages per trace are enough variety for the page target.
        if cpu >= 2 {
            continue;
        }
        if pagers.len() <= cpu {
            pagers.resize_with(cpu + 1, || {
                Some(PageWriter::new(meta.endian, meta.header_page, 4096))
            });
        }
        if let Some(pager) = &mut pagers[cpu] {
            if let Ok(Some(page)) = pager.push(r.ts, r.data) {
                write(out, "page", &format!("{stem}-cpu{cpu}"), &page).map_err(io)?;
                pagers[cpu] = None;
                pages += 1;
            }
        }
        if kept >= 300 && pages >= pagers.len() {
            break;
        }
    }
    for (cpu, pager) in pagers.iter_mut().enumerate() {
        if let Some(p) = pager.as_mut().filter(|p| !p.is_empty()) {
            write(out, "page", &format!("{stem}-cpu{cpu}"), &p.finish_page()).map_err(io)?;
        }
    }

    // Formats of the events seen (and header pages and ftrace's own formats): the
    // formats a real trace prints through, without the thousands it never uses.
    let src = &meta.sources;
    let formats = std::iter::once(("header", &src.header_page))
        .chain(src.ftrace_formats.iter().map(|f| ("ftrace", f)))
        .chain(
            src.event_formats
                .iter()
                .flat_map(|(sys, fs)| fs.iter().map(move |f| (sys.as_str(), f))),
        );
    for (i, (system, text)) in formats.enumerate() {
        let wanted = match system {
            "header" | "ftrace" => true,
            _ => rtwhy_decode::EventFormat::parse(system, text).is_ok_and(|f| used.contains(&f.id)),
        };
        if wanted && seen.insert(text.clone()) {
            write(
                out,
                "format",
                &format!("{stem}-{system}-{i}"),
                text.as_bytes(),
            )
            .map_err(io)?;
        }
    }

    let keep = |text: &String| {
        rtwhy_decode::EventFormat::parse("", text).is_ok_and(|f| used.contains(&f.id))
    };
    let s = builder.writer_mut().sources_mut();
    s.ftrace_formats.retain(keep);
    for (_, fs) in &mut s.event_formats {
        fs.retain(keep);
    }
    s.event_formats.retain(|(_, fs)| !fs.is_empty());
    s.kallsyms = Default::default();
    s.printk.clear();
    if s.cmdlines.len() > 2048 {
        let end = s.cmdlines.get(..2048).and_then(|t| t.rfind('\n'));
        s.cmdlines.truncate(end.map_or(0, |n| n + 1));
    }
    let mut whole = Vec::new();
    builder.finish(&mut whole).map_err(io)?;
    write(out, "tracedat", &format!("{stem}-small.dat"), &whole).map_err(io)?;
    Ok(())
}
