//! The report: the data every renderer prints, and the renderers. Only this
//! module and main.rs print.

pub mod catalog;
pub mod json;
pub mod junit;
pub mod plant;
pub mod sarif;
pub mod text;
pub mod verify;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::finding::{Finding, Severity, Status};
use crate::probe::{Facts, ProbeRecord};
use crate::scorecard::Scorecard;

pub const SCHEMA: &str = "https://selfprobe.dev/schema/report/v1";
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
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
    pub signing: Option<crate::attest::SigningInfo>,
}

#[derive(Debug, Serialize)]
pub struct ToolInfo {
    pub name: &'static str,
    pub version: &'static str,
    /// SHA-256 of the running binary, or None when /proc/self/exe is unreadable.
    pub sha256: Option<String>,
}

#[derive(Debug, Serialize)]
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
    pub fail_on: Option<Severity>,
    pub timeout_ms: u128,
    /// Probes still running when --timeout passed; the run exits 3.
    pub unfinished: Vec<&'static str>,
    pub write_test: bool,
    /// The verifier's challenge (--nonce), bound into the signatures.
    pub nonce: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub total: usize,
    pub by_severity: BTreeMap<&'static str, usize>,
    pub by_status: BTreeMap<&'static str, usize>,
    /// Findings at or above --fail-on that are not excepted.
    pub gating: usize,
    pub exit_code: i32,
}

/// Exit codes of DESIGN.md §5.
pub const EXIT_CLEAN: i32 = 0;
pub const EXIT_FINDINGS: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_PROBE_FAILED: i32 = 3;

pub fn summarize(findings: &[Finding], fail_on: Option<Severity>, probe_failed: bool) -> Summary {
    let mut by_severity = BTreeMap::new();
    let mut by_status = BTreeMap::new();
    for f in findings {
        *by_severity.entry(f.severity.as_str()).or_insert(0) += 1;
        *by_status.entry(f.status.as_str()).or_insert(0) += 1;
    }
    let gating = findings
        .iter()
        .filter(|f| f.status != Status::Excepted && fail_on.is_some_and(|t| f.severity >= t))
        .count();
    let exit_code = if probe_failed {
        EXIT_PROBE_FAILED
    } else if gating > 0 {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    };
    Summary {
        total: findings.len(),
        by_severity,
        by_status,
        gating,
        exit_code,
    }
}

/// Orders findings for reading: by phase, most severe first, then code and subject.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        let pa = if a.phase == 0 { 99 } else { a.phase };
        let pb = if b.phase == 0 { 99 } else { b.phase };
        pa.cmp(&pb)
            .then(b.severity.cmp(&a.severity))
            .then(a.code.cmp(&b.code))
            .then(a.subject.cmp(&b.subject))
    });
}
