//! Signing keys: where they come from (a file, an inherited fd, the
//! environment, or none: an ephemeral key), what forms are accepted (PKCS#8
//! PEM and OpenSSH Ed25519), and the public forms a verifier needs (SPKI PEM,
//! an OpenSSH line, the DSSE keyid).
//!
//! The private key is evidence-grade secret: no error, log or output here
//! carries a byte of it. Buffers that held it are zeroized when dropped, and
//! error messages are built from fixed text, never from the key's content.
//!
//! Ed25519 itself is ed25519-dalek's (src/keys/ed25519.rs says why), the
//! OpenSSH formats are src/keys/openssh.rs, and PKCS#8 and
//! SubjectPublicKeyInfo are read here with util/der.rs: ssh-key, pkcs8 and
//! sha2, which did this before, were most of 0.25 MB of the probe
//! (bench/RESULTS.md, "Size, issue 24"). The tests check every form against
//! them (src/keys/tests.rs), and tests/it/attest.rs against ssh-keygen and
//! OpenSSL.

mod ed25519;
mod openssh;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use zeroize::Zeroizing;

pub use ed25519::{NotAPoint, SigningKey, VerifyingKey};
pub use openssh::Malformed as OpensshMalformed;

use crate::util::codec::b64_encode;
use crate::util::der::{self, Der};

/// The environment variable a key may be passed in; removed (and its bytes in
/// the process's initial environment block overwritten) before anything else
/// runs, so no probe, child process or /proc/PID/environ reader sees it.
pub const ENV_KEY: &str = "SELFPROBE_SIGNING_KEY";

/// Larger than any PEM or OpenSSH Ed25519 key; bounds a mistaken
/// `--sign-key /dev/zero` or a huge file.
const MAX_KEY_BYTES: usize = 64 * 1024;

/// How long `--sign-key-fd` (or a FIFO given to --sign-key) may take to
/// deliver the key and close: a forgotten `< key` must not hang a CI job.
pub const KEY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the key comes from. Holds no key material, so it may sit in the
/// (Debug-printable) Config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    File(PathBuf),
    Fd(RawFd),
    Env,
}

impl KeySource {
    /// Names the source in messages and in the report (never the content).
    pub fn describe(&self) -> String {
        match self {
            KeySource::File(p) => format!("--sign-key {}", p.display()),
            KeySource::Fd(n) => format!("--sign-key-fd {n}"),
            KeySource::Env => ENV_KEY.to_string(),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            KeySource::File(_) => "file",
            KeySource::Fd(_) => "fd",
            KeySource::Env => "env",
        }
    }
}

/// A key error: exit 2, with a message that names the source and what was
/// expected, and never the key's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(pub String);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

/// The Ed25519 key that signs this run. Debug shows only the public half.
pub struct Signer {
    key: SigningKey,
    /// "file", "fd", "env" or "ephemeral".
    pub source: &'static str,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("keyid", &self.keyid())
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A fresh key from the OS random source, for a run given no key.
    pub fn ephemeral() -> Result<Signer, KeyError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::getrandom(seed.as_mut()).map_err(|e| {
            KeyError(format!(
                "cannot make an ephemeral signing key: the OS random source failed ({e})"
            ))
        })?;
        Ok(Signer {
            key: SigningKey::from_seed(&seed),
            source: "ephemeral",
        })
    }

    pub fn is_ephemeral(&self) -> bool {
        self.source == "ephemeral"
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    pub fn keyid(&self) -> String {
        keyid(&self.verifying_key())
    }

    /// The private key as PKCS#8 PEM, for `selfprobe-host inspect` to hand to a
    /// probe on its stdin (`--sign-key-fd 0`), never to a file. The buffer
    /// is zeroized when dropped.
    pub fn private_pem(&self) -> Result<Zeroizing<String>, KeyError> {
        // PKCS#8 v2 (RFC 5958, 8410), as ed25519-dalek wrote it before:
        // version 1, the algorithm, the seed, and the public key.
        let mut der = Zeroizing::new(PKCS8_V2_PREFIX.to_vec());
        der.extend_from_slice(self.key.seed());
        der.extend_from_slice(&[0x81, 0x21, 0x00]);
        der.extend_from_slice(self.verifying_key().as_bytes());
        let b64 = Zeroizing::new(b64_encode(&der));
        let mut pem = Zeroizing::new(String::from("-----BEGIN PRIVATE KEY-----\n"));
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        Ok(pem)
    }

    /// Ed25519 over `msg` (for DSSE, msg is the PAE).
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.key.sign(msg)
    }

    /// An OpenSSH SSHSIG over `msg` (namespace and hash as `ssh-keygen -Y
    /// sign`; PROTOCOL.sshsig), armored as ssh-keygen armors it.
    pub fn sshsig(&self, namespace: &str, msg: &[u8]) -> String {
        use openssh::{put_string, put_u32};
        let hashed = crate::util::digest::sha512(msg);
        let signed = sshsig_signed_data(namespace, b"", "sha512", &hashed);
        let mut sig = Vec::with_capacity(83);
        put_string(&mut sig, openssh::ED25519.as_bytes());
        put_string(&mut sig, &self.key.sign(&signed));
        let mut blob = SSHSIG_MAGIC.to_vec();
        put_u32(&mut blob, 1);
        put_string(&mut blob, &openssh::public_blob(&self.verifying_key()));
        put_string(&mut blob, namespace.as_bytes());
        put_string(&mut blob, b"");
        put_string(&mut blob, b"sha512");
        put_string(&mut blob, &sig);
        openssh::armor(SSHSIG_LABEL, &blob)
    }
}

