//! Helpers for the `selfprobe-host inspect` and `teardown` suites (issue 21):
//! containers of every engine removed on drop, the no-shell image, the
//! command run with its peak memory measured, and the checks every
//! inspection must pass (no key bytes anywhere, diffs unchanged).
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::engines::{docker, Rootless};
use super::keys::{leak_patterns, leaks};
use super::podman::{podman, run_bounded, unique, TempPath};

/// Which engine a container lives in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Eng {
    Docker,
    Podman,
    Rootless,
}

/// A running container, removed (with its anonymous volumes) on drop.
pub struct Ctr<'a> {
    pub name: String,
    pub eng: Eng,
    pub rl: Option<&'a Rootless>,
}

fn cli(eng: Eng, rl: Option<&Rootless>) -> Command {
    match eng {
        Eng::Docker => docker(),
        Eng::Podman => podman(),
        Eng::Rootless => rl.expect("a rootless podman").podman(),
    }
}

impl<'a> Ctr<'a> {
    /// `run -d --name NAME FLAGS IMG CMD…`; panics with the engine's words
    /// when it will not start.
    pub fn start(
        eng: Eng,
        rl: Option<&'a Rootless>,
        tag: &str,
        flags: &[&str],
        img: &str,
        cmd: &[&str],
    ) -> Ctr<'a> {
        let name = unique(tag);
        let mut c = cli(eng, rl);
        c.args(["run", "-d", "--name", &name])
            .args(flags)
            .arg(img)
            .args(cmd);
        let ctr = Ctr { name, eng, rl };
        let out = run_bounded(c, Duration::from_secs(90), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.code, Some(0), "{eng:?} run {flags:?}: {}", out.stderr);
        ctr
    }

    pub fn cmd(&self) -> Command {
        cli(self.eng, self.rl)
    }

    /// `diff CTR`, sorted.
    pub fn diff(&self) -> String {
        let mut c = self.cmd();
        c.args(["diff", &self.name]);
        let out = run_bounded(c, Duration::from_secs(60), None).unwrap();
        let mut lines: Vec<&str> = out.stdout.lines().collect();
        lines.sort();
        lines.join("\n")
    }

    /// The names of the key's forms found in the container's whole
    /// filesystem as `export` streams it, read in chunks (with an overlap
    /// of the longest form) so the test process never holds a filesystem:
    /// its memory is in every child it forks (other suites measure theirs).
    pub fn export_leaks(&self, pats: &[(String, Vec<u8>)]) -> Vec<String> {
        let mut c = self.cmd();
        c.args(["export", &self.name])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let keep = pats.iter().map(|(_, p)| p.len()).max().unwrap_or(1) - 1;
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        let mut chunk = vec![0u8; 1 << 16];
        let mut found = Vec::new();
        loop {
            let n = out.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            for name in leaks(&buf, pats) {
                if !found.contains(&name) {
                    found.push(name);
                }
            }
            let cut = buf.len().saturating_sub(keep);
            buf.drain(..cut);
        }
        let _ = child.wait();
        found
    }

    pub fn rm(&self, volumes: bool) {
        let mut c = self.cmd();
        c.args(["rm", "-f"]);
        if volumes {
            c.arg("-v");
        }
        c.arg(&self.name);
        let out = run_bounded(c, Duration::from_secs(60), None).unwrap();
        assert_eq!(out.code, Some(0), "rm {}: {}", self.name, out.stderr);
    }
}

impl Drop for Ctr<'_> {
    fn drop(&mut self) {
        let mut c = self.cmd();
        c.args(["rm", "-f", "-v", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _ = run_bounded(c, Duration::from_secs(60), None);
    }
}

/// A named volume removed on drop.
pub struct Vol {
    pub name: String,
    pub eng: Eng,
}

impl Drop for Vol {
    fn drop(&mut self) {
        let mut c = cli(self.eng, None);
        c.args(["volume", "rm", "-f", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _ = run_bounded(c, Duration::from_secs(60), None);
    }
}

/// A static program that only sleeps: the one file of the no-shell image.
/// Built once with rustc (a tiny program, no cargo), static like selfprobe.
pub fn sleeper() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sleeper");
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("sleeper.rs");
        std::fs::write(
            &src,
            "fn main() { loop { std::thread::sleep(std::time::Duration::from_secs(3600)); } }\n",
        )
        .unwrap();
        super::maxrss::build_static(&src, "sleeper", true)
    })
}

