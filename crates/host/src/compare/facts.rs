//! The facts `selfprobe-host diff` compares, taken from a report read back
//! typed (selfprobe::model::read), each field named through the model
//! (`section!`, `given!`), so a field renamed in the model does not compile
//! here rather than turn every fact unknown. A report of an older version
//! still compares: a field it lacks is `unknown`, never `same` nor the
//! model's default; a section that does not read as the model's type is
//! unknown as a whole, with serde's reason. Each fact has a stable key
//! (docs/parity.md lists them, and a test holds that list to [`KEYS`]) and
//! one of the blueprint's six axes of "false production parity", plus the
//! toolchain.
//!
//! Only names, kinds, paths, states and versions are taken: the report holds
//! no secret value, and this module takes no free-text field (a message, an
//! evidence line) that could.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Value};

use selfprobe::facts::boundary::{Boundary, Kind};
use selfprobe::facts::mounts::MountEntry;
use selfprobe::finding::Code;
use selfprobe::given;
use selfprobe::model::read::Read;
use selfprobe::model::Report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Architecture,
    Kernel,
    Network,
    Storage,
    Secrets,
    Orchestration,
    Toolchain,
}

impl Axis {
    pub const ALL: [Axis; 7] = [
        Axis::Architecture,
        Axis::Kernel,
        Axis::Network,
        Axis::Storage,
        Axis::Secrets,
        Axis::Orchestration,
        Axis::Toolchain,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Axis::Architecture => "architecture",
            Axis::Kernel => "kernel",
            Axis::Network => "network",
            Axis::Storage => "storage",
            Axis::Secrets => "secrets",
            Axis::Orchestration => "orchestration",
            Axis::Toolchain => "toolchain",
        }
    }

    /// The axis of a key, from its first segment.
    pub fn of(key: &str) -> Option<Axis> {
        let root = key.split('.').next().unwrap_or("");
        ROOTS.iter().find(|(r, _)| *r == root).map(|(_, a)| *a)
    }
}

/// The first segment of every key, and its axis.
pub const ROOTS: &[(&str, Axis)] = &[
    ("architecture", Axis::Architecture),
    ("kernel", Axis::Kernel),
    ("network", Axis::Network),
    ("storage", Axis::Storage),
    ("secrets", Axis::Secrets),
    ("boundary", Axis::Orchestration),
    ("capabilities", Axis::Orchestration),
    ("namespaces", Axis::Orchestration),
    ("devices", Axis::Orchestration),
    ("sockets", Axis::Orchestration),
    ("user", Axis::Orchestration),
    ("image", Axis::Toolchain),
    ("tools", Axis::Toolchain),
    ("lockfiles", Axis::Toolchain),
    ("pins", Axis::Toolchain),
    ("setup", Axis::Toolchain),
];

