//! Phase 1's findings from the mount table (src/facts/mounts/mod.rs gathers and
//! classifies it): host surfaces, the workspace mount, engine-managed files
//! and what the mounts hold.

use crate::finding::Code;
use std::path::Path;

use crate::facts::boundary::{Boundary, Kind};
use crate::facts::mounts::{MountClass, MountEntry, MountFacts, WorkspaceFacts, CONFIG_MARKERS};
use crate::finding::{Finding, Severity};

/// The mounts inside a host surface, counted by what they are.
fn surface_contents(facts: &MountFacts, mp: &str) -> (usize, Vec<String>, usize) {
    let inside: Vec<&MountEntry> = facts
        .mounts
        .iter()
        .filter(|e| e.within.as_deref() == Some(mp))
        .collect();
    let roots: Vec<String> = inside
        .iter()
        .filter(|e| e.class == MountClass::ContainerRootfs)
        .map(|e| e.mount.mount_point.to_string_lossy().into_owned())
        .collect();
    let netns = inside.iter().filter(|e| e.mount.fstype == "nsfs").count();
    (inside.len(), roots, netns)
}

/// One top-level mount as its findings describe it: the mount point, where
/// it comes from in words, and the evidence every one of them carries.
struct Shown<'a> {
    e: &'a MountEntry,
    mp: String,
    from: String,
    /// The source path, or null where a sandbox hides it.
    host_path: serde_json::Value,
}

