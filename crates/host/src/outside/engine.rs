//! The container engine, reached through its CLI (`docker`, `podman`) so
//! contexts, DOCKER_HOST, CONTAINER_HOST, CONTAINERS_CONF and rootless
//! sockets work as the user configured them; Docker's records and execs go
//! to the Engine API on the Unix socket the CLI names, when it names one
//! (outside/engine_api.rs says why and when). Every CLI call goes through the
//! bounded runner (util/command.rs) with the caller's environment, a
//! deadline and capped output: an engine CLI that hangs or floods costs its
//! deadline, never the host's memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::engine_api::{self, Api};
use super::record::{self, EngineKind, Record};
use selfprobe::util::command::{self, Captured, Env, Spec, Streams, ToolStatus};
use selfprobe::util::sanitize;

/// What an engine CLI call may print: records of a few hundred containers.
pub const CLI_STDOUT_CAP: usize = 16 << 20;
pub const CLI_STDERR_CAP: usize = 64 << 10;

/// The engine, as `info` described it.
#[derive(Debug, Clone, Serialize)]
pub struct Engine {
    pub name: EngineKind,
    pub cli: PathBuf,
    pub version: String,
    pub rootless: bool,
    /// Docker's Engine API on the Unix socket the CLI talks to: records and
    /// execs go there (shown as its endpoint); None: everything through
    /// the CLI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// Docker's daemon remaps users into a user namespace (`userns-remap`).
    #[serde(skip)]
    pub userns_remap: bool,
    /// The engine applies seccomp by default.
    #[serde(skip)]
    pub seccomp: bool,
    /// The default capability set of a container.
    #[serde(skip)]
    pub default_caps: Vec<String>,
    /// Docker's runtimes: name to (path, arguments).
    #[serde(skip)]
    pub runtimes: BTreeMap<String, (String, Vec<String>)>,
}

