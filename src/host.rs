//! The system as the probes see it. Every path a probe touches goes through
//! [`Host::path`], so the same probes run against `/` or a fixture tree
//! (`--root`), and nothing hard-codes `/proc`.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::unistd::AccessFlags;

/// Files under /proc and /sys are small; anything larger than this is either
/// hostile or not what we meant to read.
pub const MAX_READ: u64 = 1 << 20;

#[derive(Debug, Clone)]
pub struct Host {
    root: PathBuf,
    started: SystemTime,
    started_at: Instant,
    deadline: Instant,
    env: Arc<Environ>,
    /// Why /proc cannot be believed, when it cannot: in a live run, a
    /// directory or another filesystem mounted over /proc would hand the
    /// probes whatever status, mountinfo and environ its maker chose.
    proc_untrusted: Option<String>,
}

/// The largest /proc/PID/environ read: the kernel caps argv plus envp at a
/// quarter of the stack limit, and 256 KiB covers every real environment.
pub const MAX_ENVIRON: u64 = 256 * 1024;

/// The environment the probes see. On a live run it is this process's own;
/// under `--root` it is the tree's `/proc/self/environ` and nothing else, so
/// a fixture's result never depends on the HOME, PATH, DOCKER_HOST or
/// proxies of whoever runs it. A tree without that file has no known
/// environment: every probe that needs it says it could not check.
#[derive(Debug, Clone)]
pub struct Environ {
    vars: Vec<(String, String)>,
    /// Where the variables came from, for the report.
    pub source: String,
    /// Why there are none to read (a tree without /proc/self/environ).
    pub missing: Option<String>,
}

impl Environ {
    fn live() -> Environ {
        Environ {
            vars: std::env::vars_os()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect(),
            source: "this process".into(),
            missing: None,
        }
    }

    fn of_tree(root: &Path) -> Environ {
        let p = root.join("proc/self/environ");
        match read_regular(&p, MAX_ENVIRON) {
            Ok(b) => Environ {
                vars: parse_environ(&b),
                source: "/proc/self/environ of the --root tree".into(),
                missing: None,
            },
            Err(e) => Environ {
                vars: Vec::new(),
                source: "/proc/self/environ of the --root tree".into(),
                missing: Some(format!(
                    "the --root tree has no readable /proc/self/environ ({e}): the environment is unknown"
                )),
            },
        }
    }

    /// A fixed environment, for unit tests of code that reads one.
    pub fn from_vars(vars: Vec<(String, String)>) -> Environ {
        Environ {
            vars,
            source: "given".into(),
            missing: None,
        }
    }

    /// Every variable (none when the environment is unknown).
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The value of `name`: the first where a hostile environ repeats a
    /// name, as getenv(3) takes it (the secrets scan still sees them all).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn known(&self) -> bool {
        self.missing.is_none()
    }
}

/// NUL-separated NAME=value pairs, as in /proc/PID/environ.
pub fn parse_environ(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|b| *b == 0)
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let eq = kv.iter().position(|b| *b == b'=')?;
            Some((
                String::from_utf8_lossy(&kv[..eq]).into_owned(),
                String::from_utf8_lossy(&kv[eq + 1..]).into_owned(),
            ))
        })
        .collect()
}

impl Host {
    pub fn new(root: PathBuf, timeout: Duration) -> Host {
        let started_at = Instant::now();
        let env = if root == Path::new("/") {
            Environ::live()
        } else {
            Environ::of_tree(&root)
        };
        // A fixture tree's proc/ is a plain directory by design (--root).
        let proc_untrusted = (root == Path::new("/"))
            .then(|| procfs_problem(Path::new("/proc")))
            .flatten();
        Host {
            root,
            started: SystemTime::now(),
            started_at,
            deadline: started_at + timeout,
            env: Arc::new(env),
            proc_untrusted,
        }
    }

    /// Why /proc is not believed (it is not procfs), if it is not.
    pub fn proc_untrusted(&self) -> Option<&str> {
        self.proc_untrusted.as_deref()
    }

    /// Refuses a read under /proc when /proc is not procfs: the probes that
    /// read it then fail with the reason and report probe.incomplete.
    fn check_proc(&self, p: &Path) -> io::Result<()> {
        match &self.proc_untrusted {
            Some(why) if p.starts_with("/proc") => Err(io::Error::other(why.clone())),
            _ => Ok(()),
        }
    }

    /// The same system with another environment (unit tests).
    pub fn with_env(mut self, env: Environ) -> Host {
        self.env = Arc::new(env);
        self
    }

