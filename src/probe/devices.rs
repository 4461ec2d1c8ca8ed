//! Phase 2: device nodes under /dev. Block devices are host disks; the
//! character devices in probes/devices.toml reach host memory, kernel or
//! hardware. Nodes are stat'ed and checked with access(2); the ones that
//! are reported are also opened read-only (O_NONBLOCK|O_NOCTTY, closed at
//! once, never read), since a device cgroup, an LSM or a nodev mount can
//! refuse what the mode bits allow: "readable" means that open worked.
//! Nothing is ever opened for writing, and a watchdog is not opened at all
//! (opening one arms it).

use crate::finding::Code;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;

use crate::util::text::Text;
use nix::unistd::AccessFlags;
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::facts::unchecked::Unchecked;
use crate::finding::{Finding, Severity};
use crate::host::Host;

/// A workspace's /dev holds a few dozen nodes; a privileged one a few
/// hundred. Past this the walk stops and says so.
const MAX_ENTRIES: usize = 20_000;
const MAX_DEPTH: usize = 4;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceNode {
    pub path: String,
    pub kind: Text,
    pub major: u64,
    pub minor: u64,
    pub readable: bool,
    pub writable: bool,
    /// Why opening it read-only failed where access(2) allowed it: the
    /// device cgroup, an LSM or a nodev mount refuses the device, for
    /// writing as much as for reading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceFacts {
    pub nodes: Vec<DeviceNode>,
    pub truncated: bool,
}

/// How long the read-only opens may take together: a block device of a
/// hung network disk (NBD, iSCSI) can block its open; that one node is
/// then judged by access(2) alone.
const OPEN_WAIT: Duration = Duration::from_millis(1500);

/// Whether the node is one the findings name: every block device, and the
/// catalog's character devices.
fn reported(kind: &str, path: &str) -> Option<Option<&'static catalog::Device>> {
    if kind == "block" {
        return Some(None);
    }
    let rel = path.trim_start_matches("/dev/");
    catalog::devices()
        .iter()
        .find(|d| crate::util::glob::matches_path(&d.pattern, rel))
        .map(Some)
}

/// Opens `p` read-only and closes it at once; the error's name when that fails.
fn open_read_only(p: &Path) -> Result<(), nix::Error> {
    let fd = nix::fcntl::open(
        p,
        OFlag::O_RDONLY
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC
            | OFlag::O_NOFOLLOW,
        nix::sys::stat::Mode::empty(),
    )?;
    drop(fd);
    Ok(())
}

/// Opens the reported nodes that access(2) calls readable, side by side
/// and bounded; a node whose open is refused is neither readable nor
/// writable (what refuses a read refuses a write: the device cgroup's
/// rules, nodev, an LSM hook on the device), and says why.
fn confirm_reads(host: &Host, f: &mut DeviceFacts) {
    let idx: Vec<usize> = (0..f.nodes.len())
        .filter(|i| {
            let n = &f.nodes[*i];
            n.readable && reported(&n.kind, &n.path).is_some_and(|d| d.is_none_or(|d| !d.no_open))
        })
        .collect();
    if idx.is_empty() {
        return;
    }
    let paths: Vec<std::path::PathBuf> = idx.iter().map(|i| host.path(&f.nodes[*i].path)).collect();
    let got =
        crate::util::workers::map_until("device-open", paths, 4, Instant::now() + OPEN_WAIT, |p| {
            open_read_only(p)
        });
    for (i, r) in idx.into_iter().zip(got) {
        let n = &mut f.nodes[i];
        match r {
            Some(Ok(())) | None => {}
            // A node that vanished or is busy is not a refusal.
            Some(Err(
                nix::Error::ENOENT | nix::Error::EBUSY | nix::Error::ENXIO | nix::Error::ENODEV,
            )) => {}
            Some(Err(e)) => {
                n.readable = false;
                n.writable = false;
                n.refused = Some(format!("open(O_RDONLY): {}", e.desc()));
            }
        }
    }
}

pub fn collect(host: &Host) -> Result<DeviceFacts, Unchecked> {
    let dev = host.path("/dev");
    let rd = std::fs::read_dir(&dev).map_err(|error| Unchecked::Unreadable {
        verb: "list",
        path: "/dev".into(),
        error,
    })?;
    let mut f = DeviceFacts::default();
    let mut stack = vec![(rd, 1usize)];
    let mut seen = 0usize;
    while let Some((mut rd, depth)) = stack.pop() {
        let Some(ent) = rd.next() else { continue };
        stack.push((rd, depth));
        let Ok(ent) = ent else { continue };
        seen += 1;
        if seen > MAX_ENTRIES {
            f.truncated = true;
            break;
        }
        let Ok(meta) = ent.path().symlink_metadata() else {
            continue;
        };
        let ft = meta.file_type();
        let rel = ent
            .path()
            .strip_prefix(&dev)
            .map(|p| p.to_path_buf())
            .unwrap_or_default();
        let rel_s = rel.to_string_lossy().into_owned();
        if ft.is_dir() {
            // pts, shm and mqueue hold terminals and IPC objects, not hardware.
            if depth < MAX_DEPTH && !matches!(rel_s.as_str(), "pts" | "shm" | "mqueue" | "fd") {
                if let Ok(sub) = std::fs::read_dir(ent.path()) {
                    stack.push((sub, depth + 1));
                }
            }
            continue;
        }
        let kind = if ft.is_block_device() {
            "block"
        } else if ft.is_char_device() {
            "char"
        } else {
            continue;
        };
        let in_root = Path::new("/dev").join(&rel);
        let rdev = meta.rdev();
        f.nodes.push(DeviceNode {
            path: in_root.to_string_lossy().into_owned(),
            kind: kind.into(),
            major: nix::sys::stat::major(rdev),
            minor: nix::sys::stat::minor(rdev),
            readable: host.access(&in_root, AccessFlags::R_OK).is_ok(),
            writable: host.access(&in_root, AccessFlags::W_OK).is_ok(),
            refused: None,
        });
    }
    crate::util::sort::sort_by(&mut f.nodes, |a, b| a.path.cmp(&b.path));
    confirm_reads(host, &mut f);
    Ok(f)
}

