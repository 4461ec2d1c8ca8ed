//! Phase 1: every mount from /proc/self/mountinfo, classified. Field 4 (the
//! path inside the source filesystem) is what tells a host home or the host
//! root from a volume or an engine-managed file; its shape names the engine
//! (src/facts/mounts/engine.rs). Host surfaces that are not directory binds
//! are named for what they are: another procfs than this container's own
//! (the host's /proc), the host's /run tmpfs, another container's root
//! filesystem reached through a host path.
//!
//! procfs (the crate) is set aside here: it does not unescape `\040` and
//! fails a whole table on one line it cannot read (docs/layout.md, Dependencies).

pub mod engine;
pub mod parse;

use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::text::Text;
use nix::unistd::AccessFlags;
use serde::{Deserialize, Serialize};

use crate::facts::unchecked::Unchecked;
use crate::host::Host;
use crate::policy::Policy;

pub use engine::Managed;
pub use parse::{parse_mountinfo, unescape, ParseError};

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Mount {
    pub id: u64,
    pub parent: u64,
    pub major: u32,
    pub minor: u32,
    /// Field 4: a path inside the source filesystem, or what the filesystem
    /// shows instead (`net:[4026532832]` for nsfs).
    #[serde(serialize_with = "lossy")]
    pub root: PathBuf,
    #[serde(serialize_with = "lossy")]
    pub mount_point: PathBuf,
    pub options: Vec<String>,
    /// shared:N, master:N, propagate_from:N, unbindable…: the mount's
    /// propagation, which `selfprobe-host inspect` compares with the engine's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optional: Vec<String>,
    pub fstype: String,
    pub source: String,
    #[serde(skip)]
    pub super_options: String,
}

pub fn lossy<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

impl Mount {
    pub fn read_only(&self) -> bool {
        self.options.iter().any(|o| o == "ro")
    }

    fn dev(&self) -> (u32, u32) {
        (self.major, self.minor)
    }

