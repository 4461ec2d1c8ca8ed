//! `selfprobe-host inspect` against a workspace that lies, and for honest ones
//! it used to accuse (issue 28, points 1 to 7). The rule a clean result
//! must meet (DESIGN.md §13): the inspector's own binary ran, with the
//! inspector's arguments, every fact the cross-check needs was reported and
//! agrees with the engine's record; whether the runtime is a sandbox comes
//! from the engine; destinations are compared as the container resolves
//! them; and nothing is left behind.
//!
//! Each case is a real container that got a verified report with no
//! disagreement, or a false accusation, or a file left behind, from the
//! inspect of issue 21 to 27:
//! 1. a forged probe bind-mounted at `/usr/local/bin/selfprobe` by the
//!    container's creator (a script whose reports a signer outside signs:
//!    the test's own signer, standing in for a forger that signs with the
//!    key it reads on stdin);
//! 2. the placed binary swapped by the workspace (a loop watching `/` for
//!    `.selfprobe-*`), running the real probe with `--root /tmp/empty` or
//!    with a policy of its own;
//! 3. an empty report and a stripped one (findings gone, 16/16, the facts
//!    the comparison reads nulled) under `--cgroupns private`;
//! 4. gVisor's /proc/version shown under runc (bind-mounted by the
//!    workspace itself over /proc/version);
//! 5. a real Debian root (/var/run -> /run) with the engine socket bound at
//!    both spellings, on Docker and rootful podman;
//! 6. gVisor with a named and an anonymous volume;
//! 7. rootful podman `--cap-drop=all`, whose `/` is 0555.
//!
//! Network rule: every container has `--network none`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use selfprobe::attest::dsse::{Envelope, PAYLOAD_TYPE};
use selfprobe::attest::{PREDICATE_TYPE, STATEMENT_TYPE, TOOL_SUBJECT};

use crate::common::devc;
use crate::common::engines::{docker, docker_image, gvisor_image};
use crate::common::fleet::signer;
use crate::common::inspect::*;
use crate::common::podman::{self, run_bounded, unique, PodmanService, TempPath};
use crate::common::shipped;

/// A forged probe: it runs the real one (bind-mounted at /opt/real) with
/// what it was asked, hands the result and its arguments to a signer
/// outside through /forge, and prints the forged report and envelope that
/// come back. $FORGE (the container's) picks the forgery.
const FORGER: &str = r#"#!/bin/sh
[ "$1" = run ] || exit 0
d=/forge
/opt/real "$@" > $d/real.$$ 2>/dev/null
{ echo "${FORGE:-real}"; printf '%s\n' "$@"; } > $d/args.$$
mv $d/args.$$ $d/req.$$
i=0
while [ ! -f $d/resp.$$ ]; do
  usleep 20000
  i=$((i + 1))
  [ $i -gt 1500 ] && exit 3
done
cat $d/resp.$$
"#;

/// The workspace's watcher: every `/.selfprobe-*` that appears is moved
/// aside and a wrapper put in its place, which runs it its own way.
const WATCH: &str = r#"#!/bin/sh
mode=$1
while :; do
  for f in /.selfprobe-*; do
    case "$f" in *'*'*|*.policy.toml|*.real) continue ;; esac
    [ -e "$f.real" ] && continue
    mv "$f" "$f.real" && cp /opt/hostile/wrap-$mode "$f" && chmod 755 "$f"
  done
  usleep 1000
done
"#;

/// The real probe, against an empty tree instead of `/`.
const WRAP_ROOT: &str = r#"#!/bin/sh
[ "$1" = run ] || exec "$0.real" "$@"
echo swapped > /tmp/swapped
mkdir -p /tmp/empty
first=1
prev=
for a in "$@"; do
  if [ $first = 1 ]; then set --; first=0; fi
  if [ "$prev" = --root ]; then a=/tmp/empty; fi
  set -- "$@" "$a"
  prev=$a
done
exec "$0.real" "$@"
"#;

/// The real probe, with the workspace's own policy.
const WRAP_POLICY: &str = r#"#!/bin/sh
[ "$1" = run ] || exec "$0.real" "$@"
echo swapped > /tmp/swapped
exec "$0.real" "$@" --policy /opt/hostile/evil.toml
"#;

/// Every severity the clean container raises, lowered to info.
const EVIL_POLICY: &str = "[severity]\n\"write.rootfs\" = \"info\"\n\"priv.no-new-privs-unset\" = \"info\"\n\"mount.workspace-missing\" = \"info\"\n\"priv.root-without-userns\" = \"info\"\n";