    /// The environment the probes see (see [`Environ`]).
    pub fn env(&self) -> &Environ {
        &self.env
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when probing the system we run on, not a fixture tree.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Maps an absolute in-container path to where it is under the root.
    pub fn path(&self, p: impl AsRef<Path>) -> PathBuf {
        let p = p.as_ref();
        let rel = p.strip_prefix("/").unwrap_or(p);
        if rel.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// Reads a small text file without ever blocking on a FIFO or device:
    /// the open is non-blocking and anything but a regular file is refused.
    pub fn read(&self, p: impl AsRef<Path>) -> io::Result<String> {
        self.check_proc(p.as_ref())?;
        let bytes = read_regular(&self.path(p), MAX_READ)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub fn read_link(&self, p: impl AsRef<Path>) -> io::Result<PathBuf> {
        self.check_proc(p.as_ref())?;
        std::fs::read_link(self.path(p))
    }

    /// access(2) with the effective ids (AT_EACCESS): what this process could
    /// do, including EROFS on read-only mounts, without doing it.
    pub fn access(&self, p: impl AsRef<Path>, mode: AccessFlags) -> Result<(), nix::Error> {
        nix::unistd::faccessat(
            nix::fcntl::AT_FDCWD,
            &self.path(p),
            mode,
            nix::fcntl::AtFlags::AT_EACCESS,
        )
    }

    pub fn started(&self) -> SystemTime {
        self.started
    }

    pub fn elapsed(&self) -> Duration {
        self.started_at.elapsed()
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The run's whole budget (--timeout).
    pub fn timeout(&self) -> Duration {
        self.deadline - self.started_at
    }

    /// The earlier of the run's deadline and `budget` from now.
    pub fn deadline_within(&self, budget: Duration) -> Instant {
        std::cmp::min(self.deadline, Instant::now() + budget)
    }
}

/// Why `dir` is not a procfs mount (statfs f_type against
/// PROC_SUPER_MAGIC), or None when it is.
pub fn procfs_problem(dir: &Path) -> Option<String> {
    use nix::sys::statfs::{statfs, PROC_SUPER_MAGIC};
    match statfs(dir) {
        Ok(s) if s.filesystem_type() == PROC_SUPER_MAGIC => None,
        Ok(s) => Some(format!(
            "{} is not procfs (statfs f_type {:#x}, expected {:#x}): its contents are not the kernel's and are not believed",
            dir.display(),
            s.filesystem_type().0,
            PROC_SUPER_MAGIC.0
        )),
        Err(e) => Some(format!("{}: statfs failed ({e}): procfs not confirmed", dir.display())),
    }
}

/// Reads up to `max` bytes of a regular file. O_NONBLOCK keeps open(2) from
/// hanging on a FIFO planted where a file was expected; the type check keeps
/// read(2) away from devices and sockets.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_regular_with(path, max, 0)
}

/// `read_regular`, but never through a final symlink (O_NOFOLLOW): a ref
/// or a package.json that links out of the tree is not the tree's.
pub fn read_regular_nofollow(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    read_regular_with(path, max, libc_flags::O_NOFOLLOW)
}

fn read_regular_with(path: &Path, max: u64, flags: i32) -> io::Result<Vec<u8>> {
    let f = File::options()
        .read(true)
        .custom_flags(libc_flags::O_NONBLOCK | libc_flags::O_NOCTTY | flags)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

mod libc_flags {
    pub const O_NONBLOCK: i32 = nix::fcntl::OFlag::O_NONBLOCK.bits();
    pub const O_NOCTTY: i32 = nix::fcntl::OFlag::O_NOCTTY.bits();
    pub const O_NOFOLLOW: i32 = nix::fcntl::OFlag::O_NOFOLLOW.bits();
}

pub fn os_path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes))
}

/// Files that `--write-test`, `canary plant` and the report writer create,
/// so that a signal or an expired deadline still removes them.
///
/// A path is registered only once its exclusive create succeeded:
/// registering first would let a cleanup pass remove a file of that name
/// that is not ours. A cleanup pass waits (bounded) for creates in flight,
/// and a create that finishes after the pass removes its own file, so none
/// is left behind half written. The lock is never held across a system call
/// on the probed filesystem: one hung mount must not stall the others.
#[derive(Debug, Default)]
pub struct Cleanup {
    state: Mutex<CleanupState>,
    settled: Condvar,
}

#[derive(Debug, Default)]
struct CleanupState {
    stopping: bool,
    in_flight: usize,
    paths: Vec<PathBuf>,
}

/// How long a cleanup pass waits for creates in flight and for its own
/// removals (on a slow or hung filesystem) before it lets the process exit.
const CLEANUP_WAIT: Duration = Duration::from_secs(2);

impl Cleanup {
    fn lock(&self) -> std::sync::MutexGuard<'_, CleanupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `create`, which must create `path` exclusively, and registers
    /// `path` if it succeeded. Returns None once shutdown has begun, so no
    /// new file outlives the cleanup pass.
    pub fn create<T>(
        &self,
        path: &Path,
        create: impl FnOnce() -> io::Result<T>,
    ) -> Option<io::Result<T>> {
        {
            let mut st = self.lock();
            if st.stopping {
                return None;
            }
            st.in_flight += 1;
        }
        let res = create();
        let mut st = self.lock();
        let out = match res {
            Ok(made) if st.stopping => {
                // The cleanup pass ran while this create was in flight: the
                // file is ours and unfinished, so it goes now, and only then
                // does this create stop counting as in flight (the pass may
                // be about to exit the process).
                drop(st);
                drop(made);
                let _ = std::fs::remove_file(path);
                st = self.lock();
                None
            }
            Ok(made) => {
                st.paths.push(path.to_path_buf());
                Some(Ok(made))
            }
            Err(e) => Some(Err(e)),
        };
        st.in_flight -= 1;
        self.settled.notify_all();
        out
    }

