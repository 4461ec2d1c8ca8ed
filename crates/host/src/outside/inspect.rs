//! `selfprobe-host inspect`: for each running container, place the probe, run
//! it with a fresh nonce and the key on its stdin, verify what comes back,
//! check it against the engine's record, plant canaries in its volumes for
//! `teardown`, remove the probe, and write the inspection directory
//! (docs/inspection-directory.md).
//!
//! What comes back from a container is untrusted input: its output is
//! capped (a flood is killed at the cap), every step has a deadline inside
//! the container's `--timeout`, and a container that hangs, floods, lies or
//! dies mid-run is "not probed" with the reason while the others go on.

use selfprobe::finding::Code;
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;
use zeroize::Zeroizing;

use super::cis::{self, Check};
use super::crosscheck::{self, Comparison, Disagreement};
use super::direct;
use super::engine::{failure, Engine};
use super::placement::{self, Candidate, Method, Passed};
use super::record::{EngineKind, MountKind, Record};
use super::resolve;
use selfprobe::attest::verify;
use selfprobe::facts::boundary::Boundary;
use selfprobe::finding::{Finding, Severity, Status};
use selfprobe::host::rfc3339;
use selfprobe::keys::Signer;
use selfprobe::model::read::{self, word, Given};
use selfprobe::policy::Policy;
use selfprobe::util::command::{Captured, ToolStatus};
use selfprobe::util::sanitize;
use selfprobe::{claimed, given};

pub const SCHEMA: &str = "https://selfprobe.dev/schema/inspection/v1";
/// What a probe may print on stdout: its JSON report and envelope. A
/// report of the largest workspaces the tests build is a few MiB.
pub const REPORT_CAP: usize = 16 << 20;
const STDERR_CAP: usize = 64 << 10;
/// The part of a container's deadline kept for removing the probe after
/// its run, so the container still ends within `--timeout`.
const CLEANUP_SHARE: u32 = 5;
const MAX_CLEANUP: Duration = Duration::from_secs(5);
/// The most paths resolved inside one container (its record's
/// destinations and the report's socket paths).
const MAX_RESOLVED: usize = 256;

/// What the signature proves, and what it does not: said in the output of
/// every inspection (text and JSON).
pub const PROVES: &str = "A verified report was signed with this inspection's key, after the probe ran, for this container's fresh nonce, and names the SHA-256 of the inspector's own binary, the one placed (a probe bind-mounted by the container's creator is run only when it is that binary): it was not changed on its way back and it is not a replay of an earlier run. A clean one (verified, no disagreement) also says its run had the inspector's arguments (root, workspace, policy, timeout, nonce, fail-on) and gave every fact the engine's record is compared with, each agreeing with the record; whether the runtime is a sandbox is the engine's word, not the report's.";
pub const DOES_NOT_PROVE: &str = "It does not prove that what the probe saw is true, nor that the placed binary is what ran: the key was handed to a process inside the workspace, and a workspace that controls its own root can read it there, change what the probe sees, or swap the placed binary for a program that signs what it likes. Such a report is caught only where it contradicts the engine's record, leaves out a fact the comparison needs, or says its run had other arguments; a lie the record cannot contradict passes. The engine's record is the second witness: every fact on which the two disagree is a finding.";

