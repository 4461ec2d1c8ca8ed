//! The key forms, and selfprobe's own Ed25519, OpenSSH, PKCS#8 and SPKI
//! code checked against the crates that did it before (ed25519-dalek,
//! ssh-key, pkcs8: dev-dependencies now) on the same inputs.

use super::*;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::Verifier as _;

// RFC 8032 test 1: the secret key and its public key.
const SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn seed() -> [u8; 32] {
    unhex(SEED).try_into().unwrap()
}

fn rfc_key() -> SigningKey {
    SigningKey::from_seed(&seed())
}

fn dalek(seed: &[u8; 32]) -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(seed)
}

/// Deterministic bytes for the comparisons (xorshift): no rand crate.
fn bytes(state: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            *state as u8
        })
        .collect()
}

#[test]
fn keyid_is_sha256_of_canonical_securesystemslib_json() {
    use sha2::Digest;
    let vk = rfc_key().verifying_key();
    assert_eq!(hex(vk.as_bytes()), PUBLIC);
    let canonical = format!(
        "{{\"keytype\":\"ed25519\",\"keyval\":{{\"public\":\"{PUBLIC}\"}},\"scheme\":\"ed25519\"}}"
    );
    assert_eq!(keyid(&vk), hex(&sha2::Sha256::digest(canonical.as_bytes())));
}

#[test]
fn signatures_are_dalek_s_byte_for_byte() {
    // RFC 8032 test 1's signature of the empty message.
    assert_eq!(
        hex(&rfc_key().sign(b"")),
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
         5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    );
    use ed25519_dalek::Signer as _;
    let mut st = 0x5eed_u64;
    for n in [0usize, 1, 31, 64, 200] {
        let s: [u8; 32] = bytes(&mut st, 32).try_into().unwrap();
        let msg = bytes(&mut st, n);
        let ours = SigningKey::from_seed(&s);
        let theirs = dalek(&s);
        assert_eq!(
            ours.verifying_key().as_bytes(),
            theirs.verifying_key().as_bytes()
        );
        assert_eq!(ours.sign(&msg), theirs.sign(&msg).to_bytes());
    }
}

#[test]
fn points_are_what_dalek_accepts() {
    let mut st = 0x9017_u64;
    let mut cases: Vec<[u8; 32]> = (0..400)
        .map(|_| bytes(&mut st, 32).try_into().unwrap())
        .collect();
    // y = 0, 1, p - 1, p, p + 1, 2^255 - 1, with either sign bit.
    let mut p = [0xffu8; 32];
    p[31] = 0x7f;
    for low in [0x00u8, 0x01, 0xec, 0xed, 0xee, 0xff] {
        let mut c = if low < 0x10 { [0u8; 32] } else { p };
        c[0] = low;
        cases.push(c);
    }
    for c in cases.clone() {
        let mut neg = c;
        neg[31] ^= 0x80;
        cases.push(neg);
    }
    let mut valid = 0;
    for c in &cases {
        let theirs = ed25519_dalek::VerifyingKey::from_bytes(c);
        let ours = VerifyingKey::from_bytes(c);
        assert_eq!(ours.is_ok(), theirs.is_ok(), "{}", hex(c));
        if let (Ok(o), Ok(t)) = (ours, theirs) {
            valid += 1;
            // The strict check's weak keys: dalek's is_weak.
            assert_eq!(o.is_weak(), t.is_weak(), "{}", hex(c));
        }
    }
    assert!(
        valid > 150,
        "about half of random strings are points: {valid}"
    );
}

