//! The boundary from fixture trees (issue 12; src/facts/boundary.rs): trees built
//! from real captures under tests/data/captures/boundary/<name>/ (each with
//! a SOURCE saying where it was published and what it establishes), the
//! hermetic --root (the tree's environment and no other), and no control
//! scored 2 on data that was not there.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::fixture::{data, set_environ, Fixture, Run, BIN, DATA, PRIVATE_NS};
use crate::common::report::claims_a_container;

fn capture(name: &str, file: &str) -> String {
    let p = Path::new(DATA)
        .join("captures/boundary")
        .join(name)
        .join(file);
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn has_source(name: &str) {
    let s = capture(name, "SOURCE")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        s.contains("https://") || s.contains("captured on this project's test machine"),
        "{name}/SOURCE names no place of publication"
    );
}

/// /proc/self/ns links from a capture's "name inode" lines.
fn ns_links(f: &Fixture, lines: &str) {
    let pairs: Vec<(String, u64)> = lines
        .lines()
        .filter_map(|l| {
            let (n, i) = l.split_once(' ')?;
            Some((n.to_string(), i.trim().parse().ok()?))
        })
        .collect();
    let dir = f.path("proc/self/ns");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for (n, i) in pairs {
        symlink(format!("{n}:[{i}]"), dir.join(&n)).unwrap();
    }
}

/// `mount` output as the mountinfo lines it comes from (see the SOURCE
/// files): ids and the device number made up, each file bind rooted at
/// "/<container id>-<random>-<name>" as Kata names its shared files.
fn mount_to_mountinfo(mount: &str) -> String {
    let mut out = String::new();
    for (i, l) in mount.lines().enumerate() {
        let (src, rest) = l.split_once(" on ").unwrap();
        let (mp, rest) = rest.split_once(" type ").unwrap();
        let (fstype, opts) = rest.split_once(' ').unwrap();
        let opts = opts.trim_matches(|c| c == '(' || c == ')');
        let name = mp.rsplit('/').next().unwrap_or("");
        let root = if mp == "/" {
            "/".to_string()
        } else {
            format!(
                "/c36d7e3aeb2c-{:016x}-{name}",
                0x8123_7440_b172_6dabu64 + i as u64
            )
        };
        out.push_str(&format!(
            "{} 73 0:33 {root} {mp} {opts} - {fstype} {src} {opts}\n",
            73 + i
        ));
    }
    out
}

fn boundary(r: &Run) -> &Value {
    &r.json["inventory"]["boundary"]
}

fn evidence_sources(r: &Run) -> Vec<String> {
    boundary(r)["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["source"].as_str().unwrap_or("").to_string())
        .collect()
}

const INITIAL_NS: &str =
    "pid 4026531836\nmnt 4026531832\nuser 4026531837\nnet 4026531833\nuts 4026531838\nipc 4026531839\ncgroup 4026531835\n";

// ---------------------------------------------------------------------------
// gVisor.

#[test]
fn gvisor_capture_is_a_sandbox_whose_findings_name_the_sentry() {
    let name = "gvisor-debian-runsc";
    has_source(name);
    let f = Fixture::bare("gvisor");
    f.file("proc/self/mountinfo", &capture(name, "mountinfo"));
    f.file("proc/self/status", &capture(name, "status"));
    f.file("proc/self/uid_map", &capture(name, "uid_map"));
    f.file("proc/version", &capture(name, "version"));
    f.file("proc/cmdline", &capture(name, "cmdline"));
    f.file(
        "proc/self/environ",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\0HOSTNAME=c3c796a78273\0HOME=/\0",
    );
    f.file(".dockerenv", "");
    f.dir("dev");
    ns_links(&f, &capture(name, "ns"));
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "sandbox", "{b:#}");
    assert_eq!(b["runtime"], "runsc");
    assert_eq!(b["engine"], "docker");
    assert_eq!(b["rootless"], false);
    let srcs = evidence_sources(&r);
    for s in ["/proc/version", "/proc/cmdline", "/proc/self/mountinfo"] {
        assert!(
            srcs.iter().any(|x| x == s),
            "{s} not in the evidence: {srcs:?}"
        );
    }
    let sc = r.find("priv.seccomp-disabled", "seccomp");
    assert_eq!(sc["severity"], "low");
    assert!(sc["message"].as_str().unwrap().contains("Sentry"), "{sc}");
    let root = r.find("priv.root-in-sandbox", "uid 0");
    assert_eq!(root["severity"], "low");
    r.assert_absent(&["priv.root-without-userns", "boundary.none"]);
    // The Sentry has no time, mnt, uts, ipc or cgroup links and no
    // cap_last_cap: neither is "could not check".
    assert!(
        !r.pairs().iter().any(|(c, s)| c == "probe.incomplete"
            && (s.starts_with("namespaces") || s.starts_with("privilege"))),
        "{:#?}",
        r.pairs()
    );
    // Capabilities up to the bounding set's highest bit (a80405fb: 31).
    assert_eq!(r.json["inventory"]["privilege"]["caps_named_to"], 31);
    for f in r.findings() {
        let m = f["message"].as_str().unwrap_or("");
        assert!(
            !m.contains("reaches the host kernel") && !m.contains("root here is root on the host"),
            "{}: {m}",
            f["code"]
        );
        if f["code"] == "priv.capability" {
            assert!(m.contains("Sentry"), "{m}");
            assert!(f["evidence"]["number"].as_u64().unwrap() <= 31);
        }
    }
}

