//! The declarative catalogs under probes/, embedded at build time. Each is
//! parsed and validated by a test, so parsing at run time cannot fail.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::finding::Severity;

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
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelInterface {
    pub path: String,
    pub severity: Severity,
    pub why: String,
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

/// Never descended into by the workspace and artifact walks: dependency trees, VCS data, caches (reported by the
/// cache probe) and browser internals (leveldb keeps *.log files).
pub const PRUNE: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".cache",
    ".npm",
    ".cargo",
    ".rustup",
    ".m2",
    ".gradle",
    "site-packages",
    ".mozilla",
    "google-chrome",
    "chromium",
    "BraveSoftware",
    "microsoft-edge",
    "leveldb",
    "IndexedDB",
    "Local Storage",
    "Session Storage",
];

pub const CAPABILITIES_TOML: &str = include_str!("../probes/capabilities.toml");
pub const DEVICES_TOML: &str = include_str!("../probes/devices.toml");
pub const KERNEL_INTERFACES_TOML: &str = include_str!("../probes/kernel-interfaces.toml");
pub const SOCKETS_TOML: &str = include_str!("../probes/sockets.toml");

/// Parses an embedded catalog (probes/*.toml, compiled in and checked by the
/// tests). Through a `toml::Table` and a JSON value rather than straight
/// into `T`: serde's TOML deserializer is instantiated once per target type,
/// about 7 KiB each, and the catalogs' types made that 0.2 MB of the binary;
/// the JSON one, already linked for reports, costs far less per type. The
/// user's policy file still goes straight through TOML, for its line numbers.
pub fn parse_embedded<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> T {
    let table = text
        .parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("embedded catalog {name} is invalid: {e}"));
    serde_json::to_value(table)
        .and_then(serde_json::from_value)
        .unwrap_or_else(|e| panic!("embedded catalog {name} is invalid: {e}"))
}

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
}
