//! The policy file: the workspace's task contract (docs/policy.md). Every error
//! names the file, the line and what was expected, like cargo-deny's config
//! errors, because a policy is written by hand and read in CI logs.

use crate::finding::Code;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

mod raw;

use crate::catalog;
use crate::finding::{code_info, AppliedException, Finding, Severity, Status};
use crate::host::parse_duration;
use crate::target::{self, Target};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub source: Option<PathBuf>,
    /// The SHA-256 (hex) of the policy file's bytes as read: the report
    /// carries it (run.policy_sha256) so `selfprobe-host inspect` can tell the
    /// policy it placed from one the workspace substituted.
    pub sha256: Option<String>,
    pub workspace: Option<PathBuf>,
    pub allow_mounts: Vec<String>,
    /// Host paths the workspace must not see ("~/.ssh", "/srv/secrets"):
    /// the repo scope's explicit denied paths.
    pub deny_paths: Vec<String>,
    pub allow_capabilities: Vec<u32>,
    pub network: NetworkPolicy,
    pub max_token_ttl: Option<Duration>,
    /// `[mcp] approved`: the MCP servers the task may use, by name. None
    /// when the policy says nothing of MCP (every server is then reported
    /// at low); an empty list approves none.
    pub mcp_approved: Option<Vec<String>>,
    pub exceptions: Vec<Exception>,
    pub severity: BTreeMap<String, Severity>,
    /// `[parity] allow`: the fact keys (globs) in which `selfprobe-host diff`
    /// lets two workspaces differ, each with where it was written.
    pub parity_allow: Vec<ParityAllow>,
    /// `[[retain]]`: volumes kept on purpose after a workspace is removed,
    /// each with an owner and an expiry like an exception (`selfprobe
    /// teardown` reads them).
    pub retain: Vec<Retain>,
}

/// One `[[retain]]` entry.
#[derive(Debug, Clone)]
pub struct Retain {
    /// A volume name; `*` matches any run of characters.
    pub volume: String,
    pub owner: Option<String>,
    pub reason: Option<String>,
    pub expires: Option<((i64, u32, u32), String)>,
    pub line: usize,
}

impl Retain {
    /// Why the entry cannot be applied on `today`, if it cannot.
    pub fn problem(&self, today: (i64, u32, u32)) -> Option<String> {
        match (&self.owner, &self.expires) {
            (None, _) => Some("it has no owner".into()),
            (_, None) => Some("it has no expiry date".into()),
            (_, Some((d, text))) if *d < today => Some(format!("it expired on {text}")),
            _ => None,
        }
    }
}

/// One `[parity] allow` entry. Its pattern is checked against the fact
/// keys by `selfprobe-host diff` (src/compare), which knows them; the position is
/// kept for that error.
#[derive(Debug, Clone)]
pub struct ParityAllow {
    pub pattern: String,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, Default)]
pub struct NetworkPolicy {
    /// Destinations the task needs: each must be reachable.
    pub allow: Vec<DestinationRule>,
    /// Destinations that must be blocked.
    pub deny: Vec<DestinationRule>,
    /// Also try the built-in destinations of probes/destinations.toml.
    pub defaults: bool,
    /// The timeout of every destination without its own.
    pub timeout: Option<Duration>,
}

/// One [network] allow or deny entry: `"tcp://host:port"`, or
/// `{ url = "https://host/", timeout = "500ms" }` for its own timeout.
#[derive(Debug, Clone)]
pub struct DestinationRule {
    pub target: Target,
    pub timeout: Option<Duration>,
    pub line: usize,
    pub column: usize,
}

/// At most this many allow and deny entries: each is one thread and one
/// connection at the same moment.
pub const MAX_DESTINATIONS: usize = 1024;

#[derive(Debug, Clone)]
pub struct Exception {
    pub code: String,
    pub subject: Option<String>,
    pub owner: Option<String>,
    pub reason: Option<String>,
    /// (year, month, day) and the text as written.
    pub expires: Expiry,
    pub line: usize,
}

struct Source<'a> {
    file: String,
    text: &'a str,
}