#[test]
fn a_newer_gvisor_release_string_alone_makes_a_sandbox() {
    let name = "gvisor-release-4.19";
    has_source(name);
    let f = Fixture::container("gvisor419", &data("plain.mountinfo"), &data("plain.status"));
    f.file("proc/version", &capture(name, "version"));
    f.file("proc/sys/kernel/osrelease", &capture(name, "osrelease"));
    let r = f.run(&[]);
    assert_eq!(boundary(&r)["kind"], "sandbox", "{:#}", boundary(&r));
    // The same tree without the Sentry's strings is a plain container.
    fs::remove_file(f.path("proc/version")).unwrap();
    fs::remove_file(f.path("proc/sys/kernel/osrelease")).unwrap();
    let r = f.run(&[]);
    assert_eq!(boundary(&r)["kind"], "container");
    assert_eq!(
        r.find("priv.root-without-userns", "uid 0")["severity"],
        "high"
    );
}

// ---------------------------------------------------------------------------
// Bare hosts.

fn host_tree(tag: &str, mountinfo: &str) -> Fixture {
    let f = Fixture::bare(tag);
    f.file("proc/self/mountinfo", mountinfo);
    // A root shell on the host: every capability, no seccomp.
    f.file(
        "proc/self/status",
        "Name:\tsh\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\n",
    );
    f.file("proc/self/uid_map", "         0          0 4294967295\n");
    f.file("proc/sys/kernel/cap_last_cap", "40\n");
    f.file("proc/self/environ", "PATH=/usr/bin:/bin\0HOME=/root\0");
    f.file("proc/1/comm", "init\n");
    f.file(
        "proc/net/dev",
        "Inter-|   Receive\n face |bytes\n    lo: 0 0\n  eth0: 398 5\n",
    );
    f.dir("dev");
    f
}

#[test]
fn a_bare_host_capture_reports_boundary_none_and_no_container() {
    let name = "host-openrc-netdata";
    has_source(name);
    let f = host_tree("host", &capture(name, "mountinfo"));
    ns_links(&f, INITIAL_NS);
    f.file("proc/2/status", "Name:\tkthreadd\nState:\tS (sleeping)\n");
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "host", "{b:#}");
    assert_eq!(b["engine"], "none");
    assert_eq!(b["runtime"], "none");
    let none = r.find("boundary.none", "boundary");
    assert_eq!(none["severity"], "high");
    assert_eq!(none["control"], "repo-scope");
    assert!(none["evidence"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e.as_str().unwrap().contains("/proc/self/ns/pid")));
    // /sys is read-write and every capability is held: in a container that
    // is --privileged; on the machine itself there is no container to be.
    r.assert_absent(&["priv.privileged", "priv.root-in-sandbox"]);
    for f in r.findings() {
        for field in ["message", "title"] {
            let t = f[field].as_str().unwrap_or("");
            assert!(!claims_a_container(t), "{} {field}: {t}", f["code"]);
        }
    }
    let rootfs = r.find("write.rootfs", "/");
    assert_eq!(rootfs["severity"], "medium");
    assert!(rootfs["message"].as_str().unwrap().contains("machine"));
    let sc = r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == "repo-scope")
        .unwrap()
        .clone();
    assert_eq!(sc["score"], 0, "{sc}");
}

