//! The command line (clap derive), resolved into a Config. Every error here
//! is a usage error (exit 2) and says what was wrong and what was expected.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::attest::{self, keys::KeySource, NonceError};
use crate::finding::{Severity, UnknownSeverity};
use crate::host::{parse_duration, DurationError};
use crate::policy::{Policy, PolicyError};
use crate::probe::network::dial::{Dial, Redirect, RedirectError};
use crate::probe::network::Options as NetOptions;
use crate::registry::reference::{RefError, Reference};

#[derive(Debug, Parser)]
#[command(
    name = "selfprobe",
    version,
    about = "Probe a container, devcontainer or CI workspace from the inside and report how narrow its boundary really is",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Probe the workspace (the default)
    Run(RunArgs),
    /// Explain a finding code: what it means and how to fix it
    Explain {
        /// A finding code such as engine.socket-reachable
        code: String,
    },
    /// List every check with its severity, phase and scorecard control
    ListChecks,
    /// Verify an attestation (--attest) and/or an SSHSIG (--sshsig) against a public key you trust
    Verify(VerifyArgs),
    /// Print a signing key's public key: PEM, an allowed_signers line and the DSSE keyid
    Pubkey(PubkeyArgs),
    /// Canaries that prove whether state survives teardown
    Canary {
        #[command(subcommand)]
        action: CanaryAction,
    },
    /// From the host: place the probe in running containers, run it, verify its signed report and check it against the engine's own record
    Inspect(InspectArgs),
    /// From the host, after the workspaces are removed: what of an inspection's containers, volumes and canaries survived, as signed statements
    Teardown(TeardownArgs),
    /// From the host: follow the engine's events, inspect each matching container when it starts and prove its teardown when it is removed
    Watch(WatchArgs),
    /// Copy this binary to DIR/selfprobe: for an initContainer whose image has no cp (deploy/kubernetes)
    Install {
        /// An existing directory, e.g. an emptyDir the workload container mounts
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Attestations in an OCI registry: attach envelopes to an image, fetch and verify them
    Attest {
        #[command(subcommand)]
        action: AttestAction,
    },
    /// Compare two workspaces' reports fact by fact: architecture, kernel, network, storage, secrets, orchestration policy, toolchain
    Diff(DiffArgs),
    /// Verify many workspaces' reports, envelopes and teardown statements and show them side by side
    Summary(SummaryArgs),
}

/// The engine CLI `inspect` talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineName {
    Docker,
    Podman,
}

/// The host-side commands' output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// The engine whose CLI to use (default: docker if on PATH, else podman)
    #[arg(long, value_enum)]
    pub engine: Option<EngineName>,
    /// Where to write the inspection (reports, envelopes, nonces, signing.pub, inspection.json); default: a new directory here, named in the output
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// text: a fleet table; json: the whole inspection (inspection.json)
    #[arg(long, value_enum, default_value_t = HostFormat::Text)]
    pub format: HostFormat,
    /// Deadline per container, for every step from placement to removal, e.g. 30s, 2m
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Ed25519 key (PKCS#8 PEM or OpenSSH) the probes sign with, handed to each on its stdin; default: an ephemeral key for this inspection
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// Put the probe in this directory inside each container: the one way to use a bind mount of host files (never the workspace)
    #[arg(long, value_name = "PATH")]
    pub place_in: Option<String>,
    /// The policy (TOML): placed beside the probe for its run, applied to the inspection's own findings
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The selfprobe binary to place (default: this one)
    #[arg(long, value_name = "FILE")]
    pub binary: Option<PathBuf>,
    /// The workspace inside the containers (default: the policy's, the devcontainer label's, or the working directory's mount)
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// Exit 1 when a finding at or above this severity is not excepted (critical, high, medium, low, info, none)
    #[arg(long, value_name = "SEVERITY", default_value = "high", value_parser = parse_fail_on)]
    pub fail_on: FailOn,
    /// How many containers are inspected at once
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub parallel: usize,
    /// Every running container (of --filter)
    #[arg(long, conflicts_with = "containers")]
    pub all: bool,
    /// With --all: only containers with this label, as `ps --filter` takes it
    #[arg(long, value_name = "label=K=V", requires = "all")]
    pub filter: Option<String>,
    /// Containers by name or id
    #[arg(value_name = "CONTAINER", required_unless_present = "all")]
    pub containers: Vec<String>,
}

