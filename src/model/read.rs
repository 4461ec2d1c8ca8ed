//! A report read back as typed values: what the host tool (inspect's
//! cross-check, diff, summary) and `verify` read of a report, through the
//! model's own types, never by JSON pointer.
//!
//! A report read back may come from an older probe or a hostile workspace,
//! so it is read leniently, part by part:
//! - a field a part lacks takes its default (every type of the report
//!   deserializes with `#[serde(default)]`), and where an absent fact must
//!   not pass for its default (a capability mask of 0, a writable root),
//!   [`Read::given`] (the [`given!`](crate::given) macro) says whether the
//!   report gave it: a present value, a null, or nothing;
//! - a part that is there but does not read as the model's type (an
//!   inventory section, `run`, `summary`, `scorecard`, `tool`, `signing`)
//!   is left at its default (a section: None) and named in
//!   [`Read::malformed`], so one bad section costs that section, not the
//!   report; a finding or a probe's entry that does not read is left out.
//!
//! The field names below are the model's: a part the reader names wrongly
//! would read as missing, which the round-trip test (a real report read
//! back and written again, byte for byte) does not let pass.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Report;
use crate::probe::Facts;

/// How far down the report `given` records which fields are there
/// (`inventory.privilege.caps.effective` is 4 deep). Deeper fields are
/// read typed but not asked about.
const GIVEN_DEPTH: usize = 5;

/// Whether the report gave a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// Not there (or a part above it is not an object).
    Absent,
    /// There, as null.
    Null,
    /// There, with a value, in a part that read.
    Value,
}

impl Given {
    /// There and not null.
    pub fn value(self) -> bool {
        self == Given::Value
    }
    /// There, null or not.
    pub fn key(self) -> bool {
        self != Given::Absent
    }
}

/// A report as read back.
#[derive(Debug)]
pub struct Read {
    pub report: Report,
    /// Every field down to GIVEN_DEPTH, dotted, and whether it was null.
    given: BTreeMap<String, bool>,
    /// Parts that were there but did not read, with serde's reason.
    malformed: BTreeMap<String, String>,
    /// Those parts as the report gave them, for [`Read::claimed`].
    unread: BTreeMap<String, Value>,
}

/// What did not read: why, and the part as given.
#[derive(Default)]
struct Unread {
    why: BTreeMap<String, String>,
    raw: BTreeMap<String, Value>,
}

impl Read {
    /// Reads a report already parsed (and bounded) as JSON. Never fails: a
    /// value that is not an object reads as an empty report, every part
    /// missing.
    pub fn from_value(v: &Value) -> Read {
        let empty = Map::new();
        let top = v.as_object().unwrap_or(&empty);
        let mut given = BTreeMap::new();
        record(top, "", 1, &mut given);
        let mut bad = Unread::default();
        let inv = top
            .get("inventory")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        // One section, by its name in the report (a macro: each is of its own type).
        macro_rules! sec {
            ($name:literal) => {
                section(inv, $name, concat!("inventory.", $name), &mut bad)
            };
        }
        let inventory = Facts {
            boundary: sec!("boundary"),
            mounts: sec!("mounts"),
            // Not a section of the report (serde skips it).
            users: None,
            privilege: sec!("privilege"),
            rootpaths: sec!("rootpaths"),
            namespaces: sec!("namespaces"),
            devices: sec!("devices"),
            sockets: sec!("sockets"),
            writable: sec!("writable"),
            network: sec!("network"),
            repository: sec!("repository"),
            secrets: sec!("secrets"),
            image: sec!("image"),
            repro: sec!("repro"),
            caches: sec!("caches"),
            browsers: sec!("browsers"),
            artifacts: sec!("artifacts"),
            teardown: sec!("teardown"),
        };
        let report = Report {
            schema: part(top, "schema", &mut bad),
            schema_version: part(top, "schema_version", &mut bad),
            tool: part(top, "tool", &mut bad),
            run: part(top, "run", &mut bad),
            summary: part(top, "summary", &mut bad),
            scorecard: part(top, "scorecard", &mut bad),
            findings: entries(top, "findings", &mut bad),
            inventory,
            probes: entries(top, "probes", &mut bad),
            signing: section(top, "signing", "signing", &mut bad),
        };
        Read {
            report,
            given,
            malformed: bad.why,
            unread: bad.raw,
        }
    }