impl Source<'_> {
    fn err(&self, span: Option<Range<usize>>, message: impl Into<String>) -> PolicyError {
        let (line, column) = match span {
            Some(r) => line_col(self.text, r.start),
            None => (0, 0),
        };
        PolicyError {
            file: self.file.clone(),
            line,
            column,
            message: message.into(),
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let col = offset
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

impl Policy {
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| PolicyError {
            file: file.clone(),
            line: 0,
            column: 0,
            message: format!("cannot read the policy file: {e}"),
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let (line, column) = line_col(
                &String::from_utf8_lossy(e.as_bytes()),
                e.utf8_error().valid_up_to(),
            );
            PolicyError {
                file: file.clone(),
                line,
                column,
                message: "the policy file is not UTF-8 text: expected a TOML document".into(),
            }
        })?;
        let mut p = Policy::parse(&file, &text)?;
        p.source = Some(path.to_path_buf());
        p.sha256 = Some(crate::util::digest::sha256_hex(text.as_bytes()));
        Ok(p)
    }

    pub fn parse(file: &str, text: &str) -> Result<Policy, PolicyError> {
        let src = Source {
            file: file.to_string(),
            text,
        };
        let raw = raw::read(text).map_err(|e| {
            src.err(
                e.span,
                format!("{}: expected the policy's sections ([workspace], [network], [capabilities], [secrets], [mcp], [[exception]], [severity], [parity], [[retain]])", e.message.trim_end()),
            )
        })?;
        let mut p = Policy::default();

        if let Some(ws) = raw.workspace {
            if let Some(path) = ws.path {
                if !path.get_ref().starts_with('/') {
                    return Err(src.err(Some(path.span()), format!(
                        "workspace.path '{}' is relative: expected an absolute path inside the container",
                        path.get_ref()
                    )));
                }
                p.workspace = Some(PathBuf::from(path.into_inner()));
            }
            for m in ws.allow_mounts {
                if !m.get_ref().starts_with('/') {
                    return Err(src.err(Some(m.span()), format!(
                        "allow_mounts entry '{}' is relative: expected an absolute mount point, optionally ending in /*",
                        m.get_ref()
                    )));
                }
                p.allow_mounts.push(m.into_inner());
            }
            for d in ws.deny {
                let v = d.get_ref();
                if !(v.starts_with('/') || v.starts_with("~/")) || v.len() < 2 {
                    return Err(src.err(Some(d.span()), format!(
                        "workspace.deny entry '{v}': expected a host path, absolute or starting with ~/ (any user's home)"
                    )));
                }
                p.deny_paths.push(d.into_inner());
            }
        }

        if let Some(net) = raw.network {
            for (name, list, out) in [
                ("allow", net.allow, &mut p.network.allow),
                ("deny", net.deny, &mut p.network.deny),
            ] {
                for d in list {
                    out.push(destination_rule(&src, name, &d)?);
                }
            }
            if p.network.allow.len() + p.network.deny.len() > MAX_DESTINATIONS {
                let line = p
                    .network
                    .deny
                    .last()
                    .or(p.network.allow.last())
                    .map_or(0, |d| d.line);
                return Err(PolicyError {
                    file: src.file.clone(),
                    line,
                    column: 1,
                    message: format!(
                        "network: {} destinations: expected at most {MAX_DESTINATIONS} allow and deny entries in all",
                        p.network.allow.len() + p.network.deny.len()
                    ),
                });
            }
            for d in &p.network.deny {
                if let Some(a) = p.network.allow.iter().find(|a| a.target == d.target) {
                    return Err(PolicyError {
                        file: src.file.clone(),
                        line: d.line,
                        column: 1,
                        message: format!(
                            "network.deny: {} is also in network.allow (line {}): expected each destination in one list",
                            d.target, a.line
                        ),
                    });
                }
            }
            p.network.defaults = net.defaults;
            if let Some(t) = net.timeout {
                p.network.timeout = Some(
                    parse_duration(t.get_ref())
                        .map_err(|m| src.err(Some(t.span()), format!("network.timeout: {m}")))?,
                );
            }
        }

        if let Some(caps) = raw.capabilities {
            for c in caps.allow {
                let cap = catalog::capability_by_name(c.get_ref()).ok_or_else(|| {
                    src.err(Some(c.span()), format!(
                        "capabilities.allow: '{}' is not a capability: expected a name such as CAP_CHOWN (see probes/capabilities.toml)",
                        c.get_ref()
                    ))
                })?;
                p.allow_capabilities.push(cap.number);
            }
        }

        if let Some(sec) = raw.secrets {
            if let Some(t) = sec.max_token_ttl {
                p.max_token_ttl =
                    Some(parse_duration(t.get_ref()).map_err(|m| {
                        src.err(Some(t.span()), format!("secrets.max_token_ttl: {m}"))
                    })?);
            }
        }

        if let Some(mcp) = raw.mcp {
            let mut names: Vec<String> = Vec::new();
            for n in mcp.approved.unwrap_or_default() {
                let name = n.get_ref().trim();
                if name.is_empty() || name.chars().any(|c| c.is_control()) {
                    return Err(src.err(
                        Some(n.span()),
                        "mcp.approved: an empty name: expected the name of an MCP server as its configuration gives it (the key under mcpServers, servers or [mcp_servers])",
                    ));
                }
                if names.iter().any(|x| x == name) {
                    return Err(src.err(
                        Some(n.span()),
                        format!(
                            "mcp.approved: '{name}' is listed twice: expected each server once"
                        ),
                    ));
                }
                names.push(name.to_string());
            }
            p.mcp_approved = Some(names);
        }

        for e in raw.exception {
            let line = line_col(text, e.span().start).0;
            let e = e.into_inner();
            check_code(&src, &e.code)?;
            let expires = expiry(&src, "exception", e.expires)?;
            p.exceptions.push(Exception {
                code: e.code.into_inner(),
                subject: e.subject,
                owner: e.owner.filter(|o| !o.trim().is_empty()),
                reason: e.reason,
                expires,
                line,
            });
        }

        for r in raw.retain {
            let line = line_col(text, r.span().start).0;
            let r = r.into_inner();
            let name = r.volume.get_ref().trim();
            if name.is_empty() || name.chars().any(|c| c.is_control() || c == '/') {
                return Err(src.err(
                    Some(r.volume.span()),
                    "retain volume: expected a volume's name (letters, digits, _ . - and * for any run of characters)",
                ));
            }
            let expires = expiry(&src, "retain", r.expires)?;
            p.retain.push(Retain {
                volume: name.to_string(),
                owner: r.owner.filter(|o| !o.trim().is_empty()),
                reason: r.reason,
                expires,
                line,
            });
        }

        for (code, sev) in raw.severity {
            check_code(&src, &code)?;
            let s: Severity = sev.get_ref().parse().map_err(|m| {
                src.err(
                    Some(sev.span()),
                    format!("severity of {}: {m}", code.get_ref()),
                )
            })?;
            p.severity.insert(code.into_inner(), s);
        }

        for a in raw.parity.map(|x| x.allow).unwrap_or_default() {
            let (line, column) = line_col(text, a.span().start);
            if a.get_ref().trim().is_empty() {
                return Err(src.err(
                    Some(a.span()),
                    "parity.allow: an empty pattern: expected a fact key such as \"kernel.release\" or a glob such as \"capabilities.*\"",
                ));
            }
            p.parity_allow.push(ParityAllow {
                pattern: a.into_inner(),
                line,
                column,
            });
        }
        Ok(p)
    }

    /// Applies severity overrides and exceptions. Returns the findings the
    /// policy itself raises: an exception without an owner or an expiry, or
    /// past its expiry, is not applied and is reported.
    pub fn apply(&self, findings: &mut [Finding], today: (i64, u32, u32)) -> Vec<Finding> {
        for f in findings.iter_mut() {
            if let Some(s) = self.severity.get(&f.code) {
                f.severity = *s;
            }
        }
        let mut raised = Vec::new();
        let file = self
            .source
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "policy".into());
        for ex in &self.exceptions {
            let problem = match (&ex.owner, &ex.expires) {
                (None, _) => Some("it has no owner".to_string()),
                (_, None) => Some("it has no expiry date".to_string()),
                (_, Some((d, text))) if *d < today => Some(format!("it expired on {text}")),
                _ => None,
            };
            let subject = format!("{file}:{}", ex.line);
            if let Some(problem) = problem {
                let mut f = Finding::new(
                    Code::PolicyExceptionInvalid,
                    subject.clone(),
                    format!(
                        "the exception for {} at {subject} is not applied: {problem}",
                        ex.code
                    ),
                )
                .with("code", ex.code.clone())
                .with("problem", problem);
                if let Some(s) = &ex.subject {
                    f = f.with("exception_subject", s.clone());
                }
                if let Some(o) = &ex.owner {
                    f = f.with("owner", o.clone());
                }
                if let Some(sev) = self.severity.get("policy.exception-invalid") {
                    f.severity = *sev;
                }
                raised.push(f);
                continue;
            }
            for f in findings.iter_mut() {
                let subject_ok = ex.subject.as_deref().is_none_or(|s| {
                    crate::util::glob::matches_path(s, &f.subject) || s == f.subject
                });
                if f.code == ex.code && subject_ok && f.status != Status::Excepted {
                    f.status = Status::Excepted;
                    f.exception = Some(AppliedException {
                        owner: ex.owner.clone().unwrap_or_default(),
                        reason: ex.reason.clone().unwrap_or_default(),
                        expires: ex.expires.as_ref().map(|e| e.1.clone()).unwrap_or_default(),
                    });
                }
            }
        }
        raised
    }

    /// The `[[retain]]` entry that names `volume`, if any (the first).
    pub fn retained(&self, volume: &str) -> Option<&Retain> {
        self.retain
            .iter()
            .find(|r| crate::util::glob::Glob::new(&r.volume).matches(volume.as_bytes()))
    }

    /// Whether a mount point is covered by `workspace.allow_mounts`: an exact
    /// entry, or an entry ending in `/*` for everything below a directory.
    pub fn mount_allowed(&self, mount_point: &str) -> bool {
        self.allow_mounts
            .iter()
            .any(|a| match a.strip_suffix("/*") {
                Some(dir) => mount_point.starts_with(&format!("{dir}/")),
                None => a.trim_end_matches('/') == mount_point.trim_end_matches('/'),
            })
    }
}