/// The command's options, checked (cli.rs makes them).
#[derive(Debug, Clone)]
pub struct Options {
    pub engine: Option<EngineKind>,
    /// Docker's records and execs through its CLI too, not its Engine API.
    pub engine_cli_only: bool,
    pub out_dir: Option<PathBuf>,
    pub timeout: Duration,
    pub place_in: Option<String>,
    pub policy: Option<PathBuf>,
    pub binary: Option<PathBuf>,
    pub workspace: Option<String>,
    pub fail_on: Option<Severity>,
    pub all: bool,
    pub filter: Option<String>,
    pub containers: Vec<String>,
    pub parallel: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct EngineInfo {
    pub name: &'static str,
    pub cli: String,
    pub version: String,
    pub rootless: bool,
    /// The Engine API endpoint that answered for the records and execs;
    /// absent when they went through the CLI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
}

impl EngineInfo {
    pub fn of(e: &Engine) -> EngineInfo {
        EngineInfo {
            name: e.name.as_str(),
            cli: e.cli.display().to_string(),
            version: e.version.clone(),
            rootless: e.rootless,
            api: e.api.as_ref().map(|a| a.endpoint()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BinaryInfo {
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SigningOut {
    pub keyid: String,
    pub public_key: String,
    pub ephemeral: bool,
    pub proves: &'static str,
    pub does_not_prove: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub schema: &'static str,
    pub id: String,
    pub started: String,
    pub finished: String,
    pub engine: EngineInfo,
    pub binary: BinaryInfo,
    pub signing: SigningOut,
    pub out_dir: String,
    pub containers: Vec<ContainerResult>,
    pub exit: i32,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlacementOut {
    pub method: Method,
    pub path: String,
    /// The probe was already bind-mounted there: nothing copied or removed.
    pub existing: bool,
    /// How the file got there: "host" (written into the engine's MergedDir,
    /// outside/direct.rs), "cp" (the engine's cp), "" (already there).
    pub copied_by: &'static str,
    /// Why the host write was not used on a root filesystem (cp then
    /// placed it): the check of outside/direct.rs that did not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_write_refused: Option<String>,
    /// A probe bind-mounted by the container's creator that was not run,
    /// and why (it is not the inspector's binary): the inspector's own was
    /// placed instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_refused: Option<String>,
    /// Whether the placed file is gone again (None: it was not ours to remove).
    pub removed: Option<bool>,
    /// Who removed it: "probe" (its own --remove-self, in the run or the
    /// canary plant) or "host" (what the host wrote, when the container
    /// did not remove it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_by: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removal: Option<String>,
    /// The SHA-256 of the binary placed (or found bind-mounted).
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VolumeOut {
    pub name: String,
    pub anonymous: bool,
    pub destination: String,
    pub driver: String,
    /// The volume's directory on the host (`volume inspect`'s Mountpoint).
    pub mountpoint: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RecordOut {
    pub privileged: bool,
    pub capabilities: Value,
    pub seccomp: &'static str,
    pub no_new_privileges: bool,
    pub apparmor_profile: String,
    pub selinux_label: String,
    pub namespaces: BTreeMap<&'static str, String>,
    pub devices: Vec<String>,
    pub read_only_root: bool,
    pub user: String,
    pub runtime: String,
    pub mounts: Vec<super::record::RecordMount>,
    pub volumes: Vec<VolumeOut>,
    pub restart_policy: String,
    pub memory_limit: Option<i64>,
    pub pids_limit: Option<i64>,
    pub image_repo_digests: Vec<String>,
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CanaryOut {
    pub run: String,
    pub path: String,
    pub volume: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceOut {
    pub path: String,
    pub source: &'static str,
}

/// What the fleet table shows of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Glance {
    pub boundary: String,
    pub runtime: String,
    pub score: Option<u64>,
    pub max: Option<u64>,
    pub worst: Option<Severity>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContainerResult {
    pub id: String,
    pub name: String,
    pub image: String,
    pub image_digest: Option<String>,
    pub placement: Option<PlacementOut>,
    pub instruction: Option<String>,
    pub nonce: String,
    pub verified: bool,
    pub verification: Vec<String>,
    pub report: Option<String>,
    pub envelope: Option<String>,
    pub disagreements: Vec<Disagreement>,
    pub findings: Vec<Finding>,
    pub record: Option<RecordOut>,
    pub canaries: Vec<CanaryOut>,
    pub exit: i32,
    pub not_probed: Option<String>,
    // Beyond the contract (a superset): how the decision was reached.
    pub workspace: Option<WorkspaceOut>,
    pub placement_passed: Vec<Passed>,
    pub comparisons: Vec<Comparison>,
    /// Paths the comparison took as the container resolves them (the
    /// record's destinations, the report's socket paths), where that
    /// differs from how they are written.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resolved: BTreeMap<String, String>,
    /// Why the container's paths could not be resolved from the host (they
    /// were compared as written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolve_refused: Option<String>,
    pub cis: Vec<Check>,
    pub glance: Option<Glance>,
    pub steps_ms: BTreeMap<&'static str, u128>,
    /// The report and envelope bytes, written by `write`; not in the JSON.
    #[serde(skip)]
    pub files: Option<(Vec<u8>, Vec<u8>)>,
}

impl ContainerResult {
    fn new(id: &str, name: &str, image: &str, nonce: String) -> ContainerResult {
        ContainerResult {
            id: id.to_string(),
            name: name.to_string(),
            image: image.to_string(),
            image_digest: None,
            placement: None,
            instruction: None,
            nonce,
            verified: false,
            verification: Vec::new(),
            report: None,
            envelope: None,
            disagreements: Vec::new(),
            findings: Vec::new(),
            record: None,
            canaries: Vec::new(),
            exit: 3,
            not_probed: None,
            workspace: None,
            placement_passed: Vec::new(),
            comparisons: Vec::new(),
            resolved: BTreeMap::new(),
            resolve_refused: None,
            cis: Vec::new(),
            glance: None,
            steps_ms: BTreeMap::new(),
            files: None,
        }
    }
}

/// `<stem>` of a container's files (docs/inspection-directory.md): never a
/// path, never another container's, never one of the directory's own files.
pub fn file_stem(name: &str) -> String {
    selfprobe::util::filename::stem(name)
}

/// Random bytes as hex, from the OS.
pub fn random_hex(n: usize) -> Result<String, NoRandom> {
    let mut b = vec![0u8; n];
    getrandom::getrandom(&mut b).map_err(NoRandom)?;
    Ok(selfprobe::util::codec::hex(&b))
}

/// The OS random source failed.
#[derive(Debug, thiserror::Error)]
#[error("the OS random source failed: {0}")]
pub struct NoRandom(getrandom::Error);

/// Why a file could not be hashed, or (a bind-mounted probe's source, "it")
/// cannot be the binary it should be.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("it cannot be read: {0}")]
    Unreadable(io::Error),
    #[error("it is not a regular file")]
    NotFile,
    #[error("it is {found} bytes, the inspector's binary {len}")]
    Size { found: u64, len: u64 },
}

/// Why the probe (and the policy) could not be staged: all usage, as the
/// inspection never starts.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error(transparent)]
    Random(#[from] NoRandom),
    #[error("cannot make {}: {source}", dir.display())]
    MakeDir { dir: PathBuf, source: io::Error },
    #[error("--binary {}: {source}", path.display())]
    Binary { path: PathBuf, source: io::Error },
    #[error("--binary {}: not a regular file", .0.display())]
    BinaryNotFile(PathBuf),
    #[error("--policy {}: {source}", path.display())]
    Policy { path: PathBuf, source: io::Error },
    /// A staged copy's mode could not be set.
    #[error("{0}")]
    Mode(io::Error),
    #[error(transparent)]
    Hash(#[from] HashError),
}

impl From<StageError> for InspectError {
    fn from(e: StageError) -> Self {
        InspectError::Usage(e.to_string())
    }
}

/// Why the probe was not placed at one candidate (recorded as that
/// place's `why` in inspection.json; the next place is tried).
#[derive(Debug, thiserror::Error)]
pub enum NotPlaced {
    #[error("the staged binary: {0}")]
    Staged(io::Error),
    /// A bind-mounted probe that is not the inspector's binary: not run.
    #[error(
        "bind-mounted by the container's creator from {}, which is not the inspector's binary ({why}): not run",
        sanitize::escape(host)
    )]
    NotOurs { host: String, why: NotOurs },
    /// The engine's cp failed (engine::failure's words).
    #[error("{0}")]
    Cp(String),
    #[error(
        "the policy could not be placed beside the probe ({0}); the probe copied there may remain"
    )]
    PolicyCp(String),
}

/// Why a bind-mounted file is not the inspector's binary.
#[derive(Debug, thiserror::Error)]
pub enum NotOurs {
    #[error(transparent)]
    Unhashable(#[from] HashError),
    #[error("its SHA-256 is {found}, the inspector's binary's {want}")]
    Differs { found: String, want: String },
}

/// Why the inspection directory was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Stems are injective (util/filename.rs): this would be a bug.
    #[error(
        "two containers have the files {stem}.json: not written over (internal: their names are {:?})",
        sanitize::escape(name)
    )]
    SameStem { stem: String, name: String },
    #[error("cannot write the inspection into {}: {source}", dir.display())]
    Files { dir: PathBuf, source: io::Error },
}

/// Why the inspection could not start at all: bad options, key, policy
/// or binary (usage), or the engine or the output directory (failed).
pub use crate::error::Error as InspectError;

/// The probe's binary, staged privately so the bytes hashed are the bytes
/// copied, with a mode any container user can run.
struct Staged {
    dir: PathBuf,
    binary: PathBuf,
    policy: Option<PathBuf>,
    /// The policy's SHA-256, which the report must say its run had.
    policy_sha256: Option<String>,
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sha256_file(p: &Path, max: u64) -> Result<String, HashError> {
    let f = std::fs::File::open(p).map_err(|source| HashError::Read {
        path: p.to_path_buf(),
        source,
    })?;
    sha256_read(f.take(max), p)
}

fn sha256_read(mut r: impl Read, p: &Path) -> Result<String, HashError> {
    use selfprobe::util::digest::Sha256;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = r.read(&mut buf).map_err(|source| HashError::Read {
            path: p.to_path_buf(),
            source,
        })?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(selfprobe::util::codec::hex(&h.finish()))
}

/// The SHA-256 of a file on the host a container's creator named (a
/// bind-mounted probe's source) when it can be the binary of `len` bytes:
/// opened without blocking (a FIFO put there later does not hang the
/// inspection), its type and size checked on the open file. Err: why it
/// is not (or cannot be read).
fn sha256_if(p: &Path, len: u64) -> Result<String, HashError> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(p)
        .map_err(HashError::Unreadable)?;
    let meta = f.metadata().map_err(HashError::Unreadable)?;
    if !meta.is_file() {
        return Err(HashError::NotFile);
    }
    if meta.len() != len {
        let found = meta.len();
        return Err(HashError::Size { found, len });
    }
    sha256_read(f.take(len), p)
}

fn stage(binary: &Path, policy: Option<&Path>) -> Result<(Staged, String), StageError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = std::env::temp_dir().join(format!("selfprobe-inspect-{}", random_hex(8)?));
    if let Err(source) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        return Err(StageError::MakeDir { dir, source });
    }
    let mut st = Staged {
        binary: dir.join("selfprobe"),
        policy: None,
        policy_sha256: None,
        dir,
    };
    let bad_binary = |source| StageError::Binary {
        path: binary.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(binary).map_err(bad_binary)?;
    if !meta.is_file() {
        return Err(StageError::BinaryNotFile(binary.to_path_buf()));
    }
    std::fs::copy(binary, &st.binary).map_err(bad_binary)?;
    std::fs::set_permissions(&st.binary, std::fs::Permissions::from_mode(0o755))
        .map_err(StageError::Mode)?;
    if let Some(p) = policy {
        let dst = st.dir.join(concat!("policy", ".toml"));
        std::fs::copy(p, &dst).map_err(|source| StageError::Policy {
            path: p.to_path_buf(),
            source,
        })?;
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o644))
            .map_err(StageError::Mode)?;
        st.policy_sha256 = Some(sha256_file(&dst, 1 << 30)?);
        st.policy = Some(dst);
    }
    let sha = sha256_file(&st.binary, 1 << 30)?;
    Ok((st, sha))
}

/// Everything the per-container steps share.
struct Shared<'a> {
    engine: &'a Engine,
    opts: &'a Options,
    policy: &'a Policy,
    key_pem: &'a Zeroizing<String>,
    signer: &'a Signer,
    staged: &'a Staged,
    binary_sha: &'a str,
    binary_shown: &'a Path,
    all_caps: Vec<String>,
    digests: BTreeMap<String, Vec<String>>,
}

/// The probe to place when no `--binary` is given: the file `selfprobe`
/// beside this binary (the two are built, shipped and installed together,
/// DESIGN.md §16). This binary itself is never placed: it is the host tool.
pub fn probe_beside_self() -> Result<PathBuf, InspectError> {
    let exe = std::env::current_exe().map_err(|e| {
        InspectError::Usage(format!(
            "cannot tell where selfprobe-host is ({e}): pass --binary PATH to the selfprobe probe"
        ))
    })?;
    let beside = exe.with_file_name("selfprobe");
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(InspectError::Usage(format!(
            "no probe at {}: expected the selfprobe binary beside selfprobe-host, or --binary PATH",
            beside.display()
        )))
    }
}

