//! Finding codes, severities and evidence. The codes are a stable API (SARIF
//! ruleId, policy keys, docs); their text lives in probes/codes.toml so that
//! `explain`, `list-checks`, the reports and docs/checks.md read one source.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::util::digest::Sha256;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 5] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// One step less severe, for a surface that needs a further step to use.
    pub fn lowered(self) -> Severity {
        match self {
            Severity::Critical => Severity::High,
            Severity::High => Severity::Medium,
            Severity::Medium => Severity::Low,
            Severity::Low | Severity::Info => Severity::Info,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not a severity; holds it as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSeverity(pub String);

impl fmt::Display for UnknownSeverity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a severity: expected critical, high, medium, low or info",
            self.0
        )
    }
}

impl std::error::Error for UnknownSeverity {}

impl FromStr for Severity {
    type Err = UnknownSeverity;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "info" => Ok(Severity::Info),
            "low" => Ok(Severity::Low),
            "medium" => Ok(Severity::Medium),
            "high" => Ok(Severity::High),
            "critical" => Ok(Severity::Critical),
            _ => Err(UnknownSeverity(s.to_string())),
        }
    }
}

/// fail: the danger signal is present; excepted: present but covered by a
/// valid policy exception; unknown: it could not be checked (never a pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Fail,
    Excepted,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Fail => "fail",
            Status::Excepted => "excepted",
            Status::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CodeInfo {
    pub code: String,
    pub severity: Severity,
    pub phase: u8,
    pub control: String,
    pub title: String,
    pub explain: String,
    pub remediation: String,
}

#[cfg(test)]
#[derive(Debug, Deserialize)]
struct CodeCatalog {
    code: Vec<CodeInfo>,
}

/// An entry of `CODE_INFOS`, the catalog as build.rs wrote it out.
struct RawCodeInfo {
    code: &'static str,
    severity: Severity,
    phase: u8,
    control: &'static str,
    title: &'static str,
    explain: &'static str,
    remediation: &'static str,
}

// Read without serde (util/embedded.rs) by the tests, which read them both
// ways; a run takes the catalog build.rs compiled in.
#[cfg(test)]
crate::embedded_struct!(CodeInfo {
    get [code, severity, phase, control, title, explain, remediation]
});
#[cfg(test)]
crate::embedded_struct!(CodeCatalog { get [code] });
crate::embedded_enum!(Severity {
    "info" => Info,
    "low" => Low,
    "medium" => Medium,
    "high" => High,
    "critical" => Critical,
});

/// The catalog as build.rs compiled it in is the catalog as serde reads
/// probes/codes.toml, and so is the TOML reader the other catalogs use.
#[cfg(test)]
#[test]
fn codes_read_as_serde_read_them() {
    crate::util::embedded::tests::same::<CodeCatalog>("codes.toml", CODES_TOML);
    let theirs: CodeCatalog = crate::util::embedded::tests::by_serde(CODES_TOML);
    assert_eq!(format!("{:#?}", catalog()), format!("{:#?}", theirs.code));
}

#[cfg(test)]
pub const CODES_TOML: &str = include_str!("../probes/codes.toml");

pub fn catalog() -> &'static [CodeInfo] {
    static CATALOG: OnceLock<Vec<CodeInfo>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        CODE_INFOS
            .iter()
            .map(|r| CodeInfo {
                code: r.code.into(),
                severity: r.severity,
                phase: r.phase,
                control: r.control.into(),
                title: r.title.into(),
                explain: r.explain.into(),
                remediation: r.remediation.into(),
            })
            .collect()
    })
}

pub fn code_info(code: &str) -> Option<&'static CodeInfo> {
    catalog().iter().find(|c| c.code == code)
}

// The `Code` enum, generated by build.rs from probes/codes.toml.
include!(concat!(env!("OUT_DIR"), "/codes.rs"));

