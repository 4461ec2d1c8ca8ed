//! The sandboxes on the host's kernel (issue 29, DESIGN.md section 12's field
//! matrix): bubblewrap over the machine's root read-only (as root and as a
//! user) and with a narrow view, firejail, systemd-nspawn with and without
//! -U, unprivileged LXC on a directory root, a bare unshare and a plain
//! chroot, each run for real with the shipped binary. For each: the kind,
//! engine, runtime and rootless; mount.host-root and the host's homes where
//! the machine's root is visible; none of the false alarms issue 29 lists
//! (the machine's /.dockerenv taken for Docker, release_agent and an empty
//! /sys/kernel/security as writable interfaces, a device whose read-only
//! open fails called readable, the engines' own binds as host mounts, the
//! same finding twice, the keys packages ship as examples as credentials);
//! and an engine API answering on a socket outside the catalog, a real
//! `podman system service` in /tmp, found by the places search.
//!
//! Needs root, the tools (bubblewrap, firejail, systemd-container, lxc,
//! util-linux, coreutils' chroot), podman, and for nspawn, LXC and chroot the
//! debootstrap'd root of tests/devc/build.sh; a missing one is a visible
//! SKIP, a failure under CI=true.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::other_user::NOBODY;
use crate::common::podman::{
    is_root, run_bounded, skip_or_fail, unique, Check, PodmanService, Run, TempPath,
};
use crate::common::shipped;

const LIMIT: Duration = Duration::from_secs(120);

/// Whether `tool` runs here (`tool --version`), or a visible SKIP.
fn have(test: &str, tool: &str, package: &str) -> bool {
    if !is_root() {
        skip_or_fail(test, "not root (the sandboxes are started as root)");
        return false;
    }
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip_or_fail(
            test,
            &format!("{tool} is missing (apt-get install -y {package}; .ci/run does it)"),
        );
    }
    ok
}

/// The shipped binary in a directory of its own that every sandbox can
/// see (bound in where /tmp is the sandbox's own), readable by anyone.
fn probe_dir(tag: &str) -> TempPath {
    let d = TempPath::dir(tag).expect("a temporary directory");
    fs::set_permissions(&d.path, fs::Permissions::from_mode(0o755)).unwrap();
    fs::copy(shipped::bin(), d.path.join("selfprobe")).unwrap();
    d
}

/// A real engine API outside the catalog: rootful podman's service on
/// /tmp/<unique>/api.sock (a name no catalog entry bears), open to every
/// uid so that a sandbox's own users may ask it.
struct Engine {
    service: PodmanService,
    dir: TempPath,
}

impl Engine {
    fn start(test: &str) -> Option<Engine> {
        if !have(test, "podman", "podman") {
            return None;
        }
        let dir = TempPath::dir("sbx-engine").expect("a temporary directory");
        fs::set_permissions(&dir.path, fs::Permissions::from_mode(0o755)).unwrap();
        let sock = TempPath {
            path: dir.path.join("api.sock"),
        };
        let service = PodmanService::start_at(sock);
        fs::set_permissions(&service.sock.path, fs::Permissions::from_mode(0o666)).unwrap();
        Some(Engine { service, dir })
    }

    fn sock(&self) -> &Path {
        &self.service.sock.path
    }
}

/// Runs `cmd` (a sandbox around `selfprobe --format json`) and reads the report.
fn report(what: &str, cmd: Command) -> Run {
    let out = run_bounded(cmd, LIMIT, None).unwrap_or_else(|e| panic!("{what}: {e}"));
    let code = out
        .code
        .unwrap_or_else(|| panic!("{what}: killed by a signal\n{}", out.stderr));
    let json: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: exit {code}, stdout is not JSON ({e})\nstdout:\n{}\nstderr:\n{}",
            out.stdout, out.stderr
        )
    });
    Run {
        what: what.to_string(),
        code,
        json,
        stderr: out.stderr,
    }
}

/// Where the engine's socket is in the sandbox: its directory bound in
/// (a host mount, whose walk finds it) or simply visible (the machine's
/// /tmp, or a place inside the sandbox's own root), which only the places
/// search finds.
#[derive(Clone, Copy, PartialEq)]
enum Sock {
    BoundIn,
    Visible,
}

