//! The command line (clap derive), resolved into a Config. Every error here
//! is a usage error (exit 2) and says what was wrong and what was expected.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::attest::{self, NonceError};
use crate::finding::{Severity, UnknownSeverity};
use crate::host::{parse_duration, DurationError};
use crate::keys::KeySource;
use crate::policy::{Policy, PolicyError};
use crate::probe::network::dial::{Dial, Redirect, RedirectError};
use crate::probe::network::Options as NetOptions;

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
    /// Copy this binary to DIR/selfprobe: for an initContainer whose image has no cp (deploy/kubernetes)
    Install {
        /// An existing directory, e.g. an emptyDir the workload container mounts
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
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
    /// For `selfprobe-host inspect`, which places the binary: once the output is written, unlink the binary this run was started from (only a regular file), since the image may have no rm
    #[arg(long)]
    pub remove_self: bool,
    /// canary plant only: plant only in these locations (repeatable; `selfprobe-host inspect` passes the engine's volumes), never in another host path
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

pub fn parse_fail_on(s: &str) -> Result<FailOn, FailOnError> {
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

pub fn parse_timeout(s: &str) -> Result<Duration, DurationError> {
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
                "--remove-self with a command: expected one or the other (--remove-self is for `selfprobe-host inspect`, which places the probe; the gate's probe stays where the image put it)",
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
