//! The machine and kernel under the boundary (`inventory.boundary.platform`):
//! what `selfprobe-host diff` compares on its architecture and kernel axes, the
//! blueprint's "false production parity" (a local container can differ from
//! CI or production in architecture and kernel). Read with the boundary's
//! inputs (src/facts/boundary.rs) from the root path, so a fixture tree
//! answers as a live system does; only the machine name falls back to
//! uname(2), and only on the live system. Pure: `derive` takes the texts.
//!
//! Each field is None when its source could not be read: `diff` then shows
//! the fact as unknown, never as the same.

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

/// AT_PAGESZ in the auxiliary vector (include/uapi/linux/auxvec.h).
const AT_PAGESZ: u64 = 6;
/// The most CPUs a cpulist is expanded to: the kernel's NR_CPUS tops out at
/// 8192, and a hostile fixture must not make a loop of billions.
const MAX_CPUS: u64 = 1 << 16;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Platform {
    /// uname's machine: x86_64, aarch64… (from /proc/sys/kernel/arch, else
    /// uname(2) on the live system).
    pub machine: Option<String>,
    /// The kernel release as the workspace sees it: /proc/sys/kernel/osrelease,
    /// else the release in /proc/version (gVisor has no osrelease and reports
    /// the release it emulates there).
    pub kernel_release: Option<String>,
    /// The page size the kernel gave this process (AT_PAGESZ of /proc/self/auxv).
    pub page_size: Option<u64>,
    /// Online CPUs (/sys/devices/system/cpu/online).
    pub cpus: Option<u64>,
    /// The cgroup hierarchy the workspace sees: v1, v2, hybrid (both), or
    /// none (no cgroup filesystem mounted and no /proc/self/cgroup entries).
    pub cgroup: Option<Text>,
}

/// The raw texts `derive` reads.
#[derive(Debug, Clone, Default)]
pub struct Sources<'a> {
    pub arch: Option<&'a str>,
    pub uname_machine: Option<&'a str>,
    pub osrelease: Option<&'a str>,
    pub version: Option<&'a str>,
    pub auxv: Option<&'a [u8]>,
    pub cpus_online: Option<&'a str>,
    pub mountinfo: Option<&'a str>,
    pub cgroup: Option<&'a str>,
}

pub fn derive(s: &Sources) -> Platform {
    let clean = |t: &str| {
        let t = crate::util::sanitize::short(t.trim(), 64);
        (!t.is_empty()).then_some(t)
    };
    Platform {
        machine: s
            .arch
            .and_then(clean)
            .or_else(|| s.uname_machine.and_then(clean)),
        kernel_release: s
            .osrelease
            .and_then(clean)
            .or_else(|| s.version.and_then(release_of_version)),
        page_size: s.auxv.and_then(page_size),
        cpus: s.cpus_online.and_then(cpu_count),
        cgroup: cgroup_version(s.mountinfo, s.cgroup).map(Text::from),
    }
}

/// "Linux version 6.1.0-18-amd64 (debian-kernel@…) #1 SMP …" → "6.1.0-18-amd64".
fn release_of_version(v: &str) -> Option<String> {
    let rest = v.trim_start().strip_prefix("Linux version ")?;
    let r = rest.split_whitespace().next()?;
    Some(crate::util::sanitize::short(r, 64))
}

/// AT_PAGESZ from a 64-bit little-endian auxiliary vector (pairs of u64,
/// ended by AT_NULL).
fn page_size(auxv: &[u8]) -> Option<u64> {
    auxv.chunks_exact(16).find_map(|pair| {
        let key = u64::from_le_bytes(pair[..8].try_into().ok()?);
        let val = u64::from_le_bytes(pair[8..].try_into().ok()?);
        (key == AT_PAGESZ && val.is_power_of_two()).then_some(val)
    })
}

/// A cpulist ("0-3,8,10-11") counted; None when it does not parse.
fn cpu_count(list: &str) -> Option<u64> {
    let list = list.trim();
    if list.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for part in list.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?),
            None => {
                let a = part.trim().parse::<u64>().ok()?;
                (a, a)
            }
        };
        if b < a {
            return None;
        }
        n = n.checked_add(b - a + 1)?;
        if n > MAX_CPUS {
            return None;
        }
    }
    Some(n)
}

