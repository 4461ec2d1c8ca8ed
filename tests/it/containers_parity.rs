//! Parity and the fleet with real containers (issue 22). One pair of real
//! runs per engine pair, of the same image and the same workspace, shared by
//! every assertion: Docker with runc against Docker with runsc (gVisor), and
//! rootful against rootless podman. Each run signs its report (a DSSE
//! envelope with a nonce of its own) and sees planted canaries: a
//! secret-looking variable and two credential files in the workspace. Then:
//!
//! - `diff` says what differs between the runtimes and what does not;
//! - `summary` verifies the four envelopes, one of them changed after
//!   signing, in every format (SARIF checked against the schema, JUnit read
//!   back by junitparser);
//! - the HTML page is rendered by Debian's headless Chromium, which shows
//!   every workspace and control and runs nothing a hostile name carries;
//! - no output, in any format, holds a canary's value.
//!
//! Network rule: every container runs with `--network none`; Chromium opens
//! a file:// page that fetches nothing (its policy allows nothing to).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::engines::{self, Rootless};
use crate::common::fleet::{
    canary, chromium, chromium_run, dom_text, leaks, tamper, teardown_statement,
};
use crate::common::formats::{junit_read, sarif_validate, venv_python};
use crate::common::keys::leak_patterns;
use crate::common::podman::{self, skip_or_fail, Run};
use crate::common::shipped;

/// Where this suite keeps what it made (the reports, the pages, the
/// screenshot), so a reader can open them after the run.
fn out_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parity");
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    })
}

/// The key the runs sign with, its public half (`selfprobe pubkey`), the
/// canaries, and the shipped binary's SHA-256.
struct Common {
    key_dir: PathBuf,
    pubkey: PathBuf,
    canaries: Vec<String>,
    token: String,
    sha256: String,
}

fn common() -> Option<&'static Common> {
    static C: OnceLock<Option<Common>> = OnceLock::new();
    C.get_or_init(|| {
        if Command::new("openssl").arg("version").output().is_err() {
            skip_or_fail(
                "containers_parity",
                "no openssl (apt-get install -y openssl)",
            );
            return None;
        }
        let key_dir = out_dir().join("key");
        fs::create_dir_all(&key_dir).unwrap();
        let key = key_dir.join("k.pem");
        let ok = Command::new("openssl")
            .args(["genpkey", "-algorithm", "ed25519", "-out"])
            .arg(&key)
            .status()
            .unwrap();
        assert!(ok.success());
        // A test key, read by the containers' root (a rootless one is a
        // host user of its own).
        fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(&key_dir, fs::Permissions::from_mode(0o755)).unwrap();
        let out = Command::new(shipped::bin())
            .args(["pubkey", "--sign-key"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(out.status.success());
        let pubkey = out_dir().join("signing.pub");
        fs::write(&pubkey, &out.stdout).unwrap();
        let (env_file, git_cred, token) = (canary("env"), canary("git"), canary("tok"));
        Some(Common {
            key_dir,
            pubkey,
            token: format!("ghp_{token}"),
            canaries: vec![env_file, git_cred, token],
            sha256: format!("{:x}", Sha256::digest(fs::read(shipped::bin()).unwrap())),
        })
    })
    .as_ref()
}

/// The workspace every run mounts read-only: a small project with a
/// lockfile and a tool pin, and two credential files holding canaries.
fn workspace(at: &Path, c: &Common) {
    fs::create_dir_all(at).unwrap();
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\n".to_string(),
        ),
        ("Cargo.lock", "version = 3\n".to_string()),
        (".tool-versions", "nodejs 20.11.0\n".to_string()),
        (".env", format!("API_TOKEN={}\n", c.canaries[0])),
        (
            ".git-credentials",
            format!("https://dev:{}@git.example.com\n", c.canaries[1]),
        ),
    ];
    for (n, t) in files {
        fs::write(at.join(n), t).unwrap();
        fs::set_permissions(at.join(n), fs::Permissions::from_mode(0o644)).unwrap();
    }
    fs::set_permissions(at, fs::Permissions::from_mode(0o755)).unwrap();
}

/// One signed run: its name, report, envelope and nonce.
struct Side {
    name: &'static str,
    report: Value,
    envelope: String,
    nonce: String,
}

