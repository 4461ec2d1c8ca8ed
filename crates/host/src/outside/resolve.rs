//! Paths inside a running container as the container resolves them, read
//! from the host: the engine records a mount's destination as it was
//! written (`-v /var/run/docker.sock:/var/run/docker.sock`), the kernel
//! mounts it where that path leads in the image (`/run/docker.sock` in a
//! Debian or Ubuntu image, whose /var/run is a symlink to /run), and the
//! probe's mount table shows the mount point the kernel used. The
//! cross-check compares the two as the container resolves them.
//!
//! Resolved here, on the host, rather than by the probe: the answer does
//! not come from the workspace it judges, no flag or field is added to the
//! probe, and it needs nothing but the container's root directory. Each
//! component is opened with `openat2` and RESOLVE_IN_ROOT |
//! RESOLVE_NO_MAGICLINKS under that root, O_PATH | O_NOFOLLOW (nothing is
//! read, no FIFO or device is opened): a symlink the container planted,
//! absolute or full of `..`, stays inside its root, and each symlink met
//! is read from its own descriptor and walked by name here, so the logical
//! path is known. At most 40 symlinks per path, as the kernel allows.
//!
//! The root is `/proc/<State.Pid>/root` for runc and crun (the container's
//! mounts included), and the bundle's root filesystem (MergedDir) for
//! gVisor, whose first process on the host is the sandbox, not the
//! workload. A lookup can block in the kernel on a hung mount inside the
//! container: every path is resolved on a worker the deadline can leave
//! behind (util/workers.rs); one not answered in time is compared as
//! written.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use nix::fcntl::{openat2, readlinkat, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fstat, Mode, SFlag};

use super::record::Record;

/// The most symlinks one path may pass through (the kernel's MAXSYMLINKS).
const MAX_LINKS: usize = 40;
/// The longest path resolved (PATH_MAX); a longer one is left as written.
const MAX_PATH: usize = 4096;

/// A container's root directory, opened on the host.
pub struct Root {
    dir: File,
}

impl Root {
    /// The container's root from its record, or why there is none.
    /// `runtime_kind` is Engine::runtime_kind's.
    pub fn open(rec: &Record, runtime_kind: &str) -> Result<Root, NoRoot> {
        let path = match runtime_kind {
            "runc/crun" if rec.pid > 0 => format!("/proc/{}/root", rec.pid),
            "runc/crun" => return Err(NoRoot::NoPid),
            "runsc" => match rec.merged_dir.as_deref() {
                Some(m) if Path::new(m).is_absolute() => m.to_string(),
                _ => return Err(NoRoot::NoMergedDir),
            },
            other => return Err(NoRoot::OwnView(other.to_string())),
        };
        // /proc/PID/root is a magic link and must be followed; MergedDir
        // must not be a symlink.
        let mut flags = nix::libc::O_PATH | nix::libc::O_DIRECTORY;
        if runtime_kind == "runsc" {
            flags |= nix::libc::O_NOFOLLOW;
        }
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(&path)
            .map_err(|source| NoRoot::Open { path, source })?;
        Ok(Root { dir })
    }

    /// `dir` itself as the root (the unit tests' trees).
    #[cfg(test)]
    fn at(dir: &Path) -> Root {
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_PATH | nix::libc::O_DIRECTORY)
            .open(dir)
            .unwrap();
        Root { dir }
    }

    fn open_in(&self, rel: &str) -> nix::Result<OwnedFd> {
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
            .mode(Mode::empty())
            .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        openat2(self.dir.as_fd(), rel, how)
    }

    /// `path` (absolute, as the container names it) as the container
    /// resolves it: every symlink on the way followed inside the root. The
    /// part from the first component that does not exist on is kept as
    /// written. Err when a lookup fails otherwise or the path loops.
    pub fn resolve(&self, path: &str) -> Result<String, Unresolved> {
        if !path.starts_with('/') || path.len() > MAX_PATH {
            return Err(Unresolved::NotAbsolute(path.to_string()));
        }
        let mut done: Vec<String> = Vec::new();
        let mut todo: Vec<String> = components(path).rev().collect();
        let mut links = 0;
        while let Some(c) = todo.pop() {
            match c.as_str() {
                "." => continue,
                ".." => {
                    done.pop();
                    continue;
                }
                _ => {}
            }
            done.push(c);
            let rel = done.join("/");
            let fd = match self.open_in(&rel) {
                Ok(fd) => fd,
                // The rest does not exist (yet): kept as written.
                Err(nix::errno::Errno::ENOENT) | Err(nix::errno::Errno::ENOTDIR) => {
                    done.extend(todo.into_iter().rev());
                    break;
                }
                Err(source) => return Err(Unresolved::Lookup { rel, source }),
            };
            let st = match fstat(fd.as_fd()) {
                Ok(st) => st,
                Err(source) => return Err(Unresolved::Lookup { rel, source }),
            };
            if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFLNK {
                continue;
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(Unresolved::Loop(path.to_string()));
            }
            let target = match readlinkat(fd.as_fd(), "") {
                Ok(t) => t,
                Err(source) => return Err(Unresolved::Lookup { rel, source }),
            };
            let target = target.to_string_lossy().into_owned();
            done.pop();
            if target.starts_with('/') {
                done.clear();
            }
            todo.extend(components(&target).rev());
            if todo.len() > MAX_PATH {
                return Err(Unresolved::TooLong(path.to_string()));
            }
        }
        Ok(format!("/{}", done.join("/")))
    }
}

