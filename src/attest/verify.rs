//! `selfprobe verify`: checks a DSSE envelope (and/or an SSHSIG over a
//! report file) against a public key the verifier trusts, and extracts what
//! was attested. Pure: bytes in, a Verdict out; src/report/verify.rs prints it.
//!
//! Nothing from the envelope is believed before its signature verifies: a
//! failed signature yields the problems and no attested content.

use serde_json::Value;

use super::dsse::{self, Envelope, PAYLOAD_TYPE};
use super::sshsig::{self, SshsigError};
use super::{
    image_subject, PREDICATE_TYPE, PREDICATE_TYPES, SSHSIG_NAMESPACE, STATEMENT_TYPE, TOOL_SUBJECT,
};
use crate::json_at;
use crate::keys::{self, VerifyingKey};
use crate::model::Report;

pub struct SshsigInput<'a> {
    pub sig_name: &'a str,
    pub sig: &'a [u8],
    pub report_name: &'a str,
    pub report: &'a [u8],
}

pub struct Inputs<'a> {
    pub pubkey: VerifyingKey,
    pub nonce: Option<&'a str>,
    /// The SHA-256 (hex) of the binary the verifier placed or trusts: the
    /// attested `tool.sha256` must be exactly this. None: not checked, and
    /// the verdict says so.
    pub binary_sha256: Option<&'a str>,
    /// (file name, bytes)
    pub envelope: Option<(&'a str, &'a [u8])>,
    pub sshsig: Option<SshsigInput<'a>>,
}

/// One failed check. `check` is a short stable name ("signature",
/// "wrong key", "payloadType", "predicateType", "nonce", …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub check: &'static str,
    pub message: String,
}

#[derive(Debug, Default)]
pub struct Verdict {
    /// keyid of --pubkey.
    pub keyid: String,
    pub envelope: Option<String>,
    pub sshsig: Option<(String, String)>,
    pub problems: Vec<Problem>,
    /// Checks that passed, in order.
    pub passed: Vec<String>,
    /// What the verifier should know that is not a failure.
    pub notes: Vec<String>,
    /// The attested predicate (the JSON report), once a signature over it
    /// verified.
    pub attested: Option<Value>,
    /// Whether the nonce in the attested report was compared with --nonce.
    pub nonce_checked: bool,
    /// Whether the attested tool.sha256 was compared with `binary_sha256`.
    pub binary_checked: bool,
    /// The statement's predicateType, once its signature verified (one of
    /// PREDICATE_TYPES); None for a report verified by its SSHSIG alone.
    pub predicate_type: Option<&'static str>,
}

impl Verdict {
    pub fn valid(&self) -> bool {
        self.problems.is_empty() && (self.envelope.is_some() || self.sshsig.is_some())
    }

    fn fail(&mut self, check: &'static str, message: String) {
        self.problems.push(Problem { check, message });
    }
}

/// Attacker-controlled strings are cut and escaped before they reach a
/// message: a verifier's terminal is not the envelope author's to drive.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(120).collect();
    // Debug quotes the string and escapes control and format characters.
    let mut out = format!("{cut:?}");
    if cut.len() < s.len() {
        out.push('…');
    }
    out
}

