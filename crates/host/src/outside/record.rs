//! The engine's own record of a container, as `docker inspect` or `podman
//! inspect` prints it, read into one engine-neutral shape. Every field is
//! read leniently (a missing or null field is its default): the two engines
//! and their versions name the same facts slightly differently, and the
//! record is untrusted input like anything a container influences.
//!
//! Nothing of the container's environment (`Config.Env`) or its create
//! command is kept: they may hold secrets, and no fact here needs them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

/// Which engine's CLI printed the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Docker,
    Podman,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Docker => "docker",
            EngineKind::Podman => "podman",
        }
    }
}

/// Docker's default capability set (moby's `oci/caps/defaults.go`, the same
/// list docker-bench-security's check 5.4 treats as the defaults). Podman's
/// comes from its own record or `podman info` (containers.conf may change it).
pub const DOCKER_DEFAULT_CAPS: [&str; 14] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MountKind {
    Bind,
    Volume,
    Tmpfs,
    Other,
}

/// One entry of the record's `Mounts` (plus `HostConfig.Tmpfs`).
#[derive(Debug, Clone, Serialize)]
pub struct RecordMount {
    pub kind: MountKind,
    /// The host path (a bind's source, a volume's mount point on the host);
    /// empty for a tmpfs.
    pub source: String,
    pub destination: String,
    pub rw: bool,
    /// rprivate, rshared, rslave… as recorded ("" when the engine left it
    /// to the default).
    pub propagation: String,
    /// A volume's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The options as recorded: a tmpfs's ("noexec", "exec", "rw,nosuid,…"),
    /// podman's for a bind or volume ("nosuid,nodev,rbind").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
}

impl RecordMount {
    /// The record says the mount is noexec.
    pub fn noexec(&self) -> bool {
        self.options
            .as_deref()
            .is_some_and(|o| o.split(',').any(|x| x.trim() == "noexec"))
    }

