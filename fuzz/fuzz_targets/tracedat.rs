//! Whole trace.dat files: open, stream every record, type and print it.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use rtwhy_decode::tracedat::TraceFile;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = TraceFile::from_source(Arc::new(data.to_vec())) else { return };
    let Ok(mut records) = file.records() else { return };
    let mut decoder = rtwhy_decode::EventDecoder::new();
    let mut printer = rtwhy_decode::print::Printer::new(file.meta_arc());
    let mut line = String::new();
    while let Ok(Some(r)) = records.next_record() {
        let _ = decoder.decode(file.meta(), &r);
        line.clear();
        printer.write_raw(&r, &mut line);
        line.clear();
        printer.write_report(&r, &mut line);
    }
});
