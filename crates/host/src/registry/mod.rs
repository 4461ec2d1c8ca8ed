//! Attestations in an OCI registry (DESIGN §15): `selfprobe-host attest push`
//! attaches DSSE envelopes (`--attest`) to an image manifest, `attest fetch`
//! lists, downloads and verifies them. Host-side: no probe imports this.
//!
//! The layout, and where each choice comes from:
//! - One OCI image manifest per envelope, as the OCI image spec 1.1 gives an
//!   artifact: `artifactType`, the empty config
//!   (`application/vnd.oci.empty.v1+json`, the two bytes `{}`), one layer,
//!   and `subject` = the image manifest's descriptor, so the registry (or
//!   the referrers tag) lists it among the image's referrers.
//! - The envelope's media type, as layer and as artifactType, is
//!   `application/vnd.dsse.envelope.v1+json`: the type cosign's attestation
//!   layout gives DSSE envelopes (sigstore/cosign, specs/ATTESTATION_SPEC.md:
//!   "The DSSE envelope format … uses the mediaType
//!   application/vnd.dsse.envelope.v1+json"). The in-toto attestation spec
//!   (in-toto/attestation, spec/v1/envelope.md) suggests
//!   `application/vnd.in-toto.<predicate>+dsse` where `<predicate>` is the
//!   file name of a predicate specification in its repository; selfprobe's
//!   report predicate has none there, so that form would name nothing.
//! - The predicate type rides in the annotation `in-toto.io/predicate-type`,
//!   the key BuildKit and Docker put on attestation layers (Docker's "Image
//!   attestation storage"; github.com/docker/attest `InTotoPredicateType`),
//!   so a reader can pick attestations without downloading them.
//! - The referrers API (`GET /v2/<name>/referrers/<digest>`) where the
//!   registry answers it; a registry without it (Debian's docker-registry,
//!   distribution 2.8: 404 there, and no `OCI-Subject` header on a manifest
//!   PUT) gets the distribution spec 1.1's referrers tag schema: an image
//!   index at the tag `sha256-<hex>`, read, added to, written back, keeping
//!   every entry that was there.
//!
//! The crate oci-client was measured and set aside: it brings an async
//! runtime and an HTTP stack (about 138 crates) into a binary copied into
//! every workspace (DESIGN §8). This client reuses selfprobe's own HTTP/1
//! codec and rustls, and costs what bench/RESULTS.md says.

pub mod auth;
pub mod client;
pub mod reference;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use selfprobe::keys::VerifyingKey;
use serde_json::{json, Value};

use client::{registry_errors, Client, Resolver, Session, MAX_BLOB, MAX_MANIFEST};
pub use reference::Reference;
use selfprobe::attest::dsse::{Envelope, PAYLOAD_TYPE};
use selfprobe::attest::verify::{self, Verdict};
use selfprobe::host::{read_regular, Cleanup, Host};
use selfprobe::json_at;
use selfprobe::model::Report;
use selfprobe::util::tls::Tls;
use selfprobe::util::{codec, sanitize};

pub const ENVELOPE_MEDIA_TYPE: &str = "application/vnd.dsse.envelope.v1+json";
pub const ARTIFACT_TYPE: &str = ENVELOPE_MEDIA_TYPE;
pub const PREDICATE_ANNOTATION: &str = "in-toto.io/predicate-type";
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// The empty config's bytes and digest (image-spec 1.1, "Guidance for an
/// Empty Descriptor").
pub const EMPTY_JSON: &[u8] = b"{}";
pub const EMPTY_DIGEST: &str =
    "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
/// The manifest types an image may have, for Accept.
const MANIFEST_TYPES: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";
/// Pages of a referrers answer followed (Link: rel="next").
const MAX_PAGES: usize = 16;
/// Referrers listed: an image with more selfprobe attestations than this
/// is not what this command is for.
const MAX_REFERRERS: usize = 1000;
/// What `attest fetch -o` writes in all: only verified envelopes, each at
/// most MAX_BLOB, and this much together (docs/registry.md).
pub const MAX_WRITTEN: u64 = 256 << 20;

/// A bad reference or credentials (usage), or the registry (failed).
pub use crate::error::Error;

pub struct Options {
    pub reference: Reference,
    pub insecure: bool,
    pub timeout: Duration,
    /// How registry names are resolved (main hands in selfprobe's own
    /// resolver: /etc/hosts, then /etc/resolv.conf's nameservers).
    pub resolver: fn() -> Resolver,
}

