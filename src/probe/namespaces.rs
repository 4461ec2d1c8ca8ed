//! Phase 2: does the workspace share the host's namespaces? The namespace
//! inode is compared with the kernel's fixed initial-namespace numbers, and
//! corroborated by what only the host's namespaces show.

use crate::finding::Code;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::boundary::{Boundary, Kind};
use crate::facts::unchecked::Unchecked;
use crate::finding::Finding;
use crate::host::Host;

/// The kernel's fixed initial-namespace inodes live with the boundary
/// fact, which decides from them whether a container exists at all.
pub use crate::facts::boundary::INIT_INODES;

/// Interfaces that exist only in a host's (or a node's) network namespace.
const HOST_INTERFACE_PREFIXES: &[&str] = &[
    "docker0",
    "podman",
    "cni",
    "virbr",
    "br-",
    "veth",
    "flannel",
    "cali",
    "weave",
    "kube-",
    "lxcbr",
    "lxdbr",
    "vxlan.calico",
    "cilium_",
];

#[derive(Debug, Clone, Default, Serialize)]
pub struct NsFacts {
    pub inodes: BTreeMap<String, u64>,
    pub unreadable: BTreeMap<String, String>,
    /// Namespace links the kernel does not have (ENOENT): gVisor's Sentry
    /// implements only some, old kernels lack time and cgroup.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
    /// Some(true) when /proc/2 is kthreadd: only the initial PID namespace
    /// sees kernel threads.
    pub kthreadd_visible: Option<bool>,
    pub pid1_comm: Option<String>,
    pub interfaces: Vec<String>,
}

pub fn parse_ns_link(link: &str) -> Option<u64> {
    let start = link.find('[')? + 1;
    let end = link[start..].find(']')? + start;
    link[start..end].parse().ok()
}

pub fn parse_net_dev(text: &str) -> Vec<String> {
    text.lines()
        .skip(2)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, _)| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

pub fn collect(host: &Host) -> Result<NsFacts, Unchecked> {
    let mut f = NsFacts::default();
    for (name, _) in INIT_INODES {
        match host.read_link(format!("/proc/self/ns/{name}")) {
            Ok(l) => match parse_ns_link(&l.to_string_lossy()) {
                Some(ino) => {
                    f.inodes.insert(name.to_string(), ino);
                }
                None => {
                    f.unreadable.insert(
                        name.to_string(),
                        format!("unexpected link '{}'", l.display()),
                    );
                }
            },
            Err(e) => {
                if e.kind() == std::io::ErrorKind::NotFound {
                    f.absent.push(name.to_string());
                }
                f.unreadable.insert(name.to_string(), e.to_string());
            }
        }
    }
    if f.inodes.is_empty() && !host.path("/proc/self").exists() {
        return Err(Unchecked::Missing(
            "no /proc/self: namespaces cannot be read",
        ));
    }
    f.kthreadd_visible = match host.read("/proc/2/status") {
        Ok(s) => Some(
            s.lines()
                .next()
                .is_some_and(|l| l.trim_start_matches("Name:").trim() == "kthreadd"),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    };
    f.pid1_comm = host.read("/proc/1/comm").ok().map(|s| s.trim().to_string());
    if let Ok(t) = host.read("/proc/net/dev") {
        f.interfaces = parse_net_dev(&t);
    }
    Ok(f)
}

fn init_inode(name: &str) -> u64 {
    INIT_INODES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, i)| *i)
        .unwrap_or(0)
}

/// Whose namespaces the initial ones are, for the messages: on a host
/// they are the machine's own (boundary.none says so), in a VM-isolated
/// container the VM's, where sharing reaches the VM and not the host.
fn owner(b: &Boundary) -> (&'static str, &'static str) {
    match b.kind {
        Kind::Host => ("this process runs in", "the machine's own"),
        Kind::VmContainer => ("the workspace shares", "the VM's (not the host's)"),
        _ => ("the workspace shares", "the host's"),
    }
}

