//! Every report a test gets is read back through the model and written
//! again (dump::report calls `check`): the model deserializes what the
//! probe serializes, field for field, and writes it back byte for byte, so
//! a field the host tool reads as a typed value (selfprobe::model::read)
//! cannot be renamed on one side only.
#![allow(dead_code)]

use selfprobe::model::read::Read;
use selfprobe::model::{Report, SCHEMA};
use serde_json::Value;

/// Checks the first JSON document of `stdout` (a report may be followed by
/// its DSSE envelope) when it is a selfprobe report; anything else passes
/// by (an empty stdout, a usage error, a text report).
pub fn check(stdout: &[u8]) {
    let mut docs = serde_json::Deserializer::from_slice(stdout).into_iter::<Value>();
    let Some(Ok(v)) = docs.next() else {
        return;
    };
    let end = docs.byte_offset();
    if v.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
        return;
    }
    let text = std::str::from_utf8(&stdout[..end]).expect("a report is UTF-8");
    let report: Report = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("the report does not read as the model: {e}\n{text}"));
    same(&report, text, &v, "serde_json::from_str::<Report>");
    let read = Read::from_value(&v);
    assert!(
        read.malformed().is_empty(),
        "model::read found parts it could not read: {:?}",
        read.malformed()
    );
    same(&read.report, text, &v, "model::read::Read");
}

/// `report` written again is `text`: byte for byte where `text` is the
/// probe's own pretty output, else value for value (a test that printed
/// the report compactly).
fn same(report: &Report, text: &str, v: &Value, how: &str) {
    if text.starts_with("{\n") {
        let back = selfprobe::report::json::render(report);
        if back.trim_end() != text.trim_end() {
            let at = back
                .bytes()
                .zip(text.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(back.len().min(text.len()));
            let from = at.saturating_sub(200);
            panic!(
                "{how}: the report written again differs at byte {at}:\nwritten again: {}\nthe probe's:   {}",
                &back[from..(at + 200).min(back.len())],
                &text[from..(at + 200).min(text.len())]
            );
        }
    } else {
        let back = serde_json::to_value(report).expect("a report serializes");
        assert_eq!(&back, v, "{how}: the report written again differs");
    }
}
