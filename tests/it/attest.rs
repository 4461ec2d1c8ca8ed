//! Signed findings (issue 4; the README's Signed findings), checked from outside: the
//! envelope, the SSHSIG and the DSSE signature are verified by third-party
//! tools (securesystemslib, ssh-keygen -Y verify, openssl pkeyutl), each
//! kind of tampering is caught and named, bad keys exit 2, and the private
//! key's bytes appear in no output, file or error.
//!
//! Keys are made by ssh-keygen and openssl, as a user would make them.
//! securesystemslib runs from the venv `.ci/run` makes (.ci/venv; or
//! SELFPROBE_TEST_PYTHON). Where a tool is missing the test prints SKIP and
//! passes, except under CI=true, where it fails.
//!
//! Runs use `--root` on an empty tree: fast, no probing of this machine, and
//! still a complete report to sign.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64ct::{Base64, Encoding};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::keys::{assert_no_leak, hex, leak_patterns};

const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// SKIP (or, under CI, fail) when a third-party tool is missing.
fn need(test: &str, tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if ci() {
            panic!("{test}: {tool} is missing under CI=true (.ci/run installs it)");
        }
        let _ = writeln!(std::io::stderr(), "SKIP: {test}: {tool} not found");
    }
    found
}

/// ssh-keygen and openssl make the test keys.
fn tools(test: &str) -> bool {
    need(test, "ssh-keygen") && need(test, "openssl")
}

fn python(test: &str) -> Option<PathBuf> {
    let p = std::env::var_os("SELFPROBE_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python"));
    let ok = Command::new(&p)
        .args(["-c", "import securesystemslib.dsse, cryptography"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(p);
    }
    if ci() {
        panic!(
            "{test}: no securesystemslib at {} under CI=true (.ci/run makes .ci/venv)",
            p.display()
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIP: {test}: no securesystemslib at {} (run .ci/run, or set SELFPROBE_TEST_PYTHON)",
        p.display()
    );
    None
}

/// A scratch directory removed on drop.
struct Tmp(PathBuf);

impl Tmp {
    fn new(tag: &str) -> Tmp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "selfprobe-attest-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("root")).unwrap();
        Tmp(d)
    }
    fn p(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    fn s(&self, name: &str) -> String {
        self.p(name).to_str().unwrap().to_string()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn sh(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// An OpenSSH Ed25519 key, unencrypted, made by ssh-keygen.
fn ssh_key(t: &Tmp, name: &str) -> PathBuf {
    let p = t.p(name);
    sh(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(&p));
    p
}

/// A PKCS#8 PEM Ed25519 key made by openssl.
fn pem_key(t: &Tmp, name: &str) -> PathBuf {
    let p = t.p(name);
    sh(Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&p));
    p
}

/// A signed run on an empty --root: -o report, --attest, --sshsig.
struct Signed {
    out: Output,
    report: PathBuf,
    attest: PathBuf,
    sig: PathBuf,
}

fn signed_run(t: &Tmp, format: &str, key_args: &[&str], extra: &[&str]) -> Signed {
    signed_run_with(t, format, key_args, extra, |_| {})
}

fn signed_run_with(
    t: &Tmp,
    format: &str,
    key_args: &[&str],
    extra: &[&str],
    tweak: impl FnOnce(&mut Command),
) -> Signed {
    let (report, attest, sig) = (
        t.p(&format!("report.{format}")),
        t.p("attest.json"),
        t.p("report.sig"),
    );
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--root",
        &t.s("root"),
        "--fail-on",
        "none",
        "--format",
        format,
    ])
    .arg("-o")
    .arg(&report)
    .arg("--attest")
    .arg(&attest)
    .arg("--sshsig")
    .arg(&sig)
    .args(key_args)
    .args(extra)
    .env_remove("SELFPROBE_SIGNING_KEY");
    tweak(&mut cmd);
    let out = cmd.output().unwrap();
    if format == "json" {
        if let Ok(r) = fs::read(&report) {
            crate::common::dump::report(r);
        }
    }
    Signed {
        out,
        report,
        attest,
        sig,
    }
}

fn ok(s: &Signed) -> &Signed {
    assert_eq!(
        s.out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&s.out.stderr)
    );
    s
}