    fn root_is(&self, p: &str) -> bool {
        self.root == Path::new(p)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MountClass {
    /// The container's own root filesystem (or a bind from it).
    RootFs,
    /// proc, sysfs, cgroup, devpts, mqueue, nsfs and the like.
    Pseudo,
    /// A fresh tmpfs owned by this container.
    Tmpfs,
    /// /dev device nodes or the host's devtmpfs.
    Device,
    /// /etc/hosts, /etc/resolv.conf, /run/.containerenv… written by the engine.
    EngineManaged,
    /// A named or anonymous engine volume.
    Volume,
    /// The declared workspace.
    Workspace,
    /// The host's whole root filesystem.
    HostRoot,
    /// Any other path from the host.
    HostBind,
    /// A socket bind-mounted from the host.
    Socket,
    /// A procfs that is not this container's own /proc: another PID
    /// namespace's, the host's as a monitoring agent mounts it.
    HostProcfs,
    /// A tmpfs of the host mounted whole, such as its /run.
    HostTmpfs,
    /// Another container's root filesystem, reached through a host path.
    ContainerRootfs,
    /// This probe's own binary, bind-mounted in.
    ProbeBinary,
    /// A filesystem type selfprobe does not know: what it holds is unknown.
    /// Also a mount read back without its class (model::read).
    #[default]
    Unknown,
}

/// What the probe saw at one mount point, beyond the mountinfo line.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Contents {
    /// "dir", "file", "socket", "other", "missing", or "unresponsive" for
    /// a mount that did not answer in time.
    pub file_type: Text,
    /// access(2) W_OK for this process.
    pub writable: bool,
    /// Home and credential markers present at the mount point (".ssh", ".aws"…).
    pub markers: Vec<String>,
    /// Top-level directories of host-root candidates (etc, usr…).
    pub system_dirs: Vec<String>,
    /// Top-level entries of a host runtime directory (docker.sock, netns,
    /// systemd…), for telling the host's /run from a fresh tmpfs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runtime_markers: Vec<String>,
    pub git: bool,
    /// Immediate children that are git repositories (bounded).
    pub child_repos: Vec<String>,
    pub children_truncated: bool,
    /// The homes a host root filesystem holds (its /home/* and /root), as
    /// paths here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub homes: Vec<String>,
    /// Device and inode of what is at the mount point (lstat).
    #[serde(skip)]
    pub ident: Option<(u64, u64)>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MountEntry {
    #[serde(flatten)]
    pub mount: Mount,
    pub class: MountClass,
    pub kinds: Vec<Text>,
    pub read_only: bool,
    pub allowed: bool,
    /// The engine file this is, when its shape says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed: Option<Managed>,
    /// The host surface (host tmpfs, host procfs, another container's
    /// root) this mount lies inside: it is reported with that surface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
    /// Another mount covers it (one stacked on it, or on a directory above
    /// it, after it was mounted): nothing reaches it by path, and a table
    /// that lists a mount again and again (firejail's, nspawn's) gives one
    /// finding per mount point, the visible one's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The coding agent whose own directory or file this is
    /// (probes/agents.toml): a credential-bearing configuration path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Text>,
    #[serde(flatten)]
    pub contents: Contents,
}

impl MountEntry {
    pub fn has_kind(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| k == kind)
    }

    /// Reported on its own: not inside a host surface, not covered.
    pub fn reported(&self) -> bool {
        self.within.is_none() && !self.hidden
    }

    /// Looked into on its own by the walks (credentials, artifacts,
    /// caches): not covered, and not a part of the machine's own root seen
    /// from a sandbox (`machine_root`), which the homes stand for.
    pub fn walked(&self) -> bool {
        !self.hidden && self.within.as_deref() != Some("/")
    }
}

/// Which mounts another one covers. M is covered when a mount N on the
/// same parent sits at M's mount point or a directory above it (N came
/// later: had it been there first, M would sit on N), or N is stacked on M
/// itself at the same point; and whatever sits on a covered mount is
/// covered too. Mount ids are reused, so the table's order is used only
/// between two mounts at the very same point of one parent.
fn mark_hidden(entries: &mut [MountEntry]) {
    use std::collections::HashMap;
    // (parent, mount point) -> the last line with them.
    let mut at: HashMap<(u64, &Path), usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        at.insert((e.mount.parent, e.mount.mount_point.as_path()), i);
    }
    // For each covered mount, the one that covers it.
    let by: Vec<Option<usize>> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let m = &e.mount;
            let mp = m.mount_point.as_path();
            if m.parent != m.id {
                if let Some(&j) = at.get(&(m.id, mp)) {
                    return Some(j);
                }
            }
            mp.ancestors().find_map(|a| match at.get(&(m.parent, a)) {
                // A mount's own parent covers nothing of it (a root that
                // is its own parent, as gVisor's is, sits on that parent).
                Some(&j) if entries[j].mount.id == m.parent => None,
                // The same point twice on one parent: the later line.
                Some(&j) if a == mp => (j > i).then_some(j),
                Some(&j) => Some(j),
                None => None,
            })
        })
        .collect();
    let mut hidden: Vec<bool> = by.iter().map(Option::is_some).collect();
    // Down the tree: a mount on a covered one is covered, but for the one
    // stacked on it that covers it. Each mount is marked once, so a loop
    // of parents in a hostile table ends too.
    let mut children: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        children.entry(e.mount.parent).or_default().push(i);
    }
    let mut todo: Vec<usize> = (0..entries.len()).filter(|i| hidden[*i]).collect();
    while let Some(i) = todo.pop() {
        for &c in children.get(&entries[i].mount.id).into_iter().flatten() {
            if !hidden[c] && by[i] != Some(c) {
                hidden[c] = true;
                todo.push(c);
            }
        }
    }
    for (e, h) in entries.iter_mut().zip(hidden) {
        e.hidden = h;
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkspaceFacts {
    #[serde(serialize_with = "lossy")]
    pub path: PathBuf,
    pub source: String,
    pub exists: bool,
    /// The mount id the workspace lives on.
    pub mount_id: Option<u64>,
    /// False when the workspace sits on a mount that did not answer in time.
    pub answered: bool,
    /// Directories above the workspace, on its own mount, that hold a .git.
    pub parent_repos: Vec<String>,
}

/// The engine the table's own engine files name, and the container id.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct EngineHint {
    pub engine: Text,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The mount point of the file that says so.
    pub evidence: String,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MountFacts {
    pub mounts: Vec<MountEntry>,
    pub workspace: Option<WorkspaceFacts>,
    /// Non-blank lines read: every one is a mount or a parse error.
    pub lines: usize,
    pub parse_errors: Vec<ParseError>,
    /// Host mounts that did not answer lstat(2) in time (a hung FUSE or NFS
    /// server): their contents are unknown.
    pub unresponsive: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineHint>,
}

/// Kernel-made filesystems that hold no host data of their own. proc is
/// judged separately: a second procfs is a host surface.
const PSEUDO_FS: &[&str] = &[
    "sysfs",
    "cgroup",
    "cgroup2",
    "devpts",
    "mqueue",
    "securityfs",
    "debugfs",
    "tracefs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "hugetlbfs",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "nsfs",
    "selinuxfs",
    "rpc_pipefs",
    "nfsd",
];

/// Filesystems whose files live on a host's storage (or another machine's).
const DISK_FS: &[&str] = &[
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "zfs",
    "f2fs",
    "vfat",
    "exfat",
    "ntfs",
    "ntfs3",
    "fuseblk",
    "virtiofs",
    "9p",
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "fakeowner",
    "grpcfuse",
    "ceph",
    "glusterfs",
    "jfs",
    "reiserfs",
    "bcachefs",
    "erofs",
    "squashfs",
    "iso9660",
    "shiftfs",
    "ecryptfs",
    "lustre",
    "gpfs",
    "ocfs2",
    "gfs2",
    "zonefs",
];

/// Union filesystems: a container root, or a host directory layered over.
const OVERLAY_FS: &[&str] = &["overlay", "aufs", "fuse.fuse-overlayfs"];

/// Where engines keep image layers: an overlay built on these is some
/// container's root filesystem.
const SNAPSHOT_STORAGE: &[&str] = &[
    "/overlay2/",
    "io.containerd.snapshotter",
    "/storage/overlay/",
    "/docker/overlay/",
    "/aufs/",
];

/// Top-level names of a host's runtime directory: an engine's, and the
/// system's. Both must be present for a tmpfs to be the host's /run: a
/// systemd container has the second kind, a dind with a tmpfs /run the first.
const ENGINE_RUN_MARKERS: &[&str] = &[
    "docker.sock",
    "docker",
    "containerd",
    "crio",
    "podman",
    "netns",
    "k3s",
    "cri-dockerd.sock",
    "libpod",
];
const SYSTEM_RUN_MARKERS: &[&str] = &[
    "systemd",
    "udev",
    "dbus",
    "utmp",
    "user",
    "initramfs",
    "openrc",
    "lvm",
    "sshd.pid",
    "credentials",
    "mount",
];

/// Entries of a home directory; two or more at a mount point mean a home.
const HOME_MARKERS: &[&str] = &[
    ".bashrc",
    ".profile",
    ".bash_history",
    ".zshrc",
    ".zsh_history",
    ".ssh",
    ".gitconfig",
    ".local",
    ".config",
    ".cache",
];

/// Credential-bearing configuration directories under a home; the first
/// component after the home (or the mount point's own name).
const CONFIG_DIRS: &[&str] = &[
    ".aws",
    ".kube",
    ".docker",
    ".config",
    ".gnupg",
    ".azure",
    ".gcloud",
    ".oci",
    ".terraform.d",
    ".gitconfig",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".cargo",
];

/// Markers of credential configuration inside a mounted tree: each names a
/// file or directory whose presence is the danger, not the parent's name.
pub const CONFIG_MARKERS: &[&str] = &[
    ".aws/credentials",
    ".aws/config",
    ".kube/config",
    ".docker/config.json",
    ".config/gcloud",
    ".azure",
    ".gnupg",
    ".git-credentials",
    ".netrc",
];

const SYSTEM_DIRS: &[&str] = &["etc", "usr", "bin", "var", "boot", "proc"];

fn is_disk_fs(fstype: &str) -> bool {
    DISK_FS.contains(&fstype) || (fstype.starts_with("fuse") && !OVERLAY_FS.contains(&fstype))
}

/// A filesystem a machine boots from: a disk's, not a sandbox's share of
/// one (gVisor's 9p, Kata's virtio-fs, Sysbox's shiftfs).
pub fn is_machine_disk(fstype: &str, source: &str) -> bool {
    is_disk_fs(fstype) && !matches!(fstype, "9p" | "virtiofs" | "shiftfs") && source != "kataShared"
}

fn is_tmpfs(fstype: &str) -> bool {
    matches!(fstype, "tmpfs" | "ramfs")
}

/// Mount points a container's own tmpfs or device files sit at; a tmpfs
/// there is not looked into for host runtime markers.
fn conventional_tmpfs_point(mp: &Path) -> bool {
    ["/dev", "/proc", "/sys"].iter().any(|p| mp.starts_with(p))
}

fn home_of(root: &str) -> Option<(&str, Option<&str>)> {
    // Returns the home ("/home/alice") and the rest below it ("src/app").
    let split_home = |prefix: &str| -> Option<(usize, &str)> {
        let rest = root.strip_prefix(prefix)?;
        let user_end = rest.find('/').unwrap_or(rest.len());
        if user_end == 0 {
            return None;
        }
        Some((prefix.len() + user_end, &root[prefix.len() + user_end..]))
    };
    if root == "/root" || root.starts_with("/root/") {
        let rest = root.strip_prefix("/root").unwrap_or("");
        return Some(("/root", rest.strip_prefix('/').filter(|r| !r.is_empty())));
    }
    for prefix in ["/home/", "/Users/", "/var/home/"] {
        if let Some((end, rest)) = split_home(prefix) {
            return Some((
                &root[..end],
                rest.strip_prefix('/').filter(|r| !r.is_empty()),
            ));
        }
    }
    None
}

/// How long a host mount may take to answer lstat(2) and a few lookups. A
/// healthy one answers in microseconds; a hung FUSE or NFS mount never does,
/// and must not cost the mount table that every later probe needs.
const INSPECT_WAIT: Duration = Duration::from_millis(1000);
/// Mount points looked at side by side: a hung mount holds one worker for
/// good, and the others go on with the rest.
const INSPECT_WORKERS: usize = 4;

/// Inspects every mount point in `points` on worker threads, until
/// `deadline`. `None` marks one that did not answer in time.
fn inspect_all(host: &Host, points: Vec<PathBuf>, deadline: Instant) -> Vec<Option<Contents>> {
    let host = host.clone();
    crate::util::workers::map_until(
        "mount-inspect",
        points,
        INSPECT_WORKERS,
        deadline,
        move |p| inspect(&host, p, true),
    )
}

/// What the whole table says about this container's own mounts.
struct Table {
    /// The device of the container's root filesystem and whether it is an
    /// anonymous one (overlay, tmpfs) that nothing else can share.
    own_root: Option<((u32, u32), bool)>,
    /// The device of the procfs at /proc.
    own_proc: Option<(u32, u32)>,
    /// tmpfs devices mounted whole that are the host's (its /run…).
    host_tmpfs: BTreeSet<(u32, u32)>,
    /// tmpfs devices mounted whole by this container; binds from them
    /// (podman masks /proc/keys with /dev's tmpfs "/null") are internal.
    own_tmpfs: BTreeSet<(u32, u32)>,
    /// The table is a machine's own: its root is a disk filesystem mounted
    /// whole and no mount is a file an engine made for a container. Its
    /// /run is then the machine's own runtime directory, whatever it holds
    /// (Docker's netns binds, systemd's state), not a host's mounted in.
    machine: bool,
}

impl Table {
    fn new(mounts: &[Mount]) -> Table {
        let root = mounts
            .iter()
            .rev()
            .find(|m| m.mount_point == Path::new("/"));
        let own_root = root.map(|m| (m.dev(), layered_root(m)));
        let machine = root.is_some_and(|m| is_machine_disk(&m.fstype, &m.source))
            && !mounts.iter().any(|m| {
                // firejail's binds of its own show in the machine's table
                // too (it makes them in the machine's namespace first).
                matches!(engine::shape(m), Some(engine::Shape::Managed(x)) if x.by != "firejail")
            });
        let own_proc = mounts
            .iter()
            .rev()
            .find(|m| m.fstype == "proc" && m.mount_point == Path::new("/proc"))
            .map(Mount::dev);
        let mut t = Table {
            own_root,
            own_proc,
            host_tmpfs: BTreeSet::new(),
            own_tmpfs: BTreeSet::new(),
            machine,
        };
        // A tmpfs with namespace binds or container roots below it is the
        // host's runtime directory: a fresh tmpfs has neither. The
        // container's own /run is left to what it holds (below): a dind
        // with a tmpfs /run binds its own containers' namespaces there.
        for m in mounts.iter().filter(|m| whole_tmpfs(m) && !own_run(m)) {
            let holds_host_state = mounts.iter().any(|c| {
                c.mount_point != m.mount_point
                    && c.mount_point.starts_with(&m.mount_point)
                    && (c.fstype == "nsfs" || is_snapshot_overlay(c))
            });
            if holds_host_state {
                t.host_tmpfs.insert(m.dev());
            }
        }
        t.refresh_own_tmpfs(mounts);
        t
    }

    fn refresh_own_tmpfs(&mut self, mounts: &[Mount]) {
        self.own_tmpfs = mounts
            .iter()
            .filter(|m| whole_tmpfs(m))
            .map(Mount::dev)
            .filter(|d| !self.host_tmpfs.contains(d))
            .collect();
    }
}

/// A tmpfs at the container's own runtime directory.
fn own_run(m: &Mount) -> bool {
    m.mount_point == Path::new("/run") || m.mount_point == Path::new("/var/run")
}

/// A root nothing else can share: an overlay or tmpfs of the container's
/// own, or Sysbox's shiftfs over an engine's overlay.
fn layered_root(m: &Mount) -> bool {
    OVERLAY_FS.contains(&m.fstype.as_str())
        || is_tmpfs(&m.fstype)
        || (m.fstype == "shiftfs" && is_snapshot_path(&m.root.to_string_lossy()))
}

fn is_snapshot_path(p: &str) -> bool {
    SNAPSHOT_STORAGE.iter().any(|s| p.contains(s))
}

fn whole_tmpfs(m: &Mount) -> bool {
    is_tmpfs(&m.fstype) && m.root_is("/") && m.mount_point != Path::new("/")
}

fn is_snapshot_overlay(m: &Mount) -> bool {
    OVERLAY_FS.contains(&m.fstype.as_str()) && m.root_is("/") && is_snapshot_path(&m.super_options)
}

fn base_class(m: &Mount, shape: Option<&engine::Shape>, t: &Table) -> MountClass {
    let fstype = m.fstype.as_str();
    if m.mount_point == Path::new("/") {
        return MountClass::RootFs;
    }
    if let Some(engine::Shape::Managed(_)) = shape {
        return MountClass::EngineManaged;
    }
    if fstype == "proc" {
        let own = m.mount_point.starts_with("/proc") || t.own_proc == Some(m.dev());
        return if own {
            MountClass::Pseudo
        } else {
            MountClass::HostProcfs
        };
    }
    // lxcfs holds no data of its own: it computes /proc and /sys files.
    if PSEUDO_FS.contains(&fstype) || fstype == "fuse.lxcfs" {
        return MountClass::Pseudo;
    }
    // Binds from the container's own overlay or tmpfs root (kind binds
    // product_name from it) are its own files, not the host's.
    if t.own_root == Some((m.dev(), true)) {
        return MountClass::RootFs;
    }
    let under_dev = m.mount_point.starts_with("/dev");
    if fstype == "devtmpfs"
        || (fstype == "dev" && under_dev)
        || (under_dev && !m.root_is("/") && is_tmpfs(fstype))
    {
        return MountClass::Device;
    }
    if let Some(engine::Shape::Volume(_)) = shape {
        return MountClass::Volume;
    }
    if is_tmpfs(fstype) {
        return if m.root_is("/") {
            if t.host_tmpfs.contains(&m.dev()) {
                MountClass::HostTmpfs
            } else {
                MountClass::Tmpfs
            }
        } else if t.own_tmpfs.contains(&m.dev()) {
            MountClass::Tmpfs
        } else {
            // Part of some other tmpfs: the host's /run or /tmp.
            MountClass::HostBind
        };
    }
    if OVERLAY_FS.contains(&fstype) {
        return if is_snapshot_overlay(m) {
            MountClass::ContainerRootfs
        } else {
            // A host directory layered over.
            MountClass::HostBind
        };
    }
    if is_disk_fs(fstype) {
        return MountClass::HostBind;
    }
    MountClass::Unknown
}

/// Device and inode of the running binary, and the path it runs from
/// (readlink of /proc/self/exe, taken inside the root).
fn self_binary(host: &Host) -> (Option<(u64, u64)>, Option<PathBuf>) {
    let Ok(link) = host.read_link("/proc/self/exe") else {
        return (None, None);
    };
    let s = link.to_string_lossy();
    // A binary replaced while running reads "… (deleted)".
    let path = PathBuf::from(s.strip_suffix(" (deleted)").unwrap_or(&s));
    let ident = std::fs::symlink_metadata(host.path(&path))
        .ok()
        .filter(|m| m.file_type().is_file())
        .map(|m| (m.dev(), m.ino()));
    (ident, Some(path))
}

/// Collects mountinfo and looks at each host-derived mount point. `workspace`
/// is where the workspace should be, with where that came from.
pub fn collect(
    host: &Host,
    workspace: Option<(PathBuf, String)>,
    deadline: Instant,
) -> Result<MountFacts, Unchecked> {
    let text = host
        .read("/proc/self/mountinfo")
        .map_err(|e| Unchecked::unreadable("/proc/self/mountinfo", e))?;
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    let (mounts, parse_errors) = parse_mountinfo(&text);
    if mounts.is_empty() {
        return Err(Unchecked::Malformed(match parse_errors.first() {
            Some(e) => format!("/proc/self/mountinfo lists no mount that parses ({e})"),
            None => "/proc/self/mountinfo lists no mounts".into(),
        }));
    }
    let mut table = Table::new(&mounts);
    let shapes: Vec<Option<engine::Shape>> = mounts.iter().map(engine::shape).collect();
    let mut entries: Vec<MountEntry> = mounts
        .into_iter()
        .zip(shapes)
        .map(|(m, shape)| {
            let class = base_class(&m, shape.as_ref(), &table);
            let managed = match shape {
                Some(engine::Shape::Managed(x)) if class == MountClass::EngineManaged => Some(x),
                _ => None,
            };
            MountEntry {
                read_only: m.read_only(),
                class,
                kinds: Vec::new(),
                allowed: false,
                managed,
                within: None,
                hidden: false,
                agent: None,
                contents: Contents::default(),
                mount: m,
            }
        })
        .collect();
    mark_within(&mut entries);

    let wait_until = std::cmp::min(
        Instant::now() + INSPECT_WAIT,
        deadline
            .checked_sub(Duration::from_millis(200))
            .unwrap_or(deadline),
    );
    let mut unresponsive = Vec::new();
    inspect_entries(host, &mut entries, wait_until, &mut unresponsive);

    // A tmpfs that holds both an engine's and the system's runtime entries
    // is the host's /run, even without namespace binds below it; binds from
    // it then are host paths, looked at in a second, usually empty, round.
    // A machine's own table holds its own /run, which holds both.
    let mut promoted = false;
    for e in entries.iter_mut() {
        if e.class == MountClass::Tmpfs
            && e.mount.root_is("/")
            && runtime_dir(&e.contents)
            && !(table.machine && own_run(&e.mount))
        {
            e.class = MountClass::HostTmpfs;
            table.host_tmpfs.insert(e.mount.dev());
            promoted = true;
        }
    }
    if promoted {
        let plain: Vec<Mount> = entries.iter().map(|e| e.mount.clone()).collect();
        table.refresh_own_tmpfs(&plain);
        for e in entries.iter_mut() {
            if e.class == MountClass::Tmpfs
                && !e.mount.root_is("/")
                && !table.own_tmpfs.contains(&e.mount.dev())
            {
                e.class = MountClass::HostBind;
            }
        }
        mark_within(&mut entries);
        inspect_entries(host, &mut entries, wait_until, &mut unresponsive);
    }

    // The engine keeps its storage on this disk: a whole-filesystem bind of
    // it is the host's root filesystem.
    let engine_devs: Vec<(u32, u32)> = entries
        .iter()
        .filter(|e| e.class == MountClass::EngineManaged && is_disk_fs(&e.mount.fstype))
        .filter(|e| e.mount.fstype != "9p" && e.mount.fstype != "virtiofs")
        .map(|e| e.mount.dev())
        .collect();
    let (self_ident, self_path) = self_binary(host);
    for e in &mut entries {
        refine(e, &engine_devs, self_ident, self_path.as_deref());
    }
    own_engine_roots(&mut entries);
    mark_hidden(&mut entries);
    let engine = engine_hint(&mut entries);
    let workspace = workspace.map(|(path, source)| {
        let hung = unresponsive.iter().any(|u| path.starts_with(u));
        workspace_facts(host, &entries, path, source, !hung)
    });
    Ok(MountFacts {
        mounts: entries,
        workspace,
        lines,
        parse_errors,
        unresponsive,
        engine,
    })
}

/// Looks at the mount points that may hold host data and have not been
/// looked at yet. Mounts inside a host surface are reported with it and
/// are not looked at one by one.
fn inspect_entries(
    host: &Host,
    entries: &mut [MountEntry],
    wait_until: Instant,
    unresponsive: &mut Vec<String>,
) {
    let wanted = |e: &MountEntry| {
        e.within.is_none()
            && e.contents.file_type.is_empty()
            && match e.class {
                MountClass::HostBind
                | MountClass::Unknown
                | MountClass::HostTmpfs
                | MountClass::ContainerRootfs => true,
                MountClass::Tmpfs => {
                    e.mount.root_is("/") && !conventional_tmpfs_point(&e.mount.mount_point)
                }
                _ => false,
            }
    };
    let idx: Vec<usize> = (0..entries.len())
        .filter(|i| wanted(&entries[*i]))
        .collect();
    if idx.is_empty() {
        return;
    }
    let points = idx
        .iter()
        .map(|i| entries[*i].mount.mount_point.clone())
        .collect();
    let found = inspect_all(host, points, wait_until);
    for (i, c) in idx.into_iter().zip(found) {
        let e = &mut entries[i];
        match c {
            Some(mut c) => {
                // Both must allow it: the mount flag (which a fixture tree
                // cannot enforce) and access(2) for this user.
                c.writable &= !e.read_only;
                e.contents = c;
            }
            None => {
                unresponsive.push(e.mount.mount_point.to_string_lossy().into_owned());
                e.contents.file_type = "unresponsive".into();
            }
        }
    }
}

/// Container roots the workspace's own engine made (a dind keeps them in
/// its /var/lib/docker volume) are its own children, not another tenant's:
/// they count as host data only when a host path leads to them.
fn own_engine_roots(entries: &mut [MountEntry]) {
    let host_derived: Vec<PathBuf> = entries
        .iter()
        .filter(|e| {
            matches!(
                e.class,
                MountClass::HostBind
                    | MountClass::HostRoot
                    | MountClass::HostTmpfs
                    | MountClass::Unknown
            )
        })
        .map(|e| e.mount.mount_point.clone())
        .collect();
    for e in entries.iter_mut() {
        if e.class != MountClass::ContainerRootfs || e.within.is_some() {
            continue;
        }
        let mp = &e.mount.mount_point;
        if !host_derived.iter().any(|h| h != mp && mp.starts_with(h)) {
            e.kinds.push("own-engine".into());
        }
    }
}

fn runtime_dir(c: &Contents) -> bool {
    let has = |list: &[&str]| c.runtime_markers.iter().any(|m| list.contains(&m.as_str()));
    has(ENGINE_RUN_MARKERS) && has(SYSTEM_RUN_MARKERS)
}

/// Host surfaces whose sub-mounts are theirs: a host /run with every
/// container's netns and root below it is one finding, not fifty.
fn is_surface(c: MountClass) -> bool {
    matches!(
        c,
        MountClass::HostTmpfs | MountClass::HostProcfs | MountClass::ContainerRootfs
    )
}

fn mark_within(entries: &mut [MountEntry]) {
    let surfaces: Vec<PathBuf> = entries
        .iter()
        .filter(|e| is_surface(e.class))
        .map(|e| e.mount.mount_point.clone())
        .collect();
    for e in entries.iter_mut() {
        let mp = &e.mount.mount_point;
        e.within = surfaces
            .iter()
            .filter(|s| *s != mp && mp.starts_with(s))
            .min_by_key(|s| s.as_os_str().len())
            .map(|s| s.to_string_lossy().into_owned());
    }
}

/// The engine the container's own engine files name, preferring its
/// /etc/hostname; containers/storage files are named podman or CRI-O by
/// the table as a whole (kubelet's files, the cgroup mounts' names).
fn engine_hint(entries: &mut [MountEntry]) -> Option<EngineHint> {
    let own: Vec<&Managed> = entries
        .iter()
        .filter(|e| e.within.is_none())
        .filter_map(|e| e.managed.as_ref())
        .collect();
    let roots: Vec<String> = entries
        .iter()
        .filter(|e| e.within.is_none() && e.mount.fstype.starts_with("cgroup"))
        .map(|e| e.mount.root.to_string_lossy().into_owned())
        .collect();
    let cgroup = engine::cgroup_engine(roots.iter().map(String::as_str));
    let storage = engine::resolve_storage_engine(&own, cgroup);
    for e in entries.iter_mut() {
        if let Some(m) = e.managed.as_mut().filter(|m| m.by == "containers-storage") {
            m.by = storage.into();
        }
    }
    let rank = |mp: &Path| {
        [
            "/etc/hostname",
            "/etc/hosts",
            "/etc/resolv.conf",
            "/run/.containerenv",
        ]
        .iter()
        .position(|p| mp == Path::new(p))
        .unwrap_or(9)
    };
    entries
        .iter()
        .filter(|e| e.within.is_none())
        .filter_map(|e| e.managed.as_ref().map(|m| (e, m)))
        .filter(|(_, m)| matches!(&*m.by, "docker" | "podman" | "cri-o" | "containerd" | "lxc"))
        .min_by_key(|(e, _)| rank(&e.mount.mount_point))
        .map(|(e, m)| EngineHint {
            engine: m.by.clone(),
            container_id: m
                .id
                .clone()
                .filter(|_| matches!(&*m.by, "docker" | "podman" | "cri-o")),
            evidence: e.mount.mount_point.to_string_lossy().into_owned(),
        })
}

fn inspect(host: &Host, mount_point: &Path, deep: bool) -> Contents {
    let p = host.path(mount_point);
    let meta = std::fs::symlink_metadata(&p);
    let file_type = match &meta {
        Err(_) => "missing",
        Ok(m) if m.file_type().is_dir() => "dir",
        Ok(m) if m.file_type().is_file() => "file",
        Ok(m) if m.file_type().is_socket() => "socket",
        Ok(_) => "other",
    };
    let mut c = Contents {
        file_type: file_type.into(),
        writable: host.access(mount_point, AccessFlags::W_OK).is_ok(),
        ident: meta.as_ref().ok().map(|m| (m.dev(), m.ino())),
        ..Contents::default()
    };
    if file_type != "dir" || !deep {
        return c;
    }
    let exists = |rel: &str| std::fs::symlink_metadata(p.join(rel)).is_ok();
    for m in HOME_MARKERS.iter().chain(CONFIG_MARKERS) {
        if exists(m) && !c.markers.iter().any(|x| x == m) {
            c.markers.push(m.to_string());
        }
    }
    c.runtime_markers = ENGINE_RUN_MARKERS
        .iter()
        .chain(SYSTEM_RUN_MARKERS)
        .filter(|m| exists(m))
        .map(|m| m.to_string())
        .collect();
    c.system_dirs = SYSTEM_DIRS
        .iter()
        .filter(|d| p.join(d).is_dir())
        .map(|d| d.to_string())
        .collect();
    c.git = exists(".git");
    if c.system_dirs.iter().any(|d| d == "etc") && c.system_dirs.iter().any(|d| d == "usr") {
        c.homes = homes_below(&p, mount_point);
    }
    if let Ok(rd) = std::fs::read_dir(&p) {
        // Budgeted: a mount of ~/src may hold thousands of entries, and only
        // the first repos are needed to make the point.
        for (n, ent) in rd.flatten().enumerate() {
            if n >= 2000 || c.child_repos.len() >= 50 {
                c.children_truncated = true;
                break;
            }
            let is_dir = ent.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && std::fs::symlink_metadata(ent.path().join(".git")).is_ok() {
                c.child_repos
                    .push(ent.file_name().to_string_lossy().into_owned());
            }
        }
        crate::util::sort::sort(&mut c.child_repos);
    }
    c
}

/// A system root's homes: the directories in its /home (the first 64)
/// and its /root, named as they are seen here (below `mount_point`).
fn homes_below(p: &Path, mount_point: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(p.join("home"))
        .map(|rd| {
            rd.flatten()
                .take(MAX_HOMES_LISTED)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| {
                    mount_point
                        .join("home")
                        .join(e.file_name())
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        })
        .unwrap_or_default();
    crate::util::sort::sort(&mut out);
    if p.join("root").is_dir() {
        out.push(mount_point.join("root").to_string_lossy().into_owned());
    }
    out
}

/// Homes listed as a host root's evidence.
const MAX_HOMES_LISTED: usize = 64;

/// The root filesystem is the machine's own (inventory.boundary says so:
/// a sandbox over the machine's root, as bubblewrap's `--ro-bind / /`,
/// firejail and unshare make): "/" is the host root, not an image's, and
/// the machine root's own directories bound onto themselves (firejail's
/// read-only /etc, /usr, /var; bwrap's recursive bind of what was mounted
/// below /) are part of it, reported with it. A workspace or a home bound
/// in from elsewhere stays what it is.
pub fn machine_root(host: &Host, facts: &mut MountFacts) {
    let Some(root_idx) = facts
        .mounts
        .iter()
        .rposition(|e| e.mount.mount_point == Path::new("/"))
    else {
        return;
    };
    let dev = facts.mounts[root_idx].mount.dev();
    let root_writable;
    {
        let e = &mut facts.mounts[root_idx];
        if e.class != MountClass::RootFs {
            return;
        }
        e.class = MountClass::HostRoot;
        let mut c = inspect(host, Path::new("/"), true);
        c.writable &= !e.read_only;
        root_writable = c.writable;
        e.contents = c;
    }
    for e in facts.mounts.iter_mut() {
        let self_bind = e.mount.dev() == dev
            && e.mount.mount_point != Path::new("/")
            && e.mount.root == e.mount.mount_point;
        // One that can be written where the root cannot stays a mount of
        // its own: what it opens is more than the root does.
        let no_more = !e.contents.writable || root_writable;
        if self_bind && no_more && e.within.is_none() && e.class == MountClass::HostBind {
            e.within = Some("/".into());
        }
    }
}

fn refine(
    e: &mut MountEntry,
    engine_devs: &[(u32, u32)],
    self_ident: Option<(u64, u64)>,
    self_path: Option<&Path>,
) {
    if !matches!(e.class, MountClass::HostBind | MountClass::Unknown) {
        return;
    }
    if e.contents.file_type == "socket" {
        e.class = MountClass::Socket;
        return;
    }
    // The probe itself, bind-mounted in (-v ./selfprobe:/usr/local/bin/selfprobe:ro):
    // the same inode as /proc/self/exe, or the very path it runs from.
    if e.contents.file_type == "file"
        && ((self_ident.is_some() && e.contents.ident == self_ident)
            || self_path == Some(e.mount.mount_point.as_path()))
    {
        e.class = MountClass::ProbeBinary;
        return;
    }
    let gofer = engine::is_gofer(&e.mount);
    let kata = e.mount.source == "kataShared";
    if gofer {
        // gVisor shows every bind as its own 9p mount of "/": the host path
        // is hidden, and "/" says nothing about it.
        e.kinds.push("gofer".into());
    }
    if kata {
        e.kinds.push("kata-shared".into());
    }
    if e.class == MountClass::Unknown {
        e.kinds.push("unknown-fstype".into());
    }
    let root = e.mount.root.to_string_lossy().into_owned();
    let mp = e.mount.mount_point.to_string_lossy().into_owned();
    let mp_name = mp.rsplit('/').next().unwrap_or("");
    let looks_like_os = e
        .contents
        .system_dirs
        .iter()
        .filter(|d| *d == "etc" || *d == "usr")
        .count()
        == 2;
    if root == "/" && !OVERLAY_FS.contains(&e.mount.fstype.as_str()) {
        let engine_fs = !gofer && !kata && engine_devs.contains(&e.mount.dev());
        if looks_like_os || engine_fs {
            e.class = MountClass::HostRoot;
            return;
        }
        if !gofer && !kata {
            e.kinds.push("whole-filesystem".into());
        }
    }
    let mut kinds: Vec<&'static str> = Vec::new();
    match home_of(&root).filter(|_| !gofer && !kata) {
        Some((_, None)) => kinds.push("home"),
        Some((_, Some(rest))) => {
            let first = rest.split('/').next().unwrap_or("");
            if first == ".ssh" {
                kinds.push("ssh");
            } else if first == ".cache"
                || rest.starts_with(".cargo/registry")
                || rest.starts_with("go/pkg/mod")
            {
                kinds.push("cache");
            } else if CONFIG_DIRS.contains(&first) {
                kinds.push("config");
            }
            // An agent's own directory (~/.codex, ~/.local/share/opencode):
            // its keys and sessions, whatever the first component says.
            if let Some((a, _)) = crate::catalog::agent_of_home_path(rest) {
                e.agent = Some(a.name.as_str().into());
                if !kinds.contains(&"config") && !kinds.contains(&"cache") {
                    kinds.push("config");
                }
            }
        }
        None => {}
    }
    let home_markers = e
        .contents
        .markers
        .iter()
        .filter(|m| HOME_MARKERS.contains(&m.as_str()))
        .count();
    if home_markers >= 2 && !kinds.contains(&"home") {
        kinds.push("home");
    }
    if mp_name == ".ssh" && !kinds.contains(&"ssh") {
        kinds.push("ssh");
    }
    if CONFIG_DIRS.contains(&mp_name) && !kinds.contains(&"config") {
        kinds.push("config");
    }
    // Bound under its own name (OpenHands' `-v ~/.openhands:/.openhands`),
    // or seen only by its mount point (gVisor hides the host path).
    if e.agent.is_none() && !kinds.contains(&"home") {
        if let Some((a, _)) = crate::catalog::agent_of_mount_point(&mp) {
            e.agent = Some(a.name.as_str().into());
            if !kinds.contains(&"config") {
                kinds.push("config");
            }
        }
    }
    if e.contents.git {
        kinds.push("git");
    }
    e.kinds.extend(kinds.into_iter().map(Text::from));
}

fn workspace_facts(
    host: &Host,
    entries: &[MountEntry],
    path: PathBuf,
    source: String,
    answered: bool,
) -> WorkspaceFacts {
    if !answered {
        // On a mount that did not answer: nothing is known, nothing is
        // claimed (probe.incomplete says so).
        return WorkspaceFacts {
            path,
            source,
            exists: false,
            answered,
            mount_id: None,
            parent_repos: Vec::new(),
        };
    }
    let exists = host.path(&path).is_dir();
    let on = entries
        .iter()
        .filter(|e| path.starts_with(&e.mount.mount_point))
        .max_by_key(|e| e.mount.mount_point.as_os_str().len());
    let mut parent_repos = Vec::new();
    if let Some(m) =
        on.filter(|m| m.class == MountClass::HostBind || m.class == MountClass::HostRoot)
    {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if !d.starts_with(&m.mount.mount_point) {
                break;
            }
            if std::fs::symlink_metadata(host.path(d).join(".git")).is_ok() {
                parent_repos.push(d.to_string_lossy().into_owned());
            }
            dir = d.parent();
        }
    }
    WorkspaceFacts {
        path,
        source,
        exists,
        answered,
        mount_id: on.map(|m| m.mount.id),
        parent_repos,
    }
}

/// Marks the workspace and allowed mounts; kept apart from `collect` so that
/// the policy, not the filesystem, decides what is allowed.
pub fn apply_policy(facts: &mut MountFacts, policy: &Policy) {
    let ws = facts.workspace.clone();
    for e in &mut facts.mounts {
        e.allowed = policy.mount_allowed(&e.mount.mount_point.to_string_lossy());
        let Some(w) = &ws else { continue };
        let mp = &e.mount.mount_point;
        match e.class {
            MountClass::HostBind | MountClass::Unknown if *mp == w.path => {
                e.class = MountClass::Workspace;
            }
            // A workspace that is itself a volume (GitLab's docker executor
            // clones into a volume at /builds, VS Code's clone-in-volume
            // mounts one at /workspaces/NAME): the volume is the workspace,
            // not storage that outlives it.
            MountClass::Volume if w.path.starts_with(mp) => {
                e.class = MountClass::Workspace;
                e.kinds.push("volume".into());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes() {
        assert_eq!(home_of("/home/alice"), Some(("/home/alice", None)));
        assert_eq!(
            home_of("/home/alice/.ssh"),
            Some(("/home/alice", Some(".ssh")))
        );
        assert_eq!(home_of("/root"), Some(("/root", None)));
        assert_eq!(home_of("/rootfs"), None);
        assert_eq!(home_of("/home/"), None);
        assert_eq!(home_of("/srv/x"), None);
    }

    fn classes(text: &str) -> Vec<(String, MountClass)> {
        let (mounts, errs) = parse_mountinfo(text);
        assert!(errs.is_empty(), "{errs:?}");
        let t = Table::new(&mounts);
        mounts
            .iter()
            .map(|m| {
                let s = engine::shape(m);
                (
                    m.mount_point.to_string_lossy().into_owned(),
                    base_class(m, s.as_ref(), &t),
                )
            })
            .collect()
    }

    fn hidden(text: &str) -> Vec<(u64, bool)> {
        let (mounts, errs) = parse_mountinfo(text);
        assert!(errs.is_empty(), "{errs:?}");
        let mut entries: Vec<MountEntry> = mounts
            .into_iter()
            .map(|m| MountEntry {
                read_only: m.read_only(),
                class: MountClass::HostBind,
                kinds: Vec::new(),
                allowed: false,
                managed: None,
                within: None,
                hidden: false,
                agent: None,
                contents: Contents::default(),
                mount: m,
            })
            .collect();
        mark_hidden(&mut entries);
        entries.iter().map(|e| (e.mount.id, e.hidden)).collect()
    }

    /// Captured in firejail and systemd-nspawn (tests/data/captures/boundary):
    /// a mount covered by another on the same parent at or above its point,
    /// or stacked on, is hidden; so is what sits on a hidden one.
    #[test]
    fn covered_mounts_are_hidden() {
        let h = hidden(
            "51 48 254:0 / / rw - ext4 /dev/vda rw\n71 51 254:0 /var/lib/docker /var/lib/docker rw - ext4 /dev/vda rw\n81 51 254:0 /var /var ro - ext4 /dev/vda rw\n82 81 254:0 /var/lib/docker /var/lib/docker rw - ext4 /dev/vda rw\n84 82 254:0 /var/lib/docker /var/lib/docker ro - ext4 /dev/vda rw\n120 51 0:44 / /run rw - tmpfs tmpfs rw\n124 120 254:0 /usr/lib/os-release /run/host/os-release rw - ext4 /dev/vda rw\n121 120 0:44 /host /run/host ro - tmpfs tmpfs rw\n122 121 254:0 /usr/lib/os-release /run/host/os-release ro - ext4 /dev/vda rw\n125 124 0:9 / /run/host/os-release/x rw - tmpfs tmpfs rw\n",
        );
        let is = |id: u64| h.iter().find(|(i, _)| *i == id).unwrap().1;
        assert!(!is(51));
        assert!(is(71), "under /var, mounted after it");
        assert!(!is(81));
        assert!(is(82), "84 is stacked on it");
        assert!(!is(84));
        assert!(is(124), "/run/host was mounted over it");
        assert!(!is(121) && !is(122));
        assert!(is(125), "on a hidden mount");
        // A root that is its own parent (gVisor's table) covers nothing.
        let h = hidden("8 8 0:8 / / rw - 9p none rw\n9 8 0:9 / /key ro - 9p none ro\n10 8 0:6 / /dev rw - tmpfs none rw\n11 10 0:7 / /dev/pts rw - devpts none rw\n");
        assert_eq!(h, vec![(8, false), (9, false), (10, false), (11, false)]);
        // The same point twice on one parent: the later line stands.
        let h = hidden("1 0 8:1 / / rw - ext4 /dev/sda rw\n2 1 8:1 /a /a rw - ext4 /dev/sda rw\n3 1 8:1 /b /a rw - ext4 /dev/sda rw\n");
        assert_eq!(h, vec![(1, false), (2, true), (3, false)]);
    }

    #[test]
    fn a_second_procfs_and_the_hosts_run() {
        let c = classes(
            "1 0 0:40 / / rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A,upperdir=/var/lib/docker/overlay2/x/diff\n\
             2 1 0:41 / /proc rw - proc proc rw\n\
             3 2 0:41 /bus /proc/bus ro - proc proc rw\n\
             4 1 0:19 / /host/proc ro - proc proc rw\n\
             5 1 0:23 / /host/run ro - tmpfs tmpfs rw,mode=755\n\
             6 5 0:4 net:[4026532317] /host/run/netns/cni-1 rw - nsfs nsfs rw\n\
             7 5 0:44 / /host/run/containerd/x/rootfs rw - overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/42/fs\n\
             8 1 0:23 /datadog /var/run/datadog rw - tmpfs tmpfs rw\n\
             9 1 0:50 / /scratch rw - tmpfs tmpfs rw\n\
             10 1 0:40 /product_name /sys/devices/virtual/dmi/id/product_name ro - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A\n\
             11 1 0:60 / /mnt/z rw - zonefs2 /dev/x rw\n",
        );
        let get = |p: &str| c.iter().find(|(m, _)| m == p).unwrap().1;
        assert_eq!(get("/proc/bus"), MountClass::Pseudo);
        assert_eq!(get("/host/proc"), MountClass::HostProcfs);
        assert_eq!(get("/host/run"), MountClass::HostTmpfs);
        assert_eq!(get("/host/run/netns/cni-1"), MountClass::Pseudo);
        assert_eq!(
            get("/host/run/containerd/x/rootfs"),
            MountClass::ContainerRootfs
        );
        assert_eq!(
            get("/var/run/datadog"),
            MountClass::HostBind,
            "a directory of the host's /run"
        );
        assert_eq!(get("/scratch"), MountClass::Tmpfs);
        assert_eq!(
            get("/sys/devices/virtual/dmi/id/product_name"),
            MountClass::RootFs
        );
        assert_eq!(
            get("/mnt/z"),
            MountClass::Unknown,
            "unknown is never pseudo"
        );
    }
}