/// A host running Docker containers: Debian's docker.io with its
/// /var/lib/docker bind-mounted onto itself, one container running. The
/// three lines are this project's CI machine's /proc/self/mountinfo
/// (2026-12-01), the state in which the real-machine test
/// (engines::the_machine_itself_...) saw "another container's root
/// filesystem" while a Docker test ran beside it.
const DOCKER_HOST_LINES: &str = "45 27 254:0 /var/lib/docker /var/lib/docker rw,relatime shared:2 - ext4 /dev/vda rw,discard\n\
51 45 0:40 / /var/lib/docker/overlay2/67d034de8c4ae9b27399c1bfe7d7de11216aef201d5d4ebdcdae8001762162a2/merged rw,relatime shared:3 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/ZOR6PAENTSJDFOA7W7SXFYP3B5:/var/lib/docker/overlay2/l/GEWV3O4AYFSCGLMQ6F3SYGHHRK,upperdir=/var/lib/docker/overlay2/67d034de8c4ae9b27399c1bfe7d7de11216aef201d5d4ebdcdae8001762162a2/diff,workdir=/var/lib/docker/overlay2/67d034de8c4ae9b27399c1bfe7d7de11216aef201d5d4ebdcdae8001762162a2/work\n";

#[test]
fn a_host_running_containers_calls_none_of_their_roots_another_containers() {
    let name = "host-openrc-netdata";
    let merged = "/var/lib/docker/overlay2/67d034de8c4ae9b27399c1bfe7d7de11216aef201d5d4ebdcdae8001762162a2/merged";
    let text = capture(name, "mountinfo") + DOCKER_HOST_LINES;
    let f = host_tree("dockerhost", &text);
    f.dir(merged.trim_start_matches('/'));
    ns_links(&f, INITIAL_NS);
    let r = f.run(&[]);
    assert_eq!(boundary(&r)["kind"], "host", "{:#}", boundary(&r));
    // The mount table still classifies it (the inventory says what it is)...
    let m = r.json["inventory"]["mounts"]["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mount_point"] == merged)
        .expect("the container's root in the inventory")
        .clone();
    assert_eq!(m["class"], "container-rootfs", "{m:#}");
    // ...but on the machine itself it is its own engine's container.
    r.assert_absent(&["mount.container-rootfs"]);
    for f in r.findings() {
        for field in ["message", "title"] {
            let t = f[field].as_str().unwrap_or("");
            assert!(!claims_a_container(t), "{} {field}: {t}", f["code"]);
        }
    }

    // The same lines inside a container (the host's /var/lib/docker
    // bind-mounted in) are another tenant's root, reported as before.
    let c = Fixture::container("dockerhost-in", &text, &data("plain.status"));
    c.dir(merged.trim_start_matches('/'));
    let r = c.run(&[]);
    assert_ne!(boundary(&r)["kind"], "host", "{:#}", boundary(&r));
    assert_eq!(r.find("mount.container-rootfs", merged)["severity"], "high");
}

#[test]
fn a_host_without_fixed_mount_namespace_numbers_is_told_by_pid1() {
    let name = "host-dynamic-mnt-runc";
    has_source(name);
    let f = host_tree("hostmnt", &capture(name, "mountinfo"));
    let mnt = capture(name, "ns");
    ns_links(&f, &format!("pid 4026531836\n{mnt}"));
    f.dir("proc/1/ns");
    symlink(
        format!("mnt:[{}]", capture(name, "pid1_mnt").trim()),
        f.path("proc/1/ns/mnt"),
    )
    .unwrap();
    let r = f.run(&[]);
    assert_eq!(boundary(&r)["kind"], "host", "{:#}", boundary(&r));
    assert!(evidence_sources(&r).iter().any(|s| s == "/proc/1/ns/mnt"));
    assert!(r.has("boundary.none", "boundary"));
    // PID 1 in another mount namespace, on an overlay root: a container
    // that shares the host's PIDs (--pid=host), not the machine.
    fs::remove_file(f.path("proc/1/ns/mnt")).unwrap();
    symlink("mnt:[4026532700]", f.path("proc/1/ns/mnt")).unwrap();
    f.file("proc/self/mountinfo", &data("plain.mountinfo"));
    let r = f.run(&[]);
    assert_eq!(boundary(&r)["kind"], "container", "{:#}", boundary(&r));
    r.assert_absent(&["boundary.none"]);
}

// ---------------------------------------------------------------------------
// Rootless engines.

#[test]
fn rootless_keep_id_map_is_rootless_and_ranks_capabilities_lower() {
    let name = "rootless-podman-keep-id";
    has_source(name);
    let f = Fixture::container("keepid", &data("plain.mountinfo"), &data("plain.status"));
    f.file("proc/self/uid_map", &capture(name, "uid_map"));
    let mut ns: Vec<(&str, u64)> = PRIVATE_NS.to_vec();
    ns.retain(|(n, _)| *n != "user");
    ns.push(("user", 4026532600));
    f.ns(&ns);
    let r = f.run(&[]);
    assert_eq!(boundary(&r)["rootless"], true, "{:#}", boundary(&r));
    r.assert_absent(&["priv.root-without-userns", "priv.root-in-sandbox"]);
    let dac = r.find("priv.capability", "CAP_DAC_OVERRIDE");
    assert_eq!(dac["severity"], "low", "medium in a plain container");
    assert!(dac["message"].as_str().unwrap().contains("user namespace"));
    assert_eq!(r.code, 0, "nothing at high: {:#?}", r.pairs());
}

