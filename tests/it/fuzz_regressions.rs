//! The fuzz targets' bodies (fuzz/src/lib.rs) over every committed seed
//! (fuzz/corpus/<target>/) and every input a fuzzer ever crashed on
//! (tests/data/fuzz/<target>/). CI never fuzzes; this keeps the targets
//! compiling and the crashes fixed.

#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod harness;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Runs one target over one directory; returns how many inputs it ran and
/// the failures (file and panic message), so that one bad input does not
/// hide the others.
fn run_dir(body: fn(&[u8]), dir: &Path, failures: &mut Vec<String>) -> usize {
    let inputs = files(dir);
    for p in &inputs {
        let data = std::fs::read(p).expect("a readable input");
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| body(&data))) {
            let msg = e
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| e.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            failures.push(format!("{}: {msg}", p.display()));
        }
    }
    inputs.len()
}

#[test]
fn every_seed_and_every_crash_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    for (name, body) in harness::TARGETS {
        let seeds = run_dir(*body, &root.join("fuzz/corpus").join(name), &mut failures);
        // A target without seeds would start from nothing and this test
        // would check nothing for it.
        assert!(seeds >= 2, "fuzz/corpus/{name} has {seeds} seeds");
        run_dir(
            *body,
            &root.join("tests/data/fuzz").join(name),
            &mut failures,
        );
    }
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

#[test]
fn every_input_directory_names_a_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for base in ["fuzz/corpus", "tests/data/fuzz"] {
        let Ok(rd) = std::fs::read_dir(root.join(base)) else {
            continue;
        };
        for e in rd {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                harness::TARGETS.iter().any(|(t, _)| *t == name),
                "{base}/{name} is not a fuzz target: its inputs would never run"
            );
        }
    }
}

#[test]
fn targets_match_the_fuzz_binaries() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut bins: Vec<String> = files(&root.join("fuzz/fuzz_targets"))
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .collect();
    bins.sort();
    let mut names: Vec<String> = harness::TARGETS
        .iter()
        .map(|(t, _)| t.to_string())
        .collect();
    names.sort();
    assert_eq!(bins, names);
}

/// The check that guards every string a parser lets into a report must
/// reject what it exists to reject, or the seeds above would prove nothing.
#[test]
fn the_printable_check_rejects_control_characters_and_length() {
    assert!(catch_unwind(|| harness::assert_printable("t", "plain text", 10)).is_ok());
    assert!(catch_unwind(|| harness::assert_printable("t", "\x1b[31mred", 20)).is_err());
    assert!(catch_unwind(|| harness::assert_printable("t", "eleven char", 10)).is_err());
}
