//! Phase 2: container engine sockets. Each candidate (the catalog, DOCKER_HOST
//! and friends, and any socket found under a host mount) is connected to;
//! HTTP engines are asked a read-only GET /_ping and GET /version.

use crate::finding::Code;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{self, SocketApi, Walk};
use crate::facts::mounts::{MountClass, MountFacts};
use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::util::http1::{self, Request, Response, Timed, Version};
use crate::util::redact::redact;
use crate::util::socket::connect_unix;
use crate::util::walk::{self, Dir, Order, Step, Visit, Walker};

/// Per request. /_ping is answered at once by every engine, so a socket
/// silent for a second is not answering; podman's /version takes ~0.4 s even
/// when idle, so it gets longer. The probe's own deadline bounds the total.
const PING_TIMEOUT: Duration = Duration::from_millis(1000);
const VERSION_TIMEOUT: Duration = Duration::from_millis(3000);
/// The most of an answer's body that is read.
const MAX_ANSWER: usize = 256 * 1024;
/// Sockets under host mounts and in the places sockets live: how deep and
/// how many entries to look at. Sockets sit near the top of a runtime dir;
/// a repo can hold millions of files.
const WALK_DEPTH: usize = 4;
const WALK_ENTRIES: usize = 20_000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SocketProbe {
    pub path: String,
    pub engine: String,
    pub api: SocketApi,
    /// catalog, env:DOCKER_HOST, host-mount:/data …
    pub origin: String,
    pub outcome: SocketAnswer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<EngineAnswer>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SocketAnswer {
    /// HTTP engine answered /_ping with 200.
    Answered,
    /// gRPC socket accepted a connection.
    Accepted,
    /// Connected, but no engine answer before the deadline.
    NoAnswer,
    /// Connected and answered, but not as a container engine.
    NotEngine,
    Refused,
    Denied,
    /// The listen backlog is full: something is there but not accepting.
    Busy,
    NotSocket,
    Error,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineAnswer {
    pub ping_status: Option<u16>,
    pub server: Option<String>,
    pub api_version: Option<String>,
    pub version: Option<String>,
    pub os: Option<String>,
    pub components: Vec<String>,
    pub error: Option<String>,
    /// It took the connection and the request and said nothing until the
    /// wait ended: no close, no reset, no bytes. What it is stays unknown
    /// (a busy or hung engine is silent too), unlike a socket that hangs
    /// up, which is not an HTTP engine.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub silent: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SocketFacts {
    pub sockets: Vec<SocketProbe>,
    /// Engine endpoints named by the environment that are not local sockets.
    pub tcp_endpoints: Vec<(String, String)>,
    pub walk_truncated: Vec<String>,
    /// Entries the search for sockets looked at under each host mount.
    pub walks: Vec<SocketWalk>,
    /// The places sockets live that were searched (/run, /tmp, the homes…),
    /// with the entries each took.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub searched: Vec<SocketWalk>,
    /// Sockets, host mounts and places the probe's time ran out before
    /// (its deadline, or their root's share of it): the first
    /// MAX_NOT_REACHED, the others counted in `not_reached_more`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_reached: Vec<String>,
    /// How many more were not reached than `not_reached` lists: a
    /// workspace can make sockets by the thousand.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_reached_more: usize,
    /// Paths looked at for a socket (the catalog's, the environment's,
    /// those in host mounts), there or not: what "none answered" rests on.
    #[serde(skip)]
    pub tried: usize,
    /// The sockets asked, by device and inode: each once.
    #[serde(skip)]
    pub seen: BTreeSet<(u64, u64)>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Paths listed in `not_reached` at most.
const MAX_NOT_REACHED: usize = 200;

impl SocketFacts {
    /// Names what the probe's time ran out before, up to MAX_NOT_REACHED.
    fn not_reach(&mut self, what: String) {
        if self.not_reached.len() < MAX_NOT_REACHED {
            self.not_reached.push(what);
        } else {
            self.not_reached_more += 1;
        }
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SocketWalk {
    pub mount_point: String,
    pub entries: usize,
    pub truncated: bool,
}

struct Candidate {
    path: PathBuf,
    engine: String,
    api: SocketApi,
    origin: String,
}

/// Expands one `*` component at a time against the filesystem.
fn expand(host: &Host, pattern: &str) -> Vec<PathBuf> {
    let mut acc = vec![PathBuf::from("/")];
    for comp in pattern.trim_start_matches('/').split('/') {
        let mut next = Vec::new();
        for base in &acc {
            if comp.contains('*') {
                let Ok(rd) = std::fs::read_dir(host.path(base)) else {
                    continue;
                };
                for e in rd.flatten().take(1000) {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if crate::util::glob::matches_path(comp, &name) {
                        next.push(base.join(name));
                    }
                }
            } else {
                next.push(base.join(comp));
            }
        }
        acc = next;
    }
    acc
}

fn env_candidates(host: &Host, out: &mut Vec<Candidate>, tcp: &mut Vec<(String, String)>) {
    for var in [
        "DOCKER_HOST",
        "CONTAINER_HOST",
        "BUILDKIT_HOST",
        "CONTAINERD_ADDRESS",
    ] {
        let Some(v) = host.env().get(var) else {
            continue;
        };
        let v = v.trim().to_string();
        if v.is_empty() {
            continue;
        }
        let (engine, api) = match var {
            "BUILDKIT_HOST" => ("buildkit", SocketApi::Grpc),
            "CONTAINERD_ADDRESS" => ("containerd", SocketApi::Grpc),
            "CONTAINER_HOST" => ("podman", SocketApi::Http),
            _ => ("docker", SocketApi::Http),
        };
        if let Some(p) = v
            .strip_prefix("unix://")
            .or_else(|| v.starts_with('/').then_some(v.as_str()))
        {
            out.push(Candidate {
                path: PathBuf::from(p),
                engine: engine.into(),
                api,
                origin: format!("env:{var}"),
            });
        } else {
            // A TCP or SSH endpoint is reported from the environment alone:
            // connecting to it would be network traffic the policy did not ask for.
            tcp.push((var.to_string(), redact(&v)));
        }
    }
}

/// The sockets under `root`, and how many entries that took; the flag is
/// false when the budget or the deadline ended the search first. Depth
/// first, the order the sockets have always been listed in; directories
/// down to `depth` are listed; a walker (and visited set) per root, so each
/// root's count is its own. `places` also skips what is known not to be an
/// engine (NOT_ENGINES).
fn walk_for_sockets(
    host: &Host,
    root: &Path,
    depth: usize,
    places: bool,
    deadline: Instant,
    found: &mut Vec<PathBuf>,
) -> (bool, usize) {
    let budget = walk::Budget {
        entries: WALK_ENTRIES,
        depth,
        queued: usize::MAX,
    };
    let w = Walker::new(Order::DepthFirst, catalog::prune(Walk::Sockets), deadline).walk(
        host,
        root,
        budget,
        (),
        &mut SocketSearch { found, places },
    );
    (w.stop.is_none(), w.entries)
}

/// The socket search's part: every socket it meets.
struct SocketSearch<'a> {
    found: &'a mut Vec<PathBuf>,
    /// Searching the places sockets live: what is known not to be an
    /// engine is passed by, never asked.
    places: bool,
}

/// Sockets and directories of sockets that are not engine APIs, passed by
/// in the places search so that nothing is sent to them: the system's and
/// the session's buses, journald's stream socket (what is written to it is
/// logged), X11 and Wayland, sound, the key agents (their own protocols;
/// secret.agent-socket asks them properly), udev and device-mapper control,
/// and containerd's shim sockets (ttrpc; containerd's own socket is the
/// catalog's). `*` stands for part of a name.
const NOT_ENGINES: &[&str] = &[
    "systemd",
    "dbus",
    "bus",
    ".X11-unix",
    ".ICE-unix",
    ".XIM-unix",
    ".font-unix",
    "wayland-*",
    "pulse",
    "pipewire-*",
    "gnupg",
    "keyring",
    "ssh-*",
    "agent.*",
    "S.*",
    "udev",
    "lvm",
    "containerd",
    "*.ttrpc",
];

fn not_an_engine(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    NOT_ENGINES
        .iter()
        .any(|p| crate::util::glob::matches_path(p, &name))
}

impl Visit for SocketSearch<'_> {
    type Mark = ();

    fn entry(&mut self, dir: &Dir<'_, ()>, name: &OsStr, ft: FileType) -> Step {
        if self.places && not_an_engine(name) {
            return Step::Next;
        }
        if ft.is_socket() {
            self.found.push(dir.path.join(name));
        }
        if ft.is_dir() {
            Step::Descend
        } else {
            Step::Next
        }
    }
}

/// The places sockets live, searched for engine APIs wherever they were
/// started (`podman system service unix:///tmp/x/podman.sock`, a rootless
/// Docker's socket, a forwarded one): the runtime directories, the
/// temporary ones, the session's runtime directory and the homes; each
/// with the depth its sockets sit at.
fn socket_places(host: &Host, homes: &[PathBuf]) -> Vec<(PathBuf, usize)> {
    let mut out: Vec<(PathBuf, usize)> = vec![
        (PathBuf::from("/run"), 3),
        (PathBuf::from("/var/run"), 3),
        (PathBuf::from("/tmp"), 3),
        (PathBuf::from("/var/tmp"), 2),
        (PathBuf::from("/dev/shm"), 2),
    ];
    if let Some(x) = host
        .env()
        .get("XDG_RUNTIME_DIR")
        .filter(|x| x.starts_with('/'))
    {
        out.push((PathBuf::from(x), 3));
    }
    for h in homes.iter().take(crate::facts::users::MAX_HOMES) {
        out.push((h.clone(), 3));
    }
    out
}

/// Sockets the places search found that are asked: at most this many, each
/// with a short wait (an engine answers /_ping at once).
const MAX_SEARCHED: usize = 32;
const SEARCH_PING_TIMEOUT: Duration = Duration::from_millis(300);
/// Silent sockets in host mounts asked a second time, at once.
const MAX_ASKED_AGAIN: usize = 8;

/// Sockets asked at once: a silent one costs its whole wait, so asked one
/// after another, a directory of sockets that accept and never answer (a
/// workspace can make them) used up the time of every mount after it, and
/// an engine's socket bound in after it was never reached.
const ASKED_AT_ONCE: usize = 8;

/// Connects to each candidate (once per socket: `seen` holds their device
/// and inode) and records the answer, ASKED_AT_ONCE at a time, in the
/// candidates' order: a batch starts only before `start_until`, each ask
/// ends by `deadline`; the candidates not reached are named in
/// `not_reached`.
fn probe_all(
    host: &Host,
    cands: Vec<Candidate>,
    (start_until, deadline): (Instant, Instant),
    facts: &mut SocketFacts,
) {
    /// A candidate's place in the list: settled without asking, or to be
    /// asked with its wait.
    enum Slot {
        NotSocket(SocketProbe),
        NotReached(String),
        Ask(Candidate, PathBuf, Duration),
    }
    facts.tried += cands.len();
    let mut asked = 0usize;
    let mut slots = Vec::new();
    for c in cands {
        let real = host.path(&c.path);
        let Ok(meta) = std::fs::metadata(&real) else {
            continue;
        };
        // One socket reached by two names (catalog path and its mount) is probed once.
        if !facts.seen.insert((
            std::os::unix::fs::MetadataExt::dev(&meta),
            std::os::unix::fs::MetadataExt::ino(&meta),
        )) {
            continue;
        }
        if !meta.file_type().is_socket() {
            slots.push(Slot::NotSocket(SocketProbe {
                path: c.path.to_string_lossy().into_owned(),
                engine: c.engine,
                api: c.api,
                origin: c.origin,
                outcome: SocketAnswer::NotSocket,
                answer: None,
            }));
            continue;
        }
        let searched = c.origin.starts_with("search:") && c.engine == "unknown";
        if searched {
            if asked >= MAX_SEARCHED {
                slots.push(Slot::NotReached(c.path.to_string_lossy().into_owned()));
                continue;
            }
            asked += 1;
        }
        let ping = if searched {
            SEARCH_PING_TIMEOUT
        } else {
            PING_TIMEOUT
        };
        slots.push(Slot::Ask(c, real, ping));
    }
    let mut slots = slots.into_iter().peekable();
    while slots.peek().is_some() {
        // The next few to ask, with what is settled among them.
        let mut batch = Vec::new();
        let mut to_ask = Vec::new();
        while to_ask.len() < ASKED_AT_ONCE {
            let Some(slot) = slots.next() else { break };
            if let Slot::Ask(c, real, ping) = &slot {
                to_ask.push((real.clone(), c.api, *ping));
            }
            batch.push(slot);
        }
        let mut answers = if Instant::now() > start_until.min(deadline) {
            Vec::new()
        } else {
            ask_at_once(&to_ask, deadline)
        }
        .into_iter();
        for slot in batch {
            match slot {
                Slot::NotSocket(p) => facts.sockets.push(p),
                Slot::NotReached(p) => facts.not_reach(p),
                Slot::Ask(c, _, _) => match answers.next().flatten() {
                    Some((outcome, answer)) => {
                        let engine = match (&answer, c.engine.as_str()) {
                            (Some(a), "unknown") if outcome == SocketAnswer::Answered => {
                                answered_as(a)
                            }
                            _ => c.engine,
                        };
                        facts.sockets.push(SocketProbe {
                            path: c.path.to_string_lossy().into_owned(),
                            engine,
                            api: c.api,
                            origin: c.origin,
                            outcome,
                            answer,
                        });
                    }
                    // Not asked: the time had run out (or its thread ended
                    // without an answer).
                    None => facts.not_reach(c.path.to_string_lossy().into_owned()),
                },
            }
        }
    }
}

/// Asks each socket (its path, API and wait) at once, each on a thread of
/// its own (one alone, or one whose thread cannot start, here), every ask
/// ending by `deadline`; the answers in the same order, None where a thread
/// ended without one.
fn ask_at_once(
    asks: &[(PathBuf, SocketApi, Duration)],
    deadline: Instant,
) -> Vec<Option<(SocketAnswer, Option<EngineAnswer>)>> {
    enum Asking<H, T> {
        Thread(H),
        Here(T),
    }
    std::thread::scope(|scope| {
        let asking: Vec<_> = asks
            .iter()
            .map(|(real, api, wait)| {
                let (api, wait) = (*api, *wait);
                let ask = move || probe_socket(real, api, wait, deadline);
                if asks.len() == 1 {
                    return Asking::Here(ask());
                }
                match std::thread::Builder::new()
                    .name("sockets-ask".into())
                    .spawn_scoped(scope, ask)
                {
                    Ok(h) => Asking::Thread(h),
                    Err(_) => Asking::Here(ask()),
                }
            })
            .collect();
        asking
            .into_iter()
            .map(|a| match a {
                Asking::Thread(h) => h.join().ok(),
                Asking::Here(answered) => Some(answered),
            })
            .collect()
    })
}

/// The engine a socket of no engine's name is, by what it answered.
fn answered_as(a: &EngineAnswer) -> String {
    a.server
        .clone()
        .or_else(|| a.components.first().cloned())
        .unwrap_or_else(|| "docker-compatible".into())
}

/// The candidates for the sockets found under `origin`: those that bear an
/// engine's socket name are that engine's until shown otherwise (silent or
/// dead, still reported); the others are asked what they are.
fn found_candidates(found: Vec<PathBuf>, origin: &str) -> Vec<Candidate> {
    found
        .into_iter()
        .map(|p| {
            let (engine, api) = named_like_engine(&p)
                .map(|s| (s.engine.clone(), s.api))
                .unwrap_or_else(|| ("unknown".into(), SocketApi::Http));
            Candidate {
                path: p,
                engine,
                api,
                origin: origin.to_string(),
            }
        })
        .collect()
}

/// The catalog's sockets, the environment's, and the catalog's paths inside
/// host surfaces (/var/run/docker.sock of a host root at /host is
/// /host/var/run/docker.sock, and of the host's /run bound at /host/var/run
/// it is /host/var/run/docker.sock): looked up by name, no walk needed.
fn named_candidates(
    host: &Host,
    mounts: Option<&MountFacts>,
    facts: &mut SocketFacts,
) -> Vec<Candidate> {
    let mut cands = Vec::new();
    for s in catalog::engine_sockets() {
        for p in expand(host, &s.path) {
            cands.push(Candidate {
                path: p,
                engine: s.engine.clone(),
                api: s.api,
                origin: "catalog".into(),
            });
        }
    }
    env_candidates(host, &mut cands, &mut facts.tcp_endpoints);
    let Some(m) = mounts else { return cands };
    for e in m.mounts.iter().filter(|e| e.reported()) {
        let mp = &e.mount.mount_point;
        if e.class == MountClass::Socket {
            cands.push(Candidate {
                path: mp.clone(),
                engine: "unknown".into(),
                api: SocketApi::Http,
                origin: format!("host-mount:{}", mp.display()),
            });
            continue;
        }
        for s in catalog::engine_sockets() {
            let inside: Option<String> = match e.class {
                MountClass::HostRoot => Some(s.path.clone()),
                MountClass::HostTmpfs => s
                    .path
                    .strip_prefix("/var/run/")
                    .or_else(|| s.path.strip_prefix("/run/"))
                    .map(str::to_string),
                _ => None,
            };
            let Some(rel) = inside else { continue };
            let pattern = format!(
                "{}/{}",
                mp.to_string_lossy().trim_end_matches('/'),
                rel.trim_start_matches('/')
            );
            for p in expand(host, &pattern) {
                cands.push(Candidate {
                    path: p,
                    engine: s.engine.clone(),
                    api: s.api,
                    origin: format!("host-mount:{}", mp.display()),
                });
            }
        }
    }
    cands
}

/// In three rounds, each kept (`keep`) as it ends so that a probe cut by
/// its deadline still reports what it had found: the sockets named by the
/// catalog and the environment; the sockets under host mounts; the places
/// sockets live (`socket_places`). Walks stop at two thirds of the time
/// left, each at its share of it, so what they find can still be asked;
/// whatever is not reached is named (`not_reached`).
pub fn collect(
    host: &Host,
    mounts: Option<&MountFacts>,
    homes: &[PathBuf],
    deadline: Instant,
    keep: &dyn Fn(&SocketFacts),
) -> SocketFacts {
    let mut facts = SocketFacts::default();
    let named = named_candidates(host, mounts, &mut facts);
    probe_all(host, named, (deadline, deadline), &mut facts);
    keep(&facts);

    let left = deadline.saturating_duration_since(Instant::now());
    let walk_deadline = Instant::now() + left.mul_f32(0.66);
    let walks: Vec<PathBuf> = mounts
        .into_iter()
        .flat_map(|m| &m.mounts)
        .filter(|e| e.reported() && e.contents.file_type == "dir")
        // "/" as the host root is the machine's own, seen from a sandbox:
        // the places below are where its sockets live.
        .filter(|e| !(e.class == MountClass::HostRoot && e.mount.mount_point == Path::new("/")))
        .filter(|e| {
            matches!(
                e.class,
                MountClass::HostBind
                    | MountClass::HostRoot
                    | MountClass::Workspace
                    | MountClass::HostTmpfs
                    | MountClass::ContainerRootfs
                    | MountClass::Unknown
            )
        })
        .map(|e| e.mount.mount_point.clone())
        .collect();
    let places = socket_places(host, homes);
    // Each walk stops at its share of the walk time still left (what one
    // does not use goes to those after it), so a large mount early in the
    // table (a sandbox's /usr, on a loaded machine) cannot leave a small
    // one after it (the engine's socket directory bound in) unwalked.
    let mut walks_left = walks.len() + places.len();
    let mut next_share = || {
        let now = Instant::now();
        let n = u32::try_from(walks_left.max(1)).unwrap_or(u32::MAX);
        walks_left = walks_left.saturating_sub(1);
        now + walk_deadline.saturating_duration_since(now) / n
    };
    for mp in walks {
        let share = next_share();
        if Instant::now() > walk_deadline {
            facts.not_reach(format!("the host mount {}", mp.display()));
            continue;
        }
        let origin = format!("host-mount:{}", mp.display());
        let w = search_one(
            host,
            &mp,
            (WALK_DEPTH - 1, false),
            &origin,
            (share, deadline),
            &mut facts,
        );
        if w.truncated {
            facts.walk_truncated.push(w.mount_point.clone());
        }
        facts.walks.push(w);
        keep(&facts);
    }

    let mut searched_dirs = BTreeSet::new();
    for (place, depth) in places {
        let share = next_share();
        // /var/run is usually a link to /run: a root that is a link is
        // followed by the walk, and the same directory is searched once.
        let Ok(meta) = std::fs::metadata(host.path(&place)) else {
            continue;
        };
        if !meta.is_dir()
            || !searched_dirs.insert((
                std::os::unix::fs::MetadataExt::dev(&meta),
                std::os::unix::fs::MetadataExt::ino(&meta),
            ))
        {
            continue;
        }
        if Instant::now() > walk_deadline {
            facts.not_reach(place.to_string_lossy().into_owned());
            continue;
        }
        let origin = format!("search:{}", place.display());
        let w = search_one(
            host,
            &place,
            (depth, true),
            &origin,
            (share, deadline),
            &mut facts,
        );
        facts.searched.push(w);
        keep(&facts);
    }
    ask_the_silent_again(host, &mut facts, deadline);
    keep(&facts);
    facts
}

/// Sockets in host mounts that stayed silent for PING_TIMEOUT are asked
/// once more, all at once (at most MAX_ASKED_AGAIN), each with what the
/// deadline leaves up to VERSION_TIMEOUT: an engine on a loaded machine
/// can take more than a second (a podman service bound into bubblewrap
/// did, during a full test run). What stays silent is reported unknown
/// (`silent_in_host_mount`).
fn ask_the_silent_again(host: &Host, facts: &mut SocketFacts, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    if left < Duration::from_millis(100) {
        return;
    }
    // A fifth of what is left stays for joining the threads and putting
    // their answers in place: asked up to the deadline itself, a loaded
    // machine cut the probe before a slow engine's answer was kept (seen
    // in a full test run: the engine answered, the report said silent).
    let wait = VERSION_TIMEOUT.min(left.mul_f32(0.8));
    let deadline = Instant::now() + wait;
    let again: Vec<&mut SocketProbe> = facts
        .sockets
        .iter_mut()
        .filter(|s| silent_in_host_mount(s))
        .take(MAX_ASKED_AGAIN)
        .collect();
    let asks: Vec<_> = again
        .iter()
        .map(|s| (host.path(&s.path), s.api, wait))
        .collect();
    for (s, answered) in again.into_iter().zip(ask_at_once(&asks, deadline)) {
        // A thread that ended without an answer leaves the socket as
        // silent as it was.
        let Some((outcome, answer)) = answered else {
            continue;
        };
        if let Some(a) = answer
            .as_ref()
            .filter(|_| outcome == SocketAnswer::Answered)
        {
            s.engine = answered_as(a);
        }
        s.outcome = outcome;
        s.answer = answer;
    }
}

/// One root searched for sockets (`how`: the depth, and whether it is one
/// of the places sockets live) until the first deadline (its share), and
/// what it found asked, each ask ending by the second; the walk's record.
fn search_one(
    host: &Host,
    root: &Path,
    how: (usize, bool),
    origin: &str,
    (walk_deadline, deadline): (Instant, Instant),
    facts: &mut SocketFacts,
) -> SocketWalk {
    let mut found = Vec::new();
    let (complete, entries) = walk_for_sockets(host, root, how.0, how.1, walk_deadline, &mut found);
    // What a host mount's walk found is asked while the root's share lasts,
    // and for at least one wait: a mount full of silent sockets costs about
    // one wait, not the time of the roots after it. The places search asks
    // until the deadline: at most MAX_SEARCHED sockets, a short wait each,
    // and an engine's socket among many in /tmp must not be cut by a share
    // made small by a host's many mounts (a sandbox over the machine's root
    // during a test run lost its engine so).
    let start_until = if how.1 {
        deadline
    } else {
        walk_deadline.max(Instant::now() + PING_TIMEOUT)
    };
    probe_all(
        host,
        found_candidates(found, origin),
        (start_until, deadline),
        facts,
    );
    SocketWalk {
        mount_point: root.to_string_lossy().into_owned(),
        entries,
        truncated: !complete,
    }
}

fn probe_socket(
    path: &Path,
    api: SocketApi,
    ping_timeout: Duration,
    deadline: Instant,
) -> (SocketAnswer, Option<EngineAnswer>) {
    let stream = match connect_unix(path) {
        Ok(s) => s,
        Err(Errno::ECONNREFUSED) => return (SocketAnswer::Refused, None),
        Err(Errno::EACCES) | Err(Errno::EPERM) => return (SocketAnswer::Denied, None),
        Err(Errno::EAGAIN) => return (SocketAnswer::Busy, None),
        Err(_) => return (SocketAnswer::Error, None),
    };
    drop(stream);
    if api == SocketApi::Grpc {
        return (SocketAnswer::Accepted, None);
    }
    let mut ans = EngineAnswer::default();
    let ping = match http_get(path, "/_ping", ping_timeout, deadline) {
        Ok(r) => r,
        Err(e) => {
            ans.silent = matches!(&e, AskError::NoAnswer { error, .. }
                if matches!(error.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock));
            ans.error = Some(e.to_string());
            return (SocketAnswer::NoAnswer, Some(ans));
        }
    };
    if !read_ping(&ping, &mut ans) {
        return (SocketAnswer::NotEngine, Some(ans));
    }
    match http_get(path, "/version", VERSION_TIMEOUT, deadline) {
        Err(e) => ans.error = Some(format!("GET /version: {e}")),
        Ok(v) => read_version(&v, &mut ans),
    }
    (SocketAnswer::Answered, Some(ans))
}

/// Records what a /_ping answer says; true when it is an engine's "OK".
/// Kept apart from the socket I/O so the answer's text can be fuzzed.
pub fn read_ping(ping: &Response, ans: &mut EngineAnswer) -> bool {
    ans.ping_status = Some(ping.status);
    ans.server = ping.header("server").map(clean);
    ans.api_version = ping.header("api-version").map(clean);
    let body = String::from_utf8_lossy(&ping.body);
    ping.status == 200 && body.trim() == "OK"
}

/// Records what a /version answer says, or why it says nothing.
pub fn read_version(v: &Response, ans: &mut EngineAnswer) {
    match serde_json::from_slice::<Value>(&v.body) {
        Err(e) => {
            ans.error = Some(format!(
                "GET /version: HTTP {} with no JSON body ({e})",
                v.status
            ))
        }
        Ok(j) => {
            let s = |k: &str| j.get(k).and_then(Value::as_str).map(clean);
            ans.version = s("Version");
            ans.api_version = s("ApiVersion").or(ans.api_version.take());
            ans.os = s("Os");
            if let Some(c) = j.get("Components").and_then(Value::as_array) {
                ans.components = c
                    .iter()
                    .filter_map(|x| x.get("Name").and_then(Value::as_str))
                    .take(8)
                    .map(clean)
                    .collect();
            }
        }
    }
}

/// Engine answers are attacker-controlled text: keep them short and printable.
fn clean(s: &str) -> String {
    crate::util::sanitize::short(s, 120)
}

/// Why an engine socket gave no answer; Display is the words the report
/// shows (the socket's `answer.error`).
#[derive(Debug)]
pub enum AskError {
    /// The socket did not take the connection.
    Connect(Errno),
    /// The probe's deadline had passed before the request was sent.
    DeadlinePassed,
    /// The request could not be written.
    Write(std::io::Error),
    /// Bytes came back, but not an HTTP response head.
    NotHttp(http1::HeadError),
    /// No answer (a timeout, a reset, a close) within `ms`, the time that
    /// was left.
    NoAnswer { ms: u128, error: std::io::Error },
}

impl std::fmt::Display for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskError::Connect(e) => write!(f, "connect: {e}"),
            AskError::DeadlinePassed => f.write_str("deadline passed"),
            AskError::Write(e) => write!(f, "write: {e}"),
            AskError::NotHttp(h) => write!(f, "not an HTTP answer: {h}"),
            AskError::NoAnswer { ms, error } => write!(f, "no answer within {ms} ms: {error}"),
        }
    }
}