/// What every sandbox is checked for: its boundary, the engine found on
/// a socket outside the catalog (at `sock` as the sandbox sees it), and
/// none of issue 29's false alarms.
fn expect(c: &mut Check, want: [(&str, Value); 4], sock: &str, how: Sock) {
    let b = c.run.json["inventory"]["boundary"].clone();
    for (field, v) in want {
        if b[field] != v {
            c.fail(format!(
                "inventory.boundary.{field} is {} (want {v})",
                b[field]
            ));
        }
    }
    let got = c.has("engine.socket-reachable", sock).map(|f| {
        (
            f["evidence"]["origin"].clone(),
            f["evidence"]["outcome"].clone(),
        )
    });
    if let Some((origin, outcome)) = got {
        let o = origin.as_str().unwrap_or("");
        let by = match how {
            Sock::Visible => o.starts_with("search:"),
            Sock::BoundIn => o.starts_with("search:") || o.starts_with("host-mount:"),
        };
        if !by || outcome != "answered" {
            c.fail(format!(
                "{sock}: origin {origin}, outcome {outcome} (want it found by what it answered)"
            ));
        }
    }
    lacks_false_alarms(c);
}

fn lacks_false_alarms(c: &mut Check) {
    let findings: Vec<Value> = c.run.findings().to_vec();
    let mut ids = std::collections::BTreeSet::new();
    for f in &findings {
        let (code, subject) = (
            f["code"].as_str().unwrap_or(""),
            f["subject"].as_str().unwrap_or(""),
        );
        if !ids.insert(f["id"].as_str().unwrap_or("").to_string()) {
            c.fail(format!("{code} {subject}: its id twice"));
        }
        let alarm = match code {
            "write.kernel-interface" => {
                subject.ends_with("/release_agent") || subject == "/sys/kernel/security"
            }
            "mount.unexpected" | "write.host-path" | "mount.config-directory" => {
                subject.starts_with("/run/host/") || subject.starts_with("/run/firejail")
            }
            // Keys Debian packages ship as examples and test data.
            "secret.file" => {
                subject.starts_with("/usr/share/doc/")
                    || subject.contains("/testdata/")
                    || subject.starts_with("/usr/lib/google-cloud-sdk/")
            }
            _ => false,
        };
        if alarm {
            c.fail(format!("false alarm: {code} {subject}"));
        }
        // A device called readable must open read-only here too (the
        // sandboxes that show devices show the machine's own nodes).
        if code == "device.host-block" && f["evidence"]["readable"] == true {
            let p = Path::new(subject);
            if p.exists()
                && fs::File::open(p).is_err_and(|e| e.raw_os_error() == Some(nix::libc::EPERM))
            {
                c.fail(format!(
                    "{subject} called readable; open(O_RDONLY) fails with EPERM"
                ));
            }
        }
    }
}

/// mount.host-root on "/" at `severity`, naming the machine's homes.
fn host_root(c: &mut Check, severity: &str) {
    c.has_sev("mount.host-root", "/", severity);
    let homes = c
        .run
        .find("mount.host-root", "/")
        .map(|f| f["evidence"]["homes"].clone());
    if let Some(h) = homes {
        if !h.as_array().is_some_and(|a| a.iter().any(|x| x == "/root")) {
            c.fail(format!("mount.host-root / names the homes {h}, not /root"));
        }
    }
    c.lacks("write.rootfs", "/");
}

fn ours(kind: &str, engine: &str, runtime: &str, rootless: bool) -> [(&'static str, Value); 4] {
    [
        ("kind", kind.into()),
        ("engine", engine.into()),
        ("runtime", runtime.into()),
        ("rootless", rootless.into()),
    ]
}

fn bwrap(probe: &Path, engine: &Engine, narrow: bool) -> Command {
    let mut cmd = Command::new("bwrap");
    if narrow {
        for d in ["/usr", "/etc"] {
            cmd.args(["--ro-bind", d, d]);
        }
        for (l, t) in [
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/bin", "usr/bin"),
        ] {
            cmd.args(["--symlink", t, l]);
        }
    } else {
        cmd.args(["--ro-bind", "/", "/"]);
    }
    cmd.args(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]);
    // /tmp is the sandbox's own: the probe and the engine's socket are
    // bound in at the paths they have outside.
    let p = probe.to_str().unwrap();
    let e = engine.dir.arg();
    cmd.args(["--ro-bind", p, p, "--bind", e, e]);
    cmd.args(["--unshare-all", "--die-with-parent", "--new-session"]);
    cmd.arg(probe.join("selfprobe")).args(["--format", "json"]);
    cmd
}

