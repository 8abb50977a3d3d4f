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

/// `../shared/corpus/wild`: real trace.dat files from other people's machines, in the
/// `shared/` directory beside the checkout (where CI puts it). `RTWHY_WILD_CORPUS` names
/// another place. Under CI a missing corpus is a failure: every conformance test would
/// otherwise pass on zero files.
pub fn wild_corpus() -> PathBuf {
    let dir = std::env::var_os("RTWHY_WILD_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/corpus/wild"));
    assert!(
        dir.is_dir() || !must_have_everything(),
        "the wild corpus is not at {} (put shared/ beside the checkout, or set RTWHY_WILD_CORPUS)",
        dir.display()
    );
    dir
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

/// The `rtwhy` binary, built once per test run. Its path is the one cargo reports for the
/// artifact, so `CARGO_TARGET_DIR` (relative or absolute), `build.target-dir` in a cargo
/// config, or any other build directory is where the tests look.
pub fn rtwhy() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "-q", "-p", "rtwhy", "--bin", "rtwhy"])
            .arg("--message-format=json-render-diagnostics")
            .current_dir(workspace())
            .stderr(std::process::Stdio::inherit())
            .output();
        let out = match out {
            Ok(o) if o.status.success() => o,
            _ => panic!("building rtwhy failed"),
        };
        built_executable(&String::from_utf8_lossy(&out.stdout), "rtwhy")
            .unwrap_or_else(|| panic!("cargo named no executable for rtwhy"))
    })
    .clone()
}

/// The build directory the tests' `rtwhy` binary was built in (`target/` by default).
pub fn target_dir() -> PathBuf {
    let bin = rtwhy();
    bin.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or(bin)
}

/// The executable cargo's JSON messages (`--message-format=json`) name for binary `bin`.
fn built_executable(messages: &str, bin: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == bin)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
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
