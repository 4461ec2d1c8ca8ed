//! The words a report says, checked on every JSON report a test gets
//! (dump::report calls `check`, so every fixture, capture and container run
//! of the suite passes through here) and on the corpus of
//! tests/it/sentences.rs:
//!
//! - no scorecard reason quotes a rubric cell of the blueprint's readiness
//!   scorecard (`scorecard::CONTROLS`): a reason says what was observed;
//! - finding messages and titles, scorecard reasons and levels make none of
//!   the errors a plain rule can catch: "a" before a vowel sound, "an"
//!   before a consonant sound, a word said twice, "is no … is".
//!
//! What a sentence quotes from the system (a subject or an evidence value
//! of more than one word: anything a hostile tree can choose) is taken out
//! before the check, and every token with a character no English word has
//! (digits, `/`, `_`, `=`…) is a gap: the rules judge the words the code
//! wrote.
#![allow(dead_code)]

use serde_json::Value;

/// The blueprint's rubric cells, as the scorecard holds them.
pub fn rubric() -> Vec<&'static str> {
    selfprobe::scorecard::CONTROLS
        .iter()
        .flat_map(|c| c.rubric.iter().copied())
        .collect()
}

/// Panics, naming each problem, when `report` (the bytes a JSON run
/// printed) says something the rules below catch. Output that is not a
/// JSON report (an error, a text format) is not judged here.
pub fn check(report: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(report) else {
        return;
    };
    let problems = report_problems(&v);
    assert!(
        problems.is_empty(),
        "the report's words (tests/it/common/sentences.rs):\n  {}",
        problems.join("\n  ")
    );
}

/// Every problem in a report: rubric cells in scorecard reasons, and the
/// grammar of messages, titles, reasons and levels.
pub fn report_problems(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let cells = rubric();
    for c in v["scorecard"]["controls"].as_array().into_iter().flatten() {
        let key = c["control"].as_str().unwrap_or("?");
        let reason = c["reason"].as_str().unwrap_or("");
        for cell in &cells {
            if reason.contains(cell) {
                out.push(format!(
                    "scorecard {key}: the reason quotes the rubric ({cell:?}): {reason}"
                ));
            }
        }
        for field in ["reason", "level"] {
            if let Some(t) = c[field].as_str() {
                for p in grammar(t, &[]) {
                    out.push(format!("scorecard {key} {field}: {p}: {t}"));
                }
            }
        }
    }
    for f in v["findings"].as_array().into_iter().flatten() {
        let code = f["code"].as_str().unwrap_or("?");
        let mut quoted: Vec<String> = Vec::new();
        if let Some(s) = f["subject"].as_str() {
            quoted.push(s.to_string());
        }
        strings(&f["evidence"], &mut quoted);
        for field in ["message", "title"] {
            if let Some(t) = f[field].as_str() {
                for p in grammar(t, &quoted) {
                    out.push(format!("{code} {field}: {p}: {t}"));
                }
            }
        }
    }
    out
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Initialisms said letter by letter ("an SSH key", "a URL").
const SPELLED: &[&str] = &[
    "ssh", "ssl", "sftp", "smtp", "smb", "sql", "mcp", "lsm", "html", "http", "https", "nfs",
    "rsa", "gpg", "url", "uid", "usb", "xml", "oci", "jwt", "tls", "api", "ide", "ipc", "lxc",
    "lxd", "nspawn",
];

/// Whether `w` starts with a vowel sound, when that can be told from its
/// spelling; None for a word the rules cannot judge.
fn vowel_sound(w: &str) -> Option<bool> {
    let lower = w.to_ascii_lowercase();
    let first = lower.chars().next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    // SSH, URL, an LSM, an SELinux host: a short all-capital word, or one
    // that starts with two capitals, is said by its letters' names
    // (a NOPASSWD rule is said as a word).
    let caps = w.chars().take_while(|c| c.is_ascii_uppercase()).count();
    let spelled = SPELLED.contains(&lower.as_str())
        || (caps == w.len() && (2..=4).contains(&caps))
        || (caps >= 2 && caps < w.len());
    if spelled {
        return Some("aefhilmnorsx".contains(first));
    }
    if [
        "uni", "use", "usu", "uti", "ure", "uri", "one", "once", "eu",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
    {
        return Some(false);
    }
    if ["hour", "honest", "heir"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Some(true);
    }
    Some("aeiou".contains(first))
}

/// The words of `text` the code wrote: every quoted string taken out, and
/// each token that is not a plain word replaced by a gap (None), so no
/// rule pairs words across it. Words keep the case they were written in.
fn words(text: &str, quoted: &[String]) -> Vec<Option<String>> {
    let mut t = text.to_string();
    // Only a quoted phrase is taken out: a one-word value ("other", a
    // kind the classifier chose) is the code's word, and a value with a
    // path or digits in it is a gap by the token rule below.
    let mut quoted: Vec<&String> = quoted
        .iter()
        .filter(|q| q.trim().contains(char::is_whitespace))
        .collect();
    quoted.sort_by_key(|q| std::cmp::Reverse(q.len()));
    for q in quoted {
        t = t.replace(q.as_str(), " \u{1} ");
    }
    let mut out = Vec::new();
    for raw in t.split_whitespace() {
        // A clause ends at , ; : ( ) and a full stop: no pair spans it.
        let lead = raw.starts_with(['(', '"', '\'', '[']);
        // A dotfile (".npmrc") is a name, not a word.
        if raw
            .trim_start_matches(['(', '"', '\'', '['])
            .starts_with('.')
        {
            out.push(None);
            continue;
        }
        let w = raw.trim_matches(|c: char| ",;:.()\"'[]!?".contains(c));
        let plain = !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphabetic() || c == '-' || c == '\'')
            && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
        if lead {
            out.push(None);
        }
        out.push(plain.then(|| w.to_string()));
        if raw.ends_with([',', ';', ':', ')', '.', '"', ']', '?', '!']) {
            out.push(None);
        }
    }
    out
}

/// The article, doubled-word and "is no … is" errors in `text`, with what
/// it quotes from the system (`quoted`) left out.
pub fn grammar(text: &str, quoted: &[String]) -> Vec<String> {
    let w = words(text, quoted);
    let mut out = Vec::new();
    for i in 0..w.len().saturating_sub(1) {
        let (Some(a), Some(b)) = (&w[i], &w[i + 1]) else {
            continue;
        };
        let al = a.to_ascii_lowercase();
        if al == b.to_ascii_lowercase() {
            out.push(format!("\"{a} {b}\": a word said twice"));
        }
        match (al.as_str(), vowel_sound(b)) {
            ("a", Some(true)) => out.push(format!("\"{a} {b}\": \"an\" before a vowel sound")),
            ("an", Some(false)) => out.push(format!("\"{a} {b}\": \"a\" before a consonant sound")),
            _ => {}
        }
    }
    // "is no X is": a noun phrase made the subject of a second verb.
    for i in 0..w.len() {
        let is = |j: usize| w.get(j).and_then(|x| x.as_deref()) == Some("is");
        if is(i) && w.get(i + 1).and_then(|x| x.as_deref()) == Some("no") {
            // A word or three after "no", then "is", within one clause.
            let after = w.iter().skip(i + 3).take(3);
            for x in after {
                match x.as_deref() {
                    None => break,
                    Some("is") => {
                        out.push("\"is no … is\": two verbs for one subject".to_string());
                        break;
                    }
                    Some(_) => {}
                }
            }
        }
    }
    out
}
