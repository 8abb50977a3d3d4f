//! Opening trace inputs of either kind with one clear error.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rtwhy_decode::tracedat::TraceFile;

/// What kind of trace a file holds.
pub enum Input {
    /// A trace-cmd trace.dat.
    TraceDat(Box<TraceFile>),
    /// `trace-cmd report` (or kernel `trace`) text.
    Text,
}

/// Opens `path`, telling trace.dat from report text by its first bytes.
pub fn open(path: &Path) -> Result<Input> {
    let mut head = [0u8; 4096];
    let n = {
        let mut f =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            let first_capture = std::fs::read_dir(path)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("spike-") && n.ends_with(".dat"))
                .min();
            match first_capture {
                Some(name) => bail!(
                    "{} is a recording session; give one of its captures ({}) or open them all with `rtwhy tui {}`",
                    path.display(),
                    path.join(name).display(),
                    path.display()
                ),
                None => bail!(
                    "{} is a directory; give a trace.dat or report text file",
                    path.display()
                ),
            }
        }
        read_head(&mut f, &mut head).with_context(|| format!("cannot read {}", path.display()))?
    };
    if n == 0 {
        bail!("{}: the file is empty", path.display());
    }
    let head = &head[..n];
    if TraceFile::is_trace_dat(head) {
        let file = TraceFile::open(path)
            .with_context(|| format!("{} is not a readable trace.dat", path.display()))?;
        return Ok(Input::TraceDat(Box::new(file)));
    }
    if rtwhy_decode::text::looks_like_report_text(head) {
        return Ok(Input::Text);
    }
    bail!(
        "{}: neither a trace.dat (no trace-cmd magic at offset 0) nor `trace-cmd report` text; record with `trace-cmd extract` or give the report output",
        path.display()
    )
}

fn read_head(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
