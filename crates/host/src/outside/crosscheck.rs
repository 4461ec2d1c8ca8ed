//! The second witness: the engine's record of a container against the
//! report the probe made inside it, fact by fact. Every fact compared is a
//! `Comparison` (agree, disagree, not comparable, unknown), and each
//! disagreement is also a finding of its own code (`disagree.*`) with both
//! views: high when the inside claims a narrower boundary than the record
//! (what a lying workspace would do), medium when it claims a wider one.
//!
//! Pure: a record, the engine's facts, what inspect asked the probe and
//! the report as JSON in, the comparisons out. The report is untrusted:
//! every fact compared must be in it. One it leaves out (absent, null
//! where the format has no null, or of another type) is a disagreement of
//! its own, `disagree.fact-missing`, high; only an `unknown` the report
//! gives with its reason (a probe that did not finish, a part it could not
//! read) is shown as unknown. The arguments the report says its run had are
//! compared with those inspect gave (`disagree.run-arguments`), and whether
//! the runtime is a sandbox comes from the engine alone, never the report.
//! Paths are compared as the container resolves them (`resolved`: the
//! record's destinations and the report's socket paths, resolved inside the
//! container's root by outside/resolve.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::engine::Engine;
use super::record::{MountKind, Record};
use selfprobe::catalog;
use selfprobe::facts::mounts::MountEntry;
use selfprobe::finding::Code;
use selfprobe::finding::{Finding, Severity};
use selfprobe::given;
use selfprobe::model::read::{word, Given, Read};
use selfprobe::probe::privilege::PrivFacts;
use selfprobe::probe::{Facts, ProbeStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Agree,
    Disagree,
    /// The runtime makes the fact mean something else inside (gVisor's
    /// Sentry has namespaces of its own): compared by neither side.
    NotComparable,
    /// One side could not say.
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub fact: String,
    pub verdict: Verdict,
    pub inside: Value,
    pub engine: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The contract's disagreement entry (docs/inspection-directory.md).
#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    pub fact: String,
    pub inside: Value,
    pub engine: Value,
    pub code: String,
    pub severity: Severity,
}

#[derive(Debug, Default)]
pub struct CrossCheck {
    pub comparisons: Vec<Comparison>,
    pub disagreements: Vec<Disagreement>,
    pub findings: Vec<Finding>,
}

/// What the comparison needs beside the record and the report.
pub struct Context<'a> {
    pub rec: &'a Record,
    pub engine: &'a Engine,
    /// Every capability the host kernel knows (up to its cap_last_cap).
    pub all_caps: &'a [String],
    /// The arguments inspect gave the probe's run; None: not compared.
    pub asked: Option<&'a Asked>,
    /// Paths inside the container and what they resolve to there, where
    /// that differs (`/var/run/docker.sock` to `/run/docker.sock` in an
    /// image whose /var/run is a symlink to /run). A path not in it is
    /// compared as written.
    pub resolved: &'a BTreeMap<String, String>,
}

impl Context<'_> {
    /// `p` as the container resolves it.
    fn resolve<'p>(&'p self, p: &'p str) -> &'p str {
        self.resolved.get(p).map_or(p, String::as_str)
    }
}

/// The arguments inspect gave the probe's run (`run --root … --workspace
/// … --policy … --timeout … --nonce … --fail-on …`): the report must say
/// it ran with exactly these (its `run` section, signed with the rest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Asked {
    pub root: String,
    pub workspace: Option<String>,
    /// The SHA-256 of the policy file placed beside the probe, if any.
    pub policy_sha256: Option<String>,
    pub timeout_ms: u64,
    pub nonce: String,
    pub fail_on: Option<Severity>,
}

/// Why a section of the report is not there: the report's own reason (a
/// probe that did not finish, a part it could not read), or none.
enum Got {
    /// Not there, with the report's own reason.
    Unknown(String),
    /// Not there, and the report says nothing of why (or it is there but
    /// does not read as the model's type: model::read names it malformed).
    Absent,
}

/// Initial namespace inodes (include/linux/proc_ns.h): a process in the
/// machine's own namespace of that type sees exactly this inode.
const INIT_USER_NS: u64 = 0xEFFF_FFFD;

/// The report as the comparison reads it: typed through the model
/// (selfprobe::model::read), with `given!` where a fact the report leaves
/// out must not pass for the model's default.
struct Report<'a>(&'a Read);

impl Report<'_> {
    fn inv(&self) -> &Facts {
        &self.0.report.inventory
    }
    fn findings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .report
            .findings
            .iter()
            .map(|f| (f.code.as_str(), f.subject.as_str()))
    }
    fn has(&self, code: &str) -> bool {
        self.findings().any(|(c, _)| c == code)
    }
    fn subjects(&self, code: &str) -> Vec<String> {
        self.findings()
            .filter(|(c, _)| *c == code)
            .map(|(_, s)| s.to_string())
            .collect()
    }

    /// Why the report has no section filled by `probe`, in its own words:
    /// the entry of that probe, when it did not end "ok" and says why.
    fn reason(&self, probe: &str) -> Option<String> {
        self.0
            .report
            .probes
            .iter()
            .find(|p| p.name == probe && p.status != ProbeStatus::Ok)
            .and_then(|p| {
                let why = p.reason.as_deref().filter(|r| !r.trim().is_empty())?;
                Some(format!(
                    "the report's {probe} probe ended {}: {why}",
                    p.status
                ))
            })
    }

    /// A section of the inventory, filled by the probe `probe`. One that is
    /// null, missing or not of the model's shape is unknown when that
    /// probe's entry says why, else absent.
    fn need<'s, T>(&self, section: Option<&'s T>, probe: &str) -> Result<&'s T, Got> {
        section.ok_or_else(|| match self.reason(probe) {
            Some(why) => Got::Unknown(why),
            None => Got::Absent,
        })
    }

    fn privilege(&self) -> Result<&PrivFacts, Got> {
        self.need(self.inv().privilege.as_ref(), "privilege")
    }

    /// The reason the privilege section's `incomplete` list gives for its
    /// part `part` (`[["lsm", "Permission denied"]]`).
    fn incomplete(&self, part: &str) -> Option<String> {
        let p = self.inv().privilege.as_ref()?;
        p.incomplete
            .iter()
            .find(|(what, why)| what == part && !why.trim().is_empty())
            .map(|(what, why)| format!("the report could not read its {what}: {why}"))
    }
}

/// The report's `run` section as the comparison reads it, from the model's
/// RunInfo. A field whose null means something (no workspace, no policy, no
/// --fail-on) is `Some(None)` when null and `None` when absent.
struct RunSeen {
    root: Option<String>,
    workspace: Option<Option<String>>,
    workspace_source: Option<Option<String>>,
    policy_sha256: Option<Option<String>>,
    timeout_ms: Option<u64>,
    nonce: Option<String>,
    fail_on: Option<Option<String>>,
}

/// A field whose null means something (no workspace, no policy, no
/// --fail-on): `Some(None)` when null, `None` when absent.
fn nullable<T: Clone>(given: Given, v: &Option<T>) -> Option<Option<T>> {
    match given {
        Given::Absent => None,
        Given::Null => Some(None),
        Given::Value => Some(v.clone()),
    }
}

struct Cmp<'a> {
    ctx: &'a Context<'a>,
    out: CrossCheck,
}

