//! JUnit XML for CI test reports: one test case per check (finding code),
//! grouped in a suite per phase. A check fails when a finding of its code
//! is at or above --fail-on and not excepted; "could not check" is an error;
//! a check whose phase has no probe yet is skipped, never passed.

use std::fmt::Write;

use crate::finding::{catalog, phase_name, Finding, Status};
use crate::model::Report;

/// XML 1.0 cannot carry most control characters even escaped: they become
/// visible \u{..} text, like the text report's sanitizer.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' => o.push(c),
            c if c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// Text from an input (a report, a name) for XML: the one sanitiser first
/// (bidi, zero-width and tag characters shown as `\u{..}`, which XML would
/// carry as they are), then the markup characters. Safe in element content
/// and in quoted attributes, for JUnit and HTML alike.
pub fn xml_text(s: &str) -> String {
    xml_escape(&crate::util::sanitize::escape(s))
}

fn describe(f: &Finding) -> String {
    format!("[{}] {} {}: {}", f.severity, f.code, f.subject, f.message)
}

/// Whether a probe that can report `c` ran. A phase holds several probes
/// (phase 3: secrets and network), so the check's scorecard control names
/// them; a code without a control falls back to the phase.
fn ran_for_probes(c: &crate::finding::CodeInfo, r: &Report, phase_ran: bool) -> bool {
    match crate::scorecard::CONTROLS
        .iter()
        .find(|k| k.key == c.control)
    {
        Some(k) => k
            .probes
            .iter()
            .any(|p| r.probes.iter().any(|rec| rec.name == *p)),
        None => phase_ran,
    }
}

pub fn render(r: &Report) -> String {
    let ran_for = |c: &crate::finding::CodeInfo, phase_ran: bool| ran_for_probes(c, r, phase_ran);
    let gate = r.run.fail_on;
    let mut suites = String::new();
    let (mut t_tests, mut t_fail, mut t_err, mut t_skip) = (0, 0, 0, 0);
    let mut phases: Vec<u8> = catalog().iter().map(|c| c.phase).collect();
    crate::util::sort::sort_by_key(&mut phases, |p| if *p == 0 { 99 } else { *p });
    phases.dedup();
    for phase in phases {
        let ran = r.probes.iter().any(|p| p.phase == phase);
        let broken: Vec<&Finding> = r
            .findings
            .iter()
            .filter(|f| {
                f.code == "probe.incomplete"
                    && f.evidence.get("phase").and_then(|v| v.as_u64()) == Some(phase as u64)
            })
            .collect();
        let (mut tests, mut fails, mut errs, mut skips) = (0, 0, 0, 0);
        let mut cases = String::new();
        for c in catalog().iter().filter(|c| c.phase == phase) {
            tests += 1;
            let mine: Vec<&Finding> = r.findings.iter().filter(|f| f.code == c.code).collect();
            let gating: Vec<&&Finding> = mine
                .iter()
                .filter(|f| f.status == Status::Fail && gate.is_some_and(|g| f.severity >= g))
                .collect();
            let unknown: Vec<&&Finding> = mine
                .iter()
                .filter(|f| f.status == Status::Unknown)
                .collect();
            let _ = writeln!(
                cases,
                "    <testcase classname=\"selfprobe.{}\" name=\"{}\" time=\"0\">",
                xml_escape(phase_name(phase)).replace(' ', "_"),
                xml_escape(&c.code)
            );
            if !gating.is_empty() {
                fails += 1;
                let body: Vec<String> = gating.iter().map(|f| describe(f)).collect();
                let _ = writeln!(
                    cases,
                    "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    xml_escape(&format!(
                        "{} finding(s): {}",
                        gating.len(),
                        gating[0].message
                    )),
                    gating
                        .iter()
                        .map(|f| f.severity)
                        .max()
                        .map(|s| s.as_str())
                        .unwrap_or(""),
                    xml_escape(&format!(
                        "{}\n\nRemediation: {}",
                        body.join("\n"),
                        c.remediation
                    ))
                );
            } else if !unknown.is_empty() || (!broken.is_empty() && mine.is_empty()) {
                errs += 1;
                let why: Vec<String> = unknown
                    .iter()
                    .map(|f| describe(f))
                    .chain(broken.iter().map(|f| describe(f)))
                    .collect();
                let _ = writeln!(
                    cases,
                    "      <error message=\"{}\" type=\"unknown\">{}</error>",
                    xml_escape("could not be checked"),
                    xml_escape(&why.join("\n"))
                );
            } else if !ran_for(c, ran) && mine.is_empty() && phase != 0 {
                skips += 1;
                let _ = writeln!(
                    cases,
                    "      <skipped message=\"not assessed: no probe for phase {phase} ran\"/>"
                );
            }
            let rest: Vec<String> = mine
                .iter()
                .filter(|f| !gating.iter().any(|g| g.id == f.id) && f.status != Status::Unknown)
                .map(|f| {
                    let tag = if f.status == Status::Excepted {
                        " (excepted)"
                    } else {
                        ""
                    };
                    format!("{}{tag}", describe(f))
                })
                .collect();
            if !rest.is_empty() {
                let _ = writeln!(
                    cases,
                    "      <system-out>{}</system-out>",
                    xml_escape(&rest.join("\n"))
                );
            }
            cases.push_str("    </testcase>\n");
        }
        let name = if phase == 0 {
            "selfprobe.run".to_string()
        } else {
            format!("selfprobe.phase{phase}.{}", phase_name(phase))
        };
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{fails}\" errors=\"{errs}\" skipped=\"{skips}\" time=\"{:.3}\" timestamp=\"{}\">\n{cases}  </testsuite>\n",
            xml_escape(&name),
            r.run.duration_us as f64 / 1e6,
            xml_escape(r.run.started.trim_end_matches('Z')),
        );
        t_tests += tests;
        t_fail += fails;
        t_err += errs;
        t_skip += skips;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"selfprobe\" tests=\"{t_tests}\" failures=\"{t_fail}\" errors=\"{t_err}\" skipped=\"{t_skip}\" time=\"{:.3}\">\n{suites}</testsuites>\n",
        r.run.duration_us as f64 / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_controls() {
        assert_eq!(
            xml_escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;"
        );
        assert_eq!(xml_escape("a\x1b[2Jb\x00"), "a\\u{1b}[2Jb\\u{0}");
        assert_eq!(xml_escape("line\nnext"), "line\nnext");
    }
}
