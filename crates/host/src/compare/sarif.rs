//! `summary --format sarif`: one SARIF 2.1.0 run per workspace, its
//! `automationDetails.id` naming the workspace, its results the report's
//! findings rendered by the run's own SARIF code (src/report/sarif.rs). A
//! run carries only the rules its results use, so a thousand workspaces do
//! not repeat the whole catalog a thousand times. A workspace that did not
//! verify is a run whose invocation did not succeed, with the reason.
//! Every string in a run goes through the one sanitiser (`inert`).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::summary::{Fleet, Workspace};
use selfprobe::finding::code_info;
use selfprobe::report::sarif::{result_json, rule, SARIF_SCHEMA};
use selfprobe::scorecard::CONTROLS;
use selfprobe::util::sanitize;

/// Every string of a run, keys too, through the one sanitiser: the run
/// carries the workspaces' own words (names, messages, evidence), and a
/// SARIF viewer shows them as they are, bidi and zero-width characters
/// included. serde_json escapes only the C0 controls.
fn inert(v: &mut Value) {
    match v {
        Value::String(s) if s.chars().any(sanitize::is_hazard) => *s = sanitize::escape(s),
        Value::Array(a) => a.iter_mut().for_each(inert),
        Value::Object(o) => {
            if o.keys().any(|k| k.chars().any(sanitize::is_hazard)) {
                let old = std::mem::take(o);
                for (k, mut x) in old {
                    inert(&mut x);
                    o.insert(sanitize::escape(&k), x);
                }
            } else {
                o.values_mut().for_each(inert);
            }
        }
        _ => {}
    }
}

fn run(w: &Workspace) -> Value {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut rules: Vec<Value> = Vec::new();
    let mut results = Vec::with_capacity(w.findings.len());
    for f in &w.findings {
        let code = f.get("code").and_then(Value::as_str).unwrap_or("");
        let i = match index.get(code) {
            Some(i) => *i,
            None => {
                let r = match code_info(code) {
                    Some(c) => rule(c),
                    // A code of a newer release than this one: still a rule.
                    None => json!({ "id": code }),
                };
                rules.push(r);
                index.insert(code.to_string(), rules.len() - 1);
                rules.len() - 1
            }
        };
        let mut r = result_json(f, Some(i));
        if !w.verified {
            r["properties"]["verified"] = json!(false);
        }
        results.push(r);
    }
    let mut scores = serde_json::Map::new();
    for (c, cell) in CONTROLS.iter().zip(&w.controls) {
        scores.insert(c.key.into(), json!(cell.score));
    }
    let mut notes: Vec<Value> = w
        .problems
        .iter()
        .map(|p| json!({ "level": "error", "message": { "text": format!("not verified: {p}") } }))
        .collect();
    notes.extend(
        w.notes
            .iter()
            .map(|n| json!({ "level": "note", "message": { "text": n } })),
    );
    json!({
        "tool": { "driver": {
            "name": "selfprobe",
            "version": env!("CARGO_PKG_VERSION"),
            "semanticVersion": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        }},
        "automationDetails": {
            "id": format!("selfprobe/{}/{}", w.name, w.run_id.as_deref().unwrap_or("")),
            "description": { "text": format!("workspace {}", w.name) },
        },
        "invocations": [{
            "executionSuccessful": w.verified,
            "exitCode": w.exit,
            "toolExecutionNotifications": notes,
            "properties": {
                "workspace": w.name,
                "source": w.source,
                "runId": w.run_id,
                "boundary": w.boundary,
                "verified": w.verified,
                "verification": w.verification(),
                "scorecard": scores,
                "worstSeverity": w.worst,
                "teardownResult": w.teardown_result,
            },
        }],
        "results": results,
    })
}

/// The log, one run at a time: a thousand runs built as one JSON tree
/// took hundreds of MB; each run is serialised and dropped in turn (one
/// line per run, the log's own keys around them).
pub fn render(f: &Fleet) -> String {
    let mut out = format!(
        "{{\"$schema\":{},\"version\":\"2.1.0\",\"runs\":[\n",
        json!(SARIF_SCHEMA)
    );
    for (i, w) in f.workspaces.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        let mut r = run(w);
        inert(&mut r);
        out.push_str(&serde_json::to_string(&r).unwrap_or_else(|_| "{}".into()));
    }
    out.push_str("\n]}\n");
    out
}
