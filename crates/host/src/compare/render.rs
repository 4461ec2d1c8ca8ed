//! `selfprobe-host summary` as text (one line per workspace) and JSON. Every
//! string from an input is untrusted (workspace names are file names, and
//! the reports are the workspaces' own words): the text goes through the
//! one sanitiser.

use serde_json::{json, Value};

use super::summary::{Fleet, Workspace};
use selfprobe::scorecard::CONTROLS;
use selfprobe::util::sanitize;

/// A control's column heading.
pub fn short(key: &str) -> &'static str {
    match key {
        "repo-scope" => "repo",
        "engine-socket" => "engine",
        "secret-boundary" => "secrets",
        "network-policy" => "network",
        "cache-policy" => "cache",
        "browser-isolation" => "browser",
        "reproducibility" => "repro",
        "teardown" => "teardown",
        _ => "?",
    }
}

/// At most `n` characters of `s` (sanitised), with … when cut.
fn fit(s: &str, n: usize) -> String {
    let e = sanitize::escape(s);
    if e.chars().count() <= n {
        e
    } else {
        let mut c: String = e.chars().take(n.saturating_sub(1)).collect();
        c.push('…');
        c
    }
}

fn pad(s: &str, n: usize) -> String {
    let len = s.chars().count();
    format!("{s}{}", " ".repeat(n.saturating_sub(len)))
}

pub fn score_text(s: Option<u8>) -> String {
    s.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
}

pub fn text(f: &Fleet) -> String {
    let n = f.workspaces.len();
    let v = f.verified();
    let mut out = format!(
        "selfprobe-host summary: {n} workspace(s), {v} verified, {} not verified (exit {})\n\n",
        n - v,
        f.exit as i32
    );
    let names: Vec<String> = f.workspaces.iter().map(|w| fit(&w.name, 40)).collect();
    let bounds: Vec<String> = f
        .workspaces
        .iter()
        .map(|w| fit(w.boundary.as_deref().unwrap_or("-"), 40))
        .collect();
    let nw = names
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    let bw = bounds
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let mut head = format!("{}  {}", pad("WORKSPACE", nw), pad("BOUNDARY", bw));
    for c in CONTROLS {
        head.push_str(&format!("  {}", short(c.key)));
    }
    head.push_str("  WORST     TEARDOWN  VERIFICATION\n");
    out.push_str(&head);
    for (i, w) in f.workspaces.iter().enumerate() {
        let mut line = format!("{}  {}", pad(&names[i], nw), pad(&bounds[i], bw));
        for (c, cell) in CONTROLS.iter().zip(&w.controls) {
            line.push_str(&format!(
                "  {}",
                pad(&score_text(cell.score), short(c.key).len())
            ));
        }
        line.push_str(&format!(
            "  {}  {}  {}\n",
            pad(
                match w.worst {
                    Some(s) => s.as_str(),
                    None if w.has_content => "none",
                    None => "unknown",
                },
                8
            ),
            pad(&fit(w.teardown_result.as_deref().unwrap_or("-"), 8), 8),
            fit(&w.verification(), 400)
        ));
        out.push_str(&line);
    }
    out.push_str(
        "\nscores: 0 the danger signal is present, 1 partly controlled, 2 the recommended boundary holds, - not assessed or not known\n",
    );
    let mut notes: Vec<String> = Vec::new();
    for w in &f.workspaces {
        for n in &w.notes {
            notes.push(format!("{}: {n}", w.name));
        }
    }
    notes.extend(f.notes.iter().cloned());
    // One line for the note every row without --nonces shares.
    selfprobe::util::sort::sort(&mut notes);
    notes.dedup();
    if !notes.is_empty() {
        out.push_str("\nnotes:\n");
        for n in notes.iter().take(50) {
            out.push_str(&format!("  {}\n", fit(n, 400)));
        }
        if notes.len() > 50 {
            out.push_str(&format!(
                "  … and {} more (--format json lists them)\n",
                notes.len() - 50
            ));
        }
    }
    if !f.errors.is_empty() {
        out.push_str("\nerrors:\n");
        for e in &f.errors {
            out.push_str(&format!("  {}\n", fit(e, 400)));
        }
    }
    out
}

fn workspace_json(w: &Workspace) -> Value {
    let mut controls = serde_json::Map::new();
    for (c, cell) in CONTROLS.iter().zip(&w.controls) {
        controls.insert(
            c.key.into(),
            json!({
                "score": cell.score,
                "source": if cell.source.is_empty() { Value::Null } else { json!(cell.source) },
                "reason": cell.reason,
            }),
        );
    }
    let mut by_sev = serde_json::Map::new();
    for f in &w.findings {
        if f.get("status").and_then(Value::as_str) != Some("fail") {
            continue;
        }
        if let Some(s) = f.get("severity").and_then(Value::as_str) {
            let n = by_sev.get(s).and_then(Value::as_u64).unwrap_or(0);
            by_sev.insert(s.into(), json!(n + 1));
        }
    }
    json!({
        "name": w.name,
        "source": w.source,
        "files": w.files,
        "run_id": w.run_id,
        "boundary": w.boundary,
        "controls": controls,
        "score": w.total.map(|(t, _)| t),
        "max": w.total.map(|(_, m)| m),
        "worst": w.worst,
        "teardown_result": w.teardown_result,
        "verified": w.verified,
        "verification": w.verification(),
        "problems": w.problems,
        "checked": w.checked,
        "notes": w.notes,
        "findings": {"total": w.findings.len(), "failing_by_severity": by_sev},
        "exit": w.exit,
    })
}

pub fn json(f: &Fleet) -> String {
    let doc = json!({
        "schema": "https://selfprobe.dev/schema/summary/v1",
        "workspaces": f.workspaces.iter().map(workspace_json).collect::<Vec<_>>(),
        "verified": f.verified(),
        "unverified": f.workspaces.len() - f.verified(),
        "errors": f.errors,
        "notes": f.notes,
        "exit": f.exit,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}