    /// Whether the report gave the field at `path` (the model's field names,
    /// outermost first). Use [`given!`](crate::given), which names the
    /// field through the model so that a renamed field does not compile.
    /// A field inside a part that did not read is absent: what the typed
    /// value holds there is the model's default, not the report's.
    pub fn given(&self, path: &[&str]) -> Given {
        let unread = (1..=path.len()).any(|n| self.malformed.contains_key(&path[..n].join(".")));
        if unread {
            return Given::Absent;
        }
        match self.given.get(&path.join(".")) {
            None => Given::Absent,
            Some(true) => Given::Null,
            Some(false) => Given::Value,
        }
    }

    /// The parts that were there but did not read as the model's types
    /// (`inventory.privilege`, `run`, `findings`…), each with why.
    pub fn malformed(&self) -> &BTreeMap<String, String> {
        &self.malformed
    }

    /// The string a part that did not read gives at `path` (the model's
    /// field names, outermost first), as the report gave it: what a report
    /// claims where the model has no value for it (a boundary kind that is
    /// no Kind), for showing, sanitised, never for judging. None where the
    /// part read (its typed value says it) or gives no string there. Use
    /// [`claimed!`](crate::claimed), which names the field through the model.
    pub fn claimed(&self, path: &[&str]) -> Option<&str> {
        (1..=path.len()).find_map(|n| {
            let part = self.unread.get(&path[..n].join("."))?;
            path[n..]
                .iter()
                .try_fold(part, |v, k| v.get(k))
                .and_then(Value::as_str)
        })
    }

    /// Whether `part` (dotted, as [`Read::malformed`] names it) was there
    /// and did not read.
    pub fn is_malformed(&self, part: &str) -> bool {
        self.malformed.contains_key(part)
    }
}

/// Whether the report gave a field, named through the model:
/// `given!(read, run.policy_sha256)`, or for a field of an inventory
/// section (an `Option` in the model), `given!(read, inventory.privilege
/// => caps.effective)`, and past a part that is itself an `Option` in the
/// model, `given!(read, inventory.network => resolver => search)`. The
/// field is named in code the compiler checks, so renaming it in the model
/// breaks this, not the comparison at run time.
#[macro_export]
macro_rules! given {
    ($read:expr, inventory.$sec:ident => $($f:ident).+ => $($g:ident).+) => {{
        let read: &$crate::model::read::Read = $read;
        let _named = read
            .report
            .inventory
            .$sec
            .as_ref()
            .and_then(|s| s $(.$f)+ .as_ref().map(|x| &x $(.$g)+));
        read.given(&[
            "inventory",
            stringify!($sec),
            $(stringify!($f),)+
            $(stringify!($g)),+
        ])
    }};
    ($read:expr, inventory.$sec:ident => $($f:ident).+) => {{
        let read: &$crate::model::read::Read = $read;
        let _named = read.report.inventory.$sec.as_ref().map(|s| &s $(.$f)+);
        read.given(&["inventory", stringify!($sec), $(stringify!($f)),+])
    }};
    ($read:expr, $($f:ident).+) => {{
        let read: &$crate::model::read::Read = $read;
        let _named = &read.report $(.$f)+;
        read.given(&[$(stringify!($f)),+])
    }};
}

