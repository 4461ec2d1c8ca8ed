//! Quiet and legible (issue 13): package trees' own test keys are one
//! secret.package-data per tree while real keys stay high; the text report
//! groups a code's findings and `--verbose` lists each; the git state of the
//! workspace repository is in the JSON report and in repo scope's reason;
//! tool versions come from files before any tool is run.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::fixture::{data, mountinfo_with, Fixture, BIN};
use crate::common::podman::{self, setup, skip_or_fail, TempPath, IN_IMAGE, RUN_TIMEOUT};

/// A private key as a package's test suite ships one; the body carries a
/// canary that no output may hold.
const CANARY: &str = "CANARYpkgKeyQ7z9";
fn pem_key() -> String {
    format!("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{CANARY}\n-----END PRIVATE KEY-----\n")
}
const NPM_TOKEN: &str = "npm_CANARYnpmTok3nAbCdEfGhIjKlMnOpQrStUv";
const SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWCANARYsshQ\n-----END OPENSSH PRIVATE KEY-----\n";

fn home_fixture(real_keys: bool) -> Fixture {
    let f = Fixture::container("pkgtrees", &data("plain.mountinfo"), &data("plain.status"));
    f.file("proc/self/environ", "PATH=/usr/bin:/bin\0HOME=/home/dev\0");
    f.file(
        "etc/passwd",
        "root:x:0:0:root:/root:/bin/sh\ndev:x:1000:1000::/home/dev:/bin/bash\n",
    );
    let key = pem_key();
    let py = "home/dev/.pyenv/versions/3.11.2/lib/python3.11";
    f.file(&format!("{py}/test/regrtest.py"), "");
    for k in ["keycert.pem", "keycert2.pem", "ssl_key.pem"] {
        f.file(&format!("{py}/test/{k}"), &key);
    }
    f.file(&format!("{py}/site-packages/moto/moto_proxy/ca.key"), &key);
    // A cargo home somewhere else than ~/.cargo: not pruned by name, known by layout.
    f.file(
        "home/dev/tools/cargo/registry/index/index.crates.io-1/config.json",
        "{}",
    );
    f.file(
        "home/dev/tools/cargo/registry/src/index.crates.io-1/openssl-0.10.0/test/key.pem",
        &key,
    );
    // A Go project's vendor directory, beside its lockfile.
    f.file("home/dev/proj/go.sum", "");
    f.file(
        "home/dev/proj/vendor/github.com/x/y/testdata/server.key",
        &key,
    );
    // The cache probe still sees ~/.cargo/registry as a cache.
    f.file(
        "home/dev/.cargo/registry/cache/index.crates.io-1/a-1.0.0.crate",
        "x",
    );
    // Layout without its marker: not CPython's suite, so a credential.
    f.file("home/dev/notpython/lib/python3.11/test/keycert.pem", &key);
    f.dir("workspace");
    if real_keys {
        f.file("home/dev/.ssh/id_ed25519", SSH_KEY);
        f.file(
            "home/dev/.npmrc",
            &format!("//registry.npmjs.org/:_authToken={NPM_TOKEN}\n"),
        );
        f.file("workspace/deploy.key", &key);
    }
    f
}

fn by_code<'a>(r: &'a crate::common::fixture::Run, code: &str) -> Vec<&'a Value> {
    r.findings()
        .into_iter()
        .filter(|f| f["code"] == code)
        .collect()
}