/// Every key (a `<…>` part is one member of a collection), with where it
/// comes from: the list docs/parity.md documents.
pub const KEYS: &[(&str, &str)] = &[
    ("architecture.machine", "boundary.platform.machine: uname's machine"),
    ("architecture.page_size", "boundary.platform.page_size: AT_PAGESZ"),
    ("architecture.cpus", "boundary.platform.cpus: online CPUs"),
    ("architecture.virtualized", "boundary.virtualized: the hypervisor under the kernel"),
    ("kernel.release", "boundary.platform.kernel_release, as the workspace sees it (gVisor's emulated release)"),
    ("kernel.cgroup", "boundary.platform.cgroup: v1, v2, hybrid or none"),
    ("kernel.lsm", "privilege.lsm_label: apparmor PROFILE, selinux TYPE, or none"),
    ("kernel.seccomp", "privilege.seccomp: disabled, strict or filter"),
    ("network.assessed", "network.assessed: whether any destination was tried"),
    ("network.<destination>", "network.destinations[]: list, outcome and whether the contract holds"),
    ("network.proxy.http", "network.proxy.http (credentials redacted), or none"),
    ("network.proxy.https", "network.proxy.https (credentials redacted), or none"),
    ("network.proxy.all", "network.proxy.all (credentials redacted), or none"),
    ("network.no_proxy", "network.proxy.no_proxy"),
    ("network.dns.nameservers", "network.resolver => nameservers"),
    ("network.dns.search", "network.resolver.search"),
    ("network.interfaces", "namespaces.interfaces: the network interfaces seen"),
    ("storage.workspace.path", "mounts.workspace.path"),
    ("storage.workspace.placement", "the workspace's mount: bind, volume, or image (no mount of its own)"),
    ("storage.workspace.read_only", "the workspace's mount is read-only"),
    ("storage.mount.<mount point>", "mounts.mounts[]: class and ro/rw (kernel pseudo-filesystems, /proc and /sys masks and the probe's own binary left out)"),
    ("storage.root.read_only", "writable.rootfs_read_only_mount"),
    ("storage.persistent.<path>", "teardown.persistent[]: class and writable"),
    ("storage.cache.<path>", "caches.caches[]: name, the mount class it lives on, retention"),
    ("secrets.env.<NAME>", "secrets.env[]: the variable's kind"),
    ("secrets.process_env.<comm>.<NAME>", "secrets.processes.hits[]: the kind of another process's variable"),
    ("secrets.file.<path>", "secrets.files[] (package trees' test data left out): kind"),
    ("secrets.agent.<path>", "secrets.agents[]: protocol and outcome"),
    ("secrets.helper.<subject>", "secrets.helpers[]: kind, forwarded or not"),
    ("secrets.token.<source>", "secrets.tokens[]: kind, and its lifetime against max_token_ttl (from the run's findings)"),
    ("secrets.mcp.<client>.<name>", "secrets.mcp.servers[]: transport"),
    ("boundary.kind", "boundary.kind"),
    ("boundary.engine", "boundary.engine"),
    ("boundary.runtime", "boundary.runtime"),
    ("boundary.rootless", "boundary.rootless"),
    ("capabilities.<CAP>", "privilege.caps.effective: where each held capability acts (host, user-namespace, sandbox, vm)"),
    ("namespaces.<namespace>", "namespaces: host (shared with the machine), own, or absent"),
    ("devices.<path>", "devices.nodes[]: r, w, rw or -"),
    ("sockets.<path>", "sockets.sockets[]: engine and outcome"),
    ("sockets.tcp.<endpoint>", "sockets.tcp_endpoints[]: where it was named"),
    ("user.uid", "privilege.uid: the effective uid"),
    ("user.gid", "privilege.gid: the effective gid"),
    ("user.name", "rootpaths.user"),
    ("user.uid_map", "privilege.uid_map"),
    ("user.no_new_privs", "privilege.no_new_privs"),
    ("image.os", "image.os_release: ID VERSION_ID"),
    ("image.reference", "image.reference"),
    ("image.digest", "image.digest"),
    ("image.id", "image.image_id"),
    ("tools.<tool>", "repro.tools[]: the version"),
    ("lockfiles.<manifest>", "repro.manifests[]: its lockfile, or missing"),
    ("pins.<file>.<tool>", "repro.tool_pins[]: the pinned version"),
    ("setup.<path>", "repro.setup_contract[]: kind and whether it pins the image by digest"),
];

/// What one side says of a fact.
#[derive(Debug, Clone, PartialEq)]
pub enum Obs {
    Value(Value),
    /// It could not be checked on this side, and why.
    Unknown(String),
}

/// The facts of one report.
#[derive(Debug, Default)]
pub struct FactSet {
    pub facts: BTreeMap<String, Obs>,
    /// Collections this side could not list whole (a probe cut short, a
    /// walk truncated, a section missing): a member absent here is unknown,
    /// not "only in" the other side. (key prefix, why)
    pub partial: Vec<(String, String)>,
}

impl FactSet {
    /// Why a key absent from this side is unknown rather than absent.
    pub fn partial_for(&self, key: &str) -> Option<&str> {
        self.partial
            .iter()
            .find(|(p, _)| key.starts_with(p.as_str()))
            .map(|(_, w)| w.as_str())
    }
}

/// A typed value as the report gives it: the model writes back what it
/// read (tests/it/common/roundtrip.rs holds every report to its bytes), so
/// this is the JSON the report has there.
fn v<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// Not null.
fn present(x: Value) -> Option<Value> {
    (!x.is_null()).then_some(x)
}

/// A typed value as text: strings bare, null (an absent `Option`) empty,
/// the rest as JSON.
fn s<T: Serialize>(t: &T) -> String {
    match v(t) {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

struct Builder<'a> {
    /// The report, read typed (model::read).
    read: &'a Read,
    out: FactSet,
    /// probe name → (status, reason) from the report's probes[].
    probes: BTreeMap<String, (String, String)>,
    /// Probes a probe.incomplete finding names: part of them was not checked.
    partly: BTreeSet<String>,
}

/// Why facts are unknown: the text is the diff's `why` for a key, or a key
/// prefix's partial reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unread {
    /// The probe that gathers the section did not finish or check all of
    /// it (probe_problem's words).
    #[error("{0}")]
    Probe(String),
    /// There, but not readable as the model's type (model::read's reason).
    #[error("the report's inventory.{name} does not read ({why})")]
    Malformed { name: String, why: String },
    #[error("the report has no inventory.{name} (an older version, or the {probe} probe did not finish)")]
    Absent { name: String, probe: String },
    #[error("the report has no boundary.platform (it predates it)")]
    NoPlatform,
    #[error(
        "the resolver configuration was not read (an older report, or its files did not answer)"
    )]
    NoResolver,
    #[error("no workspace was declared (--workspace, the policy's workspace.path or a git root)")]
    NoWorkspace,
    #[error("whether uid 0 maps to the host's is unknown (boundary.rootless)")]
    Rootless,
}

