//! Puts the git revision into `rtwhy --version`, so a binary copied to a target board
//! still says which sources it was built from.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=RTWHY_GIT_REV");
    // A source tarball has no .git: packagers can say the revision themselves.
    let rev = std::env::var("RTWHY_GIT_REV")
        .ok()
        .filter(|r| !r.is_empty())
        .or_else(|| {
            git(&[
                "describe",
                "--always",
                "--dirty",
                "--abbrev=12",
                "--exclude=*",
            ])
        });
    // A new commit moves HEAD or the branch it points at; `--dirty` follows the index.
    // `--git-path` finds each file in a worktree too.
    let mut watched = vec![
        "HEAD".to_string(),
        "index".to_string(),
        "packed-refs".to_string(),
    ];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]) {
            // A path that does not exist would rerun this script on every build.
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    let version = env!("CARGO_PKG_VERSION");
    let long = match rev {
        Some(rev) => format!("{version} (git {rev})"),
        None => format!("{version} (git revision unknown)"),
    };
    println!("cargo:rustc-env=RTWHY_LONG_VERSION={long}");
}
