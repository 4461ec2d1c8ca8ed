//! Finding codes are a stable API (SARIF ruleId, policy keys, docs): every
//! code the source names must be one probes/codes.toml defines, so a typo
//! fails here instead of shipping as an unknown code.

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
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut unknown = Vec::new();
    let mut named = 0;
    for (path, text) in &files {
        // src/compare names `selfprobe diff`'s fact keys (boundary.kind,
        // storage.mount.…), a namespace of their own that shares some
        // families' first words with the codes; it makes no finding.
        if path.contains("/src/compare/") {
            continue;
        }
        // Unit tests name unknown codes on purpose (policy errors).
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for lit in code_literals(text, &families) {
            named += 1;
            if !codes.contains(&lit) {
                unknown.push(format!("{path}: \"{lit}\""));
            }
        }
    }
    assert!(named > 50, "the scan found only {named} code literals");
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