/// inventory.<name> of the builder's report, or why it is missing: the
/// section named through the model, so a renamed one does not compile.
macro_rules! section {
    ($b:expr, $name:ident, $probe:literal) => {{
        let read: &Read = $b.read;
        $b.section(
            read.report.inventory.$name.as_ref(),
            stringify!($name),
            $probe,
        )
    }};
}

impl<'a> Builder<'a> {
    fn report(&self) -> &'a Report {
        &self.read.report
    }

    fn put(&mut self, key: impl Into<String>, obs: Obs) {
        self.out.facts.insert(key.into(), obs);
    }

    fn val(&mut self, key: impl Into<String>, v: impl Into<Value>) {
        self.put(key, Obs::Value(v.into()));
    }

    fn unknown(&mut self, key: impl Into<String>, why: impl ToString) {
        self.put(key, Obs::Unknown(why.to_string()));
    }

    /// Why a probe's facts are missing or incomplete, if they are.
    fn probe_problem(&self, probe: &str) -> Option<String> {
        match self.probes.get(probe) {
            Some((st, _)) if st == "ok" && !self.partly.contains(probe) => None,
            Some((st, _)) if st == "ok" => Some(format!(
                "the {probe} probe reported probe.incomplete: part of it was not checked"
            )),
            Some((st, why)) => Some(format!("the {probe} probe ended {st}: {why}")),
            None if self.probes.is_empty() => None,
            None => Some(format!("the report has no record of the {probe} probe")),
        }
    }

    /// A section (`section!`), or why it is missing: absent or null, or
    /// there but not readable as the model's type (model::read).
    fn section<T>(&self, sec: Option<&'a T>, name: &str, probe: &str) -> Result<&'a T, Unread> {
        let Some(v) = sec else {
            if let Some(why) = self.probe_problem(probe) {
                return Err(Unread::Probe(why));
            }
            let name = name.to_string();
            return Err(
                match self.read.malformed().get(&format!("inventory.{name}")) {
                    Some(why) => Unread::Malformed {
                        name,
                        why: why.to_string(),
                    },
                    None => Unread::Absent {
                        name,
                        probe: probe.to_string(),
                    },
                },
            );
        };
        Ok(v)
    }

    /// Marks `prefix` partial when `probe` did not check everything.
    fn partial_if(&mut self, prefix: &str, probe: &str) {
        if let Some(why) = self.probe_problem(probe) {
            self.partial(prefix, why);
        }
    }

    fn partial(&mut self, prefix: &str, why: impl ToString) {
        self.out.partial.push((prefix.to_string(), why.to_string()));
    }

    /// A fixed key, `get` from `sec`; None (the report does not give it, or
    /// gives null) is unknown.
    fn field<T>(
        &mut self,
        key: &str,
        sec: &Result<&T, Unread>,
        get: impl FnOnce(&T) -> Option<Value>,
        map: fn(&Value) -> Obs,
    ) {
        let obs = match sec {
            Err(why) => Obs::Unknown(why.to_string()),
            Ok(x) => match get(x) {
                Some(x) => map(&x),
                None => Obs::Unknown(format!("the report does not record {key}")),
            },
        };
        self.put(key, obs);
    }
}

/// A string that says it is not known (the boundary's "unknown") is unknown.
fn plain(v: &Value) -> Obs {
    match v.as_str() {
        Some("unknown") => Obs::Unknown("the probe could not tell (it says unknown)".into()),
        _ => Obs::Value(v.clone()),
    }
}

