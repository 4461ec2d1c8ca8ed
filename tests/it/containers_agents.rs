//! Coding agents in real containers, with the engine as a parameter (a
//! function returning its base Command): podman here (the README's Set-up), Docker
//! where `docker` answers (`--network none`, skipped visibly otherwise;
//! under CI=true a missing engine fails).
//!
//! - A home mounted into a container with every agent's credential file
//!   (canary values, tests/it/agents.rs) and a workspace `.mcp.json` whose
//!   github server holds a canary token: every file is found, with its
//!   expiry where it has one, and no canary byte is in any format.
//! - A devcontainer-style image built here: Debian bookworm by debootstrap
//!   (minbase, with sudo) from Debian's mirror, user vscode (uid 1000), with
//!   and without `vscode ALL=(root) NOPASSWD:ALL` in /etc/sudoers.d/vscode,
//!   imported into the engine and cached by its tag (and the root tarballs
//!   under /var/tmp/selfprobe-test-cache) between runs. `--user 1000` gets
//!   priv.passwordless-root from `sudo -n -l`; the plain image does not.
//! - The Dev Containers CLI with "remoteUser": "vscode" fails its
//!   postCreateCommand on that finding; the plain image passes.
//!
//! Network rule: every container runs with `--network none`; nothing is
//! contacted. debootstrap talks only to Debian's mirror (a package registry).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::agents::{
    agent_home, check_agent_home, openhands_settings, workspace_mcp, Canaries, CLAUDE_SCRIPT,
    CLAUDE_SUDOERS,
};
use crate::common::devc::{self, Devc};
use crate::common::podman::{self, run_bounded, skip_or_fail, unique, TempPath, RUN_TIMEOUT};
use crate::common::shipped;
use serde_json::{json, Value};

/// A container engine: its name and the Command every call starts from.
pub struct Engine {
    pub name: &'static str,
    pub base: fn() -> Command,
}

pub fn podman_engine() -> Engine {
    Engine {
        name: "podman",
        base: podman::podman,
    }
}

fn docker_cmd() -> Command {
    Command::new("docker")
}

pub fn docker_engine() -> Engine {
    Engine {
        name: "docker",
        base: docker_cmd,
    }
}

impl Engine {
    fn cmd(&self) -> Command {
        (self.base)()
    }

    /// `ENGINE run --rm --name N FLAGS IMAGE ARGV`, bounded; the container is
    /// removed if it outlives the bound.
    fn run(&self, flags: &[String], image: &str, argv: &[String]) -> podman::Output {
        let name = unique("agents");
        let mut cmd = self.cmd();
        cmd.args(["run", "--rm", "--name", &name])
            .args(flags)
            .arg(image)
            .args(argv);
        match run_bounded(cmd, RUN_TIMEOUT, None) {
            Ok(o) => o,
            Err(e) => {
                let _ = self.cmd().args(["rm", "-f", &name]).output();
                panic!("{}: {e}", self.name)
            }
        }
    }
}

/// One selfprobe run's outputs in every format, and its JSON report.
struct Probed {
    what: String,
    code: i32,
    json: Value,
    outputs: Vec<(String, String)>,
}

impl Probed {
    /// The report's findings. A report without a findings array is no
    /// report at all: the absence checks below must not pass on it.
    fn findings(&self) -> &[Value] {
        self.json["findings"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| {
                panic!(
                    "{}: the report has no findings array (exit {}): {}",
                    self.what,
                    self.code,
                    self.json.to_string().chars().take(2000).collect::<String>()
                )
            })
    }

    fn find(&self, code: &str, subject: &str) -> Option<&Value> {
        self.findings()
            .iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
    }

    fn has_code(&self, code: &str) -> bool {
        self.findings().iter().any(|f| f["code"] == code)
    }

    fn listing(&self) -> String {
        self.findings()
            .iter()
            .map(|f| format!("  {} {} {}\n", f["code"], f["severity"], f["subject"]))
            .collect()
    }
}

/// Runs selfprobe (`probe` inside the container) in every format.
fn probe_formats(
    e: &Engine,
    flags: &[String],
    image: &str,
    probe: &str,
    args: &[&str],
    formats: &[&str],
) -> Probed {
    let what = format!(
        "{} run {} {image} {probe} {}",
        e.name,
        flags.join(" "),
        args.join(" ")
    );
    probe_each(
        what,
        &|argv| e.run(flags, image, argv),
        probe,
        args,
        formats,
    )
}

