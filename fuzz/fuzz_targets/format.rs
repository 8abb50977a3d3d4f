//! Event `format` and `header_page` texts, and printing a record through the parsed format.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtwhy_decode::{EventFormat, HeaderPage};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = HeaderPage::parse(&text);
    let Ok(format) = EventFormat::parse("fuzz", &text) else { return };
    let mut meta = rtwhy_decode::TraceMeta::new(rtwhy_decode::Endian::Little, 8, 4096);
    let id = format.id;
    meta.formats.insert(id, format);
    let meta = std::sync::Arc::new(meta);
    let mut payload = vec![0u8; 256];
    payload[..2].copy_from_slice(&(id as u16).to_le_bytes());
    for (i, b) in data.iter().take(254).enumerate() {
        payload[i + 2] = *b;
    }
    let rec = rtwhy_decode::Record {
        ts: 1,
        cpu: 0,
        data: &payload,
        format: meta.format(id),
        endian: rtwhy_decode::Endian::Little,
        missed_before: None,
        following: &[],
    };
    let mut printer = rtwhy_decode::print::Printer::new(std::sync::Arc::clone(&meta));
    let mut line = String::new();
    printer.write_raw(&rec, &mut line);
    line.clear();
    printer.write_report(&rec, &mut line);
    let _ = rtwhy_decode::EventDecoder::new().decode(&meta, &rec);
});
