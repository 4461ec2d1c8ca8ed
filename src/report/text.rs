//! The text report: grouped by phase, then the scorecard. Paths, process names
//! and engine answers are attacker-controlled, so every such string passes
//! through `sanitize` before it reaches a terminal (as fd does).

use std::fmt::Write;

use crate::finding::{phase_name, Finding, Severity, Status};
use crate::model::Report;

/// Subjects named in a grouped entry before "and N more".
const SHOWN_SUBJECTS: usize = 3;
/// A subject in a grouped entry is cut to this many characters: a deep path
/// must not push the others off the line.
const SUBJECT_WIDTH: usize = 48;

/// The text report's one sanitiser (src/util/sanitize.rs).
pub fn sanitize(s: &str) -> String {
    crate::util::sanitize::escape(s)
}

struct Style {
    on: bool,
}

impl Style {
    fn sev(&self, s: Severity) -> String {
        let label = format!("{:<8}", s.as_str().to_uppercase());
        if !self.on {
            return label;
        }
        let code = match s {
            Severity::Critical => "1;31",
            Severity::High => "31",
            Severity::Medium => "33",
            Severity::Low => "36",
            Severity::Info => "2",
        };
        format!("\x1b[{code}m{label}\x1b[0m")
    }
    fn bold(&self, s: &str) -> String {
        if self.on {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

/// `verbose`: every finding in full; otherwise the findings of one code
/// (and status) are one entry with their count and a few subjects, so a
/// privileged container's 60 findings read in one screen.
pub fn render(r: &Report, color: bool, verbose: bool) -> String {
    let st = Style { on: color };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} {}  run {}  {}  ({} ms)",
        st.bold("selfprobe"),
        r.tool.version,
        r.run.id,
        r.run.started,
        r.run.duration_ms
    );
    let _ = writeln!(
        o,
        "root {}  workspace {}  policy {}  fail-on {}",
        sanitize(&r.run.root),
        match (&r.run.workspace, &r.run.workspace_source) {
            (Some(w), Some(s)) => format!("{} ({s})", sanitize(w)),
            _ => "none".into(),
        },
        r.run
            .policy
            .as_deref()
            .map(sanitize)
            .unwrap_or_else(|| "none".into()),
        r.run.fail_on.map(|s| s.as_str()).unwrap_or("none"),
    );
    if let Some(sg) = &r.signing {
        let _ = writeln!(
            o,
            "signed ({}) keyid {}  {}",
            sg.formats.join(", "),
            sg.keyid,
            if sg.ephemeral {
                "ephemeral key: shows integrity, not who signed".to_string()
            } else {
                format!("key from {}", sg.key_source)
            }
        );
    }
    if let Some(n) = &r.run.nonce {
        let _ = writeln!(o, "nonce {}", sanitize(n));
    }
    // The boundary first: every finding below is about it.
    if let Some(b) = &r.inventory.boundary {
        let word = |v: serde_json::Value| v.as_str().unwrap_or("unknown").to_string();
        let _ = writeln!(
            o,
            "boundary {}  engine {}  runtime {}  rootless {}  virtualized {}",
            word(serde_json::to_value(b.kind).unwrap_or_default()),
            word(serde_json::to_value(b.engine).unwrap_or_default()),
            word(serde_json::to_value(b.runtime).unwrap_or_default()),
            b.rootless
                .map(|r| r.to_string())
                .unwrap_or_else(|| "unknown".into()),
            word(serde_json::to_value(b.virtualized).unwrap_or_default()),
        );
    }
    if !r.run.unfinished.is_empty() {
        let _ = writeln!(
            o,
            "{}",
            st.bold(&format!(
                "deadline: --timeout {} ms passed before these probes finished: {} (exit 3)",
                r.run.timeout_ms,
                r.run.unfinished.join(", ")
            ))
        );
    }

    if r.findings.is_empty() {
        let _ = writeln!(o, "\nNo findings.");
    }
    let mut phases: Vec<u8> = r.findings.iter().map(|f| f.phase).collect();
    phases.dedup();
    for p in phases {
        let title = if p == 0 {
            "Run".to_string()
        } else {
            format!("Phase {p}: {}", phase_name(p))
        };
        let _ = writeln!(o, "\n{}", st.bold(&title));
        let mine: Vec<&Finding> = r.findings.iter().filter(|f| f.phase == p).collect();
        if verbose {
            every_finding(&mut o, &mine, &st);
        } else {
            grouped(&mut o, &mine, &st);
        }
    }
    destinations(&mut o, r, &st);
    mcp_servers(&mut o, r, &st);

    let _ = writeln!(o, "\n{}", st.bold("Scorecard"));
    for c in &r.scorecard.controls {
        let score = c
            .score
            .map(|s| format!("{s}/2"))
            .unwrap_or_else(|| "n/a".into());
        let detail = if c.assessed && !c.findings.is_empty() {
            let shown: Vec<&str> = c.findings.iter().take(4).map(String::as_str).collect();
            let more = c.findings.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(", +{more} more")
            } else {
                String::new()
            };
            format!("{} ({}{more})", c.reason, shown.join(", "))
        } else {
            c.reason.clone()
        };
        let _ = writeln!(o, "  {:<18} {:>4}  {}", c.name, score, sanitize(&detail));
    }
    let _ = writeln!(
        o,
        "  {:<18} {:>4}  {} of {} controls assessed; not assessed counts 0",
        "Total",
        format!("{}/{}", r.scorecard.total, r.scorecard.max),
        r.scorecard.assessed,
        r.scorecard.controls.len()
    );