/// One run of `probe ARGS` per format, by `run` (a fresh container, or an
/// exec in a started one).
fn probe_each(
    what: String,
    run: &dyn Fn(&[String]) -> podman::Output,
    probe: &str,
    args: &[&str],
    formats: &[&str],
) -> Probed {
    let mut outputs = Vec::new();
    let mut json = Value::Null;
    let mut code = -1;
    for f in formats {
        let mut argv = vec![probe.to_string(), "--format".into(), f.to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let o = run(&argv);
        if *f == "json" {
            code = o.code.unwrap_or(-1);
            json = serde_json::from_str(&o.stdout).unwrap_or_else(|err| {
                panic!(
                    "{what}: stdout is not JSON ({err})\nstdout:\n{}\nstderr:\n{}",
                    o.stdout, o.stderr
                )
            });
        } else {
            assert!(o.stdout.len() > 100, "{what} {f}: no report: {}", o.stderr);
        }
        outputs.push((f.to_string(), o.stdout));
        outputs.push((format!("{f} stderr"), o.stderr));
    }
    Probed {
        what,
        code,
        json,
        outputs,
    }
}

/// A container started detached (`ENGINE run -d`), removed on drop: for a
/// PID 1 of the test's choosing, and for changing it between runs.
struct Started<'a> {
    e: &'a Engine,
    name: String,
}

impl Drop for Started<'_> {
    fn drop(&mut self) {
        let _ = self.e.cmd().args(["rm", "-f", &self.name]).output();
    }
}

impl Engine {
    fn start(&self, flags: &[String], image: &str, argv: &[&str]) -> Started<'_> {
        let name = unique("agentws");
        let started = Started {
            e: self,
            name: name.clone(),
        };
        let mut cmd = self.cmd();
        cmd.args(["run", "-d", "--name", &name])
            .args(flags)
            .arg(image)
            .args(argv);
        let o = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            o.code,
            Some(0),
            "{} run -d {}: {}",
            self.name,
            flags.join(" "),
            o.stderr
        );
        started
    }
}

impl Started<'_> {
    fn exec(&self, user: &str, argv: &[&str]) -> podman::Output {
        let mut cmd = self.e.cmd();
        cmd.args(["exec", "-u", user, &self.name]).args(argv);
        run_bounded(cmd, RUN_TIMEOUT, None).unwrap_or_else(|e| panic!("{e}"))
    }

    fn probe(&self, user: &str, probe: &str, args: &[&str], formats: &[&str]) -> Probed {
        let what = format!(
            "{} exec -u {user} {} {probe} {}",
            self.e.name,
            self.name,
            args.join(" ")
        );
        let run = |argv: &[String]| {
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            self.exec(user, &argv)
        };
        probe_each(what, &run, probe, args, formats)
    }
}

fn chown_tree(p: &Path, uid: u32) {
    let st = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(p)
        .status()
        .unwrap();
    assert!(st.success(), "chown -R {}", p.display());
}

// ---------------------------------------------------------------------------
// The devcontainer-style image: debootstrap, cached (common/devc.rs).

// The sandboxes suite reaches the tarballs through here.
#[allow(unused_imports)]
pub use devc::devc_tars;

/// Gate for a devcontainer case: the engine and the image, or a visible SKIP.
fn devc_setup(e: &Engine, test: &str, v: Devc) -> Option<String> {
    devc::setup_variant(test, e.name, e.base, v)
}

