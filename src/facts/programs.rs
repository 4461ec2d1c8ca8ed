//! Which programs are on PATH and which of them selfprobe may run: only
//! binaries owned by root or by this user and writable by nobody else
//! (selfprobe may run as root while an agent planted tools on PATH), and
//! never under `--root`, where a tree on disk may be an untrusted image.

use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use nix::errno::Errno;
use nix::unistd::AccessFlags;

use crate::facts::place;
use crate::host::Host;

const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The PATH searched: the environment's (the tree's under `--root`), else
/// the default a shell would use; absolute entries only (a relative entry
/// such as "." would make the answer depend on the working directory).
pub fn search_path(host: &Host) -> Vec<PathBuf> {
    let raw = host.env().get("PATH").unwrap_or(DEFAULT_PATH);
    let mut out: Vec<PathBuf> = Vec::new();
    for d in raw.split(':') {
        let p = PathBuf::from(d);
        if p.is_absolute() && !out.contains(&p) {
            out.push(p);
        }
        if out.len() >= 64 {
            break;
        }
    }
    out
}

/// Why a binary must not be run, if it must not.
pub fn refuse(meta: &std::fs::Metadata) -> Option<String> {
    let euid = nix::unistd::geteuid().as_raw();
    if !meta.is_file() {
        return Some("not a regular file".into());
    }
    if meta.uid() != 0 && meta.uid() != euid {
        return Some(format!(
            "owned by uid {}, neither root nor this user (uid {euid})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!(
            "writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    None
}

/// Why a program is not run (see `runnable`); each names the program or the
/// file it resolved to.
#[derive(Debug)]
pub enum NotRunnable {
    /// Under --root: a fixture tree's binaries are never executed.
    FixtureTree,
    /// No such file in any PATH directory.
    NotOnPath(String),
    /// Its symlinks do not end.
    SymlinkLoop(PathBuf),
    /// The file it resolved to could not be looked at.
    Stat { path: PathBuf, error: io::Error },
    /// Refused: someone other than root or this user could change it (see `refuse`).
    Refused { path: PathBuf, why: String },
    /// This process may not execute it.
    NotExecutable { path: PathBuf, errno: Errno },
}

impl fmt::Display for NotRunnable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotRunnable::FixtureTree => {
                f.write_str("--root: binaries in a fixture tree are never executed")
            }
            NotRunnable::NotOnPath(name) => write!(f, "{name} is not on PATH"),
            NotRunnable::SymlinkLoop(p) => write!(f, "{}: a symlink loop", p.display()),
            NotRunnable::Stat { path, error } => {
                write!(f, "{}: cannot stat: {error}", path.display())
            }
            NotRunnable::Refused { path, why } => {
                write!(f, "{} is not run: {why}", path.display())
            }
            NotRunnable::NotExecutable { path, errno } => {
                write!(f, "{} is not executable: {}", path.display(), errno.desc())
            }
        }
    }
}

impl std::error::Error for NotRunnable {}

/// `name` on PATH, if this process may run it (see `refuse`); never under
/// --root. For a tool another probe runs itself (git status).
pub fn runnable(host: &Host, name: &str) -> Result<PathBuf, NotRunnable> {
    if !host.is_live() {
        return Err(NotRunnable::FixtureTree);
    }
    let found = search_path(host)
        .iter()
        .map(|d| d.join(name))
        .find(|p| std::fs::symlink_metadata(host.path(p)).is_ok())
        .ok_or_else(|| NotRunnable::NotOnPath(name.to_string()))?;
    let real =
        place::resolve(host, &found).ok_or_else(|| NotRunnable::SymlinkLoop(found.clone()))?;
    let m = std::fs::metadata(host.path(&real)).map_err(|error| NotRunnable::Stat {
        path: real.clone(),
        error,
    })?;
    if let Some(why) = refuse(&m) {
        return Err(NotRunnable::Refused { path: real, why });
    }
    host.access(&real, AccessFlags::X_OK)
        .map_err(|errno| NotRunnable::NotExecutable {
            path: real.clone(),
            errno,
        })?;
    Ok(host.path(&found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn refuses_binaries_others_can_change() {
        let dir = std::env::temp_dir().join(format!("selfprobe-refuse-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t");
        std::fs::write(&p, "#!/bin/sh\ntrue\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(refuse(&std::fs::metadata(&p).unwrap()), None);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(refuse(&std::fs::metadata(&p).unwrap())
            .unwrap()
            .contains("writable"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nothing_is_run_from_a_fixture_tree() {
        let host = Host::new(std::env::temp_dir(), std::time::Duration::from_secs(1));
        let e = runnable(&host, "git").unwrap_err();
        assert!(matches!(e, NotRunnable::FixtureTree), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--root: binaries in a fixture tree are never executed"
        );
    }
}
