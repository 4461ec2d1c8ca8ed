//! Phase 3, secrets: what a process in the workspace could authenticate
//! with. Secret-looking variables of this and other processes, credential
//! files in every home, the workspace and every host mount, SSH and GnuPG
//! agents and how many keys they offer, forwarded credential helpers, and
//! bearer tokens with their expiry; plus the shell histories of phase 5,
//! which the same search finds. The rule of the whole module: never a byte
//! of a secret's value in the facts, a finding, a log or an error; names,
//! kinds, paths, owners, modes, mounts, counts and expiries only.
//!
//! Directories and files this user cannot read are not reported as
//! findings: what the workspace's user cannot reach is not exposed to it.
//! They are counted in the facts.

pub mod agents;
pub mod env;
pub mod files;
pub mod helpers;
pub mod history;
pub mod mcp;
pub mod packages;
pub mod rules;
pub mod structured;
pub mod tokens;

use crate::finding::Code;
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::agents::AgentOutcome;
use self::env::{EnvHit, ProcFacts};
use self::files::{CredFile, Root, Search, SearchFacts, HOME_BUDGET, ROOT_BUDGET};
use self::helpers::Helper;
use self::history::History;
use self::rules::{credentials, Protocol};
use self::tokens::Token;
use crate::facts::mounts::{MountClass, MountFacts};
use crate::facts::users::Users;
use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::policy::Policy;

/// When the policy names no [secrets] max_token_ttl: a token that outlives
/// a working day outlives the task it was issued for.
pub const DEFAULT_MAX_TOKEN_TTL: Duration = Duration::from_secs(24 * 3600);
const MAX_AGENT_QUERIES: usize = 32;
const MAX_TOKEN_FILE: u64 = 64 * 1024;

/// Attacker-controlled text (names, comm, claims) made short and inert.
pub fn short(s: &str, n: usize) -> String {
    crate::util::sanitize::short(s, n)
}

/// Which mount a path is on, from the mounts probe.
#[derive(Debug, Default)]
pub struct MountIndex {
    list: Vec<(PathBuf, PathBuf, MountClass)>,
}