/// A workspace holding the shipped binary at tools/selfprobe, as the
/// README's devcontainer usage keeps it.
fn workspace_with_probe() -> TempPath {
    let ws = TempPath::dir("devws").unwrap();
    std::fs::create_dir(ws.path.join("tools")).unwrap();
    std::fs::copy(shipped::bin(), ws.path.join("tools/selfprobe")).unwrap();
    std::fs::set_permissions(
        ws.path.join("tools/selfprobe"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    ws
}

fn devc_probe(e: &Engine, image: &str, extra: &[&str]) -> Probed {
    let ws = workspace_with_probe();
    let mut flags: Vec<String> = vec![
        "--network".into(),
        "none".into(),
        "--user".into(),
        "1000:1000".into(),
        "-v".into(),
        format!("{}:/workspace:ro", ws.arg()),
    ];
    flags.extend(extra.iter().map(|s| s.to_string()));
    probe_formats(
        e,
        &flags,
        image,
        "/workspace/tools/selfprobe",
        &["--workspace", "/workspace"],
        &["json"],
    )
}

fn fail_with(p: &Probed, bad: &[String]) {
    if !bad.is_empty() {
        panic!(
            "{}\n{} failed expectation(s):\n  - {}\nexit {}; findings:\n{}",
            p.what,
            bad.len(),
            bad.join("\n  - "),
            p.code,
            p.listing()
        );
    }
}

fn passwordless_sudo_case(e: &Engine, test: &str) {
    let Some(sudo_img) = devc_setup(e, test, Devc::Sudo) else {
        return;
    };
    let p = devc_probe(e, &sudo_img, &[]);
    let mut bad = Vec::new();
    match p.find("priv.passwordless-root", "sudo") {
        None => bad.push("no priv.passwordless-root for sudo".into()),
        Some(f) => {
            let ev = &f["evidence"];
            for (ptr, want) in [
                ("/severity", json!("high")),
                ("/evidence/sources", json!(["sudo -n -l"])),
                ("/evidence/sudo_listing", json!("listed")),
                ("/evidence/rules/0/all_commands", json!(true)),
                ("/evidence/rules/0/runas", json!("root")),
                ("/evidence/boundary/kind", json!("host-root")),
                ("/evidence/user", json!("vscode")),
            ] {
                if f.pointer(ptr) != Some(&want) {
                    bad.push(format!("{ptr} is {:?} (want {want})", f.pointer(ptr)));
                }
            }
            let _ = ev;
        }
    }
    let inv = &p.json["inventory"]["rootpaths"]["sudo"];
    if !inv["files_unreadable"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "/etc/sudoers"))
    {
        bad.push(format!(
            "the 0440 sudoers is not noted as unreadable: {inv}"
        ));
    }
    match p.find("priv.setuid-binaries", "setuid") {
        Some(f) => {
            for n in ["sudo", "su", "mount"] {
                if !f["evidence"]["notable"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x == n)
                {
                    bad.push(format!(
                        "setuid {n} not named: {}",
                        f["evidence"]["notable"]
                    ));
                }
            }
        }
        None => bad.push("no priv.setuid-binaries".into()),
    }
    if p.code != 1 {
        bad.push(format!("exit {} (want 1)", p.code));
    }
    fail_with(&p, &bad);

    // no_new_privs keeps sudo from becoming root: no path, nothing setuid.
    let p = devc_probe(e, &sudo_img, &["--security-opt", "no-new-privileges"]);
    let mut bad = Vec::new();
    if p.has_code("priv.passwordless-root") || p.has_code("priv.setuid-binaries") {
        bad.push("a path to root under no_new_privs".into());
    }
    let l = &p.json["inventory"]["rootpaths"]["sudo"]["listing"];
    if l != "no-new-privs" {
        bad.push(format!("sudo listing {l} (want no-new-privs)"));
    }
    fail_with(&p, &bad);
}

fn plain_image_case(e: &Engine, test: &str) {
    let Some(img) = devc_setup(e, test, Devc::Plain) else {
        return;
    };
    let p = devc_probe(e, &img, &[]);
    let mut bad = Vec::new();
    if p.has_code("priv.passwordless-root") {
        bad.push("priv.passwordless-root without a sudoers rule".into());
    }
    let l = &p.json["inventory"]["rootpaths"]["sudo"]["listing"];
    if l != "password-required" && l != "not-allowed" {
        bad.push(format!("sudo listing {l} (want password-required)"));
    }
    let high: Vec<String> = p
        .findings()
        .iter()
        .filter(|f| f["severity"] == "high" || f["severity"] == "critical")
        .map(|f| format!("{} {}", f["code"], f["subject"]))
        .collect();
    if !high.is_empty() || p.code != 0 {
        bad.push(format!(
            "exit {}, high findings {high:?} (want 0, none)",
            p.code
        ));
    }
    fail_with(&p, &bad);
}

#[test]
fn devcontainer_user_with_passwordless_sudo_podman() {
    passwordless_sudo_case(
        &podman_engine(),
        "devcontainer_user_with_passwordless_sudo_podman",
    );
}

#[test]
fn devcontainer_user_with_passwordless_sudo_docker() {
    passwordless_sudo_case(
        &docker_engine(),
        "devcontainer_user_with_passwordless_sudo_docker",
    );
}

#[test]
fn devcontainer_image_without_the_sudoers_line_is_clean_podman() {
    plain_image_case(
        &podman_engine(),
        "devcontainer_image_without_the_sudoers_line_is_clean_podman",
    );
}

#[test]
fn devcontainer_image_without_the_sudoers_line_is_clean_docker() {
    plain_image_case(
        &docker_engine(),
        "devcontainer_image_without_the_sudoers_line_is_clean_docker",
    );
}

/// In a user namespace where uid 0 is host uid 100000 (what a rootless
/// engine gives), the same sudo rule ranks lower and the finding says why.
#[test]
fn passwordless_sudo_in_a_user_namespace_ranks_lower_podman() {
    let test = "passwordless_sudo_in_a_user_namespace_ranks_lower_podman";
    let e = podman_engine();
    let Some(img) = devc_setup(&e, test, Devc::Sudo) else {
        return;
    };
    let p = devc_probe(
        &e,
        &img,
        &["--uidmap", "0:100000:65536", "--gidmap", "0:100000:65536"],
    );
    let mut bad = Vec::new();
    match p.find("priv.passwordless-root", "sudo") {
        Some(f) => {
            if f["severity"] != "medium" {
                bad.push(format!("severity {} (want medium)", f["severity"]));
            }
            if !f["message"]
                .as_str()
                .unwrap_or("")
                .contains("host uid 100000")
            {
                bad.push(format!("the message does not say why: {}", f["message"]));
            }
        }
        None => bad.push("no priv.passwordless-root for sudo".into()),
    }
    fail_with(&p, &bad);
}

// ---------------------------------------------------------------------------
// The Dev Containers CLI.

fn devcontainer_cli() -> bool {
    Command::new("devcontainer")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Removes the containers the Dev Containers CLI made for a folder.
struct DevcFolder<'a> {
    dir: TempPath,
    engine: &'a Engine,
}

impl Drop for DevcFolder<'_> {
    fn drop(&mut self) {
        let label = format!("label=devcontainer.local_folder={}", self.dir.arg());
        if let Ok(o) = self
            .engine
            .cmd()
            .args(["ps", "-aq", "--filter", &label])
            .output()
        {
            for id in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                let _ = self.engine.cmd().args(["rm", "-f", id]).output();
            }
        }
    }
}

