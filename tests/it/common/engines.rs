//! The engines of the README's Set-up beside rootful podman (tests/it/common/
//! podman.rs): Docker (Debian's docker.io, dockerd on /var/run/docker.sock),
//! gVisor (runsc, registered in /etc/docker/daemon.json as the runtime
//! "runsc") and rootless podman (as the user .ci/engines makes). Each runs
//! the FROM-scratch tree of Containerfile.test: static busybox with its
//! applets, /tmp, /workspace, /root and the same /etc/passwd and
//! /etc/group. The tree holds no selfprobe: every run brings the shipped
//! binary itself, bind-mounted read-only (the way to run it in a
//! --read-only container, and the only way into gVisor's sandbox) or
//! copied in with `docker cp` (the README's smoke test).
//!
//! A missing engine is a visible `SKIP:`, and a failure under CI=true
//! (podman::skip_or_fail). Network rule: every container gets
//! `--network none` unless a case is about the network, and nothing here
//! makes selfprobe send traffic.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use super::other_user::{self, Place};
use super::podman::{run_bounded, skip_or_fail, unique, Output, Run, TempPath, RUN_TIMEOUT};
use super::shipped;

/// The user `.ci/engines` creates for rootless podman.
pub const ROOTLESS_USER: &str = "selfprobe-rootless";
/// Where the probe is bind-mounted, as the README tells users to.
pub const MOUNTED: &str = "/usr/local/bin/selfprobe";
/// Where `docker cp` puts it.
pub const COPIED: &str = "/tmp/selfprobe";

const IMPORT_TIMEOUT: Duration = Duration::from_secs(120);

fn bounded(cmd: Command, what: &str) -> Result<Output, String> {
    let out = run_bounded(cmd, RUN_TIMEOUT, None)?;
    if out.code != Some(0) {
        return Err(format!(
            "{what} exited {:?}\nstdout:\n{}\nstderr:\n{}",
            out.code, out.stdout, out.stderr
        ));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// The image tree.

/// Writes the FROM-scratch tree of Containerfile.test (without selfprobe)
/// under `dir` and packs it into `dir/image.tar`.
pub fn image_tar(dir: &Path) -> Result<PathBuf, String> {
    let tree = dir.join("tree");
    let err = |e: std::io::Error| e.to_string();
    for d in ["bin", "tmp", "workspace", "root", "etc", "usr/local/bin"] {
        std::fs::create_dir_all(tree.join(d)).map_err(err)?;
    }
    std::fs::copy("/bin/busybox", tree.join("bin/busybox")).map_err(err)?;
    let list = Command::new("/bin/busybox")
        .arg("--list")
        .output()
        .map_err(err)?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let link = tree.join("bin").join(applet.trim());
        if applet.trim().is_empty() || link.exists() {
            continue;
        }
        std::os::unix::fs::symlink("busybox", &link).map_err(err)?;
    }
    std::fs::set_permissions(tree.join("tmp"), std::fs::Permissions::from_mode(0o1777))
        .map_err(err)?;
    std::fs::write(
        tree.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\ndev:x:1000:1000:dev:/home/dev:/bin/sh\n",
    )
    .map_err(err)?;
    std::fs::write(
        tree.join("etc/group"),
        "root:x:0:\nnogroup:x:65534:\ndev:x:1000:\n",
    )
    .map_err(err)?;
    let tar = dir.join("image.tar");
    pack(&tree, &tar)?;
    Ok(tar)
}

/// `tree` packed into the tarball `tar` (its root as the archive's `.`), as
/// `import` and `skopeo copy tarball:` take it; bounded like every tool run.
pub fn pack(tree: &Path, tar: &Path) -> Result<(), String> {
    let mut cmd = Command::new("tar");
    cmd.arg("-C").arg(tree).arg("-cf").arg(tar).arg(".");
    bounded(cmd, "tar").map(drop)
}

// ---------------------------------------------------------------------------
// Docker and gVisor.

pub fn docker() -> Command {
    let mut c = Command::new("docker");
    c.stdin(Stdio::null());
    c
}

/// Why Docker cannot be used here, if it cannot.
fn docker_missing() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (dockerd's socket is root's)".into());
    }
    if !Path::new("/bin/busybox").is_file() {
        return Some("/bin/busybox missing; apt-get install -y busybox-static".into());
    }
    let mut cmd = docker();
    cmd.args(["version", "--format", "{{.Server.Version}}"]);
    match run_bounded(cmd, Duration::from_secs(20), None) {
        Ok(o) if o.code == Some(0) => None,
        Ok(o) => Some(format!(
            "dockerd does not answer (`docker version` exited {:?}: {}); run .ci/engines",
            o.code,
            o.stderr.trim()
        )),
        Err(e) => Some(format!(
            "docker not usable ({e}); apt-get install -y docker.io and run .ci/engines"
        )),
    }
}