#[test]
fn rootless_podman_capture_is_a_rootless_podman_container() {
    let name = "rootless-podman-vfs";
    has_source(name);
    let f = Fixture::bare("rlvfs");
    for (to, from) in [
        ("proc/self/mountinfo", "mountinfo"),
        ("proc/self/status", "status"),
        ("proc/self/uid_map", "uid_map"),
        ("proc/self/cgroup", "cgroup"),
        ("run/.containerenv", "containerenv"),
    ] {
        f.file(to, &capture(name, from));
    }
    f.file(
        "proc/self/environ",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\0container=podman\0HOME=/root\0",
    );
    f.file("proc/sys/kernel/cap_last_cap", "40\n");
    f.dir("dev");
    ns_links(&f, &capture(name, "ns"));
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "container", "{b:#}");
    assert_eq!(b["engine"], "podman");
    assert_eq!(b["runtime"], "runc/crun");
    assert_eq!(b["rootless"], true);
    r.assert_absent(&["priv.root-without-userns", "boundary.none"]);
    // The shared cgroup namespace of cgroup v1 is real: reported, and said
    // to be the host's.
    assert!(r.has("ns.host-cgroup", "cgroup"));
}

// ---------------------------------------------------------------------------
// Kata.

#[test]
fn kata_virtiofs_pod_is_a_vm_container_naming_the_vms_kernel() {
    let name = "kata-virtiofs-k8s";
    has_source(name);
    let mi = mount_to_mountinfo(&capture(name, "mount"));
    let f = Fixture::container(
        "kata",
        &mi,
        &data("plain.status").replace("Seccomp:\t2", "Seccomp:\t0"),
    );
    set_environ(&f.dir, &[("KUBERNETES_SERVICE_HOST", "10.96.0.1")]);
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "vm-container", "{b:#}");
    assert_eq!(b["runtime"], "kata");
    let sc = r.find("priv.seccomp-disabled", "seccomp");
    assert_eq!(sc["severity"], "low");
    assert!(sc["message"].as_str().unwrap().contains("VM"), "{sc}");
    let root = r.find("priv.root-in-sandbox", "uid 0");
    assert!(root["message"].as_str().unwrap().contains("VM"));
    r.assert_absent(&["priv.root-without-userns", "boundary.none"]);
}

#[test]
fn a_kata_9p_root_is_a_vm_not_gvisor() {
    let name = "kata-9p-docker";
    has_source(name);
    let mi = mount_to_mountinfo(&capture(name, "mount"));
    let f = Fixture::container("kata9p", &mi, &data("plain.status"));
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "vm-container", "{b:#}");
    assert_ne!(b["runtime"], "runsc");
}

// ---------------------------------------------------------------------------
// --root is hermetic, and nothing scores 2 on data that was not there.

/// The report without what differs from run to run: times, the run id.
fn normalized(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in [
                    "duration_us",
                    "duration_ms",
                    "elapsed_us",
                    "walk_us",
                    "entries_per_s",
                    "started",
                    "finished",
                ] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(run) = v.get_mut("run").and_then(Value::as_object_mut) {
        run.remove("id");
    }
    strip(&mut v);
    v
}

fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                if x.get(k) != y.get(k) {
                    differences(
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                        &format!("{path}.{k}"),
                        out,
                    );
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                differences(p, q, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} vs {b}")),
        _ => {}
    }
}

