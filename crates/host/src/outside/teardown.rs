//! `selfprobe-host teardown DIR`: after the workspaces of an inspection are
//! removed, ask the engine what of each survived (the container, each
//! anonymous and named volume) and look in what remains for the canaries
//! the inspection planted; volumes the policy's `[[retain]]` list owns are
//! kept on purpose. Each container gets a signed in-toto statement
//! (docs/inspection-directory.md, predicate type `attest::TEARDOWN_PREDICATE_TYPE`), and
//! the Teardown control its score from what the host saw.
//!
//! A canary is read from the volume's directory on the host (`volume
//! inspect`'s Mountpoint): by its own name only, never through a symlink
//! (O_NOFOLLOW), at most 64 KiB, and on a worker the deadline can leave
//! behind if the volume's filesystem hangs.

use selfprobe::finding::Code;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::{json, Value};

use super::engine::Engine;
use super::inspect::file_stem;
use super::record::EngineKind;
use selfprobe::attest::{self, dsse};
use selfprobe::finding::Finding;
use selfprobe::host::rfc3339;
use selfprobe::keys::Signer;
use selfprobe::model::SigningInfo;
use selfprobe::policy::Policy;
use selfprobe::probe::teardown::{Canary, CANARY_PREFIX};

/// The largest inspection.json read.
const MAX_INSPECTION: u64 = 64 << 20;
const MAX_CANARY: u64 = 64 << 10;

