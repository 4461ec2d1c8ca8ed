//! Hostile trees for the credential search: a workspace of 200,000 files
//! (most under node_modules), a FIFO named id_rsa, symlink loops, a 1 GiB
//! sparse credentials file and an unreadable directory. The run must end
//! inside its budget with a bounded peak RSS; the figures (entries per
//! second, peak RSS) are printed for the record.
//!
//! One test per binary, so nothing else runs beside the measured child.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
/// The secrets probe's own budget is 5 s; the run as a whole gets this.
const WALL: Duration = Duration::from_secs(12);
/// The probe alone measured 12 MiB on both trees (common/maxrss.rs).
const MAX_RSS_KIB: i64 = 48 * 1024;

struct Tree(PathBuf);

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::set_permissions(
            self.0.join("workspace/private"),
            fs::Permissions::from_mode(0o755),
        );
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `files` empty files in a tree `fanout` wide per level.
fn populate(base: &Path, files: usize, fanout: usize) {
    let mut made = 0;
    let mut i = 0;
    while made < files {
        let dir = base.join(format!("d{}/e{}", i / fanout, i % fanout));
        fs::create_dir_all(&dir).unwrap();
        for j in 0..fanout.min(files - made) {
            fs::File::create(dir.join(format!("f{j}.js"))).unwrap();
        }
        made += fanout.min(files - made);
        i += 1;
    }
}

struct Measured {
    json: Value,
    stderr: String,
    wall: Duration,
    max_rss_kib: i64,
}

/// Spawns `cmd`, whose program the test has just copied: while another
/// test thread forks, the child holds the copy's write descriptor until it
/// execs, and exec(2) of the copy then fails with ETXTBSY. That passes.
fn spawn_copied(cmd: &mut Command) -> std::process::Child {
    for _ in 0..100 {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            other => return other.unwrap(),
        }
    }
    panic!("{cmd:?}: the copied binary stayed busy for 2 s");
}

/// Runs selfprobe as `uid` (when we are root) under common/maxrss.rs's
/// helper, which measures the probe alone (wait4 from here would count the
/// test harness's own memory). `bin` and `helper` are copies another uid
/// can execute (the build tree may sit under a private home).
fn measure(bin: &PathBuf, helper: &PathBuf, root: &PathBuf, uid: Option<u32>) -> Measured {
    let mut cmd = Command::new(helper);
    cmd.arg(bin)
        .arg("--root")
        .arg(root)
        .args([
            "--format",
            "json",
            "--workspace",
            "/workspace",
            "--fail-on",
            "none",
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(u) = uid {
        cmd.uid(u).gid(u);
    }
    let started = Instant::now();
    let mut child = spawn_copied(&mut cmd);
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    child.wait().unwrap();
    let wall = started.elapsed();
    let stdout = o.join().unwrap();
    let (maxrss, stderr) = crate::common::maxrss::take(&e.join().unwrap());
    crate::common::dump::report(&stdout);
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}); stderr:\n{stderr}"));
    let max_rss_kib = maxrss.unwrap_or_else(|| panic!("no peak RSS from the helper:\n{stderr}"));
    Measured {
        json,
        stderr,
        wall,
        max_rss_kib,
    }
}

fn report(what: &str, m: &Measured) {
    let s = &m.json["inventory"]["secrets"]["search"];
    let _ = writeln!(
        std::io::stderr(),
        "FIGURES {what}: wall {:?}, peak RSS {} KiB, walk {} entries in {} us = {} entries/s, pruned {}, denied {}, special {}, bytes read {}, roots {}",
        m.wall,
        m.max_rss_kib,
        s["entries"],
        s["walk_us"],
        s["entries_per_s"],
        s["pruned"],
        s["denied"],
        s["special_skipped"],
        s["bytes_read"],
        s["roots"]
    );
}

fn secrets_probe(m: &Measured) -> &Value {
    m.json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "secrets")
        .unwrap()
}

fn has(m: &Measured, code: &str, subject: &str) -> bool {
    m.json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["code"] == code && f["subject"] == subject)
}

