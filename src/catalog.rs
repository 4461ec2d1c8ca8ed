//! The declarative catalogs under probes/, embedded at build time. Each is
//! parsed and validated by a test, so parsing at run time cannot fail.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::finding::Severity;
use crate::util::glob::PathEnds;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    pub number: u32,
    pub name: String,
    /// "none" for the engines' defaults, otherwise a severity.
    pub severity: String,
    pub why: String,
}

impl Capability {
    pub fn reported_severity(&self) -> Option<Severity> {
        self.severity.parse().ok()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub pattern: String,
    pub severity: Severity,
    pub why: String,
    /// The devices probe does not open it read-only to confirm access:
    /// an open alone does something there (a watchdog arms).
    #[serde(default)]
    pub no_open: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelInterface {
    pub path: String,
    pub severity: Severity,
    pub why: String,
    /// What the kernel asks of a writer beyond the file's permissions:
    /// "cap-sys-admin-initial-userns" (release_agent).
    #[serde(default)]
    pub needs: Option<String>,
    /// The filesystem that serves the interface: without it mounted the
    /// path is an empty directory of the parent filesystem, no interface.
    #[serde(default)]
    pub filesystem: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSocket {
    pub path: String,
    pub engine: String,
    pub api: SocketApi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SocketApi {
    Http,
    Grpc,
}

/// A coding agent's own directories and files under a home
/// (probes/agents.toml): credential-bearing when bound from the host, and
/// searched for the known key formats.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    pub name: String,
    #[serde(default)]
    pub dirs: Vec<String>,
    #[serde(default)]
    pub files: Vec<String>,
    pub source: String,
}

/// A program that runs others or writes where root reads
/// (probes/sudo-commands.toml): a sudo rule allowing it is a way to root.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SudoProgram {
    pub names: Vec<String>,
    pub kind: String,
    pub escape: Escape,
    pub why: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Escape {
    /// Whatever the rule's arguments: from inside the program.
    Always,
    /// By choosing the arguments.
    Arguments,
}

#[derive(Debug, Deserialize)]
struct SudoPrograms {
    program: Vec<SudoProgram>,
}

#[derive(Debug, Deserialize)]
struct Agents {
    agent: Vec<Agent>,
}

#[derive(Debug, Deserialize)]
struct Capabilities {
    capability: Vec<Capability>,
}
#[derive(Debug, Deserialize)]
struct Devices {
    device: Vec<Device>,
}
#[derive(Debug, Deserialize)]
struct KernelInterfaces {
    interface: Vec<KernelInterface>,
}
#[derive(Debug, Deserialize)]
struct Sockets {
    socket: Vec<EngineSocket>,
}

// Read without serde (util/embedded.rs); the tests read them both ways.
crate::embedded_struct!(Capability { get [number, name, severity, why] });
crate::embedded_struct!(Device { get [pattern, severity, why] or_default [no_open] });
crate::embedded_struct!(KernelInterface { get [path, severity, why] opt [needs, filesystem] });
crate::embedded_struct!(EngineSocket { get [path, engine, api] });
crate::embedded_enum!(SocketApi { "http" => Http, "grpc" => Grpc });
crate::embedded_struct!(Capabilities { get [capability] });
crate::embedded_struct!(Devices { get [device] });
crate::embedded_struct!(KernelInterfaces { get [interface] });
crate::embedded_struct!(Sockets { get [socket] });
crate::embedded_struct!(Agent { get [name, source] or_default [dirs, files] });
crate::embedded_struct!(Agents { get [agent] });
crate::embedded_struct!(SudoProgram { get [names, kind, escape, why] });
crate::embedded_enum!(Escape { "always" => Always, "arguments" => Arguments });
crate::embedded_struct!(SudoPrograms { get [program] });

#[cfg(test)]
#[test]
fn catalogs_read_as_serde_read_them() {
    crate::util::embedded::tests::same::<Capabilities>("capabilities.toml", CAPABILITIES_TOML);
    crate::util::embedded::tests::same::<Devices>("devices.toml", DEVICES_TOML);
    crate::util::embedded::tests::same::<KernelInterfaces>(
        "kernel-interfaces.toml",
        KERNEL_INTERFACES_TOML,
    );
    crate::util::embedded::tests::same::<Sockets>("sockets.toml", SOCKETS_TOML);
    crate::util::embedded::tests::same::<Agents>("agents.toml", AGENTS_TOML);
    crate::util::embedded::tests::same::<SudoPrograms>("sudo-commands.toml", SUDO_COMMANDS_TOML);
}

/// The walks that take the prune list: the credential search
/// (src/probe/secrets/files.rs), the workspace walk (src/probe/repro/mod.rs),
/// the socket search (src/probe/sockets.rs) and the artifact walk
/// (src/probe/artifacts.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    Credentials,
    Workspace,
    Sockets,
    Artifacts,
}

/// The one prune list: directories no walk descends into. Each is a name,
/// or the end of a path (".cargo/registry"), `*` matching within one
/// component, as probes/credentials.toml [[file]] paths are matched
/// (util::glob::PathEnds). What they hold is no credential, manifest,
/// socket or artifact of this workspace, and often most of its entries.
pub const PRUNE: &[&str] = &[
    // Version control data (the credential search still reads .git/config).
    ".git",
    ".hg",
    ".svn",
    // Dependencies and package stores.
    "node_modules",
    "bower_components",
    "vendor",
    "site-packages",
    ".venv",
    "venv",
    ".pnpm-store",
    ".yarn/cache",
    ".local/share/pnpm",
    ".local/share/virtualenvs",
    ".local/lib",
    ".local/pipx",
    ".m2",
    ".gradle",
    ".ivy2",
    ".sbt",
    ".nuget",
    // Not all of ~/.cargo: credentials.toml sits beside these.
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    "go/pkg",
    // Build output and tool caches (the cache probe reports caches).
    "target",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".next",
    ".terraform",
    ".cache",
    ".npm",
    // Browser and mail profiles (the browser probe reports those), and the
    // stores of Chromium-based apps: leveldb keeps *.log files that are
    // nobody's logs.
    ".mozilla",
    ".thunderbird",
    "google-chrome",
    "chromium",
    "BraveSoftware",
    "microsoft-edge",
    "leveldb",
    "IndexedDB",
    "Local Storage",
    "Session Storage",
    // Editors' remote servers, container storage, the trash, snaps and
    // what fsck found.
    ".vscode-server",
    ".cursor-server",
    ".local/share/containers",
    // The engines' storage of other containers: their image layers, root
    // filesystems and volumes are other workspaces' data (reported as
    // mount.container-rootfs where they are mounted), and hundreds of
    // thousands of entries no search should spend its budget on. Seen
    // where a sandbox shows the machine's own root.
    "var/lib/docker",
    "var/lib/containers",
    "var/lib/containerd",
    "var/lib/lxc",
    "var/lib/lxd",
    "var/lib/incus",
    "var/lib/machines",
    ".local/share/docker",
    ".local/share/Trash",
    "snap",
    "lost+found",
];

/// The entries of PRUNE a walk descends into all the same, and why:
/// - the credential search enters `site-packages` and `vendor`: they are
///   package trees (probes/package-trees.toml), and the keys and
///   certificates shipped in them are reported once per tree, as
///   secret.package-data, rather than not at all;
/// - the artifact walk enters `.vscode-server` and `.cursor-server`: the
///   editor servers write their logs there (data/logs), artifacts of a
///   persistent home like any other.
pub const PRUNE_ENTERED: &[(Walk, &str)] = &[
    (Walk::Credentials, "site-packages"),
    (Walk::Credentials, "vendor"),
    (Walk::Artifacts, ".vscode-server"),
    (Walk::Artifacts, ".cursor-server"),
];

/// Whether `path` (a directory, as a walk would meet it) is one the prune
/// list names: a walk's root there is not walked at all. For a mount's
/// source on the host (its root), where only the directory itself says
/// what it is (a volume's `_data` lies below `var/lib/docker` and is a
/// volume all the same).
pub fn pruned_path(walk: Walk, path: &std::path::Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = path
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    prune(walk)
        .first(&name, &parent, &mut || crate::util::glob::comps(path))
        .is_some()
}

/// Whether a mount point inside the workspace's view is a pruned directory
/// or lies below one: a walk from above would never have reached it, so a
/// walk rooted there would spend its budget where none should (podman's
/// `/var/lib/containers/storage/overlay`, mounted while its containers
/// run, is below `var/lib/containers`).
pub fn pruned_or_below(walk: Walk, path: &std::path::Path) -> bool {
    path.ancestors().any(|p| pruned_path(walk, p))
}

/// PRUNE less what `walk` enters (PRUNE_ENTERED).
pub fn prune_list(walk: Walk) -> impl Iterator<Item = &'static str> {
    PRUNE
        .iter()
        .copied()
        .filter(move |p| !PRUNE_ENTERED.contains(&(walk, *p)))
}

/// `prune_list(walk)`, compiled once.
pub fn prune(walk: Walk) -> &'static PathEnds {
    static C: OnceLock<[PathEnds; 4]> = OnceLock::new();
    let all = C.get_or_init(|| {
        [
            Walk::Credentials,
            Walk::Workspace,
            Walk::Sockets,
            Walk::Artifacts,
        ]
        .map(|w| PathEnds::of(prune_list(w)))
    });
    &all[walk as usize]
}

