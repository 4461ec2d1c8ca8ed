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

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::unistd::AccessFlags;
use serde::Serialize;

use crate::facts::place;
use crate::facts::programs::{refuse, search_path};
use crate::host::Host;
pub use crate::util::command::ToolStatus;
use crate::util::command::{run_bounded, Ran};
use crate::util::panics;

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
        let at = versions::OnPath {
            tool: name,
            found: &found,
            real: &real,
        };
        if let Some((version, file)) = versions::from_files(host, at, &mut db) {
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

    // Side by side: the slowest tool, not the sum, bounds the probe. Each
    // runner answers once: its outcome, or on a panic "failed internally"
    // (src/util/panics.rs; a panicked thread never ends, so no join).
    let (tx, rx) = mpsc::channel::<(usize, Ran)>();
    let started = to_run.len();
    for (i, exe) in to_run {
        let args: Vec<String> = pending[i].args.clone();
        let env = env.clone();
        let dl = std::cmp::min(deadline, Instant::now() + TOOL_DEADLINE);
        let (tx, on_panic) = (tx.clone(), tx.clone());
        let tool = pending[i].tool.clone();
        std::thread::spawn(move || {
            let o = panics::guard(
                move |_| {
                    let failed = Ran {
                        status: ToolStatus::Error,
                        output: String::new(),
                        exit_code: None,
                        duration: Duration::ZERO,
                        reason: Some("the runner failed internally".into()),
                    };
                    let _ = on_panic.send((i, failed));
                },
                || {
                    panics::planted(format_args!("tool:{tool}"));
                    run_bounded(&exe, &args, &env, Path::new("/"), dl)
                },
            );
            let _ = tx.send((i, o));
        });
    }
    drop(tx);
    for (i, o) in rx.iter().take(started) {
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
    Some(crate::util::sanitize::short(l, 200))
}
