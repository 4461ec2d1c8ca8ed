//! The gate as a real image's ENTRYPOINT (issue 31), in Docker and in
//! rootful podman. Each image is the FROM-scratch busybox tree of
//! tests/it/common/engines.rs with the shipped binary at
//! /usr/local/bin/selfprobe, imported with
//!
//!     ENTRYPOINT ["/usr/local/bin/selfprobe", "--workspace", "/workspace",
//!                 "--format", "json", "-o", "/workspace/selfprobe.json",
//!                 "--attest", "/workspace/selfprobe.intoto.json", "--"]
//!     CMD ["/bin/sh", "-c", STAND_IN, "agent", "wait"]
//!
//! (and a second with `--sign-key-fd N` before the `--`), so `docker run
//! IMG` starts the agent's stand-in through the gate, as the docs tell
//! users to. The stand-in prints what it is (its PID, signal mask and
//! ignored signals, descriptors, environment), traps SIGTERM (writing
//! /workspace/term and exiting 42) and touches /workspace/started.
//!
//! - A clean workspace (read-only root, no capabilities, a non-root user,
//!   `--network none`, the workspace a host directory): the stand-in is
//!   PID 1, `docker stop` / `podman stop` reaches its trap (exit 42), the
//!   report is in the file and not on its stdout, and what it inherited is
//!   what the same stand-in gets without the gate (`--entrypoint /bin/sh`),
//!   less SELFPROBE_SIGNING_KEY, with no byte of the key anywhere.
//! - The key on a descriptor (`docker run -i … < key` with
//!   `--sign-key-fd 0`; podman's `--preserve-fds 1` with `--sign-key-fd
//!   3`): the stand-in's descriptors are the ungated ones', the key's
//!   closed or made /dev/null.
//! - The engine socket bound (a podman API service answering /_ping) or a
//!   host home mounted: exit 1, stderr is the refusal and fits one screen,
//!   and the stand-in never ran (no /workspace/started).
//!
//! Network rule: every container is `--network none`; the only API touched
//! is a podman service on a socket of the test's own.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::engines::{docker, docker_image, image_tar, pack};
use crate::common::keys::{leak_patterns, leaks, openssl_key};
use crate::common::podman::{
    self, missing_prerequisite, podman, run_bounded, skip_or_fail, unique, Output, TempPath, CLEAN,
    MACHINE, RUN_TIMEOUT,
};
use crate::common::shipped;

/// The agent's stand-in: what it inherited on stdout, then (with "wait")
/// a SIGTERM trap and a wait for it.
const STAND_IN: &str = r#"echo "pid $$"
grep -E '^Sig(Blk|Ign)' /proc/$$/status
ls -l /proc/$$/fd
tr '\n\0' '\001\n' < /proc/$$/environ | sed 's/^/env /'
if [ "$1" = wait ]; then
  trap 'echo term > /workspace/term; exit 42' TERM
  touch /workspace/started
  sleep 600 & wait $!
fi"#;

const REPORT: &str = "/workspace/selfprobe.json";
const ATTEST: &str = "/workspace/selfprobe.intoto.json";
const KEY_VAR: &str = "SELFPROBE_SIGNING_KEY";
/// A screen, as src/report/gate.rs fits the refusal to it.
const SCREEN_LINES: usize = 23;
const SCREEN_COLUMNS: usize = 80;

#[derive(Clone, Copy, Debug)]
enum Engine {
    Docker,
    Podman,
}

impl Engine {
    fn cli(self) -> Command {
        match self {
            Engine::Docker => docker(),
            Engine::Podman => {
                let mut c = podman();
                c.stdin(Stdio::null());
                c
            }
        }
    }

    /// The descriptor the key comes in on: Docker passes only stdin into a
    /// container; podman passes more with --preserve-fds.
    fn key_fd(self) -> i32 {
        match self {
            Engine::Docker => 0,
            Engine::Podman => 3,
        }
    }

    fn ready(self, test: &str) -> bool {
        match self {
            Engine::Docker => docker_image(test).is_some(),
            Engine::Podman => match missing_prerequisite() {
                Some(why) => {
                    skip_or_fail(test, &why);
                    false
                }
                None => true,
            },
        }
    }
}

