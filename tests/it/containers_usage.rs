//! The three ways users run selfprobe, each with the real tool: `docker cp`
//! plus `docker exec` (podman takes the same command lines), a devcontainer's
//! postCreateCommand brought up by the Dev Containers CLI, and the CI step
//! from the README run inside a build container.

use std::path::Path;
use std::process::Command;

use crate::common::podman::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A detached container removed on drop, pass or fail.
struct Running(String);

impl Running {
    fn start(img: &str, flags: &[&str]) -> Running {
        let name = unique("run");
        let out = podman()
            .args(["run", "-d", "--name", &name])
            .args(flags)
            .arg(img)
            .args(["/bin/sleep", "600"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "podman run -d: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Running(name)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = podman().args(["rm", "-f", "-t", "0", &self.0]).output();
    }
}

fn sha256_file(p: &Path) -> String {
    Sha256::digest(std::fs::read(p).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn cp_then_exec_into_a_running_container() {
    let Some(img) = setup("cp_then_exec_into_a_running_container") else {
        return;
    };
    let ctr = Running::start(img, &[]);
    let cp = podman()
        .args([
            "cp",
            crate::common::shipped::bin_str(),
            &format!("{}:/tmp/selfprobe", ctr.0),
        ])
        .output()
        .unwrap();
    assert!(
        cp.status.success(),
        "podman cp: {}",
        String::from_utf8_lossy(&cp.stderr)
    );
    let out = podman()
        .args(["exec", &ctr.0, "/tmp/selfprobe", "--format", "json"])
        .output()
        .unwrap();
    crate::common::dump::report(&out.stdout);
    let json: Value = serde_json::from_slice(&out.stdout).expect("exec prints the JSON report");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a default rootful container is root without a user namespace"
    );
    assert_eq!(json["summary"]["exit_code"], 1);
    assert_eq!(
        json["tool"]["sha256"],
        sha256_file(Path::new(crate::common::shipped::bin_str())),
        "the report names the binary that ran"
    );
    assert!(json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["code"] == "priv.root-without-userns"));

    // The text report a person reads in the smoke test.
    let out = podman()
        .args(["exec", &ctr.0, "/tmp/selfprobe"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("priv.root-without-userns") && text.contains("Scorecard"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "no colour without a terminal");
}

fn devcontainer_cli() -> Option<&'static str> {
    Command::new("devcontainer")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "devcontainer")
}

/// Removes the containers the Dev Containers CLI made for a folder.
struct DevcontainerFolder(TempPath);

impl Drop for DevcontainerFolder {
    fn drop(&mut self) {
        let label = format!("label=devcontainer.local_folder={}", self.0.arg());
        if let Ok(o) = podman().args(["ps", "-aq", "--filter", &label]).output() {
            for id in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                let _ = podman().args(["rm", "-f", "-t", "0", id]).output();
            }
        }
    }
}

fn devcontainer_up(folder: &Path) -> (bool, String) {
    let out = Command::new("devcontainer")
        .args(["up", "--docker-path", "podman", "--workspace-folder"])
        .arg(folder)
        .env(
            "CONTAINERS_CONF",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/containers.conf"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let outcome = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok());
    let ok = outcome.is_some_and(|v| v["outcome"] == "success");
    (
        ok,
        format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[test]
fn devcontainer_post_create_command_runs_it() {
    let test = "devcontainer_post_create_command_runs_it";
    let Some(img) = setup(test) else { return };
    if devcontainer_cli().is_none() {
        skip_or_fail(test, "the Dev Containers CLI is missing (npm install -g @devcontainers/cli; .ci/run does it)");
        return;
    }
    let dir = DevcontainerFolder(TempPath::dir("devc").unwrap());
    let name = dir
        .0
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    std::fs::create_dir(dir.0.path.join(".devcontainer")).unwrap();
    std::fs::write(
        dir.0.path.join(".devcontainer/devcontainer.json"),
        format!(
            r#"{{
  "image": "{img}",
  "updateRemoteUserUID": false,
  "postCreateCommand": "/usr/local/bin/selfprobe --workspace ${{containerWorkspaceFolder}} --fail-on none --format json -o ${{containerWorkspaceFolder}}/selfprobe.json"
}}"#
        ),
    )
    .unwrap();
    let (ok, log) = devcontainer_up(&dir.0.path);
    assert!(ok, "devcontainer up failed:\n{log}");
    let report = std::fs::read(dir.0.path.join("selfprobe.json"))
        .expect("postCreateCommand wrote the report into the workspace");
    crate::common::dump::report(&report);
    let report: Value = serde_json::from_slice(&report).unwrap();
    let ws = format!("/workspaces/{name}");
    assert_eq!(report["run"]["workspace"], ws.as_str());
    let mounts = report["inventory"]["mounts"]["mounts"].as_array().unwrap();
    let m = mounts
        .iter()
        .find(|m| m["mount_point"] == ws.as_str())
        .expect("the workspace is a mount");
    assert_eq!(m["class"], "workspace");
    let codes: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(
        !codes.contains(&"mount.workspace-missing") && !codes.contains(&"mount.unexpected"),
        "{codes:?}"
    );
}

#[test]
fn devcontainer_post_create_fails_when_selfprobe_gates() {
    let test = "devcontainer_post_create_fails_when_selfprobe_gates";
    let Some(img) = setup(test) else { return };
    if devcontainer_cli().is_none() {
        skip_or_fail(test, "the Dev Containers CLI is missing (npm install -g @devcontainers/cli; .ci/run does it)");
        return;
    }
    let dir = DevcontainerFolder(TempPath::dir("devc").unwrap());
    std::fs::create_dir(dir.0.path.join(".devcontainer")).unwrap();
    std::fs::write(
        dir.0.path.join(".devcontainer/devcontainer.json"),
        format!(
            r#"{{
  "image": "{img}",
  "updateRemoteUserUID": false,
  "runArgs": ["--cap-add", "SYS_ADMIN"],
  "postCreateCommand": "/usr/local/bin/selfprobe --workspace ${{containerWorkspaceFolder}}"
}}"#
        ),
    )
    .unwrap();
    let (ok, log) = devcontainer_up(&dir.0.path);
    assert!(
        !ok,
        "a workspace with CAP_SYS_ADMIN must fail postCreateCommand:\n{log}"
    );
    assert!(
        log.contains("priv.capability"),
        "the findings are in the creation log:\n{log}"
    );
}

