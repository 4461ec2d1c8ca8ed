//! secret.file and the search behind it (and behind the history, token
//! and agent checks): every home, the workspace and every host mount. The
//! standard places under each home are looked at directly, so a large home
//! never hides ~/.aws/credentials; then a breadth-first walk with budgets
//! on entries, depth and time (src/util/walk.rs), pruning the catalog's
//! prune list (src/catalog.rs PRUNE).
//!
//! The walk never follows a symlink into a directory; a symlinked file is
//! checked only when it resolves inside the root being searched. Nothing
//! that is not a regular file is opened (FIFOs, sockets, devices are
//! judged by their type from readdir/lstat), and a file is opened with
//! O_NOFOLLOW|O_NONBLOCK (and O_NOATIME where allowed) and read only as far
//! as its rule needs.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::{File, FileType, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use nix::fcntl::OFlag;
use nix::unistd::AccessFlags;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::helpers::{self, Helper};
use super::history::{self, History};
use super::packages::{self, PackageTree, TreeMatcher};
use super::rules::{credentials, env_secrets, url_userinfo, Check, Entries, FileRule, Protocol};
use super::structured;
use super::tokens::{self, Token};
use super::MountIndex;
use crate::catalog::{self, Walk};
use crate::facts::users::Users;
use crate::host::Host;
use crate::util::glob::{comps, matches_component, PathEnds};
use crate::util::walk::{self, resolve_in_scope, Dir, Order, Step, Stop, Visit, Walker};

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    pub entries: usize,
    pub depth: usize,
}