/// The facts of a report, read typed (model::read): what it leaves out is
/// unknown, never the model's default.
pub fn extract(report: &Value) -> FactSet {
    let read = &Read::from_value(report);
    let r = &read.report;
    let probes = r
        .probes
        .iter()
        .map(|p| (s(&p.name), (s(&p.status), s(&p.reason))))
        .collect();
    let partly = r
        .findings
        .iter()
        .filter(|f| f.code == Code::ProbeIncomplete.as_str())
        .filter_map(|f| f.evidence.get("probe").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let mut b = Builder {
        read,
        out: FactSet::default(),
        probes,
        partly,
    };
    architecture_and_kernel(&mut b);
    network(&mut b);
    storage(&mut b);
    secrets(&mut b);
    orchestration(&mut b);
    toolchain(&mut b);
    b.out
}

fn architecture_and_kernel(b: &mut Builder) {
    let read = b.read;
    let bd = section!(b, boundary, "boundary");
    let platform = match &bd {
        Ok(v) if given!(read, inventory.boundary => platform).value() => Ok(&v.platform),
        Ok(_) => Err(Unread::NoPlatform),
        Err(e) => Err(e.clone()),
    };
    b.field(
        "architecture.machine",
        &platform,
        |p| present(v(&p.machine)),
        plain,
    );
    b.field(
        "architecture.page_size",
        &platform,
        |p| present(v(&p.page_size)),
        plain,
    );
    b.field(
        "architecture.cpus",
        &platform,
        |p| present(v(&p.cpus)),
        plain,
    );
    b.field(
        "architecture.virtualized",
        &bd,
        |d| {
            given!(read, inventory.boundary => virtualized)
                .value()
                .then(|| v(&d.virtualized))
        },
        plain,
    );
    b.field(
        "kernel.release",
        &platform,
        |p| present(v(&p.kernel_release)),
        plain,
    );
    b.field("kernel.cgroup", &platform, |p| present(v(&p.cgroup)), plain);
    let pr = section!(b, privilege, "privilege");
    let lsm = match &pr {
        Err(e) => Obs::Unknown(e.to_string()),
        Ok(p) => {
            let unread = p.incomplete.iter().any(|(what, _)| what == "lsm");
            match (unread, &p.lsm_label) {
                (true, _) => Obs::Unknown("the LSM label could not be read".into()),
                (false, None) => Obs::Value("none".into()),
                (false, Some(l)) => Obs::Value(lsm_of(l).into()),
            }
        }
    };
    b.put("kernel.lsm", lsm);
    b.field(
        "kernel.seccomp",
        &pr,
        |p| p.seccomp.map(Value::from),
        |v| match v.as_u64() {
            Some(0) => Obs::Value("disabled".into()),
            Some(1) => Obs::Value("strict".into()),
            Some(2) => Obs::Value("filter".into()),
            _ => Obs::Unknown(format!("seccomp mode {v}")),
        },
    );
}

/// An LSM label as a fact that is the same for two runs of one profile:
/// AppArmor's profile and mode; SELinux's type (its MCS categories differ
/// per container).
fn lsm_of(label: &str) -> String {
    let parts: Vec<&str> = label.split(':').collect();
    if parts.len() >= 3 {
        format!("selinux {}", parts[2])
    } else {
        format!("apparmor {}", label.trim())
    }
}

fn network(b: &mut Builder) {
    let read = b.read;
    let net = section!(b, network, "network");
    match &net {
        Err(why) => {
            let why = why.clone();
            for k in [
                "network.assessed",
                "network.proxy.http",
                "network.proxy.https",
                "network.proxy.all",
                "network.no_proxy",
                "network.dns.nameservers",
                "network.dns.search",
            ] {
                b.unknown(k, why.clone());
            }
            b.partial("network.", why);
        }
        Ok(n) => {
            let n = *n;
            b.field(
                "network.assessed",
                &net,
                |n| {
                    given!(read, inventory.network => assessed)
                        .value()
                        .then(|| v(&n.assessed))
                },
                plain,
            );
            for d in &n.destinations {
                let key = format!("network.{}", s(&d.destination));
                let contract = s(&d.contract);
                let v = format!("{} {}, contract {}", s(&d.list), s(&d.outcome), contract);
                if contract == "unknown" {
                    b.unknown(key, v);
                } else {
                    b.val(key, v);
                }
            }
            if !given!(read, inventory.network => destinations).key() {
                b.partial(
                    "network.",
                    "the report does not list the destinations tried",
                );
            }
            let proxy_given = given!(read, inventory.network => proxy).key();
            for (p, set) in [
                ("http", &n.proxy.http),
                ("https", &n.proxy.https),
                ("all", &n.proxy.all),
            ] {
                let v = set.clone().map_or_else(|| "none".into(), Value::from);
                if proxy_given {
                    b.val(format!("network.proxy.{p}"), v);
                } else {
                    b.unknown(
                        format!("network.proxy.{p}"),
                        "the report does not record the proxy",
                    );
                }
            }
            b.field(
                "network.no_proxy",
                &net,
                |n| {
                    given!(read, inventory.network => proxy.no_proxy)
                        .value()
                        .then(|| v(&n.proxy.no_proxy))
                },
                plain,
            );
            let resolver = match &n.resolver {
                Some(r) => Ok(r),
                None => Err(Unread::NoResolver),
            };
            b.field(
                "network.dns.nameservers",
                &resolver,
                |r| {
                    given!(read, inventory.network => resolver => nameservers)
                        .value()
                        .then(|| v(&r.nameservers))
                },
                plain,
            );
            b.field(
                "network.dns.search",
                &resolver,
                |r| {
                    given!(read, inventory.network => resolver => search)
                        .value()
                        .then(|| v(&r.search))
                },
                plain,
            );
        }
    }
    let ns = section!(b, namespaces, "namespaces");
    b.field(
        "network.interfaces",
        &ns,
        |n| {
            given!(read, inventory.namespaces => interfaces)
                .value()
                .then(|| v(&n.interfaces))
        },
        plain,
    );
}

/// Mount classes that are the kernel's or the engine's masks, not storage
/// the workspace chose: left out of storage.mount.
fn storage_mount(m: &MountEntry) -> bool {
    let mp = s(&m.mount.mount_point);
    let class = s(&m.class);
    !(class == "pseudo"
        || class == "probe-binary"
        || mp.starts_with("/proc/")
        || mp.starts_with("/sys/"))
}

fn storage(b: &mut Builder) {
    let read = b.read;
    let mounts = section!(b, mounts, "mounts");
    let ws = match &mounts {
        Ok(m) => match &m.workspace {
            Some(w) => Ok(w),
            None => Err(Unread::NoWorkspace),
        },
        Err(e) => Err(e.clone()),
    };
    b.field(
        "storage.workspace.path",
        &ws,
        |w| {
            given!(read, inventory.mounts => workspace => path)
                .value()
                .then(|| v(&w.path))
        },
        plain,
    );
    match (&mounts, &ws) {
        (Ok(m), Ok(w)) => {
            let on = w
                .mount_id
                .and_then(|id| m.mounts.iter().find(|e| e.mount.id == id));
            match on {
                Some(e) if s(&e.class) == "workspace" => {
                    let volume = e.kinds.iter().any(|k| k == "volume");
                    b.val(
                        "storage.workspace.placement",
                        if volume { "volume" } else { "bind" },
                    );
                    b.val("storage.workspace.read_only", e.read_only);
                }
                Some(e) => {
                    let class = s(&e.class);
                    let place = if class == "root-fs" {
                        "image".to_string()
                    } else {
                        class
                    };
                    b.val("storage.workspace.placement", place);
                    b.val("storage.workspace.read_only", e.read_only);
                }
                None if given!(read, inventory.mounts => workspace => exists).value()
                    && !w.exists =>
                {
                    b.val("storage.workspace.placement", "missing");
                    b.unknown(
                        "storage.workspace.read_only",
                        "the workspace does not exist",
                    );
                }
                None => {
                    b.unknown(
                        "storage.workspace.placement",
                        "the workspace's mount is not in the table",
                    );
                    b.unknown(
                        "storage.workspace.read_only",
                        "the workspace's mount is not in the table",
                    );
                }
            }
        }
        (_, Err(why)) | (Err(why), _) => {
            let why = why.clone();
            b.unknown("storage.workspace.placement", why.clone());
            b.unknown("storage.workspace.read_only", why);
        }
    }
    match &mounts {
        Ok(m) => {
            for e in &m.mounts {
                if !storage_mount(e) {
                    continue;
                }
                let ro = if e.read_only { "ro" } else { "rw" };
                b.val(
                    format!("storage.mount.{}", s(&e.mount.mount_point)),
                    format!("{} {ro}", s(&e.class)),
                );
            }
            b.partial_if("storage.mount.", "mounts");
        }
        Err(why) => {
            let why = why.clone();
            b.partial("storage.mount.", why);
        }
    }
    let wr = section!(b, writable, "writable");
    b.field(
        "storage.root.read_only",
        &wr,
        |w| {
            given!(read, inventory.writable => rootfs_read_only_mount)
                .value()
                .then(|| v(&w.rootfs_read_only_mount))
        },
        plain,
    );
    match section!(b, teardown, "teardown") {
        Ok(t) => {
            for p in &t.persistent {
                let w = if p.writable { "writable" } else { "read-only" };
                b.val(
                    format!("storage.persistent.{}", s(&p.path)),
                    format!("{} {w}", s(&p.class)),
                );
            }
            b.partial_if("storage.persistent.", "teardown");
        }
        Err(why) => b.partial("storage.persistent.", why),
    }
    match section!(b, caches, "caches") {
        Ok(c) => {
            for e in &c.caches {
                b.val(
                    format!("storage.cache.{}", s(&e.path)),
                    format!(
                        "{} on {}, {}",
                        s(&e.name),
                        s(&e.placement.mount_class),
                        s(&e.placement.retention)
                    ),
                );
            }
            b.partial_if("storage.cache.", "caches");
        }
        Err(why) => b.partial("storage.cache.", why),
    }
}

fn secrets(b: &mut Builder) {
    let sec = match section!(b, secrets, "secrets") {
        Ok(v) => v,
        Err(why) => {
            b.partial("secrets.", why);
            return;
        }
    };
    b.partial_if("secrets.", "secrets");
    if sec.checks_truncated {
        b.partial("secrets.file.", "the credential search hit its budget");
    }
    for e in &sec.env {
        b.val(format!("secrets.env.{}", s(&e.name)), s(&e.kind));
    }
    for h in &sec.processes.hits {
        for e in &h.variables {
            b.val(
                format!("secrets.process_env.{}.{}", s(&h.comm), s(&e.name)),
                s(&e.kind),
            );
        }
    }
    if sec.processes.truncated {
        b.partial(
            "secrets.process_env.",
            "the scan of other processes was cut short",
        );
    }
    for f in &sec.files {
        if f.package_tree.is_some() {
            continue;
        }
        b.val(format!("secrets.file.{}", s(&f.path)), s(&f.kind));
    }
    for a in &sec.agents {
        b.val(
            format!("secrets.agent.{}", s(&a.path)),
            format!("{} {}", s(&a.protocol), s(&a.outcome))
                .trim()
                .to_string(),
        );
    }
    for h in &sec.helpers {
        let fw = if h.forwarded { "forwarded" } else { "local" };
        b.val(
            format!("secrets.helper.{}", s(&h.subject)),
            format!("{} {fw}", s(&h.kind)),
        );
    }
    // A token's lifetime against the policy is what the run found: its
    // secret.token-* findings, whose subject is the token's source.
    let mut life: BTreeMap<String, &'static str> = BTreeMap::new();
    for f in &b.report().findings {
        let verdict = if f.code == Code::SecretTokenLongLived.as_str() {
            "longer than max_token_ttl"
        } else if f.code == Code::SecretTokenExpired.as_str() {
            "expired"
        } else {
            continue;
        };
        life.insert(s(&f.subject), verdict);
    }
    for t in &sec.tokens {
        let src = s(&t.source);
        let l = life.get(&src).copied().unwrap_or("within max_token_ttl");
        b.val(
            format!("secrets.token.{src}"),
            format!("{}, {l}", s(&t.kind)),
        );
    }
    for m in &sec.mcp.servers {
        b.val(
            format!("secrets.mcp.{}.{}", s(&m.client), s(&m.name)),
            s(&m.transport),
        );
    }
}

/// Where a held capability acts: what differs between a rootful and a
/// rootless run of the same container, whose capability sets are the same.
fn cap_scope(bd: &Boundary) -> Result<&'static str, Unread> {
    match bd.kind {
        Kind::Sandbox => return Ok("sandbox"),
        Kind::VmContainer => return Ok("vm"),
        _ => {}
    }
    match bd.rootless {
        Some(true) => Ok("user-namespace"),
        Some(false) => Ok("host"),
        None => Err(Unread::Rootless),
    }
}

