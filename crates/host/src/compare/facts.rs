//! The facts `selfprobe-host diff` compares, taken from a JSON report as
//! `serde_json::Value`: a report of an older version still compares, and a
//! field it lacks is `unknown`, never `same`. Each fact has a stable key
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
    ("network.dns.nameservers", "network.resolver.nameservers"),
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

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .map(|x| match x {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

struct Builder<'a> {
    r: &'a Value,
    out: FactSet,
    /// probe name → (status, reason) from the report's probes[].
    probes: BTreeMap<String, (String, String)>,
    /// Probes a probe.incomplete finding names: part of them was not checked.
    partly: BTreeSet<String>,
}

impl<'a> Builder<'a> {
    fn put(&mut self, key: impl Into<String>, obs: Obs) {
        self.out.facts.insert(key.into(), obs);
    }

    fn val(&mut self, key: impl Into<String>, v: impl Into<Value>) {
        self.put(key, Obs::Value(v.into()));
    }

    fn unknown(&mut self, key: impl Into<String>, why: impl Into<String>) {
        self.put(key, Obs::Unknown(why.into()));
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

    /// inventory.<name>, or why it is missing.
    fn section(&self, name: &str, probe: &str) -> Result<&'a Value, String> {
        match present(self.r.pointer(&format!("/inventory/{name}"))) {
            Some(v) => Ok(v),
            None => Err(self.probe_problem(probe).unwrap_or_else(|| {
                format!("the report has no inventory.{name} (an older version, or the {probe} probe did not finish)")
            })),
        }
    }

    /// Marks `prefix` partial when `probe` did not check everything.
    fn partial_if(&mut self, prefix: &str, probe: &str) {
        if let Some(why) = self.probe_problem(probe) {
            self.partial(prefix, why);
        }
    }

    fn partial(&mut self, prefix: &str, why: impl Into<String>) {
        self.out.partial.push((prefix.to_string(), why.into()));
    }

    /// A fixed key read at `ptr` inside `sec`; null or missing is unknown.
    fn field(
        &mut self,
        key: &str,
        sec: &Result<&Value, String>,
        ptr: &str,
        map: fn(&Value) -> Obs,
    ) {
        let obs = match sec {
            Err(why) => Obs::Unknown(why.clone()),
            Ok(v) => match present(v.pointer(ptr)) {
                Some(x) => map(x),
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

pub fn extract(r: &Value) -> FactSet {
    let mut probes = BTreeMap::new();
    for p in r
        .get("probes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        probes.insert(s(p, "name"), (s(p, "status"), s(p, "reason")));
    }
    let partly = r
        .get("findings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| f.get("code").and_then(Value::as_str) == Some("probe.incomplete"))
        .filter_map(|f| f.pointer("/evidence/probe").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    let mut b = Builder {
        r,
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
    let bd = b.section("boundary", "boundary");
    let platform = match &bd {
        Ok(v) => match present(v.get("platform")) {
            Some(p) => Ok(p),
            None => Err("the report has no boundary.platform (it predates it)".to_string()),
        },
        Err(e) => Err(e.clone()),
    };
    b.field("architecture.machine", &platform, "/machine", plain);
    b.field("architecture.page_size", &platform, "/page_size", plain);
    b.field("architecture.cpus", &platform, "/cpus", plain);
    b.field("architecture.virtualized", &bd, "/virtualized", plain);
    b.field("kernel.release", &platform, "/kernel_release", plain);
    b.field("kernel.cgroup", &platform, "/cgroup", plain);
    let pr = b.section("privilege", "privilege");
    let lsm = match &pr {
        Err(e) => Obs::Unknown(e.clone()),
        Ok(p) => {
            let unread = p
                .get("incomplete")
                .and_then(Value::as_array)
                .is_some_and(|a| {
                    a.iter()
                        .any(|e| e.get(0).and_then(Value::as_str) == Some("lsm"))
                });
            match (unread, present(p.get("lsm_label")).and_then(Value::as_str)) {
                (true, _) => Obs::Unknown("the LSM label could not be read".into()),
                (false, None) => Obs::Value("none".into()),
                (false, Some(l)) => Obs::Value(lsm_of(l).into()),
            }
        }
    };
    b.put("kernel.lsm", lsm);
    b.field("kernel.seccomp", &pr, "/seccomp", |v| match v.as_u64() {
        Some(0) => Obs::Value("disabled".into()),
        Some(1) => Obs::Value("strict".into()),
        Some(2) => Obs::Value("filter".into()),
        _ => Obs::Unknown(format!("seccomp mode {v}")),
    });
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
    let net = b.section("network", "network");
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
            b.field("network.assessed", &net, "/assessed", plain);
            for d in n
                .get("destinations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let key = format!("network.{}", s(d, "destination"));
                let contract = s(d, "contract");
                let v = format!(
                    "{} {}, contract {}",
                    s(d, "list"),
                    s(d, "outcome"),
                    contract
                );
                if contract == "unknown" {
                    b.unknown(key, v);
                } else {
                    b.val(key, v);
                }
            }
            if n.get("destinations").is_none() {
                b.partial(
                    "network.",
                    "the report does not list the destinations tried",
                );
            }
            for p in ["http", "https", "all"] {
                let v = present(n.pointer(&format!("/proxy/{p}")))
                    .cloned()
                    .unwrap_or_else(|| "none".into());
                if n.get("proxy").is_some() {
                    b.val(format!("network.proxy.{p}"), v);
                } else {
                    b.unknown(
                        format!("network.proxy.{p}"),
                        "the report does not record the proxy",
                    );
                }
            }
            b.field("network.no_proxy", &net, "/proxy/no_proxy", plain);
            let resolver = match present(n.get("resolver")) {
                Some(r) => Ok(r),
                None => Err("the resolver configuration was not read (an older report, or its files did not answer)".to_string()),
            };
            b.field("network.dns.nameservers", &resolver, "/nameservers", plain);
            b.field("network.dns.search", &resolver, "/search", plain);
        }
    }
    let ns = b.section("namespaces", "namespaces");
    b.field("network.interfaces", &ns, "/interfaces", plain);
}

/// Mount classes that are the kernel's or the engine's masks, not storage
/// the workspace chose: left out of storage.mount.
fn storage_mount(m: &Value) -> bool {
    let mp = s(m, "mount_point");
    let class = s(m, "class");
    !(class == "pseudo"
        || class == "probe-binary"
        || mp.starts_with("/proc/")
        || mp.starts_with("/sys/"))
}

fn storage(b: &mut Builder) {
    let mounts = b.section("mounts", "mounts");
    let ws = match &mounts {
        Ok(m) => match present(m.get("workspace")) {
            Some(w) => Ok(w),
            None => Err("no workspace was declared (--workspace, the policy's workspace.path or a git root)".to_string()),
        },
        Err(e) => Err(e.clone()),
    };
    b.field("storage.workspace.path", &ws, "/path", plain);
    match (&mounts, &ws) {
        (Ok(m), Ok(w)) => {
            let all = m
                .get("mounts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let on = w.get("mount_id").and_then(Value::as_u64).and_then(|id| {
                all.iter()
                    .find(|e| e.get("id").and_then(Value::as_u64) == Some(id))
            });
            match on {
                Some(e) if s(e, "class") == "workspace" => {
                    let volume = e
                        .get("kinds")
                        .and_then(Value::as_array)
                        .is_some_and(|k| k.iter().any(|x| x == "volume"));
                    b.val(
                        "storage.workspace.placement",
                        if volume { "volume" } else { "bind" },
                    );
                    b.field("storage.workspace.read_only", &Ok(e), "/read_only", plain);
                }
                Some(e) => {
                    let class = s(e, "class");
                    let place = if class == "root-fs" {
                        "image".to_string()
                    } else {
                        class
                    };
                    b.val("storage.workspace.placement", place);
                    b.field("storage.workspace.read_only", &Ok(e), "/read_only", plain);
                }
                None if w.get("exists") == Some(&Value::Bool(false)) => {
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
            for e in m
                .get("mounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !storage_mount(e) {
                    continue;
                }
                let ro = if e.get("read_only") == Some(&Value::Bool(true)) {
                    "ro"
                } else {
                    "rw"
                };
                b.val(
                    format!("storage.mount.{}", s(e, "mount_point")),
                    format!("{} {ro}", s(e, "class")),
                );
            }
            b.partial_if("storage.mount.", "mounts");
        }
        Err(why) => {
            let why = why.clone();
            b.partial("storage.mount.", why);
        }
    }
    let wr = b.section("writable", "writable");
    b.field(
        "storage.root.read_only",
        &wr,
        "/rootfs_read_only_mount",
        plain,
    );
    match b.section("teardown", "teardown") {
        Ok(t) => {
            for p in t
                .get("persistent")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let w = if p.get("writable") == Some(&Value::Bool(true)) {
                    "writable"
                } else {
                    "read-only"
                };
                b.val(
                    format!("storage.persistent.{}", s(p, "path")),
                    format!("{} {w}", s(p, "class")),
                );
            }
            b.partial_if("storage.persistent.", "teardown");
        }
        Err(why) => b.partial("storage.persistent.", why),
    }
    match b.section("caches", "caches") {
        Ok(c) => {
            for e in c
                .get("caches")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                b.val(
                    format!("storage.cache.{}", s(e, "path")),
                    format!(
                        "{} on {}, {}",
                        s(e, "name"),
                        s(e, "mount_class"),
                        s(e, "retention")
                    ),
                );
            }
            b.partial_if("storage.cache.", "caches");
        }
        Err(why) => b.partial("storage.cache.", why),
    }
}

fn secrets(b: &mut Builder) {
    let sec = match b.section("secrets", "secrets") {
        Ok(v) => v,
        Err(why) => {
            b.partial("secrets.", why);
            return;
        }
    };
    b.partial_if("secrets.", "secrets");
    if sec.get("checks_truncated") == Some(&Value::Bool(true)) {
        b.partial("secrets.file.", "the credential search hit its budget");
    }
    for e in sec
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        b.val(format!("secrets.env.{}", s(e, "name")), s(e, "kind"));
    }
    for h in sec
        .pointer("/processes/hits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for e in h
            .get("variables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            b.val(
                format!("secrets.process_env.{}.{}", s(h, "comm"), s(e, "name")),
                s(e, "kind"),
            );
        }
    }
    if sec.pointer("/processes/truncated") == Some(&Value::Bool(true)) {
        b.partial(
            "secrets.process_env.",
            "the scan of other processes was cut short",
        );
    }
    for f in sec
        .get("files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if present(f.get("package_tree")).is_some() {
            continue;
        }
        b.val(format!("secrets.file.{}", s(f, "path")), s(f, "kind"));
    }
    for a in sec
        .get("agents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        b.val(
            format!("secrets.agent.{}", s(a, "path")),
            format!("{} {}", s(a, "protocol"), s(a, "outcome"))
                .trim()
                .to_string(),
        );
    }
    for h in sec
        .get("helpers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let fw = if h.get("forwarded") == Some(&Value::Bool(true)) {
            "forwarded"
        } else {
            "local"
        };
        b.val(
            format!("secrets.helper.{}", s(h, "subject")),
            format!("{} {fw}", s(h, "kind")),
        );
    }
    // A token's lifetime against the policy is what the run found: its
    // secret.token-* findings, whose subject is the token's source.
    let mut life: BTreeMap<String, &'static str> = BTreeMap::new();
    for f in
        b.r.get("findings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    {
        let verdict = match f.get("code").and_then(Value::as_str) {
            Some("secret.token-long-lived") => "longer than max_token_ttl",
            Some("secret.token-expired") => "expired",
            _ => continue,
        };
        life.insert(s(f, "subject"), verdict);
    }
    for t in sec
        .get("tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let src = s(t, "source");
        let l = life.get(&src).copied().unwrap_or("within max_token_ttl");
        b.val(
            format!("secrets.token.{src}"),
            format!("{}, {l}", s(t, "kind")),
        );
    }
    for m in sec
        .pointer("/mcp/servers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        b.val(
            format!("secrets.mcp.{}.{}", s(m, "client"), s(m, "name")),
            s(m, "transport"),
        );
    }
}

