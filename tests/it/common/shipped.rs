//! The shipped binaries: `cargo build --release` (opt-level z, fat LTO, one
//! codegen unit, strip; no dev-dependency features). The fixture and CLI
//! tests run the quick test-profile probe (`CARGO_BIN_EXE_selfprobe`); the
//! real-container and size checks run the release probe, so what they pass
//! is what users copy into their containers. The host tool,
//! `selfprobe-host`, is another package's binary (crates/host), which cargo
//! does not build for this one's tests: `host_bin()` builds the release one,
//! beside the release probe, which it places when no `--binary` is given.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::fixture::BIN;

/// The shipped binary, built (or found fresh: cargo's own check) once per
/// test run. Panics with cargo's message when the build fails.
pub fn bin() -> &'static Path {
    static SHIPPED: OnceLock<PathBuf> = OnceLock::new();
    SHIPPED.get_or_init(|| build("selfprobe"))
}

/// The host tool, `selfprobe-host`, built (or found fresh) once per test
/// run, beside `bin()`.
pub fn host_bin() -> &'static Path {
    static HOST: OnceLock<PathBuf> = OnceLock::new();
    HOST.get_or_init(|| {
        // Its default probe is the file beside it: the shipped one.
        bin();
        build("selfprobe-host")
    })
}

/// `host_bin()` as a &str, for argument lists.
pub fn host_bin_str() -> &'static str {
    host_bin().to_str().expect("a UTF-8 target path")
}

/// `bin()` as a &str, for argument lists.
pub fn bin_str() -> &'static str {
    bin().to_str().expect("a UTF-8 target path")
}

fn build(name: &str) -> PathBuf {
    // target/<triple>/<profile>/selfprobe -> target/<triple>/release/selfprobe,
    // wherever CARGO_TARGET_DIR put the target directory.
    let built = Path::new(BIN);
    let profile_dir = built.parent().expect("the binary's directory");
    if name == "selfprobe" && profile_dir.file_name().is_some_and(|n| n == "release") {
        // `cargo test --release`: the tested binary is already the release
        // profile's, and a second build would overwrite it in place.
        return built.to_path_buf();
    }
    let release = profile_dir
        .parent()
        .expect("the target directory")
        .join("release")
        .join(name);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    // The variables cargo sets for a test process are not the shell's: ring's
    // build script reruns when CARGO_PKG_NAME, CARGO_MANIFEST_DIR or OUT_DIR
    // differ, so a release build made from the shell (README, .ci/run) would
    // be built again here, and this one again there.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_MANIFEST_")
            || k.starts_with("CARGO_CRATE_")
            || k.starts_with("CARGO_BIN_")
            || k == "CARGO_PRIMARY_PACKAGE"
            || k == "CARGO_TARGET_TMPDIR"
            || k == "OUT_DIR"
        {
            cmd.env_remove(k.as_ref());
        }
    }
    let status = cmd
        .args(["build", "--release", "--bin", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap_or_else(|e| panic!("running {cargo:?} build --release: {e}"));
    assert!(status.success(), "cargo build --release failed: {status}");
    assert!(
        release.is_file(),
        "no shipped binary at {}",
        release.display()
    );
    release
}

/// Whether a command line's first word is one of the host tool's commands
/// (`selfprobe-host`), not the probe's.
pub fn is_host_command(first: &str) -> bool {
    matches!(
        first,
        "inspect" | "teardown" | "diff" | "summary" | "attest" | "watch"
    )
}