/// PROTOCOL.sshsig's preamble and armor label.
pub const SSHSIG_MAGIC: &[u8; 6] = b"SSHSIG";
pub const SSHSIG_LABEL: &str = "SSH SIGNATURE";

/// What an SSHSIG's Ed25519 signature covers (PROTOCOL.sshsig).
pub fn sshsig_signed_data(namespace: &str, reserved: &[u8], hash: &str, hashed: &[u8]) -> Vec<u8> {
    use openssh::put_string;
    let mut d = SSHSIG_MAGIC.to_vec();
    put_string(&mut d, namespace.as_bytes());
    put_string(&mut d, reserved);
    put_string(&mut d, hash.as_bytes());
    put_string(&mut d, hashed);
    d
}

pub use openssh::{parse_public_blob, PublicKey as OpensshKey, Reader as OpensshReader};

/// The bytes of an armored SSHSIG.
pub fn sshsig_unarmor(text: &str) -> Result<Zeroizing<Vec<u8>>, OpensshMalformed> {
    openssh::unarmor(SSHSIG_LABEL, text)
}

/// The DSSE keyid (docs/signing.md): hex SHA-256 of securesystemslib's
/// canonical JSON of the key (sorted keys, no spaces), which is what
/// `SSlibKey.from_crypto` computes, so `Envelope.verify` matches it.
pub fn keyid(vk: &VerifyingKey) -> String {
    let canonical = format!(
        r#"{{"keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
        hex(vk.as_bytes())
    );
    crate::util::digest::sha256_hex(canonical.as_bytes())
}

pub use crate::util::codec::hex;

/// The DER of an Ed25519 SubjectPublicKeyInfo, less its 32 key bytes
/// (RFC 8410): SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING }.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];
/// The DER of an Ed25519 PKCS#8 v2 OneAsymmetricKey up to its 32-byte seed
/// (RFC 5958, 8410): SEQUENCE (81 bytes) { INTEGER 1, SEQUENCE { OID
/// 1.3.101.112 }, OCTET STRING { OCTET STRING seed }, [1] public key }.
const PKCS8_V2_PREFIX: [u8; 16] = [
    0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];
/// The OID 1.3.101.112 (Ed25519), as its DER content.
const ED25519_OID: &[u8] = &[0x2b, 0x65, 0x70];

/// SubjectPublicKeyInfo PEM, as `openssl pkey -pubout` writes it.
pub fn public_pem(vk: &VerifyingKey) -> String {
    let mut der = SPKI_PREFIX.to_vec();
    der.extend_from_slice(vk.as_bytes());
    // 44 bytes: one line of base64, under PEM's 64 columns.
    format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        b64_encode(&der)
    )
}

/// `ssh-ed25519 AAAA…` (no comment).
pub fn public_openssh(vk: &VerifyingKey) -> String {
    openssh::public_line(vk)
}

/// One line for ssh-keygen's allowed_signers file, limited to the namespace.
pub fn allowed_signers_line(vk: &VerifyingKey, principal: &str, namespace: &str) -> String {
    format!(
        "{principal} namespaces=\"{namespace}\" {}",
        public_openssh(vk)
    )
}

// ---------------------------------------------------------------------------
// Reading keys.

/// Takes the key out of the environment: copies it, overwrites its bytes in
/// the environment block (the initial block is what /proc/PID/environ shows,
/// and unsetenv alone leaves it there), then removes the variable.
///
/// Call first thing in main, before any thread exists: the environment is
/// process-global and not safe to change while another thread reads it.
pub fn take_env_key() -> Option<Zeroizing<Vec<u8>>> {
    let value = std::env::var_os(ENV_KEY)?;
    let bytes = Zeroizing::new(std::os::unix::ffi::OsStringExt::into_vec(value));
    scrub_environ(ENV_KEY);
    std::env::remove_var(ENV_KEY);
    Some(bytes)
}