pub fn verify(inp: &Inputs) -> Verdict {
    let keyid = keys::keyid(&inp.pubkey);
    let mut v = Verdict {
        keyid: keyid.clone(),
        ..Verdict::default()
    };
    let mut predicate = None;
    if let Some((name, bytes)) = inp.envelope {
        v.envelope = Some(name.to_string());
        predicate = check_envelope(&mut v, bytes, &inp.pubkey, &keyid);
    }
    let mut report_json = None;
    let mut report_verified = false;
    if let Some(s) = &inp.sshsig {
        v.sshsig = Some((s.sig_name.to_string(), s.report_name.to_string()));
        match sshsig::verify(&inp.pubkey, s.sig, s.report) {
            Ok(()) => {
                report_verified = true;
                v.passed.push(format!(
                    "SSHSIG over {} (namespace {SSHSIG_NAMESPACE})",
                    s.report_name
                ));
                report_json = serde_json::from_slice::<Value>(s.report)
                    .ok()
                    .filter(Value::is_object);
            }
            Err(SshsigError::Malformed(e)) => v.fail(
                "sshsig",
                format!("{} is not an SSH signature ({e})", s.sig_name),
            ),
            Err(SshsigError::Namespace(ns)) => v.fail(
                "sshsig namespace",
                format!(
                    "the SSHSIG is for namespace {}, expected {SSHSIG_NAMESPACE:?}: it was made for another purpose",
                    shown(&ns)
                ),
            ),
            Err(SshsigError::WrongKey { signed_by }) => v.fail(
                "wrong key",
                format!(
                    "the SSHSIG was made by {signed_by}, and --pubkey is keyid {keyid}"
                ),
            ),
            Err(SshsigError::BadSignature) => v.fail(
                "sshsig",
                format!(
                    "the SSHSIG does not verify over {}: the report was changed after signing",
                    s.report_name
                ),
            ),
        }
    }

    match (&predicate, &report_json) {
        (Some(p), Some(r)) => {
            if p == r {
                v.passed
                    .push("the report file is the attested predicate".into());
            } else {
                v.fail(
                    "report",
                    format!(
                        "the signed report is not the one the envelope attests (run {} vs run {})",
                        shown(json_at!(r, Report => run.id).and_then(Value::as_str).unwrap_or("?")),
                        shown(json_at!(p, Report => run.id).and_then(Value::as_str).unwrap_or("?")),
                    ),
                );
            }
        }
        (Some(_), None) if report_verified => v.notes.push(
            "the report file is not JSON: the SSHSIG covers its bytes, but it is not compared with the envelope".into(),
        ),
        _ => {}
    }

    let attested = predicate.or(report_json);
    if let Some(p) = &attested {
        check_attested(&mut v, p, inp.nonce, &keyid);
        check_binary(&mut v, p, inp.binary_sha256);
    } else if inp.nonce.is_some() && v.problems.is_empty() && report_verified {
        v.fail(
            "nonce",
            "cannot check --nonce: the report is not JSON and no envelope was given".into(),
        );
    }
    v.attested = attested;
    v
}