impl<'a> Shown<'a> {
    fn new(e: &'a MountEntry) -> Shown<'a> {
        // A sandbox hides the host path: say so rather than show its "/".
        let hidden = e.kinds.contains(&"gofer") || e.kinds.contains(&"kata-shared");
        let host_path = if hidden {
            serde_json::Value::Null
        } else {
            e.mount.root.to_string_lossy().into_owned().into()
        };
        let from = if e.kinds.contains(&"gofer") {
            "gVisor's gofer (the host path is not visible)".to_string()
        } else if e.kinds.contains(&"kata-shared") {
            "Kata's shared directory (the host path is not visible)".to_string()
        } else if e.class == MountClass::Unknown {
            format!(
                "the host path {} on {} {} filesystem selfprobe does not know",
                e.mount.root.display(),
                crate::util::text::article(&e.mount.fstype),
                e.mount.fstype
            )
        } else {
            format!("the host path {}", e.mount.root.display())
        };
        Shown {
            e,
            mp: e.mount.mount_point.to_string_lossy().into_owned(),
            from,
            host_path,
        }
    }

    /// A finding on this mount (or a path below it), with the mount's evidence.
    fn finding(&self, code: Code, subject: &str, msg: String) -> Finding {
        let e = self.e;
        Finding::new(code, subject, msg)
            .with("mount_point", self.mp.clone())
            .with("host_path", self.host_path.clone())
            .with("fstype", e.mount.fstype.clone())
            .with("source", e.mount.source.clone())
            .with("read_only", e.read_only)
            .with("writable", e.contents.writable)
    }
}

/// `bd` is the boundary: on the machine itself (no container) every
/// container's root filesystem belongs to the machine's own engines (a
/// Docker whose /var/lib/docker is a bind mount shows its containers'
/// roots under a host path), so none is "another container's".
pub fn evaluate(facts: &MountFacts, bd: &Boundary) -> Vec<Finding> {
    let on_the_machine = bd.kind == Kind::Host;
    let mut out = workspace_findings(facts);
    for e in facts.mounts.iter().filter(|e| e.reported()) {
        let m = Shown::new(e);
        let mp = &m.mp;
        match e.class {
            MountClass::HostRoot => out.push(host_root(&m)),
            MountClass::Socket => out.push(m.finding(
                Code::MountSocket,
                mp,
                format!("{mp} is a socket bind-mounted from {}", m.from),
            )),
            MountClass::HostProcfs => out.push(host_procfs(facts, &m)),
            MountClass::HostTmpfs => out.push(host_tmpfs(facts, &m)),
            MountClass::ContainerRootfs if !e.kinds.contains(&"own-engine") && !on_the_machine => {
                out.push(container_rootfs(&m))
            }
            MountClass::HostBind | MountClass::Workspace | MountClass::Unknown => {
                host_path_findings(&m, facts.workspace.as_ref(), &mut out)
            }
            _ => {}
        }
    }
    out
}

/// mount.workspace-missing: none declared, or declared and not there.
fn workspace_findings(facts: &MountFacts) -> Vec<Finding> {
    match facts.workspace.as_ref() {
        None => vec![Finding::new(
            Code::MountWorkspaceMissing,
            "(none)",
            "no workspace was declared (policy workspace.path, --workspace) and the working directory is not in a git repository, so no mount can be told apart as the workspace",
        )
        .with("declared", false)],
        Some(w) if w.answered && !w.exists => vec![Finding::new(
            Code::MountWorkspaceMissing,
            w.path.to_string_lossy(),
            format!("the workspace {} (from {}) does not exist", w.path.display(), w.source),
        )
        .with("workspace_source", w.source.clone())],
        Some(_) => Vec::new(),
    }
}

/// mount.host-root: critical where this process can write it, high where
/// it can only read it (every file of the host this user may read, its
/// homes' credentials among them, but nothing changed). "/" itself is the
/// machine's root seen from a sandbox over it (bubblewrap's
/// `--ro-bind / /`, firejail, unshare).
fn host_root(m: &Shown) -> Finding {
    let (e, mp) = (m.e, &m.mp);
    let how = if e.contents.writable {
        "writable by this process"
    } else {
        "read-only here"
    };
    let homes = if e.contents.homes.is_empty() {
        String::new()
    } else {
        format!(
            "; the host's homes {} are below it",
            e.contents.homes.join(", ")
        )
    };
    let what = if mp == "/" {
        format!(
            "/ is the machine's own root filesystem ({} {}), not an image's: this sandbox sees the machine's files, {how}{homes}",
            e.mount.fstype, e.mount.source
        )
    } else {
        format!(
            "{mp} is the root of a host filesystem ({} {}), {how}{homes}",
            e.mount.fstype, e.mount.source
        )
    };
    let sev = if e.contents.writable {
        Severity::Critical
    } else {
        Severity::High
    };
    m.finding(Code::MountHostRoot, mp, what)
        .severity(sev)
        .with("system_dirs", e.contents.system_dirs.clone())
        .with("homes", e.contents.homes.clone())
}

fn host_procfs(facts: &MountFacts, m: &Shown) -> Finding {
    let (e, mp) = (m.e, &m.mp);
    m.finding(
        Code::MountHostProcfs,
        mp,
        format!(
            "{mp} is a procfs other than this container's own /proc (device {}:{}): it shows another PID namespace's processes, as a host's /proc mounted for an agent does",
            e.mount.major, e.mount.minor
        ),
    )
    .with("device", format!("{}:{}", e.mount.major, e.mount.minor))
    .with(
        "own_proc_device",
        facts
            .mounts
            .iter()
            .rev()
            .find(|o| o.mount.fstype == "proc" && o.mount.mount_point == Path::new("/proc"))
            .map(|o| format!("{}:{}", o.mount.major, o.mount.minor)),
    )
}

fn host_tmpfs(facts: &MountFacts, m: &Shown) -> Finding {
    let (e, mp) = (m.e, &m.mp);
    let (n, roots, netns) = surface_contents(facts, mp);
    let mut what = Vec::new();
    if !e.contents.runtime_markers.is_empty() {
        what.push(format!(
            "it holds {}",
            e.contents.runtime_markers.join(", ")
        ));
    }
    if netns > 0 {
        what.push(format!("{netns} network namespace(s) are bound below it"));
    }
    if !roots.is_empty() {
        what.push(format!(
            "{} other container root filesystem(s) are mounted below it",
            roots.len()
        ));
    }
    m.finding(
        Code::MountHostTmpfs,
        mp,
        format!(
            "{mp} is a tmpfs of the host mounted whole, its runtime directory (/run): {}",
            what.join("; ")
        ),
    )
    .with("runtime_markers", e.contents.runtime_markers.clone())
    .with("submounts", n)
    .with("netns_binds", netns)
    .with(
        "container_rootfs",
        roots.into_iter().take(20).collect::<Vec<_>>(),
    )
}

fn container_rootfs(m: &Shown) -> Finding {
    let (e, mp) = (m.e, &m.mp);
    let upper = e
        .mount
        .super_options
        .split(',')
        .find_map(|o| o.strip_prefix("upperdir="))
        .map(str::to_string);
    m.finding(
        Code::MountContainerRootfs,
        mp,
        format!(
            "{mp} is another container's root filesystem ({} built on the engine's image layers), reached through a host path",
            e.mount.fstype
        ),
    )
    .with("upperdir", upper)
}

/// A host path, the workspace or an unknown filesystem: what it holds
/// (a home, .ssh, credential configuration), then, unless it is the
/// workspace or allowed, how it relates to the workspace's repository, and
/// mount.unexpected when nothing else was said of it.
fn host_path_findings(m: &Shown, ws: Option<&WorkspaceFacts>, out: &mut Vec<Finding>) {
    let (e, mp) = (m.e, &m.mp);
    let flagged = holdings(m, out);
    if e.class == MountClass::Workspace || e.allowed {
        return;
    }
    let is_ancestor = ws.is_some_and(|w| w.path.starts_with(&e.mount.mount_point));
    if let Some(w) = ws.filter(|_| is_ancestor) {
        if !w.parent_repos.is_empty() && w.mount_id == Some(e.mount.id) {
            out.push(
                m.finding(
                    Code::MountParentRepo,
                    &w.parent_repos[0],
                    format!(
                        "the workspace {} is inside the repository {} and the host mount at {mp} shows all of it",
                        w.path.display(),
                        w.parent_repos[0]
                    ),
                )
                .with("parent_repos", w.parent_repos.clone()),
            );
            return;
        }
        if e.contents.git {
            out.push(m.finding(
                Code::MountParentRepo,
                mp,
                format!(
                    "the repository at {mp} contains the workspace {} and is mounted from the host",
                    w.path.display()
                ),
            ));
            return;
        }
    }
    let repo_flagged = other_repos(m, ws, is_ancestor, out);
    if !flagged && !repo_flagged {
        let why = if is_ancestor {
            "it contains the workspace and shows everything beside it"
        } else {
            "it is neither the workspace nor in workspace.allow_mounts"
        };
        out.push(
            m.finding(
                Code::MountUnexpected,
                mp,
                format!("{mp} is mounted from {}: {why}", m.from),
            )
            .with("kinds", e.kinds.clone()),
        );
    }
}

/// mount.home-directory, mount.ssh-directory and mount.config-directory:
/// what the mount is, then what it holds at its top. True if any was said.
fn holdings(m: &Shown, out: &mut Vec<Finding>) -> bool {
    let (e, mp) = (m.e, &m.mp);
    let mut flagged = false;
    for (kind, code, what) in [
        ("home", Code::MountHomeDirectory, "a home directory"),
        ("ssh", Code::MountSshDirectory, "an .ssh directory"),
        (
            "config",
            Code::MountConfigDirectory,
            "a credential-bearing configuration path",
        ),
    ] {
        if !e.kinds.contains(&kind) {
            continue;
        }
        flagged = true;
        let root = e.mount.root.display();
        let agent = match e.agent.filter(|_| kind == "config") {
            Some(a) => format!(", {a}'s own configuration, with its sessions and keys"),
            None => String::new(),
        };
        let f = m.finding(
            code,
            mp,
            format!("{mp} is {what} from the host ({root}){agent}"),
        );
        out.push(match (kind, e.agent) {
            ("home", _) => f.with("markers", e.contents.markers.clone()),
            ("config", Some(a)) => f.with("agent", a),
            _ => f,
        });
    }
    for marker in &e.contents.markers {
        let (code, holds) = if marker == ".ssh" && !e.kinds.contains(&"ssh") {
            (Code::MountSshDirectory, "an .ssh directory")
        } else if CONFIG_MARKERS.contains(&marker.as_str()) && !e.kinds.contains(&"config") {
            (Code::MountConfigDirectory, "credential configuration")
        } else {
            continue;
        };
        flagged = true;
        let sub = format!("{}/{marker}", mp.trim_end_matches('/'));
        let msg = format!("{sub} is visible: the host mount at {mp} holds {holds}");
        out.push(m.finding(code, &sub, msg));
    }
    flagged
}

/// mount.unrelated-repo: the mount is another repository, or shows one
/// below it that is not the workspace's. True if any was reported.
fn other_repos(
    m: &Shown,
    ws: Option<&WorkspaceFacts>,
    is_ancestor: bool,
    out: &mut Vec<Finding>,
) -> bool {
    let (e, mp) = (m.e, &m.mp);
    let mut flagged = false;
    if e.contents.git && !is_ancestor {
        flagged = true;
        out.push(m.finding(
            Code::MountUnrelatedRepo,
            mp,
            format!("{mp} is another git repository mounted from {}", m.from),
        ));
    }
    for child in &e.contents.child_repos {
        let sub = format!("{}/{child}", mp.trim_end_matches('/'));
        if ws.is_some_and(|w| Path::new(&sub) == w.path || w.path.starts_with(&sub)) {
            continue;
        }
        flagged = true;
        out.push(m.finding(
            Code::MountUnrelatedRepo,
            &sub,
            format!("{sub} is a git repository visible through the host mount at {mp}"),
        ));
    }
    flagged
}
