//! The workspace repository's git state, for repo scope's evidence (the
//! blueprint's "repo path, branch/worktree ID, clean git status"): where the
//! repository is, the branch or a detached HEAD, the HEAD commit, whether it
//! is a linked worktree (and the worktree's id), and clean or dirty with
//! counts.
//!
//! Everything but the status is read from .git directly (HEAD, loose refs,
//! packed-refs, a worktree's `gitdir:` file and its `commondir`), so it works
//! in a fixture tree and without git. The status comes from
//! `git status --porcelain=v2 --branch`, run like the version queries of
//! src/util/command.rs (no shell, a clean environment, a deadline) with
//! `-c safe.directory=*` so another user's checkout answers, and
//! `--no-optional-locks` so the index is never rewritten. It is never run
//! under --root, nor in a repository whose config names commands that a
//! status would run (clean filters, fsmonitor, includes of other files):
//! the status is then unknown, with the reason.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use crate::facts::programs;
use crate::host::{read_regular_nofollow, Host};
use crate::util::command;

/// A ref file, HEAD or a gitdir pointer is a line; packed-refs can be long.
const SMALL: u64 = 4096;
const PACKED_REFS_MAX: u64 = 8 << 20;
/// How far up from the workspace a .git is looked for.
const MAX_UP: usize = 64;
/// git status may take this long on a large repository.
pub const STATUS_DEADLINE: Duration = Duration::from_secs(3);
/// Bytes of porcelain kept: about 10,000 changed paths; past that the
/// counts are lower bounds (`truncated`).
const STATUS_CAP: usize = 1 << 20;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Repository {
    /// The working tree's top: the directory holding .git.
    pub path: String,
    /// Where the repository data is: .git, or the worktree's own gitdir.
    pub git_dir: String,
    /// "repository", "linked-worktree" or "submodule".
    pub kind: Text,
    /// The branch HEAD is on; None when detached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    pub detached: bool,
    /// The commit HEAD points at; None on a branch with no commit yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_commit: Option<String>,
    /// Where the commit was found: HEAD, refs/heads/…, packed-refs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_source: Option<String>,
    /// The id of a linked worktree: the last component of its gitdir
    /// (`…/.git/worktrees/<id>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_id: Option<String>,
    /// The main repository's git dir, for a linked worktree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub common_dir: Option<String>,
    pub status: GitStatus,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GitStatus {
    /// "clean", "dirty" or "unknown".
    pub state: Text,
    /// Why the status is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Changes in the index (staged).
    pub staged: usize,
    /// Tracked files changed in the working tree and not staged.
    pub modified: usize,
    pub untracked: usize,
    pub unmerged: usize,
    /// Commits ahead of and behind the upstream, when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The porcelain was longer than kept: the counts are lower bounds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The command that answered, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

impl GitStatus {
    fn unknown(why: impl Into<String>) -> GitStatus {
        GitStatus {
            state: "unknown".into(),
            reason: Some(why.into()),
            ..GitStatus::default()
        }
    }

    /// "clean", or "dirty: 2 modified, 1 untracked", or "status unknown (…)".
    pub fn describe(&self) -> String {
        match &*self.state {
            "clean" => "clean".into(),
            "dirty" => {
                let parts: Vec<String> = [
                    (self.staged, "staged"),
                    (self.modified, "modified"),
                    (self.untracked, "untracked"),
                    (self.unmerged, "unmerged"),
                ]
                .iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, w)| format!("{n}{} {w}", if self.truncated { "+" } else { "" }))
                .collect();
                format!("dirty: {}", parts.join(", "))
            }
            _ => format!(
                "status unknown ({})",
                self.reason.as_deref().unwrap_or("not checked")
            ),
        }
    }
}

impl Repository {
    /// "git, branch main, clean" / "git worktree wt1, detached at 1a2b3c4d, dirty: …".
    pub fn describe(&self) -> String {
        let mut s = match &self.worktree_id {
            Some(id) => format!("git worktree {id}"),
            None => "git".to_string(),
        };
        match (&self.branch, &self.head_commit) {
            (Some(b), _) => s.push_str(&format!(", branch {b}")),
            (None, Some(c)) => s.push_str(&format!(", detached at {}", &c[..c.len().min(12)])),
            (None, None) => s.push_str(", HEAD unreadable"),
        }
        s.push_str(", ");
        s.push_str(&self.status.describe());
        s
    }
}

