//! The probe written from the host straight into a runc or crun
//! container's root filesystem, where the engine keeps it mounted
//! (`GraphDriver.Data.MergedDir`), instead of `docker cp` / `podman cp`.
//! The engine's cp costs about one exec whatever the file's size (68 to
//! 113 ms here for 1 KB to 6 MB, bench/RESULTS.md "inspect and summary
//! again"); this write takes a few milliseconds. For a running container's
//! root filesystem, writing into that directory is what the engine's cp
//! does itself.
//!
//! The directory belongs to the engine, not to the container, but what is
//! in it is the container's, so only this is done, and only when every
//! check holds; otherwise the caller uses the engine's cp:
//! - the runtime is runc or crun (gVisor and Kata keep their own view of
//!   the files: a write beside them may never show inside);
//! - MergedDir is an absolute path without `..`, opened with O_NOFOLLOW, a
//!   directory on overlayfs in this mount namespace (rootless podman
//!   mounts it in a namespace of its own: here it is an empty directory);
//! - it is the container's root right now: the same device and inode as
//!   `/proc/<State.Pid>/root` (a stopped container, a reused pid or a first
//!   process that changed its root all fail this);
//! - the file is one name directly in that directory (`.selfprobe-<token>`),
//!   created with O_CREAT | O_EXCL | O_NOFOLLOW, so nothing the container
//!   planted (a symlink, a file of that name) is followed or overwritten;
//! - it gets the owner of the root directory itself (the container's root,
//!   remapped or not), as the engine's cp gives it, and the source's
//!   permission bits without setuid, setgid or sticky.
//!
//! A file half written is removed before the error is returned. What was
//! written is kept (`Written`: the root directory's descriptor, each name
//! and its inode) so the host can remove it again when the container
//! cannot: rootful podman makes `/` mode 0555, and a container without
//! CAP_DAC_OVERRIDE (`--cap-drop=all`) cannot unlink a file there even as
//! root. Only a name that is still the inode written here is removed.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::{fchown, unlinkat, Gid, Uid, UnlinkatFlags};

use super::record::Record;

/// A container's root filesystem, opened on the host and checked.
pub struct Root {
    dir: File,
    uid: u32,
    gid: u32,
    shown: String,
}

impl Root {
    /// The container's root from its record, or why not (then the engine's
    /// cp places the probe). `runtime_kind` is Engine::runtime_kind's.
    pub fn open(rec: &Record, runtime_kind: &str) -> Result<Root, NotDirect> {
        if runtime_kind != "runc/crun" {
            return Err(NotDirect::Runtime(runtime_kind.to_string()));
        }
        let Some(merged) = rec.merged_dir.as_deref() else {
            return Err(NotDirect::NoMergedDir);
        };
        Root::open_checked(Path::new(merged), rec.pid, Path::new("/proc"))
    }

    /// `open` past the runtime check; `proc` is where the pid's root is
    /// looked up (the tests' own tree).
    fn open_checked(merged: &Path, pid: i64, proc: &Path) -> Result<Root, NotDirect> {
        let shown = merged.display().to_string();
        if !merged.is_absolute() || merged.components().any(|c| c == Component::ParentDir) {
            return Err(NotDirect::NotAbsolute(shown));
        }
        if pid <= 0 {
            return Err(NotDirect::NoPid);
        }
        let unreadable = |source| NotDirect::Unreadable {
            shown: shown.clone(),
            source,
        };
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW)
            .open(merged)
            .map_err(unreadable)?;
        let fs = nix::sys::statfs::fstatfs(dir.as_fd()).map_err(|source| NotDirect::Statfs {
            shown: shown.clone(),
            source,
        })?;
        if fs.filesystem_type() != nix::sys::statfs::OVERLAYFS_SUPER_MAGIC {
            return Err(NotDirect::NotOverlay(shown));
        }
        let ours = dir.metadata().map_err(unreadable)?;
        let theirs = std::fs::metadata(proc.join(pid.to_string()).join("root"))
            .map_err(|source| NotDirect::PidRoot { pid, source })?;
        if (ours.dev(), ours.ino()) != (theirs.dev(), theirs.ino()) {
            return Err(NotDirect::NotRoot { shown, pid });
        }
        Ok(Root {
            uid: ours.uid(),
            gid: ours.gid(),
            dir,
            shown,
        })
    }

    /// What will be written into this root, to be removed again.
    pub fn written(self) -> Written {
        Written {
            root: self,
            files: Vec::new(),
        }
    }

    /// Writes `src` as `name` directly in the root; the new file's inode.
    fn put(&self, src: &Path, name: &str) -> Result<u64, NotDirect> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(NotDirect::NotOneName(name.to_string()));
        }
        let source_err = |source| NotDirect::Source {
            path: src.to_path_buf(),
            source,
        };
        let mut from = File::open(src).map_err(source_err)?;
        let mode = from.metadata().map_err(source_err)?.mode() & 0o777;
        let file = format!("{}/{name}", self.shown);
        let fd = match openat(
            self.dir.as_fd(),
            name,
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                return Err(NotDirect::Write {
                    file,
                    step: WriteStep::Create(e),
                })
            }
        };
        let mut to = File::from(fd);
        let written = io::copy(&mut from, &mut to)
            .and_then(|_| to.flush())
            .map_err(WriteStep::Copy)
            .and_then(|()| {
                fchown(
                    to.as_fd(),
                    Some(Uid::from_raw(self.uid)),
                    Some(Gid::from_raw(self.gid)),
                )
                .map_err(WriteStep::Chown)
            })
            .and_then(|()| {
                nix::sys::stat::fchmod(to.as_fd(), Mode::from_bits_truncate(mode))
                    .map_err(WriteStep::Chmod)
            });
        let ino = to.metadata().map(|m| m.ino()).map_err(WriteStep::Inode);
        drop(to);
        written.and(ino).map_err(|step| {
            let _ = unlinkat(self.dir.as_fd(), name, UnlinkatFlags::NoRemoveDir);
            NotDirect::Write { file, step }
        })
    }
}

