//! zstd chunks through rtwhy's chunk handling (`Codec::Zstd`, libzstd underneath) against
//! frames written by the reference implementation (the `zstd` 1.5.4 command, files in
//! `tests/data/zstd/`, see the README there), and against damaged copies of them: no
//! panic, never more output than the chunk's size, a size other than the chunk's an error.

use std::path::PathBuf;

use rtwhy_decode::tracedat::Codec;

/// Decompresses `input`, which must expand to `expected` bytes, into `out` (replaced).
fn decompress(input: &[u8], out: &mut Vec<u8>, expected: usize) -> Result<(), String> {
    Codec::Zstd
        .decompress_into(input, expected as u64, 0, out)
        .map_err(|e| e.to_string())
}

fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/zstd")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The bytes every test vector holds: kallsyms-like lines, then binary records with
/// runs (so that literals, matches and repeat offsets all occur).
fn sample() -> Vec<u8> {
    let mut state: u64 = 0x1234_5678_9ABC_DEF0;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut out = Vec::new();
    for i in 0..1200u64 {
        let addr = 0xFFFF_FFFF_8100_0000 + i * 16 + next() % 16;
        let kind = b"TtDb"[(next() % 4) as usize] as char;
        let sym = next() % 500;
        out.extend_from_slice(format!("{addr:016x} {kind} sym_{sym}_{i}\n").as_bytes());
    }
    for j in 0..5000u32 {
        out.extend_from_slice(&(j.wrapping_mul(977)).to_le_bytes());
        let b = (next() % 3) as u8;
        let n = 1 + (next() % 9) as usize;
        out.extend(std::iter::repeat_n(b, n));
        out.extend_from_slice(&((next() & 0xF) as u16).to_le_bytes());
    }
    out
}

const VECTORS: [&str; 3] = ["fast5.zst", "level3.zst", "level19-nocheck.zst"];

#[test]
fn frames_of_the_reference_encoder_decode_to_their_input() {
    let want = sample();
    for name in VECTORS {
        let mut out = Vec::new();
        decompress(&data(name), &mut out, want.len()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(out == want, "{name}: decoded bytes differ from the input");
    }
}

#[test]
fn concatenated_and_skippable_frames_decode_in_turn() {
    let want = sample();
    let mut input = data("level3.zst");
    // A skippable frame (magic 0x184D2A5?, 4-byte size, content) between two frames.
    input.extend_from_slice(&[0x53, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    input.extend_from_slice(&data("fast5.zst"));
    let mut out = Vec::new();
    decompress(&input, &mut out, 2 * want.len()).unwrap_or_else(|e| panic!("{e}"));
    assert!(out == [want.clone(), want].concat());
}

/// A reused buffer is written over: whatever it held, longer or shorter than the output,
/// only the output is left.
#[test]
fn decoding_over_an_old_buffer_leaves_only_the_new_bytes() {
    let want = sample();
    for old in [vec![0xAA; want.len() + 5000], vec![0x55; 10], Vec::new()] {
        let mut buf = old;
        let r = decompress(&data("level19-nocheck.zst"), &mut buf, want.len());
        assert!(r.is_ok(), "{r:?}");
        assert!(buf == want, "{} bytes left", buf.len());
    }
}

/// The chunk's size is a limit: a frame that decodes to more is an error, and what was
/// written stops one byte past the limit.
#[test]
fn output_beyond_the_chunk_size_is_an_error() {
    let want = sample();
    for name in VECTORS {
        let mut out = Vec::new();
        let r = decompress(&data(name), &mut out, want.len() - 1);
        let Err(e) = r else {
            panic!("{name}: one byte short of the content must fail");
        };
        assert!(e.contains("more than the expected"), "{name}: {e}");
        assert!(out.len() <= want.len(), "{name}: {} bytes out", out.len());
    }
}

/// Found by fuzzing the own decoder against libzstd: a frame of one empty block whose
/// header claims 91 bytes.
#[test]
fn a_frame_shorter_than_its_header_says_is_an_error() {
    let input = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 91, 0x01, 0x00, 0x00];
    let r = decompress(&input, &mut Vec::new(), 91);
    assert!(r.is_err(), "a frame of 0 bytes claiming 91 must fail");
}

/// A chunk whose size claims far more than its frame holds: the buffer grows with the
/// output, not with the claim (256 MiB here), and the short output is an error.
#[test]
fn a_chunk_claiming_more_than_its_frame_holds_is_an_error() {
    let want = sample();
    let mut out = Vec::new();
    let r = decompress(&data("level3.zst"), &mut out, 256 << 20);
    let Err(e) = r else {
        panic!("a 91918-byte frame in a chunk of 256 MiB must fail");
    };
    assert!(e.contains("its header says 268435456"), "{e}");
    assert!(out == want);
    assert!(
        out.capacity() < 4 << 20,
        "{} bytes reserved",
        out.capacity()
    );
}

/// Found by fuzzing the own decoder against libzstd: an RLE block repeating its byte more
/// than the 128 KiB a block may hold (RFC 8878). libzstd's one-shot decoder writes it
/// out; its streaming decoder, which rtwhy uses, refuses it, within the chunk's size.
#[test]
fn an_rle_block_longer_than_a_block_may_be_is_an_error() {
    // Block header 0x7FFF5B: last, RLE, 1048555 bytes of 0x06.
    let input = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x3A, 0x5B, 0xFF, 0x7F, 0x06];
    for expected in [1048555, 1 << 19] {
        let mut out = Vec::new();
        let r = decompress(&input, &mut out, expected);
        assert!(r.is_err(), "{expected}: {} bytes", out.len());
        assert!(out.len() <= expected + 1, "{} bytes out", out.len());
    }
}

#[test]
fn damaged_frames_never_panic_nor_exceed_the_chunk_size() {
    let want = sample();
    for name in VECTORS.iter().chain(&["huffman-no-end-mark.zst"]) {
        let good = data(name);
        // The frame descriptor's checksum bit.
        let checked = good[4] & 0x04 != 0;
        let (mut tries, mut failed) = (0usize, 0usize);
        let mut check = |input: &[u8]| {
            let mut out = Vec::new();
            tries += 1;
            match decompress(input, &mut out, want.len()) {
                Err(_) => failed += 1,
                // With a content checksum, damage that changed the content is noticed.
                Ok(()) => assert!(!checked || out == want, "{name}: damage went unnoticed"),
            }
            assert!(
                out.len() <= want.len() + 1,
                "{name}: {} bytes out",
                out.len()
            );
        };
        for cut in (0..good.len()).step_by(101) {
            check(&good[..cut]);
        }
        for at in (0..good.len()).step_by(37) {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = good.clone();
                bad[at] ^= flip;
                check(&bad);
            }
        }
        eprintln!("{name}: {failed} of {tries} damaged copies fail");
    }
}

/// Writes the sample for the `zstd` command (see tests/data/zstd/README.md).
#[test]
#[ignore]
fn write_sample() {
    let path = std::env::var("RTWHY_ZSTD_SAMPLE").unwrap_or("/tmp/zstd-sample.bin".into());
    std::fs::write(&path, sample()).unwrap_or_else(|e| panic!("{path}: {e}"));
}
