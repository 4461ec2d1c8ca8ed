//! `selfprobe-host diff` and `selfprobe-host summary` on fixture trees' reports and
//! hand-made inspection directories (docs/inspection-directory.md): what the platform
//! facts and the resolver read from a tree, the states of a diff, the
//! policy's `[parity] allow`, and every way an input can be bad: each named
//! with its path, none followed through a symlink, none hanging (a FIFO),
//! none read past its cap. The real-container pairs are
//! tests/it/containers_parity.rs.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::fixture::{data, Fixture};
use crate::common::fleet::{tamper, teardown_statement};
use crate::common::podman::TempPath;
use crate::common::shipped;

/// A container tree whose platform files and resolver say what is given.
fn tree(name: &str, release: &str, nameserver: &str) -> Fixture {
    let f = Fixture::container(name, &data("plain.mountinfo"), &data("plain.status"));
    f.file("proc/sys/kernel/osrelease", &format!("{release}\n"));
    f.file("proc/sys/kernel/arch", "aarch64\n");
    f.file("sys/devices/system/cpu/online", "0-3\n");
    let auxv: Vec<u8> = [(6u64, 16384u64), (0, 0)]
        .iter()
        .flat_map(|(k, v)| k.to_le_bytes().into_iter().chain(v.to_le_bytes()))
        .collect();
    fs::write(f.path("proc/self/auxv"), auxv).unwrap();
    f.file(
        "etc/resolv.conf",
        &format!("nameserver {nameserver}\nsearch corp.example\n"),
    );
    f.dir("workspace");
    f
}

/// The probe, or the host tool for its commands.
fn selfprobe(args: &[&str]) -> (i32, String, String) {
    let bin: &std::path::Path = match args.first() {
        Some(a) if shipped::is_host_command(a) => shipped::host_bin(),
        _ => crate::common::fixture::BIN.as_ref(),
    };
    let o = Command::new(bin).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn facts(json_out: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json_out).unwrap_or_else(|e| panic!("{e}: {json_out}"));
    v["facts"].as_array().unwrap().clone()
}