pub const CAPABILITIES_TOML: &str = include_str!("../probes/capabilities.toml");
pub const DEVICES_TOML: &str = include_str!("../probes/devices.toml");
pub const KERNEL_INTERFACES_TOML: &str = include_str!("../probes/kernel-interfaces.toml");
pub const SOCKETS_TOML: &str = include_str!("../probes/sockets.toml");
pub const AGENTS_TOML: &str = include_str!("../probes/agents.toml");
pub const SUDO_COMMANDS_TOML: &str = include_str!("../probes/sudo-commands.toml");

/// Parses an embedded catalog (probes/*.toml, compiled in and checked by
/// the tests): util/embedded.rs.
pub use crate::util::embedded::parse as parse_embedded;

pub fn capabilities() -> &'static [Capability] {
    static C: OnceLock<Vec<Capability>> = OnceLock::new();
    C.get_or_init(|| {
        parse_embedded::<Capabilities>("capabilities.toml", CAPABILITIES_TOML).capability
    })
}

pub fn devices() -> &'static [Device] {
    static C: OnceLock<Vec<Device>> = OnceLock::new();
    C.get_or_init(|| parse_embedded::<Devices>("devices.toml", DEVICES_TOML).device)
}

pub fn kernel_interfaces() -> &'static [KernelInterface] {
    static C: OnceLock<Vec<KernelInterface>> = OnceLock::new();
    C.get_or_init(|| {
        parse_embedded::<KernelInterfaces>("kernel-interfaces.toml", KERNEL_INTERFACES_TOML)
            .interface
    })
}

