//! Ed25519 on ring, which rustls links anyway. ed25519-dalek and
//! curve25519-dalek, which this replaced, were 0.12 MB of the shipped binary
//! with their tables (bench/RESULTS.md, "Size, issue 24"); the tests keep
//! them as the reference this is checked against (src/keys/tests.rs).
//!
//! What ring does not offer is written here, to dalek's rules: whether 32
//! bytes are a point at all (a public key that is not is refused when it
//! is read, as `VerifyingKey::from_bytes` refused it), and the small-order
//! check of `verify_strict`. Signatures are RFC 8032's, deterministic, so
//! ring's are byte for byte dalek's.

use ring::signature::{self as sig, KeyPair as _};
use zeroize::Zeroize;

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
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<VerifyingKey, NotAPoint> {
        if is_point(bytes) {
            Ok(VerifyingKey(*bytes))
        } else {
            Err(NotAPoint)
        }
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// RFC 8032 verification (ring's): what ssh-keygen and OpenSSL check.
    pub fn verify(&self, msg: &[u8], signature: &[u8; 64]) -> bool {
        sig::UnparsedPublicKey::new(&sig::ED25519, &self.0)
            .verify(msg, signature)
            .is_ok()
    }

    /// `verify`, and neither the key nor the signature's R a point of small
    /// order (dalek's `verify_strict`): a signature that verifies for many
    /// messages at once is refused.
    pub fn verify_strict(&self, msg: &[u8], signature: &[u8; 64]) -> bool {
        let r: &[u8; 32] = signature[..32].try_into().expect("32 of 64 bytes");
        self.verify(msg, signature) && !small_order(&self.0) && !small_order(r)
    }
}

/// A private key: its seed (for PKCS#8 out, `Signer::private_pem`) and
/// ring's expanded key. Both are overwritten when this is dropped, as
/// dalek's were.
pub struct SigningKey {
    seed: zeroize::Zeroizing<[u8; 32]>,
    pair: Box<sig::Ed25519KeyPair>,
}

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
        let pair = sig::Ed25519KeyPair::from_seed_unchecked(seed)
            .expect("any 32 bytes are an Ed25519 seed");
        SigningKey {
            seed: zeroize::Zeroizing::new(*seed),
            pair: Box::new(pair),
        }
    }

    /// The RFC 8032 seed: the private key itself.
    pub fn seed(&self) -> &[u8; 32] {
        &self.seed
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        let mut b = [0u8; 32];
        b.copy_from_slice(self.pair.public_key().as_ref());
        VerifyingKey(b)
    }

    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        let mut out = [0u8; 64];
        out.copy_from_slice(self.pair.sign(msg).as_ref());
        out
    }
}

impl Drop for SigningKey {
    fn drop(&mut self) {
        let p: *mut sig::Ed25519KeyPair = &mut *self.pair;
        // SAFETY: the key pair is plain bytes (scalars, a prefix, a public
        // key: no pointer, no Drop of its own), owned here and about to be
        // freed; nothing reads it after this. Zeroize's volatile writes keep
        // the compiler from dropping the overwrite.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                p.cast::<u8>(),
                std::mem::size_of::<sig::Ed25519KeyPair>(),
            )
        };
        bytes.zeroize();
    }
}

// The field of curve25519, p = 2^255 - 19, for the point check only: four
// 64-bit limbs, little-endian, kept below p. Not constant time: it sees
// public keys and signatures only.
type Fe = [u64; 4];

const P: Fe = [
    0xffff_ffff_ffff_ffed,
    0xffff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
    0x7fff_ffff_ffff_ffff,
];
/// d = -121665/121666, the curve's constant.
const D: Fe = [
    0x75eb_4dca_1359_78a3,
    0x0070_0a4d_4141_d8ab,
    0x8cc7_4079_7779_e898,
    0x5203_6cee_2b6f_fe73,
];
/// (p - 1) / 2: a Legendre symbol's exponent.
const HALF: Fe = [
    0xffff_ffff_ffff_fff6,
    0xffff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
    0x3fff_ffff_ffff_ffff,
];
const ONE: Fe = [1, 0, 0, 0];

fn ge_p(a: &Fe) -> bool {
    for i in (0..4).rev() {
        if a[i] != P[i] {
            return a[i] > P[i];
        }
    }
    true
}

/// a - b as 256-bit numbers (the caller knows a >= b, or adds p first).
fn sub_raw(a: &Fe, b: &Fe) -> Fe {
    let mut r = [0u64; 4];
    let mut borrow = 0u64;
    for i in 0..4 {
        let (x, o1) = a[i].overflowing_sub(b[i]);
        let (x, o2) = x.overflowing_sub(borrow);
        r[i] = x;
        borrow = u64::from(o1 || o2);
    }
    r
}

/// Below p, from anything below 2^256 (< 3p).
fn canon(mut a: Fe) -> Fe {
    while ge_p(&a) {
        a = sub_raw(&a, &P);
    }
    a
}

/// a + b as 256-bit numbers (the caller knows it fits).
fn add_raw(a: &Fe, b: &Fe) -> Fe {
    let mut r = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let s = a[i] as u128 + b[i] as u128 + carry;
        r[i] = s as u64;
        carry = s >> 64;
    }
    r
}

fn add(a: &Fe, b: &Fe) -> Fe {
    // a, b < p < 2^255: no carry out of the top limb.
    canon(add_raw(a, b))
}