/// Gate for a Docker test: the image id, or None after a visible SKIP.
pub fn docker_image(test: &str) -> Option<&'static str> {
    static PREREQ: OnceLock<Option<String>> = OnceLock::new();
    if let Some(why) = PREREQ.get_or_init(docker_missing) {
        skip_or_fail(test, why);
        return None;
    }
    static IMAGE: OnceLock<Result<String, String>> = OnceLock::new();
    match IMAGE.get_or_init(import_docker) {
        Ok(id) => Some(id.as_str()),
        Err(e) => panic!("{test}: docker import failed: {e}"),
    }
}

/// What the tree is made of: busybox and the layout of `image_tar` (bump
/// TREE when it changes). The image carries it as a label, so a run reuses
/// the image an earlier run imported instead of leaving one per run.
fn tree_key() -> Result<String, String> {
    use sha2::{Digest, Sha256};
    const TREE: &str = "selfprobe-test-tree-1";
    let busybox = std::fs::read("/bin/busybox").map_err(|e| format!("/bin/busybox: {e}"))?;
    let mut h = Sha256::new();
    h.update(TREE);
    h.update(&busybox);
    Ok(format!("{:x}", h.finalize())[..32].to_string())
}

/// `docker import` of the tree, or the image an earlier run imported from
/// the same tree; runs use the image id, so another checkout moving the tag
/// cannot change what this test binary runs.
fn import_docker() -> Result<String, String> {
    let key = tree_key()?;
    let label = format!("org.selfprobe.test-tree={key}");
    let mut find = docker();
    find.args(["images", "-q", "--no-trunc", "--filter"])
        .arg(format!("label={label}"));
    if let Ok(o) = run_bounded(find, Duration::from_secs(30), None) {
        if let Some(id) = o.stdout.lines().next().filter(|l| l.starts_with("sha256:")) {
            return Ok(id.trim().to_string());
        }
    }
    let dir = TempPath::dir("dimg")?;
    let tar = image_tar(&dir.path)?;
    let mut cmd = docker();
    cmd.arg("import")
        .args(["-c", "WORKDIR /workspace"])
        .args(["-c", &format!("LABEL {label}")])
        .arg(&tar)
        .arg("localhost/selfprobe-test-docker:latest");
    let out = run_bounded(cmd, IMPORT_TIMEOUT, None)?;
    if out.code != Some(0) {
        return Err(format!("exit {:?}: {}", out.code, out.stderr));
    }
    let id = out.stdout.trim().to_string();
    if !id.starts_with("sha256:") {
        return Err(format!("docker import printed {id:?}, not an image id"));
    }
    Ok(id)
}

/// Whether dockerd lists runsc among its runtimes.
fn runsc_missing() -> Option<String> {
    let mut cmd = docker();
    cmd.args(["info", "--format", "{{json .Runtimes}}"]);
    match run_bounded(cmd, Duration::from_secs(20), None) {
        Ok(o) if o.code == Some(0) && o.stdout.contains("\"runsc\"") => None,
        Ok(o) => Some(format!(
            "dockerd has no runtime \"runsc\" (runtimes: {}); apt-get install -y runsc and run .ci/engines",
            o.stdout.trim()
        )),
        Err(e) => Some(e),
    }
}

/// Gate for a gVisor test: the Docker image id, or None after a SKIP.
pub fn gvisor_image(test: &str) -> Option<&'static str> {
    let img = docker_image(test)?;
    static PREREQ: OnceLock<Option<String>> = OnceLock::new();
    if let Some(why) = PREREQ.get_or_init(runsc_missing) {
        skip_or_fail(test, why);
        return None;
    }
    Some(img)
}

/// A container removed when dropped (also when the test panics or a run
/// timed out with the CLI killed).
pub struct DockerCtr {
    pub name: String,
}