    /// True when no create is in flight and no file is left to remove.
    pub fn idle(&self) -> bool {
        let st = self.lock();
        st.in_flight == 0 && st.paths.is_empty()
    }

    /// Drops `path` from the list once it is finished (or removed by us).
    pub fn forget(&self, path: &Path) {
        self.lock().paths.retain(|p| p != path);
    }

    /// Removes everything still registered and refuses new registrations;
    /// returns how many files it removed. Bounded by CLEANUP_WAIT in all:
    /// past that a create or removal is stuck in the kernel, and the
    /// caller's exit must not be.
    pub fn remove_all(&self) -> usize {
        let until = Instant::now() + CLEANUP_WAIT;
        let mut st = self.lock();
        st.stopping = true;
        let (mut st, _) = self
            .settled
            .wait_timeout_while(st, CLEANUP_WAIT, |s| s.in_flight > 0)
            .unwrap_or_else(|e| e.into_inner());
        let paths: Vec<PathBuf> = st.paths.drain(..).collect();
        drop(st);
        if paths.is_empty() {
            return 0;
        }
        fn remove(paths: &[PathBuf]) -> usize {
            paths
                .iter()
                .filter(|p| match std::fs::remove_file(p) {
                    Ok(()) => true,
                    Err(e) => e.kind() == io::ErrorKind::NotFound,
                })
                .count()
        }
        // On a thread of its own, so a removal stuck on a hung mount costs
        // the wait, not the exit.
        let paths = std::sync::Arc::new(paths);
        let (tx, rx) = std::sync::mpsc::channel();
        let theirs = paths.clone();
        let spawned = std::thread::Builder::new()
            .name("cleanup".into())
            .spawn(move || {
                let _ = tx.send(remove(&theirs));
            });
        match spawned {
            Ok(_) => rx
                .recv_timeout(until.saturating_duration_since(Instant::now()))
                .unwrap_or(0),
            // No thread to spare (a pids limit): remove them here.
            Err(_) => remove(&paths),
        }
    }
}

/// Writes a report file the way a reader (a CI artifact upload, `verify`)
/// needs it: whole or not at all. The bytes go to a new file beside `path`,
/// created through `cleanup` so a signal removes it, and are renamed over
/// `path`. The rename replaces a symlink planted at `path` instead of
/// writing through it, so a shared /tmp cannot aim the report at another
/// file.
///
/// Two cases cannot be renamed over and are written in place: a stream
/// (/dev/stdout, a FIFO, a terminal, or a link to one), and an existing
/// regular file whose directory refuses the new file or the rename (a file
/// bind-mounted on its own into the container). The second never follows a
/// symlink.
pub fn write_whole(path: &Path, bytes: &[u8], cleanup: &Cleanup) -> io::Result<()> {
    use std::io::Write;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return File::options()
            .write(true)
            .custom_flags(libc_flags::O_NOCTTY)
            .open(path)?
            .write_all(bytes);
    }
    let in_place = || -> io::Result<()> {
        File::options()
            .write(true)
            .truncate(true)
            .custom_flags(libc_flags::O_NOFOLLOW | libc_flags::O_NOCTTY)
            .open(path)?
            .write_all(bytes)
    };
    let existing_file = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    let (tmp, created) = temp_beside(path, cleanup)?;
    let mut file = match created {
        None => return Err(io::Error::other("the run is stopping")),
        Some(Err(_)) if existing_file => return in_place(),
        Some(Err(e)) => return Err(e),
        Some(Ok(f)) => f,
    };
    // A report replaced keeps the mode its owner gave it (0600, say).
    let keep_mode = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(Ok(()), |m| file.set_permissions(m.permissions()));
    let written = keep_mode
        .and_then(|_| file.write_all(bytes))
        .and_then(|_| file.sync_all());
    drop(file);
    let res = written.and_then(|_| match std::fs::rename(&tmp, path) {
        Err(_) if existing_file => {
            std::fs::remove_file(&tmp)?;
            in_place()
        }
        r => r,
    });
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    cleanup.forget(&tmp);
    res
}

