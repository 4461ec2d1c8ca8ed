//! The realistic image (tests/realistic/build.sh): Debian bookworm with
//! python3, nodejs, npm, git, build-essential and CPython's test suite, and
//! a developer home holding a pyenv tree of package test keys. The image is
//! built once (minutes) and reused by tag; these tests add the shipped
//! binary on top of it.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::common::podman::*;

const BUILD: Duration = Duration::from_secs(1200);

/// The realistic image with the shipped binary, by id; None after a SKIP.
fn image(test: &str) -> Option<&'static str> {
    setup(test)?;
    if std::process::Command::new("debootstrap")
        .arg("--version")
        .output()
        .is_err()
    {
        skip_or_fail(
            test,
            "debootstrap is missing (apt-get install -y debootstrap)",
        );
        return None;
    }
    static BUILT: OnceLock<Result<String, String>> = OnceLock::new();
    match BUILT.get_or_init(build) {
        Ok(id) => Some(id.as_str()),
        Err(e) => panic!("{test}: the realistic image: {e}"),
    }
}

fn build() -> Result<String, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/realistic/build.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script).env("CONTAINERS_CONF", conf());
    let out = run_bounded(cmd, BUILD, None)?;
    if out.code != Some(0) {
        return Err(format!(
            "{} exited {:?}: {}",
            script.display(),
            out.code,
            out.stderr
        ));
    }
    let base = out.stdout.trim().lines().last().unwrap_or("").to_string();
    let ctx = TempPath::dir("realistic")?;
    std::fs::copy(
        super::common::shipped::bin_str(),
        ctx.path.join("selfprobe"),
    )
    .map_err(|e| format!("copy the binary: {e}"))?;
    std::fs::write(
        ctx.path.join("Containerfile"),
        format!("FROM {base}\nCOPY selfprobe /usr/local/bin/selfprobe\nWORKDIR /workspace\n"),
    )
    .map_err(|e| e.to_string())?;
    let iid = ctx.path.join("iid");
    let mut cmd = podman();
    cmd.args(["build", "-q", "--iidfile"])
        .arg(&iid)
        .arg("-f")
        .arg(ctx.path.join("Containerfile"))
        .arg(&ctx.path);
    let out = run_bounded(cmd, BUILD_TIMEOUT, None)?;
    if out.code != Some(0) {
        return Err(format!("podman build: {}", out.stderr));
    }
    let id = std::fs::read_to_string(&iid).map_err(|e| e.to_string())?;
    Ok(id.trim().trim_start_matches("sha256:").to_string())
}