impl std::error::Error for AskError {}

/// One GET to an engine socket, bounded by `timeout` and the probe's
/// deadline.
fn http_get(
    path: &Path,
    target: &str,
    timeout: Duration,
    deadline: Instant,
) -> Result<Response, AskError> {
    let mut s = connect_unix(path).map_err(AskError::Connect)?;
    let deadline = deadline.min(Instant::now() + timeout);
    ask(&mut s, target, deadline)
}

/// What an engine is asked over a connected stream, and its answer read,
/// or why there is none. Apart from connecting, so that the engine's
/// answers can be fuzzed. HTTP/1.0, so that the engine closes the
/// connection after its answer.
pub fn ask<S: Timed>(s: &mut S, target: &str, deadline: Instant) -> Result<Response, AskError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(AskError::DeadlinePassed);
    }
    let req = Request {
        method: "GET",
        target,
        host: "localhost",
        headers: &[],
        version: Version::Http10,
    };
    http1::send(s, &req, deadline).map_err(AskError::Write)?;
    http1::receive(s, req.method, MAX_ANSWER, deadline).map_err(|e| match http1::head_error(&e) {
        Some(h) => AskError::NotHttp(h),
        None => AskError::NoAnswer {
            ms: left.as_nanos().div_ceil(1_000_000),
            error: e,
        },
    })
}