#[test]
fn ci_step_gates_on_the_exit_code_and_writes_sarif() {
    let Some(img) = setup("ci_step_gates_on_the_exit_code_and_writes_sarif") else {
        return;
    };
    // The README's CI step, word for word, in a build container with the
    // checkout mounted as the working directory.
    let step = "selfprobe --policy selfprobe.toml --fail-on high --format sarif -o selfprobe.sarif";
    let checkout = TempPath::dir("ci").unwrap();
    std::fs::write(
        checkout.path.join("selfprobe.toml"),
        "[workspace]\npath = \"/build\"\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &checkout.path,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let vol = format!("{}:/build", checkout.arg());
    let run = |flags: &[&str]| -> i32 {
        let _ = std::fs::remove_file(checkout.path.join("selfprobe.sarif"));
        let name = unique("ci");
        let mut cmd = podman();
        cmd.args([
            "run",
            "--rm",
            "--name",
            &name,
            "-v",
            &vol,
            "-w",
            "/build",
            "-e",
            "PATH=/usr/local/bin:/bin",
        ])
        .args(flags)
        .arg(img)
        .args(["/bin/sh", "-c", step]);
        let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
        let sarif: Value = serde_json::from_slice(
            &std::fs::read(checkout.path.join("selfprobe.sarif"))
                .expect("the step writes selfprobe.sarif"),
        )
        .expect("SARIF is JSON");
        assert_eq!(sarif["version"], "2.1.0");
        assert_eq!(
            sarif["runs"][0]["invocations"][0]["exitCode"],
            out.code.unwrap_or(-1)
        );
        out.code.unwrap_or(-1)
    };
    assert_eq!(
        run(&[]),
        1,
        "a default rootful build container fails the gate"
    );
    assert_eq!(
        run(&[
            "--user",
            "1000:1000",
            "--cap-drop=all",
            "--read-only",
            "--network",
            "none",
            "--security-opt",
            "no-new-privileges"
        ]),
        0,
        "a hardened build container passes it"
    );
}