/// bubblewrap over the machine's root (or, `narrow`, over /usr and /etc
/// only), started by root or, `as_nobody`, as the agents run it: by a user
/// (nobody here; the probe and the socket's directory are 0755 in /tmp,
/// the socket 0666).
fn bubblewrap(test: &str, narrow: bool, as_nobody: bool) {
    if !have(test, "bwrap", "bubblewrap") {
        return;
    }
    let Some(engine) = Engine::start(test) else {
        return;
    };
    let probe = probe_dir("sbx-bwrap");
    let mut cmd = bwrap(&probe.path, &engine, narrow);
    if as_nobody {
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let r = report(test, cmd);
    let mut c = r.check();
    let sock = engine.sock().to_str().unwrap().to_string();
    expect(
        &mut c,
        ours("container", "bubblewrap", "bubblewrap", as_nobody),
        &sock,
        Sock::BoundIn,
    );
    if narrow {
        c.lacks_code("mount.host-root");
    } else {
        host_root(&mut c, "high");
    }
    c.done();
}

#[test]
fn bubblewrap_over_the_machine_root_read_only() {
    bubblewrap("bubblewrap_over_the_machine_root_read_only", false, false);
}

#[test]
fn bubblewrap_as_a_user_over_the_machine_root() {
    bubblewrap("bubblewrap_as_a_user_over_the_machine_root", false, true);
}

#[test]
fn bubblewrap_with_a_narrow_view() {
    bubblewrap("bubblewrap_with_a_narrow_view", true, false);
}

#[test]
fn firejail_over_the_machine_root() {
    let test = "firejail_over_the_machine_root";
    if !have(test, "firejail", "firejail") {
        return;
    }
    let Some(engine) = Engine::start(test) else {
        return;
    };
    // firejail gives /var/tmp a tmpfs of its own; /tmp is the machine's.
    let probe = probe_dir("sbx-firejail");
    let mut cmd = Command::new("firejail");
    cmd.args(["--noprofile", "--net=none", "--quiet"])
        .arg(probe.path.join("selfprobe"))
        .args(["--format", "json"]);
    let r = report("firejail --noprofile --net=none", cmd);
    let mut c = r.check();
    let sock = engine.sock().to_str().unwrap().to_string();
    expect(
        &mut c,
        ours("container", "firejail", "firejail", false),
        &sock,
        Sock::Visible,
    );
    // Root of the machine's initial user namespace: / is writable.
    host_root(&mut c, "critical");
    c.done();
}

#[test]
fn a_bare_unshare_over_the_machine_root() {
    let test = "a_bare_unshare_over_the_machine_root";
    if !have(test, "unshare", "util-linux") {
        return;
    }
    let Some(engine) = Engine::start(test) else {
        return;
    };
    let probe = probe_dir("sbx-unshare");
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--user",
        "--map-root-user",
        "--mount",
        "--pid",
        "--net",
        "--fork",
        "--mount-proc",
    ])
    .arg(probe.path.join("selfprobe"))
    .args(["--format", "json"]);
    let r = report("unshare --user --map-root-user …", cmd);
    let mut c = r.check();
    let sock = engine.sock().to_str().unwrap().to_string();
    expect(
        &mut c,
        ours("container", "unshare", "unshare", false),
        &sock,
        Sock::Visible,
    );
    host_root(&mut c, "critical");
    c.done();
}

/// The debootstrap'd root of tests/devc/build.sh, unpacked in a directory
/// of its own with the probe at /selfprobe.
fn debian_root(test: &str, tag: &str) -> Option<TempPath> {
    if !have(test, "tar", "tar") {
        return None;
    }
    let plain = match crate::containers_agents::devc_tars() {
        Ok((plain, _)) => plain,
        Err(e) => {
            skip_or_fail(test, &format!("the debootstrap'd root: {e}"));
            return None;
        }
    };
    let root = TempPath::dir_in(Path::new("/var/tmp"), tag).expect("a root directory");
    fs::set_permissions(&root.path, fs::Permissions::from_mode(0o755)).unwrap();
    let st = Command::new("tar")
        .arg("-C")
        .arg(&root.path)
        .arg("-xf")
        .arg(&plain)
        .status()
        .unwrap();
    assert!(st.success(), "tar -xf {}: {st}", plain.display());
    fs::copy(shipped::bin(), root.path.join("selfprobe")).unwrap();
    Some(root)
}

fn nspawn(test: &str, userns: bool) {
    if !have(test, "systemd-nspawn", "systemd-container") {
        return;
    }
    let Some(engine) = Engine::start(test) else {
        return;
    };
    let Some(root) = debian_root(test, "sbx-nspawn") else {
        return;
    };
    let mut cmd = Command::new("systemd-nspawn");
    cmd.arg("-D")
        .arg(&root.path)
        .args([
            "--private-network",
            "--register=no",
            "--keep-unit",
            "--quiet",
        ])
        .arg(format!("--bind={}", engine.dir.arg()));
    if userns {
        cmd.arg("-U");
    }
    cmd.args(["/selfprobe", "--format", "json"]);
    let r = report(
        &format!("systemd-nspawn{}", if userns { " -U" } else { "" }),
        cmd,
    );
    let mut c = r.check();
    let sock = engine.sock().to_str().unwrap().to_string();
    expect(
        &mut c,
        ours("container", "systemd-nspawn", "systemd-nspawn", userns),
        &sock,
        Sock::BoundIn,
    );
    c.lacks_code("mount.host-root");
    for p in ["/run/host/incoming", "/run/host/os-release"] {
        c.lacks("mount.unexpected", p);
    }
    c.done();
    // -U shifted the tree's owners: the tree goes with the TempPath.
}

