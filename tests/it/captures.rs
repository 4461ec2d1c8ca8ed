//! Mount tables other projects captured in real containers and published
//! (tests/data/captures/mounts/<name>/mountinfo, with a SOURCE file beside
//! each naming the repository, file or issue and what its context
//! establishes). Each runs through `--root` in a tree that has the files the
//! capture's engine would have put there, and each test asserts the
//! classification the context establishes, that no line was lost (every
//! non-blank line is a mount or a parse error), and what must not be
//! reported.
//!
//! The status file is this project's own podman capture (tests/data): the
//! captures are about mounts.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::fixture::*;

const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/captures/mounts");

fn capture(name: &str) -> String {
    fs::read_to_string(Path::new(CAPTURES).join(name).join("mountinfo"))
        .unwrap_or_else(|e| panic!("capture {name}: {e}"))
}

/// A container tree whose mountinfo is the capture, with a regular file or a
/// directory at every mount point the capture's container would have, so
/// that a misclassified engine file shows as writable host data.
pub(crate) fn tree(name: &str) -> Fixture {
    let text = capture(name);
    let f = Fixture::container(name, &text, &data("plain.status"));
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mp = line.split(' ').nth(4).unwrap();
        let mp = String::from_utf8(selfprobe::facts::mounts::unescape(mp)).unwrap();
        let rel = mp.trim_start_matches('/');
        if rel.is_empty() || rel.starts_with("proc") || rel.starts_with("sys") {
            continue;
        }
        let file_like = ["/etc/", "/dev/termination-log", "/run/.containerenv"]
            .iter()
            .any(|p| mp.starts_with(p) && !mp.ends_with("datadog-agent"))
            && !mp.contains("/secrets");
        if file_like && !f.path(rel).is_dir() {
            f.file(rel, "engine file\n");
        } else {
            f.dir(rel);
        }
    }
    f
}

fn mounts(r: &Run) -> &Vec<Value> {
    r.json["inventory"]["mounts"]["mounts"]
        .as_array()
        .unwrap_or_else(|| panic!("no mount inventory: {}", r.stderr))
}

fn entry<'a>(r: &'a Run, mp: &str) -> &'a Value {
    mounts(r)
        .iter()
        .rev()
        .find(|m| m["mount_point"] == mp)
        .unwrap_or_else(|| panic!("no mount at {mp}"))
}

fn class<'a>(r: &'a Run, mp: &str) -> &'a str {
    entry(r, mp)["class"].as_str().unwrap()
}

fn managed_by<'a>(r: &'a Run, mp: &str) -> &'a str {
    entry(r, mp)["managed"]["by"]
        .as_str()
        .unwrap_or_else(|| panic!("{mp} is not engine-managed: {:#}", entry(r, mp)))
}

/// Every non-blank line of the capture is in the inventory, none is a
/// parse error, and no probe.incomplete names a line.
fn no_line_lost(r: &Run, name: &str) {
    let lines = capture(name)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let inv = &r.json["inventory"]["mounts"];
    assert_eq!(inv["lines"], lines, "{name}: lines read");
    assert_eq!(mounts(r).len(), lines, "{name}: one mount per line");
    assert_eq!(inv["parse_errors"], serde_json::json!([]), "{name}");
    assert!(
        !r.pairs()
            .iter()
            .any(|(c, s)| c == "probe.incomplete" && s.starts_with("mounts")),
        "{name}: {:#?}",
        r.pairs()
    );
}

fn codes_on(r: &Run, subject: &str) -> Vec<String> {
    r.pairs()
        .into_iter()
        .filter(|(_, s)| s == subject)
        .map(|(c, _)| c)
        .collect()
}

/// None of the codes that would call an engine file a host path or storage
/// that outlives the container is reported for `mp`.
fn not_host_data(r: &Run, mp: &str) {
    for code in [
        "mount.unexpected",
        "mount.host-root",
        "write.host-path",
        "teardown.persistent-writable",
        "mount.home-directory",
    ] {
        assert!(
            !r.has(code, mp),
            "{code} on the engine file {mp}: {:#?}",
            r.pairs()
        );
    }
}

// ---------------------------------------------------------------------------
// nsfs, a host procfs, the host's /run, other containers' roots, kubelet files