fn devcontainer_up(e: &Engine, image: &str) -> (bool, String) {
    // With a non-root remoteUser the CLI gives podman --userns=keep-id,
    // which rootful podman refuses, unless runArgs map the ids themselves:
    // an identity map keeps uid 0 host uid 0, as rootful Docker has it.
    let run_args = if e.name == "podman" {
        r#""--uidmap", "0:0:4294967295", "--gidmap", "0:0:4294967295", "--network", "none""#
    } else {
        r#""--network", "none""#
    };
    let ws = workspace_with_probe();
    let folder = DevcFolder { dir: ws, engine: e };
    std::fs::create_dir(folder.dir.path.join(".devcontainer")).unwrap();
    std::fs::write(
        folder.dir.path.join(".devcontainer/devcontainer.json"),
        format!(
            r#"{{
  "image": "{image}",
  "remoteUser": "vscode",
  "updateRemoteUserUID": false,
  "runArgs": [{run_args}],
  "postCreateCommand": "${{containerWorkspaceFolder}}/tools/selfprobe --workspace ${{containerWorkspaceFolder}}"
}}"#
        ),
    )
    .unwrap();
    let mut cmd = Command::new("devcontainer");
    cmd.args(["up", "--docker-path", e.name, "--workspace-folder"])
        .arg(&folder.dir.path)
        .env("CONTAINERS_CONF", podman::conf());
    let out =
        run_bounded(cmd, Duration::from_secs(300), None).unwrap_or_else(|err| panic!("{err}"));
    let ok = out
        .stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| v["outcome"] == "success");
    (ok, format!("{}\n{}", out.stdout, out.stderr))
}

fn devcontainer_case(e: &Engine, test: &str) {
    if !devcontainer_cli() {
        skip_or_fail(test, "the Dev Containers CLI is missing (npm install -g @devcontainers/cli; .ci/run does it)");
        return;
    }
    let Some(sudo_img) = devc_setup(e, test, Devc::Sudo) else {
        return;
    };
    let Some(plain_img) = devc_setup(e, test, Devc::Plain) else {
        return;
    };
    let (ok, log) = devcontainer_up(e, &sudo_img);
    assert!(
        !ok,
        "passwordless sudo for remoteUser vscode must fail postCreateCommand:\n{log}"
    );
    assert!(
        log.contains("priv.passwordless-root") && log.contains("sudo lets vscode"),
        "the finding is in the creation log:\n{log}"
    );
    let (ok, log) = devcontainer_up(e, &plain_img);
    assert!(ok, "the same image without the sudoers line passes:\n{log}");
    assert!(!log.contains("priv.passwordless-root"), "{log}");
}

#[test]
fn devcontainer_post_create_fails_on_passwordless_sudo_podman() {
    devcontainer_case(
        &podman_engine(),
        "devcontainer_post_create_fails_on_passwordless_sudo_podman",
    );
}