/// Why the engine cannot be used: exit 3, with what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError(pub String);

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The first executable `name` on PATH.
pub fn find_cli(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A line or two of what a CLI said on stderr, safe to show.
pub fn said(c: &Captured) -> String {
    let text = String::from_utf8_lossy(&c.stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    sanitize::short(&sanitize::escape(&lines.join(" / ")), 400)
}

/// How a CLI call failed, in words: its deadline, its exit and what it said.
pub fn failure(what: &str, c: &Captured) -> String {
    match c.status {
        ToolStatus::Timeout => format!(
            "`{what}` did not answer within its deadline and was killed ({})",
            c.reason.as_deref().unwrap_or("timeout")
        ),
        ToolStatus::Error => format!(
            "`{what}` could not be started: {}",
            c.reason.as_deref().unwrap_or("?")
        ),
        _ if c.overflow.is_some() => format!(
            "`{what}`: {}",
            c.reason.as_deref().unwrap_or("too much output")
        ),
        _ => {
            let msg = said(c);
            let code = c
                .exit_code
                .map_or("a signal".to_string(), |n| format!("exit {n}"));
            if msg.is_empty() {
                format!("`{what}` failed ({code})")
            } else {
                format!("`{what}` failed ({code}): {msg}")
            }
        }
    }
}

impl Engine {
    /// An engine known only by its kind, with Docker's defaults (seccomp
    /// on, Docker's default capabilities), asked nothing: for reading
    /// records and reports without a CLI (the fuzz targets).
    pub fn offline(kind: EngineKind) -> Engine {
        Engine {
            name: kind,
            cli: PathBuf::from(kind.as_str()),
            version: String::new(),
            rootless: false,
            api: None,
            userns_remap: false,
            seccomp: true,
            default_caps: super::record::DOCKER_DEFAULT_CAPS
                .iter()
                .map(|c| c.to_string())
                .collect(),
            runtimes: BTreeMap::new(),
        }
    }

    /// Finds the CLI of `kind` (default: docker, else podman) and asks the
    /// engine about itself: an engine that does not answer is an error here,
    /// before any container is touched.
    pub fn connect(kind: Option<EngineKind>, deadline: Instant) -> Result<Engine, EngineError> {
        let (kind, cli) = match kind {
            Some(k) => match find_cli(k.as_str()) {
                Some(p) => (k, p),
                None => {
                    return Err(EngineError(format!(
                        "the {k} CLI is not on PATH: install it ({}) or pass --engine {}",
                        match k {
                            EngineKind::Docker => "apt-get install docker.io",
                            EngineKind::Podman => "apt-get install podman",
                        },
                        match k {
                            EngineKind::Docker => "podman",
                            EngineKind::Podman => "docker",
                        },
                        k = k.as_str()
                    )))
                }
            },
            None => match (find_cli("docker"), find_cli("podman")) {
                (Some(p), _) => (EngineKind::Docker, p),
                (None, Some(p)) => (EngineKind::Podman, p),
                (None, None) => {
                    return Err(EngineError(
                        "neither the docker nor the podman CLI is on PATH: install one, or put it on PATH, and pass --engine docker|podman".into(),
                    ))
                }
            },
        };
        let mut e = Engine {
            name: kind,
            cli,
            version: String::new(),
            rootless: false,
            api: None,
            userns_remap: false,
            seccomp: true,
            default_caps: record::DOCKER_DEFAULT_CAPS
                .iter()
                .map(|c| c.to_string())
                .collect(),
            runtimes: BTreeMap::new(),
        };
        let (args, what): (&[&str], &str) = match kind {
            EngineKind::Docker => (&["info", "--format", "{{json .}}"], "docker info"),
            EngineKind::Podman => (&["info", "--format", "json"], "podman info"),
        };
        let c = e.cli_run(args, None, deadline);
        if c.status != ToolStatus::Ok {
            return Err(EngineError(format!(
                "the {} engine does not answer: {}",
                kind.as_str(),
                failure(what, &c)
            )));
        }
        let info: Value = serde_json::from_slice(&c.stdout).map_err(|err| {
            EngineError(format!(
                "`{what}` printed no JSON ({err}): is this {}?",
                e.cli.display()
            ))
        })?;
        e.read_info(&info);
        if kind == EngineKind::Docker {
            e.api = e.locate_api(deadline);
        }
        Ok(e)
    }

    /// The Engine API of the CLI's current endpoint, when that is a Unix
    /// socket that answers: `docker context inspect` resolves DOCKER_HOST,
    /// DOCKER_CONTEXT and the configuration as the CLI does.
    fn locate_api(&self, deadline: Instant) -> Option<Api> {
        let c = self.cli_run(
            &[
                "context",
                "inspect",
                "--format",
                "{{json .Endpoints.docker.Host}}",
            ],
            None,
            deadline,
        );
        if c.status != ToolStatus::Ok {
            return None;
        }
        let host: String = serde_json::from_slice(c.stdout.trim_ascii()).ok()?;
        Api::at(&engine_api::unix_endpoint(&host)?, deadline)
    }

    fn read_info(&mut self, info: &Value) {
        let s = |p: &str| {
            info.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match self.name {
            EngineKind::Docker => {
                self.version = s("/ServerVersion");
                let opts = record::strings(info, "/SecurityOptions");
                let named = |n: &str| {
                    opts.iter()
                        .any(|o| o.split(',').any(|kv| kv == format!("name={n}")))
                };
                self.rootless = named("rootless");
                self.userns_remap = named("userns");
                self.seccomp = named("seccomp");
                if let Some(rt) = info.get("Runtimes").and_then(Value::as_object) {
                    for (name, r) in rt {
                        let path = r
                            .get("path")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        let args = record::strings(r, "/runtimeArgs");
                        self.runtimes.insert(name.clone(), (path, args));
                    }
                }
            }
            EngineKind::Podman => {
                self.version = s("/version/Version");
                self.rootless = info
                    .pointer("/host/security/rootless")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                self.seccomp = info
                    .pointer("/host/security/seccompEnabled")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                let caps = s("/host/security/capabilities");
                if !caps.is_empty() {
                    self.default_caps = caps
                        .split(',')
                        .map(record::normalize_cap)
                        .filter(|c| c != "CAP_")
                        .collect();
                }
            }
        }
    }

    /// Runs the CLI with `args`: the caller's environment, stdin from
    /// `stdin` (or /dev/null), both streams capped.
    pub fn cli_run(&self, args: &[&str], stdin: Option<&[u8]>, deadline: Instant) -> Captured {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        self.run_capped(&args, stdin, deadline, CLI_STDOUT_CAP, CLI_STDERR_CAP)
    }

    pub fn run_capped(
        &self,
        args: &[String],
        stdin: Option<&[u8]>,
        deadline: Instant,
        stdout_cap: usize,
        stderr_cap: usize,
    ) -> Captured {
        command::run(&Spec {
            exe: &self.cli,
            args,
            env: Env::Inherit,
            cwd: None,
            stdin,
            streams: Streams::Separate {
                stdout_cap,
                stderr_cap,
            },
            deadline,
        })
    }

    pub fn cli_name(&self) -> &'static str {
        self.name.as_str()
    }

    /// The records of `refs` (names or ids). A ref the engine does not know
    /// is in the second list with the reason.
    pub fn inspect(&self, refs: &[String], deadline: Instant) -> Result<Lookup, EngineError> {
        if refs.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        if let Some(api) = &self.api {
            let (json, missing) = api
                .records(refs, deadline)
                .map_err(|e| EngineError(e.to_string()))?;
            let records = record::parse_records(&json)
                .map_err(|e| EngineError(format!("{}: {e}", api.endpoint())))?;
            let missing = missing
                .into_iter()
                .map(|(r, said)| {
                    let why = if said.to_ascii_lowercase().contains("no such container") {
                        format!("the {} engine has no such container", self.cli_name())
                    } else {
                        format!("no such container ({}: {said})", api.endpoint())
                    };
                    (r, why)
                })
                .collect();
            return Ok((records, missing));
        }
        let mut args: Vec<String> = vec!["container".into(), "inspect".into(), "--".into()];
        args.extend(refs.iter().cloned());
        let c = self.run_capped(&args, None, deadline, CLI_STDOUT_CAP, CLI_STDERR_CAP);
        let what = format!("{} container inspect", self.cli_name());
        if matches!(c.status, ToolStatus::Timeout | ToolStatus::Error) || c.overflow.is_some() {
            return Err(EngineError(failure(&what, &c)));
        }
        // Found records are printed even when some ref is unknown (exit 1).
        let records = if c.stdout.iter().all(u8::is_ascii_whitespace) {
            Vec::new()
        } else {
            record::parse_records(&c.stdout).map_err(|e| EngineError(format!("{what}: {e}")))?
        };
        let mut missing = Vec::new();
        for r in refs {
            if !records.iter().any(|rec| matches_ref(rec, r)) {
                let why = if c.status == ToolStatus::Ok {
                    format!("the {} engine has no such container", self.cli_name())
                } else {
                    format!("no such container (`{what}`: {})", said(&c))
                };
                missing.push((r.clone(), why));
            }
        }
        Ok((records, missing))
    }

    /// The ids of the running containers, optionally filtered
    /// (`label=K=V`, passed to `ps --filter`).
    pub fn running(
        &self,
        filter: Option<&str>,
        deadline: Instant,
    ) -> Result<Vec<String>, EngineError> {
        let mut args: Vec<String> = vec!["ps".into(), "-q".into(), "--no-trunc".into()];
        if let Some(f) = filter {
            args.push("--filter".into());
            args.push(f.to_string());
        }
        let c = self.run_capped(&args, None, deadline, CLI_STDOUT_CAP, CLI_STDERR_CAP);
        if c.status != ToolStatus::Ok {
            return Err(EngineError(failure(&format!("{} ps", self.cli_name()), &c)));
        }
        Ok(String::from_utf8_lossy(&c.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_string)
            .collect())
    }

    /// The images' RepoDigests, by image id.
    pub fn image_digests(
        &self,
        ids: &[String],
        deadline: Instant,
    ) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        if ids.is_empty() {
            return out;
        }
        let mut args: Vec<String> = vec!["image".into(), "inspect".into(), "--".into()];
        args.extend(ids.iter().cloned());
        let c = self.run_capped(&args, None, deadline, CLI_STDOUT_CAP, CLI_STDERR_CAP);
        let Ok(Value::Array(images)) = serde_json::from_slice::<Value>(&c.stdout) else {
            return out;
        };
        for img in images {
            let id = img.get("Id").and_then(Value::as_str).unwrap_or("");
            let digests = record::strings(&img, "/RepoDigests");
            // Docker's ids are "sha256:…", podman's bare hex; key by both.
            let bare = id.trim_start_matches("sha256:").to_string();
            out.insert(format!("sha256:{bare}"), digests.clone());
            out.insert(bare, digests);
        }
        out
    }

    /// A volume: Ok(None) when the engine has no such volume.
    pub fn volume(&self, name: &str, deadline: Instant) -> Result<Option<Volume>, EngineError> {
        let args: Vec<String> = vec!["volume".into(), "inspect".into(), "--".into(), name.into()];
        let c = self.run_capped(&args, None, deadline, 1 << 20, CLI_STDERR_CAP);
        let what = format!("{} volume inspect", self.cli_name());
        if matches!(c.status, ToolStatus::Timeout | ToolStatus::Error) || c.overflow.is_some() {
            return Err(EngineError(failure(&what, &c)));
        }
        if c.status != ToolStatus::Ok {
            let msg = said(&c).to_ascii_lowercase();
            if msg.contains("no such volume") {
                return Ok(None);
            }
            return Err(EngineError(failure(&what, &c)));
        }
        let v: Value = serde_json::from_slice(&c.stdout)
            .map_err(|e| EngineError(format!("{what}: not JSON ({e})")))?;
        let Some(v) = v.as_array().and_then(|a| a.first()) else {
            return Ok(None);
        };
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Ok(Some(Volume {
            name: s("Name"),
            mountpoint: s("Mountpoint"),
            driver: s("Driver"),
            anonymous: v
                .get("Anonymous")
                .and_then(Value::as_bool)
                .unwrap_or_else(|| record::anonymous_name(&s("Name"))),
        }))
    }

    /// Whether a container still exists (any state): Ok(None) when it does
    /// not, else its status.
    pub fn container_state(
        &self,
        id: &str,
        deadline: Instant,
    ) -> Result<Option<String>, EngineError> {
        let (records, missing) = self.inspect(&[id.to_string()], deadline)?;
        if !missing.is_empty() {
            return Ok(None);
        }
        Ok(records.into_iter().next().map(|r| r.status))
    }

    /// `cp HOST CTR:PATH`.
    pub fn copy_in(&self, host: &Path, ctr: &str, path: &str, deadline: Instant) -> Captured {
        let args: Vec<String> = vec![
            "cp".into(),
            host.to_string_lossy().into_owned(),
            format!("{ctr}:{path}"),
        ];
        self.run_capped(&args, None, deadline, 64 << 10, CLI_STDERR_CAP)
    }

    /// `exec [-i] [-u USER] CTR ARGV…`, stdin fed when given.
    pub fn exec(
        &self,
        ctr: &str,
        user: Option<&str>,
        argv: &[String],
        stdin: Option<&[u8]>,
        deadline: Instant,
        (stdout_cap, stderr_cap): (usize, usize),
    ) -> Captured {
        if let Some(api) = &self.api {
            return api.exec(ctr, user, argv, stdin, deadline, (stdout_cap, stderr_cap));
        }
        let mut args: Vec<String> = vec!["exec".into()];
        if stdin.is_some() {
            args.push("-i".into());
        }
        if let Some(u) = user {
            args.push("-u".into());
            args.push(u.into());
        }
        args.push(ctr.into());
        args.extend(argv.iter().cloned());
        self.run_capped(&args, stdin, deadline, stdout_cap, stderr_cap)
    }

    /// The runtime's kind from its recorded name: runc and crun are
    /// `runc/crun`, runsc is gVisor, kata is Kata; a Docker runtime of
    /// another name is told by its path.
    pub fn runtime_kind(&self, runtime: &str) -> &'static str {
        let path = self
            .runtimes
            .get(runtime)
            .map(|(p, _)| p.as_str())
            .unwrap_or(runtime);
        let base = Path::new(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = if base.is_empty() { runtime } else { &base };
        if name.contains("runsc") || runtime.contains("runsc") {
            "runsc"
        } else if name.contains("kata") || runtime.contains("kata") {
            "kata"
        } else if name.contains("runc")
            || name.contains("crun")
            || runtime == "oci"
            || runtime.is_empty()
        {
            "runc/crun"
        } else {
            "unknown"
        }
    }

    /// What podman's record leaves out, from the runtime configuration
    /// podman wrote for the running container (its OCIConfigPath, the
    /// engine's own file): podman 4.3 records IpcMode "shareable" for
    /// `--ipc host` as for a namespace of the container's own, and rootless
    /// podman records no `--device` at all (it binds the device node in).
    /// Measured here: the records of `--ipc host` and of the default differ
    /// only in CreateCommand; the configuration has no IPC namespace for the
    /// first and a bind of /dev/fuse for `--device /dev/fuse` rootless. The
    /// record's IPC mode becomes "host" and those binds its devices; nothing
    /// else is taken from it.
    pub fn settle(&self, rec: &mut Record) {
        if rec.engine != EngineKind::Podman || !rec.running {
            return;
        }
        let Some(spec) = rec.oci_config.as_deref().and_then(read_oci_spec) else {
            return;
        };
        if spec
            .linux
            .namespaces
            .as_ref()
            .is_some_and(|ns| !ns.iter().any(|n| n.kind == "ipc"))
        {
            rec.namespaces.insert("ipc", "host".into());
        }
        for m in spec.mounts {
            let bound = m.kind == "bind"
                && m.source.starts_with("/dev/")
                && m.destination.starts_with("/dev/")
                && m.destination != "/dev/shm";
            let known = rec.devices.iter().any(|d| d.container == m.destination)
                || rec.mounts.iter().any(|r| r.destination == m.destination);
            if bound && !known {
                rec.devices.push(record::RecordDevice {
                    host: m.source,
                    container: m.destination,
                    permissions: String::new(),
                });
            }
        }
    }

    /// Capabilities a runtime takes away from what the engine grants:
    /// runsc removes CAP_NET_RAW unless started with --net-raw (measured
    /// here: a default container under runsc has every Docker default but
    /// CAP_NET_RAW).
    pub fn runtime_removes(&self, runtime: &str) -> Vec<&'static str> {
        if self.runtime_kind(runtime) != "runsc" {
            return Vec::new();
        }
        let raw = self.runtimes.get(runtime).is_some_and(|(_, args)| {
            args.iter()
                .any(|a| a == "--net-raw" || a == "--net-raw=true")
        });
        if raw {
            Vec::new()
        } else {
            vec!["CAP_NET_RAW"]
        }
    }

    /// Whether a runtime loads the OCI seccomp profile into what the
    /// workspace runs: runsc does only with --oci-seccomp (its Sentry has
    /// its own filter on the host, which the workspace cannot see).
    pub fn runtime_applies_seccomp(&self, runtime: &str) -> bool {
        if self.runtime_kind(runtime) != "runsc" {
            return true;
        }
        self.runtimes.get(runtime).is_some_and(|(_, args)| {
            args.iter()
                .any(|a| a == "--oci-seccomp" || a == "--oci-seccomp=true")
        })
    }
}