/// Reads a small regular file without following a final symlink: a ref
/// that links out of the tree is not a ref.
fn read_small(host: &Host, p: &Path, max: u64) -> Option<String> {
    read_regular_nofollow(&host.path(p), max)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Ref names and paths come from the tree: short and printable.
fn clean(s: &str) -> String {
    crate::util::sanitize::short(s, 200)
}

/// `p` against `base`, with `.` and `..` taken out lexically (a worktree's
/// commondir is `../..`).
fn join_rel(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p.trim());
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    crate::util::path::normalize(&joined)
}

/// The directory holding `.git` at or above `start`, and that `.git`.
pub fn find(host: &Host, start: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut dir = Some(start);
    for _ in 0..MAX_UP {
        let d = dir?;
        let g = d.join(".git");
        if std::fs::symlink_metadata(host.path(&g)).is_ok() {
            return Some((d.to_path_buf(), g));
        }
        dir = d.parent();
    }
    None
}

/// The commit `name` (refs/heads/main) points at: a loose ref, else
/// packed-refs. Follows a symbolic ref a few steps.
fn resolve_ref(host: &Host, common: &Path, name: &str) -> Option<(String, String)> {
    let mut name = name.to_string();
    for _ in 0..5 {
        if name.contains("..") || name.starts_with('/') {
            return None;
        }
        if let Some(t) = read_small(host, &common.join(&name), SMALL) {
            let t = t.trim();
            if let Some(next) = t.strip_prefix("ref:") {
                name = next.trim().to_string();
                continue;
            }
            if is_oid(t) {
                return Some((t.to_ascii_lowercase(), name));
            }
        }
        let packed = read_small(host, &common.join("packed-refs"), PACKED_REFS_MAX)?;
        return packed.lines().find_map(|l| {
            let (oid, r) = l.split_once(' ')?;
            (r.trim() == name && is_oid(oid))
                .then(|| (oid.to_ascii_lowercase(), "packed-refs".to_string()))
        });
    }
    None
}

/// What .git says, without running git.
pub fn read(host: &Host, top: &Path, dot_git: &Path) -> Repository {
    let mut r = Repository {
        path: top.to_string_lossy().into_owned(),
        kind: "repository".into(),
        status: GitStatus::unknown("not checked"),
        ..Repository::default()
    };
    let meta = std::fs::symlink_metadata(host.path(dot_git));
    let git_dir = if meta.as_ref().is_ok_and(|m| m.is_file()) {
        // A linked worktree or a submodule: `gitdir: <path>`.
        let Some(line) = read_small(host, dot_git, SMALL) else {
            r.status = GitStatus::unknown(".git is a file this user cannot read");
            return r;
        };
        let Some(p) = line.trim().strip_prefix("gitdir:") else {
            r.status = GitStatus::unknown(".git is a file without a gitdir: line");
            return r;
        };
        let gd = join_rel(top, p);
        let parent = gd
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        if parent.as_deref() == Some("worktrees") {
            r.kind = "linked-worktree".into();
            r.worktree_id = gd.file_name().map(|n| clean(&n.to_string_lossy()));
        } else if gd.components().any(|c| c.as_os_str() == "modules") {
            r.kind = "submodule".into();
        }
        gd
    } else {
        dot_git.to_path_buf()
    };
    r.git_dir = clean(&git_dir.to_string_lossy());
    // A worktree's refs live in the main repository: `commondir` says where.
    let common = match read_small(host, &git_dir.join("commondir"), SMALL) {
        Some(c) if !c.trim().is_empty() => {
            let c = join_rel(&git_dir, &c);
            r.common_dir = Some(clean(&c.to_string_lossy()));
            c
        }
        _ => git_dir.clone(),
    };
    let Some(head) = read_small(host, &git_dir.join("HEAD"), SMALL) else {
        r.status = GitStatus::unknown("HEAD is missing or unreadable");
        return r;
    };
    let head = head.trim();
    if let Some(name) = head.strip_prefix("ref:") {
        let name = name.trim();
        r.branch = Some(clean(name.strip_prefix("refs/heads/").unwrap_or(name)));
        if let Some((oid, src)) = resolve_ref(host, &common, name) {
            r.head_commit = Some(oid);
            r.head_source = Some(clean(&src));
        }
    } else if is_oid(head) {
        r.detached = true;
        r.head_commit = Some(head.to_ascii_lowercase());
        r.head_source = Some("HEAD".into());
    }
    r
}

