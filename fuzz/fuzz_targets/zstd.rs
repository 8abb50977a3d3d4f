//! rtwhy's zstd decoder on arbitrary input, against the reference implementation
//! (libzstd): no panic, never more than the limit, and every input libzstd decodes
//! within the limit decodes here too, to the same bytes (but for the damage rtwhy notices
//! and libzstd does not, below).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtwhy_decode::tracedat::zstd::{decompress, Decoder};

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    let ours = decompress(&mut Decoder::default(), data, &mut out, LIMIT);
    assert!(out.len() <= LIMIT);
    // libzstd's one-shot decoder (the streaming one ends some damaged frames short
    // without an error), into at most LIMIT bytes.
    let reference = zstd::bulk::Decompressor::new().and_then(|mut d| d.decompress(data, LIMIT));
    let fine = reference.is_ok();
    let want = reference.unwrap_or_default();
    // rtwhy is stricter than libzstd by design in two respects: each Huffman and sequence
    // bitstream must end exactly where its last value does, and must end in its end mark
    // (libzstd's fast Huffman loop checks neither, decoding damaged streams to wrong
    // bytes; where libzstd accepts a stream without its end mark, it is such a Huffman
    // stream, since its other readers check the mark).
    let stricter = matches!(&ours, Err(e) if e.to_string().ends_with("not consumed exactly")
        || e.to_string() == "bitstream without its end mark");
    if fine && want.len() <= LIMIT && !data.is_empty() && !stricter {
        assert!(ours.is_ok(), "libzstd decodes what rtwhy rejects: {ours:?}");
        assert!(out == want, "the decoders disagree");
    } else if ours.is_ok() && fine {
        assert!(out == want, "the decoders disagree");
    }
});
