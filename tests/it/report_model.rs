//! The report model reads back what the probe writes (issue 30: the host
//! tool reads reports as typed values). Every report a test gets is already
//! read back and written again byte for byte (common/roundtrip.rs, through
//! dump::report); these runs make sure the captures, a signed run and a run
//! with a workspace and a policy are among them, and that the lenient
//! reader (selfprobe::model::read) says what a report leaves out.

use selfprobe::given;
use selfprobe::model::read::{Given, Read};
use selfprobe::model::Report;
use serde_json::json;

use crate::common::fixture::*;

#[test]
fn the_captures_read_back_byte_for_byte() {
    for name in ["plain", "clean", "privileged"] {
        let f = Fixture::container(
            &format!("model-{name}"),
            &data(&format!("{name}.mountinfo")),
            &data(&format!("{name}.status")),
        );
        let pol = f.path("policy.toml");
        std::fs::write(&pol, "[workspace]\npath = \"/workspace\"\n").unwrap();
        let att = f.path("attestation.json");
        for args in [
            vec![],
            vec!["--workspace", "/workspace", "--nonce", "0011223344556677"],
            vec!["--policy", pol.to_str().unwrap(), "--fail-on", "medium"],
            // Signed: the report's signing section.
            vec!["--attest", att.to_str().unwrap()],
        ] {
            // Run::from checks the round trip (common/roundtrip.rs).
            let r = f.run(&args);
            let report: Report = serde_json::from_value(r.json.clone())
                .unwrap_or_else(|e| panic!("{name} {args:?}: {e}"));
            assert!(report.inventory.privilege.is_some(), "{name} {args:?}");
            assert_eq!(report.findings.len(), r.findings().len());
            let read = Read::from_value(&r.json);
            assert!(read.malformed().is_empty(), "{:?}", read.malformed());
            assert_eq!(
                given!(&read, inventory.privilege => caps.effective),
                Given::Value
            );
            assert_eq!(
                given!(&read, inventory.privilege => seccomp),
                Given::Value,
                "{name}: the captures have a Seccomp line"
            );
            assert!(given!(&read, run.policy_sha256).key());
        }
    }
}

#[test]
fn a_report_read_back_says_what_it_leaves_out_and_never_panics() {
    let f = Fixture::container(
        "model-partial",
        &data("plain.mountinfo"),
        &data("plain.status"),
    );
    let full = f.run(&[]).json;

    // Left out, nulled, of another type: each says so, none panics.
    let mut v = full.clone();
    v["inventory"]["privilege"]
        .as_object_mut()
        .unwrap()
        .remove("caps");
    v["inventory"]["privilege"]["seccomp"] = json!(null);
    v["inventory"]["mounts"] = json!("not a table");
    v["run"]["timeout_ms"] = json!("soon");
    v["findings"][0]["severity"] = json!("apocalyptic");
    let read = Read::from_value(&v);
    assert_eq!(
        given!(&read, inventory.privilege => caps.effective),
        Given::Absent
    );
    assert_eq!(given!(&read, inventory.privilege => seccomp), Given::Null);
    assert!(read.report.inventory.privilege.is_some());
    assert!(read.report.inventory.mounts.is_none());
    assert!(read.is_malformed("inventory.mounts"));
    assert!(read.is_malformed("run"));
    assert!(read.is_malformed("findings"));
    assert_eq!(
        selfprobe::claimed!(&read, inventory.mounts => mounts),
        None,
        "a list is not a claimed string"
    );
    assert_eq!(
        read.report.findings.len() + 1,
        full["findings"].as_array().unwrap().len(),
        "only the finding that does not read is left out"
    );

    // A kind that is no Kind: the section does not read, what it claims
    // is kept for showing.
    let mut v = full.clone();
    v["inventory"]["boundary"]["kind"] = json!("a kind of its own");
    let read = Read::from_value(&v);
    assert!(read.report.inventory.boundary.is_none());
    assert_eq!(
        selfprobe::claimed!(&read, inventory.boundary => kind),
        Some("a kind of its own")
    );

    // Not a report at all.
    for v in [
        json!(null),
        json!([1, 2]),
        json!("x"),
        json!({"inventory": 7}),
    ] {
        let read = Read::from_value(&v);
        assert!(read.report.findings.is_empty());
        assert!(read.report.inventory.boundary.is_none());
        assert_eq!(given!(&read, run.root), Given::Absent);
    }
}