#[test]
fn strict_verification_refuses_what_dalek_refuses() {
    let k = rfc_key();
    let t = dalek(&seed());
    let msg = b"statement";
    let sig = k.sign(msg);
    let vk = k.verifying_key();
    let tvk = t.verifying_key();
    let theirs = |m: &[u8], s: &[u8; 64]| {
        tvk.verify_strict(m, &ed25519_dalek::Signature::from_bytes(s))
            .is_ok()
    };
    assert!(vk.verify_strict(msg, &sig) && theirs(msg, &sig));
    assert!(!vk.verify_strict(b"statemenT", &sig) && !theirs(b"statemenT", &sig));
    // S + L (not reduced), R changed, S changed.
    let l: [u8; 32] = unhex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
        .try_into()
        .unwrap();
    let mut s_plus_l = sig;
    let mut carry = 0u16;
    for i in 0..32 {
        let v = sig[32 + i] as u16 + l[i] as u16 + carry;
        s_plus_l[32 + i] = v as u8;
        carry = v >> 8;
    }
    let mut r_bad = sig;
    r_bad[0] ^= 1;
    let mut s_bad = sig;
    s_bad[40] ^= 1;
    for bad in [s_plus_l, r_bad, s_bad] {
        assert_eq!(vk.verify_strict(msg, &bad), theirs(msg, &bad));
        assert!(!vk.verify_strict(msg, &bad));
        assert!(!vk.verify(msg, &bad));
    }
    // A small-order key with the signature a forger makes for it (R the
    // identity, S 0) verifies plainly, for any message, and strictly not.
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let weak = VerifyingKey::from_bytes(&identity).unwrap();
    let mut forged = [0u8; 64];
    forged[0] = 1;
    let tweak = ed25519_dalek::VerifyingKey::from_bytes(&identity).unwrap();
    for m in [&b"a"[..], b"b"] {
        assert_eq!(
            weak.verify(m, &forged),
            tweak
                .verify(m, &ed25519_dalek::Signature::from_bytes(&forged))
                .is_ok()
        );
        assert!(!weak.verify_strict(m, &forged));
        assert!(tweak
            .verify_strict(m, &ed25519_dalek::Signature::from_bytes(&forged))
            .is_err());
    }
}

#[test]
fn public_forms_are_the_crates_byte_for_byte() {
    let t = dalek(&seed());
    let vk = rfc_key().verifying_key();
    assert_eq!(
        public_pem(&vk),
        t.verifying_key().to_public_key_pem(LineEnding::LF).unwrap()
    );
    let ssh = ssh_key::PublicKey::from(ssh_key::public::Ed25519PublicKey::from(&t.verifying_key()));
    assert_eq!(public_openssh(&vk), ssh.to_openssh().unwrap());
}

#[test]
fn sshsig_is_ssh_key_s_byte_for_byte_and_verifies_there() {
    let s = Signer {
        key: rfc_key(),
        source: "file",
    };
    let t = ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from(&dalek(&seed())));
    for msg in [&b""[..], b"report\n", &[7u8; 1000]] {
        let ours = s.sshsig("selfprobe", msg);
        let theirs = t
            .sign("selfprobe", ssh_key::HashAlg::Sha512, msg)
            .unwrap()
            .to_pem(ssh_key::LineEnding::LF)
            .unwrap();
        assert_eq!(ours, theirs);
        let parsed = ssh_key::SshSig::from_pem(&ours).unwrap();
        t.public_key().verify("selfprobe", msg, &parsed).unwrap();
    }
}

