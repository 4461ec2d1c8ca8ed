//! TLS for the network probe's https:// destinations and the registry
//! client (src/registry): rustls with the system CA bundle when the
//! image has one (read through the Host root), else the embedded Mozilla roots
//! (webpki-roots), since a FROM scratch image has no bundle at all
//! (docs/layout.md, Dependencies). A verifier that records the presented chain wraps the real one, so a
//! failed handshake still says whose certificate was presented: that is how
//! TLS interception shows.

use std::collections::HashSet;
use std::io;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use serde::{Deserialize, Serialize};

use crate::host::{read_regular, Host};
use crate::util::http1::Timed;

/// CA bundles of the common distributions, in the order Go and curl try them.
const BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];
const MAX_BUNDLE: u64 = 8 << 20;
/// A distribution's /etc/ssl/certs holds a few hundred names.
const MAX_DIR_ENTRIES: usize = 4096;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct TrustStore {
    /// system (a CA bundle in the image) or embedded (webpki-roots).
    pub kind: super::text::Text,
    /// The bundle that was used, or why none was.
    pub source: String,
    pub certificates: usize,
}

pub struct Tls {
    pub store: TrustStore,
    provider: Arc<CryptoProvider>,
    verifier: Result<Arc<WebPkiServerVerifier>, String>,
}

/// The codec's exchange runs over TLS as over TCP: the deadline bounds the
/// socket under the TLS session.
impl Timed for rustls::StreamOwned<ClientConnection, TcpStream> {
    fn arm(&self, deadline: Instant) -> io::Result<()> {
        self.sock.arm(deadline)
    }
}

/// Roots gathered from the image, each certificate once: a bundle and an
/// SSL_CERT_DIR often hold the same ones.
struct Gathered {
    roots: RootCertStore,
    seen: HashSet<Vec<u8>>,
}

impl Gathered {
    /// Adds the PEM certificates in `bytes`; returns how many were new.
    fn add_pem(&mut self, bytes: &[u8]) -> usize {
        let before = self.roots.len();
        for cert in CertificateDer::pem_slice_iter(bytes).filter_map(Result::ok) {
            if self.seen.insert(cert.to_vec()) {
                let _ = self.roots.add(cert);
            }
        }
        self.roots.len() - before
    }

    /// Reads the certificates of an OpenSSL-style directory: PEM files,
    /// hashed names linking to them. Bounded in entries and bytes, since the
    /// directory is the workspace's to fill.
    fn add_dir(&mut self, host: &Host, dir: &str) -> io::Result<usize> {
        let mut added = 0;
        let mut budget = MAX_BUNDLE;
        for ent in std::fs::read_dir(host.path(dir))?.take(MAX_DIR_ENTRIES) {
            let Ok(ent) = ent else { continue };
            if budget == 0 {
                break;
            }
            if let Ok(bytes) = read_regular(&ent.path(), budget) {
                budget -= bytes.len() as u64;
                added += self.add_pem(&bytes);
            }
        }
        Ok(added)
    }
}

/// ring's provider as rustls's `default_provider()` makes it, but with the
/// AES-GCM suites only, TLS 1.3 and 1.2: every TLS 1.3 server has
/// AES-128-GCM (RFC 8446 §9.1) and TLS 1.2 servers offer AES-GCM;
/// ChaCha20-Poly1305, the suite for clients without AES in hardware, was
/// 50 KB of the shipped binary (bench/RESULTS.md, "Size, issue 24").
/// Field by field, since calling `default_provider()` at all keeps every
/// suite it lists.
fn provider() -> CryptoProvider {
    use rustls::crypto::ring::{cipher_suite as cs, kx_group};
    CryptoProvider {
        cipher_suites: vec![
            cs::TLS13_AES_256_GCM_SHA384,
            cs::TLS13_AES_128_GCM_SHA256,
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ],
        kx_groups: vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1],
        signature_verification_algorithms: SIGNATURE_ALGORITHMS,
        secure_random: &Random,
        key_provider: &NoClientKeys,
    }
}

