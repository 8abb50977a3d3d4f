//! trace-cmd `trace.dat` (versions 6 and 7): every buffer's records merged in time order.

use std::path::Path;

use super::{Finish, Format, Header, Item, Push};
use crate::error::{Error, Result};
use crate::tracedat::TraceFile;
use crate::typed::EventDecoder;

/// The trace.dat format.
pub(super) struct TraceDat;

impl Format for TraceDat {
    fn name(&self) -> &'static str {
        "trace.dat"
    }

    fn recognises(&self, head: &[u8]) -> bool {
        TraceFile::is_trace_dat(head)
    }

    fn read(&self, path: &Path, to: &mut dyn Push) -> Result<Finish> {
        let file =
            TraceFile::open_with(path, to.read_symbols_ahead()).map_err(|e| Error::Unreadable {
                path: path.to_path_buf(),
                format: self.name(),
                source: Box::new(e),
            })?;
        let meta = file.meta();
        let mut facts = file.system_facts();
        for (k, v) in file.fact_markers() {
            facts.set(&k, &v);
        }
        let header = Header {
            path,
            format: self.name(),
            facts,
            ts_in_nanos: meta.ts_in_nanos(),
            trace_dat: Some(&file),
            meta: Some(file.meta_arc()),
        };
        let mut records = file.records().map_err(|e| e.in_file(path))?;
        if to.begin(&header) {
            let mut decoder = EventDecoder::new();
            while records.advance().map_err(|e| e.in_file(path))? {
                let buffer = records.buffer_name();
                let Some(record) = records.current() else {
                    break;
                };
                if !to.event(Item::from_record(record, buffer, &mut decoder, meta)) {
                    break;
                }
            }
        }
        let mut warnings = file.warnings().to_vec();
        warnings.extend(records.warnings().iter().cloned());
        // A kallsyms section read only when a symbol was needed says now if it failed.
        warnings.extend(meta.kallsyms.text().error().map(str::to_string));
        Ok(Finish {
            format: self.name(),
            cpus: Some(file.info().cpus),
            warnings,
        })
    }
}
