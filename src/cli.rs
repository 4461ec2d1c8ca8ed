//! The command line (clap derive), resolved into a Config. Every error here
//! is a usage error (exit 2) and says what was wrong and what was expected.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::finding::Severity;
use crate::host::parse_duration;
use crate::policy::Policy;

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
    /// Canaries that prove whether state survives teardown
    Canary {
        #[command(subcommand)]
        action: CanaryAction,
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
    /// Write the report to FILE instead of standard output
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailOn(pub Option<Severity>);

fn parse_fail_on(s: &str) -> Result<FailOn, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(FailOn(None));
    }
    s.parse::<Severity>()
        .map(|s| FailOn(Some(s)))
        .map_err(|e| format!("{e}, or none"))
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

#[derive(Debug)]
pub struct Config {
    pub format: Format,
    pub output: Option<PathBuf>,
    pub fail_on: Option<Severity>,
    pub timeout: Duration,
    pub root: PathBuf,
    pub workspace: Option<(PathBuf, String)>,
    pub policy: Policy,
    pub write_test: bool,
}

impl RunArgs {
    pub fn resolve(self) -> Result<Config, String> {
        let root = self.root.clone();
        if !root.is_absolute() {
            return Err(format!(
                "--root '{}' is relative: expected an absolute directory",
                root.display()
            ));
        }
        if !root.is_dir() {
            return Err(format!(
                "--root '{}' is not a directory: expected the top of a fixture tree",
                root.display()
            ));
        }
        let policy = match &self.policy {
            Some(p) => Policy::load(p).map_err(|e| format!("policy error: {e}"))?,
            None => Policy::default(),
        };
        let live = root == Path::new("/");
        let workspace = if let Some(w) = self.workspace {
            let w = if w.is_absolute() {
                w
            } else if live {
                std::env::current_dir()
                    .map_err(|e| {
                        format!(
                            "--workspace '{}': cannot read the working directory: {e}",
                            w.display()
                        )
                    })?
                    .join(w)
            } else {
                return Err(format!(
                    "--workspace '{}' is relative: with --root, expected an absolute path inside the tree",
                    w.display()
                ));
            };
            Some((normalize(&w), "--workspace".to_string()))
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
        Ok(Config {
            format: self.format,
            output: self.output,
            fail_on: self.fail_on.0,
            timeout: self.timeout,
            root,
            workspace,
            policy,
            write_test: self.write_test,
        })
    }
}

/// Removes `.` and `..` lexically; the workspace is compared with mount
/// points, which the kernel reports without either.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
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
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/..")), PathBuf::from("/"));
    }

    #[test]
    fn fail_on_values() {
        assert_eq!(parse_fail_on("none").unwrap(), FailOn(None));
        assert_eq!(
            parse_fail_on("Medium").unwrap(),
            FailOn(Some(Severity::Medium))
        );
        assert!(parse_fail_on("bad").is_err());
    }
}