/// rustls's ring provider's signature algorithms (its SUPPORTED_SIG_ALGS).
static SIGNATURE_ALGORITHMS: rustls::crypto::WebPkiSupportedAlgorithms =
    rustls::crypto::WebPkiSupportedAlgorithms {
        all: &[
            webpki::ring::ECDSA_P256_SHA256,
            webpki::ring::ECDSA_P256_SHA384,
            webpki::ring::ECDSA_P384_SHA256,
            webpki::ring::ECDSA_P384_SHA384,
            webpki::ring::ED25519,
            webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
            webpki::ring::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
            webpki::ring::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
            webpki::ring::RSA_PKCS1_2048_8192_SHA256,
            webpki::ring::RSA_PKCS1_2048_8192_SHA384,
            webpki::ring::RSA_PKCS1_2048_8192_SHA512,
            webpki::ring::RSA_PKCS1_2048_8192_SHA256_ABSENT_PARAMS,
            webpki::ring::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS,
            webpki::ring::RSA_PKCS1_2048_8192_SHA512_ABSENT_PARAMS,
        ],
        mapping: &[
            (
                SignatureScheme::ECDSA_NISTP384_SHA384,
                &[
                    webpki::ring::ECDSA_P384_SHA384,
                    webpki::ring::ECDSA_P256_SHA384,
                ],
            ),
            (
                SignatureScheme::ECDSA_NISTP256_SHA256,
                &[
                    webpki::ring::ECDSA_P256_SHA256,
                    webpki::ring::ECDSA_P384_SHA256,
                ],
            ),
            (SignatureScheme::ED25519, &[webpki::ring::ED25519]),
            (
                SignatureScheme::RSA_PSS_SHA512,
                &[webpki::ring::RSA_PSS_2048_8192_SHA512_LEGACY_KEY],
            ),
            (
                SignatureScheme::RSA_PSS_SHA384,
                &[webpki::ring::RSA_PSS_2048_8192_SHA384_LEGACY_KEY],
            ),
            (
                SignatureScheme::RSA_PSS_SHA256,
                &[webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY],
            ),
            (
                SignatureScheme::RSA_PKCS1_SHA512,
                &[webpki::ring::RSA_PKCS1_2048_8192_SHA512],
            ),
            (
                SignatureScheme::RSA_PKCS1_SHA384,
                &[webpki::ring::RSA_PKCS1_2048_8192_SHA384],
            ),
            (
                SignatureScheme::RSA_PKCS1_SHA256,
                &[webpki::ring::RSA_PKCS1_2048_8192_SHA256],
            ),
        ],
    };

/// The provider's randomness: ring's, as rustls's ring provider has it.
#[derive(Debug)]
struct Random;

impl rustls::crypto::SecureRandom for Random {
    fn fill(&self, buf: &mut [u8]) -> Result<(), rustls::crypto::GetRandomFailed> {
        use ring::rand::SecureRandom as _;
        ring::rand::SystemRandom::new()
            .fill(buf)
            .map_err(|_| rustls::crypto::GetRandomFailed)
    }
}

/// selfprobe presents no client certificate, so it loads no key.
#[derive(Debug)]
struct NoClientKeys;

impl rustls::crypto::KeyProvider for NoClientKeys {
    fn load_private_key(
        &self,
        _key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Result<Arc<dyn rustls::sign::SigningKey>, rustls::Error> {
        Err(rustls::Error::General(
            "selfprobe presents no client certificate".into(),
        ))
    }
}

impl Tls {
    /// The roots the workspace's own tools would trust, as OpenSSL, Go and
    /// curl find them: SSL_CERT_FILE or the distribution's bundle, plus the
    /// directories in SSL_CERT_DIR (where a corporate CA is often added).
    /// Without any, the embedded roots.
    pub fn load(host: &Host) -> Tls {
        let provider = Arc::new(provider());
        let mut tried = Vec::new();
        let mut used = Vec::new();
        let mut got = Gathered {
            roots: RootCertStore::empty(),
            seen: HashSet::new(),
        };
        let env_file = host
            .env()
            .get("SSL_CERT_FILE")
            .filter(|v| v.starts_with('/'))
            .map(str::to_string);
        let candidates = env_file
            .iter()
            .map(String::as_str)
            .chain(BUNDLES.iter().copied());
        for path in candidates {
            match read_regular(&host.path(path), MAX_BUNDLE) {
                Ok(bytes) => {
                    if got.add_pem(&bytes) > 0 {
                        let via = if env_file.as_deref() == Some(path) {
                            " (SSL_CERT_FILE)"
                        } else {
                            ""
                        };
                        used.push(format!("{path}{via}"));
                        break;
                    }
                    tried.push(format!("{path}: no certificate in it"));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => tried.push(format!("{path}: {e}")),
            }
        }
        let env_dirs = host.env().get("SSL_CERT_DIR").unwrap_or_default();
        for dir in env_dirs.split(':').filter(|d| d.starts_with('/')) {
            match got.add_dir(host, dir) {
                Ok(n) if n > 0 => used.push(format!("{dir} (SSL_CERT_DIR)")),
                Ok(_) if got.roots.is_empty() => {
                    tried.push(format!("{dir} (SSL_CERT_DIR): no certificate in it"))
                }
                // Nothing the bundle did not already hold: nothing to say.
                Ok(_) => {}
                Err(e) => tried.push(format!("{dir} (SSL_CERT_DIR): {e}")),
            }
        }
        if !got.roots.is_empty() {
            let n = got.roots.len();
            return Tls::with_roots(
                provider,
                got.roots,
                TrustStore {
                    kind: "system".into(),
                    source: used.join("; "),
                    certificates: n,
                },
            );
        }
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let why = if tried.is_empty() {
            "no CA bundle in the image".to_string()
        } else {
            tried.join("; ")
        };
        let n = roots.roots.len();
        Tls::with_roots(
            provider,
            roots,
            TrustStore {
                kind: "embedded".into(),
                source: format!("webpki-roots, Mozilla's roots built into selfprobe ({why})"),
                certificates: n,
            },
        )
    }

    fn with_roots(provider: Arc<CryptoProvider>, roots: RootCertStore, store: TrustStore) -> Tls {
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("cannot build the certificate verifier: {e}"));
        Tls {
            store,
            provider,
            verifier,
        }
    }