#[test]
fn systemd_nspawn_on_a_directory_root() {
    nspawn("systemd_nspawn_on_a_directory_root", false);
}

#[test]
fn systemd_nspawn_with_a_user_namespace() {
    nspawn("systemd_nspawn_with_a_user_namespace", true);
}

/// The uid and gid range LXC maps root's unprivileged containers to
/// (/etc/subuid and /etc/subgid, which .ci/engines sets up).
fn root_subid_range() -> Option<(u64, u64)> {
    let text = fs::read_to_string("/etc/subuid").ok()?;
    let line = text.lines().find(|l| l.starts_with("root:"))?;
    let mut f = line.split(':').skip(1);
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

#[test]
fn unprivileged_lxc_on_a_directory_root() {
    let test = "unprivileged_lxc_on_a_directory_root";
    if !have(test, "lxc-execute", "lxc") {
        return;
    }
    let Some((first, count)) = root_subid_range() else {
        skip_or_fail(test, "no root: range in /etc/subuid (.ci/engines adds one)");
        return;
    };
    let Some(engine) = Engine::start(test) else {
        return;
    };
    let Some(root) = debian_root(test, "sbx-lxc") else {
        return;
    };
    // The container's root is uid `first` outside: the tree is its.
    let st = Command::new("chown")
        .args(["-R", &format!("{first}:{first}")])
        .arg(&root.path)
        .status()
        .unwrap();
    assert!(st.success());
    let lxcpath = TempPath::dir_in(Path::new("/var/tmp"), "sbx-lxcpath").unwrap();
    fs::set_permissions(&lxcpath.path, fs::Permissions::from_mode(0o755)).unwrap();
    let name = unique("lxc");
    let cdir = lxcpath.path.join(&name);
    fs::create_dir(&cdir).unwrap();
    let e = engine.dir.arg().trim_start_matches('/').to_string();
    fs::write(
        cdir.join("config"),
        format!(
            "lxc.include = /usr/share/lxc/config/common.conf\n\
             lxc.include = /usr/share/lxc/config/userns.conf\n\
             lxc.rootfs.path = dir:{}\n\
             lxc.uts.name = sbx\n\
             lxc.net.0.type = empty\n\
             lxc.idmap = u 0 {first} {count}\n\
             lxc.idmap = g 0 {first} {count}\n\
             lxc.apparmor.profile = unconfined\n\
             lxc.mount.entry = /{e} {e} none bind,create=dir 0 0\n",
            root.path.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("lxc-execute");
    cmd.arg("-P")
        .arg(&lxcpath.path)
        .args(["-n", &name, "--", "/selfprobe", "--format", "json"]);
    let r = report("lxc-execute (unprivileged, directory root)", cmd);
    let mut c = r.check();
    let sock = engine.sock().to_str().unwrap().to_string();
    expect(
        &mut c,
        ours("container", "lxc", "lxc", true),
        &sock,
        Sock::BoundIn,
    );
    c.lacks_code("mount.host-root");
    c.done();
}

#[test]
fn a_plain_chroot_is_the_host() {
    let test = "a_plain_chroot_is_the_host";
    if !have(test, "chroot", "coreutils") {
        return;
    }
    let Some(root) = debian_root(test, "sbx-chroot") else {
        return;
    };
    // The engine's socket lives inside the root, where the chroot sees it.
    let run = root.path.join("run/sbx-engine");
    fs::create_dir_all(&run).unwrap();
    let sock = TempPath {
        path: run.join("api.sock"),
    };
    if !have(test, "podman", "podman") {
        return;
    }
    let service = PodmanService::start_at(sock);
    let proc_dir = root.path.join("proc");
    let st = Command::new("mount")
        .args(["-t", "proc", "proc"])
        .arg(&proc_dir)
        .status()
        .unwrap();
    assert!(st.success(), "mount -t proc: {st}");
    let mut cmd = Command::new("chroot");
    cmd.arg(&root.path).args(["/selfprobe", "--format", "json"]);
    let r = run_bounded(cmd, LIMIT, None);
    let _ = Command::new("umount").arg(&proc_dir).status();
    drop(service);
    let out = r.unwrap_or_else(|e| panic!("chroot: {e}"));
    let json: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("chroot: not JSON ({e})\n{}", out.stderr));
    let r = Run {
        what: "chroot ROOT /selfprobe".into(),
        code: out.code.unwrap_or(-1),
        json,
        stderr: out.stderr,
    };
    let mut c = r.check();
    expect(
        &mut c,
        ours("host", "none", "none", false),
        "/run/sbx-engine/api.sock",
        Sock::Visible,
    );
    c.has("boundary.none", "boundary");
    c.lacks_code("mount.host-root");
    c.done();
}
