//! The gate, `selfprobe [OPTIONS] -- COMMAND [ARGS…]` (DESIGN.md §17): the
//! command to start once the workspace passes, and the start itself.
//! selfprobe replaces itself with the command (execve: the same PID, so the
//! gate works as a container's ENTRYPOINT or PID 1, signals sent to it reach
//! the command, and the exit code is the command's). main.rs decides whether
//! to start it; the words of a refusal are src/report/gate.rs's.
//!
//! The command inherits the process as its caller gave it, and nothing of
//! selfprobe's:
//! - the environment: the caller's, less `SELFPROBE_SIGNING_KEY`, which
//!   main takes out (and overwrites) before anything else runs
//!   (keys::take_env_key);
//! - descriptors: the caller's. selfprobe opens every descriptor of its
//!   own close-on-exec (std does, and each nix call passes O_CLOEXEC or
//!   SOCK_CLOEXEC); the key's `--sign-key-fd N` (N > 2) is closed once read,
//!   and standard input, when it carried the key, is /dev/null by then
//!   (`stdin_from_null`), so the command cannot seek back to the key. As a
//!   last guard `exec` marks close-on-exec any descriptor open then that was
//!   not open when selfprobe started (`Inherited`). (Rust's runtime opens
//!   /dev/null on a standard descriptor 0-2 that was closed at start: the
//!   command then finds /dev/null there.)
//! - the signal mask the process was started with (host::Signals::hand_over)
//!   and its ignored signals: SIGINT, SIGTERM and SIGHUP are only ever
//!   blocked, never ignored, and SIGPIPE, which Rust's runtime ignores, gets
//!   the caller's disposition back (host::restore_sigpipe);
//! - no thread: execve ends every other thread of the process. The gate
//!   only starts the command when the run finished (a probe cut by
//!   --timeout or crashed is exit 3, and refused), so the threads left are
//!   workers abandoned in a read that hung; the write test's files are
//!   removed before the report is written, and a create still in flight then
//!   refuses the start (main.rs);
//! - no child process: every program a probe runs is killed and reaped at
//!   its deadline (util/command.rs).

use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Where a name without a slash is looked for when PATH is unset: the
/// C library's default for execvp (confstr _CS_PATH).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The command, found, ready for execve.
#[derive(Debug)]
pub struct Command {
    /// The file execve runs (found on PATH, or as given with a slash).
    pub path: PathBuf,
    /// The arguments as given, the first one included.
    argv: Vec<CString>,
}

impl Command {
    /// The command's name as given, for messages (not sanitised).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(self.argv[0].as_bytes()).into_owned()
    }
}

/// Why the command was not started: the exit codes are env(1)'s and the
/// shells', so a wrapper tells "selfprobe refused" (1, 3) from "there was
/// nothing to start" (127) and "it could not be run" (126).
#[derive(Debug)]
pub enum NotStarted {
    /// No such program (on PATH, or at the path given).
    NotFound { name: String, looked: String },
    /// Found, but not an executable regular file.
    NotExecutable { path: PathBuf, why: String },
    /// execve itself failed.
    Exec { path: PathBuf, error: nix::Error },
}

impl NotStarted {
    pub fn exit_code(&self) -> u8 {
        match self {
            NotStarted::NotFound { .. } => 127,
            _ => 126,
        }
    }
}

impl fmt::Display for NotStarted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotStarted::NotFound { name, looked } => write!(
                f,
                "cannot start {name:?}: not found ({looked}): expected a program on PATH or a path to one"
            ),
            NotStarted::NotExecutable { path, why } => write!(
                f,
                "cannot start {}: {why}: expected an executable file",
                path.display()
            ),
            NotStarted::Exec { path, error } => {
                write!(f, "cannot start {}: execve failed: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for NotStarted {}

/// Finds the command as execvp(3) would: a name with a slash is that
/// path; any other name is looked for in each directory of PATH in turn
/// (an empty entry is the working directory), the first executable regular
/// file winning. Done before the probe runs, so a misspelt command fails at
/// once instead of after the whole check.
pub fn resolve(argv: &[OsString]) -> Result<Command, NotStarted> {
    let name = argv.first().map(OsString::as_os_str).unwrap_or_default();
    let shown = name.to_string_lossy().into_owned();
    let path = if name.as_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        executable(&p).map_err(|why| match std::fs::metadata(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => NotStarted::NotFound {
                name: shown.clone(),
                looked: format!("no file {}", p.display()),
            },
            _ => NotStarted::NotExecutable {
                path: p.clone(),
                why,
            },
        })?;
        p
    } else {
        let var = std::env::var_os("PATH");
        let search = var
            .as_deref()
            .unwrap_or_else(|| OsStr::new(DEFAULT_PATH))
            .to_os_string();
        let mut refused: Option<(PathBuf, String)> = None;
        let mut found = None;
        for dir in search.as_bytes().split(|b| *b == b':') {
            let dir = if dir.is_empty() {
                Path::new(".")
            } else {
                Path::new(OsStr::from_bytes(dir))
            };
            let candidate = dir.join(name);
            match executable(&candidate) {
                Ok(()) => {
                    found = Some(candidate);
                    break;
                }
                Err(why) if candidate.exists() && refused.is_none() => {
                    refused = Some((candidate, why));
                }
                Err(_) => {}
            }
        }
        match (found, refused) {
            (Some(p), _) => p,
            (None, Some((path, why))) => return Err(NotStarted::NotExecutable { path, why }),
            (None, None) => {
                return Err(NotStarted::NotFound {
                    name: shown,
                    looked: match var {
                        Some(_) => format!("PATH={}", search.to_string_lossy()),
                        None => format!("PATH unset, so {DEFAULT_PATH}"),
                    },
                })
            }
        }
    };
    let argv = argv
        .iter()
        .map(|a| {
            // An argument from the command line holds no NUL; one from
            // elsewhere would be cut there, as the kernel would.
            let bytes = a.clone().into_vec();
            let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
            CString::new(&bytes[..end]).unwrap_or_default()
        })
        .collect();
    Ok(Command { path, argv })
}

/// Whether `p` is a regular file this process may execute (access(2) with
/// the effective ids, as execve checks).
fn executable(p: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(p).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("no execute permission".into());
    }
    nix::unistd::faccessat(
        nix::fcntl::AT_FDCWD,
        p,
        nix::unistd::AccessFlags::X_OK,
        nix::fcntl::AtFlags::AT_EACCESS,
    )
    .map_err(|e| format!("not executable by this user ({e})"))
}

