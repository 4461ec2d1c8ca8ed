//! What `diff` and `summary` read: reports, DSSE envelopes and teardown
//! statements, given as files or found in directories (an inspection's
//! `--out-dir`, docs/inspection-directory.md, or reports copied by hand). Bounded: every file
//! is read with a size cap and without blocking on a FIFO, a directory walk
//! never follows a symlink and stops at a depth and a file count, and each
//! input that cannot be used is named with its path and why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest report `summary` and `diff` read (docs/fleet.md, "Limits"):
/// selfprobe's reports of a million-entry workspace are a few MiB, and
/// `inspect` takes at most 16 MiB of report and envelope together from a
/// probe. A larger one is refused with this figure, which also bounds the
/// memory a report costs (bench/RESULTS.md, "summary and diff memory").
pub const MAX_REPORT: u64 = 16 << 20;
/// The largest envelope or teardown statement: a report of MAX_REPORT in
/// base64 (4/3), with room for the statement around it.
pub const MAX_ENVELOPE: u64 = MAX_REPORT / 3 * 4 + (1 << 20);
/// The largest file read at all (whatever it turns out to be).
pub const MAX_FILE: u64 = MAX_ENVELOPE;
/// The most files a summary takes from its directories.
pub const MAX_FILES: usize = 100_000;
/// How deep a directory walk goes below each directory given.
pub const MAX_DEPTH: usize = 8;

pub const REPORT_SCHEMA_PREFIX: &str = "https://selfprobe.dev/schema/report/";
pub const INSPECTION_SCHEMA: &str = "https://selfprobe.dev/schema/inspection/v1";

/// The largest inspection.json read (as teardown reads it): a thousand
/// containers' records and comparisons.
pub const MAX_INSPECTION: u64 = 64 << 20;

/// Reads a whole file of at most MAX_FILE bytes: O_NONBLOCK so a FIFO
/// planted in its place does not hang the open, regular files only, and
/// with `follow` false, never through a final symlink.
pub fn read_capped(path: &Path, follow: bool) -> Result<Vec<u8>, String> {
    read_at_most(path, follow, MAX_FILE).map_err(|e| match e {
        Capped::Larger => format!(
            "{}: larger than {} MiB, the most an envelope or teardown statement may be ({} MiB for a report): refused",
            path.display(),
            MAX_FILE >> 20,
            MAX_REPORT >> 20
        ),
        Capped::Unreadable(e) => e,
    })
}

pub enum Capped {
    Larger,
    Unreadable(String),
}

/// `read_capped` with another cap.
pub fn read_at_most(path: &Path, follow: bool, max: u64) -> Result<Vec<u8>, Capped> {
    let read = if follow {
        selfprobe::host::read_regular(path, max + 1)
    } else {
        selfprobe::host::read_regular_nofollow(path, max + 1)
    };
    match read {
        Ok(b) if b.len() as u64 > max => Err(Capped::Larger),
        Ok(b) => Ok(b),
        Err(e) => Err(Capped::Unreadable(format!(
            "{}: cannot read: {e}",
            path.display()
        ))),
    }
}

/// What a JSON document is, told from its top-level fields without
/// building it (serde skips the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Report,
    Envelope,
    Inspection,
    /// JSON, but none of selfprobe's documents.
    Other,
}

#[derive(Deserialize)]
struct Sniff {
    schema: Option<String>,
    #[serde(rename = "payloadType")]
    payload_type: Option<serde::de::IgnoredAny>,
    signatures: Option<serde::de::IgnoredAny>,
}

/// Why a file `diff` or `summary` was given is not one it can read. The
/// callers add the path and what they expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Not JSON (or not an object), with serde's reason (kept as text so
    /// the error compares equal in tests).
    #[error("not JSON ({0})")]
    NotJson(String),
    /// A report over MAX_REPORT bytes.
    #[error(
        "{shown}: a report of {len} bytes, more than the {} MiB a report may be: refused (docs/fleet.md, \"Limits\")",
        MAX_REPORT >> 20
    )]
    ReportTooLarge { shown: String, len: usize },
}

/// A `--nonces` file line that cannot be used: `line` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoncesError {
    #[error("{file}:{line}: expected `<name> <nonce>` (space-separated; # starts a comment line)")]
    NotAPair { file: String, line: usize },
    #[error("{file}:{line}: {source}")]
    BadNonce {
        file: String,
        line: usize,
        source: selfprobe::attest::NonceError,
    },
    #[error("{file}:{line}: {name:?} is listed twice: expected one nonce per workspace")]
    Twice {
        file: String,
        line: usize,
        name: String,
    },
}

