//! Sentences a report says (issue 24): every code's catalog text, and the
//! messages and scorecard reasons of a corpus of fixture runs, have none of
//! the article and agreement errors tests/it/common/sentences.rs catches,
//! and no reason quotes the rubric. The same check runs on every JSON
//! report the rest of the suite gets (common/dump.rs); the corpus here
//! reaches the messages that need a tree made for them (a git credential
//! helper of no known kind, caches, a browser profile, a workspace with
//! a manifest, a machine's own mount table).

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::common::fixture::{data, Fixture, DATA};
use crate::common::sentences::{grammar, report_problems, rubric};

#[test]
fn the_checker_catches_what_it_says_and_passes_what_is_right() {
    for bad in [
        "/etc/gitconfig configures a other credential helper",
        "nothing is mounted from the host; the workspace is no workspace is declared",
        "a inline-shell helper",
        "an store helper",
        "an cache",
        "the the mount",
        "a SSH key",
        "an URL",
    ] {
        assert!(!grammar(bad, &[]).is_empty(), "not caught: {bad}");
    }
    for good in [
        "/etc/gitconfig configures an unrecognised credential helper",
        "nothing is mounted from the host; no workspace is declared",
        "an SSH key, a URL, a user, an hour, a unique id, an MCP server",
        "a Docker container's cgroup; an LXC container",
        "that is the host's",
    ] {
        assert!(
            grammar(good, &[]).is_empty(),
            "{good}: {:?}",
            grammar(good, &[])
        );
    }
    // What a sentence quotes from the system is not judged: a subject or
    // an evidence value may say anything.
    assert!(grammar("a /a/a a a-b path", &["a a-b".into()]).is_empty());
    // A one-word value is the code's word: "a other" with kind "other".
    assert!(!grammar("configures a other helper", &["other".into()]).is_empty());
    // A reason quoting a rubric cell, in a report as the renderer writes it.
    let cell = rubric()[5];
    let report = json!({
        "findings": [{"code": "secret.credential-helper", "subject": "/etc/gitconfig:credential.helper",
                      "message": "/etc/gitconfig configures a other credential helper", "evidence": {}}],
        "scorecard": {"controls": [{"control": "engine-socket", "reason": format!("{cell}: engine.socket-reachable /x"), "level": cell}]}
    });
    let p = report_problems(&report);
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[0].contains("quotes the rubric"), "{p:#?}");
    assert!(p[1].contains("\"a other\""), "{p:#?}");
}

#[test]
fn every_codes_catalog_text_reads_right() {
    let mut bad = Vec::new();
    for c in selfprobe::finding::catalog() {
        for (field, t) in [
            ("title", &c.title),
            ("explain", &c.explain),
            ("remediation", &c.remediation),
        ] {
            for p in grammar(t, &[]) {
                bad.push(format!("{} {field}: {p}: {t}", c.code));
            }
        }
    }
    for k in selfprobe::scorecard::CONTROLS {
        let t = selfprobe::scorecard::explain(k.key).unwrap();
        for p in grammar(&t, &[]) {
            bad.push(format!("explain {}: {p}", k.key));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Runs `f` and returns the findings and controls it printed, for the
/// corpus's coverage line (the check itself is Run::from's).
fn run(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> Value {
    let r = f.run_env(args, env);
    assert!(r.json.is_object(), "no report: {}", r.stderr);
    r.json
}

/// A container tree with much to say: git credential helpers of known and
/// unknown kinds, a credential file, a shell history with a token, caches
/// on the layer and on a host path, a browser profile with session state on
/// a host path, a workspace with a manifest and no lockfile.
fn rich_tree() -> Fixture {
    let host = "501 400 254:1 /srv/cache/pip /root/.cache/pip rw,relatime - ext4 /dev/vda rw\n\
                502 400 254:1 /home/alice/.config/google-chrome /root/.config/google-chrome rw,relatime - ext4 /dev/vda rw\n\
                503 400 254:1 /home/alice/src/app /workspace rw,relatime - ext4 /dev/vda rw\n";
    let f = Fixture::container(
        "words",
        &format!("{}{host}", data("plain.mountinfo")),
        &data("plain.status"),
    );
    f.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    f.file(
        "etc/gitconfig",
        "[credential]\n\thelper = mystery-helper\n[credential \"https://git.example.org\"]\n\thelper = store\n",
    );
    f.file(
        "root/.gitconfig",
        "[credential]\n\thelper = \"!f() { echo password=x; }; f\"\n",
    );
    f.file(
        "root/.git-credentials",
        "https://bob:canaryWordsT0ken@git.example.org\n",
    );
    f.file(
        "root/.bash_history",
        "ls\nexport GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n",
    );
    f.dir("root/.cache/pip/http");
    f.dir("root/.npm/_cacache");
    f.file("root/.config/google-chrome/Default/Cookies", "x");
    f.file("root/.config/google-chrome/Local State", "{}");
    f.file("workspace/Cargo.toml", "[package]\nname = \"w\"\n");
    f.file(
        "workspace/.devcontainer/devcontainer.json",
        "{\"image\": \"debian:12\"}\n",
    );
    f
}

#[test]
fn a_corpus_of_fixture_runs_says_nothing_the_checker_catches() {
    let mut seen_codes = std::collections::BTreeSet::new();
    let mut add = |v: &Value| {
        for f in v["findings"].as_array().into_iter().flatten() {
            seen_codes.insert(f["code"].as_str().unwrap_or("").to_string());
        }
    };
    // Each run is checked as it comes (Run::from → dump::report → check).
    let f = rich_tree();
    add(&run(&f, &["--workspace", "/workspace"], &[]));
    add(&run(&f, &[], &[]));
    let v = run(
        &f,
        &["--workspace", "/workspace"],
        &[("GITHUB_TOKEN", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB")],
    );
    let helper = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["subject"] == "/etc/gitconfig:credential.helper")
        .unwrap_or_else(|| panic!("the unknown helper is reported: {v:#}"));
    assert_eq!(helper["evidence"]["kind"], "other", "{helper:#}");
    add(&v);
    // Every capture under tests/data/captures/mounts, as a container.
    let dir = Path::new(DATA).join("captures/mounts");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        add(&run(&crate::captures::tree(name), &[], &[]));
        // The same table alone: nothing decides the boundary.
        add(&run(&crate::captures::table_only(name), &[], &[]));
    }
    // An empty tree.
    add(&run(&Fixture::bare("words-empty"), &[], &[]));
    eprintln!(
        "sentences: {} codes reported by the corpus: {}",
        seen_codes.len(),
        seen_codes.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    assert!(seen_codes.contains("secret.credential-helper"));
    assert!(seen_codes.contains("cache.shared-writable"));
    assert!(seen_codes.contains("browser.profile"));
}
