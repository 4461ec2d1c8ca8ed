//! SHA-256 and SHA-512, on ring's digests: ring is linked for TLS anyway
//! (rustls), and its assembly is faster than RustCrypto's `sha2`, which
//! this replaced (31 KB of the shipped binary beside ring's own; bench/
//! RESULTS.md, "Size, issue 24"). Every run hashes its own binary.

use ring::digest;

/// An incremental SHA-256.
pub struct Sha256(digest::Context);

impl Default for Sha256 {
    fn default() -> Self {
        Sha256::new()
    }
}

impl Sha256 {
    pub fn new() -> Sha256 {
        Sha256(digest::Context::new(&digest::SHA256))
    }

    pub fn update(&mut self, bytes: impl AsRef<[u8]>) {
        self.0.update(bytes.as_ref());
    }

    pub fn finish(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.0.finish().as_ref());
        out
    }
}

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(bytes);
    h.finish()
}

/// Lower-case hex of `sha256(bytes)`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    super::codec::hex(&sha256(bytes))
}

pub fn sha512(bytes: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out.copy_from_slice(digest::digest(&digest::SHA512, bytes).as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut h = Sha256::new();
        h.update(b"a");
        h.update("bc");
        assert_eq!(h.finish(), sha256(b"abc"));
        assert_eq!(
            super::super::codec::hex(&sha512(b"abc")),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
             2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        );
    }
}
