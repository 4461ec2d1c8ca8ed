//! Host-side comparison of reports (DESIGN.md §14): `selfprobe-host diff` puts
//! two workspaces' facts side by side along the blueprint's axes of "false
//! production parity"; `selfprobe-host summary` verifies many workspaces'
//! reports, envelopes and teardown statements and tabulates them. Never
//! needed inside a workspace: no probe or fact imports this module.

pub mod diff;
pub mod facts;
pub mod html;
pub mod input;
pub mod junit;
pub mod render;
pub mod sarif;
pub mod summary;

use std::path::{Path, PathBuf};

use selfprobe::keys::VerifyingKey;
use serde_json::Value;

pub use crate::cli::{DiffFormat, SummaryFormat};
use selfprobe::attest::verify::{self, Inputs};
use selfprobe::attest::TEARDOWN_PREDICATE_TYPE;
use selfprobe::keys;
use selfprobe::model::Exit;
use selfprobe::policy::Policy;

/// What a command prints and the code it ends with, or why it stopped.
pub struct Printed {
    pub text: String,
    pub exit: Exit,
    /// Lines for standard error that do not end the command.
    pub warnings: Vec<String>,
}

/// A diff or summary that could not be made: the host tool's one error
/// (usage: exit 2; failed: exit 3).
pub use crate::error::Error as Stop;

fn usage(m: impl Into<String>) -> Stop {
    Stop::Usage(m.into())
}

/// Reads a public key file as `verify` does (`selfprobe pubkey` output,
/// SPKI PEM, an OpenSSH line).
pub fn load_key(path: &Path) -> Result<VerifyingKey, Stop> {
    let bytes = keys::read_public_file(path, input::MAX_FILE)
        .map_err(|e| usage(format!("--pubkey: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| {
        usage(format!(
            "--pubkey {}: not text: expected a public key",
            path.display()
        ))
    })?;
    keys::parse_public_key(&text).map_err(|e| usage(format!("--pubkey {}: {e}", path.display())))
}

/// One side of a diff: its report (verified when a key is given) and how
/// the output names it.
fn diff_side(
    label: &str,
    path: &Path,
    key: Option<&VerifyingKey>,
    warnings: &mut Vec<String>,
) -> Result<(Value, diff::Side), Stop> {
    let bytes = input::read_capped(path, true).map_err(|e| usage(format!("{label}: {e}")))?;
    diff_side_of(label, &path.display().to_string(), &bytes, key, warnings)
}

/// One side of a diff from its bytes (the fuzz target's way in).
pub fn diff_side_of(
    label: &str,
    shown: &str,
    bytes: &[u8],
    key: Option<&VerifyingKey>,
    warnings: &mut Vec<String>,
) -> Result<(Value, diff::Side), Stop> {
    let shown = shown.to_string();
    let kind = input::classify(bytes).map_err(|e| {
        usage(format!(
            "{label}: {shown}: {e}: expected a selfprobe JSON report or DSSE envelope"
        ))
    })?;
    if kind == input::Kind::Report {
        input::check_report_size(&shown, bytes.len())
            .map_err(|e| usage(format!("{label}: {e}")))?;
    }
    let (report, verified_by) = match (kind, key) {
        (input::Kind::Report, None) => (
            serde_json::from_slice::<Value>(bytes)
                .map_err(|e| usage(format!("{label}: {shown}: not JSON ({e})")))?,
            None,
        ),
        (input::Kind::Report, Some(_)) => {
            return Err(Stop::Failed(format!(
                    "{label}: {shown} is a report, not an envelope: --pubkey verifies DSSE envelopes (what --attest writes); give its envelope, or leave out --pubkey to compare the report as it is"
                )))
        }
        (input::Kind::Envelope, Some(k)) => {
            let v = verify::verify(&Inputs {
                pubkey: *k,
                nonce: None,
                binary_sha256: None,
                envelope: Some((&shown, bytes)),
                sshsig: None,
            });
            if !v.valid() {
                let why: Vec<String> = v.problems.iter().map(|p| p.message.clone()).collect();
                return Err(Stop::Failed(format!("{label}: {shown} does not verify: {}", why.join("; "))));
            }
            if v.predicate_type == Some(TEARDOWN_PREDICATE_TYPE) {
                return Err(usage(format!(
                    "{label}: {shown} is a teardown statement: expected a report's envelope"
                )));
            }
            (v.attested.unwrap_or_default(), Some(v.keyid))
        }
        (input::Kind::Envelope, None) => {
            let env: selfprobe::attest::dsse::Envelope = serde_json::from_slice(bytes)
                .map_err(|e| usage(format!("{label}: {shown}: not a DSSE envelope ({e})")))?;
            let st: Value = selfprobe::util::codec::b64_decode(&env.payload)
                .and_then(|p| serde_json::from_slice(&p).ok())
                .ok_or_else(|| usage(format!("{label}: {shown}: the payload is not a JSON statement")))?;
            if st.get("predicateType").and_then(Value::as_str) == Some(TEARDOWN_PREDICATE_TYPE) {
                return Err(usage(format!(
                    "{label}: {shown} is a teardown statement: expected a report's envelope"
                )));
            }
            warnings.push(format!(
                "{label}: {shown} is compared without verification (no --pubkey)"
            ));
            (st.get("predicate").cloned().unwrap_or_default(), None)
        }
        _ => {
            return Err(usage(format!(
                "{label}: {shown}: not a selfprobe report or DSSE envelope: expected the output of --format json or --attest"
            )))
        }
    };
    if !report.is_object() || report.get("inventory").is_none() {
        return Err(usage(format!(
            "{label}: {shown}: the report has no inventory: expected a selfprobe JSON report"
        )));
    }
    let side = diff::Side {
        path: shown,
        run_id: report
            .pointer("/run/id")
            .and_then(Value::as_str)
            .map(str::to_string),
        boundary: report.pointer("/inventory/boundary").map(|b| {
            let f = |k: &str| {
                b.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string()
            };
            format!("{} {} {}", f("kind"), f("engine"), f("runtime"))
        }),
        verified_by,
    };
    Ok((report, side))
}

/// `selfprobe-host diff A B`.
pub fn diff_command(
    a: &Path,
    b: &Path,
    pubkey: Option<&Path>,
    policy: Option<&Path>,
    format: DiffFormat,
) -> Result<Printed, Stop> {
    let allow: Vec<String> = match policy {
        None => Vec::new(),
        Some(p) => {
            let pol = Policy::load(p).map_err(|e| usage(format!("policy error: {e}")))?;
            for a in &pol.parity_allow {
                diff::check_pattern(&a.pattern).map_err(|m| {
                    usage(format!(
                        "policy error: {}:{}:{}: {m}",
                        p.display(),
                        a.line,
                        a.column
                    ))
                })?;
            }
            pol.parity_allow.into_iter().map(|a| a.pattern).collect()
        }
    };
    let key = pubkey.map(load_key).transpose()?;
    let mut warnings = Vec::new();
    let (ra, sa) = diff_side("A", a, key.as_ref(), &mut warnings)?;
    let (rb, sb) = diff_side("B", b, key.as_ref(), &mut warnings)?;
    let d = diff::compare(&facts::extract(&ra), &facts::extract(&rb), &allow, sa, sb);
    let exit = if d.gating() > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    };
    let text = match format {
        DiffFormat::Text => diff::text(&d),
        DiffFormat::Json => diff::json(&d),
    };
    Ok(Printed {
        text,
        exit,
        warnings,
    })
}