/// The descriptors open when selfprobe started: the caller's, which the
/// command inherits as they are. None when /proc/self/fd cannot be read
/// (no procfs): the last guard of `exec` is then not taken, and
/// close-on-exec alone keeps selfprobe's own descriptors from the command.
#[derive(Debug)]
pub struct Inherited(Option<Vec<i32>>);

/// Call before selfprobe opens anything (main, right after parsing).
pub fn inherited() -> Inherited {
    Inherited(open_fds())
}

impl Inherited {
    /// `fd` was the caller's but selfprobe closes it (the key's): its
    /// number may then be reused for a descriptor of selfprobe's own.
    pub fn forget(&mut self, fd: i32) {
        if let Some(v) = &mut self.0 {
            v.retain(|f| *f != fd || fd <= 2);
        }
    }
}

/// The descriptors open now, without the one the listing itself used.
fn open_fds() -> Option<Vec<i32>> {
    let listed: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    // The directory's own descriptor was in the listing and is closed now.
    Some(
        listed
            .into_iter()
            .filter(|fd| {
                // SAFETY: F_GETFD only asks whether the number is open.
                nix::fcntl::fcntl(
                    unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) },
                    nix::fcntl::FcntlArg::F_GETFD,
                )
                .is_ok()
            })
            .collect(),
    )
}

/// Makes /dev/null standard input: for `--sign-key-fd 0` with a command.
/// The key was read to its end, but a file redirected in (`< key`) can be
/// read again from its start by whoever holds the descriptor.
pub fn stdin_from_null() -> std::io::Result<()> {
    let null = std::fs::File::open("/dev/null")?;
    nix::unistd::dup2_stdin(&null).map_err(std::io::Error::from)
}

/// Replaces this process with the command. Call from the main thread once
/// host::Signals::hand_over has returned; returns only when execve failed.
pub fn exec(cmd: &Command, inherited: &Inherited) -> NotStarted {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    if let Err(error) = crate::host::restore_sigpipe() {
        return NotStarted::Exec {
            path: cmd.path.clone(),
            error,
        };
    }
    if let (Some(before), Some(now)) = (&inherited.0, open_fds()) {
        for fd in now.into_iter().filter(|fd| *fd > 2 && !before.contains(fd)) {
            // SAFETY: fd is open (just listed) and not the caller's; only
            // its close-on-exec flag is set.
            let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            let _ = nix::fcntl::fcntl(
                fd,
                nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
            );
        }
    }
    let path = CString::new(cmd.path.as_os_str().as_bytes()).unwrap_or_default();
    match nix::unistd::execv(&path, &cmd.argv) {
        Ok(never) => match never {},
        Err(error) => NotStarted::Exec {
            path: cmd.path.clone(),
            error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_name_on_path_and_refuses_what_is_not_there() {
        let c = resolve(&["sh".into(), "-c".into(), "true".into()]).unwrap();
        assert!(c.path.ends_with("sh") && c.path.is_absolute(), "{c:?}");
        assert_eq!(c.name(), "sh");
        let e = resolve(&["selfprobe-no-such-program".into()]).unwrap_err();
        assert_eq!(e.exit_code(), 127, "{e}");
        assert!(
            e.to_string()
                .starts_with("cannot start \"selfprobe-no-such-program\": not found (PATH="),
            "{e}"
        );
        let e = resolve(&["/nonexistent/agent".into()]).unwrap_err();
        assert_eq!(e.exit_code(), 127, "{e}");
        let e = resolve(&["/etc/passwd".into()]).unwrap_err();
        assert_eq!(e.exit_code(), 126, "{e}");
        assert!(e.to_string().contains("no execute permission"), "{e}");
        let e = resolve(&["/".into()]).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