fn envelope(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

fn payload(env: &Value) -> Vec<u8> {
    Base64::decode_vec(env["payload"].as_str().unwrap()).unwrap()
}

fn statement(env: &Value) -> Value {
    serde_json::from_slice(&payload(env)).unwrap()
}

/// `selfprobe pubkey` output for a key: (PEM block, allowed_signers line, keyid).
fn pubkey(key: &Path) -> (String, String, String) {
    let o = sh(Command::new(BIN).args(["pubkey", "--sign-key"]).arg(key));
    let text = String::from_utf8(o.stdout).unwrap();
    let end = "-----END PUBLIC KEY-----\n";
    let pem_end = text.find(end).expect("PEM block") + end.len();
    let line = text
        .lines()
        .find(|l| l.contains("namespaces=\"selfprobe\""))
        .expect("allowed_signers line")
        .to_string();
    let keyid = text
        .lines()
        .find_map(|l| l.strip_prefix("# keyid "))
        .expect("keyid line")
        .to_string();
    (text[..pem_end].to_string(), line, keyid)
}

fn verify(args: &[&str]) -> Output {
    Command::new(BIN).arg("verify").args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn write(t: &Tmp, name: &str, content: impl AsRef<[u8]>) -> String {
    fs::write(t.p(name), content).unwrap();
    t.s(name)
}

/// The DSSE PAE, written here from the spec rather than taken from selfprobe.
fn pae(ty: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!("DSSEv1 {} {} {} ", ty.len(), ty, body.len()).into_bytes();
    v.extend_from_slice(body);
    v
}

// ---------------------------------------------------------------------------
// What the statement binds.

#[test]
fn statement_binds_binary_times_nonce_and_key() {
    if !tools("statement_binds_binary_times_nonce_and_key") {
        return;
    }
    let t = Tmp::new("bind");
    let key = pem_key(&t, "k.pem");
    let s = signed_run(
        &t,
        "json",
        &["--sign-key", key.to_str().unwrap()],
        &["--nonce", "c0ffee-42"],
    );
    ok(&s);
    let env = envelope(&s.attest);
    assert_eq!(env["payloadType"], "application/vnd.in-toto+json");
    let st = statement(&env);
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        st["predicateType"],
        "https://selfprobe.dev/schema/report/v1"
    );
    let p = &st["predicate"];

    // The probe binary: its real SHA-256, as a subject and in the predicate.
    let bin_sha = hex(&Sha256::digest(fs::read(BIN).unwrap()));
    assert_eq!(st["subject"][0]["name"], "selfprobe");
    assert_eq!(st["subject"][0]["digest"]["sha256"], bin_sha.as_str());
    assert_eq!(p["tool"]["sha256"], bin_sha.as_str());
    // No image identity was recorded, so none is claimed.
    assert_eq!(st["subject"].as_array().unwrap().len(), 1);

    // Times and nonce.
    let started = p["run"]["started"].as_str().unwrap();
    let finished = p["run"]["finished"].as_str().unwrap();
    assert!(
        started.ends_with('Z') && finished >= started,
        "{started} {finished}"
    );
    assert_eq!(p["run"]["nonce"], "c0ffee-42");

    // The key: named in the predicate and in the envelope, same keyid as
    // `selfprobe pubkey`, not ephemeral.
    let (_, line, keyid) = pubkey(&key);
    assert_eq!(env["signatures"][0]["keyid"], keyid.as_str());
    assert_eq!(p["signing"]["keyid"], keyid.as_str());
    assert_eq!(p["signing"]["ephemeral"], false);
    assert_eq!(p["signing"]["key_source"], "file");
    assert!(line.ends_with(p["signing"]["public_key"].as_str().unwrap()));

    // The predicate is exactly the JSON report written with -o.
    let report: Value = serde_json::from_slice(&fs::read(&s.report).unwrap()).unwrap();
    assert_eq!(&report, p);
}

#[test]
fn ephemeral_key_is_marked_and_verifies_with_its_recorded_public_key() {
    if !tools("ephemeral_key_is_marked_and_verifies_with_its_recorded_public_key") {
        return;
    }
    let t = Tmp::new("eph");
    let s = signed_run(&t, "json", &[], &[]);
    ok(&s);
    let err = String::from_utf8_lossy(&s.out.stderr);
    assert!(err.contains("ephemeral key"), "{err}");
    let st = statement(&envelope(&s.attest));
    assert_eq!(st["predicate"]["signing"]["ephemeral"], true);
    assert_eq!(st["predicate"]["signing"]["key_source"], "ephemeral");
    let pk = write(
        &t,
        "eph.pub",
        st["predicate"]["signing"]["public_key"].as_str().unwrap(),
    );
    let o = verify(&["--pubkey", &pk, s.attest.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("EPHEMERAL") && out.contains("not who made it"),
        "{out}"
    );
    // Two runs, two keys.
    let t2 = Tmp::new("eph2");
    let s2 = signed_run(&t2, "json", &[], &[]);
    ok(&s2);
    assert_ne!(
        envelope(&s.attest)["signatures"][0]["keyid"],
        envelope(&s2.attest)["signatures"][0]["keyid"]
    );
}

// ---------------------------------------------------------------------------
// Third-party verifiers.

#[test]
fn securesystemslib_verifies_the_envelope_and_rejects_a_changed_payload() {
    if !tools("securesystemslib_verifies_the_envelope_and_rejects_a_changed_payload") {
        return;
    }
    let Some(py) = python("securesystemslib_verifies_the_envelope") else {
        return;
    };
    if !need("securesystemslib_verifies_the_envelope", "openssl") {
        return;
    }
    let t = Tmp::new("ssl");
    let key = pem_key(&t, "k.pem");
    let s = signed_run(
        &t,
        "json",
        &["--sign-key", key.to_str().unwrap()],
        &["--nonce", "n-1"],
    );
    ok(&s);
    let (pem, _, keyid) = pubkey(&key);
    let pubfile = write(&t, "pub.pem", &pem);
    // The keyid is computed by securesystemslib itself (SSlibKey.from_crypto),
    // so a keyid that differs from the README's Signed findings makes Envelope.verify fail.
    let script = r#"
import json, sys
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey
key = SSlibKey.from_crypto(load_pem_public_key(open(sys.argv[1], 'rb').read()))
env = Envelope.from_dict(json.load(open(sys.argv[2])))
try:
    ok = env.verify([key], 1)
except Exception as e:
    print("REJECTED", type(e).__name__, e)
    sys.exit(1)
print("VERIFIED", key.keyid, ",".join(ok))
"#;
    let pyfile = write(&t, "v.py", script);
    let run_py = |env_path: &Path| {
        Command::new(&py)
            .args([pyfile.as_str(), pubfile.as_str()])
            .arg(env_path)
            .output()
            .unwrap()
    };
    let o = run_py(&s.attest);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("VERIFIED {keyid} {keyid}")),
        "{}",
        text(&o)
    );

    // One changed byte in the payload.
    let mut env = envelope(&s.attest);
    let mut body = payload(&env);
    let i = body.windows(5).position(|w| w == b"\"n-1\"").unwrap() + 1;
    body[i] = b'm';
    env["payload"] = Value::String(Base64::encode_string(&body));
    let bad = t.p("changed.json");
    fs::write(&bad, serde_json::to_vec(&env).unwrap()).unwrap();
    let o = run_py(&bad);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("REJECTED"), "{}", text(&o));
    let o = verify(&["--pubkey", &pubfile, bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("signature: the Ed25519 signature does not verify"),
        "{}",
        text(&o)
    );
    assert!(
        !text(&o).contains("Attested:"),
        "nothing unverified is shown as attested"
    );
}

