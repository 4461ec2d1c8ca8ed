//! SARIF and JUnit carry every finding of a hostile container case: the
//! SARIF validates against the official SARIF 2.1.0 schema, and the JUnit
//! XML is read back by junitparser, a third-party parser from PyPI.
//!
//! The schema check is Python's jsonschema (the reference validator, with
//! its format checkers) from the same venv, tests/data/sarif_validate.py.
//! The jsonschema crate (0.61) did it before and was set aside: it and the
//! 45 crates only it pulled in were 225 s of the 769 s of CPU a clean test
//! build took here (cargo build --timings, 2 cores), for this one test.

use std::collections::BTreeSet;
use std::process::Command;

use crate::common::formats::{sarif_validate, venv_python};
use crate::common::podman::*;
use serde_json::Value;

fn run_raw(img: &str, flags: &[&str], args: &[&str]) -> (i32, String) {
    let name = unique("fmt");
    let mut cmd = podman();
    cmd.args(["run", "--rm", "--name", &name])
        .args(flags)
        .arg(img)
        .arg("/usr/local/bin/selfprobe")
        .args(args);
    let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
    (out.code.unwrap_or(-1), out.stdout)
}

#[test]
fn sarif_validates_and_carries_every_finding_of_a_privileged_run() {
    let test = "sarif_validates_and_carries_every_finding_of_a_privileged_run";
    let Some(img) = setup(test) else {
        return;
    };
    let Some(py) = venv_python("jsonschema") else {
        skip_or_fail(test, "no .ci/venv with jsonschema (.ci/run creates it)");
        return;
    };
    let json = probe(img, &["--privileged"], &[]);
    let (code, sarif) = run_raw(img, &["--privileged"], &["--format", "sarif"]);
    assert_eq!(code, 1, "the exit code gates the same way in every format");
    let doc: Value = serde_json::from_str(&sarif).expect("SARIF is JSON");

    let dir = TempPath::dir("sarif").unwrap();
    let log = dir.path.join("selfprobe.sarif");
    std::fs::write(&log, &sarif).unwrap();
    // The validator must be able to say no: a log with a level SARIF does
    // not have and a start time that is not a date-time.
    let mut broken = doc.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    broken["runs"][0]["invocations"][0]["startTimeUtc"] = "yesterday".into();
    let bad = dir.path.join("broken.sarif");
    std::fs::write(&bad, broken.to_string()).unwrap();
    let (rc, said) = sarif_validate(&py, &[&bad]);
    assert_eq!(rc, 1, "the validator takes a broken log: {said}");
    assert!(said.contains("/runs/0/results/0/level"), "{said}");
    assert!(
        said.contains("/runs/0/invocations/0/startTimeUtc"),
        "{said}"
    );

    let (rc, said) = sarif_validate(&py, &[&log]);
    assert_eq!(rc, 0, "SARIF does not validate:\n{said}");

    let run = &doc["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules.len(),
        selfprobe::finding::catalog().len(),
        "one rule per finding code"
    );
    let results = run["results"].as_array().unwrap();
    let sarif_ids: BTreeSet<(String, String)> = results
        .iter()
        .map(|r| {
            let idx = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[idx], r["ruleId"], "ruleIndex points at the rule");
            (
                r["ruleId"].as_str().unwrap().to_string(),
                r["properties"]["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let json_ids: BTreeSet<(String, String)> = json.pairs().into_iter().collect();
    assert!(json_ids.len() > 10, "a privileged run has many findings");
    assert_eq!(
        sarif_ids, json_ids,
        "SARIF carries exactly the findings of the JSON report"
    );
    let sock = results
        .iter()
        .find(|r| {
            r["ruleId"] == "write.kernel-interface"
                && r["properties"]["subject"] == "/proc/sys/kernel/core_pattern"
        })
        .expect("core_pattern is reported");
    assert_eq!(sock["level"], "error");
    assert_eq!(
        sock["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "file:///proc/sys/kernel/core_pattern"
    );
}

#[test]
fn junit_parses_with_junitparser_and_fails_each_gating_check() {
    let test = "junit_parses_with_junitparser_and_fails_each_gating_check";
    let Some(img) = setup(test) else { return };
    let Some(py) = venv_python("junitparser") else {
        skip_or_fail(test, "no .ci/venv with junitparser (.ci/run creates it)");
        return;
    };
    let json = probe(img, &["--privileged"], &[]);
    let (code, xml) = run_raw(img, &["--privileged"], &["--format", "junit"]);
    assert_eq!(code, 1);
    let file = TempPath::dir("junit").unwrap();
    let path = file.path.join("selfprobe.xml");
    std::fs::write(&path, &xml).unwrap();
    let out = Command::new(py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/junit_summary.py"
        ))
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "junitparser rejected the XML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        parsed["tests"].as_u64().unwrap() as usize,
        selfprobe::finding::catalog().len(),
        "one test case per check"
    );

    let gating: BTreeSet<String> = json
        .findings()
        .iter()
        .filter(|f| {
            f["status"] == "fail" && (f["severity"] == "high" || f["severity"] == "critical")
        })
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    let failed: BTreeSet<String> = parsed["cases"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, c)| {
            c["kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == "failure")
        })
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(
        failed, gating,
        "a failure for each check with a finding at or above --fail-on"
    );
    // Every finding, failing or not, is in the XML.
    for (code, subject) in json.pairs() {
        let text = parsed["cases"][&code]["text"].as_str().unwrap_or("");
        assert!(
            text.contains(&subject) || xml.contains(&subject),
            "{code} {subject} missing from JUnit"
        );
    }
}