/// `selfprobe watch` (src/watch, docs/watch.md): the options of inspect
/// that apply per container, and the watch's own.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// The engine whose CLI to use (default: docker if on PATH, else podman)
    #[arg(long, value_enum)]
    pub engine: Option<EngineName>,
    /// Only containers with this label, as `events --filter` and `ps --filter` take it (label=KEY or label=KEY=VALUE); repeat to require several
    #[arg(long, value_name = "label=K=V")]
    pub filter: Vec<String>,
    /// Where the watch keeps its state, key, inspections and fleet view (made if missing; an existing one must be a watch's own or empty)
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// How many containers are inspected at once
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        visible_alias = "parallel"
    )]
    pub jobs: usize,
    /// Deadline per container, for every step from placement to removal, e.g. 30s, 2m
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Ed25519 key (PKCS#8 PEM or OpenSSH) to sign with (default: SELFPROBE_SIGNING_KEY, else DIR/watch.key, made on first start)
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// Put the probe in this directory inside each container: the one way to use a bind mount of host files (never the workspace)
    #[arg(long, value_name = "PATH")]
    pub place_in: Option<String>,
    /// The policy (TOML): placed beside the probe, applied to the inspections' findings, its [[retain]] entries to the teardowns
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The selfprobe binary to place (default: this one)
    #[arg(long, value_name = "FILE")]
    pub binary: Option<PathBuf>,
    /// The workspace inside the containers (default: the policy's, the devcontainer label's, or the working directory's mount)
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<String>,
    /// A container's inspection exits 1 when a finding at or above this severity is not excepted (critical, high, medium, low, info, none)
    #[arg(long, value_name = "SEVERITY", default_value = "high", value_parser = parse_fail_on)]
    pub fail_on: FailOn,
    /// Keep the records of at most N ended workspaces (inspection directories and missed entries); the oldest go first
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub keep: usize,
    /// Remove the records of workspaces that ended longer ago than this, e.g. 30d, 12h
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = parse_timeout)]
    pub max_age: Duration,
}

#[derive(Debug, Clone, Args)]
pub struct TeardownArgs {
    /// An inspection's directory (inspect --out-dir)
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The policy whose [[retain]] entries own the volumes kept on purpose
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Ed25519 key to sign the teardown statements with (default: an ephemeral key, whose public half goes to DIR/teardown.pub)
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// text or json (what DIR/teardown.json holds)
    #[arg(long, value_enum, default_value_t = HostFormat::Text)]
    pub format: HostFormat,
    /// Deadline for the whole teardown check, e.g. 30s
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout)]
    pub timeout: Duration,
}