fn write_exec(p: &Path, text: &str) {
    std::fs::write(p, text).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn sha256_hex(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(std::fs::read(p).unwrap()))
}

/// The signer outside: answers every request the forgers write into
/// `dirs` until stopped, signing with `key` as the forger would.
struct Oracle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl Oracle {
    fn start(dirs: Vec<PathBuf>, key: &Path, forger_sha: String) -> Oracle {
        let stop = Arc::new(AtomicBool::new(false));
        let s = signer(key);
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut answered = Vec::new();
            while !halt.load(Ordering::Relaxed) {
                for d in &dirs {
                    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let Some(pid) = name.strip_prefix("req.") else {
                            continue;
                        };
                        let req = std::fs::read_to_string(e.path()).unwrap_or_default();
                        let real = std::fs::read(d.join(format!("real.{pid}"))).unwrap_or_default();
                        let mode = req.lines().next().unwrap_or("").to_string();
                        let out = forge(&mode, &real, &s, &forger_sha);
                        let tmp = d.join(format!("tmp.{pid}"));
                        std::fs::write(&tmp, out).unwrap();
                        std::fs::rename(&tmp, d.join(format!("resp.{pid}"))).unwrap();
                        std::fs::remove_file(e.path()).unwrap();
                        answered.push(format!("{}:{mode}", d.display()));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            answered
        });
        Oracle {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops it; what it answered (`DIR:MODE` each).
    fn answered(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The forged output: the real probe's report made into `mode`'s forgery,
/// naming the forger as its binary, signed, then its envelope.
fn forge(mode: &str, real: &[u8], s: &selfprobe::keys::Signer, forger_sha: &str) -> Vec<u8> {
    let mut it = serde_json::Deserializer::from_slice(real).into_iter::<Value>();
    let Some(Ok(mut report)) = it.next() else {
        return b"not a report\n".to_vec();
    };
    report["tool"]["sha256"] = json!(forger_sha);
    let clean = |r: &mut Value| {
        r["findings"] = json!([]);
        r["summary"] =
            json!({"total": 0, "by_severity": {}, "by_status": {}, "gating": 0, "exit_code": 0});
        let max = r["scorecard"]["max"].clone();
        r["scorecard"]["total"] = max;
    };
    match mode {
        "empty" => {
            clean(&mut report);
            report["inventory"] = json!({});
            report["probes"] = json!([]);
        }
        "stripped" => {
            clean(&mut report);
            for sec in ["privilege", "devices", "writable", "sockets"] {
                report["inventory"][sec] = Value::Null;
            }
        }
        _ => {}
    }
    let st = json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": TOOL_SUBJECT, "digest": {"sha256": forger_sha}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": report,
    });
    let env = Envelope::sign(s, PAYLOAD_TYPE, &serde_json::to_vec(&st).unwrap()).to_json();
    let mut out = serde_json::to_vec_pretty(&report).unwrap();
    out.push(b'\n');
    out.extend_from_slice(env.as_bytes());
    out.push(b'\n');
    out
}

fn disagreements(c: &Value) -> Vec<(String, String, String)> {
    c["disagreements"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["fact"].as_str().unwrap_or("").to_string(),
                d["code"].as_str().unwrap_or("").to_string(),
                d["severity"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn has_high(c: &Value, code: &str, fact: &str) -> bool {
    disagreements(c)
        .iter()
        .any(|(f, k, s)| k == code && f == fact && s == "high")
}

/// Points 1, 2 and 4 in one inspection with the inspector's own binary:
/// the forged probe bind-mounted by the container's creator is not run (the
/// inspector's is placed and verified); the binary swapped in place runs
/// the real probe with --root /tmp/empty, or with the workspace's policy,
/// and its verified report is not clean (disagree.run-arguments, high);
/// gVisor's /proc/version under runc leaves the namespaces compared.
#[test]
fn what_runs_and_how_it_was_asked_are_the_inspectors() {
    const T: &str = "what_runs_and_how_it_was_asked_are_the_inspectors";
    let Some(img) = docker_image(T) else {
        return;
    };
    let tmp = TempPath::dir("trust").unwrap();
    std::fs::set_permissions(&tmp.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let key = key(&tmp.path);
    let forger = tmp.path.join("forger");
    write_exec(&forger, FORGER);
    let forge_dir = tmp.path.join("forge");
    std::fs::create_dir(&forge_dir).unwrap();
    let hostile = tmp.path.join("hostile");
    std::fs::create_dir(&hostile).unwrap();
    write_exec(&hostile.join("watch"), WATCH);
    write_exec(&hostile.join("wrap-root"), WRAP_ROOT);
    write_exec(&hostile.join("wrap-policy"), WRAP_POLICY);
    std::fs::write(hostile.join("evil.toml"), EVIL_POLICY).unwrap();
    let real = format!("{}:/opt/real:ro", shipped::bin_str());
    let bound = format!("{}:/usr/local/bin/selfprobe:ro", forger.display());
    let fdir = format!("{}:/forge", forge_dir.display());
    let hdir = format!("{}:/opt/hostile:ro", hostile.display());
    let fake = "mkdir /fk && mount -t tmpfs none /fk \
                && echo 'Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016' > /fk/version \
                && mount -o bind /fk/version /proc/version && exec sleep 600";
    let net = ["--network", "none"];
    let (bind_c, root_c, policy_c, version_c) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            let f = [&net[..], &["-v", &real, "-v", &bound, "-v", &fdir]].concat();
            Ctr::start(
                Eng::Docker,
                None,
                "forgedbind",
                &f,
                img,
                &["/bin/sleep", "600"],
            )
        });
        let b = s.spawn(|| {
            let f = [&net[..], &["-v", &hdir]].concat();
            Ctr::start(
                Eng::Docker,
                None,
                "swaproot",
                &f,
                img,
                &["/bin/sh", "/opt/hostile/watch", "root"],
            )
        });
        let c = s.spawn(|| {
            let f = [&net[..], &["-v", &hdir]].concat();
            Ctr::start(
                Eng::Docker,
                None,
                "swappolicy",
                &f,
                img,
                &["/bin/sh", "/opt/hostile/watch", "policy"],
            )
        });
        let d = s.spawn(|| {
            let f = [&net[..], &["--cap-add", "SYS_ADMIN", "--pid", "host"]].concat();
            Ctr::start(
                Eng::Docker,
                None,
                "fakeversion",
                &f,
                img,
                &["/bin/sh", "-c", fake],
            )
        });
        (
            a.join().unwrap(),
            b.join().unwrap(),
            c.join().unwrap(),
            d.join().unwrap(),
        )
    });
    // The fake /proc/version is in place before the inspection.
    let mut shown = String::new();
    for _ in 0..100 {
        let mut c = version_c.cmd();
        c.args(["exec", &version_c.name, "cat", "/proc/version"]);
        shown = run_bounded(c, Duration::from_secs(20), None)
            .unwrap()
            .stdout;
        if shown.contains("Sun Jan 10 15:06:54 PST 2016") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        shown.contains("PST 2016"),
        "no fake /proc/version: {shown:?}"
    );
    let oracle = Oracle::start(vec![forge_dir.clone()], &key, sha256_hex(&forger));
    let out = tmp.path.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args(["inspect", "--engine", "docker", "--sign-key"])
        .arg(&key)
        .arg("--out-dir")
        .arg(&out)
        .args([&bind_c.name, &root_c.name, &policy_c.name, &version_c.name]);
    let ran = run_measured(cmd, Duration::from_secs(180));
    let answered = oracle.answered();
    let insp = read_json(&out.join("inspection.json"));
    let mut bad = Vec::new();

    // 1. The forged probe bound in is not run: the inspector's binary is
    // placed in its stead, verified, and agrees.
    let e = entry(&insp, &bind_c.name);
    if !answered.is_empty() {
        bad.push(format!("1: the forged probe ran: {answered:?}"));
    }
    let refused = e["placement"]["bound_refused"].as_str().unwrap_or("");
    if e["placement"]["existing"] != false
        || !refused.contains("not the inspector's binary")
        || !refused.contains(&forger.display().to_string())
        || e["placement"]["sha256"] != insp["binary"]["sha256"]
    {
        bad.push(format!("1: placement {}", e["placement"]));
    }
    if e["verified"] != true || !disagreements(e).is_empty() || e["exit"] == 3 {
        bad.push(format!(
            "1: verified {}, disagreements {:?}, exit {}",
            e["verified"],
            disagreements(e),
            e["exit"]
        ));
    }

    // 2. The swapped binary ran the real probe its own way: the signature
    // holds (the real binary signed), the arguments do not.
    for (c, fact, want) in [
        (&root_c, "run.root", json!("/tmp/empty")),
        (&policy_c, "run.policy", Value::Null),
    ] {
        let e = entry(&insp, &c.name);
        let mut sw = c.cmd();
        sw.args(["exec", &c.name, "cat", "/tmp/swapped"]);
        let swapped = run_bounded(sw, Duration::from_secs(20), None).unwrap();
        if !swapped.stdout.contains("swapped") {
            bad.push(format!(
                "2: {fact}: the watcher did not swap the binary (the test's race was lost): {}",
                e["placement"]
            ));
            continue;
        }
        if e["verified"] != true {
            bad.push(format!("2: {fact}: not verified: {}", e["verification"]));
        }
        if !has_high(e, "disagree.run-arguments", fact) || e["exit"] == 0 {
            bad.push(format!(
                "2: {fact}: no high disagree.run-arguments (exit {}): {:?}",
                e["exit"],
                disagreements(e)
            ));
        }
        let cmp = verdict(e, fact);
        if fact == "run.root" && cmp["inside"] != want {
            bad.push(format!("2: {fact}: {cmp}"));
        }
        if fact == "run.policy" && (cmp["engine"] != want || !cmp["inside"].is_string()) {
            bad.push(format!("2: {fact}: {cmp}"));
        }
    }

    // 4. gVisor's /proc/version under runc: the engine says runc, so the
    // namespaces and the LSM are compared (the host PID namespace agrees)
    // and the claimed sandbox is a narrower claim.
    let e = entry(&insp, &version_c.name);
    for fact in ["namespace.pid", "namespace.net", "lsm"] {
        let v = &verdict(e, fact)["verdict"];
        if v != "agree" {
            bad.push(format!("4: {fact} is {v} under runc: {}", verdict(e, fact)));
        }
    }
    if !has_high(e, "disagree.runtime", "runtime") {
        bad.push(format!(
            "4: no high disagree.runtime: {:?}",
            disagreements(e)
        ));
    }
    assert_none(&bad, &ran);
}

/// Point 3: an empty report, and one stripped to 16/16 with the facts the
/// comparison reads taken out, each signed and naming the inspector's own
/// binary (here the forger is `--binary`), under `--cgroupns private`
/// (where no namespace the host shares gives the lie away): each is
/// verified and not clean, every fact it leaves out a high
/// disagree.fact-missing.
#[test]
fn an_empty_or_stripped_report_is_not_clean() {
    const T: &str = "an_empty_or_stripped_report_is_not_clean";
    let Some(img) = docker_image(T) else {
        return;
    };
    let tmp = TempPath::dir("stripped").unwrap();
    std::fs::set_permissions(&tmp.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let key = key(&tmp.path);
    let forger = tmp.path.join("forger");
    write_exec(&forger, FORGER);
    let ws = workspace();
    let real = format!("{}:/opt/real:ro", shipped::bin_str());
    let wsv = format!("{}:/workspace", ws.arg());
    let mut dirs = Vec::new();
    let ctrs: Vec<(Ctr, &str)> = ["empty", "stripped"]
        .into_iter()
        .map(|mode| {
            let d = tmp.path.join(mode);
            std::fs::create_dir(&d).unwrap();
            let fdir = format!("{}:/forge", d.display());
            let env = format!("FORGE={mode}");
            dirs.push(d);
            let f = [
                "--network",
                "none",
                "--cgroupns",
                "private",
                "--cap-drop=all",
                "-e",
                &env,
                "-v",
                &real,
                "-v",
                &fdir,
                "-v",
                &wsv,
            ];
            (
                Ctr::start(Eng::Docker, None, mode, &f, img, &["/bin/sleep", "600"]),
                mode,
            )
        })
        .collect();
    let oracle = Oracle::start(dirs, &key, sha256_hex(&forger));
    let out = tmp.path.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args(["inspect", "--engine", "docker", "--sign-key"])
        .arg(&key)
        .arg("--binary")
        .arg(&forger)
        .arg("--out-dir")
        .arg(&out)
        .args(ctrs.iter().map(|(c, _)| c.name.as_str()));
    let ran = run_measured(cmd, Duration::from_secs(180));
    let answered = oracle.answered();
    let insp = read_json(&out.join("inspection.json"));
    let mut bad = Vec::new();
    if answered.len() != 2 {
        bad.push(format!("the forgers asked {answered:?}"));
    }
    for (c, mode) in &ctrs {
        let e = entry(&insp, &c.name);
        if e["verified"] != true {
            bad.push(format!("{mode}: not verified: {}", e["verification"]));
        }
        let missing: Vec<String> = disagreements(e)
            .into_iter()
            .filter(|(_, k, s)| k == "disagree.fact-missing" && s == "high")
            .map(|(f, _, _)| f)
            .collect();
        let want: &[&str] = if *mode == "empty" {
            &[
                "capabilities.effective",
                "seccomp",
                "namespace.pid",
                "namespace.cgroup",
                "devices",
                "user",
                "runtime",
                "mounts",
                "read_only_root",
            ]
        } else {
            &[
                "capabilities.effective",
                "seccomp",
                "devices",
                "user",
                "read_only_root",
            ]
        };
        for f in want {
            if !missing.iter().any(|m| m == f) {
                bad.push(format!(
                    "{mode}: {f} is not a missing fact: {:?}",
                    disagreements(e)
                ));
            }
        }
        if e["exit"] == 0 {
            bad.push(format!("{mode}: exit 0: the inspection calls it clean"));
        }
        // What the stripped report kept is still compared and agrees.
        if *mode == "stripped" && verdict(e, "namespace.cgroup")["verdict"] != "agree" {
            bad.push(format!(
                "stripped: namespace.cgroup {}",
                verdict(e, "namespace.cgroup")
            ));
        }
    }
    assert_none(&bad, &ran);
}

/// Point 5: a real Debian root (tests/devc/build.sh: debootstrap'd
/// bookworm, /var/run -> /run) with the engine socket bound at
/// /var/run/… and at /run/…, on Docker and on rootful podman: verified,
/// no disagreement, the socket agrees at both spellings, nothing left.
#[test]
fn an_engine_socket_at_both_spellings_in_a_debian_image_agrees() {
    const T: &str = "an_engine_socket_at_both_spellings_in_a_debian_image_agrees";
    let mut bad = Vec::new();
    if let Some(img) = devc::setup(T, "docker", docker, false) {
        let tmp = TempPath::dir("deb").unwrap();
        let specs = [
            (
                "debvar",
                "/var/run/docker.sock:/var/run/docker.sock",
                "/var/run/docker.sock",
            ),
            (
                "debrun",
                "/var/run/docker.sock:/run/docker.sock",
                "/run/docker.sock",
            ),
        ];
        bad.extend(socket_case(Eng::Docker, &img, &tmp.path, &specs));
    }
    let podman_img = devc::setup(T, "podman", podman::podman, false);
    if let Some(img) = podman_img {
        let tmp = TempPath::dir("pdeb").unwrap();
        let svc = PodmanService::start();
        let var = format!("{}:/var/run/podman/podman.sock", svc.sock.arg());
        let run = format!("{}:/run/podman/podman.sock", svc.sock.arg());
        let specs = [
            ("pdebvar", var.as_str(), "/var/run/podman/podman.sock"),
            ("pdebrun", run.as_str(), "/run/podman/podman.sock"),
        ];
        bad.extend(socket_case(Eng::Podman, &img, &tmp.path, &specs));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// One engine's containers of the Debian image, each with the socket bound
/// as `(tag, -v argument, destination)`, inspected in one call.
fn socket_case(eng: Eng, img: &str, dir: &Path, specs: &[(&str, &str, &str)]) -> Vec<String> {
    let ctrs: Vec<Ctr> = specs
        .iter()
        .map(|(tag, v, _)| {
            Ctr::start(
                eng,
                None,
                tag,
                &["--network", "none", "-v", v],
                img,
                &["sleep", "600"],
            )
        })
        .collect();
    let before: Vec<String> = ctrs.iter().map(Ctr::diff).collect();
    let out = dir.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.env("CONTAINERS_CONF", podman::conf())
        .args([
            "inspect",
            "--engine",
            if eng == Eng::Docker {
                "docker"
            } else {
                "podman"
            },
        ])
        .arg("--out-dir")
        .arg(&out)
        .args(ctrs.iter().map(|c| c.name.as_str()));
    let ran = run_measured(cmd, Duration::from_secs(180));
    let insp = read_json(&out.join("inspection.json"));
    let mut bad = Vec::new();
    for ((c, (tag, _, dest)), before) in ctrs.iter().zip(specs).zip(&before) {
        let e = entry(&insp, &c.name);
        if e["verified"] != true || e["exit"] == 3 || !disagreements(e).is_empty() {
            bad.push(format!(
                "{eng:?} {tag}: verified {}, exit {}, disagreements {:#}\n{}",
                e["verified"], e["exit"], e["disagreements"], ran.stdout
            ));
        }
        let s = verdict(e, &format!("engine_socket:{dest}"));
        let m = verdict(e, &format!("mount:{dest}"));
        if s["verdict"] != "agree" || m["verdict"] != "agree" {
            bad.push(format!("{eng:?} {tag}: socket {s}, mount {m}"));
        }
        if e["placement"]["removed"] != true || &c.diff() != before {
            bad.push(format!("{eng:?} {tag}: left behind: {}", e["placement"]));
        }
    }
    bad
}

/// Point 6: gVisor with a named and an anonymous volume: over 9p the
/// inside cannot tell a volume from a bind, and the volume is a volume:
/// verified, no disagreement.
#[test]
fn gvisor_volumes_agree() {
    const T: &str = "gvisor_volumes_agree";
    let Some(img) = gvisor_image(T) else {
        return;
    };
    let tmp = TempPath::dir("gvol").unwrap();
    let vol = Vol {
        name: unique("gvol"),
        eng: Eng::Docker,
    };
    let mut c = docker();
    c.args(["volume", "create", &vol.name]);
    assert_eq!(
        run_bounded(c, Duration::from_secs(60), None).unwrap().code,
        Some(0)
    );
    let named = format!("{}:/data", vol.name);
    let ctr = Ctr::start(
        Eng::Docker,
        None,
        "gvol",
        &[
            "--runtime",
            "runsc",
            "--network",
            "none",
            "-v",
            &named,
            "-v",
            "/cache",
        ],
        img,
        &["/bin/sleep", "600"],
    );
    let out = tmp.path.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args(["inspect", "--engine", "docker", "--out-dir"])
        .arg(&out)
        .arg(&ctr.name);
    let ran = run_measured(cmd, Duration::from_secs(180));
    let insp = read_json(&out.join("inspection.json"));
    let e = entry(&insp, &ctr.name);
    let mut bad = Vec::new();
    if e["verified"] != true || e["exit"] == 3 || !disagreements(e).is_empty() {
        bad.push(format!(
            "verified {}, exit {}, disagreements {:#}",
            e["verified"], e["exit"], e["disagreements"]
        ));
    }
    for fact in ["mount:/data", "mount:/cache"] {
        if verdict(e, fact)["verdict"] != "agree" {
            bad.push(format!("{fact}: {}", verdict(e, fact)));
        }
    }
    if e["record"]["volumes"].as_array().map(Vec::len) != Some(2) {
        bad.push(format!("volumes: {}", e["record"]["volumes"]));
    }
    assert_none(&bad, &ran);
}

/// Point 7: rootful podman `--cap-drop=all` makes `/` 0555 and leaves root
/// without CAP_DAC_OVERRIDE: the probe the host wrote there cannot unlink
/// itself, and the host removes it; the inspection says so, and `podman
/// diff` is what it was.
#[test]
fn a_probe_the_container_cannot_remove_is_removed_by_the_host() {
    const T: &str = "a_probe_the_container_cannot_remove_is_removed_by_the_host";
    let Some(img) = podman::setup(T) else {
        return;
    };
    let tmp = TempPath::dir("capdrop").unwrap();
    let ctr = Ctr::start(
        Eng::Podman,
        None,
        "capdrop",
        &["--network", "none", "--cap-drop=all"],
        img,
        &["/bin/sleep", "600"],
    );
    let before = ctr.diff();
    let out = tmp.path.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.env("CONTAINERS_CONF", podman::conf())
        .args(["inspect", "--engine", "podman", "--out-dir"])
        .arg(&out)
        .arg(&ctr.name);
    let ran = run_measured(cmd, Duration::from_secs(120));
    let insp = read_json(&out.join("inspection.json"));
    let e = entry(&insp, &ctr.name);
    let p = &e["placement"];
    let mut bad = Vec::new();
    if p["method"] != "rootfs" || p["copied_by"] != "host" {
        bad.push(format!("placed {p}"));
    }
    if p["removed"] != true || p["removed_by"] != "host" {
        bad.push(format!("removal {p}"));
    }
    if !p["removal"]
        .as_str()
        .is_some_and(|r| r.contains("the host removed"))
    {
        bad.push(format!("the inspection does not say who removed it: {p}"));
    }
    if e["verified"] != true || !disagreements(e).is_empty() {
        bad.push(format!(
            "verified {}, {:?}",
            e["verified"],
            disagreements(e)
        ));
    }
    let after = ctr.diff();
    if after != before {
        bad.push(format!(
            "podman diff changed:\nbefore:\n{before}\nafter:\n{after}"
        ));
    }
    assert_none(&bad, &ran);
}
