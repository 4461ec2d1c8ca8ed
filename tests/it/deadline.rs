//! The run's own deadline against a probe that is truly hung: the workspace
//! is a FUSE mount whose server never answers, so every lstat(2), open(2)
//! and getdents(2) on it blocks in the kernel until the process dies. The
//! mount lives in a private mount namespace of the probed process alone
//! (made between fork and exec), and /dev/fuse is held only by that
//! process: when it exits, the connection and the namespace go with it.
//!
//! selfprobe must write its report when --timeout passes, with
//! probe.incomplete for every probe that did not finish, exit 3, and then
//! exit even though threads are still blocked on the mount.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::fixture::{Fixture, BIN, DATA};
use crate::common::podman::{is_root, run_bounded, skip_or_fail, TempPath};
use crate::common::tree::tree_hash;
use nix::fcntl::{open, OFlag};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::stat::Mode;
use serde_json::Value;

/// The fd number the FUSE connection is kept on in the probed process.
const FUSE_FD: i32 = 77;

fn prerequisites() -> Option<String> {
    if !is_root() {
        return Some("needs root (a FUSE mount in a private mount namespace)".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    None
}

/// Runs selfprobe with `args` and a FUSE mount that never answers at
/// `hung`; returns (exit code, wall time, stdout, stderr).
fn over_hung_mount(hung: &Path, args: &[&std::ffi::OsStr]) -> (i32, Duration, String, String) {
    let target = std::ffi::CString::new(hung.to_str().unwrap()).unwrap();
    let opts = format!("fd={FUSE_FD},rootmode=40000,user_id=0,group_id=0");
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    // Between fork and exec only async-signal-safe calls: the strings are
    // made above, and these are plain system calls.
    unsafe {
        cmd.pre_exec(move || {
            unshare(CloneFlags::CLONE_NEWNS)?;
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )?;
            let fd = open("/dev/fuse", OFlag::O_RDWR, Mode::empty())?;
            // The duplicate must stay open across exec: it is the only
            // reference to the connection, and nobody ever reads from it.
            std::mem::forget(nix::unistd::dup2_raw(&fd, FUSE_FD)?);
            drop(fd);
            mount(
                Some("selfprobe-hung"),
                target.as_c_str(),
                Some("fuse"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some(opts.as_str()),
            )?;
            Ok(())
        });
    }
    let started = Instant::now();
    let out = run_bounded(cmd, Duration::from_secs(30), None)
        .unwrap_or_else(|e| panic!("over a hung mount: {e}"));
    (
        out.code.unwrap_or(-1),
        started.elapsed(),
        out.stdout,
        out.stderr,
    )
}

/// Runs selfprobe against `fx` with a FUSE mount that never answers over
/// its workspace; returns (exit code, wall time, stderr).
fn run_over_hung_mount(fx: &Fixture, report: &Path, args: &[&str]) -> (i32, Duration, String) {
    let mut all: Vec<&std::ffi::OsStr> = vec!["--root".as_ref(), fx.dir.as_os_str()];
    for a in ["--format", "json", "--workspace", "/workspace", "-o"] {
        all.push(a.as_ref());
    }
    all.push(report.as_os_str());
    all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    let (code, wall, _, stderr) = over_hung_mount(&fx.path("workspace"), &all);
    (code, wall, stderr)
}

/// One run over the hung mount, with what every case checks first.
struct Hung {
    code: i32,
    wall: Duration,
    stderr: String,
    json: Value,
    text: String,
    /// Problems common to every case: a changed fixture tree.
    bad: Vec<String>,
}

/// Whether the case cannot run here (no root or /dev/fuse): then it says so
/// on stderr past the harness's capture, and fails under CI=true.
fn skipped(test: &str) -> bool {
    match prerequisites() {
        Some(why) => {
            skip_or_fail(test, &why);
            true
        }
        None => false,
    }
}

/// Skips (visibly; fails under CI) without root or /dev/fuse, else runs
/// selfprobe over a fixture whose workspace is a FUSE mount that never
/// answers, with the report written outside the fixture.
fn hung_run(test: &str, args: &[&str]) -> Option<Hung> {
    if skipped(test) {
        return None;
    }
    let mi = fs::read_to_string(format!("{DATA}/plain.mountinfo")).unwrap()
        + "84 80 254:0 /srv/app /workspace rw,relatime - ext4 /dev/vda rw\n";
    let fx = Fixture::container("hung", &mi, &crate::common::fixture::data("plain.status"));
    fx.dir("workspace");
    let out = TempPath::file("deadline", ".json");
    let before = tree_hash(&fx.dir);
    let (code, wall, stderr) = run_over_hung_mount(&fx, &out.path, args);
    let text = fs::read_to_string(&out.path)
        .unwrap_or_else(|e| panic!("no report was written ({e}); stderr:\n{stderr}"));
    crate::common::dump::report(&text);
    let json: Value = serde_json::from_str(&text).expect("the report is JSON");
    let mut bad = Vec::new();
    if tree_hash(&fx.dir) != before {
        bad.push("the fixture tree changed".into());
    }
    Some(Hung {
        code,
        wall,
        stderr,
        json,
        text,
        bad,
    })
}

#[test]
fn global_deadline_over_a_hung_mount() {
    let Some(Hung {
        code,
        wall,
        stderr,
        json: j,
        text,
        mut bad,
    }) = hung_run("global_deadline_over_a_hung_mount", &["--timeout", "3s"])
    else {
        return;
    };
    if code != 3 {
        bad.push(format!(
            "exit {code}, want 3 (the run was cut by --timeout)"
        ));
    }
    // Cut by the deadline, then the report written: the run's own clock
    // (from inside the process, so a slow start on a loaded machine does
    // not count) reads at least the 3 s and less than the probes' own 5 s
    // budgets, which is what would end it had --timeout not. The wall
    // clock only has to show it never hangs.
    let ms = j["run"]["duration_ms"].as_u64().unwrap_or(0);
    let budget = selfprobe::probe::PROBE_BUDGET.as_millis() as u64;
    if !(3_000..budget).contains(&ms) {
        bad.push(format!(
            "the run took {ms} ms with --timeout 3s (probe budget {budget} ms)"
        ));
    }
    if wall > Duration::from_secs(30) {
        bad.push(format!("took {wall:?} with --timeout 3s"));
    }
    if stderr.contains("panicked") {
        bad.push(format!("a panic reached stderr:\n{stderr}"));
    }
    let findings = j["findings"].as_array().cloned().unwrap_or_default();
    let incomplete = |probe: &str| {
        findings
            .iter()
            .any(|f| f["code"] == "probe.incomplete" && f["evidence"]["probe"] == probe)
    };
    let records = j["probes"].as_array().cloned().unwrap_or_default();
    let unfinished: Vec<&str> = j["run"]["unfinished"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for r in &records {
        let name = r["name"].as_str().unwrap_or("?");
        match r["status"].as_str() {
            Some("ok") => {}
            Some("timeout") => {
                if !incomplete(name) {
                    bad.push(format!("{name} timed out with no probe.incomplete"));
                }
                if !unfinished.contains(&name) {
                    bad.push(format!("{name} timed out but is not in run.unfinished"));
                }
            }
            other => bad.push(format!("{name}: status {other:?}: {r}")),
        }
    }
    // The hung mount costs the probes that look inside it, not the mount
    // table or the probes that never touch it.
    for p in ["mounts", "privilege", "namespaces", "devices"] {
        if !records
            .iter()
            .any(|r| r["name"] == p && r["status"] == "ok")
        {
            bad.push(format!("{p} did not finish: {records:?}"));
        }
    }
    if !findings
        .iter()
        .any(|f| f["code"] == "probe.incomplete" && f["subject"] == "mounts:/workspace")
    {
        bad.push("the hung mount itself is not reported as probe.incomplete".into());
    }
    if unfinished.is_empty() {
        bad.push("run.unfinished is empty, yet the workspace never answered".into());
    }
    for p in ["secrets", "artifacts"] {
        if !unfinished.contains(&p) {
            bad.push(format!(
                "{p} walks the hung workspace, yet finished: {records:?}"
            ));
        }
    }
    // The scorecard does not count what was not checked as a pass.
    if j["summary"]["exit_code"] != 3 {
        bad.push(format!("summary.exit_code {}", j["summary"]["exit_code"]));
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("FIGURES hung mount, --timeout 3s: exit {code} after {wall:?}; unfinished {unfinished:?}\n").as_bytes(),
    );
    assert!(bad.is_empty(), "{}\nreport:\n{text}", bad.join("\n"));
}

#[test]
fn probe_budget_over_a_hung_mount_without_a_global_cut() {
    // With the default --timeout (30 s), each probe's own 5 s budget ends
    // the wait: the run finishes, not cut, and says what it could not see.
    let Some(Hung {
        code,
        wall,
        json: j,
        text,
        mut bad,
        ..
    }) = hung_run(
        "probe_budget_over_a_hung_mount_without_a_global_cut",
        &["--fail-on", "critical"],
    )
    else {
        return;
    };
    if wall > Duration::from_secs(9) {
        bad.push(format!("took {wall:?}; probe budgets are 5 s"));
    }
    if j["run"]["unfinished"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        bad.push(format!(
            "cut by a deadline that was not reached: {}",
            j["run"]["unfinished"]
        ));
    }
    let records = j["probes"].as_array().cloned().unwrap_or_default();
    let timed_out: Vec<&str> = records
        .iter()
        .filter(|r| r["status"] == "timeout")
        .filter_map(|r| r["name"].as_str())
        .collect();
    if !timed_out.contains(&"secrets") {
        bad.push(format!(
            "the secrets walk of the hung workspace did not time out: {records:?}"
        ));
    }
    let findings = j["findings"].as_array().cloned().unwrap_or_default();
    for p in &timed_out {
        if !findings
            .iter()
            .any(|f| f["code"] == "probe.incomplete" && f["evidence"]["probe"] == *p)
        {
            bad.push(format!("{p} timed out with no probe.incomplete"));
        }
    }
    // Nothing critical was found and the run was not cut: exit 0 with
    // --fail-on critical; the unknowns are in the report, not hidden.
    if code != 0 {
        bad.push(format!("exit {code}, want 0"));
    }
    assert!(bad.is_empty(), "{}\nreport:\n{text}", bad.join("\n"));
}

#[test]
fn a_hung_home_costs_the_users_step_and_the_readers_say_so() {
    // /home is a FUSE mount that never answers and that the tree's mount
    // table does not list, so the mount inspection cannot see it hang: the
    // users fact (src/facts/users.rs) lists /home and hangs there. It alone
    // waits out its own deadline; the probes that read it go on without
    // homes and say what that left unchecked.
    let test = "a_hung_home_costs_the_users_step_and_the_readers_say_so";
    if skipped(test) {
        return;
    }
    let mi = fs::read_to_string(format!("{DATA}/plain.mountinfo")).unwrap()
        + "84 80 254:0 /srv/app /workspace rw,relatime - ext4 /dev/vda rw\n";
    let fx = Fixture::container(
        "hung-home",
        &mi,
        &crate::common::fixture::data("plain.status"),
    );
    fx.dir("workspace");
    fx.dir("home");
    fx.dir("root");
    fx.file(
        "etc/passwd",
        "root:x:0:0::/root:/bin/sh\ndev:x:1000:1000::/home/dev:/bin/sh\n",
    );
    let out = TempPath::file("deadline", ".json");
    let mut args: Vec<&std::ffi::OsStr> = vec!["--root".as_ref(), fx.dir.as_os_str()];
    for a in [
        "--format",
        "json",
        "--workspace",
        "/workspace",
        "--fail-on",
        "critical",
        "-o",
    ] {
        args.push(a.as_ref());
    }
    args.push(out.path.as_os_str());
    let (code, wall, _, stderr) = over_hung_mount(&fx.path("home"), &args);
    let text = fs::read_to_string(&out.path)
        .unwrap_or_else(|e| panic!("no report was written ({e}); stderr:\n{stderr}"));
    let j: Value = serde_json::from_str(&text).expect("the report is JSON");
    let mut bad = Vec::new();
    let records = j["probes"].as_array().cloned().unwrap_or_default();
    let status = |p: &str| {
        records
            .iter()
            .find(|r| r["name"] == p)
            .map(|r| r["status"].as_str().unwrap_or("?").to_string())
    };
    let findings = j["findings"].as_array().cloned().unwrap_or_default();
    let has = |code: &str, subject: &str| {
        findings
            .iter()
            .any(|f| f["code"] == code && f["subject"] == subject)
    };
    if status("users").as_deref() != Some("timeout") {
        bad.push(format!("users: {:?}, want timeout", status("users")));
    }
    if !has("probe.incomplete", "users") {
        bad.push("no probe.incomplete for the users fact".into());
    }
    // Each reader finished, without homes, and says what it could not check.
    for p in ["rootpaths", "secrets", "caches", "browsers"] {
        if status(p).as_deref() != Some("ok") {
            bad.push(format!("{p}: {:?}, want ok", status(p)));
        }
        let subject = format!("{p}:users");
        match findings
            .iter()
            .find(|f| f["code"] == "probe.incomplete" && f["subject"] == subject)
        {
            None => bad.push(format!("no probe.incomplete {subject}")),
            Some(f) if f["status"] != "unknown" || f["evidence"]["probe"] != p => {
                bad.push(format!("{subject} is not this probe's unknown: {f}"))
            }
            Some(_) => {}
        }
    }
    if status("artifacts").as_deref() != Some("ok") {
        bad.push(format!("artifacts: {:?}, want ok", status("artifacts")));
    }
    if j["inventory"]["secrets"]["search"]["homes"] != serde_json::json!([]) {
        bad.push(format!(
            "homes searched without the users fact: {}",
            j["inventory"]["secrets"]["search"]["homes"]
        ));
    }
    // The users step's 2 s, then the other probes' own budgets: sockets
    // globs /home/*/.docker/run/docker.sock from its catalog and waits out
    // its 5 s; the readers of the users fact do not.
    if wall > Duration::from_millis(9500) {
        bad.push(format!("took {wall:?}"));
    }
    if stderr.contains("panicked") {
        bad.push(format!("a panic reached stderr:\n{stderr}"));
    }
    if code == 101 || code == 3 {
        bad.push(format!("exit {code}"));
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "FIGURES hung /home: exit {code} after {wall:?}; probes not ok: {}\n",
            records
                .iter()
                .filter(|r| r["status"] != "ok")
                .map(|r| format!(
                    "{}={}",
                    r["name"].as_str().unwrap_or("?"),
                    r["status"].as_str().unwrap_or("?")
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
        .as_bytes(),
    );
    assert!(bad.is_empty(), "{}\nreport:\n{text}", bad.join("\n"));
}

/// Canary files under `dir` (any depth), with whether each parses as a
/// whole canary.
fn canaries(dir: &Path) -> Vec<(std::path::PathBuf, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if e
                .file_name()
                .to_string_lossy()
                .starts_with(".selfprobe-canary-")
            {
                let whole = fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .is_some_and(|v| v["selfprobe_canary"] == 1);
                out.push((e.path(), whole));
            }
        }
    }
    out
}

#[test]
fn canary_plant_over_a_hung_mount_is_bounded_and_says_so() {
    let test = "canary_plant_over_a_hung_mount_is_bounded_and_says_so";
    if skipped(test) {
        return;
    }
    // The hung mount at /data as an engine volume (not inspected by the
    // mount probe: the plant itself hangs, and the deadline ends the wait),
    // then as a host directory (inspected: found not to answer, never
    // tried). Beside it, a host directory that answers.
    for (root, why, most) in [
        (
            "/var/lib/containers/storage/volumes/v/_data",
            "deadline",
            4500,
        ),
        ("/srv/data", "did not answer", 3000),
    ] {
        let mi = fs::read_to_string(format!("{DATA}/plain.mountinfo")).unwrap()
            + &format!("84 80 254:0 {root} /data rw,relatime - ext4 /dev/vda rw\n")
            + "85 80 254:0 /srv/cache /cache rw,relatime - ext4 /dev/vda rw\n";
        let fx = Fixture::container(
            "hung-plant",
            &mi,
            &crate::common::fixture::data("plain.status"),
        );
        fx.dir("data");
        fx.dir("cache");
        let out = TempPath::file("deadline-plant", ".json");
        let mut args: Vec<&std::ffi::OsStr> = vec!["canary".as_ref(), "plant".as_ref()];
        args.extend(["--root".as_ref(), fx.dir.as_os_str()]);
        for a in [
            "--workspace",
            "/workspace",
            "--format",
            "json",
            "--timeout",
            "3s",
            "-o",
        ] {
            args.push(a.as_ref());
        }
        args.push(out.path.as_os_str());
        let (code, wall, _, stderr) = over_hung_mount(&fx.path("data"), &args);
        let text = fs::read_to_string(&out.path)
            .unwrap_or_else(|e| panic!("{root}: no plant report ({e}); stderr:\n{stderr}"));
        crate::common::dump::report(&text);
        let j: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(code, 3, "{root}: a location not tried is exit 3\n{text}");
        assert!(
            wall < Duration::from_millis(most),
            "{root}: took {wall:?} with --timeout 3s"
        );
        assert_eq!(j["incomplete"], true, "{text}");
        let skipped = j["skipped"].as_array().unwrap();
        assert!(
            skipped
                .iter()
                .any(|s| s["location"] == "/data" && s["error"].as_str().unwrap().contains(why)),
            "{root}: /data not skipped for {why:?}\n{text}"
        );
        let planted = j["planted"].as_array().unwrap();
        assert!(
            planted
                .iter()
                .any(|p| p["location"] == "/cache" && p["path"].is_string()),
            "{root}: the answering location is still planted in\n{text}"
        );
        let found = canaries(&fx.path("cache"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].1, "the canary is whole");
        eprintln!(
            "FIGURES canary plant over a hung mount ({root}), --timeout 3s: exit {code} after {wall:?}"
        );
    }
}
