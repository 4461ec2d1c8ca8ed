//! `selfprobe-host summary`: verifies many workspaces' reports, envelopes and
//! teardown statements (through attest::verify, the one verifier) and puts
//! each workspace on one row: boundary, the eight scorecard controls, the
//! worst severity, the teardown result and whether it verified. The
//! renderers (text, json, sarif, junit, html) read the Fleet this returns.
//!
//! Nothing from an envelope that fails verification is shown: its row
//! carries the reason and no content. Without --pubkey nothing can verify:
//! the rows show what the inputs claim, each marked not verified.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use selfprobe::keys::VerifyingKey;
use serde::Deserialize;
use serde_json::Value;

use super::input::{self, Group, Kind, Role};
use crate::outside::teardown::Predicate;
use selfprobe::attest::verify::{self, Inputs, Verdict};
use selfprobe::attest::{dsse, TEARDOWN_PREDICATE_TYPE};
use selfprobe::finding::{Finding, Severity};
use selfprobe::model::read::{word, Read};
use selfprobe::model::Exit;
use selfprobe::scorecard::CONTROLS;
use selfprobe::{given, json_at};

pub struct Options {
    /// (file it came from, key): every --pubkey.
    pub keys: Vec<(String, VerifyingKey)>,
    /// (file, name → nonce) of --nonces.
    pub nonces: Option<(String, BTreeMap<String, String>)>,
    /// --binary-sha256: the probe that made the reports.
    pub binary_sha256: Option<String>,
    /// --host-sha256: the host tool that made the teardown statements
    /// (teardown runs on the host, not in the workspace).
    pub host_sha256: Option<String>,
}

/// One scorecard control of a row.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// None: not assessed, or not known (no verified report).
    pub score: Option<u8>,
    pub reason: String,
    /// Where the score came from: "report", "teardown statement", or empty.
    pub source: &'static str,
    /// The ids of the findings that set the score.
    pub decisive: Vec<String>,
}

impl Cell {
    /// A control's cell as a report or a statement gives it: the score
    /// held to the rubric's 0-2 (None when absent or not a number).
    fn of(
        score: Option<&Value>,
        reason: Option<String>,
        source: &'static str,
        decisive: Vec<String>,
    ) -> Cell {
        Cell {
            score: score.and_then(Value::as_u64).map(|n| n.min(2) as u8),
            reason: reason.unwrap_or_default(),
            source,
            decisive,
        }
    }
}

