//! The field matrix (the README's Set-up): the boundary and the clean workspace
//! under Docker, gVisor and rootless podman, the danger cases of
//! containers.rs under Docker, and the machine itself outside any
//! container. Each case asserts what must and what must not be reported.
//!
//! Needs root, busybox-static, Docker (dockerd answering on
//! /var/run/docker.sock), runsc registered as Docker's runtime "runsc",
//! and the rootless user of .ci/engines; a missing one is a visible SKIP,
//! a failure under CI=true.

use std::path::Path;

use serde_json::Value;

use crate::common::engines::*;
use crate::common::podman::{self, lacks_common, vol, Check, Run, TempPath, CLEAN};
use crate::common::report::claims_a_container;

/// The files an engine writes into every container: never reported.
const ENGINE_FILES: &[&str] = &[
    "/etc/hosts",
    "/etc/hostname",
    "/etc/resolv.conf",
    "/run/.containerenv",
];

fn boundary(r: &Run) -> &Value {
    &r.json["inventory"]["boundary"]
}

fn expect_boundary(c: &mut Check, field: &str, want: Value) {
    let got = c.run.json["inventory"]["boundary"][field].clone();
    if got != want {
        c.fail(format!("inventory.boundary.{field} is {got} (want {want})"));
    }
}

/// No engine-managed file shows up as a host path, an unexpected mount,
/// the host root or persistent writable state, and the probe's own
/// bind-mounted binary is neither reported nor taken for a host path.
fn lacks_engine_files(c: &mut Check) {
    lacks_common(c);
    for p in ENGINE_FILES.iter().chain([&MOUNTED]) {
        c.lacks("mount.unexpected", p)
            .lacks("write.host-path", p)
            .lacks("mount.host-root", p)
            .lacks("teardown.persistent-writable", p);
    }
    let own: Vec<String> = c
        .run
        .findings()
        .iter()
        .filter(|f| f["subject"] == MOUNTED)
        .map(|f| format!("{} {}", f["code"], f["subject"]))
        .collect();
    if !own.is_empty() {
        c.fail(format!(
            "the probe's own mount is reported: {}",
            own.join(", ")
        ));
    }
    let class = c.run.json["inventory"]["mounts"]["mounts"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["mount_point"] == MOUNTED))
        .map(|m| m["class"].clone());
    if let Some(class) = class {
        if class == "host-bind" || class == "host-root" {
            c.fail(format!(
                "the probe's own mount is classed {class}, a host path"
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// (a) The clean workspace exits 0 with nothing at high under each engine.

#[test]
fn docker_clean_read_only_with_the_probe_bind_mounted() {
    let Some(img) = docker_image("docker_clean_read_only_with_the_probe_bind_mounted") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let v = vol(&ws, "/workspace");
    let r = docker_mounted(
        img,
        &[CLEAN, &["-v", &v]].concat(),
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks_code("mount.workspace-missing")
        .lacks_code("write.rootfs")
        .lacks_code("priv.capability")
        .lacks_code("boundary.none")
        .probes_ok();
    expect_boundary(&mut c, "kind", "container".into());
    expect_boundary(&mut c, "engine", "docker".into());
    expect_boundary(&mut c, "runtime", "runc/crun".into());
    lacks_engine_files(&mut c);
    c.done();
}

#[test]
fn gvisor_clean_is_a_sandbox_and_exits_zero() {
    let Some(img) = gvisor_image("gvisor_clean_is_a_sandbox_and_exits_zero") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let v = vol(&ws, "/workspace");
    let flags = [
        "--read-only",
        "--cap-drop=all",
        "--user",
        "1000:1000",
        "-v",
        &v,
    ];
    let r = gvisor(img, &flags, &["--workspace", "/workspace"]);
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks_code("priv.root-without-userns")
        .lacks_code("boundary.none")
        .lacks_code("priv.capability")
        .probes_ok();
    expect_boundary(&mut c, "kind", "sandbox".into());
    expect_boundary(&mut c, "runtime", "runsc".into());
    expect_boundary(&mut c, "engine", "docker".into());
    lacks_engine_files(&mut c);
    c.done();
}

#[test]
fn rootless_podman_clean_exits_zero() {
    let Some(rl) = Rootless::new("rootless_podman_clean_exits_zero") else {
        return;
    };
    let ws = rl.place.subdir("ws");
    let v = format!("{}:/workspace", ws.display());
    let r = rl.probe(
        &[
            "--read-only",
            "--cap-drop=all",
            "--user",
            "1000:1000",
            "-v",
            &v,
        ],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks_code("priv.root-without-userns")
        .lacks_code("mount.workspace-missing")
        .lacks_code("boundary.none")
        .probes_ok();
    expect_boundary(&mut c, "kind", "container".into());
    expect_boundary(&mut c, "engine", "podman".into());
    expect_boundary(&mut c, "rootless", true.into());
    lacks_engine_files(&mut c);
    c.done();
}

// ---------------------------------------------------------------------------
// (b) The boundary each engine gives, as root in the container.

#[test]
fn gvisor_speaks_of_the_sentry_not_the_host_kernel() {
    let Some(img) = gvisor_image("gvisor_speaks_of_the_sentry_not_the_host_kernel") else {
        return;
    };
    let r = gvisor(img, &[], &[]);
    let mut c = r.check();
    expect_boundary(&mut c, "kind", "sandbox".into());
    expect_boundary(&mut c, "rootless", false.into());
    c.lacks_code("priv.root-without-userns")
        .has_sev("priv.root-in-sandbox", "uid 0", "low")
        .has_sev("priv.seccomp-disabled", "seccomp", "low")
        .lacks_code("boundary.none")
        .probes_ok();
    for f in r.findings() {
        let m = f["message"].as_str().unwrap_or("");
        if f["code"] == "priv.seccomp-disabled" && !m.contains("Sentry") {
            c.fail(format!(
                "priv.seccomp-disabled does not name the Sentry: {m}"
            ));
        }
        if m.contains("reaches the host kernel") || m.contains("root here is root on the host") {
            c.fail(format!("{} claims the host kernel: {m}", f["code"]));
        }
        if f["code"] == "priv.capability" && !m.contains("Sentry") {
            c.fail(format!("{} {}: {m}", f["code"], f["subject"]));
        }
    }
    // gVisor has no cap_last_cap: capabilities are named up to the
    // bounding set's highest bit, none the kernel does not know.
    let inv = &r.json["inventory"]["privilege"];
    let named_to = inv["caps_named_to"].as_u64().unwrap_or(99);
    let bnd = inv["caps"]["bounding"].as_u64().unwrap_or(0);
    if !inv["cap_last_cap"].is_null() {
        c.fail(format!("gVisor shows cap_last_cap {}", inv["cap_last_cap"]));
    }
    if bnd == 0 || named_to != u64::from(63 - bnd.leading_zeros()) {
        c.fail(format!(
            "capabilities named to {named_to}, bounding set {bnd:x}"
        ));
    }
    for cap in ["CAP_BPF", "CAP_PERFMON", "CAP_CHECKPOINT_RESTORE"] {
        c.lacks("priv.capability", cap);
    }
    c.done();
}

#[test]
fn rootless_podman_root_is_not_host_root() {
    let Some(rl) = Rootless::new("rootless_podman_root_is_not_host_root") else {
        return;
    };
    let r = rl.probe(&[], &[]);
    let mut c = r.check();
    expect_boundary(&mut c, "kind", "container".into());
    expect_boundary(&mut c, "rootless", true.into());
    expect_boundary(&mut c, "engine", "podman".into());
    c.lacks_code("priv.root-without-userns")
        .lacks_code("priv.root-in-sandbox")
        .has_sev("priv.capability", "CAP_DAC_OVERRIDE", "low")
        .probes_ok();
    for f in r
        .findings()
        .iter()
        .filter(|f| f["code"] == "priv.capability")
    {
        let m = f["message"].as_str().unwrap_or("");
        if !m.contains("user namespace") {
            c.fail(format!(
                "{} does not say it acts in a user namespace: {m}",
                f["subject"]
            ));
        }
    }
    c.done();
}

#[test]
fn rootful_podman_and_docker_are_containers() {
    let test = "rootful_podman_and_docker_are_containers";
    if let Some(img) = podman::setup(test) {
        let r = podman::probe(img, &[], &[]);
        let mut c = r.check();
        expect_boundary(&mut c, "kind", "container".into());
        expect_boundary(&mut c, "engine", "podman".into());
        expect_boundary(&mut c, "rootless", false.into());
        c.has_sev("priv.root-without-userns", "uid 0", "high")
            .lacks_code("boundary.none");
        c.done();
    }
    if let Some(img) = docker_image(test) {
        let r = docker_cp_exec(img, &["--network", "none"], &[]);
        let mut c = r.check();
        expect_boundary(&mut c, "kind", "container".into());
        expect_boundary(&mut c, "engine", "docker".into());
        expect_boundary(&mut c, "rootless", false.into());
        c.has_sev("priv.root-without-userns", "uid 0", "high")
            .lacks_code("boundary.none");
        c.done();
    }
}

// ---------------------------------------------------------------------------
// (c) The danger cases of containers.rs: the same codes under Docker (docker
// cp + docker exec) as under podman. --privileged cannot start under Docker
// here (this machine lacks CAP_SYS_RESOURCE).

fn codes(r: &Run) -> std::collections::BTreeSet<String> {
    r.findings()
        .iter()
        .map(|f| f["code"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Runs one case under both engines and compares the codes; `must` are
/// (code, subject) pairs both must report, so a case that silently ran
/// without its flag cannot pass by matching an empty set.
fn same_codes(test: &str, flags: &[&str], args: &[&str], must: &[(&str, &str)]) {
    let Some(pimg) = podman::setup(test) else {
        return;
    };
    let Some(dimg) = docker_image(test) else {
        return;
    };
    let p = podman::probe(pimg, flags, args);
    let d = docker_cp_exec(dimg, flags, args);
    let (pc, dc) = (codes(&p), codes(&d));
    let mut c = d.check();
    for (code, subject) in must {
        c.has(code, subject);
        if p.find(code, subject).is_none() {
            c.fail(format!("podman: missing {code} {subject:?}"));
        }
    }
    if pc != dc {
        c.fail(format!(
            "codes differ: podman only {:?}, docker only {:?}\npodman findings:\n{}",
            pc.difference(&dc).collect::<Vec<_>>(),
            dc.difference(&pc).collect::<Vec<_>>(),
            p.listing()
        ));
    }
    c.probes_ok();
    lacks_common(&mut c);
    c.done();
}

#[test]
fn docker_plain_run_matches_podman() {
    same_codes(
        "docker_plain_run_matches_podman",
        &[],
        &[],
        &[("priv.root-without-userns", "uid 0")],
    );
}

#[test]
fn docker_fuse_and_no_new_privileges_match_podman() {
    same_codes(
        "docker_fuse_and_no_new_privileges_match_podman",
        &[
            "--device",
            "/dev/fuse",
            "--security-opt",
            "no-new-privileges",
        ],
        &[],
        &[("device.sensitive", "/dev/fuse")],
    );
}

#[test]
fn docker_host_pid_matches_podman() {
    same_codes(
        "docker_host_pid_matches_podman",
        &["--pid=host"],
        &[],
        &[("ns.host-pid", "pid")],
    );
}

#[test]
fn docker_host_network_matches_podman() {
    same_codes(
        "docker_host_network_matches_podman",
        &["--network", "host"],
        &[],
        &[("ns.host-network", "net")],
    );
}

#[test]
fn docker_cap_add_sys_admin_matches_podman() {
    same_codes(
        "docker_cap_add_sys_admin_matches_podman",
        &["--cap-add", "SYS_ADMIN"],
        &[],
        &[("priv.capability", "CAP_SYS_ADMIN")],
    );
}

#[test]
fn docker_host_dir_read_write_matches_podman() {
    let ws = TempPath::dir("ws").unwrap();
    let data = podman::data_dir();
    same_codes(
        "docker_host_dir_read_write_matches_podman",
        &["-v", &vol(&ws, "/workspace"), "-v", &vol(&data, "/data")],
        &["--workspace", "/workspace"],
        &[("write.host-path", "/data"), ("mount.unexpected", "/data")],
    );
}

#[test]
fn docker_host_home_matches_podman() {
    let home = TempPath::dir_in(Path::new("/home"), "home").unwrap();
    std::fs::create_dir(home.path.join(".ssh")).unwrap();
    std::fs::write(home.path.join(".ssh/id_ed25519"), "dummy, not a key\n").unwrap();
    std::fs::write(home.path.join(".bashrc"), "# test\n").unwrap();
    std::fs::write(home.path.join(".profile"), "# test\n").unwrap();
    same_codes(
        "docker_host_home_matches_podman",
        &["-v", &vol(&home, "/home/dev")],
        &[],
        &[
            ("mount.home-directory", "/home/dev"),
            ("mount.ssh-directory", "/home/dev/.ssh"),
        ],
    );
}

#[test]
fn docker_engine_socket_answering_matches_podman() {
    let test = "docker_engine_socket_answering_matches_podman";
    let Some(pimg) = podman::setup(test) else {
        return;
    };
    let Some(dimg) = docker_image(test) else {
        return;
    };
    let _alone = podman::MACHINE.write().unwrap_or_else(|e| e.into_inner());
    let svc = podman::PodmanService::start();
    let v = vol(&svc.sock, "/var/run/docker.sock");
    let p = podman::probe_unlocked(pimg, &["-v", &v], &[]);
    let d = docker_cp_exec(dimg, &["-v", &v], &[]);
    drop(svc);
    let mut c = d.check();
    c.evidence(
        "engine.socket-reachable",
        "/var/run/docker.sock",
        "/evidence/answer/ping_status",
        200.into(),
    );
    if codes(&p) != codes(&d) {
        c.fail(format!(
            "codes differ: podman {:?}, docker {:?}",
            codes(&p),
            codes(&d)
        ));
    }
    lacks_common(&mut c);
    c.done();
}

#[test]
fn docker_engine_socket_dead_matches_podman() {
    let sock = TempPath::file("dead", ".sock");
    drop(std::os::unix::net::UnixListener::bind(&sock.path).expect("bind"));
    same_codes(
        "docker_engine_socket_dead_matches_podman",
        &["-v", &vol(&sock, "/var/run/docker.sock")],
        &[],
        &[("engine.socket-present", "/var/run/docker.sock")],
    );
}

// ---------------------------------------------------------------------------
// (d) The machine itself, outside any container.

#[test]
fn the_machine_itself_reports_boundary_none_and_no_container() {
    let test = "the_machine_itself_reports_boundary_none_and_no_container";
    // The test runner's own PID namespace says whether this machine is
    // outside any container; inside one the case cannot be run here.
    let pid_ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|l| l.to_string_lossy().into_owned())
        .unwrap_or_default();
    if pid_ns != format!("pid:[{}]", 0xEFFF_FFFCu64) {
        podman::skip_or_fail(
            test,
            &format!("the tests run inside a container ({pid_ns}), not on the machine itself"),
        );
        return;
    }
    let bin = crate::common::shipped::bin();
    let out = std::process::Command::new(bin)
        .args(["--format", "json"])
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the shipped binary");
    crate::common::dump::report(&out.stdout);
    let json: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let r = Run {
        what: "selfprobe on the machine itself".into(),
        code: out.status.code().unwrap_or(-1),
        json,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let mut c = r.check();
    c.has_sev("boundary.none", "boundary", "high")
        .lacks_code("priv.privileged")
        .lacks_code("priv.root-in-sandbox");
    expect_boundary(&mut c, "kind", "host".into());
    expect_boundary(&mut c, "engine", "none".into());
    expect_boundary(&mut c, "runtime", "none".into());
    if boundary(&r)["virtualized"] == "unknown" && Path::new("/sys/firmware/acpi").exists() {
        // Not an error: a hypervisor may leave no trace we read.
        eprintln!("note: {test}: virtualized is unknown on this machine");
    }
    for f in r.findings() {
        for field in ["message", "title"] {
            let t = f[field].as_str().unwrap_or("");
            if claims_a_container(t) {
                c.fail(format!(
                    "{} {} calls the machine a container: {t}",
                    f["code"], field
                ));
            }
        }
    }
    if let Some(f) = r.find("write.rootfs", "/") {
        if f["severity"] != "medium" || !f["message"].as_str().unwrap_or("").contains("machine") {
            c.fail(format!("write.rootfs on the machine: {f}"));
        }
    }
    c.done();
}

/// The README's read-only smoke test, word for word: the `docker run`
/// block after "bind-mount the binary read-only", with its placeholders
/// filled in (the shipped binary, a checkout stand-in for $PWD, the image).
#[test]
fn readme_read_only_smoke_test_runs_as_written() {
    let test = "readme_read_only_smoke_test_runs_as_written";
    let Some(img) = docker_image(test) else {
        return;
    };
    let readme = include_str!("../../README.md");
    let start = readme
        .find("    docker run --rm --read-only")
        .expect("the README has the read-only smoke test");
    let mut line = String::new();
    for l in readme[start..].lines() {
        let l = l.trim();
        match l.strip_suffix('\\') {
            Some(part) => line.push_str(part),
            None => {
                line.push_str(l);
                break;
            }
        }
    }
    let checkout = TempPath::dir("checkout").unwrap();
    std::fs::write(checkout.path.join("Cargo.lock"), "# lockfile\n").unwrap();
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| {
            w.trim_matches('"')
                .replace(
                    "$PWD/target/x86_64-unknown-linux-gnu/release/selfprobe",
                    crate::common::shipped::bin_str(),
                )
                .replace("$PWD", checkout.arg())
                .replace("IMAGE", img)
        })
        .collect();
    assert_eq!(words[..2], ["docker", "run"], "{line}");
    let ctr = DockerCtr {
        name: podman::unique("readme"),
    };
    let mut cmd = docker();
    cmd.args(&words[1..3])
        .args(["--name", &ctr.name])
        .args(&words[3..])
        .args(["--format", "json"]);
    let out = podman::run_bounded(cmd, podman::RUN_TIMEOUT, None).unwrap_or_else(|e| panic!("{e}"));
    let json: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{line}: not JSON ({e}): {}", out.stderr));
    let r = Run {
        what: format!("README: {line}"),
        code: out.code.unwrap_or(-1),
        json,
        stderr: out.stderr,
    };
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks_code("mount.workspace-missing")
        .probes_ok();
    expect_boundary(&mut c, "engine", "docker".into());
    lacks_engine_files(&mut c);
    c.done();
}
