//! A private dockerd, for a test that kills the engine and starts it again
//! (the watch's reconnection, tests/it/watch.rs): never the machine's own.
//! Everything of it lives in a temp directory of its own (--data-root,
//! --exec-root, --pidfile, its socket: -H unix://…), it makes no iptables
//! rules (--iptables=false --ip-masq=false) and leaves the default bridge
//! as it is (never `--bridge none`, which deletes the machine's docker0);
//! its containers are started with --network none. Killed, it is reaped
//! here (this process is its parent), so its pidfile can be dropped and a
//! new one started on the same directories. On drop: its containers
//! removed, the daemon stopped, what it mounted under its directory
//! unmounted, the directory removed.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::podman::{run_bounded, skip_or_fail, TempPath};

pub struct Dockerd {
    pub dir: TempPath,
    child: Option<Child>,
}

impl Dockerd {
    /// Starts one, or None after a visible SKIP (a failure under CI=true).
    pub fn start(test: &str) -> Option<Dockerd> {
        if !nix::unistd::geteuid().is_root() {
            skip_or_fail(test, "not root (a dockerd of its own needs root)");
            return None;
        }
        // Docker's own prerequisites (root, its CLI, a dockerd answering
        // whose client this one is), as every Docker test checks them.
        super::engines::docker_image(test)?;
        let on_path = std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("dockerd").is_file()));
        if !on_path {
            skip_or_fail(test, "no dockerd on PATH; apt-get install -y docker.io");
            return None;
        }
        // A short path: the socket's must fit in sun_path.
        let dir = TempPath::dir("dkd").unwrap();
        for d in ["data", "exec"] {
            std::fs::create_dir(dir.path.join(d)).unwrap();
        }
        let mut d = Dockerd { dir, child: None };
        d.up();
        Some(d)
    }

    pub fn host(&self) -> String {
        format!("unix://{}", self.sock().display())
    }

    fn sock(&self) -> PathBuf {
        self.dir.path.join("docker.sock")
    }

    fn pidfile(&self) -> PathBuf {
        self.dir.path.join("docker.pid")
    }

    /// `docker` talking to this daemon.
    pub fn docker(&self) -> Command {
        let mut c = Command::new("docker");
        c.env("DOCKER_HOST", self.host()).stdin(Stdio::null());
        c
    }

    /// Starts the daemon and waits until it answers.
    pub fn up(&mut self) {
        if let Err(e) = self.try_up() {
            panic!("{e}");
        }
    }

    fn try_up(&mut self) -> Result<(), String> {
        let _ = std::fs::remove_file(self.pidfile());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path.join("dockerd.log"))
            .map_err(|e| e.to_string())?;
        let p = |s: &str| self.dir.path.join(s).display().to_string();
        let child = Command::new("dockerd")
            .args(["--data-root", &p("data")])
            .args(["--exec-root", &p("exec")])
            .args(["--pidfile", &p("docker.pid")])
            .args(["-H", &self.host()])
            .args(["--iptables=false", "--ip-masq=false"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("spawn dockerd: {e}"))?;
        self.child = Some(child);
        let t0 = Instant::now();
        loop {
            let mut c = self.docker();
            c.args(["version", "--format", "{{.Server.Version}}"]);
            if run_bounded(c, Duration::from_secs(10), None).is_ok_and(|o| o.code == Some(0)) {
                return Ok(());
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!(
                    "the private dockerd exited ({st}):\n{}",
                    self.log_tail()
                ));
            }
            if t0.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "the private dockerd did not answer within 60 s:\n{}",
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL, as a crash: its containerd goes with it, the containers'
    /// shims stay (and dockerd stops them when it starts again, without
    /// live-restore).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log_tail(&self) -> String {
        let t = std::fs::read_to_string(self.dir.path.join("dockerd.log")).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Imports the image tree of tests/it/common/engines.rs; its id.
    pub fn import_image(&self) -> String {
        let dir = TempPath::dir("dkdimg").unwrap();
        let tar = super::engines::image_tar(&dir.path).unwrap();
        let mut c = self.docker();
        c.arg("import")
            .arg(&tar)
            .arg("localhost/selfprobe-test-dockerd:latest");
        let out = run_bounded(c, Duration::from_secs(120), None).unwrap();
        assert_eq!(out.code, Some(0), "docker import: {}", out.stderr);
        out.stdout.trim().to_string()
    }
}

/// Mount points at or under `dir`, deepest first (/proc/self/mountinfo's
/// fifth field, with its octal escapes).
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let unescape = |s: &str| {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 3 < b.len() {
                if let Ok(n) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                    out.push(n);
                    i += 4;
                    continue;
                }
            }
            out.push(b[i]);
            i += 1;
        }
        PathBuf::from(String::from_utf8_lossy(&out).into_owned())
    };
    let mut v: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape)
        .filter(|p| p.starts_with(dir))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    v
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        // Killed and not started again (the test failed in between): up
        // once more, so it stops the containers its shims still run.
        if self.child.is_none() {
            let _ = self.try_up();
        }
        if self.child.is_some() {
            let mut ps = self.docker();
            ps.args(["ps", "-aq"]);
            if let Ok(o) = run_bounded(ps, Duration::from_secs(30), None) {
                let ids: Vec<&str> = o.stdout.split_whitespace().collect();
                if !ids.is_empty() {
                    let mut rm = self.docker();
                    rm.args(["rm", "-f", "-v"]).args(&ids);
                    let _ = run_bounded(rm, Duration::from_secs(120), None);
                }
            }
        }
        if let Some(mut c) = self.child.take() {
            super::podman::stop_child(&mut c);
        }
        for m in mounts_under(&self.dir.path) {
            let _ = nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH);
        }
        // TempPath's own drop removes the directory.
    }
}
