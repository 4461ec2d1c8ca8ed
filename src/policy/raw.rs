//! The policy file's shape, read from toml's own parse tree (`DeTable`,
//! with the spans behind `file:line:column`) instead of through serde:
//! deriving `Deserialize` for these types instantiated toml's deserializer
//! once per type, 0.1 MB of the shipped binary (bench/RESULTS.md, "Size,
//! issue 24"). Every error is the one `toml::from_str` gave, message and
//! span, down to serde's wording ("invalid type: integer `5`, expected a
//! string", "unknown field `x`, expected one of …", "missing field
//! `code`"), found in the order serde found them: the keys of a table in
//! sorted order, a missing field after the table's last key. The tests
//! hold this to the serde reading over many documents (tests below).

use std::collections::BTreeMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

pub(super) type Value<'a> = Spanned<DeValue<'a>>;

pub(super) struct Raw<'a> {
    pub workspace: Option<RawWorkspace>,
    pub network: Option<RawNetwork<'a>>,
    pub capabilities: Option<RawCapabilities>,
    pub secrets: Option<RawSecrets>,
    pub mcp: Option<RawMcp>,
    pub exception: Vec<Spanned<RawException>>,
    pub severity: BTreeMap<Spanned<String>, Spanned<String>>,
    pub parity: Option<RawParity>,
    pub retain: Vec<Spanned<RawRetain>>,
}

#[derive(Default)]
pub(super) struct RawParity {
    pub allow: Vec<Spanned<String>>,
}

pub(super) struct RawRetain {
    pub volume: Spanned<String>,
    pub owner: Option<String>,
    pub reason: Option<String>,
    pub expires: Option<Spanned<String>>,
}

#[derive(Default)]
pub(super) struct RawWorkspace {
    pub path: Option<Spanned<String>>,
    pub allow_mounts: Vec<Spanned<String>>,
    pub deny: Vec<Spanned<String>>,
}

#[derive(Default)]
pub(super) struct RawNetwork<'a> {
    pub allow: Vec<Value<'a>>,
    pub deny: Vec<Value<'a>>,
    pub defaults: bool,
    pub timeout: Option<Spanned<String>>,
}

#[derive(Default)]
pub(super) struct RawCapabilities {
    pub allow: Vec<Spanned<String>>,
}

#[derive(Default)]
pub(super) struct RawSecrets {
    pub max_token_ttl: Option<Spanned<String>>,
}

#[derive(Default)]
pub(super) struct RawMcp {
    pub approved: Option<Vec<Spanned<String>>>,
}

pub(super) struct RawException {
    pub code: Spanned<String>,
    pub subject: Option<String>,
    pub owner: Option<String>,
    pub reason: Option<String>,
    pub expires: Option<Spanned<String>>,
}

/// What `toml::from_str` reported: its message and where.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ReadError {
    pub message: String,
    pub span: Option<Range<usize>>,
}

type R<T> = Result<T, ReadError>;

fn at(span: Range<usize>, message: impl Into<String>) -> ReadError {
    ReadError {
        message: message.into(),
        span: Some(span),
    }
}

/// Parses `text` and reads it as the policy's sections.
pub(super) fn read(text: &str) -> R<Raw<'_>> {
    let root = DeTable::parse(text).map_err(|e| ReadError {
        message: e.message().to_string(),
        span: e.span(),
    })?;
    let span = root.span();
    raw(&Spanned::new(span, DeValue::Table(root.into_inner())))
}

/// The policy's sections, in the order serde's error messages name them.
const ROOT_FIELDS: &[&str] = &[
    "workspace",
    "network",
    "capabilities",
    "secrets",
    "mcp",
    "exception",
    "severity",
    "parity",
    "retain",
];