fn scrub_environ(name: &str) {
    let prefix: Vec<u8> = format!("{name}=").into_bytes();
    // SAFETY: single-threaded (see take_env_key); `environ` is a
    // NULL-terminated array of NUL-terminated strings owned by the process,
    // in writable memory (the initial stack block, or setenv's heap copies).
    // Each string is overwritten in place within its own length.
    unsafe {
        let mut p = nix::libc::environ;
        if p.is_null() {
            return;
        }
        while !(*p).is_null() {
            let s = *p as *mut u8;
            let len = nix::libc::strlen(*p);
            let entry = std::slice::from_raw_parts_mut(s, len);
            if entry.starts_with(&prefix) {
                for b in entry[prefix.len()..].iter_mut() {
                    std::ptr::write_volatile(b, 0);
                }
            }
            p = p.add(1);
        }
    }
}

/// Loads the signing key for a run or `pubkey`: from `source` if given,
/// else from the environment's key if there was one, else None.
pub fn load(
    source: Option<&KeySource>,
    env_key: Option<Zeroizing<Vec<u8>>>,
) -> Result<Option<Signer>, KeyError> {
    let (bytes, source) = match source {
        Some(KeySource::Env) | None => match env_key {
            Some(b) => (b, KeySource::Env),
            None if source.is_some() => {
                return Err(KeyError(format!("{ENV_KEY} is not set")));
            }
            None => return Ok(None),
        },
        Some(s) => {
            if env_key.is_some() {
                return Err(KeyError(format!(
                    "two signing keys given: {ENV_KEY} and {}: expected one (unset {ENV_KEY} or drop the option)",
                    s.describe()
                )));
            }
            (read_source(s)?, s.clone())
        }
    };
    signer_from(&bytes, &source).map(Some)
}

/// A run's key as it is being loaded: see `load_while_probing`. (One per
/// run: its size does not matter, and boxing the key would leave a copy of
/// it behind in the freed box when it is moved out.)
#[allow(clippy::large_enum_variant)]
pub enum Loading {
    Loaded(Option<Signer>),
    /// On a descriptor, read and parsed on a thread of its own.
    Reading {
        fd: RawFd,
        thread: std::thread::JoinHandle<Result<Signer, KeyError>>,
    },
}

impl Loading {
    /// The key, once it is read: a bad one is the same error `load` gives.
    pub fn finish(self) -> Result<Option<Signer>, KeyError> {
        match self {
            Loading::Loaded(k) => Ok(k),
            Loading::Reading { fd, thread } => match thread.join() {
                Ok(k) => k.map(Some),
                Err(_) => Err(KeyError(format!(
                    "signing key from --sign-key-fd {fd}: its reader failed"
                ))),
            },
        }
    }
}

/// As `load`, except that a key on a descriptor (checked here: open, not
/// standard output or error, not a terminal) is read and parsed on a thread
/// while the caller probes; `Loading::finish` takes it before signing.
/// Why: an engine hands an exec's standard input to the process after
/// starting it (Docker 20.10 here: the key's end of file 3 to 8 ms after the
/// process began, idle, and more under a burst of starts), and every probe
/// of a `selfprobe-host` inspection waited for it before its run began
/// (bench/RESULTS.md, "2026-12-03 11:00-12:30"). Threads started later
/// inherit the caller's signal mask: call it once the signals are blocked.
pub fn load_while_probing(
    source: Option<&KeySource>,
    env_key: Option<Zeroizing<Vec<u8>>>,
) -> Result<Loading, KeyError> {
    let n = match source {
        Some(KeySource::Fd(n)) if env_key.is_none() => *n,
        _ => return load(source, env_key).map(Loading::Loaded),
    };
    check_fd(n)?;
    // Copy (it holds only n): run on the thread, or here when none starts.
    let read = move || -> Result<Signer, KeyError> {
        let bytes = read_fd(n)?;
        signer_from(&bytes, &KeySource::Fd(n))
    };
    match std::thread::Builder::new().name("key".into()).spawn(read) {
        Ok(thread) => Ok(Loading::Reading { fd: n, thread }),
        Err(_) => read().map(|k| Loading::Loaded(Some(k))),
    }
}

fn signer_from(bytes: &[u8], source: &KeySource) -> Result<Signer, KeyError> {
    let key = parse_private_key(bytes)
        .map_err(|why| KeyError(format!("signing key from {}: {why}", source.describe())))?;
    Ok(Signer {
        key,
        source: source.kind(),
    })
}

