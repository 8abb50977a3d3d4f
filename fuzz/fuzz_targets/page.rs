//! Single ring-buffer pages, in both byte orders and both kernel long sizes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtwhy_decode::page::PageReader;
use rtwhy_decode::{Endian, HeaderPage};

fuzz_target!(|data: &[u8]| {
    for endian in [Endian::Little, Endian::Big] {
        for long in [4, 8] {
            let layout = HeaderPage::default_for_long(long);
            if let Ok(mut r) = PageReader::new(data, &layout, endian) {
                let mut n = 0;
                while let Ok(Some(ev)) = r.next_event() {
                    assert!(ev.start <= ev.end && ev.end <= data.len());
                    n += 1;
                    assert!(n <= data.len(), "more events than bytes");
                }
            }
        }
    }
});
