//! Signing keys: where they come from (a file, an inherited fd, the
//! environment, or none: an ephemeral key), what forms are accepted (PKCS#8
//! PEM and OpenSSH Ed25519), and the public forms a verifier needs (SPKI PEM,
//! an OpenSSH line, the DSSE keyid).
//!
//! The private key is evidence-grade secret: no error, log or output here
//! carries a byte of it. Buffers that held it are zeroized when dropped, and
//! error messages are built from fixed text, never from the key's content.

use std::fmt;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use pkcs8::LineEnding;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

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

/// Why an SSHSIG could not be made (signing or armoring failed).
#[derive(Debug)]
pub enum SignError {
    Sign(ssh_key::Error),
    Encode(ssh_key::Error),
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::Sign(e) => write!(f, "cannot make the SSHSIG: {e}"),
            SignError::Encode(e) => write!(f, "cannot encode the SSHSIG: {e}"),
        }
    }
}

impl std::error::Error for SignError {}

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
            key: SigningKey::from_bytes(&seed),
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

    /// The private key as PKCS#8 PEM, for `selfprobe inspect` to hand to a
    /// probe on its stdin (`--sign-key-fd 0`), never to a file. The buffer
    /// is zeroized when dropped.
    pub fn private_pem(&self) -> Result<Zeroizing<String>, KeyError> {
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|_| KeyError("cannot encode the signing key as PKCS#8".into()))
    }

    /// Ed25519 over `msg` (for DSSE, msg is the PAE).
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer as _;
        self.key.sign(msg).to_bytes()
    }

    /// An OpenSSH SSHSIG over `msg` (namespace and hash as `ssh-keygen -Y sign`).
    pub fn sshsig(&self, namespace: &str, msg: &[u8]) -> Result<String, SignError> {
        let keypair = ssh_key::private::Ed25519Keypair::from(&self.key);
        let sig = ssh_key::PrivateKey::from(keypair)
            .sign(namespace, ssh_key::HashAlg::Sha512, msg)
            .map_err(SignError::Sign)?;
        sig.to_pem(ssh_key::LineEnding::LF)
            .map_err(SignError::Encode)
    }
}

/// The DSSE keyid (docs/signing.md): hex SHA-256 of securesystemslib's
/// canonical JSON of the key (sorted keys, no spaces), which is what
/// `SSlibKey.from_crypto` computes, so `Envelope.verify` matches it.
pub fn keyid(vk: &VerifyingKey) -> String {
    let canonical = format!(
        r#"{{"keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
        hex(vk.as_bytes())
    );
    hex(&Sha256::digest(canonical.as_bytes()))
}

pub use crate::util::codec::hex;

/// SubjectPublicKeyInfo PEM, as `openssl pkey -pubout` writes it.
pub fn public_pem(vk: &VerifyingKey) -> String {
    vk.to_public_key_pem(LineEnding::LF)
        .unwrap_or_else(|e| format!("(cannot encode the public key: {e})\n"))
}