fn secret_files(r: &Run) -> Vec<(String, String)> {
    r.findings()
        .iter()
        .filter(|f| f["code"] == "secret.file")
        .map(|f| {
            (
                f["subject"].as_str().unwrap_or("").to_string(),
                f["severity"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn tool<'a>(r: &'a Run, name: &str) -> &'a Value {
    r.json["inventory"]["repro"]["tools"]
        .as_array()
        .and_then(|a| a.iter().find(|t| t["tool"] == name))
        .unwrap_or(&Value::Null)
}

#[test]
fn realistic_clean_flags_exit_zero_without_package_keys_as_secrets() {
    let Some(img) = image("realistic_clean_flags_exit_zero_without_package_keys_as_secrets") else {
        return;
    };
    let ws = TempPath::dir("rws").unwrap();
    let mut flags: Vec<String> = CLEAN.iter().map(|s| s.to_string()).collect();
    flags.extend(["-v".into(), format!("{}:/workspace:ro", ws.arg())]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--workspace", "/workspace"]);
    let mut c = r.check();
    c.exit(0).nothing_high().probes_ok();
    for (s, _) in secret_files(&r) {
        if s.contains("/.pyenv/") || s.contains("site-packages") || s.contains("/lib/python") {
            c.fail(format!("package data reported as secret.file: {s}"));
        }
    }
    // The home's pyenv tree is one finding, at info.
    let pkg: Vec<&Value> = r
        .findings()
        .iter()
        .filter(|f| f["code"] == "secret.package-data")
        .collect();
    if pkg.len() != 1
        || pkg[0]["subject"] != "/home/dev/.pyenv/versions/3.11.2/lib"
        || pkg[0]["severity"] != "info"
        || pkg[0]["evidence"]["files"].as_u64().unwrap_or(0) < 5
    {
        c.fail(format!(
            "one info secret.package-data for the pyenv tree: {pkg:?}"
        ));
    }
    // npm, npx and pip are scripts: their versions come from files; nothing
    // starts node or python to ask.
    for (t, file) in [
        ("npm", "/usr/share/nodejs/npm/package.json"),
        ("npx", "/usr/share/nodejs/npm/package.json"),
    ] {
        let x = tool(&r, t);
        if x["status"] != "from-file" || x["version_file"] != file {
            c.fail(format!("{t}: {x}"));
        }
    }
    for t in ["pip", "node", "python3", "gcc", "git"] {
        let x = tool(&r, t);
        if x["status"] != "from-file" {
            c.fail(format!("{t} should be read from a file: {x}"));
        }
    }
    c.done();
}

#[test]
fn realistic_home_keeps_real_keys_high_and_package_keys_low() {
    let Some(img) = image("realistic_home_keeps_real_keys_high_and_package_keys_low") else {
        return;
    };
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWCANARYrealK3y\n-----END OPENSSH PRIVATE KEY-----\n";
    let token = "npm_CANARYrealisticTok3nAbCdEfGhIjKlMnOpQ";
    let name = unique("rhome");
    let ctr = podman()
        .args(["create", "--name", &name, "--network", "none"])
        .arg(img)
        .args(["sleep", "120"])
        .output()
        .unwrap();
    assert!(
        ctr.status.success(),
        "{}",
        String::from_utf8_lossy(&ctr.stderr)
    );
    struct Gone(String);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = podman().args(["rm", "-f", "-t", "0", &self.0]).output();
        }
    }
    let _gone = Gone(name.clone());
    let home = TempPath::dir("rhomefiles").unwrap();
    std::fs::create_dir_all(home.path.join(".ssh")).unwrap();
    std::fs::write(home.path.join(".ssh/id_ed25519"), key).unwrap();
    std::fs::write(
        home.path.join(".npmrc"),
        format!("//registry.npmjs.org/:_authToken={token}\n"),
    )
    .unwrap();
    let cp = podman()
        .args([
            "cp",
            &format!("{}/.", home.arg()),
            &format!("{name}:/home/dev/"),
        ])
        .output()
        .unwrap();
    assert!(
        cp.status.success(),
        "{}",
        String::from_utf8_lossy(&cp.stderr)
    );
    let start = podman().args(["start", &name]).output().unwrap();
    assert!(
        start.status.success(),
        "{}",
        String::from_utf8_lossy(&start.stderr)
    );
    let chown = podman()
        .args([
            "exec",
            "--user",
            "0",
            &name,
            "chown",
            "-R",
            "1000:1000",
            "/home/dev",
        ])
        .output()
        .unwrap();
    assert!(
        chown.status.success(),
        "{}",
        String::from_utf8_lossy(&chown.stderr)
    );
    let mut cmd = podman();
    cmd.args([
        "exec",
        "--user",
        "1000:1000",
        &name,
        IN_IMAGE,
        "--format",
        "json",
    ]);
    let out = run_bounded(cmd, RUN_TIMEOUT, None).unwrap();
    for c in ["CANARYrealK3y", token] {
        assert!(
            !out.stdout.contains(c) && !out.stderr.contains(c),
            "the report holds {c}"
        );
    }
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    let r = Run {
        what: "podman exec (realistic home)".into(),
        code: out.code.unwrap_or(-1),
        json,
        stderr: out.stderr,
    };
    let mut c = r.check();
    c.has_sev("secret.file", "/home/dev/.ssh/id_ed25519", "high")
        .has_sev("secret.file", "/home/dev/.npmrc", "high");
    for f in r.findings() {
        let s = f["subject"].as_str().unwrap_or("");
        let sev = f["severity"].as_str().unwrap_or("");
        if s.contains("/.pyenv/") && (sev == "high" || sev == "critical") {
            c.fail(format!("package data at {sev}: {} {s}", f["code"]));
        }
    }
    c.done();
}

#[test]
fn realistic_clean_repository_with_denied_paths_scores_repo_scope_two() {
    let Some(img) = image("realistic_clean_repository_with_denied_paths_scores_repo_scope_two")
    else {
        return;
    };
    let ws = TempPath::dir("rrepo").unwrap();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args([
                "-c",
                "user.email=t@example.com",
                "-c",
                "user.name=t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&ws.path)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    git(&["init", "-q"]);
    std::fs::write(ws.path.join("README"), "x\n").unwrap();
    std::fs::write(
        ws.path.join("selfprobe.toml"),
        "[workspace]\npath = \"/workspace\"\ndeny = [\"~/.ssh\", \"~/.aws\"]\n",
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
    let mut flags: Vec<String> = CLEAN.iter().map(|s| s.to_string()).collect();
    flags.extend(["-v".into(), format!("{}:/workspace:ro", ws.arg())]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = probe(img, &flags, &["--policy", "/workspace/selfprobe.toml"]);
    let mut c = r.check();
    let rs = r.json["scorecard"]["controls"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["control"] == "repo-scope"))
        .cloned()
        .unwrap_or(Value::Null);
    let want = "only /workspace (git, branch main, clean) is mounted from the host; the policy denies ~/.ssh, ~/.aws and no host mount shows them";
    if rs["score"] != 2 || rs["reason"] != want {
        c.fail(format!("repo-scope: {rs}"));
    }
    if r.json["inventory"]["repository"]["status"]["state"] != "clean" {
        c.fail(format!("{}", r.json["inventory"]["repository"]));
    }
    c.done();
}