    /// Runs the handshake on `tcp` for `name`. Returns the stream, or the
    /// failure with whatever chain was presented.
    pub fn handshake(
        &self,
        tcp: TcpStream,
        name: &str,
        deadline: Instant,
    ) -> Result<(rustls::StreamOwned<ClientConnection, TcpStream>, Presented), (TlsError, Presented)>
    {
        let inner = match &self.verifier {
            Ok(v) => v.clone(),
            Err(e) => return Err((TlsError::Setup(e.clone()), Presented::default())),
        };
        let capture = Arc::new(Capture {
            inner,
            seen: Mutex::new(Vec::new()),
        });
        let presented =
            |c: &Capture| Presented::from_chain(&c.seen.lock().unwrap_or_else(|e| e.into_inner()));
        let config = ClientConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map(|b| {
                let mut c = b
                    .dangerous()
                    .with_custom_certificate_verifier(capture.clone())
                    .with_no_client_auth();
                c.alpn_protocols = vec![b"http/1.1".to_vec()];
                c
            })
            .map_err(|e| (TlsError::Setup(e.to_string()), Presented::default()))?;
        let server_name = ServerName::try_from(name.to_string()).map_err(|e| {
            (
                TlsError::Setup(format!("'{name}' as a TLS name: {e}")),
                Presented::default(),
            )
        })?;
        let conn = ClientConnection::new(Arc::new(config), server_name)
            .map_err(|e| (TlsError::Setup(e.to_string()), Presented::default()))?;
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            // Every read gets only the time left, so a server that trickles
            // the handshake cannot stretch the destination's deadline.
            if let Err(e) = stream
                .sock
                .arm(deadline)
                .and_then(|_| stream.conn.complete_io(&mut stream.sock))
            {
                let err = match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    Some(t) => TlsError::Rejected(t.to_string()),
                    None => TlsError::Io(e),
                };
                return Err((err, presented(&capture)));
            }
        }
        let p = presented(&capture);
        Ok((stream, p))
    }
}

#[derive(Debug)]
pub enum TlsError {
    /// The handshake failed: a bad certificate, an alert, a protocol error.
    Rejected(String),
    /// The socket failed during the handshake (timeout, reset).
    Io(io::Error),
    Setup(String),
}

/// The certificate the server presented.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Presented {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    pub chain_length: usize,
}

impl Presented {
    fn from_chain(chain: &[CertificateDer<'static>]) -> Presented {
        let mut p = Presented {
            chain_length: chain.len(),
            ..Default::default()
        };
        if let Some(ee) = chain.first() {
            if let Some((subject, issuer)) = names(ee.as_ref()) {
                p.subject = Some(subject);
                p.issuer = Some(issuer);
            }
        }
        p
    }

    pub fn is_empty(&self) -> bool {
        self.chain_length == 0
    }
}

/// Subject and issuer of a DER certificate, as RFC 4514 strings.
pub use super::x509::names;

#[derive(Debug)]
struct Capture {
    inner: Arc<WebPkiServerVerifier>,
    seen: Mutex<Vec<CertificateDer<'static>>>,
}

impl ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.clear();
            seen.push(end_entity.clone().into_owned());
            seen.extend(intermediates.iter().map(|c| c.clone().into_owned()));
        }
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    #[test]
    fn embedded_roots_without_a_bundle() {
        let dir = std::env::temp_dir().join(format!("selfprobe-tls-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("etc/ssl/certs")).unwrap();
        let host = Host::new(dir.clone(), Duration::from_secs(1));
        let t = Tls::load(&host);
        assert_eq!(t.store.kind, "embedded");
        assert!(t.store.certificates > 100);
        assert!(t.verifier.is_ok());

        // A bundle with one real root (taken from the embedded set) is used.
        std::fs::write(dir.join("etc/ssl/certs/ca-certificates.crt"), "not pem\n").unwrap();
        assert_eq!(
            Tls::load(&host).store.kind,
            "embedded",
            "an empty bundle falls back"
        );
        let _ = std::fs::remove_dir_all(PathBuf::from(&dir));
    }
}
