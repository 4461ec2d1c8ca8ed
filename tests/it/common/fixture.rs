//! Fixture trees for `--root` tests: a tree that looks like a podman
//! container (captured status and mountinfo under tests/data), and the
//! binary run against it.
#![allow(dead_code)]

use std::fs;

use std::os::unix::fs::symlink;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

pub static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fixture root, removed when the test ends, pass or fail.
pub struct Fixture {
    pub dir: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

pub fn data(name: &str) -> String {
    fs::read_to_string(Path::new(DATA).join(name)).unwrap()
}

/// Private namespace inodes (dynamic numbers, as in a podman container).
pub const PRIVATE_NS: &[(&str, u64)] = &[
    ("ipc", 4026532251),
    ("uts", 4026532250),
    ("user", 4026532300),
    ("pid", 4026532252),
    ("cgroup", 4026532301),
    ("time", 4026532302),
    ("net", 4026532177),
    ("mnt", 4026532249),
];

impl Fixture {
    /// A container tree with `n` writable host mounts at `/{base}/{tag}N`:
    /// enough of them that writing into each takes long enough to be
    /// interrupted, or cut by a deadline.
    pub fn many_mounts(name: &str, base: &str, tag: &str, n: usize) -> Fixture {
        let lines: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{} 80 254:0 /srv/{tag}{i} /{base}/{tag}{i} rw,relatime - ext4 /dev/vda rw",
                    200 + i
                )
            })
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let f = Fixture::container(name, &mountinfo_with(&refs), &data("plain.status"));
        for i in 0..n {
            f.dir(&format!("{base}/{tag}{i}"));
        }
        f
    }

    /// An empty tree.
    pub fn bare(name: &str) -> Fixture {
        Fixture::bare_in(&std::env::temp_dir(), name)
    }

    /// An empty tree under `parent` (an other_user::Place, for a tree
    /// another uid must read).
    pub fn bare_in(parent: &Path, name: &str) -> Fixture {
        let dir = parent.join(format!(
            "selfprobe-fx-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Fixture { dir }
    }

    /// A tree that looks like a plain podman container: the captured
    /// status, private namespaces, lo and eth0, an empty /dev.
    pub fn container(name: &str, mountinfo: &str, status: &str) -> Fixture {
        Fixture::container_in(&std::env::temp_dir(), name, mountinfo, status)
    }

    /// As `container`, under `parent`.
    pub fn container_in(parent: &Path, name: &str, mountinfo: &str, status: &str) -> Fixture {
        let f = Fixture::bare_in(parent, name);
        f.file("proc/self/mountinfo", mountinfo);
        f.file("proc/self/status", status);
        f.file("proc/self/uid_map", "         0          0 4294967295\n");
        f.file("proc/sys/kernel/cap_last_cap", "40\n");
        f.file(
            "proc/net/dev",
            "Inter-|   Receive\n face |bytes\n    lo: 0 0\n  eth0: 398 5\n",
        );
        f.file("proc/1/comm", "selfprobe\n");
        // Under --root the probes see this environment and no other
        // (src/host.rs): a captured container has one.
        f.file("proc/self/environ", BASE_ENVIRON);
        f.ns(PRIVATE_NS);
        f.dir("dev");
        f
    }

    pub fn ns(&self, inodes: &[(&str, u64)]) {
        self.dir("proc/self/ns");
        for (n, ino) in inodes {
            let p = self.dir.join("proc/self/ns").join(n);
            let _ = fs::remove_file(&p);
            symlink(format!("{n}:[{ino}]"), p).unwrap();
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn file(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    pub fn dir(&self, rel: &str) {
        fs::create_dir_all(self.path(rel)).unwrap();
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[])
    }

    /// Runs with `env` added to the tree's /proc/self/environ: under
    /// --root that file is the only environment the probes see, so a
    /// variable set on the command would change nothing.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        if !env.is_empty() {
            set_environ(&self.dir, env);
        }
        let mut cmd = Command::new(BIN);
        cmd.arg("--root").arg(&self.dir).arg("--format").arg("json");
        cmd.args(args);
        Run::from(cmd.output().unwrap())
    }
}

pub struct Run {
    pub code: i32,
    pub json: Value,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from(o: Output) -> Run {
        if super::dump::looks_like_report(&o.stdout) {
            super::dump::report(&o.stdout);
        }
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        Run {
            code: o.status.code().unwrap_or(-1),
            json,
            stdout,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    pub fn findings(&self) -> Vec<&Value> {
        self.json["findings"]
            .as_array()
            .unwrap_or_else(|| {
                panic!(
                    "no findings array; stdout: {} stderr: {}",
                    self.stdout, self.stderr
                )
            })
            .iter()
            .collect()
    }

    pub fn pairs(&self) -> Vec<(String, String)> {
        self.findings()
            .iter()
            .map(|f| {
                (
                    f["code"].as_str().unwrap().to_string(),
                    f["subject"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    pub fn find(&self, code: &str, subject: &str) -> &Value {
        self.findings()
            .into_iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
            .unwrap_or_else(|| panic!("expected {code} on {subject}; got {:#?}", self.pairs()))
    }

    pub fn has(&self, code: &str, subject: &str) -> bool {
        self.pairs().iter().any(|(c, s)| c == code && s == subject)
    }

    pub fn has_code(&self, code: &str) -> bool {
        self.pairs().iter().any(|(c, _)| c == code)
    }

    pub fn assert_absent(&self, codes: &[&str]) {
        for c in codes {
            assert!(
                !self.has_code(c),
                "{c} must not be reported; got {:#?}",
                self.pairs()
            );
        }
    }
}

/// The environment a fixture container starts with.
pub const BASE_ENVIRON: &str =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\0HOME=/root\0";

/// Sets `env` in the tree's /proc/self/environ (NUL-separated, as the
/// kernel writes it), replacing variables of the same name and keeping the
/// others.
pub fn set_environ(root: &Path, env: &[(&str, &str)]) {
    let p = root.join("proc/self/environ");
    let old = fs::read(&p).unwrap_or_default();
    let mut out: Vec<u8> = Vec::new();
    for kv in old.split(|b| *b == 0).filter(|kv| !kv.is_empty()) {
        let name = kv.split(|b| *b == b'=').next().unwrap_or_default();
        if env.iter().any(|(k, _)| k.as_bytes() == name) {
            continue;
        }
        out.extend_from_slice(kv);
        out.push(0);
    }
    for (k, v) in env {
        out.extend_from_slice(format!("{k}={v}").as_bytes());
        out.push(0);
    }
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, out).unwrap();
}

pub fn mountinfo_with(extra: &[&str]) -> String {
    let mut m = data("plain.mountinfo");
    for l in extra {
        m.push_str(l);
        m.push('\n');
    }
    m
}
