//! A workspace of 1,000,000 entries, shaped like a monorepo (packages of
//! nested source directories, 100 files each, leaves four levels down, and
//! a node_modules the walks prune), run against twice: as a fixture tree on
//! the host (--root) and bind-mounted into a real podman container.
//!
//! Each run must end (a hang bound only: speed is bench/workspaces.sh's
//! business), without a panic, with a report that parses and has every
//! probe; every walk must either have covered the whole tree (its entry
//! count equals the tree's) or say it did not with probe.incomplete, never
//! a silent pass; what is planted at the far end of the tree must be found
//! when the walk claims completeness; and the tree must be exactly as it
//! was (names, types, modes, sizes, mtimes, ctimes) afterwards.
//!
//! The tree lives under the target directory (on disk, not a tmpfs /tmp);
//! its files are hard links to a few inodes (see build()).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::fixture::{data, PRIVATE_NS};
use crate::common::podman;

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
const ENTRIES: usize = 1_000_000;
/// Only a hang bound: a run takes about a second on an idle machine here.
const HANG: Duration = Duration::from_secs(60);
const LINKS_PER_FILE: usize = 50_000;
const PLANTED_ENV: &str = ".env";
const PLANTED_LOG: &str = "build.log";

struct Root(PathBuf);

impl Drop for Root {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write(p: &Path, body: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, body).unwrap();
}

/// The workspace: `ENTRIES` entries below `ws`, and the directory holding
/// the planted files (the last one created, so a walk in any order that
/// stops early is unlikely to have seen it).
fn build(ws: &Path) -> PathBuf {
    fs::create_dir_all(ws).unwrap();
    write(&ws.join("package.json"), "{\"name\":\"scale\"}\n");
    write(&ws.join("package-lock.json"), "{\"lockfileVersion\":3}\n");
    write(&ws.join("README.md"), "# scale\n");
    // 1 + 10 + 1,000 entries, pruned by every walk.
    let mut plan: Vec<(PathBuf, usize)> = (0..10)
        .map(|i| (ws.join(format!("node_modules/lib{i}")), 100))
        .collect();
    let mut left = ENTRIES - 3 - 1011 - 1 - 2; // packages/, and the two planted
    let mut pkg = 0;
    while left > 0 {
        if left < 4 {
            plan.last_mut().unwrap().1 += left;
            break;
        }
        left -= 2; // packages/pNNNN and its src/
        for m in 0..20 {
            if left < 2 {
                break;
            }
            left -= 1;
            let files = left.min(100);
            left -= files;
            plan.push((ws.join(format!("packages/p{pkg:04}/src/m{m:02}")), files));
        }
        pkg += 1;
    }
    let far = plan.last().unwrap().0.clone();
    // Most files are hard links to a few empty files: the walks read names
    // and types only, and a million new inodes cost minutes of journal
    // writes once this VM's disk is throttled (measured here: 17 s per
    // 100,000 files created, 1.1 s per 100,000 links, and removal alike).
    let half = plan.len() / 2;
    let (a, b) = plan.split_at(half);
    std::thread::scope(|s| {
        for part in [a, b] {
            s.spawn(move || {
                let mut src: Option<PathBuf> = None;
                let mut links_left = 0;
                for (dir, n) in part {
                    fs::create_dir_all(dir).unwrap();
                    for i in 0..*n {
                        let p = dir.join(format!("f{i}.ts"));
                        let linked = links_left > 0
                            && src.as_ref().is_some_and(|s| fs::hard_link(s, &p).is_ok());
                        if linked {
                            links_left -= 1;
                        } else {
                            // ext4 allows 65,000 names per inode; a
                            // filesystem without links gets plain files.
                            fs::File::create(&p).unwrap();
                            src = Some(p);
                            links_left = LINKS_PER_FILE;
                        }
                    }
                }
            });
        }
    });
    write(&far.join(PLANTED_ENV), "API_TOKEN=Zq8Zr2mVx9Lk3Wq8\n");
    write(&far.join(PLANTED_LOG), "build ok\n");
    far
}

/// Hash of a tree: per directory, its entries sorted by name with type,
/// mode, size, mtime and ctime (and a subdirectory's own hash), so the
/// result does not depend on readdir order. Returns (hash, entries).
fn tree_hash(dir: &Path) -> ([u8; 32], usize) {
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let mut h = Sha256::new();
    let mut count = names.len();
    for n in names {
        let p = dir.join(&n);
        let m = fs::symlink_metadata(&p).unwrap();
        h.update(n.as_encoded_bytes());
        h.update([0]);
        for v in [
            m.mode() as i64,
            m.size() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ] {
            h.update(v.to_le_bytes());
        }
        if m.is_dir() {
            let (sub, c) = tree_hash(&p);
            h.update(sub);
            count += c;
        }
    }
    (h.finalize().into(), count)
}