/// A new file beside `path` for `write_whole` and `write_whole_all`
/// (.NAME.selfprobe-RUNID.tmp: created new, never through a symlink, 0644),
/// registered with `cleanup` so a signal removes it: its path, and the
/// file (None when the run is stopping). An error when `path` names no
/// file.
fn temp_beside(path: &Path, cleanup: &Cleanup) -> io::Result<(PathBuf, Option<io::Result<File>>)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".selfprobe-{}.tmp", run_id()));
    let tmp = dir.join(tmp_name);
    let created = cleanup.create(&tmp, || {
        File::options()
            .write(true)
            .create_new(true)
            .custom_flags(libc_flags::O_NOFOLLOW)
            .mode(0o644)
            .open(&tmp)
    });
    Ok((tmp, created))
}

/// Several files, each written as `write_whole` writes it (a new file
/// beside it, fsync, rename) and on disk when this returns, with their
/// fsyncs made at once: concurrent fsyncs share the filesystem's journal
/// commits (ext4's jbd2 joins those that wait together), where one after
/// another each waits for a commit of its own (about 4 ms each on the
/// 2-CPU machine under load, bench/RESULTS.md "The watch"). Every file is
/// synced before any is renamed into place, so none is ever there without
/// its bytes on disk, and a caller that writes a file marking the whole
/// complete after this (an inspection's inspection.json) keeps its meaning
/// across a crash. A path that exists already (a file to replace, a
/// stream) is left to `write_whole`, as before. On an error no new file of
/// this call that was not yet renamed is left behind.
pub fn write_whole_all(files: &[(&Path, &[u8])], cleanup: &Cleanup) -> io::Result<()> {
    use std::io::Write;
    struct Staged<'a> {
        tmp: PathBuf,
        path: &'a Path,
        file: File,
    }
    let undo = |staged: &[Staged]| {
        for s in staged {
            let _ = std::fs::remove_file(&s.tmp);
            cleanup.forget(&s.tmp);
        }
    };
    let mut staged: Vec<Staged> = Vec::new();
    for &(path, bytes) in files {
        if std::fs::symlink_metadata(path).is_ok() {
            if let Err(e) = write_whole(path, bytes, cleanup) {
                undo(&staged);
                return Err(e);
            }
            continue;
        }
        let (tmp, created) = match temp_beside(path, cleanup) {
            Ok(t) => t,
            Err(e) => {
                undo(&staged);
                return Err(e);
            }
        };
        let mut file = match created {
            None => {
                undo(&staged);
                return Err(io::Error::other("the run is stopping"));
            }
            Some(Err(e)) => {
                undo(&staged);
                return Err(e);
            }
            Some(Ok(f)) => f,
        };
        let written = file.write_all(bytes);
        staged.push(Staged { tmp, path, file });
        if let Err(e) = written {
            undo(&staged);
            return Err(e);
        }
    }
    // Each fsync but the first on a thread of its own, the first here; a
    // thread that cannot be started leaves its fsync to this one.
    let synced: io::Result<()> = std::thread::scope(|scope| {
        let mut here = Vec::new();
        let mut threads = Vec::new();
        for (i, s) in staged.iter().enumerate() {
            let f = &s.file;
            match (i > 0)
                .then(|| std::thread::Builder::new().spawn_scoped(scope, move || f.sync_all()))
            {
                Some(Ok(h)) => threads.push(h),
                _ => here.push(f),
            }
        }
        let mut res: io::Result<()> = here.into_iter().try_for_each(File::sync_all);
        for h in threads {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("an fsync thread panicked")));
            res = res.and(r);
        }
        res
    });
    if let Err(e) = synced {
        undo(&staged);
        return Err(e);
    }
    for (i, s) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(&s.tmp, s.path) {
            undo(&staged[i..]);
            return Err(e);
        }
        cleanup.forget(&s.tmp);
    }
    Ok(())
}