impl Cmp<'_> {
    fn agree(&mut self, fact: &str, inside: Value, engine: Value) {
        self.push(fact, Verdict::Agree, inside, engine, None);
    }

    fn push(
        &mut self,
        fact: &str,
        verdict: Verdict,
        inside: Value,
        engine: Value,
        note: Option<String>,
    ) {
        self.out.comparisons.push(Comparison {
            fact: fact.to_string(),
            verdict,
            inside,
            engine,
            note,
        });
    }

    /// A disagreement: the comparison, its contract entry and its finding.
    /// `narrower`: the inside claims a narrower boundary than the record.
    #[allow(clippy::too_many_arguments)]
    fn disagree(
        &mut self,
        fact: &str,
        code: Code,
        subject: &str,
        narrower: bool,
        inside: Value,
        engine: Value,
        message: String,
    ) {
        let rec = self.ctx.rec;
        let mut f = Finding::new(code, subject, format!("{}: {message}", rec.name))
            .with("fact", fact)
            .with("inside", inside.clone())
            .with("engine", engine.clone())
            .with("container", rec.name.clone())
            .with("container_id", rec.id.clone())
            .with(
                "direction",
                if narrower {
                    "the inside claims a narrower boundary than the engine's record"
                } else {
                    "the inside shows a wider boundary than the engine's record"
                },
            );
        if !narrower {
            f = f.severity(Severity::Medium);
        }
        self.out.disagreements.push(Disagreement {
            fact: fact.to_string(),
            inside: inside.clone(),
            engine: engine.clone(),
            code: code.to_string(),
            severity: f.severity,
        });
        self.out.findings.push(f);
        self.push(fact, Verdict::Disagree, inside, engine, Some(message));
    }

    fn unknown(&mut self, fact: &str, engine: Value, why: &str) {
        self.push(
            fact,
            Verdict::Unknown,
            Value::Null,
            engine,
            Some(why.to_string()),
        );
    }

    /// A fact the report leaves out: a disagreement of its own (high), so
    /// a report that omits what would be compared is never clean.
    fn absent(&mut self, fact: &str, engine: Value, what: &str) {
        self.disagree(
            fact,
            Code::DisagreeFactMissing,
            fact,
            true,
            Value::Null,
            engine,
            format!("the report does not give {what}, which the comparison with the engine's record needs, and says nothing of why"),
        );
    }

    /// A fact the report could not give: unknown with the report's reason,
    /// or, without one, absent.
    fn missing(&mut self, fact: &str, engine: Value, what: &str, got: Got) {
        match got {
            Got::Unknown(why) => self.unknown(fact, engine, &why),
            _ => self.absent(fact, engine, what),
        }
    }

    fn not_comparable(&mut self, fact: &str, inside: Value, engine: Value, why: &str) {
        self.push(
            fact,
            Verdict::NotComparable,
            inside,
            engine,
            Some(why.to_string()),
        );
    }
}

/// Compares the record with the report. `report` is the probe's JSON report.
pub fn compare(ctx: &Context, report: &Value) -> CrossCheck {
    compare_read(ctx, &Read::from_value(report))
}

/// Compares the record with the report, read back (model::read).
pub fn compare_read(ctx: &Context, report: &Read) -> CrossCheck {
    let r = Report(report);
    let mut c = Cmp {
        ctx,
        out: CrossCheck::default(),
    };
    if let Some(asked) = ctx.asked {
        arguments(&mut c, &r, asked);
    }
    // The engine's runtime says whether this is a sandbox, never the report
    // (a workspace can show gVisor's /proc/version under runc).
    let runtime = ctx.engine.runtime_kind(&ctx.rec.runtime);
    let sandbox = runtime == "runsc";
    privileged(&mut c, &r, sandbox);
    capabilities(&mut c, &r);
    seccomp(&mut c, &r);
    lsm(&mut c, &r, sandbox);
    flag(&mut c, &r, &NO_NEW_PRIVS);
    namespaces(&mut c, &r, sandbox);
    devices(&mut c, &r, sandbox);
    flag(&mut c, &r, &READ_ONLY_ROOT);
    user(&mut c, &r);
    runtime_kind(&mut c, &r, runtime);
    rootless(&mut c, &r, sandbox);
    mounts(&mut c, &r, sandbox);
    sockets(&mut c, &r);
    c.out
}

/// The paths the comparison will look up in `Context::resolved`: every
/// destination in the record and every path the report names an engine
/// socket at, for outside/resolve.rs to resolve inside the container. At
/// most `max`: the report's part is untrusted and bounded.
pub fn paths_to_resolve(rec: &Record, report: &Read, max: usize) -> Vec<String> {
    let r = Report(report);
    let mut out: Vec<String> = rec.mounts.iter().map(|m| m.destination.clone()).collect();
    for code in [
        "engine.socket-reachable",
        "engine.socket-present",
        "mount.socket",
    ] {
        out.extend(r.subjects(code).into_iter().filter(|s| s.starts_with('/')));
    }
    selfprobe::util::sort::sort(&mut out);
    out.dedup();
    out.truncate(max);
    out
}

/// The run's arguments as the report gives them against those inspect
/// gave: a report of another run (another root, workspace, policy,
/// timeout, nonce or --fail-on: a workspace that ran the probe its own
/// way) is a disagreement, high, whatever its signature.
fn arguments(c: &mut Cmp, r: &Report, asked: &Asked) {
    let read = &r.0;
    if !given!(read, run).value() || read.is_malformed("run") {
        let inside = match read.malformed().get("run") {
            Some(why) => json!({ "malformed": why }),
            None => Value::Null,
        };
        c.disagree(
            "run",
            Code::DisagreeRunArguments,
            "run",
            true,
            inside,
            json!(asked),
            "the report has no run section of the shape selfprobe writes: what the probe was asked cannot be compared".into(),
        );
        return;
    }
    let run = &read.report.run;
    // What the report gave, field by field: a field left out is None (and
    // disagrees), not the model's default.
    let seen = RunSeen {
        root: given!(read, run.root).value().then(|| run.root.clone()),
        workspace: nullable(given!(read, run.workspace), &run.workspace),
        workspace_source: nullable(given!(read, run.workspace_source), &run.workspace_source),
        policy_sha256: nullable(given!(read, run.policy_sha256), &run.policy_sha256),
        // A number past u64 is no timeout inspect gave.
        timeout_ms: given!(read, run.timeout_ms)
            .value()
            .then(|| u64::try_from(run.timeout_ms).ok())
            .flatten(),
        nonce: nullable(given!(read, run.nonce), &run.nonce).flatten(),
        fail_on: nullable(
            given!(read, run.fail_on),
            &run.fail_on.map(|s| s.as_str().to_string()),
        ),
    };
    let mut check =
        |fact: &str, inside: Value, engine: Value, same: bool, what: &str| {
            if same {
                c.agree(fact, inside, engine);
            } else {
                let msg =
                    format!(
                "inspect ran the probe with {what} {engine}, the report says its run had {}",
                if inside.is_null() { "none given".to_string() } else { inside.to_string() }
            );
                c.disagree(
                    fact,
                    Code::DisagreeRunArguments,
                    fact,
                    true,
                    inside,
                    engine,
                    msg,
                );
            }
        };
    check(
        "run.root",
        json!(seen.root),
        json!(asked.root),
        seen.root.as_deref() == Some(asked.root.as_str()),
        "--root",
    );
    // No --workspace: the probe may find one itself, but only as the git
    // root of its working directory, never a path given to it.
    let ws_ok = match (&asked.workspace, &seen.workspace, &seen.workspace_source) {
        (Some(w), Some(Some(got)), Some(Some(src))) => {
            src == "--workspace" && selfprobe::util::path::normalize(Path::new(w)) == Path::new(got)
        }
        (None, Some(_), Some(src)) => src
            .as_deref()
            .is_none_or(|s| s == "git root of the working directory"),
        _ => false,
    };
    check(
        "run.workspace",
        json!({"workspace": seen.workspace, "source": seen.workspace_source}),
        json!(asked.workspace),
        ws_ok,
        "--workspace",
    );
    check(
        "run.policy",
        json!(seen.policy_sha256),
        json!(asked.policy_sha256),
        seen.policy_sha256.as_ref() == Some(&asked.policy_sha256),
        "the policy of SHA-256",
    );
    check(
        "run.timeout",
        json!(seen.timeout_ms),
        json!(asked.timeout_ms),
        seen.timeout_ms == Some(asked.timeout_ms),
        "--timeout (ms)",
    );
    check(
        "run.nonce",
        json!(seen.nonce),
        json!(asked.nonce),
        seen.nonce.as_deref() == Some(asked.nonce.as_str()),
        "--nonce",
    );
    let want_fail = asked.fail_on.map(|s| s.as_str().to_string());
    check(
        "run.fail_on",
        json!(seen.fail_on),
        json!(want_fail),
        seen.fail_on.as_ref() == Some(&want_fail),
        "--fail-on",
    );
}

fn privileged(c: &mut Cmp, r: &Report, sandbox: bool) {
    let engine = c.ctx.rec.privileged;
    // priv.privileged is judged from the privilege section: without it,
    // the finding's absence says nothing.
    if let Err(got) = r.privilege() {
        return c.missing("privileged", json!(engine), "its privilege section", got);
    }
    let inside = r.has("priv.privileged");
    if engine && sandbox {
        c.not_comparable(
            "privileged",
            json!(inside),
            json!(engine),
            "a sandbox hides the host surfaces privileged mode opens, so the inside cannot see it",
        );
    } else if engine == inside {
        c.agree("privileged", json!(inside), json!(engine));
    } else {
        let msg = if engine {
            "the engine runs it privileged, the report finds no sign of it (no priv.privileged)"
        } else {
            "the report finds it privileged (priv.privileged), the engine's record does not"
        };
        c.disagree(
            "privileged",
            Code::DisagreePrivileged,
            "privileged",
            engine,
            json!(inside),
            json!(engine),
            msg.to_string(),
        );
    }
}