/// The cgroup version from what is mounted, else from /proc/self/cgroup's
/// lines (`0::/path` is the unified hierarchy, `N:controllers:/path` a v1
/// one). None when neither could be read.
fn cgroup_version(mountinfo: Option<&str>, cgroup: Option<&str>) -> Option<&'static str> {
    let (mut v1, mut v2) = (false, false);
    if let Some(m) = mountinfo {
        for l in m.lines() {
            let Some((_, post)) = l.split_once(" - ") else {
                continue;
            };
            match post.split(' ').next() {
                Some("cgroup") => v1 = true,
                Some("cgroup2") => v2 = true,
                _ => {}
            }
        }
    }
    if !v1 && !v2 {
        if let Some(c) = cgroup {
            for l in c.lines().filter(|l| !l.trim().is_empty()) {
                if l.starts_with("0::") {
                    v2 = true;
                } else {
                    v1 = true;
                }
            }
        }
    }
    match (v1, v2) {
        (true, true) => Some("hybrid"),
        (true, false) => Some("v1"),
        (false, true) => Some("v2"),
        (false, false) if mountinfo.is_some() => Some("none"),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auxv(pairs: &[(u64, u64)]) -> Vec<u8> {
        pairs
            .iter()
            .flat_map(|(k, v)| k.to_le_bytes().into_iter().chain(v.to_le_bytes()))
            .collect()
    }

    #[test]
    fn a_runc_container_on_a_hybrid_host() {
        // Captured in a Docker runc container on this machine.
        let mi = "272 271 0:93 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755\n\
                  273 272 0:29 /docker/f5 /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n";
        let av = auxv(&[(0x21, 0x7fc1), (6, 4096), (0x11, 100), (0, 0)]);
        let p = derive(&Sources {
            arch: Some("x86_64\n"),
            osrelease: Some("6.18.44-fc-v1045\n"),
            version: Some("Linux version 6.18.44-fc-v1045 (builder@sandboxing) #1 SMP\n"),
            auxv: Some(&av),
            cpus_online: Some("0-1\n"),
            mountinfo: Some(mi),
            cgroup: Some("1:cpu:/docker/f5\n0::/docker/f5\n"),
            ..Sources::default()
        });
        assert_eq!(
            p,
            Platform {
                machine: Some("x86_64".into()),
                kernel_release: Some("6.18.44-fc-v1045".into()),
                page_size: Some(4096),
                cpus: Some(2),
                cgroup: Some("v1".into()),
            }
        );
    }

    #[test]
    fn gvisor_reports_its_release_in_proc_version_and_mounts_no_cgroup() {
        let av = auxv(&[(3, 0x400040), (6, 0x1000), (0, 0)]);
        let p = derive(&Sources {
            uname_machine: Some("x86_64"),
            version: Some("Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016\n"),
            auxv: Some(&av),
            cpus_online: Some("0-1"),
            mountinfo: Some("8 8 0:8 / / rw  - 9p none rw,trans=fd\n"),
            ..Sources::default()
        });
        assert_eq!(p.machine.as_deref(), Some("x86_64"));
        assert_eq!(p.kernel_release.as_deref(), Some("4.4.0"));
        assert_eq!(p.page_size, Some(4096));
        assert_eq!(p.cgroup.as_deref(), Some("none"));
    }

    #[test]
    fn unreadable_sources_are_unknown_never_a_guess() {
        assert_eq!(derive(&Sources::default()), Platform::default());
        assert_eq!(cgroup_version(None, None), None);
        assert_eq!(cgroup_version(None, Some("0::/\n")), Some("v2"));
        assert_eq!(
            cgroup_version(
                Some("1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
                None
            ),
            Some("v2")
        );
        assert_eq!(
            cgroup_version(
                Some("1 0 0:1 / /a rw - cgroup2 c rw\n2 0 0:2 / /b rw - cgroup c rw,cpu\n"),
                None
            ),
            Some("hybrid")
        );
    }

    #[test]
    fn cpulists_and_bad_input() {
        assert_eq!(cpu_count("0"), Some(1));
        assert_eq!(cpu_count("0-3,8,10-11\n"), Some(7));
        assert_eq!(cpu_count(""), None);
        assert_eq!(cpu_count("3-1"), None);
        assert_eq!(cpu_count("0-99999999999"), None);
        assert_eq!(cpu_count("x"), None);
        assert_eq!(page_size(&auxv(&[(6, 3000)])), None, "not a power of two");
        assert_eq!(page_size(&[1, 2, 3]), None);
        assert_eq!(release_of_version("garbage"), None);
        let hostile = derive(&Sources {
            arch: Some("x86\u{1b}[2J_64"),
            ..Sources::default()
        });
        assert_eq!(hostile.machine.as_deref(), Some("x86[2J_64"));
    }
}
