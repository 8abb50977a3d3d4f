//! `rtwhy analyze`: every spike in a trace, diagnosed.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::{not_nonpreemptible, Analysis, Config};
use rtwhy_model::{Cause, Spike, SpikeSummary};

use crate::cli::{AnalysisOpts, AnalyzeArgs, AnalyzeFormat};
use rtwhy_report::{json, text, Source};

use crate::render;

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let (analysis, source, written) =
        analyze_streamed(&args.file, config, Some(Stream::new(args.format)))?;
    let Some((stream, late)) = written else {
        bail!(
            "{}: the analysis ended without its output",
            args.file.display()
        );
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let spikes = stream.write(&mut out, &analysis, &source, late, &args.opts)?;
    out.flush()?;
    for w in &source.warnings {
        eprintln!("rtwhy: warning: {}: {w}", source.path);
    }
    let timerlat_spikes = source.timerlat.as_ref().map_or(0, |t| t.spikes.len());
    Ok(if spikes == 0 && timerlat_spikes == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Where [`Stream`] keeps the spikes it wrote: an unlinked temporary file, or memory
/// where no temporary file can be made.
enum Spool {
    File(BufWriter<File>),
    Memory(Vec<u8>),
}

impl Spool {
    fn new() -> Spool {
        match tempfile::tempfile() {
            Ok(f) => Spool::File(BufWriter::with_capacity(1 << 16, f)),
            Err(_) => Spool::Memory(Vec::new()),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Spool::File(f) => f.write_all(bytes),
            Spool::Memory(v) => {
                v.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// What was written, from the start.
    fn into_reader(self) -> io::Result<Box<dyn Read>> {
        Ok(match self {
            Spool::File(f) => {
                let mut f = f.into_inner().map_err(|e| e.into_error())?;
                f.rewind()?;
                Box::new(BufReader::with_capacity(1 << 16, f))
            }
            Spool::Memory(v) => Box::new(io::Cursor::new(v)),
        })
    }
}

/// A [`Stream`] every spike was pushed to, and whether the end of the trace takes back
/// kernel_nonpreemptible verdicts ([`rtwhy_analyze::Analyzer::preempt_rt_learned_late`]).
type Written = (Stream, bool);

/// One spike [`Stream`] wrote.
struct Kept {
    summary: SpikeSummary,
    /// Its bytes in the spool.
    len: u64,
    /// A kernel_nonpreemptible verdict the end of the trace may take back
    /// ([`rtwhy_analyze::Analyzer::preempt_rt_learned_late`]): the spike is written a second time as
    /// [`not_nonpreemptible`] leaves it, right after; those bytes and that cause.
    revoked: Option<(u64, Cause)>,
}

/// `rtwhy analyze`'s output, written as spikes settle ([`rtwhy_analyze::Analyzer::take_settled`]), so
/// that the analysis holds the spikes of the history window only, whatever their number.
/// The output starts with what only the end of the trace tells (the event count, the
/// system facts, the event types present), so each spike is rendered in the output's
/// format into the spool as it settles, and only its [`SpikeSummary`] stays in memory;
/// at the end the output is written from its first line, the spool copied into place:
/// the same bytes as an analysis that held every spike. Markdown shows the first
/// [`render::MAX_SHOWN`] spikes ranked only: those are kept instead.
struct Stream {
    format: AnalyzeFormat,
    spool: Option<Spool>,
    kept: Vec<Kept>,
    /// Markdown: the first spikes ranked so far, at most [`render::MAX_SHOWN`].
    shown: Vec<Spike>,
    /// A spike rendered, reused.
    scratch: Vec<u8>,
    /// The first write that failed.
    error: Option<io::Error>,
}

impl Stream {
    fn new(format: AnalyzeFormat) -> Stream {
        Stream {
            format,
            spool: None,
            kept: Vec::new(),
            shown: Vec::new(),
            scratch: Vec::new(),
            error: None,
        }
    }

    /// Renders `spike` into the spool; its length in bytes.
    fn render(&mut self, spike: &Spike) -> u64 {
        self.scratch.clear();
        let rendered = match self.format {
            AnalyzeFormat::Text => text::spike(&mut self.scratch, spike),
            AnalyzeFormat::Json => {
                json::write_spike_element(&mut self.scratch, spike).map_err(io::Error::from)
            }
            AnalyzeFormat::Markdown => return 0,
        };
        let written = rendered.and_then(|()| {
            self.spool
                .get_or_insert_with(Spool::new)
                .write_all(&self.scratch)
        });
        if let Err(e) = written {
            self.error.get_or_insert(e);
        }
        self.scratch.len() as u64
    }

    /// Writes the whole output of `analysis` (whose spikes were all pushed) to `out`;
    /// the number of spikes. `late`: [`rtwhy_analyze::Analyzer::preempt_rt_learned_late`].
    fn write(
        mut self,
        out: &mut dyn Write,
        analysis: &Analysis,
        source: &Source,
        late: bool,
        opts: &AnalysisOpts,
    ) -> Result<usize> {
        if let Some(e) = self.error.take() {
            return Err(e).context("cannot write the spikes to a temporary file");
        }
        let summaries: Vec<SpikeSummary> = self
            .kept
            .iter()
            .map(|k| match k.revoked {
                Some((_, cause)) if late => SpikeSummary {
                    cause,
                    ..k.summary.clone()
                },
                _ => k.summary.clone(),
            })
            .collect();
        let spool = match self.spool.take() {
            Some(s) => Some(s.into_reader()?),
            None => None,
        };
        match self.format {
            AnalyzeFormat::Text => {
                text::header(out, analysis, source)?;
                copy_spikes(out, spool, &self.kept, late, b"")?;
                text::tail(out, analysis, &summaries, source)?;
            }
            AnalyzeFormat::Json => {
                let doc = json::without_spikes(analysis, source, &summaries);
                json::write_around_spikes(out, &doc, self.kept.len(), |out| {
                    copy_spikes(out, spool, &self.kept, late, b",\n")
                })?;
                writeln!(out)?;
            }
            AnalyzeFormat::Markdown => {
                if late {
                    self.shown.iter_mut().for_each(not_nonpreemptible);
                }
                let shown: Vec<&Spike> = render::first_shown(self.shown.iter().collect());
                let md = render::markdown_of_shown(
                    analysis,
                    source,
                    opts,
                    &shown,
                    self.kept.len(),
                    false,
                );
                out.write_all(md.as_bytes())?;
            }
        }
        Ok(self.kept.len())
    }
}

impl rtwhy_analyze::file::SpikeSink for Stream {
    /// Writes `spike` out (spikes come in order).
    fn push(&mut self, spike: Spike) {
        let summary = SpikeSummary::of(&spike);
        let revocable = spike.primary.cause == Cause::KernelNonpreemptible
            || spike
                .contributors
                .iter()
                .any(|c| c.cause == Cause::KernelNonpreemptible);
        let len = self.render(&spike);
        let revoked = revocable.then(|| {
            let mut revised = spike.clone();
            not_nonpreemptible(&mut revised);
            (self.render(&revised), revised.primary.cause)
        });
        if self.format == AnalyzeFormat::Markdown {
            self.shown.push(spike);
            if self.shown.len() > render::MAX_SHOWN {
                let shown: Vec<&Spike> = render::first_shown(self.shown.iter().collect());
                let keep: Vec<u32> = shown.iter().map(|s| s.id).collect();
                self.shown.retain(|s| keep.contains(&s.id));
            }
        }
        self.kept.push(Kept {
            summary,
            len,
            revoked,
        });
    }
}

/// Copies each spike of `kept` from `spool` to `out`, `separator` between two: as it was
/// diagnosed, or where `late` as [`not_nonpreemptible`] left it.
fn copy_spikes(
    out: &mut dyn Write,
    spool: Option<Box<dyn Read>>,
    kept: &[Kept],
    late: bool,
    separator: &[u8],
) -> io::Result<()> {
    let Some(mut spool) = spool else {
        return Ok(());
    };
    for (i, k) in kept.iter().enumerate() {
        if i > 0 {
            out.write_all(separator)?;
        }
        let revised = k.revoked.filter(|_| late);
        let first = io::copy(
            &mut (&mut spool).take(k.len),
            &mut OrSink(revised.is_none(), &mut *out),
        )?;
        let second = match k.revoked {
            Some((n, _)) => io::copy(
                &mut (&mut spool).take(n),
                &mut OrSink(revised.is_some(), &mut *out),
            )?,
            None => 0,
        };
        if first + second != k.len + k.revoked.map_or(0, |r| r.0) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the temporary file of spikes ended early",
            ));
        }
    }
    Ok(())
}

/// A writer that passes bytes on to its writer when `.0`, and drops them otherwise.
struct OrSink<'a>(bool, &'a mut dyn Write);

impl Write for OrSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0 {
            self.1.write(buf)
        } else {
            Ok(buf.len())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.1.flush()
    }
}

/// Decodes `path` (any input rtwhy-decode recognises) and runs the analysis pipeline
/// over it ([`rtwhy_analyze::file::analyze_file`]): its spikes, and its timerlat periods
/// in the [`Source`].
pub fn analyze_file(path: &std::path::Path, config: Config) -> Result<(Analysis, Source)> {
    let (analysis, source, _) = analyze_streamed(path, config, None)?;
    Ok((analysis, source))
}

/// [`analyze_file`], every spike pushed to `stream` as it settles: the analysis then
/// holds none of them, and the stream comes back with whether the end of the trace
/// takes back kernel_nonpreemptible verdicts ([`rtwhy_analyze::Analyzer::preempt_rt_learned_late`]).
fn analyze_streamed(
    path: &std::path::Path,
    config: Config,
    stream: Option<Stream>,
) -> Result<(Analysis, Source, Option<Written>)> {
    let display = crate::stdin::shown(path);
    let found = rtwhy_analyze::file::analyze_file(path, &display, config, stream)?;
    Ok((
        found.analysis,
        Source {
            path: display,
            kind: found.format,
            warnings: found.warnings,
            timerlat: found.timerlat,
        },
        found.sink,
    ))
}
