//! OpenSSH's formats, for Ed25519: the wire encoding (RFC 4251 strings),
//! the `ssh-ed25519 AAAA…` public line, the private key file
//! (PROTOCOL.key) and the armor around a key or an SSHSIG. The `ssh-key`
//! crate, which this replaced, was 30 KB of the shipped binary with its
//! PEM and encoding crates, and pulled in the RustCrypto Ed25519 and SHA-2
//! that ring already does (bench/RESULTS.md, "Size, issue 24"); the tests
//! check this against it (src/keys/tests.rs) and against ssh-keygen
//! (tests/it/attest.rs).

use zeroize::Zeroizing;

use super::ed25519::VerifyingKey;
use crate::util::codec::{b64_decode, b64_encode};

pub const ED25519: &str = "ssh-ed25519";

/// What was wrong with OpenSSH data: a description, never its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

const TRUNCATED: Malformed = Malformed("the data ends early");

/// Reads the wire encoding: big-endian u32s and length-prefixed strings.
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader(b)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(TRUNCATED);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }

    pub fn u32(&mut self) -> Result<u32, Malformed> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn string(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u32()? as usize;
        self.bytes(n)
    }

    /// A string that names something (an algorithm, a namespace): short
    /// printable ASCII, as ssh-key required of algorithm names.
    pub fn name(&mut self) -> Result<&'a str, Malformed> {
        let b = self.string()?;
        if b.is_empty() || b.len() > 256 || !b.iter().all(|c| c.is_ascii_graphic()) {
            return Err(Malformed("a name in it is not printable ASCII"));
        }
        Ok(std::str::from_utf8(b).expect("ASCII"))
    }
}

pub fn put_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&n.to_be_bytes());
}

pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s);
}

/// The public key blob: string "ssh-ed25519", string the 32 bytes.
pub fn public_blob(vk: &VerifyingKey) -> Vec<u8> {
    let mut b = Vec::with_capacity(51);
    put_string(&mut b, ED25519.as_bytes());
    put_string(&mut b, vk.as_bytes());
    b
}

/// `ssh-ed25519 AAAA…`, no comment.
pub fn public_line(vk: &VerifyingKey) -> String {
    format!("{ED25519} {}", b64_encode(&public_blob(vk)))
}

/// A public key blob's key: Ed25519 (its 32 bytes), or the algorithm it
/// names instead.
pub enum PublicKey {
    Ed25519([u8; 32]),
    Other(String),
}

pub fn parse_public_blob(blob: &[u8]) -> Result<PublicKey, Malformed> {
    let mut r = Reader::new(blob);
    let alg = r.name()?;
    if alg != ED25519 {
        return Ok(PublicKey::Other(alg.to_string()));
    }
    let key: [u8; 32] = r
        .string()?
        .try_into()
        .map_err(|_| Malformed("an Ed25519 key that is not 32 bytes"))?;
    if !r.is_empty() {
        return Err(Malformed("trailing data after the key"));
    }
    Ok(PublicKey::Ed25519(key))
}

/// The key of an `ALGORITHM BASE64` public line (authorized_keys form).
pub fn parse_public_line(alg: &str, b64: &str) -> Result<PublicKey, Malformed> {
    let blob = b64_decode(b64).ok_or(Malformed("the base64 is invalid"))?;
    let key = parse_public_blob(&blob)?;
    let named = match &key {
        PublicKey::Ed25519(_) => ED25519,
        PublicKey::Other(a) => a,
    };
    if named != alg {
        return Err(Malformed(
            "the algorithm before the key is not the one inside it",
        ));
    }
    Ok(key)
}

/// ssh-keygen's armor: the base64 in lines of 70, between BEGIN and END.
pub fn armor(label: &str, bytes: &[u8]) -> String {
    let b64 = b64_encode(bytes);
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(70) {
        s.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

/// The bytes inside `-----BEGIN {label}-----` … `-----END {label}-----`:
/// the base64 lines between them, however wrapped.
pub fn unarmor(label: &str, text: &str) -> Result<Zeroizing<Vec<u8>>, Malformed> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let text = text.trim();
    let body = text
        .strip_prefix(begin.as_str())
        .ok_or(Malformed("no BEGIN line where the text starts"))?;
    let body = body
        .strip_suffix(end.as_str())
        .ok_or(Malformed("no END line where the text ends"))?;
    let b64: Zeroizing<String> = Zeroizing::new(
        body.split_ascii_whitespace()
            .collect::<Vec<&str>>()
            .concat(),
    );
    b64_decode(&b64).map(Zeroizing::new).ok_or(Malformed(
        "the base64 between the BEGIN and END lines is invalid",
    ))
}

/// What an OpenSSH private key file holds.
pub enum PrivateKey {
    /// An unencrypted Ed25519 key: its seed.
    Ed25519(Zeroizing<[u8; 32]>),
    /// A passphrase protects it.
    Encrypted,
    /// A key of another algorithm (the name is checked printable ASCII).
    Other(String),
}

const MAGIC: &[u8] = b"openssh-key-v1\0";

/// Parses `-----BEGIN OPENSSH PRIVATE KEY-----` text (PROTOCOL.key).
pub fn parse_private(text: &str) -> Result<PrivateKey, Malformed> {
    let data = unarmor("OPENSSH PRIVATE KEY", text)?;
    let mut r = Reader::new(&data);
    if r.bytes(MAGIC.len())? != MAGIC {
        return Err(Malformed("not an openssh-key-v1 key"));
    }
    let cipher = r.name()?;
    let kdf = r.name()?;
    let kdf_options = r.string()?;
    if r.u32()? != 1 {
        return Err(Malformed("not one key in the file"));
    }
    let public = parse_public_blob(r.string()?)?;
    let private = r.string()?;
    if !r.is_empty() {
        return Err(Malformed("trailing data after the key"));
    }
    if cipher != "none" {
        return Ok(PrivateKey::Encrypted);
    }
    if kdf != "none" || !kdf_options.is_empty() {
        return Err(Malformed("a key derivation for an unencrypted key"));
    }
    let public = match public {
        PublicKey::Ed25519(k) => k,
        PublicKey::Other(alg) => return Ok(PrivateKey::Other(alg)),
    };
    // Checked as ssh-key checked it: whole cipher blocks (8 bytes for
    // none), equal check numbers, the same public key three times over
    // (the one the seed gives among them), padding 1, 2, 3, ….
    if private.len() % 8 != 0 {
        return Err(Malformed("the private part is not whole blocks"));
    }
    let mut p = Reader::new(private);
    if p.u32()? != p.u32()? {
        return Err(Malformed("its check numbers differ"));
    }
    if p.name()? != ED25519 {
        return Err(Malformed("the private part names another algorithm"));
    }
    if p.string()? != public {
        return Err(Malformed("the private part's public key is another key"));
    }
    let both = p.string()?;
    if both.len() != 64 || both[32..] != public {
        return Err(Malformed("the private part is not an Ed25519 key pair"));
    }
    let _comment = p.string()?;
    let pad = p.0;
    if pad.len() >= 8 || pad.iter().enumerate().any(|(i, &b)| b as usize != i + 1) {
        return Err(Malformed("its padding is not 1, 2, 3, …"));
    }
    let mut seed = Zeroizing::new([0u8; 32]);
    seed.copy_from_slice(&both[..32]);
    if super::ed25519::SigningKey::from_seed(&seed)
        .verifying_key()
        .as_bytes()
        != &public
    {
        return Err(Malformed("the private key is not the public key's"));
    }
    Ok(PrivateKey::Ed25519(seed))
}