/// The elements of a JSON array, none when it is absent or not an array.
fn items(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

#[derive(Debug, Clone)]
pub struct Workspace {
    pub name: String,
    /// The directory or file it was read from.
    pub source: String,
    pub files: Vec<String>,
    pub run_id: Option<String>,
    pub boundary: Option<String>,
    /// In CONTROLS order.
    pub controls: Vec<Cell>,
    pub worst: Option<Severity>,
    pub teardown_result: Option<String>,
    pub verified: bool,
    /// Why it is not verified (empty when it is).
    pub problems: Vec<String>,
    /// What was checked beyond the signature ("nonce", "binary").
    pub checked: Vec<&'static str>,
    pub notes: Vec<String>,
    /// The findings of the report, the teardown statement and the
    /// inspection, as JSON objects of the report's shape.
    pub findings: Vec<Value>,
    /// Exit code as the row counts it: the report's, the teardown result's,
    /// 3 when it is not verified.
    pub exit: Exit,
    /// The report's scorecard total and maximum, when known.
    pub total: Option<(u64, u64)>,
    /// Some content is shown: a verified report or statement, or (without
    /// --pubkey) what an input claims. False for an input that failed.
    pub has_content: bool,
}

impl Workspace {
    pub fn verification(&self) -> String {
        if self.verified {
            let mut what = vec!["signature"];
            what.extend(self.checked.iter().copied());
            format!("VERIFIED ({})", what.join(", "))
        } else {
            format!("NOT VERIFIED: {}", self.problems.join("; "))
        }
    }
}

pub struct Fleet {
    pub workspaces: Vec<Workspace>,
    /// Inputs that could not be read at all, and what was left out.
    pub errors: Vec<String>,
    pub notes: Vec<String>,
    pub exit: Exit,
}

impl Fleet {
    pub fn verified(&self) -> usize {
        self.workspaces.iter().filter(|w| w.verified).count()
    }
}

fn worse(a: Exit, b: Exit) -> Exit {
    // 0 < 1 < 3; 2 (usage) is never a row's.
    if (b as i32) > (a as i32) {
        b
    } else {
        a
    }
}

fn exit_of(n: Option<i64>) -> Option<Exit> {
    match n? {
        0 => Some(Exit::Clean),
        1 => Some(Exit::Findings),
        2 => Some(Exit::Usage),
        3 => Some(Exit::ProbeFailed),
        _ => None,
    }
}

/// A signed input, read and checked.
struct Checked {
    path: String,
    /// The predicate: attested when verified; claimed (unverified) when no
    /// key was given or the input is a bare report.
    content: Option<Value>,
    teardown: bool,
    verified: bool,
    problems: Vec<String>,
    nonce_checked: bool,
    binary_checked: bool,
}

impl Checked {
    /// What it verified beyond the signature, added to `to` once each.
    fn checks(&self, to: &mut Vec<&'static str>) {
        for (done, what) in [
            (self.nonce_checked, "nonce"),
            (self.binary_checked, "binary"),
        ] {
            if self.verified && done && !to.contains(&what) {
                to.push(what);
            }
        }
    }
}

/// The statement inside an envelope, not verified: for showing what an
/// input claims when no key was given.
fn peek(bytes: &[u8]) -> Option<Value> {
    let env: dsse::Envelope = serde_json::from_slice(bytes).ok()?;
    let payload = selfprobe::util::codec::b64_decode(&env.payload)?;
    serde_json::from_slice(&payload).ok()
}

fn check_envelope(path: &str, bytes: &[u8], opts: &Options, nonce: Option<&str>) -> Checked {
    let mut c = Checked {
        path: path.to_string(),
        content: None,
        teardown: false,
        verified: false,
        problems: Vec::new(),
        nonce_checked: false,
        binary_checked: false,
    };
    if opts.keys.is_empty() {
        match peek(bytes) {
            Some(st) => {
                c.teardown = st.get("predicateType").and_then(Value::as_str)
                    == Some(TEARDOWN_PREDICATE_TYPE);
                c.content = st.get("predicate").cloned();
                c.problems.push(format!("{path}: no --pubkey given"));
            }
            None => c.problems.push(format!(
                "{path}: not a DSSE envelope of an in-toto statement"
            )),
        }
        return c;
    }
    // The keys in order; a key that is not the signer's is passed over, so
    // reports and teardown statements signed by different keys verify in
    // one summary.
    let mut last: Option<Verdict> = None;
    // A report names the probe that made it, a teardown statement the host
    // tool: each is held to its own binary. The type is read before the
    // signature is checked only to pick which; verify then checks the type
    // it signed, and a statement that claims one type to dodge the other's
    // check is read as what it signed.
    let is_teardown = peek(bytes).is_some_and(|st| {
        st.get("predicateType").and_then(Value::as_str) == Some(TEARDOWN_PREDICATE_TYPE)
    });
    let want_sha = if is_teardown {
        opts.host_sha256.as_deref()
    } else {
        opts.binary_sha256.as_deref()
    };
    for (_, key) in &opts.keys {
        let v = verify::verify(&Inputs {
            pubkey: *key,
            nonce,
            binary_sha256: want_sha,
            envelope: Some((path, bytes)),
            sshsig: None,
        });
        let wrong_key = v.problems.iter().any(|p| p.check == "wrong key");
        last = Some(v);
        if !wrong_key {
            break;
        }
    }
    let Some(v) = last else { return c };
    c.teardown = v.predicate_type == Some(TEARDOWN_PREDICATE_TYPE);
    if v.valid() {
        c.verified = true;
        c.nonce_checked = v.nonce_checked;
        c.binary_checked = v.binary_checked;
        c.content = v.attested;
    } else {
        for p in &v.problems {
            c.problems.push(format!("{path}: {}", p.message));
        }
        if v.predicate_type.is_none() {
            // Not believed, but its type decides where its reason shows.
            c.teardown = peek(bytes)
                .and_then(|st| {
                    st.get("predicateType")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .as_deref()
                == Some(TEARDOWN_PREDICATE_TYPE);
        }
    }
    c
}

/// What an inspection.json says of each container, by the stem of its
/// files (util/filename.rs: the names of containers may spell each other's
/// files, the stems cannot).
#[derive(Debug, Default, Clone)]
pub struct Inspected {
    /// The container's name as the engine gave it.
    pub name: String,
    pub not_probed: Option<String>,
    pub report: Option<String>,
    pub exit: Option<Exit>,
    pub findings: Vec<Value>,
}

/// The part of inspection.json a summary uses (docs/inspection-directory.md),
/// read as typed values: the records and comparisons are skipped unbuilt.
#[derive(Deserialize)]
struct InspectionDoc {
    #[serde(default)]
    containers: Vec<InspectionEntry>,
}

#[derive(Deserialize)]
struct InspectionEntry {
    name: Option<String>,
    not_probed: Option<String>,
    report: Option<String>,
    envelope: Option<String>,
    exit: Option<i64>,
    #[serde(default)]
    findings: Vec<Value>,
}

fn read_inspection(path: &Path, errors: &mut Vec<String>) -> BTreeMap<String, Inspected> {
    match input::read_at_most(path, false, input::MAX_INSPECTION) {
        Ok(b) => parse_inspection(path, &b, errors),
        Err(input::Capped::Larger) => {
            errors.push(format!(
                "{}: larger than {} MiB, the most an inspection.json may be: refused",
                path.display(),
                input::MAX_INSPECTION >> 20
            ));
            BTreeMap::new()
        }
        Err(input::Capped::Unreadable(e)) => {
            errors.push(e);
            BTreeMap::new()
        }
    }
}

/// inspection.json's containers by the stem of their files.
pub fn parse_inspection(
    path: &Path,
    bytes: &[u8],
    errors: &mut Vec<String>,
) -> BTreeMap<String, Inspected> {
    let mut out = BTreeMap::new();
    let doc: InspectionDoc = match serde_json::from_slice(bytes) {
        Ok(d) => d,
        Err(e) => {
            errors.push(format!(
                "{}: not an inspection ({e}): expected what `selfprobe-host inspect` wrote",
                path.display()
            ));
            return out;
        }
    };
    for c in doc.containers {
        let Some(name) = c.name else {
            continue;
        };
        // The stem of the files inspection.json names, else the one the
        // name gives (a container not probed has no files).
        let named = c
            .report
            .as_deref()
            .and_then(|f| f.strip_suffix(".json"))
            .or_else(|| {
                c.envelope
                    .as_deref()
                    .and_then(|f| f.strip_suffix(".intoto.json"))
            })
            .map(str::to_string);
        let stem = named.unwrap_or_else(|| selfprobe::util::filename::stem(&name));
        out.insert(
            stem,
            Inspected {
                name,
                not_probed: c.not_probed,
                report: c.report.or(c.envelope),
                exit: exit_of(c.exit),
                findings: c.findings,
            },
        );
    }
    out
}

fn boundary_of(r: &Read) -> Option<String> {
    // What the report leaves out of its boundary is the model's unknown.
    let b = r.report.inventory.boundary.as_ref()?;
    let kind = word(&b.kind);
    let mut out = format!("{kind} {} {}", word(&b.engine), word(&b.runtime));
    match b.rootless {
        Some(true) => out.push_str(" rootless"),
        Some(false) if kind != "host" => out.push_str(" rootful"),
        _ => {}
    }
    Some(out)
}

fn worst(findings: &[Value]) -> Option<Severity> {
    findings
        .iter()
        .filter(|f| f.get("status").and_then(Value::as_str) == Some("fail"))
        .filter_map(|f| f.get("severity").and_then(Value::as_str)?.parse().ok())
        .max()
}

/// One workspace's row, from its files.
fn row(g: &Group, opts: &Options, inspected: Option<&Inspected>) -> Workspace {
    row_with(g, opts, inspected, &input::read_capped)
}

/// How a row's files are read: `input::read_capped` (path, follow a final
/// symlink); the fuzz target hands in bytes from memory instead.
pub type Reader<'a> = &'a dyn Fn(&Path, bool) -> Result<Vec<u8>, String>;

/// One workspace's row from its files, each read by `read` (bounded by
/// it) and classified, verified and tabulated here.
pub fn row_with(
    g: &Group,
    opts: &Options,
    inspected: Option<&Inspected>,
    read: Reader,
) -> Workspace {
    let mut w = Workspace {
        // The container's own name where an inspection gives it; the files'
        // stem otherwise.
        name: inspected.map_or_else(|| g.name.clone(), |i| i.name.clone()),
        source: g
            .dir
            .as_ref()
            .map(|d| d.display().to_string())
            .or_else(|| g.files.first().map(|(_, p)| p.display().to_string()))
            .unwrap_or_default(),
        files: g
            .files
            .iter()
            .map(|(_, p)| p.display().to_string())
            .collect(),
        run_id: None,
        boundary: None,
        controls: vec![Cell::default(); CONTROLS.len()],
        worst: None,
        teardown_result: None,
        verified: false,
        problems: Vec::new(),
        checked: Vec::new(),
        notes: Vec::new(),
        findings: Vec::new(),
        exit: Exit::Clean,
        total: None,
        has_content: false,
    };
    // The expected nonce; a signed input without one in --nonces cannot
    // be checked against it, which is said once an envelope is met.
    let (nonce, missing_nonce) = match &opts.nonces {
        None => (None, None),
        Some((file, map)) => match map.get(&g.name) {
            Some(n) => (Some(n.as_str()), None),
            None => (None, Some(format!("no nonce for {:?} in {file}", g.name))),
        },
    };
    // A report file is kept as bytes until it is known whether an envelope
    // verified: then it is only compared with the attested report.
    let mut report_file: Option<(String, Vec<u8>)> = None;
    let mut report_env: Option<Checked> = None;
    let mut teardown: Option<Checked> = None;
    let mut files = g.files.clone();
    selfprobe::util::sort::sort(&mut files);
    for (role, path) in &files {
        let shown = path.display().to_string();
        let bytes = match read(path, g.explicit) {
            Ok(b) => b,
            Err(e) => {
                w.problems.push(e);
                continue;
            }
        };
        match input::classify_as(&bytes, *role) {
            Err(e) => w.problems.push(format!(
                "{shown}: {e}: expected a selfprobe report, DSSE envelope or teardown statement"
            )),
            Ok(Kind::Report) if report_file.is_none() => {
                match input::check_report_size(&shown, bytes.len()) {
                    Ok(()) => report_file = Some((shown, bytes)),
                    Err(e) => w.problems.push(e.to_string()),
                }
            }
            Ok(Kind::Report) => w
                .problems
                .push(format!("{shown}: a second report for {:?}", g.name)),
            Ok(Kind::Envelope) => {
                if let Some(m) = &missing_nonce {
                    if !w.problems.contains(m) {
                        w.problems.push(m.clone());
                    }
                }
                let c = check_envelope(&shown, &bytes, opts, nonce);
                let unknown_type = c.content.is_none() && !c.verified;
                let slot = if c.teardown || (*role == Role::Teardown && unknown_type) {
                    &mut teardown
                } else {
                    &mut report_env
                };
                if slot.is_some() {
                    w.problems.push(format!(
                        "{shown}: a second {} for {:?}",
                        if c.teardown {
                            "teardown statement"
                        } else {
                            "envelope"
                        },
                        g.name
                    ));
                } else {
                    *slot = Some(c);
                }
            }
            Ok(Kind::Inspection) | Ok(Kind::Other) if g.explicit => w.problems.push(format!(
                "{shown}: not a selfprobe report, envelope or teardown statement"
            )),
            Ok(_) => w.notes.push(format!(
                "{shown}: not a selfprobe report, envelope or teardown statement; left out"
            )),
        }
    }

    // The report: the attested predicate when its envelope verified, else
    // what a bare report or an unverified envelope claims (not believed).
    let mut report: Option<Value> = None;
    match (&mut report_env, report_file) {
        (Some(env), file) => {
            w.problems.append(&mut env.problems);
            env.checks(&mut w.checked);
            if let (Some((fp, fv)), Some(att)) = (&file, &env.content) {
                if env.verified && !input::json_equals(fv, att) {
                    w.problems.push(format!(
                        "{fp}: not the report {} attests: it was changed after signing",
                        env.path
                    ));
                }
            }
            report = if env.verified || opts.keys.is_empty() {
                env.content.take()
            } else {
                None
            };
        }
        (None, Some((fp, fb))) => match serde_json::from_slice::<Value>(&fb) {
            Ok(fv) => {
                w.problems.push(format!(
                    "{fp}: a report without its envelope (--attest) cannot be verified"
                ));
                report = Some(fv);
            }
            Err(e) => w.problems.push(format!("{fp}: not JSON ({e})")),
        },
        (None, None) => {}
    }
    let mut td: Option<Value> = None;
    if let Some(t) = &mut teardown {
        w.problems.append(&mut t.problems);
        if t.verified || opts.keys.is_empty() {
            td = t.content.take();
        }
        t.checks(&mut w.checked);
    }
    let not_probed = inspected.is_some_and(|i| i.not_probed.is_some());
    let named_report = inspected.is_some_and(|i| i.report.is_some());
    if g.files.is_empty() && !not_probed && !named_report {
        w.problems
            .push("no report, envelope or teardown statement".into());
    }
    if opts.nonces.is_none()
        && (report_env.as_ref().is_some_and(|c| c.verified)
            || teardown.as_ref().is_some_and(|c| c.verified))
    {
        w.notes.push(
            "nonce not checked (no --nonces): the attestation may be from an earlier run".into(),
        );
    }

    let (had_report, had_td) = (report.is_some(), td.is_some());
    if let Some(mut report) = report {
        // Typed (model::read): what the report leaves out is None here, not
        // the model's default.
        let read = Read::from_value(&report);
        let rr = &read.report;
        w.run_id = given!(&read, run.id).value().then(|| rr.run.id.clone());
        w.boundary = boundary_of(&read);
        for (i, c) in CONTROLS.iter().enumerate() {
            match rr.scorecard.controls.iter().find(|x| x.control == c.key) {
                Some(s) => {
                    w.controls[i] = Cell {
                        score: s.score.map(|n| n.min(2)),
                        reason: s.reason.clone(),
                        source: "report",
                        decisive: s.decisive.clone(),
                    }
                }
                None => w.controls[i].reason = "the report has no score for this control".into(),
            }
        }
        if given!(&read, scorecard.total).value() && given!(&read, scorecard.max).value() {
            w.total = Some((rr.scorecard.total.into(), rr.scorecard.max.into()));
        }
        // A number that is no exit code of selfprobe's does not read.
        if given!(&read, summary.exit_code).value() {
            w.exit = worse(w.exit, rr.summary.exit_code);
        } else {
            w.notes.push("the report records no exit code".into());
            w.exit = worse(w.exit, Exit::ProbeFailed);
        }
        // The findings are kept as the report gave them (the summary's
        // renderers take them as JSON), moved, not copied: a summary holds
        // a thousand reports' findings.
        drop(read);
        if let Some(Value::Array(fs)) = report.get_mut("findings").map(Value::take) {
            w.findings.extend(fs);
        }
    }
    if let Some(mut td) = td {
        // The statement's predicate, by the names teardown writes it with
        // (json_at!, named through outside::teardown::Predicate).
        let t = &td;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        w.teardown_result = text(json_at!(t, Predicate => result));
        if w.run_id.is_none() {
            w.run_id = text(json_at!(t, Predicate => run.id));
        }
        let ti = CONTROLS.iter().position(|c| c.key == "teardown");
        // The host's evidence of teardown replaces the report's own, but only
        // once it verified (docs/inspection-directory.md).
        if let (Some(i), true) = (ti, teardown.as_ref().is_some_and(|c| c.verified)) {
            let assessed =
                text(json_at!(t, Predicate => control.status)).as_deref() == Some("assessed");
            w.controls[i] = Cell::of(
                json_at!(t, Predicate => control.score).filter(|_| assessed),
                text(json_at!(t, Predicate => control.reason)),
                "teardown statement",
                items(json_at!(t, Predicate => findings))
                    .filter_map(|f| text(json_at!(f, Finding => id)))
                    .collect(),
            );
        }
        let e = match w.teardown_result.as_deref() {
            Some("gone") | Some("retained") => Exit::Clean,
            Some("remains") => Exit::Findings,
            _ => Exit::ProbeFailed,
        };
        w.exit = worse(w.exit, e);
        if let Some(Value::Array(fs)) = td.get_mut("findings").map(Value::take) {
            w.findings.extend(fs);
        }
    }
    if let Some(i) = inspected {
        if let Some(why) = &i.not_probed {
            w.problems.push(format!("not probed: {why}"));
        } else if !had_report && report_env.is_none() {
            if let Some(f) = &i.report {
                w.problems
                    .push(format!("inspection.json names {f}, which is not there"));
            }
        }
        if let Some(e) = i.exit {
            w.exit = worse(w.exit, e);
        }
        w.findings.extend(i.findings.iter().cloned());
    }
    w.worst = worst(&w.findings);
    w.has_content = had_report || had_td || !w.findings.is_empty();
    w.verified = w.problems.is_empty();
    if !w.verified {
        w.exit = Exit::ProbeFailed;
    }
    w
}

/// Verifies and tabulates every workspace under `paths`.
pub fn summarize(paths: &[PathBuf], opts: &Options) -> Fleet {
    let found = input::walk(paths);
    let mut errors = found.errors;
    let mut notes = found.notes;
    // Each directory's inspection.json, by directory.
    let mut inspected: BTreeMap<PathBuf, BTreeMap<String, Inspected>> = BTreeMap::new();
    for p in &found.inspections {
        let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
        inspected.insert(dir, read_inspection(p, &mut errors));
    }
    for d in &found.keyfiles {
        if opts.keys.is_empty() || opts.nonces.is_none() {
            notes.push(format!(
                "{0} has nonces and signing.pub from an inspection: pass --nonces {0}/nonces and --pubkey {0}/signing.pub if you trust them",
                d.display()
            ));
        }
    }
    // Containers an inspection lists but wrote no files for (not probed).
    let mut groups = found.groups;
    for (dir, list) in &inspected {
        for name in list.keys() {
            let has = groups
                .iter()
                .any(|g| g.dir.as_deref() == Some(dir.as_path()) && &g.name == name);
            if !has {
                groups.push(Group {
                    name: name.clone(),
                    dir: Some(dir.clone()),
                    files: Vec::new(),
                    explicit: false,
                });
            }
        }
    }
    let rows = rows_parallel(&groups, opts, &inspected);
    // A directory's files that held nothing of selfprobe's make no row.
    let workspaces: Vec<Workspace> = rows
        .into_iter()
        .filter_map(|w| {
            if w.files.is_empty() && w.problems.is_empty() {
                return None;
            }
            let useless = !w.files.is_empty()
                && w.problems.is_empty()
                && w.run_id.is_none()
                && w.teardown_result.is_none()
                && w.findings.is_empty()
                && w.controls.iter().all(|c| c.source.is_empty());
            if useless {
                notes.extend(w.notes);
                None
            } else {
                Some(w)
            }
        })
        .collect();
    let mut exit = Exit::Clean;
    for w in &workspaces {
        exit = worse(exit, w.exit);
    }
    if !errors.is_empty() || workspaces.is_empty() {
        exit = Exit::ProbeFailed;
    }
    if workspaces.is_empty() && errors.is_empty() {
        errors.push("no report, envelope or teardown statement was found".into());
    }
    Fleet {
        workspaces,
        errors,
        notes,
        exit,
    }
}

/// The rows, on as many threads as there are CPUs (at most 8): verifying a
/// thousand envelopes is SHA-512 and JSON parsing, and each row is
/// independent. The order is the input's.
/// A row whose files are larger than this in all is a big one.
const BIG_ROW: u64 = 1 << 20;
/// Big rows read at once.
const BIG_AT_ONCE: usize = 2;

fn rows_parallel(
    groups: &[Group],
    opts: &Options,
    inspected: &BTreeMap<PathBuf, BTreeMap<String, Inspected>>,
) -> Vec<Workspace> {
    // A row costs about eight times its files in memory while it is read
    // (bench/RESULTS.md): rows whose files pass BIG_ROW take turns, at most
    // BIG_AT_ONCE at a time, so the peak stays near that many reports of
    // the largest size (docs/fleet.md, Limits) however many CPUs there are.
    let big = (std::sync::Mutex::new(0usize), std::sync::Condvar::new());
    let one = |g: &Group| {
        let i = g
            .dir
            .as_ref()
            .and_then(|d| inspected.get(d))
            .and_then(|m| m.get(&g.name));
        let bytes: u64 = g
            .files
            .iter()
            .filter_map(|(_, p)| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        if bytes <= BIG_ROW {
            return row(g, opts, i);
        }
        let (count, turn) = &big;
        let mut n = count.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= BIG_AT_ONCE {
            n = turn.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        drop(n);
        let w = row(g, opts, i);
        *count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        turn.notify_one();
        w
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(groups.len().max(1));
    if threads <= 1 {
        return groups.iter().map(one).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<Workspace>> = (0..groups.len()).map(|_| None).collect();
    let done: Vec<Vec<(usize, Workspace)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= groups.len() {
                            break;
                        }
                        mine.push((i, one(&groups[i])));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (i, w) in done.into_iter().flatten() {
        out[i] = Some(w);
    }
    out.into_iter()
        .enumerate()
        .map(|(i, w)| w.unwrap_or_else(|| one(&groups[i])))
        .collect()
}
