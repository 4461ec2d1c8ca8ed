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
