//! A DER reader for the few structures selfprobe reads: an Ed25519 key's
//! PKCS#8 and SubjectPublicKeyInfo, and a certificate's subject and issuer
//! names. RustCrypto's `der` with `pkcs8`, `spki` and `x509-cert`, which
//! this replaced, were 0.13 MB of the shipped binary with const-oid's
//! name table (bench/RESULTS.md, "Size, issue 24"). As strict as `der` on
//! what it reads: definite, minimal lengths only.

pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;
pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const NULL: u8 = 0x05;
pub const OID: u8 = 0x06;

/// Reads TLVs off the front of a byte string.
#[derive(Debug, Clone, Copy)]
pub struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    pub fn new(bytes: &'a [u8]) -> Der<'a> {
        Der(bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn peek_tag(&self) -> Option<u8> {
        self.0.first().copied()
    }

    /// The next TLV: its tag, its content and its whole encoding. None on
    /// a truncated, indefinite or non-minimal length, or a multi-byte tag.
    pub fn tlv(&mut self) -> Option<(u8, &'a [u8], &'a [u8])> {
        let b = self.0;
        let tag = *b.first()?;
        if tag & 0x1f == 0x1f {
            return None;
        }
        let first = *b.get(1)? as usize;
        let (len, head) = if first < 0x80 {
            (first, 2)
        } else {
            let n = first & 0x7f;
            if n == 0 || n > 4 {
                return None;
            }
            let bytes = b.get(2..2 + n)?;
            if bytes[0] == 0 {
                return None;
            }
            let len = bytes.iter().fold(0usize, |a, &x| a << 8 | x as usize);
            if len < 0x80 {
                return None;
            }
            (len, 2 + n)
        };
        let end = head.checked_add(len)?;
        let whole = b.get(..end)?;
        self.0 = &b[end..];
        Some((tag, &whole[head..], whole))
    }

    /// The next TLV's content if its tag is `tag`.
    pub fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        match self.tlv()? {
            (t, content, _) if t == tag => Some(content),
            _ => None,
        }
    }

    /// The next TLV's content if its tag is `tag`, else nothing consumed.
    pub fn optional(&mut self, tag: u8) -> Option<&'a [u8]> {
        if self.peek_tag() == Some(tag) {
            self.expect(tag)
        } else {
            None
        }
    }
}

/// The dotted form of an OBJECT IDENTIFIER's content ("2.5.4.3"), read as
/// const-oid (x509-cert's) reads one, since what it refused failed the
/// whole certificate: 3 to 39 bytes, the first two arcs in the first byte
/// (below 120), every other arc within 32 bits and complete.
pub fn oid_string(content: &[u8]) -> Option<String> {
    if !(3..=39).contains(&content.len()) || content[0] >= 120 {
        return None;
    }
    let mut s = format!("{}.{}", content[0] / 40, content[0] % 40);
    let mut cur: u32 = 0;
    let mut fresh = true;
    for &b in &content[1..] {
        cur = cur.checked_mul(128)? | u32::from(b & 0x7f);
        fresh = b & 0x80 == 0;
        if fresh {
            s.push('.');
            s.push_str(&cur.to_string());
            cur = 0;
        }
    }
    fresh.then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_definite_and_minimal() {
        let mut d = Der::new(&[0x04, 0x02, 0xaa, 0xbb, 0x05, 0x00]);
        assert_eq!(d.expect(OCTET_STRING), Some(&[0xaa, 0xbb][..]));
        assert_eq!(d.expect(NULL), Some(&[][..]));
        assert!(d.is_empty());
        // Long form for a short length, a leading zero, indefinite, truncated.
        for bad in [
            &[0x04, 0x81, 0x02, 0xaa, 0xbb][..],
            &[0x04, 0x82, 0x00, 0x81][..],
            &[0x30, 0x80, 0x00, 0x00][..],
            &[0x04, 0x03, 0xaa][..],
        ] {
            assert!(Der::new(bad).tlv().is_none(), "{bad:02x?}");
        }
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([7u8; 0x80]);
        assert_eq!(Der::new(&long).expect(OCTET_STRING).unwrap().len(), 0x80);
    }

    #[test]
    fn oids() {
        assert_eq!(oid_string(&[0x55, 0x04, 0x03]).as_deref(), Some("2.5.4.3"));
        assert_eq!(
            oid_string(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x01]).as_deref(),
            Some("1.2.840.113549.1.9.1")
        );
        assert_eq!(
            oid_string(&[0x2b, 0x65, 0x70]).as_deref(),
            Some("1.3.101.112")
        );
        assert_eq!(oid_string(&[0x55, 0x04, 0x84]), None, "an arc cut short");
        assert_eq!(oid_string(&[0x55, 0x04]), None, "fewer than 3 bytes");
        assert_eq!(oid_string(&[0x78, 0x04, 0x03]), None, "a first byte of 120");
        assert_eq!(
            oid_string(&[0x55, 0x90, 0x80, 0x80, 0x80, 0x00]),
            None,
            "an arc of 2^32"
        );
    }
}
