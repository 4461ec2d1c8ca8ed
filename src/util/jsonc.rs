//! JSON with comments: VS Code's dialect (JSONC), which devcontainer.json,
//! agents' settings and MCP configurations are written in. `//` and
//! `/* */` comments and trailing commas go; strings stay as they are.

use serde_json::Value;

/// JSON with `//` and `/* */` comments and trailing commas removed, strings
/// left as they are. Plain JSON passes through unchanged.
pub fn strip_jsonc(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut in_str = false;
    // Where in `out` a comma sits that may turn out to be trailing.
    let mut pending_comma: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b',' => {
                pending_comma = Some(out.len());
                out.push(c);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(p) = pending_comma.take() {
                    out[p] = b' ';
                }
                out.push(c);
                i += 1;
            }
            c if c.is_ascii_whitespace() => {
                out.push(c);
                i += 1;
            }
            _ => {
                pending_comma = None;
                in_str = c == b'"';
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses JSON or JSONC; None when it is neither.
pub fn parse_json(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&strip_jsonc(text)).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_comments_and_trailing_commas() {
        let t = "{\n // a comment\n \"servers\": { \"a\": {\"url\": \"http://x//y\", /* c */ \"args\": [1,2,],},\n },\n}";
        let v = parse_json(t).unwrap();
        assert_eq!(v["servers"]["a"]["url"], "http://x//y");
        assert_eq!(v["servers"]["a"]["args"].as_array().unwrap().len(), 2);
        assert!(parse_json("not json").is_none());
        // Broken input never panics.
        for s in ["\"", "/*", "{\"a\":\"\\", "é,]", ",,}}"] {
            let _ = parse_json(s);
        }
    }

    #[test]
    fn devcontainer_jsonc() {
        let t = "{\n // comment\n \"image\": \"a//b\", /* x */\n \"features\": {\"f\": {},},\n}";
        let v: serde_json::Value = serde_json::from_str(&strip_jsonc(t)).unwrap();
        assert_eq!(v["image"], "a//b");
        assert!(v["features"]["f"].is_object());
        let t = "{\"s\": \"a,}\", \"e\": \"q\\\"//\"}";
        let v: serde_json::Value = serde_json::from_str(&strip_jsonc(t)).unwrap();
        assert_eq!(v["s"], "a,}");
    }
}
