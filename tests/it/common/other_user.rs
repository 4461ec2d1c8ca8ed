//! Running selfprobe as another user (nobody). The checkout may sit under a
//! directory only root can enter (`/root` is 0700, so is `mktemp -d`), and
//! then that user cannot reach `target/…/selfprobe` nor anything else in the
//! build tree. A test that drops to another uid runs a copy of the binary,
//! mode 0755, in a place this helper makes where that user can reach it, and
//! keeps the fixture trees it must read in the same place.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::fixture::BIN;
use super::podman::skip_or_fail;

pub const NOBODY: u32 = 65534;

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A directory `uid` can walk to, holding `bin/selfprobe`; removed on drop.
pub struct Place {
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub uid: u32,
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Place {
    /// A fresh directory inside the place, mode 0755, for a fixture tree.
    pub fn subdir(&self, name: &str) -> PathBuf {
        let d = self.dir.join(name);
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    /// The host tool beside the copied probe (`bin/selfprobe-host`, which
    /// places `bin/selfprobe` by default), copied on first use from the
    /// shipped one.
    pub fn host(&self) -> PathBuf {
        let dest = self.bin.with_file_name("selfprobe-host");
        if !dest.exists() {
            let tmp = self.bin.with_file_name(".selfprobe-host.tmp");
            fs::copy(super::shipped::host_bin(), &tmp).unwrap();
            fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
            fs::rename(&tmp, &dest).unwrap();
        }
        dest
    }

    /// The copied binary, started as the place's user.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.bin);
        c.uid(self.uid).gid(self.uid);
        c
    }
}

/// A place for `test` to run the built binary as nobody, or None after a
/// `SKIP:` line (a failure under CI=true): when not root, or when no
/// directory nobody can reach can be made.
pub fn nobody(test: &str) -> Option<Place> {
    place_for(test, Path::new(BIN), NOBODY)
}

/// As `nobody`, for any binary and uid (the helper's own test copies the
/// binary under a private directory first).
pub fn place_for(test: &str, src: &Path, uid: u32) -> Option<Place> {
    if !nix::unistd::geteuid().is_root() {
        skip_or_fail(test, "needs root to run selfprobe as another user");
        return None;
    }
    let mut tried = Vec::new();
    for base in bases() {
        match make(&base, src, uid) {
            Ok(p) => return Some(p),
            Err(e) => tried.push(format!("{}: {e}", base.display())),
        }
    }
    skip_or_fail(
        test,
        &format!(
            "no directory uid {uid} can reach to hold a copy of the binary ({})",
            tried.join("; ")
        ),
    );
    None
}

/// Where to try, in order: the temp dir the runner was given, then the
/// system's world-traversable ones.
fn bases() -> Vec<PathBuf> {
    let mut v = vec![std::env::temp_dir()];
    for p in ["/tmp", "/var/tmp", "/dev/shm"] {
        let p = PathBuf::from(p);
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

fn make(base: &Path, src: &Path, uid: u32) -> Result<Place, String> {
    if let Some(blocked) = unreachable_ancestor(base, uid) {
        return Err(format!(
            "{} is not searchable by uid {uid}",
            blocked.display()
        ));
    }
    // Short: fixture trees inside hold Unix sockets, whose paths must fit
    // in sun_path (108 bytes).
    let dir = base.join(format!(
        "sp{uid}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let place = Place {
        bin: dir.join("bin/selfprobe"),
        dir,
        uid,
    };
    fs::set_permissions(&place.dir, fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    fs::create_dir(place.dir.join("bin")).map_err(|e| e.to_string())?;
    fs::set_permissions(place.dir.join("bin"), fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    fs::copy(src, &place.bin).map_err(|e| format!("copy {}: {e}", src.display()))?;
    fs::set_permissions(&place.bin, fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    // The proof: the user really starts it (a noexec mount or an LSM would
    // pass the mode check above and still refuse).
    let ok = place
        .command()
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("starting the copy as uid {uid}: {e}"))?;
    if !ok.success() {
        return Err(format!("the copy exited {ok} as uid {uid}"));
    }
    Ok(place)
}

/// The first directory from `/` down to `dir` that `uid` (not root, in no
/// group of the owner's) cannot search.
pub fn unreachable_ancestor(dir: &Path, uid: u32) -> Option<PathBuf> {
    let mut at = PathBuf::new();
    for c in dir.components() {
        at.push(c);
        let Ok(m) = fs::metadata(&at) else {
            return Some(at);
        };
        let mode = m.mode();
        let ok = if m.uid() == uid {
            mode & 0o100 != 0
        } else {
            mode & 0o001 != 0
        };
        if !ok {
            return Some(at);
        }
    }
    None
}