pub fn sha256(b: &[u8]) -> String {
    format!("sha256:{}", selfprobe::util::digest::sha256_hex(b))
}

fn client(opts: &Options, push: bool) -> Result<Client, Error> {
    let host = Host::new(PathBuf::from("/"), opts.timeout);
    let files = auth::auth_files(host.env());
    let creds = auth::lookup(&files, &opts.reference.registry, &opts.reference.repository);
    if let Some(b) = &creds.broken {
        return Err(Error::Usage(format!("registry credentials: {b}")));
    }
    let tls = Tls::load(&host);
    Ok(Client::new(
        opts.reference.clone(),
        opts.insecure,
        tls,
        creds,
        push,
        (opts.resolver)(),
        Instant::now() + opts.timeout,
    ))
}

fn accept(t: &str) -> Vec<(String, String)> {
    vec![("Accept".to_string(), t.to_string())]
}

fn failed(c: &Client, what: &str, r: &selfprobe::util::http1::Response) -> Error {
    Error::Failed(format!(
        "registry {}: {what}: {} {}{}",
        c.reference.registry,
        r.status,
        r.reason,
        registry_errors(&r.body)
    ))
}

/// The image manifest's descriptor (the subject), its bytes checked
/// against the digest.
fn subject(c: &mut Client) -> Result<Value, Error> {
    let r = c.reference.clone();
    let target = format!("/v2/{}/manifests/{}", r.repository, r.digest);
    let resp = c.request("GET", &target, &accept(MANIFEST_TYPES), None, MAX_MANIFEST)?;
    if resp.status != 200 {
        return Err(failed(c, &format!("the image manifest {r}"), &resp));
    }
    let got = sha256(&resp.body);
    if got != r.digest {
        return Err(Error::Failed(format!(
            "registry {}: the manifest served for {} hashes to {got}: not the image asked for",
            r.registry, r.digest
        )));
    }
    let media = serde_json::from_slice::<Value>(&resp.body)
        .ok()
        .and_then(|v| {
            v.get("mediaType")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| {
            resp.header("content-type")
                .map(|t| t.split(';').next().unwrap_or("").trim().to_string())
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| OCI_MANIFEST.to_string());
    Ok(json!({"mediaType": media, "digest": r.digest, "size": resp.body.len()}))
}

/// Uploads a blob unless the registry has it: POST for a session, then
/// one PUT with the digest (the spec's monolithic upload).
fn put_blob(c: &mut Client, bytes: &[u8], digest: &str) -> Result<bool, Error> {
    let repo = c.reference.repository.clone();
    let head = c.request("HEAD", &format!("/v2/{repo}/blobs/{digest}"), &[], None, 0)?;
    if head.status == 200 {
        return Ok(false);
    }
    let start = c.request(
        "POST",
        &format!("/v2/{repo}/blobs/uploads/"),
        &[],
        None,
        8192,
    )?;
    if start.status != 202 {
        return Err(failed(c, "starting a blob upload", &start));
    }
    let loc = start.header("location").unwrap_or("").to_string();
    let target = c.upload_target(&loc)?;
    let sep = if target.contains('?') { '&' } else { '?' };
    let put = format!("{target}{sep}digest={}", auth::query_escape(digest));
    let headers = vec![(
        "Content-Type".to_string(),
        "application/octet-stream".to_string(),
    )];
    let done = c.request("PUT", &put, &headers, Some(bytes), 8192)?;
    if done.status != 201 {
        return Err(failed(c, &format!("uploading the blob {digest}"), &done));
    }
    Ok(true)
}

/// PUTs a manifest by digest (or tag); returns whether the registry said
/// it indexes its subject (the `OCI-Subject` header).
fn put_manifest(
    c: &mut Client,
    reference: &str,
    media_type: &str,
    bytes: &[u8],
) -> Result<bool, Error> {
    let repo = c.reference.repository.clone();
    let headers = vec![("Content-Type".to_string(), media_type.to_string())];
    let r = c.request(
        "PUT",
        &format!("/v2/{repo}/manifests/{reference}"),
        &headers,
        Some(bytes),
        8192,
    )?;
    if r.status != 201 {
        return Err(failed(c, &format!("putting the manifest {reference}"), &r));
    }
    Ok(r.header("oci-subject").is_some())
}

/// An envelope file, checked before anything is sent: a DSSE envelope
/// carrying an in-toto statement.
pub struct EnvelopeFile {
    pub name: String,
    pub bytes: Vec<u8>,
    pub predicate_type: String,
    /// The statement names the image's digest among its subjects.
    pub names_image: bool,
    /// The report's end time (`run.finished`), for the created annotation:
    /// the same envelope makes the same manifest, pushed twice or not.
    pub finished: Option<String>,
}

pub fn read_envelope(path: &Path, image_hex: &str) -> Result<EnvelopeFile, Error> {
    let name = path.display().to_string();
    let usage = |why: String| Error::Usage(format!("attest push: {name}: {why}"));
    let bytes = read_regular(path, MAX_BLOB as u64 + 1).map_err(|e| usage(e.to_string()))?;
    if bytes.len() > MAX_BLOB {
        return Err(usage(format!(
            "larger than {MAX_BLOB} bytes: not an envelope selfprobe wrote"
        )));
    }
    let env: Envelope = serde_json::from_slice(&bytes).map_err(|e| {
        usage(format!(
            "not a DSSE envelope ({e}): expected the file --attest wrote"
        ))
    })?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(usage(format!(
            "payloadType is {:?}, expected {PAYLOAD_TYPE:?}",
            sanitize::short(&env.payload_type, 80)
        )));
    }
    let stmt = codec::b64_decode(&env.payload)
        .and_then(|p| serde_json::from_slice::<Value>(&p).ok())
        .ok_or_else(|| usage("the payload is not base64 of a JSON statement".into()))?;
    let predicate_type = stmt
        .get("predicateType")
        .and_then(Value::as_str)
        .ok_or_else(|| usage("the statement has no predicateType".into()))?
        .to_string();
    let names_image = stmt
        .get("subject")
        .and_then(Value::as_array)
        .is_some_and(|s| {
            s.iter()
                .any(|x| x.pointer("/digest/sha256").and_then(Value::as_str) == Some(image_hex))
        });
    // The predicate is a report, or a teardown statement's, which names its
    // run as a report does.
    let finished = stmt
        .get("predicate")
        .and_then(|p| json_at!(p, Report => run.finished))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(EnvelopeFile {
        name,
        bytes,
        predicate_type,
        names_image,
        finished,
    })
}

/// The artifact manifest for one envelope.
pub fn artifact_manifest(env: &EnvelopeFile, subject: &Value) -> Vec<u8> {
    let title = Path::new(&env.name)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut annotations = json!({ PREDICATE_ANNOTATION: env.predicate_type });
    if let Some(t) = &env.finished {
        annotations["org.opencontainers.image.created"] = json!(t);
    }
    let m = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": ARTIFACT_TYPE,
        "config": {"mediaType": OCI_EMPTY, "digest": EMPTY_DIGEST, "size": EMPTY_JSON.len()},
        "layers": [{
            "mediaType": ENVELOPE_MEDIA_TYPE,
            "digest": sha256(&env.bytes),
            "size": env.bytes.len(),
            "annotations": {
                PREDICATE_ANNOTATION: env.predicate_type,
                "org.opencontainers.image.title": title,
            },
        }],
        "subject": subject,
        "annotations": annotations,
    });
    serde_json::to_vec(&m).unwrap_or_default()
}

