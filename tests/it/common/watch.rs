//! Helpers for the `selfprobe-host watch` suite (issue 31, tests/it/watch.rs):
//! an engine as the watch sees it (Docker, a private dockerd, rootful or
//! rootless podman), containers started and removed in bursts, the watch
//! started as a process of its own (as the engine's user) whose state file
//! is read back, signalled and killed.
#![allow(dead_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::engines::{docker, Rootless};
use super::podman::{podman, run_bounded};

/// An engine the watch runs against.
pub struct Target<'a> {
    pub what: &'static str,
    pub kind: Kind,
    pub rl: Option<&'a Rootless>,
    /// A private dockerd's `unix://` address.
    pub docker_host: Option<String>,
    pub image: String,
}

impl Target<'static> {
    /// The system's Docker (no private dockerd), with `image`.
    pub fn docker(image: &str) -> Target<'static> {
        Target {
            what: "docker",
            kind: Kind::Docker,
            rl: None,
            docker_host: None,
            image: image.to_string(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Docker,
    Podman,
    Rootless,
}

impl Target<'_> {
    pub fn engine(&self) -> &'static str {
        match self.kind {
            Kind::Docker => "docker",
            _ => "podman",
        }
    }

    /// The engine's CLI, as the test drives it.
    pub fn cli(&self) -> Command {
        match self.kind {
            Kind::Docker => {
                let mut c = docker();
                if let Some(h) = &self.docker_host {
                    c.env("DOCKER_HOST", h);
                }
                c
            }
            Kind::Podman => podman(),
            Kind::Rootless => self.rl.expect("a rootless podman").podman(),
        }
    }

    fn run(&self, args: &[&str], limit: Duration) -> super::podman::Output {
        let mut c = self.cli();
        c.args(args);
        run_bounded(c, limit, None).unwrap_or_else(|e| panic!("{}: {e}", self.what))
    }

    /// `run -d --network none --name NAME FLAGS IMG CMD` for each, four at a
    /// time (a burst, as an agent platform starts workspaces; more only
    /// queue on a machine of two cores); the full ids, in the order given.
    pub fn start_all(&self, ctrs: &[(String, Vec<String>, Vec<String>)]) -> Vec<String> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let ids: Vec<Mutex<String>> = ctrs.iter().map(|_| Mutex::new(String::new())).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((name, flags, cmd)) = ctrs.get(i) else {
                        return;
                    };
                    let mut args: Vec<&str> = vec!["run", "-d", "--network", "none", "--name"];
                    args.push(name);
                    args.extend(flags.iter().map(String::as_str));
                    args.push(&self.image);
                    args.extend(cmd.iter().map(String::as_str));
                    let out = self.run(&args, Duration::from_secs(120));
                    assert_eq!(
                        out.code,
                        Some(0),
                        "{}: run {name}: {}",
                        self.what,
                        out.stderr
                    );
                    *ids[i].lock().unwrap() = out.stdout.trim().to_string();
                });
            }
        });
        ids.into_iter().map(|m| m.into_inner().unwrap()).collect()
    }

    /// `rm -f` of each (with anonymous volumes), in slices of eight.
    pub fn remove_all(&self, names: &[String]) {
        std::thread::scope(|s| {
            for chunk in names.chunks(8) {
                s.spawn(move || {
                    let mut args: Vec<&str> = vec!["rm", "-f", "-v"];
                    if self.kind != Kind::Docker {
                        args.extend(["-t", "0"]);
                    }
                    args.extend(chunk.iter().map(String::as_str));
                    let out = self.run(&args, Duration::from_secs(120));
                    assert_eq!(out.code, Some(0), "{}: rm: {}", self.what, out.stderr);
                });
            }
        });
    }

    /// `diff NAME`'s lines.
    pub fn diff(&self, name: &str) -> Vec<String> {
        let out = self.run(&["diff", name], Duration::from_secs(60));
        out.stdout.lines().map(str::to_string).collect()
    }

    /// `diff` of each, four at a time: (name, lines).
    pub fn diff_all(&self, names: &[String]) -> Vec<(String, Vec<String>)> {
        let out: Mutex<Vec<(String, Vec<String>)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for chunk in names.chunks(names.len().div_ceil(4).max(1)) {
                let out = &out;
                s.spawn(move || {
                    for n in chunk {
                        let d = self.diff(n);
                        out.lock().unwrap().push((n.clone(), d));
                    }
                });
            }
        });
        out.into_inner().unwrap()
    }

    /// (container id, action) of every container event since `t0`.
    pub fn events_since(&self, t0: SystemTime) -> Vec<(String, String)> {
        let secs = t0
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            + 1.0;
        let (since, until) = (format!("{secs:.3}"), format!("{now:.3}"));
        let args: Vec<&str> = match self.kind {
            Kind::Docker => vec![
                "events",
                "--since",
                &since,
                "--until",
                &until,
                "--format",
                "{{json .}}",
            ],
            _ => vec![
                "events",
                "--since",
                &since,
                "--stream=false",
                "--format",
                "json",
            ],
        };
        let out = self.run(&args, Duration::from_secs(60));
        out.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                let id = v
                    .pointer("/Actor/ID")
                    .or_else(|| v.get("ID"))
                    .and_then(Value::as_str)?
                    .to_string();
                let action = v
                    .get("Action")
                    .or_else(|| v.get("Status"))
                    .and_then(Value::as_str)?
                    .to_string();
                Some((id, action))
            })
            .collect()
    }

    /// The watch, started as the engine's user with `args` after
    /// `watch --engine E --out-dir OUT`.
    pub fn watch(&self, bin: &Path, out: &Path, args: &[&str]) -> Watcher {
        let mut all: Vec<String> = vec![
            "watch".into(),
            "--engine".into(),
            self.engine().into(),
            "--out-dir".into(),
            out.display().to_string(),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        let mut c = match self.kind {
            Kind::Docker => {
                let mut c = Command::new(bin);
                if let Some(h) = &self.docker_host {
                    c.env("DOCKER_HOST", h);
                }
                c
            }
            Kind::Podman => {
                let mut c = Command::new(bin);
                c.env("CONTAINERS_CONF", super::podman::conf());
                c
            }
            Kind::Rootless => {
                // As the rootless user, with the environment and the podman
                // (its storage's) that as_user gives; through setpriv, which
                // execs, so the signals the test sends reach the watch itself
                // (runuser would forward a SIGTERM and SIGKILL it 2 s later).
                let rl = self.rl.expect("a rootless podman");
                let base = rl.as_user(bin);
                let args: Vec<String> = base
                    .get_args()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                let at = args.iter().position(|a| a == "--").expect("runuser's --");
                let mut c = Command::new("setpriv");
                c.args([
                    "--reuid",
                    &rl.uid.to_string(),
                    "--regid",
                    &rl.uid.to_string(),
                    "--init-groups",
                    "--",
                ])
                .args(&args[at + 1..])
                .current_dir("/");
                c
            }
        };
        c.args(&all);
        Watcher::spawn(c, out, self.what)
    }
}