#[test]
fn datadog_agent_pod_nsfs_host_procfs_and_host_run() {
    let name = "k8s-datadog-agent";
    let f = tree(name);
    // The node's containerd and docker sockets in its /run, seen through the
    // hostPath volume: the socket search must look inside the host tmpfs.
    f.dir("host/var/run/containerd");
    let docker = UnixListener::bind(f.path("host/var/run/docker.sock")).unwrap();
    answer_ping(docker);
    f.dir("host/var/run/systemd");
    let r = f.run(&[]);
    no_line_lost(&r, name);

    // Every nsfs bind parses, its root a namespace name, not a path.
    let nsfs: Vec<&Value> = mounts(&r)
        .iter()
        .filter(|m| m["fstype"] == "nsfs")
        .collect();
    assert_eq!(nsfs.len(), 7);
    for m in &nsfs {
        assert!(m["root"].as_str().unwrap().starts_with("net:["), "{m:#}");
        assert_eq!(m["class"], "pseudo");
        assert_eq!(m["within"], "/host/var/run");
    }

    // The node's procfs: another device than the container's own /proc.
    let p = r.find("mount.host-procfs", "/host/proc");
    assert_eq!(p["severity"], "high");
    assert_eq!(p["evidence"]["device"], "0:19");
    assert_eq!(p["evidence"]["own_proc_device"], "0:251");
    assert_eq!(p["evidence"]["read_only"], true);
    assert_eq!(class(&r, "/proc"), "pseudo");
    assert_eq!(class(&r, "/proc/sysrq-trigger"), "pseudo");

    // The node's /run, mounted whole, with the pods' namespaces and roots.
    let t = r.find("mount.host-tmpfs", "/host/var/run");
    assert_eq!(t["severity"], "high");
    assert_eq!(t["evidence"]["netns_binds"], 7);
    assert_eq!(
        t["evidence"]["container_rootfs"].as_array().unwrap().len(),
        20
    );
    assert_eq!(t["evidence"]["submounts"], 60, "2231..2290");
    let other = "/host/var/run/containerd/io.containerd.runtime.v2.task/k8s.io/188cedbba84c09ef9084420db548c00fadeb590e6dcd955cad3413f8339bce84/rootfs";
    assert_eq!(class(&r, other), "container-rootfs");
    // This container's own root, seen again through the host's /run.
    let own = "/host/var/run/containerd/io.containerd.runtime.v2.task/k8s.io/fc7038bc73a8d3850c66ddbfb0b2901afa378bfcbb942cc384b051767e4ac6b0/rootfs";
    assert_eq!(class(&r, own), "root-fs");
    // What lies inside it is its finding's, not fifty more.
    for (code, subject) in r.pairs() {
        let mount_finding = code.starts_with("mount.") || code.starts_with("write.");
        assert!(
            !(mount_finding && subject.starts_with("/host/var/run/")),
            "{code} {subject} is inside the host tmpfs"
        );
    }
    assert!(!r.has_code("mount.container-rootfs"));
    assert!(!r.has("mount.host-procfs", &format!("{own}/host/proc")));

    // The socket search looked inside the host's /run.
    let s = r.find("engine.socket-reachable", "/host/var/run/docker.sock");
    assert_eq!(s["evidence"]["origin"], "host-mount:/host/var/run");
    assert_eq!(s["evidence"]["engine"], "docker");

    // A directory of the host's /run is a host path; the pod's own files are not.
    let dd = r.find("mount.unexpected", "/var/run/datadog");
    assert_eq!(dd["evidence"]["host_path"], "/datadog");
    assert_eq!(managed_by(&r, "/etc/hosts"), "kubelet");
    assert_eq!(managed_by(&r, "/dev/termination-log"), "kubelet");
    assert_eq!(managed_by(&r, "/etc/hostname"), "containerd");
    assert_eq!(
        managed_by(&r, "/tmp"),
        "kubelet",
        "an emptyDir goes with the pod"
    );
    assert_eq!(
        r.json["inventory"]["mounts"]["engine"]["engine"],
        "containerd"
    );
    for mp in [
        "/etc/hosts",
        "/etc/hostname",
        "/etc/resolv.conf",
        "/dev/termination-log",
        "/tmp",
        "/etc/datadog-agent",
    ] {
        not_host_data(&r, mp);
    }
    // The hostPath volumes are host paths.
    for mp in [
        "/var/log/pods",
        "/var/lib/docker/containers",
        "/opt/datadog-agent/run",
    ] {
        assert!(r.has("mount.unexpected", mp), "{mp}: {:#?}", r.pairs());
    }
    assert_eq!(
        r.find("mount.unexpected", "/var/lib/docker/containers")["evidence"]["host_path"],
        "/var/lib/docker/containers",
        "the engine's storage directory is not one of its files"
    );
}

