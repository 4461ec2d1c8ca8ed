//! The hostile-filesystem suite: one workspace built to mislead, hang or
//! leak, probed twice — as a fixture tree through `--root`, and bind-mounted
//! into a real podman container. It holds a FIFO and a socket with
//! credential names, symlink loops and links that point out of the
//! workspace, a 1 GiB sparse credentials file, an unreadable directory,
//! names with newlines, escape sequences and invalid UTF-8, and an engine
//! socket and an SSH agent socket that accept and never answer.
//!
//! Every run must end inside its deadline, without a panic, with a record
//! for every probe, with exit codes that follow the findings, with text
//! output that carries no control byte of those names, with no byte of a
//! planted secret in any format, and with the tree exactly as it was.
//! (1,000,000 entries have their own suite, tests/hostile_scale.rs.)

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::podman::{self, TempPath};
use crate::common::tree::tree_hash;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

/// The run's own deadline, and how much later than that the process must
/// have exited (report writing, abandoned threads).
const TIMEOUT: &str = "8s";
const GRACE: Duration = Duration::from_secs(13);

/// Planted secret values: none may appear in any output.
const CANARY_ENV: &str = "hZ3kQ9vWm2Lx7Rt5Yp8Nc4Bd";
const CANARY_KEY: &str = "Jf6Gs1Hq0Kw9Ue8Io7Pa5Sd3";
const CANARY_OUTSIDE: &str = "Vb2Nm4Qe6Rt8Yu0Ip1As3Df5";

/// The name of a directory that tries to clear the screen and forge a line.
const EVIL_DIR: &str = "evil\n\x1b[2J\x1b[31mFORGED ok\x1b[0m";
/// The invalid UTF-8 name of a private key file.
const BAD_NAME: &[u8] = b"bad\xff\xfe.pem";

/// Unix sockets that accept every connection and never write a byte. The
/// accepted streams are kept so the peer sees an open, silent connection.
struct Silent;

impl Silent {
    fn serve(paths: &[PathBuf]) -> Silent {
        for p in paths {
            let l = UnixListener::bind(p).unwrap_or_else(|e| panic!("bind {}: {e}", p.display()));
            // Another uid (the probe runs as nobody) must be able to connect.
            fs::set_permissions(p, fs::Permissions::from_mode(0o777)).unwrap();
            std::thread::spawn(move || {
                let mut held: Vec<UnixStream> = Vec::new();
                for s in l.incoming().flatten() {
                    held.push(s);
                }
            });
        }
        Silent
    }
}