impl DeviceFacts {
    pub fn block_devices(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.kind == "block")
            .map(|n| n.path.clone())
            .collect()
    }
}

pub fn evaluate(f: &DeviceFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for n in &f.nodes {
        let ev = |fnd: Finding| {
            let fnd = fnd
                .with("path", n.path.clone())
                .with("major", n.major)
                .with("minor", n.minor)
                .with("readable", n.readable)
                .with("writable", n.writable)
                .with("checked_with", "access(2) and a read-only open");
            match &n.refused {
                Some(r) => fnd.with("refused", r.clone()),
                None => fnd,
            }
        };
        // Severity follows access: a node this process can neither read
        // nor write is a step below one it can use, and says so.
        let usable = n.readable || n.writable;
        let access = match (n.readable, n.writable) {
            (true, true) => "readable and writable by this process",
            (false, true) => "writable by this process",
            (true, false) => "readable by this process",
            _ if n.refused.is_some() => {
                "present but not usable by this process (opening it is refused)"
            }
            _ => "present but not usable by this process (access denied)",
        };
        if n.kind == "block" {
            let sev = match (n.readable, n.writable) {
                (_, true) => Severity::Critical,
                (true, false) => Severity::High,
                _ => Severity::Medium,
            };
            out.push(
                ev(Finding::new(
                    Code::DeviceHostBlock,
                    &n.path,
                    format!(
                        "{} is a host block device ({}:{}), {access}",
                        n.path, n.major, n.minor
                    ),
                ))
                .severity(sev)
                .with("usable", usable),
            );
            continue;
        }
        let rel = n.path.trim_start_matches("/dev/");
        if let Some(d) = catalog::devices()
            .iter()
            .find(|d| crate::util::glob::matches_path(&d.pattern, rel))
        {
            let sev = if usable {
                d.severity
            } else {
                d.severity.lowered()
            };
            out.push(
                ev(Finding::new(
                    Code::DeviceSensitive,
                    &n.path,
                    format!("{}: {}; {access}", n.path, d.why),
                ))
                .severity(sev)
                .with("why", d.why.clone())
                .with("usable", usable),
            );
        }
    }
    if f.truncated {
        out.push(
            Finding::new(
                Code::ProbeIncomplete,
                "devices",
                format!("/dev holds more than {MAX_ENTRIES} entries; the rest was not examined"),
            )
            .unknown()
            .with("probe", "devices"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, kind: &'static str, readable: bool, writable: bool) -> DeviceNode {
        DeviceNode {
            path: path.into(),
            kind: kind.into(),
            major: 8,
            minor: 0,
            readable,
            writable,
            refused: None,
        }
    }

    #[test]
    fn severity_follows_access() {
        let f = DeviceFacts {
            nodes: vec![
                node("/dev/sda", "block", true, true),
                node("/dev/sdb", "block", true, false),
                node("/dev/loop0", "block", false, false),
                node("/dev/mem", "char", true, true),
                node("/dev/kmsg", "char", false, false),
            ],
            truncated: false,
        };
        let out = evaluate(&f);
        let sev = |p: &str| out.iter().find(|x| x.subject == p).map(|x| x.severity);
        assert_eq!(sev("/dev/sda"), Some(Severity::Critical));
        assert_eq!(sev("/dev/sdb"), Some(Severity::High));
        assert_eq!(sev("/dev/loop0"), Some(Severity::Medium));
        let loop0 = out.iter().find(|x| x.subject == "/dev/loop0").unwrap();
        assert!(
            loop0.message.contains("not usable by this process"),
            "{}",
            loop0.message
        );
        assert_eq!(loop0.evidence["usable"], false);
        let mem = catalog::devices()
            .iter()
            .find(|d| d.pattern == "mem")
            .unwrap()
            .severity;
        assert_eq!(sev("/dev/mem"), Some(mem));
        // access(2) said yes, a read-only open was refused (the machine's
        // /dev/vda here: EPERM even for root): not usable, medium, and said.
        let mut vda = node("/dev/vda", "block", false, false);
        vda.refused = Some("open(O_RDONLY): Operation not permitted".into());
        let v = evaluate(&DeviceFacts {
            nodes: vec![vda],
            truncated: false,
        });
        assert_eq!(v[0].severity, Severity::Medium);
        assert!(
            v[0].message.contains("opening it is refused"),
            "{}",
            v[0].message
        );
        assert_eq!(
            v[0].evidence["refused"],
            "open(O_RDONLY): Operation not permitted"
        );
        let kmsg = out.iter().find(|x| x.subject == "/dev/kmsg");
        if let Some(k) = kmsg {
            assert!(
                k.severity
                    < catalog::devices()
                        .iter()
                        .find(|d| d.pattern == "kmsg")
                        .unwrap()
                        .severity
            );
        }
    }
}