fn json_run(f: &Fixture, env: &[(&str, &str)]) -> Value {
    let mut cmd = Command::new(BIN);
    cmd.env_clear().arg("--root").arg(&f.dir).args([
        "--format",
        "json",
        "--workspace",
        "/workspace",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    crate::common::dump::report(&out.stdout);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_root_run_reads_the_trees_environment_and_no_other() {
    let f = Fixture::container("hermetic", &data("plain.mountinfo"), &data("plain.status"));
    f.dir("workspace");
    // What each variable below would find if the probes read it.
    f.file("opt/elsewhere/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n");
    f.dir("opt/cargo/registry");
    f.dir("opt/xdg/pip");
    f.file(
        "proc/self/environ",
        "PATH=/usr/bin:/bin\0HOME=/root\0GITLAB_TOKEN=glpat-aaaaaaaaaaaaaaaaaaaa\0",
    );
    let outside: &[(&str, &str)] = &[
        ("HOME", "/opt/elsewhere"),
        ("PATH", "/opt/evil/bin:/usr/bin"),
        ("DOCKER_HOST", "tcp://127.0.0.1:2375"),
        ("CONTAINER_HOST", "unix:///run/podman/podman.sock"),
        ("HTTP_PROXY", "http://127.0.0.1:3128"),
        ("HTTPS_PROXY", "http://127.0.0.1:3128"),
        ("http_proxy", "http://127.0.0.1:3128"),
        ("https_proxy", "http://127.0.0.1:3128"),
        ("ALL_PROXY", "socks5://127.0.0.1:1080"),
        ("NO_PROXY", "localhost"),
        ("container", "docker"),
        ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
        ("SSL_CERT_DIR", "/opt/certs"),
        ("CARGO_HOME", "/opt/cargo"),
        ("XDG_CACHE_HOME", "/opt/xdg"),
        ("SSH_AUTH_SOCK", "/tmp/agent.sock"),
        ("GITHUB_TOKEN", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
    ];
    let bare = normalized(json_run(&f, &[]));
    let around = normalized(json_run(&f, outside));
    let mut diff = Vec::new();
    differences(&bare, &around, "", &mut diff);
    assert!(
        diff.is_empty(),
        "the caller's environment changed the report:\n{}",
        diff.join("\n")
    );
    // It can fail: the tree's own environment is read ...
    let codes = |v: &Value| -> Vec<(String, String)> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["code"].as_str().unwrap().into(),
                    f["subject"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    assert!(codes(&bare).contains(&("secret.env".into(), "GITLAB_TOKEN".into())));
    assert!(!codes(&bare).iter().any(|(c, _)| c == "engine.tcp-endpoint"));
    assert!(bare["inventory"]["network"]["proxy"]["variables"]
        .as_array()
        .is_none_or(|v| v.is_empty()));
    // ... and the same variables in it do change the report.
    set_environ(&f.dir, outside);
    let inside = normalized(json_run(&f, &[]));
    let got = codes(&inside);
    assert!(
        got.contains(&("engine.tcp-endpoint".into(), "tcp://127.0.0.1:2375".into())),
        "{got:?}"
    );
    assert!(got.contains(&("secret.env".into(), "GITHUB_TOKEN".into())));
    assert!(
        got.iter()
            .any(|(c, s)| c == "secret.file" && s.starts_with("/opt/elsewhere/.ssh")),
        "{got:?}"
    );
    assert!(!inside["inventory"]["network"]["proxy"]["variables"]
        .as_array()
        .unwrap()
        .is_empty());
}

fn control<'a>(r: &'a Run, key: &str) -> &'a Value {
    r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == key)
        .unwrap()
}

#[test]
fn nothing_scores_two_on_an_empty_tree() {
    let f = Fixture::bare("emptytree");
    let r = f.run(&[]);
    for c in r.json["scorecard"]["controls"].as_array().unwrap() {
        assert_ne!(c["score"], 2, "{c}");
    }
    let sb = control(&r, "secret-boundary");
    assert_eq!(sb["assessed"], false, "{sb}");
    assert!(
        sb["reason"].as_str().unwrap().contains("secrets:environ"),
        "{sb}"
    );
    for p in ["secrets", "sockets", "caches"] {
        let i = r.find("probe.incomplete", &format!("{p}:environ"));
        assert_eq!(i["status"], "unknown");
        assert_eq!(i["evidence"]["probe"], p);
    }
    // The boundary cannot be told either: repo scope is not assessed.
    assert_eq!(r.find("probe.incomplete", "boundary")["status"], "unknown");
    assert_eq!(control(&r, "repo-scope")["assessed"], false);
}

#[test]
fn a_tree_without_environ_is_not_assessed_where_with_one_it_scores_two() {
    let f = Fixture::container("noenviron", &data("plain.mountinfo"), &data("plain.status"));
    f.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    f.dir("root");
    let r = f.run(&[]);
    assert_eq!(
        control(&r, "secret-boundary")["score"],
        2,
        "{}",
        control(&r, "secret-boundary")
    );
    assert_eq!(
        control(&r, "engine-socket")["score"],
        0,
        "root without userns"
    );
    fs::remove_file(f.path("proc/self/environ")).unwrap();
    let r = f.run(&[]);
    let sb = control(&r, "secret-boundary");
    assert_eq!(sb["assessed"], false, "{sb}");
    assert_eq!(control(&r, "cache-policy")["assessed"], false);
    // 0 stays certain: what was seen without the environment still counts.
    assert_eq!(control(&r, "engine-socket")["score"], 0);
}

// ---------------------------------------------------------------------------
// Sandboxes on the host's kernel (issue 29): captures made on this project's
// test machine inside bubblewrap, firejail, unshare and systemd-nspawn.

/// A tree from one sandbox capture: its mount table, status, uid_map,
/// cgroup, namespace links, PID 1's program and $container. Where the
/// capture's root is the machine's own, the tree is a machine's root: etc,
/// usr, a user's home, /root, a /.dockerenv the machine has, an empty
/// /sys/kernel/security with no securityfs behind it, and cgroup v1
/// release_agent files access(2) calls writable.
fn sandbox_tree(name: &str) -> Fixture {
    has_source(name);
    let f = Fixture::bare(name);
    for (to, from) in [
        ("proc/self/mountinfo", "mountinfo"),
        ("proc/self/status", "status"),
        ("proc/self/uid_map", "uid_map"),
        ("proc/self/cgroup", "cgroup"),
    ] {
        f.file(to, &capture(name, from));
    }
    f.file(
        "proc/1/cmdline",
        &format!("{}\0--some-flag\0", capture(name, "pid1").trim()),
    );
    let container = capture(name, "container");
    let mut env = String::from("PATH=/usr/bin:/bin\0HOME=/root\0");
    if !container.trim().is_empty() {
        env.push_str(&format!("container={}\0", container.trim()));
    }
    f.file("proc/self/environ", &env);
    f.file("proc/sys/kernel/cap_last_cap", "40\n");
    ns_links(&f, &capture(name, "ns"));
    f.dir("dev");
    // The machine's own root has one (this project's test machine does);
    // a directory root of its own does not.
    let root_line = capture(name, "mountinfo")
        .lines()
        .rev()
        .find(|l| l.split(' ').nth(4) == Some("/"))
        .map(str::to_string)
        .unwrap_or_default();
    if root_line.split(' ').nth(3) == Some("/") {
        f.file(".dockerenv", "");
    }
    f.dir("usr/bin");
    f.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n",
    );
    f.file("home/alice/.bashrc", "");
    f.file("home/alice/.profile", "");
    f.dir("root");
    f.dir("sys/kernel/security");
    for c in ["memory", "pids", "devices"] {
        f.file(&format!("sys/fs/cgroup/{c}/release_agent"), "\n");
    }
    f
}

/// What a sandbox must never be charged with: the machine's /.dockerenv as
/// its engine, release_agent and an empty /sys/kernel/security as
/// writable interfaces, the same finding twice.
fn lacks_sandbox_false_alarms(r: &Run) {
    let b = boundary(r);
    assert_ne!(b["engine"], "docker", "{b:#}");
    assert_ne!(b["runtime"], "runc/crun", "{b:#}");
    for (c, s) in r.pairs() {
        assert!(
            !(c == "write.kernel-interface"
                && (s.ends_with("/release_agent") || s == "/sys/kernel/security")),
            "{c} {s}: {:#?}",
            r.pairs()
        );
    }
    let mut ids: Vec<&str> = r
        .findings()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a finding id twice: {:#?}", r.pairs());
}

#[test]
fn bubblewrap_over_the_machine_root_is_bubblewrap_and_its_root_is_the_host_root() {
    let f = sandbox_tree("bubblewrap-machine-root");
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "container", "{b:#}");
    assert_eq!(b["engine"], "bubblewrap", "{b:#}");
    assert_eq!(b["runtime"], "bubblewrap");
    assert_eq!(b["rootless"], false, "uid 0 maps to the caller, root");
    assert_eq!(b["machine_root"], true);
    lacks_sandbox_false_alarms(&r);
    // The machine's root, read-only: high, naming the homes below it.
    let hr = r.find("mount.host-root", "/");
    assert_eq!(hr["severity"], "high", "{hr:#}");
    let homes: Vec<&str> = hr["evidence"]["homes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert_eq!(homes, ["/home/alice", "/root"], "{hr:#}");
    // The machine's own mounts below it (its /var/lib/docker, bound onto
    // itself) are part of it, and nothing calls the root the image's.
    assert!(
        !r.has("mount.unexpected", "/var/lib/docker"),
        "{:#?}",
        r.pairs()
    );
    assert!(!r.has("write.rootfs", "/"));
    // The /.dockerenv is in the evidence, said to be the machine's.
    let de = b["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source"] == "/.dockerenv")
        .unwrap();
    assert!(
        de["means"].as_str().unwrap().contains("machine's file"),
        "{de}"
    );
}

#[test]
fn bubblewrap_started_by_a_user_is_rootless_and_still_sees_the_host_root() {
    let f = sandbox_tree("bubblewrap-user");
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(
        (&b["kind"], &b["engine"], &b["runtime"], &b["rootless"]),
        (
            &"container".into(),
            &"bubblewrap".into(),
            &"bubblewrap".into(),
            &true.into()
        ),
        "{b:#}"
    );
    assert!(r.has("mount.host-root", "/"));
    lacks_sandbox_false_alarms(&r);
}

#[test]
fn a_narrow_bubblewrap_view_is_bubblewrap_by_its_new_root_and_no_host_root() {
    let f = sandbox_tree("bubblewrap-narrow");
    // bwrap with --unshare-pid is PID 1; without, its /newroot tmpfs says it.
    f.file("proc/1/cmdline", "/usr/lib/systemd/systemd\0");
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["engine"], "bubblewrap", "{b:#}");
    assert_eq!(b["runtime"], "bubblewrap");
    assert!(b.get("machine_root").is_none(), "{b:#}");
    assert!(!r.has_code("mount.host-root"), "{:#?}", r.pairs());
    // What it binds from the machine is a host path, as any bind is.
    assert!(r.has("mount.unexpected", "/usr"), "{:#?}", r.pairs());
    lacks_sandbox_false_alarms(&r);
}

#[test]
fn firejail_is_firejail_its_masks_are_its_own_and_repeated_mounts_say_one_thing() {
    let name = "firejail";
    let f = sandbox_tree(name);
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "container", "{b:#}");
    assert_eq!(b["engine"], "firejail", "{b:#}");
    assert_eq!(b["runtime"], "firejail");
    assert_eq!(b["rootless"], false);
    lacks_sandbox_false_alarms(&r);
    // The machine's root, writable as root here: critical.
    assert_eq!(r.find("mount.host-root", "/")["severity"], "critical");
    // Not one of firejail's masks (20 in the capture), nor the machine's
    // /etc, /usr, /var bound read-only onto themselves, is a host mount of
    // its own; /var/lib/docker, listed three times, not once.
    let mi = capture(name, "mountinfo");
    let masks = mi.matches("/firejail/firejail.ro.").count();
    assert!(masks >= 20, "{masks}");
    for (c, s) in r.pairs() {
        assert!(
            !(c.starts_with("mount.")
                && c != "mount.host-root"
                && c != "mount.workspace-missing"
                && c != "mount.container-rootfs"),
            "{c} {s}: {:#?}",
            r.pairs()
        );
    }
    let table = r.json["inventory"]["mounts"]["mounts"].as_array().unwrap();
    let mask = table
        .iter()
        .find(|m| m["mount_point"] == "/proc/sys/kernel/core_pattern")
        .unwrap();
    assert_eq!(mask["class"], "engine-managed", "{mask:#}");
    assert_eq!(mask["managed"]["by"], "firejail");
}