fn state<'a>(facts: &'a [Value], key: &str) -> &'a Value {
    facts
        .iter()
        .find(|f| f["key"] == key)
        .unwrap_or_else(|| panic!("no fact {key}"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// Reports of two trees, as the run wrote them.
fn reports(dir: &Path) -> (PathBuf, PathBuf) {
    let a = tree("pa", "6.1.0-18-amd64", "192.0.2.53");
    let b = tree("pb", "6.8.0-45-generic", "198.51.100.7");
    let ra = a.run(&["--workspace", "/workspace"]);
    let rb = b.run(&["--workspace", "/workspace"]);
    (
        write(dir, "a.json", &ra.stdout),
        write(dir, "b.json", &rb.stdout),
    )
}

#[test]
fn the_platform_and_the_resolver_come_from_the_tree_and_nothing_is_sent() {
    let f = tree("platform", "6.1.0-18-amd64", "192.0.2.53");
    let r = f.run(&["--workspace", "/workspace"]);
    let inv = &r.json["inventory"];
    assert_eq!(
        inv["boundary"]["platform"],
        json!({"machine": "aarch64", "kernel_release": "6.1.0-18-amd64",
               "page_size": 16384, "cpus": 4, "cgroup": "v1"}),
        "{}",
        r.stderr
    );
    let res = &inv["network"]["resolver"];
    assert_eq!(res["nameservers"], json!(["192.0.2.53"]));
    assert_eq!(res["search"], json!(["corp.example"]));
    assert_eq!(
        inv["network"]["assessed"], false,
        "no destination was tried"
    );
    assert!(inv["network"]["destinations"]
        .as_array()
        .unwrap()
        .is_empty());

    // A tree without those files: unknown, and never the live machine's
    // (uname is asked only without --root).
    let bare = Fixture::container(
        "platform-bare",
        &data("plain.mountinfo"),
        &data("plain.status"),
    );
    let r = bare.run(&[]);
    let p = &r.json["inventory"]["boundary"]["platform"];
    for k in ["machine", "kernel_release", "page_size", "cpus"] {
        assert!(p[k].is_null(), "{k} is {} in a tree without its file", p[k]);
    }
}

#[test]
fn diff_states_policy_allow_and_exit_codes() {
    let t = TempPath::dir("diff").unwrap();
    let (a, b) = reports(&t.path);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    let (code, text, err) = selfprobe(&["diff", a, b]);
    assert_eq!(code, 1, "{text}{err}");
    assert!(
        text.contains("kernel.release") && text.contains("6.1.0-18-amd64 | 6.8.0-45-generic"),
        "{text}"
    );
    assert!(text.contains("network.dns.nameservers"), "{text}");
    assert!(
        text.contains("counts\n") && text.contains("  kernel "),
        "{text}"
    );
    assert!(
        !text.contains("architecture.machine"),
        "the same machine is no difference:\n{text}"
    );

    let (code, out, _) = selfprobe(&["diff", "--format", "json", a, b]);
    assert_eq!(code, 1);
    let fs = facts(&out);
    assert_eq!(state(&fs, "kernel.release")["state"], "differs");
    assert_eq!(state(&fs, "kernel.release")["a"], "6.1.0-18-amd64");
    assert_eq!(state(&fs, "kernel.release")["b"], "6.8.0-45-generic");
    assert_eq!(state(&fs, "architecture.page_size")["state"], "same");
    assert_eq!(state(&fs, "storage.workspace.path")["state"], "same");
    let differing: Vec<&str> = fs
        .iter()
        .filter(|f| ["differs", "only in A", "only in B"].contains(&f["state"].as_str().unwrap()))
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(differing, ["kernel.release", "network.dns.nameservers"]);

    // Allowed, by key and by glob: exit 0, and the text says which allowed it.
    let pol = write(
        &t.path,
        "p.toml",
        "[parity]\nallow = [\"kernel.release\", \"network.dns.*\"]\n",
    );
    let (code, text, _) = selfprobe(&["diff", "--policy", pol.to_str().unwrap(), a, b]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("(allowed: network.dns.*)"), "{text}");
    let pol = write(
        &t.path,
        "p2.toml",
        "[parity]\nallow = [\"kernel.release\"]\n",
    );
    let (code, _, _) = selfprobe(&["diff", "--policy", pol.to_str().unwrap(), a, b]);
    assert_eq!(code, 1, "the nameservers still differ");

    // diff A A: nothing differs, exit 0.
    let (code, text, _) = selfprobe(&["diff", a, a]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("no differences"), "{text}");

    // A report without the platform (an older one) and with a probe that
    // timed out: unknown, never same, and no "only in".
    let mut old: Value = serde_json::from_str(&fs::read_to_string(a).unwrap()).unwrap();
    old["inventory"]["boundary"]
        .as_object_mut()
        .unwrap()
        .remove("platform");
    old["inventory"]["devices"] = Value::Null;
    for p in old["probes"].as_array_mut().unwrap() {
        if p["name"] == "devices" {
            p["status"] = json!("timeout");
            p["reason"] = json!("did not finish within 5000 ms");
        }
    }
    let old_p = write(&t.path, "old.json", &old.to_string());
    let (code, out, _) = selfprobe(&["diff", "--format", "json", a, old_p.to_str().unwrap()]);
    assert_eq!(code, 0, "unknown is listed, not a difference: {out}");
    let fs = facts(&out);
    assert_eq!(state(&fs, "kernel.release")["state"], "unknown");
    assert!(state(&fs, "kernel.release")["why"]
        .as_str()
        .unwrap()
        .starts_with("B: "));
    assert!(!fs
        .iter()
        .any(|f| f["key"].as_str().unwrap().starts_with("devices.") && f["state"] != "unknown"));

    // Policy errors: the file, the line and what was expected; exit 2.
    let bad = write(
        &t.path,
        "bad.toml",
        "[parity]\nallow = [\"kernal.release\"]\n",
    );
    let (code, _, err) = selfprobe(&["diff", "--policy", bad.to_str().unwrap(), a, b]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bad.toml:2:10") && err.contains("names no fact"),
        "{err}"
    );
    let bad = write(
        &t.path,
        "bad2.toml",
        "[parity]\nallowed = [\"kernel.release\"]\n",
    );
    let (code, _, err) = selfprobe(&["diff", "--policy", bad.to_str().unwrap(), a, b]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bad2.toml:2:") && err.contains("allowed"),
        "{err}"
    );
}

#[test]
fn diff_names_each_bad_input_and_verifies_envelopes_when_asked() {
    let t = TempPath::dir("diffbad").unwrap();
    let (a, _) = reports(&t.path);
    let a = a.to_str().unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (write(&t.path, "garbage.json", "{\"schema\": "), "not JSON"),
        (
            write(&t.path, "pkg.json", "{\"name\": \"pkg\"}"),
            "not a selfprobe report",
        ),
        (t.path.join("missing.json"), "cannot read"),
    ];
    for (p, want) in &cases {
        let (code, _, err) = selfprobe(&["diff", a, p.to_str().unwrap()]);
        assert_eq!(code, 2, "{}: {err}", p.display());
        assert!(
            err.contains(p.to_str().unwrap()) && err.contains(want),
            "{err}"
        );
    }
    // A FIFO where a report should be: refused at once, not waited on.
    let fifo = t.path.join("fifo.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let start = Instant::now();
    let (code, _, err) = selfprobe(&["diff", a, fifo.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));

    // Signed: verified with --pubkey; one changed after signing is an
    // error (exit 3), not a diff; a bare report cannot be verified.
    let key = t.path.join("k.pem");
    sh(Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key));
    let pubk = t.path.join("k.pub");
    let (code, out, err) = selfprobe(&["pubkey", "--sign-key", key.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    fs::write(&pubk, out).unwrap();
    let f = tree("signed", "6.1.0", "192.0.2.1");
    let env = t.path.join("s.intoto.json");
    let r = f.run(&[
        "--attest",
        env.to_str().unwrap(),
        "--sign-key",
        key.to_str().unwrap(),
    ]);
    assert!(env.is_file(), "{}", r.stderr);
    let (env_s, pub_s) = (env.to_str().unwrap(), pubk.to_str().unwrap());
    let (code, text, err) = selfprobe(&["diff", "--pubkey", pub_s, env_s, env_s]);
    assert_eq!(code, 0, "{text}{err}");
    assert!(text.contains("verified, keyid"), "{text}");
    let bad = write(
        &t.path,
        "t.intoto.json",
        &tamper(&fs::read_to_string(&env).unwrap()),
    );
    let (code, text, err) = selfprobe(&["diff", "--pubkey", pub_s, env_s, bad.to_str().unwrap()]);
    assert_eq!((code, text.as_str()), (3, ""), "{err}");
    assert!(
        err.contains("B: ") && err.contains("does not verify"),
        "{err}"
    );
    let (code, _, err) = selfprobe(&["diff", "--pubkey", pub_s, env_s, a]);
    assert_eq!(code, 3);
    assert!(err.contains("is a report, not an envelope"), "{err}");
    // Without --pubkey the envelope is compared as it claims, and said so.
    let (code, _, err) = selfprobe(&["diff", env_s, env_s]);
    assert_eq!(code, 0);
    assert!(err.contains("without verification"), "{err}");
    let td = write(
        &t.path,
        "x.teardown.intoto.json",
        &teardown_statement(&key, "x", "n1", "gone", 2, &"ab".repeat(32)),
    );
    let (code, _, err) = selfprobe(&["diff", "--pubkey", pub_s, env_s, td.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("teardown statement"), "{err}");
}

fn sh(cmd: &mut Command) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// An inspection directory made by hand (docs/inspection-directory.md) from fixture runs:
/// signed reports with their nonces, a teardown statement signed by a
/// second key, an inspection.json with one container it could not probe,
/// and what a directory also holds (package.json, a symlink, a FIFO).
#[test]
fn summary_of_an_inspection_directory_and_of_hand_copied_files() {
    if Command::new("openssl").arg("version").output().is_err() {
        crate::common::podman::skip_or_fail("summary_of_an_inspection_directory", "no openssl");
        return;
    }
    let t = TempPath::dir("summ").unwrap();
    let dir = t.path.join("insp");
    fs::create_dir(&dir).unwrap();
    let key = t.path.join("k.pem");
    let key2 = t.path.join("k2.pem");
    for k in [&key, &key2] {
        sh(Command::new("openssl")
            .args(["genpkey", "-algorithm", "ed25519", "-out"])
            .arg(k));
    }
    let (_, pubout, _) = selfprobe(&["pubkey", "--sign-key", key.to_str().unwrap()]);
    fs::write(dir.join("signing.pub"), &pubout).unwrap();
    let (_, pub2, _) = selfprobe(&["pubkey", "--sign-key", key2.to_str().unwrap()]);
    fs::write(dir.join("teardown.pub"), &pub2).unwrap();
    let mut nonces = String::from("# written by hand, as inspect writes it\n");
    let mut sha = String::new();
    for (name, rel) in [("web", "6.1.0"), ("api", "6.8.0")] {
        let f = tree(name, rel, "192.0.2.1");
        let nonce = format!("nonce-{name}-0123456789");
        let env = dir.join(format!("{name}.intoto.json"));
        let r = f.run(&[
            "--attest",
            env.to_str().unwrap(),
            "--sign-key",
            key.to_str().unwrap(),
            "--nonce",
            &nonce,
        ]);
        fs::write(dir.join(format!("{name}.json")), &r.stdout).unwrap();
        sha = r.json["tool"]["sha256"].as_str().unwrap().to_string();
        nonces.push_str(&format!("{name} {nonce}\n"));
    }
    fs::write(dir.join("nonces"), &nonces).unwrap();
    fs::write(
        dir.join("web.teardown.intoto.json"),
        teardown_statement(&key2, "web", "nonce-web-0123456789", "remains", 0, &sha),
    )
    .unwrap();
    fs::write(
        dir.join("inspection.json"),
        json!({"schema": "https://selfprobe.dev/schema/inspection/v1", "id": "insp-1",
               "containers": [
                 {"name": "web", "report": "web.json", "envelope": "web.intoto.json", "exit": 1, "not_probed": null,
                  "findings": [{"id": "bbbbbbbbbbbb", "code": "engine.socket-reachable", "severity": "critical",
                                "status": "fail", "phase": 2, "control": "engine-socket", "title": "t",
                                "subject": "/var/run/docker.sock", "message": "the engine's record mounts the docker socket",
                                "evidence": {}, "remediation": "r"}]},
                 {"name": "api", "report": "api.json", "envelope": "api.intoto.json", "exit": 1, "not_probed": null, "findings": []},
                 {"name": "ro", "report": null, "envelope": null, "exit": 3,
                  "not_probed": "the root is read-only and no volume takes the binary", "findings": []}],
               "exit": 3})
        .to_string(),
    )
    .unwrap();
    fs::write(dir.join("teardown.json"), "{}").unwrap();
    fs::write(dir.join("package.json"), "{\"name\": \"x\"}").unwrap();
    symlink(dir.join("api.intoto.json"), dir.join("linked.intoto.json")).unwrap();
    nix::unistd::mkfifo(
        &dir.join("pipe.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();

    let (d, k1, k2, n) = (
        dir.to_str().unwrap(),
        dir.join("signing.pub"),
        dir.join("teardown.pub"),
        dir.join("nonces"),
    );
    let start = Instant::now();
    let (code, out, err) = selfprobe(&[
        "summary",
        "--format",
        "json",
        "--pubkey",
        k1.to_str().unwrap(),
        "--pubkey",
        k2.to_str().unwrap(),
        "--nonces",
        n.to_str().unwrap(),
        "--binary-sha256",
        &sha,
        d,
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "a FIFO must not hang it"
    );
    assert_eq!(code, 3, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let ws = |name: &str| {
        v["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == name)
            .unwrap_or_else(|| panic!("no row {name}: {out}"))
            .clone()
    };
    let web = ws("web");
    assert_eq!(web["verified"], true, "{web}");
    assert_eq!(web["checked"], json!(["nonce", "binary"]));
    assert_eq!(web["teardown_result"], "remains");
    assert_eq!(web["controls"]["teardown"]["source"], "teardown statement");
    assert_eq!(web["controls"]["teardown"]["score"], 0);
    assert_eq!(
        web["worst"], "critical",
        "the inspection's own finding counts"
    );
    assert_eq!(web["exit"], 1);
    assert_eq!(ws("api")["verified"], true);
    assert_eq!(ws("api")["controls"]["teardown"]["source"], "report");
    let ro = ws("ro");
    assert_eq!(ro["verified"], false);
    assert!(
        ro["verification"]
            .as_str()
            .unwrap()
            .contains("not probed: the root is read-only"),
        "{ro}"
    );
    assert!(
        v["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["name"] != "linked" && w["name"] != "package"),
        "a symlink is not followed, package.json is nobody's: {out}"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("linked.intoto.json: a symlink, not followed"),
        "{notes}"
    );
    assert!(
        notes.contains("pipe.json: not a regular file, not read"),
        "a FIFO is named: {notes}"
    );
    assert!(err.is_empty() || !err.contains("panicked"), "{err}");

    // The wrong nonce, the wrong binary: each a reason, each exit 3.
    let wrong = write(
        &t.path,
        "wrong-nonces",
        "web other-nonce\napi nonce-api-0123456789\n",
    );
    let (code, out, _) = selfprobe(&[
        "summary",
        "--pubkey",
        k1.to_str().unwrap(),
        "--pubkey",
        k2.to_str().unwrap(),
        "--nonces",
        wrong.to_str().unwrap(),
        "--binary-sha256",
        &"cd".repeat(32),
        d,
    ]);
    assert_eq!(code, 3);
    assert!(out.contains("nonce mismatch"), "{out}");
    assert!(out.contains("tool.sha256 is"), "{out}");

    // Without keys: what the inputs claim, each marked not verified, and
    // the hint that the directory has its key and nonces.
    let (code, out, _) = selfprobe(&["summary", d]);
    assert_eq!(code, 3);
    assert!(out.contains("no --pubkey given"), "{out}");
    assert!(
        out.contains("--nonces") && out.contains("signing.pub"),
        "{out}"
    );

    // Files copied by hand: each its own workspace, named by its stem; a
    // bare report cannot be verified; an unreadable or huge file is named.
    let loose = t.path.join("loose");
    fs::create_dir(&loose).unwrap();
    fs::copy(
        dir.join("api.intoto.json"),
        loose.join("laptop.intoto.json"),
    )
    .unwrap();
    fs::copy(dir.join("api.json"), loose.join("ci-runner.json")).unwrap();
    let huge = loose.join("huge.json");
    fs::File::create(&huge)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let (code, out, err) = selfprobe(&[
        "summary",
        "--pubkey",
        k1.to_str().unwrap(),
        loose.join("laptop.intoto.json").to_str().unwrap(),
        loose.join("ci-runner.json").to_str().unwrap(),
        huge.to_str().unwrap(),
        t.path.join("nowhere").to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{out}{err}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name}: {out}"))
            .to_string()
    };
    assert!(line("laptop").contains("VERIFIED (signature)"), "{out}");
    assert!(line("ci-runner").contains("cannot be verified"), "{out}");
    assert!(line("huge").contains("larger than 22 MiB"), "{out}");
    assert!(
        out.contains("nowhere") && err.contains("nowhere"),
        "a missing path is named: {out}{err}"
    );

    // Bad options: exit 2 with what was wrong.
    let badn = write(&t.path, "bad-nonces", "web\n");
    let (code, _, err) = selfprobe(&["summary", "--nonces", badn.to_str().unwrap(), d]);
    assert_eq!(code, 2);
    assert!(
        err.contains("bad-nonces:1: expected `<name> <nonce>`"),
        "{err}"
    );
    let (code, _, err) = selfprobe(&["summary", "--pubkey", key.to_str().unwrap(), d]);
    assert_eq!(code, 2, "a private key is no --pubkey");
    assert!(err.contains("--pubkey"), "{err}");
}

/// docs/parity.md lists exactly the keys the source compares, with their
/// axes: a key is documented when it is added, and none is renamed.
#[test]
fn the_documented_keys_are_the_compared_ones() {
    let doc = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/parity.md")).unwrap();
    let rows: Vec<(String, String)> = doc
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            if cells.len() != 5 {
                return None;
            }
            let key = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((key.to_string(), cells.get(2)?.to_string()))
        })
        .collect();
    let want: Vec<(String, String)> = selfprobe_host::compare::facts::KEYS
        .iter()
        .map(|(k, _)| {
            let axis = selfprobe_host::compare::facts::Axis::of(k).unwrap();
            (k.to_string(), axis.as_str().to_string())
        })
        .collect();
    assert_eq!(rows, want);
}