/// A stand-in for the node's docker daemon: answers /_ping, and a version.
fn answer_ping(listener: UnixListener) {
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap_or(0);
            let body = if buf[..n].starts_with(b"GET /_ping") {
                "OK"
            } else {
                r#"{"Version":"99.1","ApiVersion":"1.41","Os":"linux"}"#
            };
            let _ = write!(
                s,
                "HTTP/1.0 200 OK\r\nServer: Docker/99.1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
}

#[test]
fn plain_kubernetes_pod_on_containerd() {
    let name = "k8s-containerd-pod";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    assert_eq!(managed_by(&r, "/etc/hosts"), "kubelet");
    assert_eq!(entry(&r, "/etc/hosts")["managed"]["file"], "etc-hosts");
    assert_eq!(managed_by(&r, "/dev/termination-log"), "kubelet");
    assert_eq!(
        entry(&r, "/dev/termination-log")["managed"]["file"],
        "termination-log"
    );
    assert_eq!(managed_by(&r, "/etc/resolv.conf"), "containerd");
    assert_eq!(
        class(&r, "/var/run/secrets/kubernetes.io/serviceaccount"),
        "tmpfs"
    );
    r.assert_absent(&[
        "mount.unexpected",
        "mount.host-root",
        "mount.host-procfs",
        "mount.host-tmpfs",
        "write.host-path",
        "teardown.persistent-writable",
    ]);
}

#[test]
fn kubelet_pod_files_under_a_minikube_volume() {
    let name = "minikube-containerd-pod";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    for mp in [
        "/etc/hosts",
        "/dev/termination-log",
        "/etc/hostname",
        "/etc/resolv.conf",
    ] {
        assert_eq!(class(&r, mp), "engine-managed", "{mp}");
        not_host_data(&r, mp);
    }
    assert_eq!(managed_by(&r, "/etc/hosts"), "kubelet");
    assert_eq!(managed_by(&r, "/etc/hostname"), "containerd");
    // Inside the docker volume "minikube", yet not taken for the volume.
    assert!(!mounts(&r).iter().any(|m| m["class"] == "volume"));
    r.assert_absent(&[
        "mount.unexpected",
        "teardown.persistent-writable",
        "write.host-path",
    ]);
}

#[test]
fn kind_pod_on_a_rootless_podman_node() {
    let name = "kind-rootless-podman";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    assert_eq!(managed_by(&r, "/etc/hosts"), "kubelet");
    assert_eq!(managed_by(&r, "/etc/resolv.conf"), "containerd");
    // product_name/product_uuid come from the pod's own overlay root.
    assert_eq!(
        class(&r, "/sys/devices/virtual/dmi/id/product_uuid"),
        "root-fs"
    );
    assert_eq!(class(&r, "/dev/null"), "device");
    r.assert_absent(&[
        "mount.unexpected",
        "teardown.persistent-writable",
        "write.host-path",
        "mount.host-root",
    ]);
}

#[test]
fn minikube_pod_with_the_docker_runtime() {
    let name = "minikube-docker-pod";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    assert_eq!(managed_by(&r, "/etc/hostname"), "docker");
    assert_eq!(managed_by(&r, "/etc/hosts"), "kubelet");
    assert_eq!(managed_by(&r, "/etc/configs"), "kubelet");
    let e = &r.json["inventory"]["mounts"]["engine"];
    assert_eq!(e["engine"], "docker");
    assert_eq!(
        e["container_id"],
        "cb46c9f8f0ea80a1eb613fdd3e90b523939114575b6ee3e7e8bc1f4f0c8d0254"
    );
    for mp in [
        "/etc/hostname",
        "/etc/hosts",
        "/etc/configs",
        "/dev/termination-log",
    ] {
        not_host_data(&r, mp);
    }
}

// ---------------------------------------------------------------------------
// Engines: Docker, podman (rootless), CRI-O, dind

#[test]
fn docker_rootful_engine_files() {
    let name = "docker-rootful";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    for mp in ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"] {
        assert_eq!(managed_by(&r, mp), "docker");
        not_host_data(&r, mp);
    }
    let e = &r.json["inventory"]["mounts"]["engine"];
    assert_eq!(e["engine"], "docker");
    assert_eq!(
        e["container_id"],
        "0cfa82bf3ab29da271548d6a044e95c948c6fd2f7578fb41833a44ca23da425f"
    );
    assert_eq!(r.json["inventory"]["image"]["engine"]["value"], "docker");
}

