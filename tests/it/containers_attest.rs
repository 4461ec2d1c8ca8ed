//! Signed findings from a real container (issue 4): the key goes in through
//! `podman exec -i … --sign-key-fd 0 < key`, the envelope and SSHSIG made
//! inside verify on the host, and afterwards no file in the container holds
//! the key (its whole filesystem, tmpfs mounts included, is searched, and
//! the search is shown to find a key planted on purpose).
//!
//! Needs what tests/containers.rs needs (rootful podman, runc,
//! busybox-static) and ssh-keygen; SKIP without them unless CI=true.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::keys::{hex, leak_patterns, leaks};
use crate::common::podman::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A container started for the test, removed on drop.
struct Ctr(String);

impl Drop for Ctr {
    fn drop(&mut self) {
        let _ = podman()
            .args(["rm", "-f", "-t", "0", &self.0])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

struct Exec {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

/// `podman exec [-i] NAME ARGS…`, stdin from `input` when given; output kept
/// as bytes (file contents are binary); bounded by RUN_TIMEOUT.
fn exec(name: &str, args: &[&str], input: Option<&Path>) -> Exec {
    let mut cmd = podman();
    cmd.arg("exec");
    if input.is_some() {
        cmd.arg("-i");
    }
    cmd.arg(name).args(args);
    let shown = format!("podman exec {name} {}", args.join(" "));
    cmd.stdin(match input {
        Some(p) => Stdio::from(fs::File::open(p).unwrap()),
        None => Stdio::null(),
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{shown}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{shown}: no exit within {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Exec {
        code: status.code(),
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

/// Every regular file in the container, with its content: the whole tree
/// from /, and /dev/shm (tmpfs); /proc, /sys and the rest of /dev are not
/// files anyone leaves a key in.
fn container_files(name: &str) -> Vec<(String, Vec<u8>)> {
    const MARK: &[u8] = b"\n==SELFPROBE-TEST-FILE ";
    let script = r#"find / /dev/shm \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -print | while IFS= read -r f; do printf '\n==SELFPROBE-TEST-FILE %s\n' "$f"; cat "$f"; done"#;
    let x = exec(name, &["sh", "-c", script], None);
    assert_eq!(x.code, Some(0), "file listing failed: {}", x.stderr);
    let mut files = Vec::new();
    let mut rest: &[u8] = &x.stdout;
    while let Some(i) = rest.windows(MARK.len()).position(|w| w == MARK) {
        rest = &rest[i + MARK.len()..];
        let nl = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let path = String::from_utf8_lossy(&rest[..nl]).into_owned();
        rest = &rest[(nl + 1).min(rest.len())..];
        let end = rest
            .windows(MARK.len())
            .position(|w| w == MARK)
            .unwrap_or(rest.len());
        files.push((path, rest[..end].to_vec()));
        rest = &rest[end..];
    }
    files
}

fn holding_key(files: &[(String, Vec<u8>)], pats: &[(String, Vec<u8>)]) -> Vec<String> {
    files
        .iter()
        .filter_map(|(p, content)| {
            let found = leaks(content, pats);
            (!found.is_empty()).then(|| format!("{p} ({})", found.join(", ")))
        })
        .collect()
}

#[test]
fn sign_key_fd_in_a_running_container() {
    let Some(img) = setup("sign_key_fd_in_a_running_container") else {
        return;
    };
    let has_keygen = Command::new("ssh-keygen")
        .arg("-?")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !has_keygen {
        skip_or_fail("sign_key_fd_in_a_running_container", "ssh-keygen not found");
        return;
    }
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let host = TempPath::dir("attest").unwrap();
    let key = host.path.join("id_ed25519");
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(st.success());
    let pats = leak_patterns(&key);
    let pubkey = Command::new(crate::common::shipped::bin_str())
        .args(["pubkey", "--sign-key"])
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(pubkey.status.code(), Some(0));
    let pubfile = host.path.join("pub");
    fs::write(&pubfile, &pubkey.stdout).unwrap();

    let name = unique("attest");
    let ctr = Ctr(name.clone());
    let mut run = podman();
    run.args(["run", "-d", "--name", &name, img, "sleep", "600"]);
    let started = run_bounded(run, RUN_TIMEOUT, Some(&name)).unwrap();
    assert_eq!(started.code, Some(0), "podman run -d: {}", started.stderr);

    let nonce = format!(
        "{:x}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let x = exec(
        &ctr.0,
        &[
            IN_IMAGE,
            "--format",
            "json",
            "--fail-on",
            "none",
            "--workspace",
            "/workspace",
            "-o",
            "/tmp/report.json",
            "--attest",
            "/tmp/attest.json",
            "--sshsig",
            "/tmp/report.sig",
            "--sign-key-fd",
            "0",
            "--nonce",
            &nonce,
        ],
        Some(&key),
    );
    assert_eq!(x.code, Some(0), "selfprobe in the container: {}", x.stderr);
    assert!(!x.stderr.contains("ephemeral"), "{}", x.stderr);

    // The outputs, copied out byte for byte, verify on the host.
    let mut outs = Vec::new();
    for f in ["attest.json", "report.json", "report.sig"] {
        let c = exec(&ctr.0, &["cat", &format!("/tmp/{f}")], None);
        assert_eq!(c.code, Some(0), "cat /tmp/{f}: {}", c.stderr);
        let p = host.path.join(f);
        fs::write(&p, &c.stdout).unwrap();
        outs.push(p.to_str().unwrap().to_string());
    }
    let v = Command::new(crate::common::shipped::bin_str())
        .args([
            "verify",
            "--pubkey",
            pubfile.to_str().unwrap(),
            "--nonce",
            &nonce,
        ])
        .args(["--sshsig", &outs[2], "--report", &outs[1], &outs[0]])
        .output()
        .unwrap();
    let vout = String::from_utf8_lossy(&v.stdout);
    assert_eq!(v.status.code(), Some(0), "verify on the host:\n{vout}");
    assert!(!vout.contains("--root"), "a live run: {vout}");
    assert!(
        vout.contains("VALID") && vout.contains("nonce matches --nonce"),
        "{vout}"
    );

    // The statement names the binary that ran in the container (the test
    // binary copied into the image), and a key from the fd, not an ephemeral one.
    let env: Value = serde_json::from_slice(&fs::read(&outs[0]).unwrap()).unwrap();
    let payload = {
        use base64ct::{Base64, Encoding};
        Base64::decode_vec(env["payload"].as_str().unwrap()).unwrap()
    };
    let stmt: Value = serde_json::from_slice(&payload).unwrap();
    let bin_sha = hex(&Sha256::digest(
        fs::read(crate::common::shipped::bin_str()).unwrap(),
    ));
    assert_eq!(stmt["subject"][0]["digest"]["sha256"], bin_sha.as_str());
    assert_eq!(stmt["predicate"]["signing"]["key_source"], "fd");
    assert_eq!(stmt["predicate"]["signing"]["ephemeral"], false);
    assert_eq!(stmt["predicate"]["run"]["nonce"], nonce.as_str());

    // No file in the container holds the key.
    let files = container_files(&ctr.0);
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for must in [
        "/usr/local/bin/selfprobe",
        "/tmp/attest.json",
        "/tmp/report.json",
        "/etc/hosts",
    ] {
        assert!(names.contains(&must), "the search missed {must}: {names:?}");
    }
    let found = holding_key(&files, &pats);
    assert!(
        found.is_empty(),
        "files in the container hold the key: {found:?}"
    );

    // The search does find a key that is there: on the overlay and on tmpfs.
    for dst in ["/tmp/planted-key", "/dev/shm/planted-key"] {
        let c = exec(&ctr.0, &["sh", "-c", &format!("cat > {dst}")], Some(&key));
        assert_eq!(c.code, Some(0), "planting {dst}: {}", c.stderr);
    }
    let found = holding_key(&container_files(&ctr.0), &pats);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("/tmp/planted-key") || found[1].starts_with("/tmp/planted-key"),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.starts_with("/dev/shm/planted-key")),
        "{found:?}"
    );
}
