//! `trace-cmd report` text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtwhy_decode::text::TextReader;

fuzz_target!(|data: &[u8]| {
    let _ = rtwhy_decode::text::looks_like_report_text(data);
    let mut r = TextReader::new(data);
    let mut n = 0usize;
    while let Some(ev) = r.next_event() {
        let _ = ev;
        n += 1;
        assert!(n <= data.len() + 1, "more events than bytes");
    }
});