pub struct Pushed {
    pub file: String,
    pub manifest_digest: String,
    pub blob_digest: String,
    pub size: usize,
    pub predicate_type: String,
    pub names_image: bool,
    /// False when the registry had the blob already.
    pub uploaded: bool,
}

pub struct PushOutcome {
    pub reference: Reference,
    pub subject: Value,
    pub pushed: Vec<Pushed>,
    /// How the referrers were recorded.
    pub referrers: String,
    pub session: Session,
}

/// Waits until every file exists, polling, for at most `wait`: the probe
/// in another container writes each whole and renames it into place, so a
/// file that exists is complete.
pub fn wait_for(files: &[PathBuf], wait: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + wait;
    loop {
        let missing: Vec<String> = files
            .iter()
            .filter(|f| !f.is_file())
            .map(|f| f.display().to_string())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Failed(format!(
                "attest push: {} did not appear within --wait ({wait:?})",
                missing.join(", "),
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn push(opts: &Options, files: &[PathBuf]) -> Result<PushOutcome, Error> {
    let envs = files
        .iter()
        .map(|f| read_envelope(f, opts.reference.hex()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut c = client(opts, true)?;
    let subject = subject(&mut c)?;
    put_blob(&mut c, EMPTY_JSON, EMPTY_DIGEST)?;
    let mut pushed = Vec::new();
    let mut indexed = true;
    let mut descriptors = Vec::new();
    for env in &envs {
        let blob_digest = sha256(&env.bytes);
        let uploaded = put_blob(&mut c, &env.bytes, &blob_digest)?;
        let manifest = artifact_manifest(env, &subject);
        let digest = sha256(&manifest);
        indexed &= put_manifest(&mut c, &digest, OCI_MANIFEST, &manifest)?;
        descriptors.push(json!({
            "mediaType": OCI_MANIFEST,
            "digest": digest,
            "size": manifest.len(),
            "artifactType": ARTIFACT_TYPE,
            "annotations": {PREDICATE_ANNOTATION: env.predicate_type},
        }));
        pushed.push(Pushed {
            file: env.name.clone(),
            manifest_digest: digest,
            blob_digest,
            size: env.bytes.len(),
            predicate_type: env.predicate_type.clone(),
            names_image: env.names_image,
            uploaded,
        });
    }
    let referrers = if indexed {
        "the registry indexes them (OCI-Subject): its referrers API lists them".to_string()
    } else {
        add_to_tag_index(&mut c, descriptors)?
    };
    Ok(PushOutcome {
        reference: opts.reference.clone(),
        subject,
        pushed,
        referrers,
        session: c.session.clone(),
    })
}

/// The referrers tag schema: reads the index at `sha256-<hex>` (none yet
/// is an empty one), adds what is not in it, writes it back. Entries of
/// other tools stay as they were, byte for byte in their JSON values.
fn add_to_tag_index(c: &mut Client, descriptors: Vec<Value>) -> Result<String, Error> {
    let tag = c.reference.referrers_tag();
    let repo = c.reference.repository.clone();
    let r = c.request(
        "GET",
        &format!("/v2/{repo}/manifests/{tag}"),
        &accept(OCI_INDEX),
        None,
        MAX_MANIFEST,
    )?;
    let mut index = match r.status {
        200 => {
            let v: Value = serde_json::from_slice(&r.body).map_err(|_| {
                Error::Failed(format!(
                    "registry {}: the tag {tag} holds something that is not JSON: it is not a referrers index, and is left as it is",
                    c.reference.registry
                ))
            })?;
            let is_index = v.get("manifests").is_some_and(Value::is_array)
                && v.get("mediaType")
                    .and_then(Value::as_str)
                    .is_none_or(|m| m == OCI_INDEX);
            if !is_index {
                return Err(Error::Failed(format!(
                    "registry {}: the tag {tag} holds a manifest that is not an image index: it is not a referrers index, and is left as it is",
                    c.reference.registry
                )));
            }
            v
        }
        404 => json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}),
        _ => return Err(failed(c, &format!("reading the referrers tag {tag}"), &r)),
    };
    let list = index["manifests"]
        .as_array_mut()
        .expect("checked: an array");
    let before = list.len();
    let mut added = 0;
    for d in descriptors {
        if !list.iter().any(|e| e.get("digest") == d.get("digest")) {
            list.push(d);
            added += 1;
        }
    }
    let total = list.len();
    if added > 0 {
        index["mediaType"] = json!(OCI_INDEX);
        let bytes = serde_json::to_vec(&index).unwrap_or_default();
        put_manifest(c, &tag, OCI_INDEX, &bytes)?;
    }
    Ok(format!(
        "no referrers API (no OCI-Subject header): the referrers tag {tag} now lists {total} ({before} kept, {added} added)"
    ))
}

/// One referrer of the image.
#[derive(Debug, Clone)]
pub struct Referrer {
    pub digest: String,
    pub artifact_type: String,
    pub predicate_type: Option<String>,
}

/// The image's referrers and where the list came from.
fn referrers(c: &mut Client) -> Result<(Vec<Referrer>, String), Error> {
    let r = c.reference.clone();
    let mut target = format!("/v2/{}/referrers/{}", r.repository, r.digest);
    let mut out = Vec::new();
    let mut via = format!("the referrers API of {}", r.registry);
    for page in 0..MAX_PAGES {
        let resp = c.request("GET", &target, &accept(OCI_INDEX), None, MAX_MANIFEST)?;
        if page == 0 && resp.status == 404 {
            let tag = r.referrers_tag();
            via = format!("the referrers tag {tag} (the registry has no referrers API)");
            let t = c.request(
                "GET",
                &format!("/v2/{}/manifests/{tag}", r.repository),
                &accept(OCI_INDEX),
                None,
                MAX_MANIFEST,
            )?;
            match t.status {
                200 => collect(&t.body, &mut out).map_err(|w| {
                    Error::Failed(format!("registry {}: the tag {tag}: {w}", r.registry))
                })?,
                404 => {}
                _ => return Err(failed(c, &format!("reading the referrers tag {tag}"), &t)),
            }
            break;
        }
        if resp.status != 200 {
            return Err(failed(c, "listing the referrers", &resp));
        }
        collect(&resp.body, &mut out).map_err(|w| {
            Error::Failed(format!(
                "registry {}: the referrers answer: {w}",
                r.registry
            ))
        })?;
        // The next page, when the registry paginates (RFC 5988 Link).
        match resp
            .header("link")
            .and_then(|l| l.split(';').next())
            .map(|u| {
                u.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
            .filter(|u| u.starts_with("/v2/"))
        {
            Some(next) => target = next,
            None => break,
        }
    }
    Ok((out, via))
}

/// A referrers answer that cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferrersError {
    #[error("not JSON")]
    NotJson,
    #[error("not an image index (no manifests list)")]
    NotIndex,
    /// A listed digest that is not algorithm:hex ends the command: a
    /// registry that lists one is broken or hostile.
    #[error("a referrer is listed with {0}; refused")]
    BadDigest(#[from] reference::DigestError),
}

pub fn collect(index: &[u8], out: &mut Vec<Referrer>) -> Result<(), ReferrersError> {
    let v: Value = serde_json::from_slice(index).map_err(|_| ReferrersError::NotJson)?;
    let list = v
        .get("manifests")
        .and_then(Value::as_array)
        .ok_or(ReferrersError::NotIndex)?;
    for m in list {
        if out.len() >= MAX_REFERRERS {
            break;
        }
        let Some(d) = m.get("digest").and_then(Value::as_str) else {
            continue;
        };
        // The digest goes into the next request line and onto a terminal:
        // one that is not algorithm:hex ends the command (a registry that
        // lists it is broken or hostile).
        reference::check_digest(d)?;
        out.push(Referrer {
            digest: d.to_string(),
            artifact_type: m
                .get("artifactType")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            predicate_type: m
                .pointer(&format!(
                    "/annotations/{}",
                    PREDICATE_ANNOTATION.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    Ok(())
}

pub struct FetchOptions {
    pub pubkey: Option<VerifyingKey>,
    pub nonce: Option<String>,
    pub out_dir: Option<PathBuf>,
}

pub struct Fetched {
    pub manifest_digest: String,
    pub blob_digest: String,
    pub size: usize,
    pub predicate_type: Option<String>,
    /// Where it was written (-o).
    pub file: Option<PathBuf>,
    /// What is wrong with the artifact itself (its subject, its layer).
    pub problems: Vec<String>,
    /// The verdict of `verify`, with --pubkey.
    pub verdict: Option<Verdict>,
    /// Why -o did not write it (it did not verify).
    pub not_written: Option<String>,
}

impl Fetched {
    pub fn valid(&self) -> bool {
        self.problems.is_empty() && self.verdict.as_ref().is_none_or(Verdict::valid)
    }
}

pub struct FetchOutcome {
    pub reference: Reference,
    pub via: String,
    pub fetched: Vec<Fetched>,
    /// Referrers of other types, left alone: (digest, artifactType).
    pub others: Vec<(String, String)>,
    pub session: Session,
    pub verified: bool,
}

impl FetchOutcome {
    /// At least one attestation, and each checked one verified.
    pub fn valid(&self) -> bool {
        !self.fetched.is_empty() && self.fetched.iter().all(Fetched::valid)
    }
}

pub fn fetch(opts: &Options, f: &FetchOptions, cleanup: &Cleanup) -> Result<FetchOutcome, Error> {
    if f.out_dir.is_some() && f.pubkey.is_none() {
        return Err(Error::Usage(
            "attest fetch: -o writes only envelopes that verified: give --pubkey FILE (and --nonce) to verify them".into(),
        ));
    }
    if let Some(d) = &f.out_dir {
        if !d.is_dir() {
            return Err(Error::Usage(format!(
                "attest fetch: -o {}: not a directory (expected an existing directory for the envelopes)",
                d.display()
            )));
        }
    }
    let mut c = client(opts, false)?;
    let (list, via) = referrers(&mut c)?;
    let mut fetched = Vec::new();
    let mut others = Vec::new();
    let mut written = 0u64;
    for r in list {
        if r.artifact_type != ARTIFACT_TYPE {
            others.push((r.digest, r.artifact_type));
            continue;
        }
        fetched.push(fetch_one(&mut c, &r, f, cleanup, &mut written)?);
    }
    Ok(FetchOutcome {
        reference: opts.reference.clone(),
        via,
        fetched,
        others,
        session: c.session.clone(),
        verified: f.pubkey.is_some(),
    })
}

/// Whether `-o` writes an envelope of `size` bytes: only one that verified,
/// and only while the total stays within MAX_WRITTEN. Err: why not, for
/// the output.
pub fn may_write(verified: bool, size: u64, written: u64) -> Result<(), NotWritten> {
    if !verified {
        return Err(NotWritten::Unverified);
    }
    if written.saturating_add(size) > MAX_WRITTEN {
        return Err(NotWritten::OverTotal { size });
    }
    Ok(())
}

/// Why an envelope fetched was not written to `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotWritten {
    #[error("not written to -o: it did not verify")]
    Unverified,
    /// `size` bytes more would pass MAX_WRITTEN.
    #[error("not written to -o: {size} bytes more would pass the {} MiB -o writes in all", MAX_WRITTEN >> 20)]
    OverTotal { size: u64 },
}

fn fetch_one(
    c: &mut Client,
    r: &Referrer,
    f: &FetchOptions,
    cleanup: &Cleanup,
    written: &mut u64,
) -> Result<Fetched, Error> {
    let repo = c.reference.repository.clone();
    let mut out = Fetched {
        manifest_digest: r.digest.clone(),
        blob_digest: String::new(),
        size: 0,
        predicate_type: r.predicate_type.clone(),
        file: None,
        problems: Vec::new(),
        verdict: None,
        not_written: None,
    };
    let m = c.request(
        "GET",
        &format!("/v2/{repo}/manifests/{}", r.digest),
        &accept(OCI_MANIFEST),
        None,
        MAX_MANIFEST,
    )?;
    if m.status != 200 {
        out.problems.push(format!(
            "the artifact manifest could not be read: {} {}",
            m.status, m.reason
        ));
        return Ok(out);
    }
    if sha256(&m.body) != r.digest {
        out.problems
            .push("the artifact manifest's bytes do not hash to its digest".into());
        return Ok(out);
    }
    let man: Value = serde_json::from_slice(&m.body).unwrap_or(Value::Null);
    if man.pointer("/subject/digest").and_then(Value::as_str) != Some(&c.reference.digest) {
        out.problems.push(format!(
            "its subject is not {}: it is listed for this image but attached to another",
            c.reference.digest
        ));
    }
    let layer = man
        .get("layers")
        .and_then(Value::as_array)
        .and_then(|l| {
            l.iter()
                .find(|x| x.get("mediaType").and_then(Value::as_str) == Some(ENVELOPE_MEDIA_TYPE))
        })
        .cloned();
    let Some(layer) = layer else {
        out.problems
            .push(format!("it has no layer of type {ENVELOPE_MEDIA_TYPE}"));
        return Ok(out);
    };
    let digest = layer
        .get("digest")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let hex_ok = digest
        .strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !hex_ok {
        out.problems
            .push("its layer's digest is not sha256:<64 hex>".into());
        return Ok(out);
    }
    if out.predicate_type.is_none() {
        out.predicate_type = layer
            .pointer(&format!(
                "/annotations/{}",
                PREDICATE_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    let b = c.request(
        "GET",
        &format!("/v2/{repo}/blobs/{digest}"),
        &[],
        None,
        MAX_BLOB,
    )?;
    out.blob_digest = digest.clone();
    if b.status != 200 {
        out.problems.push(format!(
            "the envelope blob could not be read: {} {}",
            b.status, b.reason
        ));
        return Ok(out);
    }
    out.size = b.body.len();
    if sha256(&b.body) != digest {
        out.problems
            .push("the envelope's bytes do not hash to the layer's digest".into());
        return Ok(out);
    }
    if let Some(pk) = f.pubkey {
        let name = format!("{}@{}", c.reference.registry, digest);
        out.verdict = Some(verify::verify(&verify::Inputs {
            pubkey: pk,
            nonce: f.nonce.as_deref(),
            binary_sha256: None,
            envelope: Some((&name, &b.body)),
            sshsig: None,
        }));
    }
    // Written only once it verified, and within the total: a registry
    // cannot fill the disk with blobs it calls envelopes.
    if let Some(dir) = &f.out_dir {
        let verified = out.problems.is_empty() && out.verdict.as_ref().is_some_and(Verdict::valid);
        match may_write(verified, b.body.len() as u64, *written) {
            Ok(()) => {
                let path = dir.join(format!("{}.intoto.json", &digest["sha256:".len()..]));
                selfprobe::host::write_whole(&path, &b.body, cleanup).map_err(|e| {
                    Error::Failed(format!(
                        "attest fetch: cannot write {}: {e}",
                        path.display()
                    ))
                })?;
                *written += b.body.len() as u64;
                out.file = Some(path);
            }
            Err(why) if verified => out.problems.push(why.to_string()),
            Err(why) => out.not_written = Some(why.to_string()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_descriptor_is_the_spec_s() {
        assert_eq!(sha256(EMPTY_JSON), EMPTY_DIGEST);
    }

    #[test]
    fn an_artifact_manifest_is_deterministic_and_names_its_subject() {
        let env = EnvelopeFile {
            name: "/tmp/r.intoto.json".into(),
            bytes: b"{\"payloadType\":\"x\"}".to_vec(),
            predicate_type: "https://selfprobe.dev/schema/report/v1".into(),
            names_image: false,
            finished: Some("2026-01-01T00:00:00Z".into()),
        };
        let subject = json!({"mediaType": OCI_MANIFEST, "digest": "sha256:ab", "size": 7});
        let a = artifact_manifest(&env, &subject);
        assert_eq!(a, artifact_manifest(&env, &subject));
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["artifactType"], ARTIFACT_TYPE);
        assert_eq!(v["subject"], subject);
        assert_eq!(v["config"]["digest"], EMPTY_DIGEST);
        assert_eq!(v["layers"][0]["digest"], sha256(&env.bytes));
        assert_eq!(
            v["layers"][0]["annotations"]["org.opencontainers.image.title"],
            "r.intoto.json"
        );
        assert_eq!(v["annotations"][PREDICATE_ANNOTATION], env.predicate_type);
    }

    #[test]
    fn only_verified_envelopes_are_written_and_within_the_total() {
        assert!(may_write(false, 10, 0)
            .unwrap_err()
            .to_string()
            .contains("did not verify"));
        assert_eq!(may_write(true, 10, 0), Ok(()));
        assert_eq!(may_write(true, 1, MAX_WRITTEN - 1), Ok(()));
        let e = may_write(true, 2, MAX_WRITTEN - 1).unwrap_err().to_string();
        assert!(e.contains("256 MiB"), "{e}");
        assert!(may_write(true, u64::MAX, 1).is_err());
    }

    #[test]
    fn referrer_digests_that_are_not_algorithm_hex_are_refused() {
        for d in [
            r"sha256:abc\r\nX-Injected: 1",
            r"sha256:\u001b[31m",
            r"sha256:\u202eabc",
            "../../v2/x",
        ] {
            let body = format!(r#"{{"manifests":[{{"digest":"{d}","artifactType":"x"}}]}}"#);
            let mut out = Vec::new();
            let e = collect(body.as_bytes(), &mut out).unwrap_err().to_string();
            assert!(e.contains("algorithm:hex") && e.contains("refused"), "{e}");
            assert!(
                !e.chars().any(selfprobe::util::sanitize::is_hazard),
                "{e:?}"
            );
            assert!(out.is_empty());
        }
    }

    #[test]
    fn referrer_lists_keep_types_and_predicates() {
        let mut out = Vec::new();
        collect(
            format!(
                r#"{{"manifests":[{{"digest":"sha256:{a}","artifactType":"application/vnd.dsse.envelope.v1+json","annotations":{{"in-toto.io/predicate-type":"p"}}}},{{"digest":"sha256:{b}","artifactType":"application/spdx+json"}},{{"nodigest":1}}]}}"#,
                a = "a".repeat(64),
                b = "b".repeat(64)
            )
            .as_bytes(),
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].predicate_type.as_deref(), Some("p"));
        assert_eq!(out[1].artifact_type, "application/spdx+json");
        assert!(collect(b"{}", &mut out).is_err());
    }
}
