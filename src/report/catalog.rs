//! `selfprobe explain CODE` and `selfprobe list-checks`, from probes/codes.toml.

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

pub fn explain(code: &str) -> Result<String, String> {
    if let Some(t) = crate::scorecard::explain(code) {
        return Ok(t);
    }
    let c = code_info(code).ok_or_else(|| {
        format!("unknown finding code '{code}': run `selfprobe list-checks` for the list, or `selfprobe explain scorecard` for how the scorecard is scored")
    })?;
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