fn read_source(source: &KeySource) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let what = source.describe();
    let err = |why: String| KeyError(format!("signing key from {what}: {why}"));
    match source {
        KeySource::Env => Err(err("internal: the environment is read in main".into())),
        KeySource::File(path) => {
            let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read it: {e}")))?;
            let ft = meta.file_type();
            if !(ft.is_file() || ft.is_fifo()) {
                return Err(err(
                    "not a regular file or pipe: expected a key file (PKCS#8 PEM or OpenSSH)"
                        .into(),
                ));
            }
            // Non-blocking open: a FIFO with no writer must not hang here;
            // read_bounded then waits for it within the deadline.
            let f = std::fs::File::options()
                .read(true)
                .custom_flags(nix::libc::O_NONBLOCK)
                .open(path)
                .map_err(|e| err(format!("cannot read it: {e}")))?;
            read_bounded(OwnedFd::from(f).as_fd(), KEY_READ_TIMEOUT).map_err(err)
        }
        KeySource::Fd(n) => {
            check_fd(*n)?;
            read_fd(*n)
        }
    }
}

/// That descriptor `n` can carry a key (open, not standard output or
/// error, not a terminal), and, above 2, marked close-on-exec: the key is
/// read while the probes run, and a program they start (the image's own
/// tools, run for their versions) must not inherit the pipe it comes on.
/// (Standard input they get is /dev/null: util::command.)
fn check_fd(n: RawFd) -> Result<(), KeyError> {
    let err = |why: String| KeyError(format!("signing key from --sign-key-fd {n}: {why}"));
    if n == 1 || n == 2 {
        return Err(err(format!(
            "fd {n} is standard {}: expected a descriptor open for reading the key, e.g. --sign-key-fd 0 < key",
            if n == 1 { "output" } else { "error" }
        )));
    }
    let not_open = || {
        err(format!(
            "fd {n} is not open: expected the key on it, e.g. `--sign-key-fd 0 < key` or `--sign-key-fd 3 3< key`"
        ))
    };
    if n < 0 {
        return Err(not_open());
    }
    // SAFETY: the borrow is used only to ask whether n is open (F_GETFD: a
    // closed n gives EBADF, never a use of another's descriptor) and, once
    // it is, whether it is a terminal and to set its close-on-exec flag.
    let fd = unsafe { BorrowedFd::borrow_raw(n) };
    if nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).is_err() {
        return Err(not_open());
    }
    if nix::unistd::isatty(fd).unwrap_or(false) {
        return Err(err(format!(
            "fd {n} is a terminal: expected the key piped or redirected in, e.g. --sign-key-fd {n} < key"
        )));
    }
    if n > 2 {
        use nix::fcntl::{fcntl, FcntlArg, FdFlag};
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))
            .map_err(|e| err(format!("cannot mark it close-on-exec: {e}")))?;
    }
    Ok(())
}

/// The key's bytes from descriptor `n` (checked by `check_fd`), read to its
/// end of file within KEY_READ_TIMEOUT; `n` is closed after when above 2.
fn read_fd(n: RawFd) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let err = |why: String| KeyError(format!("signing key from --sign-key-fd {n}: {why}"));
    // SAFETY: fd n is open (check_fd) and was handed to us for this one
    // purpose; nothing else in selfprobe reads or closes it. Owned so that
    // it is closed after (above 2: out of any child process selfprobe
    // starts); standard input stays open (ManuallyDrop).
    let fd = std::mem::ManuallyDrop::new(unsafe { OwnedFd::from_raw_fd(n) });
    let bytes = read_bounded(fd.as_fd(), KEY_READ_TIMEOUT).map_err(err);
    if n > 2 {
        drop(std::mem::ManuallyDrop::into_inner(fd));
    }
    bytes
}