/// Why a container has no root to resolve paths in (recorded in
/// inspection.json; the paths are then compared as written).
#[derive(Debug, thiserror::Error)]
pub enum NoRoot {
    #[error("the record has no pid for the container")]
    NoPid,
    #[error("the record names no root filesystem (MergedDir)")]
    NoMergedDir,
    /// gVisor and Kata: the host's view is not the workload's.
    #[error("the runtime {0} keeps its own view of the files")]
    OwnView(String),
    #[error("{path}: {source}")]
    Open { path: String, source: io::Error },
}

/// Why a path was not resolved in the container (it is then compared as
/// written). `rel` is the lookup that failed, under the root.
#[derive(Debug, thiserror::Error)]
pub enum Unresolved {
    #[error("{0:?} is not an absolute path of at most {MAX_PATH} bytes")]
    NotAbsolute(String),
    #[error("/{rel}: {source}")]
    Lookup { rel: String, source: nix::Error },
    #[error("{0}: more than {MAX_LINKS} symlinks")]
    Loop(String),
    #[error("{0}: the symlinks lead to too long a path")]
    TooLong(String),
}

fn components(p: &str) -> impl DoubleEndedIterator<Item = String> + '_ {
    p.split('/').filter(|c| !c.is_empty()).map(str::to_string)
}

/// Each of `paths` that resolves to another path in the container, with
/// where it leads; paths that resolve to themselves, cannot be resolved or
/// are not answered by `deadline` are left out (compared as written).
pub fn resolve_all(root: Root, paths: Vec<String>, deadline: Instant) -> BTreeMap<String, String> {
    let root = Arc::new(root);
    let answers =
        selfprobe::util::workers::map_until("selfprobe-resolve", paths.clone(), 2, deadline, {
            let root = root.clone();
            move |p: &String| root.resolve(p).ok()
        });
    paths
        .into_iter()
        .zip(answers)
        .filter_map(|(p, a)| {
            let to = a.flatten()?;
            (to != p).then_some((p, to))
        })
        .collect()
}

/// Whether the file at `p` is a socket (for the tests' trees).
#[cfg(test)]
fn is_socket(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (std::path::PathBuf, Root) {
        let t = std::env::temp_dir().join(format!(
            "selfprobe-resolve-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&t);
        std::fs::create_dir_all(t.join("run")).unwrap();
        std::fs::create_dir_all(t.join("var")).unwrap();
        std::fs::create_dir_all(t.join("usr/lib")).unwrap();
        symlink("/run", t.join("var/run")).unwrap();
        symlink("usr/lib", t.join("lib")).unwrap();
        symlink("../../..", t.join("usr/lib/up")).unwrap();
        symlink("/etc/passwd", t.join("run/escape")).unwrap();
        symlink("loop", t.join("loop")).unwrap();
        let _ = std::os::unix::net::UnixListener::bind(t.join("run/docker.sock"));
        let r = Root::at(&t);
        (t, r)
    }

    #[test]
    fn symlinks_are_followed_inside_the_root_and_never_out_of_it() {
        let (t, r) = tree();
        assert!(is_socket(&t.join("run/docker.sock")));
        assert_eq!(
            r.resolve("/var/run/docker.sock").unwrap(),
            "/run/docker.sock"
        );
        assert_eq!(r.resolve("/run/docker.sock").unwrap(), "/run/docker.sock");
        assert_eq!(r.resolve("/lib/x").unwrap(), "/usr/lib/x");
        // Not there: the rest as written, after what did resolve.
        assert_eq!(
            r.resolve("/var/run/podman/podman.sock").unwrap(),
            "/run/podman/podman.sock"
        );
        // `..` past the root stays at the root; an absolute target is the
        // container's, not the host's.
        assert_eq!(r.resolve("/usr/lib/up/run").unwrap(), "/run");
        assert_eq!(r.resolve("/lib/up/lib/up/run").unwrap(), "/run");
        assert_eq!(r.resolve("/run/escape").unwrap(), "/etc/passwd");
        assert!(r
            .resolve("/loop/x")
            .unwrap_err()
            .to_string()
            .contains("symlinks"));
        assert!(r.resolve("relative").is_err());
        let m = resolve_all(
            r,
            vec![
                "/var/run/docker.sock".into(),
                "/run/docker.sock".into(),
                "/workspace".into(),
            ],
            Instant::now() + std::time::Duration::from_secs(5),
        );
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [(
                "/var/run/docker.sock".to_string(),
                "/run/docker.sock".to_string()
            )]
        );
        std::fs::remove_dir_all(&t).unwrap();
    }
}