/// What every inspection needs before it meets an engine: the policy, the
/// probe staged with its SHA-256, and the key the probes sign with.
struct Prepared {
    policy: Policy,
    binary: PathBuf,
    staged: Staged,
    binary_sha: String,
    key_pem: Zeroizing<String>,
}

/// Loads the policy, finds and stages the probe, and holds the key: one
/// `inspect` and a watch's `Session` alike. Every error is a usage error.
fn prepare(opts: &Options, signer: &Signer) -> Result<Prepared, InspectError> {
    let policy = match &opts.policy {
        Some(p) => {
            Policy::load(p).map_err(|e| InspectError::Usage(format!("policy error: {e}")))?
        }
        None => Policy::default(),
    };
    let binary = match &opts.binary {
        Some(b) => b.clone(),
        None => probe_beside_self()?,
    };
    let (staged, binary_sha) = stage(&binary, opts.policy.as_deref())?;
    let key_pem = signer
        .private_pem()
        .map_err(|e| InspectError::Usage(e.to_string()))?;
    Ok(Prepared {
        policy,
        binary,
        staged,
        binary_sha,
        key_pem,
    })
}

/// Runs the whole inspection. `signer` is the key the reports are signed
/// with; its private half goes only to the probes' stdin.
pub fn inspect(opts: &Options, signer: &Signer) -> Result<Inspection, InspectError> {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let Prepared {
        policy,
        binary,
        staged,
        binary_sha,
        key_pem,
    } = prepare(opts, signer)?;
    let (out_dir, made) = make_out_dir(opts.out_dir.as_deref())?;
    // A CLI that is missing or an engine that does not answer ends the
    // command before anything is written (the directory made for it goes).
    let gone = |e: super::engine::EngineError| {
        if made {
            let _ = std::fs::remove_dir(&out_dir);
        }
        InspectError::Failed(e.to_string())
    };
    let mut engine = Engine::connect(opts.engine, t0 + opts.timeout).map_err(gone)?;
    if opts.engine_cli_only {
        engine.api = None;
    }
    let refs = if opts.all {
        engine
            .running(opts.filter.as_deref(), Instant::now() + opts.timeout)
            .map_err(gone)?
    } else {
        opts.containers.clone()
    };
    let (mut records, missing) = engine
        .inspect(&refs, Instant::now() + opts.timeout)
        .map_err(gone)?;
    for r in &mut records {
        engine.settle(r);
    }
    let mut images: Vec<String> = records.iter().map(|r| r.image_id.clone()).collect();
    selfprobe::util::sort::sort(&mut images);
    images.dedup();
    let digests = engine.image_digests(&images, Instant::now() + opts.timeout);
    // A container named twice (by name and by id) is probed once: its
    // files have one name.
    let mut seen = std::collections::BTreeSet::new();
    records.retain(|r| seen.insert(r.id.clone()));
    let shared = Shared {
        engine: &engine,
        opts,
        policy: &policy,
        key_pem: &key_pem,
        signer,
        staged: &staged,
        binary_sha: &binary_sha,
        binary_shown: &binary,
        all_caps: host_capabilities(),
        digests,
    };
    let mut results = run_all(&shared, &records);
    for (r, why) in missing {
        let mut c = ContainerResult::new("", &r, "", String::new());
        c.not_probed = Some(why);
        results.push(c);
    }
    let exit = results.iter().map(|c| c.exit).max().unwrap_or(0);
    let vk = signer.verifying_key();
    Ok(Inspection {
        schema: SCHEMA,
        id: selfprobe::host::run_id(),
        started: rfc3339(started),
        finished: rfc3339(SystemTime::now()),
        engine: EngineInfo::of(&engine),
        binary: BinaryInfo {
            path: binary.display().to_string(),
            sha256: binary_sha.clone(),
        },
        signing: SigningOut {
            keyid: signer.keyid(),
            public_key: selfprobe::keys::public_openssh(&vk),
            ephemeral: signer.is_ephemeral(),
            proves: PROVES,
            does_not_prove: DOES_NOT_PROVE,
        },
        out_dir: out_dir.display().to_string(),
        containers: results,
        exit,
    })
}

/// Every capability this host's kernel knows, by name.
fn host_capabilities() -> Vec<String> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40);
    (0..=last.min(63))
        .map(selfprobe::catalog::capability_name)
        .collect()
}

/// The containers, `parallel` at a time; results in the records' order.
fn run_all(sh: &Shared, records: &[Record]) -> Vec<ContainerResult> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<ContainerResult>>> =
        records.iter().map(|_| Mutex::new(None)).collect();
    let workers = sh.opts.parallel.clamp(1, 16).min(records.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= records.len() {
                    break;
                }
                let r = one(sh, &records[i]);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .zip(records)
        .map(|(m, rec)| {
            m.into_inner().ok().flatten().unwrap_or_else(|| {
                let mut c = ContainerResult::new(&rec.id, &rec.name, &rec.image, String::new());
                c.not_probed =
                    Some("internal: its inspection thread ended without a result".into());
                c
            })
        })
        .collect()
}

/// The output directory: the one given (made if missing; refused when it
/// holds anything, so an earlier inspection is never overwritten), else a
/// new one in the working directory.
/// The directory, and whether it was made now.
fn make_out_dir(given: Option<&Path>) -> Result<(PathBuf, bool), InspectError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = match given {
        Some(d) => d.to_path_buf(),
        None => {
            let stamp = rfc3339(SystemTime::now()).replace([':', '-'], "");
            let stamp = stamp
                .split('.')
                .next()
                .unwrap_or(&stamp)
                .trim_end_matches('Z')
                .to_string();
            PathBuf::from(format!(
                "selfprobe-inspect-{stamp}Z-{}",
                random_hex(2).map_err(|e| InspectError::Failed(e.to_string()))?
            ))
        }
    };
    match std::fs::read_dir(&dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(InspectError::Usage(format!(
                    "--out-dir {}: not empty: expected a new or empty directory (an inspection is never written over another)",
                    dir.display()
                )));
            }
            Ok((dir, false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| {
                    InspectError::Failed(format!(
                        "cannot make the output directory {}: {e}",
                        dir.display()
                    ))
                })?;
            Ok((dir, true))
        }
        Err(e) => Err(InspectError::Usage(format!(
            "--out-dir {}: {e}",
            dir.display()
        ))),
    }
}

fn ms(t: Instant) -> u128 {
    t.elapsed().as_millis()
}

/// The probe's own `--timeout` for the time left: what is left, less the
/// share kept for removing it and a margin for signing and the way back.
fn probe_timeout(left: Duration) -> Duration {
    let keep = (left / CLEANUP_SHARE).min(MAX_CLEANUP);
    left.saturating_sub(keep)
        .saturating_sub(Duration::from_millis(500))
        .max(Duration::from_millis(500))
}

