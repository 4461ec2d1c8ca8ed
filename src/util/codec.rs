//! The byte codecs, on base64ct (constant-time, no unsafe): base64 in, in
//! any of the four RFC 4648 forms the inputs use (DSSE says decoders accept
//! both alphabets; JWTs are URL-safe without padding), or loosely for the
//! tokens and key bodies found in files; base64 out in the standard padded
//! form, and lower-case hex.

use base64ct::{Base64, Base64Unpadded, Base64Url, Base64UrlUnpadded, Encoding};

/// Base64 in either alphabet, padded or not (surrounding white space
/// ignored). None on anything else.
pub fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if let Some(b) = std_padded_public(s.as_bytes()) {
        return Some(b);
    }
    Base64::decode_vec(s)
        .or_else(|_| Base64Url::decode_vec(s))
        .or_else(|_| Base64UrlUnpadded::decode_vec(s))
        .or_else(|_| Base64Unpadded::decode_vec(s))
        .ok()
}

/// Base64 as the credential search reads JWT segments and key bodies that
/// someone else wrote: either alphabet, even mixed; padding optional, and
/// everything from the first `=` on ignored; the bits a last partial
/// character leaves below a byte ignored (a lone last character gives no
/// byte). None on any other byte before the first `=`. This is how JWT
/// libraries read segments, and it is what selfprobe always accepted: the
/// input is normalised to the standard alphabet with canonical trailing
/// bits, then decoded by base64ct.
pub fn b64_decode_loose(s: &str) -> Option<Vec<u8>> {
    const STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let body = &s.as_bytes()[..s.find('=').unwrap_or(s.len())];
    let mut sextets = Vec::with_capacity(body.len());
    for &c in body {
        sextets.push(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        });
    }
    if sextets.len() % 4 == 1 {
        sextets.pop();
    }
    let unused = match sextets.len() % 4 {
        2 => 4,
        3 => 2,
        _ => 0,
    };
    if let Some(last) = sextets.last_mut() {
        *last &= !((1u8 << unused) - 1);
    }
    let text: String = sextets.iter().map(|&v| STD[v as usize] as char).collect();
    Base64Unpadded::decode_vec(&text).ok()
}