/// Reads to EOF, at most MAX_KEY_BYTES, within `timeout` (poll, so a pipe
/// whose writer never closes cannot hang the run).
fn read_bounded(fd: BorrowedFd<'_>, timeout: Duration) -> Result<Zeroizing<Vec<u8>>, String> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let deadline = Instant::now() + timeout;
    let mut out = Zeroizing::new(Vec::with_capacity(4096));
    let mut chunk = Zeroizing::new([0u8; 4096]);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "no end of input within {} s: expected the key followed by end of file",
                timeout.as_secs()
            ));
        }
        let ms = u16::try_from(left.as_millis().max(1)).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("cannot wait for input: {e}")),
        }
        let n = match nix::unistd::read(fd, chunk.as_mut()) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
            Err(e) => return Err(format!("cannot read it: {e}")),
        };
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > MAX_KEY_BYTES {
            return Err(format!(
                "more than {} KiB: expected an Ed25519 private key (PKCS#8 PEM or OpenSSH)",
                MAX_KEY_BYTES / 1024
            ));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

const HOW_TO_MAKE: &str =
    "make one with `ssh-keygen -t ed25519 -N '' -f KEY` or `openssl genpkey -algorithm ed25519 -out KEY`";

/// Why bytes are not an Ed25519 private key selfprobe can sign with. Each
/// variant describes the input and what was expected; none holds a byte of
/// the key (a PEM label is printable ASCII of at most 64 bytes, and the
/// parsers' errors name what is wrong, not the content).
#[derive(Debug)]
pub enum PrivateKeyError {
    /// Not UTF-8: DER or some other binary form.
    NotText,
    /// Nothing but white space.
    Empty,
    /// An OpenSSH public key line or a PEM public key block.
    PublicKey,
    /// No `-----BEGIN … PRIVATE KEY-----` line.
    NotPem,
    /// A BEGIN line with no END line.
    TruncatedPem { label: String },
    /// An encrypted PKCS#8 key: selfprobe takes no passphrase.
    EncryptedPkcs8,
    /// A PKCS#1 RSA key.
    Rsa,
    /// A SEC1 EC key.
    Ec,
    /// A DSA key.
    Dsa,
    /// A PEM block of another kind (its label, sanitised).
    OtherPem { label: String },
    /// An OpenSSH key that does not parse.
    MalformedOpenssh(openssh::Malformed),
    /// An encrypted OpenSSH key: selfprobe takes no passphrase.
    EncryptedOpenssh,
    /// An OpenSSH key of another algorithm.
    OpensshAlgorithm(String),
    /// A PKCS#8 key of another algorithm.
    Pkcs8Algorithm(&'static str),
    /// A PKCS#8 block that does not parse as an Ed25519 key.
    MalformedPkcs8(&'static str),
}

impl fmt::Display for PrivateKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrivateKeyError::NotText => write!(
                f,
                "not text: expected an Ed25519 private key as PKCS#8 PEM or in OpenSSH format (a DER or binary key is not accepted; {HOW_TO_MAKE})"
            ),
            PrivateKeyError::Empty => write!(
                f,
                "empty: expected an Ed25519 private key as PKCS#8 PEM or in OpenSSH format ({HOW_TO_MAKE})"
            ),
            PrivateKeyError::PublicKey => f.write_str(
                "a public key: expected the private key (selfprobe pubkey prints the public one)",
            ),
            PrivateKeyError::NotPem => write!(
                f,
                "not a PEM key (no '-----BEGIN … PRIVATE KEY-----' line): expected an Ed25519 private key as PKCS#8 PEM or in OpenSSH format ({HOW_TO_MAKE})"
            ),
            PrivateKeyError::TruncatedPem { label } => write!(
                f,
                "truncated PEM: '-----BEGIN {label}-----' has no '-----END {label}-----' line: expected a complete key file"
            ),
            PrivateKeyError::EncryptedPkcs8 => f.write_str(
                "an encrypted PKCS#8 key, and selfprobe takes no passphrase: expected an unencrypted key; decrypt a copy outside the workspace (`openssl pkey -in KEY -out PLAIN`) and pass it with --sign-key-fd so it never lands in the workspace",
            ),
            PrivateKeyError::Rsa => write!(
                f,
                "an RSA key (PKCS#1): selfprobe signs with Ed25519 only; {HOW_TO_MAKE}"
            ),
            PrivateKeyError::Ec => write!(
                f,
                "an EC key (SEC1): selfprobe signs with Ed25519 only; {HOW_TO_MAKE}"
            ),
            PrivateKeyError::Dsa => write!(
                f,
                "a DSA key: selfprobe signs with Ed25519 only; {HOW_TO_MAKE}"
            ),
            PrivateKeyError::OtherPem { label } => write!(
                f,
                "a PEM '{label}' block: expected an Ed25519 private key ('PRIVATE KEY' or 'OPENSSH PRIVATE KEY')"
            ),
            PrivateKeyError::MalformedOpenssh(e) => write!(
                f,
                "malformed OpenSSH private key ({e}): expected a complete key file as ssh-keygen writes it"
            ),
            PrivateKeyError::EncryptedOpenssh => f.write_str(
                "an encrypted OpenSSH key, and selfprobe takes no passphrase: expected an unencrypted key; remove the passphrase from a copy outside the workspace (`ssh-keygen -p -N '' -f COPY`) and pass it with --sign-key-fd so it never lands in the workspace",
            ),
            PrivateKeyError::OpensshAlgorithm(alg) => write!(
                f,
                "an OpenSSH {alg} key: selfprobe signs with Ed25519 only; {HOW_TO_MAKE}"
            ),
            PrivateKeyError::Pkcs8Algorithm(alg) => write!(
                f,
                "a PKCS#8 {alg} key: selfprobe signs with Ed25519 only; {HOW_TO_MAKE}"
            ),
            PrivateKeyError::MalformedPkcs8(e) => write!(
                f,
                "malformed PKCS#8 PEM ({e}): expected a complete Ed25519 key as `openssl genpkey -algorithm ed25519` writes it"
            ),
        }
    }
}