/// One container, from its record to its result. Never panics on what the
/// container sends back; every step is bounded by the container's deadline.
fn one(sh: &Shared, rec: &Record) -> ContainerResult {
    let t0 = Instant::now();
    let deadline = t0 + sh.opts.timeout;
    let cleanup_at = deadline - (sh.opts.timeout / CLEANUP_SHARE).min(MAX_CLEANUP);
    let nonce = random_hex(16).unwrap_or_else(|_| selfprobe::host::run_id());
    let mut c = ContainerResult::new(&rec.id, &rec.name, &rec.image, nonce.clone());
    c.image_digest = image_digest(rec, &sh.digests);
    c.record = Some(record_out(sh, rec, cleanup_at));
    let ws = placement::workspace(
        rec,
        sh.opts.workspace.as_deref(),
        sh.policy.workspace.as_ref().and_then(|p| p.to_str()),
    );
    c.workspace = ws.as_ref().map(|(p, s)| WorkspaceOut {
        path: p.clone(),
        source: s,
    });
    outside_findings(rec, &mut c);
    if !rec.running {
        c.not_probed = Some(format!(
            "the container is not running (state {})",
            rec.status
        ));
        finish(sh, rec, &mut c, None, deadline);
        return c;
    }
    // Placement.
    let token = random_hex(8).unwrap_or_else(|_| selfprobe::host::run_id());
    let name = format!(".selfprobe-{token}");
    let (mut cands, passed) = placement::candidates(
        rec,
        ws.as_ref().map(|w| w.0.as_str()),
        sh.opts.place_in.as_deref(),
        &name,
    );
    c.placement_passed = passed;
    if rec.engine == EngineKind::Docker {
        // Docker's cp writes under a tmpfs into the layer beneath, where
        // the container never sees it and `docker diff` does.
        let (tmpfs, rest): (Vec<Candidate>, Vec<Candidate>) = cands
            .into_iter()
            .partition(|c| c.method == Method::Tmpfs && sh.opts.place_in.is_none());
        for t in tmpfs {
            c.placement_passed.push(Passed {
                place: t
                    .path
                    .rsplit_once('/')
                    .map_or(t.path.clone(), |(d, _)| d.to_string()),
                why:
                    "a tmpfs, which docker cp does not reach (the file lands in the layer beneath)"
                        .into(),
            });
        }
        cands = rest;
    }
    let volumes: Vec<String> = rec
        .mounts
        .iter()
        .filter(|m| m.kind == MountKind::Volume && m.rw)
        .filter(|m| {
            !ws.as_ref()
                .is_some_and(|w| placement::within(&m.destination, &w.0))
        })
        .map(|m| m.destination.clone())
        .collect();
    let root_user = rec.uid() == Some(0) || rec.user_name() == Some("root");
    // Each place in turn: copy the probe there, run it. That it is visible
    // and starts is what the run shows first: an exec that cannot start it
    // (exit 126 or 127, nothing on stdout) sends us to the next place.
    let mut tried = Vec::new();
    let mut ran: Option<Ran> = None;
    let mut bound_refused = None;
    let (mut place_ms, mut run_ms) = (0, 0);
    for cand in cands {
        let tp = Instant::now();
        let placed = place(sh, rec, &cand, cleanup_at);
        place_ms += ms(tp);
        let mut placed = match placed {
            Ok(p) => p,
            Err(why) => {
                let why = why.to_string();
                if cand.existing {
                    bound_refused = Some(why.clone());
                }
                tried.push(Passed {
                    place: cand.path.clone(),
                    why,
                });
                continue;
            }
        };
        // The run removes the probe itself when nothing follows it and it
        // can unlink the file; otherwise the plant, as root, does.
        let run_removes = !cand.existing && volumes.is_empty() && root_user;
        let left = cleanup_at.saturating_duration_since(Instant::now());
        let asked = crosscheck::Asked {
            root: "/".into(),
            workspace: ws.as_ref().map(|w| w.0.clone()),
            policy_sha256: sh.staged.policy_sha256.clone(),
            timeout_ms: u64::try_from(probe_timeout(left).as_millis()).unwrap_or(u64::MAX),
            nonce: nonce.clone(),
            fail_on: sh.opts.fail_on,
        };
        let argv = run_argv(&cand, &asked, placed.policy.as_deref(), run_removes);
        let tr = Instant::now();
        let out = run_probe(sh, rec, &argv, cleanup_at);
        run_ms += ms(tr);
        // Docker writes its "OCI runtime exec failed" on stdout, podman
        // on stderr: either way no JSON came.
        let no_json = !out.stdout.trim_ascii_start().starts_with(b"{");
        if matches!(out.exit_code, Some(126) | Some(127)) && no_json {
            let said = String::from_utf8_lossy(&out.stdout);
            let said = said.lines().next().unwrap_or("").trim();
            // What the host wrote it removes again; a copy may remain.
            let remains = match placed.host.as_mut().map(direct::Written::remove) {
                Some(Ok(_)) => String::new(),
                Some(Err(e)) => format!("; the host could not remove its copy: {e}"),
                None if cand.existing => String::new(),
                None => format!("; the copy may remain at {}", cand.path),
            };
            tried.push(Passed {
                place: cand.path.clone(),
                why: format!(
                    "copied, but it does not start there ({}{}){remains}",
                    failure(&format!("{} exec", sh.engine.cli_name()), &out),
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", sanitize::short(&sanitize::escape(said), 300))
                    },
                ),
            });
        } else {
            ran = Some(Ran {
                cand,
                placed,
                asked,
                run_removes,
                out,
            });
            break;
        }
        if Instant::now() >= cleanup_at {
            break;
        }
    }
    c.steps_ms.insert("place", place_ms);
    c.steps_ms.insert("run", run_ms);
    let Some(Ran {
        cand,
        placed:
            Placed {
                sha,
                policy: policy_in,
                copied_by,
                refused,
                host: mut host_written,
            },
        asked,
        run_removes,
        out,
    }) = ran
    else {
        c.instruction = Some(placement::instruction(
            rec,
            sh.binary_shown,
            &c.placement_passed,
            &tried,
        ));
        c.placement_passed.extend(tried);
        c.not_probed = Some(
            "no placement: the probe could not be put in this container (see instruction)".into(),
        );
        finish(sh, rec, &mut c, None, deadline);
        return c;
    };
    c.placement_passed.extend(tried);
    c.placement = Some(PlacementOut {
        method: cand.method,
        path: cand.path.clone(),
        existing: cand.existing,
        copied_by,
        host_write_refused: refused,
        bound_refused,
        removed: None,
        removed_by: None,
        removal: None,
        sha256: sha.clone(),
    });
    if run_removes {
        note_removal(&mut c, &out);
    }
    let parsed = read_run(&out);
    let report = match parsed {
        Ok((report_bytes, envelope_bytes, report)) => {
            check(sh, &nonce, &sha, &envelope_bytes, &report, &mut c);
            c.files = Some((report_bytes, envelope_bytes));
            Some(report)
        }
        Err(why) => {
            c.not_probed = Some(why);
            None
        }
    };
    // Canaries, then the probe's removal (as root: the container's user may
    // not unlink a file in / or write every volume); also when the run was
    // to remove itself and did not (it was killed, or it failed).
    let removed = c.placement.as_ref().and_then(|p| p.removed) == Some(true);
    if !cand.existing && (!run_removes || !removed) {
        let tc = Instant::now();
        let plant_ok = report.is_some();
        let only: Vec<String> = if plant_ok && !volumes.is_empty() {
            volumes.clone()
        } else {
            vec!["/".into()]
        };
        let mut argv: Vec<String> = vec![
            cand.path.clone(),
            "canary".into(),
            "plant".into(),
            "--format".into(),
            "json".into(),
        ];
        for v in &only {
            argv.push("--only-in".into());
            argv.push(v.clone());
        }
        let with_key = plant_ok && !volumes.is_empty();
        if with_key {
            argv.extend([
                "--sign-key-fd".into(),
                "0".into(),
                "--nonce".into(),
                nonce.clone(),
            ]);
        }
        if let Some(p) = &policy_in {
            argv.push("--policy".into());
            argv.push(p.clone());
        }
        let end = if plant_ok {
            deadline
        } else {
            deadline.min(Instant::now() + MAX_CLEANUP)
        };
        argv.push("--timeout".into());
        argv.push(format!(
            "{}ms",
            end.saturating_duration_since(Instant::now())
                .saturating_sub(Duration::from_millis(300))
                .max(Duration::from_millis(200))
                .as_millis()
        ));
        argv.push("--remove-self".into());
        let key = with_key.then(|| sh.key_pem.as_bytes());
        let o = sh
            .engine
            .exec(&rec.id, Some("0"), &argv, key, end, (1 << 20, STDERR_CAP));
        note_removal(&mut c, &o);
        if with_key {
            c.canaries = planted(rec, &o);
        }
        c.steps_ms.insert("plant", ms(tc));
    }
    // What the host wrote, the host checks is gone and removes when it is
    // not: a root without CAP_DAC_OVERRIDE cannot unlink it in podman's
    // 0555 `/`, and what the container says of its removal is its word.
    if let (Some(w), Some(p)) = (host_written.as_mut(), c.placement.as_mut()) {
        match w.remove() {
            Ok(names) if names.is_empty() => {
                p.removed = Some(true);
                p.removed_by = Some("probe");
                p.removal = None;
            }
            Ok(_) => {
                let why = p.removal.take();
                p.removed = Some(true);
                p.removed_by = Some("host");
                p.removal = Some(format!(
                    "the container did not remove it ({}); the host removed what it wrote",
                    why.as_deref().unwrap_or("it said it had")
                ));
            }
            Err(e) => {
                p.removed = Some(false);
                p.removed_by = None;
                p.removal = Some(format!(
                    "{}; the host could not remove it either: {e}",
                    p.removal.as_deref().unwrap_or("not removed")
                ));
            }
        }
    }
    finish(
        sh,
        rec,
        &mut c,
        report.as_ref().map(|r| (r, &asked)),
        deadline,
    );
    c.steps_ms.insert("total", ms(t0));
    c
}