/// `selfprobe-host summary PATH…`.
pub fn summary_command(
    paths: &[PathBuf],
    pubkeys: &[PathBuf],
    nonces: Option<&Path>,
    binary_sha256: Option<String>,
    host_sha256: Option<String>,
    format: SummaryFormat,
) -> Result<Printed, Stop> {
    let mut keys_ = Vec::new();
    for p in pubkeys {
        keys_.push((p.display().to_string(), load_key(p)?));
    }
    let nonces = match nonces {
        None => None,
        Some(p) => {
            let b = input::read_capped(p, true).map_err(|e| usage(format!("--nonces: {e}")))?;
            let text = String::from_utf8(b).map_err(|_| {
                usage(format!(
                    "--nonces {}: not text: expected `<name> <nonce>` lines",
                    p.display()
                ))
            })?;
            let file = p.display().to_string();
            let map =
                input::parse_nonces(&file, &text).map_err(|e| usage(format!("--nonces: {e}")))?;
            Some((file, map))
        }
    };
    let fleet = summary::summarize(
        paths,
        &summary::Options {
            keys: keys_,
            nonces,
            binary_sha256,
            host_sha256,
        },
    );
    let text = match format {
        SummaryFormat::Text => render::text(&fleet),
        SummaryFormat::Json => render::json(&fleet),
        SummaryFormat::Sarif => sarif::render(&fleet),
        SummaryFormat::Junit => junit::render(&fleet),
        SummaryFormat::Html => html::render(&fleet),
    };
    Ok(Printed {
        text,
        exit: fleet.exit,
        warnings: fleet.errors.clone(),
    })
}