    /// Whether a tmpfs lets a placed binary run. Docker's `--tmpfs` is
    /// noexec unless `exec` is given; podman writes the options it used.
    pub fn tmpfs_exec(&self, engine: EngineKind) -> bool {
        let opts = self.options.as_deref().unwrap_or("");
        let has = |o: &str| opts.split(',').any(|x| x.trim() == o);
        if has("noexec") {
            return false;
        }
        match engine {
            EngineKind::Docker => has("exec"),
            EngineKind::Podman => true,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RecordDevice {
    pub host: String,
    pub container: String,
    pub permissions: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub engine: EngineKind,
    pub id: String,
    /// Without the leading `/` Docker puts there.
    pub name: String,
    /// The image as the container was created from it (`Config.Image`, or
    /// podman's `ImageName`).
    pub image: String,
    /// The image's id (`Image`).
    pub image_id: String,
    /// Podman records the image's digest itself; Docker's comes from the
    /// image's RepoDigests (`image inspect`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    pub status: String,
    pub running: bool,
    pub privileged: bool,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    /// Podman's own account of the sets (`EffectiveCaps`, `BoundingCaps`);
    /// None when the record has no such field (Docker).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_caps: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounding_caps: Option<Vec<String>>,
    pub security_opt: Vec<String>,
    /// "default", "unconfined" or "custom" (a profile of one's own).
    pub seccomp: &'static str,
    pub no_new_privileges: bool,
    /// AppArmor profile (empty when none was applied).
    pub apparmor_profile: String,
    /// SELinux process label (empty when none).
    pub selinux_label: String,
    /// Namespace modes as recorded: pid, net, ipc, uts, cgroup, user.
    pub namespaces: BTreeMap<&'static str, String>,
    pub devices: Vec<RecordDevice>,
    pub read_only_root: bool,
    /// `Config.User` (the image's USER merged in): "" is the image default,
    /// root unless the image says otherwise.
    pub user: String,
    /// `HostConfig.Runtime` (Docker) or `OCIRuntime` (podman).
    pub runtime: String,
    pub mounts: Vec<RecordMount>,
    pub restart_policy: String,
    pub restart_max_retries: u64,
    /// Bytes; None when unlimited.
    pub memory_limit: Option<i64>,
    /// None when unlimited.
    pub pids_limit: Option<i64>,
    pub cpu_shares: i64,
    pub nano_cpus: i64,
    pub cgroup_parent: String,
    /// Published ports: (container port, host ip, host port).
    pub ports: Vec<(String, String, String)>,
    pub healthcheck: bool,
    pub ulimits: Vec<String>,
    pub working_dir: String,
    pub labels: BTreeMap<String, String>,
    /// Where the engine keeps the root filesystem mounted on the host
    /// (`GraphDriver.Data.MergedDir` of an overlay driver), and the pid of
    /// the container's first process (`State.Pid`, 0 when not running):
    /// what outside/direct.rs checks before it writes there.
    #[serde(skip)]
    pub merged_dir: Option<String>,
    #[serde(skip)]
    pub pid: i64,
    /// Podman's OCIConfigPath: the runtime configuration it wrote for the
    /// running container (Engine::settle reads what the record leaves out).
    #[serde(skip)]
    pub oci_config: Option<String>,
}

fn s(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn b(v: &Value, ptr: &str) -> bool {
    v.pointer(ptr).and_then(Value::as_bool).unwrap_or(false)
}

fn i(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// The strings of the array at `ptr` (missing or odd: none).
pub fn strings(v: &Value, ptr: &str) -> Vec<String> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `CAP_SYS_ADMIN`, whatever way the user wrote it (`sys_admin`,
/// `SYS_ADMIN`, `cap_sys_admin`); `ALL` stays `ALL`.
pub fn normalize_cap(c: &str) -> String {
    let up = c.trim().to_ascii_uppercase();
    if up == "ALL" || up.starts_with("CAP_") {
        up
    } else {
        format!("CAP_{up}")
    }
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError(pub String);

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses the JSON array `inspect` prints into records.
pub fn parse_records(text: &[u8]) -> Result<Vec<Record>, RecordError> {
    let v: Value = serde_json::from_slice(text).map_err(|e| {
        RecordError(format!(
            "the engine's inspect output is not JSON ({e}): expected an array of container records"
        ))
    })?;
    let arr = v.as_array().ok_or_else(|| {
        RecordError("the engine's inspect output is not a JSON array of container records".into())
    })?;
    arr.iter().map(parse_record).collect()
}

/// One container's record.
pub fn parse_record(v: &Value) -> Result<Record, RecordError> {
    let id = s(v, "/Id");
    if id.is_empty() || !id.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(RecordError(
            "a record without a hexadecimal Id: expected a container record as `inspect` prints it"
                .into(),
        ));
    }
    // Podman's records carry fields Docker's do not.
    let engine = if v.get("OCIRuntime").is_some() || v.get("EffectiveCaps").is_some() {
        EngineKind::Podman
    } else {
        EngineKind::Docker
    };
    let hc = v.get("HostConfig").cloned().unwrap_or(Value::Null);
    let security_opt = strings(&hc, "/SecurityOpt");
    let privileged = b(&hc, "/Privileged");
    let opt = |key: &str| -> Option<String> {
        security_opt.iter().find_map(|o| {
            let (k, val) = o.split_once(['=', ':']).unwrap_or((o.as_str(), ""));
            (k == key).then(|| val.to_string())
        })
    };
    let seccomp = if privileged {
        "unconfined"
    } else {
        match opt("seccomp").as_deref() {
            None | Some("") | Some("default") => "default",
            Some("unconfined") => "unconfined",
            Some(_) => "custom",
        }
    };
    let no_new_privileges = match opt("no-new-privileges").as_deref() {
        Some("") | Some("true") => true,
        Some(_) | None => false,
    };
    let mut namespaces = BTreeMap::new();
    let pid = s(&hc, "/PidMode");
    namespaces.insert("pid", pid);
    namespaces.insert("net", s(&hc, "/NetworkMode"));
    namespaces.insert("ipc", s(&hc, "/IpcMode"));
    namespaces.insert("uts", s(&hc, "/UTSMode"));
    let cgroup = match engine {
        EngineKind::Docker => s(&hc, "/CgroupnsMode"),
        EngineKind::Podman => s(&hc, "/CgroupMode"),
    };
    namespaces.insert("cgroup", cgroup);
    namespaces.insert("user", s(&hc, "/UsernsMode"));

    let devices = hc
        .get("Devices")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| RecordDevice {
                    host: s(d, "/PathOnHost"),
                    container: s(d, "/PathInContainer"),
                    permissions: s(d, "/CgroupPermissions"),
                })
                .collect()
        })
        .unwrap_or_default();

    let mut mounts: Vec<RecordMount> = v
        .get("Mounts")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(mount).collect())
        .unwrap_or_default();
    if let Some(t) = hc.get("Tmpfs").and_then(Value::as_object) {
        for (dest, opts) in t {
            if mounts.iter().any(|m| &m.destination == dest) {
                continue;
            }
            let opts = opts.as_str().unwrap_or("").to_string();
            let ro = opts.split(',').any(|o| o == "ro");
            mounts.push(RecordMount {
                kind: MountKind::Tmpfs,
                source: String::new(),
                destination: dest.clone(),
                rw: !ro,
                propagation: String::new(),
                name: None,
                driver: None,
                options: Some(opts),
            });
        }
    }

    let (effective_caps, bounding_caps) = match engine {
        // A null list (every capability dropped) is an empty one.
        EngineKind::Podman => (
            Some(strings(v, "/EffectiveCaps")),
            Some(strings(v, "/BoundingCaps")),
        ),
        EngineKind::Docker => (None, None),
    };
    let runtime = match engine {
        EngineKind::Docker => s(&hc, "/Runtime"),
        EngineKind::Podman => s(v, "/OCIRuntime"),
    };
    let memory = i(&hc, "/Memory");
    let pids = hc.get("PidsLimit").and_then(Value::as_i64);
    let ports = hc
        .get("PortBindings")
        .and_then(Value::as_object)
        .map(|o| {
            let mut out = Vec::new();
            for (port, binds) in o {
                for bnd in binds.as_array().into_iter().flatten() {
                    out.push((port.clone(), s(bnd, "/HostIp"), s(bnd, "/HostPort")));
                }
            }
            out
        })
        .unwrap_or_default();
    let ulimits = hc
        .get("Ulimits")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|u| format!("{}={}:{}", s(u, "/Name"), i(u, "/Soft"), i(u, "/Hard")))
                .collect()
        })
        .unwrap_or_default();
    let labels = v
        .pointer("/Config/Labels")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, val)| val.as_str().map(|x| (k.clone(), x.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let image = match engine {
        EngineKind::Podman if !s(v, "/ImageName").is_empty() => s(v, "/ImageName"),
        _ => s(v, "/Config/Image"),
    };
    let digest = s(v, "/ImageDigest");
    let healthcheck = v
        .pointer("/Config/Healthcheck/Test")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty() && t[0] != "NONE")
        || !s(v, "/State/Health/Status").is_empty();
    Ok(Record {
        engine,
        name: s(v, "/Name").trim_start_matches('/').to_string(),
        id,
        image,
        image_id: s(v, "/Image"),
        image_digest: (!digest.is_empty()).then_some(digest),
        status: s(v, "/State/Status"),
        running: b(v, "/State/Running"),
        privileged,
        cap_add: strings(&hc, "/CapAdd")
            .iter()
            .map(|c| normalize_cap(c))
            .collect(),
        cap_drop: strings(&hc, "/CapDrop")
            .iter()
            .map(|c| normalize_cap(c))
            .collect(),
        effective_caps,
        bounding_caps,
        seccomp,
        no_new_privileges,
        apparmor_profile: s(v, "/AppArmorProfile"),
        selinux_label: s(v, "/ProcessLabel"),
        security_opt,
        namespaces,
        devices,
        read_only_root: b(&hc, "/ReadonlyRootfs"),
        user: s(v, "/Config/User"),
        runtime,
        mounts,
        restart_policy: s(&hc, "/RestartPolicy/Name"),
        restart_max_retries: hc
            .pointer("/RestartPolicy/MaximumRetryCount")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        memory_limit: (memory > 0).then_some(memory),
        pids_limit: pids.filter(|p| *p > 0),
        cpu_shares: i(&hc, "/CpuShares"),
        nano_cpus: i(&hc, "/NanoCpus"),
        cgroup_parent: s(&hc, "/CgroupParent"),
        ports,
        healthcheck,
        ulimits,
        working_dir: s(v, "/Config/WorkingDir"),
        labels,
        merged_dir: matches!(s(v, "/GraphDriver/Name").as_str(), "overlay" | "overlay2")
            .then(|| s(v, "/GraphDriver/Data/MergedDir"))
            .filter(|d| !d.is_empty()),
        pid: i(v, "/State/Pid"),
        oci_config: Some(s(v, "/OCIConfigPath")).filter(|p| p.starts_with('/')),
    })
}

