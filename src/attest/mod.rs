//! Signed findings (docs/signing.md): a DSSE envelope carrying an in-toto
//! Statement v1 whose predicate is the JSON report, and an OpenSSH SSHSIG
//! over the exact report bytes. Both are formats that third-party tools
//! verify (securesystemslib, ssh-keygen -Y verify, openssl pkeyutl), so the
//! evidence outlives the workspace and selfprobe itself.
//!
//! What the statement binds, and where:
//! - the probe binary's SHA-256: a subject (name "selfprobe"), and
//!   predicate.tool.sha256;
//! - the image identity, when a probe recorded it: a subject (see
//!   `image_subject`), and the predicate's inventory;
//! - start and end times: predicate.run.started / predicate.run.finished;
//! - the verifier's nonce: predicate.run.nonce;
//! - the signing key and whether it was ephemeral: predicate.signing.

pub mod dsse;
pub mod sshsig;
pub mod verify;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Value};

use crate::json_at;
use crate::keys::{self, Signer};
use crate::model::{self, Report, SigningInfo, Text};

pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate is the JSON report, so its type is the report's schema.
pub const PREDICATE_TYPE: &str = model::SCHEMA;
/// The predicate of a teardown statement (`selfprobe-host teardown`, made on the
/// host after a workspace is removed): what remained of it. It carries
/// `tool`, `run` and `signing` like a report, so the same checks apply.
pub const TEARDOWN_PREDICATE_TYPE: &str = "https://selfprobe.dev/schema/teardown/v1";
/// Every predicate type `verify` accepts.
pub const PREDICATE_TYPES: [&str; 2] = [PREDICATE_TYPE, TEARDOWN_PREDICATE_TYPE];
/// The SSHSIG namespace: a signature made for selfprobe cannot be replayed
/// as one for git, file or any other namespace, and vice versa.
pub const SSHSIG_NAMESPACE: &str = "selfprobe";
/// The subject name of the probe binary.
pub const TOOL_SUBJECT: &str = "selfprobe";

/// The largest nonce accepted: a verifier's challenge, not a document.
pub const MAX_NONCE: usize = 256;

/// The report's signing section for `signer`.
pub fn signing_info(signer: &Signer, dsse: bool, sshsig: bool) -> SigningInfo {
    let vk = signer.verifying_key();
    let mut formats = Vec::new();
    if dsse {
        formats.push("dsse");
    }
    if sshsig {
        formats.push("sshsig");
    }
    SigningInfo {
        algorithm: "ed25519".into(),
        keyid: signer.keyid(),
        public_key: keys::public_openssh(&vk),
        ephemeral: signer.is_ephemeral(),
        key_source: signer.source.into(),
        formats: formats.into_iter().map(Text::from).collect(),
    }
}

/// Why a `--nonce` value was refused. The words are the same for each: what
/// a nonce must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceError {
    Empty,
    /// Longer than MAX_NONCE bytes.
    TooLong,
    /// A byte that is not printable ASCII, or a space.
    NotPrintable,
}

impl fmt::Display for NonceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--nonce: expected 1 to {MAX_NONCE} printable ASCII characters without spaces (e.g. the output of `openssl rand -hex 16`)"
        )
    }
}

impl std::error::Error for NonceError {}

/// Checks a `--nonce` value: printable ASCII without spaces, at most
/// MAX_NONCE bytes, so it can be compared and shown as it is.
pub fn check_nonce(n: &str) -> Result<(), NonceError> {
    if n.is_empty() {
        return Err(NonceError::Empty);
    }
    if n.len() > MAX_NONCE {
        return Err(NonceError::TooLong);
    }
    if !n.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(NonceError::NotPrintable);
    }
    Ok(())
}

/// Why no statement (or envelope) could be made.
#[derive(Debug)]
pub enum AttestError {
    /// The report does not serialize to JSON.
    Report(serde_json::Error),
    /// The probe binary's SHA-256 is unknown, and a statement must name it.
    NoToolDigest,
    /// The statement does not serialize to JSON.
    Statement(serde_json::Error),
}

