//! The podman harness shared by the real-container suites: the image, the
//! `podman run` wrapper, host fixtures removed on drop, and checks that
//! collect every broken expectation before failing.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

pub const IMAGE: &str = "localhost/selfprobe-test:latest";
pub const IN_IMAGE: &str = "/usr/local/bin/selfprobe";
/// One `podman run` takes well under a second here; this only bounds a hang.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(90);
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------
// Environment: podman, busybox, root; skip or fail.

pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

pub fn conf() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/containers.conf")
}

pub fn podman() -> Command {
    let mut c = Command::new("podman");
    c.env("CONTAINERS_CONF", conf());
    c
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Why the container tests cannot run here, if they cannot.
pub fn missing_prerequisite() -> Option<String> {
    if !is_root() {
        return Some("not root (rootful podman is needed)".into());
    }
    match Command::new("podman")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => return Some(format!("`podman --version` failed ({s})")),
        Err(e) => {
            return Some(format!(
                "podman not found ({e}); apt-get install -y podman runc"
            ))
        }
    }
    if !Path::new("/bin/busybox").is_file() {
        return Some("/bin/busybox missing; apt-get install -y busybox-static".into());
    }
    None
}

/// Gate for one test: Some(image) to go on, None after a visible SKIP.
/// Under CI=true a missing prerequisite panics.
pub fn setup(test: &str) -> Option<&'static str> {
    static PREREQ: OnceLock<Option<String>> = OnceLock::new();
    if let Some(why) = PREREQ.get_or_init(missing_prerequisite) {
        skip_or_fail(test, why);
        return None;
    }
    static BUILT: OnceLock<Result<String, String>> = OnceLock::new();
    match BUILT.get_or_init(build_image) {
        Ok(id) => Some(id.as_str()),
        Err(e) => panic!("{test}: building {IMAGE} failed: {e}"),
    }
}

/// Whether a rootful engine answers `CMD version` (as root), for the suites
/// that take the engine as a parameter; a visible SKIP (a failure under
/// CI=true) naming `name` when it does not.
pub fn rootful_engine_answers(test: &str, name: &str, mut cmd: Command) -> bool {
    if !is_root() {
        skip_or_fail(test, "not root (a rootful engine is needed)");
        return false;
    }
    let ok = cmd
        .arg("version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip_or_fail(
            test,
            &format!("`{name} version` does not answer (run .ci/engines)"),
        );
    }
    ok
}

pub fn skip_or_fail(test: &str, why: &str) {
    if ci() {
        panic!("{test}: cannot run under CI=true: {why}");
    }
    // Straight to fd 2: the test harness captures eprintln!, which would
    // hide the skip of a passing test.
    let _ = writeln!(std::io::stderr(), "SKIP: {test}: {why}");
}

/// Builds the image, tagged IMAGE, and returns its id: runs use the id, so a
/// concurrent build from another checkout that moves the tag cannot swap the
/// binary under this test binary.
pub fn build_image() -> Result<String, String> {
    let ctx = TempPath::dir("build")?;
    let bin = super::shipped::bin_str();
    std::fs::copy(bin, ctx.path.join("selfprobe")).map_err(|e| format!("copy {bin}: {e}"))?;
    std::fs::copy("/bin/busybox", ctx.path.join("busybox"))
        .map_err(|e| format!("copy /bin/busybox: {e}"))?;
    let containerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("Containerfile.test");
    // Outside the context dir, so it is not sent as build context.
    let iid_dir = TempPath::dir("iid")?;
    let iidfile = iid_dir.path.join("iid");
    let mut cmd = podman();
    cmd.arg("build")
        .arg("-q")
        .arg("--iidfile")
        .arg(&iidfile)
        .arg("-f")
        .arg(&containerfile)
        .arg("-t")
        .arg(IMAGE)
        .arg(&ctx.path);
    let out = run_bounded(cmd, BUILD_TIMEOUT, None)?;
    if out.code != Some(0) {
        return Err(format!(
            "podman build exited {:?}\nstdout:\n{}\nstderr:\n{}",
            out.code, out.stdout, out.stderr
        ));
    }
    let id = std::fs::read_to_string(&iidfile)
        .map_err(|e| format!("podman build wrote no --iidfile: {e}"))?;
    let id = id.trim().trim_start_matches("sha256:").to_string();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("podman build: odd image id {id:?}"));
    }
    Ok(id)
}

