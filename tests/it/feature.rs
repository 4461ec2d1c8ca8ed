//! The Dev Container Feature (feature/selfprobe, feature/assemble.sh; issue
//! 23), with the Dev Containers CLI on Docker and on rootful podman: a clean
//! devcontainer (`--network=none`, no extra mounts) comes up with the report
//! and the envelope at the option paths; the same with the engine's socket
//! mounted fails `devcontainer up` with the Feature's message; and
//! `devcontainer features test` passes on scenarios.json. The two `up`s of
//! an engine run side by side (the CLI's builds are the slow part), with the
//! same options, so the CLI's shared build-content tag holds the same
//! Feature whichever build wrote it last; `features test` follows.
//!
//! The image is the FROM-scratch busybox tree of tests/it/common/engines.rs
//! with a home for its user dev (the CLI keeps its lifecycle markers in the
//! remote user's home), imported under a tag of the test's own: it holds no
//! selfprobe, so what runs is what the Feature installed. Nothing is
//! pulled. Everything the test made (containers, images, the podman
//! service) is removed at the end.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::engines::image_tar;
use crate::common::fixture::BIN;
use crate::common::podman::{conf, run_bounded, skip_or_fail, unique, PodmanService, TempPath};
use crate::common::shipped;

const UP_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone, Copy)]
struct Engine {
    name: &'static str,
}

impl Engine {
    fn cmd(&self) -> Command {
        let mut c = Command::new(self.name);
        c.env("CONTAINERS_CONF", conf()).stdin(Stdio::null());
        c
    }

    /// runArgs every devcontainer of this engine needs: with a non-root
    /// remoteUser the CLI gives podman --userns=keep-id, which rootful podman
    /// refuses unless the ids are mapped explicitly (identity: uid 0 stays
    /// host uid 0, as rootful Docker has it).
    fn run_args(&self) -> Vec<String> {
        let mut a = vec!["--network=none".to_string()];
        if self.name == "podman" {
            a.extend(
                ["--uidmap", "0:0:4294967295", "--gidmap", "0:0:4294967295"].map(String::from),
            );
        }
        a
    }

    fn ready(&self, test: &str) -> bool {
        if !crate::common::podman::rootful_engine_answers(test, self.name, self.cmd()) {
            return false;
        }
        let cli = Command::new("devcontainer")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !cli {
            skip_or_fail(
                test,
                "the Dev Containers CLI is missing (npm install -g @devcontainers/cli; .ci/run does it)",
            );
        }
        cli
    }

