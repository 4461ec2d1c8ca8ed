//! Private-key test helpers shared by the attestation suites: the key's
//! seed (read without selfprobe's code) and every form in which it could
//! leak into an output.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64ct::{Base64, Base64Url, Encoding};

/// The 32-byte seed of either kind of key, read without selfprobe's code.
pub fn seed_of(key: &Path) -> [u8; 32] {
    let text = fs::read_to_string(key).unwrap();
    if text.contains("OPENSSH PRIVATE KEY") {
        let k = ssh_key::PrivateKey::from_openssh(&text).unwrap();
        let kp = k.key_data().ed25519().unwrap();
        kp.private.to_bytes()
    } else {
        let (_, der) = ed25519_dalek::pkcs8::spki::der::pem::decode_vec(text.as_bytes()).unwrap();
        // openssl writes PKCS#8 v1 for Ed25519: a 16-byte header, then the seed.
        assert_eq!(der.len(), 48, "unexpected PKCS#8 layout");
        der[16..].try_into().unwrap()
    }
}

/// Every form in which the key could leak: raw, hex, base64 at each byte
/// alignment (so it is found inside any larger base64 blob, as in a PEM or
/// OpenSSH file), and each body line of the key file itself.
pub fn leak_patterns(key: &Path) -> Vec<(String, Vec<u8>)> {
    let seed = seed_of(key);
    let mut pats = vec![
        ("raw seed".to_string(), seed.to_vec()),
        ("hex seed".into(), hex(&seed).into_bytes()),
        ("HEX seed".into(), hex(&seed).to_uppercase().into_bytes()),
    ];
    for k in 0..3 {
        let n = (32 - k) / 3 * 3;
        let part = &seed[k..k + n];
        pats.push((
            format!("base64 seed @{k}"),
            Base64::encode_string(part).into_bytes(),
        ));
        pats.push((
            format!("base64url seed @{k}"),
            Base64Url::encode_string(part).into_bytes(),
        ));
    }
    let text = fs::read_to_string(key).unwrap();
    for line in text
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 16)
    {
        pats.push((
            format!("key file line {line:.8}…"),
            line.as_bytes().to_vec(),
        ));
    }
    pats
}

pub fn assert_no_leak(what: &str, hay: &[u8], pats: &[(String, Vec<u8>)]) {
    for (name, p) in pats {
        assert!(
            memchr::memmem::find(hay, p).is_none(),
            "{what} contains the private key ({name})"
        );
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether `hay` holds the key in any of its forms; the names of those found.
pub fn leaks(hay: &[u8], pats: &[(String, Vec<u8>)]) -> Vec<String> {
    pats.iter()
        .filter(|(_, p)| memchr::memmem::find(hay, p).is_some())
        .map(|(n, _)| n.clone())
        .collect()
}

/// A PKCS#8 PEM Ed25519 key made by openssl in `dir` (key.pem), or None
/// after a visible SKIP (a failure under CI=true).
pub fn openssl_key(test: &str, dir: &Path) -> Option<PathBuf> {
    let key = dir.join("key.pem");
    let ok = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        super::podman::skip_or_fail(
            test,
            "openssl cannot make an Ed25519 key (apt-get install -y openssl)",
        );
        return None;
    }
    Some(key)
}
