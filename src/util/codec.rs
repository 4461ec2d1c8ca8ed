//! The byte codecs, on base64ct (constant-time, no unsafe): base64 in, in
//! any of the four RFC 4648 forms the inputs use (DSSE says decoders accept
//! both alphabets; JWTs are URL-safe without padding), base64 out in the
//! standard padded form, and lower-case hex.

use base64ct::{Base64, Base64Unpadded, Base64Url, Base64UrlUnpadded, Encoding};

/// Base64 in either alphabet, padded or not (surrounding white space
/// ignored). None on anything else.
pub fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    Base64::decode_vec(s)
        .or_else(|_| Base64Url::decode_vec(s))
        .or_else(|_| Base64UrlUnpadded::decode_vec(s))
        .or_else(|_| Base64Unpadded::decode_vec(s))
        .ok()
}

/// Standard, padded base64 (RFC 4648 §4): a Basic credential, a DSSE field.
pub fn b64_encode(bytes: &[u8]) -> String {
    Base64::encode_string(bytes)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_variants_decode() {
        let bytes = [0xfbu8, 0xff, 0x01];
        for enc in [
            Base64::encode_string(&bytes),
            Base64Url::encode_string(&bytes),
            Base64UrlUnpadded::encode_string(&bytes[..2]),
            Base64Unpadded::encode_string(&bytes[..2]),
        ] {
            assert!(bytes.starts_with(&b64_decode(&enc).unwrap()), "{enc}");
        }
        assert_eq!(b64_decode(" Zm9vYg== ").unwrap(), b"foob");
        assert!(b64_decode("not base64!").is_none());
        assert!(b64_decode("a b").is_none());
    }

    #[test]
    fn encodes_rfc4648_vectors_and_hex() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
            // A proxy's Basic credential (the network probe's, from the
            // proxy URL's userinfo).
            ("user:pass", "dXNlcjpwYXNz"),
        ] {
            assert_eq!(b64_encode(i.as_bytes()), o);
        }
        assert_eq!(hex(&[0, 0xab, 0xff]), "00abff");
    }
}
