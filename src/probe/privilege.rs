//! Phase 2, the process's own privilege: capability sets, seccomp,
//! no_new_privs, the LSM label and the user namespace mapping.

use crate::finding::Code;
use std::collections::BTreeMap;
use std::io;

use crate::util::text::Text;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::catalog;
use crate::facts::boundary::Boundary;
use crate::facts::unchecked::Unchecked;
use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::policy::Policy;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CapSets {
    pub inheritable: u64,
    pub permitted: u64,
    pub effective: u64,
    pub bounding: u64,
    pub ambient: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PrivFacts {
    /// real, effective, saved, filesystem
    pub uid: Vec<u32>,
    pub gid: Vec<u32>,
    pub caps: CapSets,
    pub cap_last_cap: Option<u32>,
    /// Capabilities are named up to this bit: cap_last_cap, else the
    /// highest bit of the bounding set (see `last_cap`).
    pub caps_named_to: u32,
    pub caps_named_to_source: Text,
    pub no_new_privs: Option<bool>,
    pub seccomp: Option<u8>,
    pub seccomp_filters: Option<u32>,
    /// The LSM label, or None when the kernel has no LSM that labels processes.
    pub lsm_label: Option<String>,
    pub uid_map: Vec<(u64, u64, u64)>,
    /// Parts that could not be read: (what, why).
    pub incomplete: Vec<(String, String)>,
}

pub fn parse_status(text: &str) -> BTreeMap<&str, &str> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect()
}

pub fn parse_id_map(text: &str) -> Result<Vec<(u64, u64, u64)>, Unchecked> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .map(|x| x.parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|_| {
                    Unchecked::Malformed(format!(
                        "uid_map line '{}' is not three numbers",
                        l.trim()
                    ))
                })?;
            match v[..] {
                [a, b, c] => Ok((a, b, c)),
                _ => Err(Unchecked::Malformed(format!(
                    "uid_map line '{}' is not three numbers",
                    l.trim()
                ))),
            }
        })
        .collect()
}