/// The workspace and host mounts. A credential can sit in any directory
/// that is not pruned, so the walk's real bound is its deadline: a million
/// entries take about a second here. The entry count stays as a backstop,
/// and memory is bounded by directories (MAX_DIRS, MAX_QUEUED), not by
/// entries, since nothing is kept per file that matches no rule.
pub const ROOT_BUDGET: Budget = Budget {
    entries: 4_000_000,
    depth: 12,
};
/// A home's standard places are looked at directly; the walk is for keys
/// and .env files elsewhere in it.
pub const HOME_BUDGET: Budget = Budget {
    entries: 1_000_000,
    depth: 8,
};
pub const TOTAL_ENTRIES: usize = 8_000_000;
/// Directories listed in one run: each costs a (dev, inode) pair in the
/// loop guard, so this bounds that set (a few MiB).
pub const MAX_DIRS: usize = 250_000;
/// Directories waiting in the breadth-first queue: a level of a tree this
/// wide is reported as truncated rather than held in memory.
pub const MAX_QUEUED: usize = 50_000;
/// Files opened to confirm a rule; each read is at most the rule's max_read.
pub const MAX_CHECKS: usize = 5_000;
/// Candidates kept for checking: more than MAX_CHECKS could ever open, so
/// a tree of a million .env files cannot grow the list without end; those
/// beyond it make the checks incomplete.
pub const MAX_CANDIDATES: usize = 4 * MAX_CHECKS;
/// Files of the agents' own directories (probes/agents.toml) kept for the
/// key-format check in one run, each read up to rules::AGENT_FILE_READ:
/// a directory of thousands of session files cannot crowd the other
/// credentials out. Those beyond it make the checks incomplete.
pub const MAX_AGENT_FILES: usize = 256;
/// Paths kept as examples in the facts (denied, special files).
const MAX_EXAMPLES: usize = 20;
const MAX_LISTING: usize = 2_000;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CredFile {
    pub path: String,
    pub kind: String,
    /// The probes/credentials.toml path that matched.
    pub rule: String,
    /// How the file was found: home:/home/dev, workspace, host-mount:/data,
    /// env:KUBECONFIG ...
    pub origin: String,
    pub owner_uid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub mode: String,
    pub size: u64,
    /// access(2) R_OK for this process.
    pub readable: bool,
    /// The contents confirmed the rule (None: not readable, named only).
    pub confirmed: Option<bool>,
    /// For a private key: openssh, pem-rsa, pkcs8, putty, pgp...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// For a private key: whether it is protected by a passphrase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// Names inside it (profiles, registry hosts, variable names), never values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount_class: Option<crate::facts::mounts::MountClass>,
    pub persistent: Option<bool>,
    /// The package tree it sits in (probes/package-trees.toml): package
    /// data, reported once per tree as secret.package-data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_tree: Option<String>,
    /// The coding agent or tool whose file it is (the rule's `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// When the token in it expires (seconds since the epoch), where the
    /// file states it or its token is a JWT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Whether it also holds a refresh token, which renews the session past
    /// that expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<bool>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct RootStat {
    pub path: String,
    pub origin: String,
    pub entries: usize,
    pub dirs: usize,
    pub depth_reached: usize,
    pub elapsed_us: u128,
    /// Why the walk of this root stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchFacts {
    pub homes: Vec<String>,
    pub roots: Vec<RootStat>,
    pub entries: usize,
    pub dirs: usize,
    /// Directories not entered: [walk] prune, pseudo filesystems.
    pub pruned: usize,
    /// Directories below the depth budget.
    pub depth_limited: usize,
    /// Directories this user may not list: not reachable from here either.
    pub denied: usize,
    pub denied_examples: Vec<String>,
    /// FIFOs, sockets and devices with a credential's name: never opened.
    pub special_skipped: usize,
    pub special_examples: Vec<String>,
    pub symlinks_out_of_scope: usize,
    pub files_checked: usize,
    /// Readable files whose contents did not confirm their rule.
    pub unconfirmed: usize,
    pub bytes_read: u64,
    /// Candidates beyond MAX_CANDIDATES, never checked.
    pub candidates_dropped: usize,
    pub walk_us: u128,
    pub entries_per_s: u64,
    pub budget: BudgetFacts,
    /// Package trees entered (probes/package-trees.toml), with what they hold.
    pub package_trees: Vec<PackageTree>,
    /// Package trees beyond packages::MAX_TREES: walked as package data, not listed.
    pub package_trees_dropped: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetFacts {
    pub root_entries: usize,
    pub root_depth: usize,
    pub home_entries: usize,
    pub home_depth: usize,
    pub total_entries: usize,
    pub max_dirs: usize,
    pub max_queued: usize,
    pub max_checks: usize,
    pub max_candidates: usize,
    /// Files of the agents' own directories checked for key formats, and
    /// the bytes read of each.
    pub max_agent_files: usize,
    pub agent_file_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct Root {
    pub path: PathBuf,
    pub origin: String,
    /// The same directory as the host sees it (a bind's source path), so a
    /// rule like .aws/credentials matches -v ~/.aws:/creds too.
    pub alias: Option<PathBuf>,
    pub budget: Budget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    File(usize),
    History(usize),
}

#[derive(Debug, Clone)]
struct Candidate {
    path: PathBuf,
    what: What,
    origin: String,
    scope: PathBuf,
    /// Index into facts.package_trees.
    tree: Option<usize>,
}

fn parent_name(p: &Path) -> String {
    p.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub struct Search<'a> {
    host: &'a Host,
    mounts: &'a MountIndex,
    users: &'a Users,
    walk_deadline: Instant,
    deadline: Instant,
    cand_paths: HashSet<PathBuf>,
    cands: Vec<Candidate>,
    /// Candidates of the agent-directory rules (rules::agent_rules()).
    agent_cands: usize,
    /// Sockets with an agent's name found by the walk, with where.
    pub sockets: Vec<(PathBuf, String, Option<Protocol>)>,
    pub facts: SearchFacts,
    total: usize,
    /// The most components any file or history pattern has: below that
    /// depth a path and its host alias end the same way, so the alias
    /// need not be matched again.
    max_comps: usize,
    files: PathEnds,
    histories: PathEnds,
    agents: PathEnds,
    trees: TreeMatcher,
}

const NO_EXCLUDES: &[String] = &[];

impl<'a> Search<'a> {
    pub fn new(
        host: &'a Host,
        mounts: &'a MountIndex,
        users: &'a Users,
        walk_deadline: Instant,
        deadline: Instant,
    ) -> Search<'a> {
        let cat = credentials();
        Search {
            host,
            mounts,
            users,
            walk_deadline,
            deadline,
            cand_paths: HashSet::new(),
            cands: Vec::new(),
            agent_cands: 0,
            sockets: Vec::new(),
            facts: SearchFacts {
                budget: BudgetFacts {
                    root_entries: ROOT_BUDGET.entries,
                    root_depth: ROOT_BUDGET.depth,
                    home_entries: HOME_BUDGET.entries,
                    home_depth: HOME_BUDGET.depth,
                    total_entries: TOTAL_ENTRIES,
                    max_dirs: MAX_DIRS,
                    max_queued: MAX_QUEUED,
                    max_checks: MAX_CHECKS,
                    max_candidates: MAX_CANDIDATES,
                    max_agent_files: MAX_AGENT_FILES,
                    agent_file_bytes: super::rules::AGENT_FILE_READ,
                },
                ..SearchFacts::default()
            },
            total: 0,
            max_comps: cat
                .file
                .iter()
                .map(|f| f.path.as_str())
                .chain(cat.history.iter().map(|h| h.path.as_str()))
                .map(|p| p.split('/').count())
                .max()
                .unwrap_or(1),
            files: PathEnds::new(
                cat.file
                    .iter()
                    .map(|f| (f.path.as_str(), f.exclude.as_slice())),
            ),
            histories: PathEnds::new(cat.history.iter().map(|h| (h.path.as_str(), NO_EXCLUDES))),
            agents: PathEnds::new(
                cat.walk
                    .agent_sockets
                    .iter()
                    .map(|p| (p.as_str(), NO_EXCLUDES)),
            ),
            trees: TreeMatcher::new(),
        }
    }

    /// The package tree `dir` opens, if its layout is one: a new entry in
    /// the facts (or a count past MAX_TREES, where it still counts as one).
    fn enter_tree(
        &mut self,
        dir: &Path,
        name: &str,
        origin: &str,
        comps: &mut dyn FnMut() -> Vec<String>,
    ) -> Option<usize> {
        let rule = self.trees.tree_of(self.host, dir, name, comps)?;
        if self.facts.package_trees.len() >= packages::MAX_TREES {
            self.facts.package_trees_dropped += 1;
            return Some(usize::MAX);
        }
        let mount = self
            .mounts
            .lookup(dir)
            .map(|(m, c)| (m, c, MountIndex::persistent(c)));
        self.facts
            .package_trees
            .push(packages::new_tree(rule, dir, origin, mount));
        Some(self.facts.package_trees.len() - 1)
    }

    fn classify(&self, path: &Path, alias: Option<&Path>) -> Option<What> {
        let name = path.file_name()?.to_string_lossy().into_owned();
        let parent = parent_name(path);
        let mut c = || comps(path);
        if let Some(i) = self.files.first(&name, &parent, &mut c) {
            return Some(What::File(i));
        }
        if let Some(i) = self.histories.first(&name, &parent, &mut c) {
            return Some(What::History(i));
        }
        let alias = alias?;
        let parent = parent_name(alias);
        let mut a = || comps(alias);
        if let Some(i) = self.files.first(&name, &parent, &mut a) {
            return Some(What::File(i));
        }
        self.histories
            .first(&name, &parent, &mut a)
            .map(What::History)
    }

    fn push(&mut self, path: PathBuf, what: What, origin: &str, scope: &Path) {
        self.push_in(path, what, origin, scope, None);
    }

    fn push_in(
        &mut self,
        path: PathBuf,
        what: What,
        origin: &str,
        scope: &Path,
        tree: Option<usize>,
    ) {
        let agent_file = matches!(what, What::File(i) if super::rules::agent_rules().contains(&i));
        if self.cands.len() >= MAX_CANDIDATES || (agent_file && self.agent_cands >= MAX_AGENT_FILES)
        {
            if !self.cand_paths.contains(&path) {
                self.facts.candidates_dropped += 1;
            }
            return;
        }
        if self.cand_paths.insert(path.clone()) {
            self.agent_cands += usize::from(agent_file);
            self.cands.push(Candidate {
                path,
                what,
                origin: origin.to_string(),
                scope: scope.to_path_buf(),
                tree,
            });
        }
    }

    /// A file found anywhere (a walk, a home's standard place, a bind of
    /// one file): kept when a rule matches its path or the host's.
    pub fn consider(&mut self, path: &Path, alias: Option<&Path>, origin: &str, scope: &Path) {
        if let Some(w) = self.classify(path, alias) {
            self.push(path.to_path_buf(), w, origin, scope);
        }
    }

    /// A file named by a variable: checked under the rule it stands for.
    pub fn add_pointer(&mut self, path: PathBuf, rule_path: &str, origin: &str) {
        let Some(i) = credentials().file.iter().position(|f| f.path == rule_path) else {
            return;
        };
        let scope = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.push(path, What::File(i), origin, &scope);
    }

    pub fn add_history(&mut self, path: PathBuf, origin: &str) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let i = self
            .histories
            .first(&name, &parent_name(&path), &mut || comps(&path))
            .unwrap_or(0);
        let scope = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.push(path, What::History(i), origin, &scope);
    }

    fn list(&self, dir: &Path) -> Vec<String> {
        std::fs::read_dir(self.host.path(dir))
            .map(|rd| {
                rd.flatten()
                    .take(MAX_LISTING)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Existing paths under `base` that match `pattern` (`*` within a
    /// component), listing each directory at most once.
    pub fn expand(
        &self,
        base: &Path,
        pattern: &str,
        listings: &mut HashMap<PathBuf, Vec<String>>,
    ) -> Vec<PathBuf> {
        let mut acc = vec![base.to_path_buf()];
        for comp in pattern.split('/').filter(|c| !c.is_empty()) {
            let mut next = Vec::new();
            for b in &acc {
                if comp.contains('*') {
                    let names = listings.entry(b.clone()).or_insert_with(|| self.list(b));
                    next.extend(
                        names
                            .iter()
                            .filter(|n| matches_component(comp, n))
                            .map(|n| b.join(n)),
                    );
                } else {
                    next.push(b.join(comp));
                }
            }
            next.truncate(MAX_LISTING);
            acc = next;
        }
        acc.into_iter()
            .filter(|p| std::fs::symlink_metadata(self.host.path(p)).is_ok())
            .collect()
    }

    /// The standard places under one home: every [[file]] and [[history]]
    /// path, and the home-relative agent sockets.
    pub fn probe_home(&mut self, home: &Root) {
        let cat = credentials();
        let mut listings = HashMap::new();
        let mut found = Vec::new();
        for p in cat
            .file
            .iter()
            .map(|f| f.path.as_str())
            .chain(cat.history.iter().map(|h| h.path.as_str()))
        {
            found.extend(self.expand(&home.path, p, &mut listings));
        }
        for p in found {
            let alias = home
                .alias
                .as_ref()
                .and_then(|a| p.strip_prefix(&home.path).ok().map(|rel| a.join(rel)));
            self.consider(&p, alias.as_deref(), &home.origin, &home.path);
        }
        for a in &cat.agent {
            if let Some(rel) = a.path.strip_prefix("~/") {
                for p in self.expand(&home.path, rel, &mut listings) {
                    self.sockets
                        .push((p, format!("catalog:{}", a.path), Some(a.protocol)));
                }
            }
        }
    }

    fn note(list: &mut Vec<String>, p: String) {
        if list.len() < MAX_EXAMPLES {
            list.push(p);
        }
    }

    /// The walker for this search's roots: breadth first, so a budget that
    /// runs out leaves the shallow places, where credentials sit,
    /// examined; one visited set and MAX_DIRS over all roots.
    pub fn walker(&self) -> Walker<'static> {
        Walker::new(
            Order::BreadthFirst,
            catalog::prune(Walk::Credentials),
            self.walk_deadline,
        )
        .max_dirs(MAX_DIRS)
    }

    /// Walks one root with `walker` (from `Search::walker`, the same for
    /// every root), and records how far it got in the facts.
    pub fn walk(&mut self, walker: &mut Walker, root: &Root) {
        let started = Instant::now();
        // A root can itself be a package tree (a mount of a cargo registry).
        let root_name = root
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let root_tree = self.enter_tree(&root.path, &root_name, &root.origin, &mut || {
            comps(&root.path)
        });
        let budget = walk::Budget {
            entries: root
                .budget
                .entries
                .min(TOTAL_ENTRIES.saturating_sub(self.total)),
            depth: root.budget.depth,
            queued: MAX_QUEUED,
        };
        let host = self.host;
        let w = walker.walk(
            host,
            &root.path,
            budget,
            root_tree,
            &mut RootWalk { s: self, root },
        );
        // The entry that overran an entry budget was read, and the search
        // has always counted it.
        let entries = w.entries + usize::from(w.stop == Some(Stop::Entries));
        let truncated = w.stop.map(|s| match s {
            Stop::Entries if w.entries >= root.budget.entries => {
                format!("entry budget of {} reached", root.budget.entries)
            }
            Stop::Entries => format!("the run's entry budget of {TOTAL_ENTRIES} reached"),
            Stop::Deadline => "time budget reached".into(),
            Stop::Dirs => format!("the run's budget of {MAX_DIRS} directories reached"),
            Stop::Queued { depth } => {
                format!("more than {MAX_QUEUED} directories waiting at depth {depth}")
            }
        });
        self.total += entries;
        self.facts.depth_limited += w.depth_limited;
        self.facts.entries += entries;
        self.facts.dirs += w.listed;
        self.facts.roots.push(RootStat {
            path: root.path.to_string_lossy().into_owned(),
            origin: root.origin.clone(),
            entries,
            dirs: w.listed,
            depth_reached: w.depth_reached,
            elapsed_us: started.elapsed().as_micros(),
            truncated,
        });
    }

    /// Opens and judges every candidate, within the deadline and MAX_CHECKS.
    pub fn check_all(&mut self, out: &mut Checked) {
        let cands = std::mem::take(&mut self.cands);
        out.truncated |= self.facts.candidates_dropped > 0;
        let mut inodes = HashSet::new();
        for c in cands {
            if self.facts.files_checked >= MAX_CHECKS || Instant::now() > self.deadline {
                out.truncated = true;
                break;
            }
            let hp = self.host.path(&c.path);
            let Ok(lmeta) = std::fs::symlink_metadata(&hp) else {
                continue;
            };
            let (real, meta) = if lmeta.file_type().is_symlink() {
                match resolve_in_scope(&hp, &self.host.path(&c.scope)) {
                    Some(x) => x,
                    None => {
                        self.facts.symlinks_out_of_scope += 1;
                        continue;
                    }
                }
            } else {
                (hp, lmeta)
            };
            if !meta.is_file() {
                self.facts.special_skipped += 1;
                Self::note(
                    &mut self.facts.special_examples,
                    c.path.to_string_lossy().into_owned(),
                );
                continue;
            }
            if !inodes.insert((meta.dev(), meta.ino())) {
                continue;
            }
            self.facts.files_checked += 1;
            match c.what {
                What::File(i) => self.check_file(&c, &credentials().file[i], &real, &meta, out),
                What::History(i) => self.check_history(&c, i, &real, &meta, out),
            }
        }
    }

    fn located(
        &self,
        path: &Path,
    ) -> (
        Option<String>,
        Option<crate::facts::mounts::MountClass>,
        Option<bool>,
    ) {
        match self.mounts.lookup(path) {
            Some((mp, class)) => (Some(mp), Some(class), Some(MountIndex::persistent(class))),
            None => (None, None, None),
        }
    }

    fn check_file(
        &mut self,
        c: &Candidate,
        rule: &FileRule,
        real: &Path,
        meta: &Metadata,
        out: &mut Checked,
    ) {
        let mut readable = readable(real);
        let mut confirmed = None;
        let mut details = Details::default();
        if readable {
            match read_head(real, rule.max_read()) {
                Ok(head) => {
                    self.facts.bytes_read += head.len() as u64;
                    let path = c.path.to_string_lossy();
                    details = confirm(rule, &head, meta.len(), &path);
                    // A token or helper in a package's own fixture is
                    // package data too: counted with its tree below.
                    if c.tree.is_none() {
                        out.tokens.append(&mut details.tokens);
                        out.helpers.append(&mut details.helpers);
                    }
                    confirmed = Some(details.ok);
                }
                Err(_) => readable = false,
            }
        }
        match confirmed {
            Some(false) => {
                self.facts.unconfirmed += 1;
                return;
            }
            None if !rule.name_only => return,
            _ => {}
        }
        let (mount, mount_class, persistent) = self.located(&c.path);
        let tree = c.tree.and_then(|i| self.facts.package_trees.get_mut(i));
        let package_tree = tree.as_ref().map(|t| t.path.clone());
        // Past MAX_TREES the tree is not listed, but its file is still package data.
        let package_tree =
            package_tree.or_else(|| c.tree.map(|_| "(unlisted package tree)".into()));
        let file = CredFile {
            path: c.path.to_string_lossy().into_owned(),
            kind: rule.kind.clone(),
            rule: rule.path.clone(),
            origin: c.origin.clone(),
            owner_uid: meta.uid(),
            owner: self.users.name_of(meta.uid()),
            mode: format!("{:04o}", meta.mode() & 0o7777),
            size: meta.len(),
            readable,
            confirmed,
            format: details.format,
            encrypted: details.encrypted,
            entries: details.entries,
            mount,
            mount_class,
            persistent,
            package_tree,
            agent: rule.agent.clone(),
            expires_at: details.expires_at,
            refresh_token: details.refresh,
        };
        if let Some(t) = tree {
            packages::count(t, &file, details.tokens.len() + details.helpers.len());
        }
        out.files.push(file);
    }

    fn check_history(
        &mut self,
        c: &Candidate,
        i: usize,
        real: &Path,
        meta: &Metadata,
        out: &mut Checked,
    ) {
        let (mount, mount_class, persistent) = self.located(&c.path);
        let mut h = History {
            path: c.path.to_string_lossy().into_owned(),
            shell: credentials().history[i].shell.clone(),
            size: meta.len(),
            owner_uid: meta.uid(),
            owner: self.users.name_of(meta.uid()),
            readable: false,
            mount,
            mount_class,
            persistent,
            retention: match persistent {
                Some(true) => "persistent".into(),
                Some(false) => "ephemeral".into(),
                None => "unknown".into(),
            },
            sensitivity: "internal".into(),
            ..History::default()
        };
        if readable(real) {
            if let Ok(f) = open_regular(real) {
                let n = history::count(f, self.deadline);
                self.facts.bytes_read += n.bytes;
                h.readable = true;
                h.lines = n.lines;
                h.secret_lines = n.secret_lines;
                h.kinds = n.kinds;
                h.truncated = n.truncated;
                if h.secret_lines > 0 {
                    h.sensitivity = "secret".into();
                }
            }
        }
        out.histories.push(h);
    }
}

/// One root's walk, as the walker sees it: the search's matchers and
/// facts, and the root whose origin and host alias its files get.
struct RootWalk<'s, 'a> {
    s: &'s mut Search<'a>,
    root: &'s Root,
}

impl Visit for RootWalk<'_, '_> {
    /// The package tree a directory is in (an index into facts.package_trees).
    type Mark = Option<usize>;

    fn enter(&mut self, dir: &Dir<'_, Self::Mark>) -> bool {
        if self.s.mounts.is_pseudo(dir.path) {
            self.s.facts.pruned += 1;
            return false;
        }
        true
    }

    fn unlisted(&mut self, dir: &Dir<'_, Self::Mark>, err: &io::Error) {
        if err.kind() == io::ErrorKind::PermissionDenied {
            self.s.facts.denied += 1;
            Search::note(
                &mut self.s.facts.denied_examples,
                dir.path.to_string_lossy().into_owned(),
            );
        }
    }

    fn entry(&mut self, dir: &Dir<'_, Self::Mark>, name: &OsStr, ft: FileType) -> Step {
        if ft.is_dir() {
            return Step::Descend;
        }
        let name_s = name.to_string_lossy();
        if ft.is_file() || ft.is_symlink() {
            self.file(dir, name, &name_s);
        } else if ft.is_socket() && self.s.agents.first(&name_s, "", &mut Vec::new).is_some() {
            let hint = if name_s.starts_with("S.gpg-agent") && !name_s.ends_with(".ssh") {
                Some(Protocol::Gpg)
            } else {
                Some(Protocol::Ssh)
            };
            self.s.sockets.push((
                dir.path.join(name),
                format!("found under {}", self.root.path.display()),
                hint,
            ));
        } else {
            // A FIFO, socket or device where a credential could be
            // (id_rsa, .ssh/id_ed25519): its name is noted, it is never
            // opened.
            let s = &*self.s;
            let mut c = || dir.comps_with(&name_s);
            let named = s.files.first(&name_s, &dir.name, &mut c).is_some()
                || s.histories.first(&name_s, &dir.name, &mut c).is_some();
            if named {
                self.s.facts.special_skipped += 1;
                Search::note(
                    &mut self.s.facts.special_examples,
                    dir.path.join(name).to_string_lossy().into_owned(),
                );
            }
        }
        Step::Next
    }

    fn pruned(&mut self, dir: &Dir<'_, Self::Mark>, name: &OsStr) {
        self.s.facts.pruned += 1;
        if name == ".git" {
            // Pruned, but its config can hold a remote URL with a token.
            let cfg = dir.path.join(".git/config");
            let alias = self
                .root
                .alias
                .as_ref()
                .and_then(|a| cfg.strip_prefix(&self.root.path).ok().map(|r| a.join(r)));
            self.s
                .consider(&cfg, alias.as_deref(), &self.root.origin, &self.root.path);
        }
    }

    fn mark(&mut self, dir: &Dir<'_, Self::Mark>, name: &OsStr, path: &Path) -> Self::Mark {
        dir.mark.or_else(|| {
            let name_s = name.to_string_lossy();
            self.s
                .enter_tree(path, &name_s, &self.root.origin, &mut || {
                    dir.comps_with(&name_s)
                })
        })
    }
}

impl RootWalk<'_, '_> {
    /// A regular file or a symlink: a candidate when a rule matches its
    /// path, or (near the root) the same path as the host sees it.
    fn file(&mut self, dir: &Dir<'_, Option<usize>>, name: &OsStr, name_s: &str) {
        let s = &*self.s;
        let mut c = || dir.comps_with(name_s);
        let hit = s
            .files
            .first(name_s, &dir.name, &mut c)
            .map(What::File)
            .or_else(|| {
                s.histories
                    .first(name_s, &dir.name, &mut c)
                    .map(What::History)
            });
        // Deeper down, the alias ends with the same components as the
        // path, and the path did not match.
        let shallow = dir.depth + 1 < s.max_comps;
        let hit = hit.or_else(|| {
            let alias = self.root.alias.as_ref().filter(|_| shallow)?;
            let p = dir.path.join(name);
            let rel = p.strip_prefix(&self.root.path).ok()?;
            s.classify(&alias.join(rel), None)
        });
        if let Some(w) = hit {
            let (origin, scope) = (&self.root.origin, &self.root.path);
            self.s
                .push_in(dir.path.join(name), w, origin, scope, *dir.mark);
        }
    }
}

/// What checking the candidates produced beside the files themselves.
#[derive(Debug, Default)]
pub struct Checked {
    pub files: Vec<CredFile>,
    pub histories: Vec<History>,
    pub tokens: Vec<Token>,
    pub helpers: Vec<Helper>,
    pub truncated: bool,
}

fn readable(p: &Path) -> bool {
    nix::unistd::faccessat(
        nix::fcntl::AT_FDCWD,
        p,
        AccessFlags::R_OK,
        nix::fcntl::AtFlags::AT_EACCESS,
    )
    .is_ok()
}

/// Opens a regular file for reading without following a final symlink,
/// blocking on a FIFO, taking a controlling tty or (where the kernel lets
/// us) touching its access time.
pub fn open_regular(p: &Path) -> io::Result<File> {
    let base = (OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits();
    let f = match File::options()
        .read(true)
        .custom_flags(base | OFlag::O_NOATIME.bits())
        .open(p)
    {
        // O_NOATIME needs ownership or CAP_FOWNER.
        Err(e) if e.raw_os_error() == Some(nix::libc::EPERM) => {
            File::options().read(true).custom_flags(base).open(p)?
        }
        r => r?,
    };
    if !f.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(f)
}

pub fn read_head(p: &Path, max: u64) -> io::Result<Vec<u8>> {
    let f = open_regular(p)?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

#[derive(Debug, Default)]
pub struct Details {
    pub ok: bool,
    pub format: Option<String>,
    pub encrypted: Option<bool>,
    pub entries: Vec<String>,
    pub tokens: Vec<Token>,
    pub helpers: Vec<Helper>,
    pub expires_at: Option<i64>,
    pub refresh: Option<bool>,
}

const REFRESH_NOTE: &str = "a refresh token beside it renews the session past this expiry";

/// json-fields: the fields that hold a credential, listed by path; the
/// stated expiry or the JWT's becomes a token judged against max_token_ttl.
fn json_fields(rule: &FileRule, text: &str, path: &str, d: &mut Details) {
    let Some(j) = crate::util::jsonc::parse_json(text) else {
        // Larger than max_read or not JSON: the field names alone.
        for f in &rule.fields {
            let last = f.rsplit('.').next().unwrap_or(f);
            if last != "*" && quoted_field_with_value(text, last) {
                d.ok = true;
                add_entry(&mut d.entries, f);
            }
        }
        return;
    };
    for f in &rule.fields {
        for (p, v) in structured::at_path(&j, f) {
            if structured::holds_secret(v) {
                d.ok = true;
                add_entry(&mut d.entries, &p);
            }
        }
    }
    if !d.ok {
        return;
    }
    if let Some(r) = &rule.refresh {
        d.refresh = Some(
            structured::at_path(&j, r)
                .iter()
                .any(|(_, v)| structured::holds_secret(v)),
        );
    }
    let note = (d.refresh == Some(true)).then(|| REFRESH_NOTE.to_string());
    if let (Some(e), Some(unit)) = (&rule.expires, rule.expires_unit) {
        if let Some(exp) = structured::at_path(&j, e)
            .first()
            .and_then(|(_, v)| structured::expiry_secs(v, unit))
        {
            d.expires_at = Some(exp);
            d.tokens.push(Token {
                source: path.to_string(),
                kind: rule.kind.clone(),
                format: "stated-expiry".into(),
                exp: Some(exp),
                note: note.clone(),
                ..Token::default()
            });
        }
    }
    if let Some(jf) = &rule.jwt {
        for (p, v) in structured::at_path(&j, jf).into_iter().take(4) {
            let Some(s) = v.as_str() else { continue };
            if let Some(mut t) = tokens::decode_jwt(s, &format!("{path} {p}"), &rule.kind) {
                d.expires_at = d.expires_at.or(t.exp);
                t.note = note.clone();
                d.tokens.push(t);
            }
        }
    }
}

/// `"name": "something"` somewhere in a text too long to parse whole.
fn quoted_field_with_value(text: &str, name: &str) -> bool {
    let needle = format!("\"{name}\"");
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        rest = &rest[i + needle.len()..];
        let after = rest.trim_start();
        if let Some(v) = after.strip_prefix(':') {
            let v = v.trim_start();
            if let Some(body) = v.strip_prefix('"') {
                let end = body.find('"').unwrap_or(body.len());
                if !super::rules::placeholder(&body[..end]) {
                    return true;
                }
            }
        }
    }
    false
}

/// A name found inside a credential file (a profile, a host), fit for a
/// report: short, plain, and dropped if it looks like a secret itself.
fn entry_name(s: &str) -> Option<String> {
    let t: String = s
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._:@/-".contains(*c))
        .take(64)
        .collect();
    if t.is_empty() || env_secrets().value_rule(&t).is_some() {
        return None;
    }
    Some(t)
}

fn add_entry(v: &mut Vec<String>, s: &str) {
    if let Some(e) = entry_name(s) {
        if !v.contains(&e) && v.len() < 10 {
            v.push(e);
        }
    }
}

/// Finds a private key header in the first bytes, and whether the key is
/// passphrase-protected where the format says so in the clear.
pub fn private_key(head: &[u8]) -> Option<(String, Option<bool>)> {
    let text = String::from_utf8_lossy(head);
    if text.trim_start().starts_with("PuTTY-User-Key-File-") {
        let enc = text
            .lines()
            .find_map(|l| l.strip_prefix("Encryption:"))
            .map(|v| v.trim() != "none");
        return Some(("putty".into(), enc));
    }
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + 11..];
    let label = &rest[..rest.find("-----")?];
    if !label.ends_with("PRIVATE KEY") && label != "PGP PRIVATE KEY BLOCK" {
        return None;
    }
    let body = &rest[label.len() + 5..];
    Some(match label {
        "OPENSSH PRIVATE KEY" => ("openssh".into(), openssh_encrypted(body)),
        "ENCRYPTED PRIVATE KEY" => ("pkcs8".into(), Some(true)),
        "PRIVATE KEY" => ("pkcs8".into(), Some(false)),
        "PGP PRIVATE KEY BLOCK" => ("pgp".into(), None),
        "SSH2 ENCRYPTED PRIVATE KEY" => ("ssh.com".into(), Some(true)),
        l => (
            format!(
                "pem-{}",
                l.trim_end_matches(" PRIVATE KEY").to_ascii_lowercase()
            ),
            Some(body.contains("Proc-Type: 4,ENCRYPTED")),
        ),
    })
}

/// openssh-key-v1: the magic, then the cipher name ("none" when there is
/// no passphrase), all in the first hundred base64 characters.
fn openssh_encrypted(body: &str) -> Option<bool> {
    // ASCII only: a byte-indexed slice of anything else could panic, and a
    // panic message quotes the string it was slicing.
    let mut b64: Vec<u8> = body
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .take(96)
        .collect();
    if !b64.is_ascii() {
        return None;
    }
    b64.truncate(b64.len() - b64.len() % 4);
    let bytes = crate::util::codec::b64_decode_loose(std::str::from_utf8(&b64).ok()?)?;
    let rest = bytes.strip_prefix(b"openssh-key-v1\0")?;
    let n = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let cipher = rest.get(4..4 + n)?;
    Some(cipher != b"none")
}

/// Runs a rule's check over the first bytes of a file.
pub fn confirm(rule: &FileRule, head: &[u8], size: u64, path: &str) -> Details {
    let mut d = Details::default();
    let text = String::from_utf8_lossy(head);
    match rule.check {
        Check::PrivateKey => {
            if let Some((f, e)) = private_key(head) {
                d.ok = true;
                d.format = Some(f);
                d.encrypted = e;
            }
        }
        Check::Nonempty => d.ok = size > 0,
        Check::Contains => {
            let lower = text.to_ascii_lowercase();
            d.ok = rule
                .any
                .iter()
                .any(|a| lower.contains(&a.to_ascii_lowercase()));
        }
        Check::EnvFile => {
            for line in text.lines() {
                let l = line.trim().trim_start_matches("export ").trim();
                let Some((k, v)) = l.split_once('=') else {
                    continue;
                };
                let k = k.trim();
                if crate::probe::secrets::rules::is_identifier(k)
                    && env_secrets().classify(k, v.trim()).is_some()
                {
                    d.ok = true;
                    add_entry(&mut d.entries, k);
                }
            }
        }
        Check::Npmrc => {
            for line in text.lines() {
                let Some((k, v)) = line.split_once('=') else {
                    continue;
                };
                let k = k.trim();
                let v = v.trim().trim_matches('"');
                let secretish = ["_authToken", "_auth", "_password"]
                    .iter()
                    .any(|s| k.ends_with(s));
                if secretish && !v.is_empty() && !v.starts_with('$') {
                    d.ok = true;
                    let reg = k
                        .rsplit_once(":_")
                        .map(|(r, _)| r)
                        .unwrap_or("(default registry)");
                    add_entry(&mut d.entries, reg);
                }
            }
        }
        Check::DockerAuths => match serde_json::from_slice::<Value>(head) {
            Ok(j) => {
                if let Some(auths) = j.get("auths").and_then(Value::as_object) {
                    for (host, a) in auths {
                        let has = ["auth", "identitytoken", "registrytoken"].iter().any(|k| {
                            a.get(*k)
                                .and_then(Value::as_str)
                                .is_some_and(|s| !s.is_empty())
                        });
                        if has {
                            d.ok = true;
                            add_entry(&mut d.entries, &helpers::url_host(host));
                        }
                    }
                }
                d.helpers = helpers::from_docker_config(path, &j);
            }
            // Larger than max_read or not JSON: fall back to the key's name.
            Err(_) => d.ok = text.contains("\"auth\"") || text.contains("\"identitytoken\""),
        },
        Check::JsonFields => json_fields(rule, &text, path, &mut d),
        // Key names only: where the key format was found, never the key.
        Check::SecretKeys | Check::KeyFormats => {
            for k in structured::scan_keys(&text, &rule.keys).keys {
                d.ok = true;
                add_entry(&mut d.entries, &k);
            }
        }
        Check::UrlUserinfo | Check::GitConfig => {
            for line in text.lines() {
                if url_userinfo(line) {
                    d.ok = true;
                    if let Some(i) = line.find("://") {
                        let after = &line[i + 3..];
                        let auth = after.split(['/', '"', ' ', '?']).next().unwrap_or("");
                        add_entry(&mut d.entries, auth.rsplit('@').next().unwrap_or(""));
                    }
                }
            }
        }
    }
    if !d.ok {
        return d;
    }
    match rule.entries {
        Some(Entries::IniSections) => {
            for l in text.lines() {
                if let Some(s) = l.trim().strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                    add_entry(&mut d.entries, s.trim_start_matches("profile ").trim());
                }
            }
        }
        Some(Entries::NetrcMachines) => {
            let words: Vec<&str> = text.split_whitespace().collect();
            for w in words.windows(2) {
                if w[0] == "machine" {
                    add_entry(&mut d.entries, w[1]);
                }
            }
            if words.contains(&"default") {
                add_entry(&mut d.entries, "default");
            }
        }
        Some(Entries::YamlTopKeys) => {
            for l in text.lines() {
                if !l.starts_with([' ', '\t', '-', '#']) {
                    if let Some(k) = l.trim_end().strip_suffix(':') {
                        add_entry(&mut d.entries, k);
                    }
                }
            }
        }
        Some(Entries::KubeContext) => {
            for l in text.lines() {
                if let Some(v) = l.strip_prefix("current-context:") {
                    add_entry(&mut d.entries, v);
                }
            }
            d.tokens = tokens::from_kube_config(&text, path);
        }
        // Filled by the check itself.
        Some(Entries::NpmRegistries)
        | Some(Entries::UrlHosts)
        | Some(Entries::DockerAuths)
        | Some(Entries::EnvNames)
        | None => {}
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::glob::Glob;

    #[test]
    fn private_key_headers() {
        let rsa = b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: x\n\nabc";
        assert_eq!(private_key(rsa).unwrap(), ("pem-rsa".into(), Some(true)));
        assert_eq!(
            private_key(b"-----BEGIN PRIVATE KEY-----\nMII").unwrap(),
            ("pkcs8".into(), Some(false))
        );
        assert!(private_key(b"-----BEGIN CERTIFICATE-----\nMII").is_none());
        assert!(private_key(b"ssh-ed25519 AAAAC3 me@host").is_none());
        // ssh-keygen -t ed25519 -N '' (no passphrase): cipher "none".
        let none = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n";
        assert_eq!(
            private_key(none.as_bytes()).unwrap(),
            ("openssh".into(), Some(false))
        );
        // With -N: cipher "aes256-ctr".
        let enc = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABA\n";
        assert_eq!(
            private_key(enc.as_bytes()).unwrap(),
            ("openssh".into(), Some(true))
        );
    }

    fn rule(path: &str) -> &'static FileRule {
        credentials().file.iter().find(|f| f.path == path).unwrap()
    }

    #[test]
    fn confirms_and_lists_names_only() {
        // (file, its bytes, the size the walk saw, what it names: None for
        // "not credentials")
        type Case<'a> = (&'a str, &'a [u8], u64, Option<Vec<&'a str>>);
        let cases: [Case; 4] = [
            (
                ".aws/credentials",
                b"[default]\naws_access_key_id = AKIAXXXXXXXXXXXXXXXX\naws_secret_access_key = abc\n[profile prod]\n",
                100,
                Some(vec!["default", "prod"]),
            ),
            (".aws/credentials", &[0u8; 4096], 1 << 30, None),
            (
                ".npmrc",
                b"registry=https://r.example/\n//r.example/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n",
                10,
                Some(vec!["//r.example/"]),
            ),
            (".npmrc", b"//r/:_authToken=${NPM_TOKEN}\n", 10, None),
        ];
        for (path, bytes, size, names) in cases {
            let d = confirm(rule(path), bytes, size, "/c");
            assert_eq!(d.ok, names.is_some(), "{path}: {bytes:?}");
            if let Some(n) = names {
                assert_eq!(d.entries, n, "{path}");
            }
        }
        let d = confirm(
            rule(".docker/config.json"),
            br#"{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"},"quay.io":{}},"credsStore":"desktop"}"#,
            10,
            "/d",
        );
        assert!(d.ok);
        assert_eq!(d.entries, vec!["index.docker.io"]);
        assert_eq!(d.helpers.len(), 1);
        // One entry name each, never the secret beside it.
        for (path, bytes, what, entry) in [
            (
                ".git-credentials",
                &b"https://bob:tok3n@github.com\n"[..],
                "/g",
                "github.com",
            ),
            (
                ".env",
                b"# x\nDEBUG=1\nexport API_TOKEN=q8Zr2mVx9Lk3\n",
                "/e",
                "API_TOKEN",
            ),
            (
                ".netrc",
                b"machine api.example.org login u password p\n",
                "/n",
                "api.example.org",
            ),
        ] {
            let d = confirm(rule(path), bytes, 10, what);
            assert_eq!(d.entries, vec![entry], "{path}");
        }
        assert!(entry_name("ghp_abcdefghijklmnopqrstuvwxyz0123456789").is_none());
    }

    /// A tree of 3 directories of 50 files, and a walk of it with an
    /// entry budget of `entries`.
    fn walk_tree(tag: &str, entries: usize) -> RootStat {
        let dir = std::env::temp_dir().join(format!("sp-walk-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in 0..3 {
            let sub = dir.join(format!("ws/d{d}"));
            std::fs::create_dir_all(&sub).unwrap();
            for f in 0..50 {
                std::fs::write(sub.join(format!("f{f}.rs")), "").unwrap();
            }
        }
        let host = Host::new(dir.clone(), std::time::Duration::from_secs(30));
        let idx = MountIndex::new(None);
        let users = Users::collect(&host, None);
        let far = Instant::now() + std::time::Duration::from_secs(30);
        let mut s = Search::new(&host, &idx, &users, far, far);
        let mut walker = s.walker();
        s.walk(
            &mut walker,
            &Root {
                path: PathBuf::from("/ws"),
                origin: "workspace".into(),
                alias: None,
                budget: Budget { entries, depth: 12 },
            },
        );
        let _ = std::fs::remove_dir_all(&dir);
        s.facts.roots.remove(0)
    }

    #[test]
    fn a_walk_reports_why_it_stopped() {
        let all = walk_tree("all", 1_000);
        assert_eq!((all.entries, all.dirs, all.truncated), (153, 4, None));
        let cut = walk_tree("budget", 100);
        assert_eq!(
            cut.truncated.as_deref(),
            Some("entry budget of 100 reached")
        );
    }

    #[test]
    fn compiled_globs_agree_with_matches_component() {
        let cat = credentials();
        let pats: Vec<&str> = cat
            .file
            .iter()
            .flat_map(|f| {
                f.path
                    .split('/')
                    .chain(f.exclude.iter().map(String::as_str))
            })
            .chain(catalog::PRUNE.iter().flat_map(|p| p.split('/')))
            .chain(["a*b*c", "*a*a*", "*", "**", "x*"])
            .collect();
        let names = [
            "id_rsa",
            "id_rsa.pub",
            "server.pem",
            ".pem",
            "pem",
            "a.key.bak",
            ".env",
            ".env.local",
            ".env.example",
            "prod.env",
            "service-account-x.json",
            "service-account.json",
            "client_secret_1.json",
            "f12.ts",
            "",
            "abc",
            "ac",
            "aa",
            "a",
            "ééé.pem",
            "clé.key",
        ];
        for p in pats {
            let g = Glob::new(p);
            for n in names {
                assert_eq!(
                    g.matches(n.as_bytes()),
                    matches_component(p, n),
                    "{p} on {n:?}"
                );
            }
        }
    }

    #[test]
    fn matcher_prefers_catalog_order_and_excludes() {
        let m = PathEnds::new(
            credentials()
                .file
                .iter()
                .map(|f| (f.path.as_str(), f.exclude.as_slice())),
        );
        let c = |p: &str| {
            let path = PathBuf::from(p);
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            m.first(&name, &parent_name(&path), &mut || comps(&path))
                .map(|i| credentials().file[i].path.clone())
        };
        assert_eq!(c("/home/a/.ssh/id_rsa").as_deref(), Some("id_rsa"));
        assert_eq!(c("/home/a/.ssh/deploy").as_deref(), Some(".ssh/*"));
        assert_eq!(c("/home/a/.ssh/id_rsa.pub"), None);
        assert_eq!(c("/home/a/.ssh/known_hosts"), None);
        assert_eq!(c("/w/.env.example"), None);
        assert_eq!(c("/w/.env.local").as_deref(), Some(".env.*"));
        assert_eq!(
            c("/h/.aws/credentials").as_deref(),
            Some(".aws/credentials")
        );
        assert_eq!(c("/h/credentials"), None);
    }
}