#[derive(Debug, Clone)]
pub struct Options {
    pub dir: PathBuf,
    pub policy: Option<PathBuf>,
    pub timeout: Duration,
    /// Docker's records through its CLI, not its Engine API (inspect's
    /// `--engine-cli-only`); for an engine connected here.
    pub engine_cli_only: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Retained {
    pub owner: String,
    pub expires: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VolumeState {
    pub name: String,
    pub anonymous: bool,
    pub remains: Option<bool>,
    pub retained: Option<Retained>,
    #[serde(skip)]
    pub mountpoint: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CanaryState {
    pub run: String,
    pub path: String,
    pub volume: Option<String>,
    pub found: Option<bool>,
    /// The canary's signature as found ("valid", "invalid", "unsigned").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Control {
    pub id: &'static str,
    pub score: u8,
    pub status: &'static str,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContainerTeardown {
    pub id: String,
    pub name: String,
    pub image: String,
    pub exists: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    pub volumes: Vec<VolumeState>,
    pub canaries: Vec<CanaryState>,
    pub result: &'static str,
    pub findings: Vec<Finding>,
    pub control: Control,
    /// The statement's file in the inspection directory.
    pub statement: Option<String>,
    pub nonce: String,
    pub exit: i32,
}

impl ContainerTeardown {
    /// Nothing known yet: unknown, not assessed, exit 3.
    fn new(id: &str, name: &str, image: &str, nonce: &str) -> ContainerTeardown {
        ContainerTeardown {
            id: id.to_string(),
            name: name.to_string(),
            image: image.to_string(),
            exists: None,
            state: None,
            volumes: Vec::new(),
            canaries: Vec::new(),
            result: "unknown",
            findings: Vec::new(),
            control: Control {
                id: "teardown",
                score: 0,
                status: "not-assessed",
                reason: String::new(),
            },
            statement: None,
            nonce: nonce.to_string(),
            exit: 3,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Teardown {
    pub schema: &'static str,
    pub inspection: String,
    pub started: String,
    pub finished: String,
    pub engine: &'static str,
    pub keyid: String,
    pub public_key: String,
    pub ephemeral: bool,
    pub containers: Vec<ContainerTeardown>,
    pub exit: i32,
}

pub const RUN_SCHEMA: &str = "https://selfprobe.dev/schema/teardown-run/v1";
/// The files teardown adds to the inspection directory (docs/inspection-directory.md);
/// spelt with concat! so no literal looks like a finding code.
pub const PUBKEY_FILE: &str = concat!("teardown", ".pub");
pub const JSON_FILE: &str = concat!("teardown", ".json");

/// Bad options or inspection directory (usage), or the engine (failed).
pub use crate::error::Error as TeardownError;

/// What teardown takes from an inspection of one container.
pub struct Inspected {
    pub id: String,
    pub name: String,
    pub image: String,
    pub nonce: String,
    pub volumes: Vec<(String, bool, String)>,
    pub canaries: Vec<(String, String, Option<String>)>,
}

/// What teardown takes from an inspection: its id, engine, the keyid of
/// its key, and each container.
pub type FromInspection = (String, EngineKind, String, Vec<Inspected>);

/// Why an inspection directory's inspection.json cannot be torn down
/// from: the operator gave the wrong directory or file (usage).
#[derive(Debug, thiserror::Error)]
pub enum NotAnInspection {
    #[error("{}: {source}: expected the directory `selfprobe-host inspect --out-dir` wrote", path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    #[error("{}: larger than {} MiB, the most an inspection.json may be: refused", .0.display(), MAX_INSPECTION >> 20)]
    TooLarge(PathBuf),
    #[error("{}: not JSON ({source})", path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: not an inspection (schema is not {})", .0.display(), super::inspect::SCHEMA)]
    Schema(PathBuf),
    #[error("{}: engine {engine:?}: expected docker or podman", path.display())]
    Engine { path: PathBuf, engine: String },
}

impl From<NotAnInspection> for TeardownError {
    fn from(e: NotAnInspection) -> Self {
        TeardownError::Usage(e.to_string())
    }
}

/// Why a teardown statement could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum Unsigned {
    #[error("cannot sign: this binary's SHA-256 is unknown (/proc/self/exe was unreadable)")]
    NoToolSha,
    #[error("cannot sign: {0}")]
    Json(serde_json::Error),
}

fn read_inspection(dir: &Path) -> Result<FromInspection, NotAnInspection> {
    let path = dir.join("inspection.json");
    let bytes = match selfprobe::host::read_regular_nofollow(&path, MAX_INSPECTION + 1) {
        Ok(b) => b,
        Err(source) => return Err(NotAnInspection::Unreadable { path, source }),
    };
    if bytes.len() as u64 > MAX_INSPECTION {
        return Err(NotAnInspection::TooLarge(path));
    }
    let nonces = read_nonces(&dir.join("nonces"));
    parse_inspection(&path, &bytes, &nonces)
}

/// inspection.json's bytes as teardown reads them (`nonces`: DIR/nonces).
pub fn parse_inspection(
    path: &Path,
    bytes: &[u8],
    nonces: &BTreeMap<String, String>,
) -> Result<FromInspection, NotAnInspection> {
    let v: Value = serde_json::from_slice(bytes).map_err(|source| NotAnInspection::NotJson {
        path: path.to_path_buf(),
        source,
    })?;
    if v.get("schema").and_then(Value::as_str) != Some(super::inspect::SCHEMA) {
        return Err(NotAnInspection::Schema(path.to_path_buf()));
    }
    let s = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let engine = match s(&v, "/engine/name").as_str() {
        "docker" => EngineKind::Docker,
        "podman" => EngineKind::Podman,
        other => {
            return Err(NotAnInspection::Engine {
                path: path.to_path_buf(),
                engine: other.to_string(),
            })
        }
    };
    let mut out = Vec::new();
    for c in v
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = s(c, "/id");
        if id.is_empty() {
            continue;
        }
        let name = s(c, "/name");
        let nonce = nonces
            .get(&file_stem(&name))
            .cloned()
            .unwrap_or_else(|| s(c, "/nonce"));
        let volumes = c
            .pointer("/record/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|x| {
                (
                    s(x, "/name"),
                    x.get("anonymous").and_then(Value::as_bool).unwrap_or(false),
                    s(x, "/destination"),
                )
            })
            .filter(|x| !x.0.is_empty())
            .collect();
        let canaries = c
            .get("canaries")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|k| {
                (
                    s(k, "/run"),
                    s(k, "/path"),
                    k.get("volume").and_then(Value::as_str).map(str::to_string),
                )
            })
            .collect();
        out.push(Inspected {
            image: s(c, "/image"),
            id,
            name,
            nonce,
            volumes,
            canaries,
        });
    }
    Ok((s(&v, "/id"), engine, s(&v, "/signing/keyid"), out))
}

/// DIR/nonces: `<name> <nonce>` per line, `#` comments.
pub fn read_nonces(path: &Path) -> BTreeMap<String, String> {
    let text = selfprobe::host::read_regular_nofollow(path, 1 << 20).unwrap_or_default();
    parse_nonces(&String::from_utf8_lossy(&text))
}

/// DIR/nonces' text: a line that is not `<name> <nonce>` is passed over (a
/// container without its nonce is then checked against inspection.json's).
pub fn parse_nonces(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let (n, v) = l.split_once(char::is_whitespace)?;
            Some((n.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Runs the teardown check over an inspection directory.
pub fn teardown(opts: &Options, signer: &Signer) -> Result<Teardown, TeardownError> {
    teardown_on(opts, signer, None)
}

/// `teardown` with an engine already connected (the watch's, which tears
/// down one container at a time and need not ask `info` each time); used
/// when it is the inspection's engine, else one is connected here.
pub fn teardown_on(
    opts: &Options,
    signer: &Signer,
    connected: Option<&Engine>,
) -> Result<Teardown, TeardownError> {
    let started = SystemTime::now();
    let deadline = Instant::now() + opts.timeout;
    let policy = match &opts.policy {
        Some(p) => {
            Policy::load(p).map_err(|e| TeardownError::Usage(format!("policy error: {e}")))?
        }
        None => Policy::default(),
    };
    let (inspection, kind, inspection_keyid, inspected) = read_inspection(&opts.dir)?;
    let fresh;
    let engine = match connected {
        Some(e) if e.name == kind => e,
        _ => {
            let mut e = Engine::connect(Some(kind), deadline)
                .map_err(|e| TeardownError::Failed(e.to_string()))?;
            if opts.engine_cli_only {
                e.api = None;
            }
            fresh = e;
            &fresh
        }
    };
    let ids: Vec<String> = inspected.iter().map(|c| c.id.clone()).collect();
    let states = engine.inspect(&ids, deadline);
    let today = selfprobe::host::today(SystemTime::now());
    let tool_sha = selfprobe::host::self_sha256();
    let mut containers = Vec::new();
    for c in &inspected {
        let exists: Result<Option<String>, String> = match &states {
            Ok((recs, _)) => Ok(recs.iter().find(|r| r.id == c.id).map(|r| r.status.clone())),
            Err(e) => Err(e.to_string()),
        };
        let mut t = ContainerTeardown::new(&c.id, &c.name, &c.image, &c.nonce);
        t.exists = exists.as_ref().ok().map(Option::is_some);
        t.state = exists.as_ref().ok().cloned().flatten();
        let base = |f: Finding| {
            f.with("container", c.name.clone())
                .with("container_id", c.id.clone())
        };
        match &exists {
            Ok(Some(state)) => t.findings.push(base(
                Finding::new(
                    Code::TeardownContainerRemains,
                    c.name.clone(),
                    format!("{}: the container still exists ({state})", c.name),
                )
                .with("state", state.clone()),
            )),
            Ok(None) => {}
            Err(e) => t.findings.push(base(
                Finding::new(
                    Code::TeardownUnchecked,
                    c.name.clone(),
                    format!("{}: whether the container remains is unknown: {e}", c.name),
                )
                .unknown(),
            )),
        }
        for (name, anonymous, _dest) in &c.volumes {
            let mut v = VolumeState {
                name: name.clone(),
                anonymous: *anonymous,
                remains: None,
                retained: None,
                mountpoint: None,
            };
            match engine.volume(name, deadline) {
                Ok(Some(found)) => {
                    v.remains = Some(true);
                    v.mountpoint = Some(found.mountpoint);
                }
                Ok(None) => v.remains = Some(false),
                Err(e) => t.findings.push(base(
                    Finding::new(
                        Code::TeardownUnchecked,
                        name.clone(),
                        format!("{}: whether volume {name} remains is unknown: {e}", c.name),
                    )
                    .unknown(),
                )),
            }
            if v.remains == Some(true) {
                if let Some(r) = policy.retained(name) {
                    match r.problem(today) {
                        None => {
                            v.retained = Some(Retained {
                                owner: r.owner.clone().unwrap_or_default(),
                                expires: r
                                    .expires
                                    .as_ref()
                                    .map(|e| e.1.clone())
                                    .unwrap_or_default(),
                                reason: r.reason.clone().unwrap_or_default(),
                            })
                        }
                        Some(problem) => {
                            let file = opts
                                .policy
                                .as_ref()
                                .map(|p| p.display().to_string())
                                .unwrap_or_default();
                            t.findings.push(base(Finding::new(
                                Code::PolicyRetainInvalid,
                                format!("{file}:{}", r.line),
                                format!("the [[retain]] entry for {} at {file}:{} is not applied: {problem}", r.volume, r.line),
                            ).with("volume", name.clone()).with("problem", problem)));
                        }
                    }
                }
                if v.retained.is_none() {
                    t.findings.push(base(
                        Finding::new(
                            Code::TeardownVolumeRemains,
                            name.clone(),
                            format!(
                                "{}: the {} volume {name} remains and no [[retain]] entry owns it",
                                c.name,
                                if *anonymous { "anonymous" } else { "named" }
                            ),
                        )
                        .with("volume", name.clone())
                        .with("anonymous", *anonymous)
                        .with("mountpoint", v.mountpoint.clone()),
                    ));
                }
            }
            t.volumes.push(v);
        }
        for (run, path, volume) in &c.canaries {
            let mut k = CanaryState {
                run: run.clone(),
                path: path.clone(),
                volume: volume.clone(),
                found: None,
                signature: None,
            };
            let vol = volume
                .as_ref()
                .and_then(|n| t.volumes.iter().find(|v| &v.name == n));
            match vol {
                Some(v) if v.remains == Some(false) => k.found = Some(false),
                Some(v) if v.remains == Some(true) => {
                    let mp = v.mountpoint.clone().unwrap_or_default();
                    match look(&mp, run, &c.nonce, &inspection_keyid, deadline) {
                        Ok(None) => k.found = Some(false),
                        Ok(Some(sig)) => {
                            k.found = Some(true);
                            k.signature = Some(sig);
                            if v.retained.is_none() {
                                t.findings.push(base(Finding::new(
                                    Code::TeardownCanaryFound,
                                    path.clone(),
                                    format!("{}: the canary of run {run} planted at {path} survives in volume {}", c.name, v.name),
                                ).with("canary_run_id", run.clone()).with("volume", v.name.clone())
                                    .with("host_path", format!("{}/{}{run}.json", mp.trim_end_matches('/'), CANARY_PREFIX))
                                    .with("signature", sig)));
                            }
                        }
                        Err(e) => t.findings.push(base(
                            Finding::new(
                                Code::TeardownUnchecked,
                                path.clone(),
                                format!(
                                    "{}: the canary {path} could not be looked for: {e}",
                                    c.name
                                ),
                            )
                            .unknown(),
                        )),
                    }
                }
                _ => {}
            }
            t.canaries.push(k);
        }
        decide(&mut t);
        selfprobe::model::sort_findings(&mut t.findings);
        containers.push(t);
    }
    let finished = SystemTime::now();
    for t in &mut containers {
        let statement = statement(t, signer, &inspection, &tool_sha, started, finished);
        let name = format!("{}.teardown.intoto.json", file_stem(&t.name));
        match statement {
            Ok(env) => {
                let cleanup = selfprobe::host::Cleanup::default();
                match selfprobe::host::write_whole(&opts.dir.join(&name), env.as_bytes(), &cleanup)
                {
                    Ok(()) => t.statement = Some(name),
                    Err(source) => {
                        let path = opts.dir.join(&name);
                        return Err(crate::error::CannotWrite { path, source }.into());
                    }
                }
            }
            Err(e) => return Err(TeardownError::Failed(e.to_string())),
        }
    }
    let exit = containers.iter().map(|c| c.exit).max().unwrap_or(0);
    let vk = signer.verifying_key();
    Ok(Teardown {
        schema: RUN_SCHEMA,
        inspection,
        started: rfc3339(started),
        finished: rfc3339(finished),
        engine: kind.as_str(),
        keyid: signer.keyid(),
        public_key: selfprobe::keys::public_openssh(&vk),
        ephemeral: signer.is_ephemeral(),
        containers,
        exit,
    })
}

/// Looks for canary `run` at the top of a volume's host directory: Ok(None)
/// when it is not there, else the state of its signature. A canary counts
/// as this inspection's only with its run id, its nonce and the
/// inspection's key; an edited one still counts as found, with its
/// signature "invalid".
fn look(
    mountpoint: &str,
    run: &str,
    nonce: &str,
    keyid: &str,
    deadline: Instant,
) -> Result<Option<&'static str>, String> {
    if run.is_empty() || !run.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("run id {run:?} is not one selfprobe makes"));
    }
    if mountpoint.is_empty() {
        return Err("the engine gave no mount point for the volume".into());
    }
    let path = Path::new(mountpoint).join(format!("{CANARY_PREFIX}{run}.json"));
    let nonce = nonce.to_string();
    let keyid = keyid.to_string();
    let out = selfprobe::util::workers::map_until(
        "teardown-canary",
        vec![path],
        1,
        deadline,
        move |p: &PathBuf| match selfprobe::host::read_regular_nofollow(p, MAX_CANARY) {
            Ok(bytes) => Ok(Some(canary_signature(&bytes, &nonce, &keyid))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        },
    );
    out.into_iter()
        .next()
        .flatten()
        .unwrap_or_else(|| Err("the volume's directory did not answer before the deadline".into()))
}

/// A canary file's bytes, as found: "valid" only when it is a canary of
/// this nonce signed by the inspection's key (`keyid`), else "invalid" or
/// "unsigned".
pub fn canary_signature(bytes: &[u8], nonce: &str, keyid: &str) -> &'static str {
    match serde_json::from_slice::<Canary>(bytes) {
        Ok(c) => {
            let sig = c.signature_state();
            let ours = c.signature.as_ref().is_some_and(|s| s.keyid == keyid);
            if c.nonce.as_deref() != Some(nonce) || !ours {
                "invalid"
            } else {
                sig
            }
        }
        Err(_) => "invalid",
    }
}

/// The result and the Teardown control from what was seen.
fn decide(t: &mut ContainerTeardown) {
    let exists = t.exists;
    let unowned: Vec<String> = t
        .volumes
        .iter()
        .filter(|v| v.remains == Some(true) && v.retained.is_none())
        .map(|v| v.name.clone())
        .collect();
    let retained: Vec<String> = t
        .volumes
        .iter()
        .filter_map(|v| {
            v.retained
                .as_ref()
                .map(|r| format!("{} (owner {}, until {})", v.name, r.owner, r.expires))
        })
        .collect();
    let found: Vec<String> = t
        .canaries
        .iter()
        .filter(|k| k.found == Some(true))
        .map(|k| format!("{} in {}", k.run, k.volume.as_deref().unwrap_or("?")))
        .collect();
    let unknown = exists.is_none()
        || t.volumes.iter().any(|v| v.remains.is_none())
        || t.canaries.iter().any(|k| {
            k.found.is_none()
                && k.volume.as_ref().is_some_and(|n| {
                    t.volumes
                        .iter()
                        .any(|v| &v.name == n && v.remains != Some(false))
                })
        });
    let unseen = "artifact export and credential cleanup are not seen from the host";
    let (result, score, status, reason, exit) = if exists == Some(true) {
        (
            "remains",
            0,
            "assessed",
            format!(
                "the container still exists ({}); {unseen}",
                t.state.as_deref().unwrap_or("?")
            ),
            1,
        )
    } else if !unowned.is_empty() {
        (
            "remains",
            1,
            "assessed",
            format!(
                "the container is removed but volume(s) remain unowned: {}{}; {unseen}",
                unowned.join(", "),
                if found.is_empty() {
                    String::new()
                } else {
                    format!("; canary found: {}", found.join(", "))
                }
            ),
            1,
        )
    } else if unknown {
        (
            "unknown",
            0,
            "not-assessed",
            "part of the teardown could not be checked (see the findings)".to_string(),
            3,
        )
    } else if !retained.is_empty() {
        (
            "retained",
            2,
            "assessed",
            format!(
                "the container is removed and what remains is owned by the policy's retained list: {}; {unseen}",
                retained.join(", ")
            ),
            0,
        )
    } else {
        (
            "gone",
            2,
            "assessed",
            format!(
                "the container and its {} volume(s) are gone and no canary was found, seen from the host; {unseen}",
                t.volumes.len()
            ),
            0,
        )
    };
    t.result = result;
    t.control = Control {
        id: "teardown",
        score,
        status,
        reason,
    };
    t.exit = exit;
}

/// The predicate of a teardown statement (docs/inspection-directory.md),
/// as [`statement`] writes it: its fields are the names the summary reads
/// back (`json_at!(t, Predicate => run.id)`), so a field renamed here does
/// not compile there. `tool`, `run` and `signing` are named as a report's
/// are, so `verify` checks a statement as it checks a report.
#[derive(Serialize)]
pub struct Predicate<'a> {
    pub schema: &'a str,
    pub tool: PredicateTool<'a>,
    pub run: PredicateRun<'a>,
    pub signing: SigningInfo,
    pub inspection: &'a str,
    pub container: PredicateContainer<'a>,
    pub volumes: &'a [VolumeState],
    pub canaries: &'a [CanaryState],
    /// gone, retained, remains or unknown.
    pub result: &'a str,
    pub findings: &'a [Finding],
    pub control: &'a Control,
}

#[derive(Serialize)]
pub struct PredicateTool<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub sha256: &'a str,
}

