//! DSSE v1 (Dead Simple Signing Envelope): the pre-authentication encoding
//! and the JSON envelope, as in
//! https://github.com/secure-systems-lab/dsse/blob/master/protocol.md and
//! envelope.md. The signature covers PAE(payloadType, payload), never the
//! JSON around it, so a verifier needs only the envelope and the key.

use base64ct::{Base64, Encoding};
use serde::{Deserialize, Serialize};

use crate::keys::Signer;

/// The in-toto payload type (DSSE envelope carrying an in-toto Statement).
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// PAE = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, where LEN is
/// the byte length in ASCII decimal with no leading zeros.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload);
    out
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Signature {
    /// Optional in DSSE; ours is always set (see keys::keyid).
    #[serde(default)]
    pub keyid: String,
    /// Base64 of the 64-byte Ed25519 signature over the PAE.
    pub sig: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Envelope {
    /// Base64 (standard, padded) of the payload bytes.
    pub payload: String,
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub signatures: Vec<Signature>,
}

impl Envelope {
    /// Signs `payload` and wraps it.
    pub fn sign(signer: &Signer, payload_type: &str, payload: &[u8]) -> Envelope {
        let sig = signer.sign(&pae(payload_type, payload));
        Envelope {
            payload: Base64::encode_string(payload),
            payload_type: payload_type.to_string(),
            signatures: vec![Signature {
                keyid: signer.keyid(),
                sig: Base64::encode_string(&sig),
            }],
        }
    }

    /// The envelope as written to --attest: pretty JSON and a newline.
    pub fn to_json(&self) -> String {
        let mut s =
            serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        // protocol.md's worked example.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn pae_counts_bytes_not_chars() {
        let p = "é".as_bytes();
        assert_eq!(pae("t", p), [b"DSSEv1 1 t 2 ".as_slice(), p].concat());
    }
}
