//! Helpers shared by the end-to-end tests: where the corpus and fixtures are, the oracle
//! outputs, and the built `rtwhy` binary.

pub mod preconditions;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `../shared/corpus/wild`: real trace.dat files from other people's machines.
pub fn wild_corpus() -> PathBuf {
    workspace().join("../shared/corpus/wild")
}

/// Every `.dat` under `dir`, sorted.
pub fn dat_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "dat"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The wild corpus and the traces recorded on this project's machines.
pub fn all_traces() -> Vec<PathBuf> {
    let mut v = dat_files(&wild_corpus());
    v.extend(dat_files(&workspace().join("fixtures/recorded")));
    v
}

/// Decompresses a `.zst` oracle file to text.
pub fn read_zst(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let mut dec = ruzstd::decoding::StreamingDecoder::new(f).ok()?;
    let mut out = Vec::new();
    dec.read_to_end(&mut out).ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The oracle output stored beside `dat` (`kind` is `raw` or `report`).
pub fn oracle(dat: &Path, kind: &str) -> Option<String> {
    let stem = dat.file_stem()?.to_string_lossy().into_owned();
    read_zst(&dat.with_file_name(format!("{stem}.{kind}.txt.zst")))
}

/// The `rtwhy` binary, built once per test run.
pub fn rtwhy() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "rtwhy", "--bin", "rtwhy"])
            .current_dir(workspace())
            .status();
        assert!(status.is_ok_and(|s| s.success()), "building rtwhy failed");
        let target = std::env::var("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| workspace().join("target"));
        target.join("debug/rtwhy")
    })
    .clone()
}

/// Whether a command exists on PATH.
pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Under CI (or `RTWHY_LIVE_TESTS=1`) a missing capability fails a test instead of skipping it.
pub fn must_have_everything() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("RTWHY_LIVE_TESTS").is_ok_and(|v| v == "1")
}

/// Skips (returns false) or fails when `cmd` is missing, per [`must_have_everything`].
pub fn require(cmd: &str) -> bool {
    if have(cmd) {
        return true;
    }
    assert!(
        !must_have_everything(),
        "{cmd} is required under CI=true; install it (the README's test command does)"
    );
    eprintln!("skipping: {cmd} not installed");
    false
}