fn capabilities(c: &mut Cmp, r: &Report) {
    let rec = c.ctx.rec;
    let defaults = &c.ctx.engine.default_caps;
    let removed = c.ctx.engine.runtime_removes(&rec.runtime);
    let strip = |mut s: BTreeSet<String>| {
        for r in &removed {
            s.remove(*r);
        }
        s
    };
    let bounding = strip(rec.bounding_set(c.ctx.all_caps, defaults));
    let effective = rec
        .effective_set(c.ctx.all_caps, defaults, rec.uid())
        .map(strip);
    let note = (!removed.is_empty()).then(|| {
        format!(
            "the runtime {} removes {} from what the engine grants (runsc without --net-raw)",
            rec.runtime,
            removed.join(", ")
        )
    });
    for (set, engine) in [("effective", effective), ("bounding", Some(bounding))] {
        let fact = format!("capabilities.{set}");
        let Some(engine) = engine else {
            c.unknown(
                &fact,
                Value::Null,
                "the record names the user, not a uid: which capabilities are effective is not known from outside",
            );
            continue;
        };
        // A mask the report leaves out is missing, not 0.
        let mask = r.privilege().and_then(|p| {
            let (given, mask) = if set == "effective" {
                (
                    given!(&r.0, inventory.privilege => caps.effective),
                    p.caps.effective,
                )
            } else {
                (
                    given!(&r.0, inventory.privilege => caps.bounding),
                    p.caps.bounding,
                )
            };
            given.value().then_some(mask).ok_or(Got::Absent)
        });
        let inside: BTreeSet<String> = match mask {
            Ok(mask) => catalog::capability_names(mask, 63).into_iter().collect(),
            Err(got) => {
                c.missing(
                    &fact,
                    json!(engine),
                    &format!("its Cap{} mask", cap_field(set)),
                    got,
                );
                continue;
            }
        };
        let missing: Vec<&String> = engine.difference(&inside).collect();
        let extra: Vec<&String> = inside.difference(&engine).collect();
        if missing.is_empty() && extra.is_empty() {
            c.push(
                &fact,
                Verdict::Agree,
                json!(inside),
                json!(engine),
                note.clone(),
            );
            continue;
        }
        let narrower = !missing.is_empty();
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!(
                "the engine grants {} that the report's Cap{} lacks",
                join(&missing),
                cap_field(set)
            ));
        }
        if !extra.is_empty() {
            parts.push(format!(
                "the report has {} that the engine did not grant",
                join(&extra)
            ));
        }
        c.disagree(
            &fact,
            Code::DisagreeCapabilities,
            &fact,
            narrower,
            json!({"set": inside, "missing": missing, "extra": extra}),
            json!(engine),
            parts.join("; "),
        );
    }
}

/// The status field a capability set comes from: CapEff, CapBnd.
fn cap_field(set: &str) -> &'static str {
    if set == "effective" {
        "Eff"
    } else {
        "Bnd"
    }
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

fn seccomp(c: &mut Cmp, r: &Report) {
    let rec = c.ctx.rec;
    let applies = c.ctx.engine.runtime_applies_seccomp(&rec.runtime);
    let profile = if !c.ctx.engine.seccomp && rec.seccomp == "default" {
        "none (the engine has no seccomp)"
    } else {
        rec.seccomp
    };
    let filtered = rec.seccomp != "unconfined" && c.ctx.engine.seccomp && applies;
    let engine = json!({"profile": profile, "applied_inside": filtered,
        "runtime": rec.runtime});
    // Null is the report's own word for a kernel that shows no Seccomp
    // line; a section or key that is not there is absent.
    let mode = match r.privilege() {
        Ok(p) if given!(&r.0, inventory.privilege => seccomp).key() => p.seccomp,
        Ok(_) => return c.absent("seccomp", engine, "its seccomp mode"),
        Err(got) => return c.missing("seccomp", engine, "its seccomp mode", got),
    };
    let Some(mode) = mode else {
        return c.unknown(
            "seccomp",
            engine,
            "the report says /proc/self/status has no Seccomp line",
        );
    };
    let inside_filtered = mode != 0;
    let inside = json!({"mode": mode});
    if inside_filtered == filtered {
        let note = (!applies && rec.seccomp != "unconfined").then(|| {
            format!(
                "the runtime {} does not load the OCI seccomp profile into the sandbox (no --oci-seccomp); its own filter guards the host",
                rec.runtime
            )
        });
        c.push("seccomp", Verdict::Agree, inside, engine, note);
    } else if inside_filtered {
        c.disagree(
            "seccomp",
            Code::DisagreeSeccomp,
            "seccomp",
            true,
            inside,
            engine,
            format!(
                "the report has a seccomp filter (mode {mode}), the engine's record gives none"
            ),
        );
    } else {
        c.disagree(
            "seccomp",
            Code::DisagreeSeccomp,
            "seccomp",
            false,
            inside,
            engine,
            format!("the engine's record gives the {profile} seccomp profile, the report has none"),
        );
    }
}

fn lsm(c: &mut Cmp, r: &Report, sandbox: bool) {
    let rec = c.ctx.rec;
    let want = if !rec.apparmor_profile.is_empty() && rec.apparmor_profile != "unconfined" {
        Some(rec.apparmor_profile.clone())
    } else if !rec.selinux_label.is_empty() {
        Some(rec.selinux_label.clone())
    } else {
        None
    };
    let got = r.inv().privilege.as_ref().and_then(|p| p.lsm_label.clone());
    let (inside, engine) = (json!(got), json!(want));
    if sandbox {
        c.not_comparable(
            "lsm",
            inside,
            engine,
            "the host's LSM confines the sandbox's own processes on the host, which the workspace cannot see",
        );
        return;
    }
    match r.privilege() {
        Ok(_) if given!(&r.0, inventory.privilege => lsm_label).key() => {}
        Ok(_) => return c.absent("lsm", engine, "its LSM label (null for none)"),
        Err(got) => return c.missing("lsm", engine, "its LSM label", got),
    }
    if got.is_none() {
        if let Some(why) = r.incomplete("lsm") {
            return c.unknown("lsm", engine, &why);
        }
    }
    match (&want, &got) {
        (None, None) => c.agree("lsm", inside, engine),
        (Some(w), Some(g)) if g.contains(w.as_str()) => c.agree("lsm", inside, engine),
        (None, Some(g)) => {
            let msg =
                format!("the report is confined by {g}, the engine's record applies no LSM label");
            c.disagree("lsm", Code::DisagreeLsm, "lsm", true, inside, engine, msg)
        }
        (Some(w), None) => {
            let msg = format!("the engine's record applies {w}, the report has no LSM label");
            c.disagree("lsm", Code::DisagreeLsm, "lsm", false, inside, engine, msg)
        }
        (Some(w), Some(g)) => {
            let msg = format!("the engine's record applies {w}, the report is confined by {g}");
            c.disagree("lsm", Code::DisagreeLsm, "lsm", false, inside, engine, msg)
        }
    }
}

/// A flag as the report gives it: whether the key is there, and its value
/// (None: null).
type FlagSeen = (Given, Option<bool>);

