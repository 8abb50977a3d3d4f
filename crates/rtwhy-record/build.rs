//! Compiles the BPF breach detector (`bpf/detector.bpf.c` at the workspace root) with
//! clang and generates its libbpf-rs skeleton into `OUT_DIR`.

use std::env;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let bpf_dir = manifest.join("../../bpf");
    let source = bpf_dir.join("detector.bpf.c");
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());

    let result = SkeletonBuilder::new()
        .source(&source)
        .obj(out.join("detector.bpf.o"))
        .clang_args([
            std::ffi::OsString::from("-I"),
            bpf_dir.clone().into_os_string(),
            std::ffi::OsString::from("-Wall"),
        ])
        .build_and_generate(out.join("detector.skel.rs"));
    if let Err(e) = result {
        // The chain carries clang's own diagnostics; print it whole.
        panic!("building {}: {e:#}", source.display());
    }
    println!("cargo:rerun-if-changed={}", source.display());
    println!(
        "cargo:rerun-if-changed={}",
        bpf_dir.join("rtwhy_kernel.h").display()
    );
}