impl Side {
    fn from(name: &'static str, run: Run, out: &Path, nonce: String) -> Side {
        assert!(
            run.code == 0 || run.code == 1,
            "{}: exit {}\n{}",
            run.what,
            run.code,
            run.stderr
        );
        let envelope = fs::read_to_string(out.join(format!("{name}.intoto.json")))
            .unwrap_or_else(|e| panic!("{}: no envelope ({e})\n{}", run.what, run.stderr));
        Side {
            name,
            report: run.json,
            envelope,
            nonce,
        }
    }

    /// Its report and envelope in `dir`, as inspect writes them.
    fn write(&self, dir: &Path) -> (PathBuf, PathBuf) {
        let r = dir.join(format!("{}.json", self.name));
        let e = dir.join(format!("{}.intoto.json", self.name));
        fs::write(&r, serde_json::to_string_pretty(&self.report).unwrap()).unwrap();
        fs::write(&e, &self.envelope).unwrap();
        (r, e)
    }
}

/// The flags and arguments of a signed run that sees the canaries.
fn signed(
    c: &Common,
    key_dir: &Path,
    ws: &Path,
    out: &Path,
    name: &str,
    nonce: &str,
) -> (Vec<String>, Vec<String>) {
    let flags = vec![
        "-e".into(),
        format!("GITHUB_TOKEN={}", c.token),
        "-v".into(),
        format!("{}:/workspace:ro", ws.display()),
        "-v".into(),
        format!("{}:/key:ro", key_dir.display()),
        "-v".into(),
        format!("{}:/out", out.display()),
    ];
    let args = vec![
        "--workspace".into(),
        "/workspace".into(),
        "--attest".into(),
        format!("/out/{name}.intoto.json"),
        "--sign-key".into(),
        "/key/k.pem".into(),
        "--nonce".into(),
        nonce.into(),
    ];
    (flags, args)
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn out_for(tag: &str, uid: Option<u32>) -> PathBuf {
    let d = out_dir().join(tag);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(u) = uid {
        nix::unistd::chown(
            &d,
            Some(nix::unistd::Uid::from_raw(u)),
            Some(nix::unistd::Gid::from_raw(u)),
        )
        .unwrap();
    }
    d
}

/// Docker with runc and Docker with runsc, side by side.
fn docker_pair(test: &str) -> Option<&'static (Side, Side)> {
    static P: OnceLock<Option<(Side, Side)>> = OnceLock::new();
    P.get_or_init(|| {
        let c = common()?;
        let img = engines::gvisor_image(test)?;
        let ws = out_dir().join("ws-docker");
        workspace(&ws, c);
        let out = out_for("out-docker", None);
        let (na, nb) = (
            canary("nonce-a")[..24].to_string(),
            canary("nonce-b")[..24].to_string(),
        );
        let (fa, aa) = signed(c, &c.key_dir, &ws, &out, "docker-runc", &na);
        let (fb, ab) = signed(c, &c.key_dir, &ws, &out, "docker-runsc", &nb);
        let (ra, rb) = std::thread::scope(|s| {
            let a = s.spawn(|| {
                let mut f = vec!["--network", "none"];
                f.extend(refs(&fa));
                engines::docker_mounted(img, &f, &refs(&aa))
            });
            let b = s.spawn(|| engines::gvisor(img, &refs(&fb), &refs(&ab)));
            (a.join().unwrap(), b.join().unwrap())
        });
        Some((
            Side::from("docker-runc", ra, &out, na),
            Side::from("docker-runsc", rb, &out, nb),
        ))
    })
    .as_ref()
}