/// The name the report gives a value of one of the model's enums
/// (`runc/crun`, `host-bind`, `vm-container`): its serde name.
pub fn word<T: serde::Serialize>(t: &T) -> String {
    match serde_json::to_value(t) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// What a part that did not read claims at a field, named through the
/// model as in [`given!`](crate::given): `claimed!(read, inventory.boundary
/// => kind)`.
#[macro_export]
macro_rules! claimed {
    ($read:expr, inventory.$sec:ident => $($f:ident).+) => {{
        let read: &$crate::model::read::Read = $read;
        let _named = read.report.inventory.$sec.as_ref().map(|s| &s $(.$f)+);
        read.claimed(&["inventory", stringify!($sec), $(stringify!($f)),+])
    }};
    ($read:expr, $($f:ident).+) => {{
        let read: &$crate::model::read::Read = $read;
        let _named = &read.report $(.$f)+;
        read.claimed(&[$(stringify!($f)),+])
    }};
}

/// The JSON a report (or a part of one) gives at a field named through the
/// model, as `Option<&serde_json::Value>`: `json_at!(report, Report =>
/// run.nonce)`, `json_at!(finding, Finding => evidence)`, and past a part
/// that is an `Option` in the model, as in [`given!`]: `json_at!(report,
/// Report => signing => keyid)`. For what must
/// show a report as it was signed, whatever it holds (`verify`, SARIF),
/// and for the probe, where reading the model typed ([`Read`]) would link
/// serde's Deserialize code for every type of the report (about 500 KB:
/// docs/size.md). The path is named in code the compiler checks against
/// `$ty`, so renaming a field in the model breaks this, as [`given!`]
/// does; a field that serde renames is the one thing the compiler cannot
/// see, and the tests beside this macro read every path the probe uses
/// from a report the model wrote.
///
/// [`given!`]: crate::given
#[macro_export]
macro_rules! json_at {
    ($v:expr, $ty:ty => $($f:ident).+ => $($g:ident).+) => {{
        // Never called: names the fields in the model.
        let _named = |m: &$ty| {
            let _ = m $(.$f)+ .as_ref().map(|s| &s $(.$g)+);
        };
        ::core::option::Option::Some($v)
            $(.and_then(|v| v.get(::core::stringify!($f))))+
            $(.and_then(|v| v.get(::core::stringify!($g))))+
    }};
    ($v:expr, $ty:ty => $($f:ident).+) => {{
        // Never called: names the field in the model.
        let _named = |m: &$ty| {
            let _ = &m $(.$f)+;
        };
        ::core::option::Option::Some($v) $(.and_then(|v| v.get(::core::stringify!($f))))+
    }};
}

/// Records `obj`'s fields under `prefix`, down to GIVEN_DEPTH. Arrays are
/// not entered: their members are read typed, whole.
fn record(obj: &Map<String, Value>, prefix: &str, depth: usize, out: &mut BTreeMap<String, bool>) {
    for (k, v) in obj {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if let (Value::Object(o), true) = (v, depth < GIVEN_DEPTH) {
            record(o, &path, depth + 1, out);
        }
        out.insert(path, v.is_null());
    }
}

/// A part the report must have: its default when absent or null, or when
/// it does not read (then named in `bad`).
fn part<T: DeserializeOwned + Default>(
    obj: &Map<String, Value>,
    name: &str,
    bad: &mut Unread,
) -> T {
    section(obj, name, name, bad).unwrap_or_default()
}

/// A part that may be missing: None when absent or null, or when it does
/// not read (then named in `bad` as `label`).
fn section<T: DeserializeOwned>(
    obj: &Map<String, Value>,
    name: &str,
    label: &str,
    bad: &mut Unread,
) -> Option<T> {
    match obj.get(name) {
        None | Some(Value::Null) => None,
        Some(v) => match T::deserialize(v) {
            Ok(t) => Some(t),
            Err(e) => {
                bad.why.insert(label.to_string(), e.to_string());
                bad.raw.insert(label.to_string(), v.clone());
                None
            }
        },
    }
}

/// A list whose members read one by one: a member that does not read is
/// left out (the first one's reason named in `bad`), the others kept.
fn entries<T: DeserializeOwned>(obj: &Map<String, Value>, name: &str, bad: &mut Unread) -> Vec<T> {
    let Some(v) = obj.get(name).filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    let Some(list) = v.as_array() else {
        bad.why.insert(name.to_string(), "not a list".to_string());
        return Vec::new();
    };
    let mut out = Vec::with_capacity(list.len());
    let mut dropped = 0usize;
    for (i, m) in list.iter().enumerate() {
        match T::deserialize(m) {
            Ok(t) => out.push(t),
            Err(e) => {
                if dropped == 0 {
                    bad.why.insert(name.to_string(), format!("member {i}: {e}"));
                }
                dropped += 1;
            }
        }
    }
    if dropped > 1 {
        if let Some(why) = bad.why.get_mut(name) {
            why.push_str(&format!(" ({dropped} members left out)"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::finding::{AppliedException, Finding, Severity};
    use crate::model::{Report, SigningInfo};
    use crate::probe::repro::ImageIdentity;

    /// Every field the probe reads by name (`verify`'s checks and what it
    /// shows, the image subject, SARIF's results), read with `json_at!`
    /// from a report the model wrote with each of them set. A field renamed
    /// in the model does not compile here (or at the read); one serde
    /// names otherwise than the model (`#[serde(rename)]`) reads as missing,
    /// and this fails rather than `verify` showing "-".
    #[test]
    fn json_at_reads_every_field_the_probe_names_from_a_report_the_model_wrote() {
        let mut r = Report::default();
        r.tool.sha256 = Some("ab".repeat(32));
        r.run.workspace = Some("/w".into());
        r.run.policy = Some("/p.toml".into());
        r.run.nonce = Some("n".into());
        r.run.fail_on = Some(Severity::High);
        r.signing = Some(SigningInfo::default());
        r.inventory.image = Some(ImageIdentity {
            digest: Some(format!("sha256:{}", "cd".repeat(32))),
            reference: Some("r/app".into()),
            ..ImageIdentity::default()
        });
        r.findings.push(Finding {
            exception: Some(AppliedException {
                owner: "o".into(),
                reason: "r".into(),
                expires: "2099-01-01".into(),
            }),
            ..Finding::default()
        });
        let v = serde_json::to_value(&r).unwrap();
        let there = |name: &str, got: Option<&Value>| {
            assert!(
                got.is_some_and(|g| !g.is_null()),
                "{name} does not read from a report the model wrote"
            );
        };
        there("tool.name", json_at!(&v, Report => tool.name));
        there("tool.version", json_at!(&v, Report => tool.version));
        there("tool.sha256", json_at!(&v, Report => tool.sha256));
        there("inventory.image", json_at!(&v, Report => inventory.image));
        there(
            "image.digest",
            json_at!(&v, Report => inventory.image => digest),
        );
        there(
            "image.reference",
            json_at!(&v, Report => inventory.image => reference),
        );
        for (name, got) in [
            ("run.id", json_at!(&v, Report => run.id)),
            ("run.started", json_at!(&v, Report => run.started)),
            ("run.finished", json_at!(&v, Report => run.finished)),
            ("run.nonce", json_at!(&v, Report => run.nonce)),
            ("run.root", json_at!(&v, Report => run.root)),
            ("run.workspace", json_at!(&v, Report => run.workspace)),
            ("run.policy", json_at!(&v, Report => run.policy)),
            ("run.fail_on", json_at!(&v, Report => run.fail_on)),
            ("signing.keyid", json_at!(&v, Report => signing => keyid)),
            (
                "signing.key_source",
                json_at!(&v, Report => signing => key_source),
            ),
            (
                "signing.ephemeral",
                json_at!(&v, Report => signing => ephemeral),
            ),
            (
                "summary.by_severity",
                json_at!(&v, Report => summary.by_severity),
            ),
            ("summary.total", json_at!(&v, Report => summary.total)),
            ("summary.gating", json_at!(&v, Report => summary.gating)),
            (
                "summary.exit_code",
                json_at!(&v, Report => summary.exit_code),
            ),
            ("scorecard.total", json_at!(&v, Report => scorecard.total)),
            ("scorecard.max", json_at!(&v, Report => scorecard.max)),
            (
                "scorecard.assessed",
                json_at!(&v, Report => scorecard.assessed),
            ),
            ("findings", json_at!(&v, Report => findings)),
        ] {
            there(name, got);
        }
        let f = &v["findings"][0];
        for (name, got) in [
            ("id", json_at!(f, Finding => id)),
            ("code", json_at!(f, Finding => code)),
            ("severity", json_at!(f, Finding => severity)),
            ("status", json_at!(f, Finding => status)),
            ("phase", json_at!(f, Finding => phase)),
            ("control", json_at!(f, Finding => control)),
            ("subject", json_at!(f, Finding => subject)),
            ("message", json_at!(f, Finding => message)),
            ("evidence", json_at!(f, Finding => evidence)),
            ("exception", json_at!(f, Finding => exception)),
        ] {
            there(&format!("findings[].{name}"), got);
        }
        let ex = json_at!(f, Finding => exception).unwrap();
        there("owner", json_at!(ex, AppliedException => owner));
        there("reason", json_at!(ex, AppliedException => reason));
        there("expires", json_at!(ex, AppliedException => expires));
        // A part that is not an object gives nothing below it, as a JSON
        // pointer did: never a panic.
        let odd = serde_json::json!({"run": 5, "signing": [1], "inventory": {"image": "x"}});
        assert_eq!(json_at!(&odd, Report => run.id), None);
        assert_eq!(json_at!(&odd, Report => signing => keyid), None);
        assert_eq!(json_at!(&odd, Report => inventory.image => digest), None);
    }
}
