//! `SELFPROBE_REPORT_DUMP=<dir>`: every JSON report a test gets from a
//! selfprobe run is also written to `<dir>/<test>.<n>.json`, so two trees'
//! reports can be compared (bench/compare-behaviour.sh). `<test>` is the
//! test thread's name (the harness names it after the test's path) and `<n>`
//! counts that test's reports from 0, so a test that runs the same cases
//! names its files the same way every time. The stdout is written as it
//! came, JSON or not: a run that printed nothing is a file too. Unset, this
//! does nothing.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

pub const VAR: &str = "SELFPROBE_REPORT_DUMP";

/// Writes `report`: what a selfprobe run asked for JSON printed (or wrote
/// with -o), as it came. Every report a test gets passes here, so it is
/// also where the report's words are checked (sentences.rs): a reason that
/// quotes the rubric or a message with a broken article fails the test
/// that got it, whatever that test is about; and where the report is
/// read back through the model and written again (roundtrip.rs).
pub fn report(report: impl AsRef<[u8]>) {
    super::sentences::check(report.as_ref());
    super::roundtrip::check(report.as_ref());
    let Some(dir) = std::env::var_os(VAR).filter(|d| !d.is_empty()) else {
        return;
    };
    // A thread a test spawned has no name; its files are named for that,
    // and the comparison shows them if their order is not fixed.
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .unwrap_or("unnamed-thread")
        .replace('/', "_");
    static SEEN: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
    let n = {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        let count = seen
            .get_or_insert_with(HashMap::new)
            .entry(test.clone())
            .or_insert(0);
        *count += 1;
        *count - 1
    };
    let dir = Path::new(&dir);
    let path = dir.join(format!("{test}.{n}.json"));
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, report)) {
        panic!("{VAR}: writing {}: {e}", path.display());
    }
}

/// Whether `cmd` runs selfprobe with `--format json`: the program or an
/// argument (the path inside a container, after `podman run IMG`) is a
/// file named selfprobe. Used where any command's output passes by.
pub fn is_json_run(cmd: &Command) -> bool {
    let named = |a: &OsStr| Path::new(a).file_name() == Some(OsStr::new("selfprobe"));
    let args: Vec<&OsStr> = cmd.get_args().collect();
    (named(cmd.get_program()) || args.iter().any(|a| named(a)))
        && (args
            .windows(2)
            .any(|w| w[0] == "--format" && w[1] == "json")
            || args.iter().any(|a| *a == "--format=json"))
}

/// For output whose command is not known (fixture::Run::from, which reads
/// JSON and text runs): a JSON report starts with `{`, and an empty stdout
/// may be a JSON run that failed; a text report starts otherwise.
pub fn looks_like_report(stdout: &[u8]) -> bool {
    matches!(stdout.trim_ascii_start().first(), None | Some(b'{'))
}