/// Where a held capability acts: what differs between a rootful and a
/// rootless run of the same container, whose capability sets are the same.
fn cap_scope(bd: &Value) -> Result<&'static str, String> {
    match bd.get("kind").and_then(Value::as_str) {
        Some("sandbox") => return Ok("sandbox"),
        Some("vm-container") => return Ok("vm"),
        _ => {}
    }
    match bd.get("rootless").and_then(Value::as_bool) {
        Some(true) => Ok("user-namespace"),
        Some(false) => Ok("host"),
        None => Err("whether uid 0 maps to the host's is unknown (boundary.rootless)".into()),
    }
}

fn orchestration(b: &mut Builder) {
    let bd = b.section("boundary", "boundary");
    for f in ["kind", "engine", "runtime", "rootless"] {
        b.field(&format!("boundary.{f}"), &bd, &format!("/{f}"), plain);
    }
    match (b.section("privilege", "privilege"), bd.clone()) {
        (Ok(p), Ok(bdv)) => {
            let eff = p.pointer("/caps/effective").and_then(Value::as_u64);
            let last = p
                .get("caps_named_to")
                .and_then(Value::as_u64)
                .or_else(|| p.get("cap_last_cap").and_then(Value::as_u64))
                .unwrap_or(63);
            match (eff, cap_scope(bdv)) {
                (Some(mask), Ok(scope)) => {
                    for name in selfprobe::catalog::capability_names(mask, last as u32) {
                        b.val(format!("capabilities.{name}"), scope);
                    }
                }
                (None, _) => b.partial(
                    "capabilities.",
                    "the effective capability set is not recorded",
                ),
                (Some(mask), Err(why)) => {
                    for name in selfprobe::catalog::capability_names(mask, last as u32) {
                        b.unknown(format!("capabilities.{name}"), why.clone());
                    }
                }
            }
        }
        (Err(why), _) | (_, Err(why)) => b.partial("capabilities.", why),
    }
    namespaces(b);
    match b.section("devices", "devices") {
        Ok(d) => {
            for n in d
                .get("nodes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let r = n.get("readable") == Some(&Value::Bool(true));
                let w = n.get("writable") == Some(&Value::Bool(true));
                let v = match (r, w) {
                    (true, true) => "rw",
                    (true, false) => "r",
                    (false, true) => "w",
                    (false, false) => "-",
                };
                b.val(format!("devices.{}", s(n, "path")), v);
            }
            b.partial_if("devices.", "devices");
            if d.get("truncated") == Some(&Value::Bool(true)) {
                b.partial("devices.", "the device list was cut short");
            }
        }
        Err(why) => b.partial("devices.", why),
    }
    match b.section("sockets", "sockets") {
        Ok(so) => {
            for x in so
                .get("sockets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                b.val(
                    format!("sockets.{}", s(x, "path")),
                    format!("{} {}", s(x, "engine"), s(x, "outcome")),
                );
            }
            for t in so
                .get("tcp_endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (ep, from) = (
                    t.get(0).and_then(Value::as_str).unwrap_or(""),
                    t.get(1).and_then(Value::as_str).unwrap_or(""),
                );
                b.val(format!("sockets.tcp.{ep}"), from);
            }
            b.partial_if("sockets.", "sockets");
            if so
                .get("walk_truncated")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
            {
                b.partial("sockets.", "the search for sockets was cut short");
            }
        }
        Err(why) => b.partial("sockets.", why),
    }
    let pr = b.section("privilege", "privilege");
    b.field("user.uid", &pr, "/uid/1", plain);
    b.field("user.gid", &pr, "/gid/1", plain);
    let rp = b.section("rootpaths", "rootpaths");
    b.field("user.name", &rp, "/user", plain);
    b.field("user.uid_map", &pr, "/uid_map", |v| {
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
    });
    b.field("user.no_new_privs", &pr, "/no_new_privs", plain);
}

