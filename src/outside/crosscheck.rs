//! The second witness: the engine's record of a container against the
//! report the probe made inside it, fact by fact. Every fact compared is a
//! `Comparison` (agree, disagree, not comparable, unknown), and each
//! disagreement is also a finding of its own code (`disagree.*`) with both
//! views: high when the inside claims a narrower boundary than the record
//! (what a lying workspace would do), medium when it claims a wider one.
//!
//! Pure: a record, the engine's facts and the report as JSON in, the
//! comparisons out. The report is untrusted: a missing or odd field is
//! "unknown", never "agree".

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::engine::Engine;
use super::record::{MountKind, Record};
use crate::catalog;
use crate::finding::{Finding, Severity};

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
pub struct Outcome {
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
}

/// Initial namespace inodes (include/linux/proc_ns.h): a process in the
/// machine's own namespace of that type sees exactly this inode.
const INIT_USER_NS: u64 = 0xEFFF_FFFD;

struct Report<'a>(&'a Value);

impl Report<'_> {
    fn at(&self, p: &str) -> Option<&Value> {
        self.0.pointer(p).filter(|v| !v.is_null())
    }
    fn findings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .get("findings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|f| {
                (
                    f.get("code").and_then(Value::as_str).unwrap_or(""),
                    f.get("subject").and_then(Value::as_str).unwrap_or(""),
                )
            })
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
    fn boundary(&self, field: &str) -> Option<&Value> {
        self.at(&format!("/inventory/boundary/{field}"))
    }
    fn caps(&self, set: &str) -> Option<BTreeSet<String>> {
        let mask = self
            .at(&format!("/inventory/privilege/caps/{set}"))?
            .as_u64()?;
        Some(catalog::capability_names(mask, 63).into_iter().collect())
    }
    fn mounts(&self) -> Vec<&Value> {
        self.at("/inventory/mounts/mounts")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }
    fn str_at(&self, p: &str) -> Option<&str> {
        self.at(p).and_then(Value::as_str)
    }
}