/// Err: not JSON (or not an object), with serde's reason.
pub fn classify(bytes: &[u8]) -> Result<Kind, InputError> {
    let s: Sniff = serde_json::from_slice(bytes).map_err(|e| InputError::NotJson(e.to_string()))?;
    Ok(
        match (
            s.schema.as_deref(),
            s.payload_type.is_some() && s.signatures.is_some(),
        ) {
            (_, true) => Kind::Envelope,
            (Some(sc), _) if sc.starts_with(REPORT_SCHEMA_PREFIX) => Kind::Report,
            (Some(INSPECTION_SCHEMA), _) => Kind::Inspection,
            _ => Kind::Other,
        },
    )
}

/// A report of more than MAX_REPORT bytes is refused (an envelope is
/// bounded by MAX_FILE, which keeps its payload near MAX_REPORT).
pub fn check_report_size(shown: &str, len: usize) -> Result<(), InputError> {
    if len as u64 > MAX_REPORT {
        return Err(InputError::ReportTooLarge {
            shown: shown.to_string(),
            len,
        });
    }
    Ok(())
}

/// `classify`, but first from the shape the file's role leads one to
/// expect, looking only at its ends: an envelope as selfprobe writes it
/// names `"payloadType"` within its last bytes (after the payload), a
/// report its schema within its first. Anything else takes the full scan.
/// A wrong guess costs nothing: the verifier or the parser then refuses
/// the file with its own reason.
pub fn classify_as(bytes: &[u8], role: Role) -> Result<Kind, InputError> {
    const END: usize = 512;
    let head = &bytes[..bytes.len().min(END)];
    let tail = &bytes[bytes.len().saturating_sub(END)..];
    let has = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    let starts_object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    if starts_object {
        match role {
            Role::Envelope | Role::Teardown
                if has(tail, b"\"payloadType\"") || has(head, b"\"payloadType\"") =>
            {
                return Ok(Kind::Envelope)
            }
            Role::Report if has(head, br#""schema": "https://selfprobe.dev/schema/report/"#) => {
                return Ok(Kind::Report)
            }
            _ => {}
        }
    }
    classify(bytes)
}

/// Whether `bytes` is JSON equal to `want` (as `Value`'s `==` says),
/// decided while parsing it, without building it: a summary compares a
/// thousand report files with their attested copies.
pub fn json_equals(bytes: &[u8], want: &serde_json::Value) -> bool {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let same = serde::de::DeserializeSeed::deserialize(Same(want), &mut de).unwrap_or(false);
    same && de.end().is_ok()
}

struct Same<'a>(&'a serde_json::Value);

impl<'de> serde::de::DeserializeSeed<'de> for Same<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

/// An object key, borrowed from the input when it holds no escape.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde::de::Visitor<'de> for Same<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
        Ok(self.0.as_bool() == Some(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<bool, E> {
        Ok(*self.0 == v)
    }
    fn visit_u64<E>(self, v: u64) -> Result<bool, E> {
        Ok(*self.0 == v)
    }
    fn visit_f64<E>(self, v: f64) -> Result<bool, E> {
        Ok(*self.0 == v)
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(self.0.as_str() == Some(v))
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(self.0.is_null())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let want = self.0.as_array();
        let (mut i, mut same) = (0, want.is_some());
        loop {
            let got = match want.and_then(|a| a.get(i)) {
                Some(w) if same => seq.next_element_seed(Same(w))?,
                _ => seq.next_element::<serde::de::IgnoredAny>()?.map(|_| false),
            };
            match got {
                Some(s) => same &= s,
                None => break,
            }
            i += 1;
        }
        Ok(same && want.is_some_and(|a| a.len() == i))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let want = self.0.as_object();
        let (mut n, mut same) = (0, want.is_some());
        while let Some(Key(k)) = map.next_key::<Key>()? {
            match want.and_then(|o| o.get(k.as_ref())) {
                Some(w) if same => same &= map.next_value_seed(Same(w))?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    same = false;
                }
            }
            n += 1;
        }
        Ok(same && want.is_some_and(|o| o.len() == n))
    }
}

/// The role a file name gives within an inspection directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Report,
    Envelope,
    Teardown,
}

/// `<name>.teardown.intoto.json`, `<name>.intoto.json`, `<name>.json`:
/// the workspace's name and the file's role.
pub fn stem(file: &str) -> Option<(&str, Role)> {
    if let Some(n) = file.strip_suffix(".teardown.intoto.json") {
        return Some((n, Role::Teardown));
    }
    if let Some(n) = file.strip_suffix(".intoto.json") {
        return Some((n, Role::Envelope));
    }
    file.strip_suffix(".json").map(|n| (n, Role::Report))
}

