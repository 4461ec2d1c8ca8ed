//! Real-container tests for phases 4 and 5 and the scorecard: a host cache
//! mounted read-write, a browser profile with Cookies and Login Data, a tool
//! whose --version hangs, the clean container, and the hostile cases that
//! must drop the control the blueprint's rubric names to 0.
//!
//! Same harness and rules as tests/containers.rs (tests/common/podman.rs):
//! SKIP without podman/root unless CI=true; no network traffic anywhere.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use crate::common::podman::*;
use serde_json::Value;

fn scores(r: &Run) -> Vec<(String, Option<u64>)> {
    r.json["scorecard"]["controls"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["control"].as_str().unwrap_or("?").to_string(),
                        c["score"].as_u64(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The control must be assessed and score `want`.
fn score_is(c: &mut Check, control: &str, want: u64) {
    let got = scores(c.run)
        .into_iter()
        .find(|(k, _)| k == control)
        .map(|(_, s)| s);
    if got != Some(Some(want)) {
        let reason = c.run.json["scorecard"]["controls"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["control"] == control))
            .map(|x| x["reason"].clone())
            .unwrap_or(Value::Null);
        c.fail(format!(
            "scorecard {control}: {got:?} (want {want}): {reason}"
        ));
    }
}

/// `podman run` with --format text, for the formats a canary must not reach.
fn probe_text(img: &str, flags: &[&str], args: &[&str]) -> Output {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let name = unique("ctr");
    let mut cmd = podman();
    cmd.args(["run", "--rm", "--name", &name])
        .args(flags)
        .arg(img)
        .args([IN_IMAGE, "--format", "text"])
        .args(args);
    run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"))
}

fn write(p: &Path, body: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// A workspace with a pinned setup contract: devcontainer.json naming the
/// image by digest, a toolchain pin and a locked manifest.
fn pinned_workspace(img: &str) -> TempPath {
    let ws = TempPath::dir("ws").unwrap();
    write(
        &ws.path.join(".devcontainer/devcontainer.json"),
        &format!(
            "{{\n  // the image the test runs, by digest\n  \"image\": \"localhost/selfprobe-test@sha256:{img}\",\n}}\n"
        ),
    );
    write(
        &ws.path.join("rust-toolchain.toml"),
        "[toolchain]\nchannel = \"1.83.0\"\n",
    );
    write(
        &ws.path.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    write(&ws.path.join("Cargo.lock"), "version = 4\n");
    ws
}

#[test]
fn clean_container_scores_two_on_every_control_it_assesses() {
    let Some(img) = setup("clean_container_scores_two_on_every_control_it_assesses") else {
        return;
    };
    let ws = pinned_workspace(img);
    let mut flags: Vec<String> = CLEAN.iter().map(|s| s.to_string()).collect();
    flags.extend(["-v".into(), format!("{}:/workspace:ro", ws.arg())]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--workspace", "/workspace"]);
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks_code("repro.")
        .lacks_code("cache.")
        .lacks_code("browser.")
        .lacks_code("artifact.")
        .probes_ok();
    lacks_common(&mut c);
    let all = scores(&r);
    for (control, s) in &all {
        if let Some(s) = s {
            if *s != 2 && control != "repo-scope" {
                score_is(&mut c, control, 2);
            }
        }
    }
    // Repo scope's 2 needs a clean git repository and declared denied
    // paths; this workspace is neither a repository nor fenced by a policy,
    // and the reason says so instead of claiming the rubric's words.
    score_is(&mut c, "repo-scope", 1);
    let rs = r.json["scorecard"]["controls"][0]["reason"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if !rs.contains("only /workspace (not a git repository) is mounted from the host")
        || !rs.contains("no denied paths are declared")
        || !rs.contains("2 needs")
    {
        c.fail(format!("repo-scope reason: {rs}"));
    }
    // What this branch can assess must be assessed, not skipped.
    for control in [
        "engine-socket",
        "cache-policy",
        "browser-isolation",
        "reproducibility",
    ] {
        score_is(&mut c, control, 2);
    }
    // The contract pins the image; the engine (non-privileged podman) does
    // not report a digest, so none is claimed for the running image.
    let image = &r.json["inventory"]["image"];
    let pinned = image["pinned_by"]["value"].as_str().unwrap_or("");
    if !pinned.ends_with(&format!("@sha256:{img}")) || !image["digest"].is_null() {
        c.fail(format!("inventory.image: {image}"));
    }
    if image["container_id"]["value"].as_str().map(str::len) != Some(64) {
        c.fail(format!("no container id from cgroup or mountinfo: {image}"));
    }
    c.done();
}

#[test]
fn host_cache_mounted_read_write() {
    let Some(img) = setup("host_cache_mounted_read_write") else {
        return;
    };
    let canary = "hf_CANARYcacheTok3nQ7w8e9r0t1y2";
    let cache = TempPath::dir("cache").unwrap();
    std::fs::create_dir_all(cache.path.join("pip/http")).unwrap();
    std::fs::create_dir_all(cache.path.join("huggingface/hub")).unwrap();
    std::fs::write(cache.path.join("huggingface/token"), format!("{canary}\n")).unwrap();
    let ws = pinned_workspace(img);
    let flags = [
        "--read-only".to_string(),
        "-v".into(),
        vol(&cache, "/root/.cache"),
        "-v".into(),
        format!("{}:/workspace:ro", ws.arg()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--workspace", "/workspace"]);
    let mut c = r.check();
    c.exit(1)
        .has_sev("cache.shared-writable", "/root/.cache/pip", "high")
        .has_sev("cache.shared-writable", "/root/.cache/huggingface", "high")
        .evidence(
            "cache.shared-writable",
            "/root/.cache/pip",
            "/evidence/host_path",
            format!("{}/pip", cache.arg()).into(),
        )
        .evidence(
            "cache.shared-writable",
            "/root/.cache/pip",
            "/evidence/retention",
            "persistent".into(),
        )
        .evidence(
            "cache.credentials",
            "/root/.cache/huggingface/token",
            "/evidence/in_cache",
            "huggingface".into(),
        )
        .lacks("cache.shared-writable", "/root/.cache")
        .lacks_code("browser.")
        .lacks_code("repro.")
        .probes_ok();
    lacks_common(&mut c);
    score_is(&mut c, "cache-policy", 0);
    score_is(&mut c, "browser-isolation", 2);
    score_is(&mut c, "reproducibility", 2);
    // Not one byte of the token in JSON, text or on stderr.
    let text = probe_text(img, &flags, &["--workspace", "/workspace"]);
    for (what, out) in [
        ("json", r.json.to_string()),
        ("json stderr", r.stderr.clone()),
        ("text", text.stdout.clone()),
        ("text stderr", text.stderr.clone()),
    ] {
        for needle in [canary, &canary[3..19]] {
            if out.contains(needle) {
                c.fail(format!("{what} contains {needle}"));
            }
        }
    }
    if !text.stdout.contains("cache.credentials") {
        c.fail(format!(
            "text report lacks cache.credentials:\n{}",
            text.stdout
        ));
    }
    c.done();

    // The same cache read-only is the recommended way to share it.
    let flags = [
        "-v".to_string(),
        format!("{}:/root/.cache:ro", cache.arg()),
        "-v".into(),
        format!("{}:/workspace:ro", ws.arg()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--workspace", "/workspace"]);
    let mut c = r.check();
    c.lacks_code("cache.shared-writable")
        .has_code("cache.credentials")
        .probes_ok();
    c.done();
}

#[test]
fn browser_profile_with_cookies_and_login_data() {
    let Some(img) = setup("browser_profile_with_cookies_and_login_data") else {
        return;
    };
    let prof = TempPath::dir("chrome").unwrap();
    write(&prof.path.join("Local State"), "{}");
    write(&prof.path.join("Default/Cookies"), "SQLite format 3\0");
    write(&prof.path.join("Default/Login Data"), "SQLite format 3\0");
    write(
        &prof.path.join("Default/Local Storage/leveldb/000003.log"),
        "x",
    );
    let ws = pinned_workspace(img);
    let flags = [
        "--read-only".to_string(),
        "-v".into(),
        vol(&prof, "/root/.config/google-chrome"),
        "-v".into(),
        format!("{}:/workspace:ro", ws.arg()),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--workspace", "/workspace"]);
    let mut c = r.check();
    let p = "/root/.config/google-chrome";
    c.exit(1)
        .has_sev("browser.profile", p, "high")
        .evidence("browser.profile", p, "/evidence/browser", "chrome".into())
        .evidence(
            "browser.profile",
            p,
            "/evidence/files",
            serde_json::json!(["Local State", "Default/Cookies", "Default/Login Data"]),
        )
        .evidence("browser.profile", p, "/evidence/shared_with", "host".into())
        .lacks_code("browser.debug-port")
        .lacks_code("artifact.persistent")
        .lacks_code("cache.")
        .probes_ok();
    lacks_common(&mut c);
    score_is(&mut c, "browser-isolation", 0);
    score_is(&mut c, "cache-policy", 2);
    c.done();
}

#[test]
fn a_hanging_version_is_killed_and_reported() {
    let Some(img) = setup("a_hanging_version_is_killed_and_reported") else {
        return;
    };
    let canary = "CANARYtoolEnvS3cret55";
    let tools = TempPath::dir("tools").unwrap();
    let script = |name: &str, body: &str| {
        let p = tools.path.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script("node", "sleep 60");
    script("git", "echo \"git version 9.9.9 $SECRET_CANARY\"");
    // Writable by others: never run, even as root.
    script("python3", "echo Python 3.99");
    std::fs::set_permissions(
        tools.path.join("python3"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let secret_env = format!("SECRET_CANARY={canary}");
    let flags = [
        "-v".to_string(),
        format!("{}:/opt/tools:ro", tools.arg()),
        "-e".into(),
        "PATH=/opt/tools:/bin".into(),
        "-e".into(),
        secret_env,
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let started = Instant::now();
    let r = probe(img, &flags, &[]);
    let took = started.elapsed();
    let mut c = r.check();
    let tool = |name: &str| -> Value {
        r.json["inventory"]["repro"]["tools"]
            .as_array()
            .and_then(|a| a.iter().find(|t| t["tool"] == name).cloned())
            .unwrap_or(Value::Null)
    };
    let node = tool("node");
    if node["status"] != "timeout" || !node["reason"].as_str().unwrap_or("").contains("killed") {
        c.fail(format!(
            "node --version should be killed at its deadline: {node}"
        ));
    }
    if node["duration_ms"].as_u64().is_none_or(|d| d > 4000) {
        c.fail(format!("node ran past its deadline: {node}"));
    }
    let git = tool("git");
    if git["status"] != "ok" || git["version"] != "git version 9.9.9" {
        c.fail(format!(
            "git should report its version, without the environment: {git}"
        ));
    }
    let py = tool("python3");
    if py["status"] != "not-run" || !py["reason"].as_str().unwrap_or("").contains("writable") {
        c.fail(format!("a group/world-writable python3 must not run: {py}"));
    }
    if let Some(f) = c.has("probe.incomplete", "repro:tool:node") {
        if f["status"] != "unknown" {
            c.fail(format!(
                "probe.incomplete repro:tool:node status {}",
                f["status"]
            ));
        }
    }
    if r.json.to_string().contains(canary) || r.stderr.contains(canary) {
        c.fail("the tool saw (and the report shows) selfprobe's environment".into());
    }
    if took.as_secs() > 30 {
        c.fail(format!("the run took {took:?}"));
    }
    // The repro probe itself finished: one tool hanging is not the probe failing.
    let rec = r.json["probes"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["name"] == "repro").cloned())
        .unwrap_or(Value::Null);
    if rec["status"] != "ok" {
        c.fail(format!("probe record repro: {rec}"));
    }
    c.done();
}

#[test]
fn hostile_cases_drop_their_control_to_zero() {
    let Some(img) = setup("hostile_cases_drop_their_control_to_zero") else {
        return;
    };
    let ws = pinned_workspace(img);
    let ws_flag = format!("{}:/workspace:ro", ws.arg());

    // Privileged: engine-socket 0, the others as in the clean case.
    let r = probe(
        img,
        &["--privileged", "--read-only", "-v", &ws_flag],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.has_code("priv.privileged");
    score_is(&mut c, "engine-socket", 0);
    score_is(&mut c, "cache-policy", 2);
    score_is(&mut c, "browser-isolation", 2);
    c.done();

    // A host home: repo-scope 0.
    let home = TempPath::dir_in(Path::new("/home"), "home").unwrap();
    write(&home.path.join(".bashrc"), "# test\n");
    write(&home.path.join(".profile"), "# test\n");
    let r = probe(
        img,
        &[
            "--read-only",
            "-v",
            &vol(&home, "/home/dev"),
            "-v",
            &ws_flag,
        ],
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.has("mount.home-directory", "/home/dev");
    score_is(&mut c, "repo-scope", 0);
    score_is(&mut c, "reproducibility", 2);
    c.done();
    drop(home);

    // An answering engine socket: engine-socket 0.
    let svc = PodmanService::start();
    let r = probe_alone(
        img,
        &[
            "-v",
            &vol(&svc.sock, "/var/run/docker.sock"),
            "-v",
            &ws_flag,
        ],
        &["--workspace", "/workspace"],
    );
    drop(svc);
    let mut c = r.check();
    c.has("engine.socket-reachable", "/var/run/docker.sock");
    score_is(&mut c, "engine-socket", 0);
    c.done();

    // No workspace and no recipe: a pet container, reproducibility 0.
    let r = probe(img, CLEAN, &[]);
    let mut c = r.check();
    c.evidence(
        "repro.image-unpinned",
        "image",
        "/evidence/setup_contract_found",
        false.into(),
    );
    score_is(&mut c, "reproducibility", 0);
    c.done();
}
