//! Structured configuration files as the agent rules and the MCP reader see
//! them: JSON (with the comments and trailing commas VS Code allows) read
//! by dotted paths, a key scan that works on JSON, YAML, TOML and INI alike,
//! and the expiry times such files state. Values pass through here only to
//! be judged; what leaves is key names, paths and numbers.

use serde_json::Value;

use super::rules::{env_secrets, placeholder};
use crate::util::jsonc::parse_json;

/// Every value at a dotted path (`a.b.c`, `*` any object key or array
/// index), with the concrete path it was found at. Keys holding dots are
/// matched whole when the path has no further component to split off.
pub fn at_path<'a>(v: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    let comps: Vec<&str> = path.split('.').filter(|c| !c.is_empty()).collect();
    let mut acc: Vec<(String, &Value)> = vec![(String::new(), v)];
    for c in comps {
        let mut next = Vec::new();
        for (p, x) in acc {
            let join = |k: &str| {
                if p.is_empty() {
                    k.to_string()
                } else {
                    format!("{p}.{k}")
                }
            };
            match (c, x) {
                ("*", Value::Object(m)) => {
                    next.extend(m.iter().take(1000).map(|(k, y)| (join(k), y)));
                }
                ("*", Value::Array(a)) => {
                    next.extend(
                        a.iter()
                            .take(1000)
                            .enumerate()
                            .map(|(i, y)| (join(&i.to_string()), y)),
                    );
                }
                (k, Value::Object(m)) => {
                    if let Some(y) = m.get(k) {
                        next.push((join(k), y));
                    }
                }
                _ => {}
            }
        }
        acc = next;
    }
    acc
}

/// A string field that holds something: not empty, not a reference or an
/// example. Every such value is a credential for the rules that ask.
pub fn holds_secret(v: &Value) -> bool {
    match v {
        Value::String(s) => !s.trim().is_empty() && !placeholder(s),
        _ => false,
    }
}

/// Seconds since the epoch from a stated expiry: milliseconds or seconds
/// (numbers, or numbers in strings), or an RFC 3339 time.
pub fn expiry_secs(v: &Value, unit: super::rules::ExpiresUnit) -> Option<i64> {
    use super::rules::ExpiresUnit;
    let num = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    let secs = match unit {
        ExpiresUnit::Ms => num.map(|n| (n / 1000.0) as i64),
        ExpiresUnit::S => num.map(|n| n as i64),
        ExpiresUnit::Rfc3339 => v.as_str().and_then(parse_rfc3339),
    };
    // Between the epoch and the year 9999; anything else is not a time.
    secs.filter(|s| (0..=253_402_300_799).contains(s))
}

/// `2025-06-01T12:00:00Z`, with optional fractions and a `+hh:mm` offset
/// (or `UTC`, as some AWS caches write). None for anything else.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 19 || !s.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "" | "Z" | "z" | "UTC" => 0,
        r if (r.starts_with('+') || r.starts_with('-')) && r.len() == 6 => {
            let oh: i64 = r.get(1..3)?.parse().ok()?;
            let om: i64 = r.get(4..6)?.parse().ok()?;
            let o = oh * 3600 + om * 60;
            if r.starts_with('-') {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// host::civil_from_days).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Where a secret-keys scan found values: the key names (or, for a value a
/// value rule recognises under a key not asked for, that key), in order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KeyScan {
    pub keys: Vec<String>,
}

impl KeyScan {
    fn add(&mut self, k: &str) {
        let k = super::short(k, 64);
        if !self.keys.contains(&k) && self.keys.len() < 10 {
            self.keys.push(k);
        }
    }
}

fn key_wanted(keys: &[String], k: &str) -> bool {
    keys.iter().any(|w| w.eq_ignore_ascii_case(k))
}

/// Looks for `keys` holding a value in a JSON document (at any depth) or,
/// when the text is not JSON, in YAML/TOML/INI lines (`key: v`, `key = v`,
/// `"key": "v"`, and `- v` items under a `key:` line).
pub fn scan_keys(text: &str, keys: &[String]) -> KeyScan {
    let mut out = KeyScan::default();
    if let Some(v) = parse_json(text) {
        walk_json(&v, "", keys, &mut out, 0);
        return out;
    }
    let rules = env_secrets();
    let mut list_key: Option<(String, usize)> = None;
    for line in text.lines().take(100_000) {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') || t.starts_with("//") {
            continue;
        }
        if let Some(item) = t.strip_prefix("- ").or_else(|| (t == "-").then_some("")) {
            if let Some((k, ind)) = &list_key {
                if indent >= *ind {
                    let item = unquote(item);
                    if (key_wanted(keys, k) && !item.is_empty() && !placeholder(item))
                        || rules.value_rule(item).is_some()
                    {
                        out.add(k);
                    }
                    continue;
                }
            }
        }
        let body = t.strip_prefix("- ").unwrap_or(t);
        let sep = body.find([':', '=']);
        let Some(i) = sep else {
            if rules.value_rule(t).is_some() {
                out.add("(value)");
            }
            continue;
        };
        let k = unquote(body[..i].trim());
        let v = unquote(body[i + 1..].trim().trim_end_matches(','));
        if v.is_empty() {
            list_key = Some((k.to_string(), indent));
            continue;
        }
        list_key = None;
        if (key_wanted(keys, k) && !placeholder(v)) || rules.value_rule(v).is_some() {
            out.add(k);
        }
    }
    out
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
        .unwrap_or(s)
}

