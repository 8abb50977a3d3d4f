//! rtwhy's handling of zstd chunks (`Codec::Zstd`: libzstd's streaming decoder into a
//! buffer that grows with the output, bounded by the chunk's size) on arbitrary input,
//! against libzstd's one-shot decoder on the same bytes: no panic, no more output than
//! the chunk's size plus one byte (or the buffer already held), a chunk of exactly the size the one-shot decoder makes
//! of it decodes to the same bytes (unless libzstd's streaming decoder refuses it too),
//! and a chunk of any other size is an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtwhy_decode::tracedat::Codec;

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let reference = zstd::bulk::Decompressor::new().and_then(|mut d| d.decompress(data, LIMIT));
    // The size a chunk header would claim: right, one off either way, or unrelated.
    let sizes = match &reference {
        Ok(want) => [want.len(), want.len().saturating_sub(1), want.len() + 1, data.len()],
        Err(_) => [0, data.len(), data.len().saturating_mul(7), LIMIT],
    };
    for expected in sizes.map(|n| n.min(LIMIT)) {
        // A buffer reused from an earlier chunk: libzstd may fill what it already holds.
        let mut out = vec![0xA5; 100];
        let held = out.capacity();
        let ours = Codec::Zstd.decompress_into(data, expected as u64, 0, &mut out);
        assert!(
            out.len() <= (expected + 1).max(held),
            "{} bytes for a chunk of {expected}",
            out.len()
        );
        let Ok(want) = &reference else {
            continue;
        };
        if want.len() != expected {
            assert!(ours.is_err(), "a chunk of {expected} bytes decoded to {}", want.len());
        } else if let Err(e) = ours {
            // rtwhy uses libzstd's streaming decoder, which holds frames to RFC 8878 where
            // the one-shot decoder does not (a block longer than the window or 128 KiB),
            // with one limit of its own: a window over 8 MiB and over the chunk's size.
            let streaming = zstd::stream::decode_all(data);
            assert!(
                streaming.is_err() || e.to_string().contains("too much memory"),
                "libzstd decodes what rtwhy rejects: {e}"
            );
        } else {
            assert!(out == *want, "the decoders disagree");
        }
    }
});