/// The part of an OCI runtime configuration `Engine::settle` reads.
#[derive(Debug, Default, Deserialize)]
struct OciSpec {
    #[serde(default)]
    mounts: Vec<OciMount>,
    #[serde(default)]
    linux: OciLinux,
}

#[derive(Debug, Default, Deserialize)]
struct OciLinux {
    /// None: the configuration says nothing of namespaces.
    #[serde(default)]
    namespaces: Option<Vec<OciNamespace>>,
}

#[derive(Debug, Deserialize)]
struct OciNamespace {
    #[serde(rename = "type", default)]
    kind: String,
}

#[derive(Debug, Deserialize)]
struct OciMount {
    #[serde(default)]
    destination: String,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    source: String,
}

/// An engine's runtime configuration file: a regular file of at most
/// 8 MiB, opened without following a symlink or blocking on a FIFO.
fn read_oci_spec(path: &str) -> Option<OciSpec> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(8 << 20).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The records `inspect` found, and each ref it did not find with why.
pub type Lookup = (Vec<Record>, Vec<(String, String)>);

/// A volume as `volume inspect` describes it.
#[derive(Debug, Clone, Serialize)]
pub struct Volume {
    pub name: String,
    pub mountpoint: String,
    pub driver: String,
    pub anonymous: bool,
}

