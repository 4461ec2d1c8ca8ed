//! Finding codes are a stable API (SARIF ruleId, policy keys, docs): every
//! code the source names must be one probes/codes.toml defines. A finding
//! is made from a `Code` (generated from the catalog by build.rs), so an
//! unknown one there does not compile (the compile_fail doctest in
//! src/finding.rs); this scan covers the codes still written as strings
//! (a finding's code compared, matched or named in a message), so a typo
//! there fails here instead of shipping as a comparison that never holds.

use std::collections::BTreeSet;
use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
}

/// String literals of the shape `family.name`, for the families the
/// catalog uses.
fn code_literals(text: &str, families: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices('"') {
        let rest = &text[i + 1..];
        let Some(end) = rest.find('"') else { break };
        let lit = &rest[..end];
        if let Some((fam, name)) = lit.split_once('.') {
            // A prefix such as "secret.token-" (starts_with) is not a code.
            let shaped = !name.is_empty()
                && !name.ends_with('-')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && name.as_bytes()[0].is_ascii_lowercase();
            if shaped && families.contains(fam) {
                found.push(lit.to_string());
            }
        }
    }
    found
}

/// `text` with every item under a `#[cfg(test)]` attribute blanked (its
/// bytes turned to spaces, its newlines kept): the attribute, any further
/// attributes, and the item up to its `;` or its closing brace. Strings,
/// raw strings, char literals and comments are skipped while braces are
/// counted, so a `"{"` in a test's format string does not end it early.
/// Production code after an early test item (a `#[cfg(test)] fn` helper
/// halfway down a file) is kept.
fn outside_tests(text: &str) -> String {
    const ATTR: &[u8] = b"#[cfg(test)]";
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        if let Some(skip) = literal_len(b, i) {
            i += skip;
            continue;
        }
        if b[i..].starts_with(ATTR) {
            let end = item_end(b, i + ATTR.len());
            for c in &mut out[i..end] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
            i = end;
            continue;
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The length of the string, char literal or comment starting at `i`, if
/// one does.
fn literal_len(b: &[u8], i: usize) -> Option<usize> {
    let at = |k: usize| b.get(k).copied();
    let word = |k: usize| b[k].is_ascii_alphanumeric() || b[k] == b'_';
    // br"…" is a raw string too; `for"` is not Rust.
    let word_before = i > 0 && word(i - 1) && !(b[i - 1] == b'b' && (i < 2 || !word(i - 2)));
    match b[i] {
        b'/' if at(i + 1) == Some(b'/') => {
            let n = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .unwrap_or(b.len() - i);
            Some(n)
        }
        b'/' if at(i + 1) == Some(b'*') => {
            let (mut k, mut depth) = (i + 2, 1);
            while k < b.len() && depth > 0 {
                if b[k..].starts_with(b"/*") {
                    depth += 1;
                    k += 2;
                } else if b[k..].starts_with(b"*/") {
                    depth -= 1;
                    k += 2;
                } else {
                    k += 1;
                }
            }
            Some(k - i)
        }
        b'"' => {
            let mut k = i + 1;
            while k < b.len() && b[k] != b'"' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            Some(k + 1 - i)
        }
        b'r' if !word_before && matches!(at(i + 1), Some(b'"') | Some(b'#')) => {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if at(i + 1 + hashes) != Some(b'"') {
                return None;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let n = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map(|p| start + p + close.len())
                .unwrap_or(b.len());
            Some(n - i)
        }
        // A char literal ('{', '\n', '\''); a lifetime ('a) is not one.
        b'\'' if at(i + 1) == Some(b'\\') => {
            let n = b[i + 3..].iter().position(|&c| c == b'\'').map(|p| p + 4);
            n.or(Some(1))
        }
        b'\'' if at(i + 2) == Some(b'\'') => Some(3),
        _ => None,
    }
}

/// Where the item that starts after an attribute at `i` ends: past the
/// first `;` outside any bracket, or past the brace that closes its first
/// `{`, whichever comes first.
fn item_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        if let Some(skip) = literal_len(b, i) {
            i += skip;
            continue;
        }
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => {
                let mut braces = 1;
                i += 1;
                while i < b.len() && braces > 0 {
                    if let Some(skip) = literal_len(b, i) {
                        i += skip;
                        continue;
                    }
                    match b[i] {
                        b'{' => braces += 1,
                        b'}' => braces -= 1,
                        _ => {}
                    }
                    i += 1;
                }
                return i;
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

#[test]
fn every_code_the_source_names_is_in_the_catalog() {
    let codes: BTreeSet<String> = selfprobe::finding::catalog()
        .iter()
        .map(|c| c.code.to_string())
        .collect();
    let families: BTreeSet<String> = codes
        .iter()
        .map(|c| c.split_once('.').unwrap().0.to_string())
        .collect();
    // Both binaries' sources: the probe's and the host tool's.
    let mut files = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    sources(&root.join("src"), &mut files);
    sources(&root.join("crates/host/src"), &mut files);
    let mut unknown = Vec::new();
    let mut named = 0;
    for (path, text) in &files {
        // src/compare names `selfprobe-host diff`'s fact keys (boundary.kind,
        // storage.mount.…), a namespace of their own that shares some
        // families' first words with the codes; it makes no finding.
        if path.contains("/src/compare/") {
            continue;
        }
        // Unit tests name unknown codes on purpose (policy errors): every
        // line outside #[cfg(test)] items is read, the items are not.
        let text = outside_tests(text);
        for lit in code_literals(&text, &families) {
            named += 1;
            if !codes.contains(&lit) {
                unknown.push(format!("{path}: \"{lit}\""));
            }
        }
    }
    assert!(named > 10, "the scan found only {named} code literals");
    assert!(
        unknown.is_empty(),
        "codes not in probes/codes.toml:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_scan_sees_a_misspelt_code() {
    let families: BTreeSet<String> = ["mount".to_string()].into();
    assert_eq!(
        code_literals(r#"Finding::new("mount.host-rot", s, m)"#, &families),
        ["mount.host-rot"]
    );
    assert!(code_literals(r#"let p = "mount.d/x";"#, &families).is_empty());
}

#[test]
fn production_code_after_an_early_test_item_is_read() {
    let families: BTreeSet<String> = ["mount".to_string(), "artifact".to_string()].into();
    let src = r##"
fn early() -> &'static str { "mount.host-root" }

#[cfg(test)]
fn wild(p: &[u8]) -> bool { let _ = ("{", '{', r#"}"#, b'}'); /* } */ p.is_empty() }

#[cfg(test)]
use std::collections::BTreeSet;

fn later<'a>(x: &'a str) -> Finding {
    // A code built after the test helper, misspelt: the scan must see it.
    Finding::new("artifact.persistant", x, format!("{{}} {x}"))
}

#[cfg(test)]
#[allow(dead_code)]
mod tests {
    fn planted() { let _ = "mount.not-a-code"; let _ = '}'; }
}

fn last() -> &'static str { "mount.socket" }
"##;
    let kept = outside_tests(src);
    assert_eq!(
        kept.lines().count(),
        src.lines().count(),
        "line numbers kept"
    );
    assert_eq!(
        code_literals(&kept, &families),
        ["mount.host-root", "artifact.persistant", "mount.socket"],
        "{kept}"
    );
    // Cutting at the first #[cfg(test)], as the scan once did, loses the
    // misspelt code and the one after it.
    let cut = src.split("#[cfg(test)]").next().unwrap();
    assert_eq!(code_literals(cut, &families), ["mount.host-root"]);
}
