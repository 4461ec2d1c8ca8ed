//! Hostile containers: the run must complete, with unknowns reported as
//! such, as nobody with no capabilities, with a read-only root and no
//! writable /tmp, with /proc paths masked, and under a 16 MiB memory limit.
//! The bind-mounted workspace is hashed before and after every case.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::common::podman::*;
use crate::common::tree::tree_hash;
use serde_json::Value;

const CANARY: &str = "Wq4Er6Ty8Ui0Op2As4Df6Gh";

/// A small project: sources, a lockfile, a dependency tree, a planted .env
/// and `files` more source files.
fn workspace(files: usize) -> TempPath {
    let t = TempPath::dir("hostile-ctr").unwrap();
    fs::set_permissions(&t.path, fs::Permissions::from_mode(0o755)).unwrap();
    let f = |rel: &str, content: &str| {
        let p = t.path.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    };
    f("src/main.rs", "fn main() {}\n");
    f("Cargo.lock", "version = 4\n");
    f("node_modules/left-pad/index.js", "module.exports = 1;\n");
    f(".env", &format!("API_TOKEN={CANARY}\n"));
    for i in 0..files {
        f(&format!("src/gen/m{}/f{i}.rs", i / 100), "// generated\n");
    }
    t
}

/// What every hostile case must show: a JSON report with a record for every
/// probe, nothing panicked, every unfinished probe explained by a
/// probe.incomplete, an exit code that follows the findings, no leak.
fn complete(r: &Run, c: &mut Check) {
    let findings = r.findings();
    for e in crate::common::report::records_complete(&r.json) {
        c.fail(e);
    }
    if r.stderr.contains("panicked") {
        c.fail(format!("a panic reached stderr: {}", r.stderr));
    }
    let gating = findings.iter().any(|f| {
        f["status"] != "excepted" && (f["severity"] == "high" || f["severity"] == "critical")
    });
    if r.code != i32::from(gating) {
        c.fail(format!("exit {} but gating findings: {gating}", r.code));
    }
    if r.json.to_string().contains(CANARY) || r.stderr.contains(CANARY) {
        c.fail("the planted secret leaked".into());
    }
}

fn ws_flag(t: &TempPath) -> String {
    format!("{}:/workspace", t.path.display())
}

#[test]
fn nobody_without_capabilities() {
    let Some(img) = setup("nobody_without_capabilities") else {
        return;
    };
    let ws = workspace(0);
    let before = tree_hash(&ws.path);
    let v = ws_flag(&ws);
    let r = probe(
        img,
        &["--user", "65534:65534", "--cap-drop=all", "-v", &v],
        &["--workspace", "/workspace", "--write-test"],
    );
    let mut c = r.check();
    complete(&r, &mut c);
    c.lacks_code("priv.capability")
        .lacks_code("priv.root-without-userns")
        // Readable by anyone: nobody finds it too.
        .has_code("secret.file")
        // Owned by root, 0755: nobody cannot write there.
        .lacks("write.host-path", "/workspace");
    if tree_hash(&ws.path) != before {
        c.fail("the workspace changed".into());
    }
    c.done();
}

#[test]
fn read_only_root_without_a_writable_tmp() {
    let Some(img) = setup("read_only_root_without_a_writable_tmp") else {
        return;
    };
    let ws = workspace(0);
    let before = tree_hash(&ws.path);
    let v = ws_flag(&ws);
    let flags = [
        "--read-only",
        "--read-only-tmpfs=false",
        "--user",
        "1000:1000",
        "--cap-drop=all",
        "-v",
        &v,
    ];
    let r = probe(img, &flags, &["--workspace", "/workspace", "--write-test"]);
    let mut c = r.check();
    complete(&r, &mut c);
    c.lacks_code("write.rootfs")
        .lacks("write.host-path", "/workspace");
    if r.json["inventory"]["writable"].is_null() {
        c.fail("no writability facts".into());
    }
    c.done();

    // Planting canaries with nowhere to write: says so, changes nothing.
    let name = unique("plant");
    let mut cmd = podman();
    cmd.args(["run", "--rm", "--name", &name])
        .args(flags)
        .arg(img)
        .args([IN_IMAGE, "canary", "plant", "--workspace", "/workspace"]);
    let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap();
    assert!(
        !out.stderr.contains("panicked") && out.code != Some(3),
        "canary plant on a read-only container: exit {:?}\n{}\n{}",
        out.code,
        out.stdout,
        out.stderr
    );
    assert_eq!(tree_hash(&ws.path), before, "the workspace changed");
}

#[test]
fn masked_proc_is_reported_as_unknown() {
    let Some(img) = setup("masked_proc_is_reported_as_unknown") else {
        return;
    };
    let ws = workspace(0);
    let before = tree_hash(&ws.path);
    let v = ws_flag(&ws);
    // selfprobe is the container's pid 1, so /proc/1/... is its /proc/self.
    let mask =
        "mask=/proc/1/mountinfo:/proc/1/status:/proc/1/uid_map:/proc/1/cgroup:/proc/1/ns:/proc/sys";
    let r = probe(
        img,
        &["--security-opt", mask, "--cap-drop=all", "-v", &v],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    complete(&r, &mut c);
    let incomplete = |c: &mut Check, subject: &str| {
        let hit = r.findings().iter().any(|f| {
            f["code"] == "probe.incomplete" && f["subject"] == subject && f["status"] == "unknown"
        });
        if !hit {
            c.fail(format!("no probe.incomplete (unknown) for {subject}"));
        }
    };
    for s in [
        "mounts",
        "privilege",
        "namespaces:mnt",
        "namespaces:user",
        "caches",
        "browsers",
        "artifacts",
        "teardown",
    ] {
        incomplete(&mut c, s);
    }
    // Nothing is claimed from what could not be read.
    c.lacks_code("priv.root-without-userns")
        .lacks_code("mount.unexpected");
    let sc = r.json["scorecard"]["controls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for key in ["Repo scope", "Teardown"] {
        match sc.iter().find(|x| x["name"] == key) {
            Some(x) if x["assessed"] == Value::Bool(false) => {}
            other => c.fail(format!("scorecard {key} should be not assessed: {other:?}")),
        }
    }
    if tree_hash(&ws.path) != before {
        c.fail("the workspace changed".into());
    }
    c.done();
}

#[test]
fn sixteen_mebibytes_of_memory() {
    let Some(img) = setup("sixteen_mebibytes_of_memory") else {
        return;
    };
    // Enough files that the walks allocate, well inside their budgets.
    let ws = workspace(20_000);
    let before = tree_hash(&ws.path);
    let v = ws_flag(&ws);
    let r = probe(
        img,
        &[
            "--memory",
            "16m",
            "--memory-swap",
            "16m",
            "--cap-drop=all",
            "--user",
            "1000:1000",
            "-v",
            &v,
        ],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    complete(&r, &mut c);
    // Nothing was cut short for want of memory.
    c.probes_ok().has("secret.file", "/workspace/.env");
    if tree_hash(&ws.path) != before {
        c.fail("the workspace changed".into());
    }
    c.done();
}
