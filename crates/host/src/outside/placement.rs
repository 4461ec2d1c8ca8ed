//! Where the probe goes in a running container, chosen from the engine's
//! record before anything is copied: the probe already bind-mounted in,
//! read-only (nothing to copy or remove; inspect runs it only when it is
//! the inspector's own binary); the root filesystem when writable; a
//! writable tmpfs that allows exec; a writable volume. A host bind is used
//! only when the user names it (`--place-in`), and the workspace never: a
//! file appearing in a developer's checkout, even briefly, wakes file
//! watchers and can be committed. With no candidate left there is no
//! placement, and the instruction says how to start the container with the
//! probe mounted.
//!
//! The file is put at the top of its directory, named `.selfprobe-<token>`:
//! on the root filesystem that is `/` itself, since a file added and
//! removed in an image directory leaves that directory copied up, and
//! `podman diff` then shows `C /dir` (measured here: `podman cp` into
//! /usr/local/bin and `rm` left `C /usr/local/bin`; into `/`, nothing).
//! `docker diff` shows nothing after the removal either way.

use std::path::Path;

use serde::Serialize;

use super::record::{EngineKind, MountKind, Record};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Rootfs,
    Tmpfs,
    Volume,
    Bind,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Rootfs => "rootfs",
            Method::Tmpfs => "tmpfs",
            Method::Volume => "volume",
            Method::Bind => "bind",
        }
    }
}

/// One place to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub method: Method,
    /// The path of the binary inside the container.
    pub path: String,
    /// The probe is already there (a bind of the binary): nothing is copied
    /// and nothing removed; `host_binary` is its source on the host.
    pub existing: bool,
    pub host_binary: Option<String>,
}

/// A place not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Passed {
    pub place: String,
    pub why: String,
}

/// `dir` joined with the binary's name.
fn at(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", dir.trim_end_matches('/'))
    }
}

/// Whether `p` is `dir` or below it (paths compared by component).
pub fn within(p: &str, dir: &str) -> bool {
    Path::new(p).starts_with(Path::new(dir))
}

/// The candidates for this container, best first, and the places passed
/// over with the reason. `workspace` is the container's workspace (never a
/// placement), `place_in` the user's `--place-in`, `name` the file name to
/// use (`.selfprobe-<token>`).
pub fn candidates(
    rec: &Record,
    workspace: Option<&str>,
    place_in: Option<&str>,
    name: &str,
) -> (Vec<Candidate>, Vec<Passed>) {
    let mut out = Vec::new();
    let mut passed = Vec::new();
    let is_workspace =
        |p: &str| workspace.is_some_and(|w| within(p, w) || within(w, p) && p != "/");
    // The probe bind-mounted in as the instruction says: used as it is
    // when it is the inspector's binary (inspect compares the SHA-256 of
    // its source before it runs it) and read-only inside, so the workspace
    // cannot change it between that check and the run.
    for m in &rec.mounts {
        if m.kind == MountKind::Bind
            && Path::new(&m.destination)
                .file_name()
                .is_some_and(|n| n == "selfprobe")
            && std::fs::metadata(&m.source).is_ok_and(|md| md.is_file())
        {
            if m.rw {
                passed.push(Passed {
                    place: m.destination.clone(),
                    why: "a probe bind-mounted read-write: the workspace could change it after it is checked, so it is not run".into(),
                });
                continue;
            }
            out.push(Candidate {
                method: Method::Bind,
                path: m.destination.clone(),
                existing: true,
                host_binary: Some(m.source.clone()),
            });
        }
    }
    if let Some(dir) = place_in {
        if is_workspace(dir) {
            passed.push(Passed {
                place: dir.to_string(),
                why: "--place-in names the workspace, where a file must never appear".into(),
            });
            return (out, passed);
        }
        // The mount that holds it says what kind of place it is.
        let method = rec
            .mounts
            .iter()
            .filter(|m| within(dir, &m.destination))
            .max_by_key(|m| m.destination.len())
            .map(|m| match m.kind {
                MountKind::Tmpfs => Method::Tmpfs,
                MountKind::Volume => Method::Volume,
                MountKind::Bind | MountKind::Other => Method::Bind,
            })
            .unwrap_or(Method::Rootfs);
        out.push(Candidate {
            method,
            path: at(dir, name),
            existing: false,
            host_binary: None,
        });
        return (out, passed);
    }
    if rec.read_only_root {
        passed.push(Passed {
            place: "/".into(),
            why: "the root filesystem is read-only (--read-only)".into(),
        });
    } else {
        out.push(Candidate {
            method: Method::Rootfs,
            path: at("/", name),
            existing: false,
            host_binary: None,
        });
    }
    // Tmpfs first (/tmp before the others), then volumes: each is a
    // candidate unless it holds the workspace, is read-only or noexec.
    let mut tmpfs: Vec<_> = rec
        .mounts
        .iter()
        .filter(|m| m.kind == MountKind::Tmpfs)
        .collect();
    selfprobe::util::sort::sort_by_key(&mut tmpfs, |m| {
        (m.destination != "/tmp", m.destination != "/var/tmp")
    });
    let volumes = rec.mounts.iter().filter(|m| m.kind == MountKind::Volume);
    for m in tmpfs.into_iter().chain(volumes) {
        let (method, what) = match m.kind {
            MountKind::Tmpfs => (Method::Tmpfs, "tmpfs"),
            _ => (Method::Volume, "volume"),
        };
        let why = if is_workspace(&m.destination) {
            Some("holds the workspace".to_string())
        } else if !m.rw {
            Some(format!("a read-only {what}"))
        } else if method == Method::Volume && m.noexec() {
            Some("a noexec volume".to_string())
        } else if method == Method::Tmpfs && !m.tmpfs_exec(rec.engine) {
            Some(match rec.engine {
                EngineKind::Docker => {
                    "a noexec tmpfs (Docker's --tmpfs is noexec unless given exec)".to_string()
                }
                EngineKind::Podman => "a noexec tmpfs".to_string(),
            })
        } else {
            None
        };
        match why {
            Some(why) => passed.push(Passed {
                place: m.destination.clone(),
                why,
            }),
            None => out.push(Candidate {
                method,
                path: at(&m.destination, name),
                existing: false,
                host_binary: None,
            }),
        }
    }
    for m in rec.mounts.iter().filter(|m| m.kind == MountKind::Bind) {
        if out.iter().any(|c| c.existing && c.path == m.destination)
            || passed.iter().any(|p| p.place == m.destination)
        {
            continue;
        }
        passed.push(Passed {
            place: m.destination.clone(),
            why: if is_workspace(&m.destination) {
                "the workspace: never a placement".into()
            } else {
                "a bind mount of host files: used only when named with --place-in".into()
            },
        });
    }
    (out, passed)
}

