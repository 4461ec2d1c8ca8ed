//! `selfprobe explain CODE` and `selfprobe list-checks`, from probes/codes.toml.

use std::fmt;

use crate::finding::{catalog, code_info, phase_name};
use crate::util::text::wrap;

pub fn list_checks() -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<28} {:<9} {:<22} {:<18} {}\n",
        "CODE", "SEVERITY", "PHASE", "CONTROL", "TITLE"
    ));
    for c in catalog() {
        out.push_str(&format!(
            "{:<28} {:<9} {:<22} {:<18} {}\n",
            c.code,
            c.severity.as_str(),
            format!("{} {}", c.phase, phase_name(c.phase)),
            if c.control.is_empty() {
                "-"
            } else {
                &c.control
            },
            c.title
        ));
    }
    out
}

/// `selfprobe explain CODE` for a code that is neither a finding code nor
/// a scorecard topic; holds the code as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCode(pub String);

impl fmt::Display for UnknownCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown finding code '{}': run `selfprobe list-checks` for the list, or `selfprobe explain scorecard` for how the scorecard is scored",
            self.0
        )
    }
}

impl std::error::Error for UnknownCode {}

pub fn explain(code: &str) -> Result<String, UnknownCode> {
    if let Some(t) = crate::scorecard::explain(code) {
        return Ok(t);
    }
    let c = code_info(code).ok_or_else(|| UnknownCode(code.to_string()))?;
    Ok(format!(
        "{code}: {title}\n\nseverity: {sev}\nphase:    {phase} ({pname})\ncontrol:  {control}\n\n{explain}\n\nRemediation: {rem}\n",
        code = c.code,
        title = c.title,
        sev = c.severity,
        phase = c.phase,
        pname = phase_name(c.phase),
        control = if c.control.is_empty() { "-" } else { &c.control },
        explain = wrap(&c.explain, 78),
        rem = wrap(&c.remediation, 78),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_unknown_code() {
        let e = explain("no.such-code").unwrap_err();
        assert_eq!(e, UnknownCode("no.such-code".into()));
        assert_eq!(
            e.to_string(),
            "unknown finding code 'no.such-code': run `selfprobe list-checks` for the list, or `selfprobe explain scorecard` for how the scorecard is scored"
        );
        let t = explain("engine.socket-reachable").unwrap();
        assert!(t.starts_with("engine.socket-reachable: "), "{t}");
    }
}