#[test]
fn a_bare_unshare_over_the_machine_root_is_unshare() {
    let f = sandbox_tree("unshare-map-root");
    let r = f.run(&[]);
    let b = boundary(&r);
    assert_eq!(b["kind"], "container", "{b:#}");
    assert_eq!(b["engine"], "unshare", "{b:#}");
    assert_eq!(b["runtime"], "unshare");
    assert_eq!(b["rootless"], false);
    // The capture's / is rw and this is root: the host root, writable.
    assert_eq!(r.find("mount.host-root", "/")["severity"], "critical");
    assert!(r.has("write.host-path", "/"));
    lacks_sandbox_false_alarms(&r);
    // What the kernel refuses is in the facts with why.
    let ki = r.json["inventory"]["writable"]["kernel_interfaces"]
        .as_array()
        .unwrap();
    let ra = ki
        .iter()
        .find(|k| k["path"] == "/sys/fs/cgroup/memory/release_agent")
        .unwrap();
    assert_eq!(ra["writable"], false);
    assert!(
        ra["error"]
            .as_str()
            .unwrap()
            .contains("initial user namespace"),
        "{ra}"
    );
    let sec = ki
        .iter()
        .find(|k| k["path"] == "/sys/kernel/security")
        .unwrap();
    assert!(
        sec["error"].as_str().unwrap().contains("no securityfs"),
        "{sec}"
    );
}