struct Cmp<'a> {
    ctx: &'a Context<'a>,
    out: Outcome,
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
        code: &str,
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
pub fn compare(ctx: &Context, report: &Value) -> Outcome {
    let r = Report(report);
    let mut c = Cmp {
        ctx,
        out: Outcome::default(),
    };
    let runtime = ctx.engine.runtime_kind(&ctx.rec.runtime);
    let sandbox =
        runtime == "runsc" || r.boundary("kind").and_then(Value::as_str) == Some("sandbox");
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

fn privileged(c: &mut Cmp, r: &Report, sandbox: bool) {
    let engine = c.ctx.rec.privileged;
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
            "disagree.privileged",
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
        let Some(inside) = r.caps(set) else {
            c.unknown(&fact, json!(engine), "the report has no capability sets");
            continue;
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
                if set == "effective" { "Eff" } else { "Bnd" }
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
            "disagree.capabilities",
            &fact,
            narrower,
            json!({"set": inside, "missing": missing, "extra": extra}),
            json!(engine),
            parts.join("; "),
        );
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
    let Some(mode) = r.at("/inventory/privilege/seccomp").and_then(Value::as_u64) else {
        c.unknown("seccomp", engine, "the report has no seccomp mode");
        return;
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
            "disagree.seccomp",
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
            "disagree.seccomp",
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
    let got = r
        .str_at("/inventory/privilege/lsm_label")
        .map(str::to_string);
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
    match (&want, &got) {
        (None, None) => c.agree("lsm", inside, engine),
        (Some(w), Some(g)) if g.contains(w.as_str()) => c.agree("lsm", inside, engine),
        (None, Some(g)) => {
            let msg =
                format!("the report is confined by {g}, the engine's record applies no LSM label");
            c.disagree("lsm", "disagree.lsm", "lsm", true, inside, engine, msg)
        }
        (Some(w), None) => {
            let msg = format!("the engine's record applies {w}, the report has no LSM label");
            c.disagree("lsm", "disagree.lsm", "lsm", false, inside, engine, msg)
        }
        (Some(w), Some(g)) => {
            let msg = format!("the engine's record applies {w}, the report is confined by {g}");
            c.disagree("lsm", "disagree.lsm", "lsm", false, inside, engine, msg)
        }
    }
}

/// A yes/no fact where the inside's yes is the narrower claim (a flag
/// that restricts): where the report keeps it, what the record says, and
/// the messages for each answer.
struct Flag {
    fact: &'static str,
    code: &'static str,
    subject: &'static str,
    /// Where the report keeps its side (a JSON pointer to a bool).
    at: &'static str,
    engine: fn(&Record) -> bool,
    unknown: &'static str,
    /// When the inside says yes and the record no, and the other way.
    inside_yes: &'static str,
    engine_yes: &'static str,
}

const NO_NEW_PRIVS: Flag = Flag {
    fact: "no_new_privileges",
    code: "disagree.no-new-privs",
    subject: "no_new_privileges",
    at: "/inventory/privilege/no_new_privs",
    engine: |rec| rec.no_new_privileges,
    unknown: "the report does not know NoNewPrivs (gVisor does not show it)",
    inside_yes: "the report has NoNewPrivs set, the engine's record does not set no-new-privileges (a daemon-wide default is not in the record)",
    engine_yes: "the engine's record sets no-new-privileges, the report has NoNewPrivs unset",
};

const READ_ONLY_ROOT: Flag = Flag {
    fact: "read_only_root",
    code: "disagree.read-only-root",
    subject: "/",
    at: "/inventory/writable/rootfs_read_only_mount",
    engine: |rec| rec.read_only_root,
    unknown: "the report does not say how / is mounted",
    inside_yes: "the report's / is mounted read-only, the engine's record does not make it so",
    engine_yes: "the engine's record makes / read-only, the report's / is mounted writable",
};

/// Agree, unknown, or a disagreement with the message for the side that
/// says yes.
fn flag(c: &mut Cmp, r: &Report, f: &Flag) {
    let engine = (f.engine)(c.ctx.rec);
    let Some(got) = r.at(f.at).and_then(Value::as_bool) else {
        c.unknown(f.fact, json!(engine), f.unknown);
        return;
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
        let unreadable = r
            .at(&format!("/inventory/namespaces/unreadable/{inode}"))
            .is_some()
            || r.at("/inventory/namespaces/absent")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|x| x == inode));
        let inside_host = r.has(code);
        if !inside_host && unreadable {
            c.unknown(&fact, engine, "the report could not read this namespace");
            continue;
        }
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
                "disagree.namespace",
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
    let Some(got) = r.boundary("rootless").and_then(Value::as_bool) else {
        c.unknown("rootless", engine, "the report's boundary omits rootless");
        return;
    };
    let inode = r
        .at("/inventory/namespaces/inodes/user")
        .and_then(Value::as_u64);
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
            "disagree.rootless",
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
    if let Some(inode) = inode {
        let inside_host = inode == INIT_USER_NS;
        let ns_inside = json!({"host": inside_host, "inode": inode});
        let ns_engine = json!({"host": !want});
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
                "disagree.namespace",
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
    let nodes: Option<BTreeSet<String>> = r
        .at("/inventory/devices/nodes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|n| n.get("path").and_then(Value::as_str).map(str::to_string))
                .collect()
        });
    let granted: Vec<String> = rec.devices.iter().map(|d| d.container.clone()).collect();
    let engine = json!(granted);
    let Some(nodes) = nodes else {
        c.unknown("devices", engine, "the report has no device list");
        return;
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
    crate::util::sort::sort(&mut unexplained);
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
        "disagree.devices",
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
        .at("/inventory/privilege/uid")
        .and_then(Value::as_array)
        .and_then(|a| a.get(1))
        .and_then(Value::as_u64);
    let name = r.str_at("/inventory/rootpaths/user").map(str::to_string);
    let engine = json!({"user": rec.user, "uid": rec.uid()});
    let inside = json!({"uid": euid, "name": name});
    let Some(euid) = euid else {
        c.unknown("user", engine, "the report does not know its uid");
        return;
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
        "disagree.user",
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
    let got_rt = r
        .boundary("runtime")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let got_kind = r
        .boundary("kind")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let inside = json!({"runtime": got_rt, "kind": got_kind});
    if runtime == "unknown" || got_rt == "unknown" {
        c.unknown("runtime", engine, "one side does not know the runtime");
        return;
    }
    if got_rt == runtime && got_kind == want_kind {
        c.agree("runtime", inside, engine);
        return;
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
        "disagree.runtime",
        "runtime",
        narrower,
        inside,
        engine,
        msg,
    );
}

/// How the inside classes each kind of record mount.
fn class_fits(kind: &MountKind, class: &str, source: &str) -> bool {
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
        MountKind::Volume => matches!(class, "volume" | "workspace" | "unknown"),
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
    let inside_mounts = r.mounts();
    if inside_mounts.is_empty() {
        c.unknown("mounts", Value::Null, "the report has no mount table");
        return;
    }
    let point = |m: &Value| {
        m.get("mount_point")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for m in &rec.mounts {
        if m.kind == MountKind::Other {
            continue;
        }
        let fact = format!("mount:{}", m.destination);
        let engine = json!({"type": m.kind, "source": m.source, "destination": m.destination,
            "rw": m.rw, "propagation": m.propagation});
        // The topmost mount at that point: mountinfo lists newer ones later.
        let Some(im) = inside_mounts
            .iter()
            .rev()
            .find(|x| point(x).trim_end_matches('/') == m.destination.trim_end_matches('/'))
        else {
            c.disagree(
                &fact,
                "disagree.mount",
                &m.destination,
                true,
                Value::Null,
                engine,
                format!(
                    "the engine mounts {} at {}, the report's mount table has nothing there",
                    describe(m),
                    m.destination
                ),
            );
            continue;
        };
        let class = im.get("class").and_then(Value::as_str).unwrap_or("");
        let root = im.get("root").and_then(Value::as_str).unwrap_or("");
        let ro = im
            .get("read_only")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let fstype = im.get("fstype").and_then(Value::as_str).unwrap_or("");
        let optional = super::record::strings(im, "/optional");
        let options: Vec<&str> = im
            .get("options")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let inside = json!({"class": class, "root": root, "read_only": ro, "fstype": fstype,
            "propagation": propagation_of(&optional)});
        let mut narrower = Vec::new();
        let mut wider = Vec::new();
        if !class_fits(&m.kind, class, &m.source) {
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
                let got = propagation_of(&optional);
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
                "disagree.mount",
                &m.destination,
                is_narrower,
                inside,
                engine,
                narrower.join("; "),
            );
        }
    }
    // Host paths and volumes the inside sees that the record does not have.
    for im in &inside_mounts {
        let class = im.get("class").and_then(Value::as_str).unwrap_or("");
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
        if im.get("within").is_some_and(|w| !w.is_null()) {
            continue;
        }
        let mp = point(im);
        let known = rec.mounts.iter().any(|m| {
            let d = m.destination.trim_end_matches('/');
            mp.trim_end_matches('/') == d || super::placement::within(&mp, d)
        });
        if !known {
            let fact = format!("mount:{mp}");
            let inside = json!({"class": class, "root": im.get("root"), "mount_point": mp});
            c.disagree(
                &fact,
                "disagree.mount",
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
        if crate::util::glob::matches_path(&s.path, source) {
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
        let at = |s: &String| s == &m.destination || super::placement::within(s, &m.destination);
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
                "disagree.engine-socket",
                &m.destination,
                true,
                inside,
                engine,
                msg,
            );
        }
    }
    for s in &inside_engine {
        let explained = rec.mounts.iter().any(|m| {
            m.kind == MountKind::Bind
                && (s == &m.destination || super::placement::within(s, &m.destination))
        });
        if !explained {
            let fact = format!("engine_socket:{s}");
            c.disagree(
                &fact,
                "disagree.engine-socket",
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
                "namespaces": {"inodes": {"user": 4026531837u64}, "unreadable": {}},
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

    fn outcome(r: &Record, rep: &Value) -> Outcome {
        let (e, caps) = (docker(), all());
        let ctx = Context {
            rec: r,
            engine: &e,
            all_caps: &caps,
        };
        compare(&ctx, rep)
    }

    fn verdicts(o: &Outcome) -> Vec<(String, Verdict)> {
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
        let r = rec("docker-clean");
        let mut rep = report_b(0);
        rep["inventory"]["boundary"] =
            json!({"kind": "sandbox", "runtime": "runsc", "rootless": false});
        let o = outcome(&r, &rep);
        let d = o
            .disagreements
            .iter()
            .find(|d| d.fact == "runtime")
            .unwrap();
        assert_eq!(d.severity, Severity::High);
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