/// A yes/no fact where the inside's yes is the narrower claim (a flag
/// that restricts): where the report keeps it, what the record says, and
/// the messages for each answer.
struct Flag {
    fact: &'static str,
    code: Code,
    subject: &'static str,
    /// Where the report keeps its side: the inventory section and the
    /// bool's key in it, as the messages name them.
    section: &'static str,
    key: &'static str,
    /// The report's side: whether it gave the key, and its value (None:
    /// null), or why the section is not there.
    inside: fn(&Report<'_>) -> Result<FlagSeen, Got>,
    engine: fn(&Record) -> bool,
    /// What a null there means, when the report's format gives null a
    /// meaning (the kernel does not show it); None: null is absent.
    null: Option<&'static str>,
    /// When the inside says yes and the record no, and the other way.
    inside_yes: &'static str,
    engine_yes: &'static str,
}

const NO_NEW_PRIVS: Flag = Flag {
    fact: "no_new_privileges",
    code: Code::DisagreeNoNewPrivs,
    subject: "no_new_privileges",
    section: "privilege",
    key: "no_new_privs",
    inside: |r| {
        let p = r.privilege()?;
        Ok((
            given!(&r.0, inventory.privilege => no_new_privs),
            p.no_new_privs,
        ))
    },
    engine: |rec| rec.no_new_privileges,
    null: Some("the report does not know NoNewPrivs: its /proc/self/status has no such line (gVisor does not show it)"),
    inside_yes: "the report has NoNewPrivs set, the engine's record does not set no-new-privileges (a daemon-wide default is not in the record)",
    engine_yes: "the engine's record sets no-new-privileges, the report has NoNewPrivs unset",
};

const READ_ONLY_ROOT: Flag = Flag {
    fact: "read_only_root",
    code: Code::DisagreeReadOnlyRoot,
    subject: "/",
    section: "writable",
    key: "rootfs_read_only_mount",
    inside: |r| {
        let w = r.need(r.inv().writable.as_ref(), "writable")?;
        Ok((
            given!(&r.0, inventory.writable => rootfs_read_only_mount),
            Some(w.rootfs_read_only_mount),
        ))
    },
    engine: |rec| rec.read_only_root,
    null: None,
    inside_yes: "the report's / is mounted read-only, the engine's record does not make it so",
    engine_yes: "the engine's record makes / read-only, the report's / is mounted writable",
};

/// Agree, unknown, absent, or a disagreement with the message for the
/// side that says yes.
fn flag(c: &mut Cmp, r: &Report, f: &Flag) {
    let engine = (f.engine)(c.ctx.rec);
    let what = format!("{}.{}", f.section, f.key);
    let got = match (f.inside)(r) {
        Ok((Given::Value, Some(v))) => v,
        Ok((Given::Null, _)) => match f.null {
            Some(why) => return c.unknown(f.fact, json!(engine), why),
            None => return c.absent(f.fact, json!(engine), &what),
        },
        Ok(_) => return c.absent(f.fact, json!(engine), &what),
        Err(got) => return c.missing(f.fact, json!(engine), &what, got),
    };
    if got == engine {
        c.agree(f.fact, json!(got), json!(engine));
    } else {
        let msg = if got { f.inside_yes } else { f.engine_yes };
        c.disagree(
            f.fact,
            f.code,
            f.subject,
            got,
            json!(got),
            json!(engine),
            msg.to_string(),
        );
    }
}

fn namespaces(c: &mut Cmp, r: &Report, sandbox: bool) {
    let rec = c.ctx.rec;
    for (ns, code, inode) in [
        ("pid", "ns.host-pid", "pid"),
        ("net", "ns.host-network", "net"),
        ("ipc", "ns.host-ipc", "ipc"),
        ("uts", "ns.host-uts", "uts"),
        ("cgroup", "ns.host-cgroup", "cgroup"),
    ] {
        let fact = format!("namespace.{ns}");
        let mode = rec.namespaces.get(ns).cloned().unwrap_or_default();
        let engine_host = rec.shares_host(ns);
        let engine = json!({"mode": mode, "host": engine_host});
        if sandbox {
            c.not_comparable(
                &fact,
                Value::Null,
                engine,
                "gVisor's Sentry implements its own namespaces: the sandbox does not share the host's (measured: --pid host still gives it a PID namespace of its own)",
            );
            continue;
        }
        let nsf = match r.need(r.inv().namespaces.as_ref(), "namespaces") {
            Ok(n) => n,
            Err(got) => {
                c.missing(&fact, engine, "its namespaces section", got);
                continue;
            }
        };
        let finding = r.has(code);
        let ino = nsf.inodes.get(inode).copied();
        if ino.is_none() && !finding {
            match nsf.unreadable.get(inode) {
                Some(why) => c.unknown(
                    &fact,
                    engine,
                    &format!("the report could not read its {ns} namespace: {why}"),
                ),
                None => c.absent(
                    &fact,
                    engine,
                    &format!("its {ns} namespace's inode (or why it could not read it)"),
                ),
            }
            continue;
        }
        // The kernel's initial inode is the host's namespace (the probe's
        // own rule, src/probe/namespaces.rs); a report whose findings leave
        // that out has had them taken away.
        let init = selfprobe::facts::boundary::INIT_INODES
            .iter()
            .any(|(n, i)| *n == inode && Some(*i) == ino);
        let kthreadd = ns == "pid" && nsf.kthreadd_visible == Some(true);
        let inventory_host = init || kthreadd;
        if inventory_host && !finding {
            c.disagree(
                &fact,
                Code::DisagreeNamespace,
                ns,
                true,
                json!({"host": true, "inode": ino, "finding": null}),
                engine,
                format!("the report's inventory shows the host's {ns} namespace, and its findings leave out {code}"),
            );
            continue;
        }
        let inside_host = finding || inventory_host;
        let inside =
            json!({"host": inside_host, "finding": if inside_host { Some(code) } else { None }});
        if inside_host == engine_host {
            c.agree(&fact, inside, engine);
        } else {
            let msg = if engine_host {
                format!("the engine shares the host's {ns} namespace ({ns} mode {mode}), the report sees a namespace of its own")
            } else {
                format!("the report finds the host's {ns} namespace ({code}), the engine's record gives mode {:?}", mode)
            };
            c.disagree(
                &fact,
                Code::DisagreeNamespace,
                ns,
                engine_host,
                inside,
                engine,
                msg,
            );
        }
    }
}

/// The engine's view of the user namespace: shared with the host unless the
/// engine is rootless, remaps users, or gives the container one of its own.
fn engine_rootless(c: &Cmp) -> bool {
    let rec = c.ctx.rec;
    let e = c.ctx.engine;
    let mode = rec.namespaces.get("user").map(String::as_str).unwrap_or("");
    e.rootless
        || (e.userns_remap && mode != "host")
        || (rec.engine == super::record::EngineKind::Podman && !mode.is_empty() && mode != "host")
}

fn rootless(c: &mut Cmp, r: &Report, sandbox: bool) {
    let want = engine_rootless(c);
    let engine = json!({"rootless": want, "userns_mode": c.ctx.rec.namespaces.get("user")});
    // Null is the report's "not read", which the comparison cannot use.
    let got = match r.need(r.inv().boundary.as_ref(), "boundary") {
        Ok(b) => b.rootless.ok_or(Got::Absent),
        Err(got) => Err(got),
    };
    let got = match got {
        Ok(g) => g,
        Err(got) => return c.missing("rootless", engine, "rootless in its boundary section", got),
    };
    let inode = r
        .inv()
        .namespaces
        .as_ref()
        .and_then(|n| n.inodes.get("user").copied());
    let inside = json!({"rootless": got, "user_ns_inode": inode});
    if got == want {
        c.agree("rootless", inside.clone(), engine.clone());
    } else {
        let msg = if got {
            "the report says uid 0 maps to a non-zero uid outside (rootless), the engine is not rootless and gives no user namespace"
        } else {
            "the engine is rootless or gives a user namespace, the report's uid 0 is the host's"
        };
        c.disagree(
            "rootless",
            Code::DisagreeRootless,
            "rootless",
            got,
            inside.clone(),
            engine.clone(),
            msg.to_string(),
        );
    }
    // The user namespace itself, as a namespace fact beside the others.
    if sandbox {
        return;
    }
    let ns_engine = json!({"host": !want});
    let Some(inode) = inode else {
        match r.need(r.inv().namespaces.as_ref(), "namespaces") {
            Ok(nsf) => match nsf.unreadable.get("user") {
                Some(why) => c.unknown(
                    "namespace.user",
                    ns_engine,
                    &format!("the report could not read its user namespace: {why}"),
                ),
                None => c.absent(
                    "namespace.user",
                    ns_engine,
                    "its user namespace's inode (or why it could not read it)",
                ),
            },
            Err(got) => c.missing("namespace.user", ns_engine, "its namespaces section", got),
        }
        return;
    };
    {
        let inside_host = inode == INIT_USER_NS;
        let ns_inside = json!({"host": inside_host, "inode": inode});
        if inside_host != want {
            c.agree("namespace.user", ns_inside, ns_engine);
        } else {
            let msg = if inside_host {
                "the report is in the host's user namespace, the engine gives the container one of its own".to_string()
            } else {
                "the report is in a user namespace of its own, the engine's record shares the host's".to_string()
            };
            c.disagree(
                "namespace.user",
                Code::DisagreeNamespace,
                "user",
                !inside_host,
                ns_inside,
                ns_engine,
                msg,
            );
        }
    }
}

fn devices(c: &mut Cmp, r: &Report, sandbox: bool) {
    let rec = c.ctx.rec;
    let granted: Vec<String> = rec.devices.iter().map(|d| d.container.clone()).collect();
    let engine = json!(granted);
    // A list the report leaves out is missing, not empty.
    let nodes: Result<BTreeSet<String>, Got> =
        r.need(r.inv().devices.as_ref(), "devices").and_then(|d| {
            given!(&r.0, inventory.devices => nodes)
                .value()
                .then(|| d.nodes.iter().map(|n| n.path.clone()).collect())
                .ok_or(Got::Absent)
        });
    let nodes = match nodes {
        Ok(n) => n,
        Err(got) => return c.missing("devices", engine, "its device list (devices.nodes)", got),
    };
    let missing: Vec<&String> = granted.iter().filter(|d| !nodes.contains(*d)).collect();
    // Host devices the inside reports that nothing in the record explains.
    let mut unexplained: Vec<String> = Vec::new();
    if !rec.privileged && !sandbox {
        for code in ["device.host-block", "device.sensitive"] {
            for s in r.subjects(code) {
                let bound = rec
                    .mounts
                    .iter()
                    .any(|m| super::placement::within(&s, &m.destination));
                if !granted.contains(&s) && !bound {
                    unexplained.push(s);
                }
            }
        }
    }
    selfprobe::util::sort::sort(&mut unexplained);
    unexplained.dedup();
    let inside = json!({"granted_seen": granted.iter().filter(|d| nodes.contains(*d)).collect::<Vec<_>>(),
        "missing": missing, "unexplained": unexplained});
    if missing.is_empty() && unexplained.is_empty() {
        let note = sandbox.then(|| "the sandbox's own devices (gVisor's /dev/fuse, /dev/net/tun) are the Sentry's and not compared".to_string());
        c.push("devices", Verdict::Agree, inside, engine, note);
        return;
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!(
            "the engine adds {} that the report's /dev lacks",
            join(&missing)
        ));
    }
    if !unexplained.is_empty() {
        parts.push(format!(
            "the report sees {} that the record neither adds nor binds",
            unexplained.join(", ")
        ));
    }
    c.disagree(
        "devices",
        Code::DisagreeDevices,
        "devices",
        !missing.is_empty(),
        inside,
        engine,
        parts.join("; "),
    );
}