    /// Removes an image by name or id; what the test made, nothing else.
    /// Once more after a moment when it is still there (a container the
    /// CLI is removing can hold it).
    fn rmi(&self, image: &str) {
        for _ in 0..2 {
            let _ = self.cmd().args(["rmi", "-f", image]).output();
            let there = self
                .cmd()
                .args(["image", "inspect", image])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !there {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn lines(&self, args: &[&str]) -> Vec<String> {
        self.cmd()
            .args(args)
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The images the CLI builds for a devcontainer with Features.
    fn vsc_images(&self) -> BTreeSet<String> {
        self.lines(&["images", "--format", "{{.Repository}}:{{.Tag}}"])
            .into_iter()
            .filter(|r| {
                let name = r.strip_prefix("localhost/").unwrap_or(r);
                name.starts_with("vsc-") && name.contains("-features:")
            })
            .collect()
    }

    fn dangling(&self) -> BTreeSet<String> {
        self.lines(&["images", "-q", "--no-trunc", "-f", "dangling=true"])
            .into_iter()
            .collect()
    }

    /// The untagged stages the CLI's Feature builds leave (its Dockerfile
    /// stages copy /tmp/build-features and take _DEV_CONTAINERS_ build
    /// arguments) that were not there before this test: this test's.
    fn remove_build_stages(&self, before: &BTreeSet<String>) {
        for id in self.dangling().difference(before) {
            let made_here = self
                .lines(&["history", "--no-trunc", "--format", "{{.CreatedBy}}", id])
                .iter()
                .any(|l| l.contains("/tmp/build-features") || l.contains("_DEV_CONTAINERS_"));
            if made_here {
                self.rmi(id);
            }
        }
    }
}

/// The base image, under a tag of this test's own, removed on drop.
struct BaseImage {
    engine: Engine,
    tag: String,
    _dir: TempPath,
}

impl BaseImage {
    fn import(engine: Engine) -> BaseImage {
        let dir = TempPath::dir("feature-img").unwrap();
        image_tar(&dir.path).expect("the busybox tree");
        let tree = dir.path.join("tree");
        std::fs::create_dir_all(tree.join("home/dev")).unwrap();
        nix::unistd::chown(
            &tree.join("home/dev"),
            Some(nix::unistd::Uid::from_raw(1000)),
            Some(nix::unistd::Gid::from_raw(1000)),
        )
        .unwrap();
        let tar = dir.path.join("feature-base.tar");
        crate::common::engines::pack(&tree, &tar).unwrap();
        let tag = format!("localhost/selfprobe-feature-base:{}", unique("t"));
        let mut cmd = engine.cmd();
        cmd.arg("import")
            .args(["-c", "WORKDIR /workspace"])
            .arg(&tar)
            .arg(&tag);
        let out = run_bounded(cmd, Duration::from_secs(120), None).unwrap();
        assert_eq!(out.code, Some(0), "{} import: {}", engine.name, out.stderr);
        BaseImage {
            engine,
            tag,
            _dir: dir,
        }
    }
}

impl Drop for BaseImage {
    fn drop(&mut self) {
        self.engine.rmi(&self.tag);
    }
}

/// A workspace folder for `devcontainer up`: owned by dev (uid 1000), as a
/// checkout is its user's. On drop, the CLI's containers for it and the
/// images they ran are removed.
struct Folder {
    engine: Engine,
    dir: TempPath,
}

impl Folder {
    fn new(engine: Engine, devcontainer_json: &str) -> Folder {
        let dir = TempPath::dir("feature-ws").unwrap();
        let feature = dir.path.join(".devcontainer/selfprobe-feature");
        assemble(&feature);
        std::fs::write(
            dir.path.join(".devcontainer/devcontainer.json"),
            devcontainer_json,
        )
        .unwrap();
        chown_tree(&dir.path, 1000);
        Folder { engine, dir }
    }

    fn containers(&self) -> Vec<String> {
        let label = format!("label=devcontainer.local_folder={}", self.dir.arg());
        self.engine
            .cmd()
            .args(["ps", "-aq", "--filter", &label])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `devcontainer up`: (success, the CLI's log).
    fn up(&self) -> (bool, String) {
        let mut cmd = Command::new("devcontainer");
        cmd.args([
            "up",
            "--docker-path",
            self.engine.name,
            "--workspace-folder",
        ])
        .arg(&self.dir.path)
        .env("CONTAINERS_CONF", conf());
        let out = run_bounded(cmd, UP_TIMEOUT, None).unwrap_or_else(|e| panic!("{e}"));
        let ok = out
            .stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .is_some_and(|v| v["outcome"] == "success");
        (ok, format!("{}\n{}", out.stdout, out.stderr))
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        for id in self.containers() {
            let image = self
                .engine
                .cmd()
                .args(["inspect", "-f", "{{.Image}}", &id])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let _ = self.engine.cmd().args(["rm", "-f", &id]).output();
            if !image.is_empty() {
                self.engine.rmi(&image);
            }
        }
    }
}

fn chown_tree(p: &Path, uid: u32) {
    let id = Some(nix::unistd::Uid::from_raw(uid));
    let gid = Some(nix::unistd::Gid::from_raw(uid));
    let _ = nix::unistd::chown(p, id, gid);
    if p.is_dir() && !p.is_symlink() {
        for e in std::fs::read_dir(p).unwrap() {
            chown_tree(&e.unwrap().path(), uid);
        }
    }
}

/// feature/assemble.sh OUTDIR, with the shipped binary.
fn assemble(out: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("feature/assemble.sh");
    let o = Command::new("sh")
        .arg(&script)
        .arg(out)
        .env("SELFPROBE_BIN", shipped::bin())
        .output()
        .unwrap();
    assert!(o.status.success(), "assemble.sh: {o:?}");
    for f in [
        "devcontainer-feature.json",
        "install.sh",
        "README.md",
        "selfprobe",
    ] {
        assert!(out.join(f).is_file(), "assemble.sh wrote no {f}");
    }
    let mode = std::fs::metadata(out.join("selfprobe"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the binary is executable");
}

/// The devcontainer.json of a case: the Feature with report and envelope
/// in the workspace, and `extra` runArgs.
fn devcontainer_json(engine: Engine, image: &str, extra: &[String]) -> String {
    let mut args = engine.run_args();
    args.extend(extra.iter().cloned());
    serde_json::to_string_pretty(&serde_json::json!({
        "image": image,
        "remoteUser": "dev",
        "updateRemoteUserUID": false,
        "runArgs": args,
        "features": {
            "./selfprobe-feature": {
                "failOn": "high",
                "output": "out/selfprobe.json",
                "attest": "out/selfprobe.intoto.json"
            }
        }
    }))
    .unwrap()
}

/// The envelope verifies with the key the report names (an ephemeral key:
/// it shows the report is the one signed, not who signed it).
fn check_envelope(report: &Value, envelope: &Path, dir: &Path) {
    let pk = dir.join("ephemeral.pub");
    std::fs::write(
        &pk,
        report["signing"]["public_key"]
            .as_str()
            .expect("a signing key"),
    )
    .unwrap();
    let o = Command::new(BIN)
        .arg("verify")
        .arg("--pubkey")
        .arg(&pk)
        .arg(envelope)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the Feature's envelope verifies: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

fn clean_case(engine: Engine, image: &str) {
    let f = Folder::new(engine, &devcontainer_json(engine, image, &[]));
    let (ok, log) = f.up();
    assert!(
        ok,
        "[{}] a clean devcontainer with the Feature comes up:\n{log}",
        engine.name
    );
    assert!(
        log.contains("Running the postCreateCommand from Feature './selfprobe-feature'")
            && log.contains("selfprobe Feature: the workspace check passed (fail-on high)"),
        "[{}] the Feature's postCreateCommand ran:\n{log}",
        engine.name
    );
    let name = f
        .dir
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let bytes = std::fs::read(f.dir.path.join("out/selfprobe.json")).unwrap_or_else(|e| {
        panic!(
            "[{}] no report at the output option's path ({e}):\n{log}",
            engine.name
        )
    });
    let report: Value = serde_json::from_slice(&bytes).expect("the report is JSON");
    assert_eq!(
        report["summary"]["exit_code"], 0,
        "[{}] {report:#}",
        engine.name
    );
    assert_eq!(report["run"]["workspace"], format!("/workspaces/{name}"));
    assert_eq!(
        report["tool"]["sha256"],
        selfprobe_host::registry::sha256(&std::fs::read(shipped::bin()).unwrap())[7..],
        "the binary that ran is the one the Feature carried"
    );
    check_envelope(
        &report,
        &f.dir.path.join("out/selfprobe.intoto.json"),
        &f.dir.path,
    );
}

fn socket_case(engine: Engine, image: &str) {
    let (_svc, sock) = if engine.name == "podman" {
        let svc = PodmanService::start();
        let s = svc.sock.arg().to_string();
        (Some(svc), s)
    } else {
        (None, "/var/run/docker.sock".to_string())
    };
    let mount = vec!["-v".to_string(), format!("{sock}:/var/run/docker.sock")];
    let f = Folder::new(engine, &devcontainer_json(engine, image, &mount));
    let (ok, log) = f.up();
    assert!(
        !ok,
        "[{}] the engine socket mounted must fail devcontainer up:\n{log}",
        engine.name
    );
    assert!(
        log.contains("postCreateCommand from Feature './selfprobe-feature' failed")
            && log.contains(
                "selfprobe Feature: the workspace check failed: findings at or above high (exit 1)"
            ),
        "[{}] the Feature's message:\n{log}",
        engine.name
    );
    assert!(
        log.contains("engine.socket-reachable") || log.contains("engine.socket-present"),
        "[{}] the finding is in the creation log:\n{log}",
        engine.name
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(f.dir.path.join("out/selfprobe.json")).unwrap())
            .unwrap();
    assert_eq!(report["summary"]["exit_code"], 1);
}

/// `devcontainer features test` on feature/test/selfprobe's scenarios,
/// with the image of this test. It has no --docker-path: for podman, a
/// `docker` first on PATH that execs podman.
fn features_test(engine: Engine, image: &str) {
    let proj = TempPath::dir("feature-proj").unwrap();
    assemble(&proj.path.join("src/selfprobe"));
    let tests = proj.path.join("test/selfprobe");
    std::fs::create_dir_all(&tests).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("feature/test/selfprobe");
    let mut scenarios: Value =
        serde_json::from_slice(&std::fs::read(repo.join("scenarios.json")).unwrap()).unwrap();
    for (_, s) in scenarios.as_object_mut().unwrap() {
        s["image"] = Value::from(image);
        s["runArgs"] = Value::from(engine.run_args());
    }
    std::fs::write(tests.join("scenarios.json"), scenarios.to_string()).unwrap();
    for e in std::fs::read_dir(&repo).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sh") {
            let to = tests.join(p.file_name().unwrap());
            std::fs::copy(&p, &to).unwrap();
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let mut path = std::env::var("PATH").unwrap_or_default();
    if engine.name == "podman" {
        let bin = proj.path.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("docker"), "#!/bin/sh\nexec podman \"$@\"\n").unwrap();
        std::fs::set_permissions(bin.join("docker"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        path = format!("{}:{path}", bin.display());
    }
    let vsc_before = engine.vsc_images();
    let mut cmd = Command::new("devcontainer");
    cmd.args(["features", "test", "-p"])
        .arg(&proj.path)
        .args(["-f", "selfprobe", "-i", image, "--skip-autogenerated"])
        .env("PATH", path)
        .env("CONTAINERS_CONF", conf());
    let out = run_bounded(cmd, UP_TIMEOUT, None).unwrap_or_else(|e| panic!("{e}"));
    // What the CLI built for the scenarios: its images (vsc-…-features,
    // new since the start) and its content tag.
    for image in engine.vsc_images().difference(&vsc_before) {
        engine.rmi(image);
    }
    engine.rmi("dev_container_feature_content_temp");
    let log = format!("{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        out.code,
        Some(0),
        "[{}] devcontainer features test:\n{log}",
        engine.name
    );
    for s in scenarios.as_object().unwrap().keys() {
        assert!(
            log.contains(&format!("✅ Passed:      '{s}'")),
            "[{}] scenario {s} passed:\n{log}",
            engine.name
        );
    }
    assert!(
        log.contains("selfprobe Feature: the workspace check passed"),
        "{log}"
    );
}

fn feature_case(engine: Engine, test: &str) {
    if !engine.ready(test) {
        return;
    }
    // The shipped binary, built before the threads need it.
    let _ = shipped::bin();
    let before = engine.dangling();
    let base = BaseImage::import(engine);
    let img = base.tag.clone();
    let (clean, socket) = std::thread::scope(|s| {
        let clean = s.spawn(|| clean_case(engine, &img));
        let socket = s.spawn(|| socket_case(engine, &img));
        (clean.join(), socket.join())
    });
    let features = std::panic::catch_unwind(|| features_test(engine, &img));
    drop(base);
    engine.remove_build_stages(&before);
    for r in [clean, socket, features] {
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    }
}

#[test]
fn dev_container_feature_on_docker() {
    feature_case(Engine { name: "docker" }, "dev_container_feature_on_docker");
}

#[test]
fn dev_container_feature_on_podman() {
    feature_case(Engine { name: "podman" }, "dev_container_feature_on_podman");
}
