//! Where a path lives, for the phase 4 and 5 probes: what a path resolves
//! to without leaving the root, which mount holds it, whether that mount
//! outlives the container, and who owns it (the homes and the owners' names
//! are src/facts/users.rs).

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use crate::facts::mounts::{MountClass, MountEntry, MountFacts};
use crate::host::Host;

const MAX_LINKS: usize = 40;

/// Resolves `p` (absolute, inside the root) the way the kernel would inside
/// the container, but with absolute link targets taken relative to the root,
/// so that a link never leads out of the tree being probed. None on a loop or
/// a dangling link; missing trailing components are kept as they are.
pub fn resolve(host: &Host, p: &Path) -> Option<PathBuf> {
    let mut todo = steps(p);
    let mut cur = PathBuf::from("/");
    let mut links = 0;
    let mut missing = false;
    while let Some(c) = todo.pop() {
        if c == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&c);
        if missing {
            cur = next;
            continue;
        }
        match std::fs::symlink_metadata(host.path(&next)) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(host.path(&next)).ok()?;
                if target.is_absolute() {
                    cur = PathBuf::from("/");
                }
                todo.extend(steps(&target));
            }
            Ok(_) => cur = next,
            Err(_) => {
                missing = true;
                cur = next;
            }
        }
    }
    Some(cur)
}

/// The names and `..`s of `p`, last first: a stack to resolve from.
fn steps(p: &Path) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = p
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    v.reverse();
    v
}

/// How long what is stored at a path lives, seen from the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retention {
    /// Survives the container: a host path, a volume or the workspace.
    Persistent,
    /// Goes with the container: its own layer or a tmpfs.
    Ephemeral,
    /// No mount table to tell, or a filesystem type selfprobe does not know.
    /// Also what a report read back without it (model::read) says.
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Placement {
    pub mount_point: String,
    pub mount_class: Option<MountClass>,
    /// The path inside the mount's source (field 4), for host binds and volumes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_path: Option<String>,
    pub fstype: String,
    pub retention: Retention,
    /// host, volume, workspace, or none.
    pub shared_with: Text,
    pub read_only_mount: bool,
}

/// The mount that holds `p` (an already resolved in-root path): the longest
/// mount point above it, the last listed when several are stacked.
pub fn mount_of<'a>(mounts: &'a MountFacts, p: &Path) -> Option<&'a MountEntry> {
    let mut best: Option<&MountEntry> = None;
    for e in &mounts.mounts {
        if p.starts_with(&e.mount.mount_point) {
            let better = best.is_none_or(|b| {
                e.mount.mount_point.as_os_str().len() >= b.mount.mount_point.as_os_str().len()
            });
            if better {
                best = Some(e);
            }
        }
    }
    best
}

pub fn place(mounts: Option<&MountFacts>, p: &Path) -> Placement {
    let Some(e) = mounts.and_then(|m| mount_of(m, p)) else {
        return Placement {
            mount_point: String::new(),
            mount_class: None,
            host_path: None,
            fstype: String::new(),
            retention: Retention::Unknown,
            shared_with: "unknown".into(),
            read_only_mount: false,
        };
    };
    let (retention, shared_with) = match e.class {
        // The host's /run lives as long as the host runs; another
        // container's root as long as that container: both outlive this one.
        MountClass::HostBind
        | MountClass::HostRoot
        | MountClass::Socket
        | MountClass::HostTmpfs
        | MountClass::HostProcfs
        | MountClass::ContainerRootfs
        | MountClass::ProbeBinary => (Retention::Persistent, "host"),
        MountClass::Volume => (Retention::Persistent, "volume"),
        MountClass::Workspace => (Retention::Persistent, "workspace"),
        // Engine files (and kubelet's emptyDir) go with the container or pod.
        MountClass::RootFs
        | MountClass::Tmpfs
        | MountClass::Pseudo
        | MountClass::Device
        | MountClass::EngineManaged => (Retention::Ephemeral, "none"),
        MountClass::Unknown => (Retention::Unknown, "unknown"),
    };
    let host_path = (retention != Retention::Ephemeral).then(|| {
        let rel = p
            .strip_prefix(&e.mount.mount_point)
            .unwrap_or(Path::new(""));
        let root = &e.mount.root;
        if rel.as_os_str().is_empty() {
            root.to_string_lossy().into_owned()
        } else {
            root.join(rel).to_string_lossy().into_owned()
        }
    });
    Placement {
        mount_point: e.mount.mount_point.to_string_lossy().into_owned(),
        mount_class: Some(e.class),
        host_path,
        fstype: e.mount.fstype.clone(),
        retention,
        shared_with: shared_with.into(),
        read_only_mount: e.read_only,
    }
}

/// uid of what is at `p` (in-root path), without following a final link.
pub fn uid_of(host: &Host, p: &Path) -> Option<u32> {
    std::fs::symlink_metadata(host.path(p))
        .ok()
        .map(|m| m.uid())
}

/// Joins a home-relative or absolute catalog path onto a home.
pub fn under(home: &Path, rel: &str) -> PathBuf {
    if rel.starts_with('/') {
        PathBuf::from(rel)
    } else {
        home.join(rel)
    }
}

/// A catalog `env` entry: "VAR" or "VAR/sub", looked up in the environment
/// the probes see (the tree's under `--root`). Only absolute values count: a
/// relative one depends on a working directory this process does not share.
pub fn env_path(host: &Host, entry: &str) -> Option<PathBuf> {
    let (var, sub) = match entry.split_once('/') {
        Some((v, s)) => (v, Some(s)),
        None => (entry, None),
    };
    let v = host.env().get(var)?;
    let base = PathBuf::from(v);
    if !base.is_absolute() {
        return None;
    }
    Some(match sub {
        Some(s) => base.join(s),
        None => base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    #[test]
    fn resolves_links_inside_the_root_only() {
        let dir = std::env::temp_dir().join(format!("selfprobe-place-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data/cache")).unwrap();
        std::fs::create_dir_all(dir.join("root")).unwrap();
        // An absolute target is taken inside the root, never on the real host.
        symlink("/data/cache", dir.join("root/.cache")).unwrap();
        symlink("../../etc", dir.join("data/up")).unwrap();
        symlink("loop2", dir.join("loop1")).unwrap();
        symlink("loop1", dir.join("loop2")).unwrap();
        let h = Host::new(dir.clone(), Duration::from_secs(1));
        assert_eq!(
            resolve(&h, Path::new("/root/.cache/pip")),
            Some(PathBuf::from("/data/cache/pip"))
        );
        assert_eq!(
            resolve(&h, Path::new("/data/up/passwd")),
            Some(PathBuf::from("/etc/passwd")),
            ".. stops at the root"
        );
        assert_eq!(resolve(&h, Path::new("/loop1/x")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn env_paths() {
        let h = Host::new(PathBuf::from("/nonexistent-tree"), Duration::from_secs(1));
        assert_eq!(env_path(&h, "SELFPROBE_SURELY_UNSET_VAR/x"), None);
        let h = h.with_env(crate::host::Environ::from_vars(vec![
            ("CARGO_HOME".into(), "/opt/cargo".into()),
            ("REL".into(), "relative/dir".into()),
        ]));
        assert_eq!(
            env_path(&h, "CARGO_HOME/registry"),
            Some(PathBuf::from("/opt/cargo/registry"))
        );
        assert_eq!(env_path(&h, "REL"), None, "relative values do not count");
    }
}