/// What `place` did: the SHA-256 of the binary there, the policy's path
/// beside it, how the files got there (PlacementOut::copied_by), why not
/// from the host when that was tried, and the files the host wrote (which
/// the host removes again when the container cannot).
struct Placed {
    sha: String,
    policy: Option<String>,
    copied_by: &'static str,
    refused: Option<String>,
    host: Option<direct::Written>,
}

/// A placement that ran: the candidate, what `place` gave, the arguments
/// the run was given, whether the run removes the probe, and its output.
struct Ran {
    cand: Candidate,
    placed: Placed,
    asked: crosscheck::Asked,
    run_removes: bool,
    out: Captured,
}

/// Copies the probe (and the policy, beside it) to `cand`, or why not. A
/// probe already bind-mounted in is used only when it is the inspector's
/// own binary (the same SHA-256, read from its source on the host) and
/// read-only inside: whoever starts the container decides what is at that
/// path. On the root filesystem of a runc or crun container the files are
/// written from the host when outside/direct.rs's checks hold (an
/// engine's cp costs an exec), else by the engine's cp.
fn place(sh: &Shared, rec: &Record, cand: &Candidate, until: Instant) -> Result<Placed, NotPlaced> {
    let placed = |sha: String, policy, copied_by, refused, host| Placed {
        sha,
        policy,
        copied_by,
        refused,
        host,
    };
    if cand.existing {
        let host = cand.host_binary.as_deref().unwrap_or("");
        let len = std::fs::metadata(&sh.staged.binary)
            .map_err(NotPlaced::Staged)?
            .len();
        let sha = match sha256_if(Path::new(host), len) {
            Ok(s) if s == sh.binary_sha => Ok(s),
            Ok(found) => Err(NotOurs::Differs {
                found,
                want: sh.binary_sha.to_string(),
            }),
            Err(e) => Err(e.into()),
        };
        let sha = sha.map_err(|why| NotPlaced::NotOurs {
            host: host.to_string(),
            why,
        })?;
        return Ok(placed(sha, None, "", None, None));
    }
    let mut refused = None;
    if cand.method == Method::Rootfs {
        match place_direct(sh, rec, cand) {
            Ok((policy, written)) => {
                return Ok(placed(
                    sh.binary_sha.to_string(),
                    policy,
                    "host",
                    None,
                    Some(written),
                ))
            }
            Err(why) => refused = Some(why.to_string()),
        }
    }
    let cp = sh
        .engine
        .copy_in(&sh.staged.binary, &rec.id, &cand.path, until);
    if cp.status != ToolStatus::Ok {
        return Err(NotPlaced::Cp(failure(
            &format!("{} cp", sh.engine.cli_name()),
            &cp,
        )));
    }
    let Some(src) = &sh.staged.policy else {
        return Ok(placed(sh.binary_sha.to_string(), None, "cp", refused, None));
    };
    let p = format!("{}.policy.toml", cand.path);
    let cp = sh.engine.copy_in(src, &rec.id, &p, until);
    if cp.status != ToolStatus::Ok {
        let cp = failure(&format!("{} cp", sh.engine.cli_name()), &cp);
        return Err(NotPlaced::PolicyCp(cp));
    }
    Ok(placed(
        sh.binary_sha.to_string(),
        Some(p),
        "cp",
        refused,
        None,
    ))
}

/// The probe and the policy written from the host into the container's
/// root (outside/direct.rs): the policy's path, if one was placed, and
/// what was written; or why not, and then nothing of it is left and the
/// engine's cp is used.
fn place_direct(
    sh: &Shared,
    rec: &Record,
    cand: &Candidate,
) -> Result<(Option<String>, direct::Written), direct::NotDirect> {
    let name = cand
        .path
        .strip_prefix('/')
        .filter(|n| !n.contains('/'))
        .ok_or_else(|| direct::NotDirect::NotInRoot(cand.path.clone()))?;
    let root = direct::Root::open(rec, sh.engine.runtime_kind(&rec.runtime))?;
    let mut written = root.written();
    written.put(&sh.staged.binary, name)?;
    let Some(src) = &sh.staged.policy else {
        return Ok((None, written));
    };
    let policy = format!("{name}.policy.toml");
    if let Err(why) = written.put(src, &policy) {
        let _ = written.remove();
        return Err(why);
    }
    Ok((Some(format!("/{policy}")), written))
}

/// The arguments of the probe's run: `asked` (what the report must say
/// its run had: root, workspace, policy, timeout, nonce, --fail-on) and
/// the policy's path inside.
fn run_argv(
    cand: &Candidate,
    asked: &crosscheck::Asked,
    policy: Option<&str>,
    remove: bool,
) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        cand.path.clone(),
        "run".into(),
        "--format".into(),
        "json".into(),
        "--attest".into(),
        "-".into(),
        "--sign-key-fd".into(),
        "0".into(),
        "--root".into(),
        asked.root.clone(),
        "--nonce".into(),
        asked.nonce.clone(),
        "--timeout".into(),
        format!("{}ms", asked.timeout_ms),
        "--fail-on".into(),
        asked
            .fail_on
            .map_or("none".to_string(), |s| s.as_str().to_string()),
    ];
    if let Some(w) = &asked.workspace {
        argv.extend(["--workspace".into(), w.clone()]);
    }
    if let Some(p) = policy {
        argv.extend(["--policy".into(), p.to_string()]);
    }
    if remove {
        argv.push("--remove-self".into());
    }
    argv
}