impl fmt::Display for AttestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttestError::Report(e) => {
                write!(f, "cannot attest: the report does not serialize ({e})")
            }
            AttestError::NoToolDigest => f.write_str(
                "cannot attest: the probe binary's SHA-256 is unknown (/proc/self/exe was unreadable), and a statement must name the binary that made it",
            ),
            AttestError::Statement(e) => {
                write!(f, "cannot attest: the statement does not serialize ({e})")
            }
        }
    }
}

impl std::error::Error for AttestError {}

/// The in-toto Statement v1 for a report.
pub fn statement(report: &Report) -> Result<Value, AttestError> {
    // Through the JSON text the report renders to (report/json.rs) rather
    // than serde_json::to_value: a second serializer of every report type
    // cost 30 KB of the binary (bench/RESULTS.md, "Size, issue 24"). The
    // value is the same: the text carries strings and integers exactly, and
    // the report's only floats (network latencies) have one decimal.
    let text = serde_json::to_string_pretty(report).map_err(AttestError::Report)?;
    let predicate: Value = serde_json::from_str(&text).map_err(AttestError::Report)?;
    let tool = report
        .tool
        .sha256
        .as_deref()
        .ok_or(AttestError::NoToolDigest)?;
    let mut subject = vec![subject_entry(TOOL_SUBJECT, tool)];
    if let Some((name, digest)) = image_subject(&predicate) {
        subject.push(subject_entry(&name, &digest));
    }
    Ok(json!({
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }))
}

fn subject_entry(name: &str, sha256: &str) -> Value {
    let mut digest = BTreeMap::new();
    digest.insert("sha256", sha256);
    json!({"name": name, "digest": digest})
}

/// The image subject, from the report's `inventory.image` when a probe
/// recorded one: `digest` ("sha256:<hex>" or bare hex) and, optionally,
/// `reference` (e.g. "registry/app@sha256:…"). Phase 4 (reproducibility)
/// fills it; until then it is absent and no image subject is made. An
/// identity without a SHA-256 digest is in the predicate only: in-toto
/// subjects need a digest, and none is invented.
pub fn image_subject(predicate: &Value) -> Option<(String, String)> {
    let digest = json_at!(predicate, Report => inventory.image => digest)?.as_str()?;
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let name = json_at!(predicate, Report => inventory.image => reference)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("container-image");
    Some((name.to_string(), hex.to_ascii_lowercase()))
}

/// The --attest file's content: the statement, signed, in a DSSE envelope.
pub fn envelope(report: &Report, signer: &Signer) -> Result<String, AttestError> {
    let st = statement(report)?;
    let payload = serde_json::to_vec(&st).map_err(AttestError::Statement)?;
    Ok(dsse::Envelope::sign(signer, dsse::PAYLOAD_TYPE, &payload).to_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_subject_only_with_a_real_digest() {
        let hex = "ab".repeat(32);
        let p = json!({"inventory": {"image": {"digest": format!("sha256:{hex}"), "reference": "r/app"}}});
        assert_eq!(image_subject(&p), Some(("r/app".into(), hex.clone())));
        let p = json!({"inventory": {"image": {"digest": hex.to_uppercase()}}});
        assert_eq!(image_subject(&p), Some(("container-image".into(), hex)));
        for d in ["sha256:abc", "latest", ""] {
            let p = json!({"inventory": {"image": {"digest": d}}});
            assert_eq!(image_subject(&p), None, "{d}");
        }
        assert_eq!(image_subject(&json!({"inventory": {}})), None);
    }

    #[test]
    fn nonce_rules() {
        assert!(check_nonce("3f9a-01").is_ok());
        assert!(check_nonce(&"a".repeat(MAX_NONCE)).is_ok());
        for bad in ["a b", "x\n", "\u{1b}[31m", "é"] {
            assert_eq!(check_nonce(bad), Err(NonceError::NotPrintable), "{bad:?}");
        }
        assert_eq!(check_nonce(""), Err(NonceError::Empty));
        assert_eq!(
            check_nonce(&"a".repeat(MAX_NONCE + 1)),
            Err(NonceError::TooLong)
        );
        for e in [
            NonceError::Empty,
            NonceError::TooLong,
            NonceError::NotPrintable,
        ] {
            assert_eq!(
                e.to_string(),
                "--nonce: expected 1 to 256 printable ASCII characters without spaces (e.g. the output of `openssl rand -hex 16`)"
            );
        }
    }
}
