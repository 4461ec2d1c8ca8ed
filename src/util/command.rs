//! Runs a program the way selfprobe runs anything: no shell, the
//! environment given and nothing else, stdin from /dev/null, stdout and
//! stderr into one capped pipe, its own process group, and a deadline at
//! which the group is killed. Tool versions (phase 4), `sudo -n -l` and
//! `git status` all go through here; which programs may be run at all is
//! src/facts/programs.rs.
//!
//! The host-side commands (src/outside) run the engine CLI through the same
//! runner (`run` with a `Spec`): with the user's own environment, bytes fed
//! on stdin (the signing key, never a file), and stdout and stderr in pipes
//! of their own, each capped, a flood past its cap ending the run.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use serde::{Deserialize, Serialize};

/// Bytes of output kept; a version is on the first line.
pub const OUTPUT_CAP: usize = 4096;

/// How a run ended (and, for tool versions, why a tool was not run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug)]
pub struct Ran {
    pub status: ToolStatus,
    pub output: String,
    pub exit_code: Option<i32>,
    pub duration: Duration,
    pub reason: Option<String>,
}

/// Runs `exe args` as the module comment says. Never blocks past
/// `deadline` by more than a poll interval and the kill.
pub fn run_bounded(
    exe: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    deadline: Instant,
) -> Ran {
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
) -> Ran {
    let c = run(&Spec {
        exe,
        args,
        env: Env::Only(env),
        cwd: Some(cwd),
        stdin: None,
        streams: Streams::Merged { cap },
        deadline,
    });
    Ran {
        status: c.status,
        output: String::from_utf8_lossy(&c.stdout).into_owned(),
        exit_code: c.exit_code,
        duration: c.duration,
        reason: c.reason,
    }
}

/// The environment a program gets.
#[derive(Debug, Clone, Copy)]
pub enum Env<'a> {
    /// These variables and nothing else (the probes' tools: a clean
    /// environment, so no secret of the workspace reaches them).
    Only(&'a [(String, String)]),
    /// The caller's own environment: an engine CLI run on the host must see
    /// DOCKER_HOST, CONTAINER_HOST, its contexts, CONTAINERS_CONF and
    /// XDG_RUNTIME_DIR as the user set them.
    Inherit,
}

/// Where the program's output goes, and how much of it is kept.
#[derive(Debug, Clone, Copy)]
pub enum Streams {
    /// stdout and stderr into one pipe (their order kept); up to `cap`
    /// bytes are kept and the rest is read and dropped, so the program is
    /// never blocked on a full pipe.
    Merged { cap: usize },
    /// Two pipes, each with its own cap. Output past a cap ends the run:
    /// the program is killed and `Captured::overflow` names the stream (a
    /// container's answer is untrusted, and a flood must neither fill the
    /// host's memory nor run on until the deadline).
    Separate {
        stdout_cap: usize,
        stderr_cap: usize,
    },
}

/// One program run: `exe args`, no shell.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    pub exe: &'a Path,
    pub args: &'a [String],
    pub env: Env<'a>,
    /// None: the caller's working directory.
    pub cwd: Option<&'a Path>,
    /// Bytes written to the program's stdin, which is then closed (None:
    /// /dev/null). Written from this slice and copied nowhere, so a caller
    /// holding a key in a zeroizing buffer keeps it there.
    pub stdin: Option<&'a [u8]>,
    pub streams: Streams,
    pub deadline: Instant,
}

/// What a run gave back.
#[derive(Debug)]
pub struct Captured {
    pub status: ToolStatus,
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    /// Empty with `Streams::Merged`.
    pub stderr: Vec<u8>,
    /// "stdout" or "stderr": that stream passed its cap and the program was
    /// killed (`Streams::Separate` only).
    pub overflow: Option<&'static str>,
    pub duration: Duration,
    pub reason: Option<String>,
}