#[test]
fn devcontainer_post_create_fails_on_passwordless_sudo_docker() {
    devcontainer_case(
        &docker_engine(),
        "devcontainer_post_create_fails_on_passwordless_sudo_docker",
    );
}

// ---------------------------------------------------------------------------
// A home with every agent's credentials, mounted in.

fn agent_home_case(e: &Engine, test: &str, image: &str, probe: &str, extra: &[String]) {
    let mut c = Canaries::default();
    let home = TempPath::dir("agenthome").unwrap();
    let expects = agent_home(&home.path, &mut c);
    chown_tree(&home.path, 1000);
    let ws = TempPath::dir("agentws").unwrap();
    workspace_mcp(&ws.path, &mut c);
    chown_tree(&ws.path, 1000);
    let mut flags: Vec<String> = vec![
        "--network".into(),
        "none".into(),
        "--user".into(),
        "1000:1000".into(),
        "-v".into(),
        format!("{}:/home/dev:ro", home.arg()),
        "-v".into(),
        format!("{}:/workspace:ro", ws.arg()),
    ];
    flags.extend(extra.iter().cloned());
    let p = probe_formats(
        e,
        &flags,
        image,
        probe,
        &["--workspace", "/workspace"],
        &["json", "text", "sarif", "junit"],
    );
    let mut bad = check_agent_home(&p.json, "/home/dev", &expects);
    match p.find("mcp.secret-in-config", "/workspace/.mcp.json github") {
        Some(f) if f["evidence"]["secrets"][0]["field"] == "env GITHUB_PERSONAL_ACCESS_TOKEN" => {}
        other => bad.push(format!("the .mcp.json literal token: {other:?}")),
    }
    let servers = p.json["inventory"]["secrets"]["mcp"]["servers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !servers.iter().any(|s| {
        s["name"] == "github"
            && s["env"] == json!(["GITHUB_PERSONAL_ACCESS_TOKEN"])
            && s["command"] == "npx"
    }) {
        bad.push(format!(
            "the github server is not in the inventory: {servers:?}"
        ));
    }
    if p.code != 1 {
        bad.push(format!("exit {} (want 1)", p.code));
    }
    let text = &p.outputs.iter().find(|(w, _)| w == "text").unwrap().1;
    // The expiries are in the JSON (check_agent_home); the default text
    // report groups a code's findings, so only --verbose repeats them.
    if !text.contains("MCP servers (") {
        bad.push("the text report does not show the MCP servers".into());
    }
    fail_with(&p, &bad);
    c.assert_absent(&p.outputs);
    let _ = test;
}

#[test]
fn agent_credentials_in_a_mounted_home_podman() {
    let test = "agent_credentials_in_a_mounted_home_podman";
    let Some(img) = podman::setup(test) else {
        return;
    };
    agent_home_case(&podman_engine(), test, img, podman::IN_IMAGE, &[]);
}

#[test]
fn agent_credentials_in_a_mounted_home_docker() {
    let test = "agent_credentials_in_a_mounted_home_docker";
    let e = docker_engine();
    // Docker has no image of selfprobe's own: the devcontainer-style one,
    // with the shipped binary bind-mounted read-only.
    let Some(img) = devc_setup(&e, test, Devc::Plain) else {
        return;
    };
    let mount = vec![
        "-v".to_string(),
        format!("{}:/opt/selfprobe/selfprobe:ro", shipped::bin_str()),
    ];
    agent_home_case(&e, test, &img, "/opt/selfprobe/selfprobe", &mount);
}

// ---------------------------------------------------------------------------
// `sudo -n -l` itself: bounded, no prompt, a clean environment.