/// Whether the repository's own config names a command that `git status`
/// could run: a clean/smudge/process filter, an fsmonitor hook, or an
/// include of a file we have not read.
fn config_runs_commands(host: &Host, dirs: &[&Path]) -> Option<String> {
    for d in dirs {
        for name in ["config", "config.worktree"] {
            let p = d.join(name);
            let Some(text) = read_small(host, &p, 1 << 20) else {
                continue;
            };
            let mut section = String::new();
            for line in text.lines() {
                let l = line.trim().to_ascii_lowercase();
                if l.starts_with('[') {
                    section = l.trim_matches(|c| c == '[' || c == ']').to_string();
                    if section.starts_with("filter") || section.starts_with("include") {
                        return Some(format!("{} has a [{section}] section", p.display()));
                    }
                    continue;
                }
                let key = l.split('=').next().unwrap_or("").trim();
                if section == "core" && key == "fsmonitor" {
                    let v = l.split_once('=').map(|x| x.1.trim()).unwrap_or("");
                    if !matches!(v, "false" | "0" | "no" | "off") {
                        return Some(format!("{} sets core.fsmonitor", p.display()));
                    }
                }
            }
        }
    }
    None
}

/// The counts from `git status --porcelain=v2 --branch`.
pub fn parse_porcelain(out: &str, truncated: bool) -> GitStatus {
    let mut s = GitStatus {
        state: "clean".into(),
        truncated,
        ..GitStatus::default()
    };
    let lines: Vec<&str> = out.lines().collect();
    // A cut output ends in a partial line: it is not counted.
    let complete = if truncated && !out.ends_with('\n') {
        &lines[..lines.len().saturating_sub(1)]
    } else {
        &lines[..]
    };
    for l in complete {
        let mut w = l.splitn(3, ' ');
        match (w.next(), w.next(), w.next()) {
            (Some("#"), Some("branch.ab"), Some(ab)) => {
                let mut it = ab.split_whitespace();
                s.ahead = it
                    .next()
                    .and_then(|a| a.trim_start_matches('+').parse().ok());
                s.behind = it
                    .next()
                    .and_then(|b| b.trim_start_matches('-').parse().ok());
            }
            (Some("#"), Some("branch.upstream"), Some(u)) => s.upstream = Some(clean(u)),
            (Some("1" | "2"), Some(xy), _) => {
                let b = xy.as_bytes();
                if b.first().is_some_and(|c| *c != b'.') {
                    s.staged += 1;
                }
                if b.get(1).is_some_and(|c| *c != b'.') {
                    s.modified += 1;
                }
            }
            (Some("u"), _, _) => s.unmerged += 1,
            (Some("?"), _, _) => s.untracked += 1,
            _ => {}
        }
    }
    if s.staged + s.modified + s.untracked + s.unmerged > 0 {
        s.state = "dirty".into();
    }
    s
}