impl std::error::Error for PrivateKeyError {}

/// Parses an Ed25519 private key: PKCS#8 PEM ("PRIVATE KEY") or OpenSSH.
/// Every error is a fixed description of what the input is; none quotes it.
pub fn parse_private_key(bytes: &[u8]) -> Result<SigningKey, PrivateKeyError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.trim(),
        Err(_) => return Err(PrivateKeyError::NotText),
    };
    if text.is_empty() {
        return Err(PrivateKeyError::Empty);
    }
    let Some(label) = pem_label(text) else {
        if text.starts_with("ssh-") || text.starts_with("ecdsa-") {
            return Err(PrivateKeyError::PublicKey);
        }
        return Err(PrivateKeyError::NotPem);
    };
    let end = format!("-----END {label}-----");
    if !text.contains(&end) {
        return Err(PrivateKeyError::TruncatedPem {
            label: label.to_string(),
        });
    }
    match label {
        "OPENSSH PRIVATE KEY" => parse_openssh(text),
        "PRIVATE KEY" => parse_pkcs8(text),
        "ENCRYPTED PRIVATE KEY" => Err(PrivateKeyError::EncryptedPkcs8),
        "RSA PRIVATE KEY" => Err(PrivateKeyError::Rsa),
        "EC PRIVATE KEY" => Err(PrivateKeyError::Ec),
        "DSA PRIVATE KEY" => Err(PrivateKeyError::Dsa),
        "PUBLIC KEY" | "RSA PUBLIC KEY" | "SSH2 PUBLIC KEY" => Err(PrivateKeyError::PublicKey),
        other => Err(PrivateKeyError::OtherPem {
            label: sanitize_label(other),
        }),
    }
}

/// The label of the first `-----BEGIN X-----` line, if any.
fn pem_label(text: &str) -> Option<&str> {
    let start = text.find("-----BEGIN ")? + "-----BEGIN ".len();
    let rest = &text[start..];
    let end = rest.find("-----")?;
    let label = &rest[..end];
    // A PEM label is short printable ASCII; anything else is not a header.
    if label.len() > 64 || !label.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return None;
    }
    Some(label)
}

fn sanitize_label(s: &str) -> String {
    crate::util::sanitize::ascii(s, 64)
}

fn parse_openssh(text: &str) -> Result<SigningKey, PrivateKeyError> {
    match openssh::parse_private(text).map_err(PrivateKeyError::MalformedOpenssh)? {
        openssh::PrivateKey::Encrypted => Err(PrivateKeyError::EncryptedOpenssh),
        openssh::PrivateKey::Other(alg) => Err(PrivateKeyError::OpensshAlgorithm(alg)),
        openssh::PrivateKey::Ed25519(seed) => Ok(SigningKey::from_seed(&seed)),
    }
}

/// A PKCS#8 PrivateKeyInfo (RFC 5958), as far as an Ed25519 key needs it.
struct PrivateKeyInfo<'a> {
    /// The algorithm's OID (DER content) and whether parameters follow it.
    oid: &'a [u8],
    parameters: bool,
    private_key: &'a [u8],
    public_key: Option<&'a [u8]>,
}

fn private_key_info(der: &[u8]) -> Option<PrivateKeyInfo<'_>> {
    let mut outer = Der::new(der);
    let mut seq = Der::new(outer.expect(der::SEQUENCE)?);
    if !outer.is_empty() {
        return None;
    }
    let version = seq.expect(der::INTEGER)?;
    let mut alg = Der::new(seq.expect(der::SEQUENCE)?);
    let oid = alg.expect(der::OID)?;
    let parameters = !alg.is_empty();
    let private_key = seq.expect(der::OCTET_STRING)?;
    // As the pkcs8 crate read it: attributes ([0]) skipped, the public key
    // ([1]) there exactly when the version is 1 (v2), and any later
    // context-specific field ignored.
    let _attributes = seq.optional(0xa0);
    let public_key = seq.optional(0x81);
    match (version, public_key) {
        ([0], None) | ([1], Some(_)) => {}
        _ => return None,
    }
    while !seq.is_empty() {
        match seq.tlv()? {
            (t, _, _) if t & 0xc0 == 0x80 => {}
            _ => return None,
        }
    }
    Some(PrivateKeyInfo {
        oid,
        parameters,
        private_key,
        public_key,
    })
}