/// Standard padded base64, by table: what `Base64::decode_vec` accepts and
/// gives, or None for base64ct to decide. Only for public bytes (a DSSE
/// payload or signature): it is not constant-time, and so four to five
/// times faster in the shipped build, where base64ct's constant-time
/// decoder is generic code compiled at opt-level "z" (a `summary` of a
/// thousand envelopes spent a quarter of its time there; bench/RESULTS.md).
fn std_padded_public(s: &[u8]) -> Option<Vec<u8>> {
    const BAD: u8 = 0xff;
    const TABLE: [u8; 256] = {
        let mut t = [BAD; 256];
        let a = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut i = 0;
        while i < 64 {
            t[a[i] as usize] = i as u8;
            i += 1;
        }
        t
    };
    if s.len() % 4 != 0 {
        return None;
    }
    let pad = s.iter().rev().take(2).take_while(|&&c| c == b'=').count();
    let body = &s[..s.len() - pad];
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut chunks = body.chunks_exact(4);
    for c in &mut chunks {
        let (a, b, d, e) = (
            TABLE[c[0] as usize],
            TABLE[c[1] as usize],
            TABLE[c[2] as usize],
            TABLE[c[3] as usize],
        );
        if a == BAD || b == BAD || d == BAD || e == BAD {
            return None;
        }
        let n = (a as u32) << 18 | (b as u32) << 12 | (d as u32) << 6 | e as u32;
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    let rest = chunks.remainder();
    let v: Vec<u8> = rest.iter().map(|&c| TABLE[c as usize]).collect();
    if v.contains(&BAD) {
        return None;
    }
    match (v.len(), pad) {
        (0, 0) => {}
        // Canonical trailing bits only: the bits below the last byte are 0.
        (2, 2) if v[1] & 0x0f == 0 => out.push(v[0] << 2 | v[1] >> 4),
        (3, 1) if v[2] & 0x03 == 0 => {
            out.push(v[0] << 2 | v[1] >> 4);
            out.push(v[1] << 4 | v[2] >> 2);
        }
        _ => return None,
    }
    Some(out)
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

/// `s` with each escape `MARKER d…d` (`width` digits that `digits` reads
/// as one byte) replaced by that byte; anything else, a lone marker or an
/// escape whose digits do not make a byte, kept as it is. The one loop
/// behind mountinfo's `\ooo` octal (facts/mounts/parse.rs) and a URL's
/// `%hh` (probe/network/proxy.rs).
pub fn unescape_with(
    s: &str,
    marker: u8,
    width: usize,
    digits: fn(&[u8]) -> Option<u8>,
) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == marker && i + width < b.len() {
            if let Some(v) = digits(&b[i + 1..i + 1 + width]) {
                out.push(v);
                i += 1 + width;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
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

    /// The table decoder takes exactly what base64ct's standard padded one
    /// takes, with the same bytes, and leaves everything else to it.
    #[test]
    fn the_fast_path_agrees_with_base64ct() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in 0..64usize {
            for _ in 0..20 {
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let enc = Base64::encode_string(&bytes);
                assert_eq!(std_padded_public(enc.as_bytes()), Some(bytes.clone()));
                // Each one-byte change: accepted only where base64ct accepts.
                let mut e = enc.clone().into_bytes();
                if e.is_empty() {
                    continue;
                }
                let i = (next() as usize) % e.len();
                e[i] = b"A/+=-_ .\n\x00\xff"[(next() as usize) % 11];
                let fast = std_padded_public(&e);
                let slow = std::str::from_utf8(&e)
                    .ok()
                    .and_then(|t| Base64::decode_vec(t).ok());
                if fast.is_some() {
                    assert_eq!(fast, slow, "{:?}", String::from_utf8_lossy(&e));
                }
            }
        }
        for bad in ["Zg", "Zh==", "Zm9=", "Zm9v=", "=Zg=", "Z===", "Zm=v"] {
            assert_eq!(std_padded_public(bad.as_bytes()), None, "{bad}");
        }
    }

    /// The hand-written decoder the credential search used before: the
    /// loose decoder must take exactly what it took, and give the same bytes.
    fn reference(s: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0u32);
        for c in s.bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' | b'-' => 62,
                b'/' | b'_' => 63,
                b'=' => break,
                _ => return None,
            };
            acc = (acc << 6) | v as u32;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        Some(out)
    }

    #[test]
    fn loose_decoding_takes_what_it_always_took() {
        let bytes = [0xfbu8, 0xff, 0x01, 0x7e];
        for n in 0..=bytes.len() {
            for enc in [
                Base64::encode_string(&bytes[..n]),
                Base64Url::encode_string(&bytes[..n]),
                Base64UrlUnpadded::encode_string(&bytes[..n]),
                Base64Unpadded::encode_string(&bytes[..n]),
            ] {
                assert_eq!(
                    b64_decode_loose(&enc).as_deref(),
                    Some(&bytes[..n]),
                    "{enc}"
                );
            }
        }
        // Mixed alphabets, junk after the padding, spare bits, a lone char.
        for s in [
            "+-/_",
            "Zm9vYg==junk!",
            "Zm9vYh",
            "QUJDR",
            "",
            "=",
            "a b",
            "é",
        ] {
            assert_eq!(b64_decode_loose(s), reference(s), "{s:?}");
        }
        let alphabet = b"AZaz09+-/_=.! \xc3";
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 11) as usize;
            let s: String = (0..len)
                .map(|i| alphabet[((x >> (i * 5)) % alphabet.len() as u64) as usize] as char)
                .collect();
            assert_eq!(b64_decode_loose(&s), reference(&s), "{s:?}");
        }
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