fn count_entries(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            1 + if e.file_type().unwrap().is_dir() {
                count_entries(&e.path())
            } else {
                0
            }
        })
        .sum()
}

/// A fixture root that looks like a podman container (as
/// tests/common/fixture.rs builds one) with the workspace bound from the
/// host's /srv/app.
fn fixture_root(dir: &Path) {
    let mi = data("plain.mountinfo")
        + "84 80 254:0 /srv/app /workspace rw,relatime - ext4 /dev/vda rw\n";
    write(&dir.join("proc/self/mountinfo"), &mi);
    write(&dir.join("proc/self/status"), &data("plain.status"));
    write(
        &dir.join("proc/self/uid_map"),
        "         0          0 4294967295\n",
    );
    write(&dir.join("proc/sys/kernel/cap_last_cap"), "40\n");
    write(
        &dir.join("proc/net/dev"),
        "Inter-|   Receive\n face |bytes\n    lo: 0 0\n  eth0: 398 5\n",
    );
    write(&dir.join("proc/1/comm"), "selfprobe\n");
    fs::create_dir_all(dir.join("proc/self/ns")).unwrap();
    for (n, ino) in PRIVATE_NS {
        std::os::unix::fs::symlink(format!("{n}:[{ino}]"), dir.join("proc/self/ns").join(n))
            .unwrap();
    }
    fs::create_dir_all(dir.join("dev")).unwrap();
    write(
        &dir.join("etc/passwd"),
        "root:x:0:0::/root:/bin/sh\ndev:x:1000:1000::/home/dev:/bin/sh\n",
    );
}

/// Everything a run at this scale must satisfy; all failures together.
fn judge(what: &str, code: Option<i32>, stderr: &str, json: &Value, expect: usize, far: &str) {
    let mut bad: Vec<String> = Vec::new();
    let findings = json["findings"].as_array().cloned().unwrap_or_default();
    let has = |c: &str, s: &str| findings.iter().any(|f| f["code"] == c && f["subject"] == s);
    let incomplete = |s: &str| has("probe.incomplete", s);

    if code != Some(1) {
        bad.push(format!("exit {code:?} (want 1: the planted .env is high)"));
    }
    if json["summary"]["exit_code"] != 1 {
        bad.push(format!(
            "summary.exit_code {}",
            json["summary"]["exit_code"]
        ));
    }
    if stderr.contains("panicked") {
        bad.push("a panic on stderr".into());
    }
    let probes = json["probes"].as_array().cloned().unwrap_or_default();
    for name in crate::common::report::PROBES {
        match probes.iter().find(|p| p["name"] == *name) {
            None => bad.push(format!("no record for probe {name}")),
            Some(p) if p["status"] == "panic" => bad.push(format!("probe {name} panicked: {p}")),
            // A probe that timed out or failed must say so.
            Some(p) if p["status"] != "ok" && !incomplete(name) => {
                bad.push(format!(
                    "probe {name} is {} with no probe.incomplete",
                    p["status"]
                ));
            }
            Some(_) => {}
        }
    }
    let inv = &json["inventory"];

    // Secrets: the workspace root's walk covered every entry, or says not.
    let roots = inv["secrets"]["search"]["roots"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ws_roots: Vec<&Value> = roots.iter().filter(|r| r["path"] == "/workspace").collect();
    let seen: u64 = ws_roots.iter().filter_map(|r| r["entries"].as_u64()).sum();
    let cut = ws_roots.iter().any(|r| !r["truncated"].is_null());
    if ws_roots.is_empty() {
        bad.push("the secrets search has no /workspace root".into());
    } else if cut {
        if !incomplete("secrets:walk:/workspace") {
            bad.push("secrets walk truncated without probe.incomplete".into());
        }
    } else {
        if incomplete("secrets:walk:/workspace") {
            bad.push("a complete secrets walk reported as incomplete".into());
        }
        if seen != expect as u64 {
            bad.push(format!(
                "secrets walked {seen} entries, the tree has {expect}"
            ));
        }
        if !has("secret.file", &format!("{far}/{PLANTED_ENV}")) {
            bad.push("complete secrets walk, yet the planted .env is not reported".into());
        }
    }

    // Artifacts: the same.
    let walks = inv["artifacts"]["walks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    match walks.iter().find(|w| w["mount_point"] == "/workspace") {
        None => bad.push("no artifact walk of /workspace".into()),
        Some(w) if !w["truncated"].is_null() => {
            if !incomplete("artifacts:/workspace") {
                bad.push(format!(
                    "artifact walk truncated without probe.incomplete: {w}"
                ));
            }
        }
        Some(w) => {
            if incomplete("artifacts:/workspace") {
                bad.push("a complete artifact walk reported as incomplete".into());
            }
            if w["entries"] != expect as u64 {
                bad.push(format!(
                    "artifacts walked {} entries, the tree has {expect}",
                    w["entries"]
                ));
            }
            if !has("artifact.persistent", &format!("log:{far}")) {
                bad.push("complete artifact walk, yet the planted log is not reported".into());
            }
        }
    }

    // Repro and sockets look four levels down; truncation must be said.
    let repro = &inv["repro"];
    if repro["walk_truncated"].is_string() != incomplete("repro:workspace") {
        bad.push(format!(
            "repro walk_truncated {} but probe.incomplete repro:workspace {}",
            repro["walk_truncated"],
            incomplete("repro:workspace")
        ));
    }
    if repro["walk_entries"].as_u64().unwrap_or(0) == 0 {
        bad.push(format!("repro walked nothing: {}", repro["walk_entries"]));
    }
    for w in inv["sockets"]["walks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let said = findings.iter().any(|f| {
            f["code"] == "probe.incomplete"
                && f["evidence"]["probe"] == "sockets"
                && f["subject"]
                    .as_str()
                    .is_some_and(|s| s.contains(w["mount_point"].as_str().unwrap_or("?")))
        });
        if w["truncated"] == true && !said {
            bad.push(format!(
                "socket walk truncated without probe.incomplete: {w}"
            ));
        }
    }

    let figures = format!(
        "run {} us; secrets {seen} entries in {} us; artifacts {}; repro {} entries; sockets {}",
        json["run"]["duration_us"],
        inv["secrets"]["search"]["walk_us"],
        walks
            .iter()
            .find(|w| w["mount_point"] == "/workspace")
            .cloned()
            .unwrap_or_default(),
        repro["walk_entries"],
        inv["sockets"]["walks"]
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("FIGURES {what}: {figures}\n").as_bytes(),
    );
    let listing: Vec<String> = findings
        .iter()
        .filter(|f| f["code"] == "probe.incomplete")
        .map(|f| format!("{} {}", f["subject"], f["evidence"]["reason"]))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}:\n  - {}\nprobe.incomplete: {listing:?}\n{figures}\nstderr:\n{stderr}",
        bad.join("\n  - ")
    );
}