/// Whether `r` (a name, an id or an id prefix as a user types it) names
/// this record.
pub fn matches_ref(rec: &Record, r: &str) -> bool {
    let r = r.trim_start_matches('/');
    rec.name == r || rec.id == r || (r.len() >= 4 && rec.id.starts_with(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!(
            "{}/../../tests/data/engine-records/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn engine(kind: EngineKind) -> Engine {
        Engine {
            name: kind,
            cli: PathBuf::from("/nonexistent"),
            version: String::new(),
            rootless: false,
            api: None,
            userns_remap: false,
            seccomp: false,
            default_caps: vec![],
            runtimes: BTreeMap::new(),
        }
    }

    #[test]
    fn docker_info_runtimes_and_security() {
        let mut e = engine(EngineKind::Docker);
        e.read_info(&fixture("docker-info"));
        assert!(e.version.starts_with("20.10"));
        assert!(e.seccomp && !e.rootless && !e.userns_remap);
        assert_eq!(e.runtime_kind("runsc"), "runsc");
        assert_eq!(e.runtime_kind("runc"), "runc/crun");
        assert_eq!(e.runtime_kind("io.containerd.runc.v2"), "runc/crun");
        assert!(
            !e.runtime_applies_seccomp("runsc"),
            "runsc here has no --oci-seccomp"
        );
        assert!(e.runtime_applies_seccomp("runc"));
        assert_eq!(
            e.default_caps.len(),
            0,
            "Docker's defaults are not in its info"
        );
    }

    #[test]
    fn podman_info_rootless_and_defaults() {
        let mut e = engine(EngineKind::Podman);
        e.read_info(&fixture("podman-info"));
        assert_eq!(e.version, "4.3.1");
        assert!(!e.rootless);
        assert_eq!(e.default_caps.len(), 14);
        assert!(e.default_caps.contains(&"CAP_NET_RAW".to_string()));
        let mut r = engine(EngineKind::Podman);
        r.read_info(&fixture("podman-rootless-info"));
        assert!(r.rootless);
        assert_eq!(r.runtime_kind("runc"), "runc/crun");
        assert_eq!(r.runtime_kind("crun"), "runc/crun");
    }

    #[test]
    fn podman_settles_ipc_and_rootless_devices_from_its_runtime_config() {
        let dir = std::env::temp_dir().join(format!("selfprobe-oci-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("config.json");
        // As podman 4.3 wrote it for rootless `--ipc host --device /dev/fuse`.
        std::fs::write(
            &cfg,
            r#"{"mounts": [{"destination": "/dev/fuse", "type": "bind", "source": "/dev/fuse"},
                {"destination": "/dev/shm", "type": "bind", "source": "/x/userdata/shm"},
                {"destination": "/proc", "type": "proc", "source": "proc"}],
               "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "uts"}, {"type": "mount"}]}}"#,
        )
        .unwrap();
        let mut rec = record::fixture("podman-volumes");
        rec.running = true;
        rec.oci_config = Some(cfg.display().to_string());
        rec.devices.clear();
        assert!(!rec.shares_host("ipc"));
        let e = engine(EngineKind::Podman);
        e.settle(&mut rec);
        assert!(rec.shares_host("ipc"));
        let devs: Vec<&str> = rec.devices.iter().map(|d| d.container.as_str()).collect();
        assert_eq!(devs, ["/dev/fuse"]);
        // With its own IPC namespace listed, nothing changes; a Docker
        // record is never touched.
        std::fs::write(&cfg, r#"{"linux": {"namespaces": [{"type": "ipc"}]}}"#).unwrap();
        let mut rec = record::fixture("podman-volumes");
        rec.running = true;
        rec.oci_config = Some(cfg.display().to_string());
        rec.devices.clear();
        e.settle(&mut rec);
        assert!(!rec.shares_host("ipc") && rec.devices.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refs_match_names_ids_and_prefixes() {
        let recs = record::parse_records(
            &std::fs::read(format!(
                "{}/../../tests/data/engine-records/docker-clean.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
        )
        .unwrap();
        let r = &recs[0];
        assert!(matches_ref(r, "selfprobe-capture-clean"));
        assert!(matches_ref(r, "/selfprobe-capture-clean"));
        assert!(matches_ref(r, &r.id[..12]));
        assert!(!matches_ref(r, &r.id[..2]));
        assert!(!matches_ref(r, "selfprobe-capture"));
    }
}
