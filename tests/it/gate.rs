//! The gate without containers (issue 31; the real ENTRYPOINT runs are
//! tests/it/containers_gate.rs): `selfprobe [OPTIONS] -- COMMAND` on fixture
//! trees (`--root`), with a shell command as the agent's stand-in.
//!
//! - a clean tree: the command runs as this very process (its PID is the
//!   one the test started), with its own exit code and output; the report
//!   is never on its standard output;
//! - a tree with a finding at --fail-on: exit 1, the command never ran, and
//!   the reason fits one screen (lines and columns counted);
//! - a check cut by --timeout: exit 3, the command never ran;
//! - usage errors, a missing or non-executable command: exit 2, 127, 126,
//!   and nothing started;
//! - what the command inherits, compared with the same command started
//!   without the gate by the same parent: the signal mask and ignored
//!   signals (SIGPIPE included, which Rust's runtime ignores), the
//!   descriptors less the key's, and the environment less
//!   SELFPROBE_SIGNING_KEY, no byte of the key anywhere.

use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::fixture::{data, Fixture, BIN};
use crate::common::keys::{leak_patterns, leaks, openssl_key};
use crate::common::podman::TempPath;

/// The most lines and columns of the refusal (src/report/gate.rs): a
/// screen of 24 lines, one left for the prompt.
const SCREEN_LINES: usize = 23;
const SCREEN_COLUMNS: usize = 80;

/// The clean capture of tests/it/fixtures.rs: nothing at high, exit 0.
fn clean() -> Fixture {
    let status = data("clean.status").replace("NoNewPrivs:\t0", "NoNewPrivs:\t1");
    let f = Fixture::container("gate-clean", &data("clean.mountinfo"), &status);
    f.dir("workspace");
    f
}

/// The plain podman container: root without a user namespace (high).
fn plain() -> Fixture {
    Fixture::container(
        "gate-plain",
        &data("plain.mountinfo"),
        &data("plain.status"),
    )
}

/// `selfprobe --root TREE --workspace /workspace OPTS -- CMD...`
fn gate(f: &Fixture, opts: &[&str], cmd: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--root")
        .arg(&f.dir)
        .args(["--workspace", "/workspace"])
        .args(opts)
        .arg("--")
        .args(cmd)
        .stdin(Stdio::null());
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap()).unwrap()
}

/// The refusal's lines: from the one that starts it to the end of stderr.
fn refusal(stderr: &str) -> Vec<&str> {
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("selfprobe: refused to start "))
        .unwrap_or_else(|| panic!("no refusal on stderr:\n{stderr}"));
    lines[at..].to_vec()
}

fn fits_one_screen(lines: &[&str]) {
    assert!(
        lines.len() <= SCREEN_LINES,
        "{} lines, more than a screen:\n{}",
        lines.len(),
        lines.join("\n")
    );
    for l in lines {
        assert!(
            l.chars().count() <= SCREEN_COLUMNS,
            "wider than {SCREEN_COLUMNS} columns: {l:?}"
        );
    }
}