fn user(c: &mut Cmp, r: &Report) {
    let rec = c.ctx.rec;
    let euid = r
        .inv()
        .privilege
        .as_ref()
        .and_then(|p| p.uid.get(1))
        .map(|&u| u64::from(u));
    let name = r.inv().rootpaths.as_ref().and_then(|p| p.user.clone());
    let engine = json!({"user": rec.user, "uid": rec.uid()});
    let inside = json!({"uid": euid, "name": name});
    let Some(euid) = euid else {
        let got = r.privilege().err().unwrap_or(Got::Absent);
        return c.missing("user", engine, "its effective uid (privilege.uid)", got);
    };
    let same = match (rec.uid(), rec.user_name()) {
        (Some(u), _) => u as u64 == euid,
        (None, Some(n)) => name.as_deref() == Some(n),
        (None, None) => true,
    };
    if same {
        c.agree("user", inside, engine);
        return;
    }
    let engine_root = rec.uid() == Some(0);
    let narrower = engine_root && euid != 0;
    let msg = format!(
        "the engine runs the container as {:?}, the report ran as uid {euid}{}",
        if rec.user.is_empty() {
            "root (the image default)"
        } else {
            rec.user.as_str()
        },
        name.as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    );
    c.disagree(
        "user",
        Code::DisagreeUser,
        "user",
        narrower,
        inside,
        engine,
        msg,
    );
}

fn runtime_kind(c: &mut Cmp, r: &Report, runtime: &str) {
    let rec = c.ctx.rec;
    let want_kind = match runtime {
        "runsc" => "sandbox",
        "kata" => "vm-container",
        _ => "container",
    };
    let engine = json!({"runtime": rec.runtime, "kind": runtime, "boundary": want_kind});
    let b = match r.need(r.inv().boundary.as_ref(), "boundary") {
        Ok(b) => b,
        Err(got) => return c.missing("runtime", engine, "its boundary section", got),
    };
    // Left out, they are missing, not the model's "unknown".
    if !given!(&r.0, inventory.boundary => runtime).value()
        || !given!(&r.0, inventory.boundary => kind).value()
    {
        return c.absent("runtime", engine, "boundary.runtime and boundary.kind");
    }
    let (got_rt, got_kind) = (word(&b.runtime), word(&b.kind));
    let (got_rt, got_kind) = (got_rt.as_str(), got_kind.as_str());
    let inside = json!({"runtime": got_rt, "kind": got_kind});
    if runtime == "unknown" {
        c.unknown(
            "runtime",
            engine,
            "the engine's runtime is not one selfprobe knows",
        );
        return;
    }
    // The kind is compared even when the report does not name the runtime:
    // a sandbox claimed under runc is a narrower claim, named or not.
    if got_kind == want_kind {
        if got_rt == runtime {
            c.agree("runtime", inside, engine);
            return;
        }
        if got_rt == "unknown" {
            c.unknown(
                "runtime",
                engine,
                "the report does not know the runtime (its kind agrees)",
            );
            return;
        }
    }
    let rank = |k: &str| match k {
        "vm-container" => 3,
        "sandbox" => 2,
        "container" => 1,
        _ => 0,
    };
    let narrower = rank(got_kind) > rank(want_kind);
    let msg = format!(
        "the engine runs it with {} ({runtime}: a {want_kind}), the report says {got_rt} (a {got_kind})",
        rec.runtime
    );
    c.disagree(
        "runtime",
        Code::DisagreeRuntime,
        "runtime",
        narrower,
        inside,
        engine,
        msg,
    );
}

/// How the inside classes each kind of record mount. Under gVisor every
/// volume reaches the sandbox as a 9p mount like a bind, which the inside
/// cannot tell apart: a volume classed host-bind there is a volume.
fn class_fits(kind: &MountKind, class: &str, source: &str, sandbox: bool) -> bool {
    match kind {
        MountKind::Bind => {
            matches!(
                class,
                "host-bind"
                    | "host-root"
                    | "socket"
                    | "workspace"
                    | "host-procfs"
                    | "host-tmpfs"
                    | "container-rootfs"
                    | "device"
                    | "probe-binary"
                    | "engine-managed"
                    | "unknown"
            ) || (class == "volume" && source.contains("/volumes/"))
        }
        MountKind::Volume => {
            matches!(class, "volume" | "workspace" | "unknown") || (sandbox && class == "host-bind")
        }
        MountKind::Tmpfs => matches!(class, "tmpfs" | "workspace" | "unknown"),
        MountKind::Other => true,
    }
}

fn propagation_of(optional: &[String]) -> &'static str {
    if optional.iter().any(|o| o.starts_with("shared:")) {
        "shared"
    } else if optional.iter().any(|o| o.starts_with("master:")) {
        "slave"
    } else {
        "private"
    }
}

fn recorded_propagation(p: &str) -> Option<&'static str> {
    match p.trim_start_matches('r') {
        "shared" => Some("shared"),
        "slave" => Some("slave"),
        "private" | "" => Some("private"),
        _ => None,
    }
}

