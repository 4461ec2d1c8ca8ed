//! Phase 1's findings from the mount table (src/facts/mounts.rs gathers and
//! classifies it): host surfaces, the workspace mount, engine-managed files
//! and what the mounts hold.

use std::path::Path;

use crate::facts::mounts::{MountClass, MountEntry, MountFacts, CONFIG_MARKERS};
use crate::finding::Finding;

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

    for e in facts.mounts.iter().filter(|e| e.within.is_none()) {
        let mp = e.mount.mount_point.to_string_lossy().into_owned();
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
                "the host path {} on a {} filesystem selfprobe does not know",
                e.mount.root.display(),
                e.mount.fstype
            )
        } else {
            format!("the host path {}", e.mount.root.display())
        };
        let with_mount = |f: Finding| {
            f.with("mount_point", mp.clone())
                .with("host_path", host_path.clone())
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
                format!("{mp} is a socket bind-mounted from {from}"),
            ))),
            MountClass::HostProcfs => out.push(
                with_mount(Finding::new(
                    "mount.host-procfs",
                    &mp,
                    format!(
                        "{mp} is a procfs other than this container's own /proc (device {}:{}): it shows another PID namespace's processes, as a host's /proc mounted for an agent does",
                        e.mount.major, e.mount.minor
                    ),
                ))
                .with("device", format!("{}:{}", e.mount.major, e.mount.minor))
                .with(
                    "own_proc_device",
                    facts
                        .mounts
                        .iter()
                        .rev()
                        .find(|o| o.mount.fstype == "proc" && o.mount.mount_point == Path::new("/proc"))
                        .map(|o| format!("{}:{}", o.mount.major, o.mount.minor)),
                ),
            ),
            MountClass::HostTmpfs => {
                let (n, roots, netns) = surface_contents(facts, &mp);
                let mut what = Vec::new();
                if !e.contents.runtime_markers.is_empty() {
                    what.push(format!("it holds {}", e.contents.runtime_markers.join(", ")));
                }
                if netns > 0 {
                    what.push(format!("{netns} network namespace(s) are bound below it"));
                }
                if !roots.is_empty() {
                    what.push(format!("{} other container root filesystem(s) are mounted below it", roots.len()));
                }
                out.push(
                    with_mount(Finding::new(
                        "mount.host-tmpfs",
                        &mp,
                        format!(
                            "{mp} is a tmpfs of the host mounted whole, its runtime directory (/run): {}",
                            what.join("; ")
                        ),
                    ))
                    .with("runtime_markers", e.contents.runtime_markers.clone())
                    .with("submounts", n)
                    .with("netns_binds", netns)
                    .with("container_rootfs", roots.into_iter().take(20).collect::<Vec<_>>()),
                );
            }
            MountClass::ContainerRootfs if !e.kinds.contains(&"own-engine") => {
                let upper = e
                    .mount
                    .super_options
                    .split(',')
                    .find_map(|o| o.strip_prefix("upperdir="))
                    .map(str::to_string);
                out.push(
                    with_mount(Finding::new(
                        "mount.container-rootfs",
                        &mp,
                        format!(
                            "{mp} is another container's root filesystem ({} built on the engine's image layers), reached through a host path",
                            e.mount.fstype
                        ),
                    ))
                    .with("upperdir", upper),
                );
            }
            MountClass::HostBind | MountClass::Workspace | MountClass::Unknown => {
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
                        format!("{mp} is another git repository mounted from {from}"),
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
                            format!("{mp} is mounted from {from}: {why}"),
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
