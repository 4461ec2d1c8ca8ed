//! Tool versions for phase 4. A version a file says is read, not asked
//! for: the package.json of npm, npx, pnpm, yarn and corepack (scripts that
//! would start node, 0.7 s for `npm --version` in a Debian image), the
//! dist-info METADATA of pip, uv and other Python-installed tools, a venv's
//! pyvenv.cfg, a JDK's `release`, a Go root's `VERSION`, and the system's
//! package database (dpkg's status, for a binary its .list names). Only
//! when no file says is the tool run, by its version flag:
//! no shell, an environment holding only PATH, HOME and switches that keep
//! tools offline, stdin from /dev/null, stdout and stderr into one capped
//! pipe, the working directory at / (so no project file makes a toolchain
//! manager download anything), and a deadline at which the tool and its
//! process group are killed.
//!
//! Only binaries owned by root or by this user and writable by nobody else
//! are run: selfprobe may run as root while the agent planted tools on PATH.
//! With `--root` (a fixture tree) nothing is run: a tree on disk may be an
//! untrusted image, and executing it would run its code on this machine.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::unistd::AccessFlags;
use serde::Serialize;

use crate::host::Host;
use crate::probe::place;

mod versions;

/// The tools looked for on PATH and the arguments that print their version.
pub const TOOLS: &[(&str, &[&str])] = &[
    ("python3", &["--version"]),
    ("python", &["--version"]),
    ("uv", &["--version"]),
    ("node", &["--version"]),
    ("npm", &["--version"]),
    ("npx", &["--version"]),
    ("pnpm", &["--version"]),
    ("yarn", &["--version"]),
    ("corepack", &["--version"]),
    ("pip", &["--version"]),
    ("pip3", &["--version"]),
    ("deno", &["--version"]),
    ("bun", &["--version"]),
    ("go", &["version"]),
    ("rustc", &["--version"]),
    ("cargo", &["--version"]),
    ("mise", &["--version"]),
    ("java", &["-version"]),
    ("ruby", &["--version"]),
    ("gcc", &["--version"]),
    ("git", &["--version"]),
];