#[test]
fn rootless_podman_files_on_the_users_runtime_tmpfs() {
    let name = "rootless-podman";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    for mp in [
        "/etc/hosts",
        "/etc/hostname",
        "/etc/resolv.conf",
        "/run/.containerenv",
    ] {
        assert_eq!(managed_by(&r, mp), "podman", "{mp}");
        // Relative to the user's tmpfs: no /run or /var/lib prefix.
        assert!(entry(&r, mp)["root"]
            .as_str()
            .unwrap()
            .starts_with("/containers/overlay-containers/"));
        not_host_data(&r, mp);
    }
    assert_eq!(class(&r, "/dev/null"), "device");
    assert_eq!(r.json["inventory"]["mounts"]["engine"]["engine"], "podman");
    r.assert_absent(&[
        "mount.unexpected",
        "write.host-path",
        "teardown.persistent-writable",
    ]);
}

#[test]
fn cri_o_is_not_podman() {
    let name = "cri-o";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    assert_eq!(managed_by(&r, "/etc/hostname"), "cri-o");
    assert_eq!(managed_by(&r, "/etc/resolv.conf"), "cri-o");
    let e = &r.json["inventory"]["mounts"]["engine"];
    assert_eq!(e["engine"], "cri-o");
    assert_eq!(r.json["inventory"]["image"]["engine"]["value"], "cri-o");
    assert!(!r.stdout.contains("\"podman\""), "nothing calls it podman");
    for mp in ["/etc/hostname", "/etc/resolv.conf"] {
        not_host_data(&r, mp);
    }
}

// ---------------------------------------------------------------------------
// A workspace that is a volume: GitLab's builds volume, inside dind

#[test]
fn a_gitlab_builds_volume_is_the_workspace() {
    let name = "gitlab-dind-volume-workspace";
    let f = tree(name);
    f.file("home/nginx/build.log", "ok\n");
    f.dir("home/nginx/.git");

    // Without a workspace, the builds volume is storage that outlives the run.
    let bare = f.run(&[]);
    no_line_lost(&bare, name);
    assert_eq!(class(&bare, "/home/nginx"), "volume");
    assert!(bare.has("teardown.persistent-writable", "/home/nginx"));

    let r = f.run(&["--workspace", "/home/nginx"]);
    no_line_lost(&r, name);
    let ws = entry(&r, "/home/nginx");
    assert_eq!(ws["class"], "workspace");
    assert!(ws["kinds"].as_array().unwrap().contains(&"volume".into()));
    for code in [
        "mount.unexpected",
        "teardown.persistent-writable",
        "mount.workspace-missing",
    ] {
        assert!(
            !r.has_code(code),
            "{code}: {:#?}",
            codes_on(&r, "/home/nginx")
        );
    }
    // Its log is the workspace's, as on a host checkout: low, not a volume's medium.
    let log = r.find("artifact.persistent", "log:/home/nginx");
    assert_eq!(log["severity"], "low");
    assert_eq!(log["evidence"]["shared_with"], "workspace");
    // The inner engine's files live in the dind volume: Docker's, not the volume.
    for mp in ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"] {
        assert_eq!(managed_by(&r, mp), "docker");
        not_host_data(&r, mp);
    }
    assert_eq!(
        r.json["inventory"]["mounts"]["engine"]["container_id"],
        "54aeeb59e870cfa120c741ad7b92381c3ff47d4602b2f18435c49a9857b3e783"
    );
    // The published lines end in a stray quote; they still parse.
    assert_eq!(class(&r, "/proc"), "pseudo");
}

// ---------------------------------------------------------------------------
// Sandboxes: gVisor, Kata; LXC; bare hosts