fn mount(m: &Value) -> RecordMount {
    let kind = match s(m, "/Type").as_str() {
        "bind" => MountKind::Bind,
        "volume" => MountKind::Volume,
        "tmpfs" => MountKind::Tmpfs,
        _ => MountKind::Other,
    };
    let name = s(m, "/Name");
    let driver = s(m, "/Driver");
    // Podman lists a mount's options (nosuid, nodev, noexec…); Docker does not.
    let options = strings(m, "/Options");
    RecordMount {
        source: s(m, "/Source"),
        destination: s(m, "/Destination"),
        rw: b(m, "/RW"),
        propagation: s(m, "/Propagation"),
        name: (!name.is_empty()).then_some(name),
        driver: (kind == MountKind::Volume && !driver.is_empty()).then_some(driver),
        options: (!options.is_empty()).then(|| options.join(",")),
        kind,
    }
}

impl Record {
    /// The user the container's processes (and so `exec`) run as, when the
    /// record says it by number: None for a name.
    pub fn uid(&self) -> Option<u32> {
        let u = self.user.split(':').next().unwrap_or("");
        match u {
            "" | "root" => Some(0),
            n => n.parse().ok(),
        }
    }

    /// The user's name, when the record names it rather than numbers it.
    pub fn user_name(&self) -> Option<&str> {
        let u = self.user.split(':').next().unwrap_or("");
        (!u.is_empty() && u.parse::<u32>().is_err()).then_some(u)
    }

