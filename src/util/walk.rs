//! The one directory walk behind the credential search
//! (src/probe/secrets/files.rs), the workspace walk (src/probe/repro/mod.rs),
//! the socket search (src/probe/sockets.rs) and the artifact walk
//! (src/probe/artifacts.rs). What they share is here:
//!
//! - a budget of entries read, of depth and of directories waiting to be
//!   listed, and a deadline, checked every 64 directories and every 1,024
//!   entries (a tree of empty directories has few entries per listing);
//! - a (dev, inode) set, so no directory is listed twice in one walker's
//!   walks (a bind mount met again under another name), bounded by the
//!   number of directories the walker may list; a walk that never enters
//!   a mount point cannot meet a directory twice, and may go without;
//! - the prune list of src/catalog.rs (`catalog::prune`), and a hook for
//!   what a walk prunes on its own (`Visit::entry` not descending);
//! - what every walk promises: a symlink is never followed (only a root
//!   that is one, and only while it resolves inside the probed tree), and
//!   nothing but a directory is opened: a FIFO, socket or device is known
//!   by the type its listing gives it.
//!
//! What a walk does with what it meets is its `Visit`. When a walk stops
//! early it says why (`Stop`), and the caller words that as its own
//! truncation evidence.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::fmt;
use std::fs::{FileType, Metadata, ReadDir};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::host::Host;
use crate::util::glob::{comps, PathEnds};

/// Which waiting directory is listed next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Level by level, so a budget that runs out leaves the shallow places
    /// (where credentials sit) examined, and a huge node_modules cannot
    /// spend it before a home's dotfiles are reached.
    BreadthFirst,
    /// The directory found last is listed next: the order in which the
    /// workspace, socket and artifact walks have always reported what they
    /// found.
    DepthFirst,
}

/// The bounds of one walk (one root).
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Entries read from listings.
    pub entries: usize,
    /// The deepest directory listed; the root is at depth 0.
    pub depth: usize,
    /// Directories found and not yet listed.
    pub queued: usize,
}

/// Why a walk stopped before it had listed everything in its budget's reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `Budget::entries` entries were read and the listing had more.
    Entries,
    /// The walker's deadline passed.
    Deadline,
    /// `Budget::queued` directories were waiting when one more was found
    /// at `depth`.
    Queued { depth: usize },
    /// The walker had listed its `max_dirs` directories, over all its walks.
    Dirs,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Entries => f.write_str("the entry budget ran out"),
            Stop::Deadline => f.write_str("the deadline came first"),
            Stop::Queued { depth } => write!(f, "too many directories waiting at depth {depth}"),
            Stop::Dirs => f.write_str("the directory budget ran out"),
        }
    }
}

/// What one walk did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walked {
    /// Entries read from listings (at most `Budget::entries`).
    pub entries: usize,
    /// Directories listed.
    pub listed: usize,
    /// Directories whose listing failed (`Visit::unlisted` saw why).
    pub unlisted: usize,
    /// The deepest directory listed.
    pub depth_reached: usize,
    /// Directories not entered because they were deeper than the budget.
    pub depth_limited: usize,
    /// Directories not entered because the prune list names them.
    pub pruned: usize,
    pub stop: Option<Stop>,
}

/// The directory being listed, as a `Visit` sees it.
pub struct Dir<'a, M> {
    pub path: &'a Path,
    /// 0 for the root.
    pub depth: usize,
    /// What the directory inherited from the one it was found in.
    pub mark: &'a M,
    /// Its last component ("" for /), for patterns with a parent component.
    pub name: String,
    comps: OnceCell<Vec<String>>,
}

impl<M> Dir<'_, M> {
    /// The components of `self.path` joined with `name`: built once per
    /// directory, when a pattern needs the whole path.
    pub fn comps_with(&self, name: &str) -> Vec<String> {
        let mut c = self.comps.get_or_init(|| comps(self.path)).clone();
        c.push(name.to_string());
        c
    }
}

/// What a `Visit` wants done with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing more.
    Next,
    /// A directory to enter, unless the prune list names it or the budget's
    /// depth ends above it.
    Descend,
    /// Drop this directory: the rest of its listing, and the directories
    /// found in it so far (a browser profile, told by a marker anywhere in
    /// the listing).
    Abandon,
}

/// One walk's part: what it does with each directory and entry.
pub trait Visit {
    /// What a directory carries down to the ones found in it (the package
    /// tree it is in, the artifact class of a `logs/` above it).
    type Mark: Clone;