fn mounts(c: &mut Cmp, r: &Report, sandbox: bool) {
    let rec = c.ctx.rec;
    let table = r.need(r.inv().mounts.as_ref(), "mounts");
    let inside_mounts: &[MountEntry] = match &table {
        Ok(t) => &t.mounts,
        Err(_) => &[],
    };
    if inside_mounts.is_empty() {
        // Every container has a root: an empty table is no table.
        let got = table.err().unwrap_or(Got::Absent);
        return c.missing(
            "mounts",
            Value::Null,
            "its mount table (mounts.mounts)",
            got,
        );
    }
    let point = |m: &MountEntry| m.mount.mount_point.to_string_lossy().into_owned();
    for m in &rec.mounts {
        if m.kind == MountKind::Other {
            continue;
        }
        let fact = format!("mount:{}", m.destination);
        // Where the container has it: the destination as the container
        // resolves it (/var/run/docker.sock is /run/docker.sock where
        // /var/run is a symlink to /run).
        let dest = c.ctx.resolve(&m.destination);
        let mut engine = json!({"type": m.kind, "source": m.source, "destination": m.destination,
            "rw": m.rw, "propagation": m.propagation});
        if dest != m.destination {
            engine["resolves_to"] = json!(dest);
        }
        // The topmost mount at that point: mountinfo lists newer ones later.
        let Some(im) = inside_mounts
            .iter()
            .rev()
            .find(|x| point(x).trim_end_matches('/') == dest.trim_end_matches('/'))
        else {
            c.disagree(
                &fact,
                Code::DisagreeMount,
                &m.destination,
                true,
                Value::Null,
                engine,
                format!(
                    "the engine mounts {} at {}, the report's mount table has nothing there",
                    describe(m),
                    if dest == m.destination {
                        m.destination.clone()
                    } else {
                        format!(
                            "{} (which resolves to {dest} in the container)",
                            m.destination
                        )
                    }
                ),
            );
            continue;
        };
        let class = word(&im.class);
        let class = class.as_str();
        let root = im.mount.root.to_string_lossy();
        let root: &str = &root;
        let ro = im.read_only;
        let fstype = im.mount.fstype.as_str();
        let optional = &im.mount.optional;
        let options: Vec<&str> = im.mount.options.iter().map(String::as_str).collect();
        let inside = json!({"class": class, "root": root, "read_only": ro, "fstype": fstype,
            "propagation": propagation_of(optional)});
        let mut narrower = Vec::new();
        let mut wider = Vec::new();
        if !class_fits(&m.kind, class, &m.source, sandbox) {
            let msg = format!(
                "the engine's {} is classed {class} by the report",
                describe(m)
            );
            match m.kind {
                MountKind::Bind => narrower.push(msg),
                _ => wider.push(msg),
            }
        }
        if m.rw && ro {
            narrower.push(
                "the engine mounts it read-write, the report's mount is read-only".to_string(),
            );
        } else if !m.rw && !ro {
            wider
                .push("the engine mounts it read-only, the report's mount is writable".to_string());
        }
        if matches!(m.kind, MountKind::Bind | MountKind::Volume)
            && !sandbox
            && !root.is_empty()
            && root != "/"
            && !source_matches(&m.source, root)
        {
            wider.push(format!(
                "the engine's source is {}, the report's mount root is {root}",
                m.source
            ));
        }
        if m.kind == MountKind::Tmpfs {
            let noexec = options.contains(&"noexec");
            let rec_exec = m.tmpfs_exec(rec.engine);
            if fstype != "tmpfs" && !sandbox {
                wider.push(format!(
                    "the engine's tmpfs is a {fstype} mount in the report"
                ));
            } else if noexec && rec_exec {
                narrower.push("the engine's tmpfs allows exec, the report's is noexec".into());
            } else if !noexec && !rec_exec && !sandbox {
                wider.push("the engine's tmpfs is noexec, the report's allows exec".into());
            }
        }
        if !sandbox && m.kind != MountKind::Tmpfs {
            if let Some(want) = recorded_propagation(&m.propagation) {
                let got = propagation_of(optional);
                // Shared is what a workspace could use to reach back.
                if want != got && (want == "shared" || got == "shared") {
                    let msg = format!(
                        "the engine records {} propagation, the report's mount is {got}",
                        m.propagation
                    );
                    if want == "shared" {
                        narrower.push(msg);
                    } else {
                        wider.push(msg);
                    }
                }
            }
        }
        if narrower.is_empty() && wider.is_empty() {
            c.agree(&fact, inside, engine);
        } else {
            let is_narrower = !narrower.is_empty();
            narrower.extend(wider);
            c.disagree(
                &fact,
                Code::DisagreeMount,
                &m.destination,
                is_narrower,
                inside,
                engine,
                narrower.join("; "),
            );
        }
    }
    // Host paths and volumes the inside sees that the record does not have.
    for im in inside_mounts {
        let class = word(&im.class);
        let class = class.as_str();
        if !matches!(
            class,
            "host-bind"
                | "host-root"
                | "socket"
                | "workspace"
                | "volume"
                | "host-procfs"
                | "container-rootfs"
        ) {
            continue;
        }
        if im.within.is_some() {
            continue;
        }
        let mp = point(im);
        // --ipc host: the engine binds the host's /dev/shm, which is not in
        // its Mounts (under gVisor it is a 9p bind like any other).
        if mp == "/dev/shm" && rec.shares_host("ipc") {
            continue;
        }
        let known = rec.mounts.iter().any(|m| {
            let d = c.ctx.resolve(&m.destination).trim_end_matches('/');
            mp.trim_end_matches('/') == d || super::placement::within(&mp, d)
        });
        if !known {
            let fact = format!("mount:{mp}");
            let inside = json!({"class": class, "root": im.mount.root.to_string_lossy(),
                "mount_point": mp});
            c.disagree(
                &fact,
                Code::DisagreeMount,
                &mp,
                false,
                inside,
                Value::Null,
                format!("the report sees a {class} mount at {mp} that the engine's record does not have"),
            );
        }
    }
}

fn describe(m: &super::record::RecordMount) -> String {
    match m.kind {
        MountKind::Bind => format!("bind of {}", m.source),
        MountKind::Volume => format!("volume {}", m.name.as_deref().unwrap_or("?")),
        MountKind::Tmpfs => "tmpfs".to_string(),
        MountKind::Other => "mount".to_string(),
    }
}

/// Whether the mount's root (a path inside its source filesystem) is the
/// tail of the engine's source path, as given or with its symlinks
/// resolved on this host (/var/run is /run).
fn source_matches(source: &str, root: &str) -> bool {
    let tail = root.trim_start_matches('/');
    if Path::new(source).ends_with(tail) {
        return true;
    }
    std::fs::canonicalize(source).is_ok_and(|p| p.ends_with(tail))
}

/// Whether a host path is a container engine's socket: a socket path the
/// catalog knows (probes/sockets.toml), a name engines give their sockets,
/// or a Unix socket on this host.
pub fn engine_socket(source: &str) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    for s in catalog::engine_sockets() {
        if selfprobe::util::glob::matches_path(&s.path, source) {
            return Some(s.engine.clone());
        }
    }
    let name = Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (file, engine) in [
        ("docker.sock", "docker"),
        ("podman.sock", "podman"),
        ("containerd.sock", "containerd"),
        ("crio.sock", "cri-o"),
        ("buildkitd.sock", "buildkit"),
    ] {
        if name == file {
            return Some(engine.to_string());
        }
    }
    std::fs::symlink_metadata(source)
        .is_ok_and(|m| m.file_type().is_socket())
        .then(|| "a socket on the host".to_string())
}

