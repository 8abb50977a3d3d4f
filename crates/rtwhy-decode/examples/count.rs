//! Counts records per file (development aid).
fn main() {
    for path in std::env::args().skip(1) {
        match rtwhy_decode::tracedat::TraceFile::open(path.as_ref()) {
            Ok(f) => {
                let mut s = f.records().expect("stream");
                let mut n = 0u64;
                let mut first = None;
                let mut last = 0;
                let mut unknown = 0;
                while let Some(r) = s.next_record().expect("rec") {
                    n += 1;
                    if first.is_none() { first = Some(r.ts); }
                    last = r.ts;
                    if r.format.is_none() { unknown += 1; }
                }
                println!("{:?} off={} info={:?}", f.meta().tsc2nsec, f.meta().ts_offset, f.info().date); println!("{path}: v{} cpus={} clock={:?} n={n} unknown={unknown} first={first:?} last={last} warn={:?} {:?}", f.info().version, f.info().cpus, f.meta().clock, s.warnings().len(), f.warnings());
            }
            Err(e) => println!("{path}: ERROR {e}"),
        }
    }
}