impl MountIndex {
    pub fn new(m: Option<&MountFacts>) -> MountIndex {
        MountIndex {
            list: m
                .map(|m| {
                    m.mounts
                        .iter()
                        .map(|e| (e.mount.mount_point.clone(), e.mount.root.clone(), e.class))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn entry(&self, p: &Path) -> Option<&(PathBuf, PathBuf, MountClass)> {
        // The longest mount point wins; of equal ones the later (on top).
        self.list
            .iter()
            .filter(|(mp, _, _)| p.starts_with(mp))
            .max_by_key(|(mp, _, _)| mp.as_os_str().len())
    }

    pub fn lookup(&self, p: &Path) -> Option<(String, MountClass)> {
        self.entry(p)
            .map(|(mp, _, c)| (mp.to_string_lossy().into_owned(), *c))
    }

    /// The host's path for `p` when it is on a host bind.
    pub fn host_path(&self, p: &Path) -> Option<PathBuf> {
        let (mp, root, c) = self.entry(p)?;
        if !matches!(c, MountClass::HostBind | MountClass::Workspace) {
            return None;
        }
        Some(root.join(p.strip_prefix(mp).ok()?))
    }

    /// Survives the container: a host path or an engine volume.
    pub fn persistent(c: MountClass) -> bool {
        matches!(
            c,
            MountClass::HostBind
                | MountClass::HostRoot
                | MountClass::Workspace
                | MountClass::Volume
                | MountClass::Socket
        )
    }

    pub fn is_pseudo(&self, p: &Path) -> bool {
        ["/proc", "/sys", "/dev"].iter().any(|x| p == Path::new(x))
            || self
                .list
                .iter()
                .any(|(mp, _, c)| mp == p && matches!(c, MountClass::Pseudo | MountClass::Device))
    }

    fn sockets(&self) -> impl Iterator<Item = &PathBuf> {
        self.list
            .iter()
            .filter(|(_, _, c)| *c == MountClass::Socket)
            .map(|(mp, _, _)| mp)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentSocket {
    pub path: String,
    /// env:SSH_AUTH_SOCK, catalog:PATTERN, host-mount, found under DIR...
    pub origin: String,
    pub protocol: Option<Protocol>,
    pub outcome: AgentOutcome,
    /// Keys the agent offers (SSH identities, GnuPG keys).
    pub identities: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_types: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub owner_uid: Option<u32>,
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_class: Option<MountClass>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SecretFacts {
    pub env: Vec<EnvHit>,
    pub processes: ProcFacts,
    pub files: Vec<CredFile>,
    pub agents: Vec<AgentSocket>,
    pub helpers: Vec<Helper>,
    pub tokens: Vec<Token>,
    pub histories: Vec<History>,
    /// MCP servers the agents' configurations name (inventory.secrets.mcp).
    pub mcp: mcp::McpFacts,
    pub search: SearchFacts,
    /// Candidate files left unchecked (MAX_CHECKS or the deadline).
    pub checks_truncated: bool,
    pub elapsed_us: u128,
}

fn getenv<'a>(vars: &'a [(String, String)], k: &str) -> Option<&'a str> {
    vars.iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// Collects everything. `deadline` is the probe's own (a little before the
/// runner gives up on it); the walk stops earlier so that the checks and
/// agent queries after it still fit.
pub fn collect(
    host: &Host,
    mounts: Option<&MountFacts>,
    users: &Users,
    workspace: Option<&Path>,
    deadline: Instant,
) -> SecretFacts {
    let started = Instant::now();
    let cat = credentials();
    let left = deadline.saturating_duration_since(started);
    let walk_deadline = started + left.mul_f32(0.7);
    let mut facts = SecretFacts::default();

    // A --root tree without /proc/self/environ has no known environment:
    // the scheduler reports secrets:environ as not checked (src/probe/mod.rs).
    let vars = env::own_environ(host).unwrap_or_default();
    facts.env = env::scan(&vars);
    let mut other_socks = Vec::new();
    facts.processes = env::scan_processes(
        host,
        &vars,
        &["SSH_AUTH_SOCK"],
        &mut other_socks,
        walk_deadline,
    );

    let idx = MountIndex::new(mounts);
    // Every home of the users fact (src/facts/users.rs), each walked
    // under a home's budget.
    let homes: Vec<Root> = users
        .homes
        .iter()
        .map(|h| Root {
            path: h.path.clone(),
            origin: h.origin.clone(),
            alias: h.alias.clone(),
            budget: HOME_BUDGET,
        })
        .collect();
    let mut search = Search::new(host, &idx, users, walk_deadline, deadline);
    search.facts.homes = homes
        .iter()
        .map(|h| h.path.to_string_lossy().into_owned())
        .collect();

    for p in &cat.pointer {
        let Some(v) = getenv(&vars, &p.var) else {
            continue;
        };
        let parts: Vec<&str> = if p.list {
            v.split(':').collect()
        } else {
            vec![v]
        };
        for part in parts.into_iter().take(16) {
            let mut path = PathBuf::from(part);
            if !path.is_absolute() {
                continue;
            }
            if let Some(j) = &p.join {
                path = path.join(j);
            }
            search.add_pointer(path, &p.as_rule, &format!("env:{}", p.var));
        }
    }
    if let Some(h) = getenv(&vars, "HISTFILE").filter(|h| h.starts_with('/')) {
        search.add_history(PathBuf::from(h), "env:HISTFILE");
    }
    for h in &homes {
        search.probe_home(h);
    }

    // Agents named by the environment, the catalog and socket mounts are
    // asked before the walk, so a large tree cannot crowd them out.
    let mut agent_cands: Vec<(PathBuf, String, Option<Protocol>)> = Vec::new();
    if let Some(s) = getenv(&vars, "SSH_AUTH_SOCK") {
        agent_cands.push((s.into(), "env:SSH_AUTH_SOCK".into(), Some(Protocol::Ssh)));
    }
    if let Some(s) = getenv(&vars, "GPG_AGENT_INFO") {
        let p = s.split(':').next().unwrap_or("");
        agent_cands.push((p.into(), "env:GPG_AGENT_INFO".into(), Some(Protocol::Gpg)));
    }
    for (pid, k, v) in &other_socks {
        agent_cands.push((
            v.into(),
            format!("env:{k} of pid {pid}"),
            Some(Protocol::Ssh),
        ));
    }
    let mut listings = HashMap::new();
    for a in cat.agent.iter().filter(|a| a.path.starts_with('/')) {
        for p in search.expand(Path::new("/"), &a.path, &mut listings) {
            agent_cands.push((p, format!("catalog:{}", a.path), Some(a.protocol)));
        }
    }
    for mp in idx.sockets() {
        agent_cands.push((mp.clone(), "host-mount".into(), None));
    }
    agent_cands.append(&mut search.sockets);
    let mut agent_seen = HashSet::new();
    query_agents(
        host,
        &idx,
        agent_cands,
        &mut agent_seen,
        deadline,
        &mut facts.agents,
    );

    let walk_started = Instant::now();
    let mut roots = Vec::new();
    if let Some(ws) = workspace {
        roots.push(Root {
            path: ws.to_path_buf(),
            origin: "workspace".into(),
            alias: idx.host_path(ws),
            budget: ROOT_BUDGET,
        });
    }
    // The homes (and /root) before any other mount: credentials are
    // there, and a large host mount walked first could spend the time.
    roots.extend(homes.iter().cloned());
    if let Some(m) = mounts {
        for e in m.mounts.iter().filter(|e| e.walked()) {
            let mp = &e.mount.mount_point;
            // An engine's storage of other containers (/var/lib/docker
            // bound in) is other workspaces' data: not searched.
            if crate::catalog::pruned_or_below(crate::catalog::Walk::Credentials, mp)
                || crate::catalog::pruned_path(crate::catalog::Walk::Credentials, &e.mount.root)
            {
                continue;
            }
            let (origin, alias) = match e.class {
                MountClass::HostBind | MountClass::Workspace => (
                    format!("host-mount:{}", mp.display()),
                    Some(e.mount.root.clone()),
                ),
                MountClass::Volume => (format!("volume:{}", mp.display()), None),
                _ => continue,
            };
            let Ok(meta) = std::fs::symlink_metadata(host.path(mp)) else {
                continue;
            };
            if meta.is_dir() {
                roots.push(Root {
                    path: mp.clone(),
                    origin,
                    alias,
                    budget: ROOT_BUDGET,
                });
            } else if meta.is_file() {
                let scope = mp.parent().unwrap_or(Path::new("/")).to_path_buf();
                search.consider(mp, alias.as_deref(), &origin, &scope);
            }
        }
    }
    let mut walker = search.walker();
    for r in &roots {
        search.walk(&mut walker, r);
    }
    search.facts.walk_us = walk_started.elapsed().as_micros();
    let secs = walk_started.elapsed().as_secs_f64();
    search.facts.entries_per_s = if secs > 0.0 {
        (search.facts.entries as f64 / secs) as u64
    } else {
        0
    };
    let found = std::mem::take(&mut search.sockets);
    query_agents(
        host,
        &idx,
        found,
        &mut agent_seen,
        deadline,
        &mut facts.agents,
    );

    let mut checked = files::Checked::default();
    search.check_all(&mut checked);
    facts.files = checked.files;
    facts.histories = checked.histories;
    facts.checks_truncated = checked.truncated;

    facts.tokens = collect_tokens(host, &idx, &vars, &mut search, checked.tokens);
    facts.helpers = collect_helpers(host, &vars, &homes, workspace, &search, checked.helpers);
    let host_dirs = mounts
        .into_iter()
        .flat_map(|m| &m.mounts)
        .filter(|e| e.class == MountClass::HostBind && e.walked())
        .filter(|e| host.path(&e.mount.mount_point).is_dir())
        .map(|e| {
            (
                e.mount.mount_point.clone(),
                format!("host-mount:{}", e.mount.mount_point.display()),
            )
        })
        .collect();
    facts.mcp = mcp::collect(
        host,
        &idx,
        &mcp::Places {
            workspace,
            host_dirs,
            homes: &homes,
            vars: &vars,
        },
        deadline,
    );
    facts.search = search.facts;
    facts.elapsed_us = started.elapsed().as_micros();
    facts
}

fn query_agents(
    host: &Host,
    idx: &MountIndex,
    cands: Vec<(PathBuf, String, Option<Protocol>)>,
    seen: &mut HashSet<(u64, u64)>,
    deadline: Instant,
    out: &mut Vec<AgentSocket>,
) {
    for (path, origin, hint) in cands {
        if out.len() >= MAX_AGENT_QUERIES || Instant::now() > deadline {
            break;
        }
        let hp = host.path(&path);
        let by_env = origin.starts_with("env:");
        let (mount, mount_class) = match idx.lookup(&path) {
            Some((m, c)) => (Some(m), Some(c)),
            None => (None, None),
        };
        let mut rec = AgentSocket {
            path: path.to_string_lossy().into_owned(),
            origin,
            protocol: hint,
            outcome: AgentOutcome::Refused,
            identities: None,
            key_types: Vec::new(),
            detail: None,
            owner_uid: None,
            mode: None,
            mount,
            mount_class,
        };
        let meta = match std::fs::metadata(&hp) {
            Ok(m) => m,
            Err(_) => {
                // Only a variable pointing nowhere is worth a line.
                if by_env {
                    rec.detail = Some("no such socket here".into());
                    out.push(rec);
                }
                continue;
            }
        };
        if !meta.file_type().is_socket() {
            if by_env {
                rec.outcome = AgentOutcome::NotAgent;
                rec.detail = Some("not a socket".into());
                out.push(rec);
            }
            continue;
        }
        if !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        rec.owner_uid = Some(meta.uid());
        rec.mode = Some(format!("{:04o}", meta.mode() & 0o7777));
        let (outcome, ans) = agents::query(&hp, hint, deadline);
        rec.outcome = outcome;
        rec.protocol = ans.protocol.or(hint);
        rec.identities = ans.identities;
        rec.key_types = ans.key_types;
        rec.detail = ans.detail;
        // A mounted socket that turned out to be something else (an engine,
        // a display) belongs to other checks.
        if rec.origin == "host-mount" && outcome != AgentOutcome::Answered {
            continue;
        }
        out.push(rec);
    }
}

/// The regular file `path` (in-root) resolves to, with its metadata, when
/// it stays inside `scope` (a canonical host path) and its inode was not
/// seen before: links are followed that far and no further, and nothing
/// but a regular file is opened.
pub fn scoped_file(
    host: &Host,
    path: &Path,
    scope: &Path,
    seen: &mut HashSet<(u64, u64)>,
) -> Option<(PathBuf, std::fs::Metadata)> {
    let real = std::fs::canonicalize(host.path(path)).ok()?;
    if !real.starts_with(scope) {
        return None;
    }
    let meta = std::fs::metadata(&real).ok()?;
    (meta.is_file() && seen.insert((meta.dev(), meta.ino()))).then_some((real, meta))
}

fn collect_tokens(
    host: &Host,
    idx: &MountIndex,
    vars: &[(String, String)],
    search: &mut Search,
    mut from_files: Vec<Token>,
) -> Vec<Token> {
    let cat = credentials();
    let mut out = Vec::new();
    let mut inodes = HashSet::new();
    let mut read = |path: &Path, kind: &str, jwt_only: bool, out: &mut Vec<Token>| {
        // Projected service-account tokens are symlinks (token -> ..data/token):
        // follow them, but only inside the token's own directory.
        let scope = host.path(path.parent().unwrap_or(Path::new("/")));
        let Ok(scope) = std::fs::canonicalize(&scope) else {
            return;
        };
        let Some((real, _)) = scoped_file(host, path, &scope, &mut inodes) else {
            return;
        };
        let Ok(bytes) = files::read_head(&real, MAX_TOKEN_FILE) else {
            return;
        };
        let text = String::from_utf8_lossy(&bytes);
        if let Some(mut t) = tokens::from_file_text(&text, &path.to_string_lossy(), kind, jwt_only)
        {
            t.mount = idx.lookup(path).map(|(m, _)| m);
            out.push(t);
        }
    };
    let mut listings = HashMap::new();
    for t in &cat.token {
        for p in search.expand(Path::new("/"), &t.path, &mut listings) {
            read(&p, &t.kind, t.jwt_only, &mut out);
        }
    }
    for tv in &cat.token_var {
        if let Some(v) = getenv(vars, &tv.var).filter(|v| v.starts_with('/')) {
            read(Path::new(v), &tv.kind, false, &mut out);
        }
    }
    for (k, v) in vars {
        if let Some(t) = tokens::decode_jwt(v, &format!("env:{k}"), "jwt-in-environment") {
            out.push(t);
        } else if let Some(t) = tokens::claude_oauth_in_env(k, v) {
            out.push(t);
        }
    }
    out.append(&mut from_files);
    out
}

fn collect_helpers(
    host: &Host,
    vars: &[(String, String)],
    homes: &[Root],
    workspace: Option<&Path>,
    search: &Search,
    from_files: Vec<Helper>,
) -> Vec<Helper> {
    let cat = credentials();
    let mut configs: Vec<PathBuf> = Vec::new();
    for g in &cat.git.configs {
        match g.strip_prefix("~/") {
            Some(rel) => configs.extend(homes.iter().map(|h| h.path.join(rel))),
            None => configs.push(PathBuf::from(g)),
        }
    }
    if let Some(ws) = workspace {
        configs.push(ws.join(".git/config"));
    }
    for v in ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"] {
        if let Some(p) = getenv(vars, v).filter(|p| p.starts_with('/')) {
            configs.push(PathBuf::from(p));
        }
    }
    let root = std::fs::canonicalize(host.root()).unwrap_or_else(|_| host.root().to_path_buf());
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for c in configs {
        if !seen.insert(c.clone()) {
            continue;
        }
        // A dotfile manager's symlink is fine as long as it stays in the root.
        let Ok(real) = std::fs::canonicalize(host.path(&c)) else {
            continue;
        };
        if !real.starts_with(&root) {
            continue;
        }
        let Ok(bytes) = files::read_head(&real, 64 * 1024) else {
            continue;
        };
        out.extend(helpers::from_git_config(
            &c.to_string_lossy(),
            &String::from_utf8_lossy(&bytes),
        ));
    }
    out.extend(helpers::from_git_env(vars));
    out.extend(helpers::from_env(vars, &cat.helper_var, |p| {
        std::fs::symlink_metadata(host.path(p)).is_ok()
    }));
    // A socket a variable already names is reported once, by the variable.
    let named: HashSet<PathBuf> = cat
        .helper_var
        .iter()
        .filter_map(|r| getenv(vars, &r.var))
        .map(PathBuf::from)
        .collect();
    let mut listings = HashMap::new();
    for hp in &cat.helper_path {
        for p in search.expand(Path::new("/"), &hp.path, &mut listings) {
            if named.contains(&p) {
                continue;
            }
            out.push(Helper {
                subject: p.to_string_lossy().into_owned(),
                source: p.to_string_lossy().into_owned(),
                kind: hp.kind.clone(),
                forwarded: true,
                program: None,
                scope: None,
                inline_secret: false,
                exists: Some(true),
            });
        }
    }
    out.extend(from_files);
    let mut subjects = HashSet::new();
    out.retain(|h| subjects.insert(h.subject.clone()));
    out
}

fn mount_phrase(mount: &Option<String>, class: Option<MountClass>) -> String {
    match (mount, class) {
        (Some(m), Some(MountClass::HostBind)) => format!("on the host mount {m}"),
        (Some(m), Some(MountClass::HostRoot)) => format!("on the host root mounted at {m}"),
        (Some(m), Some(MountClass::Workspace)) => format!("in the workspace mount {m}"),
        (Some(m), Some(MountClass::Volume)) => format!("on the volume {m}"),
        (_, Some(MountClass::RootFs)) => "in the image's root filesystem".into(),
        (Some(m), Some(MountClass::Tmpfs)) => format!("on the tmpfs {m}"),
        (Some(m), Some(c)) => format!(
            "on {m} ({})",
            serde_json::to_value(c)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        ),
        _ => "on an unknown mount".into(),
    }
}

fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn with_all(mut f: Finding, v: Value) -> Finding {
    if let Value::Object(m) = v {
        for (k, x) in m {
            if !x.is_null() {
                f = f.with(&k, x);
            }
        }
    }
    f
}

/// The finding at `sev` when one is given, else at its code's severity.
fn graded(f: Finding, sev: Option<Severity>) -> Finding {
    match sev {
        Some(s) => f.severity(s),
        None => f,
    }
}

fn epoch(now: SystemTime) -> i64 {
    now.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Up to the year 9999: a claim beyond it is not a time (and would
/// overflow SystemTime).
fn rfc3339_secs(t: i64) -> Option<String> {
    (0..=253_402_300_799)
        .contains(&t)
        .then(|| crate::host::rfc3339(UNIX_EPOCH + Duration::from_secs(t as u64)))
}

/// Findings from the facts: pure, so the policy's TTL and the clock are
/// all it depends on beside them. In this order: variables, processes,
/// package trees, files, agents, helpers, tokens, histories, MCP servers,
/// and what the budgets cut short.
pub fn evaluate(f: &SecretFacts, policy: &Policy, now: SystemTime) -> Vec<Finding> {
    let mut out = env_findings(f);
    out.extend(process_findings(f));
    out.extend(cmdline_findings(f));
    // Keys in a package tree are its packages' fixtures: one finding per tree.
    out.extend(packages::evaluate(&f.search.package_trees));
    out.extend(file_findings(f, now));
    out.extend(agent_findings(f));
    out.extend(helper_findings(f));
    out.extend(token_findings(f, policy, now));
    out.extend(history_findings(f));
    out.extend(mcp::evaluate(&f.mcp, policy));
    out.extend(incomplete_findings(f));
    out
}

/// secret.env: this process's secret-looking variables, by name.
fn env_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &f.env {
        out.push(with_all(
            Finding::new(
                Code::SecretEnv,
                &e.name,
                format!(
                    "the variable {} looks like a secret (kind {}, {}){}; its value is not shown",
                    e.name,
                    e.kind,
                    e.rule,
                    e.note
                        .as_ref()
                        .map(|n| format!(": {n}"))
                        .unwrap_or_default()
                ),
            ),
            json(e),
        ));
    }
    out
}

/// secret.process-env: other processes whose environment holds secrets.
fn process_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &f.processes.hits {
        let names: Vec<&str> = p.variables.iter().map(|v| v.name.as_str()).collect();
        out.push(
            Finding::new(
                Code::SecretProcessEnv,
                format!("pid {}", p.pid),
                format!(
                    "process {} ({}, uid {}) has a readable environment with {} secret-looking variable(s): {}",
                    p.pid,
                    p.comm,
                    p.uid.map_or("?".into(), |u| u.to_string()),
                    names.len(),
                    names.join(", ")
                ),
            )
            .with("pid", p.pid)
            .with("comm", p.comm.clone())
            .with("uid", json(&p.uid))
            .with("variables", json(&p.variables)),
        );
    }
    out
}

/// secret.process-cmdline: other processes' command lines with secrets.
fn cmdline_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &f.processes.cmdline_hits {
        let args: Vec<String> = p
            .arguments
            .iter()
            .map(|a| match &a.option {
                Some(o) => format!("argument {} ({o}: {}, {})", a.index, a.kind, a.rule),
                None => format!("argument {} ({}, {})", a.index, a.kind, a.rule),
            })
            .collect();
        out.push(
            Finding::new(
                Code::SecretProcessCmdline,
                format!("pid {}", p.pid),
                format!(
                    "process {} ({}, uid {}) has {} secret-looking command-line argument(s): {}; every process of this PID namespace can read /proc/{}/cmdline; the values are not shown",
                    p.pid,
                    p.comm,
                    p.uid.map_or("?".into(), |u| u.to_string()),
                    args.len(),
                    args.join("; "),
                    p.pid
                ),
            )
            .with("pid", p.pid)
            .with("comm", p.comm.clone())
            .with("uid", json(&p.uid))
            .with("arguments", json(&p.arguments)),
        );
    }
    out
}

/// secret.file: credential files outside package trees, with what they
/// hold, who may read them, the mount they are on and a token's expiry.
fn file_findings(f: &SecretFacts, now: SystemTime) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in f.files.iter().filter(|c| c.package_tree.is_none()) {
        let mut what = c.kind.clone();
        if let Some(fmt) = &c.format {
            what = format!(
                "{what} ({fmt}{})",
                match c.encrypted {
                    Some(true) => ", passphrase-protected",
                    Some(false) => ", no passphrase",
                    None => "",
                }
            );
        }
        if !c.entries.is_empty() {
            what = format!("{what} for {}", c.entries.join(", "));
        }
        let access = if c.readable {
            "readable by this user".to_string()
        } else {
            "present but not readable by this user".to_string()
        };
        let sev = if !c.readable {
            Some(Severity::Low)
        } else if c.encrypted == Some(true) {
            Some(Severity::Medium)
        } else {
            None
        };
        if let Some(a) = &c.agent {
            what = format!("{what} of {a}");
        }
        let now_s = epoch(now);
        let expiry = match c.expires_at {
            Some(e) if e <= now_s => format!(
                ", its token expired {} ago ({})",
                tokens::human(now_s.saturating_sub(e)),
                rfc3339_secs(e).unwrap_or_default()
            ),
            Some(e) => format!(
                ", its token expires in {} ({})",
                tokens::human(e.saturating_sub(now_s)),
                rfc3339_secs(e).unwrap_or_default()
            ),
            None => String::new(),
        };
        let refresh = if c.refresh_token == Some(true) {
            ", with a refresh token that renews it"
        } else {
            ""
        };
        let mut fnd = with_all(
            Finding::new(
                Code::SecretFile,
                &c.path,
                format!(
                    "{}: {what}, owner {} mode {}, {access}, {}{expiry}{refresh}",
                    c.path,
                    c.owner
                        .clone()
                        .unwrap_or_else(|| format!("uid {}", c.owner_uid)),
                    c.mode,
                    mount_phrase(&c.mount, c.mount_class)
                ),
            ),
            json(c),
        );
        if let Some(e) = c.expires_at.and_then(rfc3339_secs) {
            fnd = fnd.with("expires", e);
        }
        out.push(graded(fnd, sev));
    }
    out
}

/// secret.agent-socket: SSH and GnuPG agents, by what they answered.
fn agent_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for a in &f.agents {
        if a.outcome == AgentOutcome::NoAnswer {
            // A socket that takes the connection and stays silent may still
            // be an agent with keys: could not check, never a pass.
            out.push(
                with_all(
                    Finding::new(
                        Code::SecretAgentSocket,
                        &a.path,
                        format!(
                            "the agent socket {} ({}) accepted a connection but gave no agent answer in time: whether it offers keys is unknown",
                            a.path, a.origin
                        ),
                    ),
                    json(a),
                )
                .severity(Severity::Medium)
                .unknown(),
            );
            continue;
        }
        if a.outcome != AgentOutcome::Answered && a.outcome != AgentOutcome::Denied {
            continue;
        }
        let proto = match a.protocol {
            Some(Protocol::Gpg) => "GnuPG",
            _ => "SSH",
        };
        let (sev, msg) = match (a.outcome, a.identities) {
            (AgentOutcome::Denied, _) => (
                Some(Severity::Low),
                format!("the {proto} agent socket {} ({}) is present, but this user may not connect to it", a.path, a.origin),
            ),
            (_, Some(0)) => (
                Some(Severity::Medium),
                format!("the {proto} agent at {} ({}) answered and holds no key now; any key added later is usable from here", a.path, a.origin),
            ),
            (_, Some(n)) => (
                None,
                format!(
                    "the {proto} agent at {} ({}) offers {n} {}{}: any process here can authenticate or sign with {}",
                    a.path,
                    a.origin,
                    if n == 1 { "identity" } else { "identities" },
                    if a.key_types.is_empty() { String::new() } else { format!(" ({})", a.key_types.join(", ")) },
                    if n == 1 { "it" } else { "them" }
                ),
            ),
            (_, None) => (
                Some(Severity::High),
                format!("the {proto} agent at {} ({}) answered but did not list its keys", a.path, a.origin),
            ),
        };
        let fnd = with_all(Finding::new(Code::SecretAgentSocket, &a.path, msg), json(a));
        out.push(graded(fnd, sev));
    }
    out
}

/// secret.credential-helper: credential helpers and relays to the IDE or host.
fn helper_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for h in &f.helpers {
        let sev = if (h.forwarded && h.exists != Some(false)) || h.inline_secret {
            None
        } else if h.forwarded || matches!(h.kind.as_str(), "store" | "inline-shell" | "other") {
            Some(Severity::Medium)
        } else {
            Some(Severity::Low)
        };
        let program = h
            .program
            .as_deref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        // "other" is the classifier's word for a helper it does not know.
        let kind = if h.kind == "other" {
            "unrecognised"
        } else {
            h.kind.as_str()
        };
        let a = crate::util::text::article(kind);
        let mut msg = if h.source.starts_with("env:") {
            format!(
                "{} names {a} {kind} credential relay{program}",
                &h.source[4..]
            )
        } else if h.subject == h.source {
            format!("{} is {a} {kind} left for the workspace", h.source)
        } else {
            format!(
                "{} configures {a} {kind} credential helper{program}",
                h.source
            )
        };
        if let Some(s) = &h.scope {
            msg.push_str(&format!(" for {s}"));
        }
        if h.forwarded {
            msg.push_str(if h.exists == Some(false) {
                "; it relays to the IDE or host, but what it names is not here"
            } else {
                "; it relays credential requests to the IDE or host"
            });
        }
        if h.inline_secret {
            msg.push_str("; its command line itself holds a secret-looking value");
        }
        let fnd = with_all(
            Finding::new(Code::SecretCredentialHelper, &h.subject, msg),
            json(h),
        );
        out.push(graded(fnd, sev));
    }
    out
}

/// secret.token-long-lived and secret.token-expired: token lifetimes
/// against the policy's max_token_ttl (or the default).
fn token_findings(f: &SecretFacts, policy: &Policy, now: SystemTime) -> Vec<Finding> {
    let mut out = Vec::new();
    let now_s = epoch(now);
    let (max, max_source) = match policy.max_token_ttl {
        Some(d) => (d, "policy"),
        None => (DEFAULT_MAX_TOKEN_TTL, "default"),
    };
    let max_s = max.as_secs() as i64;
    for t in &f.tokens {
        let scope = [
            t.iss.as_ref().map(|s| format!("iss {s}")),
            t.sub.as_ref().map(|s| format!("sub {s}")),
            (!t.aud.is_empty()).then(|| format!("aud {}", t.aud.join(","))),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let scope = if scope.is_empty() {
            String::new()
        } else {
            format!(" ({scope})")
        };
        let note = t
            .note
            .as_ref()
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        let base = |f: Finding| {
            let mut f = with_all(f, json(t))
                .with("max_token_ttl_s", max_s)
                .with("max_token_ttl_source", max_source);
            if let (Some(e), Some(i)) = (t.exp, t.iat) {
                f = f.with("lifetime_s", e.saturating_sub(i));
            }
            if let Some(e) = t.exp.and_then(rfc3339_secs) {
                f = f.with("expires", e);
            }
            f
        };
        match t.exp {
            None => out.push(
                base(Finding::new(
                    Code::SecretTokenLongLived,
                    &t.source,
                    format!(
                        "{}: {} {} token{scope} with no expiry claim{}: it is valid until revoked{}",
                        t.source,
                        crate::util::text::article(&t.kind),
                        t.kind,
                        if t.format == "opaque" { " (not a JWT)" } else { "" },
                        note
                    ),
                ))
                .with("no_expiry", true),
            ),
            Some(e) if e <= now_s => out.push(
                base(Finding::new(
                    Code::SecretTokenExpired,
                    &t.source,
                    format!(
                        "{}: {} {} token{scope} that expired {} ago{}",
                        t.source,
                        crate::util::text::article(&t.kind),
                        t.kind,
                        tokens::human(now_s.saturating_sub(e)),
                        note
                    ),
                ))
                .with("expired_s_ago", now_s.saturating_sub(e)),
            ),
            Some(e) if e.saturating_sub(now_s) > max_s => out.push(
                base(Finding::new(
                    Code::SecretTokenLongLived,
                    &t.source,
                    format!(
                        "{}: {} {} token{scope} valid for another {}, longer than max_token_ttl {} ({}){}",
                        t.source,
                        crate::util::text::article(&t.kind),
                        t.kind,
                        tokens::human(e.saturating_sub(now_s)),
                        tokens::human(max_s),
                        max_source,
                        note
                    ),
                ))
                .with("ttl_s", e.saturating_sub(now_s))
                .with("ttl", tokens::human(e.saturating_sub(now_s))),
            ),
            Some(_) => {}
        }
    }
    out
}

/// artifact.shell-history: histories with secret-looking lines, or that
/// survive teardown.
fn history_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for h in &f.histories {
        let persistent = h.persistent == Some(true);
        let sev = match (h.secret_lines > 0, persistent) {
            (true, true) => Some(Severity::High),
            (true, false) => None,
            (false, true) if h.lines > 0 => Some(Severity::Low),
            _ => continue,
        };
        let mut msg = format!(
            "{}: {} {} history of {} line(s)",
            h.path,
            crate::util::text::article(&h.shell),
            h.shell,
            h.lines
        );
        if h.secret_lines > 0 {
            msg.push_str(&format!(
                ", {} of them secret-looking ({})",
                h.secret_lines,
                h.kinds.join(", ")
            ));
        }
        msg.push_str(&format!(
            ", {}{}",
            mount_phrase(&h.mount, h.mount_class),
            if persistent {
                ", which survives teardown"
            } else {
                ""
            }
        ));
        let fnd = with_all(
            Finding::new(Code::ArtifactShellHistory, &h.path, msg),
            json(h),
        );
        out.push(graded(fnd, sev));
    }
    out
}

/// probe.incomplete for each part of the search a budget cut short.
fn incomplete_findings(f: &SecretFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let incomplete = |subject: String, msg: String| {
        Finding::new(Code::ProbeIncomplete, subject, msg)
            .unknown()
            .with("probe", "secrets")
    };
    for r in &f.search.roots {
        if let Some(why) = &r.truncated {
            out.push(
                incomplete(
                    format!("secrets:walk:{}", r.path),
                    format!(
                        "the credential search of {} stopped early ({why}) after {} entries; deeper files were not examined",
                        r.path, r.entries
                    ),
                )
                .with("root", r.path.clone())
                .with("entries", r.entries)
                .with("reason", why.clone()),
            );
        }
    }
    if f.processes.truncated {
        out.push(incomplete(
            "secrets:processes".into(),
            format!(
                "only {} processes' environments were examined before the budget ran out",
                f.processes.scanned
            ),
        ));
    }
    if f.checks_truncated {
        out.push(incomplete(
            "secrets:files".into(),
            format!(
                "only {} candidate credential files were checked before the budget ran out",
                f.search.files_checked
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parsers of hostile text never panic: a panic message would quote
    /// the text, and the text is a credential file.
    #[test]
    fn parsers_survive_hostile_bytes() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let pieces: &[&[u8]] = &[
            b"-----BEGIN ",
            b"OPENSSH PRIVATE KEY-----\n",
            b"PRIVATE KEY-----",
            "é€😀".as_bytes(),
            b"\xff\xfe",
            b"://u:p@h/",
            b"[s]\n",
            b"=",
            b"\n",
            b"token: eyJ",
            b".",
            b"_authToken=",
            b"{\"auths\":{\"a\":{\"auth\":\"x\"}}}",
            b"machine ",
            b"b3BlbnNzaC1rZXktdjEA",
            b"PuTTY-User-Key-File-2\nEncryption: ",
            b"credential",
            b"helper = !",
            b"{\"claudeAiOauth\":{\"accessToken\":\"sk-ant-oat01-",
            b"\"expiresAt\":1e300,",
            b"{\"mcpServers\":{\"a\":{\"command\":[",
            b"\"args\":[\"--token\",",
            b"\"url\":\"https://u:p@h/?key=",
            b"// c\n/*",
            b"apiKey: ",
            b"- ",
            b",]}",
        ];
        let cat = rules::credentials();
        for _ in 0..3000 {
            let mut buf = Vec::new();
            for _ in 0..(next() % 12) {
                buf.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let text = String::from_utf8_lossy(&buf);
            for r in &cat.file {
                let _ = files::confirm(r, &buf, buf.len() as u64, "/p");
            }
            let _ = files::private_key(&buf);
            let _ = tokens::decode_jwt(&text, "s", "k");
            let _ = tokens::from_kube_config(&text, "/k");
            let _ = agents::parse_identities(&buf);
            let _ = helpers::git_config_helpers(&text);
            let _ = helpers::classify(&text);
            let _ = crate::facts::users::Passwd::parse(&text);
            let _ = rules::env_secrets().line_hit(&text);
            let _ = rules::env_secrets().classify("X_TOKEN", &text);
            let _ = structured::scan_keys(&text, &["apiKey".to_string()]);
            let _ = structured::parse_rfc3339(&text);
            if let Some(Value::Object(m)) = crate::util::jsonc::parse_json(&text) {
                let _ = mcp::test_server(&m);
            }
        }
    }
}