/// Why the signal handling of `remove_on_signal` could not be set up.
#[derive(Debug)]
pub enum SignalError {
    /// The signals could not be blocked.
    Block(nix::Error),
    /// The thread that waits for them could not be started.
    Thread(io::Error),
}

impl std::fmt::Display for SignalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignalError::Block(e) => write!(f, "cannot block signals: {e}"),
            SignalError::Thread(e) => write!(f, "cannot start the signal thread: {e}"),
        }
    }
}

impl std::error::Error for SignalError {}

/// Blocks SIGINT, SIGTERM and SIGHUP in this thread (and so in every thread
/// started after it) and waits for them on a thread of its own, where it is
/// safe to take a lock and remove files: the files each of `cleanups` holds
/// are removed before the process exits with 128 + the signal number.
///
/// The handle it returns is only needed to hand the signals over to a
/// command (`Signals::hand_over`, the gate); dropped, the thread goes on.
pub fn remove_on_signal(cleanups: Vec<std::sync::Arc<Cleanup>>) -> Result<Signals, SignalError> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal};
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // A signal the caller ignores stays ignored: `nohup selfprobe`
        // must outlive a hangup, and a shell's background job must not stop
        // on the terminal's Ctrl-C. Blocked and waited for, it would not be.
        if !inherited_ignore(s) {
            set.add(s);
        }
    }
    let original = set
        .thread_swap_mask(SigmaskHow::SIG_BLOCK)
        .map_err(SignalError::Block)?;
    let waiter = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            let Some((sig, handed_over)) = wait_for(&set) else {
                continue;
            };
            if handed_over {
                // Signals::hand_over woke this thread to end it: from here
                // on the signals are the command's.
                return;
            }
            // Before the cleanup refuses new files: the main thread can
            // only see the run stopping after this is set.
            STOPPED_BY.store(sig, std::sync::atomic::Ordering::SeqCst);
            for c in &cleanups {
                c.remove_all();
            }
            // The tests' way to lose the race exit_if_signalled guards
            // against (debug builds only): this thread slow to exit.
            #[cfg(debug_assertions)]
            if std::env::var_os("SELFPROBE_DEBUG_SLOW_SIGNAL_EXIT").is_some() {
                std::thread::sleep(Duration::from_millis(1500));
            }
            std::process::exit(128 + sig);
        })
        .map_err(SignalError::Thread)?;
    Ok(Signals {
        original,
        set,
        waiter: Some(waiter),
    })
}

/// Set by `Signals::hand_over` before it wakes the signal thread, so that
/// the thread tells its wake-up from a signal someone sent.
static HANDING_OVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits for one signal of `set`: its number, and whether it is
/// `Signals::hand_over`'s wake-up: sent by this very process while a
/// hand-over is under way. No other process can send one that looks so:
/// the kernel fills in si_pid with the sender's pid (in the receiver's pid
/// namespace; 0 for a sender outside it), and nothing else in selfprobe
/// signals its own process. (si_code is not read: for a tgkill it should be
/// SI_TKILL, but a kernel here reported SI_USER.) None when the wait was
/// interrupted.
fn wait_for(set: &nix::sys::signal::SigSet) -> Option<(i32, bool)> {
    let mut info = std::mem::MaybeUninit::<nix::libc::siginfo_t>::zeroed();
    // SAFETY: `set` is a valid sigset_t and `info` a zeroed siginfo_t that
    // the call fills in.
    let sig = unsafe { nix::libc::sigwaitinfo(set.as_ref(), info.as_mut_ptr()) };
    if sig < 0 {
        return None;
    }
    // SAFETY: zeroed is a valid siginfo_t, and on success the call wrote it.
    let info = unsafe { info.assume_init() };
    // SAFETY: for a signal sent by kill, tgkill or sigqueue (SI_USER,
    // SI_TKILL, SI_QUEUE) the union holds the sender's pid and uid; for a
    // signal the kernel raised (si_code > 0) it holds other fields, and the
    // value read is not compared.
    let user_sent = info.si_code <= 0;
    let ours = user_sent
        && unsafe { info.si_pid() } == std::process::id() as i32
        && HANDING_OVER.load(std::sync::atomic::Ordering::SeqCst);
    Some((sig, ours))
}