    let counts: Vec<String> = Severity::ALL
        .iter()
        .filter_map(|s| {
            r.summary
                .by_severity
                .get(s.as_str())
                .map(|n| format!("{n} {s}"))
        })
        .collect();
    let _ = writeln!(
        o,
        "\n{} finding(s){}; {} at or above {} -> exit {}",
        r.summary.total,
        if counts.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts.join(", "))
        },
        r.summary.gating,
        r.run.fail_on.map(|s| s.as_str()).unwrap_or("none"),
        i32::from(r.summary.exit_code)
    );
    o
}

fn status_tag(s: Status) -> &'static str {
    match s {
        Status::Fail => "",
        Status::Excepted => " [excepted]",
        Status::Unknown => " [unknown]",
    }
}

/// `--verbose`: each finding with its message; the fix once per code.
fn every_finding(o: &mut String, findings: &[&Finding], st: &Style) {
    let mut fixed: Vec<&str> = Vec::new();
    for f in findings {
        let _ = writeln!(
            o,
            "  {}  {}  {}{}",
            st.sev(f.severity),
            f.code,
            sanitize(&f.subject),
            status_tag(f.status)
        );
        let _ = writeln!(o, "            {}", sanitize(&f.message));
        if let Some(ex) = &f.exception {
            let _ = writeln!(
                o,
                "            exception: owner {}, expires {}: {}",
                sanitize(&ex.owner),
                sanitize(&ex.expires),
                sanitize(&ex.reason)
            );
        } else if f.status == Status::Fail && !fixed.contains(&f.code.as_str()) {
            fixed.push(&f.code);
            let _ = writeln!(o, "            fix: {}", sanitize(&f.remediation));
        }
    }
}

