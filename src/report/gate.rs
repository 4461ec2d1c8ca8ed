//! The gate's words on standard error (src/gate.rs starts the command,
//! main.rs decides): one line when the command starts, and when it does
//! not, a reason that fits one screen (at most `MAX_LINES` lines of at most
//! `WIDTH` columns): what failed, the fix, where the full report is. The
//! report itself, with every finding and the fix in full, is elsewhere
//! (`-o`, else standard error before these lines).

use std::fmt::Write;

use crate::finding::{Finding, Severity, Status};
use crate::model::{Exit, Report};
use crate::probe::ProbeStatus;
use crate::util::sanitize;

/// A screen: 24 lines of 80 columns, one left for the shell's prompt.
pub const WIDTH: usize = 80;
pub const MAX_LINES: usize = 23;
/// Codes shown before "and N more codes".
const SHOWN_CODES: usize = 6;
/// Subjects shown per code.
const SHOWN_SUBJECTS: usize = 2;
/// Where a fix's words start: under the code.
const FIX_INDENT: usize = 16;

/// Where the run put what it wrote, for the last lines.
pub struct Outputs<'a> {
    /// `-o FILE`; None: the report went to standard error, before this.
    pub report: Option<&'a str>,
    /// `--attest FILE` (`-`: standard output).
    pub attest: Option<&'a str>,
    /// `--sshsig FILE`.
    pub sshsig: Option<&'a str>,
}

/// The one line before the command starts.
pub fn starting(r: &Report, command: &str, out: &Outputs) -> String {
    let below = r.summary.total;
    let verdict = match r.run.fail_on {
        Some(s) => {
            format!("nothing at or above --fail-on {s} ({below} finding(s) below it or excepted)")
        }
        None => format!("--fail-on none, so nothing gates ({below} finding(s))"),
    };
    format!(
        "selfprobe: {verdict}; {}; starting {}\n",
        where_report(out),
        name(command)
    )
}

/// Why the command was not started, in at most MAX_LINES lines of at most
/// WIDTH columns: the headline (and, for a check that did not finish, why),
/// an entry per code that gates, as many as fit, and where the report is.
pub fn refusal(r: &Report, command: &str, out: &Outputs) -> String {
    let mut head: Vec<String> = Vec::new();
    let fail_on = r.run.fail_on.map(Severity::as_str).unwrap_or("none");
    let gating: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.status != Status::Excepted && r.run.fail_on.is_some_and(|t| f.severity >= t))
        .collect();
    if r.summary.exit_code == Exit::ProbeFailed {
        head.push(format!(
            "selfprobe: refused to start {}: the check did not finish, and a check not made is not a pass",
            name(command)
        ));
        if !r.run.unfinished.is_empty() {
            head.push(format!(
                "  --timeout {} ms passed before these probes finished: {}",
                r.run.timeout_ms,
                r.run.unfinished.join(", ")
            ));
            head.push(
                "           fix: raise --timeout, or find what hung in the report (probe.incomplete)"
                    .into(),
            );
        }
        let crashed: Vec<&str> = r
            .probes
            .iter()
            .filter(|p| p.status == ProbeStatus::Panic)
            .map(|p| &*p.name)
            .collect();
        if !crashed.is_empty() {
            head.push(format!("  these probes failed: {}", crashed.join(", ")));
            head.push(
                "           fix: a selfprobe bug: please report it with the report's probe.incomplete"
                    .into(),
            );
        }
        if !gating.is_empty() {
            head.push(format!(
                "  and {} finding(s) at or above --fail-on {fail_on}:",
                gating.len()
            ));
        }
    } else {
        head.push(format!(
            "selfprobe: refused to start {}: {} finding(s) at or above --fail-on {fail_on}",
            name(command),
            gating.len()
        ));
    }
    let foot = [
        where_report(out),
        format!(
            "the fix in full: selfprobe explain CODE; {} was not started (exit {})",
            name(command),
            i32::from(r.summary.exit_code)
        ),
    ];
    // The headline and the last lines always; the codes in what is left.
    let room = MAX_LINES.saturating_sub(head.len() + foot.len());
    let mut o = String::new();
    for l in head
        .iter()
        .chain(codes(&gating, room).iter())
        .chain(foot.iter())
    {
        let _ = writeln!(o, "{}", fit(l, WIDTH));
    }
    o
}

/// One entry per code, most severe first: the severity, the code and a few
/// subjects on one line, the first sentence of the fix on at most two more;
/// as many entries as fit in `room` lines, then how many more there are.
fn codes(gating: &[&Finding], room: usize) -> Vec<String> {
    let mut groups: Vec<Vec<&Finding>> = Vec::new();
    for f in gating {
        match groups.iter_mut().find(|g| g[0].code == f.code) {
            Some(g) => g.push(f),
            None => groups.push(vec![f]),
        }
    }
    let top = |g: &Vec<&Finding>| g.iter().map(|f| f.severity).max();
    crate::util::sort::sort_by(&mut groups, |a, b| {
        top(b).cmp(&top(a)).then(a[0].code.cmp(&b[0].code))
    });
    let mut lines = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let sev = top(g).map(Severity::as_str).unwrap_or("").to_uppercase();
        let shown: Vec<String> = g
            .iter()
            .take(SHOWN_SUBJECTS)
            .map(|f| sanitize::escape(&f.subject))
            .collect();
        let more = g.len() - shown.len();
        let mut entry = vec![format!(
            "  {sev:<8} {} {}{}",
            g[0].code,
            shown.join(", "),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        )];
        let fix = crate::util::text::wrap(&first_sentence(&g[0].remediation), WIDTH - FIX_INDENT);
        let mut fix: Vec<&str> = fix.lines().collect();
        let cut = fix.len() > 2;
        fix.truncate(2);
        for (j, l) in fix.iter().enumerate() {
            let l = if cut && j == 1 {
                fit(&format!("{l} …"), WIDTH - FIX_INDENT)
            } else {
                l.to_string()
            };
            entry.push(if j == 0 {
                format!("           fix: {l}")
            } else {
                format!("{:FIX_INDENT$}{l}", "")
            });
        }
        let left = groups.len() - i - 1;
        // Room for this entry, and for the line that counts the rest.
        if i >= SHOWN_CODES || lines.len() + entry.len() + usize::from(left > 0) > room {
            lines.push(format!(
                "  and {} more code(s), in the report",
                groups.len() - i
            ));
            break;
        }
        lines.extend(entry);
    }
    lines
}

fn where_report(out: &Outputs) -> String {
    let mut parts = vec![match out.report {
        Some(p) => format!("report: {}", sanitize::escape(p)),
        None => "report: above, on standard error".to_string(),
    }];
    if let Some(a) = out.attest {
        parts.push(match a {
            "-" => "attestation: on standard output".to_string(),
            a => format!("attestation: {}", sanitize::escape(a)),
        });
    }
    if let Some(s) = out.sshsig {
        parts.push(format!("sshsig: {}", sanitize::escape(s)));
    }
    parts.join("; ")
}

/// The command's name as the messages show it: sanitised, and short.
fn name(command: &str) -> String {
    fit(&sanitize::escape(command), 40)
}

fn first_sentence(s: &str) -> String {
    let s = sanitize::escape(s);
    match s.find(". ") {
        Some(i) => s[..=i].to_string(),
        None => s,
    }
}

/// `s` cut to `width` characters, the last one an ellipsis when cut.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut t: String = s.chars().take(width - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_to_the_width_and_the_first_sentence() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(first_sentence("Do this. Then that."), "Do this.");
        assert_eq!(name("agent\u{1b}[2J"), "agent\\u{1b}[2J");
    }
}