/// A `sudo` of our own, root-owned and mode 0755 as the probe requires,
/// bind-mounted over the image's PATH: one that hangs is killed at the
/// deadline and the check is unknown, not a pass; one that reports what it
/// got shows `-n -l`, stdin at EOF and an environment of PATH and LC_ALL.
#[test]
fn sudo_listing_is_bounded_promptless_and_clean_podman() {
    let test = "sudo_listing_is_bounded_promptless_and_clean_podman";
    let Some(img) = podman::setup(test) else {
        return;
    };
    let e = podman_engine();
    let dir = TempPath::dir("fakesudo").unwrap();
    let script = |name: &str, body: &str| -> PathBuf {
        let p = dir.path.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    };
    let hang = script("hang", "sleep 30");
    let tell = script(
        "tell",
        "read -r line; echo \"ARGS:$*|STDIN:$line|ENV:$(env | sort | tr '\\n' ' ')\"; exit 1",
    );
    let mut c = Canaries::default();
    let canary = c.add("environment canary", 24);
    let run = |fake: &Path| -> Probed {
        let flags = vec![
            "--network".to_string(),
            "none".into(),
            "--user".into(),
            "1000:1000".into(),
            "-e".into(),
            format!("SELFPROBE_TEST_CANARY={canary}"),
            "-v".into(),
            format!("{}:/usr/local/bin/sudo:ro", fake.display()),
        ];
        probe_formats(&e, &flags, img, podman::IN_IMAGE, &[], &["json"])
    };

    let p = run(&hang);
    let sudo = &p.json["inventory"]["rootpaths"]["sudo"];
    let mut bad = Vec::new();
    if sudo["listing"] != "timeout" {
        bad.push(format!("listing {} (want timeout)", sudo["listing"]));
    }
    // The promise: sudo gets its whole 2 s (not killed early) and is
    // killed then, so the probe finishes (its record is ok, below) inside
    // its own 5 s budget; when in those 3 s the kill landed is the load.
    let ms = sudo["duration_ms"].as_u64().unwrap_or(0);
    if !(1_900..5_000).contains(&ms) {
        bad.push(format!("sudo ran {ms} ms: not killed at its 2 s deadline"));
    }
    match p.find("probe.incomplete", "rootpaths:sudo") {
        Some(f) if f["status"] == "unknown" => {}
        other => bad.push(format!("a hung sudo is not 'could not check': {other:?}")),
    }
    if p.has_code("priv.passwordless-root") {
        bad.push("a finding from a sudo that never answered".into());
    }
    let rec = p.json["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "rootpaths")
        .cloned()
        .unwrap_or(Value::Null);
    if rec["status"] != "ok" {
        bad.push(format!("the rootpaths probe itself did not finish: {rec}"));
    }
    fail_with(&p, &bad);

    let p = run(&tell);
    let sudo = &p.json["inventory"]["rootpaths"]["sudo"];
    let detail = sudo["listing_detail"].as_str().unwrap_or("");
    let mut bad = Vec::new();
    if sudo["listing"] != "failed" || !detail.starts_with("ARGS:-n -l|STDIN:|ENV:") {
        bad.push(format!("sudo got other arguments or stdin: {sudo}"));
    }
    if !detail.contains("LC_ALL=C") || !detail.contains("PATH=") || detail.contains("HOME=") {
        bad.push(format!(
            "sudo's environment is not PATH and LC_ALL: {detail}"
        ));
    }
    fail_with(&p, &bad);
    c.assert_absent(&p.outputs);
}

/// A report that lost its findings array (a truncated or malformed
/// output) fails every check that reads findings, rather than passing the
/// "must not be reported" ones on an empty list. No engine is needed.
#[test]
fn a_report_without_findings_fails_the_checks() {
    let p = Probed {
        what: "a malformed report".into(),
        code: 0,
        json: serde_json::json!({"schema": "x", "scorecard": {}}),
        outputs: Vec::new(),
    };
    for check in [
        Box::new(|p: &Probed| p.has_code("priv.passwordless-root")) as Box<dyn Fn(&Probed) -> bool>,
        Box::new(|p: &Probed| p.find("probe.incomplete", "rootpaths:sudo").is_none()),
    ] {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&p)));
        assert!(
            r.is_err(),
            "an absence check passed on a report without findings"
        );
    }
    let ok = Probed {
        json: serde_json::json!({"findings": []}),
        ..p
    };
    assert!(!ok.has_code("priv.passwordless-root"));
}

// ---------------------------------------------------------------------------
// The agent platforms' own workspaces, from their public files.

fn control(p: &Probed, key: &str) -> Value {
    p.json["scorecard"]["controls"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["control"] == key))
        .cloned()
        .unwrap_or(Value::Null)
}

fn decided_by(p: &Probed, key: &str, f: &Value) -> bool {
    control(p, key)["decisive"]
        .as_array()
        .is_some_and(|a| a.iter().any(|id| *id == f["id"]))
}