#[derive(Serialize)]
pub struct PredicateRun<'a> {
    pub id: String,
    pub started: String,
    pub finished: String,
    pub nonce: &'a str,
}

#[derive(Serialize)]
pub struct PredicateContainer<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub image: &'a str,
    pub exists: Option<bool>,
}

/// The signed teardown statement (docs/inspection-directory.md).
fn statement(
    t: &ContainerTeardown,
    signer: &Signer,
    inspection: &str,
    tool_sha: &Option<String>,
    started: SystemTime,
    finished: SystemTime,
) -> Result<String, Unsigned> {
    let sha = tool_sha.clone().ok_or(Unsigned::NoToolSha)?;
    let predicate = Predicate {
        schema: attest::TEARDOWN_PREDICATE_TYPE,
        tool: PredicateTool {
            name: "selfprobe",
            version: env!("CARGO_PKG_VERSION"),
            sha256: &sha,
        },
        run: PredicateRun {
            id: selfprobe::host::run_id(),
            started: rfc3339(started),
            finished: rfc3339(finished),
            nonce: &t.nonce,
        },
        signing: attest::signing_info(signer, true, false),
        inspection,
        container: PredicateContainer {
            id: &t.id,
            name: &t.name,
            image: &t.image,
            exists: t.exists,
        },
        volumes: &t.volumes,
        canaries: &t.canaries,
        result: t.result,
        findings: &t.findings,
        control: &t.control,
    };
    // Through a Value, as the statement around it: its keys in the order
    // they had when the predicate was written with json! (sorted), so the
    // signed bytes are as before.
    let predicate = serde_json::to_value(&predicate).map_err(Unsigned::Json)?;
    let st = json!({
        "_type": attest::STATEMENT_TYPE,
        "subject": [{"name": attest::TOOL_SUBJECT, "digest": {"sha256": sha}}],
        "predicateType": attest::TEARDOWN_PREDICATE_TYPE,
        "predicate": predicate,
    });
    let payload = serde_json::to_vec(&st).map_err(Unsigned::Json)?;
    Ok(dsse::Envelope::sign(signer, dsse::PAYLOAD_TYPE, &payload).to_json())
}

