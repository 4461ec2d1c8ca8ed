//! `summary --format junit`: one testsuite per workspace. Its cases are the
//! verification (a failure when the workspace did not verify), the eight
//! scorecard controls (a score of 0 fails with the findings that set it and
//! their fix; not assessed or not known is skipped, never passed) and, when
//! a teardown statement was read, its result (remains fails, unknown is an
//! error). Every string from an input goes through `xml_text`: the one
//! sanitiser, then XML's escapes.

use std::fmt::Write;

use serde_json::Value;

use super::summary::{Fleet, Workspace};
use selfprobe::report::junit::xml_text;
use selfprobe::scorecard::CONTROLS;

fn describe(f: &Value) -> String {
    let t = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("");
    format!(
        "[{}] {} {}: {}\n  fix: {}",
        t("severity"),
        t("code"),
        t("subject"),
        t("message"),
        t("remediation")
    )
}

fn suite(w: &Workspace, out: &mut String) -> (usize, usize, usize, usize) {
    let cls = format!("selfprobe.summary.{}", w.name);
    let mut cases = String::new();
    let (mut tests, mut fails, mut errs, mut skips) = (0, 0, 0, 0);
    let mut case = |name: &str, body: Option<(&str, String, String)>, out_text: Option<String>| {
        tests += 1;
        let _ = writeln!(
            cases,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
            xml_text(&cls),
            xml_text(name)
        );
        if let Some((kind, message, text)) = body {
            match kind {
                "failure" => fails += 1,
                "error" => errs += 1,
                _ => skips += 1,
            }
            if kind == "skipped" {
                let _ = writeln!(cases, "      <skipped message=\"{}\"/>", xml_text(&message));
            } else {
                let _ = writeln!(
                    cases,
                    "      <{kind} message=\"{}\" type=\"{kind}\">{}</{kind}>",
                    xml_text(&message),
                    xml_text(&text)
                );
            }
        }
        if let Some(t) = out_text {
            let _ = writeln!(cases, "      <system-out>{}</system-out>", xml_text(&t));
        }
        cases.push_str("    </testcase>\n");
    };
    case(
        "verification",
        (!w.verified).then(|| ("failure", "not verified".into(), w.problems.join("\n"))),
        Some(w.verification()),
    );
    for (c, cell) in CONTROLS.iter().zip(&w.controls) {
        let why = if cell.reason.is_empty() {
            "no verified report".to_string()
        } else {
            cell.reason.clone()
        };
        let body = match cell.score {
            Some(0) => {
                let decisive: Vec<String> = w
                    .findings
                    .iter()
                    .filter(|f| {
                        f.get("id")
                            .and_then(Value::as_str)
                            .is_some_and(|id| cell.decisive.iter().any(|d| d == id))
                    })
                    .map(describe)
                    .collect();
                Some((
                    "failure",
                    format!("{}: 0 of 2: {}", c.name, why),
                    decisive.join("\n"),
                ))
            }
            Some(_) => None,
            None => Some((
                "skipped",
                format!("{}: not assessed: {why}", c.name),
                String::new(),
            )),
        };
        let shown = cell
            .score
            .map(|s| format!("{}: {s} of 2 ({}): {why}", c.name, cell.source));
        case(c.key, body, shown);
    }
    if let Some(r) = &w.teardown_result {
        let body = match r.as_str() {
            "gone" | "retained" => None,
            "remains" => Some((
                "failure",
                "teardown: something unowned remains".to_string(),
                r.clone(),
            )),
            _ => Some(("error", format!("teardown result {r}"), r.clone())),
        };
        case(
            "teardown-result",
            body,
            Some(format!("teardown result: {r}")),
        );
    }
    let _ = write!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{fails}\" errors=\"{errs}\" skipped=\"{skips}\" time=\"0\">\n{cases}  </testsuite>\n",
        xml_text(&w.name)
    );
    (tests, fails, errs, skips)
}

pub fn render(f: &Fleet) -> String {
    let mut suites = String::new();
    let (mut t, mut fl, mut e, mut s) = (0, 0, 0, 0);
    for w in &f.workspaces {
        let (a, b, c, d) = suite(w, &mut suites);
        t += a;
        fl += b;
        e += c;
        s += d;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"selfprobe summary\" tests=\"{t}\" failures=\"{fl}\" errors=\"{e}\" skipped=\"{s}\" time=\"0\">\n{suites}</testsuites>\n"
    )
}