#[test]
fn gvisor_gofer_binds() {
    let name = "gvisor-pod";
    let f = tree(name);
    let r = f.run(&[]);
    no_line_lost(&r, name);
    assert_eq!(managed_by(&r, "/etc/hosts"), "runsc");
    assert_eq!(
        managed_by(&r, "/run/secrets/kubernetes.io/serviceaccount"),
        "runsc"
    );
    for mp in ["/etc/hosts", "/run/secrets/kubernetes.io/serviceaccount"] {
        not_host_data(&r, mp);
    }
    assert!(
        !r.stdout.contains("host path (/)"),
        "a gofer mount's / is not the host's root"
    );
    r.assert_absent(&["mount.host-root"]);
    assert_eq!(class(&r, "/dev"), "device");
    // Other gofer binds are host data whose path gVisor hides.
    let v = r.find("mount.unexpected", "/opt/venv");
    assert_eq!(v["evidence"]["host_path"], Value::Null);
    assert!(v["message"].as_str().unwrap().contains("gofer"));
    assert!(v["evidence"]["kinds"]
        .as_array()
        .unwrap()
        .contains(&"gofer".into()));
    assert!(!v["evidence"]["kinds"]
        .as_array()
        .unwrap()
        .contains(&"whole-filesystem".into()));
    assert!(
        r.has("mount.unexpected", "/srv/my data"),
        "\\040 decodes to a space"
    );
}

#[test]
fn kata_shared_directory() {
    let name = "kata-pod";
    let f = tree(name);
    let r = f.run(&["--workspace", "/workspace"]);
    no_line_lost(&r, name);
    for mp in ["/etc/hostname", "/etc/hosts", "/etc/resolv.conf"] {
        assert_eq!(managed_by(&r, mp), "kata", "{mp}");
        not_host_data(&r, mp);
    }
    assert_eq!(entry(&r, "/etc/hosts")["managed"]["file"], "hosts");
    assert_eq!(class(&r, "/workspace"), "workspace");
    r.assert_absent(&["mount.unexpected", "mount.host-root"]);
}

#[test]
fn unprivileged_lxc_container() {
    let name = "lxc-unprivileged";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    assert_eq!(class(&r, "/"), "root-fs");
    assert_eq!(class(&r, "/dev/null"), "device");
    assert_eq!(class(&r, "/proc/sysrq-trigger"), "pseudo");
    assert_eq!(class(&r, "/sys/fs/fuse/connections"), "pseudo");
    r.assert_absent(&[
        "mount.unexpected",
        "mount.host-root",
        "mount.host-procfs",
        "mount.host-tmpfs",
        "write.host-path",
    ]);
}

#[test]
fn bare_hosts_have_no_container_surfaces() {
    for name in ["bare-host-gentoo", "bare-host-ubuntu"] {
        let r = tree(name).run(&[]);
        no_line_lost(&r, name);
        assert_eq!(class(&r, "/proc"), "pseudo", "{name}: the host's own /proc");
        assert_eq!(class(&r, "/run"), "tmpfs", "{name}");
        for m in mounts(&r) {
            for c in [
                "engine-managed",
                "host-procfs",
                "host-tmpfs",
                "container-rootfs",
                "unknown",
            ] {
                assert_ne!(m["class"], c, "{name}: {m:#}");
            }
        }
        r.assert_absent(&[
            "mount.host-procfs",
            "mount.host-tmpfs",
            "mount.container-rootfs",
        ]);
    }
}

// ---------------------------------------------------------------------------
// What the kernel may write that the catalog does not know

#[test]
fn a_line_that_does_not_parse_costs_that_line() {
    let name = "k8s-datadog-agent";
    let mut text = capture(name);
    // A line cut short, and one a later kernel might write differently.
    text.insert_str(0, "2300 2208 0:99 /x\n");
    text.push_str("2301 2208 0:98 / /weird rw shared:9 - zz9fs /dev/zz rw\n");
    let f = Fixture::container("badline", &text, &data("plain.status"));
    f.dir("weird");
    f.dir("host/proc");
    f.dir("host/var/run");
    let r = f.run(&[]);
    let inv = &r.json["inventory"]["mounts"];
    assert_eq!(inv["lines"], 102);
    assert_eq!(mounts(&r).len(), 101);
    assert_eq!(inv["parse_errors"][0]["line"], 1);
    let i = r.find("probe.incomplete", "mounts:line 1");
    assert_eq!(i["status"], "unknown");
    assert_eq!(i["control"], "repo-scope");
    assert_eq!(i["evidence"]["line"], 1);
    // The probe finished and everything else is classified as before.
    assert!(r.has("mount.host-procfs", "/host/proc"));
    assert!(r.has("mount.host-tmpfs", "/host/var/run"));
    let rec = r.json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "mounts")
        .unwrap();
    assert_eq!(rec["status"], "ok");
    // An unknown filesystem type is shown as unknown, never as pseudo.
    assert_eq!(class(&r, "/weird"), "unknown");
    let u = r.find("mount.unexpected", "/weird");
    assert!(u["message"].as_str().unwrap().contains("does not know"));
    assert!(u["evidence"]["kinds"]
        .as_array()
        .unwrap()
        .contains(&"unknown-fstype".into()));
}