pub fn evaluate(f: &NsFacts, b: &Boundary) -> Vec<Finding> {
    let mut out = Vec::new();
    let is_init = |name: &str| f.inodes.get(name).map(|i| *i == init_inode(name));
    let (verb, whose) = owner(b);
    // A VM-isolated container's initial namespaces are those of a VM that
    // holds only this pod: one step lower than the host's.
    let evidence = |fnd: Finding, name: &str| {
        let sev = fnd.severity;
        fnd.with("namespace", name.to_string())
            .with("inode", f.inodes.get(name).copied())
            .with("initial_inode", init_inode(name))
            .with("boundary", b.noun())
            .severity(if b.is_vm() { sev.lowered() } else { sev })
    };

    let kthreadd = f.kthreadd_visible == Some(true);
    if is_init("pid") == Some(true) || kthreadd {
        let visible = match b.kind {
            Kind::Host => "every process of the machine is visible",
            Kind::VmContainer => "the VM's processes are visible",
            _ => "host processes are visible",
        };
        out.push(
            evidence(
                Finding::new(
                    Code::NsHostPid,
                    "pid",
                    format!("{verb} {whose} PID namespace: {visible}"),
                ),
                "pid",
            )
            .with("kthreadd_visible", f.kthreadd_visible)
            .with("pid1_comm", f.pid1_comm.clone()),
        );
    }

    let host_ifaces: Vec<&String> = f
        .interfaces
        .iter()
        .filter(|i| HOST_INTERFACE_PREFIXES.iter().any(|p| i.starts_with(p)))
        .collect();
    if is_init("net") == Some(true) || !host_ifaces.is_empty() {
        out.push(
            evidence(
                Finding::new(
                    Code::NsHostNetwork,
                    "net",
                    format!("{verb} {whose} network namespace"),
                ),
                "net",
            )
            .with("interfaces", f.interfaces.clone())
            .with(
                "host_interfaces",
                host_ifaces
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>(),
            ),
        );
    }

    for (name, code, what) in [
        ("ipc", Code::NsHostIpc, "IPC"),
        ("uts", Code::NsHostUts, "UTS (hostname)"),
        ("cgroup", Code::NsHostCgroup, "cgroup"),
    ] {
        if is_init(name) == Some(true) {
            out.push(evidence(
                Finding::new(code, name, format!("{verb} {whose} {what} namespace")),
                name,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_interfaces() {
        assert_eq!(parse_ns_link("pid:[4026531836]"), Some(4026531836));
        assert_eq!(parse_ns_link("pid:[x]"), None);
        assert_eq!(parse_ns_link("garbage"), None);
        let dev = "Inter-|   Receive\n face |bytes\n    lo: 0 0\n  eth0: 1 2\n";
        assert_eq!(parse_net_dev(dev), vec!["lo", "eth0"]);
    }

    #[test]
    fn private_namespaces_raise_nothing() {
        let mut f = NsFacts::default();
        for (n, _) in INIT_INODES {
            f.inodes.insert(n.to_string(), 4026532200);
        }
        f.interfaces = vec!["lo".into(), "eth0".into()];
        f.kthreadd_visible = Some(false);
        assert!(evaluate(&f, &Boundary::default()).is_empty());
    }

    #[test]
    fn host_pid_by_inode_or_kthreadd() {
        let mut f = NsFacts::default();
        f.inodes.insert("pid".into(), 0xEFFF_FFFC);
        assert_eq!(evaluate(&f, &Boundary::default())[0].code, "ns.host-pid");
        let f = NsFacts {
            kthreadd_visible: Some(true),
            ..NsFacts::default()
        };
        assert_eq!(evaluate(&f, &Boundary::default())[0].code, "ns.host-pid");
    }

    #[test]
    fn host_network_by_bridge_interface() {
        let mut f = NsFacts::default();
        f.inodes.insert("net".into(), 4026532008);
        f.interfaces = vec!["lo".into(), "docker0".into(), "veth12ab".into()];
        let fs = evaluate(&f, &Boundary::default());
        assert_eq!(fs.len(), 1);
        assert_eq!(fs[0].code, "ns.host-network");
    }
}