fn orchestration(b: &mut Builder) {
    let read = b.read;
    let bd = section!(b, boundary, "boundary");
    b.field(
        "boundary.kind",
        &bd,
        |d| {
            given!(read, inventory.boundary => kind)
                .value()
                .then(|| v(&d.kind))
        },
        plain,
    );
    b.field(
        "boundary.engine",
        &bd,
        |d| {
            given!(read, inventory.boundary => engine)
                .value()
                .then(|| v(&d.engine))
        },
        plain,
    );
    b.field(
        "boundary.runtime",
        &bd,
        |d| {
            given!(read, inventory.boundary => runtime)
                .value()
                .then(|| v(&d.runtime))
        },
        plain,
    );
    b.field("boundary.rootless", &bd, |d| present(v(&d.rootless)), plain);
    match (section!(b, privilege, "privilege"), bd.clone()) {
        (Ok(p), Ok(bdv)) => {
            let eff = given!(read, inventory.privilege => caps.effective)
                .value()
                .then_some(p.caps.effective);
            let last = if given!(read, inventory.privilege => caps_named_to).value() {
                p.caps_named_to
            } else {
                p.cap_last_cap.unwrap_or(63)
            };
            match (eff, cap_scope(bdv)) {
                (Some(mask), Ok(scope)) => {
                    for name in selfprobe::catalog::capability_names(mask, last) {
                        b.val(format!("capabilities.{name}"), scope);
                    }
                }
                (None, _) => b.partial(
                    "capabilities.",
                    "the effective capability set is not recorded",
                ),
                (Some(mask), Err(why)) => {
                    for name in selfprobe::catalog::capability_names(mask, last) {
                        b.unknown(format!("capabilities.{name}"), why.clone());
                    }
                }
            }
        }
        (Err(why), _) | (_, Err(why)) => b.partial("capabilities.", why),
    }
    namespaces(b);
    match section!(b, devices, "devices") {
        Ok(d) => {
            for n in &d.nodes {
                let v = match (n.readable, n.writable) {
                    (true, true) => "rw",
                    (true, false) => "r",
                    (false, true) => "w",
                    (false, false) => "-",
                };
                b.val(format!("devices.{}", s(&n.path)), v);
            }
            b.partial_if("devices.", "devices");
            if d.truncated {
                b.partial("devices.", "the device list was cut short");
            }
        }
        Err(why) => b.partial("devices.", why),
    }
    match section!(b, sockets, "sockets") {
        Ok(so) => {
            for x in &so.sockets {
                b.val(
                    format!("sockets.{}", s(&x.path)),
                    format!("{} {}", s(&x.engine), s(&x.outcome)),
                );
            }
            for (ep, from) in &so.tcp_endpoints {
                b.val(format!("sockets.tcp.{ep}"), from.as_str());
            }
            b.partial_if("sockets.", "sockets");
            if !so.walk_truncated.is_empty() {
                b.partial("sockets.", "the search for sockets was cut short");
            }
        }
        Err(why) => b.partial("sockets.", why),
    }
    let pr = section!(b, privilege, "privilege");
    b.field("user.uid", &pr, |p| p.uid.get(1).map(|&n| n.into()), plain);
    b.field("user.gid", &pr, |p| p.gid.get(1).map(|&n| n.into()), plain);
    let rp = section!(b, rootpaths, "rootpaths");
    b.field("user.name", &rp, |r| present(v(&r.user)), plain);
    b.field(
        "user.uid_map",
        &pr,
        |p| {
            given!(read, inventory.privilege => uid_map)
                .value()
                .then(|| v(&p.uid_map))
        },
        |v| {
            let ranges: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let n: Vec<String> = r
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|x| x.to_string())
                        .collect();
                    n.join(" ")
                })
                .collect();
            if ranges.is_empty() {
                Obs::Unknown("the uid map is empty".into())
            } else {
                Obs::Value(ranges.join(", ").into())
            }
        },
    );
    b.field(
        "user.no_new_privs",
        &pr,
        |p| present(v(&p.no_new_privs)),
        plain,
    );
}

