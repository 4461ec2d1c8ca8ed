//! Printing for `selfprobe verify` and `selfprobe pubkey`. Everything taken
//! from an envelope or report is attacker-controlled until verified, and
//! terminal-unsafe even then: it goes through `sanitize`.

use std::fmt::Write;

use serde_json::Value;

use super::text::sanitize;
use crate::attest::verify::Verdict;
use crate::attest::SSHSIG_NAMESPACE;
use crate::finding::Finding;
use crate::json_at;
use crate::keys::{self, VerifyingKey};
use crate::model::Report;

/// A field as the report gives it, shown: a string bare, null or missing
/// as "-", any other value as its JSON.
fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(x)) => sanitize(x),
        Some(Value::Null) | None => "-".into(),
        Some(other) => sanitize(&other.to_string()),
    }
}

pub fn render(v: &Verdict) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "selfprobe verify: {}",
        if v.valid() { "VALID" } else { "INVALID" }
    );
    if let Some(e) = &v.envelope {
        let _ = writeln!(
            o,
            "  envelope   {} (DSSE, in-toto Statement v1)",
            sanitize(e)
        );
    }
    if let Some((sig, report)) = &v.sshsig {
        let _ = writeln!(
            o,
            "  sshsig     {} over {} (namespace {SSHSIG_NAMESPACE})",
            sanitize(sig),
            sanitize(report)
        );
    }
    let _ = writeln!(o, "  --pubkey   keyid {}", v.keyid);
    if !v.problems.is_empty() {
        let _ = writeln!(o, "\nFailed checks:");
        for p in &v.problems {
            let _ = writeln!(o, "  - {}: {}", p.check, p.message);
        }
    }
    if !v.passed.is_empty() {
        let _ = writeln!(o, "\nPassed checks:");
        for p in &v.passed {
            let _ = writeln!(o, "  - {p}");
        }
    }
    for n in &v.notes {
        let _ = writeln!(o, "\nNote: {n}");
    }
    // Only content whose signature verified is shown as attested.
    if let (true, Some(p)) = (v.valid(), &v.attested) {
        render_attested(&mut o, p, v.nonce_checked);
    }
    o
}

/// The attested report, shown as it was signed: read by field name (named
/// through the model by `json_at!`, so a renamed field does not compile),
/// each value as the report gives it, not as the model would read it.
fn render_attested(o: &mut String, p: &Value, nonce_checked: bool) {
    // A field of the report (`at!(run.id)`), shown.
    macro_rules! at {
        ($($f:ident).+) => {
            s(json_at!(p, Report => $($f).+))
        };
    }
    let _ = writeln!(o, "\nAttested:");
    let _ = writeln!(
        o,
        "  probe      {} {}  sha256 {}",
        at!(tool.name),
        at!(tool.version),
        at!(tool.sha256)
    );
    let image = match json_at!(p, Report => inventory.image) {
        Some(img) if !img.is_null() => sanitize(&img.to_string()),
        _ => "not recorded".into(),
    };
    let _ = writeln!(o, "  image      {image}");
    let _ = writeln!(o, "  run        {}", at!(run.id));
    let _ = writeln!(o, "  started    {}", at!(run.started));
    let _ = writeln!(o, "  finished   {}", at!(run.finished));
    let nonce = at!(run.nonce);
    let _ = writeln!(
        o,
        "  nonce      {nonce}{}",
        if nonce_checked {
            " (matches --nonce)"
        } else {
            " (not checked)"
        }
    );
    let eph = json_at!(p, Report => signing => ephemeral).and_then(Value::as_bool) == Some(true);
    let _ = writeln!(
        o,
        "  key        {} ({}){}",
        s(json_at!(p, Report => signing => keyid)),
        s(json_at!(p, Report => signing => key_source)),
        if eph { "  EPHEMERAL" } else { "" }
    );
    let _ = writeln!(o, "  root       {}", at!(run.root));
    let _ = writeln!(o, "  workspace  {}", at!(run.workspace));
    let _ = writeln!(o, "  policy     {}", at!(run.policy));
    let by_sev = json_at!(p, Report => summary.by_severity)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{v} {}", sanitize(k)))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "  scorecard  {}/{} ({} controls assessed)",
        at!(scorecard.total),
        at!(scorecard.max),
        at!(scorecard.assessed)
    );
    let _ = writeln!(
        o,
        "  findings   {} ({by_sev}); {} at or above fail-on {}; exit code {}",
        at!(summary.total),
        at!(summary.gating),
        match json_at!(p, Report => run.fail_on) {
            Some(Value::String(f)) => sanitize(f),
            _ => "none".into(),
        },
        at!(summary.exit_code),
    );
    if let Some(fs) = json_at!(p, Report => findings).and_then(Value::as_array) {
        for f in fs {
            let _ = writeln!(
                o,
                "    {:<8} {:<8} {:<28} {}",
                s(json_at!(f, Finding => severity)),
                s(json_at!(f, Finding => status)),
                s(json_at!(f, Finding => code)),
                s(json_at!(f, Finding => subject))
            );
        }
    }
}

/// `selfprobe pubkey`: the SPKI PEM (for openssl and `verify --pubkey`),
/// an allowed_signers line (for `ssh-keygen -Y verify`), and the keyid.
pub fn render_pubkey(vk: &VerifyingKey, principal: &str) -> String {
    format!(
        "{}{}\n# keyid {}\n",
        keys::public_pem(vk),
        keys::allowed_signers_line(vk, principal, SSHSIG_NAMESPACE),
        keys::keyid(vk)
    )
}
