//! Phase 1: every mount from /proc/self/mountinfo, classified. Field 4 (the
//! path inside the source filesystem) is what tells a host home or the host
//! root from a volume or an engine-managed file.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::unistd::AccessFlags;
use serde::Serialize;

use crate::finding::Finding;
use crate::host::{os_path, Host};
use crate::policy::Policy;

#[derive(Debug, Clone, Serialize)]
pub struct Mount {
    pub id: u64,
    pub parent: u64,
    pub major: u32,
    pub minor: u32,
    #[serde(serialize_with = "lossy")]
    pub root: PathBuf,
    #[serde(serialize_with = "lossy")]
    pub mount_point: PathBuf,
    pub options: Vec<String>,
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
}

/// Parses mountinfo (proc(5)). Lines that do not parse are returned as
/// errors rather than dropped silently, so a lying /proc shows up.
pub fn parse_mountinfo(text: &str) -> (Vec<Mount>, Vec<String>) {
    let mut mounts = Vec::new();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Some(m) => mounts.push(m),
            None => errors.push(format!("mountinfo line {} does not parse", n + 1)),
        }
    }
    (mounts, errors)
}

fn parse_line(line: &str) -> Option<Mount> {
    let (pre, post) = line.split_once(" - ")?;
    let mut f = pre.split(' ');
    let id = f.next()?.parse().ok()?;
    let parent = f.next()?.parse().ok()?;
    let (major, minor) = f.next()?.split_once(':')?;
    let root = f.next()?;
    let mount_point = f.next()?;
    let options = f.next()?;
    let mut p = post.split(' ');
    let fstype = p.next()?;
    let source = p.next().unwrap_or("");
    let super_options = p.next().unwrap_or("");
    if !root.starts_with('/') || !mount_point.starts_with('/') {
        return None;
    }
    Some(Mount {
        id,
        parent,
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        root: os_path(unescape(root)),
        mount_point: os_path(unescape(mount_point)),
        options: options.split(',').map(str::to_string).collect(),
        fstype: String::from_utf8_lossy(&unescape(fstype)).into_owned(),
        source: String::from_utf8_lossy(&unescape(source)).into_owned(),
        super_options: super_options.to_string(),
    })
}