/// The probe's run: the report and the envelope on stdout, the key on stdin.
fn run_probe(sh: &Shared, rec: &Record, argv: &[String], until: Instant) -> Captured {
    sh.engine.exec(
        &rec.id,
        None,
        argv,
        Some(sh.key_pem.as_bytes()),
        until,
        (REPORT_CAP, STDERR_CAP),
    )
}

/// The `--remove-self` line the probe wrote on stderr.
fn note_removal(c: &mut ContainerResult, out: &Captured) {
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text.lines().find(|l| l.contains("--remove-self:"));
    if let Some(p) = c.placement.as_mut() {
        match line {
            Some(l) if l.contains("--remove-self: removed ") => {
                p.removed = Some(true);
                p.removed_by = Some("probe");
                p.removal = None;
            }
            Some(l) => {
                p.removed = Some(false);
                p.removed_by = None;
                p.removal = Some(sanitize::short(&sanitize::escape(l.trim()), 300));
            }
            None => {
                p.removed = Some(false);
                p.removed_by = None;
                p.removal = Some(match out.status {
                    ToolStatus::Timeout => {
                        "the probe was killed at the deadline before it could remove itself".into()
                    }
                    _ => "the probe did not say it removed itself".into(),
                });
            }
        }
    }
}

/// The run's stdout: the JSON report, then the DSSE envelope (`--attest
/// -`), each as the probe wrote it. Anything else is "not probed".
pub fn read_run(out: &Captured) -> Result<(Vec<u8>, Vec<u8>, Value), String> {
    if let Some(which) = out.overflow {
        return Err(format!(
            "the probe wrote more than {} MiB on {which}: not a report (it was killed)",
            if which == "stdout" {
                REPORT_CAP >> 20
            } else {
                STDERR_CAP >> 20
            }
        ));
    }
    if out.status == ToolStatus::Timeout {
        return Err(format!(
            "the probe did not finish within --timeout ({})",
            out.reason.as_deref().unwrap_or("killed")
        ));
    }
    if out.status == ToolStatus::Error {
        return Err(format!(
            "the engine CLI could not be started: {}",
            out.reason.as_deref().unwrap_or("?")
        ));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = || {
        let l: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.contains("--remove-self:"))
            .take(2)
            .collect();
        if l.is_empty() {
            String::new()
        } else {
            format!(
                "; it said: {}",
                sanitize::short(&sanitize::escape(&l.join(" / ")), 300)
            )
        }
    };
    let code = out.exit_code;
    if !matches!(code, Some(0) | Some(1) | Some(3)) {
        return Err(format!(
            "the probe exited {} without a report{}",
            code.map_or("by a signal".to_string(), |c| format!("with {c}")),
            said()
        ));
    }
    let bytes = &out.stdout;
    let mut it = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
    let report = match it.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Err(format!(
                "the probe's output is not a JSON report ({e}){}",
                said()
            ))
        }
        None => {
            return Err(format!(
                "the probe printed nothing (exit {}){}",
                code.unwrap_or(-1),
                said()
            ))
        }
    };
    let end = it.byte_offset();
    if report.get("schema").and_then(Value::as_str) != Some(selfprobe::model::SCHEMA) {
        return Err(format!(
            "the probe's output is JSON but not a selfprobe report (no schema {:?})",
            selfprobe::model::SCHEMA
        ));
    }
    let r_end = if bytes.get(end) == Some(&b'\n') {
        end + 1
    } else {
        end
    };
    let envelope = match it.next() {
        Some(Ok(v)) if v.get("payloadType").is_some() => v,
        Some(Ok(_)) => return Err("the probe's second output is not a DSSE envelope".into()),
        Some(Err(e)) => return Err(format!("the probe's envelope is not JSON ({e}){}", said())),
        None => {
            return Err(format!(
                "the probe wrote a report but no envelope{}",
                said()
            ))
        }
    };
    drop(envelope);
    let e_end = it.byte_offset();
    let e_end2 = if bytes.get(e_end) == Some(&b'\n') {
        e_end + 1
    } else {
        e_end
    };
    if bytes[e_end2..].iter().any(|b| !b.is_ascii_whitespace()) {
        return Err("the probe wrote more after its envelope: not the output of selfprobe".into());
    }
    Ok((
        bytes[..r_end].to_vec(),
        bytes[r_end..e_end2].to_vec(),
        report,
    ))
}

/// Verifies the envelope with verify's own checks (signature, payloadType,
/// statement, subjects, the key the report names, the nonce, the placed
/// binary's SHA-256), then that the report is the attested predicate.
fn check(
    sh: &Shared,
    nonce: &str,
    sha: &str,
    envelope: &[u8],
    report: &Value,
    c: &mut ContainerResult,
) {
    let name = format!("{}.intoto.json", file_stem(&c.name));
    let v = verify::verify(&verify::Inputs {
        pubkey: sh.signer.verifying_key(),
        nonce: Some(nonce),
        binary_sha256: Some(sha),
        envelope: Some((&name, envelope)),
        sshsig: None,
    });
    let mut problems: Vec<String> = v
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.check, p.message))
        .collect();
    match &v.attested {
        Some(p) if p == report => {}
        Some(_) => problems.push(format!(
            "report: {}.json is not the report the envelope attests: it was changed after signing",
            file_stem(&c.name)
        )),
        None => {}
    }
    if v.predicate_type != Some(selfprobe::attest::PREDICATE_TYPE) && problems.is_empty() {
        problems.push("predicateType: the envelope does not attest a report".into());
    }
    c.verified = problems.is_empty() && v.valid();
    c.verification = problems;
}

fn image_digest(rec: &Record, digests: &BTreeMap<String, Vec<String>>) -> Option<String> {
    if let Some(d) = &rec.image_digest {
        return Some(d.clone());
    }
    digests
        .get(&rec.image_id)
        .and_then(|d| d.first())
        .and_then(|d| d.split_once('@'))
        .map(|(_, h)| h.to_string())
}

fn record_out(sh: &Shared, rec: &Record, deadline: Instant) -> RecordOut {
    let defaults = &sh.engine.default_caps;
    let bounding = rec.bounding_set(&sh.all_caps, defaults);
    let effective = rec.effective_set(&sh.all_caps, defaults, rec.uid());
    let volumes = rec
        .volumes()
        .map(|m| {
            let name = m.name.clone().unwrap_or_default();
            let v = sh.engine.volume(&name, deadline).ok().flatten();
            VolumeOut {
                anonymous: v
                    .as_ref()
                    .map_or_else(|| super::record::anonymous_name(&name), |v| v.anonymous),
                destination: m.destination.clone(),
                driver: v.as_ref().map_or_else(
                    || m.driver.clone().unwrap_or_default(),
                    |v| v.driver.clone(),
                ),
                mountpoint: v
                    .as_ref()
                    .map_or_else(|| m.source.clone(), |v| v.mountpoint.clone()),
                name,
            }
        })
        .collect();
    RecordOut {
        privileged: rec.privileged,
        capabilities: serde_json::json!({"add": rec.cap_add, "drop": rec.cap_drop,
            "bounding": bounding, "effective": effective}),
        seccomp: rec.seccomp,
        no_new_privileges: rec.no_new_privileges,
        apparmor_profile: rec.apparmor_profile.clone(),
        selinux_label: rec.selinux_label.clone(),
        namespaces: rec.namespaces.clone(),
        devices: rec
            .devices
            .iter()
            .map(|d| format!("{}:{}", d.host, d.container))
            .collect(),
        read_only_root: rec.read_only_root,
        user: rec.user.clone(),
        runtime: rec.runtime.clone(),
        mounts: rec.mounts.clone(),
        volumes,
        restart_policy: if rec.restart_policy == "on-failure" && rec.restart_max_retries > 0 {
            format!("on-failure:{}", rec.restart_max_retries)
        } else {
            rec.restart_policy.clone()
        },
        memory_limit: rec.memory_limit,
        pids_limit: rec.pids_limit,
        image_repo_digests: sh.digests.get(&rec.image_id).cloned().unwrap_or_default(),
        labels: rec.labels.clone(),
    }
}