fn check_envelope(v: &mut Verdict, bytes: &[u8], vk: &VerifyingKey, keyid: &str) -> Option<Value> {
    let env: Envelope = match serde_json::from_slice(bytes) {
        Ok(e) => e,
        Err(e) => {
            v.fail(
                "envelope",
                format!("not a DSSE envelope ({e}): expected a JSON object with payloadType, payload and signatures"),
            );
            return None;
        }
    };
    let type_ok = env.payload_type == PAYLOAD_TYPE;
    if type_ok {
        v.passed.push(format!("payloadType {PAYLOAD_TYPE}"));
    } else {
        v.fail(
            "payloadType",
            format!(
                "payloadType is {}, expected {PAYLOAD_TYPE:?}: the envelope's type was changed, or it does not carry an in-toto statement",
                shown(&env.payload_type)
            ),
        );
    }
    let Some(payload) = crate::util::codec::b64_decode(&env.payload) else {
        v.fail("payload", "the payload is not base64".into());
        return None;
    };
    if env.signatures.is_empty() {
        v.fail("signature", "the envelope has no signatures".into());
        return None;
    }
    let candidates: Vec<&dsse::Signature> = env
        .signatures
        .iter()
        .filter(|s| s.keyid.is_empty() || s.keyid == keyid)
        .collect();
    if candidates.is_empty() {
        let ids: Vec<String> = env.signatures.iter().map(|s| shown(&s.keyid)).collect();
        v.fail(
            "wrong key",
            format!(
                "the envelope is signed by keyid {}, and --pubkey is keyid {keyid}",
                ids.join(", ")
            ),
        );
        return None;
    }
    let pae = dsse::pae(&env.payload_type, &payload);
    let ok = candidates.iter().any(|s| {
        crate::util::codec::b64_decode(&s.sig)
            .and_then(|b| <[u8; 64]>::try_from(b.as_slice()).ok())
            .map(|b| vk.verify_strict(&pae, &b))
            .unwrap_or(false)
    });
    if !ok {
        v.fail(
            "signature",
            format!(
                "the Ed25519 signature does not verify with keyid {keyid}: the payload or payloadType was changed after signing, or the signature was"
            ),
        );
        return None;
    }
    v.passed.push(format!(
        "Ed25519 signature over the DSSE PAE, keyid {keyid}"
    ));
    if !type_ok {
        return None;
    }
    let mut st: Value = match serde_json::from_slice(&payload) {
        Ok(s) => s,
        Err(e) => {
            v.fail("statement", format!("the payload is not JSON ({e})"));
            return None;
        }
    };
    let ty = st.get("_type").and_then(Value::as_str).unwrap_or("");
    if ty != STATEMENT_TYPE {
        v.fail(
            "statement",
            format!("_type is {}, expected {STATEMENT_TYPE:?}", shown(ty)),
        );
        return None;
    }
    v.passed.push(format!("statement {STATEMENT_TYPE}"));
    let pt = st
        .get("predicateType")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(pt) = PREDICATE_TYPES.iter().copied().find(|t| *t == pt) else {
        v.fail(
            "predicateType",
            format!(
                "predicateType is {}, expected {PREDICATE_TYPE:?} (a report) or {:?} (a teardown statement)",
                shown(pt),
                PREDICATE_TYPES[1]
            ),
        );
        return None;
    };
    v.predicate_type = Some(pt);
    v.passed.push(format!("predicateType {pt}"));
    // Taken out, not copied: `summary` verifies a thousand of these.
    let Some(predicate) = st
        .as_object_mut()
        .and_then(|m| m.remove("predicate"))
        .filter(|p| p.is_object())
    else {
        v.fail("statement", "the statement has no predicate object".into());
        return None;
    };
    check_subjects(v, &st, &predicate);
    Some(predicate)
}

/// The subjects must name the binary (and the image, when recorded) with the
/// same digests as the predicate: a subject list edited on its own would be
/// caught by the signature, this catches a statement built inconsistently.
fn check_subjects(v: &mut Verdict, st: &Value, predicate: &Value) {
    let subjects = st
        .get("subject")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = |name: &str, digest: &str| {
        subjects.iter().any(|s| {
            s.get("name").and_then(Value::as_str) == Some(name)
                && s.pointer("/digest/sha256").and_then(Value::as_str) == Some(digest)
        })
    };
    let tool = json_at!(predicate, Report => tool.sha256)
        .and_then(Value::as_str)
        .unwrap_or("");
    if tool.is_empty() || !has(TOOL_SUBJECT, tool) {
        v.fail(
            "subject",
            format!(
                "no subject {TOOL_SUBJECT:?} with the predicate's tool.sha256 {}",
                shown(tool)
            ),
        );
        return;
    }
    if let Some((name, digest)) = image_subject(predicate) {
        if !has(&name, &digest) {
            v.fail(
                "subject",
                format!("no image subject {} with sha256 {digest}", shown(&name)),
            );
            return;
        }
    }
    v.passed.push("subjects match the predicate".into());
}

