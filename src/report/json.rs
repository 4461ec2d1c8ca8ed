//! The JSON report: the versioned schema that the other formats and the
//! attestation are built from.

use crate::model::Report;

pub fn render(report: &Report) -> String {
    // Serializing plain data with string keys cannot fail.
    let mut s =
        serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