pub fn render_json(t: &Teardown) -> String {
    let mut s =
        serde_json::to_string_pretty(t).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn td(
        exists: Option<bool>,
        vols: Vec<VolumeState>,
        canaries: Vec<CanaryState>,
    ) -> ContainerTeardown {
        let mut t = ContainerTeardown::new("ab", "c", "i", "n");
        t.exists = exists;
        t.state = exists.and_then(|e| e.then(|| "exited".to_string()));
        t.volumes = vols;
        t.canaries = canaries;
        decide(&mut t);
        t
    }

    fn vol(name: &str, remains: Option<bool>, owner: Option<&str>) -> VolumeState {
        VolumeState {
            name: name.into(),
            anonymous: false,
            remains,
            retained: owner.map(|o| Retained {
                owner: o.into(),
                expires: "2999-01-01".into(),
                reason: "r".into(),
            }),
            mountpoint: None,
        }
    }

    #[test]
    fn results_follow_the_rubric() {
        let t = td(Some(true), vec![], vec![]);
        assert_eq!((t.result, t.control.score, t.exit), ("remains", 0, 1));
        let t = td(Some(false), vec![vol("a", Some(true), None)], vec![]);
        assert_eq!((t.result, t.control.score, t.exit), ("remains", 1, 1));
        let t = td(Some(false), vec![vol("a", Some(true), Some("o@x"))], vec![]);
        assert_eq!((t.result, t.control.score, t.exit), ("retained", 2, 0));
        let t = td(Some(false), vec![vol("a", Some(false), None)], vec![]);
        assert_eq!((t.result, t.control.score, t.exit), ("gone", 2, 0));
        assert!(t.control.reason.contains("not seen from the host"));
        let t = td(None, vec![], vec![]);
        assert_eq!(
            (t.result, t.control.status, t.exit),
            ("unknown", "not-assessed", 3)
        );
        let t = td(Some(false), vec![vol("a", None, None)], vec![]);
        assert_eq!(t.result, "unknown");
    }

    #[test]
    fn nonces_file_lines() {
        let d = std::env::temp_dir().join(format!("selfprobe-nonces-{}", std::process::id()));
        std::fs::write(&d, "# comment\nweb-1 abc\n\nweb-2  def \n").unwrap();
        let n = read_nonces(&d);
        assert_eq!(n.get("web-1").map(String::as_str), Some("abc"));
        assert_eq!(n.get("web-2").map(String::as_str), Some("def"));
        std::fs::remove_file(d).unwrap();
    }
}