#[test]
fn the_probe_bind_mounted_in_is_itself() {
    let name = "docker-rootful";
    let mut text = capture(name);
    text.push_str("700 608 8:1 /home/alice/bin/selfprobe /usr/local/bin/selfprobe ro,relatime - ext4 /dev/sda1 rw\n");
    text.push_str(
        "701 608 8:1 /home/alice/bin/other /usr/local/bin/other ro,relatime - ext4 /dev/sda1 rw\n",
    );
    let f = Fixture::container("selfbin", &text, &data("plain.status"));
    f.file("usr/local/bin/selfprobe", "the probe\n");
    f.file("usr/local/bin/other", "another tool\n");
    std::os::unix::fs::symlink("/usr/local/bin/selfprobe", f.path("proc/self/exe")).unwrap();
    let r = f.run(&[]);
    assert_eq!(class(&r, "/usr/local/bin/selfprobe"), "probe-binary");
    assert!(
        codes_on(&r, "/usr/local/bin/selfprobe").is_empty(),
        "{:#?}",
        r.pairs()
    );
    // Another host file bound beside it is still a host file.
    assert!(r.has("mount.unexpected", "/usr/local/bin/other"));
}

#[test]
fn a_writable_host_run_is_a_writable_host_path_that_survives() {
    // The datadog capture with its hostPath of /var/run made read-write.
    let name = "k8s-datadog-agent";
    let text = capture(name).replace(" / /host/var/run ro - tmpfs", " / /host/var/run rw - tmpfs");
    assert_ne!(text, capture(name));
    let f = Fixture::container("hostrun-rw", &text, &data("plain.status"));
    f.dir("host/var/run/containerd");
    f.dir("host/proc");
    let r = f.run(&[]);
    assert_eq!(class(&r, "/host/var/run"), "host-tmpfs");
    assert!(r.has("mount.host-tmpfs", "/host/var/run"));
    assert_eq!(
        r.find("write.host-path", "/host/var/run")["evidence"]["read_only_mount"],
        false
    );
    assert!(r.has("teardown.persistent-writable", "/host/var/run"));
    // Not the other containers' roots below it, one by one.
    assert!(!r
        .pairs()
        .iter()
        .any(|(c, s)| c.starts_with("teardown.") && s.starts_with("/host/var/run/")));
}

#[test]
fn a_host_run_known_by_what_it_holds() {
    // No namespace bound below it: the host's /run told apart from a fresh
    // tmpfs by an engine's and the system's entries in it.
    let name = "docker-rootful";
    let mut text = capture(name);
    text.push_str(
        "900 608 0:23 / /host/run ro,nosuid,nodev - tmpfs tmpfs rw,size=805192k,mode=755\n",
    );
    text.push_str("901 608 0:77 / /scratch rw,nosuid,nodev - tmpfs tmpfs rw,size=65536k\n");
    let f = Fixture::container("hostrun-markers", &text, &data("plain.status"));
    for d in [
        "host/run/containerd",
        "host/run/systemd",
        "host/run/udev",
        "scratch/containerd",
    ] {
        f.dir(d);
    }
    let r = f.run(&[]);
    let t = r.find("mount.host-tmpfs", "/host/run");
    let markers = t["evidence"]["runtime_markers"].as_array().unwrap();
    assert!(markers.contains(&"containerd".into()) && markers.contains(&"systemd".into()));
    // A tmpfs with only an engine's entries (a dind's own /run) is not the host's.
    assert_eq!(class(&r, "/scratch"), "tmpfs");
    assert!(!r.has("mount.host-tmpfs", "/scratch"));
}