/// The key in a "PRIVATE KEY" block, to ed25519-dalek's rules: the Ed25519
/// OID without parameters, a 32-byte seed in an OCTET STRING, and a v2
/// public key, when there is one, that is the seed's.
fn parse_pkcs8(text: &str) -> Result<SigningKey, PrivateKeyError> {
    let der =
        openssh::unarmor("PRIVATE KEY", text).map_err(|e| PrivateKeyError::MalformedPkcs8(e.0))?;
    let Some(info) = private_key_info(&der) else {
        return Err(PrivateKeyError::MalformedPkcs8(
            "not a PKCS#8 PrivateKeyInfo",
        ));
    };
    if info.oid != ED25519_OID {
        return Err(PrivateKeyError::Pkcs8Algorithm(pkcs8_algorithm(info.oid)));
    }
    if info.parameters {
        return Err(PrivateKeyError::MalformedPkcs8(
            "the Ed25519 algorithm has parameters",
        ));
    }
    // RFC 8410: the seed is an OCTET STRING inside the OCTET STRING.
    let seed: Zeroizing<[u8; 32]> = match info.private_key {
        [0x04, 0x20, rest @ ..] => <[u8; 32]>::try_from(rest).ok().map(Zeroizing::new),
        _ => None,
    }
    .ok_or(PrivateKeyError::MalformedPkcs8(
        "the private key is not 32 bytes in an OCTET STRING",
    ))?;
    let key = SigningKey::from_seed(&seed);
    if let Some(public) = info.public_key {
        if public.first() != Some(&0) || &public[1..] != key.verifying_key().as_bytes() {
            return Err(PrivateKeyError::MalformedPkcs8(
                "the public key in it is not the private key's",
            ));
        }
    }
    Ok(key)
}

/// The name of a PKCS#8 key's algorithm other than Ed25519.
fn pkcs8_algorithm(oid: &[u8]) -> &'static str {
    match der::oid_string(oid).as_deref() {
        Some("1.3.101.113") => "Ed448",
        Some("1.3.101.110") => "X25519",
        Some("1.3.101.111") => "X448",
        Some("1.2.840.113549.1.1.1" | "1.2.840.113549.1.1.10") => "RSA",
        Some("1.2.840.10045.2.1") => "EC",
        Some("1.2.840.10040.4.1") => "DSA",
        _ => "non-Ed25519",
    }
}

/// Why text is not an Ed25519 public key.
#[derive(Debug)]
pub enum PublicKeyError {
    /// A private key: a verifier has no business holding it.
    PrivateKey,
    /// A PEM 'PUBLIC KEY' BEGIN line without its END line.
    TruncatedPem,
    /// A PEM 'PUBLIC KEY' block that is not an Ed25519 key.
    NotEd25519Pem(&'static str),
    /// An OpenSSH public key line that does not parse.
    MalformedOpenssh(openssh::Malformed),
    /// An OpenSSH Ed25519 key that is not a valid point.
    BadPoint(NotAPoint),
    /// An OpenSSH key of another algorithm.
    OpensshAlgorithm(String),
    /// Neither a PEM block nor an OpenSSH line.
    NotFound,
}

impl fmt::Display for PublicKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublicKeyError::PrivateKey => f.write_str(
                "a private key: expected the public key (`selfprobe pubkey --sign-key KEY` prints it)",
            ),
            PublicKeyError::TruncatedPem => {
                f.write_str("truncated PEM: no '-----END PUBLIC KEY-----' line")
            }
            PublicKeyError::NotEd25519Pem(e) => write!(
                f,
                "not an Ed25519 public key ({e}): expected `openssl pkey -pubout` output of an Ed25519 key"
            ),
            PublicKeyError::MalformedOpenssh(e) => {
                write!(f, "malformed OpenSSH public key ({e})")
            }
            PublicKeyError::BadPoint(e) => write!(f, "not a valid Ed25519 point ({e})"),
            PublicKeyError::OpensshAlgorithm(alg) => write!(
                f,
                "an OpenSSH {alg} public key: selfprobe signs with Ed25519 only"
            ),
            PublicKeyError::NotFound => f.write_str(
                "no public key found: expected a PEM 'PUBLIC KEY' block or an OpenSSH 'ssh-ed25519 AAAA…' line",
            ),
        }
    }
}