fn raw<'a>(v: &Value<'a>) -> R<Raw<'a>> {
    let mut r = Raw {
        workspace: None,
        network: None,
        capabilities: None,
        secrets: None,
        mcp: None,
        exception: Vec::new(),
        severity: BTreeMap::new(),
        parity: None,
        retain: Vec::new(),
    };
    fields(
        v,
        "Raw",
        ROOT_FIELDS,
        &[false, false, false, false, false, true, true, false, true],
        |key, v| {
            match key {
                "workspace" => r.workspace = Some(workspace(v)?),
                "network" => r.network = Some(network(v)?),
                "capabilities" => r.capabilities = Some(capabilities(v)?),
                "secrets" => r.secrets = Some(secrets(v)?),
                "mcp" => r.mcp = Some(mcp(v)?),
                "exception" => r.exception = seq(v, |e| Ok(Spanned::new(e.span(), exception(e)?)))?,
                "severity" => r.severity = severity(v)?,
                "parity" => r.parity = Some(parity(v)?),
                _ => r.retain = seq(v, |e| Ok(Spanned::new(e.span(), retain(e)?)))?,
            }
            Ok(())
        },
    )?;
    Ok(r)
}

fn workspace(v: &Value<'_>) -> R<RawWorkspace> {
    let mut w = RawWorkspace::default();
    fields(
        v,
        "RawWorkspace",
        &["path", "allow_mounts", "deny"],
        &[false, true, true],
        |k, v| {
            match k {
                "path" => w.path = Some(string(v)?),
                "allow_mounts" => w.allow_mounts = seq(v, string)?,
                _ => w.deny = seq(v, string)?,
            }
            Ok(())
        },
    )?;
    Ok(w)
}

fn network<'a>(v: &Value<'a>) -> R<RawNetwork<'a>> {
    let mut n = RawNetwork::default();
    const FIELDS: &[&str] = &["allow", "deny", "defaults", "timeout"];
    fields(
        v,
        "RawNetwork",
        FIELDS,
        &[true, true, true, false],
        |k, v| {
            match k {
                "allow" => n.allow = seq(v, any)?,
                "deny" => n.deny = seq(v, any)?,
                "defaults" => n.defaults = boolean(v)?,
                _ => n.timeout = Some(string(v)?),
            }
            Ok(())
        },
    )?;
    Ok(n)
}

fn capabilities(v: &Value<'_>) -> R<RawCapabilities> {
    let allow = one_field(v, "RawCapabilities", "allow", true, |v| seq(v, string))?;
    Ok(RawCapabilities {
        allow: allow.unwrap_or_default(),
    })
}

fn secrets(v: &Value<'_>) -> R<RawSecrets> {
    Ok(RawSecrets {
        max_token_ttl: one_field(v, "RawSecrets", "max_token_ttl", false, string)?,
    })
}

fn mcp(v: &Value<'_>) -> R<RawMcp> {
    Ok(RawMcp {
        approved: one_field(v, "RawMcp", "approved", false, |v| seq(v, string))?,
    })
}

/// A struct of one field (`fields` with one name): its value, if given.
fn one_field<'a, T>(
    v: &Value<'a>,
    name: &str,
    field: &str,
    defaulted: bool,
    read: impl Fn(&Value<'a>) -> R<T>,
) -> R<Option<T>> {
    let mut got = None;
    fields(v, name, &[field], &[defaulted], |_, v| {
        got = Some(read(v)?);
        Ok(())
    })?;
    Ok(got)
}

/// What [[exception]] and [[retain]] entries hold: the thing they are
/// about (a code, a volume: required), an exception's subject, an owner, a
/// reason and an expiry.
struct Entry {
    about: Spanned<String>,
    subject: Option<String>,
    owner: Option<String>,
    reason: Option<String>,
    expires: Option<Spanned<String>>,
}

fn entry(v: &Value<'_>, name: &str, names: &[&str]) -> R<Entry> {
    let (mut about, mut subject, mut owner, mut reason, mut expires) =
        (None, None, None, None, None);
    fields(v, name, names, &[false; 5][..names.len()], |k, v| {
        match k {
            "subject" => subject = Some(string(v)?.into_inner()),
            "owner" => owner = Some(string(v)?.into_inner()),
            "reason" => reason = Some(string(v)?.into_inner()),
            "expires" => expires = Some(string(v)?),
            _ => about = Some(string(v)?),
        }
        Ok(())
    })?;
    let about = about.ok_or_else(|| at(v.span(), format!("missing field `{}`", names[0])))?;
    Ok(Entry {
        about,
        subject,
        owner,
        reason,
        expires,
    })
}