fn sub(a: &Fe, b: &Fe) -> Fe {
    let ge = {
        let mut ge = true;
        for i in (0..4).rev() {
            if a[i] != b[i] {
                ge = a[i] > b[i];
                break;
            }
        }
        ge
    };
    if ge {
        sub_raw(a, b)
    } else {
        // a + p < 2^256, and above b.
        sub_raw(&add_raw(a, &P), b)
    }
}

fn mul(a: &Fe, b: &Fe) -> Fe {
    let mut w = [0u64; 8];
    for i in 0..4 {
        let mut carry = 0u128;
        for j in 0..4 {
            let cur = a[i] as u128 * b[j] as u128 + w[i + j] as u128 + carry;
            w[i + j] = cur as u64;
            carry = cur >> 64;
        }
        w[i + 4] = carry as u64;
    }
    // 2^256 = 38 (mod p): fold the high half in, twice.
    let mut r = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let cur = w[i] as u128 + w[i + 4] as u128 * 38 + carry;
        r[i] = cur as u64;
        carry = cur >> 64;
    }
    let mut c = carry * 38;
    while c != 0 {
        for limb in r.iter_mut() {
            let cur = *limb as u128 + c;
            *limb = cur as u64;
            c = cur >> 64;
        }
        c *= 38;
    }
    canon(r)
}

fn pow(a: &Fe, e: &Fe) -> Fe {
    let mut r = ONE;
    for i in (0..256).rev() {
        r = mul(&r, &r);
        if (e[i / 64] >> (i % 64)) & 1 == 1 {
            r = mul(&r, a);
        }
    }
    r
}

/// The y coordinate of an encoded point: the top bit (x's sign) cleared
/// and reduced mod p, as dalek and ring read it (a y of p or more is
/// accepted, as they accept it).
fn y_of(bytes: &[u8; 32]) -> Fe {
    let mut y = [0u64; 4];
    for (i, limb) in y.iter_mut().enumerate() {
        *limb = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    }
    y[3] &= 0x7fff_ffff_ffff_ffff;
    canon(y)
}

/// Whether `bytes` decode to a point: x^2 = (y^2 - 1) / (d y^2 + 1) has a
/// solution when its right side is zero or a square, which is when
/// u = y^2 - 1 is zero or u v is a square (v = d y^2 + 1 is never zero).
fn is_point(bytes: &[u8; 32]) -> bool {
    let y = y_of(bytes);
    let y2 = mul(&y, &y);
    let u = sub(&y2, &ONE);
    let v = add(&mul(&D, &y2), &ONE);
    let uv = mul(&u, &v);
    uv == [0; 4] || pow(&uv, &HALF) == ONE
}

/// The y coordinates of the eight points of small order: the identity
/// (1), (0, -1), (±sqrt(-1), 0) and the four points of order 8.
const SMALL_Y: [Fe; 5] = [
    [0, 0, 0, 0],
    ONE,
    [
        0xffff_ffff_ffff_ffec,
        0xffff_ffff_ffff_ffff,
        0xffff_ffff_ffff_ffff,
        0x7fff_ffff_ffff_ffff,
    ],
    [
        0xb027_b2c2_8f95_e826,
        0xf098_eff2_89f4_c345,
        0x3933_c6d3_05ac_dfd5,
        0x05fc_536d_8802_38b1,
    ],
    [
        0x4fd8_4d3d_706a_17c7,
        0x0f67_100d_760b_3cba,
        0xc6cc_392c_fa53_202a,
        0x7a03_ac92_77fd_c74e,
    ],
];

/// Whether an encoded point is one of small order (by its y, which names
/// the point up to x's sign, and both signs are of small order there).
pub(super) fn small_order(bytes: &[u8; 32]) -> bool {
    SMALL_Y.contains(&y_of(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_basics() {
        let two = add(&ONE, &ONE);
        assert_eq!(sub(&ONE, &two), sub_raw(&P, &ONE), "1 - 2 = p - 1");
        // -1 is a square mod p (p = 1 mod 4): (p-1)^HALF = 1.
        assert_eq!(pow(&sub(&[0; 4], &ONE), &HALF), ONE);
        // 2 is not (p = 5 mod 8).
        assert_eq!(pow(&two, &HALF), sub_raw(&P, &ONE));
        // d * 121666 = -121665.
        let k = |n: u64| [n, 0, 0, 0];
        assert_eq!(mul(&D, &k(121666)), sub(&[0; 4], &k(121665)));
    }

    #[test]
    fn small_order_encodings() {
        // libsodium's blocklist (crypto_sign/ed25519/ref10/open.c), canonical
        // and not, with either sign bit.
        let mut enc: Vec<[u8; 32]> = vec![[0; 32]];
        let mut one = [0u8; 32];
        one[0] = 1;
        enc.push(one);
        let mut pm1 = [0xffu8; 32];
        pm1[0] = 0xec;
        pm1[31] = 0x7f;
        enc.push(pm1);
        let mut p = pm1;
        p[0] = 0xed;
        enc.push(p);
        let mut p1 = pm1;
        p1[0] = 0xee;
        enc.push(p1);
        for e in enc {
            assert!(small_order(&e), "{e:02x?}");
            let mut neg = e;
            neg[31] |= 0x80;
            assert!(small_order(&neg), "{neg:02x?}");
        }
    }
}