/// The signal handling of `remove_on_signal`, and the signal mask the
/// process had before it.
#[derive(Debug)]
pub struct Signals {
    /// The calling thread's mask before SIGINT, SIGTERM and SIGHUP were
    /// blocked: what a command started with execve must inherit.
    original: nix::sys::signal::SigSet,
    /// The signals the thread waits for (those the caller did not ignore).
    set: nix::sys::signal::SigSet,
    waiter: Option<std::thread::JoinHandle<()>>,
}

impl Signals {
    /// For the gate, just before execve: ends the signal thread, then gives
    /// this thread back the signal mask the process was started with, so
    /// that the command inherits exactly that (execve keeps the mask, and
    /// keeps pending signals).
    ///
    /// A signal sent before this point is selfprobe's: when one already
    /// woke the signal thread, that thread removes the files and exits the
    /// process (128 + N) and this never returns; when one arrived after the
    /// thread ended and waits blocked, this returns it and the mask is left
    /// as it is, so the caller ends the run as that signal would.
    /// A signal sent between the mask's restoration and the execve reaches
    /// this process with the disposition the command will have (the
    /// default, unless the caller ignored it).
    pub fn hand_over(mut self) -> Result<(), NotHandedOver> {
        use std::os::unix::thread::JoinHandleExt;
        HANDING_OVER.store(true, std::sync::atomic::Ordering::SeqCst);
        if let (Some(waiter), Some(first)) = (self.waiter.take(), self.set.iter().next()) {
            // SAFETY: the thread has not been joined, so its pthread_t is
            // valid; the signal is one it blocks and waits for.
            let rc = unsafe { nix::libc::pthread_kill(waiter.as_pthread_t(), first as i32) };
            if rc == 0 {
                let _ = waiter.join();
            }
        }
        let mut pending = std::mem::MaybeUninit::<nix::libc::sigset_t>::zeroed();
        // SAFETY: sigpending fills in the zeroed set it is given.
        let pending = unsafe {
            nix::libc::sigpending(pending.as_mut_ptr());
            nix::sys::signal::SigSet::from_sigset_t_unchecked(pending.assume_init())
        };
        if let Some(sig) = self.set.iter().find(|s| pending.contains(*s)) {
            return Err(NotHandedOver::Signal(sig as i32));
        }
        self.original.thread_set_mask().map_err(NotHandedOver::Mask)
    }
}

/// Why `Signals::hand_over` left the signals with selfprobe.
#[derive(Debug)]
pub enum NotHandedOver {
    /// This signal arrived before the command could be started.
    Signal(i32),
    /// The original mask could not be restored.
    Mask(nix::Error),
}

/// The signal that stopped the run (0: none yet), set by the signal thread
/// of `remove_on_signal` before it removes anything.
static STOPPED_BY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// For main, just before it exits: once a signal has stopped the run, the
/// exit is 128 + the signal, never the run's own code. Otherwise a run cut
/// short (its creates refused once the cleanup began, so it hurries to the
/// end) could exit 0 before the signal thread's exit, as one did under
/// load in `signals::a_signal_the_caller_ignores_stays_ignored`. Waits for
/// the signal thread to exit the process (its cleanup is bounded by
/// CLEANUP_WAIT), then exits with that code itself.
pub fn exit_if_signalled() {
    let sig = STOPPED_BY.load(std::sync::atomic::Ordering::SeqCst);
    if sig == 0 {
        return;
    }
    std::thread::sleep(CLEANUP_WAIT * 2 + Duration::from_secs(1));
    std::process::exit(128 + sig);
}

/// Whether SIGPIPE was ignored when this process was started. Rust's
/// runtime sets SIGPIPE to "ignore" before main, in every program (so a
/// closed pipe is an EPIPE error, which `emit` in main.rs handles), and an
/// ignored disposition survives execve: a command the gate starts would get
/// the runtime's, not its caller's. `read_sigpipe_at_start` runs before the
/// runtime (an ELF constructor, as the C library runs every `.init_array`
/// entry before main) and records the caller's; `restore_sigpipe` puts it
/// back.
static SIGPIPE_IGNORED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[used]
#[link_section = ".init_array"]
static READ_SIGPIPE_AT_START: extern "C" fn() = read_sigpipe_at_start;