/// An image of the test's own, removed on drop.
struct Image {
    engine: Engine,
    tag: String,
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = self
            .engine
            .cli()
            .args(["rmi", "-f", &self.tag])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A container removed on drop, also when the test panics.
struct Ctr {
    engine: Engine,
    name: String,
}

impl Drop for Ctr {
    fn drop(&mut self) {
        let _ = self
            .engine
            .cli()
            .args(["rm", "-f", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn json_array(v: &[&str]) -> String {
    serde_json::to_string(v).unwrap()
}

/// The gate's image: ENTRYPOINT the gate with `gate_opts`, CMD the
/// stand-in waiting for SIGTERM.
fn gate_image(engine: Engine, gate_opts: &[&str]) -> Image {
    let dir = TempPath::dir("gate-img").unwrap();
    image_tar(&dir.path).unwrap();
    let tree = dir.path.join("tree");
    let bin = tree.join("usr/local/bin/selfprobe");
    fs::copy(shipped::bin(), &bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let tar = dir.path.join("gate.tar");
    pack(&tree, &tar).unwrap();
    let mut entrypoint = vec![
        "/usr/local/bin/selfprobe",
        "--workspace",
        "/workspace",
        "--format",
        "json",
        "-o",
        REPORT,
        "--attest",
        ATTEST,
    ];
    entrypoint.extend_from_slice(gate_opts);
    entrypoint.push("--");
    let tag = format!("localhost/{}:latest", unique("gate"));
    let mut cmd = engine.cli();
    cmd.arg("import")
        .args(["-c", &format!("ENTRYPOINT {}", json_array(&entrypoint))])
        .args([
            "-c",
            &format!(
                "CMD {}",
                json_array(&["/bin/sh", "-c", STAND_IN, "agent", "wait"])
            ),
        ])
        .args(["-c", "WORKDIR /workspace"])
        .arg(&tar)
        .arg(&tag);
    let out = run_bounded(cmd, Duration::from_secs(120), None).unwrap();
    assert_eq!(out.code, Some(0), "{engine:?} import: {}", out.stderr);
    Image { engine, tag }
}

/// A host workspace the container's user (1000) can write.
fn workspace() -> TempPath {
    let ws = TempPath::dir("gate-ws").unwrap();
    nix::unistd::chown(
        &ws.path,
        Some(nix::unistd::Uid::from_raw(1000)),
        Some(nix::unistd::Gid::from_raw(1000)),
    )
    .unwrap();
    ws
}

/// What the stand-in printed.
#[derive(Debug, PartialEq)]
struct Seen {
    pid: String,
    signals: Vec<String>,
    /// `N target`, a pipe's inode dropped (each run has its own).
    fds: Vec<String>,
    env: Vec<String>,
}

fn seen(stdout: &str) -> Seen {
    let mut s = Seen {
        pid: String::new(),
        signals: Vec::new(),
        fds: Vec::new(),
        env: Vec::new(),
    };
    for l in stdout.lines() {
        if let Some(p) = l.strip_prefix("pid ") {
            s.pid = p.to_string();
        } else if l.starts_with("SigBlk:") || l.starts_with("SigIgn:") {
            s.signals.push(l.to_string());
        } else if let Some(e) = l.strip_prefix("env ") {
            s.env.push(e.to_string());
        } else if let Some((left, target)) = l.split_once(" -> ") {
            let fd = left.rsplit(' ').next().unwrap_or_default();
            let target = if target.starts_with("pipe:[") {
                "pipe"
            } else {
                target
            };
            s.fds.push(format!("{fd} {target}"));
        }
    }
    s.fds.sort();
    s.env.sort();
    s
}

/// The flags every run of a case shares: the clean workspace, a fixed
/// hostname (so the environments compare), the key in the environment.
fn flags(ws: &TempPath, key_env: Option<&str>, extra: &[String]) -> Vec<String> {
    let mut f: Vec<String> = CLEAN.iter().map(|s| s.to_string()).collect();
    f.extend([
        "--hostname".into(),
        "gate-test".into(),
        "-v".into(),
        format!("{}:/workspace", ws.arg()),
    ]);
    if let Some(k) = key_env {
        f.extend(["-e".into(), format!("{KEY_VAR}={k}")]);
    }
    f.extend_from_slice(extra);
    f
}

/// The stand-in without the gate, with the same flags: what it inherits
/// from the engine alone.
fn ungated(engine: Engine, img: &Image, flags: &[String], stdin: Option<&Path>) -> Seen {
    let ctr = Ctr {
        engine,
        name: unique("gate-direct"),
    };
    let mut cmd = engine.cli();
    cmd.args(["run", "--rm", "--name", &ctr.name])
        .args(flags)
        .args([
            "--entrypoint",
            "/bin/sh",
            &img.tag,
            "-c",
            STAND_IN,
            "agent",
            "once",
        ]);
    let out = run_with_stdin(cmd, stdin);
    assert_eq!(out.code, Some(0), "{engine:?} ungated: {}", out.stderr);
    seen(&out.stdout)
}

/// `run_bounded`, with stdin from `stdin` when given (`-i … < key`).
fn run_with_stdin(mut cmd: Command, stdin: Option<&Path>) -> Output {
    match stdin {
        None => run_bounded(cmd, RUN_TIMEOUT, None).unwrap(),
        Some(p) => {
            cmd.stdin(fs::File::open(p).unwrap())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let child = cmd.spawn().unwrap();
            let o = child.wait_with_output().unwrap();
            Output {
                code: o.status.code(),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            }
        }
    }
}

/// The gated stand-in, detached: waits until it runs, stops it with the
/// engine (SIGTERM to PID 1), and returns its exit code, its stdout and its
/// stderr.
fn gated_then_stopped(engine: Engine, img: &Image, flags: &[String], ws: &TempPath) -> Output {
    let ctr = Ctr {
        engine,
        name: unique("gate"),
    };
    let mut run = engine.cli();
    run.args(["run", "-d", "--name", &ctr.name])
        .args(flags)
        .arg(&img.tag);
    let out = run_bounded(run, RUN_TIMEOUT, None).unwrap();
    assert_eq!(out.code, Some(0), "{engine:?} run -d: {}", out.stderr);
    let started = ws.path.join("started");
    let t = Instant::now();
    while !started.exists() {
        let mut st = engine.cli();
        st.args(["inspect", "--format", "{{.State.Status}}", &ctr.name]);
        let s = run_bounded(st, RUN_TIMEOUT, None).unwrap();
        if s.stdout.trim() == "exited" || t.elapsed() > Duration::from_secs(60) {
            let mut logs = engine.cli();
            logs.args(["logs", &ctr.name]);
            let l = run_bounded(logs, RUN_TIMEOUT, None).unwrap();
            panic!(
                "{engine:?}: the stand-in never started ({}):\n{}\n{}",
                s.stdout.trim(),
                l.stdout,
                l.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut stop = engine.cli();
    stop.args(["stop", "-t", "20", &ctr.name]);
    let s = run_bounded(stop, RUN_TIMEOUT, None).unwrap();
    assert_eq!(s.code, Some(0), "{engine:?} stop: {}", s.stderr);
    let mut inspect = engine.cli();
    inspect.args(["inspect", "--format", "{{.State.ExitCode}}", &ctr.name]);
    let code = run_bounded(inspect, RUN_TIMEOUT, None).unwrap();
    let mut logs = engine.cli();
    logs.args(["logs", &ctr.name]);
    let l = run_bounded(logs, RUN_TIMEOUT, None).unwrap();
    Output {
        code: code.stdout.trim().parse().ok(),
        stdout: l.stdout,
        stderr: l.stderr,
    }
}

fn report(ws: &TempPath) -> Value {
    serde_json::from_slice(&fs::read(ws.path.join("selfprobe.json")).unwrap()).unwrap()
}

fn clean_case(engine: Engine, test: &str) {
    if !engine.ready(test) {
        return;
    }
    let keydir = TempPath::dir("gate-key").unwrap();
    let Some(key) = openssl_key(test, &keydir.path) else {
        return;
    };
    let pem = fs::read_to_string(&key).unwrap();
    let pats = leak_patterns(&key);
    let img = gate_image(engine, &[]);

    // Gated: PID 1, the engine's SIGTERM reaches the trap, exit 42.
    let ws = workspace();
    let f = flags(&ws, Some(&pem), &[]);
    let out = gated_then_stopped(engine, &img, &f, &ws);
    let gated = seen(&out.stdout);
    assert_eq!(
        out.code,
        Some(42),
        "{engine:?}: the stand-in's own code after SIGTERM\n{}",
        out.stderr
    );
    assert_eq!(
        fs::read_to_string(ws.path.join("term")).unwrap_or_default(),
        "term\n",
        "{engine:?}: the SIGTERM reached the stand-in's trap"
    );
    assert_eq!(
        gated.pid, "1",
        "{engine:?}: the stand-in is PID 1\n{}",
        out.stdout
    );
    let rep = report(&ws);
    assert_eq!(
        rep["summary"]["exit_code"], 0,
        "{engine:?}: {}",
        rep["findings"]
    );
    assert!(ws.path.join("selfprobe.intoto.json").is_file());
    // Nothing of the report on the stand-in's stdout, one line on stderr.
    assert!(!out.stdout.contains("\"findings\""), "{}", out.stdout);
    let err: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(err.len(), 1, "{engine:?}: {}", out.stderr);
    assert!(
        err[0].starts_with("selfprobe: nothing at or above --fail-on high (")
            && err[0].ends_with(&format!(
                "; report: {REPORT}; attestation: {ATTEST}; starting /bin/sh"
            )),
        "{}",
        err[0]
    );

    // The same stand-in without the gate, the same flags.
    let direct = ungated(engine, &img, &f, None);
    assert_eq!(direct.pid, "1");
    assert_eq!(
        gated.signals, direct.signals,
        "{engine:?}: mask and ignored signals"
    );
    assert_eq!(gated.fds, direct.fds, "{engine:?}: descriptors");
    // One variable a line (the stand-in turns a value's newlines into \x01).
    assert!(
        direct
            .env
            .iter()
            .any(|e| e.starts_with(&format!("{KEY_VAR}=-----BEGIN"))),
        "the engine passed the key in: {:?}",
        direct.env
    );
    let want: Vec<String> = direct
        .env
        .iter()
        .filter(|e| !e.starts_with(&format!("{KEY_VAR}=")))
        .cloned()
        .collect();
    assert_eq!(gated.env, want, "{engine:?}: the environment less the key");
    for (what, bytes) in [
        ("stdout", out.stdout.as_bytes()),
        ("stderr", out.stderr.as_bytes()),
    ] {
        assert_eq!(
            leaks(bytes, &pats),
            Vec::<String>::new(),
            "{engine:?} {what}"
        );
    }
    let rep_bytes = fs::read(ws.path.join("selfprobe.json")).unwrap();
    assert_eq!(leaks(&rep_bytes, &pats), Vec::<String>::new());
}

#[test]
fn gate_entrypoint_docker_clean_runs_as_pid_1_and_takes_sigterm() {
    clean_case(
        Engine::Docker,
        "gate_entrypoint_docker_clean_runs_as_pid_1_and_takes_sigterm",
    );
}

#[test]
fn gate_entrypoint_podman_clean_runs_as_pid_1_and_takes_sigterm() {
    clean_case(
        Engine::Podman,
        "gate_entrypoint_podman_clean_runs_as_pid_1_and_takes_sigterm",
    );
}

/// The key on a descriptor: Docker's stdin (`-i … < key`), podman's fd 3
/// (`--preserve-fds 1`). The stand-in's descriptors are the ungated ones',
/// less the key's (fd 3 closed; fd 0 made /dev/null).
fn key_fd_case(engine: Engine, test: &str) {
    if !engine.ready(test) {
        return;
    }
    let keydir = TempPath::dir("gate-key").unwrap();
    let Some(key) = openssl_key(test, &keydir.path) else {
        return;
    };
    let pats = leak_patterns(&key);
    let n = engine.key_fd();
    let img = gate_image(engine, &["--sign-key-fd", &n.to_string()]);
    let ws = workspace();
    let (extra, stdin): (Vec<String>, Option<&Path>) = match engine {
        Engine::Docker => (vec!["-i".into()], Some(&key)),
        Engine::Podman => (vec!["--preserve-fds".into(), "1".into()], None),
    };
    let f = flags(&ws, None, &extra);
    let run = |entry: &[&str], args: &[&str], name: &str| -> Output {
        let ctr = Ctr {
            engine,
            name: unique(name),
        };
        let mut cmd = engine.cli();
        cmd.args(["run", "--rm", "--name", &ctr.name])
            .args(&f)
            .args(entry)
            .arg(&img.tag)
            .args(args);
        if engine.key_fd() == 3 {
            with_fd_3(&mut cmd, &key);
        }
        run_with_stdin(cmd, stdin)
    };
    let gated = run(
        &[],
        &["/bin/sh", "-c", STAND_IN, "agent", "once"],
        "gate-fd",
    );
    assert_eq!(gated.code, Some(0), "{engine:?} gated: {}", gated.stderr);
    let direct = run(
        &["--entrypoint", "/bin/sh"],
        &["-c", STAND_IN, "agent", "once"],
        "gate-fd-direct",
    );
    assert_eq!(
        direct.code,
        Some(0),
        "{engine:?} ungated: {}",
        direct.stderr
    );
    let (g, d) = (seen(&gated.stdout), seen(&direct.stdout));
    assert_eq!(g.pid, "1");
    let want: Vec<String> = d
        .fds
        .iter()
        .filter(|l| !(n > 2 && l.starts_with(&format!("{n} "))))
        .map(|l| {
            if n == 0 && l.starts_with("0 ") {
                "0 /dev/null".to_string()
            } else {
                l.clone()
            }
        })
        .collect();
    assert!(
        d.fds.iter().any(|l| l.starts_with(&format!("{n} "))),
        "{engine:?}: the key's descriptor reaches the container: {:?}",
        d.fds
    );
    assert_ne!(
        want, d.fds,
        "{engine:?}: the key's descriptor is not /dev/null already"
    );
    let mut want = want;
    want.sort();
    assert_eq!(g.fds, want, "{engine:?}: the descriptors, less the key's");
    let env = fs::read(ws.path.join("selfprobe.intoto.json")).unwrap();
    let v: Value = serde_json::from_slice(&env).unwrap();
    assert!(v["signatures"][0]["keyid"].is_string(), "{v}");
    for (what, bytes) in [
        ("stdout", gated.stdout.as_bytes()),
        ("stderr", gated.stderr.as_bytes()),
        ("attestation", env.as_slice()),
    ] {
        assert_eq!(
            leaks(bytes, &pats),
            Vec::<String>::new(),
            "{engine:?} {what}"
        );
    }
}

/// fd 3 of the engine's CLI is the key file (for podman's --preserve-fds).
fn with_fd_3(cmd: &mut Command, key: &Path) {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let f = fs::File::open(key).unwrap();
    let high = nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(100)).unwrap();
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that is ours.
    let high = unsafe { OwnedFd::from_raw_fd(high) };
    let raw = high.as_raw_fd();
    // SAFETY: dup2 is async-signal-safe, the only call between fork and
    // exec; `high` outlives the spawn (moved into the closure).
    unsafe {
        cmd.pre_exec(move || {
            let _keep = &high;
            if nix::libc::dup2(raw, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn gate_entrypoint_docker_key_on_stdin_leaves_dev_null() {
    key_fd_case(
        Engine::Docker,
        "gate_entrypoint_docker_key_on_stdin_leaves_dev_null",
    );
}

#[test]
fn gate_entrypoint_podman_key_on_fd_3_is_closed() {
    key_fd_case(
        Engine::Podman,
        "gate_entrypoint_podman_key_on_fd_3_is_closed",
    );
}

/// A workspace that must not start the agent: exit 1, the refusal alone on
/// stderr and on one screen, naming `code` and `subject`, and the stand-in
/// never ran.
fn refused(
    engine: Engine,
    img: &Image,
    ws: &TempPath,
    extra: &[String],
    code: &str,
    subject: &str,
) {
    let ctr = Ctr {
        engine,
        name: unique("gate-refused"),
    };
    let mut cmd = engine.cli();
    cmd.args(["run", "--rm", "--name", &ctr.name])
        .args(flags(ws, None, extra))
        .arg(&img.tag);
    let out = run_bounded(cmd, RUN_TIMEOUT, None).unwrap();
    assert_eq!(
        out.code,
        Some(1),
        "{engine:?} {code}: {}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        !ws.path.join("started").exists(),
        "{engine:?} {code}: the stand-in ran"
    );
    assert_eq!(
        out.stdout, "",
        "{engine:?} {code}: nothing on the agent's stdout"
    );
    // The ephemeral key's warning (no key is given here), then the refusal.
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines[0].starts_with("selfprobe: signing with an ephemeral key"),
        "{}",
        out.stderr
    );
    let reason = &lines[1..];
    assert!(
        reason.len() <= SCREEN_LINES,
        "{engine:?} {code}: {} lines:\n{}",
        reason.len(),
        out.stderr
    );
    for l in reason {
        assert!(
            l.chars().count() <= SCREEN_COLUMNS,
            "{engine:?}: too wide: {l:?}"
        );
    }
    let rep = report(ws);
    let gating = rep["summary"]["gating"].as_u64().unwrap();
    assert_eq!(rep["summary"]["exit_code"], 1);
    assert_eq!(
        reason[0],
        format!(
            "selfprobe: refused to start /bin/sh: {gating} finding(s) at or above --fail-on high"
        )
    );
    let entry = reason
        .iter()
        .position(|l| l.contains(&format!(" {code} ")) && l.contains(subject))
        .unwrap_or_else(|| panic!("{engine:?}: no entry for {code} {subject}:\n{}", out.stderr));
    assert!(
        reason[entry + 1].starts_with("           fix: "),
        "{}",
        out.stderr
    );
    assert_eq!(
        reason[reason.len() - 2],
        format!("report: {REPORT}; attestation: {ATTEST}")
    );
    assert_eq!(
        reason[reason.len() - 1],
        "the fix in full: selfprobe explain CODE; /bin/sh was not started (exit 1)"
    );
}

fn refused_cases(engine: Engine, test: &str) {
    if !engine.ready(test) {
        return;
    }
    let img = gate_image(engine, &[]);
    // The engine socket bound: a podman API service answering /_ping,
    // reachable by the container's user.
    {
        let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
        let svc = podman::PodmanService::start();
        fs::set_permissions(&svc.sock.path, fs::Permissions::from_mode(0o666)).unwrap();
        let ws = workspace();
        refused(
            engine,
            &img,
            &ws,
            &[
                "-v".into(),
                format!("{}:/var/run/docker.sock", svc.sock.arg()),
            ],
            "engine.socket-reachable",
            "/var/run/docker.sock",
        );
    }
    // A host home mounted.
    let home = TempPath::dir_in(Path::new("/home"), "gate-home").unwrap();
    fs::create_dir(home.path.join(".ssh")).unwrap();
    fs::write(home.path.join(".ssh/id_ed25519"), "dummy, not a key\n").unwrap();
    fs::write(home.path.join(".bashrc"), "# test\n").unwrap();
    let ws = workspace();
    refused(
        engine,
        &img,
        &ws,
        &["-v".into(), format!("{}:/home/dev", home.arg())],
        "mount.home-directory",
        "/home/dev",
    );
}

#[test]
fn gate_entrypoint_docker_refuses_engine_socket_and_host_home() {
    refused_cases(
        Engine::Docker,
        "gate_entrypoint_docker_refuses_engine_socket_and_host_home",
    );
}

#[test]
fn gate_entrypoint_podman_refuses_engine_socket_and_host_home() {
    refused_cases(
        Engine::Podman,
        "gate_entrypoint_podman_refuses_engine_socket_and_host_home",
    );
}