    /// Whether the recorded namespace mode shares the host's.
    pub fn shares_host(&self, ns: &str) -> bool {
        self.namespaces.get(ns).is_some_and(|m| m == "host")
    }

    /// The capabilities the engine gives the container's bounding set: the
    /// record's own list where the engine keeps one (podman), else the
    /// engine's default set with CapAdd and CapDrop applied as moby's
    /// `TweakCapabilities` does, or every capability when privileged.
    /// `all` is every capability the host kernel knows, `defaults` the
    /// engine's default set.
    pub fn bounding_set(&self, all: &[String], defaults: &[String]) -> BTreeSet<String> {
        if self.privileged {
            return all.iter().cloned().collect();
        }
        if let Some(b) = &self.bounding_caps {
            return b.iter().map(|c| normalize_cap(c)).collect();
        }
        let has_all = |l: &[String]| l.iter().any(|c| c == "ALL");
        let mut set: BTreeSet<String> = if has_all(&self.cap_add) {
            all.iter().cloned().collect()
        } else if has_all(&self.cap_drop) {
            BTreeSet::new()
        } else {
            defaults.iter().cloned().collect()
        };
        if !has_all(&self.cap_add) {
            if !has_all(&self.cap_drop) {
                for c in &self.cap_drop {
                    set.remove(c);
                }
            }
            set.extend(self.cap_add.iter().filter(|c| *c != "ALL").cloned());
        } else {
            for c in &self.cap_drop {
                set.remove(c);
            }
        }
        set
    }