/// Claude Code's reference devcontainer (anthropics/claude-code
/// .devcontainer/Dockerfile and devcontainer.json at commit
/// 5cfc0a1905ce0c0a9bd81d8a90fe6b62ff614357; tests/devc/build.sh lays the
/// image out): user node, `node ALL=(root) NOPASSWD:
/// /usr/local/bin/init-firewall.sh`, the runArgs `--cap-add=NET_ADMIN
/// --cap-add=NET_RAW` and CLAUDE_CONFIG_DIR. The rule is read live by
/// `sudo -n -l` (the sudoers file is 0440 root's). Then the same container
/// with the script node's: a way to root, and sudo really runs what node
/// wrote as uid 0.
fn claude_code_devcontainer_case(e: &Engine, test: &str) {
    let Some(img) = devc_setup(e, test, Devc::Claude) else {
        return;
    };
    let ws = workspace_with_probe();
    let flags: Vec<String> = [
        "--network",
        "none",
        "--cap-add=NET_ADMIN",
        "--cap-add=NET_RAW",
        "-e",
        "CLAUDE_CONFIG_DIR=/home/node/.claude",
        "-v",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("{}:/workspace:ro", ws.arg())])
    .collect();
    let c = e.start(&flags, &img, &["sleep", "600"]);
    let probe = "/workspace/tools/selfprobe";
    let args = ["--workspace", "/workspace"];
    let p = c.probe("1000:1000", probe, &args, &["json"]);
    let mut bad = Vec::new();
    if p.find("priv.passwordless-root", "sudo").is_some() {
        bad.push("the root-owned init-firewall.sh rule is called a path to root".into());
    }
    match p.find("priv.sudo-limited", "sudo") {
        Some(f) => {
            for (ptr, want) in [
                ("/severity", json!("info")),
                ("/evidence/sudo_listing", json!("listed")),
                ("/evidence/sources", json!(["sudo -n -l"])),
                ("/evidence/rules/0/commands", json!([CLAUDE_SCRIPT])),
                ("/evidence/rules/0/judged/0/verdict", json!("limited")),
                ("/evidence/user", json!("node")),
            ] {
                if f.pointer(ptr) != Some(&want) {
                    bad.push(format!("{ptr} is {:?} (want {want})", f.pointer(ptr)));
                }
            }
            let msg = f["message"].as_str().unwrap_or("");
            if !msg.contains("(owner uid 0, mode 0755) is not writable by node (uid 1000)") {
                bad.push(format!("the message does not say why: {msg}"));
            }
            if decided_by(&p, "engine-socket", f) {
                bad.push("the limited rule decides the engine-socket score".into());
            }
        }
        None => bad.push(format!(
            "no priv.sudo-limited for {CLAUDE_SUDOERS:?}: {}",
            p.json["inventory"]["rootpaths"]["sudo"]
        )),
    }
    fail_with(&p, &bad);

    // The script node's own: a way to root.
    let o = c.exec("0", &["chown", "1000:1000", CLAUDE_SCRIPT]);
    assert_eq!(o.code, Some(0), "chown: {}", o.stderr);
    let p = c.probe("1000:1000", probe, &args, &["json"]);
    let mut bad = Vec::new();
    match p.find("priv.passwordless-root", "sudo") {
        Some(f) => {
            if f["severity"] != "high" {
                bad.push(format!("severity {} (want high)", f["severity"]));
            }
            let msg = f["message"].as_str().unwrap_or("");
            if !msg.contains("(owner uid 1000, mode 0755) is writable by node (uid 1000)") {
                bad.push(format!("the message does not say why: {msg}"));
            }
            if control(&p, "engine-socket")["score"] != 0 || !decided_by(&p, "engine-socket", f) {
                bad.push(format!(
                    "engine-socket is not 0 on it: {}",
                    control(&p, "engine-socket")
                ));
            }
        }
        None => bad.push("a script node owns, run by sudo as root, is not a path to root".into()),
    }
    if p.has_code("priv.sudo-limited") {
        bad.push("priv.sudo-limited beside the path to root".into());
    }
    fail_with(&p, &bad);
    // And it is one: sudo -n runs what node wrote, as uid 0.
    let o = c.exec(
        "1000:1000",
        &[
            "sh",
            "-c",
            &format!("printf '#!/bin/sh\\nid -u\\n' > {CLAUDE_SCRIPT} && sudo -n {CLAUDE_SCRIPT}"),
        ],
    );
    assert_eq!(
        (o.code, o.stdout.trim()),
        (Some(0), "0"),
        "sudo -n did not run node's script as root: {}",
        o.stderr
    );
}

#[test]
fn claude_code_devcontainer_sudo_rule_docker() {
    claude_code_devcontainer_case(
        &docker_engine(),
        "claude_code_devcontainer_sudo_rule_docker",
    );
}

#[test]
fn claude_code_devcontainer_sudo_rule_podman() {
    claude_code_devcontainer_case(
        &podman_engine(),
        "claude_code_devcontainer_sudo_rule_podman",
    );
}

