//! rtwhy's zstd decoder against frames written by the reference implementation (the
//! `zstd` 1.5.4 command, files in `tests/data/zstd/`, see the README there), and against
//! damaged copies of them: no panic, never more output than the limit.

use std::path::PathBuf;

use rtwhy_decode::tracedat::zstd::{decompress, decompress_over, Decoder};

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
    let mut dec = Decoder::default();
    for name in VECTORS {
        let mut out = Vec::new();
        decompress(&mut dec, &data(name), &mut out, want.len())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
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
    let mut out = b"kept".to_vec();
    decompress(&mut Decoder::default(), &input, &mut out, 2 * want.len())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&out[..4], b"kept");
    assert!(out[4..] == [want.clone(), want].concat());
}

/// A reused buffer is written over, not cleared: whatever it held, longer or shorter than
/// the output, only the output is left.
#[test]
fn decoding_over_an_old_buffer_leaves_only_the_new_bytes() {
    let want = sample();
    let mut dec = Decoder::default();
    for old in [vec![0xAA; want.len() + 5000], vec![0x55; 10], Vec::new()] {
        let mut buf = old;
        let r = decompress_over(&mut dec, &data("level19-nocheck.zst"), &mut buf, want.len());
        assert!(r.is_ok(), "{r:?}");
        assert!(buf == want, "{} bytes left", buf.len());
    }
}

#[test]
fn output_beyond_the_limit_is_an_error() {
    let want = sample();
    for name in VECTORS {
        let mut out = Vec::new();
        let r = decompress(
            &mut Decoder::default(),
            &data(name),
            &mut out,
            want.len() - 1,
        );
        let Err(e) = r else {
            panic!("{name}: one byte short of the content must fail");
        };
        assert!(e.to_string().contains("more than expected"), "{name}: {e}");
    }
}

/// Found by fuzzing against libzstd: a frame of one empty block whose header claims 91
/// bytes. libzstd's streaming decoder returns nothing and no error; rtwhy says why.
#[test]
fn a_frame_shorter_than_its_header_says_is_an_error() {
    let input = [0x28, 0xB5, 0x2F, 0xFD, 0x20, 91, 0x01, 0x00, 0x00];
    let mut out = Vec::new();
    let r = decompress(&mut Decoder::default(), &input, &mut out, 1 << 20);
    let Err(e) = r else {
        panic!("a frame of 0 bytes claiming 91 must fail");
    };
    assert_eq!(
        e.to_string(),
        "frame decoded to 0 bytes, its header says 91"
    );
}

/// Found by fuzzing against libzstd: three bytes of `level19-nocheck.zst` changed inside a
/// Huffman-coded literals stream. libzstd 1.5.4 decodes the frame without an error, to
/// bytes that differ from the input from offset 39975 on; rtwhy notices that the stream
/// does not end where its last literal does.
#[test]
fn a_damaged_huffman_stream_libzstd_lets_through_is_an_error() {
    let mut input = data("level19-nocheck.zst");
    for (at, byte) in [(8361, 0x92), (8362, 0x23), (26865, 0xAC)] {
        input[at] = byte;
    }
    let mut out = Vec::new();
    let r = decompress(&mut Decoder::default(), &input, &mut out, 1 << 20);
    let Err(e) = r else {
        panic!("the damaged frame must fail");
    };
    assert_eq!(e.to_string(), "Huffman stream not consumed exactly");
}

/// Found by fuzzing against libzstd (CI's bounded run, stop 35): a frame derived from
/// `level19-nocheck.zst` (185 bytes differ) with a Huffman-coded literals stream whose
/// last byte is 0, so it has no end mark. RFC 8878 rules that out; libzstd 1.5.4's fast
/// four-stream loop does not look and decodes the frame to 91918 bytes without an error.
#[test]
fn a_huffman_stream_without_its_end_mark_is_an_error() {
    let input = data("huffman-no-end-mark.zst");
    let r = decompress(&mut Decoder::default(), &input, &mut Vec::new(), 1 << 20);
    let Err(e) = r else {
        panic!("a stream without its end mark must fail");
    };
    assert_eq!(e.to_string(), "bitstream without its end mark");
}

/// Found by fuzzing against libzstd: an RLE block repeating its byte more than the 128 KiB
/// a block may hold. libzstd writes it out; so does rtwhy, within the caller's limit.
#[test]
fn a_long_rle_block_decodes_within_the_limit() {
    // Block header 0x7FFF5B: last, RLE, 1048555 bytes of 0x06.
    let input = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x3A, 0x5B, 0xFF, 0x7F, 0x06];
    let mut out = Vec::new();
    let r = decompress(&mut Decoder::default(), &input, &mut out, 1 << 20);
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(out.len(), 1048555);
    assert!(out.iter().all(|&b| b == 6));
    let r = decompress(&mut Decoder::default(), &input, &mut Vec::new(), 1 << 19);
    assert!(r.is_err(), "half the limit must fail");
}

#[test]
fn damaged_frames_never_panic_nor_exceed_the_limit() {
    let want = sample();
    let limit = want.len() + 100;
    let mut dec = Decoder::default();
    for name in VECTORS {
        let good = data(name);
        // The frame descriptor's checksum bit.
        let checked = good[4] & 0x04 != 0;
        let (mut tries, mut failed) = (0usize, 0usize);
        let mut check = |input: &[u8]| {
            let mut out = Vec::new();
            tries += 1;
            match decompress(&mut dec, input, &mut out, limit) {
                Err(_) => failed += 1,
                // With a content checksum, damage that changed the content is noticed.
                Ok(()) => assert!(!checked || out == want, "{name}: damage went unnoticed"),
            }
            assert!(out.len() <= limit, "{name}: {} bytes out", out.len());
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