/// The facts only the outside knows that the CIS floor warns on.
fn outside_findings(rec: &Record, c: &mut ContainerResult) {
    let digest = c.image_digest.clone();
    let base = |f: Finding| {
        f.with("container", rec.name.clone())
            .with("container_id", rec.id.clone())
            .with("image", rec.image.clone())
            .with("image_digest", digest.clone())
    };
    if rec.memory_limit.is_none() {
        c.findings.push(base(Finding::new(
            Code::OutsideMemoryUnlimited,
            "memory",
            format!(
                "{}: the engine gives the container no memory limit (HostConfig.Memory 0)",
                rec.name
            ),
        )));
    }
    if rec.pids_limit.is_none() {
        c.findings.push(base(Finding::new(
            Code::OutsidePidsUnlimited,
            "pids",
            format!("{}: the engine gives the container no PIDs limit", rec.name),
        )));
    }
}

/// The cross-check, the CIS floor, the policy and the exit code. `run`:
/// the report and the arguments its run was given.
fn finish(
    sh: &Shared,
    rec: &Record,
    c: &mut ContainerResult,
    run: Option<(&Value, &crosscheck::Asked)>,
    deadline: Instant,
) {
    // The report read back once, typed (model::read), for each use below.
    let read = run.map(|(r, _)| read::Read::from_value(r));
    if let (Some((_, asked)), Some(r)) = (run, read.as_ref()) {
        // The record's destinations and the report's socket paths, as the
        // container resolves them (outside/resolve.rs).
        let kind = sh.engine.runtime_kind(&rec.runtime);
        let resolved = match resolve::Root::open(rec, kind) {
            Ok(root) => {
                let paths = crosscheck::paths_to_resolve(rec, r, MAX_RESOLVED);
                let until = deadline.min(Instant::now() + MAX_CLEANUP);
                resolve::resolve_all(root, paths, until)
            }
            Err(why) => {
                c.resolve_refused = Some(why.to_string());
                BTreeMap::new()
            }
        };
        let ctx = crosscheck::Context {
            rec,
            engine: sh.engine,
            all_caps: &sh.all_caps,
            asked: Some(asked),
            resolved: &resolved,
        };
        let o = crosscheck::compare_read(&ctx, r);
        c.comparisons = o.comparisons;
        c.disagreements = o.disagreements;
        c.findings.extend(
            o.findings
                .into_iter()
                .map(|f| f.with("verified", c.verified)),
        );
        c.glance = Some(glance(r));
        c.resolved = resolved;
    }
    c.cis = cis::section5(rec, read.as_ref(), &c.findings);
    let today = selfprobe::host::today(SystemTime::now());
    let _ = sh.policy.apply(&mut c.findings, today);
    // A policy severity override reaches the contract's entries too.
    for d in &mut c.disagreements {
        if let Some(s) = sh.policy.severity.get(&d.code) {
            d.severity = *s;
        }
    }
    selfprobe::model::sort_findings(&mut c.findings);
    if let Some(g) = c.glance.as_mut() {
        let outside_worst = c
            .findings
            .iter()
            .filter(|f| f.status == Status::Fail)
            .map(|f| f.severity)
            .max();
        g.worst = g.worst.max(outside_worst);
    }
    c.exit = if c.not_probed.is_some() || !c.verified {
        3
    } else {
        // A report that records no exit code counts as a failed run.
        let inside = read
            .as_ref()
            .filter(|r| given!(r, summary.exit_code).value())
            .map_or(3, |r| i32::from(r.report.summary.exit_code));
        let gating = c
            .findings
            .iter()
            .any(|f| f.status == Status::Fail && sh.opts.fail_on.is_some_and(|t| f.severity >= t));
        inside.max(i32::from(gating))
    };
}

fn glance(r: &read::Read) -> Glance {
    let b = &r.report.inventory.boundary;
    // What the report leaves out is "?", not the model's default; a
    // boundary that does not read shows what it claims (sanitised where
    // the glance is shown).
    let named = |g: Given, w: fn(&Boundary) -> String, claimed: Option<&str>| match (g.value(), b) {
        (true, Some(b)) => w(b),
        _ => claimed.unwrap_or("?").to_string(),
    };
    let worst = r
        .report
        .findings
        .iter()
        .filter(|f| f.status == Status::Fail)
        .map(|f| f.severity)
        .max();
    let score = |g: Given, n: u8| g.value().then_some(u64::from(n));
    Glance {
        boundary: named(
            given!(r, inventory.boundary => kind),
            |b| word(&b.kind),
            claimed!(r, inventory.boundary => kind),
        ),
        runtime: named(
            given!(r, inventory.boundary => runtime),
            |b| word(&b.runtime),
            claimed!(r, inventory.boundary => runtime),
        ),
        score: score(given!(r, scorecard.total), r.report.scorecard.total),
        max: score(given!(r, scorecard.max), r.report.scorecard.max),
        worst,
    }
}