/// Why the probe was not written from the host into the container's root
/// (the engine's cp places it then; the reason is recorded as the
/// placement's `host_write_refused`): which check or step failed, and where.
#[derive(Debug, thiserror::Error)]
pub enum NotDirect {
    /// gVisor and Kata keep their own view of the files.
    #[error("the runtime is {0}, not runc or crun")]
    Runtime(String),
    #[error("the record names no overlay MergedDir")]
    NoMergedDir,
    #[error("MergedDir {0} is not an absolute path without ..")]
    NotAbsolute(String),
    #[error("the record has no pid for the container's first process")]
    NoPid,
    #[error("MergedDir {shown}: {source}")]
    Unreadable { shown: String, source: io::Error },
    #[error("MergedDir {shown}: statfs: {source}")]
    Statfs { shown: String, source: nix::Error },
    /// Rootless podman mounts it in a namespace of its own.
    #[error(
        "MergedDir {0} is not an overlay mounted here (an engine in a mount namespace of its own)"
    )]
    NotOverlay(String),
    #[error("the root of pid {pid}: {source}")]
    PidRoot { pid: i64, source: io::Error },
    /// A stopped container, a reused pid or a first process that changed
    /// its root.
    #[error("MergedDir {shown} is not the root of the container's pid {pid}")]
    NotRoot { shown: String, pid: i64 },
    /// A place that is not one name directly in the root.
    #[error("{0:?} is not one file name")]
    NotOneName(String),
    #[error("{0} is not a name directly in /")]
    NotInRoot(String),
    /// The file to write, on the host.
    #[error("{}: {source}", path.display())]
    Source { path: PathBuf, source: io::Error },
    /// `file` (root/name) could not be made whole: it was removed again.
    #[error("{file}: {step}")]
    Write {
        file: String,
        #[source]
        step: WriteStep,
    },
}

/// The step of writing a file into the root that failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteStep {
    #[error("{0}")]
    Create(nix::Error),
    #[error("{0}")]
    Copy(io::Error),
    #[error("chown: {0}")]
    Chown(nix::Error),
    #[error("chmod: {0}")]
    Chmod(nix::Error),
    #[error("{0}")]
    Inode(io::Error),
}

/// The files the host wrote into a container's root, each name with the
/// inode it was given.
pub struct Written {
    root: Root,
    files: Vec<(String, u64)>,
}

impl Written {
    /// Writes `src` as `name` directly in the root (Root::put).
    pub fn put(&mut self, src: &Path, name: &str) -> Result<(), NotDirect> {
        let ino = self.root.put(src, name)?;
        self.files.push((name.to_string(), ino));
        Ok(())
    }

    /// Removes every file written that is still there as written: a name
    /// that is gone already is done; a name that now holds another file
    /// (the container replaced it) is left and named. Ok: the names
    /// removed here (none when the container had removed them).
    pub fn remove(&mut self) -> Result<Vec<String>, String> {
        use nix::fcntl::AtFlags;
        let mut removed = Vec::new();
        let mut left = Vec::new();
        for (name, ino) in std::mem::take(&mut self.files) {
            let shown = format!("{}/{name}", self.root.shown);
            match nix::sys::stat::fstatat(
                self.root.dir.as_fd(),
                name.as_str(),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                Err(nix::errno::Errno::ENOENT) => {}
                Err(e) => left.push(format!("{shown}: {e}")),
                Ok(st) if st.st_ino != ino => left.push(format!(
                    "{shown} is no longer the file the host wrote (the container replaced it): left in place"
                )),
                Ok(_) => match unlinkat(self.root.dir.as_fd(), name.as_str(), UnlinkatFlags::NoRemoveDir) {
                    Ok(()) | Err(nix::errno::Errno::ENOENT) => removed.push(name),
                    Err(e) => left.push(format!("{shown}: {e}")),
                },
            }
        }
        if left.is_empty() {
            Ok(removed)
        } else {
            Err(left.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Off an overlay (a test's tmp dir), every write is refused before it
    // is tried; the checks that come first are each seen to refuse.
    #[test]
    fn refuses_what_is_not_a_running_containers_overlay_root() {
        let tmp = std::env::temp_dir().join(format!("selfprobe-direct-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let err = |m: &Path, pid: i64| {
            Root::open_checked(m, pid, Path::new("/proc"))
                .err()
                .unwrap()
                .to_string()
        };
        assert!(err(Path::new("relative/merged"), 1).contains("not an absolute path"));
        assert!(err(&tmp.join("../x"), 1).contains("not an absolute path"));
        assert!(err(&tmp, 0).contains("no pid"));
        assert!(err(&tmp.join("missing"), 1).contains("missing"));
        let link = tmp.join("link");
        let _ = std::os::unix::fs::symlink(&tmp, &link);
        assert!(
            err(&link, 1).contains("link"),
            "a symlinked MergedDir is not followed"
        );
        assert!(err(&tmp, 1).contains("is not an overlay"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