impl Drop for DockerCtr {
    fn drop(&mut self) {
        let _ = docker()
            .args(["rm", "-f", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn parse(what: String, out: Output) -> Run {
    let code = out
        .code
        .unwrap_or_else(|| panic!("{what}: killed by a signal\nstderr:\n{}", out.stderr));
    let json = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: exit {code}, stdout is not JSON ({e})\nstdout:\n{}\nstderr:\n{}",
            out.stdout, out.stderr
        )
    });
    Run {
        what,
        code,
        json,
        stderr: out.stderr,
    }
}

/// `docker run --rm <flags> -v BIN:/usr/local/bin/selfprobe:ro IMG
/// selfprobe --format json <args>`: the probe bind-mounted read-only.
pub fn docker_mounted(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let ctr = DockerCtr {
        name: unique("dkr"),
    };
    let bind = format!("{}:{MOUNTED}:ro", shipped::bin_str());
    let mut cmd = docker();
    cmd.args(["run", "--rm", "--name", &ctr.name])
        .args(flags)
        .args(["-v", &bind])
        .arg(img)
        .args([MOUNTED, "--format", "json"])
        .args(args);
    let what = format!(
        "docker run {} -v BIN:{MOUNTED}:ro IMG selfprobe --format json {}",
        flags.join(" "),
        args.join(" ")
    );
    let out = run_bounded(cmd, RUN_TIMEOUT, None).unwrap_or_else(|e| panic!("{e}"));
    parse(what, out)
}

/// The README's smoke test: start the container (busybox sleeping),
/// `docker cp` the probe in, `docker exec` it, remove the container.
pub fn docker_cp_exec(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let ctr = DockerCtr {
        name: unique("dkr"),
    };
    let mut start = docker();
    start
        .args(["run", "-d", "--name", &ctr.name])
        .args(flags)
        .arg(img)
        .args(["/bin/sleep", "600"]);
    bounded(start, "docker run -d").unwrap_or_else(|e| panic!("{e}"));
    let mut cp = docker();
    cp.arg("cp")
        .arg(shipped::bin())
        .arg(format!("{}:{COPIED}", ctr.name));
    bounded(cp, "docker cp").unwrap_or_else(|e| panic!("{e}"));
    let mut exec = docker();
    exec.args(["exec", &ctr.name, COPIED, "--format", "json"])
        .args(args);
    let what = format!(
        "docker run -d {} IMG; docker cp BIN {COPIED}; docker exec selfprobe --format json {}",
        flags.join(" "),
        args.join(" ")
    );
    let out = run_bounded(exec, RUN_TIMEOUT, None).unwrap_or_else(|e| panic!("{e}"));
    parse(what, out)
}

/// gVisor: `docker run --runtime=runsc --network none`, the probe
/// bind-mounted (docker cp does not reach the sandbox's /tmp).
pub fn gvisor(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let mut all = vec!["--runtime=runsc", "--network", "none"];
    all.extend_from_slice(flags);
    let mut r = docker_mounted(img, &all, args);
    r.what = format!("[gVisor] {}", r.what);
    r
}

// ---------------------------------------------------------------------------
// Rootless podman.

/// A rootless podman of its own: storage, runroot, containers.conf and the
/// probe in a place the user can reach, removed on drop.
pub struct Rootless {
    pub place: Place,
    pub uid: u32,
    pub image: String,
    conf: PathBuf,
    storage: PathBuf,
    runroot: PathBuf,
}

fn uid_of(user: &str) -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 3 && f[0] == user).then(|| f[2].parse().ok())?
    })
}

fn rootless_missing() -> Result<u32, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root (runuser is needed to become the rootless user)".into());
    }
    let Some(uid) = uid_of(ROOTLESS_USER) else {
        return Err(format!(
            "no user {ROOTLESS_USER}; run .ci/engines (it makes the user, its subuid and subgid ranges and /run/user/UID)"
        ));
    };
    for (f, what) in [
        ("/etc/subuid", "subordinate uids"),
        ("/etc/subgid", "subordinate gids"),
    ] {
        let ok = std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines()
                .any(|l| l.starts_with(&format!("{ROOTLESS_USER}:")))
        });
        if !ok {
            return Err(format!(
                "{f} gives {ROOTLESS_USER} no {what}; run .ci/engines"
            ));
        }
    }
    for bin in [
        "/usr/bin/newuidmap",
        "/usr/bin/newgidmap",
        "/usr/bin/podman",
    ] {
        if !Path::new(bin).is_file() {
            return Err(format!("{bin} missing; apt-get install -y uidmap podman"));
        }
    }
    if !Path::new(&format!("/run/user/{uid}")).is_dir() {
        return Err(format!("/run/user/{uid} missing; run .ci/engines"));
    }
    Ok(uid)
}