/// One tool's version may take this long; a JVM or a cold Python needs well
/// under a second here.
pub const TOOL_DEADLINE: Duration = Duration::from_secs(2);
/// Bytes of output kept; the version is on the first line.
pub const OUTPUT_CAP: usize = 4096;
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Variables that keep version queries offline and quiet: corepack would
/// fetch pnpm or yarn, rustup a pinned toolchain, go a newer toolchain.
const OFFLINE_ENV: &[(&str, &str)] = &[
    ("LC_ALL", "C"),
    ("COREPACK_ENABLE_NETWORK", "0"),
    ("COREPACK_ENABLE_DOWNLOAD_PROMPT", "0"),
    ("RUSTUP_AUTO_INSTALL", "0"),
    ("GOTOOLCHAIN", "local"),
    ("MISE_OFFLINE", "1"),
    ("MISE_HIDE_UPDATE_WARNING", "1"),
    ("UV_OFFLINE", "1"),
    ("NO_UPDATE_NOTIFIER", "1"),
    ("npm_config_update_notifier", "false"),
    ("DOTNET_CLI_TELEMETRY_OPTOUT", "1"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolStatus {
    /// Exited 0.
    Ok,
    /// Exited non-zero or by a signal.
    Failed,
    /// Still running at its deadline: killed.
    Timeout,
    /// Could not be started.
    Error,
    /// Found but deliberately not run.
    NotRun,
    /// Not run: a file says its version (`version_file`).
    FromFile,
}

#[derive(Debug, Clone, Serialize)]
pub struct ToolRun {
    pub tool: String,
    /// Where it was found on PATH (inside the root).
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    pub args: Vec<String>,
    pub status: ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The file the version was read from, when it was not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

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
fn refuse(meta: &std::fs::Metadata) -> Option<String> {
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

/// `name` on PATH, if this process may run it (see `refuse`); never under
/// --root. For a tool another probe runs itself (git status).
pub fn runnable(host: &Host, name: &str) -> Result<PathBuf, String> {
    if !host.is_live() {
        return Err("--root: binaries in a fixture tree are never executed".into());
    }
    let found = search_path(host)
        .iter()
        .map(|d| d.join(name))
        .find(|p| std::fs::symlink_metadata(host.path(p)).is_ok())
        .ok_or_else(|| format!("{name} is not on PATH"))?;
    let real = place::resolve(host, &found)
        .ok_or_else(|| format!("{}: a symlink loop", found.display()))?;
    let m = std::fs::metadata(host.path(&real))
        .map_err(|e| format!("{}: cannot stat: {e}", real.display()))?;
    if let Some(why) = refuse(&m) {
        return Err(format!("{} is not run: {why}", real.display()));
    }
    host.access(&real, AccessFlags::X_OK)
        .map_err(|e| format!("{} is not executable: {}", real.display(), e.desc()))?;
    Ok(host.path(&found))
}

/// Finds each tool on PATH and reads its version from a file, or, on a
/// live system where no file says, runs it.
pub fn observe(host: &Host, deadline: Instant) -> Vec<ToolRun> {
    let path = search_path(host);
    let joined = path
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":");
    let mut env: Vec<(String, String)> = vec![("PATH".into(), joined)];
    if let Some(h) = host.env().get("HOME") {
        if h.starts_with('/') {
            env.push(("HOME".into(), h.to_string()));
        }
    }
    env.extend(
        OFFLINE_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );

    let mut pending: Vec<ToolRun> = Vec::new();
    let mut to_run: Vec<(usize, PathBuf)> = Vec::new();
    let mut db = versions::Dpkg::default();
    for (name, args) in TOOLS {
        let Some(found) = path
            .iter()
            .map(|d| d.join(name))
            .find(|p| std::fs::symlink_metadata(host.path(p)).is_ok())
        else {
            continue;
        };
        let real = place::resolve(host, &found);
        let mut run = ToolRun {
            tool: name.to_string(),
            path: found.to_string_lossy().into_owned(),
            resolved: real
                .as_ref()
                .filter(|r| **r != found)
                .map(|r| r.to_string_lossy().into_owned()),
            args: args.iter().map(|a| a.to_string()).collect(),
            status: ToolStatus::NotRun,
            version: None,
            version_file: None,
            exit_code: None,
            duration_ms: 0,
            reason: None,
        };
        let Some(real) = real else {
            run.reason = Some("a symlink loop".into());
            pending.push(run);
            continue;
        };
        // Reading a file runs nothing, so it is done under --root too.
        if let Some((version, file)) = versions::from_files(host, name, &found, &real, &mut db) {
            run.status = ToolStatus::FromFile;
            run.version = Some(version);
            run.version_file = Some(file);
            pending.push(run);
            continue;
        }
        if !host.is_live() {
            run.reason = Some("--root: binaries in a fixture tree are never executed".into());
            pending.push(run);
            continue;
        }
        let why = match std::fs::metadata(host.path(&real)) {
            Err(e) => Some(format!("cannot stat: {e}")),
            Ok(m) => refuse(&m).or_else(|| {
                host.access(&real, AccessFlags::X_OK)
                    .err()
                    .map(|e| format!("not executable: {}", e.desc()))
            }),
        };
        if let Some(why) = why {
            run.reason = Some(why);
            pending.push(run);
            continue;
        }
        // Run through the name found on PATH, not the link's target: rustup
        // and busybox pick the tool by argv[0].
        to_run.push((pending.len(), host.path(&found)));
        pending.push(run);
    }

    // Side by side: the slowest tool, not the sum, bounds the probe.
    let handles: Vec<(usize, std::thread::JoinHandle<Outcome>)> = to_run
        .into_iter()
        .map(|(i, exe)| {
            let args: Vec<String> = pending[i].args.clone();
            let env = env.clone();
            let dl = std::cmp::min(deadline, Instant::now() + TOOL_DEADLINE);
            (
                i,
                std::thread::spawn(move || run_bounded(&exe, &args, &env, Path::new("/"), dl)),
            )
        })
        .collect();
    for (i, h) in handles {
        let o = h.join().unwrap_or_else(|_| Outcome {
            status: ToolStatus::Error,
            output: String::new(),
            exit_code: None,
            duration: Duration::ZERO,
            reason: Some("the runner failed internally".into()),
        });
        let r = &mut pending[i];
        r.status = o.status;
        r.exit_code = o.exit_code;
        r.duration_ms = o.duration.as_millis() as u64;
        r.version = first_line(&o.output);
        r.reason = o.reason;
    }
    pending
}

fn first_line(s: &str) -> Option<String> {
    let l = s.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(l.chars().filter(|c| !c.is_control()).take(200).collect())
}

#[derive(Debug)]
pub struct Outcome {
    pub status: ToolStatus,
    pub output: String,
    pub exit_code: Option<i32>,
    pub duration: Duration,
    pub reason: Option<String>,
}

/// Runs `exe args` as described in the module comment. Never blocks past
/// `deadline` by more than a poll interval and the kill.
pub fn run_bounded(
    exe: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    deadline: Instant,
) -> Outcome {
    run_capped(exe, args, env, cwd, deadline, OUTPUT_CAP)
}

/// `run_bounded`, keeping up to `cap` bytes of output.
pub fn run_capped(
    exe: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    deadline: Instant,
    cap: usize,
) -> Outcome {
    let started = Instant::now();
    let fail = |why: String| Outcome {
        status: ToolStatus::Error,
        output: String::new(),
        exit_code: None,
        duration: started.elapsed(),
        reason: Some(why),
    };
    // O_CLOEXEC: the child gets the write end only as its stdout and
    // stderr. Only our read end is non-blocking; the child's writes block
    // as usual when the pipe is full.
    let (rd, wr) = match nix::unistd::pipe2(OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return fail(format!("pipe: {e}")),
    };
    if let Err(e) = nix::fcntl::fcntl(&rd, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK)) {
        return fail(format!("fcntl: {e}"));
    }
    let wr2 = match wr.try_clone() {
        Ok(w) => w,
        Err(e) => return fail(format!("dup: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(wr))
        .stderr(Stdio::from(wr2))
        // Its own process group, so the kill reaches what it started too.
        .process_group(0);
    let spawned = cmd.spawn();
    // Drop our copies of the write end, or the pipe never reports EOF.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start: {e}")),
    };
    let mut reader = File::from(rd);
    let mut out: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 1024];
    let mut drain = |reader: &mut File, out: &mut Vec<u8>| loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = cap.saturating_sub(out.len());
                out.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(_) => break,
        }
    };
    loop {
        drain(&mut reader, &mut out);
        match child.try_wait() {
            Ok(Some(st)) => {
                drain(&mut reader, &mut out);
                let ok = st.success();
                return Outcome {
                    status: if ok {
                        ToolStatus::Ok
                    } else {
                        ToolStatus::Failed
                    },
                    output: String::from_utf8_lossy(&out).into_owned(),
                    exit_code: st.code(),
                    duration: started.elapsed(),
                    reason: (!ok).then(|| format!("exited with {st}")),
                };
            }
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return fail(format!("wait: {e}"));
            }
        }
        if Instant::now() >= deadline {
            kill_group(&mut child);
            let limit = deadline.saturating_duration_since(started);
            return Outcome {
                status: ToolStatus::Timeout,
                output: String::from_utf8_lossy(&out).into_owned(),
                exit_code: None,
                duration: started.elapsed(),
                reason: Some(format!(
                    "did not finish within {} ms and was killed",
                    limit.as_millis()
                )),
            };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill_group(child: &mut std::process::Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_hanging_tool_is_killed_at_its_deadline() {
        let dir = std::env::temp_dir().join(format!("selfprobe-tools-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let hang = script(&dir, "hang", "echo starting; sleep 30");
        let t0 = Instant::now();
        let o = run_bounded(
            &hang,
            &["--version".into()],
            &[("PATH".into(), "/usr/bin:/bin".into())],
            Path::new("/"),
            Instant::now() + Duration::from_millis(300),
        );
        assert_eq!(o.status, ToolStatus::Timeout, "{o:?}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert_eq!(first_line(&o.output).as_deref(), Some("starting"));
        assert!(o.reason.unwrap().contains("killed"));

        let ver = script(&dir, "ver", "echo \"$SECRET_TOKEN\" tool 1.2.3 >&2; exit 0");
        std::env::set_var("SECRET_TOKEN", "leaked");
        let o = run_bounded(
            &ver,
            &[],
            &[("PATH".into(), "/usr/bin:/bin".into())],
            Path::new("/"),
            Instant::now() + Duration::from_secs(5),
        );
        assert_eq!(o.status, ToolStatus::Ok, "{o:?}");
        assert_eq!(
            first_line(&o.output).as_deref(),
            Some("tool 1.2.3"),
            "stderr is captured and the environment is clean"
        );

        let noisy = script(&dir, "noisy", "yes version | head -c 1000000; exit 3");
        let o = run_bounded(
            &noisy,
            &[],
            &[("PATH".into(), "/usr/bin:/bin".into())],
            Path::new("/"),
            Instant::now() + Duration::from_secs(5),
        );
        assert_eq!(o.status, ToolStatus::Failed, "{o:?}");
        assert_eq!(o.exit_code, Some(3));
        assert!(o.output.len() <= OUTPUT_CAP);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_binaries_others_can_change() {
        let dir = std::env::temp_dir().join(format!("selfprobe-refuse-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = script(&dir, "t", "true");
        assert_eq!(refuse(&std::fs::metadata(&p).unwrap()), None);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(refuse(&std::fs::metadata(&p).unwrap())
            .unwrap()
            .contains("writable"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