/// The exact way to give this container the probe when nothing could be
/// placed: the run argument and the devcontainer.json mounts entry, with
/// the host path of the binary.
pub fn instruction(rec: &Record, binary: &Path, passed: &[Passed], tried: &[Passed]) -> String {
    let host = binary.display();
    let mut why: Vec<String> = passed
        .iter()
        .chain(tried)
        .map(|p| format!("{}: {}", p.place, p.why))
        .collect();
    if why.is_empty() {
        why.push("no writable place in its record".into());
    }
    format!(
        "no place to put the probe in {name} ({why}). Start the container with the probe bind-mounted read-only, then inspect it again:\n  {cli} run ... -v {host}:/usr/local/bin/selfprobe:ro ...\n  devcontainer.json: \"mounts\": [\"source={host},target=/usr/local/bin/selfprobe,type=bind,readonly\"]",
        name = rec.name,
        why = why.join("; "),
        cli = rec.engine.as_str(),
    )
}

/// The container's workspace, inside it, and what said so: `--workspace`,
/// the policy's `[workspace] path`, the Dev Containers CLI's label
/// `devcontainer.local_folder` (the mount of that host folder), or the
/// working directory when a bind or volume holds it.
pub fn workspace(
    rec: &Record,
    explicit: Option<&str>,
    policy: Option<&str>,
) -> Option<(String, &'static str)> {
    if let Some(w) = explicit {
        return Some((w.to_string(), "--workspace"));
    }
    if let Some(w) = policy {
        return Some((w.to_string(), "policy"));
    }
    if let Some(local) = rec.labels.get("devcontainer.local_folder") {
        if let Some(m) = rec
            .mounts
            .iter()
            .find(|m| m.kind == MountKind::Bind && Path::new(&m.source) == Path::new(local))
        {
            return Some((m.destination.clone(), "devcontainer.local_folder label"));
        }
    }
    let wd = rec.working_dir.as_str();
    if !wd.is_empty() && wd != "/" {
        if let Some(m) = rec
            .mounts
            .iter()
            .filter(|m| matches!(m.kind, MountKind::Bind | MountKind::Volume))
            .filter(|m| within(wd, &m.destination) && m.destination != "/")
            .max_by_key(|m| m.destination.len())
        {
            return Some((m.destination.clone(), "working directory on a mount"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Record {
        crate::outside::record::fixture(name)
    }

    const NAME: &str = ".selfprobe-0123456789abcdef";

    fn methods(c: &[Candidate]) -> Vec<(Method, &str)> {
        c.iter().map(|c| (c.method, c.path.as_str())).collect()
    }

    #[test]
    fn a_writable_root_comes_first_and_the_workspace_is_never_used() {
        let r = fixture("docker-clean");
        let ws = workspace(&r, None, None);
        assert_eq!(
            ws,
            Some(("/workspace".into(), "working directory on a mount"))
        );
        let (c, passed) = candidates(&r, ws.as_ref().map(|w| w.0.as_str()), None, NAME);
        assert_eq!(
            methods(&c),
            [(Method::Rootfs, "/.selfprobe-0123456789abcdef")]
        );
        assert_eq!(passed.len(), 1);
        assert!(passed[0].why.contains("never"), "{passed:?}");
    }

    #[test]
    fn read_only_docker_with_tmpfs_and_volumes() {
        let r = fixture("docker-volumes");
        let (c, passed) = candidates(&r, None, None, NAME);
        assert_eq!(
            methods(&c),
            [
                (Method::Tmpfs, "/run/.selfprobe-0123456789abcdef"),
                (Method::Volume, "/cache/.selfprobe-0123456789abcdef"),
                (Method::Volume, "/data/.selfprobe-0123456789abcdef"),
            ]
        );
        let why: Vec<&str> = passed.iter().map(|p| p.place.as_str()).collect();
        assert_eq!(why, ["/", "/tmp"], "{passed:?}");
        assert!(passed[1].why.contains("noexec"));
    }

    #[test]
    fn podman_read_only_gives_exec_tmpfs() {
        let r = fixture("podman-clean-ro");
        let ws = workspace(&r, None, None).map(|w| w.0);
        assert_eq!(ws.as_deref(), Some("/workspace"));
        let (c, _) = candidates(&r, ws.as_deref(), None, NAME);
        let got = methods(&c);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().all(|(m, _)| *m == Method::Tmpfs));
        assert_eq!(
            got[0],
            (Method::Tmpfs, "/tmp/.selfprobe-0123456789abcdef"),
            "/tmp first"
        );
    }

    #[test]
    fn place_in_names_a_bind_but_never_the_workspace() {
        let r = fixture("docker-clean");
        let (c, _) = candidates(&r, Some("/workspace"), Some("/workspace/sub"), NAME);
        assert!(c.is_empty());
        let (c, _) = candidates(&r, None, Some("/workspace"), NAME);
        assert_eq!(
            methods(&c),
            [(Method::Bind, "/workspace/.selfprobe-0123456789abcdef")]
        );
        let (c, _) = candidates(&r, Some("/workspace"), Some("/opt"), NAME);
        assert_eq!(
            methods(&c),
            [(Method::Rootfs, "/opt/.selfprobe-0123456789abcdef")]
        );
    }

    #[test]
    fn the_instruction_names_the_binary_and_both_forms() {
        let r = fixture("docker-volumes");
        let i = instruction(
            &r,
            Path::new("/opt/selfprobe"),
            &[Passed {
                place: "/tmp".into(),
                why: "a noexec tmpfs".into(),
            }],
            &[],
        );
        assert!(
            i.contains("-v /opt/selfprobe:/usr/local/bin/selfprobe:ro"),
            "{i}"
        );
        assert!(i.contains("\"mounts\": [\"source=/opt/selfprobe,target=/usr/local/bin/selfprobe,type=bind,readonly\"]"), "{i}");
        assert!(i.contains("/tmp: a noexec tmpfs"));
    }

    #[test]
    fn the_workspace_from_the_devcontainer_label_or_the_policy() {
        let mut r = fixture("docker-clean");
        let src = r.mounts[0].source.clone();
        r.labels.insert("devcontainer.local_folder".into(), src);
        r.working_dir = "/".into();
        assert_eq!(
            workspace(&r, None, None),
            Some(("/workspace".into(), "devcontainer.local_folder label"))
        );
        assert_eq!(
            workspace(&r, Some("/w"), Some("/p")),
            Some(("/w".into(), "--workspace"))
        );
        assert_eq!(
            workspace(&r, None, Some("/p")),
            Some(("/p".into(), "policy"))
        );
    }
}