pub fn engine_sockets() -> &'static [EngineSocket] {
    static C: OnceLock<Vec<EngineSocket>> = OnceLock::new();
    C.get_or_init(|| parse_embedded::<Sockets>("sockets.toml", SOCKETS_TOML).socket)
}

pub fn agents() -> &'static [Agent] {
    static C: OnceLock<Vec<Agent>> = OnceLock::new();
    C.get_or_init(|| parse_embedded::<Agents>("agents.toml", AGENTS_TOML).agent)
}

pub fn sudo_programs() -> &'static [SudoProgram] {
    static C: OnceLock<Vec<SudoProgram>> = OnceLock::new();
    C.get_or_init(|| {
        parse_embedded::<SudoPrograms>("sudo-commands.toml", SUDO_COMMANDS_TOML).program
    })
}

/// The catalog entry of a program, by its file name (`vim`, `python3.11`).
pub fn sudo_program(name: &str) -> Option<&'static SudoProgram> {
    sudo_programs().iter().find(|p| {
        p.names
            .iter()
            .any(|n| crate::util::glob::matches_component(n, name))
    })
}

/// The agent whose directory or file `rel` (a path relative to a home,
/// without a leading slash) is or lies in, with the catalog path it
/// matched.
pub fn agent_of_home_path(rel: &str) -> Option<(&'static Agent, &'static str)> {
    let rel = rel.trim_matches('/');
    agents().iter().find_map(|a| {
        a.dirs
            .iter()
            .find(|d| rel == d.as_str() || rel.starts_with(&format!("{d}/")))
            .or_else(|| a.files.iter().find(|f| rel == f.as_str()))
            .map(|p| (a, p.as_str()))
    })
}