    /// A directory about to be listed (reached, and not listed before);
    /// false skips it.
    fn enter(&mut self, _dir: &Dir<'_, Self::Mark>) -> bool {
        true
    }

    /// Listing `dir` failed.
    fn unlisted(&mut self, _dir: &Dir<'_, Self::Mark>, _err: &io::Error) {}

    /// One entry of `dir`'s listing, with the type the listing gave it.
    fn entry(&mut self, dir: &Dir<'_, Self::Mark>, name: &OsStr, ft: FileType) -> Step;

    /// A directory `entry` descended into and the prune list names.
    fn pruned(&mut self, _dir: &Dir<'_, Self::Mark>, _name: &OsStr) {}

    /// The mark of `path`, a directory found in `dir` that will be listed.
    fn mark(&mut self, dir: &Dir<'_, Self::Mark>, _name: &OsStr, _path: &Path) -> Self::Mark {
        dir.mark.clone()
    }

    /// The listing of `dir` ended (not called for one abandoned, or cut by
    /// a `Stop`).
    fn leave(&mut self, _dir: &Dir<'_, Self::Mark>) {}
}

/// Walks one or more roots under one deadline, one directory budget and
/// one visited set.
pub struct Walker<'p> {
    order: Order,
    deadline: Instant,
    prune: &'p PathEnds,
    max_dirs: usize,
    listed: usize,
    /// The directories listed, as inode numbers per device: nearly all of
    /// a walk's directories share one device, so this keeps 8 bytes per
    /// directory rather than a 16-byte (dev, inode) pair.
    /// None for a walk that cannot meet a directory twice.
    visited: Option<HashMap<u64, HashSet<u64>>>,
}

/// How one listing ended.
enum Listing {
    Done,
    Abandoned,
    Stopped(Stop),
}

impl<'p> Walker<'p> {
    pub fn new(order: Order, prune: &'p PathEnds, deadline: Instant) -> Walker<'p> {
        Walker {
            order,
            deadline,
            prune,
            max_dirs: usize::MAX,
            listed: 0,
            visited: Some(HashMap::new()),
        }
    }

    /// At most `n` directories listed over all this walker's walks: each
    /// costs an inode number in the visited set, so this bounds it.
    pub fn max_dirs(mut self, n: usize) -> Walker<'p> {
        self.max_dirs = n;
        self
    }

    /// No visited set, for a walk that never enters a mount point: without
    /// following symlinks only a mount shows a directory again, so such a
    /// walk cannot meet one twice, and its memory stays bounded by
    /// `Budget::queued` rather than growing with every directory listed.
    pub fn without_visited(mut self) -> Walker<'p> {
        self.visited = None;
        self
    }

    /// Walks the tree at `root` (an in-container path, read through `host`).
    pub fn walk<V: Visit>(
        &mut self,
        host: &Host,
        root: &Path,
        budget: Budget,
        mark: V::Mark,
        v: &mut V,
    ) -> Walked {
        let mut w = Walked::default();
        let mut queue = VecDeque::from([(root.to_path_buf(), 0usize, mark)]);
        // What the directory being listed adds to the queue, once its
        // listing has ended (an abandoned one adds nothing).
        let mut found = Vec::new();
        let mut popped = 0usize;
        loop {
            let next = match self.order {
                Order::BreadthFirst => queue.pop_front(),
                Order::DepthFirst => queue.pop_back(),
            };
            let Some((path, depth, mark)) = next else {
                break;
            };
            popped += 1;
            if popped % 64 == 0 && Instant::now() > self.deadline {
                w.stop = Some(Stop::Deadline);
                break;
            }
            if self.listed >= self.max_dirs {
                w.stop = Some(Stop::Dirs);
                break;
            }
            let hp = host.path(&path);
            let Some(meta) = directory(host, &hp, depth) else {
                continue;
            };
            let again = self
                .visited
                .as_mut()
                .is_some_and(|v| !v.entry(meta.dev()).or_default().insert(meta.ino()));
            if again {
                continue;
            }
            let dir = Dir {
                path: &path,
                depth,
                mark: &mark,
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                comps: OnceCell::new(),
            };
            if !v.enter(&dir) {
                continue;
            }
            let rd = match std::fs::read_dir(&hp) {
                Ok(rd) => rd,
                Err(e) => {
                    w.unlisted += 1;
                    v.unlisted(&dir, &e);
                    continue;
                }
            };
            w.listed += 1;
            self.listed += 1;
            w.depth_reached = w.depth_reached.max(depth);
            match self.list(rd, &dir, budget, queue.len(), &mut found, &mut w, v) {
                Listing::Done => {
                    v.leave(&dir);
                    queue.extend(found.drain(..));
                }
                Listing::Abandoned => found.clear(),
                Listing::Stopped(s) => {
                    w.stop = Some(s);
                    break;
                }
            }
        }
        w
    }

    #[allow(clippy::too_many_arguments)]
    fn list<V: Visit>(
        &self,
        rd: ReadDir,
        dir: &Dir<'_, V::Mark>,
        budget: Budget,
        queued: usize,
        found: &mut Vec<(PathBuf, usize, V::Mark)>,
        w: &mut Walked,
        v: &mut V,
    ) -> Listing {
        for ent in rd {
            let Ok(ent) = ent else { continue };
            if w.entries >= budget.entries {
                return Listing::Stopped(Stop::Entries);
            }
            if w.entries % 1024 == 1023 && Instant::now() > self.deadline {
                return Listing::Stopped(Stop::Deadline);
            }
            w.entries += 1;
            let Ok(ft) = ent.file_type() else { continue };
            let name = ent.file_name();
            match v.entry(dir, &name, ft) {
                Step::Next => continue,
                Step::Abandon => return Listing::Abandoned,
                Step::Descend if !ft.is_dir() => continue,
                Step::Descend => {}
            }
            let name_s = name.to_string_lossy();
            let pruned = self
                .prune
                .first(&name_s, &dir.name, &mut || dir.comps_with(&name_s))
                .is_some();
            if pruned {
                w.pruned += 1;
                v.pruned(dir, &name);
                continue;
            }
            if dir.depth + 1 > budget.depth {
                w.depth_limited += 1;
                continue;
            }
            if queued + found.len() >= budget.queued {
                return Listing::Stopped(Stop::Queued {
                    depth: dir.depth + 1,
                });
            }
            let path = dir.path.join(&name);
            let mark = v.mark(dir, &name, &path);
            found.push((path, dir.depth + 1, mark));
        }
        Listing::Done
    }
}

/// The metadata of a directory to list, without following a symlink: only
/// a root may be one (/workspaces/app -> /src/app), and only while it
/// resolves inside the probed tree.
fn directory(host: &Host, hp: &Path, depth: usize) -> Option<Metadata> {
    match std::fs::symlink_metadata(hp) {
        Ok(m) if m.is_dir() => Some(m),
        Ok(m) if depth == 0 && m.file_type().is_symlink() => resolve_in_scope(hp, host.root())
            .map(|(_, m)| m)
            .filter(Metadata::is_dir),
        _ => None,
    }
}

/// The symlink at `hp`, resolved, with its metadata, if it stays under
/// `scope` (both host paths).
pub fn resolve_in_scope(hp: &Path, scope: &Path) -> Option<(PathBuf, Metadata)> {
    let real = std::fs::canonicalize(hp).ok()?;
    let scope = std::fs::canonicalize(scope).ok()?;
    if !real.starts_with(&scope) {
        return None;
    }
    let meta = std::fs::symlink_metadata(&real).ok()?;
    Some((real, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, FileTypeExt};
    use std::time::Duration;

    /// A fixture tree under the temp dir, removed when dropped.
    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            let dir = std::env::temp_dir().join(format!("sp-walk-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            Tree(dir)
        }
        fn file(&self, rel: &str) {
            let p = self.0.join("ws").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        fn host(&self) -> Host {
            Host::new(self.0.clone(), Duration::from_secs(30))
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Records what the walker showed it; marks are the depth as text.
    #[derive(Default)]
    struct Log {
        listed: Vec<String>,
        files: Vec<String>,
        special: Vec<String>,
        pruned: Vec<String>,
        left: Vec<String>,
        /// Directory names whose listing is abandoned.
        abandon_in: Vec<&'static str>,
    }

    impl Visit for Log {
        type Mark = String;
        fn enter(&mut self, dir: &Dir<'_, String>) -> bool {
            self.listed.push(dir.path.display().to_string());
            true
        }
        fn entry(&mut self, dir: &Dir<'_, String>, name: &OsStr, ft: FileType) -> Step {
            let p = dir.path.join(name).display().to_string();
            if ft.is_dir() {
                return Step::Descend;
            }
            if self.abandon_in.contains(&dir.name.as_str()) {
                return Step::Abandon;
            }
            if ft.is_file() {
                self.files.push(format!("{p} {}", dir.mark));
            } else {
                self.special.push(p);
            }
            Step::Next
        }
        fn pruned(&mut self, dir: &Dir<'_, String>, name: &OsStr) {
            self.pruned.push(dir.path.join(name).display().to_string());
        }
        fn mark(&mut self, dir: &Dir<'_, String>, name: &OsStr, _path: &Path) -> String {
            format!("{}/{}", dir.mark, name.to_string_lossy())
        }
        fn leave(&mut self, dir: &Dir<'_, String>) {
            self.left.push(dir.path.display().to_string());
        }
    }

    const ALL: Budget = Budget {
        entries: 1_000_000,
        depth: 100,
        queued: 1_000_000,
    };

    fn prune() -> &'static PathEnds {
        static P: std::sync::OnceLock<PathEnds> = std::sync::OnceLock::new();
        P.get_or_init(|| PathEnds::of(["node_modules", ".cargo/registry"].into_iter()))
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    fn walk(t: &Tree, order: Order, budget: Budget, v: &mut Log) -> Walked {
        Walker::new(order, prune(), far()).walk(
            &t.host(),
            Path::new("/ws"),
            budget,
            String::new(),
            v,
        )
    }

    /// `walker` over /ws with the whole budget, seen by a fresh Log.
    fn all_of_ws(walker: &mut Walker, t: &Tree) -> Walked {
        walker.walk(
            &t.host(),
            Path::new("/ws"),
            ALL,
            String::new(),
            &mut Log::default(),
        )
    }

    fn depth_of(p: &str) -> usize {
        p.matches('/').count()
    }

    #[test]
    fn breadth_first_lists_a_level_before_the_next_and_depth_first_the_last_found_first() {
        let t = Tree::new("order");
        for p in ["a/x/deep/f", "b/y/f", "c/f"] {
            t.file(p);
        }
        let mut bfs = Log::default();
        let w = walk(&t, Order::BreadthFirst, ALL, &mut bfs);
        assert_eq!(w.stop, None);
        assert_eq!((w.listed, w.entries, w.depth_reached), (7, 9, 3));
        let depths: Vec<usize> = bfs.listed.iter().map(|p| depth_of(p)).collect();
        assert!(depths.windows(2).all(|d| d[0] <= d[1]), "{:?}", bfs.listed);
        // Marks carry down: the file under a/x/deep got its chain.
        assert!(
            bfs.files.contains(&"/ws/a/x/deep/f /a/x/deep".to_string()),
            "{:?}",
            bfs.files
        );

        let mut dfs = Log::default();
        let w = walk(&t, Order::DepthFirst, ALL, &mut dfs);
        assert_eq!((w.listed, w.entries), (7, 9));
        // Depth first: a directory's whole subtree is listed before its
        // next sibling, and the sibling found last goes first.
        let top: Vec<&String> = dfs.listed.iter().filter(|p| depth_of(p) == 2).collect();
        let pos = |p: &String| dfs.listed.iter().position(|x| x == p).unwrap();
        for w in top.windows(2) {
            let sub = dfs.listed[pos(w[0])..pos(w[1])].to_vec();
            assert!(
                sub[1..].iter().all(|p| p.starts_with(w[0].as_str())),
                "{:?}",
                dfs.listed
            );
        }
        let mut sorted_b = bfs.listed.clone();
        let mut sorted_d = dfs.listed.clone();
        sorted_b.sort();
        sorted_d.sort();
        assert_eq!(sorted_b, sorted_d);
        assert_eq!(dfs.left.len(), 7);
    }

    #[test]
    fn budgets_stop_the_walk_and_say_which() {
        let t = Tree::new("budget");
        for d in 0..3 {
            for f in 0..50 {
                t.file(&format!("d{d}/f{f}"));
            }
        }
        let mut v = Log::default();
        let w = walk(
            &t,
            Order::BreadthFirst,
            Budget {
                entries: 100,
                ..ALL
            },
            &mut v,
        );
        assert_eq!((w.stop, w.entries), (Some(Stop::Entries), 100));
        // Exactly the budget fits: no stop.
        let w = walk(
            &t,
            Order::BreadthFirst,
            Budget {
                entries: 153,
                ..ALL
            },
            &mut Log::default(),
        );
        assert_eq!((w.stop, w.entries), (None, 153));

        let w = walk(
            &t,
            Order::BreadthFirst,
            Budget { depth: 0, ..ALL },
            &mut Log::default(),
        );
        assert_eq!(
            (w.stop, w.listed, w.depth_limited, w.entries),
            (None, 1, 3, 3)
        );

        let w = walk(
            &t,
            Order::BreadthFirst,
            Budget { queued: 2, ..ALL },
            &mut Log::default(),
        );
        assert_eq!(w.stop, Some(Stop::Queued { depth: 1 }));

        let mut walker = Walker::new(Order::BreadthFirst, prune(), far()).max_dirs(2);
        let w = all_of_ws(&mut walker, &t);
        assert_eq!((w.stop, w.listed), (Some(Stop::Dirs), 2));

        // A deadline already past ends the walk within 1,024 entries.
        let past = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        for d in 0..3 {
            for f in 50..500 {
                t.file(&format!("d{d}/f{f}"));
            }
        }
        let w = all_of_ws(&mut Walker::new(Order::BreadthFirst, prune(), past), &t);
        assert_eq!(w.stop, Some(Stop::Deadline));
        assert!(w.entries < 1024, "{w:?}");
    }

    #[test]
    fn no_directory_twice_no_symlink_followed_nothing_else_opened() {
        let t = Tree::new("links");
        t.file("real/f");
        std::fs::create_dir_all(t.0.join("outside")).unwrap();
        std::fs::write(t.0.join("outside/secret"), "").unwrap();
        symlink(".", t.0.join("ws/loop")).unwrap();
        symlink("../outside", t.0.join("ws/out")).unwrap();
        symlink("/etc", t.0.join("ws/etc")).unwrap();
        nix::unistd::mkfifo(&t.0.join("ws/pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut v = Log::default();
        let w = walk(&t, Order::BreadthFirst, ALL, &mut v);
        assert_eq!(w.stop, None);
        assert_eq!(v.listed, ["/ws", "/ws/real"]);
        assert_eq!(v.files, ["/ws/real/f /real"]);
        v.special.sort();
        assert_eq!(v.special, ["/ws/etc", "/ws/loop", "/ws/out", "/ws/pipe"]);
        // The FIFO was judged by its type, never opened (that would block).
        assert!(std::fs::symlink_metadata(t.0.join("ws/pipe"))
            .unwrap()
            .file_type()
            .is_fifo());

        // One walker lists a directory once, whatever the roots: the
        // link /app to ws/real is not listed again after /ws.
        symlink("ws/real", t.0.join("app")).unwrap();
        symlink("/etc", t.0.join("hostetc")).unwrap();
        let listed = |roots: &[&str]| -> Vec<(usize, usize)> {
            let host = t.host();
            let mut walker = Walker::new(Order::BreadthFirst, prune(), far());
            roots
                .iter()
                .map(|r| {
                    let w =
                        walker.walk(&host, Path::new(r), ALL, String::new(), &mut Log::default());
                    (w.listed, w.entries)
                })
                .collect()
        };
        assert_eq!(
            listed(&["/ws", "/ws/real", "/app"]),
            [(2, 6), (0, 0), (0, 0)]
        );
        let mut forgetful = Walker::new(Order::BreadthFirst, prune(), far()).without_visited();
        for _ in 0..2 {
            let w = all_of_ws(&mut forgetful, &t);
            assert_eq!((w.listed, w.entries), (2, 6));
        }
        // A root that is a symlink is followed while it stays in the tree.
        assert_eq!(listed(&["/app", "/hostetc"]), [(1, 1), (0, 0)]);
    }

    #[test]
    fn the_prune_list_and_the_visit_decide_what_is_entered() {
        let t = Tree::new("prune");
        t.file("node_modules/x/index.js");
        t.file("home/.cargo/registry/src/a.rs");
        t.file("home/.cargo/credentials.toml");
        t.file("profile/Cookies");
        t.file("profile/sub/f");
        t.file("kept/f");
        let mut v = Log {
            abandon_in: vec!["profile"],
            ..Log::default()
        };
        let w = walk(&t, Order::BreadthFirst, ALL, &mut v);
        assert_eq!(w.stop, None);
        v.pruned.sort();
        assert_eq!(v.pruned, ["/ws/home/.cargo/registry", "/ws/node_modules"]);
        assert_eq!(w.pruned, 2);
        v.files.sort();
        assert_eq!(
            v.files,
            [
                "/ws/home/.cargo/credentials.toml /home/.cargo",
                "/ws/kept/f /kept"
            ]
        );
        // The abandoned profile: listed, never left, its subdirectory dropped.
        assert!(v.listed.contains(&"/ws/profile".to_string()));
        assert!(!v.left.contains(&"/ws/profile".to_string()));
        assert!(
            !v.listed.iter().any(|p| p.starts_with("/ws/profile/")),
            "{:?}",
            v.listed
        );
    }
}