#[test]
fn package_trees_are_one_finding_each_and_real_keys_stay_high() {
    let f = home_fixture(true);
    let r = f.run(&["--workspace", "/workspace", "--fail-on", "none"]);
    let trees = by_code(&r, "secret.package-data");
    let mut got: Vec<(String, u64, String)> = trees
        .iter()
        .map(|t| {
            (
                t["subject"].as_str().unwrap().to_string(),
                t["evidence"]["files"].as_u64().unwrap(),
                t["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (
                "/home/dev/.pyenv/versions/3.11.2/lib".into(),
                4,
                "info".into()
            ),
            ("/home/dev/proj/vendor".into(), 1, "info".into()),
            (
                "/home/dev/tools/cargo/registry/src".into(),
                1,
                "info".into()
            ),
        ],
        "{:#?}",
        r.pairs()
    );
    let py = trees
        .iter()
        .find(|t| t["evidence"]["kind"] == "python-install")
        .unwrap();
    assert_eq!(py["evidence"]["kinds"]["private-key"], 4);
    assert_eq!(py["evidence"]["manager"], "pyenv");
    assert_eq!(py["evidence"]["examples"].as_array().unwrap().len(), 3);
    // Not one secret.file from inside a tree.
    let files: Vec<(String, String)> = by_code(&r, "secret.file")
        .iter()
        .map(|f| {
            (
                f["subject"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (s, _) in &files {
        for t in &got {
            assert!(!s.starts_with(&t.0), "{s} is package data: {files:?}");
        }
    }
    for real in [
        "/home/dev/.ssh/id_ed25519",
        "/home/dev/.npmrc",
        "/workspace/deploy.key",
        "/home/dev/notpython/lib/python3.11/test/keycert.pem",
    ] {
        assert!(
            files.iter().any(|(s, sev)| s == real && sev == "high"),
            "{real} must stay a high secret.file: {files:?}"
        );
    }
    // The package data never lowers the secret boundary; the real keys do.
    let sb = control(&r.json, "secret-boundary");
    assert_eq!(sb["score"], 0, "{sb}");
    // The cache probe still lists ~/.cargo/registry.
    let caches = r.json["inventory"]["caches"].to_string();
    assert!(caches.contains("/home/dev/.cargo/registry"), "{caches}");
    // No output holds a byte of a key or token.
    for fmt in ["json", "text", "sarif", "junit"] {
        let out = Command::new(BIN)
            .args([
                "--root",
                f.dir.to_str().unwrap(),
                "--workspace",
                "/workspace",
            ])
            .args(["--format", fmt, "--verbose", "--fail-on", "none"])
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&out.stdout);
        for c in [CANARY, NPM_TOKEN, "CANARYsshQ"] {
            assert!(!s.contains(c), "{fmt} output holds {c}");
        }
    }

    // Without the real keys: nothing high, and the boundary scores 2.
    let f = home_fixture(false);
    let r = f.run(&["--workspace", "/workspace"]);
    let high: Vec<_> = r
        .findings()
        .into_iter()
        .filter(|x| x["code"].as_str().unwrap().starts_with("secret.") && x["severity"] == "high")
        .map(|x| x["subject"].clone())
        .collect();
    assert_eq!(
        high,
        vec![Value::from(
            "/home/dev/notpython/lib/python3.11/test/keycert.pem"
        )],
        "only the key outside any package layout is high"
    );
    assert_eq!(by_code(&r, "secret.package-data").len(), 3);
}

fn control<'a>(json: &'a Value, key: &str) -> &'a Value {
    json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == key)
        .unwrap()
}

fn text(root: &Path, extra: &[&str]) -> String {
    let out = Command::new(BIN)
        .args([
            "--root",
            root.to_str().unwrap(),
            "--workspace",
            "/workspace",
        ])
        .args(["--format", "text", "--fail-on", "none"])
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_text_report_groups_a_code_and_verbose_lists_each() {
    let f = home_fixture(true);
    let short = text(&f.dir, &[]);
    let long = text(&f.dir, &["--verbose"]);
    // Four high secret.file findings: one entry with the count and three subjects.
    let entry: Vec<&str> = short
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("secret.file"))
        .collect();
    assert_eq!(entry.len(), 1, "{short}");
    assert!(entry[0].contains("secret.file (4)"), "{}", entry[0]);
    assert!(
        short.contains("and 1 more (--verbose lists them)"),
        "{short}"
    );
    let json = f.run(&["--workspace", "/workspace", "--fail-on", "none"]);
    let failing: std::collections::BTreeSet<&str> = json
        .findings()
        .into_iter()
        .filter(|x| x["status"] == "fail")
        .map(|x| x["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        short.matches("fix: ").count(),
        failing.len(),
        "one fix per code: {short}"
    );
    assert!(short.contains("secret.package-data (3)"), "{short}");
    // --verbose: every finding on its own line, with its message.
    for s in [
        "/home/dev/.ssh/id_ed25519",
        "/home/dev/.npmrc",
        "/workspace/deploy.key",
        "/home/dev/notpython/lib/python3.11/test/keycert.pem",
    ] {
        assert!(long.contains(&format!("secret.file  {s}")), "{long}");
    }
    assert!(short.lines().count() < long.lines().count());
    for out in [&short, &long] {
        assert!(!out.contains(CANARY) && !out.contains(NPM_TOKEN));
        assert!(
            !out.contains('\x1b'),
            "no colour with NO_COLOR or off a terminal"
        );
    }
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args([
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

fn have_git(test: &str) -> bool {
    if Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    skip_or_fail(test, "git is not installed");
    false
}

/// A live run (git status needs a live system) on `ws`, with a policy that
/// denies ~/.ssh and ~/.aws.
fn live(ws: &Path) -> Value {
    let pol = ws.parent().unwrap().join(format!(
        "{}.toml",
        ws.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&pol, "[workspace]\ndeny = [\"~/.ssh\", \"~/.aws\"]\n").unwrap();
    let out = Command::new(BIN)
        .args(["--format", "json", "--fail-on", "none", "--timeout", "20s"])
        .arg("--workspace")
        .arg(ws)
        .arg("--policy")
        .arg(&pol)
        .output()
        .unwrap();
    crate::common::dump::report(&out.stdout);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn git_state_of_clean_dirty_worktree_and_detached_repositories() {
    if !have_git("git_state_of_clean_dirty_worktree_and_detached_repositories") {
        return;
    }
    let base = TempPath::dir("gitstate").unwrap();
    let main = base.path.join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("a.txt"), "a\n").unwrap();
    git(&main, &["add", "a.txt"]);
    git(&main, &["commit", "-qm", "one"]);
    // The branch's commit then lives only in packed-refs.
    git(&main, &["pack-refs", "--all"]);
    let head = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&main)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();

    // Clean, on main.
    let r = live(&main);
    let repo = &r["inventory"]["repository"];
    assert_eq!(repo["path"], main.to_str().unwrap(), "{repo}");
    assert_eq!(repo["kind"], "repository");
    assert_eq!(repo["branch"], "main");
    assert_eq!(repo["detached"], false);
    assert_eq!(repo["head_commit"], head.as_str());
    assert_eq!(repo["head_source"], "packed-refs");
    assert_eq!(repo["status"]["state"], "clean", "{repo}");
    let rs = control(&r, "repo-scope");
    let reason = rs["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("{} (git, branch main, clean)", main.display())),
        "{reason}"
    );
    assert!(
        reason.contains("the policy denies ~/.ssh, ~/.aws"),
        "{reason}"
    );

    // A linked worktree, with its id from .git's gitdir line.
    let wt = base.path.join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    let r = live(&wt);
    let repo = &r["inventory"]["repository"];
    assert_eq!(repo["kind"], "linked-worktree", "{repo}");
    assert_eq!(repo["worktree_id"], "wt");
    assert_eq!(repo["branch"], "feature");
    assert_eq!(repo["head_commit"], head.as_str());
    assert_eq!(
        repo["common_dir"]
            .as_str()
            .map(|c| c.trim_end_matches('/').ends_with("main/.git")),
        Some(true),
        "{repo}"
    );
    assert_eq!(repo["status"]["state"], "clean", "{repo}");
    assert!(
        control(&r, "repo-scope")["reason"]
            .as_str()
            .unwrap()
            .contains("git worktree wt, branch feature, clean"),
        "{}",
        control(&r, "repo-scope")["reason"]
    );

    // Detached HEAD.
    git(&main, &["checkout", "-q", "--detach"]);
    let r = live(&main);
    let repo = &r["inventory"]["repository"];
    assert_eq!(repo["detached"], true, "{repo}");
    assert!(repo["branch"].is_null());
    assert_eq!(repo["head_commit"], head.as_str());
    assert!(
        control(&r, "repo-scope")["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("detached at {}", &head[..12])),
        "{}",
        control(&r, "repo-scope")["reason"]
    );

    // Dirty: a modified file and an untracked one. Not "clean" anywhere.
    std::fs::write(main.join("a.txt"), "changed\n").unwrap();
    std::fs::write(main.join("new.txt"), "new\n").unwrap();
    let before = podman::tree_hash(&main.join(".git"));
    let r = live(&main);
    assert_eq!(
        before,
        podman::tree_hash(&main.join(".git")),
        "the status changed nothing in .git"
    );
    let st = &r["inventory"]["repository"]["status"];
    assert_eq!(st["state"], "dirty", "{st}");
    assert_eq!(
        (
            st["modified"].as_u64(),
            st["untracked"].as_u64(),
            st["staged"].as_u64()
        ),
        (Some(1), Some(1), Some(0))
    );
    let rs = control(&r, "repo-scope");
    let reason = rs["reason"].as_str().unwrap();
    assert!(
        reason.contains("dirty: 1 modified, 1 untracked"),
        "{reason}"
    );
    assert!(!reason.contains("clean"), "{reason}");
    assert!(rs["score"].as_u64() != Some(2), "{rs}");
    assert!(
        !rs["level"].as_str().unwrap_or("").contains("clean"),
        "{rs}"
    );
}

#[test]
fn git_state_under_root_is_read_but_never_run() {
    let f = Fixture::container("gitroot", &mountinfo_with(&[]), &data("plain.status"));
    f.file("proc/self/environ", "PATH=/usr/bin\0");
    let oid = "0123456789abcdef0123456789abcdef01234567";
    f.file("ws/.git/HEAD", "ref: refs/heads/dev\n");
    f.file("ws/.git/refs/heads/dev", &format!("{oid}\n"));
    f.file("ws/.git/config", "[core]\n\tbare = false\n");
    f.file("wt/.git", "gitdir: /ws/.git/worktrees/wt-7\n");
    f.file("ws/.git/worktrees/wt-7/HEAD", &format!("{oid}\n"));
    f.file("ws/.git/worktrees/wt-7/commondir", "../..\n");
    let r = f.run(&["--workspace", "/ws"]);
    let repo = &r.json["inventory"]["repository"];
    assert_eq!(
        (repo["branch"].as_str(), repo["head_commit"].as_str()),
        (Some("dev"), Some(oid))
    );
    assert_eq!(repo["status"]["state"], "unknown");
    assert!(
        repo["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("--root"),
        "{repo}"
    );
    let rs = control(&r.json, "repo-scope");
    assert!(
        rs["score"].as_u64() != Some(2),
        "an unknown status is not clean: {rs}"
    );
    assert!(
        rs["reason"].as_str().unwrap().contains("status unknown"),
        "{rs}"
    );
    let r = f.run(&["--workspace", "/wt"]);
    let repo = &r.json["inventory"]["repository"];
    assert_eq!(repo["kind"], "linked-worktree", "{repo}");
    assert_eq!(repo["worktree_id"], "wt-7");
    assert_eq!(repo["detached"], true);
    assert_eq!(repo["head_commit"], oid);
}

#[test]
fn tool_versions_come_from_package_files_under_root() {
    let f = Fixture::container("toolfiles", &mountinfo_with(&[]), &data("plain.status"));
    f.file("proc/self/environ", "PATH=/usr/bin\0");
    f.file(
        "usr/share/nodejs/npm/bin/npm-cli.js",
        "#!/usr/bin/env node\n",
    );
    f.file(
        "usr/share/nodejs/npm/package.json",
        r#"{"name": "npm", "version": "9.2.0"}"#,
    );
    f.dir("usr/bin");
    std::os::unix::fs::symlink("../share/nodejs/npm/bin/npm-cli.js", f.path("usr/bin/npm"))
        .unwrap();
    let r = f.run_env(&[], &[("PATH", "/usr/bin")]);
    let tools = r.json["inventory"]["repro"]["tools"].as_array().unwrap();
    let npm = tools
        .iter()
        .find(|t| t["tool"] == "npm")
        .expect("npm on PATH");
    assert_eq!(npm["status"], "from-file", "{npm}");
    assert_eq!(npm["version"], "9.2.0");
    assert_eq!(npm["version_file"], "/usr/share/nodejs/npm/package.json");
}

/// The privileged container's report in one screen: every code, at most 80
/// lines; --verbose lists every finding.
#[test]
fn privileged_text_report_fits_one_screen() {
    let Some(img) = setup("privileged_text_report_fits_one_screen") else {
        return;
    };
    let run = |fmt: &str, extra: &[&str]| -> String {
        let name = podman::unique("quiet");
        let mut cmd = podman::podman();
        cmd.args([
            "run",
            "--rm",
            "--name",
            &name,
            "--privileged",
            "--network",
            "none",
        ])
        .arg(img)
        .args([IN_IMAGE, "--format", fmt])
        .args(extra);
        podman::run_bounded(cmd, RUN_TIMEOUT, Some(&name))
            .unwrap()
            .stdout
    };
    let json: Value = serde_json::from_str(&run("json", &[])).unwrap();
    let findings = json["findings"].as_array().unwrap();
    let codes: std::collections::BTreeSet<&str> = findings
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(
        findings.len() > 40,
        "a privileged container has many findings: {}",
        findings.len()
    );
    let short = run("text", &[]);
    assert!(
        short.lines().count() <= 80,
        "{} lines:\n{short}",
        short.lines().count()
    );
    for c in &codes {
        assert!(
            short.contains(&format!("  {c} ")) || short.contains(&format!("  {c}  ")),
            "{c} missing:\n{short}"
        );
    }
    let long = run("text", &["--verbose"]);
    for f in findings {
        let line = format!(
            "{}  {}",
            f["code"].as_str().unwrap(),
            f["subject"].as_str().unwrap()
        );
        assert!(long.contains(&line), "--verbose lacks {line}");
    }
}
