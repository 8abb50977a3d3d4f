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

    check_build_needs();
    let result = SkeletonBuilder::new()
        .source(&source)
        .obj(out.join("detector.bpf.o"))
        .clang_args([
            std::ffi::OsString::from("-I"),
            bpf_dir.clone().into_os_string(),
            std::ffi::OsString::from("-Wall"),
            std::ffi::OsString::from(format!("-D__TARGET_ARCH_{}", kernel_arch())),
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

/// The kernel's name for the architecture the binary is built for (`ARCH=` of the kernel's
/// build, what libbpf's `bpf_tracing.h` expects as `__TARGET_ARCH_*`). Cargo gives a build
/// script the target's architecture, not the host's, so a cross-build from x86 compiles
/// the BPF object for arm64 (`scripts/setup.sh cross-arm64`, docs/arm64.md).
fn kernel_arch() -> String {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    match arch.as_str() {
        "x86_64" => "x86".into(),
        "aarch64" => "arm64".into(),
        "riscv64" => "riscv".into(),
        "powerpc64" => "powerpc".into(),
        "s390x" => "s390".into(),
        "loongarch64" => "loongarch".into(),
        // arm, mips and others: the kernel and Rust spell them alike.
        other => other.into(),
    }
}

/// What building the recorder takes from the system, checked first so that `cargo
/// install` on a bare machine says what to install instead of failing deep inside clang
/// or the linker.
fn check_build_needs() {
    const FIX: &str = "run scripts/setup.sh build as root, or apt-get install clang llvm libelf-dev zlib1g-dev pkg-config";
    let clang = std::process::Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !clang {
        panic!("rtwhy's BPF detector is compiled with clang, which is not installed: {FIX}");
    }
    // libbpf-sys links these archives statically (see .cargo/config.toml).
    let target = env::var("TARGET").unwrap_or_default().replace('-', "_");
    println!("cargo:rerun-if-env-changed=LIBBPF_SYS_LIBRARY_PATH_{target}");
    if let Ok(dirs) = env::var(format!("LIBBPF_SYS_LIBRARY_PATH_{target}")) {
        for lib in ["libelf.a", "libz.a"] {
            let found = dirs
                .split(':')
                .any(|d| std::path::Path::new(d).join(lib).exists());
            if !found {
                panic!("rtwhy links {lib} statically and it is not in {dirs}: {FIX}");
            }
        }
    }
    if !std::path::Path::new("/usr/include/gelf.h").exists() {
        println!("cargo:warning=/usr/include/gelf.h is missing (libelf-dev): {FIX}");
    }
}