/// `ssh-ed25519 AAAA…` (no comment).
pub fn public_openssh(vk: &VerifyingKey) -> String {
    let pk = ssh_key::PublicKey::from(ssh_key::public::Ed25519PublicKey::from(vk));
    pk.to_openssh()
        .unwrap_or_else(|e| format!("(cannot encode the public key: {e})"))
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
    let key = parse_private_key(&bytes)
        .map_err(|why| KeyError(format!("signing key from {}: {why}", source.describe())))?;
    Ok(Some(Signer {
        key,
        source: source.kind(),
    }))
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
            let n = *n;
            if n == 1 || n == 2 {
                return Err(err(format!(
                    "fd {n} is standard {}: expected a descriptor open for reading the key, e.g. --sign-key-fd 0 < key",
                    if n == 1 { "output" } else { "error" }
                )));
            }
            if n < 0
                || nix::fcntl::fcntl(
                    unsafe { BorrowedFd::borrow_raw(n) },
                    nix::fcntl::FcntlArg::F_GETFD,
                )
                .is_err()
            {
                return Err(err(format!(
                    "fd {n} is not open: expected the key on it, e.g. `--sign-key-fd 0 < key` or `--sign-key-fd 3 3< key`"
                )));
            }
            // SAFETY: fd n is open (checked above) and was handed to us for
            // this one purpose.
            let fd = unsafe { BorrowedFd::borrow_raw(n) };
            if nix::unistd::isatty(fd).unwrap_or(false) {
                return Err(err(format!(
                    "fd {n} is a terminal: expected the key piped or redirected in, e.g. --sign-key-fd {n} < key"
                )));
            }
            let bytes = read_bounded(fd, KEY_READ_TIMEOUT).map_err(err)?;
            if n > 2 {
                // SAFETY: as above; closing keeps the descriptor out of any
                // child process selfprobe starts.
                drop(unsafe { OwnedFd::from_raw_fd(n) });
            }
            Ok(bytes)
        }
    }
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
    MalformedOpenssh(ssh_key::Error),
    /// An encrypted OpenSSH key: selfprobe takes no passphrase.
    EncryptedOpenssh,
    /// An OpenSSH key of another algorithm.
    OpensshAlgorithm(String),
    /// A PKCS#8 key of another algorithm.
    Pkcs8Algorithm(&'static str),
    /// A PKCS#8 block that does not parse as an Ed25519 key.
    MalformedPkcs8(ed25519_dalek::pkcs8::Error),
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
    let key = ssh_key::PrivateKey::from_openssh(text).map_err(PrivateKeyError::MalformedOpenssh)?;
    if key.is_encrypted() {
        return Err(PrivateKeyError::EncryptedOpenssh);
    }
    match key.key_data() {
        ssh_key::private::KeypairData::Ed25519(kp) => Ok(SigningKey::from(&kp.private)),
        _ => Err(PrivateKeyError::OpensshAlgorithm(
            key.algorithm().as_str().to_string(),
        )),
    }
}

fn parse_pkcs8(text: &str) -> Result<SigningKey, PrivateKeyError> {
    match SigningKey::from_pkcs8_pem(text) {
        Ok(k) => Ok(k),
        Err(e) => {
            // Name the algorithm when the PKCS#8 structure is fine but not Ed25519.
            if let Some(alg) = pkcs8_algorithm(text) {
                if alg != "Ed25519" {
                    return Err(PrivateKeyError::Pkcs8Algorithm(alg));
                }
            }
            Err(PrivateKeyError::MalformedPkcs8(e))
        }
    }
}

fn pkcs8_algorithm(text: &str) -> Option<&'static str> {
    use pkcs8::der::Decode;
    let (_, der) = pkcs8::der::pem::decode_vec(text.as_bytes()).ok()?;
    let der = Zeroizing::new(der);
    let info = pkcs8::PrivateKeyInfo::from_der(&der).ok()?;
    Some(match info.algorithm.oid.to_string().as_str() {
        "1.3.101.112" => "Ed25519",
        "1.3.101.113" => "Ed448",
        "1.3.101.110" => "X25519",
        "1.3.101.111" => "X448",
        "1.2.840.113549.1.1.1" | "1.2.840.113549.1.1.10" => "RSA",
        "1.2.840.10045.2.1" => "EC",
        "1.2.840.10040.4.1" => "DSA",
        _ => "non-Ed25519",
    })
}

