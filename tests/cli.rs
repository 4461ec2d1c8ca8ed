//! The command line as a user meets it: usage errors, policy errors with
//! file and line, explain and list-checks, output files and colour.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
const CODES: &str = include_str!("../probes/codes.toml");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("selfprobe-cli-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn malformed_policy_exits_2_with_file_and_line() {
    let d = tmp("badpolicy");
    let p = d.join("selfprobe.toml");
    fs::write(
        &p,
        "[workspace]\npath = \"/w\"\n\n[capabilities]\nallow = [\"CAP_TELEPORT\"]\n",
    )
    .unwrap();
    let o = run(&["--policy", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains(&format!("{}:5:", p.display())), "{e}");
    assert!(e.contains("CAP_TELEPORT") && e.contains("expected"), "{e}");
    assert!(o.stdout.is_empty(), "no report for a policy error");

    fs::write(&p, "[workspace\npath = 1\n").unwrap();
    let o = run(&["--policy", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{}:1:", p.display())),
        "{}",
        stderr(&o)
    );

    fs::write(&p, "[[exception]]\nowner = \"a@b\"\n").unwrap();
    let o = run(&["--policy", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("code"), "{}", stderr(&o));

    let o = run(&["--policy", d.join("missing.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.toml"));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    let o = run(&["--format", "yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("yaml"), "{}", stderr(&o));
    assert_eq!(run(&["--fail-on", "severe"]).status.code(), Some(2));
    assert_eq!(run(&["--timeout", "soon"]).status.code(), Some(2));
    assert_eq!(
        run(&["--root", "/nonexistent/selfprobe"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["--root", "relative"]).status.code(), Some(2));
    assert_eq!(run(&["--no-such-flag"]).status.code(), Some(2));
    let o = run(&["explain", "mount.nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("list-checks"));
}

#[test]
fn explain_and_list_checks_read_the_catalog() {
    let o = run(&["list-checks"]);
    assert_eq!(o.status.code(), Some(0));
    let list = String::from_utf8_lossy(&o.stdout);
    let codes: Vec<&str> = selfprobe::finding::catalog()
        .iter()
        .map(|c| c.code.as_str())
        .collect();
    assert_eq!(codes.len(), CODES.matches("[[code]]").count());
    assert!(codes.len() > 50);
    for c in &codes {
        assert!(
            list.lines().any(|l| l.starts_with(&format!("{c} "))),
            "{c} missing from list-checks"
        );
        let o = run(&["explain", c]);
        assert_eq!(o.status.code(), Some(0));
        let t = String::from_utf8_lossy(&o.stdout);
        assert!(
            t.starts_with(&format!("{c}: ")) && t.contains("Remediation:"),
            "{t}"
        );
    }
    let t =
        String::from_utf8_lossy(&run(&["explain", "engine.socket-reachable"]).stdout).into_owned();
    assert!(t.contains("severity: critical"), "{t}");
}

#[test]
fn version_and_help() {
    let o = run(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains(env!("CARGO_PKG_VERSION")));
    let o = run(&["--help"]);
    let h = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--format",
        "--output",
        "--workspace",
        "--policy",
        "--fail-on",
        "--timeout",
        "--root",
        "--write-test",
    ] {
        assert!(h.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn output_file_and_no_color() {
    let d = tmp("out");
    let out = d.join("report.json");
    let o = Command::new(BIN)
        .args([
            "run",
            "--format",
            "json",
            "--fail-on",
            "none",
            "-o",
            out.to_str().unwrap(),
            "--root",
        ])
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["summary"]["exit_code"], 0);
    // Not a terminal: never colour, whatever NO_COLOR says.
    let o = Command::new(BIN)
        .arg("--root")
        .arg(&d)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(!o.stdout.contains(&0x1b));
    // A fixture root: the test never probes the machine it runs on.
    let o = run(&[
        "-o",
        "/nonexistent/dir/report.json",
        "--fail-on",
        "none",
        "--root",
        d.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "an unwritable report is a probe failure"
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn readme_table_lists_every_code_as_the_catalog_does() {
    let readme = include_str!("../README.md");
    let rows: Vec<Vec<&str>> = readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let cat = selfprobe::finding::catalog();
    assert_eq!(rows.len(), cat.len(), "one README row per code");
    for (row, c) in rows.iter().zip(cat) {
        assert_eq!(row[0], format!("`{}`", c.code));
        assert_eq!(row[1], c.severity.as_str(), "{}", c.code);
        assert!(row[2].starts_with(&format!("{} ", c.phase)), "{}", c.code);
        assert_eq!(
            row[3],
            if c.control.is_empty() {
                "-"
            } else {
                c.control.as_str()
            },
            "{}",
            c.code
        );
        assert_eq!(row[4], c.title, "{}", c.code);
    }
}