/// A FROM-scratch tree with no shell and no other program: /sleeper, an
/// /etc/passwd and empty /tmp. Packed into DIR/noshell.tar.
pub fn noshell_tar(dir: &Path) -> PathBuf {
    let tree = dir.join("noshell");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    std::fs::create_dir_all(tree.join("tmp")).unwrap();
    std::fs::set_permissions(tree.join("tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::copy(sleeper(), tree.join("sleeper")).unwrap();
    std::fs::write(tree.join("etc/passwd"), "root:x:0:0:root:/:/sleeper\n").unwrap();
    let tar = dir.join("noshell.tar");
    super::engines::pack(&tree, &tar).unwrap();
    std::fs::set_permissions(&tar, std::fs::Permissions::from_mode(0o644)).unwrap();
    tar
}

/// Imports the no-shell tree into `eng`; the image id.
pub fn import_noshell(eng: Eng, rl: Option<&Rootless>, dir: &Path) -> String {
    let tar = noshell_tar(dir);
    let mut c = cli(eng, rl);
    c.arg("import");
    if eng != Eng::Docker {
        c.arg("-q");
    }
    c.arg(&tar);
    if eng == Eng::Docker {
        c.arg(format!("localhost/{}:latest", unique("noshell")));
    }
    let out = run_bounded(c, Duration::from_secs(120), None).unwrap();
    assert_eq!(out.code, Some(0), "import: {}", out.stderr);
    out.stdout.trim().to_string()
}

/// An Ed25519 key made for the test (openssl), in `dir`.
pub fn key(dir: &Path) -> PathBuf {
    let k = dir.join("signing.key");
    let out = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&k)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o644)).unwrap();
    k
}

/// One `selfprobe-host inspect` (or teardown) run: its output, the inspection,
/// its wall time and its peak RSS (the largest of it and the engine CLIs
/// it ran, measured by common/maxrss.rs, so none of the harness's).
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    pub maxrss_kib: i64,
}

/// Run under common/maxrss.rs's helper, which reports the peak RSS.
pub fn run_measured(cmd: Command, limit: Duration) -> Ran {
    let shown = format!("{cmd:?}");
    let mut cmd = super::maxrss::wrap(&cmd);
    cmd.process_group(0);
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > limit {
            // The helper and the command it runs, in a group of their own.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            panic!("{shown}: no exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall = t0.elapsed();
    // The helper passes the command's exit code on (128 + N for signal N).
    let code = status.code().unwrap_or(-1);
    let (maxrss, stderr) = super::maxrss::take(&err.join().unwrap_or_default());
    Ran {
        code,
        stdout: out.join().unwrap_or_default(),
        maxrss_kib: maxrss
            .unwrap_or_else(|| panic!("{shown}: no peak RSS from the helper:\n{stderr}")),
        stderr,
        wall,
    }
}

/// The container's entry in an inspection.
pub fn entry<'a>(insp: &'a Value, name: &str) -> &'a Value {
    insp["containers"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no container {name} in the inspection"))
}

pub fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// No file of the inspection directory, nor `outputs`, holds the key.
pub fn assert_no_key_in(dir: &Path, key: &Path, outputs: &[(&str, &[u8])]) {
    let pats = leak_patterns(key);
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let found = leaks(&std::fs::read(&p).unwrap(), &pats);
        assert!(
            found.is_empty(),
            "{} holds the key ({found:?})",
            p.display()
        );
    }
    for (what, bytes) in outputs {
        let found = leaks(bytes, &pats);
        assert!(found.is_empty(), "{what} holds the key ({found:?})");
    }
}

/// The verdict of `fact` in a container's comparisons; Null when there is
/// none (a container not probed), so the caller's check fails with the
/// rest of what is wrong.
pub fn verdict<'a>(c: &'a Value, fact: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    c["comparisons"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["fact"] == fact))
        .unwrap_or(&NULL)
}

/// A directory with a few files standing for a developer's checkout.
pub fn workspace() -> TempPath {
    let d = TempPath::dir("ws").unwrap();
    std::fs::write(d.path.join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::create_dir(d.path.join("src")).unwrap();
    std::fs::write(d.path.join("src/lib.rs"), "// lib\n").unwrap();
    d
}

/// Fails with every broken expectation and the command's output.
#[track_caller]
pub fn assert_none(bad: &[String], ran: &Ran) {
    assert!(
        bad.is_empty(),
        "{}\n\nstdout:\n{}\nstderr:\n{}",
        bad.join("\n"),
        ran.stdout,
        ran.stderr
    );
}

/// The key is in no file of the inspection, no output, and no file inside
/// any of the containers (their whole filesystems, exported).
pub fn assert_no_key_anywhere(out: &Path, key: &Path, ran: &Ran, ctrs: &[&Ctr]) {
    assert_no_key_in(
        out,
        key,
        &[
            ("stdout", ran.stdout.as_bytes()),
            ("stderr", ran.stderr.as_bytes()),
        ],
    );
    let pats = leak_patterns(key);
    for c in ctrs {
        let found = c.export_leaks(&pats);
        assert!(
            found.is_empty(),
            "{}'s filesystem holds the key ({found:?})",
            c.name
        );
    }
}