#[test]
fn pkcs8_and_openssh_round_trip_to_the_same_key() {
    let t = dalek(&seed());
    let pem = t.to_pkcs8_pem(LineEnding::LF).unwrap();
    let want = rfc_key().verifying_key();
    assert_eq!(
        parse_private_key(pem.as_bytes()).unwrap().verifying_key(),
        want
    );
    // A v2 document (with the public key), as ring and some tools write it.
    let v2 = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: seed(),
        public_key: Some(ed25519_dalek::pkcs8::PublicKeyBytes(*want.as_bytes())),
    }
    .to_pkcs8_pem(LineEnding::LF)
    .unwrap();
    assert_eq!(
        parse_private_key(v2.as_bytes()).unwrap().verifying_key(),
        want
    );
    // And one whose public key is another key's: refused, as dalek refused it.
    let other = dalek(&[9; 32]).verifying_key();
    let mismatched = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: seed(),
        public_key: Some(ed25519_dalek::pkcs8::PublicKeyBytes(other.to_bytes())),
    }
    .to_pkcs8_pem(LineEnding::LF)
    .unwrap();
    let e = parse_private_key(mismatched.as_bytes()).unwrap_err();
    assert!(matches!(e, PrivateKeyError::MalformedPkcs8(_)), "{e}");
    assert!(
        ed25519_dalek::pkcs8::DecodePrivateKey::from_pkcs8_pem(&mismatched)
            .map(|k: ed25519_dalek::SigningKey| k)
            .is_err()
    );

    let ssh = ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from(&t))
        .to_openssh(ssh_key::LineEnding::LF)
        .unwrap();
    assert_eq!(
        parse_private_key(ssh.as_bytes()).unwrap().verifying_key(),
        want
    );
    // With a comment (ssh-keygen writes user@host), CRLF line ends.
    let mut commented = ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from(&t));
    commented.set_comment("someone@somewhere");
    let crlf = commented.to_openssh(ssh_key::LineEnding::CRLF).unwrap();
    assert_eq!(
        parse_private_key(crlf.as_bytes()).unwrap().verifying_key(),
        want
    );
}

#[test]
fn other_algorithms_are_named() {
    // An OpenSSH RSA key and PKCS#8 keys of other algorithms, made here.
    let rsa_line = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7";
    assert!(matches!(
        parse_public_key(rsa_line),
        Err(PublicKeyError::MalformedOpenssh(_)) | Err(PublicKeyError::OpensshAlgorithm(_))
    ));
    // PKCS#8 with the X25519 OID (1.3.101.110) around a 32-byte key.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend([7u8; 32]);
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        b64_encode(&der)
    );
    let e = parse_private_key(pem.as_bytes()).unwrap_err();
    assert!(
        matches!(e, PrivateKeyError::Pkcs8Algorithm("X25519")),
        "{e}"
    );
}

#[test]
fn bad_inputs_are_described_not_quoted() {
    let pem = dalek(&seed()).to_pkcs8_pem(LineEnding::LF).unwrap();
    let half = &pem.as_bytes()[..pem.len() / 2];
    let cases: Vec<(&[u8], &str)> = vec![
        (b"", "empty"),
        (b"   \n", "empty"),
        (half, "truncated PEM"),
        (b"\xff\xfe", "not text"),
        (b"hello", "not a PEM key"),
        (
            b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
            "RSA",
        ),
        (
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
            "encrypted",
        ),
        (
            b"-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n",
            "malformed PKCS#8",
        ),
        (
            b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
            "malformed OpenSSH private key",
        ),
        (
            b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8CGmj3B1Ea",
            "public key",
        ),
    ];
    for (input, want) in cases {
        let e = parse_private_key(input).unwrap_err().to_string();
        assert!(e.contains(want), "{input:?}: {e}");
    }
    // The truncated half's base64 lines never reach the message.
    let e = parse_private_key(half).unwrap_err().to_string();
    for line in std::str::from_utf8(half).unwrap().lines().skip(1) {
        if line.len() > 8 {
            assert!(!e.contains(line), "{e}");
        }
    }
}

#[test]
fn damaged_openssh_keys_are_refused_as_ssh_key_refused_them() {
    let t = ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from(&dalek(&seed())));
    let text = t.to_openssh(ssh_key::LineEnding::LF).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let body: String = lines[1..lines.len() - 1].concat();
    let raw = crate::util::codec::b64_decode(&body).unwrap();
    // Flip each byte in turn: whatever ssh-key refused, selfprobe refuses;
    // what it read, selfprobe reads as the same key (or refuses).
    for i in 0..raw.len() {
        let mut d = raw.clone();
        d[i] ^= 0x41;
        let armored = super::openssh::armor("OPENSSH PRIVATE KEY", &d);
        let theirs = ssh_key::PrivateKey::from_openssh(&armored);
        let ours = parse_private_key(armored.as_bytes());
        if let Ok(k) = &ours {
            let t = theirs.unwrap_or_else(|e| panic!("byte {i}: ours read it, ssh-key: {e}"));
            let kp = t.key_data().ed25519().expect("an Ed25519 key");
            assert_eq!(k.verifying_key().as_bytes(), &kp.public.0, "byte {i}");
        }
    }
}