fn check_code(src: &Source, code: &Spanned<String>) -> Result<(), PolicyError> {
    if code_info(code.get_ref()).is_none() {
        return Err(src.err(
            Some(code.span()),
            format!(
                "'{}' is not a finding code: expected one listed by `selfprobe list-checks`",
                code.get_ref()
            ),
        ));
    }
    Ok(())
}

fn destination_rule(
    src: &Source,
    list: &str,
    d: &raw::Value,
) -> Result<DestinationRule, PolicyError> {
    let span = Some(d.span());
    let (line, column) = line_col(src.text, d.span().start);
    let shape = || {
        src.err(
            span.clone(),
            format!(
                "network.{list}: expected a destination string such as \"tcp://host:port\", or {{ url = \"https://host/\", timeout = \"500ms\" }}"
            ),
        )
    };
    let (url, timeout) = match d.get_ref() {
        toml::Value::String(s) => (s.to_string(), None),
        toml::Value::Table(t) => {
            if let Some(k) = t.keys().find(|k| *k != "url" && *k != "timeout") {
                return Err(src.err(
                    span,
                    format!("network.{list}: unknown key '{k}' in a destination: expected url and timeout"),
                ));
            }
            let url = match t.get("url") {
                Some(toml::Value::String(s)) => s.to_string(),
                _ => return Err(shape()),
            };
            let timeout = match t.get("timeout") {
                None => None,
                Some(toml::Value::String(s)) => Some(parse_duration(s).map_err(|m| {
                    src.err(span.clone(), format!("network.{list}: timeout of {url}: {m}"))
                })?),
                Some(_) => {
                    return Err(src.err(
                        span,
                        format!("network.{list}: timeout of {url}: expected a string such as \"500ms\" or \"2s\""),
                    ))
                }
            };
            (url, timeout)
        }
        _ => return Err(shape()),
    };
    let target = target::parse(&url).map_err(|m| src.err(span, format!("network.{list}: {m}")))?;
    Ok(DestinationRule {
        target,
        timeout,
        line,
        column,
    })
}