fn cut(s: &str, n: usize) -> String {
    let s = sanitize(s);
    if s.chars().count() <= n {
        return s;
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// One entry per code, status and title, in the order of their most
/// severe finding: the count with its severities, a few subjects, the fix
/// once. The title is the headline, so findings of one code that say
/// different things (a capability held, one only in the bounding set) are
/// not headed by one of them.
fn grouped(o: &mut String, findings: &[&Finding], st: &Style) {
    let mut groups: Vec<Vec<&Finding>> = Vec::new();
    for f in findings {
        match groups
            .iter_mut()
            .find(|g| g[0].code == f.code && g[0].status == f.status && g[0].title == f.title)
        {
            Some(g) => g.push(f),
            None => groups.push(vec![f]),
        }
    }
    let mut fixed: Vec<&str> = Vec::new();
    for g in groups {
        let first = g[0];
        let top = g.iter().map(|f| f.severity).max().unwrap_or(first.severity);
        if g.len() == 1 {
            let _ = writeln!(
                o,
                "  {}  {}  {}{}",
                st.sev(top),
                first.code,
                sanitize(&first.subject),
                status_tag(first.status)
            );
            let _ = writeln!(o, "            {}", sanitize(&first.message));
        } else {
            let by_sev: Vec<String> = Severity::ALL
                .iter()
                .filter_map(|s| {
                    let n = g.iter().filter(|f| f.severity == *s).count();
                    (n > 0).then(|| format!("{n} {s}"))
                })
                .collect();
            let counts = if by_sev.len() > 1 {
                format!("{}: {}", g.len(), by_sev.join(", "))
            } else {
                g.len().to_string()
            };
            let _ = writeln!(
                o,
                "  {}  {} ({counts}){}",
                st.sev(top),
                first.code,
                status_tag(first.status)
            );
            let shown: Vec<String> = g
                .iter()
                .take(SHOWN_SUBJECTS)
                .map(|f| cut(&f.subject, SUBJECT_WIDTH))
                .collect();
            let more = g.len() - shown.len();
            let _ = writeln!(
                o,
                "            {}: {}{}",
                sanitize(&first.title),
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more (--verbose lists them)")
                } else {
                    String::new()
                }
            );
        }
        let excepted: Vec<_> = g.iter().filter_map(|f| f.exception.as_ref()).collect();
        if let Some(ex) = excepted.first() {
            let others = excepted.len() - 1;
            let _ = writeln!(
                o,
                "            exception: owner {}, expires {}: {}{}",
                sanitize(&ex.owner),
                sanitize(&ex.expires),
                sanitize(&ex.reason),
                if others > 0 {
                    format!(" (+{others} more exception(s))")
                } else {
                    String::new()
                }
            );
        } else if first.status == Status::Fail && !fixed.contains(&first.code.as_str()) {
            fixed.push(&first.code);
            let _ = writeln!(o, "            fix: {}", sanitize(&first.remediation));
        }
    }
}

/// The network destinations tried, one line each, when any were.
fn destinations(o: &mut String, r: &Report, st: &Style) {
    let Some(n) = r.inventory.network.as_ref().filter(|n| n.assessed) else {
        return;
    };
    let mut notes = Vec::new();
    if let Some(t) = &n.trust_store {
        notes.push(format!("trust store: {} ({})", t.kind, sanitize(&t.source)));
    }
    if !n.redirects.is_empty() || n.loopback_only {
        notes.push(format!(
            "TEST HOOKS: {} redirect(s){}",
            n.redirects.len(),
            if n.loopback_only {
                ", loopback only"
            } else {
                ""
            }
        ));
    }
    let _ = writeln!(
        o,
        "\n{} ({} tried in {:.0} ms{}{})",
        st.bold("Network destinations"),
        n.destinations.len(),
        n.duration_ms,
        if notes.is_empty() { "" } else { "; " },
        notes.join("; ")
    );
    for d in &n.destinations {
        let list = if d.list == crate::probe::network::List::Allow {
            "allow"
        } else {
            "deny"
        };
        let contract = match d.contract {
            crate::probe::network::Verdict::Holds => "holds",
            crate::probe::network::Verdict::Violated => "VIOLATED",
            crate::probe::network::Verdict::Unknown => "unknown",
        };
        let _ = writeln!(
            o,
            "  {list:<5} {:<13} {contract:<8} {:>8.1} ms  {}  [{}]",
            d.outcome.as_str(),
            d.latency_ms,
            sanitize(&d.destination),
            sanitize(&d.rule)
        );
    }
}

/// The MCP servers the agents' configurations name, one line each: what
/// runs or is contacted, and the names (never values) of what it is given.
fn mcp_servers(o: &mut String, r: &Report, st: &Style) {
    let Some(m) = r.inventory.secrets.as_ref().map(|s| &s.mcp) else {
        return;
    };
    if m.servers.is_empty() && m.configs.iter().all(|c| c.error.is_none()) {
        return;
    }
    let approved = r
        .findings
        .iter()
        .filter(|f| f.code == "mcp.unapproved-server")
        .map(|f| f.subject.as_str())
        .collect::<Vec<_>>();
    let _ = writeln!(
        o,
        "\n{} ({} in {} configuration file(s))",
        st.bold("MCP servers"),
        m.servers.len(),
        m.configs.len()
    );
    for s in &m.servers {
        let subject = crate::probe::secrets::mcp::subject(s);
        let state = if approved.contains(&subject.as_str()) {
            "unapproved"
        } else {
            "approved"
        };
        let what = match (&s.command, &s.url) {
            (Some(c), _) => {
                let mut line = c.clone();
                for a in &s.args {
                    line.push(' ');
                    line.push_str(a);
                }
                line
            }
            (None, Some(u)) => u.clone(),
            (None, None) => "-".into(),
        };
        let mut given = Vec::new();
        if !s.env.is_empty() {
            given.push(format!("env {}", s.env.join(",")));
        }
        if !s.headers.is_empty() {
            given.push(format!("headers {}", s.headers.join(",")));
        }
        if !s.secrets.is_empty() {
            given.push(format!("{} LITERAL SECRET(S)", s.secrets.len()));
        }
        let _ = writeln!(
            o,
            "  {:<20} {:<10} {:<6} {}{}  [{}{}]",
            sanitize(&s.name),
            state,
            sanitize(&s.transport),
            sanitize(&what),
            if given.is_empty() {
                String::new()
            } else {
                format!("  ({})", sanitize(&given.join("; ")))
            },
            sanitize(&s.config),
            s.project
                .as_ref()
                .map(|p| format!(" project {}", sanitize(p)))
                .unwrap_or_default()
        );
    }
    for c in m.configs.iter().filter(|c| c.error.is_some()) {
        let _ = writeln!(
            o,
            "  {}: {}",
            sanitize(&c.path),
            sanitize(c.error.as_deref().unwrap_or(""))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_terminal_controls() {
        assert_eq!(sanitize("/mnt/a\nb"), "/mnt/a\\u{a}b");
        assert_eq!(sanitize("\x1b[2J"), "\\u{1b}[2J");
        assert_eq!(sanitize("x\u{202E}y"), "x\\u{202e}y");
        assert_eq!(sanitize("\u{9b}"), "\\u{9b}");
        assert_eq!(sanitize("ok /päth"), "ok /päth");
    }
}
