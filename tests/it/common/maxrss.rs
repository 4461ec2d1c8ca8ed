//! A command's own peak memory. wait4(2) from the test process cannot give
//! it: a child's ru_maxrss starts from the memory of the process it was
//! forked or vforked from, which the kernel carries across exec(2), so a
//! child of the test harness reports the harness's resident size, whatever
//! the other test threads hold at that moment (measured: a 30 MB run of the
//! probe read 317 MB when forked from a 300 MB parent). bench/maxrss.rs, a
//! small program with nothing but std, runs the command as its own child
//! and prints what wait4 says of it; the command then starts from that
//! program's megabyte.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// bench/maxrss.rs built once per test run, readable and executable by
/// every user.
pub fn helper() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/maxrss.rs"));
        // Built again each run: the source is the repo's and may change.
        build_static(src, "maxrss", false)
    })
}

/// A small std-only program `src` built static with rustc (no cargo, as the
/// benchmarks build theirs) into CARGO_TARGET_TMPDIR/NAME/NAME, mode 0755;
/// with `reuse`, an earlier run's build is taken as it is. Written beside
/// and renamed, so a concurrent run never executes a half-written file.
pub fn build_static(src: &Path, name: &str, reuse: bool) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join(name);
    if reuse && bin.is_file() {
        return bin;
    }
    let tmp = dir.join(format!("{name}.{}", std::process::id()));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let built = Command::new(&rustc)
        .args([
            "--edition",
            "2021",
            "-O",
            "-C",
            "target-feature=+crt-static",
        ])
        .arg(src)
        .arg("-o")
        .arg(&tmp)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (needed to build {})",
                rustc.to_string_lossy(),
                src.display()
            )
        });
    assert!(
        built.status.success(),
        "building {}: {}",
        src.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&tmp, &bin).unwrap();
    bin
}

/// `cmd` run under the helper: the same program, arguments, environment
/// changes and directory (a command built with `env_clear` or a uid must
/// be built on the helper directly instead).
pub fn wrap(cmd: &Command) -> Command {
    let mut w = Command::new(helper());
    w.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        w.current_dir(d);
    }
    w
}

/// The helper's line taken out of a command's standard error: the peak RSS
/// in KiB, and the stderr without that line. None when the line is absent
/// (the helper was killed before it could print).
pub fn take(stderr: &str) -> (Option<i64>, String) {
    let Some(at) = stderr.rfind("BENCH wall_us=") else {
        return (None, stderr.to_string());
    };
    let line_end = stderr[at..].find('\n').map_or(stderr.len(), |n| at + n + 1);
    let line = &stderr[at..line_end];
    let kib = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("maxrss_kib="))
        .and_then(|n| n.parse().ok());
    (kib, format!("{}{}", &stderr[..at], &stderr[line_end..]))
}
