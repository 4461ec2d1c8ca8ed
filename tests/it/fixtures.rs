//! Fixture-tree tests: the real probes run against a tree through `--root`,
//! the same path src/host.rs takes on a live system. The mountinfo and
//! status files under tests/data were captured inside real podman containers.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::fixture::*;

#[test]
fn plain_container_capture() {
    let f = Fixture::container("plain", &data("plain.mountinfo"), &data("plain.status"));
    let r = f.run(&[]);
    assert_eq!(
        r.code, 1,
        "root without a user namespace is high; {}",
        r.stderr
    );
    assert!(r.has("priv.root-without-userns", "uid 0"));
    assert_eq!(
        r.find("priv.capability", "CAP_DAC_OVERRIDE")["severity"],
        "medium"
    );
    assert!(r.has("mount.workspace-missing", "(none)"));
    assert!(r.has("priv.no-lsm", "lsm"));
    r.assert_absent(&[
        "mount.unexpected",
        "mount.host-root",
        "mount.home-directory",
        "priv.privileged",
        "priv.seccomp-disabled",
        "ns.host-pid",
        "ns.host-network",
        "engine.socket-reachable",
        "engine.socket-present",
        "device.host-block",
        "write.kernel-interface",
        "write.host-path",
        "probe.incomplete",
    ]);
    // The engine's own binds are classified, not reported.
    let mounts = r.json["inventory"]["mounts"]["mounts"].as_array().unwrap();
    let hosts = mounts
        .iter()
        .find(|m| m["mount_point"] == "/etc/hosts")
        .unwrap();
    assert_eq!(hosts["class"], "engine-managed");
    assert_eq!(r.json["schema_version"], 1);
    assert_eq!(r.json["tool"]["sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn privileged_capture_with_host_devices_and_sysfs() {
    let f = Fixture::container(
        "priv",
        &data("privileged.mountinfo"),
        &data("privileged.status"),
    );
    f.file("proc/sys/kernel/core_pattern", "core\n");
    let r = f.run(&[]);
    assert_eq!(r.code, 1);
    let p = r.find("priv.privileged", "container");
    assert_eq!(p["severity"], "critical");
    assert_eq!(p["evidence"]["sysfs_writable"], true);
    assert!(r.has("priv.seccomp-disabled", "seccomp"));
    assert_eq!(
        r.find("priv.capability", "CAP_SYS_ADMIN")["severity"],
        "critical"
    );
    assert_eq!(
        r.find("write.kernel-interface", "/proc/sys/kernel/core_pattern")["severity"],
        "critical"
    );
}

#[test]
fn clean_capture_has_nothing_high() {
    let mut status = data("clean.status");
    status = status.replace("NoNewPrivs:\t0", "NoNewPrivs:\t1");
    let f = Fixture::container("clean", &data("clean.mountinfo"), &status);
    f.dir("workspace");
    // The clean container's root is read-only; so is this tree's.
    let r = f.run(&["--workspace", "/workspace"]);
    let high: Vec<_> = r
        .findings()
        .into_iter()
        .filter(|f| f["severity"] == "high" || f["severity"] == "critical")
        .collect();
    assert!(high.is_empty(), "{high:#?}");
    assert_eq!(r.code, 0);
    r.assert_absent(&[
        "mount.unexpected",
        "mount.workspace-missing",
        "priv.root-without-userns",
        "priv.capability",
    ]);
    let mounts = r.json["inventory"]["mounts"]["mounts"].as_array().unwrap();
    let ws = mounts
        .iter()
        .find(|m| m["mount_point"] == "/workspace")
        .unwrap();
    assert_eq!(ws["class"], "workspace");
}

#[test]
fn host_home_with_ssh_and_config() {
    let f = Fixture::container(
        "home",
        &mountinfo_with(&[
            "84 80 254:0 /home/alice /home/dev rw,relatime - ext4 /dev/vda rw",
            "85 80 254:0 /home/bob/.aws /root/.aws ro,relatime - ext4 /dev/vda rw",
            "86 80 254:0 /home/carol/.ssh /keys rw,relatime - ext4 /dev/vda rw",
        ]),
        &data("plain.status"),
    );
    f.file("home/dev/.ssh/id_ed25519", "not a key\n");
    f.file("home/dev/.bashrc", "");
    f.file("home/dev/.aws/credentials", "[default]\n");
    f.dir("root/.aws");
    f.dir("keys");
    let r = f.run(&[]);
    assert_eq!(r.code, 1);
    assert!(r.has("mount.home-directory", "/home/dev"));
    assert!(r.has("mount.ssh-directory", "/home/dev/.ssh"));
    assert!(r.has("mount.config-directory", "/home/dev/.aws/credentials"));
    let aws = r.find("mount.config-directory", "/root/.aws");
    assert_eq!(aws["evidence"]["host_path"], "/home/bob/.aws");
    assert_eq!(aws["evidence"]["read_only"], true);
    assert!(r.has("mount.ssh-directory", "/keys"));
    assert!(r.has("write.host-path", "/home/dev"));
    r.assert_absent(&["mount.host-root", "mount.unexpected"]);
}

#[test]
fn host_root_by_contents_and_by_engine_device() {
    let f = Fixture::container(
        "hostroot",
        &mountinfo_with(&[
            "90 80 8:1 / /host rw,relatime - xfs /dev/sda1 rw",
            "91 80 254:0 / /also-host ro,relatime - ext4 /dev/vda rw",
            "92 80 8:17 / /data rw,relatime - ext4 /dev/sdb1 rw",
        ]),
        &data("plain.status"),
    );
    f.dir("host/etc");
    f.dir("host/usr");
    f.dir("also-host");
    f.file("data/file", "x");
    let r = f.run(&[]);
    assert!(r.has("mount.host-root", "/host"));
    // Same device as the engine's /etc/hosts bind: the host's own filesystem.
    assert!(r.has("mount.host-root", "/also-host"));
    assert!(!r.has("mount.host-root", "/data"));
    assert!(r.has("mount.unexpected", "/data"));
}

#[test]
fn parent_and_unrelated_repositories() {
    let f = Fixture::container(
        "repos",
        &mountinfo_with(&[
            "90 80 254:0 /home/alice/mono /src rw,relatime - ext4 /dev/vda rw",
            "91 80 254:0 /home/alice/other /other ro,relatime - ext4 /dev/vda rw",
            "92 80 254:0 /home/alice/code /projects ro,relatime - ext4 /dev/vda rw",
        ]),
        &data("plain.status"),
    );
    f.dir("src/.git");
    f.dir("src/app");
    f.dir("other/.git");
    f.dir("projects/a/.git");
    f.file("projects/b/.git", "gitdir: ../x\n");
    f.dir("projects/notes");
    let r = f.run(&["--workspace", "/src/app"]);
    let p = r.find("mount.parent-repo", "/src");
    assert_eq!(p["severity"], "high");
    assert!(r.has("mount.unrelated-repo", "/other"));
    assert!(r.has("mount.unrelated-repo", "/projects/a"));
    assert!(r.has("mount.unrelated-repo", "/projects/b"));
    assert!(!r.has("mount.unrelated-repo", "/projects/notes"));
    assert!(!r.has("mount.unexpected", "/src"));
    r.assert_absent(&["mount.workspace-missing"]);
}

#[test]
fn workspace_from_policy_and_allow_mounts() {
    let f = Fixture::container(
        "policy",
        &mountinfo_with(&[
            "90 80 254:0 /srv/ws /workspaces/app rw,relatime - ext4 /dev/vda rw",
            "91 80 254:0 /srv/cache/pip /cache/pip rw,relatime - ext4 /dev/vda rw",
            "92 80 254:0 /srv/junk /junk ro,relatime - ext4 /dev/vda rw",
        ]),
        &data("plain.status"),
    );
    f.dir("workspaces/app");
    f.dir("cache/pip");
    f.dir("junk");
    let pol = f.path("policy.toml");
    fs::write(
        &pol,
        "[workspace]\npath = \"/workspaces/app\"\nallow_mounts = [\"/cache/pip\"]\n",
    )
    .unwrap();
    let r = f.run(&["--policy", pol.to_str().unwrap()]);
    assert_eq!(r.json["run"]["workspace_source"], "policy");
    assert!(r.has("mount.unexpected", "/junk"));
    assert!(!r.has("mount.unexpected", "/cache/pip"));
    assert!(!r.has("write.host-path", "/cache/pip"));
    assert!(!r.has("mount.unexpected", "/workspaces/app"));
    assert!(!r.has("write.host-path", "/workspaces/app"));
    // --workspace overrides the policy.
    let r = f.run(&["--policy", pol.to_str().unwrap(), "--workspace", "/nowhere"]);
    assert!(r.has("mount.workspace-missing", "/nowhere"));
}

#[test]
fn exceptions_excuse_and_expired_ones_are_findings() {
    let f = Fixture::container(
        "exceptions",
        &mountinfo_with(&["90 80 254:0 /srv/junk /junk ro,relatime - ext4 /dev/vda rw"]),
        &data("plain.status"),
    );
    f.dir("junk");
    let pol = f.path("p.toml");
    fs::write(
        &pol,
        r#"
[[exception]]
code = "priv.root-without-userns"
owner = "platform@example.com"
reason = "rootful CI runner, tracked in INFRA-12"
expires = "2999-12-31"

[[exception]]
code = "mount.unexpected"
subject = "/junk"
owner = "platform@example.com"
expires = "2001-01-01"
"#,
    )
    .unwrap();
    let r = f.run(&["--policy", pol.to_str().unwrap()]);
    let e = r.find("priv.root-without-userns", "uid 0");
    assert_eq!(e["status"], "excepted");
    assert_eq!(e["exception"]["owner"], "platform@example.com");
    let bad = r.find("policy.exception-invalid", &format!("{}:8", pol.display()));
    assert!(bad["message"]
        .as_str()
        .unwrap()
        .contains("expired on 2001-01-01"));
    assert_eq!(r.find("mount.unexpected", "/junk")["status"], "fail");
    assert_eq!(r.code, 0, "nothing high is left failing: {:#?}", r.pairs());
    let r = f.run(&["--policy", pol.to_str().unwrap(), "--fail-on", "medium"]);
    assert_eq!(r.code, 1);
}

#[test]
fn escaped_and_hostile_mount_paths_are_decoded_and_sanitized() {
    let f = Fixture::container(
        "escapes",
        &mountinfo_with(&[
            "90 80 254:0 /srv/a\\040b /mnt/with\\040space rw - ext4 /dev/vda rw",
            "91 80 254:0 /srv/evil /mnt/x\\012\\033[2Jfake rw - ext4 /dev/vda rw",
        ]),
        &data("plain.status"),
    );
    f.dir("mnt/with space");
    let r = f.run(&[]);
    assert!(r.has("mount.unexpected", "/mnt/with space"));
    assert!(r.has("mount.unexpected", "/mnt/x\n\x1b[2Jfake"));
    let out = Command::new(BIN)
        .arg("--root")
        .arg(&f.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("/mnt/with space"));
    assert!(text.contains("/mnt/x\\u{a}\\u{1b}[2Jfake"), "{text}");
    assert!(!text.contains('\x1b'), "no raw escape may reach a terminal");
}

#[test]
fn namespaces_shared_with_the_host() {
    let f = Fixture::container("ns", &data("plain.mountinfo"), &data("plain.status"));
    f.ns(&[
        ("pid", 0xEFFF_FFFC),
        ("net", 0xEFFF_FFF9),
        ("ipc", 0xEFFF_FFFF),
        ("uts", 0xEFFF_FFFE),
    ]);
    f.file("proc/2/status", "Name:\tkthreadd\n");
    let r = f.run(&[]);
    assert_eq!(
        r.find("ns.host-pid", "pid")["evidence"]["kthreadd_visible"],
        true
    );
    assert!(r.has("ns.host-network", "net"));
    assert!(r.has("ns.host-ipc", "ipc"));
    assert!(r.has("ns.host-uts", "uts"));
    assert!(!r.has_code("ns.host-cgroup"));
}

fn serve(listener: UnixListener, answer: Option<&'static str>, deadline: Duration) {
    std::thread::spawn(move || {
        let start = Instant::now();
        listener.set_nonblocking(true).unwrap();
        let mut held = Vec::new();
        while start.elapsed() < deadline {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    match answer {
                        Some(a) => {
                            let mut buf = [0u8; 1024];
                            let n = s.read(&mut buf).unwrap_or(0);
                            let req = String::from_utf8_lossy(&buf[..n]);
                            let body = if req.starts_with("GET /_ping") {
                                "OK"
                            } else {
                                a
                            };
                            let _ = write!(s, "HTTP/1.0 200 OK\r\nServer: Fake/1.0\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                        }
                        None => held.push(s),
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
}

#[test]
fn engine_sockets_answering_dead_and_silent() {
    let f = Fixture::container("sockets", &data("plain.mountinfo"), &data("plain.status"));
    f.dir("var/run");
    f.dir("run/podman");
    f.dir("run/containerd");
    let live = UnixListener::bind(f.path("var/run/docker.sock")).unwrap();
    serve(
        live,
        Some(r#"{"Version":"99.1","ApiVersion":"1.41","Os":"linux"}"#),
        Duration::from_secs(20),
    );
    drop(UnixListener::bind(f.path("run/podman/podman.sock")).unwrap());
    let silent = UnixListener::bind(f.path("run/containerd/containerd.sock")).unwrap();
    serve(silent, None, Duration::from_secs(20));
    f.file("run/docker.sock", "not a socket");
    let started = Instant::now();
    let r = f.run(&[]);
    assert!(started.elapsed() < Duration::from_secs(5));
    let e = r.find("engine.socket-reachable", "/var/run/docker.sock");
    assert_eq!(e["evidence"]["answer"]["ping_status"], 200);
    assert_eq!(e["evidence"]["answer"]["version"], "99.1");
    assert_eq!(e["severity"], "critical");
    let d = r.find("engine.socket-present", "/run/podman/podman.sock");
    assert_eq!(d["evidence"]["outcome"], "refused");
    // gRPC sockets are only connected to; accepting is enough.
    assert!(r.has("engine.socket-reachable", "/run/containerd/containerd.sock"));
    assert!(
        !r.has_code("engine.socket-present") || !r.has("engine.socket-present", "/run/docker.sock")
    );
    assert!(!r.has("engine.socket-reachable", "/run/podman/podman.sock"));
}

/// A socket of no engine's name in a host mount that takes the request and
/// stays silent (an engine too loaded to answer in time, or hung) is
/// unknown: probe.incomplete naming it, never nothing. One that hangs up
/// is not an HTTP engine, and a silent one in /tmp (the places search) is
/// nobody's engine, as before. A slow engine is asked again with a longer
/// wait before it is called unknown. (Found when a loaded test machine
/// left a podman service's api.sock, bound into bubblewrap, without a
/// word.)
#[test]
fn a_silent_socket_in_a_host_mount_is_unknown_not_nothing() {
    let mut mi = data("plain.mountinfo");
    mi.push_str("101 80 254:0 /srv/svc /srv rw,relatime - ext4 /dev/vda rw\n");
    let f = Fixture::container("silenthm", &mi, &data("plain.status"));
    f.dir("srv");
    f.dir("tmp/app");
    serve(
        UnixListener::bind(f.path("srv/api.sock")).unwrap(),
        None,
        Duration::from_secs(20),
    );
    let hangs_up = UnixListener::bind(f.path("srv/hangs-up.sock")).unwrap();
    std::thread::spawn(move || {
        for s in hangs_up.incoming().take(4) {
            drop(s);
        }
    });
    serve(
        UnixListener::bind(f.path("tmp/app/app.sock")).unwrap(),
        None,
        Duration::from_secs(20),
    );
    // An engine that takes 1.5 s to answer each request (the first wait
    // is 1 s): asked again with a longer wait, it is the engine it is.
    let slow = UnixListener::bind(f.path("srv/slow.sock")).unwrap();
    std::thread::spawn(move || {
        for s in slow.incoming().take(8) {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1500));
                let mut buf = [0u8; 1024];
                let n = s.read(&mut buf).unwrap_or(0);
                let body = if buf[..n].starts_with(b"GET /_ping") {
                    "OK"
                } else {
                    r#"{"Version":"7.7"}"#
                };
                let _ = write!(
                    s,
                    "HTTP/1.0 200 OK\r\nServer: Slow/7.7\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    let r = f.run(&[]);
    let e = r.find("engine.socket-reachable", "/srv/slow.sock");
    assert_eq!(e["evidence"]["engine"], "Slow/7.7", "{e:#}");
    assert_eq!(e["evidence"]["answer"]["ping_status"], 200, "{e:#}");
    assert!(!r.has("probe.incomplete", "sockets:/srv/slow.sock"));
    let u = r.find("probe.incomplete", "sockets:/srv/api.sock");
    assert_eq!(u["status"], "unknown", "{u:#}");
    assert_eq!(u["evidence"]["origin"], "host-mount:/srv", "{u:#}");
    assert!(
        u["message"].as_str().unwrap().contains("no answer within"),
        "{u:#}"
    );
    let asked = &r.json["inventory"]["sockets"]["sockets"];
    let hung_up = asked
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"] == "/srv/hangs-up.sock")
        .unwrap_or_else(|| panic!("hangs-up.sock not asked: {asked:#}"));
    assert_eq!(hung_up["answer"].get("silent"), None, "{hung_up:#}");
    for p in ["/srv/hangs-up.sock", "/tmp/app/app.sock"] {
        assert!(
            !r.pairs().iter().any(|(_, s)| s.ends_with(p)),
            "{p}: {:#?}",
            r.pairs()
        );
    }
}

/// Issue 29: an engine API is found by what it is, not only by catalog
/// path: the places sockets live are searched, each socket asked /_ping.
/// What is known not to be an engine is never asked, and a dead socket
/// found there (named like one or not) is nobody's engine.
#[test]
fn an_engine_outside_the_catalog_is_found_where_sockets_live() {
    let f = Fixture::container("search", &data("plain.mountinfo"), &data("plain.status"));
    for d in [
        "tmp/podman-svc",
        "run/user/1000/svc",
        "run/systemd",
        "tmp/old",
    ] {
        f.dir(d);
    }
    let answer = Some(r#"{"Version":"5.0.3","Components":[{"Name":"Podman Engine"}]}"#);
    serve(
        UnixListener::bind(f.path("tmp/podman-svc/api.sock")).unwrap(),
        answer,
        Duration::from_secs(20),
    );
    serve(
        UnixListener::bind(f.path("run/user/1000/svc/engine")).unwrap(),
        answer,
        Duration::from_secs(20),
    );
    // systemd's private socket: passed by, never asked (it would answer
    // here, as a test's listener does).
    serve(
        UnixListener::bind(f.path("run/systemd/private")).unwrap(),
        answer,
        Duration::from_secs(20),
    );
    drop(UnixListener::bind(f.path("tmp/old/docker.sock")).unwrap());
    serve(
        UnixListener::bind(f.path("tmp/old/app.sock")).unwrap(),
        None,
        Duration::from_secs(20),
    );
    let r = f.run(&[]);
    for p in ["/tmp/podman-svc/api.sock", "/run/user/1000/svc/engine"] {
        let e = r.find("engine.socket-reachable", p);
        assert_eq!(e["evidence"]["outcome"], "answered", "{e:#}");
        assert!(
            e["evidence"]["origin"]
                .as_str()
                .unwrap()
                .starts_with("search:"),
            "{e:#}"
        );
        assert_eq!(e["evidence"]["answer"]["version"], "5.0.3");
    }
    for p in [
        "/run/systemd/private",
        "/tmp/old/docker.sock",
        "/tmp/old/app.sock",
    ] {
        assert!(
            !r.pairs()
                .iter()
                .any(|(c, s)| c.starts_with("engine.") && s == p),
            "{p}: {:#?}",
            r.pairs()
        );
    }
    let asked: Vec<&str> = r.json["inventory"]["sockets"]["sockets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert!(!asked.contains(&"/run/systemd/private"), "{asked:?}");
}

/// A host mount full of sockets that accept and never answer (a workspace
/// can make them in its own bind), first in the mount table, costs about
/// one wait: an engine's socket bound in after it is still reached and
/// reported, not lost to `sockets:not-reached`, and what was not reached
/// is counted, its list bounded. (Asked one after another, a second each,
/// twelve such sockets used up the whole probe.)
#[test]
fn silent_sockets_in_one_mount_do_not_hide_an_engine_in_the_next() {
    let mut mi = data("plain.mountinfo");
    mi.push_str("101 80 254:0 /ws /srv/a rw,relatime - ext4 /dev/vda rw\n");
    mi.push_str("102 80 254:0 /eng /srv/b rw,relatime - ext4 /dev/vda rw\n");
    let f = Fixture::container("silentfirst", &mi, &data("plain.status"));
    f.dir("srv/a");
    f.dir("srv/b");
    // Listening, never accepting: a connection is taken into the backlog
    // and nothing is ever read from it or written back.
    let silent: Vec<UnixListener> = (0..300)
        .map(|i| UnixListener::bind(f.path(&format!("srv/a/s{i:03}.sock"))).unwrap())
        .collect();
    serve(
        UnixListener::bind(f.path("srv/b/api.sock")).unwrap(),
        Some(r#"{"Version":"99.1"}"#),
        Duration::from_secs(20),
    );
    let started = Instant::now();
    let r = f.run(&[]);
    let took = started.elapsed();
    drop(silent);
    let e = r.find("engine.socket-reachable", "/srv/b/api.sock");
    assert_eq!(e["evidence"]["origin"], "host-mount:/srv/b", "{e:#}");
    assert_eq!(e["evidence"]["answer"]["version"], "99.1", "{e:#}");
    // The silent ones are unknown, never an engine and never nothing:
    // those asked (a batch, in the walk's order) each named, the others
    // not reached, the first 200 of them listed and the rest counted.
    let mut named = 0;
    for i in 0..300 {
        let p = format!("/srv/a/s{i:03}.sock");
        assert!(!r.has("engine.socket-reachable", &p));
        if r.has("probe.incomplete", &format!("sockets:{p}")) {
            let u = r.find("probe.incomplete", &format!("sockets:{p}"));
            assert_eq!(u["status"], "unknown", "{u:#}");
            named += 1;
        }
    }
    let inv = &r.json["inventory"]["sockets"];
    let listed = inv["not_reached"].as_array().unwrap();
    assert_eq!(listed.len(), 200, "{inv:#}");
    assert!(listed
        .iter()
        .all(|p| p.as_str().unwrap().starts_with("/srv/a/s")));
    let more = inv["not_reached_more"].as_u64().unwrap() as usize;
    assert!(named >= 8, "{named} named: {:#?}", r.pairs());
    assert_eq!(named + listed.len() + more, 300, "{named} {more}");
    let n = r.find("probe.incomplete", "sockets:not-reached");
    let said = format!("before {} socket(s)", 300 - named);
    assert!(n["message"].as_str().unwrap().contains(&said), "{n:#}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Issue 29: a sockets probe that runs out of time keeps what it found
/// (the catalog's sockets are asked first) and says what it did not reach.
#[test]
fn the_sockets_probe_keeps_what_it_found_and_names_what_it_did_not_reach() {
    let f = Fixture::container(
        "notreached",
        &data("plain.mountinfo"),
        &data("plain.status"),
    );
    f.dir("var/run");
    serve(
        UnixListener::bind(f.path("var/run/docker.sock")).unwrap(),
        Some(r#"{"Version":"99.1"}"#),
        Duration::from_secs(30),
    );
    // Forty sockets that take a connection and never answer: 300 ms each,
    // more than the run's 3 s leave.
    for i in 0..40 {
        let d = format!("tmp/s{i:02}");
        f.dir(&d);
        serve(
            UnixListener::bind(f.path(&format!("{d}/svc.sock"))).unwrap(),
            None,
            Duration::from_secs(30),
        );
    }
    let r = f.run(&["--timeout", "3s"]);
    let e = r.find("engine.socket-reachable", "/var/run/docker.sock");
    assert_eq!(e["evidence"]["answer"]["version"], "99.1");
    let nr = r.find("probe.incomplete", "sockets:not-reached");
    assert_eq!(nr["status"], "unknown");
    let left = nr["evidence"]["not_reached"].as_array().unwrap();
    assert!(!left.is_empty(), "{nr:#}");
    assert!(
        left.iter()
            .all(|p| p.as_str().unwrap().starts_with("/tmp/s")),
        "{nr:#}"
    );
}

#[test]
fn an_http_socket_that_never_answers_is_bounded() {
    let f = Fixture::container("silent", &data("plain.mountinfo"), &data("plain.status"));
    f.dir("var/run");
    let silent = UnixListener::bind(f.path("var/run/docker.sock")).unwrap();
    serve(silent, None, Duration::from_secs(20));
    let r = f.run(&["--timeout", "3s"]);
    // Bounded by the socket's own wait, not by --timeout: nothing was
    // left for the deadline to cut, and the run (timed inside the process,
    // so a slow start on a loaded machine does not count) ended before it.
    within_the_deadline(&r, 3000);
    let d = r.find("engine.socket-present", "/var/run/docker.sock");
    assert_eq!(d["evidence"]["outcome"], "no-answer");
}

#[test]
fn docker_host_tcp_is_reported_without_connecting_or_leaking() {
    let f = Fixture::container(
        "dockerhost",
        &data("plain.mountinfo"),
        &data("plain.status"),
    );
    let canary = "CANARYc4n4ry0s3cr3t";
    let url = format!("tcp://builder:{canary}@127.0.0.1:1");
    let r = f.run_env(&[], &[("DOCKER_HOST", url.as_str())]);
    let e = r.find("engine.tcp-endpoint", "tcp://***@127.0.0.1:1");
    assert_eq!(e["evidence"]["connected"], false);
    assert!(!r.stdout.contains(canary) && !r.stderr.contains(canary));
    let out = Command::new(BIN)
        .arg("--root")
        .arg(&f.dir)
        .env("DOCKER_HOST", &url)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(canary));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(canary));
}

#[test]
fn no_proc_reports_incomplete_and_never_passes() {
    let f = Fixture::bare("noproc");
    let r = f.run(&[]);
    assert!(
        r.code == 0 || r.code == 1,
        "exit {} stderr {}",
        r.code,
        r.stderr
    );
    for probe in ["mounts", "privilege", "namespaces", "devices"] {
        let i = r.find("probe.incomplete", probe);
        assert_eq!(i["status"], "unknown");
    }
    let sc = &r.json["scorecard"]["controls"];
    assert_eq!(sc[0]["control"], "repo-scope");
    assert_eq!(sc[0]["assessed"], false);
    assert_eq!(sc[1]["assessed"], false);
    let r = f.run(&["--fail-on", "medium"]);
    assert_eq!(r.code, 1, "an incomplete probe is never a pass");
}

#[test]
fn a_fifo_where_mountinfo_should_be_does_not_hang() {
    let f = Fixture::container("fifo", "", &data("plain.status"));
    fs::remove_file(f.path("proc/self/mountinfo")).unwrap();
    nix::unistd::mkfifo(
        &f.path("proc/self/mountinfo"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    let r = f.run(&["--timeout", "2s"]);
    // A FIFO is never opened for reading: the mount table fails at once,
    // long before --timeout would have cut a blocked read.
    within_the_deadline(&r, 2000);
    let i = r.find("probe.incomplete", "mounts");
    assert!(i["evidence"]["reason"]
        .as_str()
        .unwrap()
        .contains("not a regular file"));
}

/// The run finished by itself before `timeout_ms` (its --timeout): no
/// probe was left for the deadline, and the duration the report gives
/// (measured inside the process: from the start of the run to the report)
/// is under it.
fn within_the_deadline(r: &Run, timeout_ms: u64) {
    assert_eq!(r.json["run"]["timeout_ms"], timeout_ms);
    assert_eq!(
        r.json["run"]["unfinished"],
        serde_json::json!([]),
        "the deadline cut a probe: {}",
        r.json["probes"]
    );
    let ms = r.json["run"]["duration_ms"].as_u64().unwrap();
    assert!(
        ms < timeout_ms,
        "the run took {ms} ms of its {timeout_ms} ms"
    );
    assert_ne!(r.code, 3, "{}", r.stderr);
}

/// Names, modes and contents of every entry below `dir`, in order: what
/// "selfprobe changed nothing" means (a directory's mtime aside).
fn tree_hash(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::PermissionsExt;
    let mut entries = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let m = e.path().symlink_metadata().unwrap();
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            let content = if m.is_file() {
                fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            if m.is_dir() {
                stack.push(e.path());
            }
            entries.push((rel, m.permissions().mode(), content));
        }
    }
    entries.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    entries.hash(&mut h);
    h.finish()
}

#[test]
fn writes_only_with_write_test_and_leaves_the_tree_as_it_was() {
    use std::os::unix::fs::MetadataExt;
    let f = Fixture::container(
        "writetest",
        &mountinfo_with(&["90 80 254:0 /srv/shared /data rw,relatime - ext4 /dev/vda rw"]),
        &data("plain.status"),
    );
    f.file("data/a.txt", "alpha");
    f.file("data/sub/b.txt", "beta");
    let before = tree_hash(&f.dir);
    let mtime = |p: &Path| {
        let m = fs::metadata(p).unwrap();
        (m.mtime(), m.mtime_nsec())
    };
    let (data_m, root_m) = (mtime(&f.path("data")), mtime(&f.dir));

    let r = f.run(&[]);
    assert_eq!(
        r.find("write.host-path", "/data")["evidence"]["checked_with"],
        "access(2)"
    );
    assert_eq!(
        mtime(&f.path("data")),
        data_m,
        "no write without --write-test"
    );
    assert_eq!(mtime(&f.dir), root_m, "no write without --write-test");
    assert_eq!(tree_hash(&f.dir), before);

    let r = f.run(&["--write-test"]);
    let w = r.find("write.host-path", "/data");
    assert_eq!(w["evidence"]["write_test"], "created and removed");
    assert_eq!(w["evidence"]["checked_with"], "--write-test");
    let paths = r.json["inventory"]["writable"]["host_paths"]
        .as_array()
        .unwrap();
    assert_eq!(paths[0]["write_test"], "created and removed");
    assert_eq!(
        r.json["inventory"]["writable"]["rootfs_write_test"],
        "created and removed"
    );
    assert_eq!(
        tree_hash(&f.dir),
        before,
        "the write test removes what it creates"
    );
}
