//! OpenSSH SSHSIG (PROTOCOL.sshsig) over the exact bytes of the report file,
//! namespace "selfprobe", SHA-512: what `ssh-keygen -Y sign -n selfprobe`
//! makes and `ssh-keygen -Y verify -n selfprobe` checks. The format is
//! src/keys/mod.rs's and src/keys/openssh.rs's (the ssh-key crate did it before;
//! the tests check against it and against ssh-keygen).

use super::SSHSIG_NAMESPACE;
use crate::keys::{self, OpensshKey, OpensshMalformed, OpensshReader, Signer, VerifyingKey};

/// The armored signature (`-----BEGIN SSH SIGNATURE-----`).
pub fn sign(signer: &Signer, report_bytes: &[u8]) -> String {
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

/// An SSHSIG's fields (PROTOCOL.sshsig).
struct SshSig<'a> {
    public_key: &'a [u8],
    namespace: &'a str,
    reserved: &'a [u8],
    hash: &'static str,
    signature: &'a [u8],
}

fn parse(blob: &[u8]) -> Result<SshSig<'_>, OpensshMalformed> {
    let mut r = OpensshReader::new(blob);
    if r.bytes(6)? != keys::SSHSIG_MAGIC {
        return Err(OpensshMalformed("no SSHSIG preamble"));
    }
    if r.u32()? != 1 {
        return Err(OpensshMalformed("not version 1"));
    }
    let public_key = r.string()?;
    let namespace = std::str::from_utf8(r.string()?)
        .map_err(|_| OpensshMalformed("the namespace is not UTF-8"))?;
    let reserved = r.string()?;
    let hash = match r.string()? {
        b"sha512" => "sha512",
        b"sha256" => "sha256",
        _ => return Err(OpensshMalformed("the hash is neither sha256 nor sha512")),
    };
    let signature = r.string()?;
    if !r.is_empty() {
        return Err(OpensshMalformed("trailing data after the signature"));
    }
    Ok(SshSig {
        public_key,
        namespace,
        reserved,
        hash,
        signature,
    })
}

/// Checks `sig_pem` over `msg` with `vk` in the selfprobe namespace.
pub fn verify(vk: &VerifyingKey, sig_pem: &[u8], msg: &[u8]) -> Result<(), SshsigError> {
    let malformed = |e: OpensshMalformed| SshsigError::Malformed(e.to_string());
    let text =
        std::str::from_utf8(sig_pem).map_err(|_| SshsigError::Malformed("not text".into()))?;
    let blob = keys::sshsig_unarmor(text).map_err(malformed)?;
    let sig = parse(&blob).map_err(malformed)?;
    if sig.namespace != SSHSIG_NAMESPACE {
        return Err(SshsigError::Namespace(sig.namespace.to_string()));
    }
    match keys::parse_public_blob(sig.public_key).map_err(malformed)? {
        OpensshKey::Ed25519(k) if &k == vk.as_bytes() => {}
        OpensshKey::Ed25519(k) => {
            let signed_by = VerifyingKey::from_bytes(&k)
                .map(|v| format!("keyid {}", keys::keyid(&v)))
                .unwrap_or_else(|_| "an invalid Ed25519 key".into());
            return Err(SshsigError::WrongKey { signed_by });
        }
        OpensshKey::Other(alg) => {
            return Err(SshsigError::WrongKey {
                signed_by: format!("a {alg} key"),
            })
        }
    }
    let hashed = match sig.hash {
        "sha256" => crate::util::digest::sha256(msg).to_vec(),
        _ => crate::util::digest::sha512(msg).to_vec(),
    };
    let signed = keys::sshsig_signed_data(sig.namespace, sig.reserved, sig.hash, &hashed);
    let mut r = OpensshReader::new(sig.signature);
    let ed25519: Option<[u8; 64]> = match (r.string(), r.string()) {
        (Ok(b"ssh-ed25519"), Ok(s)) if r.is_empty() => s.try_into().ok(),
        _ => None,
    };
    match ed25519 {
        Some(s) if vk.verify(&signed, &s) => Ok(()),
        _ => Err(SshsigError::BadSignature),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_then_verify_and_catch_changes() {
        let s = Signer::ephemeral().unwrap();
        let vk = s.verifying_key();
        let pem = sign(&s, b"report\n");
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
        let git = s.sshsig("git", b"report\n");
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