#[test]
fn a_clean_workspace_starts_the_command_as_this_very_process() {
    let f = clean();
    let d = TempPath::dir("gate-run").unwrap();
    let marker = d.path.join("ran");
    let script = format!(
        "echo \"pid $$\"; echo \"args $#: $1|$2\"; touch {}; exit 7",
        marker.display()
    );
    let child = gate(&f, &[], &["sh", "-c", &script, "sh", "a b", "c"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(7), "the command's own code\n{err}");
    // Its output alone on stdout: the report went to stderr.
    assert_eq!(out, format!("pid {pid}\nargs 2: a b|c\n"), "stderr:\n{err}");
    assert!(marker.exists());
    assert!(
        err.starts_with("selfprobe "),
        "the text report first:\n{err}"
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("selfprobe: nothing at or above --fail-on high (")
            && last.ends_with("; report: above, on standard error; starting sh"),
        "{last}"
    );

    // With -o, the report is in the file and stderr is one line.
    let report = d.path.join("report.json");
    fs::remove_file(&marker).unwrap();
    let o = gate(
        &f,
        &["--format", "json", "-o", report.to_str().unwrap()],
        &["sh", "-c", &format!("touch {}", marker.display())],
    )
    .output()
    .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.ends_with(&format!("; report: {}; starting sh\n", report.display())),
        "{err}"
    );
    assert!(marker.exists());
    assert_eq!(json(&report)["summary"]["exit_code"], 0);

    // --fail-on none gates on nothing: the command starts on the plain tree.
    let p = plain();
    fs::remove_file(&marker).unwrap();
    let o = gate(
        &p,
        &["--fail-on", "none", "-o", report.to_str().unwrap()],
        &["touch", marker.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(marker.exists());
    assert!(text(&o.stderr).starts_with("selfprobe: --fail-on none, so nothing gates ("));
}

#[test]
fn a_finding_at_fail_on_refuses_in_one_screen_and_starts_nothing() {
    let f = plain();
    let d = TempPath::dir("gate-refuse").unwrap();
    let marker = d.path.join("ran");
    let report = d.path.join("report.json");
    let touch = format!("touch {}", marker.display());
    let o = gate(
        &f,
        &["--format", "json", "-o", report.to_str().unwrap()],
        &["sh", "-c", &touch],
    )
    .output()
    .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!marker.exists(), "the command ran");
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    let rep = json(&report);
    assert_eq!(rep["summary"]["exit_code"], 1);
    let gating = rep["summary"]["gating"].as_u64().unwrap();
    // With -o, stderr is the refusal and nothing else.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines, refusal(&err), "{err}");
    fits_one_screen(&lines);
    assert_eq!(
        lines[0],
        format!("selfprobe: refused to start sh: {gating} finding(s) at or above --fail-on high")
    );
    let entry = lines
        .iter()
        .position(|l| l.starts_with("  HIGH     priv.root-without-userns uid 0"))
        .unwrap_or_else(|| panic!("no entry for priv.root-without-userns:\n{err}"));
    assert!(lines[entry + 1].starts_with("           fix: "), "{err}");
    assert_eq!(
        lines[lines.len() - 2],
        format!("report: {}", report.display())
    );
    assert_eq!(
        lines[lines.len() - 1],
        "the fix in full: selfprobe explain CODE; sh was not started (exit 1)"
    );

    // Without -o the report comes first on stderr, then the same reason.
    let o = gate(&f, &[], &["sh", "-c", &touch]).output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(!marker.exists(), "the command ran");
    assert!(o.stdout.is_empty());
    assert!(err.starts_with("selfprobe "), "{err}");
    let lines = refusal(&err);
    fits_one_screen(&lines);
    assert_eq!(lines[lines.len() - 2], "report: above, on standard error");
}

#[test]
fn a_check_that_did_not_finish_refuses_with_exit_3() {
    let f = clean();
    let d = TempPath::dir("gate-cut").unwrap();
    let marker = d.path.join("ran");
    let report = d.path.join("report.json");
    let o = gate(
        &f,
        &[
            "--timeout",
            "1ms",
            "--format",
            "json",
            "-o",
            report.to_str().unwrap(),
        ],
        &["touch", marker.to_str().unwrap()],
    )
    .output()
    .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(!marker.exists(), "could not check is not a pass");
    let rep = json(&report);
    assert!(
        !rep["run"]["unfinished"].as_array().unwrap().is_empty(),
        "{}",
        rep["run"]
    );
    let lines = refusal(&err);
    fits_one_screen(&lines);
    assert!(
        lines[0].starts_with("selfprobe: refused to start touch: the check did not finish"),
        "{err}"
    );
    assert!(lines[1].starts_with("  --timeout 1 ms passed before these probes finished: "));
    assert!(lines
        .last()
        .unwrap()
        .ends_with("touch was not started (exit 3)"));
}

#[test]
fn usage_errors_and_commands_that_cannot_start_start_nothing() {
    let f = clean();
    let d = TempPath::dir("gate-usage").unwrap();
    let marker = d.path.join("ran");
    let touch = ["touch", marker.to_str().unwrap()];
    let run = |c: &mut Command| -> Output { c.output().unwrap() };

    // `--` with nothing after it.
    let o = run(Command::new(BIN).args(["--root"]).arg(&f.dir).arg("--"));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("`--` ends selfprobe's options and must be followed by the command to start"),
        "{}",
        text(&o.stderr)
    );
    let policy = d.path.join("policy.toml");
    fs::write(&policy, "[workspace\n").unwrap();
    for opts in [
        vec!["--fail-on", "severe"],
        vec!["--policy", policy.to_str().unwrap()],
        vec!["--remove-self"],
        vec!["--sign-key", "/nonexistent/key", "--attest", "/tmp/x.json"],
    ] {
        let o = run(&mut gate(&f, &opts, &touch));
        assert_eq!(o.status.code(), Some(2), "{opts:?}: {}", text(&o.stderr));
        assert!(!marker.exists(), "{opts:?}: the command ran");
        assert!(o.stdout.is_empty());
    }
    let o = run(Command::new(BIN)
        .args(["canary", "plant", "--root"])
        .arg(&f.dir)
        .arg("--")
        .args(touch));
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("canary plant starts no command"));
    assert!(!marker.exists());

    // Nothing to start: 127 at once, before anything is probed (env(1)'s
    // codes), and 126 for a file that cannot be run.
    let t = Instant::now();
    let o = run(&mut gate(&f, &[], &["selfprobe-test-no-such-agent", "x"]));
    assert_eq!(o.status.code(), Some(127));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "no report, one line: {err}");
    assert!(
        err.starts_with(
            "selfprobe: cannot start \"selfprobe-test-no-such-agent\": not found (PATH="
        ),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let data_file = d.path.join("data.txt");
    fs::write(&data_file, "not a program\n").unwrap();
    let o = run(&mut gate(&f, &[], &[data_file.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(126), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no execute permission"));
}

/// `--remove-self` with a command is refused, and the binary stays (it
/// removed itself on any exit before).
#[test]
fn remove_self_with_a_command_leaves_the_binary() {
    let d = TempPath::dir("gate-rm").unwrap();
    let copy = d.path.join("selfprobe");
    fs::copy(BIN, &copy).unwrap();
    let f = clean();
    let o = Command::new(&copy)
        .arg("--root")
        .arg(&f.dir)
        .args(["--remove-self", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(copy.exists(), "the binary removed itself");
}

// ---------------------------------------------------------------------------
// What the command inherits.

/// How the parent starts the program: signals ignored and blocked, and
/// descriptors (number, file) left open for it.
#[derive(Clone, Default)]
struct Parent {
    ignore: Vec<nix::sys::signal::Signal>,
    block: Vec<nix::sys::signal::Signal>,
    fds: Vec<(i32, PathBuf)>,
    stdin: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl Parent {
    fn start(&self, mut c: Command) -> Output {
        // Each file moved to a number above any target first (still
        // close-on-exec), so that no dup2 below clobbers another's source
        // or is a no-op that keeps the flag.
        let files: Vec<(i32, std::os::fd::OwnedFd)> = self
            .fds
            .iter()
            .map(|(n, p)| {
                let f = fs::File::open(p).unwrap();
                let high =
                    nix::fcntl::fcntl(&f, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(100)).unwrap();
                // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor we own.
                (*n, unsafe { std::os::fd::FromRawFd::from_raw_fd(high) })
            })
            .collect();
        let raw: Vec<(i32, i32)> = files.iter().map(|(n, f)| (*n, f.as_raw_fd())).collect();
        let (ignore, block) = (self.ignore.clone(), self.block.clone());
        for (k, v) in &self.env {
            c.env(k, v);
        }
        match &self.stdin {
            Some(p) => c.stdin(fs::File::open(p).unwrap()),
            None => c.stdin(Stdio::null()),
        };
        // SAFETY: dup2, signal and sigprocmask are async-signal-safe; they
        // are the only calls made between fork and exec (std has reset the
        // mask and SIGPIPE just before).
        unsafe {
            c.pre_exec(move || {
                use nix::sys::signal::{signal, SigHandler, SigSet, SigmaskHow};
                for (n, fd) in &raw {
                    if nix::libc::dup2(*fd, *n) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                for s in &ignore {
                    signal(*s, SigHandler::SigIgn)?;
                }
                let mut set = SigSet::empty();
                for s in &block {
                    set.add(*s);
                }
                nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
                Ok(())
            });
        }
        let o = c.output().unwrap();
        drop(files);
        o
    }
}

/// The same command started directly and through the gate by the same
/// parent: (direct, gated) outputs.
fn both(f: &Fixture, parent: &Parent, opts: &[&str], cmd: &[&str]) -> (Output, Output) {
    let mut direct = Command::new(cmd[0]);
    direct.args(&cmd[1..]);
    let direct = parent.start(direct);
    let gated = parent.start(gate(f, opts, cmd));
    assert_eq!(
        gated.status.code(),
        Some(0),
        "{cmd:?} through the gate: {}",
        text(&gated.stderr)
    );
    assert_eq!(direct.status.code(), Some(0), "{}", text(&direct.stderr));
    (direct, gated)
}

/// SigBlk and SigIgn of /proc/self/status, as grep printed them.
fn masks(o: &Output) -> (u64, u64) {
    let out = text(&o.stdout);
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or_else(|| panic!("no {name} in {out:?}"))
    };
    (field("SigBlk:"), field("SigIgn:"))
}

/// The open descriptors of the shell the command is, listed by a child of
/// it (`ls -l`), so that the listing opens nothing in the shell itself.
const FDS: &str = "ls -l /proc/$$/fd";

/// `N -> target` of each descriptor; a pipe's inode dropped (each run has
/// its own stdout and stderr pipes).
fn listing(o: &Output) -> Vec<String> {
    let mut v: Vec<String> = text(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (fd, target) = l.split_once(" -> ")?;
            let fd = fd.rsplit(' ').next()?;
            let target = if target.starts_with("pipe:[") {
                "pipe"
            } else {
                target
            };
            Some(format!("{fd} {target}"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn the_command_inherits_the_callers_signals_descriptors_and_environment_less_the_key() {
    use nix::sys::signal::Signal;
    let test = "the_command_inherits_the_callers_signals_descriptors_and_environment_less_the_key";
    let d = TempPath::dir("gate-inherit").unwrap();
    let Some(key) = openssl_key(test, &d.path) else {
        return;
    };
    let f = clean();
    let attest = d.path.join("att.json");
    let attest_opt = ["--attest", attest.to_str().unwrap()];
    let status = ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"];

    // Signals: a parent that ignores SIGHUP and SIGPIPE and blocks SIGUSR1
    // and SIGTERM, and one that leaves all at their defaults.
    let busy = Parent {
        ignore: vec![Signal::SIGHUP, Signal::SIGPIPE],
        block: vec![Signal::SIGUSR1, Signal::SIGTERM],
        ..Parent::default()
    };
    // (The runner's own parent may ignore others, such as the C library's
    // signal 32: the direct run says what the caller gave.)
    let (direct, gated) = both(&f, &busy, &[], &status);
    let (blk, ign) = masks(&direct);
    assert_eq!(blk, 0x4200, "SIGUSR1 and SIGTERM blocked (direct)");
    assert_eq!(ign & 0x1001, 0x1001, "SIGHUP and SIGPIPE ignored (direct)");
    assert_eq!(
        text(&gated.stdout),
        text(&direct.stdout),
        "mask and ignored signals"
    );
    let (direct, gated) = both(&f, &Parent::default(), &[], &status);
    let (blk, ign) = masks(&direct);
    assert_eq!((blk, ign & 0x1001), (0, 0), "{}", text(&direct.stdout));
    assert_eq!(
        text(&gated.stdout),
        text(&direct.stdout),
        "SIGPIPE is not left ignored (Rust's runtime ignores it), nor anything blocked"
    );

    // Descriptors: the key on fd 3 (--sign-key-fd 3) and a file of the
    // caller's on fd 7. The gated command has fd 7 and not fd 3, and
    // nothing the direct one does not have.
    let extra = d.path.join("caller-file");
    fs::write(&extra, "the caller's\n").unwrap();
    let with_fds = Parent {
        fds: vec![(3, key.clone()), (7, extra.clone())],
        ..Parent::default()
    };
    let (direct, gated) = both(
        &f,
        &with_fds,
        &[&attest_opt[..], &["--sign-key-fd", "3"]].concat(),
        &["sh", "-c", FDS],
    );
    let (direct, gated) = (listing(&direct), listing(&gated));
    assert!(
        direct.contains(&format!("3 {}", key.display())),
        "{direct:?}"
    );
    assert!(
        direct.contains(&format!("7 {}", extra.display())),
        "{direct:?}"
    );
    let want: Vec<String> = direct
        .iter()
        .filter(|l| !l.starts_with("3 "))
        .cloned()
        .collect();
    assert_eq!(gated, want, "the caller's descriptors less the key's");
    assert!(attest.exists(), "signed with the key from fd 3");

    // The key on standard input (--sign-key-fd 0 < key): the command's is
    // /dev/null, so it cannot read the key again from the file's start.
    let on_stdin = Parent {
        stdin: Some(key.clone()),
        ..Parent::default()
    };
    let (direct, gated) = both(
        &f,
        &on_stdin,
        &[&attest_opt[..], &["--sign-key-fd", "0"]].concat(),
        &["sh", "-c", FDS],
    );
    let (direct, gated) = (listing(&direct), listing(&gated));
    assert!(
        direct.contains(&format!("0 {}", key.display())),
        "{direct:?}"
    );
    let want: Vec<String> = direct
        .iter()
        .map(|l| {
            if l.starts_with("0 ") {
                "0 /dev/null".to_string()
            } else {
                l.clone()
            }
        })
        .collect();
    assert_eq!(gated, want);

    // The environment: the caller's, less SELFPROBE_SIGNING_KEY, and not a
    // byte of the key in it.
    let pem = fs::read_to_string(&key).unwrap();
    let with_env = Parent {
        env: vec![
            ("SELFPROBE_SIGNING_KEY".into(), pem.clone()),
            ("AGENT_SETTING".into(), "kept as it is".into()),
        ],
        ..Parent::default()
    };
    let (direct, gated) = both(&f, &with_env, &attest_opt, &["cat", "/proc/self/environ"]);
    let vars = |o: &Output| -> Vec<Vec<u8>> {
        o.stdout
            .split(|b| *b == 0)
            .filter(|v| !v.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (direct_vars, gated_vars) = (vars(&direct), vars(&gated));
    assert!(direct_vars.contains(&format!("SELFPROBE_SIGNING_KEY={pem}").into_bytes()));
    let want: Vec<Vec<u8>> = direct_vars
        .into_iter()
        .filter(|v| !v.starts_with(b"SELFPROBE_SIGNING_KEY="))
        .collect();
    assert_eq!(gated_vars, want, "the caller's environment less the key");
    assert!(gated_vars.contains(&b"AGENT_SETTING=kept as it is".to_vec()));
    let pats = leak_patterns(&key);
    assert_eq!(leaks(&gated.stdout, &pats), Vec::<String>::new());
    assert_eq!(leaks(&gated.stderr, &pats), Vec::<String>::new());
    let rep = fs::read(&attest).unwrap();
    assert_eq!(leaks(&rep, &pats), Vec::<String>::new());
}

/// A signal sent before the command starts is selfprobe's: it ends the run
/// as any run (128 + N, its files removed) and the command never starts.
/// One sent after is the command's (here a shell that traps SIGTERM and
/// exits 42). The signal is never lost between the two, whenever it lands:
/// it is sent at times spread over the whole run, hand-over included.
#[test]
fn a_signal_is_selfprobes_before_the_start_and_the_commands_after_never_lost() {
    use nix::sys::signal::{kill, signal, SigHandler, Signal};
    use nix::unistd::Pid;
    use std::os::unix::process::ExitStatusExt;
    let f = Fixture::many_mounts("gate-sig", "mnt", "m", 100);
    let d = TempPath::dir("gate-sig").unwrap();
    let marker = d.path.join("ran");
    let report = d.path.join("report.json");
    let script = format!(
        "trap 'exit 42' TERM; touch {}; sleep 5 & wait $!; exit 0",
        marker.display()
    );
    let start = || {
        let mut c = Command::new(BIN);
        c.arg("--root")
            .arg(&f.dir)
            .args([
                "--fail-on",
                "none",
                "--write-test",
                "--format",
                "json",
                "-o",
            ])
            .arg(&report)
            .args(["--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: signal(2) is async-signal-safe, the only call made
        // between fork and exec: SIGTERM at its default, whatever the
        // runner inherited.
        unsafe {
            c.pre_exec(|| {
                signal(Signal::SIGTERM, SigHandler::SigDfl)?;
                Ok(())
            });
        }
        c.spawn().unwrap()
    };
    // How long the run takes here before the command starts.
    let t = Instant::now();
    let mut child = start();
    while !marker.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let run = t.elapsed();
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    assert_eq!(child.wait().unwrap().code(), Some(42), "the command's trap");

    let (mut before, mut between, mut after) = (0, 0, 0);
    for round in 0..24u32 {
        let _ = fs::remove_file(&marker);
        let mut child = start();
        std::thread::sleep(run * round / 16);
        let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        let status = child.wait().unwrap();
        let ran = marker.exists();
        match (status.code(), status.signal()) {
            (Some(143), _) => {
                assert!(!ran, "round {round}: exit 143, yet the command ran");
                before += 1;
            }
            // In the instant between the hand-over and execve, or before
            // the shell set its trap: the default action, as the command
            // would have it.
            (None, Some(15)) => between += 1,
            (Some(42), _) => {
                assert!(ran, "round {round}: 42 without the command");
                after += 1;
            }
            other => {
                panic!("round {round}: {other:?} (marker {ran}): the signal was lost or misread")
            }
        }
        let left = crate::signals::named(&f.dir, ".selfprobe-write-test-");
        assert!(left.is_empty(), "round {round} left {left:?}");
    }
    eprintln!("gate signals: {before} before the start, {between} in between, {after} after");
    assert!(
        before > 0 && after > 0,
        "the rounds did not cover both sides of the start"
    );
}