#[test]
fn public_key_forms_parse_and_private_keys_are_refused() {
    let k = rfc_key();
    let vk = k.verifying_key();
    assert_eq!(parse_public_key(&public_pem(&vk)).unwrap(), vk);
    assert_eq!(parse_public_key(&public_openssh(&vk)).unwrap(), vk);
    let line = allowed_signers_line(&vk, "selfprobe", "selfprobe");
    assert_eq!(parse_public_key(&line).unwrap(), vk);
    let both = format!("{}{line}\n", public_pem(&vk));
    assert_eq!(parse_public_key(&both).unwrap(), vk);
    let private = dalek(&seed()).to_pkcs8_pem(LineEnding::LF).unwrap();
    let e = parse_public_key(&private).unwrap_err();
    assert!(matches!(e, PublicKeyError::PrivateKey), "{e:?}");
    assert!(e.to_string().contains("private key"), "{e}");
    let e = parse_public_key("nothing").unwrap_err();
    assert!(matches!(e, PublicKeyError::NotFound), "{e:?}");
    assert_eq!(
        e.to_string(),
        "no public key found: expected a PEM 'PUBLIC KEY' block or an OpenSSH 'ssh-ed25519 AAAA…' line"
    );
    // An OpenSSH Ed25519 line whose 32 bytes are not a point.
    let mut not_point = None;
    let mut st = 0x70_u64;
    while not_point.is_none() {
        let c: [u8; 32] = bytes(&mut st, 32).try_into().unwrap();
        if ed25519_dalek::VerifyingKey::from_bytes(&c).is_err() {
            not_point = Some(c);
        }
    }
    let mut blob = Vec::new();
    super::openssh::put_string(&mut blob, b"ssh-ed25519");
    super::openssh::put_string(&mut blob, &not_point.unwrap());
    let e = parse_public_key(&format!("ssh-ed25519 {}", b64_encode(&blob))).unwrap_err();
    assert!(matches!(e, PublicKeyError::BadPoint(_)), "{e:?}");
    // An SPKI of a P-256 key: SEQUENCE { SEQUENCE { ecPublicKey,
    // prime256v1 }, BIT STRING 04 || X || Y }.
    let mut ec = vec![
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ];
    ec.extend([5u8; 64]);
    let pem = format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        b64_encode(&ec)
    );
    let e = parse_public_key(&pem).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an Ed25519 public key (the key's algorithm is not Ed25519): expected `openssl pkey -pubout` output of an Ed25519 key"
    );
}

#[test]
fn environ_scrub_overwrites_the_value_in_place() {
    // A variable of this test's own: setenv copies it to the heap, the
    // scrub must still zero it in place and leave other entries alone.
    std::env::set_var("SELFPROBE_TEST_SCRUB", "canary-value");
    std::env::set_var("SELFPROBE_TEST_KEEP", "kept");
    scrub_environ("SELFPROBE_TEST_SCRUB");
    let v = std::env::var_os("SELFPROBE_TEST_SCRUB").unwrap();
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(std::env::var("SELFPROBE_TEST_KEEP").unwrap(), "kept");
    std::env::remove_var("SELFPROBE_TEST_SCRUB");
    std::env::remove_var("SELFPROBE_TEST_KEEP");
}