// ---------------------------------------------------------------------------
// Unique host-side fixtures, removed on drop (also when the test panics).

pub fn unique(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "selfprobe-test-{tag}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A file, socket or directory tree removed when dropped.
pub struct TempPath {
    pub path: PathBuf,
}

impl TempPath {
    pub fn dir_in(base: &Path, tag: &str) -> Result<TempPath, String> {
        let path = base.join(unique(tag));
        std::fs::create_dir(&path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        Ok(TempPath { path })
    }

    pub fn dir(tag: &str) -> Result<TempPath, String> {
        TempPath::dir_in(Path::new("/tmp"), tag)
    }

    /// A path to be created by the caller (a socket).
    pub fn file(tag: &str, suffix: &str) -> TempPath {
        TempPath {
            path: Path::new("/tmp").join(format!("{}{suffix}", unique(tag))),
        }
    }

    pub fn arg(&self) -> &str {
        self.path.to_str().expect("fixture paths are UTF-8")
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.is_dir() => {
                let _ = std::fs::remove_dir_all(&self.path);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&self.path);
            }
            Err(_) => {}
        }
    }
}

/// `podman system service` on a socket of our own; killed on drop.
pub struct PodmanService {
    pub child: Child,
    pub sock: TempPath,
}

impl PodmanService {
    pub fn start() -> PodmanService {
        PodmanService::start_at(TempPath::file("api", ".sock"))
    }