/// Rootful and rootless podman, side by side. The rootful run uses the
/// suites' image (the same busybox tree with the probe in it), the rootless
/// one the tree imported into its own storage with the probe bind-mounted.
fn podman_pair(test: &str) -> Option<&'static (Side, Side)> {
    static P: OnceLock<Option<(Side, Side)>> = OnceLock::new();
    P.get_or_init(|| {
        let c = common()?;
        let img = podman::setup(test)?;
        let rl = Rootless::new(test)?;
        let ws = rl.place.subdir("ws");
        workspace(&ws, c);
        let out_root = out_for("out-podman", None);
        let out_rl = rl.place.subdir("out");
        nix::unistd::chown(
            &out_rl,
            Some(nix::unistd::Uid::from_raw(rl.uid)),
            Some(nix::unistd::Gid::from_raw(rl.uid)),
        )
        .unwrap();
        let (na, nb) = (
            canary("nonce-c")[..24].to_string(),
            canary("nonce-d")[..24].to_string(),
        );
        // The rootless user reaches only its place: the key goes there.
        let key_dir = rl.place.subdir("key");
        fs::copy(c.key_dir.join("k.pem"), key_dir.join("k.pem")).unwrap();
        let (fa, aa) = signed(c, &key_dir, &ws, &out_root, "podman-rootful", &na);
        let (fb, ab) = signed(c, &key_dir, &ws, &out_rl, "podman-rootless", &nb);
        let (ra, rb) = std::thread::scope(|s| {
            let a = s.spawn(|| {
                let mut f = vec!["--network", "none"];
                f.extend(refs(&fa));
                podman::probe(img, &f, &refs(&aa))
            });
            let b = s.spawn(|| rl.probe(&refs(&fb), &refs(&ab)));
            (a.join().unwrap(), b.join().unwrap())
        });
        let a = Side::from("podman-rootful", ra, &out_root, na);
        let b = Side::from("podman-rootless", rb, &out_rl, nb);
        // The rootless place (its storage, the workspace) goes with `rl`.
        Some((a, b))
    })
    .as_ref()
}

/// The probe, or the host tool for its commands.
fn selfprobe(args: &[&str]) -> (i32, String, String) {
    let bin: &std::path::Path = match args.first() {
        Some(a) if shipped::is_host_command(a) => shipped::host_bin(),
        _ => shipped::bin(),
    };
    let o = Command::new(bin).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn facts(out: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["facts"].as_array().unwrap().clone()
}

fn fact<'a>(fs: &'a [Value], key: &str) -> &'a Value {
    fs.iter()
        .find(|f| f["key"] == key)
        .unwrap_or_else(|| panic!("no fact {key} in {}", Value::Array(fs.to_vec())))
}

fn differing(fs: &[Value]) -> Vec<String> {
    fs.iter()
        .filter(|f| {
            ["differs", "only in A", "only in B"].contains(&f["state"].as_str().unwrap_or(""))
        })
        .map(|f| f["key"].as_str().unwrap().to_string())
        .collect()
}