#[test]
fn ssh_keygen_verifies_the_sshsig_over_the_exact_report_bytes() {
    if !tools("ssh_keygen_verifies_the_sshsig_over_the_exact_report_bytes") {
        return;
    }
    if !need("ssh_keygen_verifies_the_sshsig", "ssh-keygen") {
        return;
    }
    for format in ["json", "text"] {
        let t = Tmp::new("sshsig");
        let key = ssh_key(&t, "id_ed25519");
        let s = signed_run(&t, format, &["--sign-key", key.to_str().unwrap()], &[]);
        ok(&s);
        let (_, line, _) = pubkey(&key);
        let allowed = write(&t, "allowed_signers", format!("{line}\n"));
        let keygen_verify = |report: &[u8], ns: &str| {
            let mut c = Command::new("ssh-keygen")
                .args([
                    "-Y",
                    "verify",
                    "-f",
                    &allowed,
                    "-I",
                    "selfprobe",
                    "-n",
                    ns,
                    "-s",
                ])
                .arg(&s.sig)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(report).unwrap();
            c.wait_with_output().unwrap()
        };
        let bytes = fs::read(&s.report).unwrap();
        let o = keygen_verify(&bytes, "selfprobe");
        assert_eq!(o.status.code(), Some(0), "{format}: {}", text(&o));
        assert!(
            text(&o).contains("Good \"selfprobe\" signature"),
            "{}",
            text(&o)
        );
        // The allowed_signers line limits the key to the selfprobe namespace,
        // and a signature for selfprobe is not one for git.
        assert_ne!(keygen_verify(&bytes, "git").status.code(), Some(0));
        // One changed byte of the report.
        let mut changed = bytes.clone();
        let i = changed.len() / 2;
        changed[i] ^= 0x01;
        assert_ne!(keygen_verify(&changed, "selfprobe").status.code(), Some(0));
        // selfprobe verify agrees on both.
        let pk = write(&t, "pub", &line);
        let rep = s.report.to_str().unwrap();
        let sig = s.sig.to_str().unwrap();
        let o = verify(&["--pubkey", &pk, "--sshsig", sig, "--report", rep]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let changed_path = write(&t, "changed", &changed);
        let o = verify(&["--pubkey", &pk, "--sshsig", sig, "--report", &changed_path]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            text(&o).contains("the report was changed after signing"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn openssl_verifies_the_signature_over_the_pae() {
    if !tools("openssl_verifies_the_signature_over_the_pae") {
        return;
    }
    if !need("openssl_verifies_the_signature_over_the_pae", "openssl")
        || !need("openssl_verifies_the_signature_over_the_pae", "ssh-keygen")
    {
        return;
    }
    let t = Tmp::new("openssl");
    for key in [pem_key(&t, "k.pem"), ssh_key(&t, "k.ssh")] {
        let s = signed_run(&t, "json", &["--sign-key", key.to_str().unwrap()], &[]);
        ok(&s);
        let env = envelope(&s.attest);
        let (pem, _, _) = pubkey(&key);
        let pubfile = write(&t, "pub.pem", &pem);
        let sig = Base64::decode_vec(env["signatures"][0]["sig"].as_str().unwrap()).unwrap();
        let sigfile = write(&t, "sig.bin", &sig);
        let body = payload(&env);
        let pae_file = write(
            &t,
            "pae.bin",
            pae(env["payloadType"].as_str().unwrap(), &body),
        );
        let check = |data: &str| {
            Command::new("openssl")
                .args(["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", &pubfile])
                .args(["-sigfile", &sigfile, "-in", data])
                .output()
                .unwrap()
        };
        let o = check(&pae_file);
        assert_eq!(o.status.code(), Some(0), "{}: {}", key.display(), text(&o));
        assert!(
            text(&o).contains("Signature Verified Successfully"),
            "{}",
            text(&o)
        );
        // The signature is over the PAE, not the bare payload.
        let bare = write(&t, "payload.bin", &body);
        assert_ne!(check(&bare).status.code(), Some(0));
    }
}

// ---------------------------------------------------------------------------
// selfprobe verify: valid, and each tampering named.

#[test]
fn verify_accepts_and_prints_what_was_attested() {
    if !tools("verify_accepts_and_prints_what_was_attested") {
        return;
    }
    let t = Tmp::new("ok");
    let key = ssh_key(&t, "k");
    let s = signed_run(
        &t,
        "json",
        &["--sign-key", key.to_str().unwrap()],
        &["--nonce", "abc"],
    );
    ok(&s);
    let (pem, line, keyid) = pubkey(&key);
    let bin_sha = hex(&Sha256::digest(fs::read(BIN).unwrap()));
    let st = statement(&envelope(&s.attest));
    // Every accepted public-key form: PEM, OpenSSH line, `pubkey` output.
    for pk in [
        pem.clone(),
        line.clone(),
        format!("{pem}{line}\n# keyid {keyid}\n"),
    ] {
        let pkf = write(&t, "pub", &pk);
        let o = verify(&[
            "--pubkey",
            &pkf,
            "--nonce",
            "abc",
            "--sshsig",
            s.sig.to_str().unwrap(),
            "--report",
            s.report.to_str().unwrap(),
            s.attest.to_str().unwrap(),
        ]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{out}");
        for want in [
            "VALID",
            "payloadType application/vnd.in-toto+json",
            "predicateType https://selfprobe.dev/schema/report/v1",
            "nonce matches --nonce",
            "the report file is the attested predicate",
            &bin_sha,
            st["predicate"]["run"]["id"].as_str().unwrap(),
            st["predicate"]["run"]["started"].as_str().unwrap(),
            st["predicate"]["run"]["finished"].as_str().unwrap(),
            "abc (matches --nonce)",
            "(--root), not the live system",
        ] {
            assert!(out.contains(want), "missing {want:?} in:\n{out}");
        }
        assert!(
            !out.contains("INVALID") && !out.contains("EPHEMERAL"),
            "{out}"
        );
    }
    // Without --nonce it still verifies, and says the nonce was not checked.
    let pkf = write(&t, "pub", &pem);
    let o = verify(&["--pubkey", &pkf, s.attest.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o).contains("nonce not checked"), "{}", text(&o));
}

#[test]
fn verify_names_each_tampering() {
    if !tools("verify_names_each_tampering") {
        return;
    }
    let t = Tmp::new("tamper");
    let key = pem_key(&t, "k.pem");
    let other = pem_key(&t, "other.pem");
    let s = signed_run(
        &t,
        "json",
        &["--sign-key", key.to_str().unwrap()],
        &["--nonce", "right"],
    );
    ok(&s);
    let pk = write(&t, "pub", pubkey(&key).0);
    let wrong_pk = write(&t, "other.pub", pubkey(&other).0);
    let a = s.attest.to_str().unwrap();
    let fails = |args: &[&str], want: &str| {
        let o = verify(args);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {out}");
        assert!(out.contains("INVALID"), "{out}");
        assert!(out.contains(want), "{args:?}: want {want:?} in:\n{out}");
        assert!(!out.contains("Attested:"), "{out}");
        assert!(!out.to_lowercase().contains("panicked"), "{out}");
    };
    // A wrong nonce.
    fails(
        &["--pubkey", &pk, "--nonce", "wrong", a],
        "nonce mismatch: --nonce is \"wrong\", the attestation has \"right\"",
    );
    // A wrong key.
    fails(
        &["--pubkey", &wrong_pk, a],
        "wrong key: the envelope is signed by keyid",
    );
    // A changed payloadType.
    let mut env = envelope(&s.attest);
    env["payloadType"] = Value::String("application/json".into());
    let pt = write(&t, "pt.json", serde_json::to_vec(&env).unwrap());
    fails(&["--pubkey", &pk, &pt], "payloadType: payloadType is \"application/json\", expected \"application/vnd.in-toto+json\"");
    // One changed byte of the payload, anywhere: here the first finding's code.
    let mut env = envelope(&s.attest);
    let mut body = payload(&env);
    let i = body.windows(6).position(|w| w == b"\"code\"").unwrap() + 8;
    body[i] ^= 0x20;
    env["payload"] = Value::String(Base64::encode_string(&body));
    let pl = write(&t, "pl.json", serde_json::to_vec(&env).unwrap());
    fails(
        &["--pubkey", &pk, &pl],
        "signature: the Ed25519 signature does not verify",
    );
    // A changed signature byte.
    let mut env = envelope(&s.attest);
    let mut sig = Base64::decode_vec(env["signatures"][0]["sig"].as_str().unwrap()).unwrap();
    sig[10] ^= 0xff;
    env["signatures"][0]["sig"] = Value::String(Base64::encode_string(&sig));
    let sg = write(&t, "sig.json", serde_json::to_vec(&env).unwrap());
    fails(
        &["--pubkey", &pk, &sg],
        "signature: the Ed25519 signature does not verify",
    );
    // The SSHSIG with the wrong key, and a report from another run.
    let sig = s.sig.to_str().unwrap();
    let rep = s.report.to_str().unwrap();
    fails(
        &["--pubkey", &wrong_pk, "--sshsig", sig, "--report", rep],
        "wrong key: the SSHSIG was made by keyid",
    );
    let t2 = Tmp::new("tamper2");
    let s2 = signed_run(
        &t2,
        "json",
        &["--sign-key", key.to_str().unwrap()],
        &["--nonce", "right"],
    );
    ok(&s2);
    fails(
        &[
            "--pubkey",
            &pk,
            "--sshsig",
            s2.sig.to_str().unwrap(),
            "--report",
            s2.report.to_str().unwrap(),
            a,
        ],
        "the signed report is not the one the envelope attests",
    );
    // Not an envelope at all.
    let junk = write(&t, "junk.json", "{\"hello\": 1}");
    fails(&["--pubkey", &pk, &junk], "not a DSSE envelope");
    // Made by another binary than the one the verifier ran: the right key,
    // nonce and signature do not make it this binary's report.
    let other_bin = "ab".repeat(32);
    fails(
        &["--pubkey", &pk, "--binary-sha256", &other_bin, a],
        &format!(
            "binary: tool.sha256 is \"{}\", expected {other_bin}",
            hex(&Sha256::digest(fs::read(BIN).unwrap()))
        ),
    );
    // The binary that ran, in sha256sum's form or with the sha256: prefix.
    let bin_sha = hex(&Sha256::digest(fs::read(BIN).unwrap()));
    for given in [
        bin_sha.clone(),
        format!("sha256:{}", bin_sha.to_uppercase()),
    ] {
        let o = verify(&["--pubkey", &pk, "--binary-sha256", &given, a]);
        assert_eq!(o.status.code(), Some(0), "{given}: {}", text(&o));
        assert!(
            text(&o).contains("tool.sha256 is the expected binary"),
            "{}",
            text(&o)
        );
    }
    let o = verify(&["--pubkey", &pk, "--binary-sha256", "abc", a]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("64 hexadecimal digits"), "{}", text(&o));
}

#[test]
fn verify_usage_errors_exit_2() {
    if !tools("verify_usage_errors_exit_2") {
        return;
    }
    let t = Tmp::new("vusage");
    let key = pem_key(&t, "k.pem");
    let s = signed_run(&t, "json", &["--sign-key", key.to_str().unwrap()], &[]);
    ok(&s);
    let a = s.attest.to_str().unwrap();
    let k = key.to_str().unwrap();
    for (args, want) in [
        (vec!["--pubkey", k, a], "a private key"),
        (vec!["--pubkey", "/nonexistent/pub", a], "/nonexistent/pub"),
        (vec!["--pubkey", a, a], "no public key found"),
        (vec!["--pubkey", k], "ENVELOPE"),
        (vec!["--pubkey", k, "--sshsig", a, a], "--report"),
        (vec!["--pubkey", k, "--nonce", "two words", a], "--nonce"),
    ] {
        let o = verify(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains(want),
            "{args:?}: want {want:?}: {}",
            text(&o)
        );
    }
}

// ---------------------------------------------------------------------------
// Keys: sources, bad keys, and no leak.

#[test]
fn bad_keys_exit_2_with_a_clear_message() {
    if !tools("bad_keys_exit_2_with_a_clear_message") {
        return;
    }
    if !need("bad_keys_exit_2", "openssl") || !need("bad_keys_exit_2", "ssh-keygen") {
        return;
    }
    let t = Tmp::new("badkeys");
    let enc_ssh = t.p("enc_ssh");
    sh(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "secret-pass", "-f"])
        .arg(&enc_ssh));
    let enc_p8 = t.p("enc.pem");
    sh(Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "ed25519",
            "-aes256",
            "-pass",
            "pass:secret-pass",
            "-out",
        ])
        .arg(&enc_p8));
    let rsa_p8 = t.p("rsa.pem");
    sh(Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "rsa",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&rsa_p8));
    let rsa_p1 = t.p("rsa1.pem");
    sh(Command::new("openssl")
        .args(["pkey", "-traditional", "-in"])
        .arg(&rsa_p8)
        .arg("-out")
        .arg(&rsa_p1));
    let rsa_ssh = t.p("rsa_ssh");
    sh(Command::new("ssh-keygen")
        .args(["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f"])
        .arg(&rsa_ssh));
    let good = pem_key(&t, "good.pem");
    let good_text = fs::read_to_string(&good).unwrap();
    let truncated = write(&t, "truncated.pem", &good_text[..good_text.len() / 2]);
    let ssh_good = ssh_key(&t, "good_ssh");
    let ssh_text = fs::read_to_string(&ssh_good).unwrap();
    let ssh_truncated = write(&t, "truncated_ssh", &ssh_text[..ssh_text.len() * 2 / 3]);
    let empty = write(&t, "empty", "");
    let public = t.p("good_ssh.pub");

    let cases: Vec<(String, &str)> = vec![
        (
            enc_ssh.to_str().unwrap().into(),
            "an encrypted OpenSSH key, and selfprobe takes no passphrase",
        ),
        (
            enc_p8.to_str().unwrap().into(),
            "an encrypted PKCS#8 key, and selfprobe takes no passphrase",
        ),
        (
            rsa_p8.to_str().unwrap().into(),
            "a PKCS#8 RSA key: selfprobe signs with Ed25519 only",
        ),
        (
            rsa_p1.to_str().unwrap().into(),
            "an RSA key (PKCS#1): selfprobe signs with Ed25519 only",
        ),
        (
            rsa_ssh.to_str().unwrap().into(),
            "an OpenSSH ssh-rsa key: selfprobe signs with Ed25519 only",
        ),
        (truncated, "truncated PEM"),
        (ssh_truncated, "truncated PEM"),
        (empty, "empty: expected an Ed25519 private key"),
        (
            public.to_str().unwrap().into(),
            "a public key: expected the private key",
        ),
        (t.s("missing"), "cannot read it"),
        (t.s("root"), "not a regular file or pipe"),
    ];
    // Exit 2 with the source and what was wrong, nothing written; stderr.
    let refused = |s: &Signed, source: &str, want: &str| -> String {
        let err = String::from_utf8_lossy(&s.out.stderr).into_owned();
        assert_eq!(s.out.status.code(), Some(2), "{source}: {err}");
        assert!(
            err.contains(&format!("signing key from {source}: {want}")),
            "{source}: want {want:?}, got: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(s.out.stdout.is_empty());
        assert!(
            !s.attest.exists() && !s.report.exists() && !s.sig.exists(),
            "{source}: nothing is written"
        );
        err
    };
    for (path, want) in &cases {
        // The run, and `pubkey`, refuse it before doing anything else.
        let s = signed_run(&t, "json", &["--sign-key", path], &[]);
        let err = refused(&s, &format!("--sign-key {path}"), want);
        let o = Command::new(BIN)
            .args(["pubkey", "--sign-key", path])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "pubkey {path}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(want));
        // The same bytes on a descriptor, which is read while the probes
        // run: refused once they are done, the same way.
        let mut fd_err = String::new();
        if fs::metadata(path).is_ok_and(|m| m.is_file()) {
            let f = fs::File::open(path).unwrap();
            let s = signed_run_with(&t, "json", &["--sign-key-fd", "0"], &[], |c| {
                c.stdin(f);
            });
            fd_err = refused(&s, "--sign-key-fd 0", want);
        }
        // The passphrase-protected and truncated key files' bodies are not echoed.
        if let Ok(content) = fs::read_to_string(path) {
            for line in content
                .lines()
                .filter(|l| l.len() >= 16 && !l.starts_with("-----"))
            {
                assert!(!err.contains(line), "{path}: stderr echoes the key file");
                assert!(
                    !fd_err.contains(line),
                    "{path}: stderr echoes the key on fd 0"
                );
            }
        }
    }
}

#[test]
fn key_from_fd_and_env_and_file_sign_with_the_same_key() {
    if !tools("key_from_fd_and_env_and_file_sign_with_the_same_key") {
        return;
    }
    let t = Tmp::new("sources");
    let key = ssh_key(&t, "k");
    let (_, _, keyid) = pubkey(&key);
    let key_bytes = fs::read(&key).unwrap();

    let from_file = signed_run(&t, "json", &["--sign-key", key.to_str().unwrap()], &[]);
    ok(&from_file);
    let id = |s: &Signed| statement(&envelope(&s.attest))["predicate"]["signing"].clone();
    assert_eq!(id(&from_file)["keyid"], keyid.as_str());

    // fd 0, as `podman exec -i ctr selfprobe --sign-key-fd 0 … < key`.
    let s = signed_run_with(&t, "json", &["--sign-key-fd", "0"], &[], |c| {
        c.stdin(fs::File::open(&key).unwrap());
    });
    ok(&s);
    assert_eq!(id(&s)["keyid"], keyid.as_str());
    assert_eq!(id(&s)["key_source"], "fd");

    // A key that comes late on the descriptor (as an engine hands an exec
    // its standard input after starting it): the probes do not wait for it,
    // and the run still signs with it. Its writer waits 1.5 s: the run
    // began before the key was written.
    // Close-on-exec: the child must hold only the read end, or it never
    // sees the end of file.
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let writer = {
        let bytes = key_bytes.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            let at = selfprobe::host::rfc3339(std::time::SystemTime::now());
            fs::File::from(w).write_all(&bytes).unwrap();
            at
        })
    };
    let s = signed_run_with(&t, "json", &["--sign-key-fd", "0"], &[], |c| {
        c.stdin(Stdio::from(r));
    });
    let written_at = writer.join().unwrap();
    ok(&s);
    assert_eq!(id(&s)["keyid"], keyid.as_str());
    let rep: Value = serde_json::from_slice(&fs::read(&s.report).unwrap()).unwrap();
    let began = rep["run"]["started"].as_str().unwrap();
    assert!(
        began < written_at.as_str(),
        "the run began at {began}, after the key came at {written_at}: it waited for the key"
    );

    // Another fd number: 3, set up in the child.
    let s = signed_run_with(&t, "json", &["--sign-key-fd", "3"], &[], |c| {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let f = fs::File::open(&key).unwrap();
        // SAFETY: dup2 is async-signal-safe; f outlives the spawn.
        unsafe {
            c.pre_exec(move || {
                // dup2 onto itself would keep FD_CLOEXEC: clear it instead.
                let r = if f.as_raw_fd() == 3 {
                    nix::libc::fcntl(3, nix::libc::F_SETFD, 0)
                } else {
                    nix::libc::dup2(f.as_raw_fd(), 3)
                };
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    ok(&s);
    assert_eq!(id(&s)["keyid"], keyid.as_str());

    // The environment.
    let s = signed_run_with(&t, "json", &[], &[], |c| {
        c.env("SELFPROBE_SIGNING_KEY", OsStr::from_bytes(&key_bytes));
    });
    ok(&s);
    assert_eq!(id(&s)["keyid"], keyid.as_str());
    assert_eq!(id(&s)["key_source"], "env");
    assert_eq!(id(&s)["ephemeral"], false);

    // A pipe given as the file (as with `--sign-key <(vault read …)`): the
    // writer comes after selfprobe has started.
    let fifo = t.p("key.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let writer = {
        let (fifo, bytes) = (fifo.clone(), key_bytes.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            fs::write(&fifo, bytes).unwrap();
        })
    };
    let s = signed_run(&t, "json", &["--sign-key", fifo.to_str().unwrap()], &[]);
    writer.join().unwrap();
    ok(&s);
    assert_eq!(id(&s)["keyid"], keyid.as_str());
    assert_eq!(id(&s)["key_source"], "file");

    // Mistakes with sources are usage errors.
    for (args, env, want) in [
        (vec!["--sign-key-fd", "57"], false, "fd 57 is not open"),
        (vec!["--sign-key-fd", "1"], false, "fd 1 is standard output"),
        (
            vec!["--sign-key", key.to_str().unwrap()],
            true,
            "two signing keys given",
        ),
    ] {
        let s = signed_run_with(&t, "json", &args, &[], |c| {
            c.stdin(Stdio::null());
            if env {
                c.env("SELFPROBE_SIGNING_KEY", OsStr::from_bytes(&key_bytes));
            }
        });
        assert_eq!(s.out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&s.out.stderr).contains(want),
            "{args:?}: {}",
            String::from_utf8_lossy(&s.out.stderr)
        );
    }
    let o = Command::new(BIN)
        .args([
            "--sign-key-fd",
            "0",
            "--sign-key",
            key.to_str().unwrap(),
            "--attest",
            &t.s("x"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "both --sign-key and --sign-key-fd"
    );
}

#[test]
fn run_usage_errors_exit_2() {
    if !tools("run_usage_errors_exit_2") {
        return;
    }
    let t = Tmp::new("rusage");
    let key = pem_key(&t, "k.pem");
    let k = key.to_str().unwrap();
    let r = t.s("r.json");
    let root = t.s("root");
    for (args, want) in [
        (
            vec!["--sshsig", "s.sig"],
            "--sshsig signs the report file: expected -o FILE",
        ),
        (vec!["--sign-key", k], "nothing to sign"),
        (vec!["--attest", &r, "-o", &r], "are the same file"),
        (vec!["--attest", "a", "--nonce", "has space"], "--nonce"),
        (vec!["--attest", "a", "--nonce", ""], "--nonce"),
    ] {
        let o = Command::new(BIN)
            .args(["--root", &root])
            .args(&args)
            .env_remove("SELFPROBE_SIGNING_KEY")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
    }
    // An attestation that cannot be written is a probe failure (exit 3).
    let o = Command::new(BIN)
        .args(["--root", &root, "--fail-on", "none", "--format", "json"])
        .args(["--sign-key", k, "--attest", "/nonexistent/dir/a.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("--attest: cannot write /nonexistent/dir/a.json"));
    // The options are documented.
    let help = String::from_utf8(Command::new(BIN).arg("--help").output().unwrap().stdout).unwrap();
    for flag in [
        "--attest",
        "--sshsig",
        "--sign-key",
        "--sign-key-fd",
        "--nonce",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    for sub in ["verify", "pubkey"] {
        let o = Command::new(BIN).args([sub, "--help"]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{sub} --help");
    }
}

#[test]
fn the_text_report_says_how_it_was_signed() {
    if !tools("the_text_report_says_how_it_was_signed") {
        return;
    }
    let t = Tmp::new("textsig");
    let key = pem_key(&t, "k.pem");
    let s = signed_run(
        &t,
        "text",
        &["--sign-key", key.to_str().unwrap()],
        &["--nonce", "n-7"],
    );
    ok(&s);
    let report = fs::read_to_string(&s.report).unwrap();
    let keyid = pubkey(&key).2;
    assert!(
        report.contains(&format!(
            "signed (dsse, sshsig) keyid {keyid}  key from file\n"
        )),
        "{report}"
    );
    assert!(report.contains("\nnonce n-7\n"), "{report}");
    let s = signed_run(&t, "text", &[], &[]);
    ok(&s);
    assert!(fs::read_to_string(&s.report)
        .unwrap()
        .contains("ephemeral key: shows integrity, not who signed"));
    // Unsigned runs say nothing about signing.
    let o = Command::new(BIN)
        .args(["--root", &t.s("root"), "--fail-on", "none"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("signed ("));
}

#[test]
fn the_private_key_appears_in_no_output() {
    if !tools("the_private_key_appears_in_no_output") {
        return;
    }
    let t = Tmp::new("leak");
    let keys = [ssh_key(&t, "k.ssh"), pem_key(&t, "k.pem")];
    for key in &keys {
        let pats = leak_patterns(key);
        let key_bytes = fs::read(key).unwrap();
        let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
        for format in ["text", "json", "sarif", "junit"] {
            for source in ["file", "fd", "env"] {
                let s = match source {
                    "file" => signed_run(
                        &t,
                        format,
                        &["--sign-key", key.to_str().unwrap()],
                        &["--nonce", "n"],
                    ),
                    "fd" => signed_run_with(&t, format, &["--sign-key-fd", "0"], &[], |c| {
                        c.stdin(fs::File::open(key).unwrap());
                    }),
                    _ => signed_run_with(&t, format, &[], &[], |c| {
                        c.env("SELFPROBE_SIGNING_KEY", OsStr::from_bytes(&key_bytes));
                    }),
                };
                ok(&s);
                let tag = format!("{} {format} {source}", key.display());
                outputs.push((format!("{tag} stdout"), s.out.stdout.clone()));
                outputs.push((format!("{tag} stderr"), s.out.stderr.clone()));
                outputs.push((format!("{tag} -o"), fs::read(&s.report).unwrap()));
                outputs.push((format!("{tag} --attest"), fs::read(&s.attest).unwrap()));
                outputs.push((format!("{tag} payload"), payload(&envelope(&s.attest))));
                outputs.push((format!("{tag} --sshsig"), fs::read(&s.sig).unwrap()));
                // Report to stdout as well (no -o, so no --sshsig).
                let o = Command::new(BIN)
                    .args([
                        "--root",
                        &t.s("root"),
                        "--fail-on",
                        "none",
                        "--format",
                        format,
                    ])
                    .args([
                        "--sign-key",
                        key.to_str().unwrap(),
                        "--attest",
                        &t.s("a2.json"),
                    ])
                    .output()
                    .unwrap();
                assert_eq!(o.status.code(), Some(0));
                assert!(!o.stdout.is_empty());
                outputs.push((format!("{tag} stdout report"), o.stdout));
            }
        }
        let o = sh(Command::new(BIN).args(["pubkey", "--sign-key"]).arg(key));
        outputs.push(("pubkey".into(), o.stdout));
        let pubf = write(&t, "pub", pubkey(key).0);
        let o = verify(&["--pubkey", &pubf, &t.s("attest.json")]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        outputs.push(("verify".into(), [o.stdout, o.stderr].concat()));
        // Error paths that see the key: given to verify as a public key, and a
        // key with one byte cut from its end (a damaged copy).
        let o = verify(&["--pubkey", key.to_str().unwrap(), &t.s("attest.json")]);
        assert_eq!(o.status.code(), Some(2));
        outputs.push((
            "verify --pubkey PRIVATE".into(),
            [o.stdout, o.stderr].concat(),
        ));
        let cut = write(&t, "cut", &key_bytes[..key_bytes.len() - 40]);
        let s = signed_run(&t, "json", &["--sign-key", &cut], &[]);
        assert_eq!(s.out.status.code(), Some(2));
        outputs.push((
            "damaged key error".into(),
            [s.out.stdout, s.out.stderr].concat(),
        ));

        // The patterns do find the key where it is (the check can fail).
        assert!(pats
            .iter()
            .any(|(_, p)| key_bytes.windows(p.len()).any(|w| w == p.as_slice())));
        for (what, bytes) in &outputs {
            assert!(
                !bytes.is_empty() || what.ends_with("stdout") || what.ends_with("stderr"),
                "{what} is empty"
            );
            assert_no_leak(what, bytes, &pats);
        }
    }
}

/// SELFPROBE_SIGNING_KEY is gone from the process environment, including the
/// initial block /proc/PID/environ shows, before any probe runs. The run is
/// held at the policy read (a FIFO this test writes later), which comes after
/// main's first step; meanwhile its environ is read.
#[test]
fn env_key_is_cleared_from_proc_environ_before_probing() {
    if !tools("env_key_is_cleared_from_proc_environ_before_probing") {
        return;
    }
    let t = Tmp::new("environ");
    let key = pem_key(&t, "k.pem");
    let key_bytes = fs::read(&key).unwrap();
    let pats = leak_patterns(&key);
    let fifo = t.p("policy.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut child = Command::new(BIN)
        .args([
            "--root",
            &t.s("root"),
            "--fail-on",
            "none",
            "--format",
            "json",
        ])
        .arg("--policy")
        .arg(&fifo)
        .args(["-o", &t.s("r.json"), "--attest", &t.s("a.json")])
        .env("SELFPROBE_SIGNING_KEY", OsStr::from_bytes(&key_bytes))
        .env("SELFPROBE_TEST_MARK", "visible-marker")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the write end without blocking succeeds only once selfprobe
    // has the read end open, that is, once it is reading its policy.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut w = loop {
        match fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&fifo)
        {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => {
                let _ = child.kill();
                panic!("selfprobe never opened its policy: {e}");
            }
        }
    };
    let environ = fs::read(format!("/proc/{}/environ", child.id())).unwrap();
    w.write_all(b"").unwrap();
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Reading the right thing: the other variable is there.
    assert!(
        environ.windows(14).any(|w| w == b"visible-marker"),
        "environ read: {:?}",
        String::from_utf8_lossy(&environ)
    );
    assert_no_leak("/proc/PID/environ during the run", &environ, &pats);
    // And the run did sign with that key.
    let (_, _, keyid) = pubkey(&key);
    assert_eq!(
        statement(&envelope(&t.p("a.json")))["predicate"]["signing"]["keyid"],
        keyid.as_str()
    );
}