fn exception(v: &Value<'_>) -> R<RawException> {
    const FIELDS: &[&str] = &["code", "subject", "owner", "reason", "expires"];
    let e = entry(v, "RawException", FIELDS)?;
    Ok(RawException {
        code: e.about,
        subject: e.subject,
        owner: e.owner,
        reason: e.reason,
        expires: e.expires,
    })
}

fn retain(v: &Value<'_>) -> R<RawRetain> {
    let e = entry(v, "RawRetain", &["volume", "owner", "reason", "expires"])?;
    Ok(RawRetain {
        volume: e.about,
        owner: e.owner,
        reason: e.reason,
        expires: e.expires,
    })
}

fn parity(v: &Value<'_>) -> R<RawParity> {
    let allow = one_field(v, "RawParity", "allow", true, |v| seq(v, string))?;
    Ok(RawParity {
        allow: allow.unwrap_or_default(),
    })
}

fn severity(v: &Value<'_>) -> R<BTreeMap<Spanned<String>, Spanned<String>>> {
    match v.get_ref() {
        DeValue::Table(t) => {
            let mut m = BTreeMap::new();
            for (k, val) in t.iter() {
                m.insert(
                    Spanned::new(k.span(), k.get_ref().to_string()),
                    string(val)?,
                );
            }
            Ok(m)
        }
        // A datetime is a map to serde, whose one key serde_spanned's
        // visitor then refuses as a string.
        DeValue::Datetime(_) => Err(at(
            v.span(),
            "invalid type: string \"$__toml_private_datetime\", expected a spanned value",
        )),
        _ => Err(invalid(v, "a map")),
    }
}

/// A struct's fields, read as serde's derived visitor reads them: from a
/// table, its keys in order (sorted, as toml keeps them), each one of
/// `names` (handed to `each`) or the unknown field error; from an array,
/// the fields in declaration order, a missing one an error unless
/// `defaulted` (`#[serde(default)]`) says it was not.
fn fields<'a>(
    v: &Value<'a>,
    name: &str,
    names: &[&str],
    defaulted: &[bool],
    mut each: impl FnMut(&str, &Value<'a>) -> R<()>,
) -> R<()> {
    match v.get_ref() {
        DeValue::Table(t) => {
            for (k, val) in t.iter() {
                let key: &str = k.get_ref();
                if !names.contains(&key) {
                    return Err(at(k.span(), unknown_field(key, names)));
                }
                each(key, val)?;
            }
            Ok(())
        }
        // A datetime is a map to serde, with one key of toml's own.
        DeValue::Datetime(_) => Err(at(
            v.span(),
            unknown_field("$__toml_private_datetime", names),
        )),
        DeValue::Array(a) => {
            for (i, (field, default)) in names.iter().zip(defaulted).enumerate() {
                match a.get(i) {
                    Some(e) => each(field, e)?,
                    None if *default => {}
                    None => {
                        return Err(at(
                            v.span(),
                            format!(
                                "invalid length {i}, expected struct {name} with {} element{}",
                                names.len(),
                                if names.len() == 1 { "" } else { "s" }
                            ),
                        ))
                    }
                }
            }
            Ok(())
        }
        _ => Err(invalid(v, &format!("struct {name}"))),
    }
}

