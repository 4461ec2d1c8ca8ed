//! Phase 2, the workspace user's paths to root (priv.passwordless-root,
//! priv.setuid-binaries): sudo that asks no password, from `sudo -n -l` and
//! from the sudoers files where they are readable; doas `nopass`; a
//! writable /etc/passwd, /etc/shadow, /etc/sudoers or /etc/sudoers.d;
//! membership in the group that owns a door to root (an engine socket, a
//! block device, /dev/kvm, an lxd or incus socket); and, while no_new_privs
//! is unset, the setuid-root and file-capability programs on PATH and in
//! the usual bin and sbin directories.
//!
//! `sudo -n -l` is run the way phase 4 runs tools (src/util/command.rs): no
//! shell, an environment of PATH and LC_ALL only, stdin from /dev/null, a
//! deadline at which it is killed. `-l` lists the rules and `-n` forbids a
//! password prompt, so it never runs a command as root and never waits for
//! input. It is not run under `--root` (a fixture tree's binaries are never
//! executed), nor when this process is already root (nothing to learn), nor
//! when sudo is missing ("not present", not an error). Nothing is written:
//! writability is access(2) on a live system and the mode bits against the
//! tree's own identity under `--root`.
//!
//! The severity follows the boundary, read here from /proc/self/uid_map as
//! the privilege probe reads it: a path to a root that is root on the host
//! (uid 0 maps to host uid 0) ranks with priv.root-without-userns; in a user
//! namespace where uid 0 maps to an unprivileged host uid it is one step
//! lower, and the finding says why.

use crate::finding::Code;
use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::text::Text;
use nix::unistd::AccessFlags;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::facts::unchecked::Unchecked;
use crate::facts::users::Users;
use crate::finding::{Finding, Severity};
use crate::host::{read_regular, Host};
use crate::util::command::{self, ToolStatus};

/// `sudo -n -l` answers in milliseconds; a PAM or LDAP module that hangs
/// is cut here.
pub const SUDO_DEADLINE: Duration = Duration::from_secs(2);
const MAX_FILE: u64 = 1 << 20;
const MAX_SUDOERS_FILES: usize = 64;
const MAX_DIR_ENTRIES: usize = 10_000;
const MAX_LISTED: usize = 200;
const DEFAULT_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];
/// Programs whose setuid bit is a known way up (or a frequent target).
const NOTABLE: &[&str] = &[
    "su",
    "sudo",
    "sudoedit",
    "doas",
    "pkexec",
    "mount",
    "umount",
    "newuidmap",
    "newgidmap",
    "fusermount",
    "fusermount3",
    "passwd",
    "chsh",
    "chfn",
    "gpasswd",
    "newgrp",
];
/// Files whose write permission is root: edit an entry, add a rule.
const ROOT_FILES: &[&str] = &[
    "/etc/passwd",
    "/etc/shadow",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/doas.conf",
];
/// Doors to root owned by a group: (what, paths). Block devices are found
/// under /dev by their type.
const GROUP_DOORS: &[(&str, &[&str])] = &[
    (
        "docker engine socket",
        &["/var/run/docker.sock", "/run/docker.sock"],
    ),
    (
        "podman engine socket",
        &["/run/podman/podman.sock", "/var/run/podman/podman.sock"],
    ),
    (
        "lxd socket",
        &[
            "/var/lib/lxd/unix.socket",
            "/var/snap/lxd/common/lxd/unix.socket",
        ],
    ),
    ("incus socket", &["/var/lib/incus/unix.socket"]),
    ("kvm device", &["/dev/kvm"]),
];

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RootPathFacts {
    pub uid: u32,
    pub user: Option<String>,
    pub gids: Vec<u32>,
    pub groups: Vec<String>,
    pub no_new_privs: Option<bool>,
    /// "inside outside count" lines of /proc/self/uid_map.
    pub uid_map: Vec<String>,
    /// What root here is: host-root, user-namespace (uid 0 maps to host
    /// uid N), unmapped (no uid 0 in this namespace), unknown.
    pub boundary: RootMapping,
    pub sudo: SudoFacts,
    pub doas: Vec<DoasRule>,
    pub doas_files: Vec<String>,
    /// Of ROOT_FILES: those present, and whether writable.
    pub root_files: Vec<RootFile>,
    pub group_doors: Vec<GroupDoor>,
    pub privileged_programs: Vec<PrivProgram>,
    pub scanned_dirs: Vec<String>,
    pub programs_truncated: bool,
    /// Parts that could not be checked: (what, why).
    pub incomplete: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum RootMapping {
    HostRoot,
    UserNamespace {
        host_uid: u64,
    },
    Unmapped,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SudoFacts {
    /// Where sudo was found, if anywhere.
    pub path: Option<String>,
    /// How `sudo -n -l` went: listed, password-required, not-allowed,
    /// no-new-privs, not-run, timeout, failed.
    pub listing: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing_detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// sudoers files read, and those present but unreadable.
    pub files_read: Vec<String>,
    pub files_unreadable: Vec<String>,
    /// Rules that let this user run something as root without a password.
    pub rules: Vec<SudoRule>,
    /// Variables sudo keeps from the caller's environment that make a root
    /// program load code the caller chooses (env_keep: LD_PRELOAD,
    /// PYTHONPATH, BASH_ENV ...), from the Defaults that apply.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_keep: Vec<String>,
    /// `Defaults setenv`: every command may be given the caller's variables.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub setenv_default: bool,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct SudoRule {
    /// `sudo -n -l`, or FILE:LINE.
    pub source: String,
    pub runas: String,
    /// The commands, or ALL.
    pub commands: Vec<String>,
    pub all_commands: bool,
    /// A `Defaults !authenticate` rather than a NOPASSWD tag.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_authenticate: bool,
    /// A SETENV tag on a command of the rule: the caller's variables
    /// (LD_PRELOAD) reach the root process.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub setenv: bool,
    /// Each command judged by what it allows (collect fills it in).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judged: Vec<Judged>,
}

/// What one command of a rule allows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Judged {
    pub command: String,
    pub verdict: Verdict,
    pub why: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Running it as root gives a root shell to whoever may run it.
    PathToRoot,
    /// It does what it says and no more, as long as it stays as it is.
    Limited,
    /// What it allows could not be told (an alias defined elsewhere).
    Unknown,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct DoasRule {
    pub source: String,
    pub identity: String,
    pub target: String,
    /// The command a rule is limited to, if any.
    pub command: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct RootFile {
    pub path: String,
    pub owner_uid: u32,
    pub mode: String,
    pub writable: bool,
    /// access(2), or mode bits (under --root).
    pub checked_with: Text,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupDoor {
    pub group: String,
    pub gid: u32,
    pub door: String,
    pub path: String,
    pub mode: String,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PrivProgram {
    pub path: String,
    pub owner_uid: u32,
    pub mode: String,
    pub setuid_root: bool,
    /// File capabilities (permitted set), by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    pub notable: bool,
}

// ---------------------------------------------------------------------------
// Identity.

fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(str::trim)
}

fn ids(v: Option<&str>) -> Vec<u32> {
    v.map(|s| {
        s.split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect()
    })
    .unwrap_or_default()
}

/// uid_map lines to the boundary they make.
pub fn boundary(uid_map: &[(u64, u64, u64)]) -> RootMapping {
    if uid_map.is_empty() {
        return RootMapping::Unknown;
    }
    match uid_map
        .iter()
        .find(|(inside, _, len)| *inside == 0 && *len > 0)
    {
        Some((_, 0, _)) => RootMapping::HostRoot,
        Some((_, outside, _)) => RootMapping::UserNamespace { host_uid: *outside },
        None => RootMapping::Unmapped,
    }
}

fn parse_uid_map(text: &str) -> Option<Vec<(u64, u64, u64)>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            (v.len() == 3).then(|| (v[0], v[1], v[2]))
        })
        .collect()
}

/// name:x:gid:members lines of /etc/group.
fn parse_group(text: &str) -> Vec<(String, u32, Vec<String>)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() >= 4).then(|| {
                (
                    f[0].to_string(),
                    f[2].parse().unwrap_or(u32::MAX),
                    f[3].split(',')
                        .filter(|m| !m.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            })
        })
        .take(10_000)
        .collect()
}

fn short(s: &str, n: usize) -> String {
    crate::util::sanitize::short(s, n)
}

/// Who the sudoers and doas rules are matched against.
pub struct Identity {
    pub uid: u32,
    pub user: Option<String>,
    pub gids: Vec<u32>,
    /// Group names: those of `gids`, and those listing the user as a member.
    pub groups: Vec<String>,
}

impl Identity {
    fn in_group(&self, g: &str) -> bool {
        self.groups.iter().any(|x| x == g)
    }
}

