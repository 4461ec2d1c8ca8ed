//! Checks on a JSON report that every hostile-case suite makes.
#![allow(dead_code)]

use serde_json::Value;

/// Every probe a run schedules (network only when asked).
pub const PROBES: &[&str] = &[
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