/// A watch process: its stderr collected, its state file read back.
pub struct Watcher {
    child: Child,
    pub out: PathBuf,
    log: Arc<Mutex<Vec<u8>>>,
    what: &'static str,
    pub started: Instant,
}

impl Watcher {
    fn spawn(mut c: Command, out: &Path, what: &'static str) -> Watcher {
        let shown = format!("{c:?}");
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{shown}: {e}"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut err = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let w = Watcher {
            child,
            out: out.to_path_buf(),
            log,
            what,
            started: Instant::now(),
        };
        w.wait_log("watching the", Duration::from_secs(60));
        w
    }

    pub fn log(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }

    /// Waits for `needle` in the watch's stderr; panics with it on timeout
    /// or when the watch ends first.
    pub fn wait_log(&self, needle: &str, limit: Duration) {
        let t0 = Instant::now();
        loop {
            if self.log().contains(needle) {
                return;
            }
            assert!(
                t0.elapsed() < limit,
                "{}: no {needle:?} from the watch within {limit:?}:\n{}",
                self.what,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// DIR/watch.json (written whole: a rename, so never half).
    pub fn state(&self) -> Value {
        read_state(&self.out)
    }

    /// Polls the state until `pred` holds; panics with the log and the
    /// state past `limit`.
    pub fn wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let t0 = Instant::now();
        loop {
            let st = self.state();
            if pred(&st) {
                return st;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{}: the watch ended ({status}) before {what}:\n{}",
                    self.what,
                    self.log()
                );
            }
            assert!(
                t0.elapsed() < limit,
                "{}: not {what} within {limit:?}:\nstate: {st:#}\nlog:\n{}",
                self.what,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).unwrap();
    }

    /// Waits for the watch to end: its exit code (128 + N for signal N).
    pub fn wait_exit(&mut self, limit: Duration) -> i32 {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                use std::os::unix::process::ExitStatusExt;
                return st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
            }
            assert!(
                t0.elapsed() < limit,
                "{}: the watch did not end within {limit:?}:\n{}",
                self.what,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn read_state(out: &Path) -> Value {
    let p = out.join("watch.json");
    match std::fs::read(&p) {
        Ok(b) => {
            serde_json::from_slice(&b).unwrap_or_else(|e| panic!("{}: not JSON ({e})", p.display()))
        }
        Err(_) => Value::Null,
    }
}

/// The state's entry of a container, or Null.
pub fn entry<'a>(st: &'a Value, id: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    st.pointer(&format!("/containers/{id}")).unwrap_or(&NULL)
}

/// Whether the watch is done with `id` for now: inspected or missed.
pub fn settled(st: &Value, id: &str) -> bool {
    matches!(
        entry(st, id)["state"].as_str(),
        Some("inspected") | Some("missed")
    )
}

/// Containers removed on drop, whatever the test did.
pub struct Cleanup<'a> {
    pub target: &'a Target<'a>,
    pub names: Mutex<Vec<String>>,
}

impl<'a> Cleanup<'a> {
    pub fn new(target: &'a Target<'a>) -> Cleanup<'a> {
        Cleanup {
            target,
            names: Mutex::new(Vec::new()),
        }
    }

    pub fn add(&self, names: impl IntoIterator<Item = String>) {
        self.names.lock().unwrap().extend(names);
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let names = self.names.lock().unwrap().clone();
        for chunk in names.chunks(16) {
            let mut c = self.target.cli();
            c.args(["rm", "-f", "-v"]);
            if self.target.kind != Kind::Docker {
                // podman 4.3 stops at the first name it does not know
                // (one the test removed already), exit 0, leaving the rest
                // of the slice: every watch test left its 10 unlabelled
                // containers behind, their overlays mounted on the host.
                // -t 0: a sleeper as PID 1 ignores the SIGTERM anyway.
                c.args(["-i", "-t", "0"]);
            }
            c.args(chunk);
            c.stdout(Stdio::null()).stderr(Stdio::null());
            let _ = run_bounded(c, Duration::from_secs(120), None);
        }
    }
}

/// Median and 95th percentile (nearest rank) of `v`, in its unit.
pub fn median_p95(v: &[u64]) -> (u64, u64) {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.is_empty() {
        return (0, 0);
    }
    let at = |q: f64| s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1];
    (at(0.5), at(0.95))
}