fn check_attested(v: &mut Verdict, p: &Value, nonce: Option<&str>, keyid: &str) {
    let named = json_at!(p, Report => signing => keyid).and_then(Value::as_str);
    match named {
        Some(k) if k == keyid => v.passed.push("the report names the key that signed it".into()),
        Some(k) => v.fail(
            "wrong key",
            format!(
                "the report says it was signed by keyid {}, but the signature is by keyid {keyid}: it was re-signed",
                shown(k)
            ),
        ),
        None => v.fail(
            "signing",
            "the report does not name its signing key (signing.keyid)".into(),
        ),
    }
    if json_at!(p, Report => signing => ephemeral).and_then(Value::as_bool) == Some(true) {
        v.notes.push(
            "the key was ephemeral (made for this run): the signature shows the report was not changed after signing, not who made it".into(),
        );
    }
    if let Some(root) = json_at!(p, Report => run.root).and_then(Value::as_str) {
        if root != "/" {
            v.notes.push(format!(
                "the run probed the directory tree {} (--root), not the live system it ran on",
                shown(root)
            ));
        }
    }
    let got = json_at!(p, Report => run.nonce).and_then(Value::as_str);
    match (nonce, got) {
        (Some(want), Some(got)) if want == got => {
            v.nonce_checked = true;
            v.passed.push("nonce matches --nonce".into());
        }
        (Some(want), Some(got)) => v.fail(
            "nonce",
            format!(
                "nonce mismatch: --nonce is {}, the attestation has {}: it was made for another challenge (or replayed)",
                shown(want),
                shown(got)
            ),
        ),
        (Some(want), None) => v.fail(
            "nonce",
            format!(
                "nonce mismatch: --nonce is {}, the attestation has none",
                shown(want)
            ),
        ),
        (None, _) => v.notes.push(
            "nonce not checked (no --nonce): the attestation may be from an earlier run".into(),
        ),
    }
}