/// The catalog entry whose socket file name `p` bears (docker.sock,
/// podman.sock, containerd.sock ...).
fn named_like_engine(p: &Path) -> Option<&'static catalog::EngineSocket> {
    let name = p.file_name()?;
    catalog::engine_sockets()
        .iter()
        .find(|s| Path::new(&s.path).file_name() == Some(name))
}

fn is_engine(p: &SocketProbe) -> bool {
    // Found by the places search: an engine only by what it answered (a
    // dead docker.sock left in /tmp is nobody's engine).
    if p.origin.starts_with("search:") {
        return matches!(p.outcome, SocketAnswer::Answered)
            || (p.outcome == SocketAnswer::Accepted && p.engine != "unknown");
    }
    p.origin == "catalog"
        || p.origin.starts_with("env:")
        || p.outcome == SocketAnswer::Answered
        || p.engine != "unknown"
}

/// A socket of no engine's name, in a host mount (the host's own sockets,
/// where an engine's API is the boundary's whole question), that stayed
/// silent: unknown, not nothing. One found in the places sockets live
/// (/tmp, /run, the homes) stays nobody's engine unless it answers: every
/// desktop session has silent sockets there.
fn silent_in_host_mount(s: &SocketProbe) -> bool {
    s.engine == "unknown"
        && s.origin.starts_with("host-mount:")
        && s.outcome == SocketAnswer::NoAnswer
        && s.answer.as_ref().is_some_and(|a| a.silent)
}