#[test]
fn container_roots_through_a_host_path_and_a_dinds_own() {
    let name = "docker-rootful";
    let upper = "rw,lowerdir=/var/lib/docker/overlay2/l/ABC,upperdir=/var/lib/docker/overlay2/9f1e/diff,workdir=/var/lib/docker/overlay2/9f1e/work";
    // The host's /var/lib/docker bound in, with a running container's root
    // below it (docker binds recursively); and a dind's own storage volume
    // with the root of a container it started itself.
    let mut text = capture(name);
    text.push_str("910 608 259:1 /var/lib/docker /host-docker rw,relatime - ext4 /dev/root rw\n");
    text.push_str(&format!(
        "911 910 0:70 / /host-docker/overlay2/9f1e/merged rw,relatime - overlay overlay {upper}\n"
    ));
    text.push_str("912 608 259:1 /var/lib/docker/volumes/dind-storage/_data /var/lib/docker rw,relatime - ext4 /dev/root rw\n");
    text.push_str(&format!("913 912 0:71 / /var/lib/docker/overlay2/9f1e/merged rw,relatime - overlay overlay {upper}\n"));
    let f = Fixture::container("rootfs", &text, &data("plain.status"));
    f.dir("host-docker/overlay2/9f1e/merged");
    f.dir("var/lib/docker/overlay2/9f1e/merged");
    let r = f.run(&[]);
    let c = r.find(
        "mount.container-rootfs",
        "/host-docker/overlay2/9f1e/merged",
    );
    assert_eq!(c["severity"], "high");
    assert_eq!(
        c["evidence"]["upperdir"],
        "/var/lib/docker/overlay2/9f1e/diff"
    );
    assert!(r.has("mount.unexpected", "/host-docker"));
    assert_eq!(class(&r, "/var/lib/docker"), "volume");
    assert!(!r.has(
        "mount.container-rootfs",
        "/var/lib/docker/overlay2/9f1e/merged"
    ));
    assert!(!r.has("mount.unexpected", "/var/lib/docker/overlay2/9f1e/merged"));
}

// ---------------------------------------------------------------------------
// Sysbox, systemd-nspawn, and a machine's own table