/// The attested binary against the one the verifier placed: a signature by
/// the right key over a report made by another binary (an older release, or
/// one the workspace substituted) proves nothing about the placed one.
fn check_binary(v: &mut Verdict, p: &Value, want: Option<&str>) {
    let Some(want) = want else {
        v.notes.push(
            "binary not checked (no expected SHA-256): the report may have been made by another selfprobe binary".into(),
        );
        return;
    };
    let got = json_at!(p, Report => tool.sha256).and_then(Value::as_str);
    match got {
        Some(got) if got.eq_ignore_ascii_case(want) => {
            v.binary_checked = true;
            v.passed
                .push(format!("tool.sha256 is the expected binary {want}"));
        }
        Some(got) => v.fail(
            "binary",
            format!(
                "tool.sha256 is {}, expected {want}: the report was made by another binary than the one placed",
                shown(got)
            ),
        ),
        None => v.fail(
            "binary",
            format!("the attestation names no tool.sha256, expected {want}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Signer;
    use base64ct::{Base64, Encoding};
    use serde_json::json;

    fn signed(signer: &Signer, nonce: &str) -> (Vec<u8>, Value) {
        let predicate = json!({
            "tool": {"sha256": "ab".repeat(32)},
            "run": {"id": "r1", "nonce": nonce},
            "signing": {"keyid": signer.keyid(), "ephemeral": false},
        });
        let st = json!({
            "_type": STATEMENT_TYPE,
            "subject": [{"name": TOOL_SUBJECT, "digest": {"sha256": "ab".repeat(32)}}],
            "predicateType": PREDICATE_TYPE,
            "predicate": predicate,
        });
        let env = Envelope::sign(signer, PAYLOAD_TYPE, &serde_json::to_vec(&st).unwrap());
        (env.to_json().into_bytes(), st)
    }

    fn run(pubkey: VerifyingKey, nonce: Option<&str>, env: &[u8]) -> Verdict {
        verify(&Inputs {
            pubkey,
            nonce,
            binary_sha256: None,
            envelope: Some(("e.json", env)),
            sshsig: None,
        })
    }

    fn checks(v: &Verdict) -> Vec<&'static str> {
        v.problems.iter().map(|p| p.check).collect()
    }

    #[test]
    fn valid_envelope() {
        let s = Signer::ephemeral().unwrap();
        let (env, _) = signed(&s, "n1");
        let v = run(s.verifying_key(), Some("n1"), &env);
        assert!(v.valid(), "{:?}", v.problems);
        assert!(v.nonce_checked);
        assert_eq!(v.attested.unwrap()["run"]["id"], "r1");
    }

    #[test]
    fn each_tampering_is_named() {
        let s = Signer::ephemeral().unwrap();
        let (env, st) = signed(&s, "n1");
        assert_eq!(checks(&run(s.verifying_key(), Some("n2"), &env)), ["nonce"]);
        let other = Signer::ephemeral().unwrap();
        assert_eq!(
            checks(&run(other.verifying_key(), None, &env)),
            ["wrong key"]
        );

        let mut e: Envelope = serde_json::from_slice(&env).unwrap();
        e.payload_type = "application/json".into();
        let v = run(s.verifying_key(), None, e.to_json().as_bytes());
        assert_eq!(checks(&v), ["payloadType", "signature"]);
        assert!(v.attested.is_none());

        let mut payload = serde_json::to_vec(&st).unwrap();
        let i = payload.iter().position(|&b| b == b'r').unwrap();
        payload[i] = b's';
        let mut e: Envelope = serde_json::from_slice(&env).unwrap();
        e.payload = Base64::encode_string(&payload);
        let v = run(s.verifying_key(), None, e.to_json().as_bytes());
        assert_eq!(checks(&v), ["signature"]);
        assert!(v.attested.is_none());

        assert_eq!(checks(&run(s.verifying_key(), None, b"{}")), ["envelope"]);
    }

    #[test]
    fn the_binary_is_checked_when_expected() {
        let s = Signer::ephemeral().unwrap();
        let (env, _) = signed(&s, "n1");
        let with = |want: &str| {
            verify(&Inputs {
                pubkey: s.verifying_key(),
                nonce: Some("n1"),
                binary_sha256: Some(want),
                envelope: Some(("e.json", &env)),
                sshsig: None,
            })
        };
        let v = with(&"AB".repeat(32));
        assert!(v.valid(), "{:?}", v.problems);
        assert!(v.binary_checked);
        let v = with(&"cd".repeat(32));
        assert_eq!(checks(&v), ["binary"]);
        assert!(!v.binary_checked);
        let v = run(s.verifying_key(), Some("n1"), &env);
        assert!(!v.binary_checked);
        assert!(v.notes.iter().any(|n| n.contains("binary not checked")));
    }

    #[test]
    fn a_teardown_statement_verifies_and_says_its_type() {
        let s = Signer::ephemeral().unwrap();
        let (_, mut st) = signed(&s, "n1");
        st["predicateType"] = super::super::TEARDOWN_PREDICATE_TYPE.into();
        let env = Envelope::sign(&s, PAYLOAD_TYPE, &serde_json::to_vec(&st).unwrap());
        let v = run(s.verifying_key(), Some("n1"), env.to_json().as_bytes());
        assert!(v.valid(), "{:?}", v.problems);
        assert_eq!(
            v.predicate_type,
            Some(super::super::TEARDOWN_PREDICATE_TYPE)
        );
        st["predicateType"] = "https://example.com/other".into();
        let env = Envelope::sign(&s, PAYLOAD_TYPE, &serde_json::to_vec(&st).unwrap());
        let v = run(s.verifying_key(), None, env.to_json().as_bytes());
        assert_eq!(checks(&v), ["predicateType"]);
    }

    #[test]
    fn re_signed_statement_is_caught() {
        let s = Signer::ephemeral().unwrap();
        let (_, st) = signed(&s, "n1");
        let other = Signer::ephemeral().unwrap();
        let env = Envelope::sign(&other, PAYLOAD_TYPE, &serde_json::to_vec(&st).unwrap());
        let v = run(other.verifying_key(), None, env.to_json().as_bytes());
        assert_eq!(checks(&v), ["wrong key"]);
        assert!(v.problems[0].message.contains("re-signed"));
    }

    #[test]
    fn shown_escapes_controls() {
        let s = shown("a\u{1b}[2J\u{202e}");
        assert!(!s.contains('\u{1b}') && !s.contains('\u{202e}'), "{s}");
        assert!(shown(&"x".repeat(500)).len() < 130);
    }
}
