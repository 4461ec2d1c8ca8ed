//! Real-container tests (DESIGN.md §9): selfprobe runs inside podman containers
//! started with the flags a careless workspace would use, and each case checks
//! both what must be reported and what must not be.
//!
//! Needs podman (rootful), runc, busybox-static and root. Without them a test
//! prints `SKIP: <test>: <reason>` and returns, unless CI=true: a CI machine
//! that lacks them is a failure, not a skip.
//!
//! Every podman call uses CONTAINERS_CONF=tests/containers.conf (runc,
//! cgroupfs, file events, low ulimits: what works on these machines). The
//! image (FROM scratch, Containerfile.test) is built once per test binary.
//!
//! Network rule (DESIGN.md §10): nothing here makes selfprobe send traffic
//! anywhere; the only engine API touched is a podman service on a unix socket
//! of our own.

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

const IMAGE: &str = "localhost/selfprobe-test:latest";
const IN_IMAGE: &str = "/usr/local/bin/selfprobe";
/// One `podman run` takes well under a second here; this only bounds a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------
// Environment: podman, busybox, root; skip or fail.

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn conf() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/containers.conf")
}

fn podman() -> Command {
    let mut c = Command::new("podman");
    c.env("CONTAINERS_CONF", conf());
    c
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Why the container tests cannot run here, if they cannot.
fn missing_prerequisite() -> Option<String> {
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
fn setup(test: &str) -> Option<&'static str> {
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

fn skip_or_fail(test: &str, why: &str) {
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
fn build_image() -> Result<String, String> {
    let ctx = TempPath::dir("build")?;
    let bin = env!("CARGO_BIN_EXE_selfprobe");
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

fn unique(tag: &str) -> String {
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
struct TempPath {
    path: PathBuf,
}

impl TempPath {
    fn dir_in(base: &Path, tag: &str) -> Result<TempPath, String> {
        let path = base.join(unique(tag));
        std::fs::create_dir(&path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        Ok(TempPath { path })
    }

    fn dir(tag: &str) -> Result<TempPath, String> {
        TempPath::dir_in(Path::new("/tmp"), tag)
    }

    /// A path to be created by the caller (a socket).
    fn file(tag: &str, suffix: &str) -> TempPath {
        TempPath {
            path: Path::new("/tmp").join(format!("{}{suffix}", unique(tag))),
        }
    }

    fn arg(&self) -> &str {
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
struct PodmanService {
    child: Child,
    sock: TempPath,
}

impl PodmanService {
    fn start() -> PodmanService {
        let sock = TempPath::file("api", ".sock");
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
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// Running commands and selfprobe in a container.

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` with a deadline; on timeout kills it and, if given, removes the
/// named container it was running.
fn run_bounded(mut cmd: Command, limit: Duration, ctr: Option<&str>) -> Result<Output, String> {
    let shown = format!("{cmd:?}");
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
    Ok(Output {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// One selfprobe run in a container.
struct Run {
    what: String,
    code: i32,
    json: Value,
    stderr: String,
}

/// Runs that must not share the machine take this for writing, all others
/// for reading. Why: podman's GET /version takes ~0.4 s here even when idle
/// (it asks conmon and the runtime for their versions), and selfprobe gives
/// each request at most 1 s; with a dozen containers starting at once on two
/// CPUs that budget ran out (evidence.answer.version null) about one run in six.
static MACHINE: RwLock<()> = RwLock::new(());

/// `podman run --rm <flags> IMG selfprobe --format json <args>`.
fn probe(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    probe_unlocked(img, flags, args)
}

/// `probe`, with no other container starting meanwhile.
fn probe_alone(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    probe_unlocked(img, flags, args)
}

fn probe_unlocked(img: &str, flags: &[&str], args: &[&str]) -> Run {
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
    fn findings(&self) -> &[Value] {
        self.json["findings"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("{}: no findings[] in the report", self.what))
    }

    /// (code, subject) of every finding.
    fn pairs(&self) -> Vec<(String, String)> {
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

    fn find(&self, code: &str, subject: &str) -> Option<&Value> {
        self.findings()
            .iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
    }

    fn listing(&self) -> String {
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

    fn check(&self) -> Check<'_> {
        Check {
            run: self,
            failures: Vec::new(),
        }
    }
}

/// Collects every failed expectation of one run, then reports them together
/// with the whole finding list, so one test run shows all that is wrong.
struct Check<'a> {
    run: &'a Run,
    failures: Vec<String>,
}

impl<'a> Check<'a> {
    fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }

    fn exit(&mut self, want: i32) -> &mut Self {
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
    fn has(&mut self, code: &str, subject: &str) -> Option<&'a Value> {
        let f = self.run.find(code, subject);
        if f.is_none() {
            self.fail(format!("missing {code} subject {subject:?}"));
        }
        f
    }

    fn has_sev(&mut self, code: &str, subject: &str, severity: &str) -> &mut Self {
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

    fn has_code(&mut self, code: &str) -> &mut Self {
        if !self.run.pairs().iter().any(|(c, _)| c == code) {
            self.fail(format!("missing any {code}"));
        }
        self
    }

    /// `evidence` (a JSON pointer below the finding) must equal `want`.
    fn evidence(&mut self, code: &str, subject: &str, pointer: &str, want: Value) -> &mut Self {
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
    fn lacks(&mut self, code: &str, subject: &str) -> &mut Self {
        if self.run.find(code, subject).is_some() {
            self.fail(format!("unexpected {code} subject {subject:?}"));
        }
        self
    }

    /// No finding whose code is `code`, or starts with it when it ends in '.'.
    fn lacks_code(&mut self, code: &str) -> &mut Self {
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
    fn probes_ok(&mut self) -> &mut Self {
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
    fn nothing_high(&mut self) -> &mut Self {
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
    fn done(&mut self) {
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
fn lacks_common(c: &mut Check) {
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
fn tree_hash(root: &Path) -> String {
    fn walk(root: &Path, dir: &Path, acc: &mut BTreeMap<String, Vec<u8>>) {
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

fn mtime_ns(p: &Path) -> (i64, i64) {
    let m = std::fs::metadata(p).expect("stat");
    (m.mtime(), m.mtime_nsec())
}

/// A host dir under /tmp holding a couple of files.
fn data_dir() -> TempPath {
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

fn vol(host: &TempPath, inside: &str) -> String {
    format!("{}:{inside}", host.arg())
}

// ---------------------------------------------------------------------------
// The cases.

#[test]
fn plain_run_defaults() {
    let Some(img) = setup("plain_run_defaults") else {
        return;
    };
    let r = probe(img, &[], &[]);
    let mut c = r.check();
    c.exit(1)
        .has_sev("priv.root-without-userns", "uid 0", "high")
        .has_sev("priv.capability", "CAP_DAC_OVERRIDE", "medium")
        .has_code("mount.workspace-missing")
        .lacks_code("priv.privileged")
        .lacks_code("priv.seccomp-disabled")
        .lacks_code("ns.host-pid")
        .lacks_code("ns.host-network")
        .lacks_code("engine.")
        .lacks_code("mount.host-root")
        .lacks_code("mount.home-directory")
        .lacks_code("mount.unexpected")
        .lacks_code("device.host-block")
        .lacks_code("write.kernel-interface")
        .lacks_code("write.host-path")
        .lacks("priv.capability", "CAP_SYS_ADMIN")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn privileged() {
    let Some(img) = setup("privileged") else {
        return;
    };
    let r = probe(img, &["--privileged"], &[]);
    let mut c = r.check();
    c.exit(1)
        .has_sev("priv.privileged", "container", "critical")
        .has_code("priv.seccomp-disabled")
        .has_code("device.host-block")
        .has("write.kernel-interface", "/proc/sys/kernel/core_pattern");
    c.has_sev("priv.capability", "CAP_SYS_ADMIN", "critical")
        .lacks_code("ns.host-pid")
        .lacks_code("ns.host-network")
        .lacks_code("engine.")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn host_pid() {
    let Some(img) = setup("host_pid") else { return };
    let r = probe(img, &["--pid=host"], &[]);
    let mut c = r.check();
    c.exit(1)
        .evidence(
            "ns.host-pid",
            "pid",
            "/evidence/kthreadd_visible",
            Value::Bool(true),
        )
        .lacks_code("ns.host-network")
        .lacks_code("priv.privileged")
        .lacks_code("priv.seccomp-disabled")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn host_network() {
    let Some(img) = setup("host_network") else {
        return;
    };
    let r = probe(img, &["--network", "host"], &[]);
    let mut c = r.check();
    c.exit(1)
        .has_code("ns.host-network")
        .lacks_code("ns.host-pid")
        .lacks_code("priv.privileged")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn cap_add_sys_admin() {
    let Some(img) = setup("cap_add_sys_admin") else {
        return;
    };
    let r = probe(img, &["--cap-add", "SYS_ADMIN"], &[]);
    let mut c = r.check();
    c.exit(1)
        .has_sev("priv.capability", "CAP_SYS_ADMIN", "critical")
        .lacks_code("priv.privileged")
        .lacks_code("priv.seccomp-disabled")
        .lacks_code("device.host-block")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn host_dir_read_write() {
    let Some(img) = setup("host_dir_read_write") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let data = data_dir();
    let r = probe(
        img,
        &["-v", &vol(&ws, "/workspace"), "-v", &vol(&data, "/data")],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.exit(1)
        .has_sev("mount.unexpected", "/data", "medium")
        .has_sev("write.host-path", "/data", "high")
        .lacks("mount.unexpected", "/workspace")
        .lacks("write.host-path", "/workspace")
        .lacks_code("mount.workspace-missing")
        .lacks_code("mount.home-directory")
        .lacks_code("mount.host-root")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn host_home_directory() {
    let Some(img) = setup("host_home_directory") else {
        return;
    };
    let home = TempPath::dir_in(Path::new("/home"), "home").unwrap();
    std::fs::create_dir(home.path.join(".ssh")).unwrap();
    std::fs::write(home.path.join(".ssh/id_ed25519"), "dummy, not a key\n").unwrap();
    std::fs::write(home.path.join(".bashrc"), "# test\n").unwrap();
    std::fs::write(home.path.join(".profile"), "# test\n").unwrap();
    let r = probe(img, &["-v", &vol(&home, "/home/dev")], &[]);
    let mut c = r.check();
    c.exit(1)
        .has_code("mount.workspace-missing")
        .lacks_code("mount.host-root");
    c.has("mount.home-directory", "/home/dev");
    c.has("mount.ssh-directory", "/home/dev/.ssh");
    c.lacks("mount.home-directory", "/home/dev/.ssh")
        .lacks("mount.ssh-directory", "/home/dev")
        .lacks_code("engine.")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
    drop(home);
}

#[test]
fn engine_socket_answering() {
    let Some(img) = setup("engine_socket_answering") else {
        return;
    };
    let svc = PodmanService::start();
    let r = probe_alone(img, &["-v", &vol(&svc.sock, "/var/run/docker.sock")], &[]);
    drop(svc);
    let mut c = r.check();
    let sock = "/var/run/docker.sock";
    c.exit(1).evidence(
        "engine.socket-reachable",
        sock,
        "/evidence/answer/ping_status",
        200.into(),
    );
    if let Some(f) = r.find("engine.socket-reachable", sock) {
        let v = f
            .pointer("/evidence/answer/version")
            .and_then(Value::as_str)
            .unwrap_or("");
        if v.is_empty() {
            c.fail(format!(
                "engine.socket-reachable: empty evidence.answer.version in {f}"
            ));
        }
    }
    c.has("mount.socket", sock);
    c.lacks("engine.socket-present", sock).probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn engine_socket_dead() {
    let Some(img) = setup("engine_socket_dead") else {
        return;
    };
    let sock = TempPath::file("dead", ".sock");
    // Bound, then closed: the socket file stays and nobody listens on it.
    drop(std::os::unix::net::UnixListener::bind(&sock.path).expect("bind"));
    let r = probe(img, &["-v", &vol(&sock, "/var/run/docker.sock")], &[]);
    let mut c = r.check();
    let p = "/var/run/docker.sock";
    c.exit(1)
        .evidence(
            "engine.socket-present",
            p,
            "/evidence/outcome",
            "refused".into(),
        )
        .lacks("engine.socket-reachable", p)
        .lacks_code("engine.socket-reachable")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

/// The first /sys/block entry that is a real disk (sorted, not loop/ram/zram).
fn host_disk() -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/block")
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !["loop", "ram", "zram"].iter().any(|p| n.starts_with(p)))
        .collect();
    names.sort();
    names.into_iter().next()
}

#[test]
fn host_block_device_read_only() {
    let Some(img) = setup("host_block_device_read_only") else {
        return;
    };
    let Some(disk) = host_disk() else {
        skip_or_fail("host_block_device_read_only", "no disk in /sys/block");
        return;
    };
    // Only podman looks at the device node (to learn its numbers); the test
    // never opens it, and selfprobe checks it with access(2).
    let r = probe(img, &["--device", &format!("/dev/{disk}:/dev/xvda:r")], &[]);
    let mut c = r.check();
    c.exit(1)
        .evidence(
            "device.host-block",
            "/dev/xvda",
            "/evidence/writable",
            false.into(),
        )
        .lacks_code("priv.privileged")
        .probes_ok();
    c.lacks("device.host-block", &format!("/dev/{disk}"));
    lacks_common(&mut c);
    c.done();
}

#[test]
fn clean_workspace() {
    let Some(img) = setup("clean_workspace") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let r = probe(
        img,
        &[
            "--read-only",
            "--cap-drop=all",
            "--user",
            "1000:1000",
            "--network",
            "none",
            "-v",
            &vol(&ws, "/workspace"),
        ],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.exit(0).nothing_high();
    if r.json["summary"]["gating"] != 0 {
        let g = r.json["summary"]["gating"].clone();
        c.fail(format!("summary.gating {g} (want 0)"));
    }
    c.lacks_code("mount.unexpected")
        .lacks_code("mount.workspace-missing")
        .lacks_code("priv.root-without-userns")
        .lacks_code("priv.capability")
        .lacks_code("write.host-path")
        .lacks_code("engine.")
        .lacks_code("write.rootfs")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn unprivileged_users_complete() {
    let Some(img) = setup("unprivileged_users_complete") else {
        return;
    };
    let r = probe(
        img,
        &["--user", "65534:65534", "--cap-drop=all", "--read-only"],
        &[],
    );
    let mut c = r.check();
    c.exit(0)
        .lacks_code("priv.capability")
        .lacks_code("priv.root-without-userns")
        .probes_ok();
    lacks_common(&mut c);
    c.done();

    let r = probe(img, &["--cap-drop=all", "--read-only"], &[]);
    let mut c = r.check();
    if r.code == 3 {
        c.fail("exit 3 (a probe failed)".into());
    }
    c.has_sev("priv.root-without-userns", "uid 0", "high")
        .lacks_code("priv.capability")
        .probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn write_test_leaves_host_dir_unchanged() {
    let Some(img) = setup("write_test_leaves_host_dir_unchanged") else {
        return;
    };
    let data = data_dir();
    let flags = ["-v".to_string(), vol(&data, "/data")];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let host_path_entry = |r: &Run| -> Option<Value> {
        r.json["inventory"]["writable"]["host_paths"]
            .as_array()?
            .iter()
            .find(|p| p["path"] == "/data")
            .cloned()
    };

    // (a) No --write-test: not even the directory's mtime moves.
    let (hash0, mtime0) = (tree_hash(&data.path), mtime_ns(&data.path));
    let r = probe(img, &flags, &[]);
    let mut c = r.check();
    c.has("write.host-path", "/data");
    c.evidence(
        "write.host-path",
        "/data",
        "/evidence/checked_with",
        "access(2)".into(),
    );
    match host_path_entry(&r) {
        Some(e) if e.get("write_test").is_none() => {}
        Some(e) => c.fail(format!(
            "inventory.writable.host_paths /data has write_test without --write-test: {e}"
        )),
        None => c.fail("no inventory.writable.host_paths entry for /data".into()),
    }
    c.done();
    assert_eq!(
        tree_hash(&data.path),
        hash0,
        "the host tree changed without --write-test"
    );
    assert_eq!(
        mtime_ns(&data.path),
        mtime0,
        "the host dir mtime changed without --write-test"
    );

    // (b) --write-test: a file is created and removed; the tree is as before.
    let r = probe(img, &flags, &["--write-test"]);
    let mut c = r.check();
    match host_path_entry(&r) {
        Some(e) if e["write_test"] == "created and removed" => {}
        Some(e) => c.fail(format!("inventory.writable.host_paths /data: write_test is {} (want \"created and removed\"): {e}", e["write_test"])),
        None => c.fail("no inventory.writable.host_paths entry for /data".into()),
    }
    c.evidence(
        "write.host-path",
        "/data",
        "/evidence/write_test",
        "created and removed".into(),
    );
    c.done();
    assert_eq!(
        tree_hash(&data.path),
        hash0,
        "--write-test left something in the host tree"
    );
}

#[test]
fn binary_is_static_pie() {
    let bin = env!("CARGO_BIN_EXE_selfprobe");
    let out = match Command::new("file").arg(bin).output() {
        Ok(o) => o,
        Err(e) => {
            skip_or_fail(
                "binary_is_static_pie",
                &format!("`file` not found ({e}); apt-get install -y file"),
            );
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "file {bin} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("static-pie"), "not static-pie: {text}");
}
