//! Damaged input: truncations and byte flips of every real trace give `Ok` or a one-line
//! error naming the file offset; never a panic, a hang or a runaway allocation.

use std::sync::Arc;

use rtwhy_decode::tracedat::TraceFile;
use rtwhy_tests::all_traces;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Reads everything a damaged file holds; returns the number of records.
fn read_all(bytes: Vec<u8>) -> Result<u64, String> {
    let file = TraceFile::from_source(Arc::new(bytes)).map_err(|e| e.to_string())?;
    let mut decoder = rtwhy_decode::EventDecoder::new();
    let mut printer = rtwhy_decode::print::Printer::new(file.meta());
    let mut s = file.records().map_err(|e| e.to_string())?;
    let mut n = 0;
    let mut line = String::new();
    while let Some(r) = s.next_record().map_err(|e| e.to_string())? {
        let _ = decoder.decode(file.meta(), &r);
        line.clear();
        printer.write_raw(&r, &mut line);
        line.clear();
        printer.write_report(&r, &mut line);
        n += 1;
        assert!(n < 50_000_000, "runaway record stream");
    }
    Ok(n)
}

fn check_error(e: &str, what: &str) {
    assert!(!e.contains('\n'), "{what}: error spans lines: {e}");
    assert!(!e.is_empty(), "{what}: empty error");
}

#[test]
fn truncations_and_byte_flips_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = 0;
    let mut errors = 0;
    for path in all_traces() {
        let Ok(orig) = std::fs::read(&path) else {
            continue;
        };
        let len = orig.len();
        // Metadata lives at the start: damage it densely there, sparsely in the data.
        let mut mutants: Vec<Vec<u8>> = Vec::new();
        for cut in [
            0,
            1,
            9,
            10,
            12,
            16,
            64,
            200,
            1000,
            4096,
            len / 3,
            len / 2,
            len - 1,
        ] {
            if cut < len {
                mutants.push(orig[..cut].to_vec());
            }
        }
        for i in 0..60 {
            let mut m = orig.clone();
            let at = if i % 2 == 0 {
                (rng.next() as usize) % len.min(8192)
            } else {
                (rng.next() as usize) % len
            };
            let flips = 1 + (rng.next() % 4) as usize;
            for k in 0..flips {
                let pos = (at + k * 7) % len;
                m[pos] ^= 1 << (rng.next() % 8);
            }
            mutants.push(m);
        }
        for (i, m) in mutants.into_iter().enumerate() {
            cases += 1;
            match read_all(m) {
                Ok(_) => {}
                Err(e) => {
                    errors += 1;
                    check_error(&e, &format!("{} mutant {i}", path.display()));
                }
            }
        }
    }
    eprintln!("mutations: {cases} damaged files read, {errors} refused with a one-line error");
    assert!(cases > 1500, "only {cases} cases");
}

#[test]
fn errors_name_the_file_offset() {
    let path = all_traces()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("bengo"))
        .expect("corpus file");
    let orig = std::fs::read(&path).expect("read");
    let e = read_all(orig[..100].to_vec()).expect_err("truncated header");
    assert!(e.contains("offset 0x"), "{e}");
    let mut bad = orig.clone();
    bad[0] = b'X';
    let e = read_all(bad).expect_err("bad magic");
    assert!(e.contains("not a trace.dat"), "{e}");
}
