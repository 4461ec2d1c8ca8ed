//! SARIF 2.1.0 for code scanning: one rule per finding code (from
//! probes/codes.toml, so ruleIndex is stable), one result per finding.

use serde_json::{json, Value};

use crate::finding::{catalog, AppliedException, Finding, Severity, Status};
use crate::json_at;
use crate::model::Report;

pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

pub fn level(s: Severity) -> &'static str {
    match s {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

/// GitHub code scanning ranks security results by this 0.0-10.0 score.
pub fn security_severity(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "9.5",
        Severity::High => "8.0",
        Severity::Medium => "5.5",
        Severity::Low => "3.0",
        Severity::Info => "1.0",
    }
}

/// An absolute path as a file URI; everything outside RFC 3986's unreserved
/// set (and '/') is percent-encoded, so hostile names stay valid URIs.
pub fn file_uri(path: &str) -> String {
    let mut out = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn rule_name(code: &str) -> String {
    // SARIF rule names are PascalCase identifiers by convention.
    code.split(['.', '-'])
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn result(f: &Finding) -> Value {
    let rule_index = catalog().iter().position(|c| c.code == f.code);
    result_json(&serde_json::to_value(f).unwrap_or_default(), rule_index)
}

/// One SARIF result from a finding in its JSON form (the report's
/// `findings[]`), so `selfprobe-host summary` renders findings read back from
/// reports exactly as the run does. `rule_index` is the rule's position in
/// the run's `rules`.
pub fn result_json(f: &Value, rule_index: Option<usize>) -> Value {
    // A field of the finding, named through the model (json_at!): a field
    // renamed in the model does not compile here rather than turn SARIF's
    // results empty.
    macro_rules! at {
        ($f:ident) => {
            json_at!(f, Finding => $f)
        };
    }
    fn text(v: Option<&Value>) -> &str {
        v.and_then(Value::as_str).unwrap_or("")
    }
    fn given(v: Option<&Value>) -> Value {
        v.cloned().unwrap_or(Value::Null)
    }
    let severity: Severity = text(at!(severity)).parse().unwrap_or(Severity::Info);
    let mut r = json!({
        "ruleId": text(at!(code)),
        "level": level(severity),
        "message": { "text": text(at!(message)) },
        "partialFingerprints": { "selfprobeFindingId/v1": text(at!(id)) },
        "properties": {
            "subject": text(at!(subject)),
            "severity": given(at!(severity)),
            "status": given(at!(status)),
            "phase": given(at!(phase)),
            "control": given(at!(control)),
            "evidence": at!(evidence).cloned().unwrap_or_else(|| json!({})),
            "security-severity": security_severity(severity),
        },
    });
    if let Some(i) = rule_index {
        r["ruleIndex"] = json!(i);
    }
    if text(at!(status)) == Status::Unknown.as_str() {
        // Could not check: a review item, never a pass; SARIF requires
        // level "none" for any kind but "fail".
        r["kind"] = json!("review");
        r["level"] = json!("none");
    }
    let subject = text(at!(subject));
    // `path` is a key of the evidence map, not a field of the model.
    let path = at!(evidence)
        .and_then(|e| e.get("path"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| subject.starts_with('/').then(|| subject.to_string()));
    if let Some(p) = path {
        r["locations"] = json!([{
            "physicalLocation": { "artifactLocation": { "uri": file_uri(&p) } },
            "message": { "text": p },
        }]);
    }
    if let Some(ex) = at!(exception).filter(|e| e.is_object()) {
        r["suppressions"] = json!([{
            "kind": "external",
            "status": "accepted",
            "justification": format!(
                "owner {}, expires {}: {}",
                text(json_at!(ex, AppliedException => owner)),
                text(json_at!(ex, AppliedException => expires)),
                text(json_at!(ex, AppliedException => reason))
            ),
        }]);
    }
    r
}

/// The SARIF rule of a finding code.
pub fn rule(c: &crate::finding::CodeInfo) -> Value {
    json!({
        "id": c.code,
        "name": rule_name(&c.code),
        "shortDescription": { "text": c.title },
        "fullDescription": { "text": c.explain },
        "help": { "text": format!("{}\n\nRemediation: {}", c.explain, c.remediation) },
        "defaultConfiguration": { "level": level(c.severity) },
        "properties": {
            "security-severity": security_severity(c.severity),
            "tags": ["security", format!("phase-{}", c.phase), c.control.clone()],
            "phase": c.phase,
            "control": c.control,
        },
    })
}

pub fn render(report: &Report) -> String {
    let rules: Vec<Value> = catalog().iter().map(rule).collect();
    let notifications: Vec<Value> = report
        .probes
        .iter()
        .filter(|p| p.status != crate::probe::ProbeStatus::Ok)
        .map(|p| {
            json!({
                "level": "warning",
                "message": { "text": format!("probe {} {}: {}", p.name, p.status, p.reason.clone().unwrap_or_default()) },
            })
        })
        .collect();
    let doc = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "selfprobe",
                "version": report.tool.version,
                "semanticVersion": report.tool.version,
                "rules": rules,
            }},
            "automationDetails": { "id": format!("selfprobe/{}", report.run.id) },
            "invocations": [{
                "executionSuccessful": report.summary.exit_code != crate::model::Exit::ProbeFailed,
                "exitCode": report.summary.exit_code,
                "startTimeUtc": report.run.started,
                "endTimeUtc": report.run.finished,
                "toolExecutionNotifications": notifications,
                "properties": { "scorecard": report.scorecard, "binarySha256": report.tool.sha256 },
            }],
            "results": report.findings.iter().map(result).collect::<Vec<_>>(),
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_names() {
        assert_eq!(
            file_uri("/var/run/docker.sock"),
            "file:///var/run/docker.sock"
        );
        assert_eq!(file_uri("/mnt/a b\n"), "file:///mnt/a%20b%0A");
        assert_eq!(
            rule_name("engine.socket-reachable"),
            "EngineSocketReachable"
        );
    }
}
