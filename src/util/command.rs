//! Runs a program the way selfprobe runs anything: no shell, the
//! environment given and nothing else, stdin from /dev/null, stdout and
//! stderr into one capped pipe, its own process group, and a deadline at
//! which the group is killed. Tool versions (phase 4), `sudo -n -l` and
//! `git status` all go through here; which programs may be run at all is
//! src/facts/programs.rs.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use serde::Serialize;

/// Bytes of output kept; a version is on the first line.
pub const OUTPUT_CAP: usize = 4096;

/// How a run ended (and, for tool versions, why a tool was not run).
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

#[derive(Debug)]
pub struct Outcome {
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