/// Runs `spec` (the module comment says how). Never blocks past its
/// deadline by more than a poll interval and the kill.
pub fn run(spec: &Spec) -> Captured {
    let started = Instant::now();
    let fail = |why: String| Captured {
        status: ToolStatus::Error,
        exit_code: None,
        stdout: Vec::new(),
        stderr: Vec::new(),
        overflow: None,
        duration: started.elapsed(),
        reason: Some(why),
    };
    // O_CLOEXEC: the child gets the write ends only as its stdout and
    // stderr. Only our ends are non-blocking; the child's writes block as
    // usual when a pipe is full.
    let pipe = || -> Result<(OwnedFd, OwnedFd), String> {
        let (rd, wr) = nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        Ok((rd, wr))
    };
    let nonblocking = |fd: &OwnedFd| {
        nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .map(|_| ())
            .map_err(|e| format!("fcntl: {e}"))
    };
    let (out_rd, out_wr) = match pipe() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let (err_rd, err_wr, out_cap, err_cap, kill_on_overflow) = match spec.streams {
        Streams::Merged { cap } => match out_wr.try_clone() {
            Ok(w) => (None, w, cap, 0, false),
            Err(e) => return fail(format!("dup: {e}")),
        },
        Streams::Separate {
            stdout_cap,
            stderr_cap,
        } => match pipe() {
            Ok((r, w)) => (Some(r), w, stdout_cap, stderr_cap, true),
            Err(e) => return fail(e),
        },
    };
    let stdin_pipe = match spec.stdin {
        Some(_) => match pipe() {
            Ok(p) => Some(p),
            Err(e) => return fail(e),
        },
        None => None,
    };
    for fd in [Some(&out_rd), err_rd.as_ref()]
        .into_iter()
        .flatten()
        .chain(stdin_pipe.as_ref().map(|(_, w)| w))
    {
        if let Err(e) = nonblocking(fd) {
            return fail(e);
        }
    }
    let mut cmd = Command::new(spec.exe);
    cmd.args(spec.args);
    if let Env::Only(env) = spec.env {
        cmd.env_clear()
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    if let Some(d) = spec.cwd {
        cmd.current_dir(d);
    }
    let (stdin_wr, stdin_rd) = match stdin_pipe {
        Some((r, w)) => (Some(w), Some(r)),
        None => (None, None),
    };
    match stdin_rd {
        Some(r) => cmd.stdin(Stdio::from(r)),
        None => cmd.stdin(Stdio::null()),
    };
    cmd.stdout(Stdio::from(out_wr))
        .stderr(Stdio::from(err_wr))
        // Its own process group, so the kill reaches what it started too.
        .process_group(0);
    let spawned = cmd.spawn();
    // Drop our copies of the child's ends, or the pipes never report EOF.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start: {e}")),
    };
    let mut io = Io {
        out: Some(File::from(out_rd)),
        err: err_rd.map(File::from),
        stdin: stdin_wr.map(File::from),
        pending: spec.stdin.unwrap_or_default(),
        stdout: Vec::new(),
        stderr: Vec::new(),
        out_cap,
        err_cap,
        kill_on_overflow,
        overflow: None,
        idle: Duration::ZERO,
    };
    let finish = |io: Io, status: ToolStatus, code: Option<i32>, reason: Option<String>| Captured {
        status,
        exit_code: code,
        stdout: io.stdout,
        stderr: io.stderr,
        overflow: io.overflow,
        duration: started.elapsed(),
        reason,
    };
    loop {
        io.pump(POLL_INTERVAL);
        if let Some(which) = io.overflow {
            kill_group(&mut child);
            let cap = if which == "stdout" { out_cap } else { err_cap };
            return finish(
                io,
                ToolStatus::Failed,
                None,
                Some(format!(
                    "wrote more than {} on {which} and was killed",
                    human_bytes(cap)
                )),
            );
        }
        match child.try_wait() {
            Ok(Some(st)) => {
                io.drain_rest();
                let ok = st.success();
                let reason = (!ok).then(|| format!("exited with {st}"));
                let status = if ok {
                    ToolStatus::Ok
                } else {
                    ToolStatus::Failed
                };
                let code = st.code();
                if let Some(which) = io.overflow {
                    let cap = if which == "stdout" { out_cap } else { err_cap };
                    let why = format!("wrote more than {} on {which}", human_bytes(cap));
                    return finish(io, ToolStatus::Failed, code, Some(why));
                }
                return finish(io, status, code, reason);
            }
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return finish(io, ToolStatus::Error, None, Some(format!("wait: {e}")));
            }
        }
        if Instant::now() >= spec.deadline {
            kill_group(&mut child);
            let limit = spec.deadline.saturating_duration_since(started);
            return finish(
                io,
                ToolStatus::Timeout,
                None,
                Some(format!(
                    "did not finish within {} ms and was killed",
                    limit.as_millis()
                )),
            );
        }
    }
}