fn sockets(c: &mut Cmp, r: &Report) {
    let rec = c.ctx.rec;
    let engine_codes = ["engine.socket-reachable", "engine.socket-present"];
    let inside_engine: Vec<String> = engine_codes
        .iter()
        .flat_map(|code| r.subjects(code))
        .collect();
    let inside_socket = r.subjects("mount.socket");
    for m in rec.mounts.iter().filter(|m| m.kind == MountKind::Bind) {
        let Some(kind) = engine_socket(&m.source) else {
            continue;
        };
        let fact = format!("engine_socket:{}", m.destination);
        let engine = json!({"source": m.source, "destination": m.destination, "engine": kind});
        // The sockets probe's findings are the inside view: without its
        // section, their absence says nothing.
        if let Err(got) = r.need(r.inv().sockets.as_ref(), "sockets") {
            c.missing(&fact, engine, "its sockets section", got);
            continue;
        }
        // Both sides as the container resolves them.
        let dest = c.ctx.resolve(&m.destination);
        let at = |s: &String| {
            let s = c.ctx.resolve(s);
            s == dest || super::placement::within(s, dest)
        };
        let as_engine: Vec<&String> = inside_engine.iter().filter(|s| at(s)).collect();
        let as_socket = inside_socket.iter().any(at);
        let inside = json!({"engine_socket": !as_engine.is_empty(), "socket_mount": as_socket,
            "findings": as_engine});
        if !as_engine.is_empty() {
            c.agree(&fact, inside, engine);
        } else {
            let msg = if as_socket {
                format!("the engine binds the {kind} socket {} at {}; the report sees a socket mount there but no engine behind it", m.source, m.destination)
            } else {
                format!("the engine binds the {kind} socket {} at {}; the report finds no engine socket there", m.source, m.destination)
            };
            c.disagree(
                &fact,
                Code::DisagreeEngineSocket,
                &m.destination,
                true,
                inside,
                engine,
                msg,
            );
        }
    }
    for s in &inside_engine {
        let s_at = c.ctx.resolve(s);
        let explained = rec.mounts.iter().any(|m| {
            let d = c.ctx.resolve(&m.destination);
            m.kind == MountKind::Bind && (s_at == d || super::placement::within(s_at, d))
        });
        if !explained {
            let fact = format!("engine_socket:{s}");
            c.disagree(
                &fact,
                Code::DisagreeEngineSocket,
                s,
                false,
                json!({"engine_socket": true, "path": s}),
                Value::Null,
                format!("the report finds an engine socket at {s}, the engine's record binds nothing there"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outside::record::EngineKind;
    use std::collections::BTreeMap;

    fn rec(name: &str) -> Record {
        crate::outside::record::fixture(name)
    }

    fn docker() -> Engine {
        let mut runtimes = BTreeMap::new();
        runtimes.insert("runc".to_string(), ("runc".to_string(), vec![]));
        runtimes.insert(
            "runsc".to_string(),
            (
                "/usr/bin/runsc".to_string(),
                vec!["--platform=ptrace".to_string()],
            ),
        );
        Engine {
            name: EngineKind::Docker,
            cli: "docker".into(),
            version: "20.10".into(),
            rootless: false,
            api: None,
            userns_remap: false,
            seccomp: true,
            default_caps: super::super::record::DOCKER_DEFAULT_CAPS
                .iter()
                .map(|c| c.to_string())
                .collect(),
            runtimes,
        }
    }

    fn all() -> Vec<String> {
        (0..=40).map(catalog::capability_name).collect()
    }

    fn mask(names: &[&str]) -> u64 {
        names
            .iter()
            .map(|n| 1u64 << catalog::capability_by_name(n).unwrap().number)
            .sum()
    }

    /// A report as the probe inside docker-b would make it.
    fn report_b(effective: u64) -> Value {
        json!({
            "inventory": {
                "boundary": {"kind": "container", "runtime": "runc/crun", "rootless": false},
                "privilege": {"uid": [0,0,0,0], "caps": {"effective": effective, "bounding": effective},
                    "seccomp": 2, "no_new_privs": false, "lsm_label": null},
                "rootpaths": {"user": "root"},
                "namespaces": {"inodes": {"user": 4026531837u64, "pid": 4026531836u64,
                    "cgroup": 4026531835u64, "net": 4026532183u64, "ipc": 4026532181u64,
                    "uts": 4026532180u64}, "unreadable": {}},
                "sockets": {},
                "devices": {"nodes": [{"path": "/dev/null"}]},
                "writable": {"rootfs_read_only_mount": false},
                "mounts": {"mounts": [
                    {"mount_point": "/", "class": "root-fs", "root": "/", "read_only": false, "fstype": "overlay"},
                    {"mount_point": "/var/run/docker.sock", "class": "socket", "root": "/docker.sock", "read_only": false, "fstype": "tmpfs"}
                ]}
            },
            "findings": [
                {"code": "ns.host-pid", "subject": "pid"},
                {"code": "ns.host-cgroup", "subject": "cgroup"},
                {"code": "engine.socket-reachable", "subject": "/var/run/docker.sock"},
                {"code": "priv.capability", "subject": "CAP_SYS_ADMIN"}
            ]
        })
    }

    fn outcome(r: &Record, rep: &Value) -> CrossCheck {
        outcome_with(r, rep, None, &BTreeMap::new())
    }

    fn outcome_with(
        r: &Record,
        rep: &Value,
        asked: Option<&Asked>,
        resolved: &BTreeMap<String, String>,
    ) -> CrossCheck {
        let (e, caps) = (docker(), all());
        let ctx = Context {
            rec: r,
            engine: &e,
            all_caps: &caps,
            asked,
            resolved,
        };
        compare(&ctx, rep)
    }

    fn codes(o: &CrossCheck) -> Vec<(String, String, Severity)> {
        o.disagreements
            .iter()
            .map(|d| (d.fact.clone(), d.code.clone(), d.severity))
            .collect()
    }

    fn asked() -> Asked {
        Asked {
            root: "/".into(),
            workspace: Some("/workspace".into()),
            policy_sha256: None,
            timeout_ms: 49_000,
            nonce: "00112233445566778899aabbccddeeff".into(),
            fail_on: Some(Severity::High),
        }
    }

    fn with_run(mut rep: Value) -> Value {
        rep["run"] = json!({"root": "/", "workspace": "/workspace",
            "workspace_source": "--workspace", "policy": null, "policy_sha256": null,
            "timeout_ms": 49_000, "nonce": "00112233445566778899aabbccddeeff", "fail_on": "high"});
        rep
    }

    fn truthful_b() -> Value {
        let mut names: Vec<&str> = super::super::record::DOCKER_DEFAULT_CAPS.to_vec();
        names.push("CAP_SYS_ADMIN");
        with_run(report_b(mask(&names)))
    }

    #[test]
    fn the_run_must_have_had_the_arguments_inspect_gave() {
        let r = rec("docker-b");
        let a = asked();
        let o = outcome_with(&r, &truthful_b(), Some(&a), &BTreeMap::new());
        assert!(o.disagreements.is_empty(), "{:#?}", o.disagreements);
        let v = verdicts(&o);
        for f in [
            "run.root",
            "run.workspace",
            "run.policy",
            "run.timeout",
            "run.nonce",
            "run.fail_on",
        ] {
            assert!(v.contains(&(f.to_string(), Verdict::Agree)), "{f}: {v:?}");
        }
        // The real probe run against an empty tree, with a policy of the
        // workspace's own, without its workspace, or for another nonce.
        for (field, value, fact) in [
            ("root", json!("/tmp/empty"), "run.root"),
            ("policy_sha256", json!("ab".repeat(32)), "run.policy"),
            (
                "workspace_source",
                json!("git root of the working directory"),
                "run.workspace",
            ),
            ("timeout_ms", json!(1), "run.timeout"),
            ("nonce", json!("0000replayed0000"), "run.nonce"),
            ("fail_on", json!(null), "run.fail_on"),
        ] {
            let mut rep = truthful_b();
            rep["run"][field] = value;
            let o = outcome_with(&r, &rep, Some(&a), &BTreeMap::new());
            assert_eq!(
                codes(&o),
                [(
                    fact.to_string(),
                    "disagree.run-arguments".to_string(),
                    Severity::High
                )],
                "{field}"
            );
            // Left out is no better than different.
            let mut rep = truthful_b();
            rep["run"].as_object_mut().unwrap().remove(field);
            let o = outcome_with(&r, &rep, Some(&a), &BTreeMap::new());
            assert_eq!(codes(&o).len(), 1, "{field} absent: {:?}", codes(&o));
        }
        // No --workspace: only a workspace the probe found itself.
        let a2 = Asked {
            workspace: None,
            ..asked()
        };
        let mut rep = truthful_b();
        rep["run"]["workspace"] = json!("/src");
        rep["run"]["workspace_source"] = json!("git root of the working directory");
        assert!(outcome_with(&r, &rep, Some(&a2), &BTreeMap::new())
            .disagreements
            .is_empty());
        rep["run"]["workspace_source"] = json!("--workspace");
        assert_eq!(
            codes(&outcome_with(&r, &rep, Some(&a2), &BTreeMap::new())).len(),
            1
        );
    }

    #[test]
    fn an_empty_or_stripped_report_is_never_clean() {
        let r = rec("docker-clean");
        let a = asked();
        let empty = with_run(
            json!({"schema": selfprobe::model::SCHEMA, "findings": [], "inventory": {}, "probes": []}),
        );
        let o = outcome_with(&r, &empty, Some(&a), &BTreeMap::new());
        let facts: BTreeSet<String> = o
            .disagreements
            .iter()
            .filter(|d| d.code == "disagree.fact-missing" && d.severity == Severity::High)
            .map(|d| d.fact.clone())
            .collect();
        for f in [
            "privileged",
            "capabilities.effective",
            "capabilities.bounding",
            "seccomp",
            "lsm",
            "no_new_privileges",
            "namespace.pid",
            "namespace.net",
            "namespace.cgroup",
            "devices",
            "read_only_root",
            "user",
            "runtime",
            "rootless",
            "mounts",
        ] {
            assert!(facts.contains(f), "{f} not missing: {facts:?}");
        }
        assert!(
            !o.comparisons
                .iter()
                .any(|c| c.verdict == Verdict::Agree && !c.fact.starts_with("run.")),
            "{:#?}",
            o.comparisons
        );
        // The findings stripped: the inventory's host namespaces still
        // name what the findings leave out.
        let mut stripped = truthful_b();
        stripped["findings"] = json!([]);
        let o = outcome(&rec("docker-b"), &stripped);
        let ns: Vec<(String, Severity)> = o
            .disagreements
            .iter()
            .filter(|d| d.code == "disagree.namespace")
            .map(|d| (d.fact.clone(), d.severity))
            .collect();
        assert!(
            ns.contains(&("namespace.pid".into(), Severity::High)),
            "{ns:?}"
        );
        assert!(
            ns.contains(&("namespace.cgroup".into(), Severity::High)),
            "{ns:?}"
        );
    }

    #[test]
    fn an_unknown_with_its_reason_is_shown_as_unknown() {
        let r = rec("docker-b");
        let mut rep = truthful_b();
        rep["inventory"]["privilege"] = Value::Null;
        rep["probes"] = json!([{"name": "privilege", "status": "incomplete",
            "reason": "/proc/self/status: Permission denied"}]);
        rep["inventory"]["namespaces"]["unreadable"] = json!({"net": "Permission denied"});
        rep["inventory"]["namespaces"]["inodes"]
            .as_object_mut()
            .unwrap()
            .remove("net");
        let o = outcome(&r, &rep);
        assert!(
            !o.disagreements
                .iter()
                .any(|d| d.code == "disagree.fact-missing"),
            "{:#?}",
            o.disagreements
        );
        let un: Vec<&Comparison> = o
            .comparisons
            .iter()
            .filter(|c| c.verdict == Verdict::Unknown)
            .collect();
        for f in ["capabilities.effective", "seccomp", "user", "namespace.net"] {
            let c = un
                .iter()
                .find(|c| c.fact == f)
                .unwrap_or_else(|| panic!("{f}: {un:#?}"));
            assert!(
                c.note.as_deref().unwrap().contains("Permission denied"),
                "{c:?}"
            );
        }
        // The same without a reason is absent.
        rep["probes"] = json!([{"name": "privilege", "status": "ok"}]);
        let o = outcome(&r, &rep);
        assert!(codes(&o).contains(&(
            "capabilities.effective".into(),
            "disagree.fact-missing".into(),
            Severity::High
        )));
    }

    #[test]
    fn destinations_are_compared_as_the_container_resolves_them() {
        // Debian's /var/run is /run: the engine's destination and the
        // socket finding name /var/run/docker.sock, the mount table
        // /run/docker.sock.
        let r = rec("docker-b");
        let mut rep = truthful_b();
        rep["inventory"]["mounts"]["mounts"][1]["mount_point"] = json!("/run/docker.sock");
        let o = outcome(&r, &rep);
        assert!(!o.disagreements.is_empty(), "as written, they differ");
        let resolved: BTreeMap<String, String> = [(
            "/var/run/docker.sock".to_string(),
            "/run/docker.sock".to_string(),
        )]
        .into();
        let o = outcome_with(&r, &rep, None, &resolved);
        assert!(o.disagreements.is_empty(), "{:#?}", o.disagreements);
        let m = o
            .comparisons
            .iter()
            .find(|c| c.fact == "mount:/var/run/docker.sock")
            .unwrap();
        assert_eq!(m.engine["resolves_to"], "/run/docker.sock");
    }

    #[test]
    fn a_gvisor_volume_seen_as_a_9p_bind_is_a_volume() {
        let mut r = rec("docker-volumes");
        r.runtime = "runsc".into();
        r.read_only_root = false;
        let vol = r
            .mounts
            .iter()
            .find(|m| m.kind == MountKind::Volume)
            .unwrap()
            .clone();
        let mut rep = report_b(0);
        rep["inventory"]["mounts"]["mounts"] = json!([
            {"mount_point": "/", "class": "root-fs", "root": "/", "read_only": false, "fstype": "9p"},
            {"mount_point": vol.destination, "class": "host-bind", "root": "/", "read_only": !vol.rw, "fstype": "9p"}
        ]);
        let o = outcome(&r, &rep);
        let m = o
            .comparisons
            .iter()
            .find(|c| c.fact == format!("mount:{}", vol.destination))
            .unwrap();
        assert_eq!(m.verdict, Verdict::Agree, "{m:#?}");
    }

    fn verdicts(o: &CrossCheck) -> Vec<(String, Verdict)> {
        o.comparisons
            .iter()
            .map(|c| (c.fact.clone(), c.verdict))
            .collect()
    }

    #[test]
    fn a_truthful_report_agrees_on_every_fact() {
        let r = rec("docker-b");
        let mut names: Vec<&str> = super::super::record::DOCKER_DEFAULT_CAPS.to_vec();
        names.push("CAP_SYS_ADMIN");
        let o = outcome(&r, &report_b(mask(&names)));
        assert!(o.disagreements.is_empty(), "{:#?}", o.disagreements);
        let v = verdicts(&o);
        for fact in [
            "capabilities.effective",
            "namespace.pid",
            "engine_socket:/var/run/docker.sock",
            "seccomp",
            "user",
            "runtime",
            "rootless",
            "namespace.user",
        ] {
            assert!(
                v.contains(&(fact.to_string(), Verdict::Agree)),
                "{fact}: {v:?}"
            );
        }
    }

    #[test]
    fn a_report_with_fewer_capabilities_is_a_high_disagreement() {
        let r = rec("docker-b");
        let o = outcome(&r, &report_b(mask(&["CAP_CHOWN"])));
        let d: Vec<(&str, Severity)> = o
            .disagreements
            .iter()
            .map(|d| (d.fact.as_str(), d.severity))
            .collect();
        assert_eq!(
            d,
            [
                ("capabilities.effective", Severity::High),
                ("capabilities.bounding", Severity::High)
            ]
        );
        let f = &o.findings[0];
        assert_eq!(f.code, "disagree.capabilities");
        assert!(f.message.contains("CAP_SYS_ADMIN"), "{}", f.message);
        assert!(f.evidence["inside"]["missing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "CAP_SYS_ADMIN"));
    }

    #[test]
    fn hiding_the_socket_and_the_host_pid_namespace_is_caught() {
        let r = rec("docker-b");
        let mut rep = report_b(0);
        rep["findings"] = json!([]);
        rep["inventory"]["mounts"]["mounts"][1]["class"] = json!("root-fs");
        let o = outcome(&r, &rep);
        let codes: BTreeSet<&str> = o.findings.iter().map(|f| f.code.as_str()).collect();
        for c in [
            "disagree.namespace",
            "disagree.engine-socket",
            "disagree.mount",
            "disagree.capabilities",
        ] {
            assert!(codes.contains(c), "{c}: {codes:?}");
        }
        assert!(
            o.findings.iter().all(|f| f.severity == Severity::High),
            "all narrower"
        );
    }

    #[test]
    fn under_gvisor_namespaces_are_not_compared_and_seccomp_is_not_applied() {
        let mut r = rec("docker-b");
        r.runtime = "runsc".into();
        let mut rep = report_b(0);
        rep["inventory"]["boundary"] =
            json!({"kind": "sandbox", "runtime": "runsc", "rootless": false});
        rep["inventory"]["privilege"]["seccomp"] = json!(0);
        let o = outcome(&r, &rep);
        let v = verdicts(&o);
        assert!(
            v.contains(&("namespace.pid".into(), Verdict::NotComparable)),
            "{v:?}"
        );
        assert!(v.contains(&("seccomp".into(), Verdict::Agree)), "{v:?}");
        assert!(v.contains(&("runtime".into(), Verdict::Agree)), "{v:?}");
    }

    #[test]
    fn a_sandbox_claimed_under_runc_is_narrower() {
        let r = rec("docker-b");
        for runtime in ["runsc", "unknown"] {
            let mut rep = report_b(0);
            rep["inventory"]["boundary"] =
                json!({"kind": "sandbox", "runtime": runtime, "rootless": false});
            let o = outcome(&r, &rep);
            let d = o
                .disagreements
                .iter()
                .find(|d| d.fact == "runtime")
                .unwrap_or_else(|| panic!("{runtime}: {:#?}", o.comparisons));
            assert_eq!(d.severity, Severity::High);
            // The claim does not make the namespaces incomparable: the
            // engine's runc shares the host's PID namespace, and that is
            // still compared.
            let v = verdicts(&o);
            assert!(
                v.contains(&("namespace.pid".into(), Verdict::Agree)),
                "{v:?}"
            );
        }
    }

    #[test]
    fn engine_sockets_by_catalog_name_or_kind() {
        assert_eq!(
            engine_socket("/var/run/docker.sock").as_deref(),
            Some("docker")
        );
        assert_eq!(
            engine_socket("/tmp/x/podman.sock").as_deref(),
            Some("podman")
        );
        assert_eq!(engine_socket("/tmp/definitely-not-a-socket-here"), None);
    }
}
