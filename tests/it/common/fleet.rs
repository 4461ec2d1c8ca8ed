//! Helpers for the `diff` and `summary` suites: inspection directories
//! built by hand following docs/inspection-directory.md (the inspect and teardown
//! commands are another branch's), from real reports and envelopes; a
//! teardown statement signed as `selfprobe-host teardown` signs one; an envelope
//! changed after signing; the canaries' grep; and headless Chromium.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64ct::{Base64, Encoding};
use serde_json::{json, Value};

use selfprobe::attest::dsse::{Envelope, PAYLOAD_TYPE};
use selfprobe::attest::{STATEMENT_TYPE, TEARDOWN_PREDICATE_TYPE, TOOL_SUBJECT};
use selfprobe::keys;

use super::podman::{run_bounded, skip_or_fail, Output};

/// The signer of a PKCS#8 or OpenSSH key file, through selfprobe's own key
/// loading (what `--sign-key FILE` does).
pub fn signer(key: &Path) -> keys::Signer {
    keys::load(Some(&keys::KeySource::File(key.to_path_buf())), None)
        .unwrap()
        .expect("a key")
}

/// A teardown statement (docs/inspection-directory.md, "The teardown statement") for
/// `container`, signed by `key`: the envelope's JSON.
pub fn teardown_statement(
    key: &Path,
    container: &str,
    nonce: &str,
    result: &str,
    score: u8,
    tool_sha256: &str,
) -> String {
    let s = signer(key);
    let vk = s.verifying_key();
    let predicate = json!({
        "schema": TEARDOWN_PREDICATE_TYPE,
        "tool": {"name": "selfprobe", "version": "0.1.0", "sha256": tool_sha256},
        "run": {"id": format!("td-{container}"), "started": "2026-12-01T10:00:00Z",
                "finished": "2026-12-01T10:00:01Z", "nonce": nonce},
        "signing": {"keyid": s.keyid(), "public_key": keys::public_openssh(&vk), "ephemeral": false},
        "inspection": "insp-1",
        "container": {"id": format!("{container}-id"), "name": container, "image": "img", "exists": false},
        "volumes": [{"name": format!("{container}-cache"), "anonymous": false, "remains": result == "remains", "retained": null}],
        "canaries": [],
        "result": result,
        "findings": if result == "remains" {
            json!([{"id": "aaaaaaaaaaaa", "code": "teardown.persistent-writable", "severity": "medium",
                    "status": "fail", "phase": 6, "control": "teardown",
                    "title": "Writable persistent storage would survive teardown",
                    "subject": format!("{container}-cache"),
                    "message": format!("volume {container}-cache remains after the container is gone"),
                    "evidence": {}, "remediation": "Remove the volume, or list it in the policy's retained list with an owner and an expiry."}])
        } else { json!([]) },
        "control": {"id": "teardown", "score": score, "status": "assessed",
                    "reason": format!("the container and its volumes: {result}")},
    });
    let st = json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": TOOL_SUBJECT, "digest": {"sha256": tool_sha256}}],
        "predicateType": TEARDOWN_PREDICATE_TYPE,
        "predicate": predicate,
    });
    Envelope::sign(&s, PAYLOAD_TYPE, &serde_json::to_vec(&st).unwrap()).to_json()
}

/// `envelope` with its report's first finding made less severe and its exit
/// code cleared, the signature left as it was: a change after signing.
pub fn tamper(envelope: &str) -> String {
    let mut e: Value = serde_json::from_str(envelope).unwrap();
    let payload = Base64::decode_vec(e["payload"].as_str().unwrap()).unwrap();
    let mut st: Value = serde_json::from_slice(&payload).unwrap();
    st["predicate"]["summary"]["exit_code"] = json!(0);
    if let Some(f) = st["predicate"]["findings"].get_mut(0) {
        f["severity"] = json!("info");
    }
    e["payload"] = json!(Base64::encode_string(&serde_json::to_vec(&st).unwrap()));
    e.to_string()
}

/// Text as an HTML serialiser writes it (what --dump-dom prints): `&`, `<`
/// and `>` escaped, quotes not.
pub fn dom_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Every output that holds one of `canaries`, with which: must be empty.
pub fn leaks(outputs: &[(String, Vec<u8>)], canaries: &[String]) -> Vec<String> {
    let mut bad = Vec::new();
    for (what, bytes) in outputs {
        let text = String::from_utf8_lossy(bytes);
        for c in canaries {
            if text.contains(c.as_str()) {
                bad.push(format!("{what} holds the canary {c}"));
            }
        }
    }
    bad
}

/// A canary value: unique to this test run, long enough never to occur
/// by chance.
pub fn canary(tag: &str) -> String {
    use sha2::{Digest, Sha256};
    let seed = format!(
        "{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    );
    let d = Sha256::digest(seed.as_bytes());
    d.iter().take(18).map(|b| format!("{b:02x}")).collect()
}

/// Debian's headless Chromium, or None after a SKIP (a failure under CI).
pub fn chromium(test: &str) -> Option<PathBuf> {
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).is_file() {
            return Some(PathBuf::from(p));
        }
    }
    skip_or_fail(test, "no chromium; apt-get install -y chromium");
    None
}

/// Chromium, headless and quiet: no sandbox (root), no GPU, no network of
/// its own (no QUIC, no background fetches, no component updates, no sync),
/// a fresh profile in `profile`, then `args` and the page.
pub fn chromium_run(bin: &Path, profile: &Path, args: &[&str], url: &str) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(url);
    run_bounded(cmd, Duration::from_secs(90), None).unwrap_or_else(|e| panic!("chromium: {e}"))
}

/// What `selfprobe-host diff` and `selfprobe-host summary` print about `report`, in
/// every format, for the canary suites' grep: diff against the same report
/// with every list of its inventory emptied (so each entry is "only in A",
/// its value printed), and summary of the report copied by hand.
pub fn host_side_outputs(report: &Value) -> Vec<(String, String)> {
    fn empty_lists(v: &mut Value) {
        match v {
            Value::Array(a) => a.clear(),
            Value::Object(m) => m.values_mut().for_each(empty_lists),
            _ => {}
        }
    }
    let dir = super::podman::TempPath::dir("hostside").unwrap();
    let a = dir.path.join("report.json");
    std::fs::write(&a, report.to_string()).unwrap();
    let mut bare = report.clone();
    empty_lists(&mut bare["inventory"]);
    let b = dir.path.join("emptied.json");
    std::fs::write(&b, bare.to_string()).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(super::shipped::host_bin())
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let mut out = Vec::new();
    for f in ["text", "json"] {
        out.push((format!("diff {f}"), run(&["diff", "--format", f, a, b])));
    }
    for f in ["text", "json", "sarif", "junit", "html"] {
        out.push((format!("summary {f}"), run(&["summary", "--format", f, a])));
    }
    assert!(
        out[1].1.contains("\"only in A\""),
        "the diff shows the report's entries: {}",
        out[1].1
    );
    out
}