fn namespaces(b: &mut Builder) {
    let ns = match section!(b, namespaces, "namespaces") {
        Ok(n) => n,
        Err(why) => {
            b.partial("namespaces.", why);
            return;
        }
    };
    let shared: BTreeSet<&str> = b
        .report()
        .findings
        .iter()
        .filter_map(|f| f.code.strip_prefix("ns.host-"))
        .collect();
    for (name, init) in selfprobe::facts::boundary::INIT_INODES {
        let ino = ns.inodes.get(*name).copied();
        let key = format!("namespaces.{name}");
        if shared.contains(*name) || ino == Some(*init) {
            b.val(key, "host");
        } else if ino.is_some() {
            b.val(key, "own");
        } else if ns.absent.iter().any(|a| a == name) {
            b.val(key, "absent");
        } else {
            let why = ns
                .unreadable
                .get(*name)
                .map(|w| format!("/proc/self/ns/{name} could not be read: {w}"))
                .unwrap_or_else(|| format!("the report does not record the {name} namespace"));
            b.unknown(key, why);
        }
    }
}

fn toolchain(b: &mut Builder) {
    let read = b.read;
    let img = section!(b, image, "repro");
    let os = match &img {
        Err(e) => Obs::Unknown(e.to_string()),
        Ok(i) => {
            let id = i.os_release.get("ID");
            let ver = i.os_release.get("VERSION_ID");
            match (id, ver) {
                (Some(id), Some(v)) => Obs::Value(format!("{id} {v}").into()),
                (Some(id), None) => Obs::Value(id.as_str().into()),
                _ => Obs::Unknown("the image has no /etc/os-release".into()),
            }
        }
    };
    b.put("image.os", os);
    b.field("image.reference", &img, |i| present(v(&i.reference)), plain);
    b.field("image.digest", &img, |i| present(v(&i.digest)), plain);
    b.field(
        "image.id",
        &img,
        |i| {
            let id = i.image_id.as_ref()?;
            given!(read, inventory.image => image_id => value)
                .value()
                .then(|| v(&id.value))
        },
        plain,
    );
    let repro = match section!(b, repro, "repro") {
        Ok(r) => r,
        Err(why) => {
            for p in ["tools.", "lockfiles.", "pins.", "setup."] {
                b.partial(p, why.clone());
            }
            return;
        }
    };
    for p in ["tools.", "lockfiles.", "pins.", "setup."] {
        b.partial_if(p, "repro");
    }
    if repro.walk_truncated.is_some() || repro.workspace_unreadable.is_some() {
        for p in ["lockfiles.", "pins.", "setup."] {
            b.partial(p, "the workspace walk was cut short or unreadable");
        }
    }
    for t in &repro.tools {
        let key = format!("tools.{}", s(&t.tool));
        match &t.version {
            Some(v) => b.val(key, v.as_str()),
            None => b.unknown(
                key,
                format!("its version could not be read ({})", s(&t.status)),
            ),
        }
    }
    for m in &repro.manifests {
        let lock = m.lockfile.clone().unwrap_or_else(|| "missing".into());
        b.val(format!("lockfiles.{}", s(&m.path)), lock);
    }
    for p in &repro.tool_pins {
        b.val(format!("pins.{}.{}", s(&p.file), s(&p.tool)), s(&p.version));
    }
    for c in &repro.setup_contract {
        let pins = if c.pins_image {
            "pins the image by digest"
        } else {
            "does not pin the image"
        };
        b.val(
            format!("setup.{}", s(&c.path)),
            format!("{}, {pins}", s(&c.kind)),
        );
    }
}