impl Code {
    /// The catalog's entry: the enum and the catalog come from one file in
    /// one order (build.rs), so the index is the entry.
    pub fn info(self) -> &'static CodeInfo {
        &catalog()[self as usize]
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A code that is not in probes/codes.toml is a compile error:
///
/// ```compile_fail
/// let _ = selfprobe::finding::Finding::new(
///     selfprobe::finding::Code::EngineSocketUnheardOf,
///     "/run/docker.sock",
///     "m",
/// );
/// ```
///
/// and one that is compiles:
///
/// ```
/// let f = selfprobe::finding::Finding::new(
///     selfprobe::finding::Code::EngineSocketReachable,
///     "/run/docker.sock",
///     "m",
/// );
/// assert_eq!(f.code, "engine.socket-reachable");
/// ```
#[allow(dead_code)]
fn unknown_codes_do_not_compile() {}

pub fn phase_name(phase: u8) -> &'static str {
    match phase {
        1 => "mounts",
        2 => "privilege",
        3 => "secrets & network",
        4 => "reproducibility",
        5 => "artifacts & caches",
        6 => "cleanup",
        _ => "run",
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct AppliedException {
    pub owner: String,
    pub reason: String,
    pub expires: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Finding {
    /// Stable across runs: derived from code and subject, so two reports can
    /// be diffed and scorecard entries point at findings.
    pub id: String,
    pub code: String,
    pub severity: Severity,
    pub status: Status,
    pub phase: u8,
    pub control: String,
    pub title: String,
    /// What the finding is about: a path, a capability, a namespace.
    pub subject: String,
    pub message: String,
    pub evidence: BTreeMap<String, Value>,
    pub remediation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<AppliedException>,
}

/// What a finding read back (model::read) lacks: a finding without its
/// severity counts as info, without its status as unknown (could not be
/// checked, never a pass). Only reports read back take these.
impl Default for Finding {
    fn default() -> Finding {
        Finding {
            id: String::new(),
            code: String::new(),
            severity: Severity::Info,
            status: Status::Unknown,
            phase: 0,
            control: String::new(),
            title: String::new(),
            subject: String::new(),
            message: String::new(),
            evidence: BTreeMap::new(),
            remediation: String::new(),
            exception: None,
        }
    }
}

impl Finding {
    /// Panics on a code missing from probes/codes.toml: codes are literals in
    /// our own source, and the fixture tests exercise every one of them.
    pub fn new(code: Code, subject: impl Into<String>, message: impl Into<String>) -> Finding {
        let info = code.info();
        let subject = subject.into();
        Finding {
            id: finding_id(code.as_str(), &subject),
            code: info.code.clone(),
            severity: info.severity,
            status: Status::Fail,
            phase: info.phase,
            control: info.control.clone(),
            title: info.title.clone(),
            subject,
            message: message.into(),
            evidence: BTreeMap::new(),
            remediation: info.remediation.clone(),
            exception: None,
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Finding {
        self.evidence.insert(key.to_string(), value.into());
        self
    }

    pub fn severity(mut self, s: Severity) -> Finding {
        self.severity = s;
        self
    }

    pub fn unknown(mut self) -> Finding {
        self.status = Status::Unknown;
        self
    }
}

pub fn finding_id(code: &str, subject: &str) -> String {
    let mut h = Sha256::new();
    h.update(code.as_bytes());
    h.update([0]);
    h.update(subject.as_bytes());
    let d = h.finish();
    crate::util::codec::hex(&d[..6])
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESIGN_CODES: &[&str] = &[
        "mount.host-root",
        "mount.home-directory",
        "mount.ssh-directory",
        "mount.config-directory",
        "mount.parent-repo",
        "mount.unrelated-repo",
        "mount.socket",
        "mount.unexpected",
        "mount.workspace-missing",
        "engine.socket-reachable",
        "engine.socket-present",
        "engine.tcp-endpoint",
        "priv.privileged",
        "priv.capability",
        "priv.seccomp-disabled",
        "priv.no-lsm",
        "priv.no-new-privs-unset",
        "priv.root-without-userns",
        "ns.host-pid",
        "ns.host-network",
        "ns.host-ipc",
        "ns.host-uts",
        "ns.host-cgroup",
        "device.host-block",
        "device.sensitive",
        "write.host-path",
        "write.kernel-interface",
        "write.rootfs",
        "secret.env",
        "secret.process-env",
        "secret.file",
        "secret.agent-socket",
        "secret.credential-helper",
        "secret.token-long-lived",
        "secret.token-expired",
        "net.denied-reachable",
        "net.allowed-unreachable",
        "net.metadata-reachable",
        "net.egress-open",
        "net.not-assessed",
        "net.proxy",
        "repro.image-unpinned",
        "repro.no-lockfile",
        "repro.no-tool-pins",
        "cache.shared-writable",
        "cache.credentials",
        "browser.profile",
        "browser.debug-port",
        "artifact.shell-history",
        "artifact.persistent",
        "teardown.canary-survived",
        "teardown.persistent-writable",
        "boundary.none",
        "probe.incomplete",
    ];

    const CONTROLS: &[&str] = &[
        "",
        "repo-scope",
        "engine-socket",
        "secret-boundary",
        "network-policy",
        "cache-policy",
        "browser-isolation",
        "reproducibility",
        "teardown",
    ];

    #[test]
    fn catalog_has_every_design_code_once_and_complete() {
        let cat = catalog();
        for code in DESIGN_CODES {
            assert_eq!(
                cat.iter().filter(|c| c.code == *code).count(),
                1,
                "{code} must appear exactly once in probes/codes.toml"
            );
        }
        for c in cat {
            assert!(c.phase <= 6, "{}: phase {}", c.code, c.phase);
            assert!(
                CONTROLS.contains(&c.control.as_str()),
                "{}: control {}",
                c.code,
                c.control
            );
            assert!(
                !c.title.trim().is_empty() && !c.title.ends_with('.'),
                "{}: title",
                c.code
            );
            assert!(c.explain.trim().len() > 40, "{}: explain too short", c.code);
            assert!(
                c.remediation.trim().len() > 20,
                "{}: remediation too short",
                c.code
            );
            let ok = c.code.split_once('.').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && c.code
                        .chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch == '.' || ch == '-')
            });
            assert!(ok, "{} is not a well-formed code", c.code);
        }
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(finding_id("a.b", "/x"), finding_id("a.b", "/x"));
        assert_ne!(finding_id("a.b", "/x"), finding_id("a.b", "/y"));
        assert_eq!(finding_id("a.b", "/x").len(), 12);
    }

    #[test]
    fn severity_order_and_parse() {
        assert!(Severity::Critical > Severity::High);
        assert_eq!("HIGH".parse::<Severity>().unwrap(), Severity::High);
        let e = "severe".parse::<Severity>().unwrap_err();
        assert_eq!(e, UnknownSeverity("severe".into()));
        assert_eq!(
            e.to_string(),
            "'severe' is not a severity: expected critical, high, medium, low or info"
        );
    }
}
