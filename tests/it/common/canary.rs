//! Canary secrets: random values that no output of selfprobe may contain,
//! and the encodings a leaked one would appear in.
#![allow(dead_code)]

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// `n` characters of `alphabet`, from /dev/urandom: a canary no run before
/// this one can have printed.
pub fn random(n: usize, alphabet: &[u8]) -> String {
    let mut b = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut b)
        .unwrap();
    b.iter()
        .map(|x| alphabet[*x as usize % alphabet.len()] as char)
        .collect()
}

/// The encodings a leaked key or token would appear in (JWT segments are
/// base64url without padding).
pub fn b64(b: &[u8], url: bool) -> String {
    use base64ct::Encoding;
    if url {
        base64ct::Base64UrlUnpadded::encode_string(b)
    } else {
        base64ct::Base64::encode_string(b)
    }
}

/// Seconds since the epoch, for token expiry claims.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