#[test]
fn a_million_entries_on_the_host_and_in_a_container() {
    let t0 = Instant::now();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostile-scale-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let root = Root(dir.clone());
    fixture_root(&root.0);
    let ws = root.0.join("workspace");
    let far = build(&ws);
    let built = t0.elapsed();
    let far_in = format!("/workspace/{}", far.strip_prefix(&ws).unwrap().display());
    let (before, total) = tree_hash(&ws);
    assert_eq!(total, ENTRIES, "the tree itself");
    let expect = total - count_entries(&ws.join("node_modules"));
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "FIGURES tree of {total} entries built in {built:?}, hashed in {:?}\n",
            t0.elapsed() - built
        )
        .as_bytes(),
    );

    // (a) The fixture tree, through --root.
    let mut cmd = Command::new(BIN);
    cmd.arg("--root")
        .arg(&root.0)
        .args(["--format", "json", "--workspace", "/workspace"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    let started = Instant::now();
    let out = podman::run_bounded(cmd, HANG, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(started.elapsed() < HANG);
    let json: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "--root run: no JSON ({e}); exit {:?}; stderr:\n{}",
            out.code, out.stderr
        )
    });
    judge(
        "fixture (--root)",
        out.code,
        &out.stderr,
        &json,
        expect,
        &far_in,
    );
    // (b) The same tree in the clean container.
    if let Some(img) = podman::setup("a_million_entries_on_the_host_and_in_a_container") {
        let vol = format!("{}:/workspace", ws.display());
        let run = podman::probe(
            img,
            &[podman::CLEAN, &["-v", &vol]].concat(),
            &["--workspace", "/workspace"],
        );
        judge(
            "container",
            Some(run.code),
            &run.stderr,
            &run.json,
            expect,
            &far_in,
        );
    }
    // Once after both runs: hashing a million entries is a large part of
    // this test's time, and either run changing the tree fails it alike.
    let t = Instant::now();
    assert!(
        tree_hash(&ws).0 == before,
        "the tree changed under the runs (--root, then the container)"
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("FIGURES tree hashed again in {:?}\n", t.elapsed()).as_bytes(),
    );
    drop(root);
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("FIGURES whole test {:?}\n", t0.elapsed()).as_bytes(),
    );
}