#[test]
fn a_pipe_that_never_closes_times_out() {
    let (r, w) = nix::unistd::pipe().unwrap();
    nix::unistd::write(&w, b"-----BEGIN").unwrap();
    let t = Instant::now();
    let e = read_bounded(r.as_fd(), Duration::from_millis(200)).unwrap_err();
    assert!(e.contains("no end of input"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5));
    drop(w);
    // Closed after the data: read to EOF.
    let (r, w) = nix::unistd::pipe().unwrap();
    nix::unistd::write(&w, b"key").unwrap();
    drop(w);
    assert_eq!(
        read_bounded(r.as_fd(), Duration::from_secs(5))
            .unwrap()
            .as_slice(),
        b"key"
    );
}

#[test]
fn a_key_on_a_descriptor_is_read_while_the_caller_goes_on() {
    use std::os::fd::IntoRawFd;
    let s = Signer::ephemeral().unwrap();
    let pem = s.private_pem().unwrap();
    let (r, w) = nix::unistd::pipe().unwrap();
    let n = r.into_raw_fd();
    assert!(n > 2);
    // Nothing written yet: loading returns at once, the reader waits.
    let loading = load_while_probing(Some(&KeySource::Fd(n)), None).unwrap();
    assert!(matches!(loading, Loading::Reading { .. }));
    // SAFETY: n is the pipe's read end, open until the reader closes it.
    let flags = nix::fcntl::fcntl(
        unsafe { BorrowedFd::borrow_raw(n) },
        nix::fcntl::FcntlArg::F_GETFD,
    )
    .unwrap();
    assert!(
        flags & nix::libc::FD_CLOEXEC != 0,
        "a program started while the key is read would inherit its pipe"
    );
    nix::unistd::write(&w, pem.as_bytes()).unwrap();
    drop(w);
    let k = loading.finish().unwrap().unwrap();
    assert_eq!(k.keyid(), s.keyid());
    assert_eq!(k.source, "fd");
    // A bad key is the error `load` gives, once read.
    let (r, w) = nix::unistd::pipe().unwrap();
    let n = r.into_raw_fd();
    let loading = load_while_probing(Some(&KeySource::Fd(n)), None).unwrap();
    nix::unistd::write(&w, b"not a key").unwrap();
    drop(w);
    let e = loading.finish().unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("signing key from --sign-key-fd {n}: ")),
        "{e}"
    );
    // What can be told at once is told at once.
    let e = load_while_probing(Some(&KeySource::Fd(1)), None)
        .err()
        .unwrap();
    assert!(e.to_string().contains("standard output"), "{e}");
}

#[test]
fn oversized_input_is_refused() {
    let (r, w) = nix::unistd::pipe().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = [b'A'; 4096];
        for _ in 0..20 {
            if nix::unistd::write(&w, &chunk).is_err() {
                break;
            }
        }
    });
    let e = read_bounded(r.as_fd(), Duration::from_secs(5)).unwrap_err();
    assert!(e.contains("more than 64 KiB"), "{e}");
    drop(r);
    writer.join().unwrap();
}

#[test]
fn the_private_pem_loads_back_as_the_same_key() {
    let s = Signer::ephemeral().unwrap();
    let pem = s.private_pem().unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    let k = parse_private_key(pem.as_bytes()).unwrap();
    assert_eq!(keyid(&k.verifying_key()), s.keyid());
    // What ed25519-dalek wrote, byte for byte.
    let theirs = dalek(s.key.seed()).to_pkcs8_pem(LineEnding::LF).unwrap();
    assert_eq!(pem.as_str(), theirs.as_str());
}

#[test]
fn ephemeral_keys_differ() {
    let a = Signer::ephemeral().unwrap();
    let b = Signer::ephemeral().unwrap();
    assert_ne!(a.keyid(), b.keyid());
    assert!(a.is_ephemeral());
    let shown = format!("{a:?}");
    assert!(
        shown.contains(&a.keyid()) && !shown.contains("pair"),
        "{shown}"
    );
    assert!(!shown.contains(&hex(a.key.seed())), "{shown}");
}