#[test]
fn nspawn_with_and_without_a_user_namespace_owns_its_run_host_binds() {
    for (name, rootless) in [
        ("systemd-nspawn-252", false),
        ("systemd-nspawn-252-userns", true),
    ] {
        let f = sandbox_tree(name);
        let r = f.run(&[]);
        let b = boundary(&r);
        assert_eq!(b["kind"], "container", "{name}: {b:#}");
        assert_eq!(b["engine"], "systemd-nspawn", "{name}");
        assert_eq!(b["runtime"], "systemd-nspawn", "{name}");
        assert_eq!(b["rootless"], rootless, "{name}");
        for p in ["/run/host/incoming", "/run/host/os-release"] {
            assert!(!r.has("mount.unexpected", p), "{name}: {:#?}", r.pairs());
        }
        assert!(
            !r.has_code("mount.host-root"),
            "{name}: a directory root is not the host's"
        );
        lacks_sandbox_false_alarms(&r);
    }
}

/// The real things beside the false alarms: in the machine's initial user
/// namespace with CAP_SYS_ADMIN (a privileged container), a writable
/// release_agent is reported, and so is /sys/kernel/security where
/// securityfs is mounted there.
#[test]
fn release_agent_and_securityfs_are_still_reported_where_they_are_real() {
    let mi = format!(
        "{}200 83 0:7 / /sys/kernel/security rw,nosuid,nodev,noexec,relatime - securityfs securityfs rw\n",
        data("privileged.mountinfo")
    );
    let f = Fixture::container("realra", &mi, &data("privileged.status"));
    let mut ns: Vec<(&str, u64)> = PRIVATE_NS.to_vec();
    ns.retain(|(n, _)| *n != "user");
    ns.push(("user", 0xEFFF_FFFD));
    f.ns(&ns);
    f.file("sys/fs/cgroup/memory/release_agent", "\n");
    f.dir("sys/kernel/security");
    let r = f.run(&[]);
    assert_eq!(
        r.find(
            "write.kernel-interface",
            "/sys/fs/cgroup/memory/release_agent"
        )["severity"],
        "critical"
    );
    assert!(
        r.has("write.kernel-interface", "/sys/kernel/security"),
        "{:#?}",
        r.pairs()
    );
    // The same tree in a user namespace of its own: neither.
    let mut ns: Vec<(&str, u64)> = PRIVATE_NS.to_vec();
    ns.retain(|(n, _)| *n != "user");
    ns.push(("user", 4026532600));
    f.ns(&ns);
    let r = f.run(&[]);
    assert!(
        !r.has(
            "write.kernel-interface",
            "/sys/fs/cgroup/memory/release_agent"
        ),
        "{:#?}",
        r.pairs()
    );
}