fn namespaces(b: &mut Builder) {
    let ns = match b.section("namespaces", "namespaces") {
        Ok(n) => n,
        Err(why) => {
            b.partial("namespaces.", why);
            return;
        }
    };
    let shared: BTreeSet<String> =
        b.r.get("findings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("code").and_then(Value::as_str))
            .filter_map(|c| c.strip_prefix("ns.host-"))
            .map(str::to_string)
            .collect();
    let absent: BTreeSet<&str> = ns
        .get("absent")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, init) in selfprobe::facts::boundary::INIT_INODES {
        let ino = ns
            .pointer(&format!("/inodes/{name}"))
            .and_then(Value::as_u64);
        let key = format!("namespaces.{name}");
        if shared.contains(*name) || ino == Some(*init) {
            b.val(key, "host");
        } else if ino.is_some() {
            b.val(key, "own");
        } else if absent.contains(name) {
            b.val(key, "absent");
        } else {
            let why = ns
                .pointer(&format!("/unreadable/{name}"))
                .and_then(Value::as_str)
                .map(|w| format!("/proc/self/ns/{name} could not be read: {w}"))
                .unwrap_or_else(|| format!("the report does not record the {name} namespace"));
            b.unknown(key, why);
        }
    }
}

fn toolchain(b: &mut Builder) {
    let img = b.section("image", "repro");
    let os = match &img {
        Err(e) => Obs::Unknown(e.clone()),
        Ok(i) => {
            let id = i.pointer("/os_release/ID").and_then(Value::as_str);
            let ver = i.pointer("/os_release/VERSION_ID").and_then(Value::as_str);
            match (id, ver) {
                (Some(id), Some(v)) => Obs::Value(format!("{id} {v}").into()),
                (Some(id), None) => Obs::Value(id.into()),
                _ => Obs::Unknown("the image has no /etc/os-release".into()),
            }
        }
    };
    b.put("image.os", os);
    b.field("image.reference", &img, "/reference", plain);
    b.field("image.digest", &img, "/digest", plain);
    b.field("image.id", &img, "/image_id/value", plain);
    let repro = match b.section("repro", "repro") {
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
    if present(repro.get("walk_truncated")).is_some()
        || present(repro.get("workspace_unreadable")).is_some()
    {
        for p in ["lockfiles.", "pins.", "setup."] {
            b.partial(p, "the workspace walk was cut short or unreadable");
        }
    }
    for t in repro
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = format!("tools.{}", s(t, "tool"));
        match present(t.get("version")).and_then(Value::as_str) {
            Some(v) => b.val(key, v),
            None => b.unknown(
                key,
                format!("its version could not be read ({})", s(t, "status")),
            ),
        }
    }
    for m in repro
        .get("manifests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let lock = present(m.get("lockfile"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| "missing".into());
        b.val(format!("lockfiles.{}", s(m, "path")), lock);
    }
    for p in repro
        .get("tool_pins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        b.val(
            format!("pins.{}.{}", s(p, "file"), s(p, "tool")),
            s(p, "version"),
        );
    }
    for c in repro
        .get("setup_contract")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let pins = if c.get("pins_image") == Some(&Value::Bool(true)) {
            "pins the image by digest"
        } else {
            "does not pin the image"
        };
        b.val(
            format!("setup.{}", s(c, "path")),
            format!("{}, {pins}", s(c, "kind")),
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
    fn labels_and_scopes() {
        assert_eq!(
            lsm_of("docker-default (enforce)"),
            "apparmor docker-default (enforce)"
        );
        assert_eq!(
            lsm_of("system_u:system_r:container_t:s0:c12,c34"),
            "selinux container_t"
        );
        assert_eq!(
            cap_scope(&json!({"kind": "container", "rootless": true})),
            Ok("user-namespace")
        );
        assert_eq!(
            cap_scope(&json!({"kind": "sandbox", "rootless": false})),
            Ok("sandbox")
        );
        assert!(cap_scope(&json!({"kind": "container"})).is_err());
    }
}