#[test]
fn sysbox_engine_files_through_shiftfs_and_sysbox_fs() {
    let name = "sysbox-shiftfs";
    let f = tree(name);
    // Reconstructed from the capture's tmpfs uid=231072 (see its SOURCE).
    f.file("proc/self/uid_map", "         0     231072      65536\n");
    let r = f.run(&[]);
    no_line_lost(&r, name);
    let b = &r.json["inventory"]["boundary"];
    assert_eq!(
        (&b["kind"], &b["engine"], &b["runtime"], &b["rootless"]),
        (
            &"container".into(),
            &"docker".into(),
            &"sysbox-runc".into(),
            &true.into()
        ),
        "{b:#}"
    );
    assert!(
        b["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["field"] == "runtime" && e["seen"].as_str().unwrap().contains("sysboxfs")),
        "{b:#}"
    );
    // Docker's files, shifted from /var/lib/docker/containers/<id>: field 4
    // ("/hosts") joined to the shiftfs source.
    for mp in ["/etc/hosts", "/etc/hostname", "/etc/resolv.conf"] {
        assert_eq!(managed_by(&r, mp), "docker", "{mp}");
        assert!(entry(&r, mp)["root"]
            .as_str()
            .unwrap()
            .starts_with("/var/lib/docker/containers/acbc2a6670e6"));
        not_host_data(&r, mp);
    }
    assert_eq!(
        r.json["inventory"]["mounts"]["engine"]["container_id"],
        "acbc2a6670e672cbaf39897aaaabce7f245a8c09a27458173e8a9b99c28ac6ae"
    );
    // sysbox-fs over /proc and /sys: the container's own emulated files.
    for mp in [
        "/proc/sys",
        "/proc/swaps",
        "/proc/uptime",
        "/sys/module/nf_conntrack/parameters/hashsize",
    ] {
        assert_eq!(managed_by(&r, mp), "sysbox", "{mp}");
        not_host_data(&r, mp);
    }
    // The inner engines' state: sysbox-mgr's, one directory per container.
    for mp in ["/var/lib/docker", "/var/lib/kubelet", "/var/lib/containerd"] {
        assert_eq!(managed_by(&r, mp), "sysbox", "{mp}");
        not_host_data(&r, mp);
    }
    assert_eq!(class(&r, "/"), "root-fs");
    r.assert_absent(&[
        "mount.host-procfs",
        "mount.host-tmpfs",
        "write.host-path",
        "teardown.persistent-writable",
        "priv.root-without-userns",
    ]);
    // The host's kernel headers are host files, read-only, named by the
    // host path shiftfs marks, not by its "/".
    let h = r.find(
        "mount.unexpected",
        "/usr/src/linux-headers-5.0.0-38-generic",
    );
    assert_eq!(
        h["evidence"]["host_path"],
        "/usr/src/linux-headers-5.0.0-38-generic"
    );
    assert_eq!(h["evidence"]["read_only"], true);
    assert!(!r.stdout.contains("host path (/)"), "no shiftfs mark is /");
}

#[test]
fn systemd_nspawn_propagation_directory() {
    let name = "systemd-nspawn";
    let r = tree(name).run(&[]);
    no_line_lost(&r, name);
    let mp = "/run/systemd/nspawn/incoming";
    assert_eq!(managed_by(&r, mp), "systemd-nspawn");
    not_host_data(&r, mp);
    let b = &r.json["inventory"]["boundary"];
    assert_eq!(b["engine"], "systemd-nspawn", "{b:#}");
    assert_eq!(b["runtime"], "systemd-nspawn", "{b:#}");
    r.assert_absent(&["mount.unexpected", "write.host-path", "mount.host-tmpfs"]);
}

/// A tree that is a mount table and nothing else: no /proc/self/ns links,
/// no status, no PID 1; a directory at every mount point.
pub(crate) fn table_only(name: &str) -> Fixture {
    let text = capture(name);
    let f = Fixture::bare(name);
    f.file("proc/self/mountinfo", &text);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mp = line.split(' ').nth(4).unwrap().trim_start_matches('/');
        if !mp.is_empty() && !mp.starts_with("proc") && !mp.starts_with("sys") {
            f.dir(mp);
        }
    }
    f
}

#[test]
fn a_machines_own_table_alone_is_unknown_and_its_run_its_own() {
    let name = "host-docker-netns";
    let r = table_only(name).run(&[]);
    no_line_lost(&r, name);
    let b = &r.json["inventory"]["boundary"];
    assert_eq!(b["kind"], "unknown", "no evidence decides it: {b:#}");
    assert_eq!(b["engine"], "unknown");
    assert_eq!(b["runtime"], "unknown");
    let i = r.find("probe.incomplete", "boundary");
    assert_eq!(i["status"], "unknown");
    // The machine's /run, with its containers' namespaces bound below it
    // (the tree holds run/docker and run/user as the table says).
    assert_eq!(class(&r, "/run"), "tmpfs");
    let netns = mounts(&r).iter().filter(|m| m["fstype"] == "nsfs").count();
    assert_eq!(netns, 5);
    for code in [
        "mount.host-tmpfs",
        "write.host-path",
        "teardown.persistent-writable",
    ] {
        assert!(!r.has(code, "/run"), "{code} /run: {:#?}", r.pairs());
    }
    r.assert_absent(&["mount.host-tmpfs", "mount.container-rootfs"]);
    // lxcfs' own mount is no engine file of a container.
    assert_eq!(class(&r, "/var/lib/lxcfs"), "pseudo");

    // The same /run inside a Docker container (-v /run:/run): the engine's
    // files say it is a container, and that /run is the host's.
    let mut text = capture("docker-rootful");
    text.push_str(
        "900 608 0:24 / /run rw,nosuid,noexec,relatime - tmpfs tmpfs rw,size=100884k,mode=755\n",
    );
    text.push_str("901 900 0:3 net:[4026531993] /run/docker/netns/default rw - nsfs nsfs rw\n");
    let c = Fixture::container("hostrun-in", &text, &data("plain.status"));
    for d in ["run/docker/netns/default", "run/user/0", "run/systemd"] {
        c.dir(d);
    }
    let r = c.run(&[]);
    assert_eq!(class(&r, "/run"), "host-tmpfs");
    assert!(r.has("mount.host-tmpfs", "/run"), "{:#?}", r.pairs());
}