fn walk_json(v: &Value, key: &str, keys: &[String], out: &mut KeyScan, depth: usize) {
    if depth > 32 {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter().take(10_000) {
                walk_json(x, k, keys, out, depth + 1);
            }
        }
        Value::Array(a) => {
            for x in a.iter().take(10_000) {
                walk_json(x, key, keys, out, depth + 1);
            }
        }
        Value::String(s)
            if (!key.is_empty()
                && key_wanted(keys, key)
                && !s.trim().is_empty()
                && !placeholder(s))
                || env_secrets().value_rule(s).is_some() =>
        {
            out.add(if key.is_empty() { "(value)" } else { key });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_paths_with_wildcards() {
        let v: Value = serde_json::from_str(
            r#"{"github.com:Iv1.x":{"oauth_token":"t"},"h":{"user":"u"},"a":[{"k":1},{"k":2}]}"#,
        )
        .unwrap();
        let hits: Vec<String> = at_path(&v, "*.oauth_token")
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(hits, vec!["github.com:Iv1.x.oauth_token"]);
        assert_eq!(at_path(&v, "a.*.k").len(), 2);
        assert!(at_path(&v, "nope.x").is_empty());
    }

    #[test]
    fn times() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339("2024-02-29T12:00:00.123Z"),
            Some(1_709_208_000)
        );
        assert_eq!(
            parse_rfc3339("2024-02-29T13:00:00+01:00"),
            Some(1_709_208_000)
        );
        assert_eq!(parse_rfc3339("2024-02-29T12:00:00UTC"), Some(1_709_208_000));
        assert_eq!(parse_rfc3339("2024-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
        for z in [-1000i64, 0, 19_000, 20_513] {
            let (y, m, d) = crate::host::civil_from_days(z);
            assert_eq!(days_from_civil(y, m as i64, d as i64), z);
        }
        use crate::probe::secrets::rules::ExpiresUnit;
        let ms: Value = serde_json::from_str("1769159945362.7791").unwrap();
        assert_eq!(expiry_secs(&ms, ExpiresUnit::Ms), Some(1_769_159_945));
        for huge in ["1e300", "-1e300", "-5"] {
            let v: Value = serde_json::from_str(huge).unwrap();
            assert_eq!(expiry_secs(&v, ExpiresUnit::S), None, "{huge}");
        }
    }

    #[test]
    fn key_scans_json_yaml_and_lists() {
        let keys = vec!["apiKey".to_string(), "api-key".to_string()];
        let j =
            r#"{"models":[{"title":"a","apiKey":"q8Zr2mVx9Lk3"},{"apiKey":"${{ secrets.K }}"}]}"#;
        assert_eq!(scan_keys(j, &keys).keys, vec!["apiKey"]);
        let y = "models:\n  - name: x\n    apiKey: ${{ secrets.OPENAI }}\n";
        assert!(scan_keys(y, &keys).keys.is_empty());
        let y = "models:\n  - name: x\n    apiKey: q8Zr2mVx9Lk3\n";
        assert_eq!(scan_keys(y, &keys).keys, vec!["apiKey"]);
        let a = "model: sonnet\napi-key:\n  - gemini=q8Zr2mVx9Lk3\n";
        assert_eq!(scan_keys(a, &keys).keys, vec!["api-key"]);
        let gh = format!("token = \"ghp_{}\"\n", "a1B2".repeat(9));
        assert_eq!(scan_keys(&gh, &keys).keys, vec!["token"]);
        assert!(scan_keys("model: gpt-4o\n", &keys).keys.is_empty());
    }
}