/// The agent whose directory or file a mount point is by its own name:
/// `/home/node/.codex`, `/.openhands`, `/root/.claude.json`, or a path
/// that ends the way a longer catalog path does (`.local/share/opencode`).
pub fn agent_of_mount_point(mp: &str) -> Option<(&'static Agent, &'static str)> {
    let mp = mp.trim_end_matches('/');
    agents().iter().find_map(|a| {
        a.dirs
            .iter()
            .chain(a.files.iter())
            .find(|p| mp.ends_with(&format!("/{p}")))
            .map(|p| (a, p.as_str()))
    })
}

/// The catalog name of capability `n`, or `cap_N` for one this build does not
/// know (a newer kernel's cap_last_cap).
pub fn capability_name(n: u32) -> String {
    capabilities()
        .iter()
        .find(|c| c.number == n)
        .map(|c| c.name.clone())
        .unwrap_or_else(|| format!("cap_{n}"))
}

/// The names of the capabilities set in `mask`, up to bit `last`.
pub fn capability_names(mask: u64, last: u32) -> Vec<String> {
    (0..=last.min(63))
        .filter(|n| mask & (1u64 << n) != 0)
        .map(capability_name)
        .collect()
}

/// Accepts `CAP_SYS_ADMIN`, `SYS_ADMIN` or `sys_admin`.
pub fn capability_by_name(name: &str) -> Option<&'static Capability> {
    let up = name.trim().to_ascii_uppercase();
    let full = if up.starts_with("CAP_") {
        up
    } else {
        format!("CAP_{up}")
    };
    capabilities().iter().find(|c| c.name == full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_and_sudo_programs_catalogs() {
        let a = agents();
        for want in [
            "Claude Code",
            "Codex CLI",
            "Gemini CLI",
            "OpenHands",
            "Cursor",
            "aider",
            "Continue",
            "GitHub Copilot",
        ] {
            assert!(a.iter().any(|x| x.name == want), "{want} missing");
        }
        for x in a {
            assert!(x.source.len() > 40, "{}: a source", x.name);
            assert!(!x.dirs.is_empty() || !x.files.is_empty(), "{}", x.name);
            for p in x.dirs.iter().chain(&x.files) {
                assert!(p.starts_with('.') && !p.ends_with('/'), "{p}");
                assert!(!p.contains('*'), "{p}: plain paths");
            }
        }
        assert_eq!(
            agent_of_home_path(".codex/auth.json").unwrap().0.name,
            "Codex CLI"
        );
        assert_eq!(
            agent_of_home_path(".claude.json").unwrap().0.name,
            "Claude Code"
        );
        assert!(agent_of_home_path(".claudefoo").is_none());
        assert!(agent_of_home_path("src/.codex").is_none());
        assert_eq!(
            agent_of_mount_point("/.openhands").unwrap().0.name,
            "OpenHands"
        );
        assert_eq!(
            agent_of_mount_point("/home/x/.local/share/opencode")
                .unwrap()
                .0
                .name,
            "opencode"
        );
        assert!(agent_of_mount_point("/data/opencode").is_none());
        for (name, kind) in [
            ("bash", "shell"),
            ("python3.11", "interpreter"),
            ("vim.basic", "editor"),
            ("less", "pager"),
            ("apt-get", "package"),
            ("tee", "writer"),
            ("find", "runner"),
        ] {
            assert_eq!(
                sudo_program(name).map(|p| p.kind.as_str()),
                Some(kind),
                "{name}"
            );
        }
        assert!(sudo_program("init-firewall.sh").is_none());
        let mut seen = std::collections::HashSet::new();
        for p in sudo_programs() {
            assert!(
                [
                    "shell",
                    "interpreter",
                    "editor",
                    "pager",
                    "runner",
                    "writer",
                    "package"
                ]
                .contains(&p.kind.as_str()),
                "{}",
                p.kind
            );
            for n in &p.names {
                assert!(seen.insert(n.clone()), "{n} is listed twice");
            }
        }
    }

    #[test]
    fn capabilities_catalog_is_complete_and_ordered() {
        let caps = capabilities();
        for (i, c) in caps.iter().enumerate() {
            assert_eq!(
                c.number as usize, i,
                "capabilities.toml must list 0..N in order"
            );
            assert!(c.name.starts_with("CAP_"), "{}", c.name);
            assert!(
                c.severity == "none" || c.reported_severity().is_some(),
                "{}: {}",
                c.name,
                c.severity
            );
            assert!(!c.why.is_empty());
        }
        assert!(
            caps.len() >= 41,
            "CAP_CHECKPOINT_RESTORE (40) is in Linux 5.9+"
        );
        assert_eq!(capability_by_name("sys_admin").unwrap().number, 21);
        assert_eq!(capability_name(63), "cap_63");
    }

    #[test]
    fn device_kernel_and_socket_catalogs_parse() {
        assert!(devices()
            .iter()
            .any(|d| d.pattern == "mem" && d.severity == Severity::Critical));
        for d in devices() {
            assert!(
                !d.pattern.starts_with('/'),
                "device patterns are relative to /dev"
            );
        }
        for k in kernel_interfaces() {
            assert!(k.path.starts_with('/'), "{}", k.path);
        }
        assert!(kernel_interfaces()
            .iter()
            .any(|k| k.path.ends_with("core_pattern")));
        let socks = engine_sockets();
        assert!(socks
            .iter()
            .any(|s| s.path == "/var/run/docker.sock" && s.api == SocketApi::Http));
        for s in socks {
            assert!(
                s.path.starts_with('/') && s.path.ends_with(".sock"),
                "{}",
                s.path
            );
        }
    }

    #[test]
    fn globs() {
        assert!(crate::util::glob::matches_path(
            "/run/user/*/docker.sock",
            "/run/user/1000/docker.sock"
        ));
        assert!(!crate::util::glob::matches_path(
            "/run/user/*/docker.sock",
            "/run/user/1000/x/docker.sock"
        ));
        assert!(crate::util::glob::matches_path("sg*", "sg0"));
        assert!(crate::util::glob::matches_path("cpu/*/msr", "cpu/0/msr"));
        assert!(!crate::util::glob::matches_path("mem", "memory"));
        assert!(crate::util::glob::matches_path("a*b*c", "aXXbYYc"));
    }

    #[test]
    fn one_prune_list_with_reasoned_exceptions() {
        let mut seen = std::collections::BTreeSet::new();
        for p in PRUNE {
            assert!(seen.insert(*p), "{p} is listed twice");
            assert!(!p.starts_with('/') && !p.ends_with('/'), "{p}");
        }
        for (_, p) in PRUNE_ENTERED {
            assert!(PRUNE.contains(p), "{p} is entered but not pruned");
        }
        let prunes = |w: Walk, path: &str| pruned_or_below(w, std::path::Path::new(path));
        let all = [
            Walk::Credentials,
            Walk::Workspace,
            Walk::Sockets,
            Walk::Artifacts,
        ];
        for w in all {
            for p in [
                "/w/.git",
                "/w/a/node_modules",
                "/h/.cargo/registry",
                "/h/.local/share/containers",
                "/var/lib/docker",
                "/host/var/lib/containers",
                // Below a pruned directory: podman's storage, mounted while
                // its containers run, and a mount inside node_modules.
                "/var/lib/containers/storage/overlay",
                "/w/a/node_modules/pkg",
            ] {
                assert!(prunes(w, p), "{w:?} must prune {p}");
            }
            // ~/.cargo holds credentials.toml; a "share/containers" elsewhere is no podman store.
            for p in ["/h/.cargo", "/w/src", "/x/share/containers", "/w/registry"] {
                assert!(!prunes(w, p), "{w:?} must enter {p}");
            }
        }
        for p in [
            "/h/.pyenv/versions/3.11.2/lib/python3.11/site-packages",
            "/w/vendor",
        ] {
            assert!(!prunes(Walk::Credentials, p), "{p}");
            assert!(prunes(Walk::Workspace, p), "{p}");
        }
        assert!(!prunes(Walk::Artifacts, "/h/.vscode-server"));
        assert!(prunes(Walk::Credentials, "/h/.vscode-server"));
        assert_eq!(prune_list(Walk::Sockets).count(), PRUNE.len());
    }
}