impl InspectArgs {
    /// Checks the options: each error says what was wrong and what was expected.
    pub fn resolve(&self) -> Result<crate::outside::inspect::Options, ArgsError> {
        let bad = |m: String| Err(ArgsError::Host(m));
        if let Some(f) = &self.filter {
            let ok = f
                .strip_prefix("label=")
                .is_some_and(|kv| !kv.is_empty() && !kv.starts_with('='));
            if !ok {
                return bad(format!(
                    "--filter {f:?}: expected label=KEY or label=KEY=VALUE"
                ));
            }
        }
        for (flag, v) in [
            ("--place-in", &self.place_in),
            ("--workspace", &self.workspace),
        ] {
            if let Some(p) = v {
                if !p.starts_with('/') {
                    return bad(format!(
                        "{flag} {p:?} is relative: expected an absolute path inside the containers"
                    ));
                }
            }
        }
        if !(1..=16).contains(&self.parallel) {
            return bad(format!(
                "--parallel {}: expected 1 to 16 containers at once",
                self.parallel
            ));
        }
        if self.timeout < Duration::from_secs(1) {
            return bad(format!(
                "--timeout {} ms: expected at least 1s per container",
                self.timeout.as_millis()
            ));
        }
        Ok(crate::outside::inspect::Options {
            engine: self.engine.map(|e| match e {
                EngineName::Docker => crate::outside::record::EngineKind::Docker,
                EngineName::Podman => crate::outside::record::EngineKind::Podman,
            }),
            out_dir: self.out_dir.clone(),
            timeout: self.timeout,
            place_in: self.place_in.clone().map(|p| {
                crate::util::path::normalize(Path::new(&p))
                    .to_string_lossy()
                    .into_owned()
            }),
            policy: self.policy.clone(),
            binary: self.binary.clone(),
            workspace: self.workspace.clone(),
            fail_on: self.fail_on.0,
            all: self.all,
            filter: self.filter.clone(),
            containers: self.containers.clone(),
            parallel: self.parallel,
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum AttestAction {
    /// Attach DSSE envelopes (written by --attest) to an image manifest, as OCI 1.1 artifacts whose subject is the image
    Push(AttestPushArgs),
    /// List the envelopes attached to an image manifest, download them, and verify each with --pubkey
    Fetch(AttestFetchArgs),
}

/// How a registry is reached.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Allow plain HTTP to a registry that is not on this machine (loopback registries may always use it); certificates are still verified over HTTPS
    #[arg(long)]
    pub insecure: bool,
    /// Deadline for the whole command, e.g. 30s, 2m
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub timeout: Duration,
}

#[derive(Debug, Clone, Args)]
pub struct AttestPushArgs {
    /// The image: [REGISTRY/]REPOSITORY[:TAG]@sha256:DIGEST (a digest: a tag can move)
    #[arg(value_name = "REF@DIGEST", value_parser = parse_reference)]
    pub reference: Reference,
    /// DSSE envelopes written by `selfprobe --attest FILE`
    #[arg(value_name = "ENVELOPE", required = true)]
    pub envelopes: Vec<PathBuf>,
    /// Wait up to DURATION for the envelopes to appear (a container beside the probe's in a Pod: --attest writes each whole, then renames it into place)
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub wait: Option<Duration>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

#[derive(Debug, Clone, Args)]
pub struct AttestFetchArgs {
    /// The image: [REGISTRY/]REPOSITORY[:TAG]@sha256:DIGEST
    #[arg(value_name = "REF@DIGEST", value_parser = parse_reference)]
    pub reference: Reference,
    /// The public key you trust: each envelope is verified as `selfprobe verify` does
    #[arg(long, value_name = "FILE")]
    pub pubkey: Option<PathBuf>,
    /// The challenge you gave the run (--nonce): each attestation must carry exactly this
    #[arg(long, value_name = "N", requires = "pubkey")]
    pub nonce: Option<String>,
    /// Write each envelope to DIR/<sha256 hex>.intoto.json
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

fn parse_reference(s: &str) -> Result<Reference, RefError> {
    Reference::parse(s)
}

// `selfprobe diff` and `selfprobe summary` (src/compare, DESIGN.md §14).

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The first report: a JSON report (--format json) or its DSSE envelope (--attest)
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second report
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Verify both envelopes against this public key first (a bare report then cannot be used)
    #[arg(long, value_name = "FILE")]
    pub pubkey: Option<PathBuf>,
    /// A policy whose [parity] allow lists the facts that may differ (keys or globs)
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Output format: the differences by axis (text), or every fact (json)
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    Text,
    Json,
    Sarif,
    Junit,
    Html,
}

#[derive(Debug, Clone, Args)]
pub struct SummaryArgs {
    /// A public key the reports and teardown statements are signed with (repeatable)
    #[arg(long, value_name = "FILE")]
    pub pubkey: Vec<PathBuf>,
    /// The expected nonces: `<name> <nonce>` lines, as an inspection's DIR/nonces
    #[arg(long, value_name = "FILE")]
    pub nonces: Option<PathBuf>,
    /// The SHA-256 (hex) of the selfprobe binary that made the reports: every attested tool.sha256 must be this
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    pub binary_sha256: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = SummaryFormat::Text)]
    pub format: SummaryFormat,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Reports, envelopes, teardown statements, or directories of them (such as inspect's --out-dir)
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum CanaryAction {
    /// Write a clearly named canary into each writable persistent location
    /// (host mounts and volumes, not the workspace); a later `selfprobe` run in
    /// a fresh workspace that finds one reports teardown.canary-survived
    Plant(RunArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Sarif,
    Junit,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Text report: list every finding in full instead of one entry per code
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Write the report to FILE instead of standard output (with a command after `--`: instead of standard error)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The workspace directory (default: the policy's workspace.path, else the git root of the working directory)
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The policy file (TOML): the workspace's task contract
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Exit 1 when a finding at or above this severity is not excepted (critical, high, medium, low, info, none)
    #[arg(long, value_name = "SEVERITY", default_value = "high", value_parser = parse_fail_on)]
    pub fail_on: FailOn,
    /// Deadline for the whole run, e.g. 500ms, 30s, 2m
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Probe a fixture tree at DIR instead of the running system
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Really create and remove a uniquely named file in each writable host path and the root filesystem
    #[arg(long)]
    pub write_test: bool,
    /// Also try the built-in destinations (cloud metadata, public egress, Kubernetes API, engine and DevTools ports); never tried unless asked
    #[arg(long)]
    pub network_defaults: bool,
    /// Test hook: connections to HOST:PORT go to IP:PORT instead (repeatable); reported in the inventory
    #[arg(long = "net-redirect", value_name = "HOST:PORT=IP:PORT", hide = true)]
    pub net_redirect: Vec<String>,
    /// Test hook: never connect to anything but loopback, and ask only redirected nameservers
    #[arg(long = "net-loopback-only", hide = true)]
    pub net_loopback_only: bool,
    /// Write a signed attestation to FILE (`-`: standard output, after the report): a DSSE envelope carrying an in-toto statement whose predicate is the JSON report
    #[arg(long, value_name = "FILE")]
    pub attest: Option<PathBuf>,
    /// Write an OpenSSH signature (namespace selfprobe) over the exact bytes of the report file (-o) to FILE
    #[arg(long, value_name = "FILE")]
    pub sshsig: Option<PathBuf>,
    #[command(flatten)]
    pub key: KeyArgs,
    /// The verifier's challenge: recorded in the report (run.nonce) and so bound into the signatures
    #[arg(long, value_name = "N")]
    pub nonce: Option<String>,
    /// For `selfprobe inspect`, which places the binary: once the output is written, unlink the binary this run was started from (only a regular file), since the image may have no rm
    #[arg(long)]
    pub remove_self: bool,
    /// canary plant only: plant only in these locations (repeatable; `selfprobe inspect` passes the engine's volumes), never in another host path
    #[arg(long = "only-in", value_name = "PATH")]
    pub only_in: Vec<PathBuf>,
    /// The gate: after `--`, the command to start (the agent). selfprobe probes, writes the report (-o, else standard error) and --attest, then replaces itself with COMMAND (same PID) when nothing is at or above --fail-on, and otherwise does not start it
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Where the signing key comes from; without either, SELFPROBE_SIGNING_KEY,
/// else an ephemeral key.
#[derive(Debug, Clone, Args)]
pub struct KeyArgs {
    /// Ed25519 signing key file, PKCS#8 PEM or OpenSSH (default: $SELFPROBE_SIGNING_KEY, else an ephemeral key)
    #[arg(long, value_name = "FILE", conflicts_with = "sign_key_fd")]
    pub sign_key: Option<PathBuf>,
    /// Read the signing key from file descriptor N, e.g. `--sign-key-fd 0 < key`: the key never touches the workspace's disk
    #[arg(long, value_name = "N")]
    pub sign_key_fd: Option<i32>,
}

impl KeyArgs {
    pub fn source(&self) -> Option<KeySource> {
        match (&self.sign_key, self.sign_key_fd) {
            (Some(p), _) => Some(KeySource::File(p.clone())),
            (None, Some(n)) => Some(KeySource::Fd(n)),
            (None, None) => None,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The public key you trust: SPKI PEM, an OpenSSH `ssh-ed25519 …` line, or the output of `selfprobe pubkey`
    #[arg(long, value_name = "FILE")]
    pub pubkey: PathBuf,
    /// The challenge you gave the run (--nonce): the attestation must carry exactly this
    #[arg(long, value_name = "N")]
    pub nonce: Option<String>,
    /// The SHA-256 (hex) of the selfprobe binary you ran: the attested tool.sha256 must be exactly this
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    pub binary_sha256: Option<String>,
    /// An SSHSIG written by --sshsig, checked over --report
    #[arg(long, value_name = "SIG", requires = "report")]
    pub sshsig: Option<PathBuf>,
    /// The report file (-o) the SSHSIG covers
    #[arg(long, value_name = "FILE", requires = "sshsig")]
    pub report: Option<PathBuf>,
    /// The DSSE envelope written by --attest
    #[arg(value_name = "ENVELOPE", required_unless_present = "sshsig")]
    pub envelope: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct PubkeyArgs {
    #[command(flatten)]
    pub key: KeyArgs,
    /// The principal of the allowed_signers line (what `ssh-keygen -Y verify -I` names)
    #[arg(long, value_name = "NAME", default_value = "selfprobe")]
    pub principal: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailOn(pub Option<Severity>);

/// `--fail-on` is neither a severity nor `none`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailOnError(pub UnknownSeverity);

impl fmt::Display for FailOnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, or none", self.0)
    }
}

impl std::error::Error for FailOnError {}

fn parse_fail_on(s: &str) -> Result<FailOn, FailOnError> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(FailOn(None));
    }
    s.parse::<Severity>()
        .map(|s| FailOn(Some(s)))
        .map_err(FailOnError)
}

/// A SHA-256 digest in hex (64 digits), lowercased; `sha256:` may precede it.
pub fn parse_sha256(s: &str) -> Result<String, String> {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex.to_ascii_lowercase())
    } else {
        Err(format!(
            "expected a SHA-256 digest: 64 hexadecimal digits (as sha256sum prints), got {} character(s)",
            s.chars().count()
        ))
    }
}

fn parse_timeout(s: &str) -> Result<Duration, DurationError> {
    parse_duration(s)
}

/// A usage error (exit 2): options that do not fit together or name what
/// is not there. Each variant holds what was given; Display says what was
/// wrong and what was expected.
#[derive(Debug)]
pub enum ArgsError {
    Nonce(NonceError),
    /// --sshsig without -o.
    SshsigWithoutOutput,
    /// A key (described by `source`) with nothing to sign.
    NothingToSign {
        source: String,
    },
    /// Two output options name one file.
    SameFile {
        a: &'static str,
        b: &'static str,
        path: PathBuf,
    },
    RelativeRoot(PathBuf),
    RootNotDir(PathBuf),
    Policy(PolicyError),
    /// A relative --workspace, and the working directory is unreadable.
    WorkingDir {
        workspace: PathBuf,
        error: std::io::Error,
    },
    /// A relative --workspace with --root.
    RelativeWorkspace(PathBuf),
    Redirect(RedirectError),
    /// A pubkey --principal that cannot go in an allowed_signers line.
    Principal(String),
    /// An `inspect` or `teardown` option: the message says which and why.
    Host(String),
    /// Options that do not fit the gate (`-- COMMAND`).
    Gate(&'static str),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::Nonce(e) => e.fmt(f),
            ArgsError::SshsigWithoutOutput => {
                f.write_str("--sshsig signs the report file: expected -o FILE as well")
            }
            ArgsError::NothingToSign { source } => write!(
                f,
                "{source} given, but nothing to sign: expected --attest FILE and/or --sshsig FILE"
            ),
            ArgsError::SameFile { a, b, path } => write!(
                f,
                "{a} and {b} are the same file '{}': expected separate files",
                path.display()
            ),
            ArgsError::RelativeRoot(root) => write!(
                f,
                "--root '{}' is relative: expected an absolute directory",
                root.display()
            ),
            ArgsError::RootNotDir(root) => write!(
                f,
                "--root '{}' is not a directory: expected the top of a fixture tree",
                root.display()
            ),
            ArgsError::Policy(e) => write!(f, "policy error: {e}"),
            ArgsError::WorkingDir { workspace, error } => write!(
                f,
                "--workspace '{}': cannot read the working directory: {error}",
                workspace.display()
            ),
            ArgsError::RelativeWorkspace(w) => write!(
                f,
                "--workspace '{}' is relative: with --root, expected an absolute path inside the tree",
                w.display()
            ),
            ArgsError::Redirect(e) => e.fmt(f),
            ArgsError::Principal(p) => write!(
                f,
                "--principal {p:?}: expected a name of printable ASCII without spaces, commas or quotes"
            ),
            ArgsError::Host(m) => f.write_str(m),
            ArgsError::Gate(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ArgsError {}

#[derive(Debug)]
pub struct Config {
    pub format: Format,
    /// The text report lists every finding in full.
    pub verbose: bool,
    pub output: Option<PathBuf>,
    pub fail_on: Option<Severity>,
    pub timeout: Duration,
    pub root: PathBuf,
    pub workspace: Option<(PathBuf, String)>,
    pub policy: Policy,
    pub write_test: bool,
    pub net: NetOptions,
    pub attest: Option<PathBuf>,
    pub sshsig: Option<PathBuf>,
    /// None: SELFPROBE_SIGNING_KEY if it was set, else an ephemeral key.
    pub key_source: Option<KeySource>,
    pub nonce: Option<String>,
    /// `--remove-self`: unlink the running binary once the output is written.
    pub remove_self: bool,
    /// `--only-in`: the only locations a canary plant may use (empty: all).
    pub only_in: Vec<PathBuf>,
    /// The gate's command (after `--`); empty: a plain run.
    pub command: Vec<OsString>,
}

impl RunArgs {
    pub fn resolve(self) -> Result<Config, ArgsError> {
        self.check_signing(false)?;
        if !self.command.is_empty() && self.remove_self {
            return Err(ArgsError::Gate(
                "--remove-self with a command: expected one or the other (--remove-self is for `selfprobe inspect`, which places the probe; the gate's probe stays where the image put it)",
            ));
        }
        self.into_config()
    }

    /// For `canary plant`, which always signs (its canaries) and so takes a
    /// key without --attest or --sshsig.
    pub fn resolve_for_plant(self) -> Result<Config, ArgsError> {
        self.check_signing(true)?;
        if !self.command.is_empty() {
            return Err(ArgsError::Gate(
                "canary plant starts no command: expected nothing after `--` (the gate is `selfprobe [OPTIONS] -- COMMAND`)",
            ));
        }
        self.into_config()
    }

    fn into_config(self) -> Result<Config, ArgsError> {
        let root = self.root.clone();
        if !root.is_absolute() {
            return Err(ArgsError::RelativeRoot(root));
        }
        if !root.is_dir() {
            return Err(ArgsError::RootNotDir(root));
        }
        let policy = match &self.policy {
            Some(p) => Policy::load(p).map_err(ArgsError::Policy)?,
            None => Policy::default(),
        };
        let live = root == Path::new("/");
        let workspace = if let Some(w) = self.workspace {
            let w = if w.is_absolute() {
                w
            } else if live {
                std::env::current_dir()
                    .map_err(|error| ArgsError::WorkingDir {
                        workspace: w.clone(),
                        error,
                    })?
                    .join(w)
            } else {
                return Err(ArgsError::RelativeWorkspace(w));
            };
            Some((crate::util::path::normalize(&w), "--workspace".to_string()))
        } else if let Some(w) = &policy.workspace {
            Some((w.clone(), "policy".to_string()))
        } else if live {
            std::env::current_dir()
                .ok()
                .and_then(|d| git_root(&d))
                .map(|g| (g, "git root of the working directory".to_string()))
        } else {
            None
        };
        let redirects = self
            .net_redirect
            .iter()
            .map(|r| Redirect::parse(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ArgsError::Redirect)?;
        Ok(Config {
            net: NetOptions {
                defaults_flag: self.network_defaults,
                dial: Dial {
                    redirects,
                    loopback_only: self.net_loopback_only,
                },
            },
            format: self.format,
            verbose: self.verbose,
            output: self.output,
            fail_on: self.fail_on.0,
            timeout: self.timeout,
            root,
            workspace,
            policy,
            write_test: self.write_test,
            attest: self.attest,
            sshsig: self.sshsig,
            key_source: self.key.source(),
            nonce: self.nonce,
            remove_self: self.remove_self,
            only_in: self
                .only_in
                .iter()
                .map(|p| crate::util::path::normalize(p))
                .collect(),
            command: self.command,
        })
    }

    /// The signing options fit together: each error says what to add or drop.
    fn check_signing(&self, plant: bool) -> Result<(), ArgsError> {
        if let Some(n) = &self.nonce {
            attest::check_nonce(n).map_err(ArgsError::Nonce)?;
        }
        if self.sshsig.is_some() && self.output.is_none() {
            return Err(ArgsError::SshsigWithoutOutput);
        }
        if let Some(src) = self.key.source() {
            if self.attest.is_none() && self.sshsig.is_none() && !plant {
                return Err(ArgsError::NothingToSign {
                    source: src.describe(),
                });
            }
        }
        let outs = [
            ("-o", &self.output),
            ("--attest", &self.attest),
            ("--sshsig", &self.sshsig),
        ];
        for (i, (a, pa)) in outs.iter().enumerate() {
            for (b, pb) in &outs[i + 1..] {
                if let (Some(pa), Some(pb)) = (pa, pb) {
                    if normalize_rel(pa) == normalize_rel(pb) {
                        return Err(ArgsError::SameFile {
                            a,
                            b,
                            path: pa.to_path_buf(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

impl VerifyArgs {
    pub fn check(&self) -> Result<(), ArgsError> {
        if let Some(n) = &self.nonce {
            attest::check_nonce(n).map_err(ArgsError::Nonce)?;
        }
        Ok(())
    }
}

impl PubkeyArgs {
    pub fn check(&self) -> Result<(), ArgsError> {
        let p = &self.principal;
        if p.is_empty()
            || !p
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b',' && b != b'"')
        {
            return Err(ArgsError::Principal(p.clone()));
        }
        Ok(())
    }
}

/// For comparing output paths: absolute and lexically normalized.
fn normalize_rel(p: &Path) -> PathBuf {
    if p.is_absolute() {
        crate::util::path::normalize(p)
    } else {
        std::env::current_dir()
            .map(|d| crate::util::path::normalize(&d.join(p)))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

fn git_root(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes() {
        assert_eq!(
            crate::util::path::normalize(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(
            crate::util::path::normalize(Path::new("/..")),
            PathBuf::from("/")
        );
    }

    #[test]
    fn fail_on_values() {
        assert_eq!(parse_fail_on("none").unwrap(), FailOn(None));
        assert_eq!(
            parse_fail_on("Medium").unwrap(),
            FailOn(Some(Severity::Medium))
        );
        let e = parse_fail_on("bad").unwrap_err();
        assert_eq!(e, FailOnError(UnknownSeverity("bad".into())));
        assert_eq!(
            e.to_string(),
            "'bad' is not a severity: expected critical, high, medium, low or info, or none"
        );
    }

    fn run_args(args: &[&str]) -> RunArgs {
        let mut argv = vec!["selfprobe"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).unwrap().run
    }

    /// Each usage error's kind, and its words exactly as they were when
    /// the errors were strings.
    #[test]
    fn usage_errors() {
        let e = run_args(&["--root", "rel/tree"]).resolve().unwrap_err();
        assert!(
            matches!(&e, ArgsError::RelativeRoot(p) if p == Path::new("rel/tree")),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "--root 'rel/tree' is relative: expected an absolute directory"
        );
        let e = run_args(&["--sshsig", "s.sig"]).resolve().unwrap_err();
        assert!(matches!(e, ArgsError::SshsigWithoutOutput), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--sshsig signs the report file: expected -o FILE as well"
        );
        let e = run_args(&["--sign-key", "/k"]).resolve().unwrap_err();
        assert!(matches!(e, ArgsError::NothingToSign { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--sign-key /k given, but nothing to sign: expected --attest FILE and/or --sshsig FILE"
        );
        let e = run_args(&["-o", "/tmp/x/r.json", "--attest", "/tmp/x/../x/r.json"])
            .resolve()
            .unwrap_err();
        assert!(
            matches!(
                e,
                ArgsError::SameFile {
                    a: "-o",
                    b: "--attest",
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "-o and --attest are the same file '/tmp/x/r.json': expected separate files"
        );
        let e = run_args(&["--nonce", "a b"]).resolve().unwrap_err();
        assert!(
            matches!(e, ArgsError::Nonce(NonceError::NotPrintable)),
            "{e:?}"
        );
        let e = run_args(&["--net-redirect", "x:1"]).resolve().unwrap_err();
        assert!(matches!(e, ArgsError::Redirect(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--net-redirect 'x:1': expected HOST:PORT=IP:PORT"
        );
        let p = PubkeyArgs {
            key: KeyArgs {
                sign_key: None,
                sign_key_fd: None,
            },
            principal: "a,b".into(),
        };
        let e = p.check().unwrap_err();
        assert!(matches!(&e, ArgsError::Principal(p) if p == "a,b"), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--principal \"a,b\": expected a name of printable ASCII without spaces, commas or quotes"
        );
    }
}