/// serde's `Error::unknown_field`.
fn unknown_field(key: &str, names: &[&str]) -> String {
    let expected = match names {
        [one] => format!("`{one}`"),
        [a, b] => format!("`{a}` or `{b}`"),
        _ => format!(
            "one of {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("unknown field `{key}`, expected {expected}")
}

fn string(v: &Value<'_>) -> R<Spanned<String>> {
    match v.get_ref() {
        DeValue::String(s) => Ok(Spanned::new(v.span(), s.to_string())),
        _ => Err(invalid(v, "a string")),
    }
}

fn boolean(v: &Value<'_>) -> R<bool> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        _ => Err(invalid(v, "a boolean")),
    }
}

fn seq<'a, T>(v: &Value<'a>, each: impl Fn(&Value<'a>) -> R<T>) -> R<Vec<T>> {
    match v.get_ref() {
        DeValue::Array(a) => a.iter().map(each).collect(),
        _ => Err(invalid(v, "a sequence")),
    }
}

/// A `toml::Value`: anything, but for numbers it cannot hold.
fn any<'a>(v: &Value<'a>) -> R<Value<'a>> {
    check_any(v)?;
    Ok(v.clone())
}

fn check_any(v: &Value<'_>) -> R<()> {
    match v.get_ref() {
        DeValue::Integer(i) => match integer(i) {
            Some(Int::I64) => Ok(()),
            Some(Int::U64) => Err(at(v.span(), "u64 value was too large")),
            _ => Err(invalid(v, "any valid TOML value")),
        },
        DeValue::Float(_) => number_overflow(v).map_or(Ok(()), Err),
        DeValue::Array(a) => a.iter().try_for_each(check_any),
        DeValue::Table(t) => t.iter().try_for_each(|(_, x)| check_any(x)),
        _ => Ok(()),
    }
}

enum Int {
    I64,
    U64,
    I128,
    U128,
}

/// Which of serde's integer visits toml makes for `i` (None: none fits).
fn integer(i: &toml::de::DeInteger<'_>) -> Option<Int> {
    let (s, r) = (i.as_str(), i.radix());
    if i64::from_str_radix(s, r).is_ok() {
        Some(Int::I64)
    } else if u64::from_str_radix(s, r).is_ok() {
        Some(Int::U64)
    } else if i128::from_str_radix(s, r).is_ok() {
        Some(Int::I128)
    } else if u128::from_str_radix(s, r).is_ok() {
        Some(Int::U128)
    } else {
        None
    }
}

/// The float toml reads, None when it overflows (as toml's own check).
fn float(f: &toml::de::DeFloat<'_>) -> Option<f64> {
    let v: f64 = f.as_str().parse().ok()?;
    (!v.is_infinite() || f.as_str().contains("inf")).then_some(v)
}

/// toml's own error for a number no visit can carry.
fn number_overflow(v: &Value<'_>) -> Option<ReadError> {
    match v.get_ref() {
        DeValue::Integer(i) if integer(i).is_none() => {
            Some(at(v.span(), "integer number overflowed"))
        }
        DeValue::Float(f) if float(f).is_none() => {
            Some(at(v.span(), "floating-point number overflowed"))
        }
        _ => None,
    }
}

/// serde's `Error::invalid_type`, with the value as serde's `Unexpected`
/// shows it.
fn invalid(v: &Value<'_>, expected: &str) -> ReadError {
    if let Some(e) = number_overflow(v) {
        return e;
    }
    let unexpected = match v.get_ref() {
        DeValue::String(s) => format!("string {:?}", s.as_ref() as &str),
        DeValue::Integer(i) => {
            let (s, r) = (i.as_str(), i.radix());
            match integer(i) {
                Some(Int::I64) => format!("integer `{}`", i64::from_str_radix(s, r).unwrap_or(0)),
                Some(Int::U64) => format!("integer `{}`", u64::from_str_radix(s, r).unwrap_or(0)),
                Some(Int::I128) => format!(
                    "integer `{}` as i128",
                    i128::from_str_radix(s, r).unwrap_or(0)
                ),
                _ => format!(
                    "integer `{}` as u128",
                    u128::from_str_radix(s, r).unwrap_or(0)
                ),
            }
        }
        DeValue::Float(f) => {
            let x = float(f).unwrap_or(0.0);
            let mut s = x.to_string();
            if x.is_finite() && !s.contains('.') {
                s.push_str(".0");
            }
            format!("floating point `{s}`")
        }
        DeValue::Boolean(b) => format!("boolean `{b}`"),
        DeValue::Array(_) => "sequence".into(),
        DeValue::Table(_) | DeValue::Datetime(_) => "map".into(),
    };
    at(
        v.span(),
        format!("invalid type: {unexpected}, expected {expected}"),
    )
}