/// The identity, capability sets and seccomp state of a status file (proc(5)):
/// the part of the facts that /proc/self/status alone decides.
pub fn from_status(status: &str) -> Result<PrivFacts, Unchecked> {
    let s = parse_status(status);
    let mut f = PrivFacts::default();
    let ids = |k: &str| -> Vec<u32> {
        s.get(k)
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    f.uid = ids("Uid");
    f.gid = ids("Gid");
    if f.uid.len() < 2 {
        return Err(Unchecked::Malformed(
            "/proc/self/status has no Uid line".into(),
        ));
    }
    let cap = |k: &str| s.get(k).and_then(|v| u64::from_str_radix(v, 16).ok());
    match (cap("CapInh"), cap("CapPrm"), cap("CapEff"), cap("CapBnd")) {
        (Some(i), Some(p), Some(e), Some(b)) => {
            f.caps = CapSets {
                inheritable: i,
                permitted: p,
                effective: e,
                bounding: b,
                ambient: cap("CapAmb").unwrap_or(0),
            }
        }
        _ => {
            return Err(Unchecked::Malformed(
                "/proc/self/status has no capability sets".into(),
            ))
        }
    }
    f.no_new_privs = s.get("NoNewPrivs").map(|v| *v == "1");
    f.seccomp = s.get("Seccomp").and_then(|v| v.parse().ok());
    f.seccomp_filters = s.get("Seccomp_filters").and_then(|v| v.parse().ok());
    Ok(f)
}

pub fn collect(host: &Host) -> Result<PrivFacts, Unchecked> {
    let status = host
        .read("/proc/self/status")
        .map_err(|e| Unchecked::unreadable("/proc/self/status", e))?;
    let mut f = from_status(&status)?;
    // Without it (gVisor has none) the bounding set stands in: no set can
    // hold a capability above its highest bit, so nothing is lost, and a
    // capability the kernel does not know is never named.
    f.cap_last_cap = host
        .read("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|t| t.trim().parse().ok());
    f.caps_named_to = f.last_cap();
    f.caps_named_to_source = f.last_cap_source().into();
    match host.read("/proc/self/uid_map") {
        Ok(t) => match parse_id_map(&t) {
            Ok(m) => f.uid_map = m,
            Err(e) => f.incomplete.push(("uid_map".into(), e.to_string())),
        },
        Err(e) => f.incomplete.push(("uid_map".into(), e.to_string())),
    }
    match read_lsm(host) {
        Ok(l) => f.lsm_label = l,
        Err(e) => f.incomplete.push(("lsm".into(), e.to_string())),
    }
    Ok(f)
}

fn read_lsm(host: &Host) -> Result<Option<String>, Unchecked> {
    // The AppArmor-specific file exists where several LSMs stack; the
    // generic one answers EINVAL when no LSM labels processes.
    for p in [
        "/proc/self/attr/apparmor/current",
        "/proc/self/attr/current",
    ] {
        match host.read(p) {
            Ok(t) => {
                let t = t
                    .trim_matches(|c: char| c == '\0' || c.is_whitespace())
                    .to_string();
                return Ok((!t.is_empty()).then_some(t));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => return Ok(None),
            Err(e) => return Err(Unchecked::unreadable(p, e)),
        }
    }
    if host.path("/proc/self").is_dir() {
        Ok(None)
    } else {
        Err(Unchecked::Missing("no /proc/self/attr"))
    }
}

/// The highest bit set in `mask`, if any.
fn highest_bit(mask: u64) -> Option<u32> {
    (mask != 0).then(|| 63 - mask.leading_zeros())
}

impl PrivFacts {
    /// The last capability the kernel knows: cap_last_cap, else the highest
    /// bit of the bounding set (else of any set).
    pub fn last_cap(&self) -> u32 {
        let c = &self.caps;
        self.cap_last_cap
            .or_else(|| highest_bit(c.bounding))
            .or_else(|| highest_bit(c.effective | c.permitted | c.inheritable | c.ambient))
            .unwrap_or(0)
            .min(63)
    }

    fn last_cap_source(&self) -> &'static str {
        if self.cap_last_cap.is_some() {
            "/proc/sys/kernel/cap_last_cap"
        } else {
            "the highest bit of the bounding set (no /proc/sys/kernel/cap_last_cap)"
        }
    }

    pub fn is_root(&self) -> bool {
        self.uid.get(1) == Some(&0)
    }

    /// uid 0 inside mapped to uid 0 outside: no user namespace protects the host.
    pub fn root_maps_to_host_root(&self) -> bool {
        self.uid_map
            .iter()
            .any(|(inside, outside, len)| *inside == 0 && *outside == 0 && *len > 0)
    }

    pub fn has_effective(&self, cap: u32) -> bool {
        self.caps.effective & (1u64 << cap) != 0
    }

    pub fn inventory(&self) -> Value {
        let last = self.last_cap();
        json!({
            "uid": self.uid, "gid": self.gid,
            "cap_last_cap": self.cap_last_cap,
            "caps_named_to": last,
            "caps_named_to_source": self.last_cap_source(),
            "capabilities": {
                "effective": catalog::capability_names(self.caps.effective, last),
                "permitted": catalog::capability_names(self.caps.permitted, last),
                "inheritable": catalog::capability_names(self.caps.inheritable, last),
                "bounding": catalog::capability_names(self.caps.bounding, last),
                "ambient": catalog::capability_names(self.caps.ambient, last),
                "hex": {
                    "effective": format!("{:016x}", self.caps.effective),
                    "permitted": format!("{:016x}", self.caps.permitted),
                    "inheritable": format!("{:016x}", self.caps.inheritable),
                    "bounding": format!("{:016x}", self.caps.bounding),
                    "ambient": format!("{:016x}", self.caps.ambient),
                }
            },
            "no_new_privs": self.no_new_privs,
            "seccomp": self.seccomp.map(seccomp_mode),
            "seccomp_filters": self.seccomp_filters,
            "lsm_label": self.lsm_label,
            "uid_map": self.uid_map.iter().map(|(a, b, c)| format!("{a} {b} {c}")).collect::<Vec<_>>(),
        })
    }
}

fn seccomp_mode(m: u8) -> &'static str {
    match m {
        0 => "disabled",
        1 => "strict",
        2 => "filter",
        _ => "unknown",
    }
}

/// Facts from other probes that, together with the process's own
/// privilege, tell `--privileged` apart from a single added capability.
#[derive(Debug, Clone, Default)]
pub struct PrivilegedSignals {
    pub sysfs_writable: bool,
    pub writable_kernel_interfaces: Vec<String>,
    pub host_block_devices: Vec<String>,
}

const CAP_SYS_ADMIN: u32 = 21;

fn lsm_unconfined(label: &str) -> bool {
    let l = label.to_ascii_lowercase();
    l == "unconfined"
        || l.starts_with("unconfined ")
        || l.contains(":unconfined_t")
        || l.contains(":spc_t")
        || l.contains(":kernel_t")
        || l.contains(":initrc_t")
}

/// What a capability acts on, given the boundary: less than the host in a
/// user namespace or behind a kernel of its own, which ranks it one step
/// lower.
fn cap_scope(b: &Boundary) -> (&'static str, bool) {
    if b.is_sandbox() {
        (
            "it acts on gVisor's Sentry (a kernel in user space), not on the host kernel",
            true,
        )
    } else if b.is_vm() {
        ("it acts on the VM's own kernel, not on the host's", true)
    } else if b.in_user_namespace() {
        (
            "in a user namespace: it acts only on what that namespace owns (its mounts, network and the files mapped to it), not on the host",
            true,
        )
    } else if b.is_host() {
        ("on the machine's own kernel", false)
    } else {
        ("on the host kernel", false)
    }
}

/// The title of a priv.capability finding for a capability that is only
/// in the bounding set: what the text report's headline says of it.
pub const BOUNDING_ONLY_TITLE: &str =
    "A dangerous capability can be gained (in the bounding set: not held now)";

pub fn evaluate(
    p: &PrivFacts,
    policy: &Policy,
    sig: &PrivilegedSignals,
    b: &Boundary,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let last = p.last_cap();
    let (scope, scoped_lower) = cap_scope(b);

    // Capabilities: held now (effective, permitted, ambient) at the catalog's
    // severity; only in the bounding set, one step lower, and only while
    // no_new_privs is unset, since a setuid or file-capability binary is
    // then the way to raise them.
    let held = p.caps.effective | p.caps.permitted | p.caps.ambient;
    for n in 0..=last.min(63) {
        let bit = 1u64 << n;
        let in_held = held & bit != 0;
        let in_bounding = p.caps.bounding & bit != 0;
        let raisable = in_bounding && p.no_new_privs != Some(true);
        if !(in_held || raisable) {
            continue;
        }
        if policy.allow_capabilities.contains(&n) {
            continue;
        }
        let name = catalog::capability_name(n);
        let (sev, why) = match catalog::capabilities().iter().find(|c| c.number == n) {
            Some(c) => match c.reported_severity() {
                Some(s) => (s, c.why.clone()),
                None => continue,
            },
            None => (
                Severity::Medium,
                "a capability this build does not know".to_string(),
            ),
        };
        let mut sets = Vec::new();
        for (set, mask) in [
            ("effective", p.caps.effective),
            ("permitted", p.caps.permitted),
            ("ambient", p.caps.ambient),
            ("inheritable", p.caps.inheritable),
            ("bounding", p.caps.bounding),
        ] {
            if mask & bit != 0 {
                sets.push(set);
            }
        }
        let (sev, how) = if in_held {
            (sev, "held by this process".to_string())
        } else {
            (
                sev.lowered(),
                "in the bounding set: a setuid or file-capability binary can raise it (no_new_privs is not set)".to_string(),
            )
        };
        let sev = if scoped_lower { sev.lowered() } else { sev };
        let mut f = Finding::new(
            Code::PrivCapability,
            &name,
            format!("{name}: {why}; {how}; {scope}"),
        );
        if !in_held {
            // The code's title says "held"; this one can only be gained.
            f.title = BOUNDING_ONLY_TITLE.into();
        }
        out.push(
            f.severity(sev)
                .with("capability", name.clone())
                .with("number", n)
                .with("sets", sets)
                .with("why", why)
                .with("acts_on", scope),
        );
    }

    // Behind a kernel of its own the calls reach that kernel, which is
    // itself confined on the host (gVisor's Sentry runs under its own
    // seccomp filter; a VM's kernel behind the hypervisor): low there.
    let seccomp_sev = |f: Finding| {
        if b.own_kernel() {
            f.severity(Severity::Low)
        } else {
            f
        }
    };
    match p.seccomp {
        Some(0) => out.push(seccomp_sev(
            Finding::new(
                Code::PrivSeccompDisabled,
                "seccomp",
                format!("seccomp is disabled: every system call reaches {}", b.kernel()),
            )
            .with("seccomp", "disabled")
            .with("reaches", b.kernel()),
        )),
        None => out.push(seccomp_sev(
            Finding::new(
                Code::PrivSeccompDisabled,
                "seccomp",
                format!(
                    "/proc/self/status has no Seccomp line: the kernel has no seccomp, and every system call reaches {}",
                    b.kernel()
                ),
            )
            .with("seccomp", Value::Null)
            .with("reaches", b.kernel()),
        )),
        Some(_) => {}
    }

    if p.no_new_privs != Some(true) {
        out.push(
            Finding::new(
                Code::PrivNoNewPrivsUnset,
                "no_new_privs",
                "no_new_privs is not set: setuid and file-capability binaries can raise privilege",
            )
            .with("no_new_privs", p.no_new_privs),
        );
    }

    let lsm_missing = !p.incomplete.iter().any(|(w, _)| w == "lsm");
    match &p.lsm_label {
        None if lsm_missing => out.push(
            Finding::new(
                Code::PrivNoLsm,
                "lsm",
                "no AppArmor or SELinux label confines this process",
            )
            .with("lsm_label", Value::Null),
        ),
        Some(l) if lsm_unconfined(l) => out.push(
            Finding::new(
                Code::PrivNoLsm,
                "lsm",
                format!("the LSM label '{l}' does not confine this process"),
            )
            .with("lsm_label", l.clone()),
        ),
        _ => {}
    }

    let uid_map: Vec<String> = p
        .uid_map
        .iter()
        .map(|(a, b, c)| format!("{a} {b} {c}"))
        .collect();
    if p.is_root() && p.root_maps_to_host_root() && !b.in_user_namespace() {
        if b.own_kernel() {
            out.push(
                Finding::new(
                    Code::PrivRootInSandbox,
                    "uid 0",
                    format!(
                        "running as uid 0 with uid 0 mapped to uid 0 in a {}: root here is root of {}; reaching the host takes an escape from it first",
                        b.noun(),
                        b.kernel()
                    ),
                )
                .with("uid", p.uid.clone())
                .with("uid_map", uid_map)
                .with("boundary", b.noun()),
            );
        } else {
            let msg = if b.is_host() {
                "running as uid 0 in the machine's initial user namespace: this is root of the machine itself"
            } else {
                "running as uid 0 with uid 0 mapped to host uid 0: root here is root on the host"
            };
            out.push(
                Finding::new(Code::PrivRootWithoutUserns, "uid 0", msg)
                    .with("uid", p.uid.clone())
                    .with("uid_map", uid_map),
            );
        }
    }

    let host_surface = sig.sysfs_writable
        || !sig.writable_kernel_interfaces.is_empty()
        || !sig.host_block_devices.is_empty();
    // On a host there is no container to run privileged: boundary.none
    // and each signal's own finding (capabilities, kernel interfaces,
    // block devices) say it, and "privileged" would claim a container that
    // does not exist.
    if p.has_effective(CAP_SYS_ADMIN) && p.seccomp == Some(0) && host_surface && !b.is_host() {
        let (msg, lower) = if b.own_kernel() || b.in_user_namespace() {
            (
                format!(
                    "the {} runs privileged: CAP_SYS_ADMIN, no seccomp, and kernel or device surfaces writable; {scope}",
                    b.noun()
                ),
                true,
            )
        } else {
            (
                "the workspace runs privileged: CAP_SYS_ADMIN, no seccomp, and host kernel or device surfaces writable".to_string(),
                false,
            )
        };
        let f = Finding::new(Code::PrivPrivileged, "container", msg);
        let sev = f.severity;
        out.push(
            f.severity(if lower { sev.lowered() } else { sev })
                .with(
                    "effective_capabilities",
                    catalog::capability_names(p.caps.effective, last).len(),
                )
                .with("seccomp", "disabled")
                .with("sysfs_writable", sig.sysfs_writable)
                .with(
                    "writable_kernel_interfaces",
                    sig.writable_kernel_interfaces.clone(),
                )
                .with("host_block_devices", sig.host_block_devices.clone()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::boundary::Kind;

    const PLAIN: &str = "Name:\tcat\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapPrm:\t00000000a80425fb\nCapEff:\t00000000a80425fb\nCapBnd:\t00000000a80425fb\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t2\nSeccomp_filters:\t1\n";

    fn facts(status: &str) -> PrivFacts {
        let s = parse_status(status);
        let cap = |k: &str| u64::from_str_radix(s[k], 16).unwrap();
        PrivFacts {
            uid: s["Uid"]
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect(),
            caps: CapSets {
                inheritable: cap("CapInh"),
                permitted: cap("CapPrm"),
                effective: cap("CapEff"),
                bounding: cap("CapBnd"),
                ambient: cap("CapAmb"),
            },
            cap_last_cap: Some(40),
            no_new_privs: Some(s["NoNewPrivs"] == "1"),
            seccomp: s["Seccomp"].parse().ok(),
            uid_map: vec![(0, 0, 4294967295)],
            ..PrivFacts::default()
        }
    }

    fn codes(fs: &[Finding]) -> Vec<(String, String)> {
        fs.iter()
            .map(|f| (f.code.clone(), f.subject.clone()))
            .collect()
    }

    #[test]
    fn podman_defaults_as_root() {
        let fs = evaluate(
            &facts(PLAIN),
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        let c = codes(&fs);
        assert!(c.contains(&("priv.root-without-userns".into(), "uid 0".into())));
        assert!(c.contains(&("priv.capability".into(), "CAP_DAC_OVERRIDE".into())));
        assert!(!c
            .iter()
            .any(|(k, s)| k == "priv.capability" && s == "CAP_SYS_ADMIN"));
        assert!(!c
            .iter()
            .any(|(k, _)| k == "priv.privileged" || k == "priv.seccomp-disabled"));
        assert!(fs
            .iter()
            .filter(|f| f.code == "priv.capability")
            .all(|f| f.severity < Severity::High));
    }

    #[test]
    fn sys_admin_is_critical_and_allow_list_silences() {
        let st = PLAIN.replace("a80425fb", "a82425fb");
        let fs = evaluate(
            &facts(&st),
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        let f = fs
            .iter()
            .find(|f| f.subject == "CAP_SYS_ADMIN")
            .expect("SYS_ADMIN reported");
        assert_eq!(f.severity, Severity::Critical);
        let pol = Policy::parse("p", "[capabilities]\nallow = [\"CAP_SYS_ADMIN\"]\n").unwrap();
        let fs = evaluate(
            &facts(&st),
            &pol,
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        assert!(!fs.iter().any(|f| f.subject == "CAP_SYS_ADMIN"));
    }

    #[test]
    fn bounding_only_is_lowered_and_silenced_by_no_new_privs() {
        let st = PLAIN
            .replace("Uid:\t0\t0\t0\t0", "Uid:\t1000\t1000\t1000\t1000")
            .replace("CapPrm:\t00000000a80425fb", "CapPrm:\t0000000000000000")
            .replace("CapEff:\t00000000a80425fb", "CapEff:\t0000000000000000")
            .replace("CapBnd:\t00000000a80425fb", "CapBnd:\t00000000a82425fb");
        let fs = evaluate(
            &facts(&st),
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        let f = fs.iter().find(|f| f.subject == "CAP_SYS_ADMIN").unwrap();
        assert_eq!(f.severity, Severity::High);
        assert!(!fs.iter().any(|f| f.code == "priv.root-without-userns"));
        let st = st.replace("NoNewPrivs:\t0", "NoNewPrivs:\t1");
        let fs = evaluate(
            &facts(&st),
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        assert!(!fs.iter().any(|f| f.code == "priv.capability"));
        assert!(!fs.iter().any(|f| f.code == "priv.no-new-privs-unset"));
    }

    #[test]
    fn privileged_needs_a_host_surface() {
        let st = PLAIN
            .replace("00000000a80425fb", "000001fffeffffff")
            .replace("Seccomp:\t2", "Seccomp:\t0");
        let fs = evaluate(
            &facts(&st),
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        assert!(!fs.iter().any(|f| f.code == "priv.privileged"));
        assert!(fs.iter().any(|f| f.code == "priv.seccomp-disabled"));
        let sig = PrivilegedSignals {
            sysfs_writable: true,
            ..Default::default()
        };
        let fs = evaluate(&facts(&st), &Policy::default(), &sig, &Boundary::default());
        assert!(fs.iter().any(|f| f.code == "priv.privileged"));
    }

    #[test]
    fn user_namespace_root_is_not_host_root() {
        let mut f = facts(PLAIN);
        f.uid_map = vec![(0, 100000, 65536)];
        let fs = evaluate(
            &f,
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        assert!(!fs.iter().any(|f| f.code == "priv.root-without-userns"));
    }

    fn boundary(kind: Kind, rootless: bool) -> Boundary {
        Boundary {
            kind,
            rootless: Some(rootless),
            ..Boundary::default()
        }
    }

    #[test]
    fn under_gvisor_the_sentry_is_named_and_ranks_lower() {
        // Captured under Debian's runsc: Seccomp 0, uid 0 mapped to 0, no
        // cap_last_cap.
        let st = PLAIN
            .replace("a80425fb", "a80405fb")
            .replace("Seccomp:\t2", "Seccomp:\t0");
        let mut f = facts(&st);
        f.cap_last_cap = None;
        let b = boundary(Kind::Sandbox, false);
        let fs = evaluate(&f, &Policy::default(), &PrivilegedSignals::default(), &b);
        let sc = fs
            .iter()
            .find(|f| f.code == "priv.seccomp-disabled")
            .unwrap();
        assert_eq!(sc.severity, Severity::Low);
        assert!(sc.message.contains("Sentry") && !sc.message.contains("reaches the host kernel"));
        assert!(!fs.iter().any(|f| f.code == "priv.root-without-userns"));
        let root = fs
            .iter()
            .find(|f| f.code == "priv.root-in-sandbox")
            .unwrap();
        assert!(root.message.contains("Sentry"), "{}", root.message);
        let dac = fs.iter().find(|f| f.subject == "CAP_DAC_OVERRIDE").unwrap();
        assert_eq!(dac.severity, Severity::Low, "medium, one step lower");
        assert!(dac.message.contains("Sentry"));
        assert_eq!(
            f.last_cap(),
            31,
            "the bounding set's highest bit: CAP_SETFCAP"
        );
    }

    #[test]
    fn rootless_capabilities_act_on_the_namespace_and_root_is_not_host_root() {
        let mut f = facts(&PLAIN.replace("a80425fb", "a82425fb"));
        f.uid_map = vec![(0, 1000, 1), (1, 100000, 65536)];
        let b = boundary(Kind::Container, true);
        let fs = evaluate(&f, &Policy::default(), &PrivilegedSignals::default(), &b);
        assert!(!fs.iter().any(|f| f.code == "priv.root-without-userns"));
        assert!(!fs.iter().any(|f| f.code == "priv.root-in-sandbox"));
        let sa = fs.iter().find(|f| f.subject == "CAP_SYS_ADMIN").unwrap();
        assert_eq!(sa.severity, Severity::High, "critical, one step lower");
        assert!(sa.message.contains("user namespace"), "{}", sa.message);
    }

    #[test]
    fn on_a_host_nothing_is_called_a_privileged_container() {
        let st = PLAIN
            .replace("00000000a80425fb", "000001ffffffffff")
            .replace("Seccomp:\t2", "Seccomp:\t0");
        let sig = PrivilegedSignals {
            sysfs_writable: true,
            ..Default::default()
        };
        let b = boundary(Kind::Host, false);
        let fs = evaluate(&facts(&st), &Policy::default(), &sig, &b);
        assert!(!fs.iter().any(|f| f.code == "priv.privileged"));
        // Nothing calls the machine a container (the capability catalog's
        // "container escape" names a kind of escape, not this workspace).
        for f in &fs {
            for claim in ["the container", "this container", "container's"] {
                assert!(!f.message.contains(claim), "{}", f.message);
            }
        }
        let root = fs
            .iter()
            .find(|f| f.code == "priv.root-without-userns")
            .unwrap();
        assert!(root.message.contains("root of the machine"));
        let sa = fs.iter().find(|f| f.subject == "CAP_SYS_ADMIN").unwrap();
        assert_eq!(sa.severity, Severity::Critical);
    }

    #[test]
    fn capabilities_are_named_only_up_to_what_the_kernel_knows() {
        // A kernel before CAP_PERFMON (38), CAP_BPF (39) and
        // CAP_CHECKPOINT_RESTORE (40): a full set is 0x3fffffffff.
        let st = PLAIN.replace("00000000a80425fb", "0000003fffffffff");
        let mut f = facts(&st);
        f.cap_last_cap = None;
        assert_eq!(f.last_cap(), 37);
        let fs = evaluate(
            &f,
            &Policy::default(),
            &PrivilegedSignals::default(),
            &Boundary::default(),
        );
        for c in ["CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE"] {
            assert!(!fs.iter().any(|f| f.subject == c), "{c}");
        }
        assert!(
            fs.iter().any(|f| f.subject == "CAP_AUDIT_READ"),
            "bit 37 is named"
        );
        let inv = f.inventory();
        assert_eq!(inv["caps_named_to"], 37);
        assert!(!inv["capabilities"]["bounding"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "CAP_BPF"));
    }

    #[test]
    fn id_maps() {
        assert_eq!(
            parse_id_map("         0          0 4294967295\n").unwrap(),
            vec![(0, 0, 4294967295)]
        );
        assert!(parse_id_map("0 0\n").is_err());
        assert!(parse_id_map("a b c\n").is_err());
    }
}