    /// The service on the socket `sock` (removed with it).
    pub fn start_at(sock: TempPath) -> PodmanService {
        let child = podman()
            .args(["system", "service", "--time=0"])
            .arg(format!("unix://{}", sock.arg()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn podman system service");
        let mut svc = PodmanService { child, sock };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::os::unix::net::UnixStream::connect(&svc.sock.path).is_ok() {
                return svc;
            }
            if let Ok(Some(st)) = svc.child.try_wait() {
                panic!("podman system service exited early: {st}");
            }
            if Instant::now() > deadline {
                panic!(
                    "podman system service: no socket at {} after 10 s",
                    svc.sock.arg()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for PodmanService {
    fn drop(&mut self) {
        // SIGTERM lets podman remove its socket; SIGKILL if it lingers.
        stop_child(&mut self.child);
    }
}

/// SIGTERM to a server the test started, by its pid, then SIGKILL if it
/// has not exited within 5 s.
pub fn stop_child(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------------------
// Running commands and selfprobe in a container.

pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` with a deadline; on timeout kills it and, if given, removes the
/// named container it was running.
pub fn run_bounded(mut cmd: Command, limit: Duration, ctr: Option<&str>) -> Result<Output, String> {
    let shown = format!("{cmd:?}");
    let dump = super::dump::is_json_run(&cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn {shown}: {e}"))?;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                if let Some(name) = ctr {
                    let _ = podman()
                        .args(["rm", "-f", "-t", "0", name])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                }
                return Err(format!("{shown}: no exit within {limit:?}"));
            }
            Err(e) => return Err(format!("wait {shown}: {e}")),
        }
    };
    let stdout = out.join().unwrap_or_default();
    if dump {
        super::dump::report(&stdout);
    }
    Ok(Output {
        code: status.code(),
        stdout,
        stderr: err.join().unwrap_or_default(),
    })
}

/// One selfprobe run in a container.
pub struct Run {
    pub what: String,
    pub code: i32,
    pub json: Value,
    pub stderr: String,
}

/// Runs that must not share the machine take this for writing, all others
/// for reading. Why: podman's GET /version takes ~0.4 s here even when idle
/// (it asks conmon and the runtime for their versions). With a 1 s budget and
/// a dozen containers starting at once on two CPUs it ran out about one run
/// in six; selfprobe now allows 3 s, and this lock keeps the test exact.
pub static MACHINE: RwLock<()> = RwLock::new(());

/// `podman run --rm <flags> IMG selfprobe --format json <args>`.
pub fn probe(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    probe_unlocked(img, flags, args)
}

/// `probe`, with no other container starting meanwhile.
pub fn probe_alone(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    probe_unlocked(img, flags, args)
}

pub fn probe_unlocked(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let name = unique("ctr");
    let mut cmd = podman();
    cmd.args(["run", "--rm", "--name", &name])
        .args(flags)
        .arg(img)
        .args([IN_IMAGE, "--format", "json"])
        .args(args);
    let what = format!(
        "podman run {} IMG selfprobe --format json {}",
        flags.join(" "),
        args.join(" ")
    );
    let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
    let code = out
        .code
        .unwrap_or_else(|| panic!("{what}: killed by a signal\nstderr:\n{}", out.stderr));
    let json: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: exit {code}, stdout is not JSON ({e})\nstdout:\n{}\nstderr:\n{}",
            out.stdout, out.stderr
        )
    });
    Run {
        what,
        code,
        json,
        stderr: out.stderr,
    }
}

impl Run {
    pub fn findings(&self) -> &[Value] {
        self.json["findings"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("{}: no findings[] in the report", self.what))
    }

    /// (code, subject) of every finding.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.findings()
            .iter()
            .map(|f| {
                (
                    f["code"].as_str().unwrap_or("").to_string(),
                    f["subject"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    pub fn find(&self, code: &str, subject: &str) -> Option<&Value> {
        self.findings()
            .iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
    }

    pub fn listing(&self) -> String {
        let mut s = String::new();
        for f in self.findings() {
            s.push_str(&format!(
                "  {:<26} {:<8} {}\n",
                f["code"].as_str().unwrap_or("?"),
                f["severity"].as_str().unwrap_or("?"),
                f["subject"].as_str().unwrap_or("?")
            ));
        }
        s
    }

    pub fn check(&self) -> Check<'_> {
        Check {
            run: self,
            failures: Vec::new(),
        }
    }
}

/// Collects every failed expectation of one run, then reports them together
/// with the whole finding list, so one test run shows all that is wrong.
pub struct Check<'a> {
    pub run: &'a Run,
    pub failures: Vec<String>,
}

impl<'a> Check<'a> {
    pub fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }

    pub fn exit(&mut self, want: i32) -> &mut Self {
        if self.run.code != want {
            self.fail(format!("exit code {} (want {want})", self.run.code));
        }
        let reported = &self.run.json["summary"]["exit_code"];
        if reported != want {
            self.fail(format!("summary.exit_code {reported} (want {want})"));
        }
        self
    }

    /// A finding with this code and subject must be there; returns it.
    pub fn has(&mut self, code: &str, subject: &str) -> Option<&'a Value> {
        let f = self.run.find(code, subject);
        if f.is_none() {
            self.fail(format!("missing {code} subject {subject:?}"));
        }
        f
    }

    pub fn has_sev(&mut self, code: &str, subject: &str, severity: &str) -> &mut Self {
        if let Some(f) = self.has(code, subject) {
            if f["severity"] != severity {
                let got = f["severity"].clone();
                self.fail(format!(
                    "{code} {subject:?}: severity {got} (want {severity:?})"
                ));
            }
        }
        self
    }

    pub fn has_code(&mut self, code: &str) -> &mut Self {
        if !self.run.pairs().iter().any(|(c, _)| c == code) {
            self.fail(format!("missing any {code}"));
        }
        self
    }

    /// `evidence` (a JSON pointer below the finding) must equal `want`.
    pub fn evidence(&mut self, code: &str, subject: &str, pointer: &str, want: Value) -> &mut Self {
        if let Some(f) = self.has(code, subject) {
            let got = f.pointer(pointer).cloned().unwrap_or(Value::Null);
            if got != want {
                self.fail(format!(
                    "{code} {subject:?}: {pointer} is {got} (want {want})"
                ));
            }
        }
        self
    }

    /// No finding with this code and subject.
    pub fn lacks(&mut self, code: &str, subject: &str) -> &mut Self {
        if self.run.find(code, subject).is_some() {
            self.fail(format!("unexpected {code} subject {subject:?}"));
        }
        self
    }

    /// No finding whose code is `code`, or starts with it when it ends in '.'.
    pub fn lacks_code(&mut self, code: &str) -> &mut Self {
        let hits: Vec<String> = self
            .run
            .pairs()
            .into_iter()
            .filter(|(c, _)| {
                if code.ends_with('.') {
                    c.starts_with(code)
                } else {
                    c == code
                }
            })
            .map(|(c, s)| format!("{c} {s:?}"))
            .collect();
        if !hits.is_empty() {
            self.fail(format!("unexpected {code}*: {}", hits.join(", ")));
        }
        self
    }

    /// Every probe finished with status "ok".
    pub fn probes_ok(&mut self) -> &mut Self {
        match self.run.json["probes"].as_array() {
            Some(ps) if !ps.is_empty() => {
                for p in ps {
                    if p["status"] != "ok" {
                        self.fail(format!(
                            "probe {} status {} ({})",
                            p["name"], p["status"], p["reason"]
                        ));
                    }
                }
            }
            _ => self.fail("no probes[] in the report".into()),
        }
        self
    }

    /// No finding at high or critical; lists the offenders.
    pub fn nothing_high(&mut self) -> &mut Self {
        let bad: Vec<String> = self
            .run
            .findings()
            .iter()
            .filter(|f| f["severity"] == "high" || f["severity"] == "critical")
            .map(|f| format!("{} {} {}", f["code"], f["severity"], f["subject"]))
            .collect();
        if !bad.is_empty() {
            self.fail(format!("findings at high or above: {}", bad.join("; ")));
        }
        self
    }

    #[track_caller]
    pub fn done(&mut self) {
        if self.failures.is_empty() {
            return;
        }
        panic!(
            "{}\n{} failed expectation(s):\n  - {}\nexit {}; findings:\n{}stderr:\n{}",
            self.run.what,
            self.failures.len(),
            self.failures.join("\n  - "),
            self.run.code,
            self.run.listing(),
            self.run.stderr
        );
    }
}

/// The findings no container in these cases should produce: no probe gave
/// up, nothing looks like the host root, and what podman itself mounts (the
/// engine files, and the /dev/null or tmpfs masks over /proc and /sys paths)
/// is neither "unexpected" nor a writable host path.
pub fn lacks_common(c: &mut Check) {
    c.lacks_code("probe.incomplete")
        .lacks_code("mount.host-root");
    for p in [
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/hostname",
        "/run/.containerenv",
    ] {
        c.lacks("mount.unexpected", p).lacks("write.host-path", p);
    }
    let masked: Vec<String> = c
        .run
        .pairs()
        .into_iter()
        .filter(|(code, _)| code == "mount.unexpected" || code == "write.host-path")
        .filter(|(_, s)| {
            ["/proc/", "/sys/", "/dev/"]
                .iter()
                .any(|p| s.starts_with(p))
        })
        .map(|(code, s)| format!("{code} {s:?}"))
        .collect();
    if !masked.is_empty() {
        c.fail(format!(
            "engine masks reported as host mounts: {}",
            masked.join(", ")
        ));
    }
}

// ---------------------------------------------------------------------------
// Host-side helpers.

/// SHA-256 over a tree: relative names, types, modes and contents, sorted.
pub fn tree_hash(root: &Path) -> String {
    pub fn walk(root: &Path, dir: &Path, acc: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let e = e.expect("dir entry");
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            let m = std::fs::symlink_metadata(&p).expect("lstat");
            let mut rec = format!("{:o}\0", m.mode()).into_bytes();
            if m.is_dir() {
                walk(root, &p, acc);
            } else if m.file_type().is_symlink() {
                rec.extend(
                    std::fs::read_link(&p)
                        .expect("readlink")
                        .as_os_str()
                        .as_encoded_bytes(),
                );
            } else if m.is_file() {
                rec.extend(std::fs::read(&p).expect("read"));
            }
            acc.insert(rel, rec);
        }
    }
    let mut acc = BTreeMap::new();
    walk(root, root, &mut acc);
    let mut h = Sha256::new();
    for (name, rec) in acc {
        h.update(name.as_bytes());
        h.update([0]);
        h.update((rec.len() as u64).to_le_bytes());
        h.update(rec);
    }
    format!("{:x}", h.finalize())
}

pub fn mtime_ns(p: &Path) -> (i64, i64) {
    let m = std::fs::metadata(p).expect("stat");
    (m.mtime(), m.mtime_nsec())
}

/// A host dir under /tmp holding a couple of files.
pub fn data_dir() -> TempPath {
    let d = TempPath::dir("data").expect("data dir");
    std::fs::write(d.path.join("notes.txt"), "not a secret\n").unwrap();
    std::fs::create_dir(d.path.join("sub")).unwrap();
    std::fs::write(d.path.join("sub/run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(
        d.path.join("sub/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    d
}

/// The podman flags of the clean workspace the acceptance tests compare
/// against: read-only root, no capabilities, a non-root user, no network.
pub const CLEAN: &[&str] = &[
    "--read-only",
    "--cap-drop=all",
    "--user",
    "1000:1000",
    "--network",
    "none",
];

pub fn vol(host: &TempPath, inside: &str) -> String {
    format!("{}:{inside}", host.arg())
}

// ---------------------------------------------------------------------------
// The cases.