/// The agents' own files, from their documented runs, in one container:
/// OpenHands' settings file with a literal key in ~/.openhands bound at
/// /.openhands (the documented `docker run ... -v ~/.openhands:/.openhands`,
/// All-Hands-AI/OpenHands docker-compose.yml at 156d0686), a host's ~/.codex
/// bound in (OpenClaw's documented OPENCLAW_EXTRA_MOUNTS
/// "$HOME/.codex:/home/node/.codex:ro"), and PID 1 started as aider's
/// documented `docker run ... paulgauthier/aider --openai-api-key
/// $OPENAI_API_KEY` (Aider-AI/aider aider/website/docs/install/docker.md
/// at 22a494bb; a stand-in `aider` script keeps the argument list). Every
/// format and stderr is searched for every planted value.
fn agent_workspace_case(e: &Engine, test: &str) {
    let Some(img) = devc_setup(e, test, Devc::Plain) else {
        return;
    };
    let mut c = Canaries::default();
    let oh = TempPath::dir("openhands").unwrap();
    std::fs::write(oh.path.join("settings.json"), openhands_settings(&mut c)).unwrap();
    chown_tree(&oh.path, 1000);
    let codex = TempPath::dir("codexhome").unwrap();
    std::fs::write(codex.path.join("config.toml"), "model = \"o3\"\n").unwrap();
    std::fs::write(
        codex.path.join("auth.json"),
        json!({"OPENAI_API_KEY": format!("sk-proj-{}", c.add("codex api key", 64)), "tokens": null})
            .to_string(),
    )
    .unwrap();
    chown_tree(&codex.path, 1000);
    let ws = workspace_with_probe();
    let aider = ws.path.join("tools/aider");
    std::fs::write(&aider, "#!/bin/sh\nwhile :; do sleep 1; done\n").unwrap();
    std::fs::set_permissions(&aider, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let key = format!("sk-proj-{}", c.add("pid 1 key", 64));
    let flags: Vec<String> = vec![
        "--network".into(),
        "none".into(),
        "--user".into(),
        "1000:1000".into(),
        "-v".into(),
        format!("{}:/.openhands", oh.arg()),
        "-v".into(),
        format!("{}:/home/vscode/.codex:ro", codex.arg()),
        "-v".into(),
        format!("{}:/workspace:ro", ws.arg()),
    ];
    let ctr = e.start(
        &flags,
        &img,
        &["/workspace/tools/aider", "--openai-api-key", &key],
    );
    let p = ctr.probe(
        "1000:1000",
        "/workspace/tools/selfprobe",
        &["--workspace", "/workspace"],
        &["json", "text", "sarif", "junit"],
    );
    let mut bad = Vec::new();
    for (mp, agent) in [
        ("/.openhands", "OpenHands"),
        ("/home/vscode/.codex", "Codex CLI"),
    ] {
        match p.find("mount.config-directory", mp) {
            Some(f) if f["evidence"]["agent"] == agent && f["severity"] == "high" => {}
            other => bad.push(format!("mount.config-directory {mp}: {other:?}")),
        }
        if p.find("mount.unexpected", mp).is_some() {
            bad.push(format!("{mp} is also mount.unexpected"));
        }
    }
    match p.find("secret.file", "/.openhands/settings.json") {
        Some(f)
            if f["severity"] == "high"
                && f["evidence"]["kind"] == "agent-config-secret"
                && f["evidence"]["agent"] == "OpenHands"
                && f["evidence"]["entries"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x == "llm_api_key")) => {}
        other => bad.push(format!("OpenHands' settings.json: {other:?}")),
    }
    match p.find("secret.file", "/home/vscode/.codex/auth.json") {
        Some(f) if f["evidence"]["kind"] == "codex-auth" => {}
        other => bad.push(format!("the bound ~/.codex/auth.json: {other:?}")),
    }
    match p.find("secret.process-cmdline", "pid 1") {
        Some(f)
            if f["severity"] == "high"
                && f["evidence"]["arguments"][0]["option"] == "--openai-api-key"
                && f["evidence"]["arguments"][0]["index"] == 3 => {}
        other => bad.push(format!("PID 1's --openai-api-key: {other:?}")),
    }
    if control(&p, "secret-boundary")["score"] != 0 {
        bad.push(format!(
            "secret-boundary {}",
            control(&p, "secret-boundary")
        ));
    }
    if p.code != 1 {
        bad.push(format!("exit {} (want 1)", p.code));
    }
    fail_with(&p, &bad);
    c.assert_absent(&p.outputs);
}

#[test]
fn agent_platform_files_in_a_workspace_docker() {
    agent_workspace_case(
        &docker_engine(),
        "agent_platform_files_in_a_workspace_docker",
    );
}

#[test]
fn agent_platform_files_in_a_workspace_podman() {
    agent_workspace_case(
        &podman_engine(),
        "agent_platform_files_in_a_workspace_podman",
    );
}