/// Builds the hostile workspace at `ws`, with `outside` beside it holding
/// what the workspace's links point at.
fn build(ws: &Path, outside: &Path) -> Silent {
    let f = |rel: &Path, content: &[u8]| {
        let p = ws.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    };
    fs::create_dir_all(ws).unwrap();
    fs::create_dir_all(outside).unwrap();

    // A FIFO named like a key (opening it for reading would block forever).
    nix::unistd::mkfifo(&ws.join("id_rsa"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    fs::create_dir_all(ws.join(".ssh")).unwrap();

    // Symlink loops.
    symlink(".", ws.join("loop")).unwrap();
    symlink("b", ws.join("a")).unwrap();
    symlink("a", ws.join("b")).unwrap();
    // Links out of the workspace: to a key beside it, to the root, and an
    // absolute one that resolves to the image's (or fixture's) own file.
    fs::write(
        outside.join("server.pem"),
        format!("-----BEGIN PRIVATE KEY-----\n{CANARY_OUTSIDE}\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    fs::write(
        outside.join(".env"),
        format!("API_TOKEN={CANARY_OUTSIDE}\n"),
    )
    .unwrap();
    let out_name = outside.file_name().unwrap().to_str().unwrap();
    symlink(format!("../{out_name}/server.pem"), ws.join("server.pem")).unwrap();
    symlink(format!("../{out_name}/.env"), ws.join(".env")).unwrap();
    symlink(format!("../{out_name}"), ws.join("outside-dir")).unwrap();
    symlink("/", ws.join("hostroot")).unwrap();
    symlink("/etc/passwd", ws.join("passwd.key")).unwrap();

    // A 1 GiB sparse file where AWS keeps its keys, and a sparse .pem.
    fs::create_dir_all(ws.join(".aws")).unwrap();
    fs::File::create(ws.join(".aws/credentials"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    fs::File::create(ws.join("huge.pem"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();

    // An unreadable directory holding a key.
    f(
        Path::new("private/id_ed25519"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY_KEY}\n").as_bytes(),
    );
    fs::set_permissions(ws.join("private"), fs::Permissions::from_mode(0o000)).unwrap();

    // Names that try to reach the terminal.
    f(
        &Path::new(EVIL_DIR).join(".env"),
        format!("API_TOKEN={CANARY_ENV}\n").as_bytes(),
    );
    f(
        Path::new(OsStr::from_bytes(BAD_NAME)),
        format!("-----BEGIN RSA PRIVATE KEY-----\n{CANARY_KEY}\n-----END RSA PRIVATE KEY-----\n")
            .as_bytes(),
    );
    f(Path::new("src/main.rs"), b"fn main() {}\n");

    // A socket named like a key, an engine socket and an agent socket: all
    // accept and never answer.
    Silent::serve(&[
        ws.join(".ssh/id_ed25519"),
        ws.join("docker.sock"),
        ws.join("agent.sock"),
    ])
}

struct Out {
    what: String,
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    wall: Duration,
}

/// Runs `cmd` with the suite's hang bound; a run that outlives it is killed
/// and fails the test.
fn run(mut cmd: Command, what: String) -> Out {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (mut so, mut se) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let limit = GRACE + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Out {
        wall: started.elapsed(),
        code: status.code().unwrap_or(-1),
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
        what,
    }
}

/// What every run of the hostile tree must show, in every format.
fn check_all(runs: &[(&str, Out)], container: bool) -> Vec<String> {
    let mut bad = Vec::new();
    for (fmt, o) in runs {
        let w = &o.what;
        if container && o.wall > GRACE + Duration::from_secs(5) {
            // podman's own start and stop sit on top of the probe's time.
            bad.push(format!("{w}: took {:?}", o.wall));
        } else if !container && o.wall > GRACE {
            bad.push(format!("{w}: took {:?}", o.wall));
        }
        if o.stderr.contains("panicked") {
            bad.push(format!("{w}: a panic reached stderr:\n{}", o.stderr));
        }
        for c in [CANARY_ENV, CANARY_KEY, CANARY_OUTSIDE] {
            if memchr::memmem::find(&o.stdout, c.as_bytes()).is_some() || o.stderr.contains(c) {
                bad.push(format!("{w}: a planted secret leaked"));
            }
        }
        if std::str::from_utf8(&o.stdout).is_err() {
            bad.push(format!("{w}: {fmt} output is not valid UTF-8"));
        }
        if *fmt == "text" {
            let t = String::from_utf8_lossy(&o.stdout);
            if o.stdout.contains(&0x1b) {
                bad.push(format!("{w}: an escape byte reached the text report"));
            }
            if t.lines().any(|l| {
                l.starts_with("\x1b[2J") || l.contains("FORGED ok") && !l.contains("\\u{1b}")
            }) {
                bad.push(format!(
                    "{w}: a name forged a line of the text report:\n{t}"
                ));
            }
            if !t.contains("evil\\u{a}\\u{1b}[2J") {
                bad.push(format!(
                    "{w}: the hostile directory's name is not shown escaped:\n{t}"
                ));
            }
        }
    }
    bad
}

/// What the JSON report of the hostile tree must hold.
fn check_json(o: &Out, ws: &str) -> Vec<String> {
    let w = &o.what;
    let mut bad = Vec::new();
    crate::common::dump::report(&o.stdout);
    let j: Value = match serde_json::from_slice(&o.stdout) {
        Ok(j) => j,
        Err(e) => return vec![format!("{w}: not JSON ({e}); stderr:\n{}", o.stderr)],
    };
    let findings = j["findings"].as_array().cloned().unwrap_or_default();
    let has = |code: &str, subject: &str| {
        findings
            .iter()
            .any(|f| f["code"] == code && f["subject"] == subject)
    };
    let listing = findings
        .iter()
        .map(|f| {
            format!(
                "  {} {} {} {}",
                f["code"], f["status"], f["severity"], f["subject"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n");

    // Complete: a record for every probe, none panicked.
    bad.extend(
        crate::common::report::records_complete(&j)
            .into_iter()
            .map(|e| format!("{w}: {e}")),
    );
    // The exit code follows the findings: 1 exactly when a failing finding
    // is at or above the default --fail-on (high).
    let gating = findings
        .iter()
        .any(|f| f["status"] == "fail" && (f["severity"] == "high" || f["severity"] == "critical"));
    if o.code != i32::from(gating) {
        bad.push(format!(
            "{w}: exit {} but gating findings: {gating}\n{listing}",
            o.code
        ));
    }

    let s = &j["inventory"]["secrets"]["search"];
    // The FIFO and the socket named like keys: seen, never opened.
    if s["special_skipped"].as_u64().unwrap_or(0) < 2 {
        bad.push(format!(
            "{w}: the FIFO and socket with key names were not set aside: {s}"
        ));
    }
    for p in ["id_rsa", ".ssh/id_ed25519"] {
        if has("secret.file", &format!("{ws}/{p}")) {
            bad.push(format!(
                "{w}: {p} (not a regular file) was reported as a key"
            ));
        }
    }
    // Links out of the workspace are never followed.
    if s["symlinks_out_of_scope"].as_u64().unwrap_or(0) < 2 {
        bad.push(format!(
            "{w}: links out of the workspace were not counted: {s}"
        ));
    }
    let out_of_scope = [
        "server.pem",
        ".env",
        "passwd.key",
        "outside-dir",
        "hostroot",
        "loop",
        "a",
        "b",
    ];
    for f in &findings {
        let subj = f["subject"].as_str().unwrap_or("");
        let Some(rel) = subj.strip_prefix(&format!("{ws}/")) else {
            continue;
        };
        let first = rel.split('/').next().unwrap_or("");
        if f["code"].as_str().unwrap_or("").starts_with("secret.") && out_of_scope.contains(&first)
        {
            bad.push(format!("{w}: followed a link out of scope: {subj}"));
        }
    }
    // The sparse files: nothing close to 1 GiB was read.
    if s["bytes_read"].as_u64().unwrap_or(u64::MAX) > 1 << 20 {
        bad.push(format!("{w}: read {} bytes", s["bytes_read"]));
    }
    // The unreadable directory is counted, not silently skipped.
    if s["denied"].as_u64().unwrap_or(0) < 1 {
        bad.push(format!(
            "{w}: the unreadable directory was not counted: {s}"
        ));
    }
    // The planted secrets behind hostile names are still found.
    let evil_env = format!("{ws}/{EVIL_DIR}/.env");
    if !has("secret.file", &evil_env) {
        bad.push(format!(
            "{w}: the .env under the hostile name was not found\n{listing}"
        ));
    }
    let bad_pem = format!("{ws}/{}", String::from_utf8_lossy(BAD_NAME));
    if !has("secret.file", &bad_pem) {
        bad.push(format!(
            "{w}: the key with an invalid UTF-8 name was not found as {bad_pem:?}\n{listing}"
        ));
    }
    // The engine socket that never answers: present, its answer unknown.
    let sock = format!("{ws}/docker.sock");
    match findings.iter().find(|f| {
        f["subject"] == sock.as_str() && f["code"].as_str().unwrap_or("").starts_with("engine.")
    }) {
        None => bad.push(format!(
            "{w}: the silent engine socket was not reported\n{listing}"
        )),
        Some(f) if f["code"] == "engine.socket-reachable" => bad.push(format!(
            "{w}: a silent socket was called an answering engine: {f}"
        )),
        Some(_) => {}
    }
    // The agent socket that never answers: could not check, not a pass.
    let agent = format!("{ws}/agent.sock");
    match findings
        .iter()
        .find(|f| f["code"] == "secret.agent-socket" && f["subject"] == agent.as_str())
    {
        Some(f) if f["status"] == "unknown" => {}
        Some(f) => bad.push(format!("{w}: the silent agent socket is not unknown: {f}")),
        None => bad.push(format!(
            "{w}: the silent agent socket was not reported\n{listing}"
        )),
    }
    bad
}

fn finish(bad: Vec<String>) {
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn hostile_tree_as_a_fixture() {
    // The probe runs as nobody where it can, so the unreadable directory is
    // unreadable (as root it would not be): then the tree and a copy of the
    // binary live where nobody can reach them.
    let place = if nix::unistd::geteuid().is_root() {
        match crate::common::other_user::nobody("hostile_tree_as_a_fixture") {
            Some(p) => Some(p),
            None => return,
        }
    } else {
        None
    };
    let parent = place
        .as_ref()
        .map_or_else(std::env::temp_dir, |p| p.dir.clone());
    let fx = crate::common::fixture::Fixture::bare_in(&parent, "hostile");
    let mi = fs::read_to_string(format!("{DATA}/plain.mountinfo")).unwrap()
        + "84 80 254:0 /srv/app /workspace rw,relatime - ext4 /dev/vda rw\n";
    fx.file("proc/self/mountinfo", &mi);
    fx.file(
        "proc/self/status",
        &fs::read_to_string(format!("{DATA}/plain.status")).unwrap(),
    );
    fx.file("proc/self/uid_map", "         0          0 4294967295\n");
    fx.file(
        "etc/passwd",
        "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/sh\n",
    );
    fx.ns(crate::common::fixture::PRIVATE_NS);
    fx.dir("dev");
    let _silent = build(&fx.path("workspace"), &fx.path("outside"));
    fs::set_permissions(&fx.dir, fs::Permissions::from_mode(0o755)).unwrap();

    let before = tree_hash(&fx.dir);
    let mut runs = Vec::new();
    for fmt in ["json", "text", "sarif", "junit"] {
        let mut cmd = match &place {
            Some(p) => p.command(),
            None => Command::new(BIN),
        };
        cmd.arg("--root")
            .arg(&fx.dir)
            .args([
                "--format",
                fmt,
                "--workspace",
                "/workspace",
                "--timeout",
                TIMEOUT,
            ])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("SSH_AUTH_SOCK", "/workspace/agent.sock")
            .env("GITHUB_TOKEN", format!("ghp_{CANARY_ENV}"));
        runs.push((fmt, run(cmd, format!("fixture --format {fmt}"))));
    }
    let mut bad = check_all(&runs, false);
    bad.extend(check_json(&runs[0].1, "/workspace"));
    let after = tree_hash(&fx.dir);
    if before != after {
        bad.push(format!("the tree changed: {before} -> {after}"));
    }
    let _ = fs::set_permissions(
        fx.path("workspace/private"),
        fs::Permissions::from_mode(0o755),
    );
    finish(bad);
}

#[test]
fn hostile_tree_in_a_container() {
    let Some(img) = podman::setup("hostile_tree_in_a_container") else {
        return;
    };
    let base = TempPath::dir("hostile").unwrap();
    fs::set_permissions(&base.path, fs::Permissions::from_mode(0o755)).unwrap();
    let ws = base.path.join("ws");
    let _silent = build(&ws, &base.path.join("outside"));
    let before = tree_hash(&base.path);

    let _shared = podman::MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let mut runs = Vec::new();
    for fmt in ["json", "text", "sarif", "junit"] {
        let name = podman::unique("hostile");
        let mut cmd = podman::podman();
        cmd.args(["run", "--rm", "--name", &name])
            .args([
                "--user",
                "65534:65534",
                "--cap-drop=all",
                "--network",
                "none",
            ])
            .args(["-e", "SSH_AUTH_SOCK=/workspace/agent.sock"])
            .args(["-e", &format!("GITHUB_TOKEN=ghp_{CANARY_ENV}")])
            .arg("-v")
            .arg(format!("{}:/workspace", ws.display()))
            .arg(img)
            .arg(podman::IN_IMAGE)
            .args([
                "--format",
                fmt,
                "--workspace",
                "/workspace",
                "--timeout",
                TIMEOUT,
            ]);
        runs.push((fmt, run(cmd, format!("container --format {fmt}"))));
    }
    let mut bad = check_all(&runs, true);
    bad.extend(check_json(&runs[0].1, "/workspace"));
    let after = tree_hash(&base.path);
    if before != after {
        bad.push(format!("the tree changed: {before} -> {after}"));
    }
    // So the tree can be removed by a non-root owner too.
    let _ = fs::set_permissions(ws.join("private"), fs::Permissions::from_mode(0o755));
    finish(bad);
}