/// The canaries the plant wrote, each with the volume it is in.
fn planted(rec: &Record, out: &Captured) -> Vec<CanaryOut> {
    let Ok(v) = serde_json::from_slice::<Value>(&out.stdout) else {
        return Vec::new();
    };
    let run = v
        .get("run_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    v.get("planted")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("path").and_then(Value::as_str))
        .map(|path| CanaryOut {
            run: run.clone(),
            path: path.to_string(),
            volume: rec
                .volumes()
                .filter(|m| placement::within(path, &m.destination))
                .max_by_key(|m| m.destination.len())
                .and_then(|m| m.name.clone()),
        })
        .collect()
}

/// Writes the inspection directory: each report and envelope byte for byte,
/// the nonces, the public key (`pubkey`: what `selfprobe pubkey` prints for
/// the key), and inspection.json (the JSON given). inspection.json marks
/// the directory complete (the watch's recovery takes a directory with a
/// readable one as written): it is put in place last, once every file is
/// on disk. All are written in one host::write_whole_all: their fsyncs at
/// once, then the renames, inspection.json's last. Under a burst of
/// container starts the device's flushes queue behind the engine's, and a
/// second round of them (inspection.json's own, as before) was the slowest
/// containers' longest step (bench/RESULTS.md, "2026-12-03 05:50-07:50
/// UTC").
pub fn write(insp: &mut Inspection, json: &str, pubkey: &str) -> Result<(), WriteError> {
    let dir = PathBuf::from(&insp.out_dir);
    let cleanup = selfprobe::host::Cleanup::default();
    let mut nonces =
        String::from("# selfprobe-host inspect: one line per probed container, <name> <nonce>\n");
    let mut files: Vec<(PathBuf, &[u8])> = vec![(dir.join("signing.pub"), pubkey.as_bytes())];
    // Stems are injective (util/filename.rs); this holds it here too, so no
    // container's files are ever written over another's.
    let mut stems = std::collections::BTreeSet::new();
    for c in &insp.containers {
        if let Some((r, e)) = &c.files {
            let stem = file_stem(&c.name);
            if !stems.insert(stem.clone()) {
                let name = c.name.clone();
                return Err(WriteError::SameStem { stem, name });
            }
            files.push((dir.join(format!("{stem}.json")), r));
            files.push((dir.join(format!("{stem}.intoto.json")), e));
        }
        if !c.nonce.is_empty() && c.placement.is_some() {
            nonces.push_str(&format!("{} {}\n", file_stem(&c.name), c.nonce));
        }
    }
    files.push((dir.join("nonces"), nonces.as_bytes()));
    files.push((dir.join("inspection.json"), json.as_bytes()));
    let refs: Vec<(&Path, &[u8])> = files.iter().map(|(p, b)| (p.as_path(), *b)).collect();
    selfprobe::host::write_whole_all(&refs, &cleanup)
        .map_err(|source| WriteError::Files { dir, source })
}

/// Sets the file names in each result, once the bytes are there.
pub fn name_files(insp: &mut Inspection) {
    for c in &mut insp.containers {
        if c.files.is_some() {
            let stem = file_stem(&c.name);
            c.report = Some(format!("{stem}.json"));
            c.envelope = Some(format!("{stem}.intoto.json"));
        }
    }
}

pub fn render_json(insp: &Inspection) -> String {
    let mut s =
        serde_json::to_string_pretty(insp).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// What many inspections share, made once: the policy, the staged binary
/// and its SHA-256, the key's PEM for the probes' stdin, the engine, the
/// host's capabilities. The watch (src/watch) holds one for its whole life,
/// so a container's inspection costs its own engine calls and no `info`,
/// staging or hashing of the binary (about a tenth of a second each time).
/// `inspect` above is the one-shot form of the same steps.
pub struct Session {
    opts: Options,
    engine: Engine,
    policy: Policy,
    staged: Staged,
    binary: PathBuf,
    binary_sha: String,
    signer: Signer,
    key_pem: Zeroizing<String>,
    all_caps: Vec<String>,
    /// Images' RepoDigests by image id, asked once per DIGEST_TTL: a burst
    /// of workspaces from one image costs one `image inspect`, not one each.
    digests: Mutex<BTreeMap<String, (Instant, Vec<String>)>>,
}

/// How long a Session takes an image's RepoDigests as they were (a push
/// or pull can add one).
const DIGEST_TTL: Duration = Duration::from_secs(300);

impl Session {
    /// Loads the policy, stages the binary and holds the key. `opts`'s
    /// out_dir, all, filter and containers are not used: each call of
    /// `inspect_records` names its own.
    pub fn open(opts: &Options, signer: Signer, engine: Engine) -> Result<Session, InspectError> {
        let Prepared {
            policy,
            binary,
            staged,
            binary_sha,
            key_pem,
        } = prepare(opts, &signer)?;
        Ok(Session {
            opts: opts.clone(),
            engine,
            policy,
            staged,
            binary,
            binary_sha,
            signer,
            key_pem,
            all_caps: host_capabilities(),
            digests: Mutex::new(BTreeMap::new()),
        })
    }

    /// The RepoDigests of `images` (by id), from the cache where fresh.
    fn image_digests(&self, images: &[String], deadline: Instant) -> BTreeMap<String, Vec<String>> {
        let now = Instant::now();
        let fresh = |t: &Instant| now.duration_since(*t) < DIGEST_TTL;
        let mut cache = self.digests.lock().unwrap_or_else(|e| e.into_inner());
        let ask: Vec<String> = images
            .iter()
            .filter(|i| !cache.get(*i).is_some_and(|(t, _)| fresh(t)))
            .cloned()
            .collect();
        if !ask.is_empty() {
            // Not under the lock: the engine may be slow to answer.
            drop(cache);
            let got = self.engine.image_digests(&ask, deadline);
            cache = self.digests.lock().unwrap_or_else(|e| e.into_inner());
            for (k, v) in got {
                cache.insert(k, (now, v));
            }
        }
        images
            .iter()
            .filter_map(|i| cache.get(i).map(|(_, v)| (i.clone(), v.clone())))
            .collect()
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    /// The SHA-256 of the binary placed, which every report must name.
    pub fn binary_sha256(&self) -> &str {
        &self.binary_sha
    }

    /// Inspects `records` (from `engine().inspect`) as `inspect` does,
    /// `parallel` at a time, into an Inspection for `out_dir` (not written:
    /// `name_files` and `write` do that).
    pub fn inspect_records(&self, mut records: Vec<Record>, out_dir: &Path) -> Inspection {
        let started = SystemTime::now();
        for r in &mut records {
            self.engine.settle(r);
        }
        let mut images: Vec<String> = records.iter().map(|r| r.image_id.clone()).collect();
        selfprobe::util::sort::sort(&mut images);
        images.dedup();
        let digests = self.image_digests(&images, Instant::now() + self.opts.timeout);
        let mut seen = std::collections::BTreeSet::new();
        records.retain(|r| seen.insert(r.id.clone()));
        let shared = Shared {
            engine: &self.engine,
            opts: &self.opts,
            policy: &self.policy,
            key_pem: &self.key_pem,
            signer: &self.signer,
            staged: &self.staged,
            binary_sha: &self.binary_sha,
            binary_shown: &self.binary,
            all_caps: self.all_caps.clone(),
            digests,
        };
        let results = run_all(&shared, &records);
        let exit = results.iter().map(|c| c.exit).max().unwrap_or(0);
        let vk = self.signer.verifying_key();
        Inspection {
            schema: SCHEMA,
            id: selfprobe::host::run_id(),
            started: rfc3339(started),
            finished: rfc3339(SystemTime::now()),
            engine: EngineInfo::of(&self.engine),
            binary: BinaryInfo {
                path: self.binary.display().to_string(),
                sha256: self.binary_sha.clone(),
            },
            signing: SigningOut {
                keyid: self.signer.keyid(),
                public_key: selfprobe::keys::public_openssh(&vk),
                ephemeral: self.signer.is_ephemeral(),
                proves: PROVES,
                does_not_prove: DOES_NOT_PROVE,
            },
            out_dir: out_dir.display().to_string(),
            containers: results,
            exit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(stdout: &[u8], code: i32) -> Captured {
        Captured {
            status: if code == 0 {
                ToolStatus::Ok
            } else {
                ToolStatus::Failed
            },
            exit_code: Some(code),
            stdout: stdout.to_vec(),
            stderr: Vec::new(),
            overflow: None,
            duration: Duration::ZERO,
            reason: None,
        }
    }

    #[test]
    fn the_run_output_splits_into_report_and_envelope_byte_for_byte() {
        let report = format!(
            "{{\n  \"schema\": \"{}\",\n  \"x\": 1\n}}\n",
            selfprobe::model::SCHEMA
        );
        let env = "{\n  \"payloadType\": \"t\",\n  \"payload\": \"\",\n  \"signatures\": []\n}\n";
        let both = format!("{report}{env}");
        let (r, e, v) = read_run(&captured(both.as_bytes(), 1)).unwrap();
        assert_eq!(r, report.as_bytes());
        assert_eq!(e, env.as_bytes());
        assert_eq!(v["x"], 1);
        for (bad, want) in [
            (&b"{\"a\": 1}\n"[..], "not a selfprobe report"),
            (b"{\"schema\": ", "not a JSON report"),
            (b"", "printed nothing"),
        ] {
            let e = read_run(&captured(bad, 0)).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let e = read_run(&captured(report.as_bytes(), 0)).unwrap_err();
        assert!(e.contains("no envelope"), "{e}");
        let e = read_run(&captured(format!("{both}junk").as_bytes(), 0)).unwrap_err();
        assert!(e.contains("more after"), "{e}");
        let e = read_run(&captured(both.as_bytes(), 137)).unwrap_err();
        assert!(e.contains("exited with 137"), "{e}");
        let mut flood = captured(b"yyyy", 0);
        flood.overflow = Some("stdout");
        assert!(read_run(&flood).unwrap_err().contains("more than 16 MiB"));
    }

    #[test]
    fn the_probe_gets_most_of_what_is_left() {
        assert_eq!(
            probe_timeout(Duration::from_secs(60)),
            Duration::from_millis(54_500)
        );
        assert_eq!(
            probe_timeout(Duration::from_secs(10)),
            Duration::from_millis(7_500)
        );
        assert_eq!(
            probe_timeout(Duration::from_millis(100)),
            Duration::from_millis(500)
        );
    }
}
