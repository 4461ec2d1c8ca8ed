//! SIGINT and SIGTERM in the middle of `--write-test` and `canary plant`:
//! whatever selfprobe had created and not finished is removed before it
//! exits, so an interrupted run leaves the host tree as it was (finished
//! canaries are meant to stay).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::fixture::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Every entry under `dir` whose name starts with `prefix`.
pub fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(e.path());
            }
            if e.file_type().unwrap().is_dir() && !e.file_type().unwrap().is_symlink() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// Write-test files, and temporary report files (`.report.json.selfprobe-…`).
fn leftovers(dir: &Path) -> Vec<String> {
    let mut left = named(dir, ".selfprobe-write-test-");
    left.extend(named(dir, ".report.json.selfprobe-"));
    left.iter().map(|p| p.display().to_string()).collect()
}

/// SIGINT on even rounds, SIGTERM on odd ones.
fn round_signal(round: u64) -> Signal {
    if round % 2 == 0 {
        Signal::SIGINT
    } else {
        Signal::SIGTERM
    }
}

/// Starts the three signals at their defaults in the child, whatever the
/// test runner inherited (CI under nohup, a background job), then ignores
/// `ignored`.
fn dispositions(cmd: &mut Command, ignored: Option<Signal>) -> &mut Command {
    use nix::sys::signal::{signal, SigHandler};
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe, the only call made between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            for sig in [Signal::SIGHUP, Signal::SIGINT, Signal::SIGTERM] {
                let how = if Some(sig) == ignored {
                    SigHandler::SigIgn
                } else {
                    SigHandler::SigDfl
                };
                signal(sig, how).map_err(std::io::Error::from)?;
            }
            Ok(())
        })
    }
}

/// Runs `cmd` (output discarded), sends `sig` once `ready` says so, and
/// waits. A signal the child heard must end it promptly.
fn signal_when(cmd: &mut Command, sig: Signal, ready: impl Fn() -> bool) -> ExitStatus {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the moment to signal never came"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    let _ = kill(Pid::from_raw(child.id() as i32), sig);
    let signalled = Instant::now();
    let status = child.wait().unwrap();
    if status.code() == Some(128 + sig as i32) {
        assert!(
            signalled.elapsed() < Duration::from_secs(5),
            "exit after a signal is prompt"
        );
    }
    status
}

/// A `ready` for signal_when: true once `after` has passed.
fn after(d: Duration) -> impl Fn() -> bool {
    let at = Instant::now() + d;
    move || Instant::now() >= at
}

#[test]
fn interrupted_write_tests_leave_nothing_behind() {
    let f = Fixture::many_mounts("signals", "mnt", "m", 400);
    let report = f.dir.join("report.json");
    let (mut interrupted, mut reports) = (0, 0);
    for round in 0..40u64 {
        let sig = round_signal(round);
        // Spread the signal over the run: early, mid-walk, mid-write.
        let status = signal_when(
            dispositions(&mut Command::new(BIN), None)
                .arg("--root")
                .arg(&f.dir)
                .args(["--write-test", "--format", "json", "-o"])
                .arg(&report),
            sig,
            after(Duration::from_micros(500 + round * 250)),
        );
        if status.code() == Some(128 + sig as i32) {
            interrupted += 1;
        }
        let left = leftovers(&f.dir);
        assert!(
            left.is_empty(),
            "round {round} ({sig:?}, exit {status:?}) left {left:?}"
        );
        // The report is whole or absent, never cut short.
        if let Ok(bytes) = fs::read(&report) {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&bytes).is_ok(),
                "round {round} ({sig:?}, exit {status:?}) left a partial report"
            );
            reports += 1;
            fs::remove_file(&report).unwrap();
        }
    }
    eprintln!("interrupted {interrupted} of 40, {reports} whole reports");
    assert!(
        interrupted > 0,
        "no round was interrupted mid-run: the test proved nothing"
    );
}

/// Canary files under `dir`, with whether each is a whole, signed canary.
fn canaries(dir: &Path) -> Vec<(String, bool)> {
    named(dir, ".selfprobe-canary-")
        .into_iter()
        .map(|p| {
            let whole = fs::read(&p)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v["signature"].is_object() || v["signature"].is_string());
            (p.display().to_string(), whole)
        })
        .collect()
}

