//! The report's data: what every renderer prints and what attest signs.
//! Renderers (src/report/) and signing (src/attest/) both import this
//! module; it imports neither, so neither depends on the other through it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::finding::{Finding, Severity, Status};
use crate::probe::{Facts, ProbeRecord};
use crate::scorecard::Scorecard;

/// The report's text type (util::text::Text), here too where the model
/// is read.
pub use crate::util::text::Text;

pub mod read;

pub const SCHEMA: &str = "https://selfprobe.dev/schema/report/v1";
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    pub schema: Text,
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub run: RunInfo,
    pub summary: Summary,
    pub scorecard: Scorecard,
    pub findings: Vec<Finding>,
    pub inventory: Facts,
    pub probes: Vec<ProbeRecord>,
    /// Set when the run signs its results (--attest, --sshsig): the key's
    /// id and public half, and whether it was ephemeral.
    pub signing: Option<SigningInfo>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolInfo {
    pub name: Text,
    pub version: Text,
    /// SHA-256 of the running binary, or None when /proc/self/exe is unreadable.
    pub sha256: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunInfo {
    pub id: String,
    pub started: String,
    pub finished: String,
    pub duration_ms: u128,
    pub duration_us: u128,
    pub root: String,
    pub workspace: Option<String>,
    pub workspace_source: Option<String>,
    pub policy: Option<String>,
    /// The SHA-256 of the policy file's bytes (None: no policy).
    pub policy_sha256: Option<String>,
    pub fail_on: Option<Severity>,
    pub timeout_ms: u128,
    /// Probes still running when --timeout passed; the run exits 3.
    pub unfinished: Vec<Text>,
    pub write_test: bool,
    /// The verifier's challenge (--nonce), bound into the signatures.
    pub nonce: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    pub total: usize,
    pub by_severity: BTreeMap<Text, usize>,
    pub by_status: BTreeMap<Text, usize>,
    /// Findings at or above --fail-on that are not excepted.
    pub gating: usize,
    pub exit_code: Exit,
}

/// The process's exit codes (docs/output.md, "Exit codes"). A signal that
/// stops a run exits 128 + its number (host::remove_on_signal); 101 is
/// Rust's code for a panic outside a probe, which no path is meant to reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(into = "i32", try_from = "i32")]
pub enum Exit {
    /// Nothing at or above --fail-on (or `verify`: every signature holds).
    Clean = 0,
    /// A finding at or above --fail-on (or `verify`: a check failed).
    Findings = 1,
    /// Usage, policy or key error: nothing was probed.
    Usage = 2,
    /// A probe failed or was cut by --timeout, or the output could not be
    /// written. Also what a report read back that records no exit code
    /// counts as (model::read): the host never takes a missing one for 0.
    #[default]
    ProbeFailed = 3,
}

impl From<Exit> for i32 {
    fn from(e: Exit) -> i32 {
        e as i32
    }
}

/// A report read back names its exit code as a number; one that is not an
/// exit code of selfprobe's does not read.
impl TryFrom<i32> for Exit {
    type Error = String;
    fn try_from(n: i32) -> Result<Exit, String> {
        match n {
            0 => Ok(Exit::Clean),
            1 => Ok(Exit::Findings),
            2 => Ok(Exit::Usage),
            3 => Ok(Exit::ProbeFailed),
            _ => Err(format!("{n} is not an exit code of selfprobe's (0 to 3)")),
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> std::process::ExitCode {
        std::process::ExitCode::from(e as u8)
    }
}

pub fn summarize(findings: &[Finding], fail_on: Option<Severity>, probe_failed: bool) -> Summary {
    let mut by_severity = BTreeMap::new();
    let mut by_status = BTreeMap::new();
    for f in findings {
        *by_severity.entry(f.severity.as_str().into()).or_insert(0) += 1;
        *by_status.entry(f.status.as_str().into()).or_insert(0) += 1;
    }
    let gating = findings
        .iter()
        .filter(|f| f.status != Status::Excepted && fail_on.is_some_and(|t| f.severity >= t))
        .count();
    let exit_code = if probe_failed {
        Exit::ProbeFailed
    } else if gating > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    };
    Summary {
        total: findings.len(),
        by_severity,
        by_status,
        gating,
        exit_code,
    }
}

/// The signing section of the report (and so of the predicate): which key
/// signed, whether it was made for this run only, and what was produced.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SigningInfo {
    pub algorithm: Text,
    /// DSSE keyid (keys::keyid).
    pub keyid: String,
    /// `ssh-ed25519 AAAA…`: with an ephemeral key this is the only place the
    /// public key is recorded.
    pub public_key: String,
    /// True when no key was given and one was generated for this run: the
    /// signature then shows the report was not changed after signing, but
    /// not who made it.
    pub ephemeral: bool,
    /// "file", "fd", "env" or "ephemeral" (never a path or the key).
    pub key_source: Text,
    /// "dsse" (--attest) and/or "sshsig" (--sshsig).
    pub formats: Vec<Text>,
}

/// Orders findings for reading: by phase, most severe first, then code and subject.
pub fn sort_findings(findings: &mut [Finding]) {
    crate::util::sort::sort_by(findings, |a, b| {
        let pa = if a.phase == 0 { 99 } else { a.phase };
        let pb = if b.phase == 0 { 99 } else { b.phase };
        pa.cmp(&pb)
            .then(b.severity.cmp(&a.severity))
            .then(a.code.cmp(&b.code))
            .then(a.subject.cmp(&b.subject))
    });
}
