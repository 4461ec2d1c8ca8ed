//! Plain-text layout for the explanations `selfprobe explain` prints.

/// Words of `text` filled into lines of at most `width` columns.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for w in text.split_whitespace() {
        if line > 0 && line + 1 + w.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(w);
        line += w.len();
    }
    out
}

/// Initialisms said letter by letter when they start a word ("an SSH key",
/// "an MCP server"); lower case, as they stand in kind names.
const SPELLED: &[&str] = &[
    "ssh", "ssl", "sftp", "smtp", "smb", "sql", "mcp", "lsm", "html", "http", "https", "nfs",
    "rsa", "fbi", "gpg", "url", "uid", "usb", "xml", "oci", "jwt", "pat", "tls",
];

/// "a" or "an" for `word`, by how it is said: vowel letters say "an" but
/// for a "you" or "won" sound (unique, user, one), an initialism goes by
/// its first letter's name (an SSH, a URL), and a silent h says "an".
pub fn article(word: &str) -> &'static str {
    let first: String = word
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_string();
    let lower = first.to_ascii_lowercase();
    let spelled = SPELLED.contains(&lower.as_str())
        || (first.len() > 1 && first.chars().all(|c| c.is_ascii_uppercase()));
    let vowel_sound = if spelled {
        // a e f h i l m n o r s x: letter names that start with a vowel sound.
        lower.starts_with(['a', 'e', 'f', 'h', 'i', 'l', 'm', 'n', 'o', 'r', 's', 'x'])
    } else if ["uni", "use", "usu", "uti", "one", "once", "eu"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        false
    } else if ["hour", "honest", "heir"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        true
    } else {
        lower.starts_with(['a', 'e', 'i', 'o', 'u'])
    };
    if vowel_sound {
        "an"
    } else {
        "a"
    }
}

/// Text of the report that is usually a constant of the probe's (a kind, a
/// probe's name, a control's key): borrowed when the probe writes it, owned
/// when a report is read back (the host tool, `verify`). Serialized as the
/// string either way. Here, below every module that fills the report, so
/// facts and probes name it without importing the model (model re-exports
/// it).
pub type Text = std::borrow::Cow<'static, str>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn articles_by_sound() {
        for (w, a) in [
            ("other", "an"),
            ("unrecognised", "an"),
            ("inline-shell", "an"),
            ("os-keystore", "an"),
            ("store", "a"),
            ("cache", "a"),
            ("ssh-askpass", "an"),
            ("SSH", "an"),
            ("MCP", "an"),
            ("URL", "a"),
            ("user", "a"),
            ("unique", "a"),
            ("one", "a"),
            ("hour", "an"),
            ("host", "a"),
            ("vscode-git-ipc", "a"),
            ("gh", "a"),
            ("", "a"),
        ] {
            assert_eq!(article(w), a, "{w}");
        }
    }
}
