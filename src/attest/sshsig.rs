//! OpenSSH SSHSIG (PROTOCOL.sshsig) over the exact bytes of the report file,
//! namespace "selfprobe", SHA-512: what `ssh-keygen -Y sign -n selfprobe`
//! makes and `ssh-keygen -Y verify -n selfprobe` checks.

use ed25519_dalek::VerifyingKey;

use super::keys::{self, SignError, Signer};
use super::SSHSIG_NAMESPACE;

/// The armored signature (`-----BEGIN SSH SIGNATURE-----`).
pub fn sign(signer: &Signer, report_bytes: &[u8]) -> Result<String, SignError> {
    signer.sshsig(SSHSIG_NAMESPACE, report_bytes)
}

/// Why an SSHSIG did not verify; each names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshsigError {
    Malformed(String),
    Namespace(String),
    WrongKey { signed_by: String },
    BadSignature,
}

/// Checks `sig_pem` over `msg` with `vk` in the selfprobe namespace.
pub fn verify(vk: &VerifyingKey, sig_pem: &[u8], msg: &[u8]) -> Result<(), SshsigError> {
    let sig =
        ssh_key::SshSig::from_pem(sig_pem).map_err(|e| SshsigError::Malformed(e.to_string()))?;
    if sig.namespace() != SSHSIG_NAMESPACE {
        return Err(SshsigError::Namespace(sig.namespace().to_string()));
    }
    let want = ssh_key::public::KeyData::from(ssh_key::public::Ed25519PublicKey::from(vk));
    if sig.public_key() != &want {
        let signed_by = match sig.public_key() {
            ssh_key::public::KeyData::Ed25519(k) => VerifyingKey::try_from(k)
                .map(|v| format!("keyid {}", keys::keyid(&v)))
                .unwrap_or_else(|_| "an invalid Ed25519 key".into()),
            other => format!("a {} key", other.algorithm().as_str()),
        };
        return Err(SshsigError::WrongKey { signed_by });
    }
    let pk = ssh_key::PublicKey::from(want);
    pk.verify(SSHSIG_NAMESPACE, msg, &sig)
        .map_err(|_| SshsigError::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_verify_and_catch_changes() {
        let s = Signer::ephemeral().unwrap();
        let vk = s.verifying_key();
        let pem = sign(&s, b"report\n").unwrap();
        assert!(pem.starts_with("-----BEGIN SSH SIGNATURE-----"));
        assert_eq!(verify(&vk, pem.as_bytes(), b"report\n"), Ok(()));
        assert_eq!(
            verify(&vk, pem.as_bytes(), b"report!"),
            Err(SshsigError::BadSignature)
        );
        let other = Signer::ephemeral().unwrap();
        assert!(matches!(
            verify(&other.verifying_key(), pem.as_bytes(), b"report\n"),
            Err(SshsigError::WrongKey { .. })
        ));
        let git = s.sshsig("git", b"report\n").unwrap();
        assert_eq!(
            verify(&vk, git.as_bytes(), b"report\n"),
            Err(SshsigError::Namespace("git".into()))
        );
        assert!(matches!(
            verify(&vk, b"junk", b"report\n"),
            Err(SshsigError::Malformed(_))
        ));
    }
}