/// The serde reading this replaced, kept as the reference: the same
/// documents must give the same sections, or the same error at the same
/// place.
#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        workspace: Option<RawWorkspace>,
        network: Option<RawNetwork>,
        capabilities: Option<RawCapabilities>,
        secrets: Option<RawSecrets>,
        mcp: Option<RawMcp>,
        #[serde(default)]
        exception: Vec<Spanned<RawException>>,
        #[serde(default)]
        severity: BTreeMap<Spanned<String>, Spanned<String>>,
        parity: Option<RawParity>,
        #[serde(default)]
        retain: Vec<Spanned<RawRetain>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawRetain {
        volume: Spanned<String>,
        owner: Option<String>,
        reason: Option<String>,
        expires: Option<Spanned<String>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawParity {
        #[serde(default)]
        allow: Vec<Spanned<String>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawWorkspace {
        path: Option<Spanned<String>>,
        #[serde(default)]
        allow_mounts: Vec<Spanned<String>>,
        #[serde(default)]
        deny: Vec<Spanned<String>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawNetwork {
        #[serde(default)]
        allow: Vec<Spanned<toml::Value>>,
        #[serde(default)]
        deny: Vec<Spanned<toml::Value>>,
        #[serde(default)]
        defaults: bool,
        timeout: Option<Spanned<String>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawCapabilities {
        #[serde(default)]
        allow: Vec<Spanned<String>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawSecrets {
        max_token_ttl: Option<Spanned<String>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawMcp {
        approved: Option<Vec<Spanned<String>>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawException {
        code: Spanned<String>,
        subject: Option<String>,
        owner: Option<String>,
        reason: Option<String>,
        expires: Option<Spanned<String>>,
    }

    fn s(x: &Spanned<String>) -> String {
        format!("{:?}@{:?}", x.get_ref(), x.span())
    }
    fn list(v: &[Spanned<String>]) -> String {
        v.iter().map(s).collect::<Vec<_>>().join(",")
    }
    fn opt(x: &Option<Spanned<String>>) -> String {
        x.as_ref().map(s).unwrap_or_default()
    }

    /// A reading as one text: the old and the new structs have the same
    /// fields, so one macro writes both.
    macro_rules! dump {
        ($r:expr, $kind:ident) => {{
            let r = $r;
            let mut out = String::new();
            if let Some(w) = &r.workspace {
                out += &format!(
                    "ws {} [{}] [{}]\n",
                    opt(&w.path),
                    list(&w.allow_mounts),
                    list(&w.deny)
                );
            }
            if let Some(n) = &r.network {
                let vals = |v: &[Spanned<_>]| {
                    v.iter()
                        .map(|x| format!("{}@{:?}", $kind(x.get_ref()), x.span()))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                out += &format!(
                    "net [{}] [{}] {} {}\n",
                    vals(&n.allow),
                    vals(&n.deny),
                    n.defaults,
                    opt(&n.timeout)
                );
            }
            if let Some(c) = &r.capabilities {
                out += &format!("caps [{}]\n", list(&c.allow));
            }
            if let Some(x) = &r.secrets {
                out += &format!("secrets {}\n", opt(&x.max_token_ttl));
            }
            if let Some(m) = &r.mcp {
                out += &format!("mcp {:?}\n", m.approved.as_deref().map(list));
            }
            for e in &r.exception {
                let x = e.get_ref();
                out += &format!(
                    "exc@{:?} {} {:?} {:?} {:?} {}\n",
                    e.span(),
                    s(&x.code),
                    x.subject,
                    x.owner,
                    x.reason,
                    opt(&x.expires)
                );
            }
            for (k, v) in &r.severity {
                out += &format!("sev {} {}\n", s(k), s(v));
            }
            if let Some(p) = &r.parity {
                out += &format!("parity [{}]\n", list(&p.allow));
            }
            for e in &r.retain {
                let x = e.get_ref();
                out += &format!(
                    "retain@{:?} {} {:?} {:?} {}\n",
                    e.span(),
                    s(&x.volume),
                    x.owner,
                    x.reason,
                    opt(&x.expires)
                );
            }
            out
        }};
    }

    fn old(text: &str) -> Result<String, ReadError> {
        let r: Raw = toml::from_str(text).map_err(|e| ReadError {
            message: e.message().to_string(),
            span: e.span(),
        })?;
        Ok(dump!(r, kind_old))
    }

    fn new(text: &str) -> Result<String, ReadError> {
        Ok(dump!(read(text)?, kind_new))
    }

    /// What destination_rule reads of a value: its kind, a string's text, a
    /// table's keys and their kinds.
    fn kind_old(v: &toml::Value) -> String {
        match v {
            toml::Value::String(s) => format!("str:{s}"),
            toml::Value::Table(t) => {
                let mut ks: Vec<String> = t
                    .iter()
                    .map(|(k, v)| format!("{k}={}", kind_old(v)))
                    .collect();
                ks.sort();
                format!("table{{{}}}", ks.join(";"))
            }
            toml::Value::Integer(_) | toml::Value::Float(_) => "number".into(),
            toml::Value::Boolean(_) => "bool".into(),
            toml::Value::Datetime(_) => "datetime".into(),
            toml::Value::Array(_) => "array".into(),
        }
    }
    fn kind_new(v: &DeValue<'_>) -> String {
        match v {
            DeValue::String(s) => format!("str:{s}"),
            DeValue::Table(t) => {
                let mut ks: Vec<String> = t
                    .iter()
                    .map(|(k, v)| format!("{}={}", k.get_ref(), kind_new(v.get_ref())))
                    .collect();
                ks.sort();
                format!("table{{{}}}", ks.join(";"))
            }
            DeValue::Integer(_) | DeValue::Float(_) => "number".into(),
            DeValue::Boolean(_) => "bool".into(),
            DeValue::Datetime(_) => "datetime".into(),
            DeValue::Array(_) => "array".into(),
        }
    }

    const LITERALS: &[&str] = &[
        "\"s\"",
        "'lit'",
        "\"a\\\"b\\\\c\\u0001\\t\"",
        "\"\"",
        "5",
        "-3",
        "0x7f",
        "0o17",
        "0b101",
        "1_000",
        "9223372036854775807",
        "1.5",
        "-0.0",
        "1e20",
        "3.0",
        "1.5e300",
        "inf",
        "-inf",
        "nan",
        "true",
        "false",
        "1979-05-27",
        "1979-05-27T07:32:00Z",
        "1979-05-27T07:32:00",
        "07:32:00",
        "[]",
        "[\"a\", \"b\"]",
        "[1]",
        "[[1]]",
        "[\"a\", 1]",
        "[{code = \"mount.host-root\"}]",
        "[{ url = \"tcp://127.0.0.1:1\", timeout = \"1s\" }]",
        "{}",
        "{ url = \"tcp://127.0.0.1:1\" }",
        "{ x = 1 }",
        "{ a = [1.5, 2] }",
        "[1979-05-27]",
    ];

    fn corpus() -> Vec<String> {
        let mut docs: Vec<String> = Vec::new();
        let sections: &[(&str, &[&str])] = &[
            ("workspace", &["path", "allow_mounts", "deny", "bogus"]),
            (
                "network",
                &["allow", "deny", "defaults", "timeout", "bogus"],
            ),
            ("capabilities", &["allow", "bogus"]),
            ("secrets", &["max_token_ttl", "bogus"]),
            ("mcp", &["approved", "bogus"]),
            ("severity", &["\"mount.host-root\"", "x"]),
            ("parity", &["allow", "bogus"]),
        ];
        for lit in LITERALS {
            for root in ROOT_FIELDS.iter().chain(&["aaa", "zzz"]) {
                docs.push(format!("{root} = {lit}\n"));
            }
            for (sec, fields) in sections {
                for f in *fields {
                    docs.push(format!("[{sec}]\n{f} = {lit}\n"));
                    // Inline, and beside an unknown key sorted before and after.
                    docs.push(format!("{sec} = {{ {f} = {lit} }}\n"));
                    docs.push(format!("[{sec}]\naaa = 1\n{f} = {lit}\n"));
                    docs.push(format!("[{sec}]\n{f} = {lit}\nzzz = 1\n"));
                }
            }
            for f in ["code", "subject", "owner", "reason", "expires", "bogus"] {
                docs.push(format!("[[exception]]\n{f} = {lit}\n"));
                docs.push(format!(
                    "[[exception]]\ncode = \"mount.host-root\"\n{f} = {lit}\n"
                ));
                docs.push(format!("exception = [{{ {f} = {lit} }}]\n"));
            }
            for f in ["volume", "owner", "reason", "expires", "subject", "bogus"] {
                docs.push(format!("[[retain]]\n{f} = {lit}\n"));
                docs.push(format!("[[retain]]\nvolume = \"cache\"\n{f} = {lit}\n"));
                docs.push(format!("retain = [{{ {f} = {lit} }}]\n"));
            }
            for list in ["allow", "deny"] {
                docs.push(format!("[network]\n{list} = [{lit}]\n"));
                docs.push(format!("[network]\n{list} = [\"tcp://a:1\", {lit}]\n"));
            }
            docs.push(format!("[mcp]\napproved = [{lit}]\n"));
            docs.push(format!("[capabilities]\nallow = [{lit}]\n"));
        }
        // Overflowing numbers toml parses but no serde visit carries.
        for big in [
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "340282366920938463463374607431768211456",
            "1e400",
        ] {
            docs.push(format!("[workspace]\npath = {big}\n"));
            docs.push(format!("[network]\nallow = [{big}]\n"));
            docs.push(format!("[network]\nallow = [{{ url = {big} }}]\n"));
            docs.push(format!("[network]\ndefaults = {big}\n"));
        }
        docs.extend(
            [
                "",
                "# nothing\n",
                "[workspace]\n",
                "[[exception]]\n",
                "[[exception]]\ncode = \"a\"\n[[exception]]\nowner = \"x\"\n",
                "[severity]\n\"a\" = \"high\"\n\"b\" = 1\n",
                "[network]\nallow = [\"tcp://a:1\"]\ndeny = [\"tcp://b:2\"]\ndefaults = true\ntimeout = \"2s\"\n",
                "this is not toml",
                "[workspace]\npath = \"/a\"\npath = \"/b\"\n",
                "[workspace\n",
                "a = \"unterminated\n",
                "[workspace]\n[workspace]\n",
            ]
            .map(String::from),
        );
        let here = env!("CARGO_MANIFEST_DIR");
        for dir in ["fuzz/corpus/policy_toml"] {
            if let Ok(rd) = std::fs::read_dir(format!("{here}/{dir}")) {
                for e in rd.flatten() {
                    if let Ok(t) = std::fs::read_to_string(e.path()) {
                        docs.push(t);
                    }
                }
            }
        }
        docs.push(super::super::tests::GOOD.to_string());
        docs
    }

    #[test]
    fn every_document_reads_as_serde_read_it() {
        let docs = corpus();
        let (mut oks, mut errs) = (0, 0);
        let mut differ = Vec::new();
        for d in &docs {
            let (o, n) = (old(d), new(d));
            if n != o {
                differ.push(format!("document:\n{d}\nserde: {o:?}\nours:  {n:?}\n"));
            }
            match o {
                Ok(_) => oks += 1,
                Err(_) => errs += 1,
            }
        }
        assert!(
            differ.is_empty(),
            "{} of {} differ:\n{}",
            differ.len(),
            docs.len(),
            differ[..differ.len().min(12)].join("\n")
        );
        assert!(oks > 250 && errs > 3000, "{oks} read, {errs} refused");
    }
}
