//! The layout rules of the README's module map, checked on the source:
//! probes are siblings over shared facts (src/facts, src/util) and never
//! import one another, and no two top-level modules import each other,
//! directly or round a longer loop. The scanner is checked on planted
//! sources first, so a scanner that sees nothing cannot pass for a clean
//! tree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// (module path of the file, text without line comments), for every .rs
/// file under `dir`. `src/probe/secrets/files.rs` is ["probe", "secrets",
/// "files"]; a mod.rs is its directory's module.
fn sources(root: &Path) -> Vec<(Vec<String>, String)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(Vec<String>, String)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).unwrap().with_extension("");
                let mut m: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if m.last().is_some_and(|l| l == "mod") {
                    m.pop();
                }
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((m, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The absolute module paths (as far as two segments below the crate) a
/// file refers to: `crate::a::b`, `crate::{a, b::c}`, `super::x` resolved
/// from the file's module (one level deeper inside `mod tests`).
fn references(module: &[String], text: &str) -> BTreeSet<Vec<String>> {
    let text = strip_comments(text);
    let mut out = BTreeSet::new();
    let tests_at = text.find("mod tests {").unwrap_or(text.len());
    let mut push = |base: Vec<String>, rest: &str| {
        let mut path = base;
        let mut rest = rest;
        loop {
            if let Some(r) = rest.strip_prefix('{') {
                // A group: each member's first segment.
                let end = r.find('}').unwrap_or(r.len());
                for member in r[..end].split(',') {
                    let id = ident_at(member.trim());
                    if !id.is_empty() && id != "self" {
                        let mut p = path.clone();
                        p.push(id.to_string());
                        out.insert(p);
                    }
                }
                return;
            }
            let id = ident_at(rest);
            if id.is_empty() {
                break;
            }
            path.push(id.to_string());
            rest = &rest[id.len()..];
            match rest.strip_prefix("::") {
                Some(r) if path.len() < 3 => rest = r,
                _ => break,
            }
        }
        out.insert(path);
    };
    for (i, _) in text.match_indices("crate::") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        push(Vec::new(), &text[i + "crate::".len()..]);
    }
    for (i, _) in text.match_indices("super::") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut base: Vec<String> = module.to_vec();
        if i > tests_at {
            base.push("tests".into());
        }
        let mut rest = &text[i..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        push(base, rest);
    }
    out
}

/// Probes are the modules directly under src/probe (its mod.rs is the
/// scheduler, which may name them all).
fn probe_imports(files: &[(Vec<String>, String)]) -> Vec<String> {
    let probes: BTreeSet<&str> = files
        .iter()
        .filter(|(m, _)| m.len() >= 2 && m[0] == "probe")
        .map(|(m, _)| m[1].as_str())
        .collect();
    let mut bad = Vec::new();
    for (m, text) in files {
        if m.len() < 2 || m[0] != "probe" {
            continue;
        }
        for r in references(m, text) {
            if r.len() >= 2 && r[0] == "probe" && r[1] != m[1] && probes.contains(r[1].as_str()) {
                bad.push(format!("{} -> {}", m.join("::"), r.join("::")));
            }
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

/// A loop among top-level modules, if there is one, as `a -> b -> a`.
fn top_level_cycle(files: &[(Vec<String>, String)]) -> Option<String> {
    let tops: BTreeSet<&str> = files
        .iter()
        .filter(|(m, _)| !m.is_empty() && m[0] != "lib" && m[0] != "main")
        .map(|(m, _)| m[0].as_str())
        .collect();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (m, text) in files {
        let Some(me) = m.first().map(String::as_str).filter(|t| tops.contains(t)) else {
            continue;
        };
        for r in references(m, text) {
            if let Some(o) = r.first().map(String::as_str) {
                if let Some(o) = tops.get(o) {
                    if *o != me {
                        edges.entry(me).or_default().insert(o);
                    }
                }
            }
        }
    }
    // Depth-first search with the path on a stack: a back edge is a loop.
    fn dfs<'a>(
        n: &'a str,
        edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<String> {
        state.insert(n, 1);
        stack.push(n);
        for &o in edges.get(n).into_iter().flatten() {
            match state.get(o).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| *s == o).unwrap();
                    let mut cyc: Vec<&str> = stack[from..].to_vec();
                    cyc.push(o);
                    return Some(cyc.join(" -> "));
                }
                0 => {
                    if let Some(c) = dfs(o, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    for &t in &tops {
        if state.get(t).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(t, &edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn planted(files: &[(&str, &str)]) -> Vec<(Vec<String>, String)> {
    files
        .iter()
        .map(|(m, t)| (m.split("::").map(String::from).collect(), t.to_string()))
        .collect()
}

#[test]
fn the_scanner_sees_planted_imports() {
    let tree = planted(&[
        ("probe", "pub mod a;\npub mod b;\nuse crate::probe::a::X;"),
        ("probe::a", "use crate::facts::mounts::MountFacts;\n"),
        ("probe::b", "use crate::probe::a::Thing;\n"),
        ("probe::c", "fn f() { super::a::go(); }\n"),
        ("probe::d::e", "use super::super::b;\nuse super::own;\n"),
        ("probe::f", "use crate::probe::{a, f::inner};\n"),
        (
            "probe::g",
            "// crate::probe::a in a comment is not an import\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::b::X;\n}\n",
        ),
    ]);
    assert_eq!(
        probe_imports(&tree),
        vec![
            "probe::b -> probe::a::Thing",
            "probe::c -> probe::a::go",
            "probe::d::e -> probe::b",
            "probe::f -> probe::a",
            "probe::g -> probe::b::X",
        ],
        "the scheduler (probe) may name probes; a comment is not an import; \
         `super::*` in a file's tests is the file itself, and `super::super` from there is probe"
    );

    let cyc = planted(&[
        ("a", "use crate::b::X;"),
        ("b", "fn f() { crate::c::go() }"),
        ("c", "use crate::{a, util::x};"),
        ("util", ""),
    ]);
    assert_eq!(top_level_cycle(&cyc).as_deref(), Some("a -> b -> c -> a"));
    let clean = planted(&[
        ("a", "use crate::b::X;"),
        ("b", "use crate::util::x;"),
        ("util", ""),
    ]);
    assert_eq!(top_level_cycle(&clean), None);
}

#[test]
fn no_probe_imports_another_probe() {
    let files = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(files.len() > 40, "the scan found the sources");
    let bad = probe_imports(&files);
    assert!(
        bad.is_empty(),
        "probes share data through src/facts and code through src/util, not by importing each other:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let files = sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    if let Some(c) = top_level_cycle(&files) {
        panic!("top-level modules import each other in a loop: {c}");
    }
}

/// Two binaries (DESIGN.md §16): the probe's crate (src/) names nothing of
/// the host tool's (crates/host), and depends on it only to test; the host
/// tool's modules import each other in no loop either.
#[test]
fn the_probe_never_imports_the_host_tool() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sources(&root.join("src"));
    let mut bad = Vec::new();
    for (m, text) in &files {
        let code = strip_comments(text);
        for host in [
            "selfprobe_host",
            "crate::outside",
            "crate::compare",
            "crate::registry",
        ] {
            if code.contains(host) {
                bad.push(format!("src/{}.rs names {host}", m.join("/")));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The manifest: selfprobe-host only among the dev-dependencies.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
        } else if line.starts_with("selfprobe-host") {
            assert_eq!(
                section, "[dev-dependencies]",
                "Cargo.toml: selfprobe-host under {section}"
            );
        }
    }
    let host = sources(&root.join("crates/host/src"));
    assert!(host.len() > 20, "the scan found the host tool's sources");
    if let Some(c) = top_level_cycle(&host) {
        panic!("the host tool's top-level modules import each other in a loop: {c}");
    }
    // The check sees a planted import.
    let planted = planted(&[("facts::x", "use selfprobe_host::compare::diff::Diff;\n")]);
    assert!(strip_comments(&planted[0].1).contains("selfprobe_host"));
}