/// No output holds a canary, nor the signing key in any form.
fn no_secret(c: &Common, outputs: &[(String, Vec<u8>)]) {
    let mut canaries = c.canaries.clone();
    canaries.push(c.token.clone());
    let mut bad = leaks(outputs, &canaries);
    let pats = leak_patterns(&c.key_dir.join("k.pem"));
    for (what, bytes) in outputs {
        for l in crate::common::keys::leaks(bytes, &pats) {
            bad.push(format!("{what} holds the signing key ({l})"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn docker_runc_and_runsc_differ_in_runtime_kind_and_kernel_not_in_the_workspace() {
    let test = "docker_runc_and_runsc_differ_in_runtime_kind_and_kernel_not_in_the_workspace";
    let Some((a, b)) = docker_pair(test) else {
        return;
    };
    let c = common().unwrap();
    let dir = out_dir().join("diff-docker");
    fs::create_dir_all(&dir).unwrap();
    let (ra, ea) = a.write(&dir);
    let (rb, eb) = b.write(&dir);
    let (ra_s, rb_s) = (ra.to_str().unwrap(), rb.to_str().unwrap());
    let mut outputs = Vec::new();

    let (code, text, err) = selfprobe(&["diff", ra_s, rb_s]);
    assert_eq!(code, 1, "{text}{err}");
    outputs.push(("diff text".to_string(), (text.clone() + &err).into_bytes()));
    let (code, out, err) = selfprobe(&["diff", "--format", "json", ra_s, rb_s]);
    assert_eq!(code, 1, "{err}");
    outputs.push(("diff json".to_string(), out.clone().into_bytes()));
    let fs_ = facts(&out);
    let st = |k: &str| fact(&fs_, k)["state"].as_str().unwrap().to_string();
    assert_eq!(st("boundary.runtime"), "differs");
    assert_eq!(fact(&fs_, "boundary.runtime")["a"], "runc/crun");
    assert_eq!(fact(&fs_, "boundary.runtime")["b"], "runsc");
    assert_eq!(st("boundary.kind"), "differs");
    assert_eq!(fact(&fs_, "boundary.kind")["b"], "sandbox");
    // The kernel as gVisor reports it: its Sentry's release, not the host's.
    assert_eq!(st("kernel.release"), "differs");
    let host_release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(fact(&fs_, "kernel.release")["a"], host_release.trim());
    let gvisor = fact(&fs_, "kernel.release")["b"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(gvisor, host_release.trim());
    assert_eq!(
        b.report["inventory"]["boundary"]["platform"]["kernel_release"], gvisor,
        "the release gVisor's /proc says"
    );
    // The workspace and its mount class: the same.
    for k in [
        "storage.workspace.path",
        "storage.workspace.placement",
        "storage.workspace.read_only",
        "storage.mount./workspace",
        "architecture.machine",
        "architecture.page_size",
        "architecture.cpus",
        "boundary.engine",
        "lockfiles./workspace/Cargo.toml",
        "secrets.env.GITHUB_TOKEN",
        "secrets.file./workspace/.env",
    ] {
        assert_eq!(st(k), "same", "{k}: {}", fact(&fs_, k));
    }
    assert_eq!(fact(&fs_, "storage.mount./workspace")["a"], "workspace ro");
    assert_eq!(fact(&fs_, "storage.workspace.placement")["a"], "bind");
    // DNS is read on both sides though no destination was asked for.
    assert!(
        fact(&fs_, "network.dns.nameservers")["a"].is_array(),
        "{}",
        fact(&fs_, "network.dns.nameservers")
    );
    assert!(
        text.contains("boundary.runtime") && text.contains("runc/crun | runsc"),
        "{text}"
    );
    assert!(
        text.contains("\nkernel\n") && text.contains("\norchestration\n"),
        "{text}"
    );

    // [parity] allow: every differing key allowed is exit 0; all but one is 1.
    let keys = differing(&fs_);
    assert!(keys.len() >= 3, "{keys:?}");
    let allow = |ks: &[String]| {
        let list: Vec<String> = ks.iter().map(|k| format!("{k:?}")).collect();
        format!("[parity]\nallow = [{}]\n", list.join(", "))
    };
    let pol = dir.join("parity.toml");
    fs::write(&pol, allow(&keys)).unwrap();
    let (code, text, err) = selfprobe(&["diff", "--policy", pol.to_str().unwrap(), ra_s, rb_s]);
    assert_eq!(code, 0, "{text}{err}");
    outputs.push(("diff allowed".to_string(), text.into_bytes()));
    fs::write(&pol, allow(&keys[1..])).unwrap();
    let (code, _, _) = selfprobe(&["diff", "--policy", pol.to_str().unwrap(), ra_s, rb_s]);
    assert_eq!(code, 1, "{} is still a difference", keys[0]);

    // The envelopes, verified: the same facts.
    let pk = c.pubkey.to_str().unwrap();
    let (code, out, err) = selfprobe(&[
        "diff",
        "--format",
        "json",
        "--pubkey",
        pk,
        ea.to_str().unwrap(),
        eb.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(differing(&facts(&out)), keys);
    // diff A A: empty, exit 0.
    let (code, text, err) = selfprobe(&[
        "diff",
        "--pubkey",
        pk,
        ea.to_str().unwrap(),
        ea.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("no differences"), "{text}");
    // A fact one side could not check is unknown, never same: A against
    // itself with the platform taken out (as an older report has none).
    let mut older = a.report.clone();
    older["inventory"]["boundary"]
        .as_object_mut()
        .unwrap()
        .remove("platform");
    let old_p = dir.join("older.json");
    fs::write(&old_p, older.to_string()).unwrap();
    let (code, out, _) = selfprobe(&["diff", "--format", "json", ra_s, old_p.to_str().unwrap()]);
    assert_eq!(code, 0, "unknown does not gate");
    let fs2 = facts(&out);
    for k in ["kernel.release", "architecture.machine", "kernel.cgroup"] {
        assert_eq!(fact(&fs2, k)["state"], "unknown", "{k}");
    }
    assert!(differing(&fs2).is_empty());
    outputs.push(("diff unknown".to_string(), out.into_bytes()));
    no_secret(c, &outputs);
}

#[test]
fn rootful_and_rootless_podman_differ_in_rootless_and_capabilities() {
    let test = "rootful_and_rootless_podman_differ_in_rootless_and_capabilities";
    let Some((a, b)) = podman_pair(test) else {
        return;
    };
    let c = common().unwrap();
    let dir = out_dir().join("diff-podman");
    fs::create_dir_all(&dir).unwrap();
    let (_, ea) = a.write(&dir);
    let (_, eb) = b.write(&dir);
    let pk = c.pubkey.to_str().unwrap();
    let (code, out, err) = selfprobe(&[
        "diff",
        "--format",
        "json",
        "--pubkey",
        pk,
        ea.to_str().unwrap(),
        eb.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let fs_ = facts(&out);
    let rootless = fact(&fs_, "boundary.rootless");
    assert_eq!(
        (&rootless["state"], &rootless["a"], &rootless["b"]),
        (&json!("differs"), &json!(false), &json!(true))
    );
    // The same capability sets, acting on different things: on the host
    // in the rootful container, inside the user namespace in the other.
    let caps: Vec<&Value> = fs_
        .iter()
        .filter(|f| f["key"].as_str().unwrap().starts_with("capabilities."))
        .collect();
    assert!(!caps.is_empty());
    for f in &caps {
        assert_eq!(
            (&f["state"], &f["a"], &f["b"]),
            (&json!("differs"), &json!("host"), &json!("user-namespace")),
            "{f}"
        );
    }
    assert!(caps
        .iter()
        .any(|f| f["key"] == "capabilities.CAP_DAC_OVERRIDE"));
    assert_eq!(fact(&fs_, "user.uid_map")["state"], "differs");
    assert_eq!(fact(&fs_, "namespaces.user")["b"], "own");
    for k in [
        "boundary.engine",
        "boundary.kind",
        "storage.workspace.placement",
        "storage.mount./workspace",
    ] {
        assert_eq!(fact(&fs_, k)["state"], "same", "{k}: {}", fact(&fs_, k));
    }
    let (code, text, err) = selfprobe(&[
        "diff",
        "--pubkey",
        pk,
        ea.to_str().unwrap(),
        eb.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        text.contains("boundary.rootless") && text.contains("false | true"),
        "{text}"
    );
    no_secret(
        c,
        &[
            ("diff json".into(), out.into_bytes()),
            ("diff text".into(), (text + &err).into_bytes()),
        ],
    );
}

/// The four runs as an inspection directory (docs/inspection-directory.md): reports,
/// envelopes, nonces, signing.pub; the rootless one's envelope changed
/// after signing.
fn fleet_dir(name: &str, c: &Common, sides: &[&Side]) -> PathBuf {
    let dir = out_dir().join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let mut nonces = String::from("# <name> <nonce>, one line per probed container\n");
    for s in sides {
        let (_, e) = s.write(&dir);
        if s.name == "podman-rootless" {
            fs::write(&e, tamper(&s.envelope)).unwrap();
        }
        nonces.push_str(&format!("{} {}\n", s.name, s.nonce));
    }
    fs::write(dir.join("nonces"), nonces).unwrap();
    fs::copy(&c.pubkey, dir.join("signing.pub")).unwrap();
    dir
}

fn both_pairs(test: &str) -> Option<Vec<&'static Side>> {
    let (a, b) = docker_pair(test)?;
    let (c, d) = podman_pair(test)?;
    Some(vec![a, b, c, d])
}

#[test]
fn summary_verifies_three_envelopes_and_not_the_one_changed_after_signing() {
    let test = "summary_verifies_three_envelopes_and_not_the_one_changed_after_signing";
    let Some(sides) = both_pairs(test) else {
        return;
    };
    let c = common().unwrap();
    let dir = fleet_dir("fleet", c, &sides);
    let d = dir.to_str().unwrap().to_string();
    let (pk, nonces) = (dir.join("signing.pub"), dir.join("nonces"));
    let base = [
        "summary".to_string(),
        "--pubkey".into(),
        pk.display().to_string(),
        "--nonces".into(),
        nonces.display().to_string(),
        "--binary-sha256".into(),
        c.sha256.clone(),
    ];
    let run = |format: &str| {
        let mut args: Vec<String> = base.to_vec();
        args.extend(["--format".into(), format.into(), d.clone()]);
        selfprobe(&refs(&args))
    };
    let mut outputs = Vec::new();

    let (code, text, err) = run("text");
    assert_eq!(code, 3, "{text}{err}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| sides.iter().any(|s| l.starts_with(s.name)))
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    let verified: Vec<&&str> = rows
        .iter()
        .filter(|l| l.contains("VERIFIED (signature, nonce, binary)"))
        .collect();
    assert_eq!(verified.len(), 3, "{text}");
    let bad = rows
        .iter()
        .find(|l| l.starts_with("podman-rootless"))
        .unwrap();
    assert!(
        bad.contains("NOT VERIFIED") && bad.contains("does not verify"),
        "{bad}"
    );
    outputs.push(("summary text".to_string(), (text + &err).into_bytes()));

    let (code, out, _) = run("json");
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["verified"].as_u64(), v["unverified"].as_u64()),
        (Some(3), Some(1))
    );
    for w in v["workspaces"].as_array().unwrap() {
        let src = sides.iter().find(|s| w["name"] == s.name).unwrap();
        if w["verified"] == true {
            assert_eq!(w["run_id"], src.report["run"]["id"]);
            assert_eq!(w["exit"], src.report["summary"]["exit_code"]);
        } else {
            assert!(
                w["run_id"].is_null(),
                "nothing of a failed envelope is shown: {w}"
            );
        }
    }
    outputs.push(("summary json".to_string(), out.into_bytes()));

    // SARIF: one run per workspace, named by it, valid against 2.1.0.
    let (code, sarif, _) = run("sarif");
    assert_eq!(code, 3);
    let doc: Value = serde_json::from_str(&sarif).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for s in &sides {
        let r = runs
            .iter()
            .find(|r| {
                r["automationDetails"]["id"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("selfprobe/{}/", s.name))
            })
            .unwrap_or_else(|| panic!("no run for {}", s.name));
        assert_eq!(
            r["invocations"][0]["executionSuccessful"],
            s.name != "podman-rootless"
        );
    }
    let sarif_file = dir.join("fleet.sarif");
    fs::write(&sarif_file, &sarif).unwrap();
    outputs.push(("summary sarif".to_string(), sarif.into_bytes()));
    // JUnit: one suite per workspace.
    let (code, junit, _) = run("junit");
    assert_eq!(code, 3);
    let junit_file = dir.join("fleet.xml");
    fs::write(&junit_file, &junit).unwrap();
    outputs.push(("summary junit".to_string(), junit.into_bytes()));
    match venv_python("jsonschema") {
        Some(py) => {
            let (rc, said) = sarif_validate(&py, &[&sarif_file]);
            assert_eq!(rc, 0, "the summary's SARIF does not validate:\n{said}");
        }
        None => skip_or_fail(test, "no .ci/venv with jsonschema (.ci/run creates it)"),
    }
    match venv_python("junitparser") {
        Some(py) => {
            let parsed = junit_read(&py, &junit_file);
            let suites = parsed["suites"].as_object().unwrap();
            assert_eq!(suites.len(), 4, "{parsed}");
            for s in &sides {
                let kinds = &suites[s.name]["cases"]["verification"]["kinds"];
                let want = if s.name == "podman-rootless" {
                    json!(["failure"])
                } else {
                    json!([])
                };
                assert_eq!(kinds, &want, "{}: {parsed}", s.name);
                assert!(suites[s.name]["cases"].get("engine-socket").is_some());
            }
        }
        None => skip_or_fail(test, "no .ci/venv with junitparser (.ci/run creates it)"),
    }
    no_secret(c, &outputs);
}

#[test]
fn the_fleet_page_renders_in_chromium_with_every_workspace_and_control_and_runs_no_hostile_name() {
    let test = "the_fleet_page_renders_in_chromium_with_every_workspace_and_control_and_runs_no_hostile_name";
    let Some(sides) = both_pairs(test) else {
        return;
    };
    let Some(browser) = chromium(test) else {
        return;
    };
    let c = common().unwrap();
    let dir = fleet_dir("fleet-html", c, &sides);
    // The host's teardown statement for one workspace, by a key of its own;
    // a container the inspection could not probe, with a hostile name; a
    // report copied by hand under a hostile file name.
    let key2 = out_dir().join("key/teardown.pem");
    assert!(Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key2)
        .status()
        .unwrap()
        .success());
    let (_, pub2, _) = selfprobe(&["pubkey", "--sign-key", key2.to_str().unwrap()]);
    fs::write(dir.join("teardown.pub"), pub2).unwrap();
    let runc = sides.iter().find(|s| s.name == "docker-runc").unwrap();
    fs::write(
        dir.join("docker-runc.teardown.intoto.json"),
        teardown_statement(&key2, "docker-runc", &runc.nonce, "gone", 2, &c.sha256),
    )
    .unwrap();
    let script = "<script>document.body.setAttribute('data-pwned','1')</script>";
    let img = "<img src=x onerror=document.body.setAttribute('data-pwned','2')>";
    fs::write(
        dir.join("inspection.json"),
        json!({"schema": "https://selfprobe.dev/schema/inspection/v1", "id": "insp-1",
               "containers": [{"name": script, "report": null, "envelope": null, "exit": 3,
                               "not_probed": format!("{script}: no writable place"), "findings": []}],
               "exit": 3})
        .to_string(),
    )
    .unwrap();
    fs::write(dir.join(format!("{img}.json")), runc.report.to_string()).unwrap();
    let page = dir.join("fleet.html");
    let (code, out, err) = selfprobe(&[
        "summary",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
        "--pubkey",
        dir.join("signing.pub").to_str().unwrap(),
        "--pubkey",
        dir.join("teardown.pub").to_str().unwrap(),
        "--nonces",
        dir.join("nonces").to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!((code, out.as_str()), (3, ""), "{err}");
    let html = fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains(script) && !html.contains(img),
        "the names are escaped"
    );

    let profile = out_dir().join("chromium-profile");
    let _ = fs::remove_dir_all(&profile);
    fs::create_dir_all(&profile).unwrap();
    let url = format!("file://{}", page.display());
    let dom = chromium_run(&browser, &profile, &["--dump-dom"], &url);
    assert_eq!(dom.code, Some(0), "chromium --dump-dom: {}", dom.stderr);
    let dom = dom.stdout;
    assert!(
        dom.contains("<table id=\"fleet\" class=\"js\">"),
        "the page's own script ran:\n{dom}"
    );
    let names: Vec<String> = sides
        .iter()
        .map(|s| s.name.to_string())
        .chain([script.to_string(), img.to_string()])
        .collect();
    assert_eq!(
        dom.matches("<tbody class=\"ws\"").count(),
        names.len(),
        "{dom}"
    );
    for n in &names {
        assert!(
            dom.contains(&format!("</span>{}<small>", dom_text(n))),
            "no row for {n}"
        );
    }
    for ctl in selfprobe::scorecard::CONTROLS {
        assert!(
            dom.contains(&format!("title=\"{}\"", ctl.name)),
            "no column for {}",
            ctl.name
        );
    }
    assert!(!dom.contains("data-pwned=\""), "a hostile name ran:\n{dom}");
    assert!(!dom.contains("<img"), "a hostile name made an element");
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(
        dom.contains("td-gone"),
        "the teardown statement's result is shown"
    );
    let shot = out_dir().join("fleet.png");
    let r = chromium_run(
        &browser,
        &profile,
        &[
            "--window-size=1280,1600",
            &format!("--screenshot={}", shot.display()),
        ],
        &format!("{url}#open"),
    );
    let png = fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {}", r.stderr));
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    // Straight to fd 2, as the skips are: the harness captures the rest.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "screenshot: {} (page: {})",
        shot.display(),
        page.display()
    );
    no_secret(
        c,
        &[
            ("fleet.html".into(), html.into_bytes()),
            ("dom".into(), dom.into_bytes()),
        ],
    );
}