extern "C" fn read_sigpipe_at_start() {
    let ignored = inherited_ignore(nix::sys::signal::Signal::SIGPIPE);
    SIGPIPE_IGNORED_AT_START.store(ignored, std::sync::atomic::Ordering::SeqCst);
}

/// Gives SIGPIPE back the disposition the process was started with (see
/// SIGPIPE_IGNORED_AT_START), for the gate just before execve.
pub fn restore_sigpipe() -> nix::Result<()> {
    use nix::sys::signal::{SigHandler, Signal};
    let handler = if SIGPIPE_IGNORED_AT_START.load(std::sync::atomic::Ordering::SeqCst) {
        SigHandler::SigIgn
    } else {
        SigHandler::SigDfl
    };
    // SAFETY: SIG_IGN or SIG_DFL, no handler function: nothing runs in a
    // signal context.
    unsafe { nix::sys::signal::signal(Signal::SIGPIPE, handler) }.map(drop)
}

/// Whether `sig` was set to SIG_IGN by whoever started this process (the
/// disposition survives exec).
fn inherited_ignore(sig: nix::sys::signal::Signal) -> bool {
    let mut old = std::mem::MaybeUninit::<nix::libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `old`,
    // which is zeroed and of the type the call fills in.
    let rc = unsafe { nix::libc::sigaction(sig as i32, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: zeroed is a valid sigaction, and on success the call wrote it.
    rc == 0 && unsafe { old.assume_init() }.sa_sigaction == nix::libc::SIG_IGN
}

/// SHA-256 of the running binary, so a report names exactly what made it.
pub fn self_sha256() -> Option<String> {
    // ring's digest directly, not util::digest: util reads through Host, and
    // the two must not import each other (tests/it/layout.rs).
    use ring::digest::{Context, SHA256};
    let mut f = File::open("/proc/self/exe").ok()?;
    let mut h = Context::new(&SHA256);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Some(
        h.finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// A random run id; falls back to a hash of time and pid where
/// /dev/urandom is missing (a bare FROM scratch image without /dev).
pub fn run_id() -> String {
    let mut bytes = [0u8; 8];
    let ok = File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !ok {
        let seed = format!("{:?}{}", SystemTime::now(), std::process::id());
        bytes.copy_from_slice(
            &ring::digest::digest(&ring::digest::SHA256, seed.as_bytes()).as_ref()[..8],
        );
    }
    format!("{:016x}", u64::from_be_bytes(bytes))
}

/// Seconds since the epoch as an RFC 3339 UTC timestamp with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (y, m, day) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Today's date (UTC) as (year, month, day).
pub fn today(t: SystemTime) -> (i64, u32, u32) {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    civil_from_days(secs.div_euclid(86_400))
}

/// Howard Hinnant's days-to-civil algorithm; avoids a date crate for one use.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Why a duration (`--timeout`, a policy's timeout or TTL) was refused;
/// each variant holds the value as given, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// It does not start with a number.
    NotANumber(String),
    /// A unit other than ms, s, m, h or d.
    UnknownUnit { value: String, unit: String },
    /// Zero, negative, or more than 10^9 seconds.
    OutOfRange(String),
}

impl std::fmt::Display for DurationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DurationError::NotANumber(s) => write!(
                f,
                "'{s}' is not a duration: expected a number and a unit such as 500ms, 30s, 2m, 8h or 1d"
            ),
            DurationError::UnknownUnit { value, unit } => write!(
                f,
                "'{value}' has an unknown unit '{unit}': expected ms, s, m, h or d"
            ),
            DurationError::OutOfRange(s) => {
                write!(f, "'{s}' is out of range: expected a positive duration")
            }
        }
    }
}

impl std::error::Error for DurationError {}