// ---------------------------------------------------------------------------
// sudoers.

const SUDO_TAGS: &[&str] = &[
    "NOPASSWD",
    "PASSWD",
    "NOEXEC",
    "EXEC",
    "SETENV",
    "NOSETENV",
    "LOG_INPUT",
    "NOLOG_INPUT",
    "LOG_OUTPUT",
    "NOLOG_OUTPUT",
    "MAIL",
    "NOMAIL",
    "FOLLOW",
    "NOFOLLOW",
    "INTERCEPT",
    "NOINTERCEPT",
];

/// Logical lines of a sudoers file (backslash continuations joined, comments
/// dropped, `#include`s kept), with their first line numbers.
fn sudoers_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut acc = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate().take(100_000) {
        if acc.is_empty() {
            start = i + 1;
        }
        let line = strip_comment(raw);
        if let Some(l) = line.strip_suffix('\\') {
            acc.push_str(l);
            acc.push(' ');
            continue;
        }
        acc.push_str(&line);
        let t = acc.trim().to_string();
        if !t.is_empty() {
            out.push((start, t));
        }
        acc.clear();
    }
    out
}

/// A `#` starts a comment unless it is `#include`, `#includedir` or a
/// `#uid` (a digit follows).
fn strip_comment(line: &str) -> String {
    let t = line.trim_start();
    if t.starts_with("#include") {
        return t.to_string();
    }
    let b = line.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if *c == b'#' && !b.get(i + 1).is_some_and(|n| n.is_ascii_digit()) {
            return line[..i].to_string();
        }
    }
    line.to_string()
}

/// Splits on `sep` outside parentheses.
fn split_outside(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if c == sep && depth <= 0 {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// Whether one sudoers user-list item names this user.
fn who_matches(
    item: &str,
    id: &Identity,
    aliases: &BTreeMap<String, Vec<String>>,
    depth: u8,
) -> bool {
    let item = item.trim();
    if item == "ALL" {
        return true;
    }
    if let Some(uid) = item.strip_prefix('#') {
        return uid.parse::<u32>().ok() == Some(id.uid);
    }
    if let Some(g) = item.strip_prefix("%#") {
        return g.parse::<u32>().is_ok_and(|g| id.gids.contains(&g));
    }
    if let Some(g) = item.strip_prefix('%').or_else(|| item.strip_prefix("%:")) {
        return id.in_group(g.trim_start_matches(':'));
    }
    if let Some(members) = aliases.get(item) {
        return depth < 4 && list_matches(members, id, aliases, depth + 1);
    }
    id.user.as_deref() == Some(item)
}

/// A user list: the last matching item decides, `!` negates.
fn list_matches(
    items: &[String],
    id: &Identity,
    aliases: &BTreeMap<String, Vec<String>>,
    depth: u8,
) -> bool {
    let mut hit = false;
    for it in items {
        let it = it.trim();
        let (neg, it) = match it.strip_prefix('!') {
            Some(r) => (true, r.trim()),
            None => (false, it),
        };
        if who_matches(it, id, aliases, depth) {
            hit = !neg;
        }
    }
    hit
}

fn runas_is_root(runas: Option<&str>) -> bool {
    let Some(r) = runas else { return true };
    // (users : groups); an empty user part means "as yourself" with another group.
    let users = r.split(':').next().unwrap_or("").trim();
    if users.is_empty() {
        return !r.contains(':');
    }
    users
        .split(',')
        .map(str::trim)
        .any(|u| u == "root" || u == "ALL" || u == "#0")
}

/// The commands of one user specification's right-hand side that run as
/// root without a password: (runas, command, SETENV).
pub fn nopasswd_commands(rhs: &str, default_nopasswd: bool) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    let mut runas: Option<String> = None;
    let mut nopasswd = default_nopasswd;
    let mut setenv = false;
    for cmd in split_outside(rhs, ',') {
        let mut c = cmd.trim().to_string();
        if c.starts_with('(') {
            if let Some(end) = c.find(')') {
                runas = Some(c[1..end].trim().to_string());
                c = c[end + 1..].trim().to_string();
            }
        }
        while let Some((tag, rest)) = c.split_once(':') {
            let tag = tag.trim();
            if !SUDO_TAGS.contains(&tag) {
                break;
            }
            match tag {
                "NOPASSWD" => nopasswd = true,
                "PASSWD" => nopasswd = false,
                "SETENV" => setenv = true,
                "NOSETENV" => setenv = false,
                _ => {}
            }
            c = rest.trim().to_string();
        }
        if nopasswd && !c.is_empty() && runas_is_root(runas.as_deref()) {
            out.push((
                runas.clone().unwrap_or_else(|| "root".into()),
                short(&c, 200),
                setenv,
            ));
        }
    }
    out
}

/// What one sudoers file says for `id`.
#[derive(Debug, Default)]
pub struct Sudoers {
    /// Its NOPASSWD-to-root rules.
    pub rules: Vec<SudoRule>,
    /// The files and directories it includes (`dir:` before a directory).
    pub includes: Vec<String>,
    /// Code-loading variables its Defaults keep (env_keep).
    pub env_keep: Vec<String>,
    /// `Defaults setenv` for this user.
    pub setenv: bool,
}

/// Variables that make a program load code the caller chooses: kept by
/// sudo (env_keep, SETENV), they turn any root command into a way to root.
pub const DANGEROUS_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONINSPECT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5OPT",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "PS4",
    "GCONV_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "GIT_EXEC_PATH",
    "GIT_SSH_COMMAND",
    "EDITOR",
    "VISUAL",
    "SUDO_EDITOR",
    "PAGER",
];

/// env_keep's dangerous variables and `setenv` (Some(false) for
/// `!setenv`) of one Defaults line's settings, or of the `sudo -l`
/// listing's "Matching Defaults entries".
pub fn defaults_settings(settings: &str) -> (Vec<String>, Option<bool>) {
    let mut keep = Vec::new();
    let mut setenv = None;
    for item in split_quoted(settings) {
        let item = item.trim();
        match item {
            "setenv" => setenv = Some(true),
            "!setenv" => setenv = Some(false),
            _ => {}
        }
        let Some(rest) = item.strip_prefix("env_keep") else {
            continue;
        };
        let Some((op, value)) = rest.split_once('=') else {
            continue;
        };
        if op.trim() == "-" {
            continue;
        }
        for v in value.trim().trim_matches('"').split_whitespace() {
            let v = v.trim_matches('"');
            if DANGEROUS_ENV.contains(&v) && !keep.iter().any(|k| k == v) {
                keep.push(v.to_string());
            }
        }
    }
    (keep, setenv)
}