/// The files of one workspace.
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub name: String,
    /// The directory it was found in (None: a file given on its own).
    pub dir: Option<PathBuf>,
    pub files: Vec<(Role, PathBuf)>,
    /// Given on the command line: followed through a symlink.
    pub explicit: bool,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Found {
    pub groups: Vec<Group>,
    /// Each directory's inspection.json, when it has one.
    pub inspections: Vec<PathBuf>,
    /// Inputs that could not be used at all (a path that does not exist).
    pub errors: Vec<String>,
    /// What was left out and why (symlinks, files beyond the caps).
    pub notes: Vec<String>,
    /// Directories holding `nonces` or `signing.pub` (the hint that they can
    /// be passed as --nonces and --pubkey).
    pub keyfiles: Vec<PathBuf>,
}

/// Files that are part of an inspection directory but are no workspace's.
const NOT_WORKSPACES: &[&str] = &["inspection.json", "teardown.json"];

pub fn walk(paths: &[PathBuf]) -> Found {
    let mut f = Found::default();
    let mut count = 0usize;
    for p in paths {
        match std::fs::metadata(p) {
            Err(e) => f.errors.push(format!("{}: {e}", p.display())),
            Ok(m) if m.is_dir() => walk_dir(p, 0, &mut f, &mut count),
            Ok(_) => {
                let file = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let (name, role) = stem(&file).unwrap_or((file.as_str(), Role::Report));
                count += 1;
                f.groups.push(Group {
                    name: name.to_string(),
                    dir: None,
                    files: vec![(role, p.clone())],
                    explicit: true,
                });
            }
        }
    }
    f
}

fn walk_dir(dir: &Path, depth: usize, f: &mut Found, count: &mut usize) {
    let rd = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) => {
            f.errors
                .push(format!("{}: cannot list: {e}", dir.display()));
            return;
        }
    };
    let mut entries: Vec<(String, std::fs::FileType)> = Vec::new();
    for e in rd {
        match e {
            Ok(e) => match e.file_type() {
                Ok(t) => entries.push((e.file_name().to_string_lossy().into_owned(), t)),
                Err(err) => f.errors.push(format!("{}: {err}", e.path().display())),
            },
            Err(err) => f
                .errors
                .push(format!("{}: cannot list: {err}", dir.display())),
        }
        if entries.len() > MAX_FILES {
            break;
        }
    }
    selfprobe::util::sort::sort_by(&mut entries, |a, b| a.0.cmp(&b.0));
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for (name, t) in entries {
        let path = dir.join(&name);
        if t.is_symlink() {
            f.notes
                .push(format!("{}: a symlink, not followed", path.display()));
            continue;
        }
        if t.is_dir() {
            if depth + 1 > MAX_DEPTH {
                f.notes.push(format!(
                    "{}: deeper than {MAX_DEPTH} directories below the one given, not read",
                    path.display()
                ));
            } else {
                walk_dir(&path, depth + 1, f, count);
            }
            continue;
        }
        if name == "nonces" || name == "signing.pub" {
            if !f.keyfiles.contains(&dir.to_path_buf()) {
                f.keyfiles.push(dir.to_path_buf());
            }
            continue;
        }
        if name == "inspection.json" {
            f.inspections.push(path);
            continue;
        }
        if NOT_WORKSPACES.contains(&name.as_str()) {
            continue;
        }
        if !t.is_file() {
            if stem(&name).is_some() {
                f.notes
                    .push(format!("{}: not a regular file, not read", path.display()));
            }
            continue;
        }
        let Some((stem, role)) = stem(&name) else {
            continue;
        };
        if *count >= MAX_FILES {
            f.notes.push(format!(
                "{}: more than {MAX_FILES} files in all, the rest not read",
                path.display()
            ));
            break;
        }
        *count += 1;
        groups
            .entry(stem.to_string())
            .or_insert_with(|| Group {
                name: stem.to_string(),
                dir: Some(dir.to_path_buf()),
                files: Vec::new(),
                explicit: false,
            })
            .files
            .push((role, path));
    }
    f.groups.extend(groups.into_values());
}

