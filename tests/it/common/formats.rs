//! The third-party readers of selfprobe's formats, from the venv `.ci/run`
//! makes (.ci/venv): Python's jsonschema validates SARIF against the
//! official 2.1.0 schema (tests/data/sarif_validate.py), junitparser reads
//! JUnit XML back (tests/data/junit_summary.py).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The venv `.ci/run` makes, when `module` imports in it.
pub fn venv_python(module: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python");
    let ok = Command::new(&p)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(p)
}

/// tests/data/sarif_validate.py over the files: (exit code, what it printed).
pub fn sarif_validate(py: &Path, files: &[&Path]) -> (i32, String) {
    let out = Command::new(py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sarif_validate.py"
        ))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sarif-2.1.0.json"
        ))
        .args(files)
        .output()
        .expect("run tests/data/sarif_validate.py");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// tests/data/junit_summary.py over `file`: junitparser's reading of it.
pub fn junit_read(py: &Path, file: &Path) -> Value {
    let out = Command::new(py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/junit_summary.py"
        ))
        .arg(file)
        .output()
        .expect("run tests/data/junit_summary.py");
    assert!(
        out.status.success(),
        "junitparser could not read {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("junit_summary.py prints JSON")
}