/// Parses durations such as `500ms`, `30s`, `2m`, `8h`, `1d`.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| DurationError::NotANumber(s.to_string()))?;
    let mult = match unit {
        "ms" => 0.001,
        "s" | "" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => {
            return Err(DurationError::UnknownUnit {
                value: s.to_string(),
                unit: unit.to_string(),
            })
        }
    };
    let secs = n * mult;
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(DurationError::OutOfRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleanup_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sp-cleanup-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn create_new(p: &Path) -> io::Result<File> {
        File::options().write(true).create_new(true).open(p)
    }

    #[test]
    fn several_files_are_written_whole_and_a_failure_leaves_none_half_there() {
        let d = cleanup_dir("all");
        let c = Cleanup::default();
        let (a, b, old) = (d.join("a.json"), d.join("b.json"), d.join("old"));
        std::fs::write(&old, "before").unwrap();
        let big = vec![b'x'; 300_000];
        write_whole_all(
            &[
                (&a, b"{}".as_slice()),
                (&b, &big),
                (&old, b"after".as_slice()),
            ],
            &c,
        )
        .unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"{}");
        assert_eq!(std::fs::read(&b).unwrap(), big);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "after");
        let names = |d: &Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&d), ["a.json", "b.json", "old"], "no temp file left");
        // The last cannot be made: none of the new ones is put in place and
        // no temp file stays.
        let e = cleanup_dir("all-fail");
        let (x, y) = (e.join("x"), e.join("no-such-dir").join("y"));
        assert!(write_whole_all(&[(&x, b"1".as_slice()), (&y, b"2".as_slice())], &c).is_err());
        assert!(names(&e).is_empty(), "{:?}", names(&e));
        assert_eq!(c.remove_all(), 0, "nothing left for the cleanup either");
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(&e).unwrap();
    }

    #[test]
    fn cleanup_never_removes_a_file_it_did_not_create() {
        let d = cleanup_dir("theirs");
        let theirs = d.join("name");
        std::fs::write(&theirs, "theirs").unwrap();
        let c = Cleanup::default();
        let r = c.create(&theirs, || create_new(&theirs)).unwrap();
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(c.remove_all(), 0);
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_create_in_flight_neither_blocks_others_nor_outlives_the_cleanup_pass() {
        use std::sync::{mpsc, Arc};
        let d = cleanup_dir("flight");
        let (slow, quick) = (d.join("slow"), d.join("quick"));
        let c = Arc::new(Cleanup::default());
        let (started_tx, started_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (c2, slow2) = (c.clone(), slow.clone());
        let creator = std::thread::spawn(move || {
            c2.create(&slow2, || {
                started_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                create_new(&slow2)
            })
            .is_none()
        });
        started_rx.recv().unwrap();
        // A create stuck on one mount does not hold up one elsewhere.
        c.create(&quick, || create_new(&quick)).unwrap().unwrap();
        let c3 = c.clone();
        let pass = std::thread::spawn(move || c3.remove_all());
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !pass.is_finished(),
            "the pass waits for the create in flight"
        );
        go_tx.send(()).unwrap();
        assert!(
            creator.join().unwrap(),
            "the late create is told the run is stopping"
        );
        assert_eq!(pass.join().unwrap(), 1, "the quick file");
        assert!(!slow.exists() && !quick.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn cleanup_removes_unfinished_files_and_refuses_new_ones() {
        let d = cleanup_dir("ours");
        let (ours, done, late) = (d.join("ours"), d.join("done"), d.join("late"));
        let c = Cleanup::default();
        c.create(&ours, || create_new(&ours)).unwrap().unwrap();
        c.create(&done, || create_new(&done)).unwrap().unwrap();
        c.forget(&done);
        assert_eq!(c.remove_all(), 1);
        assert!(!ours.exists() && done.exists());
        assert!(c.create(&late, || create_new(&late)).is_none());
        assert!(!late.exists(), "nothing is created once stopping");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("8h").unwrap(), Duration::from_secs(8 * 3600));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        let e = parse_duration(" x ").unwrap_err();
        assert_eq!(e, DurationError::NotANumber("x".into()));
        assert_eq!(
            e.to_string(),
            "'x' is not a duration: expected a number and a unit such as 500ms, 30s, 2m, 8h or 1d"
        );
        let e = parse_duration("3w").unwrap_err();
        assert_eq!(
            e,
            DurationError::UnknownUnit {
                value: "3w".into(),
                unit: "w".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "'3w' has an unknown unit 'w': expected ms, s, m, h or d"
        );
        let e = parse_duration("0s").unwrap_err();
        assert_eq!(e, DurationError::OutOfRange("0s".into()));
        assert_eq!(
            e.to_string(),
            "'0s' is out of range: expected a positive duration"
        );
    }

    #[test]
    fn fixture_paths() {
        let h = Host::new(PathBuf::from("/tmp/fx"), Duration::from_secs(1));
        assert_eq!(
            h.path("/proc/self/status"),
            PathBuf::from("/tmp/fx/proc/self/status")
        );
        assert_eq!(h.path("/"), PathBuf::from("/tmp/fx"));
    }

    #[test]
    fn refuses_fifo_without_blocking() {
        let dir = std::env::temp_dir().join(format!("selfprobe-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("id_rsa");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read_regular(&fifo, 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