/// Why text is not an Ed25519 public key.
#[derive(Debug)]
pub enum PublicKeyError {
    /// A private key: a verifier has no business holding it.
    PrivateKey,
    /// A PEM 'PUBLIC KEY' BEGIN line without its END line.
    TruncatedPem,
    /// A PEM 'PUBLIC KEY' block that is not an Ed25519 key.
    NotEd25519Pem(ed25519_dalek::pkcs8::spki::Error),
    /// An OpenSSH public key line that does not parse.
    MalformedOpenssh(ssh_key::Error),
    /// An OpenSSH Ed25519 key that is not a valid point.
    BadPoint(ssh_key::Error),
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
            let Some(stop) = text.find(end) else {
                return Err(PublicKeyError::TruncatedPem);
            };
            let start = text.find("-----BEGIN PUBLIC KEY-----").unwrap_or(0);
            let block = &text[start..stop + end.len()];
            return VerifyingKey::from_public_key_pem(block).map_err(PublicKeyError::NotEd25519Pem);
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
            let pk = ssh_key::PublicKey::from_openssh(&format!("{} {}", words[i], words[i + 1]))
                .map_err(PublicKeyError::MalformedOpenssh)?;
            return match pk.key_data() {
                ssh_key::public::KeyData::Ed25519(k) => {
                    VerifyingKey::try_from(k).map_err(PublicKeyError::BadPoint)
                }
                _ => Err(PublicKeyError::OpensshAlgorithm(
                    pk.algorithm().as_str().to_string(),
                )),
            };
        }
    }
    Err(PublicKeyError::NotFound)
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

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 8032 test 1: the secret key and its public key.
    const SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn rfc_key() -> SigningKey {
        SigningKey::from_bytes(&unhex(SEED).try_into().unwrap())
    }

    #[test]
    fn keyid_is_sha256_of_canonical_securesystemslib_json() {
        let vk = rfc_key().verifying_key();
        assert_eq!(hex(vk.as_bytes()), PUBLIC);
        let canonical = format!(
            "{{\"keytype\":\"ed25519\",\"keyval\":{{\"public\":\"{PUBLIC}\"}},\"scheme\":\"ed25519\"}}"
        );
        assert_eq!(keyid(&vk), hex(&Sha256::digest(canonical.as_bytes())));
    }

    #[test]
    fn pkcs8_and_openssh_round_trip_to_the_same_key() {
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let k = rfc_key();
        let pem = k.to_pkcs8_pem(LineEnding::LF).unwrap();
        assert_eq!(
            parse_private_key(pem.as_bytes()).unwrap().to_bytes(),
            k.to_bytes()
        );
        let ssh = ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from(&k))
            .to_openssh(ssh_key::LineEnding::LF)
            .unwrap();
        assert_eq!(
            parse_private_key(ssh.as_bytes()).unwrap().to_bytes(),
            k.to_bytes()
        );
    }

    #[test]
    fn bad_inputs_are_described_not_quoted() {
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let k = rfc_key();
        let pem = k.to_pkcs8_pem(LineEnding::LF).unwrap();
        let half = &pem.as_bytes()[..pem.len() / 2];
        let cases: Vec<(&[u8], &str)> = vec![
            (b"", "empty"),
            (b"   \n", "empty"),
            (half, "truncated PEM"),
            (b"\xff\xfe", "not text"),
            (b"hello", "not a PEM key"),
            (b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n", "RSA"),
            (b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", "encrypted"),
            (b"-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n", "malformed PKCS#8"),
            (b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINdamAGCsQq31Uv+08lkBzoO4XLz2qYjJa8CGmj3B1Ea", "public key"),
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
    fn public_key_forms_parse_and_private_keys_are_refused() {
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let k = rfc_key();
        let vk = k.verifying_key();
        assert_eq!(parse_public_key(&public_pem(&vk)).unwrap(), vk);
        assert_eq!(parse_public_key(&public_openssh(&vk)).unwrap(), vk);
        let line = allowed_signers_line(&vk, "selfprobe", "selfprobe");
        assert_eq!(parse_public_key(&line).unwrap(), vk);
        let both = format!("{}{line}\n", public_pem(&vk));
        assert_eq!(parse_public_key(&both).unwrap(), vk);
        let private = k.to_pkcs8_pem(LineEnding::LF).unwrap();
        let e = parse_public_key(&private).unwrap_err();
        assert!(matches!(e, PublicKeyError::PrivateKey), "{e:?}");
        assert!(e.to_string().contains("private key"), "{e}");
        let e = parse_public_key("nothing").unwrap_err();
        assert!(matches!(e, PublicKeyError::NotFound), "{e:?}");
        assert_eq!(
            e.to_string(),
            "no public key found: expected a PEM 'PUBLIC KEY' block or an OpenSSH 'ssh-ed25519 AAAA…' line"
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
    }

    #[test]
    fn ephemeral_keys_differ() {
        let a = Signer::ephemeral().unwrap();
        let b = Signer::ephemeral().unwrap();
        assert_ne!(a.keyid(), b.keyid());
        assert!(a.is_ephemeral());
        assert!(!format!("{a:?}").contains(&hex(&a.key.to_bytes())));
    }
}
