//! `rtwhy info`: reads a trace once, counting its events, and prints what it says about
//! itself (the document is rtwhy-report's [`rtwhy_report::info`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use rtwhy_decode::input::{self, Header, Item, Sink};
use rtwhy_report::info::{self, Counts};
use serde_json::{json, Value};

use crate::cli::{InfoArgs, InfoFormat};

pub fn run(args: &InfoArgs) -> Result<ExitCode> {
    let mut sink = InfoSink::default();
    let end = input::read(&args.file, &mut sink)?;
    let report = sink.report.take().map_or(Value::Null, |mut r| {
        r["events"] = sink.counts.to_json();
        match end.format {
            "trace.dat" => {}
            _ => r["cpus"] = json!(end.cpus),
        }
        r["warnings"] = json!(end.warnings);
        r
    });
    let out = match args.format {
        InfoFormat::Json => format!("{}\n", serde_json::to_string_pretty(&report)?),
        InfoFormat::Text => info::text(&report),
    };
    // Written at once: a reader that goes away (`| head`) is an io error, not a panic.
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Counts events by name and CPU; the file's own description comes from its header.
#[derive(Default)]
struct InfoSink {
    report: Option<Value>,
    counts: Counts,
    /// trace.dat event names by id (`system:name`).
    names: BTreeMap<u32, String>,
}

impl Sink for InfoSink {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        self.report = Some(match header.trace_dat {
            Some(file) => info::trace_dat(file, file.path().map(crate::stdin::shown)),
            None => info::text_input(header.format, &crate::stdin::shown(header.path)),
        });
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let (ts, cpu) = (item.ts, item.cpu);
        match item.record() {
            Some(rec) => {
                let id = rec.event_id().unwrap_or(u32::MAX);
                let name = self.names.entry(id).or_insert_with(|| match rec.format {
                    Some(f) => format!("{}:{}", f.system, f.name),
                    None => format!("unknown:{id}"),
                });
                self.counts.add(name, cpu, ts);
                if let Some(m) = rec.missed_before {
                    self.counts.missed += m;
                    self.counts.missed_pages += 1;
                }
            }
            None => {
                let ev = item.into_event();
                self.counts.add(ev.kind.name(), cpu, ts);
            }
        }
        Ok(true)
    }
}