impl std::error::Error for PublicKeyError {}

/// Parses a public key for `verify --pubkey`: SPKI PEM, an OpenSSH line
/// (`ssh-ed25519 AAAA…`, as in authorized_keys or allowed_signers), or the
/// whole output of `selfprobe pubkey`. A private key is refused: a verifier
/// has no business holding it.
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, PublicKeyError> {
    if let Some(label) = pem_label(text) {
        if label.contains("PRIVATE KEY") {
            return Err(PublicKeyError::PrivateKey);
        }
        if label == "PUBLIC KEY" {
            let end = "-----END PUBLIC KEY-----";
            let start = text.find("-----BEGIN PUBLIC KEY-----").unwrap_or(0);
            // The END after the BEGIN: one before it (fuzz/public_key found
            // it) would make the block a backwards slice.
            let Some(stop) = text[start..].find(end).map(|i| start + i) else {
                return Err(PublicKeyError::TruncatedPem);
            };
            let block = &text[start..stop + end.len()];
            return spki_pem(block).map_err(PublicKeyError::NotEd25519Pem);
        }
    }
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words
            .iter()
            .position(|w| w.starts_with("ssh-") || w.starts_with("ecdsa-") || w.starts_with("sk-"))
        {
            if i + 1 >= words.len() {
                continue;
            }
            let pk = openssh::parse_public_line(words[i], words[i + 1])
                .map_err(PublicKeyError::MalformedOpenssh)?;
            return match pk {
                openssh::PublicKey::Ed25519(k) => {
                    VerifyingKey::from_bytes(&k).map_err(PublicKeyError::BadPoint)
                }
                openssh::PublicKey::Other(alg) => Err(PublicKeyError::OpensshAlgorithm(alg)),
            };
        }
    }
    Err(PublicKeyError::NotFound)
}

/// The key of an Ed25519 SubjectPublicKeyInfo PEM block (RFC 8410), to
/// ed25519-dalek's rules: the Ed25519 OID without parameters, a BIT STRING
/// of 32 bytes with no unused bits, and a point.
fn spki_pem(block: &str) -> Result<VerifyingKey, &'static str> {
    let der = openssh::unarmor("PUBLIC KEY", block).map_err(|e| e.0)?;
    let mut outer = Der::new(&der);
    let parsed = outer.expect(der::SEQUENCE).and_then(|seq| {
        let mut seq = Der::new(seq);
        let mut alg = Der::new(seq.expect(der::SEQUENCE)?);
        let oid = alg.expect(der::OID)?;
        let key = seq.expect(der::BIT_STRING)?;
        (seq.is_empty() && outer.is_empty()).then_some((oid, alg.is_empty(), key))
    });
    let Some((oid, no_parameters, key)) = parsed else {
        return Err("not a SubjectPublicKeyInfo");
    };
    if oid != ED25519_OID {
        return Err("the key's algorithm is not Ed25519");
    }
    if !no_parameters {
        return Err("the Ed25519 algorithm has parameters");
    }
    let key: &[u8; 32] = match key {
        [0, rest @ ..] => rest.try_into().map_err(|_| "the key is not 32 bytes")?,
        _ => return Err("the key's BIT STRING has unused bits"),
    };
    VerifyingKey::from_bytes(key).map_err(|_| "the 32 bytes are not a point on the curve")
}

/// Why a public input file of `verify` could not be read; each names the file.
#[derive(Debug)]
pub enum InputError {
    /// It could not be looked at or read.
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A directory, device, FIFO or socket.
    NotFile { path: PathBuf },
    /// Larger than the bound (`max_mib` MiB).
    TooLarge { path: PathBuf, max_mib: u64 },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Unreadable { path, error } => write!(f, "{}: {error}", path.display()),
            InputError::NotFile { path } => write!(f, "{}: not a regular file", path.display()),
            InputError::TooLarge { path, max_mib } => write!(
                f,
                "{}: larger than {max_mib} MiB: expected a selfprobe output",
                path.display()
            ),
        }
    }
}

impl std::error::Error for InputError {}

/// Reads a small public input file (a public key, an envelope, a signature,
/// a report) with a bound, for `verify`.
pub fn read_public_file(path: &Path, max: u64) -> Result<Vec<u8>, InputError> {
    let unreadable = |error| InputError::Unreadable {
        path: path.to_path_buf(),
        error,
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(InputError::NotFile {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > max {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            max_mib: max >> 20,
        });
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut buf))
        .map_err(unreadable)?;
    Ok(buf)
}