/// How long one wait for output lasts before the child's exit and the
/// deadline are looked at again.
const POLL_INTERVAL: Duration = Duration::from_millis(5);

pub fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// Our ends of the child's pipes, and what came out of them.
struct Io<'a> {
    out: Option<File>,
    err: Option<File>,
    stdin: Option<File>,
    /// What is still to be written to stdin.
    pending: &'a [u8],
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    out_cap: usize,
    err_cap: usize,
    kill_on_overflow: bool,
    overflow: Option<&'static str>,
    /// The last wait made with every pipe closed (see `pump`).
    idle: Duration,
}

impl Io<'_> {
    /// Waits up to `wait` for any pipe to be ready, then moves what is
    /// there: output in (capped), stdin out.
    fn pump(&mut self, wait: Duration) {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
        {
            let mut fds = Vec::with_capacity(3);
            for f in [&self.out, &self.err].into_iter().flatten() {
                fds.push(PollFd::new(f.as_fd(), PollFlags::POLLIN));
            }
            if let Some(f) = &self.stdin {
                fds.push(PollFd::new(f.as_fd(), PollFlags::POLLOUT));
            }
            if fds.is_empty() {
                // Every pipe is closed: the program is ending (or closed
                // them and lives on). Looked at again after 0.1 ms, then
                // twice as long each time up to `wait`: its exit is seen
                // within a fraction of a millisecond, where a whole `wait`
                // cost each engine call about 3 ms (bench/RESULTS.md).
                self.idle = (self.idle * 2).clamp(Duration::from_micros(100), wait);
                std::thread::sleep(self.idle);
                return;
            }
            let _ = poll(&mut fds, PollTimeout::from(ms));
        }
        self.write_stdin();
        self.read_available();
    }

    fn write_stdin(&mut self) {
        use std::io::Write;
        let Some(f) = self.stdin.as_mut() else {
            return;
        };
        while !self.pending.is_empty() {
            match f.write(self.pending) {
                Ok(0) => break,
                Ok(n) => self.pending = &self.pending[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // EPIPE: the program closed its stdin; the rest is not wanted.
                Err(_) => break,
            }
        }
        // All written (or refused): close it, so the program sees the end.
        self.stdin = None;
    }

    /// Reads what the pipes hold now, without blocking; a pipe at EOF is
    /// closed.
    fn read_available(&mut self) {
        let mut chunk = [0u8; 16384];
        for which in ["stdout", "stderr"] {
            let (file, buf, cap) = if which == "stdout" {
                (&mut self.out, &mut self.stdout, self.out_cap)
            } else {
                (&mut self.err, &mut self.stderr, self.err_cap)
            };
            let Some(f) = file.as_mut() else {
                continue;
            };
            loop {
                match f.read(&mut chunk) {
                    Ok(0) => {
                        *file = None;
                        break;
                    }
                    Ok(n) => {
                        let room = cap.saturating_sub(buf.len());
                        buf.extend_from_slice(&chunk[..n.min(room)]);
                        if n > room && self.kill_on_overflow {
                            self.overflow.get_or_insert(which);
                            return;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        }
    }

    /// After the child exited: what is left in the pipes (a grandchild that
    /// still holds one open is not waited for).
    fn drain_rest(&mut self) {
        self.stdin = None;
        self.read_available();
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
    use std::path::PathBuf;

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
        assert_eq!(o.output.lines().next(), Some("starting"));
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
            o.output.lines().next().map(str::trim),
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

        // Its pipes closed, it lives on: the shorter waits once every pipe
        // is closed still end at the deadline, and an exit after them is
        // still seen with its code.
        for (body, deadline, status) in [
            ("exec >&- 2>&-; sleep 30", 300, ToolStatus::Timeout),
            ("exec >&- 2>&-; sleep 0.2; exit 4", 5000, ToolStatus::Failed),
        ] {
            let closed = script(&dir, "closed", body);
            let t0 = Instant::now();
            let o = run_bounded(
                &closed,
                &[],
                &[("PATH".into(), "/usr/bin:/bin".into())],
                Path::new("/"),
                Instant::now() + Duration::from_millis(deadline),
            );
            assert_eq!(o.status, status, "{body}: {o:?}");
            assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
            if status == ToolStatus::Failed {
                assert_eq!(o.exit_code, Some(4), "{o:?}");
                assert!(t0.elapsed() >= Duration::from_millis(200));
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn spec<'a>(exe: &'a Path, args: &'a [String], stdin: Option<&'a [u8]>) -> Spec<'a> {
        Spec {
            exe,
            args,
            env: Env::Inherit,
            cwd: None,
            stdin,
            streams: Streams::Separate {
                stdout_cap: 1 << 20,
                stderr_cap: 1 << 10,
            },
            deadline: Instant::now() + Duration::from_secs(10),
        }
    }

    #[test]
    fn stdin_is_fed_and_the_streams_are_kept_apart() {
        let dir = std::env::temp_dir().join(format!("selfprobe-spec-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cat = script(
            &dir,
            "cat",
            "cat; echo \"err $SELFPROBE_SPEC_VAR\" >&2; exit 4",
        );
        std::env::set_var("SELFPROBE_SPEC_VAR", "inherited");
        let c = run(&spec(&cat, &[], Some(b"key bytes\n")));
        assert_eq!(c.status, ToolStatus::Failed, "{c:?}");
        assert_eq!(c.exit_code, Some(4));
        assert_eq!(c.stdout, b"key bytes\n");
        assert_eq!(c.stderr, b"err inherited\n", "the caller's environment");
        assert_eq!(c.overflow, None);

        // Input larger than a pipe holds is written as the program reads it.
        let big = vec![b'x'; 300_000];
        let wc = script(&dir, "wc", "wc -c");
        let c = run(&spec(&wc, &[], Some(&big)));
        assert_eq!(String::from_utf8_lossy(&c.stdout).trim(), "300000", "{c:?}");

        // A program that never reads its stdin still ends.
        let t0 = Instant::now();
        let c = run(&spec(&script(&dir, "deaf", "exit 0"), &[], Some(&big)));
        assert_eq!(c.status, ToolStatus::Ok, "{c:?}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_flood_past_its_cap_is_killed_at_once() {
        let dir = std::env::temp_dir().join(format!("selfprobe-flood-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let flood = script(&dir, "flood", "exec yes flood");
        let t0 = Instant::now();
        let c = run(&spec(&flood, &[], None));
        assert_eq!(c.overflow, Some("stdout"), "{:?}", c.reason);
        assert_eq!(c.stdout.len(), 1 << 20);
        assert!(c.reason.unwrap().contains("more than 1 MiB on stdout"));
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        let noisy = script(&dir, "noisy", "exec yes err >&2");
        let c = run(&spec(&noisy, &[], None));
        assert_eq!(c.overflow, Some("stderr"));
        assert_eq!(c.stderr.len(), 1 << 10);
        let hang = script(&dir, "hang", "sleep 30");
        let mut s = spec(&hang, &[], None);
        s.deadline = Instant::now() + Duration::from_millis(200);
        let c = run(&s);
        assert_eq!(c.status, ToolStatus::Timeout);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