    /// The capabilities effective in a process the container runs as its
    /// user: podman says so itself; otherwise the bounding set for uid 0,
    /// and none for any other user (the kernel clears the permitted and
    /// effective sets when a non-root user execs a program without file
    /// capabilities; Docker grants no ambient capabilities). None when the
    /// user is named and its uid is not known.
    pub fn effective_set(
        &self,
        all: &[String],
        defaults: &[String],
        uid: Option<u32>,
    ) -> Option<BTreeSet<String>> {
        if let Some(e) = &self.effective_caps {
            return Some(e.iter().map(|c| normalize_cap(c)).collect());
        }
        match uid {
            Some(0) => Some(self.bounding_set(all, defaults)),
            Some(_) => Some(BTreeSet::new()),
            None => None,
        }
    }

    /// Anonymous volumes are named by the engine with 64 hex digits; a
    /// named volume has the name the user gave it.
    pub fn volumes(&self) -> impl Iterator<Item = &RecordMount> {
        self.mounts.iter().filter(|m| m.kind == MountKind::Volume)
    }
}

/// Whether a volume name is one the engine made up (an anonymous volume).
pub fn anonymous_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|c| c.is_ascii_hexdigit())
}

/// A captured record of tests/data/engine-records (the unit tests' fixtures).
#[cfg(test)]
pub fn fixture(name: &str) -> Record {
    let path = format!(
        "{}/../../tests/data/engine-records/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read(&path).unwrap();
    let mut r = parse_records(&text).unwrap();
    assert_eq!(r.len(), 1, "{path}");
    r.remove(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_caps() -> Vec<String> {
        selfprobe::catalog::capabilities()
            .iter()
            .filter(|c| c.number <= 40)
            .map(|c| c.name.clone())
            .collect()
    }

    fn docker_defaults() -> Vec<String> {
        DOCKER_DEFAULT_CAPS.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn docker_clean_record() {
        let r = fixture("docker-clean");
        assert_eq!(r.engine, EngineKind::Docker);
        assert_eq!(r.name, "selfprobe-capture-clean");
        assert_eq!(r.cap_drop, ["ALL"]);
        assert!(r.bounding_set(&all_caps(), &docker_defaults()).is_empty());
        assert_eq!(r.seccomp, "default");
        assert!(!r.no_new_privileges && !r.privileged && !r.read_only_root);
        assert_eq!(r.namespaces["net"], "none");
        assert_eq!(r.namespaces["cgroup"], "host");
        assert!(!r.shares_host("pid"));
        assert_eq!(r.uid(), Some(0));
        assert_eq!(r.runtime, "runc");
        assert_eq!(r.mounts.len(), 1);
        let m = &r.mounts[0];
        assert_eq!(
            (m.kind.clone(), m.destination.as_str(), m.rw),
            (MountKind::Bind, "/workspace", true)
        );
        assert!(m.source.ends_with("/ws"));
        assert_eq!(m.propagation, "rprivate");
        assert_eq!(r.memory_limit, None);
        assert_eq!(r.pids_limit, None);
        assert_eq!(r.restart_policy, "no");
        assert_eq!(r.working_dir, "/workspace");
        assert!(r.running);
    }

    #[test]
    fn docker_cap_add_pid_host_and_the_socket() {
        let r = fixture("docker-b");
        assert_eq!(r.cap_add, ["CAP_SYS_ADMIN"]);
        let set = r.bounding_set(&all_caps(), &docker_defaults());
        assert_eq!(set.len(), 15);
        assert!(set.contains("CAP_SYS_ADMIN") && set.contains("CAP_NET_RAW"));
        assert_eq!(
            r.effective_set(&all_caps(), &docker_defaults(), r.uid()),
            Some(set)
        );
        assert!(r.shares_host("pid"));
        assert_eq!(r.mounts[0].source, "/var/run/docker.sock");
    }

    #[test]
    fn docker_volumes_limits_and_options() {
        let r = fixture("docker-volumes");
        let vols: Vec<(&str, bool)> = r
            .volumes()
            .map(|m| {
                (
                    m.destination.as_str(),
                    anonymous_name(m.name.as_deref().unwrap()),
                )
            })
            .collect();
        assert_eq!(vols, [("/cache", false), ("/data", true)]);
        assert_eq!(r.memory_limit, Some(64 << 20));
        assert_eq!(r.pids_limit, Some(100));
        assert_eq!(
            (r.restart_policy.as_str(), r.restart_max_retries),
            ("on-failure", 3)
        );
        assert!(r.read_only_root && r.no_new_privileges);
        assert_eq!(r.uid(), Some(1000));
        assert!(r.shares_host("ipc") && r.shares_host("uts"));
        assert_eq!(r.devices[0].container, "/dev/fuse");
        assert!(
            r.effective_set(&all_caps(), &docker_defaults(), r.uid())
                .unwrap()
                .is_empty(),
            "uid 1000 keeps no effective capability"
        );
        let tmp = r.mounts.iter().find(|m| m.destination == "/tmp").unwrap();
        assert_eq!(tmp.kind, MountKind::Tmpfs);
        assert!(
            !tmp.tmpfs_exec(EngineKind::Docker),
            "Docker's --tmpfs is noexec"
        );
        let run = r.mounts.iter().find(|m| m.destination == "/run").unwrap();
        assert!(run.tmpfs_exec(EngineKind::Docker), "--tmpfs /run:exec");
        assert!(r.labels.contains_key("devcontainer.local_folder"));
    }

    #[test]
    fn docker_privileged_and_gvisor_records() {
        let r = fixture("docker-privileged");
        assert!(r.privileged);
        assert_eq!(r.seccomp, "unconfined");
        assert!(!r.running);
        assert_eq!(r.namespaces["net"], "host");
        assert_eq!(r.bounding_set(&all_caps(), &[]).len(), 41);
        let g = fixture("docker-gvisor");
        assert_eq!(g.runtime, "runsc");
        assert!(!g.mounts[0].rw);
    }

    #[test]
    fn podman_records() {
        let r = fixture("podman-clean-ro");
        assert_eq!(r.engine, EngineKind::Podman);
        assert!(r.read_only_root);
        assert_eq!(r.effective_caps, Some(vec![]));
        assert!(r.bounding_set(&all_caps(), &[]).is_empty());
        assert_eq!(r.runtime, "runc");
        let tmp = r.mounts.iter().find(|m| m.destination == "/tmp").unwrap();
        assert!(
            tmp.tmpfs_exec(EngineKind::Podman),
            "podman's --read-only /tmp allows exec"
        );
        let b = fixture("podman-b");
        assert!(b
            .effective_caps
            .as_ref()
            .unwrap()
            .contains(&"CAP_SYS_ADMIN".to_string()));
        assert!(b.shares_host("pid"));
        assert_eq!(b.mounts[0].destination, "/run/podman/podman.sock");
        let v = fixture("podman-volumes");
        assert_eq!(v.effective_caps, Some(vec![]), "uid 1000: none effective");
        assert_eq!(v.bounding_caps.as_ref().unwrap().len(), 14);
        assert!(v.image_digest.as_deref().unwrap().starts_with("sha256:"));
        assert_eq!(v.volumes().count(), 2);
        let rl = fixture("podman-rootless-clean-ro");
        assert_eq!(rl.uid(), Some(1000));
        assert_eq!(rl.bounding_caps, Some(vec![]));
    }

    #[test]
    fn bad_records_are_errors_not_panics() {
        // Not an array, an element without an id, an id that is not hex.
        for bad in ["{}", "[{}]", r#"[{"Id": "zz"}]"#, "not json", "[1]"] {
            assert!(parse_records(bad.as_bytes()).is_err(), "{bad}");
        }
        let r = parse_records(br#"[{"Id": "ab12", "HostConfig": null, "Mounts": [{"Type": 3}]}]"#)
            .unwrap();
        assert_eq!(r[0].mounts[0].kind, MountKind::Other);
    }

    #[test]
    fn capability_names_normalize() {
        assert_eq!(normalize_cap("sys_admin"), "CAP_SYS_ADMIN");
        assert_eq!(normalize_cap("CAP_NET_RAW"), "CAP_NET_RAW");
        assert_eq!(normalize_cap("all"), "ALL");
    }
}