/// An `expires` date of an exception or a retention, with its text.
type Expiry = Option<((i64, u32, u32), String)>;

fn expiry(src: &Source, what: &str, x: Option<Spanned<String>>) -> Result<Expiry, PolicyError> {
    let Some(x) = x else {
        return Ok(None);
    };
    let date = parse_date(x.get_ref()).ok_or_else(|| {
        src.err(
            Some(x.span()),
            format!(
                "{what} expires '{}' is not a date: expected YYYY-MM-DD",
                x.get_ref()
            ),
        )
    })?;
    Ok(Some((date, x.into_inner())))
}

fn parse_date(s: &str) -> Option<(i64, u32, u32)> {
    let mut it = s.split('-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y, m, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const GOOD: &str = r#"
[workspace]
path = "/workspaces/app"
allow_mounts = ["/cache/pip", "/opt/tools/*"]

[network]
allow = ["tcp://127.0.0.1:8080"]
deny = ["tcp://169.254.169.254:80"]
defaults = false

[capabilities]
allow = ["CAP_CHOWN", "net_raw"]

[secrets]
max_token_ttl = "8h"

[[exception]]
code = "engine.socket-reachable"
subject = "/var/run/docker.sock"
owner = "platform@example.com"
reason = "builds need the engine"
expires = "2999-01-31"

[severity]
"repro.no-lockfile" = "medium"
"#;

    #[test]
    fn parses_a_complete_policy() {
        let p = Policy::parse("p.toml", GOOD).unwrap();
        assert_eq!(p.workspace.as_deref(), Some(Path::new("/workspaces/app")));
        assert_eq!(p.allow_capabilities, vec![0, 13]);
        assert_eq!(p.max_token_ttl, Some(Duration::from_secs(8 * 3600)));
        assert_eq!(p.exceptions[0].line, 17);
        assert_eq!(p.severity["repro.no-lockfile"], Severity::Medium);
        assert!(p.mount_allowed("/cache/pip"));
        assert!(p.mount_allowed("/opt/tools/x"));
        assert!(!p.mount_allowed("/opt/tools"));
        assert!(!p.mount_allowed("/cache"));
    }

    fn err(text: &str) -> PolicyError {
        Policy::parse("bad.toml", text).unwrap_err()
    }

    #[test]
    fn errors_name_file_line_and_expectation() {
        let e = err("[workspace]\npath = 3\n");
        assert_eq!((e.line, e.file.as_str()), (2, "bad.toml"));
        assert!(e.message.contains("string"), "{e}");

        let e = err("[workspace]\npath = \"/w\"\n\n[capabilities]\nallow = [\"CAP_FLY\"]\n");
        assert_eq!(e.line, 5);
        assert!(
            e.message.contains("CAP_FLY") && e.message.contains("expected"),
            "{e}"
        );

        let e = err("[severity]\n\"mount.nope\" = \"high\"\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("mount.nope"));

        let e = err("[severity]\n\"mount.socket\" = \"severe\"\n");
        assert_eq!(e.line, 2);

        let e = err("[[exception]]\ncode = \"mount.socket\"\nexpires = \"31/01/2027\"\n");
        assert_eq!(e.line, 3);
        assert!(e.message.contains("YYYY-MM-DD"));

        let e = err("[workspace]\npaht = \"/w\"\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("paht"), "{e}");

        let e = err("[network]\ndeny = [\"169.254.169.254\"]\n");
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("bad.toml:2:"), "{e}");

        let e = err("[workspace\n");
        assert_eq!(e.line, 1);
    }

    #[test]
    fn parity_allow_keeps_each_pattern_with_its_place_and_refuses_unknown_keys() {
        let p = Policy::parse(
            "p.toml",
            "[parity]\nallow = [\"kernel.release\",\n  \"capabilities.*\"]\n",
        )
        .unwrap();
        let got: Vec<(&str, usize, usize)> = p
            .parity_allow
            .iter()
            .map(|a| (a.pattern.as_str(), a.line, a.column))
            .collect();
        assert_eq!(got, [("kernel.release", 2, 10), ("capabilities.*", 3, 3)]);
        let e = err("[parity]\nalow = [\"kernel.release\"]\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("alow"), "{e}");
        let e = err("[parity]\nallow = [\"\"]\n");
        assert_eq!((e.line, e.column), (2, 10));
        assert!(e.message.contains("parity.allow"), "{e}");
        let e = err("[parity]\nallow = \"kernel.release\"\n");
        assert_eq!(e.line, 2);
    }

    #[test]
    fn exceptions_need_owner_and_a_future_expiry() {
        let text = r#"
[[exception]]
code = "mount.socket"
owner = "a@example.com"
expires = "2020-01-01"

[[exception]]
code = "mount.socket"
expires = "2999-01-01"

[[exception]]
code = "mount.socket"
owner = "b@example.com"

[[exception]]
code = "mount.socket"
subject = "/run/x.sock"
owner = "c@example.com"
reason = "r"
expires = "2999-01-01"
"#;
        let p = Policy::parse("p.toml", text).unwrap();
        let mut fs = vec![
            Finding::new(Code::MountSocket, "/run/x.sock", "m"),
            Finding::new(Code::MountSocket, "/run/y.sock", "m"),
        ];
        let raised = p.apply(&mut fs, (2026, 11, 29));
        assert_eq!(raised.len(), 3);
        assert!(raised.iter().all(|f| f.code == "policy.exception-invalid"));
        assert!(raised[0].message.contains("expired"));
        assert!(raised[1].message.contains("no owner"));
        assert!(raised[2].message.contains("no expiry"));
        assert_eq!(fs[0].status, Status::Excepted);
        assert_eq!(fs[0].exception.as_ref().unwrap().owner, "c@example.com");
        assert_eq!(
            fs[1].status,
            Status::Fail,
            "the other subject stays failing"
        );
    }

    #[test]
    fn network_entries_with_their_own_timeouts() {
        let p = Policy::parse(
            "p.toml",
            "[network]\ntimeout = \"2s\"\nallow = [\"https://pkgs.internal/simple/\",\n  { url = \"tcp://db:5432\", timeout = \"250ms\" }]\ndeny = [\"dns://example.com\"]\ndefaults = true\n",
        )
        .unwrap();
        let n = &p.network;
        assert_eq!(n.timeout, Some(Duration::from_secs(2)));
        assert!(n.defaults);
        assert_eq!(n.allow.len(), 2);
        assert_eq!(
            n.allow[0].target.to_string(),
            "https://pkgs.internal/simple/"
        );
        assert_eq!((n.allow[0].line, n.allow[0].column), (3, 10));
        assert_eq!(n.allow[0].timeout, None);
        assert_eq!((n.allow[1].line, n.allow[1].column), (4, 3));
        assert_eq!(n.allow[1].timeout, Some(Duration::from_millis(250)));
        assert_eq!(n.deny[0].target.to_string(), "dns://example.com");

        let e = err("[network]\ndeny = [\"tcp://a:1\", { timeout = \"1s\" }]\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("expected a destination string"), "{e}");
        let many: String = (0..=MAX_DESTINATIONS)
            .map(|i| format!("\"tcp://h:{}\",\n", i + 1))
            .collect();
        let e = err(&format!("[network]\ndeny = [\n{many}]\n"));
        assert!(e.message.contains("at most 1024"), "{e}");
    }

    #[test]
    fn mcp_approved_servers() {
        let p = Policy::parse("p", "[mcp]\napproved = [\"github\", \"docs\"]\n").unwrap();
        assert_eq!(
            p.mcp_approved.as_deref(),
            Some(&["github".to_string(), "docs".to_string()][..])
        );
        assert_eq!(Policy::parse("p", "").unwrap().mcp_approved, None);
        let p = Policy::parse("p", "[mcp]\napproved = []\n").unwrap();
        assert_eq!(p.mcp_approved, Some(Vec::new()));
        let e = err("[mcp]\napproved = [\"github\",\n  \"github\"]\n");
        assert_eq!((e.line, e.column), (3, 3), "{e}");
        assert!(e.message.contains("twice"), "{e}");
        let e = err("[mcp]\napproved = [\"\"]\n");
        assert_eq!((e.line, e.column), (2, 13), "{e}");
        let e = err("[mcp]\napproved = \"github\"\n");
        assert_eq!(e.line, 2, "{e}");
        let e = err("[mcp]\napprove = [\"github\"]\n");
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("approve"), "{e}");
    }

    #[test]
    fn retain_entries_like_exceptions() {
        let p = Policy::parse(
            "p.toml",
            "[[retain]]\nvolume = \"cache-*\"\nowner = \"platform@example.com\"\nreason = \"shared build cache\"\nexpires = \"2999-01-31\"\n\n[[retain]]\nvolume = \"old\"\nexpires = \"2001-01-01\"\n",
        )
        .unwrap();
        let r = p.retained("cache-main").unwrap();
        assert_eq!(r.owner.as_deref(), Some("platform@example.com"));
        assert_eq!(r.problem((2026, 1, 1)), None);
        assert_eq!(r.line, 1);
        assert!(p.retained("other").is_none());
        let old = p.retained("old").unwrap();
        assert_eq!(
            old.problem((2026, 1, 1)).as_deref(),
            Some("it has no owner")
        );
        let e = err("[[retain]]\nvolume = \"v\"\nowner = \"o\"\nexpires = \"soon\"\n");
        assert_eq!((e.line, e.column), (4, 11), "{e}");
        assert!(e.message.contains("not a date: expected YYYY-MM-DD"), "{e}");
        let e = err("[[retain]]\nvolume = \"v\"\nowners = \"o\"\n");
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("unknown field `owners`"), "{e}");
        let e = err("[[retain]]\nvolume = \"a/b\"\n");
        assert!(e.message.contains("expected a volume's name"), "{e}");
    }

    #[test]
    fn severity_override_applies() {
        let p = Policy::parse("p", "[severity]\n\"mount.socket\" = \"low\"\n").unwrap();
        let mut fs = vec![Finding::new(Code::MountSocket, "/s", "m")];
        p.apply(&mut fs, (2026, 1, 1));
        assert_eq!(fs[0].severity, Severity::Low);
    }
}
