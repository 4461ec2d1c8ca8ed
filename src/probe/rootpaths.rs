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

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::unistd::AccessFlags;
use serde::Serialize;
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

#[derive(Debug, Clone, Default, Serialize)]
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
    pub boundary: Boundary,
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

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Boundary {
    HostRoot,
    UserNamespace {
        host_uid: u64,
    },
    Unmapped,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Default, Serialize)]
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
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
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
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DoasRule {
    pub source: String,
    pub identity: String,
    pub target: String,
    /// The command a rule is limited to, if any.
    pub command: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RootFile {
    pub path: String,
    pub owner_uid: u32,
    pub mode: String,
    pub writable: bool,
    /// access(2), or mode bits (under --root).
    pub checked_with: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupDoor {
    pub group: String,
    pub gid: u32,
    pub door: String,
    pub path: String,
    pub mode: String,
}

#[derive(Debug, Clone, Serialize)]
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
pub fn boundary(uid_map: &[(u64, u64, u64)]) -> Boundary {
    if uid_map.is_empty() {
        return Boundary::Unknown;
    }
    match uid_map
        .iter()
        .find(|(inside, _, len)| *inside == 0 && *len > 0)
    {
        Some((_, 0, _)) => Boundary::HostRoot,
        Some((_, outside, _)) => Boundary::UserNamespace { host_uid: *outside },
        None => Boundary::Unmapped,
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
/// root without a password: (runas, commands).
pub fn nopasswd_commands(rhs: &str, default_nopasswd: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut runas: Option<String> = None;
    let mut nopasswd = default_nopasswd;
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
                _ => {}
            }
            c = rest.trim().to_string();
        }
        if nopasswd && !c.is_empty() && runas_is_root(runas.as_deref()) {
            out.push((
                runas.clone().unwrap_or_else(|| "root".into()),
                short(&c, 200),
            ));
        }
    }
    out
}

/// The NOPASSWD-to-root rules of one sudoers file for `id`, and the files
/// it includes.
pub fn parse_sudoers(text: &str, file: &str, id: &Identity) -> (Vec<SudoRule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut includes = Vec::new();
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (line_no, line) in sudoers_lines(text) {
        let source = format!("{file}:{line_no}");
        let first = line.split_whitespace().next().unwrap_or("");
        match first {
            "#include" | "@include" | "#includedir" | "@includedir" => {
                if let Some(p) = line.split_whitespace().nth(1) {
                    let kind = if first.ends_with("dir") { "dir:" } else { "" };
                    includes.push(format!("{kind}{p}"));
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
            "Runas_Alias" | "Host_Alias" | "Cmnd_Alias" | "Cmd_Alias" => continue,
            _ => {}
        }
        if let Some(rest) = first.strip_prefix("Defaults") {
            // Defaults[:user|%group] ... !authenticate
            if !line
                .split([',', ' ', '\t'])
                .any(|w| w.trim() == "!authenticate")
            {
                continue;
            }
            let applies = match rest.strip_prefix(':') {
                Some(who) => list_matches(
                    &who.split(',').map(str::to_string).collect::<Vec<_>>(),
                    id,
                    &aliases,
                    0,
                ),
                None => rest.is_empty(),
            };
            if applies {
                rules.push(SudoRule {
                    source,
                    runas: "root".into(),
                    commands: vec!["ALL".into()],
                    all_commands: true,
                    no_authenticate: true,
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
        let commands: Vec<String> = cmds.into_iter().map(|(_, c)| c).take(20).collect();
        rules.push(SudoRule {
            source,
            runas,
            all_commands: commands.iter().any(|c| c == "ALL"),
            commands,
            no_authenticate: false,
        });
    }
    (rules, includes)
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
        for (runas, c) in nopasswd_commands(t, no_auth) {
            match rules
                .iter_mut()
                .find(|r: &&mut SudoRule| r.runas == runas && r.commands.len() < 20)
            {
                Some(r) => {
                    r.all_commands |= c == "ALL";
                    r.commands.push(c);
                }
                None => rules.push(SudoRule {
                    source: "sudo -n -l".into(),
                    runas,
                    all_commands: c == "ALL",
                    commands: vec![c],
                    no_authenticate: no_auth,
                }),
            }
        }
    }
    rules
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
            checked_with,
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
                let (rules, includes) = parse_sudoers(&t, &p, id);
                f.sudo.files_read.push(p.clone());
                f.sudo.rules.extend(rules);
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
            Boundary::HostRoot => (
                Severity::High,
                "root here is root on the host (uid 0 maps to host uid 0: no user namespace)"
                    .into(),
            ),
            Boundary::UserNamespace { host_uid } => (
                Severity::Medium,
                format!(
                    "root here is host uid {host_uid} (a user namespace, as in a rootless container): it is root over this namespace's files and mounts, not the host's"
                ),
            ),
            Boundary::Unmapped => (
                Severity::Medium,
                "uid 0 is not mapped in this user namespace".into(),
            ),
            Boundary::Unknown => (
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
                "probe.incomplete",
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
        Finding::new("priv.passwordless-root", subject, msg)
            .severity(sev)
            .with("uid", f.uid)
            .with("user", json(&f.user))
            .with("uid_map", f.uid_map.clone())
            .with("boundary", json(&f.boundary))
            .with("root_is", root_is.clone())
    };

    if !f.sudo.rules.is_empty() {
        let blocked = f.sudo.listing.as_deref() == Some("no-new-privs");
        let all = f.sudo.rules.iter().any(|r| r.all_commands);
        let sources: Vec<String> = f.sudo.rules.iter().map(|r| r.source.clone()).collect();
        let mut cmds: Vec<String> = f
            .sudo
            .rules
            .iter()
            .flat_map(|r| r.commands.iter().cloned())
            .collect();
        cmds.dedup();
        let (s, how) = if blocked {
            (
                Severity::Low,
                "no_new_privs keeps sudo from running as root here, for now".to_string(),
            )
        } else if all {
            (sev, root_is.clone())
        } else {
            (
                sev.lowered(),
                format!(
                    "limited to {}; whether one of them leads to a shell depends on the commands; {root_is}",
                    cmds.join(", ")
                ),
            )
        };
        out.push(
            base(
                "sudo",
                format!(
                    "sudo lets {who} run {} as {} without a password ({}); {how}",
                    if all { "any command" } else { "commands" },
                    f.sudo.rules[0].runas,
                    sources.join(", ")
                ),
            )
            .severity(s)
            .with("rules", json(&f.sudo.rules))
            .with("sudo_listing", json(&f.sudo.listing))
            .with("sources", sources),
        );
    } else if f.sudo.listing.as_deref() == Some("timeout") {
        out.push(
            Finding::new(
                "probe.incomplete",
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
                "priv.setuid-binaries",
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
        let (r, _) = parse_sudoers(
            "vscode ALL=(root) NOPASSWD:ALL\n",
            "/etc/sudoers.d/vscode",
            &id,
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].source, "/etc/sudoers.d/vscode:1");
        assert!(r[0].all_commands);
        let text = "# comment\nDefaults env_reset\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n#includedir /etc/sudoers.d\n@include /etc/extra\n";
        let (r, inc) = parse_sudoers(text, "/etc/sudoers", &id);
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
            let (r, _) = parse_sudoers(text, "/f", &id);
            assert_eq!(!r.is_empty(), want, "{text:?}: {r:?}");
        }
        let (r, _) = parse_sudoers(
            "vscode ALL=(root) NOPASSWD: /usr/bin/apt, PASSWD: ALL\n",
            "/f",
            &id,
        );
        assert_eq!(r[0].commands, vec!["/usr/bin/apt"]);
        assert!(!r[0].all_commands);
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
        assert_eq!(boundary(&[(0, 0, 4294967295)]), Boundary::HostRoot);
        assert_eq!(
            boundary(&[(0, 100000, 65536)]),
            Boundary::UserNamespace { host_uid: 100000 }
        );
        assert_eq!(boundary(&[(1000, 1000, 1)]), Boundary::Unmapped);
        assert_eq!(boundary(&[]), Boundary::Unknown);
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

    fn facts(boundary: Boundary) -> RootPathFacts {
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
        let fs = evaluate(&facts(Boundary::HostRoot));
        let f = fs
            .iter()
            .find(|f| f.code == "priv.passwordless-root")
            .unwrap();
        assert_eq!((f.subject.as_str(), f.severity), ("sudo", Severity::High));
        assert!(f.message.contains("root on the host"), "{}", f.message);
        let fs = evaluate(&facts(Boundary::UserNamespace { host_uid: 100000 }));
        let f = fs
            .iter()
            .find(|f| f.code == "priv.passwordless-root")
            .unwrap();
        assert_eq!(f.severity, Severity::Medium);
        assert!(f.message.contains("host uid 100000"), "{}", f.message);
        let mut root = facts(Boundary::HostRoot);
        root.uid = 0;
        assert!(evaluate(&root).is_empty(), "root needs no path to root");
    }
}