#[test]
fn interrupted_canary_plants_leave_only_whole_canaries() {
    let f = Fixture::many_mounts("plant-sig", "data", "v", 400);
    let (mut interrupted, mut whole_seen) = (0, 0);
    for round in 0..30u64 {
        let sig = round_signal(round);
        // Spread the signal over the plant by when it lands, not by a clock
        // (the writers' speed varies with the machine and its load): once the
        // canary in /data/v{k} is down, for k from 0 to 390.
        let marker = f.dir.join(format!("data/v{}", round * 13 + round / 3));
        let status = signal_when(
            dispositions(&mut Command::new(BIN), None)
                .args(["canary", "plant", "--root"])
                .arg(&f.dir)
                .args(["--workspace", "/workspace"]),
            sig,
            || !named(&marker, ".selfprobe-canary-").is_empty(),
        );
        if status.code() == Some(128 + sig as i32) {
            interrupted += 1;
        }
        let found = canaries(&f.dir);
        let partial: Vec<&String> = found.iter().filter(|c| !c.1).map(|c| &c.0).collect();
        assert!(
            partial.is_empty(),
            "round {round} ({sig:?}, exit {status:?}) left unfinished canaries {partial:?}"
        );
        whole_seen += found.len();
        // Finished canaries are meant to stay; clear them for the next round.
        for (p, _) in found {
            fs::remove_file(p).unwrap();
        }
    }
    eprintln!("canary plant: interrupted {interrupted} of 30, {whole_seen} whole canaries kept");
    assert!(
        interrupted > 0 && whole_seen > 0,
        "no round was interrupted after finishing some canaries: the test proved nothing"
    );
}

/// Runs `canary plant` over the writable mounts of `f` with `ignored` set to SIG_IGN
/// by the parent (as `nohup` does for SIGHUP, and a shell for a background
/// job's SIGINT), sends it `sent` after the first canary, and returns how it exited and how
/// many whole canaries it left.
fn plant_with_ignored(f: &Fixture, ignored: Option<Signal>, sent: Signal) -> (Option<i32>, usize) {
    // Signal once the first canary is down: the handler is in place by then
    // and most are still to come, however fast the machine.
    let first = f.dir.join("data/v0");
    let status = signal_when(
        dispositions(&mut Command::new(BIN), ignored)
            .args(["canary", "plant", "--root"])
            .arg(&f.dir)
            .args(["--workspace", "/workspace"]),
        sent,
        || !named(&first, ".selfprobe-canary-").is_empty(),
    );
    let found = canaries(&f.dir);
    let whole = found.iter().filter(|c| c.1).count();
    assert_eq!(whole, found.len(), "only whole canaries are left");
    for (p, _) in found {
        fs::remove_file(p).unwrap();
    }
    (status.code(), whole)
}

#[test]
fn a_signal_the_caller_ignores_stays_ignored() {
    // Enough locations that the plant is still going when the signal lands,
    // even with four writers on a fast machine.
    let n = 2000;
    let f = Fixture::many_mounts("ignored", "data", "v", n);
    // A signal that must stop the run: on a loaded machine the plant can
    // finish all its canaries before the poller sees the first one, so a
    // run that ended with every canary planted is tried again; a signal
    // that is really ignored never stops any of the tries.
    let stops = |ignored: Option<Signal>, sent: Signal| {
        let mut last = None;
        for _ in 0..5 {
            let (code, whole) = plant_with_ignored(&f, ignored, sent);
            if code == Some(128 + sent as i32) {
                assert!(whole < n, "the run was stopped part-way ({whole} canaries)");
                return;
            }
            assert_eq!(
                (code, whole),
                (Some(0), n),
                "{sent:?}: neither stopped nor finished"
            );
            last = code;
        }
        panic!("{sent:?} never stopped the run (last exit {last:?})");
    };
    // Control: heard, SIGHUP stops the run part-way.
    stops(None, Signal::SIGHUP);
    // Under nohup the same hangup changes nothing: every canary is planted.
    for sig in [Signal::SIGHUP, Signal::SIGINT] {
        let (code, whole) = plant_with_ignored(&f, Some(sig), sig);
        assert_eq!(code, Some(0), "{sig:?} was ignored by the caller");
        assert_eq!(whole, n, "{sig:?}: the run went on to the end");
    }
    // What the caller did not ignore still stops it.
    stops(Some(Signal::SIGHUP), Signal::SIGTERM);
}

/// A run its signal cut short never exits 0, even when the main thread
/// reaches its end (every create refused once the cleanup began) before the
/// signal thread's exit: SELFPROBE_DEBUG_SLOW_SIGNAL_EXIT (debug builds)
/// holds that thread back 1.5 s, which a loaded machine did by itself.
#[test]
fn a_run_cut_short_by_a_signal_never_exits_0() {
    let n = 2000;
    let f = Fixture::many_mounts("cutshort", "data", "v", n);
    let first = f.dir.join("data/v0");
    let status = signal_when(
        Command::new(BIN)
            .env("SELFPROBE_DEBUG_SLOW_SIGNAL_EXIT", "1")
            .args(["canary", "plant", "--root"])
            .arg(&f.dir)
            .args(["--workspace", "/workspace"]),
        Signal::SIGTERM,
        || !named(&first, ".selfprobe-canary-").is_empty(),
    );
    let whole = canaries(&f.dir).iter().filter(|c| c.1).count();
    assert_eq!(
        status.code(),
        Some(128 + Signal::SIGTERM as i32),
        "a run stopped by SIGTERM part-way ({whole} of {n} canaries)"
    );
}