/// `--nonces FILE`: `<name> <nonce>` per line, `#` starts a comment line.
pub fn parse_nonces(file: &str, text: &str) -> Result<BTreeMap<String, String>, NoncesError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (file, line) = (file.to_string(), i + 1);
        let mut w = l.split_whitespace();
        let (Some(name), Some(nonce), None) = (w.next(), w.next(), w.next()) else {
            return Err(NoncesError::NotAPair { file, line });
        };
        if let Err(source) = selfprobe::attest::check_nonce(nonce) {
            return Err(NoncesError::BadNonce { file, line, source });
        }
        if out.insert(name.to_string(), nonce.to_string()).is_some() {
            let name = name.to_string();
            return Err(NoncesError::Twice { file, line, name });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_and_roles() {
        assert_eq!(
            stem("w1.teardown.intoto.json"),
            Some(("w1", Role::Teardown))
        );
        assert_eq!(stem("w1.intoto.json"), Some(("w1", Role::Envelope)));
        assert_eq!(stem("w1.json"), Some(("w1", Role::Report)));
        assert_eq!(stem("nonces"), None);
    }

    #[test]
    fn kinds() {
        assert_eq!(
            classify(br#"{"payload":"e30=","payloadType":"x","signatures":[]}"#),
            Ok(Kind::Envelope)
        );
        assert_eq!(
            classify(br#"{"schema":"https://selfprobe.dev/schema/report/v1","findings":[]}"#),
            Ok(Kind::Report)
        );
        assert_eq!(classify(br#"{"name":"pkg"}"#), Ok(Kind::Other));
        assert!(classify(b"[1,2]").is_err());
        assert!(classify(b"{\"schema\": ").is_err());
    }

    #[test]
    fn equality_while_parsing_is_values_equality() {
        let a = r#"{"b": [1, 2.5, "x\u0041", null, true, {"k": -3}], "a": {}}"#;
        let v: serde_json::Value = serde_json::from_str(a).unwrap();
        assert!(json_equals(a.as_bytes(), &v));
        for other in [
            r#"{"b": [1, 2.5, "xA", null, true, {"k": -3}], "a": {}, "c": 1}"#,
            r#"{"b": [1, 2.5, "xA", null, true], "a": {}}"#,
            r#"{"b": [1, 2.5, "xA", null, true, {"k": -3}, 7], "a": {}}"#,
            r#"{"b": [1, 2.5, "xB", null, true, {"k": -3}], "a": {}}"#,
            r#"{"b": [1, 2.5, "xA", null, false, {"k": -3}], "a": {}}"#,
            r#"{"b": [1, 2.5, "xA", null, true, {"k": 3}], "a": {}}"#,
            r#"{"b": [1, 2.5, "xA", null, true, {"k": -3}], "a": []}"#,
            r#"{"b": [1, 2.5, "xA", null, true, {"k": -3}], "a": {}} x"#,
            r#"{"b": [1, 2.5, "xA", null, true, {"k": -3}], "a": {}, "a": {}}"#,
            r#"{"b": "#,
        ] {
            assert!(!json_equals(other.as_bytes(), &v), "{other}");
            // A key given twice is refused, where Value keeps the last: a
            // file selfprobe wrote never repeats one.
            if let Ok(o) = serde_json::from_str::<serde_json::Value>(other) {
                assert!(o != v || other.matches("\"a\"").count() == 2, "{other}");
            }
        }
        let mut reordered = r#"{"a": {}, "b": [1, 2.5, "xA", null, true, {"k": -3}]}"#.to_string();
        assert!(
            json_equals(reordered.as_bytes(), &v),
            "key order is no difference"
        );
        reordered.push('\n');
        assert!(json_equals(reordered.as_bytes(), &v));
    }

    #[test]
    fn the_quick_look_falls_back_to_the_scan() {
        let env =
            br#"{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[]}"#;
        assert_eq!(classify_as(env, Role::Envelope), Ok(Kind::Envelope));
        let rep = b"{\n  \"schema\": \"https://selfprobe.dev/schema/report/v1\",\n  \"x\": 1\n}\n";
        assert_eq!(classify_as(rep, Role::Report), Ok(Kind::Report));
        assert_eq!(classify_as(env, Role::Report), Ok(Kind::Envelope));
        assert_eq!(classify_as(rep, Role::Envelope), Ok(Kind::Report));
        assert!(classify_as(b"payloadType", Role::Envelope).is_err());
    }

    #[test]
    fn nonces_file() {
        let n = parse_nonces("n", "# inspection\nweb abc123\n\napi  def456\n").unwrap();
        assert_eq!(n["web"], "abc123");
        assert_eq!(n["api"], "def456");
        assert_eq!(
            parse_nonces("n", "web\n").unwrap_err().to_string(),
            "n:1: expected `<name> <nonce>` (space-separated; # starts a comment line)"
        );
        assert!(parse_nonces("n", "a x\na y\n")
            .unwrap_err()
            .to_string()
            .contains("twice"));
    }
}
