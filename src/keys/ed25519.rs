//! Ed25519 from ed25519-dalek (DESIGN.md §8: no hand-written cryptography,
//! no reading another crate's private layout). The probe once did this on
//! ring's Ed25519 with curve25519 field arithmetic of its own for the point
//! and small-order checks, and an `unsafe` overwrite of ring's key pair to
//! zero it: with the host side moved to `selfprobe-host` (issue 30) the
//! 0.1 MB dalek costs fits the probe again (docs/size.md). The types here
//! keep the shapes the rest of the probe uses (32 bytes in and out), so
//! formats and signatures are byte for byte what they were (RFC 8032 is
//! deterministic), which src/keys/tests.rs checks against dalek with its
//! pkcs8 and pem features, as the reference.

use ed25519_dalek::{Signer as _, Verifier as _};

/// A public key: 32 bytes that decode to a curve point.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerifyingKey([u8; 32]);

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VerifyingKey({})", crate::util::codec::hex(&self.0))
    }
}

/// 32 bytes that are not the encoding of a point on the curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAPoint;

impl std::fmt::Display for NotAPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the 32 bytes are not a point on the curve")
    }
}

impl VerifyingKey {
    /// Refuses 32 bytes that do not decode to a point, as dalek does.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<VerifyingKey, NotAPoint> {
        ed25519_dalek::VerifyingKey::from_bytes(bytes)
            .map(|_| VerifyingKey(*bytes))
            .map_err(|_| NotAPoint)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn dalek(&self) -> Option<ed25519_dalek::VerifyingKey> {
        // Checked in from_bytes: a VerifyingKey is only ever made of a point.
        ed25519_dalek::VerifyingKey::from_bytes(&self.0).ok()
    }

    /// RFC 8032 verification: what ssh-keygen and OpenSSL check.
    pub fn verify(&self, msg: &[u8], signature: &[u8; 64]) -> bool {
        let s = ed25519_dalek::Signature::from_bytes(signature);
        self.dalek().is_some_and(|k| k.verify(msg, &s).is_ok())
    }

    /// `verify`, and neither the key nor the signature's R a point of small
    /// order (dalek's `verify_strict`): a signature that verifies for many
    /// messages at once is refused.
    pub fn verify_strict(&self, msg: &[u8], signature: &[u8; 64]) -> bool {
        let s = ed25519_dalek::Signature::from_bytes(signature);
        self.dalek()
            .is_some_and(|k| k.verify_strict(msg, &s).is_ok())
    }

    /// A key of small order (dalek's `is_weak`), which `verify_strict`
    /// refuses.
    pub fn is_weak(&self) -> bool {
        self.dalek().is_none_or(|k| k.is_weak())
    }
}

/// A private key. dalek's overwrites itself when dropped (its `zeroize`
/// feature).
pub struct SigningKey(ed25519_dalek::SigningKey);

/// Only the public half shows.
impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("verifying_key", &self.verifying_key())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// The key whose RFC 8032 seed is `seed`.
    pub fn from_seed(seed: &[u8; 32]) -> SigningKey {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    /// The RFC 8032 seed: the private key itself.
    pub fn seed(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey(self.0.verifying_key().to_bytes())
    }

    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.0.sign(msg).to_bytes()
    }
}
