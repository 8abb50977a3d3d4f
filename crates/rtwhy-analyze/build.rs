//! Declares every cause's rule from the files in `src/rules/`: a file `foo_bar.rs` there
//! is module `rules::foo_bar` and defines the unit struct `FooBar` implementing `Rule`.
//! Adding a cause's rule is adding its file; where it stands among the others is the
//! rule's own `precedence`.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut stems: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".rs")?;
            (stem != "mod").then(|| stem.to_string())
        })
        .collect();
    stems.sort();
    let mut out = String::new();
    for stem in &stems {
        assert!(
            stem.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "src/rules/{stem}.rs: a rule file's name is its module's (lower case and _)"
        );
        let path = dir.join(format!("{stem}.rs"));
        let _ = writeln!(
            out,
            "#[path = {:?}]\npub(crate) mod {stem};",
            path.display().to_string()
        );
    }
    let _ = writeln!(
        out,
        "/// Every rule, one per file of `src/rules/`, in file-name order."
    );
    let _ = writeln!(out, "const FOUND: [&dyn Rule; {}] = [", stems.len());
    for stem in &stems {
        let _ = writeln!(out, "    &{stem}::{},", camel(stem));
    }
    out.push_str("];\n");
    let to = Path::new(&std::env::var_os("OUT_DIR").unwrap_or_default()).join("rules.rs");
    std::fs::write(&to, out).unwrap_or_else(|e| panic!("cannot write {}: {e}", to.display()));
}

/// `irq_on_isolated_cpu` -> `IrqOnIsolatedCpu`.
fn camel(stem: &str) -> String {
    stem.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}