/// The value as text for the text report: strings bare, the rest as JSON.
pub fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.is_empty() => "(none)".into(),
        Value::Array(a) => a.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The JSON form of an observation.
pub fn obs_json(o: Option<&Obs>) -> Value {
    match o {
        None => Value::Null,
        Some(Obs::Value(v)) => v.clone(),
        Some(Obs::Unknown(why)) => json!({ "unknown": why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_an_axis_and_every_root_is_used() {
        for (k, _) in KEYS {
            assert!(Axis::of(k).is_some(), "{k} has no axis");
        }
        for (root, _) in ROOTS {
            assert!(
                KEYS.iter().any(|(k, _)| k.starts_with(&format!("{root}."))),
                "{root}"
            );
        }
    }

    #[test]
    fn a_missing_section_is_unknown_and_its_collections_partial() {
        let f = extract(&json!({"schema": "x", "inventory": {}}));
        assert!(matches!(f.facts["kernel.release"], Obs::Unknown(_)));
        assert!(matches!(f.facts["boundary.runtime"], Obs::Unknown(_)));
        assert!(f.partial_for("capabilities.CAP_SYS_ADMIN").is_some());
        assert!(f.partial_for("secrets.env.GITHUB_TOKEN").is_some());
        assert!(f.partial_for("network.tcp://127.0.0.1:1").is_some());
    }

    #[test]
    fn a_section_that_does_not_read_is_unknown_with_why() {
        let f = extract(&json!({
            "schema": "x",
            "inventory": {"boundary": {"kind": 5, "platform": {"machine": "x86_64"}}},
        }));
        match &f.facts["architecture.machine"] {
            Obs::Unknown(why) => assert!(
                why.starts_with("the report's inventory.boundary does not read ("),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_field_the_report_leaves_out_is_unknown_not_the_models_default() {
        // kind, virtualized and the capability mask have defaults in the
        // model (unknown, none, 0); absent here, they are not facts.
        let f = extract(&json!({
            "schema": "x",
            "inventory": {
                "boundary": {"engine": "docker", "rootless": false, "platform": {"cpus": 2}},
                "privilege": {"uid": [0, 1000]},
            },
        }));
        assert!(matches!(&f.facts["boundary.kind"], Obs::Unknown(_)));
        assert!(matches!(
            &f.facts["architecture.virtualized"],
            Obs::Unknown(_)
        ));
        assert!(matches!(&f.facts["architecture.machine"], Obs::Unknown(_)));
        assert_eq!(f.facts["boundary.engine"], Obs::Value(json!("docker")));
        assert_eq!(f.facts["architecture.cpus"], Obs::Value(json!(2)));
        assert_eq!(f.facts["user.uid"], Obs::Value(json!(1000)));
        assert!(f.partial_for("capabilities.CAP_CHOWN").is_some());
        assert!(!f.facts.keys().any(|k| k.starts_with("capabilities.")));
    }

    #[test]
    fn labels_and_scopes() {
        assert_eq!(
            lsm_of("docker-default (enforce)"),
            "apparmor docker-default (enforce)"
        );
        assert_eq!(
            lsm_of("system_u:system_r:container_t:s0:c12,c34"),
            "selinux container_t"
        );
        let bd = |kind, rootless| Boundary {
            kind,
            rootless,
            ..Boundary::default()
        };
        assert_eq!(
            cap_scope(&bd(Kind::Container, Some(true))),
            Ok("user-namespace")
        );
        assert_eq!(cap_scope(&bd(Kind::Sandbox, Some(false))), Ok("sandbox"));
        assert!(cap_scope(&bd(Kind::Container, None)).is_err());
    }
}