impl Rootless {
    /// Sets one up for `test`, or None after a visible SKIP.
    pub fn new(test: &str) -> Option<Rootless> {
        static PREREQ: OnceLock<Result<u32, String>> = OnceLock::new();
        let uid = match PREREQ.get_or_init(rootless_missing) {
            Ok(u) => *u,
            Err(why) => {
                skip_or_fail(test, why);
                return None;
            }
        };
        let place = other_user::place_for(test, shipped::bin(), uid)?;
        let own = |p: &Path| {
            std::fs::create_dir_all(p).unwrap();
            nix::unistd::chown(
                p,
                Some(nix::unistd::Uid::from_raw(uid)),
                Some(nix::unistd::Gid::from_raw(uid)),
            )
            .unwrap();
        };
        let (storage, runroot) = (place.dir.join("storage"), place.dir.join("run"));
        own(&storage);
        own(&runroot);
        let conf = place.dir.join("containers.conf");
        std::fs::copy(super::podman::conf(), &conf).unwrap();
        std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)).unwrap();
        let img_dir = place.dir.join("image");
        std::fs::create_dir(&img_dir).unwrap();
        let tar = image_tar(&img_dir).unwrap_or_else(|e| panic!("{test}: image tree: {e}"));
        std::fs::set_permissions(&tar, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&img_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut r = Rootless {
            place,
            uid,
            image: String::new(),
            conf,
            storage,
            runroot,
        };
        let mut cmd = r.podman();
        cmd.args(["import", "-q"]).arg(&tar);
        let out = run_bounded(cmd, IMPORT_TIMEOUT, None)
            .unwrap_or_else(|e| panic!("{test}: rootless podman import: {e}"));
        if out.code != Some(0) {
            panic!(
                "{test}: rootless podman import exited {:?}: {}",
                out.code, out.stderr
            );
        }
        r.image = out.stdout.trim().to_string();
        Some(r)
    }

    /// podman as the rootless user, with this place's storage and config
    /// and an environment of its own (nothing of root's).
    pub fn podman(&self) -> Command {
        let mut c = Command::new("runuser");
        c.args(["-u", ROOTLESS_USER, "--", "env", "-i"])
            .arg(format!("XDG_RUNTIME_DIR=/run/user/{}", self.uid))
            .arg(format!("HOME=/home/{ROOTLESS_USER}"))
            .arg("PATH=/usr/sbin:/usr/bin:/sbin:/bin")
            .arg(format!("CONTAINERS_CONF={}", self.conf.display()))
            .arg("podman")
            .arg("--root")
            .arg(&self.storage)
            .arg("--runroot")
            .arg(&self.runroot)
            .current_dir("/")
            .stdin(Stdio::null());
        c
    }

    /// A program run as the rootless user with the environment `podman()`
    /// gives podman, and first on its PATH a `podman` that passes this
    /// place's --root and --runroot: what `selfprobe-host inspect --engine
    /// podman` needs to see the same containers (issue 21's inspect tests).
    pub fn as_user(&self, exe: &Path) -> Command {
        let bin = self.place.dir.join("podman-bin");
        let wrapper = bin.join("podman");
        if !wrapper.exists() {
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(
                &wrapper,
                format!(
                    "#!/bin/sh\nexec /usr/bin/podman --root '{}' --runroot '{}' \"$@\"\n",
                    self.storage.display(),
                    self.runroot.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut c = Command::new("runuser");
        c.args(["-u", ROOTLESS_USER, "--", "env", "-i"])
            .arg(format!("XDG_RUNTIME_DIR=/run/user/{}", self.uid))
            .arg(format!("HOME=/home/{ROOTLESS_USER}"))
            .arg(format!(
                "PATH={}:/usr/sbin:/usr/bin:/sbin:/bin",
                bin.display()
            ))
            .arg(format!("CONTAINERS_CONF={}", self.conf.display()))
            .arg(exe)
            .current_dir("/")
            .stdin(Stdio::null());
        c
    }

    /// `podman run --rm --network none <flags> -v BIN:…:ro IMG selfprobe
    /// --format json <args>` as the rootless user.
    pub fn probe(&self, flags: &[&str], args: &[&str]) -> Run {
        let name = unique("rl");
        let bind = format!("{}:{MOUNTED}:ro", self.place.bin.display());
        let mut cmd = self.podman();
        cmd.args(["run", "--rm", "--name", &name, "--network", "none"])
            .args(flags)
            .args(["-v", &bind])
            .arg(&self.image)
            .args([MOUNTED, "--format", "json"])
            .args(args);
        let what = format!(
            "[rootless podman] podman run --network none {} -v BIN:{MOUNTED}:ro IMG selfprobe --format json {}",
            flags.join(" "),
            args.join(" ")
        );
        let out = run_bounded(cmd, RUN_TIMEOUT, None);
        if out.is_err() {
            let mut rm = self.podman();
            rm.args(["rm", "-f", "-t", "0", &name]);
            let _ = run_bounded(rm, Duration::from_secs(30), None);
        }
        parse(what, out.unwrap_or_else(|e| panic!("{e}")))
    }
}
