//! The one sanitiser for attacker-controlled text (paths, process names,
//! engine and server answers, policy values echoed in errors) on its way to
//! a terminal or a log. The character set is fd's (sharkdp/fd, its own
//! `src/sanitize.rs`): C0 and C1 controls and DEL, bidi overrides and isolates,
//! zero-width and invisible formatting characters, and Unicode tag
//! characters, any of which can hide or reorder what a reader sees.

use std::fmt::Write;

/// True for a character that must not reach a terminal as it is.
pub fn is_hazard(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // Bidi embeddings, overrides, isolates and marks.
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
            // Zero-width and invisible formatting characters.
            | '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2065}' | '\u{FEFF}' | '\u{00AD}'
            | '\u{180E}' | '\u{034F}'
            // Unicode tags (invisible copies of ASCII).
            | '\u{E0000}'..='\u{E007F}')
}

/// `s` with every hazard shown as `\u{XX}`, so a reader sees that it is
/// there and what it is.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_hazard(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// As `escape`, for bytes that may not be UTF-8: invalid sequences become
/// U+FFFD first.
/// A value from the environment made short and inert for the report: its
/// control characters dropped, at most `n` characters kept. (What is kept
/// is escaped again on its way to a terminal, by `escape`.)
pub fn short(s: &str, n: usize) -> String {
    s.chars().filter(|c| !c.is_control()).take(n).collect()
}

/// An answer from a server or a key file's label: printable ASCII and
/// spaces only, at most `n` characters.
pub fn ascii(s: &str, n: usize) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(n)
        .collect()
}

pub fn escape_bytes(b: &[u8]) -> String {
    escape(&String::from_utf8_lossy(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_bidi_zero_width_and_tags() {
        assert_eq!(escape("/mnt/a\nb"), "/mnt/a\\u{a}b");
        assert_eq!(escape("\x1b[2J"), "\\u{1b}[2J");
        assert_eq!(escape("x\u{202E}y"), "x\\u{202e}y");
        assert_eq!(escape("\u{9b}\u{7f}"), "\\u{9b}\\u{7f}");
        assert_eq!(
            escape("a\u{200B}b\u{2060}c\u{FEFF}d\u{AD}"),
            "a\\u{200b}b\\u{2060}c\\u{feff}d\\u{ad}"
        );
        assert_eq!(escape("t\u{E0041}\u{E007F}"), "t\\u{e0041}\\u{e007f}");
        assert_eq!(escape("ok /päth 漢字 😀"), "ok /päth 漢字 😀");
        assert_eq!(escape_bytes(b"a\xffb"), "a\u{FFFD}b");
    }
}