/// Splits on commas outside double quotes.
fn split_quoted(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The NOPASSWD-to-root rules of one sudoers file for `id`, the files it
/// includes, and the Defaults that matter for them.
pub fn parse_sudoers(text: &str, file: &str, id: &Identity) -> Sudoers {
    let mut out = Sudoers::default();
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cmnd_aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (line_no, line) in sudoers_lines(text) {
        let source = format!("{file}:{line_no}");
        let first = line.split_whitespace().next().unwrap_or("");
        match first {
            "#include" | "@include" | "#includedir" | "@includedir" => {
                if let Some(p) = line.split_whitespace().nth(1) {
                    let kind = if first.ends_with("dir") { "dir:" } else { "" };
                    out.includes.push(format!("{kind}{p}"));
                }
                continue;
            }
            "User_Alias" => {
                for def in line["User_Alias".len()..].split(':') {
                    if let Some((n, v)) = def.split_once('=') {
                        aliases.insert(
                            n.trim().to_string(),
                            v.split(',').map(|x| x.trim().to_string()).collect(),
                        );
                    }
                }
                continue;
            }
            "Cmnd_Alias" | "Cmd_Alias" => {
                for def in split_outside(&line[first.len()..], ':') {
                    if let Some((n, v)) = def.split_once('=') {
                        cmnd_aliases.insert(
                            n.trim().to_string(),
                            split_outside(v, ',')
                                .iter()
                                .map(|x| x.trim().to_string())
                                .filter(|x| !x.is_empty())
                                .take(64)
                                .collect(),
                        );
                    }
                }
                continue;
            }
            "Runas_Alias" | "Host_Alias" => continue,
            _ => {}
        }
        if let Some(rest) = first.strip_prefix("Defaults") {
            // Defaults[:user|%group] ... (!authenticate, env_keep, setenv)
            let applies = match rest.strip_prefix(':') {
                Some(who) => list_matches(
                    &who.split(',').map(str::to_string).collect::<Vec<_>>(),
                    id,
                    &aliases,
                    0,
                ),
                None => rest.is_empty(),
            };
            if !applies {
                continue;
            }
            let settings = line[first.len()..].trim();
            let (keep, setenv) = defaults_settings(settings);
            out.env_keep.extend(keep);
            out.setenv |= setenv == Some(true);
            if settings
                .split([',', ' ', '\t'])
                .any(|w| w.trim() == "!authenticate")
            {
                out.rules.push(SudoRule {
                    source,
                    runas: "root".into(),
                    commands: vec!["ALL".into()],
                    all_commands: true,
                    no_authenticate: true,
                    setenv: false,
                    judged: Vec::new(),
                });
            }
            continue;
        }
        let Some((lhs, rhs)) = line.split_once('=') else {
            continue;
        };
        // "users hosts": the user list may hold ", " between its items.
        let lhs = lhs.trim();
        let mut parts: Vec<String> = Vec::new();
        for tok in lhs.split_whitespace() {
            match parts.last_mut() {
                Some(last) if last.ends_with(',') || tok.starts_with(',') => last.push_str(tok),
                _ => parts.push(tok.to_string()),
            }
        }
        let Some(users) = parts.first() else { continue };
        let items: Vec<String> = users.split(',').map(str::to_string).collect();
        if !list_matches(&items, id, &aliases, 0) {
            continue;
        }
        let cmds = nopasswd_commands(rhs, false);
        if cmds.is_empty() {
            continue;
        }
        let runas = cmds[0].0.clone();
        let setenv = cmds.iter().any(|c| c.2);
        // A command alias of this file stands for its commands.
        let commands: Vec<String> = cmds
            .into_iter()
            .flat_map(
                |(_, c, _)| match cmnd_aliases.get(c.trim_start_matches('!')) {
                    Some(v) if !c.starts_with('!') => v.clone(),
                    _ => vec![c],
                },
            )
            .take(20)
            .collect();
        out.rules.push(SudoRule {
            source,
            runas,
            all_commands: commands.iter().any(|c| c == "ALL"),
            commands,
            no_authenticate: false,
            setenv,
            judged: Vec::new(),
        });
    }
    out
}

/// The rules `sudo -n -l` lists as needing no password.
pub fn parse_sudo_listing(out: &str) -> Vec<SudoRule> {
    let mut rules = Vec::new();
    let mut in_rules = false;
    let mut no_auth = false;
    for line in out.lines() {
        let t = line.trim();
        if t.starts_with("Matching Defaults entries") {
            continue;
        }
        if t.contains("may run the following commands") {
            in_rules = true;
            continue;
        }
        if !in_rules {
            if t.split([',', ' ']).any(|w| w == "!authenticate") {
                no_auth = true;
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        for (runas, c, setenv) in nopasswd_commands(t, no_auth) {
            match rules
                .iter_mut()
                .find(|r: &&mut SudoRule| r.runas == runas && r.commands.len() < 20)
            {
                Some(r) => {
                    r.all_commands |= c == "ALL";
                    r.setenv |= setenv;
                    r.commands.push(c);
                }
                None => rules.push(SudoRule {
                    source: "sudo -n -l".into(),
                    runas,
                    all_commands: c == "ALL",
                    commands: vec![c],
                    no_authenticate: no_auth,
                    setenv,
                    judged: Vec::new(),
                }),
            }
        }
    }
    rules
}

/// The Defaults `sudo -n -l` lists before the rules ("Matching Defaults
/// entries"): env_keep's dangerous variables and setenv.
pub fn listing_defaults(out: &str) -> (Vec<String>, bool) {
    let mut keep: Vec<String> = Vec::new();
    let mut setenv = false;
    for line in out.lines() {
        if line.contains("may run the following commands") {
            break;
        }
        if line.trim_start().starts_with("Matching Defaults entries") {
            continue;
        }
        let (k, s) = defaults_settings(line.trim());
        for v in k {
            if !keep.contains(&v) {
                keep.push(v);
            }
        }
        setenv |= s == Some(true);
    }
    (keep, setenv)
}

/// What a failed `sudo -n -l` said, as a state.
fn listing_state(output: &str) -> &'static str {
    let l = output.to_ascii_lowercase();
    if l.contains("no new privileges") {
        "no-new-privs"
    } else if l.contains("password is required") {
        "password-required"
    } else if l.contains("may not run sudo") || l.contains("not in the sudoers") {
        "not-allowed"
    } else if l.contains("must be owned by uid 0") || l.contains("effective uid is not 0") {
        "not-setuid"
    } else {
        "failed"
    }
}

// ---------------------------------------------------------------------------
// What a rule allows.

/// Files and directories whose editing is root: sudoedit of one of them
/// is a way to root.
const ROOT_EDITS: &[&str] = &[
    "/etc/passwd",
    "/etc/shadow",
    "/etc/group",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/doas.conf",
    "/etc/crontab",
    "/etc/cron.d",
    "/etc/cron.hourly",
    "/etc/cron.daily",
    "/etc/systemd",
    "/lib/systemd",
    "/usr/lib/systemd",
    "/etc/ld.so.preload",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/etc/environment",
    "/etc/pam.d",
    "/etc/security",
    "/etc/init.d",
    "/etc/rc.local",
    "/etc/apt/apt.conf.d",
    "/etc/ssh",
    "/root",
];

fn wildcard(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

fn base_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Judges the commands of the rules for one user: a way to root, or a
/// grant limited to what the command does.
pub struct Judge<'a> {
    pub host: &'a Host,
    pub id: &'a Identity,
    /// "node (uid 1000)", for the messages.
    pub who: String,
}

impl Judge<'_> {
    /// access(2) for this process on a live system; the mode bits against
    /// the identity under --root.
    fn writable(&self, p: &Path, meta: &std::fs::Metadata) -> bool {
        let dir = meta.is_dir();
        if self.host.is_live() {
            let mode = if dir {
                AccessFlags::W_OK | AccessFlags::X_OK
            } else {
                AccessFlags::W_OK
            };
            self.host.access(p, mode).is_ok()
        } else {
            mode_allows_write(meta, self.id, dir)
        }
    }

    /// Why the user can put something else at `p`: the file is writable,
    /// or a directory on its way is (unless that directory is sticky and
    /// the entry in it is not theirs).
    fn replaceable(&self, p: &Path) -> Option<String> {
        if let Ok(m) = std::fs::metadata(self.host.path(p)) {
            if self.writable(p, &m) {
                return Some(format!(
                    "{} (owner uid {}, mode {:04o}) is writable by {}: whatever is written there runs as root",
                    p.display(),
                    m.uid(),
                    m.mode() & 0o7777,
                    self.who
                ));
            }
        }
        let mut child = p;
        while let Some(dir) = child.parent() {
            if let Ok(m) = std::fs::metadata(self.host.path(dir)) {
                let sticky = m.mode() & 0o1000 != 0;
                let entry_is_theirs = std::fs::symlink_metadata(self.host.path(child))
                    .is_ok_and(|c| c.uid() == self.id.uid);
                if self.writable(dir, &m) && (!sticky || entry_is_theirs) {
                    return Some(format!(
                        "the directory {} (owner uid {}, mode {:04o}) is writable by {}: {} can be replaced by a program of theirs, which then runs as root",
                        dir.display(),
                        m.uid(),
                        m.mode() & 0o7777,
                        self.who,
                        p.display()
                    ));
                }
            }
            child = dir;
        }
        None
    }

    /// Where a symlink at `p` leads, inside the root (at most 8 links).
    fn resolve(&self, p: &Path) -> PathBuf {
        let mut cur = p.to_path_buf();
        for _ in 0..8 {
            let Ok(t) = std::fs::read_link(self.host.path(&cur)) else {
                break;
            };
            let next = if t.is_absolute() {
                t
            } else {
                cur.parent().unwrap_or(Path::new("/")).join(t)
            };
            let mut norm = PathBuf::from("/");
            for c in next.components() {
                match c {
                    std::path::Component::ParentDir => {
                        norm.pop();
                    }
                    std::path::Component::Normal(x) => norm.push(x),
                    _ => {}
                }
            }
            cur = norm;
        }
        cur
    }

    fn verdict(command: &str, verdict: Verdict, why: String) -> Judged {
        Judged {
            command: short(command, 200),
            verdict,
            why,
        }
    }

    /// One command of a rule (as sudoers or `sudo -l` writes it).
    pub fn judge(
        &self,
        command: &str,
        setenv: bool,
        env_keep: &[String],
        setenv_default: bool,
    ) -> Judged {
        let path = |why: String| Self::verdict(command, Verdict::PathToRoot, why);
        let limited = |why: String| Self::verdict(command, Verdict::Limited, why);
        let c = command.trim();
        if c == "ALL" {
            return path("ALL: any command, a shell among them".into());
        }
        if setenv || setenv_default {
            return path(format!(
                "{}: {} may hand the root process variables such as LD_PRELOAD, which load a library of theirs into it",
                if setenv { "SETENV" } else { "Defaults setenv" },
                self.who
            ));
        }
        if !env_keep.is_empty() {
            return path(format!(
                "env_keep keeps {} from the caller: {} chooses code the root process loads",
                env_keep.join(", "),
                self.who
            ));
        }
        let mut words = c.split_whitespace();
        let mut prog = words.next().unwrap_or("");
        // A digest pins the binary's content, not what it does.
        if prog.starts_with("sha") && prog.contains(':') {
            prog = words.next().unwrap_or("");
        }
        let args: Vec<&str> = words.collect();
        let fixed = args.join(" ");
        if prog == "sudoedit" {
            return self.judge_sudoedit(command, &args);
        }
        if !prog.starts_with('/') {
            return Self::verdict(
                command,
                Verdict::Unknown,
                format!("{prog} is not a path: an alias defined in a file this probe did not read, so what it allows is not known"),
            );
        }
        if wildcard(prog) {
            return path(format!(
                "the command is a pattern ({prog}): any program it matches runs as root"
            ));
        }
        let p = Path::new(prog);
        if let Some(why) = self.replaceable(p) {
            return path(why);
        }
        let real = self.resolve(p);
        if real != p {
            if let Some(why) = self.replaceable(&real) {
                return path(why);
            }
        }
        let entry = [base_name(p), base_name(&real)]
            .into_iter()
            .find_map(|n| crate::catalog::sudo_program(&n).map(|e| (n, e)));
        let any_args = args.is_empty();
        let no_args = fixed == "\"\"";
        if let Some((name, e)) = entry {
            let run_code = e.kind == "shell" || e.kind == "interpreter";
            if e.escape == crate::catalog::Escape::Always {
                return path(format!("{name} is a {}: {}", e.kind, e.why));
            }
            if any_args {
                return path(format!("{name} with any arguments: {}", e.why));
            }
            if args.iter().any(|a| wildcard(a)) {
                return path(format!(
                    "{name} with arguments through a wildcard, which {} chooses: {}",
                    self.who, e.why
                ));
            }
            if run_code && no_args {
                return path(format!(
                    "{name} without arguments reads its commands from the terminal: a root shell"
                ));
            }
            if run_code {
                if let Some(script) = args.iter().find(|a| !a.starts_with('-')) {
                    if script.starts_with('/') {
                        if let Some(why) = self.replaceable(Path::new(script)) {
                            return path(format!("{name} runs {script}, and {why}"));
                        }
                    }
                }
            }
            return limited(format!(
                "{name} ({}) with the fixed arguments `{fixed}`: the rule allows those and no others",
                e.kind
            ));
        }
        if args.iter().any(|a| wildcard(a)) {
            return path(format!(
                "{prog} with arguments through a wildcard, which {} chooses",
                self.who
            ));
        }
        let what = match std::fs::metadata(self.host.path(&real)) {
            Ok(m) => format!(
                "{prog} (owner uid {}, mode {:04o}) is not writable by {} nor is a directory above it",
                m.uid(),
                m.mode() & 0o7777,
                self.who
            ),
            Err(_) => format!(
                "{prog} does not exist here and {} cannot create it",
                self.who
            ),
        };
        limited(format!(
            "{what}; it is not a shell, interpreter, editor, pager or a known command runner{}",
            if any_args {
                String::new()
            } else {
                format!(", and its arguments are fixed (`{fixed}`)")
            }
        ))
    }

    fn judge_sudoedit(&self, command: &str, files: &[&str]) -> Judged {
        let path = |why: String| Self::verdict(command, Verdict::PathToRoot, why);
        if files.is_empty() || files.iter().any(|f| wildcard(f)) {
            return path(format!(
                "sudoedit of files {} chooses: editing /etc/sudoers.d or /etc/shadow is root",
                self.who
            ));
        }
        if let Some(f) = files.iter().find(|f| {
            ROOT_EDITS
                .iter()
                .any(|r| *f == r || f.starts_with(&format!("{r}/")))
        }) {
            return path(format!("sudoedit of {f}: whoever may edit it is root"));
        }
        Self::verdict(
            command,
            Verdict::Limited,
            format!(
                "sudoedit edits a copy of {} as {} and writes back only that",
                files.join(" "),
                self.who
            ),
        )
    }
}

// ---------------------------------------------------------------------------
// doas.

/// `permit nopass` rules of a doas.conf that apply to `id` and reach root.
/// doas takes the last matching rule, so a later `deny` or a `permit`
/// without nopass for the same identity undoes an earlier one.
pub fn parse_doas(text: &str, file: &str, id: &Identity) -> Vec<DoasRule> {
    let mut last_any: Option<(bool, DoasRule)> = None;
    let mut limited = Vec::new();
    for (n, raw) in text.lines().enumerate().take(10_000) {
        let line = raw.split('#').next().unwrap_or("");
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(action) = toks.first() else { continue };
        if *action != "permit" && *action != "deny" {
            continue;
        }
        let mut i = 1;
        let mut nopass = false;
        while i < toks.len() {
            match toks[i] {
                "nopass" => nopass = true,
                "nolog" | "persist" | "keepenv" | "insult" => {}
                t if t.starts_with("setenv") => {
                    while i < toks.len() && !toks[i].ends_with('}') {
                        i += 1;
                    }
                }
                _ => break,
            }
            i += 1;
        }
        let Some(identity) = toks.get(i) else {
            continue;
        };
        let matches = match identity.strip_prefix(':') {
            Some(g) => id.in_group(g),
            None => {
                id.user.as_deref() == Some(identity) || identity.parse::<u32>().ok() == Some(id.uid)
            }
        };
        if !matches {
            continue;
        }
        let mut target = "root".to_string();
        let mut command = None;
        let mut j = i + 1;
        while j < toks.len() {
            match toks[j] {
                "as" if j + 1 < toks.len() => {
                    target = toks[j + 1].to_string();
                    j += 2;
                }
                "cmd" if j + 1 < toks.len() => {
                    command = Some(short(&toks[j + 1..].join(" "), 200));
                    break;
                }
                _ => j += 1,
            }
        }
        if target != "root" {
            continue;
        }
        let rule = DoasRule {
            source: format!("{file}:{}", n + 1),
            identity: short(identity, 64),
            target,
            command: command.clone(),
        };
        let grants = *action == "permit" && nopass;
        match command {
            None => last_any = Some((grants, rule)),
            Some(_) if grants => limited.push(rule),
            Some(_) => {}
        }
    }
    let mut out: Vec<DoasRule> = last_any
        .filter(|(g, _)| *g)
        .map(|(_, r)| r)
        .into_iter()
        .collect();
    out.extend(limited);
    out
}

// ---------------------------------------------------------------------------
// File capabilities.

/// The permitted set of a security.capability value (vfs_cap_data v1, v2
/// or v3 as capability(7) lays it out), as a mask.
pub fn parse_vfs_cap(b: &[u8]) -> Option<u64> {
    let word = |i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(
            b.get(i * 4..i * 4 + 4)?.try_into().ok()?,
        ))
    };
    let magic = word(0)?;
    match magic & 0xFF00_0000 {
        0x0100_0000 => Some(word(1)? as u64),
        0x0200_0000 | 0x0300_0000 => Some(word(1)? as u64 | (word(3)? as u64) << 32),
        _ => None,
    }
}

