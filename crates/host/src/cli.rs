//! The host tool's command line (clap derive). Every error here is a usage
//! error (exit 2) and says what was wrong and what was expected; the
//! parsers and the error type are the probe's (selfprobe::cli), so both
//! binaries word them the same way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use selfprobe::cli::{parse_fail_on, parse_sha256, parse_timeout, ArgsError, FailOn};

use crate::registry::reference::{RefError, Reference};

#[derive(Debug, Parser)]
#[command(
    name = "selfprobe-host",
    version,
    about = "From the host: place selfprobe in running containers and check it against the engine's record, prove teardown, compare and summarise workspaces, attach attestations to images"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// From the host: place the probe in running containers, run it, verify its signed report and check it against the engine's own record
    Inspect(InspectArgs),
    /// From the host, after the workspaces are removed: what of an inspection's containers, volumes and canaries survived, as signed statements
    Teardown(TeardownArgs),
    /// From the host: follow the engine's events, inspect each matching container when it starts and prove its teardown when it is removed
    Watch(WatchArgs),
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
    /// Reach Docker through its CLI only, also for each container's record and exec (default: those two through the Engine API on the Unix socket the CLI talks to, when it talks to one)
    #[arg(long)]
    pub engine_cli_only: bool,
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

/// `selfprobe-host watch` (crates/host/src/watch, docs/watch.md): the options of inspect
/// that apply per container, and the watch's own.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// The engine whose CLI to use (default: docker if on PATH, else podman)
    #[arg(long, value_enum)]
    pub engine: Option<EngineName>,
    /// Reach Docker through its CLI only, also for each container's record and exec (default: those two through the Engine API on the Unix socket the CLI talks to, when it talks to one)
    #[arg(long)]
    pub engine_cli_only: bool,
    /// Only containers with this label, as `events --filter` and `ps --filter` take it (label=KEY or label=KEY=VALUE); repeat to require several
    #[arg(long, value_name = "label=K=V")]
    pub filter: Vec<String>,
    /// Where the watch keeps its state, key, inspections and fleet view (made if missing; an existing one must be a watch's own or empty)
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// How many containers are inspected at once (default: the CPUs this process may use, 2 to 16)
    #[arg(long, value_name = "N", visible_alias = "parallel")]
    pub jobs: Option<usize>,
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
    /// The selfprobe probe to place (default: the selfprobe beside selfprobe-host)
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
    /// Reach Docker through its CLI only, also for the containers' records (default: those through the Engine API on the Unix socket the CLI talks to, when it talks to one)
    #[arg(long)]
    pub engine_cli_only: bool,
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
            engine_cli_only: self.engine_cli_only,
            out_dir: self.out_dir.clone(),
            timeout: self.timeout,
            place_in: self.place_in.clone().map(|p| {
                selfprobe::util::path::normalize(Path::new(&p))
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

// `selfprobe-host diff` and `selfprobe-host summary` (src/compare, DESIGN.md §14).

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
    /// The SHA-256 (hex) of the selfprobe-host binary that made the teardown statements: every one's tool.sha256 must be this
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    pub host_sha256: Option<String>,
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
