//! Checks on a JSON report that every hostile-case suite makes.
#![allow(dead_code)]

use serde_json::Value;

/// Every probe a run schedules (network only when asked).
pub const PROBES: &[&str] = &[
    "boundary",
    "mounts",
    "privilege",
    "rootpaths",
    "namespaces",
    "devices",
    "sockets",
    "writable",
    "secrets",
    "repro",
    "caches",
    "browsers",
    "artifacts",
    "teardown",
];

/// A complete report: a record for every probe, none panicked, and every
/// probe that did not finish explained by a probe.incomplete naming it.
pub fn records_complete(json: &Value) -> Vec<String> {
    let findings = json["findings"].as_array().cloned().unwrap_or_default();
    let records = json["probes"].as_array().cloned().unwrap_or_default();
    let mut bad = Vec::new();
    for p in PROBES {
        match records.iter().find(|r| r["name"] == *p) {
            None => bad.push(format!("no record for the {p} probe")),
            Some(r) if r["status"] == "panic" => bad.push(format!("{p} panicked: {r}")),
            Some(r) if r["status"] != "ok" => {
                if !findings
                    .iter()
                    .any(|f| f["code"] == "probe.incomplete" && f["evidence"]["probe"] == *p)
                {
                    bad.push(format!(
                        "{p} did not finish and no probe.incomplete says so: {r}"
                    ));
                }
            }
            Some(_) => {}
        }
    }
    bad
}

/// Whether `text` calls the workspace a container: "the container", "this
/// container", "a container" (but not "a container engine" or "a container
/// escape", which name a kind of thing), and any "container's". A finding
/// on a host must say none of it.
pub fn claims_a_container(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    let words: Vec<&str> = t
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    words.contains(&"container's")
        || (0..words.len().saturating_sub(1)).any(|i| {
            matches!(words[i], "the" | "this" | "a" | "privileged")
                && words[i + 1] == "container"
                && !matches!(
                    words.get(i + 2).copied(),
                    Some("engine" | "engines" | "escape" | "escapes")
                )
        })
}