/// security.capability of `p`, without following a symlink. libc directly:
/// the xattr crate would bring rustix and linux-raw-sys for this one call.
fn file_caps(p: &Path) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    let name = c"security.capability";
    let mut buf = [0u8; 64];
    // SAFETY: both strings are NUL-terminated and live across the call;
    // the kernel writes at most buf.len() bytes into buf.
    let n = unsafe {
        nix::libc::lgetxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    (n > 0).then(|| buf[..n as usize].to_vec())
}

// ---------------------------------------------------------------------------
// Collection.

fn mode_allows_write(meta: &std::fs::Metadata, id: &Identity, dir: bool) -> bool {
    let m = meta.mode();
    let (w, x) = if meta.uid() == id.uid {
        (0o200, 0o100)
    } else if id.gids.contains(&meta.gid()) {
        (0o020, 0o010)
    } else {
        (0o002, 0o001)
    };
    m & w != 0 && (!dir || m & x != 0)
}

pub fn collect(host: &Host, users: &Users, deadline: Instant) -> Result<RootPathFacts, Unchecked> {
    let status = host
        .read("/proc/self/status")
        .map_err(|e| Unchecked::unreadable("/proc/self/status", e))?;
    let mut f = RootPathFacts::default();
    let uids = ids(status_field(&status, "Uid"));
    f.uid = *uids
        .get(1)
        .ok_or_else(|| Unchecked::Malformed("/proc/self/status has no Uid line".into()))?;
    let mut gids = ids(status_field(&status, "Gid"));
    gids.truncate(2);
    gids.extend(ids(status_field(&status, "Groups")));
    crate::util::sort::sort(&mut gids);
    gids.dedup();
    f.gids = gids;
    f.no_new_privs = status_field(&status, "NoNewPrivs").map(|v| v == "1");
    match host.read("/proc/self/uid_map") {
        Ok(t) => match parse_uid_map(&t) {
            Some(m) => {
                f.uid_map = m.iter().map(|(a, b, c)| format!("{a} {b} {c}")).collect();
                f.boundary = boundary(&m);
            }
            None => f
                .incomplete
                .push(("uid_map".into(), "not three numbers a line".into())),
        },
        Err(e) => f.incomplete.push(("uid_map".into(), e.to_string())),
    }
    f.user = users.name_of(f.uid);
    let group = parse_group(&read_text(host, "/etc/group").unwrap_or_default());
    let mut names: Vec<String> = Vec::new();
    for (name, gid, members) in &group {
        let member = f.user.as_ref().is_some_and(|u| members.contains(u));
        if (f.gids.contains(gid) || member) && !names.contains(name) {
            names.push(short(name, 32));
        }
    }
    f.groups = names;
    let id = Identity {
        uid: f.uid,
        user: f.user.clone(),
        gids: f.gids.clone(),
        groups: f.groups.clone(),
    };

    collect_sudo(host, &id, &mut f, deadline);
    let mut keep = std::mem::take(&mut f.sudo.env_keep);
    crate::util::sort::sort(&mut keep);
    keep.dedup();
    let judge = Judge {
        host,
        id: &id,
        who: f
            .user
            .clone()
            .map(|u| format!("{u} (uid {})", f.uid))
            .unwrap_or_else(|| format!("uid {}", f.uid)),
    };
    for r in &mut f.sudo.rules {
        r.judged = r
            .commands
            .iter()
            // `!cmd` takes a command away; it allows nothing.
            .filter(|c| !c.starts_with('!'))
            .map(|c| judge.judge(c, r.setenv, &keep, f.sudo.setenv_default))
            .collect();
    }
    f.sudo.env_keep = keep;
    for file in ["/etc/doas.conf", "/usr/local/etc/doas.conf"] {
        match read_text(host, file) {
            Ok(t) => {
                f.doas_files.push(file.into());
                f.doas.extend(parse_doas(&t, file, &id));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => f.incomplete.push((file.into(), e.to_string())),
        }
    }
    for p in ROOT_FILES {
        let Ok(meta) = std::fs::metadata(host.path(p)) else {
            continue;
        };
        let dir = meta.is_dir();
        let (writable, checked_with) = if host.is_live() {
            let mode = if dir {
                AccessFlags::W_OK | AccessFlags::X_OK
            } else {
                AccessFlags::W_OK
            };
            (host.access(p, mode).is_ok(), "access(2)")
        } else {
            (mode_allows_write(&meta, &id, dir), "mode bits (--root)")
        };
        f.root_files.push(RootFile {
            path: p.to_string(),
            owner_uid: meta.uid(),
            mode: format!("{:04o}", meta.mode() & 0o7777),
            writable,
            checked_with: checked_with.into(),
        });
    }
    collect_doors(host, &group, &mut f);
    collect_programs(host, &mut f, deadline);
    Ok(f)
}

fn read_text(host: &Host, p: &str) -> std::io::Result<String> {
    read_regular(&host.path(p), MAX_FILE).map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn collect_sudo(host: &Host, id: &Identity, f: &mut RootPathFacts, deadline: Instant) {
    // The sudoers files, where this user may read them (root's 0440
    // usually keeps them from anyone else; `sudo -l` then speaks for them).
    let mut queue: Vec<String> = vec!["/etc/sudoers".into()];
    let mut seen = HashSet::new();
    while let Some(p) = queue.pop() {
        if seen.len() >= MAX_SUDOERS_FILES || !seen.insert(p.clone()) {
            continue;
        }
        if let Some(dir) = p.strip_prefix("dir:") {
            let mut names: Vec<String> = std::fs::read_dir(host.path(dir))
                .map(|rd| {
                    rd.flatten()
                        .take(MAX_SUDOERS_FILES)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        // sudo skips names with a dot or ending in ~.
                        .filter(|n| !n.contains('.') && !n.ends_with('~'))
                        .collect()
                })
                .unwrap_or_default();
            crate::util::sort::sort(&mut names);
            queue.extend(names.into_iter().rev().map(|n| format!("{dir}/{n}")));
            continue;
        }
        match read_text(host, &p) {
            Ok(t) => {
                let Sudoers {
                    rules,
                    includes,
                    env_keep,
                    setenv,
                } = parse_sudoers(&t, &p, id);
                f.sudo.files_read.push(p.clone());
                f.sudo.rules.extend(rules);
                f.sudo.env_keep.extend(env_keep);
                f.sudo.setenv_default |= setenv;
                let base = Path::new(&p).parent().unwrap_or(Path::new("/etc"));
                for inc in includes {
                    let (kind, path) = match inc.strip_prefix("dir:") {
                        Some(d) => ("dir:", d.to_string()),
                        None => ("", inc),
                    };
                    let abs = if path.starts_with('/') {
                        path
                    } else {
                        base.join(path).to_string_lossy().into_owned()
                    };
                    queue.push(format!("{kind}{abs}"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                f.sudo.files_unreadable.push(p.clone());
            }
            Err(_) => {}
        }
    }
    if !f.sudo.files_unreadable.is_empty() {
        // sudoers.d is listed even when its files are not readable.
        if let Ok(rd) = std::fs::read_dir(host.path("/etc/sudoers.d")) {
            for e in rd.flatten().take(MAX_SUDOERS_FILES) {
                let n = e.file_name().to_string_lossy().into_owned();
                let p = format!("/etc/sudoers.d/{n}");
                if !n.contains('.') && !n.ends_with('~') && !seen.contains(&p) {
                    f.sudo.files_unreadable.push(p);
                }
            }
        }
    }

    let dirs: Vec<PathBuf> = search_dirs(host);
    let found = dirs
        .iter()
        .map(|d| d.join("sudo"))
        .find(|p| std::fs::symlink_metadata(host.path(p)).is_ok());
    let Some(sudo) = found else {
        f.sudo.listing = Some("not-present".into());
        return;
    };
    f.sudo.path = Some(sudo.to_string_lossy().into_owned());
    let why_not = if !host.is_live() {
        Some("--root: binaries in a fixture tree are never executed")
    } else if id.uid == 0 {
        Some("this process is already root")
    } else {
        None
    };
    if let Some(why) = why_not {
        f.sudo.listing = Some("not-run".into());
        f.sudo.listing_detail = Some(why.into());
        return;
    }
    // Only a root-owned binary nobody else can change is run: this process
    // may be root-less, but a planted `sudo` on PATH must not be executed.
    match std::fs::metadata(&sudo) {
        Ok(m) if m.uid() == 0 && m.mode() & 0o022 == 0 && m.is_file() => {}
        Ok(m) => {
            f.sudo.listing = Some("not-run".into());
            f.sudo.listing_detail = Some(format!(
                "{} is owned by uid {} with mode {:04o}: not a root-owned binary, not run",
                sudo.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
            return;
        }
        Err(e) => {
            f.sudo.listing = Some("failed".into());
            f.sudo.listing_detail = Some(format!("cannot stat: {e}"));
            return;
        }
    }
    let env = vec![
        (
            "PATH".to_string(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
        ),
        ("LC_ALL".to_string(), "C".to_string()),
    ];
    let dl = std::cmp::min(deadline, Instant::now() + SUDO_DEADLINE);
    let o = command::run_bounded(&sudo, &["-n".into(), "-l".into()], &env, Path::new("/"), dl);
    f.sudo.duration_ms = Some(o.duration.as_millis() as u64);
    match o.status {
        ToolStatus::Ok => {
            f.sudo.listing = Some("listed".into());
            f.sudo.rules.extend(parse_sudo_listing(&o.output));
            let (keep, setenv) = listing_defaults(&o.output);
            f.sudo.env_keep.extend(keep);
            f.sudo.setenv_default |= setenv;
        }
        ToolStatus::Timeout => {
            f.sudo.listing = Some("timeout".into());
            f.sudo.listing_detail = o.reason;
        }
        ToolStatus::Failed => {
            let state = listing_state(&o.output);
            f.sudo.listing = Some(state.into());
            f.sudo.listing_detail = o
                .output
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(|l| short(l, 200));
        }
        ToolStatus::Error | ToolStatus::NotRun | ToolStatus::FromFile => {
            f.sudo.listing = Some("failed".into());
            f.sudo.listing_detail = o.reason;
        }
    }
}

/// PATH (this process's, or the tree's own environment under --root) and
/// the usual bin and sbin directories, each once.
fn search_dirs(host: &Host) -> Vec<PathBuf> {
    // The host's environment: this process's, or the tree's own (--root).
    let path = host.env().get("PATH").map(str::to_string);
    let mut out: Vec<PathBuf> = Vec::new();
    for d in path
        .as_deref()
        .unwrap_or("")
        .split(':')
        .chain(DEFAULT_DIRS.iter().copied())
    {
        let p = PathBuf::from(d);
        if p.is_absolute() && !out.contains(&p) && out.len() < 64 {
            out.push(p);
        }
    }
    out
}

fn collect_doors(host: &Host, group: &[(String, u32, Vec<String>)], f: &mut RootPathFacts) {
    let name_of = |gid: u32| {
        group
            .iter()
            .find(|(_, g, _)| *g == gid)
            .map(|(n, _, _)| short(n, 32))
            .unwrap_or_else(|| format!("gid {gid}"))
    };
    let door = |path: &str, what: &str, meta: &std::fs::Metadata, f: &mut RootPathFacts| {
        // The group's own door: owned by one of our groups, group read and
        // write, and not ours as a user (that is another finding's case).
        if meta.uid() != f.uid && f.gids.contains(&meta.gid()) && meta.mode() & 0o060 == 0o060 {
            f.group_doors.push(GroupDoor {
                group: name_of(meta.gid()),
                gid: meta.gid(),
                door: what.to_string(),
                path: path.to_string(),
                mode: format!("{:04o}", meta.mode() & 0o7777),
            });
        }
    };
    for (what, paths) in GROUP_DOORS {
        for p in *paths {
            let Ok(meta) = std::fs::metadata(host.path(p)) else {
                continue;
            };
            let ft = meta.file_type();
            if ft.is_socket() || ft.is_char_device() {
                door(p, what, &meta, f);
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(host.path("/dev")) {
        for e in rd.flatten().take(MAX_DIR_ENTRIES) {
            let Ok(meta) = e.metadata() else { continue };
            if meta.file_type().is_block_device() {
                let p = format!("/dev/{}", e.file_name().to_string_lossy());
                door(&p, "block device", &meta, f);
            }
        }
    }
}

fn collect_programs(host: &Host, f: &mut RootPathFacts, deadline: Instant) {
    let mut seen_dirs = HashSet::new();
    let mut seen_files = HashSet::new();
    'dirs: for d in search_dirs(host) {
        let hp = host.path(&d);
        let Ok(meta) = std::fs::metadata(&hp) else {
            continue;
        };
        // /bin -> usr/bin on merged-/usr systems: each directory once.
        if !meta.is_dir() || !seen_dirs.insert((meta.dev(), meta.ino())) {
            continue;
        }
        f.scanned_dirs.push(d.to_string_lossy().into_owned());
        let Ok(rd) = std::fs::read_dir(&hp) else {
            continue;
        };
        for (i, e) in rd.flatten().enumerate() {
            if i >= MAX_DIR_ENTRIES || Instant::now() > deadline {
                f.programs_truncated = true;
                break 'dirs;
            }
            let Ok(m) = e.metadata() else { continue };
            if !m.is_file() || !seen_files.insert((m.dev(), m.ino())) {
                continue;
            }
            let setuid_root = m.mode() & 0o4000 != 0 && m.uid() == 0;
            let caps = if m.mode() & 0o111 != 0 {
                file_caps(&e.path()).and_then(|b| parse_vfs_cap(&b))
            } else {
                None
            };
            let caps = caps.filter(|c| *c != 0);
            if !setuid_root && caps.is_none() {
                continue;
            }
            if f.privileged_programs.len() >= MAX_LISTED {
                f.programs_truncated = true;
                break 'dirs;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            f.privileged_programs.push(PrivProgram {
                path: d.join(&name).to_string_lossy().into_owned(),
                owner_uid: m.uid(),
                mode: format!("{:04o}", m.mode() & 0o7777),
                setuid_root,
                capabilities: caps
                    .map(|c| crate::catalog::capability_names(c, 63))
                    .unwrap_or_default(),
                notable: NOTABLE.contains(&name.as_str()),
            });
        }
    }
    crate::util::sort::sort_by(&mut f.privileged_programs, |a, b| a.path.cmp(&b.path));
}

// ---------------------------------------------------------------------------
// Evaluation.

impl RootPathFacts {
    /// The severity of a path to root here, and what that root is.
    fn rank(&self) -> (Severity, String) {
        match self.boundary {
            RootMapping::HostRoot => (
                Severity::High,
                "root here is root on the host (uid 0 maps to host uid 0: no user namespace)"
                    .into(),
            ),
            RootMapping::UserNamespace { host_uid } => (
                Severity::Medium,
                format!(
                    "root here is host uid {host_uid} (a user namespace, as in a rootless container): it is root over this namespace's files and mounts, not the host's"
                ),
            ),
            RootMapping::Unmapped => (
                Severity::Medium,
                "uid 0 is not mapped in this user namespace".into(),
            ),
            RootMapping::Unknown => (
                Severity::High,
                "the user namespace mapping could not be read, so this root may be the host's"
                    .into(),
            ),
        }
    }
}

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The sudo rules as one finding, by what their commands allow: a way to
/// root is priv.passwordless-root at the boundary's severity; commands
/// whose reach could not be told keep the old, lowered rank; commands that
/// are each limited to what they do are priv.sudo-limited (info), with
/// why each is safe and what would make it not.
fn sudo_finding(
    f: &RootPathFacts,
    who: &str,
    sev: Severity,
    root_is: &str,
    base: &dyn Fn(&str, String) -> Finding,
) -> Finding {
    let rules = &f.sudo.rules;
    let blocked = f.sudo.listing.as_deref() == Some("no-new-privs");
    let all = rules.iter().any(|r| r.all_commands);
    let sources: Vec<String> = rules.iter().map(|r| r.source.clone()).collect();
    let mut cmds: Vec<String> = rules
        .iter()
        .flat_map(|r| r.commands.iter().cloned())
        .collect();
    cmds.dedup();
    // The same command from the files and from `sudo -n -l`: judged once.
    let mut judged: Vec<&Judged> = Vec::new();
    for j in rules.iter().flat_map(|r| r.judged.iter()) {
        if !judged.iter().any(|k| k.command == j.command) {
            judged.push(j);
        }
    }
    let of = |v: Verdict| -> Vec<String> {
        judged
            .iter()
            .filter(|j| j.verdict == v)
            .map(|j| format!("{}: {}", j.command, j.why))
            .collect()
    };
    let (paths, unknown, limited) = (
        of(Verdict::PathToRoot),
        of(Verdict::Unknown),
        of(Verdict::Limited),
    );
    let lead = |what: &str| {
        format!(
            "sudo lets {who} run {what} as {} without a password ({})",
            rules[0].runas,
            sources.join(", ")
        )
    };
    let evidence = |fnd: Finding| {
        fnd.with("rules", json(rules))
            .with("sudo_listing", json(&f.sudo.listing))
            .with("sources", sources.clone())
            .with("env_keep", f.sudo.env_keep.clone())
            .with("setenv_default", f.sudo.setenv_default)
    };
    let what = if all { "any command" } else { "commands" };
    if blocked {
        return evidence(base(
            "sudo",
            format!(
                "{}; no_new_privs keeps sudo from running as root here, for now",
                lead(what)
            ),
        ))
        .severity(Severity::Low);
    }
    // ALL is a way to root whether or not it was judged.
    if !paths.is_empty() || all {
        let how = if all && paths.len() <= 1 {
            root_is.to_string()
        } else {
            format!("a way to root: {}; {root_is}", paths.join("; "))
        };
        return evidence(base("sudo", format!("{}; {how}", lead(what)))).severity(sev);
    }
    if !unknown.is_empty() || judged.is_empty() {
        return evidence(base(
            "sudo",
            format!(
                "{}; limited to {}; whether one of them leads to a shell could not be told ({}); {root_is}",
                lead(what),
                cmds.join(", "),
                unknown.join("; ")
            ),
        ))
        .severity(sev.lowered());
    }
    evidence(
        Finding::new(
            Code::PrivSudoLimited,
            "sudo",
            format!(
                "{}, and none of them is a way to root: {}. The rule is safe to keep while each command stays as it is: owned by root, not writable by {who} nor in a directory they can write, with no shell, interpreter, editor or pager among them and no arguments they choose",
                lead(&format!("only {}", cmds.join(", "))),
                limited.join("; ")
            ),
        )
        .with("uid", f.uid)
        .with("user", json(&f.user))
        .with("boundary", json(&f.boundary))
        .with("root_is", root_is.to_string()),
    )
}

pub fn evaluate(f: &RootPathFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let who = f
        .user
        .clone()
        .map(|u| format!("{u} (uid {})", f.uid))
        .unwrap_or_else(|| format!("uid {}", f.uid));
    for (what, why) in &f.incomplete {
        out.push(
            Finding::new(
                Code::ProbeIncomplete,
                format!("rootpaths:{what}"),
                format!("the rootpaths probe could not check {what}: {why}"),
            )
            .unknown()
            .with("probe", "rootpaths")
            .with("reason", why.clone()),
        );
    }
    // Already root: a path to root says nothing more.
    if f.uid == 0 {
        return out;
    }
    let (sev, root_is) = f.rank();
    let base = |subject: &str, msg: String| {
        Finding::new(Code::PrivPasswordlessRoot, subject, msg)
            .severity(sev)
            .with("uid", f.uid)
            .with("user", json(&f.user))
            .with("uid_map", f.uid_map.clone())
            .with("boundary", json(&f.boundary))
            .with("root_is", root_is.clone())
    };

    if !f.sudo.rules.is_empty() {
        out.push(sudo_finding(f, &who, sev, &root_is, &base));
    } else if f.sudo.listing.as_deref() == Some("timeout") {
        out.push(
            Finding::new(
                Code::ProbeIncomplete,
                "rootpaths:sudo",
                format!(
                    "`sudo -n -l` did not answer within its deadline and was killed: whether sudo asks {who} for a password is unknown"
                ),
            )
            .unknown()
            .with("probe", "rootpaths")
            .with("reason", json(&f.sudo.listing_detail)),
        );
    }

    if !f.doas.is_empty() {
        let all = f.doas.iter().any(|r| r.command.is_none());
        let sources: Vec<String> = f.doas.iter().map(|r| r.source.clone()).collect();
        out.push(
            base(
                "doas",
                format!(
                    "doas permits {who} to run {} as root with nopass ({}); {root_is}",
                    if all { "any command" } else { "commands" },
                    sources.join(", ")
                ),
            )
            .severity(if all { sev } else { sev.lowered() })
            .with("rules", json(&f.doas)),
        );
    }

    for r in f.root_files.iter().filter(|r| r.writable) {
        let how = match r.path.as_str() {
            "/etc/passwd" => "an entry with uid 0 and no password is one edit away",
            "/etc/shadow" => "root's password hash can be replaced",
            "/etc/sudoers" | "/etc/sudoers.d" => "a NOPASSWD rule can be added",
            _ => "a nopass rule can be added",
        };
        out.push(
            base(
                &r.path,
                format!(
                    "{} (owner uid {}, mode {}) is writable by {who} ({}): {how}; {root_is}",
                    r.path, r.owner_uid, r.mode, r.checked_with
                ),
            )
            .with("file", json(r)),
        );
    }

    for d in &f.group_doors {
        let (s, how) = match d.door.as_str() {
            "kvm device" => (
                Severity::Medium,
                "it runs virtual machines with the host kernel's help: not root by itself, but a large kernel surface".to_string(),
            ),
            "block device" => (
                Severity::High,
                "raw read and write access to the disk below every filesystem on it".to_string(),
            ),
            _ => (
                Severity::High,
                "the daemon behind it starts privileged containers with host mounts for whoever may connect: root on the daemon's host".to_string(),
            ),
        };
        out.push(
            base(
                &format!("group {}", d.group),
                format!(
                    "{who} is in the group {} that owns the {} {} (mode {}): {how}",
                    d.group, d.door, d.path, d.mode
                ),
            )
            .severity(s)
            .with("door", json(d)),
        );
    }

    if f.no_new_privs != Some(true) && !f.privileged_programs.is_empty() {
        let notable: Vec<String> = f
            .privileged_programs
            .iter()
            .filter(|p| p.notable)
            .map(|p| p.path.rsplit('/').next().unwrap_or(&p.path).to_string())
            .collect();
        let setuid = f
            .privileged_programs
            .iter()
            .filter(|p| p.setuid_root)
            .count();
        let capped = f
            .privileged_programs
            .iter()
            .filter(|p| !p.capabilities.is_empty())
            .count();
        out.push(
            Finding::new(
                Code::PrivSetuidBinaries,
                "setuid",
                format!(
                    "no_new_privs is not set and {setuid} setuid-root program(s) and {capped} with file capabilities are on PATH or in the bin and sbin directories{}: each can raise the privilege of {who}",
                    if notable.is_empty() {
                        String::new()
                    } else {
                        format!(", among them {}", notable.join(", "))
                    }
                ),
            )
            .with("programs", json(&f.privileged_programs))
            .with("notable", notable)
            .with("scanned_dirs", f.scanned_dirs.clone())
            .with("truncated", f.programs_truncated),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vscode() -> Identity {
        Identity {
            uid: 1000,
            user: Some("vscode".into()),
            gids: vec![1000, 27],
            groups: vec!["vscode".into(), "sudo".into()],
        }
    }

    #[test]
    fn sudoers_nopasswd_rules() {
        let id = vscode();
        let r = parse_sudoers(
            "vscode ALL=(root) NOPASSWD:ALL\n",
            "/etc/sudoers.d/vscode",
            &id,
        )
        .rules;
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].source, "/etc/sudoers.d/vscode:1");
        assert!(r[0].all_commands);
        let text = "# comment\nDefaults env_reset\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n#includedir /etc/sudoers.d\n@include /etc/extra\n";
        let Sudoers {
            rules: r,
            includes: inc,
            ..
        } = parse_sudoers(text, "/etc/sudoers", &id);
        assert!(r.is_empty(), "a password is asked: {r:?}");
        assert_eq!(inc, vec!["dir:/etc/sudoers.d", "/etc/extra"]);
        for (text, want) in [
            ("%sudo ALL=(ALL) NOPASSWD: ALL\n", true),
            ("%#27 ALL = NOPASSWD: ALL\n", true),
            ("#1000 ALL=(ALL) NOPASSWD:ALL\n", true),
            ("alice, vscode ALL=(ALL) NOPASSWD: ALL\n", true),
            (
                "User_Alias DEVS = alice, vscode\nDEVS ALL=(root) NOPASSWD: ALL\n",
                true,
            ),
            ("ALL, !vscode ALL=(ALL) NOPASSWD: ALL\n", false),
            ("alice ALL=(ALL) NOPASSWD: ALL\n", false),
            ("vscode ALL=(postgres) NOPASSWD: ALL\n", false),
            // Run-as root by uid (sudoers(5): "#uid"), and another uid.
            ("vscode ALL=(#0) NOPASSWD: ALL\n", true),
            ("vscode ALL=(#0 : ALL) NOPASSWD: /usr/bin/apt\n", true),
            ("vscode ALL=(#1000) NOPASSWD: ALL\n", false),
            (
                "vscode ALL=(root) NOPASSWD: /usr/bin/apt, PASSWD: ALL\n",
                true,
            ),
            ("vscode ALL=(ALL) ALL # NOPASSWD: ALL\n", false),
            ("Defaults:vscode !authenticate\n", true),
            ("Defaults:alice !authenticate\n", false),
            ("vscode ALL=(root) \\\n    NOPASSWD: ALL\n", true),
        ] {
            let r = parse_sudoers(text, "/f", &id).rules;
            assert_eq!(!r.is_empty(), want, "{text:?}: {r:?}");
        }
        let r = parse_sudoers(
            "vscode ALL=(root) NOPASSWD: /usr/bin/apt, PASSWD: ALL\n",
            "/f",
            &id,
        )
        .rules;
        assert_eq!(r[0].commands, vec!["/usr/bin/apt"]);
        assert!(!r[0].all_commands);
    }

    #[test]
    fn aliases_defaults_and_setenv() {
        let id = vscode();
        let text = "Cmnd_Alias FW = /usr/local/bin/init-firewall.sh, /usr/sbin/ipset\nDefaults env_keep += \"LD_PRELOAD HOME\"\nDefaults:alice setenv\nvscode ALL=(root) NOPASSWD: FW\n";
        let p = parse_sudoers(text, "/f", &id);
        assert_eq!(
            p.rules[0].commands,
            vec!["/usr/local/bin/init-firewall.sh", "/usr/sbin/ipset"]
        );
        assert_eq!(p.env_keep, vec!["LD_PRELOAD"], "HOME loads no code");
        assert!(!p.setenv, "alice's Defaults are not vscode's");
        let p = parse_sudoers(
            "Defaults:vscode setenv\nvscode ALL=(root) SETENV: NOPASSWD: /opt/x\n",
            "/f",
            &id,
        );
        assert!(p.setenv && p.rules[0].setenv);
        let out = "Matching Defaults entries for node on h:\n    env_reset, env_keep+=\"PYTHONPATH LANG\", secure_path=/usr/bin\n\nUser node may run the following commands on h:\n    (root) SETENV: NOPASSWD: /usr/local/bin/x\n";
        assert_eq!(
            listing_defaults(out),
            (vec!["PYTHONPATH".to_string()], false)
        );
        assert!(parse_sudo_listing(out)[0].setenv);
    }

    /// A tree of our own: each command judged by what it allows, with the
    /// mode bits against uid 1000 (the --root way).
    #[test]
    fn commands_judged_by_what_they_allow() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sp-judge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mk = |rel: &str, mode: u32| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        std::fs::create_dir_all(dir.join("usr/local/bin")).unwrap();
        mk("usr/local/bin/init-firewall.sh", 0o755);
        mk("usr/local/bin/open.sh", 0o777);
        mk("usr/bin/vim.basic", 0o755);
        mk("usr/bin/python3.11", 0o755);
        mk("usr/bin/systemctl", 0o755);
        mk("opt/tool/run", 0o755);
        std::fs::set_permissions(dir.join("opt/tool"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        std::os::unix::fs::symlink("/usr/bin/vim.basic", dir.join("usr/bin/vi")).unwrap();
        let host = Host::new(dir.clone(), std::time::Duration::from_secs(5));
        let id = vscode();
        let j = Judge {
            host: &host,
            id: &id,
            who: "vscode (uid 1000)".into(),
        };
        let v = |c: &str| j.judge(c, false, &[], false).verdict;
        use Verdict::*;
        for (c, want) in [
            ("ALL", PathToRoot),
            ("/usr/local/bin/init-firewall.sh", Limited),
            ("/usr/local/bin/open.sh", PathToRoot),
            ("/opt/tool/run", PathToRoot),
            ("/usr/bin/vi /etc/hosts", PathToRoot),
            ("/usr/bin/python3.11", PathToRoot),
            (
                "/usr/bin/python3.11 /usr/local/bin/init-firewall.sh",
                Limited,
            ),
            ("/usr/bin/python3.11 /usr/local/bin/open.sh", PathToRoot),
            ("/usr/bin/systemctl restart app", Limited),
            ("/usr/bin/systemctl", PathToRoot),
            ("/usr/bin/systemctl restart *", PathToRoot),
            ("/usr/local/bin/init-firewall.sh *", PathToRoot),
            ("/usr/local/bin/*", PathToRoot),
            ("/usr/bin/less /var/log/app.log", PathToRoot),
            ("/bin/bash \"\"", PathToRoot),
            ("sudoedit /etc/hosts", Limited),
            ("sudoedit /etc/sudoers.d/x", PathToRoot),
            ("sudoedit /srv/*.conf", PathToRoot),
            ("FIREWALL", Unknown),
            ("/usr/sbin/missing", Limited),
        ] {
            assert_eq!(v(c), want, "{c}: {:?}", j.judge(c, false, &[], false));
        }
        let w = j.judge("/usr/local/bin/init-firewall.sh", true, &[], false);
        assert_eq!(w.verdict, PathToRoot, "SETENV");
        let w = j.judge(
            "/usr/local/bin/init-firewall.sh",
            false,
            &["LD_PRELOAD".into()],
            false,
        );
        assert!(w.why.contains("LD_PRELOAD"), "{w:?}");
        let w = j.judge("/usr/local/bin/open.sh", false, &[], false);
        assert!(w.why.contains("writable by vscode (uid 1000)"), "{w:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sudo_listing() {
        let out = "Matching Defaults entries for vscode on 88cc2cbf0492:\n    env_reset, mail_badpass, secure_path=/usr/local/sbin\\:/usr/bin, use_pty\n\nUser vscode may run the following commands on 88cc2cbf0492:\n    (root) NOPASSWD: ALL\n";
        let r = parse_sudo_listing(out);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].runas.as_str(), r[0].all_commands), ("root", true));
        let out = "User bob may run the following commands on h:\n    (ALL : ALL) ALL\n    (root) NOPASSWD: /usr/bin/systemctl restart app, /usr/bin/journalctl\n";
        let r = parse_sudo_listing(out);
        assert_eq!(r.len(), 1);
        assert_eq!(
            r[0].commands,
            vec!["/usr/bin/systemctl restart app", "/usr/bin/journalctl"]
        );
        assert!(!r[0].all_commands);
        assert!(parse_sudo_listing(
            "User bob may run the following commands on h:\n    (ALL : ALL) ALL\n"
        )
        .is_empty());
        assert_eq!(
            listing_state("sudo: a password is required\n"),
            "password-required"
        );
        assert_eq!(
            listing_state("sudo: The \"no new privileges\" flag is set, which prevents sudo from running as root.\n"),
            "no-new-privs"
        );
    }

    #[test]
    fn doas_last_match_wins() {
        let id = vscode();
        let r = parse_doas("permit nopass vscode as root\n", "/etc/doas.conf", &id);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].source, "/etc/doas.conf:1");
        assert!(parse_doas("permit nopass vscode\ndeny vscode\n", "/d", &id).is_empty());
        assert!(parse_doas("permit persist :sudo\n", "/d", &id).is_empty());
        assert_eq!(
            parse_doas("permit nopass keepenv :sudo\n", "/d", &id).len(),
            1
        );
        assert!(parse_doas("permit nopass vscode as postgres\n", "/d", &id).is_empty());
        let r = parse_doas(
            "permit nopass setenv { A B } vscode cmd /usr/bin/apt update\n",
            "/d",
            &id,
        );
        assert_eq!(r[0].command.as_deref(), Some("/usr/bin/apt update"));
    }

    #[test]
    fn boundaries_and_caps() {
        assert_eq!(boundary(&[(0, 0, 4294967295)]), RootMapping::HostRoot);
        assert_eq!(
            boundary(&[(0, 100000, 65536)]),
            RootMapping::UserNamespace { host_uid: 100000 }
        );
        assert_eq!(boundary(&[(1000, 1000, 1)]), RootMapping::Unmapped);
        assert_eq!(boundary(&[]), RootMapping::Unknown);
        // cap_net_raw+ep, vfs_cap_data v2 (setcap writes this for ping).
        let v2 = [
            0x01, 0, 0, 0x02, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(parse_vfs_cap(&v2), Some(1 << 13));
        assert_eq!(parse_vfs_cap(&[1, 2]), None);
    }

    /// The parsers of sudoers, sudo's listing and doas.conf never panic on
    /// hostile bytes: the files and the listing are the image's text.
    #[test]
    fn parsers_survive_hostile_bytes() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let pieces: &[&str] = &[
            "vscode",
            " ALL",
            "=",
            "(",
            ")",
            ":",
            "NOPASSWD:",
            "%sudo",
            "#",
            "#1000",
            "\\\n",
            "\n",
            ",",
            "!",
            "User_Alias A = ",
            "Defaults:",
            "!authenticate",
            "permit ",
            "nopass ",
            "setenv {",
            "}",
            " as ",
            " cmd ",
            "é",
            "User x may run the following commands on h:\n",
            "@includedir ",
            "%#",
            "\t",
        ];
        let id = vscode();
        for _ in 0..5000 {
            let mut t = String::new();
            for _ in 0..(next() % 16) {
                t.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let _ = parse_sudoers(&t, "/f", &id);
            let _ = parse_sudo_listing(&t);
            let _ = parse_doas(&t, "/f", &id);
            let _ = parse_uid_map(&t);
            let _ = parse_vfs_cap(t.as_bytes());
        }
    }

    fn facts(boundary: RootMapping) -> RootPathFacts {
        RootPathFacts {
            uid: 1000,
            user: Some("vscode".into()),
            boundary,
            sudo: SudoFacts {
                listing: Some("listed".into()),
                rules: parse_sudo_listing(
                    "User vscode may run the following commands on h:\n    (root) NOPASSWD: ALL\n",
                ),
                ..SudoFacts::default()
            },
            ..RootPathFacts::default()
        }
    }

    #[test]
    fn severity_follows_the_boundary() {
        let fs = evaluate(&facts(RootMapping::HostRoot));
        let f = fs
            .iter()
            .find(|f| f.code == "priv.passwordless-root")
            .unwrap();
        assert_eq!((f.subject.as_str(), f.severity), ("sudo", Severity::High));
        assert!(f.message.contains("root on the host"), "{}", f.message);
        let fs = evaluate(&facts(RootMapping::UserNamespace { host_uid: 100000 }));
        let f = fs
            .iter()
            .find(|f| f.code == "priv.passwordless-root")
            .unwrap();
        assert_eq!(f.severity, Severity::Medium);
        assert!(f.message.contains("host uid 100000"), "{}", f.message);
        let mut root = facts(RootMapping::HostRoot);
        root.uid = 0;
        assert!(evaluate(&root).is_empty(), "root needs no path to root");
    }
}