#[test]
fn hostile_trees_finish_inside_their_budget() {
    // As root the probe runs as nobody: the tree and a copy of the binary
    // then live where nobody can reach them.
    let place = if nix::unistd::geteuid().is_root() {
        match crate::common::other_user::nobody("hostile_tree") {
            Some(p) => Some(p),
            None => return,
        }
    } else {
        None
    };
    let root = match &place {
        Some(p) => p.subdir("tree"),
        None => {
            let r = PathBuf::from(format!("/tmp/sps-hostile-{}", std::process::id()));
            let _ = fs::remove_dir_all(&r);
            fs::create_dir_all(&r).unwrap();
            r
        }
    };
    let tree = Tree(root.clone());
    let f = |rel: &str, content: &str| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    };
    let mi = fs::read_to_string(format!("{DATA}/plain.mountinfo")).unwrap()
        + "84 80 254:0 /srv/app /workspace rw,relatime - ext4 /dev/vda rw\n\
           85 80 254:0 /home/alice /home/dev rw,relatime - ext4 /dev/vda rw\n";
    f("proc/self/mountinfo", &mi);
    f(
        "proc/self/status",
        &fs::read_to_string(format!("{DATA}/plain.status")).unwrap(),
    );
    f(
        "etc/passwd",
        "root:x:0:0::/root:/bin/sh\ndev:x:1000:1000::/home/dev:/bin/sh\n",
    );

    let built = Instant::now();
    let ws = root.join("workspace");
    populate(&ws.join("node_modules"), 190_000, 100);
    populate(&ws.join("src"), 10_000, 100);
    f("workspace/src/.env", "API_TOKEN=Zq8Zr2mVx9Lk3Wq8\n");
    // A FIFO named id_rsa, at the top of the workspace and in a home.
    fs::create_dir_all(root.join("home/dev/.ssh")).unwrap();
    for p in ["workspace/id_rsa", "home/dev/.ssh/id_rsa"] {
        nix::unistd::mkfifo(&root.join(p), nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    // Symlink loops.
    symlink(".", ws.join("loop")).unwrap();
    symlink("b", ws.join("a")).unwrap();
    symlink("a", ws.join("b")).unwrap();
    symlink("/workspace", ws.join("src/up")).unwrap();
    // A 1 GiB sparse file named credentials where AWS keeps them.
    fs::create_dir_all(root.join("home/dev/.aws")).unwrap();
    let sparse = fs::File::create(root.join("home/dev/.aws/credentials")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    drop(sparse);
    // An unreadable directory holding a key.
    f(
        "workspace/private/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    );
    fs::set_permissions(ws.join("private"), fs::Permissions::from_mode(0o000)).unwrap();
    let _ = writeln!(
        std::io::stderr(),
        "FIGURES tree of 200,000 files built in {:?}",
        built.elapsed()
    );

    let uid = place.as_ref().map(|p| p.uid);
    let bin = root.join("bin/selfprobe");
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::copy(BIN, &bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let helper = root.join("bin/maxrss");
    fs::copy(crate::common::maxrss::helper(), &helper).unwrap();
    fs::set_permissions(&helper, fs::Permissions::from_mode(0o755)).unwrap();
    let m = measure(&bin, &helper, &root, uid);
    report("pruned node_modules", &m);
    assert_eq!(secrets_probe(&m)["status"], "ok", "{}", m.stderr);
    assert!(m.wall < WALL, "took {:?}", m.wall);
    assert!(
        m.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB",
        m.max_rss_kib
    );
    let s = &m.json["inventory"]["secrets"]["search"];
    let ws_root = s["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/workspace")
        .unwrap();
    assert!(ws_root["truncated"].is_null(), "{ws_root}");
    assert!(
        ws_root["entries"].as_u64().unwrap() < 20_000,
        "node_modules must be pruned: {ws_root}"
    );
    assert!(
        s["special_skipped"].as_u64().unwrap() >= 2,
        "the FIFOs: {s}"
    );
    assert!(s["bytes_read"].as_u64().unwrap() < 1 << 20, "{s}");
    assert!(has(&m, "secret.file", "/workspace/src/.env"));
    assert!(!has(&m, "secret.file", "/home/dev/.aws/credentials"));
    assert!(!has(&m, "secret.file", "/workspace/id_rsa"));
    if uid.is_some() {
        assert!(s["denied"].as_u64().unwrap() >= 1, "{s}");
        assert!(!has(&m, "secret.file", "/workspace/private/id_ed25519"));
    }

    // The same 200,000 files with nothing to prune: the walk's budget is
    // set so that its deadline, not an entry count, ends a real tree, so
    // these are all walked; or, on a machine too loaded for that, the walk
    // says it stopped. Never a silent pass. (The entry budget's own report
    // is a unit test in src/probe/secrets/files.rs.)
    fs::rename(ws.join("node_modules"), ws.join("lib")).unwrap();
    let m = measure(&bin, &helper, &root, uid);
    report("nothing to prune", &m);
    assert_eq!(secrets_probe(&m)["status"], "ok", "{}", m.stderr);
    assert!(m.wall < WALL, "took {:?}", m.wall);
    assert!(
        m.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB",
        m.max_rss_kib
    );
    let s = &m.json["inventory"]["secrets"]["search"];
    let ws_root = s["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/workspace")
        .unwrap();
    let trunc = m.json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "probe.incomplete" && f["subject"] == "secrets:walk:/workspace");
    match ws_root["truncated"].as_str() {
        None => {
            assert!(
                ws_root["entries"].as_u64().unwrap() > 200_000,
                "every file walked: {ws_root}"
            );
            assert!(trunc.is_none(), "{trunc:?}");
        }
        Some(why) => {
            assert!(why.contains("time budget"), "{ws_root}");
            let reported =
                trunc.map(|t| t["evidence"]["reason"].as_str().unwrap_or("").to_string());
            assert!(
                reported.as_deref().is_some_and(|w| w.contains("budget")),
                "a truncated walk is reported: {reported:?}"
            );
        }
    }
    drop(tree);
}