/// The environment git runs in: nothing of ours, no system or global
/// config (a home's .gitconfig could name a filter), no optional locks.
const GIT_ENV: &[(&str, &str)] = &[
    ("LC_ALL", "C"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

fn status(host: &Host, r: &Repository, deadline: Instant) -> GitStatus {
    if !host.is_live() {
        return GitStatus::unknown("--root: git is not run in a fixture tree");
    }
    if r.kind == "repository" && r.head_commit.is_none() && r.branch.is_none() {
        return GitStatus::unknown("HEAD could not be read");
    }
    let git_dir = PathBuf::from(&r.git_dir);
    let common = r.common_dir.as_ref().map(PathBuf::from);
    let mut dirs: Vec<&Path> = vec![&git_dir];
    if let Some(c) = &common {
        dirs.push(c);
    }
    if let Some(why) = config_runs_commands(host, &dirs) {
        return GitStatus::unknown(format!("not run: {why}, a command git status would run"));
    }
    let git = match programs::runnable(host, "git") {
        Ok(g) => g,
        Err(why) => return GitStatus::unknown(why.to_string()),
    };
    let args: Vec<String> = [
        "-c",
        "safe.directory=*",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.untrackedCache=false",
        "--no-optional-locks",
        "status",
        "--porcelain=v2",
        "--branch",
        "--untracked-files=normal",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut env: Vec<(String, String)> = GIT_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.push(("PATH".into(), "/usr/bin:/bin".into()));
    let dl = deadline.min(Instant::now() + STATUS_DEADLINE);
    let o = command::run_capped(&git, &args, &env, Path::new(&r.path), dl, STATUS_CAP);
    let mut s = match o.status {
        command::ToolStatus::Ok => parse_porcelain(&o.output, o.output.len() >= STATUS_CAP),
        _ => GitStatus::unknown(format!(
            "git status {}",
            o.reason.unwrap_or_else(|| "failed".into())
        )),
    };
    s.command = Some(format!("{} {}", git.display(), args.join(" ")));
    s.duration_ms = Some(o.duration.as_millis() as u64);
    s
}

/// The repository holding `workspace`, if there is one.
pub fn collect(host: &Host, workspace: &Path, deadline: Instant) -> Option<Repository> {
    let (top, dot_git) = find(host, workspace)?;
    let mut r = read(host, &top, &dot_git);
    if r.status.reason.as_deref() == Some("not checked") {
        r.status = status(host, &r, deadline);
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_counts() {
        let out = "# branch.oid 1234\n# branch.head main\n# branch.upstream origin/main\n# branch.ab +2 -1\n1 .M N... 100644 100644 100644 a b src/x.rs\n1 M. N... 100644 100644 100644 a b src/y.rs\n1 MM N... 100644 100644 100644 a b z\n2 R. N... 100644 100644 100644 a b R100 new\told\nu UU N... 1 2 3 4 a b c d conflict\n? untracked.txt\n? dir/\n";
        let s = parse_porcelain(out, false);
        assert_eq!(
            (&*s.state, s.staged, s.modified, s.untracked, s.unmerged),
            ("dirty", 3, 2, 2, 1)
        );
        assert_eq!((s.ahead, s.behind), (Some(2), Some(1)));
        assert_eq!(
            s.describe(),
            "dirty: 3 staged, 2 modified, 2 untracked, 1 unmerged"
        );
        let s = parse_porcelain("# branch.oid (initial)\n# branch.head main\n", false);
        assert_eq!(s.state, "clean");
        // A cut output does not count its partial last line.
        let s = parse_porcelain("? a\n? b\n? c", true);
        assert_eq!((s.untracked, s.truncated), (2, true));
        assert_eq!(s.describe(), "dirty: 2+ untracked");
    }

    #[test]
    fn config_that_runs_commands_is_refused() {
        let dir = std::env::temp_dir().join(format!("sp-gitcfg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("g")).unwrap();
        let host = Host::new(dir.clone(), Duration::from_secs(5));
        let g = Path::new("/g");
        std::fs::write(
            dir.join("g/config"),
            "[core]\n\tbare = false\n\tfsmonitor = false\n",
        )
        .unwrap();
        assert_eq!(config_runs_commands(&host, &[g]), None);
        std::fs::write(
            dir.join("g/config"),
            "[filter \"lfs\"]\n\tclean = evil %f\n",
        )
        .unwrap();
        assert!(config_runs_commands(&host, &[g])
            .unwrap()
            .contains("filter"));
        std::fs::write(dir.join("g/config"), "[core]\n\tfsmonitor = .git/hooks/x\n").unwrap();
        assert!(config_runs_commands(&host, &[g])
            .unwrap()
            .contains("fsmonitor"));
        std::fs::write(
            dir.join("g/config"),
            "[includeIf \"gitdir:/\"]\n\tpath = /x\n",
        )
        .unwrap();
        assert!(config_runs_commands(&host, &[g])
            .unwrap()
            .contains("include"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
