//! The command line as a user meets it: usage errors, policy errors with
//! file and line, explain and list-checks, output files and colour.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");
const CODES: &str = include_str!("../../probes/codes.toml");

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
    let v = fs::read(&out).unwrap();
    crate::common::dump::report(&v);
    let v: serde_json::Value = serde_json::from_slice(&v).unwrap();
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

/// Runs against an empty fixture root with `-o out`, JSON, never failing on
/// findings.
fn report_to(root: &std::path::Path, out: &std::path::Path) -> Output {
    Command::new(BIN)
        .args(["--format", "json", "--fail-on", "none", "-o"])
        .arg(out)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap()
}

fn is_report(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v["summary"].is_object())
}

#[test]
fn output_file_replaces_a_planted_symlink_and_leaves_no_temporary_file() {
    let d = tmp("outlink");
    let root = d.join("root");
    fs::create_dir_all(&root).unwrap();
    // Someone else's file, and a symlink to it where the report goes (a
    // shared /tmp): the report must not be written through it.
    let victim = d.join("victim");
    fs::write(&victim, "not yours\n").unwrap();
    let out = d.join("report.json");
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    let o = report_to(&root, &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "not yours\n");
    let meta = fs::symlink_metadata(&out).unwrap();
    assert!(meta.is_file(), "the symlink was replaced by the report");
    assert!(is_report(&fs::read(&out).unwrap()));
    // An existing report is replaced whole, and keeps its mode.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).unwrap();
    let o = report_to(&root, &out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(is_report(&fs::read(&out).unwrap()));
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let names: Vec<String> = fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut want = vec!["report.json", "root", "victim"];
    let mut got: Vec<&str> = names.iter().map(String::as_str).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "no temporary file is left beside the report");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn output_to_a_stream_is_written_through() {
    let d = tmp("outfifo");
    let fifo = d.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(&fifo).unwrap())
    };
    let o = report_to(&d, &fifo);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(is_report(&reader.join().unwrap()));
    use std::os::unix::fs::FileTypeExt;
    let still = fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(still.is_fifo(), "the FIFO was not replaced by a file");
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn output_file_in_a_directory_that_refuses_new_files_is_written_in_place() {
    // A report file bind-mounted on its own: its directory takes no new
    // file, the file itself is writable. Modelled by a read-only directory
    // and a non-root user, so only where the test can drop to one; it runs
    // a copy of the binary in a place that user can reach.
    let Some(place) = crate::common::other_user::nobody(
        "output_file_in_a_directory_that_refuses_new_files_is_written_in_place",
    ) else {
        return;
    };
    use std::os::unix::fs::{chown, PermissionsExt};
    let d = place.subdir("outro");
    let dir = d.join("ro");
    fs::create_dir_all(&dir).unwrap();
    let out = dir.join("report.json");
    fs::write(&out, "old").unwrap();
    chown(&out, Some(place.uid), Some(place.uid)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let o = place
        .command()
        .args(["--format", "json", "--fail-on", "none", "-o"])
        .arg(&out)
        .arg("--root")
        .arg(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(is_report(&fs::read(&out).unwrap()));
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn docs_table_lists_every_code_as_the_catalog_does() {
    let readme = include_str!("../../docs/checks.md");
    let rows: Vec<Vec<&str>> = readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let cat = selfprobe::finding::catalog();
    assert_eq!(rows.len(), cat.len(), "one docs/checks.md row per code");
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

/// Standard output whose reader is already gone: the write end of a pipe
/// whose read end is closed, as `| head -1` leaves it once head has its line.
fn closed_pipe() -> std::process::Stdio {
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    std::process::Stdio::from(w)
}

#[test]
fn list_checks_into_a_closed_pipe_ends_quietly_with_0() {
    let o = Command::new(BIN)
        .arg("list-checks")
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        o.stderr.is_empty(),
        "nothing to say to a reader that left: {}",
        stderr(&o)
    );
    // The shell pipeline itself, with pipefail: head's line, and status 0.
    let sh = Command::new("bash")
        .args(["-c", "set -o pipefail; \"$0\" list-checks | head -1"])
        .arg(BIN)
        .output()
        .unwrap();
    assert_eq!(sh.status.code(), Some(0), "{}", stderr(&sh));
    assert_eq!(String::from_utf8_lossy(&sh.stdout).lines().count(), 1);
    assert!(sh.stderr.is_empty(), "{}", stderr(&sh));
}

#[test]
fn a_report_into_a_closed_pipe_keeps_the_run_s_exit_code() {
    let d = tmp("closedpipe");
    let o = Command::new(BIN)
        .args(["--format", "json", "--fail-on", "none", "--root"])
        .arg(&d)
        .stdout(closed_pipe())
        .output()
        .unwrap();
    // An empty tree: probes incomplete, so the run's own code is 3.
    let again = run(&[
        "--format",
        "json",
        "--fail-on",
        "none",
        "--root",
        d.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), again.status.code(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn list_checks_into_a_full_disk_says_so_and_exits_3() {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(BIN)
        .arg("list-checks")
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.starts_with("selfprobe: cannot write to standard output: ")
            && e.contains("No space left"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");
}

/// Zero-width, bidi and tag characters in a name hide or reorder what a
/// reader sees: the text report and stderr show each one escaped.
#[test]
fn invisible_and_bidi_characters_are_escaped_in_text_and_on_stderr() {
    let hidden = "a\u{200B}b\u{2060}c\u{FEFF}d\u{AD}e\u{202E}f\u{E0041}g";
    let shown = "a\\u{200b}b\\u{2060}c\\u{feff}d\\u{ad}e\\u{202e}f\\u{e0041}g";
    let fx = crate::common::fixture::Fixture::container(
        "invisible",
        &crate::common::fixture::mountinfo_with(&[&format!(
            "90 80 254:0 /srv/{hidden} /mnt/{hidden} rw,relatime - ext4 /dev/vda rw"
        )]),
        &crate::common::fixture::data("plain.status"),
    );
    fx.dir(&format!("mnt/{hidden}"));
    let o = Command::new(BIN)
        .args(["--format", "text", "--fail-on", "none", "--root"])
        .arg(&fx.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("/mnt/{shown}")), "{text}");
    for c in [
        '\u{200B}',
        '\u{2060}',
        '\u{FEFF}',
        '\u{AD}',
        '\u{202E}',
        '\u{E0041}',
    ] {
        assert!(!text.contains(c), "{:?} reached the terminal", c);
    }
    // On stderr: an error that names the path.
    let missing = fx.path(&format!("{hidden}.toml"));
    let o = Command::new(BIN)
        .arg("--policy")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains(shown), "{e}");
    for c in [
        '\u{200B}',
        '\u{2060}',
        '\u{FEFF}',
        '\u{AD}',
        '\u{202E}',
        '\u{E0041}',
    ] {
        assert!(!e.contains(c), "{:?} reached stderr: {e}", c);
    }
}

/// docs/checks.md gives the credential search's budgets as the report shows
/// them (inventory.secrets.search.budget), whatever they are changed to.
#[test]
fn docs_budgets_are_the_report_s() {
    use crate::common::fixture::{data, Fixture};
    let fx = Fixture::container(
        "docs-budgets",
        &data("plain.mountinfo"),
        &data("plain.status"),
    );
    let r = fx.run(&[]);
    let b = &r.json["inventory"]["secrets"]["search"]["budget"];
    let n = |k: &str| {
        let v = b[k]
            .as_u64()
            .unwrap_or_else(|| panic!("budget {k}: {b}"))
            .to_string();
        // 4000000 as the docs write it: 4,000,000.
        let mut out = String::new();
        for (i, c) in v.chars().enumerate() {
            if i > 0 && (v.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    let docs = include_str!("../../docs/checks.md").replace('\n', " ");
    let docs = docs.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        format!(
            "{} entries and depth {} per workspace or host mount",
            n("root_entries"),
            b["root_depth"]
        ),
        format!(
            "{} and depth {} per home",
            n("home_entries"),
            b["home_depth"]
        ),
        format!("{} in all", n("total_entries")),
        format!("opens at most {} files", n("max_checks")),
        format!(
            "{} of the coding agents' own directories",
            b["max_agent_files"]
        ),
    ] {
        assert!(docs.contains(&want), "docs/checks.md does not say {want:?}");
    }
}