/// The kernel escapes space, tab, newline and backslash as \ooo octal.
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = (oct[0] - b'0') as u32 * 64
                    + (oct[1] - b'0') as u32 * 8
                    + (oct[2] - b'0') as u32;
                if v <= 255 {
                    out.push(v as u8);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MountClass {
    /// The container's own root filesystem.
    RootFs,
    /// proc, sysfs, cgroup, devpts, mqueue and the like.
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
}

/// What the probe saw at one mount point, beyond the mountinfo line.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Contents {
    /// "dir", "file", "socket", "other", "missing", or "unresponsive" for
    /// a mount that did not answer in time.
    pub file_type: &'static str,
    /// access(2) W_OK for this process.
    pub writable: bool,
    /// Home and credential markers present at the mount point (".ssh", ".aws"…).
    pub markers: Vec<String>,
    /// Top-level directories of host-root candidates (etc, usr…).
    pub system_dirs: Vec<String>,
    pub git: bool,
    /// Immediate children that are git repositories (bounded).
    pub child_repos: Vec<String>,
    pub children_truncated: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountEntry {
    #[serde(flatten)]
    pub mount: Mount,
    pub class: MountClass,
    pub kinds: Vec<&'static str>,
    pub read_only: bool,
    pub allowed: bool,
    #[serde(flatten)]
    pub contents: Contents,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct MountFacts {
    pub mounts: Vec<MountEntry>,
    pub workspace: Option<WorkspaceFacts>,
    pub parse_errors: Vec<String>,
    /// Host mounts that did not answer lstat(2) in time (a hung FUSE or NFS
    /// server): their contents are unknown.
    pub unresponsive: Vec<String>,
}

const PSEUDO_FS: &[&str] = &[
    "proc",
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

/// Path fragments of engine-owned storage; a bind from there is the engine's
/// own plumbing (hosts, resolv.conf, passwd for --read-only), not a host path.
const ENGINE_STORAGE: &[&str] = &[
    "/containers/storage/overlay-containers/",
    "/docker/containers/",
    "/kubelet/pods/",
    "/containerd/io.containerd.",
    "/lib/docker/image/",
];

const VOLUME_STORAGE: &[&str] = &["/containers/storage/volumes/", "/docker/volumes/"];

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
const CONFIG_MARKERS: &[&str] = &[
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
    const DISK: &[&str] = &[
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
    ];
    DISK.contains(&fstype) || fstype.starts_with("fuse")
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
    super::map_until(
        "mount-inspect",
        points,
        INSPECT_WORKERS,
        deadline,
        move |p| inspect(&host, p, true),
    )
}

/// Collects mountinfo and looks at each host-derived mount point. `workspace`
/// is where the workspace should be, with where that came from.
pub fn collect(
    host: &Host,
    workspace: Option<(PathBuf, String)>,
    deadline: Instant,
) -> Result<MountFacts, String> {
    let text = host
        .read("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let (mounts, parse_errors) = parse_mountinfo(&text);
    if mounts.is_empty() {
        return Err("/proc/self/mountinfo lists no mounts".into());
    }
    let engine_devs: Vec<(u32, u32)> = mounts
        .iter()
        .filter(|m| is_engine_storage(&m.root.to_string_lossy()))
        .map(|m| (m.major, m.minor))
        .collect();
    // A tmpfs that this container mounted whole; binds from it (podman masks
    // /proc/keys with /dev's tmpfs "/null") are internal, not host paths.
    let own_tmpfs: Vec<(u32, u32)> = mounts
        .iter()
        .filter(|m| matches!(m.fstype.as_str(), "tmpfs" | "ramfs") && m.root == Path::new("/"))
        .map(|m| (m.major, m.minor))
        .collect();
    let classes: Vec<MountClass> = mounts.iter().map(|m| base_class(m, &own_tmpfs)).collect();
    let to_inspect: Vec<PathBuf> = mounts
        .iter()
        .zip(&classes)
        .filter(|(_, c)| matches!(c, MountClass::HostBind))
        .map(|(m, _)| m.mount_point.clone())
        .collect();
    let wait_until = std::cmp::min(
        Instant::now() + INSPECT_WAIT,
        deadline
            .checked_sub(Duration::from_millis(200))
            .unwrap_or(deadline),
    );
    let mut inspected = inspect_all(host, to_inspect, wait_until).into_iter();
    let mut unresponsive = Vec::new();
    let mut entries: Vec<MountEntry> = mounts
        .into_iter()
        .zip(classes)
        .map(|(m, class)| {
            let contents = if matches!(class, MountClass::HostBind) {
                match inspected.next().flatten() {
                    Some(mut c) => {
                        // Both must allow it: the mount flag (which a fixture
                        // tree cannot enforce) and access(2) for this user.
                        c.writable &= !m.read_only();
                        c
                    }
                    None => {
                        unresponsive.push(m.mount_point.to_string_lossy().into_owned());
                        Contents {
                            file_type: "unresponsive",
                            ..Contents::default()
                        }
                    }
                }
            } else {
                Contents {
                    file_type: "",
                    ..Contents::default()
                }
            };
            MountEntry {
                read_only: m.read_only(),
                class,
                kinds: Vec::new(),
                allowed: false,
                contents,
                mount: m,
            }
        })
        .collect();
    for e in &mut entries {
        refine(e, &engine_devs);
    }
    let workspace = workspace.map(|(path, source)| {
        let hung = unresponsive.iter().any(|u| path.starts_with(u));
        workspace_facts(host, &entries, path, source, !hung)
    });
    Ok(MountFacts {
        mounts: entries,
        workspace,
        parse_errors,
        unresponsive,
    })
}

fn is_engine_storage(root: &str) -> bool {
    ENGINE_STORAGE.iter().any(|p| root.contains(p))
}

fn base_class(m: &Mount, own_tmpfs: &[(u32, u32)]) -> MountClass {
    let root = m.root.to_string_lossy();
    let fstype = m.fstype.as_str();
    if m.mount_point == Path::new("/") {
        return MountClass::RootFs;
    }
    if PSEUDO_FS.contains(&fstype) {
        return MountClass::Pseudo;
    }
    if fstype == "devtmpfs"
        || (m.mount_point.starts_with("/dev") && root != "/" && fstype == "tmpfs")
    {
        return MountClass::Device;
    }
    if VOLUME_STORAGE.iter().any(|p| root.contains(p)) {
        return MountClass::Volume;
    }
    if is_engine_storage(&root) {
        return MountClass::EngineManaged;
    }
    // A tmpfs whose root is not "/" is part of some other tmpfs (the host's
    // /run or /tmp); overlay away from "/" is a host directory layered over.
    let tmpfs = matches!(fstype, "tmpfs" | "ramfs");
    let host_derived = is_disk_fs(fstype)
        || (tmpfs && root != "/" && !own_tmpfs.contains(&(m.major, m.minor)))
        || fstype == "overlay";
    if host_derived {
        MountClass::HostBind
    } else if tmpfs {
        MountClass::Tmpfs
    } else {
        MountClass::Pseudo
    }
}

fn inspect(host: &Host, mount_point: &Path, deep: bool) -> Contents {
    let p = host.path(mount_point);
    let file_type = match std::fs::symlink_metadata(&p) {
        Err(_) => "missing",
        Ok(m) if m.file_type().is_dir() => "dir",
        Ok(m) if m.file_type().is_file() => "file",
        Ok(m) if m.file_type().is_socket() => "socket",
        Ok(_) => "other",
    };
    let mut c = Contents {
        file_type,
        writable: host.access(mount_point, AccessFlags::W_OK).is_ok(),
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
    c.system_dirs = SYSTEM_DIRS
        .iter()
        .filter(|d| p.join(d).is_dir())
        .map(|d| d.to_string())
        .collect();
    c.git = exists(".git");
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
        c.child_repos.sort();
    }
    c
}

fn refine(e: &mut MountEntry, engine_devs: &[(u32, u32)]) {
    if e.class != MountClass::HostBind {
        return;
    }
    if e.contents.file_type == "socket" {
        e.class = MountClass::Socket;
        return;
    }
    let root = e.mount.root.to_string_lossy().into_owned();
    let mp = e.mount.mount_point.to_string_lossy().into_owned();
    let mp_name = mp.rsplit('/').next().unwrap_or("");
    if root == "/" && e.mount.fstype != "overlay" {
        let looks_like_os = e
            .contents
            .system_dirs
            .iter()
            .filter(|d| *d == "etc" || *d == "usr")
            .count()
            == 2;
        let engine_fs = engine_devs.contains(&(e.mount.major, e.mount.minor));
        if looks_like_os || engine_fs {
            e.class = MountClass::HostRoot;
            return;
        }
        e.kinds.push("whole-filesystem");
    }
    let mut kinds: Vec<&'static str> = Vec::new();
    match home_of(&root) {
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
    if e.contents.git {
        kinds.push("git");
    }
    e.kinds.extend(kinds);
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
        if let Some(w) = &ws {
            if e.mount.mount_point == w.path && e.class == MountClass::HostBind {
                e.class = MountClass::Workspace;
            }
        }
    }
}

pub fn evaluate(facts: &MountFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let ws = facts.workspace.as_ref();
    match ws {
        None => out.push(
            Finding::new(
                "mount.workspace-missing",
                "(none)",
                "no workspace was declared (policy workspace.path, --workspace) and the working directory is not in a git repository, so no mount can be told apart as the workspace",
            )
            .with("declared", false),
        ),
        Some(w) if w.answered && !w.exists => out.push(
            Finding::new(
                "mount.workspace-missing",
                w.path.to_string_lossy(),
                format!("the workspace {} (from {}) does not exist", w.path.display(), w.source),
            )
            .with("workspace_source", w.source.clone()),
        ),
        Some(_) => {}
    }
    let ws_path = ws.map(|w| w.path.clone());

    for e in &facts.mounts {
        let mp = e.mount.mount_point.to_string_lossy().into_owned();
        let with_mount = |f: Finding| {
            f.with("mount_point", mp.clone())
                .with("host_path", e.mount.root.to_string_lossy().into_owned())
                .with("fstype", e.mount.fstype.clone())
                .with("source", e.mount.source.clone())
                .with("read_only", e.read_only)
                .with("writable", e.contents.writable)
        };
        match e.class {
            MountClass::HostRoot => out.push(
                with_mount(Finding::new(
                    "mount.host-root",
                    &mp,
                    format!(
                        "{mp} is the root of a host filesystem ({} {})",
                        e.mount.fstype, e.mount.source
                    ),
                ))
                .with("system_dirs", e.contents.system_dirs.clone()),
            ),
            MountClass::Socket => out.push(with_mount(Finding::new(
                "mount.socket",
                &mp,
                format!(
                    "{mp} is a socket bind-mounted from the host path {}",
                    e.mount.root.display()
                ),
            ))),
            MountClass::HostBind | MountClass::Workspace => {
                let mut flagged = false;
                if e.kinds.contains(&"home") {
                    flagged = true;
                    out.push(
                        with_mount(Finding::new(
                            "mount.home-directory",
                            &mp,
                            format!(
                                "{mp} is a home directory from the host ({})",
                                e.mount.root.display()
                            ),
                        ))
                        .with("markers", e.contents.markers.clone()),
                    );
                }
                if e.kinds.contains(&"ssh") {
                    flagged = true;
                    out.push(with_mount(Finding::new(
                        "mount.ssh-directory",
                        &mp,
                        format!(
                            "{mp} is an .ssh directory from the host ({})",
                            e.mount.root.display()
                        ),
                    )));
                }
                if e.kinds.contains(&"config") {
                    flagged = true;
                    out.push(with_mount(Finding::new(
                        "mount.config-directory",
                        &mp,
                        format!(
                            "{mp} is a credential-bearing configuration path from the host ({})",
                            e.mount.root.display()
                        ),
                    )));
                }
                for m in &e.contents.markers {
                    let sub = format!("{}/{m}", mp.trim_end_matches('/'));
                    if m == ".ssh" && !e.kinds.contains(&"ssh") {
                        flagged = true;
                        out.push(with_mount(Finding::new(
                            "mount.ssh-directory",
                            &sub,
                            format!(
                                "{sub} is visible: the host mount at {mp} holds an .ssh directory"
                            ),
                        )));
                    } else if CONFIG_MARKERS.contains(&m.as_str()) && !e.kinds.contains(&"config") {
                        flagged = true;
                        out.push(with_mount(Finding::new(
                            "mount.config-directory",
                            &sub,
                            format!("{sub} is visible: the host mount at {mp} holds credential configuration"),
                        )));
                    }
                }
                if e.class == MountClass::Workspace || e.allowed {
                    continue;
                }
                let is_ancestor = ws_path
                    .as_ref()
                    .is_some_and(|w| w.starts_with(&e.mount.mount_point));
                if is_ancestor {
                    let w = ws.expect("ancestor implies a workspace");
                    if !w.parent_repos.is_empty() && w.mount_id == Some(e.mount.id) {
                        out.push(with_mount(Finding::new(
                            "mount.parent-repo",
                            w.parent_repos[0].clone(),
                            format!(
                                "the workspace {} is inside the repository {} and the host mount at {mp} shows all of it",
                                w.path.display(),
                                w.parent_repos[0]
                            ),
                        ))
                        .with("parent_repos", w.parent_repos.clone()));
                        continue;
                    }
                    if e.contents.git {
                        out.push(with_mount(Finding::new(
                            "mount.parent-repo",
                            &mp,
                            format!("the repository at {mp} contains the workspace {} and is mounted from the host", w.path.display()),
                        )));
                        continue;
                    }
                }
                let mut repo_flagged = false;
                if e.contents.git && !is_ancestor {
                    repo_flagged = true;
                    out.push(with_mount(Finding::new(
                        "mount.unrelated-repo",
                        &mp,
                        format!(
                            "{mp} is another git repository mounted from the host ({})",
                            e.mount.root.display()
                        ),
                    )));
                }
                for child in &e.contents.child_repos {
                    let sub = format!("{}/{child}", mp.trim_end_matches('/'));
                    if ws_path
                        .as_ref()
                        .is_some_and(|w| Path::new(&sub) == w || w.starts_with(&sub))
                    {
                        continue;
                    }
                    repo_flagged = true;
                    out.push(with_mount(Finding::new(
                        "mount.unrelated-repo",
                        &sub,
                        format!("{sub} is a git repository visible through the host mount at {mp}"),
                    )));
                }
                if !flagged && !repo_flagged {
                    let why = if is_ancestor {
                        "it contains the workspace and shows everything beside it"
                    } else {
                        "it is neither the workspace nor in workspace.allow_mounts"
                    };
                    out.push(
                        with_mount(Finding::new(
                            "mount.unexpected",
                            &mp,
                            format!(
                                "{mp} is mounted from the host path {}: {why}",
                                e.mount.root.display()
                            ),
                        ))
                        .with("kinds", e.kinds.clone()),
                    );
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_unescapes() {
        let text = "36 35 98:0 /mnt\\040dir /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
                    garbage\n\
                    37 35 0:5 / /proc rw - proc proc rw\n";
        let (m, errs) = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(errs.len(), 1);
        assert_eq!(m[0].root, PathBuf::from("/mnt dir"));
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/with space"));
        assert_eq!((m[0].major, m[0].minor), (98, 0));
        assert_eq!(m[0].fstype, "ext3");
        assert_eq!(m[1].fstype, "proc");
    }

    #[test]
    fn unescape_edge_cases() {
        assert_eq!(unescape("a\\134b"), b"a\\b");
        assert_eq!(unescape("a\\012b"), b"a\nb");
        assert_eq!(unescape("\\"), b"\\");
        assert_eq!(unescape("\\12"), b"\\12");
        assert_eq!(unescape("\\999"), b"\\999");
        assert_eq!(unescape("x\\011"), b"x\t");
    }

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
}