/// Keys Debian packages ship as examples and test data are package data
/// (one secret.package-data per package tree), where a key in a home is
/// still a credential; the engine's storage of other containers bound in
/// is not searched at all, and the homes are searched first.
#[test]
fn package_example_keys_are_package_data_and_engine_storage_is_not_searched() {
    let pem = |tag: &str| {
        format!(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow{tag}AAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
        )
    };
    let mi = format!(
        "{}300 1 8:1 /usr /usr ro,relatime - ext4 /dev/sda1 rw\n301 1 8:1 /var/lib/docker /var/lib/docker rw,relatime - ext4 /dev/sda1 rw\n",
        data("plain.mountinfo")
    );
    let f = Fixture::container("pkgdata", &mi, &data("plain.status"));
    f.file(
        "usr/share/doc/libxmlsec1-dev/examples/rsakey.pem",
        &pem("doc"),
    );
    f.file("usr/lib/go-1.19/VERSION", "go1.19.8\n");
    f.file(
        "usr/lib/go-1.19/src/crypto/tls/testdata/example-key.pem",
        &pem("go"),
    );
    f.dir("usr/lib/google-cloud-sdk/lib/googlecloudsdk");
    f.file(
        "usr/lib/google-cloud-sdk/platform/gsutil/third_party/google-auth-library-python/tests/data/privatekey.pem",
        &pem("gcloud"),
    );
    f.file(
        "var/lib/docker/overlay2/abc/diff/root/.ssh/id_rsa",
        &pem("layer"),
    );
    f.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    f.file("root/.ssh/id_rsa", &pem("home"));
    let r = f.run(&[]);
    assert!(
        r.has("secret.file", "/root/.ssh/id_rsa"),
        "{:#?}",
        r.pairs()
    );
    for (c, s) in r.pairs() {
        assert!(
            !(c == "secret.file" && (s.starts_with("/usr/") || s.starts_with("/var/lib/docker"))),
            "{c} {s}: {:#?}",
            r.pairs()
        );
    }
    for tree in [
        "/usr/share/doc/libxmlsec1-dev",
        "/usr/lib/go-1.19",
        "/usr/lib/google-cloud-sdk",
    ] {
        assert!(
            r.has("secret.package-data", tree),
            "{tree}: {:#?}",
            r.pairs()
        );
    }
    let roots: Vec<&str> = r.json["inventory"]["secrets"]["search"]["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].as_str().unwrap())
        .collect();
    assert!(!roots.contains(&"/var/lib/docker"), "{roots:?}");
    let home = roots.iter().position(|x| *x == "/root").unwrap();
    let usr = roots.iter().position(|x| *x == "/usr").unwrap();
    assert!(home < usr, "the homes first: {roots:?}");
}
