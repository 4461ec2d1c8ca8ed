//! A container's name as the stem of its files in an inspection directory
//! (docs/inspection-directory.md): `<stem>.json`, `<stem>.intoto.json`,
//! `<stem>.teardown.intoto.json`. Names are chosen by whoever starts the
//! container, so the stem must be injective and must never spell another
//! file of the directory: a container named `web.intoto` beside `web`, or
//! one named `inspection`, would otherwise overwrite web's envelope or the
//! inspection itself.
//!
//! The rule: ASCII letters, digits, `_` and `-` are kept; every other byte
//! of the name (`.` included, so a stem never holds a dot and the suffixes
//! cannot be forged) is written `%XX` (upper-case hex); a stem equal to one
//! of the directory's own names (any case) has its first character written
//! so too; the empty name is `%`. A stem longer than MAX_STEM bytes keeps
//! its first part and ends in `~` and 16 hex digits of the name's SHA-256
//! (`~` is never kept, so no other stem looks like it).

use std::fmt::Write;

/// The names of the inspection directory's own files, without their
/// extensions: inspection.json, teardown.json and teardown.pub, nonces,
/// signing.pub.
pub const RESERVED: &[&str] = &["inspection", "teardown", "nonces", "signing"];

/// Longer stems are cut (a file name may have 255 bytes, and the longest
/// suffix is `.teardown.intoto.json`).
pub const MAX_STEM: usize = 200;
const KEEP_WHEN_CUT: usize = 120;

/// The stem of a container's files; a Docker name's leading `/` is not part
/// of the name.
pub fn stem(name: &str) -> String {
    let name = name.strip_prefix('/').unwrap_or(name);
    if name.is_empty() {
        return "%".into();
    }
    let mut s = String::with_capacity(name.len());
    let reserved = RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name));
    for (i, b) in name.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        if keep && !(reserved && i == 0) {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    if s.len() > MAX_STEM {
        // Never inside a %XX: back up to its start.
        let mut cut = KEEP_WHEN_CUT;
        while cut > 0 && s.as_bytes()[cut.saturating_sub(2)..cut].contains(&b'%') {
            cut -= 1;
        }
        let hash = crate::util::digest::sha256_hex(name.as_bytes());
        s.truncate(cut);
        let _ = write!(s, "~{}", &hash[..16]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_make_paths_or_another_file() {
        assert_eq!(stem("/web-1"), "web-1");
        assert_eq!(stem("a/../b"), "a%2F%2E%2E%2Fb");
        assert_eq!(stem(".."), "%2E%2E");
        assert_eq!(stem(""), "%");
        assert_eq!(stem("/"), "%");
        assert_eq!(stem("ok_name.2"), "ok_name%2E2");
        assert_eq!(stem("inspection"), "%69nspection");
        assert_eq!(stem("Teardown"), "%54eardown");
        assert_eq!(stem("nonces"), "%6Eonces");
        assert_eq!(stem("signing"), "%73igning");
        assert_eq!(stem("inspection2"), "inspection2");
        assert_eq!(stem("x y\n"), "x%20y%0A");
        assert_eq!(stem("é"), "%C3%A9");
    }

    #[test]
    fn suffixes_cannot_be_forged_and_stems_are_distinct() {
        let names = [
            "X",
            "X.intoto",
            "X.teardown",
            "X.teardown.intoto",
            "X.json",
            "inspection",
            "teardown",
            "nonces",
            "signing",
            "signing.pub",
            "x",
            "X_2E",
            "X%2E",
            "/X",
            "//X",
            "",
            "%",
        ];
        let mut files = std::collections::BTreeMap::new();
        for n in names {
            let s = stem(n);
            assert!(!s.contains('.') && !s.contains('/'), "{n:?}: {s}");
            for suffix in [".json", ".intoto.json", ".teardown.intoto.json"] {
                let f = format!("{s}{suffix}");
                for own in [
                    "inspection.json",
                    "teardown.json",
                    "teardown.pub",
                    "nonces",
                    "signing.pub",
                ] {
                    assert_ne!(f, own, "{n:?}");
                }
                if let Some(other) = files.insert(f.clone(), n) {
                    // "/X" is Docker's spelling of "X": the same container.
                    assert!((other, n) == ("X", "/X"), "{other:?} and {n:?} share {f}");
                }
            }
        }
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let a = "a".repeat(300);
        let b = format!("{}b", "a".repeat(299));
        let (sa, sb) = (stem(&a), stem(&b));
        assert!(sa.len() <= MAX_STEM && sb.len() <= MAX_STEM);
        assert_ne!(sa, sb);
        assert!(sa.starts_with(&"a".repeat(120)) && sa.contains('~'));
        let dots = ".".repeat(100);
        let s = stem(&dots);
        assert!(s.len() <= MAX_STEM, "{s}");
        let head = s.split('~').next().unwrap();
        assert_eq!(head.len() % 3, 0, "no %XX cut in half: {s}");
        assert_eq!(stem(&"b".repeat(200)), "b".repeat(200));
    }
}