pub fn evaluate(f: &SocketFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in &f.sockets {
        if silent_in_host_mount(s) {
            out.push(
                Finding::new(
                    Code::ProbeIncomplete,
                    format!("sockets:{}", s.path),
                    format!(
                        "the socket {} in a host mount took a connection and gave no answer to GET /_ping in time ({}): whether it is a container engine's API is unknown (an engine answers at once, but a busy or hung one is silent too)",
                        s.path,
                        s.answer.as_ref().and_then(|a| a.error.as_deref()).unwrap_or("no answer")
                    ),
                )
                .unknown()
                .with("probe", "sockets")
                .with("path", s.path.clone())
                .with("origin", s.origin.clone()),
            );
            continue;
        }
        if !is_engine(s) || s.outcome == SocketAnswer::NotSocket {
            continue;
        }
        let ev = |fnd: Finding| {
            let mut fnd = fnd
                .with("path", s.path.clone())
                .with("engine", s.engine.clone())
                .with("api", serde_json::to_value(s.api).unwrap_or(Value::Null))
                .with("origin", s.origin.clone())
                .with(
                    "outcome",
                    serde_json::to_value(s.outcome).unwrap_or(Value::Null),
                );
            if let Some(a) = &s.answer {
                fnd = fnd.with("answer", serde_json::to_value(a).unwrap_or(Value::Null));
            }
            fnd
        };
        match s.outcome {
            SocketAnswer::Answered | SocketAnswer::Accepted => {
                let what = if s.outcome == SocketAnswer::Answered {
                    let v = s
                        .answer
                        .as_ref()
                        .and_then(|a| a.version.clone())
                        .unwrap_or_else(|| "?".into());
                    format!("answered GET /_ping with OK (version {v})")
                } else {
                    "accepted a connection (gRPC API, not queried)".to_string()
                };
                out.push(ev(Finding::new(
                    Code::EngineSocketReachable,
                    &s.path,
                    format!(
                        "the {} socket {} {what}: this workspace can drive the engine",
                        s.engine, s.path
                    ),
                )));
            }
            _ => {
                let why = match s.outcome {
                    SocketAnswer::Refused => "nothing accepts connections on it now",
                    SocketAnswer::Denied => "this user may not connect to it",
                    SocketAnswer::Busy => "its listener does not accept connections",
                    SocketAnswer::NoAnswer => {
                        "it accepted a connection but gave no engine answer in time"
                    }
                    SocketAnswer::NotEngine => "it answered, but not as a container engine",
                    _ => "connecting to it failed",
                };
                let mut f = ev(Finding::new(
                    Code::EngineSocketPresent,
                    &s.path,
                    format!("the {} socket {} is present; {why}", s.engine, s.path),
                ));
                // Severity follows access: a socket this process may not
                // connect to ranks below one it could use.
                if s.outcome == SocketAnswer::Denied {
                    f = f.severity(Severity::Medium).with("usable", false);
                }
                out.push(f);
            }
        }
    }
    for (var, url) in &f.tcp_endpoints {
        out.push(
            Finding::new(
                Code::EngineTcpEndpoint,
                url,
                format!("{var} points engine clients at {url}"),
            )
            .with("variable", var.clone())
            .with("endpoint", url.clone())
            .with("connected", false),
        );
    }
    if !f.not_reached.is_empty() {
        let n = f.not_reached.len() + f.not_reached_more;
        let shown: Vec<&str> = f.not_reached.iter().take(10).map(String::as_str).collect();
        out.push(
            Finding::new(
                Code::ProbeIncomplete,
                "sockets:not-reached",
                format!(
                    "the probe's time (its deadline, or a mount's share of it) ran out before {n} socket(s) or place(s) were looked at: {}{}; the sockets found before are reported",
                    shown.join(", "),
                    if n > shown.len() { ", …" } else { "" }
                ),
            )
            .unknown()
            .with("probe", "sockets")
            .with("not_reached", f.not_reached.iter().take(50).cloned().collect::<Vec<_>>()),
        );
    }
    for mp in &f.walk_truncated {
        out.push(
            Finding::new(
                Code::ProbeIncomplete,
                format!("sockets:{mp}"),
                format!("the search for sockets under the host mount {mp} hit its budget; sockets deeper in it were not examined"),
            )
            .unknown()
            .with("probe", "sockets"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine's answer as the codec reads it, and what the probe keeps.
    #[test]
    fn ping_and_version_answers() {
        let head = |raw: &[u8]| http1::parse_head(raw).unwrap().unwrap();
        let (mut ping, used) =
            head(b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Libpod/4.3.1 (linux)\r\n\r\nOK");
        assert_eq!(used, 68);
        ping.body = b"OK".to_vec();
        let mut ans = EngineAnswer::default();
        assert!(read_ping(&ping, &mut ans));
        assert_eq!(ans.ping_status, Some(200));
        assert_eq!(ans.api_version.as_deref(), Some("1.41"));
        assert_eq!(ans.server.as_deref(), Some("Libpod/4.3.1 (linux)"));
        let (mut not_found, _) = head(b"HTTP/1.1 404 Not Found\r\n\r\n");
        not_found.body = b"OK".to_vec();
        assert!(!read_ping(&not_found, &mut EngineAnswer::default()));
        let (mut v, _) = head(b"HTTP/1.0 200 OK\r\n\r\n");
        v.body = br#"{"Version":"5.0\u001b[2J","Components":[{"Name":"Podman Engine"}]}"#.to_vec();
        read_version(&v, &mut ans);
        assert_eq!(ans.version.as_deref(), Some("5.0[2J"));
        assert_eq!(ans.components, ["Podman Engine"]);
        assert_eq!(ans.api_version.as_deref(), Some("1.41"), "kept from /_ping");
        v.body = b"<html>".to_vec();
        read_version(&v, &mut ans);
        assert!(ans
            .error
            .unwrap()
            .starts_with("GET /version: HTTP 200 with no JSON body"));
    }

    /// What is sent to an engine socket, and how each failure is said.
    #[test]
    fn engine_requests_and_their_errors() {
        let dir = std::env::temp_dir().join(format!("selfprobe-sockets-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let serve = |name: &str, answer: &'static [u8]| {
            let p = dir.join(name);
            let l = std::os::unix::net::UnixListener::bind(&p).unwrap();
            let h = std::thread::spawn(move || {
                use std::io::{Read, Write};
                let (mut c, _) = l.accept().unwrap();
                let mut got = vec![0u8; 1024];
                let n = c.read(&mut got).unwrap();
                got.truncate(n);
                c.write_all(answer).unwrap();
                got
            });
            (p, h)
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        let (p, h) = serve(
            "ok.sock",
            b"HTTP/1.0 200 OK\r\nServer: Docker/27.0\r\nContent-Length: 2\r\n\r\nOK",
        );
        let a = http_get(&p, "/_ping", PING_TIMEOUT, deadline).unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, &b"OK"[..]));
        let sent = String::from_utf8(h.join().unwrap()).unwrap();
        assert!(
            sent.starts_with("GET /_ping HTTP/1.0\r\nHost: localhost\r\n"),
            "{sent}"
        );
        assert!(!sent.contains("Connection:"), "{sent}");
        for (name, answer, said) in [
            (
                "ssh.sock",
                &b"SSH-2.0-OpenSSH_9.6\r\n\r\n"[..],
                "not an HTTP answer: the status line does not start with HTTP/",
            ),
            (
                "cut.sock",
                b"HTTP/1.0 200 OK\r\nServer: x",
                "not an HTTP answer: the answer ended before the end of its head",
            ),
            (
                "code.sock",
                b"HTTP/1.1 abc\r\n\r\n",
                "not an HTTP answer: the status line has no status code (three digits, 100 to 999)",
            ),
        ] {
            let (p, _h) = serve(name, answer);
            let e = http_get(&p, "/_ping", PING_TIMEOUT, deadline).unwrap_err();
            assert!(matches!(e, AskError::NotHttp(_)), "{e:?}");
            assert_eq!(e.to_string(), said);
        }
        // Accepted and never answered: bounded by the request's timeout.
        let silent = dir.join("silent.sock");
        let _l = std::os::unix::net::UnixListener::bind(&silent).unwrap();
        let t = Instant::now();
        let e = http_get(&silent, "/_ping", Duration::from_millis(200), deadline).unwrap_err();
        assert!(matches!(e, AskError::NoAnswer { ms: 200, .. }), "{e:?}");
        assert!(e.to_string().starts_with("no answer within 200 ms"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2));
        let e = http_get(&silent, "/_ping", PING_TIMEOUT, Instant::now()).unwrap_err();
        assert!(matches!(e, AskError::DeadlinePassed), "{e:?}");
        assert_eq!(e.to_string(), "deadline passed");
        let e = http_get(&dir.join("absent.sock"), "/_ping", PING_TIMEOUT, deadline).unwrap_err();
        assert!(matches!(e, AskError::Connect(Errno::ENOENT)), "{e:?}");
        assert_eq!(e.to_string(), format!("connect: {}", Errno::ENOENT));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn redacts_credentials_in_endpoints() {
        assert_eq!(
            redact("tcp://u:secret@10.0.0.1:2376"),
            "tcp://***@10.0.0.1:2376"
        );
        assert_eq!(redact("tcp://127.0.0.1:2375"), "tcp://127.0.0.1:2375");
    }
}
