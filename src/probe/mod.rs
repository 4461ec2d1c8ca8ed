//! The probes, one file per area. Each collects facts; evaluation into
//! findings is separate and pure (src/evaluate.rs). This module schedules
//! them from one table: every probe runs on its own thread with a deadline,
//! so a hung mount, a FIFO or a socket that never answers costs at most that
//! probe, never the run.

pub mod artifacts;
pub mod devices;
pub mod gitstate;
pub mod mounts;
pub mod namespaces;
pub mod network;
pub mod privilege;
pub mod repro;
pub mod rootpaths;
pub mod secrets;
pub mod sockets;
pub mod teardown;
pub mod writable;

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use crate::facts::boundary::{self, Boundary};
use crate::facts::mounts::{self as mount_table, MountFacts};
use crate::facts::unchecked::Unchecked;
use crate::facts::users::{self, Users};
use crate::host::{Cleanup, Host};
use crate::policy::Policy;
use crate::util::panics;

/// How long one probe may take unless the run's own deadline is sooner.
pub const PROBE_BUDGET: Duration = Duration::from_secs(5);

pub struct Context {
    pub host: Host,
    pub policy: Policy,
    /// Where the workspace should be and where that came from.
    pub workspace: Option<(PathBuf, String)>,
    pub run_id: String,
    pub write_test: bool,
    pub cleanup: Arc<Cleanup>,
    /// What the command line adds to the policy's [network] section.
    pub net: network::Options,
}

/// Read back (model::read), an entry must name how its probe ended; the
/// rest an older report may lack.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeRecord {
    #[serde(default)]
    pub name: Text,
    #[serde(default)]
    pub phase: u8,
    pub status: ProbeStatus,
    #[serde(default)]
    pub duration_us: u128,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a probe ended, as the JSON report's `probes[].status` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeStatus {
    /// It finished and its facts are complete.
    Ok,
    /// It finished but could not check everything (the reason says what).
    Incomplete,
    /// Its deadline passed first.
    Timeout,
    /// It failed internally: it panicked (src/util/panics.rs).
    Panic,
}

impl ProbeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeStatus::Ok => "ok",
            ProbeStatus::Incomplete => "incomplete",
            ProbeStatus::Timeout => "timeout",
            ProbeStatus::Panic => "panic",
        }
    }
}

impl std::fmt::Display for ProbeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub enum Settled<T> {
    Done(T),
    Failed(Unchecked),
    TimedOut,
    Panicked(String),
}

/// What a probe's thread sends when it ends: its result (or, when it
/// panicked, the panic's message) and how long it ran.
type Ended<T> = (Result<Result<T, Unchecked>, String>, Duration);

/// A probe started on its own thread.
pub struct Running<T> {
    name: &'static str,
    phase: u8,
    started: Instant,
    deadline: Instant,
    /// The probe's result and how long it ran, measured on its own thread
    /// (waiting on the probes one after another must not add to it).
    rx: mpsc::Receiver<Ended<T>>,
}

pub fn spawn<T, F>(name: &'static str, phase: u8, deadline: Instant, f: F) -> Running<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Unchecked> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let spawned = std::thread::Builder::new()
        .name(format!("probe-{name}"))
        .spawn(move || {
            let t0 = Instant::now();
            // A panic sends its message instead (src/util/panics.rs).
            let on_panic = tx.clone();
            let r = panics::guard(
                move |m| {
                    let _ = on_panic.send((Err(m), t0.elapsed()));
                },
                || {
                    panics::planted(format_args!("probe:{name}"));
                    f()
                },
            );
            let _ = tx.send((Ok(r), t0.elapsed()));
        });
    if let Err(e) = spawned {
        // Could not even start a thread: report it through the same path.
        let (tx, rx2) = mpsc::channel();
        let _ = tx.send((Ok(Err(Unchecked::NoThread(e))), Duration::ZERO));
        return Running {
            name,
            phase,
            started,
            deadline,
            rx: rx2,
        };
    }
    Running {
        name,
        phase,
        started,
        deadline,
        rx,
    }
}

impl<T> Running<T> {
    /// Waits until the probe ends or its deadline passes. A probe that
    /// overruns is abandoned: its thread may stay blocked (a hung mount),
    /// but the run goes on and the process exits without it.
    pub fn wait(self, records: &mut Vec<ProbeRecord>) -> Settled<T> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let (res, dur) = match self.rx.recv_timeout(left) {
            Ok((r, d)) => (Ok(r), d.as_micros()),
            Err(e) => (Err(e), self.started.elapsed().as_micros()),
        };
        let (out, status, reason) = match res {
            Ok(Ok(Ok(v))) => (Settled::Done(v), ProbeStatus::Ok, None),
            Ok(Ok(Err(e))) => {
                let why = e.to_string();
                (Settled::Failed(e), ProbeStatus::Incomplete, Some(why))
            }
            Ok(Err(msg)) => (
                Settled::Panicked(msg.clone()),
                ProbeStatus::Panic,
                Some(msg),
            ),
            Err(_) => (
                Settled::TimedOut,
                ProbeStatus::Timeout,
                Some(format!("did not finish within {} ms", left.as_millis())),
            ),
        };
        records.push(ProbeRecord {
            name: self.name.into(),
            phase: self.phase,
            status,
            duration_us: dur,
            reason,
        });
        out
    }
}

/// Everything the probes found, for the reports' inventory.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Facts {
    /// Which boundary exists (src/facts/boundary.rs): the fact the other findings'
    /// wording and severities follow.
    pub boundary: Option<Boundary>,
    pub mounts: Option<MountFacts>,
    /// Users and homes: read by the probes, not a section of the report.
    #[serde(skip)]
    pub users: Option<Users>,
    pub privilege: Option<privilege::PrivFacts>,
    /// The workspace user's paths to root (sudo, doas, writable account
    /// files, group doors, setuid and file-capability programs).
    pub rootpaths: Option<rootpaths::RootPathFacts>,
    pub namespaces: Option<namespaces::NsFacts>,
    pub devices: Option<devices::DeviceFacts>,
    pub sockets: Option<sockets::SocketFacts>,
    pub writable: Option<writable::WritableFacts>,
    pub network: Option<network::NetFacts>,
    /// The workspace's git repository (repo scope's evidence).
    pub repository: Option<gitstate::Repository>,
    pub secrets: Option<secrets::SecretFacts>,
    /// The image's identity (phase 4), where src/attest looks for it.
    pub image: Option<repro::ImageIdentity>,
    pub repro: Option<repro::ReproFacts>,
    pub caches: Option<artifacts::CacheFacts>,
    pub browsers: Option<artifacts::BrowserFacts>,
    pub artifacts: Option<artifacts::ArtifactFacts>,
    pub teardown: Option<teardown::TeardownFacts>,
}

/// Why a probe has no facts: what the incomplete finding says and the
/// scorecard reads. Typed, so the run's deadline is told from a probe's own
/// budget without matching on message text.
#[derive(Debug)]
pub enum Cut {
    /// It returned an error: it could not check (the reason says what).
    Failed(Unchecked),
    /// Its own budget (PROBE_BUDGET, or the network's) passed first.
    TimedOut,
    /// The run's deadline (--timeout) passed before it finished.
    RunDeadline,
    /// It panicked (src/util/panics.rs).
    Panicked(String),
}

/// One probe that ended without facts.
#[derive(Debug)]
pub struct Unfinished {
    pub probe: &'static str,
    pub phase: u8,
    pub cut: Cut,
}

/// Everything gathered, before any finding is made: the facts, how each
/// probe ended, and what the evaluation needs to know about the run.
pub struct Gathered {
    pub facts: Facts,
    pub records: Vec<ProbeRecord>,
    /// Probes without facts, in the order they were waited for.
    pub unfinished: Vec<Unfinished>,
    pub panicked: bool,
    /// Probes still running when the run's own deadline (--timeout) passed.
    pub cut_by_deadline: Vec<Text>,
    /// Why the environment the probes read is unknown (`--root` without
    /// proc/self/environ).
    pub env_missing: Option<String>,
    /// Why /proc was not believed (not procfs).
    pub proc_untrusted: Option<String>,
    /// Whether the network probe was asked to send anything.
    pub network_asked: bool,
    /// Whether the users fact (src/facts/users.rs) did not finish: the
    /// probes that read it went on with no names and no homes.
    pub users_missing: bool,
    /// The run's --timeout, for the reason a probe it cut gives.
    pub timeout: Duration,
}

#[cfg(test)]
impl Gathered {
    /// Nothing gathered yet: `unfinished` probes, and the run's --timeout.
    pub fn for_tests(unfinished: Vec<Unfinished>, timeout: Duration) -> Gathered {
        Gathered {
            facts: Facts::default(),
            records: Vec::new(),
            unfinished,
            panicked: false,
            cut_by_deadline: Vec::new(),
            env_missing: None,
            proc_untrusted: None,
            network_asked: false,
            users_missing: false,
            timeout,
        }
    }
}

/// What a probe's thread gets: the run's context, the mount table (from
/// phase 1, when it was read), and the deadline its own work stops at, a
/// little before the runner gives up on it, so a slow answer is classified
/// rather than timed out.
struct Input {
    ctx: Arc<Context>,
    mounts: Option<Arc<MountFacts>>,
    /// The boundary (phase 1), when it was told.
    boundary: Option<Arc<Boundary>>,
    users: Arc<Users>,
    inner: Instant,
    deadline: Instant,
    /// What the probe had found so far, for when its deadline cuts it.
    kept: Kept,
}

/// The facts a probe keeps as it goes: when its deadline passes before it
/// ends, these are reported (with the probe marked as cut), not nothing.
type Kept = Arc<std::sync::Mutex<Option<Fill>>>;

impl Input {
    /// Keeps `f` as what this probe has found so far.
    fn keep(&self, f: Fill) {
        if let Ok(mut k) = self.kept.lock() {
            *k = Some(f);
        }
    }

    fn workspace(&self) -> Option<&std::path::Path> {
        self.ctx.workspace.as_ref().map(|w| w.0.as_path())
    }
}

/// A probe's facts on their way into `Facts`.
type Fill = Box<dyn FnOnce(&mut Facts) + Send>;

fn fill<T: Send + 'static>(v: T, set: fn(&mut Facts, T)) -> Fill {
    Box::new(move |f| set(f, v))
}

/// One row of the probe table.
struct Entry {
    name: &'static str,
    phase: u8,
    /// How long before the probe's deadline its own work stops.
    margin: Duration,
    run: fn(&Input) -> Result<Fill, Unchecked>,
}

const fn entry(
    name: &'static str,
    phase: u8,
    margin_ms: u64,
    run: fn(&Input) -> Result<Fill, Unchecked>,
) -> Entry {
    Entry {
        name,
        phase,
        margin: Duration::from_millis(margin_ms),
        run,
    }
}

/// Phase 1: the mount table and the boundary, which the other probes'
/// walks and wording follow.
const FIRST: &[Entry] = &[
    entry("mounts", 1, 0, |i| {
        let mut f = mount_table::collect(&i.ctx.host, i.ctx.workspace.clone(), i.deadline)?;
        mount_table::apply_policy(&mut f, &i.ctx.policy);
        Ok(fill(f, |x, v| x.mounts = Some(v)))
    }),
    entry("boundary", 1, 0, |i| {
        Ok(fill(boundary::collect(&i.ctx.host), |x, v| {
            x.boundary = Some(v)
        }))
    }),
];

/// Everything after phase 1, side by side. Secrets (phase 3) need only the
/// mounts and run beside phase 2; phases 4 and 5 need the mount table to
/// tell which mount holds a cache, a profile or an artifact.
const REST: &[Entry] = &[
    entry("privilege", 2, 0, |i| {
        Ok(fill(privilege::collect(&i.ctx.host)?, |x, v| {
            x.privilege = Some(v)
        }))
    }),
    // `sudo -n -l` and the program scan stop first, so a hung sudo is a
    // classified answer.
    entry("rootpaths", 2, 300, |i| {
        Ok(fill(
            rootpaths::collect(&i.ctx.host, &i.users, i.inner)?,
            |x, v| x.rootpaths = Some(v),
        ))
    }),
    entry("namespaces", 2, 0, |i| {
        Ok(fill(namespaces::collect(&i.ctx.host)?, |x, v| {
            x.namespaces = Some(v)
        }))
    }),
    entry("devices", 2, 0, |i| {
        Ok(fill(devices::collect(&i.ctx.host)?, |x, v| {
            x.devices = Some(v)
        }))
    }),
    // A slow engine yields a classified answer, not a timeout.
    // What it found is kept as it goes: cut by its deadline, it still
    // reports those sockets (and names what it did not reach).
    entry("sockets", 2, 200, |i| {
        let homes = i.users.home_paths(users::MAX_HOMES);
        let keep = |f: &sockets::SocketFacts| {
            let mut f = f.clone();
            f.not_reached
                .push("(the probe was cut here by its deadline)".into());
            i.keep(fill(f, |x, v| x.sockets = Some(v)));
        };
        let f = sockets::collect(&i.ctx.host, i.mounts.as_deref(), &homes, i.inner, &keep);
        Ok(fill(f, |x, v| x.sockets = Some(v)))
    }),
    entry("writable", 2, 0, |i| {
        let c = &i.ctx;
        let wt = c
            .write_test
            .then_some((c.cleanup.as_ref(), c.run_id.as_str()));
        let userns = i.boundary.as_ref().and_then(|b| b.initial_user_ns);
        let f = writable::collect(&c.host, i.mounts.as_deref(), userns, wt);
        Ok(fill(f, |x, v| x.writable = Some(v)))
    }),
    entry("secrets", 3, 300, |i| {
        let f = secrets::collect(
            &i.ctx.host,
            i.mounts.as_deref(),
            &i.users,
            i.workspace(),
            i.inner,
        );
        Ok(fill(f, |x, v| x.secrets = Some(v)))
    }),
    entry("teardown", 6, 0, |i| {
        Ok(fill(
            teardown::collect(&i.ctx.host, i.mounts.as_deref())?,
            |x, v| x.teardown = Some(v),
        ))
    }),
    // The repository's git state: read from .git, the status from git.
    entry("repository", 1, 0, |i| {
        let r = i
            .workspace()
            .and_then(|w| gitstate::collect(&i.ctx.host, w, i.deadline));
        Ok(fill(r, |x, v| x.repository = v))
    }),
    entry("repro", 4, 300, |i| {
        let f = repro::collect(&i.ctx.host, i.mounts.as_deref(), i.workspace(), i.inner)?;
        Ok(fill(f, |x, v| {
            x.image = Some(v.image.clone());
            x.repro = Some(v)
        }))
    }),
    entry("caches", 5, 300, |i| {
        let f = artifacts::collect_caches(
            &i.ctx.host,
            i.mounts.as_deref(),
            &i.users,
            i.workspace(),
            i.inner,
        )?;
        Ok(fill(f, |x, v| x.caches = Some(v)))
    }),
    entry("browsers", 5, 300, |i| {
        let f = artifacts::collect_browsers(&i.ctx.host, i.mounts.as_deref(), &i.users, i.inner)?;
        Ok(fill(f, |x, v| x.browsers = Some(v)))
    }),
    entry("artifacts", 5, 300, |i| {
        let f = artifacts::collect_artifacts(&i.ctx.host, i.mounts.as_deref(), &i.users, i.inner)?;
        Ok(fill(f, |x, v| x.artifacts = Some(v)))
    }),
];

/// The network: its destinations wait on the network, not on the other
/// probes, so it starts first and is waited for last. Nothing is sent
/// unless asked.
const NETWORK: Entry = entry("network", 3, 300, |i| {
    let c = &i.ctx;
    Ok(fill(
        network::collect(&c.host, &c.policy, &c.net, i.inner),
        |x, v| x.network = Some(v),
    ))
});

/// The facts later rows read, once the earlier ones have them.
#[derive(Default)]
struct Had {
    mounts: Option<Arc<MountFacts>>,
    boundary: Option<Arc<Boundary>>,
    users: Arc<Users>,
}

/// Users and homes, once (src/facts/users.rs), for the probes that name
/// owners or look in homes. After the mount table: mounts show homes too,
/// and nothing on a mount that did not answer is looked at. Under a
/// deadline of its own, so a slow /home costs this one step.
const USERS: Entry = entry("users", 1, 0, |i| {
    let u = Users::collect(&i.ctx.host, i.mounts.as_deref());
    Ok(fill(u, |x, v| x.users = Some(v)))
});

/// Starts one row of the table on its own thread.
fn start(e: &'static Entry, ctx: &Arc<Context>, had: &Had, budget: Duration) -> Started {
    let deadline = ctx.host.deadline_within(budget);
    let kept: Kept = Arc::default();
    let input = Input {
        kept: kept.clone(),
        ctx: ctx.clone(),
        mounts: had.mounts.clone(),
        boundary: had.boundary.clone(),
        users: had.users.clone(),
        inner: deadline.checked_sub(e.margin).unwrap_or(deadline),
        deadline,
    };
    Started {
        running: spawn(e.name, e.phase, deadline, move || (e.run)(&input)),
        kept,
    }
}

/// A probe running, and what it has kept so far.
struct Started {
    running: Running<Fill>,
    kept: Kept,
}

/// Waits for one probe and puts its facts in place, or records why there
/// are none. A probe cut by its deadline that kept facts as it went has
/// those put in place, and is still recorded as cut.
fn settle(s: Started, facts: &mut Facts, g: &mut Gathered) {
    let r = s.running;
    let (probe, phase) = (r.name, r.phase);
    let cut = match r.wait(&mut g.records) {
        Settled::Done(put) => return put(facts),
        Settled::Failed(e) => Cut::Failed(e),
        Settled::TimedOut => {
            if let Some(put) = s.kept.lock().ok().and_then(|mut k| k.take()) {
                put(facts);
            }
            Cut::TimedOut
        }
        Settled::Panicked(m) => {
            g.panicked = true;
            Cut::Panicked(m)
        }
    };
    g.unfinished.push(Unfinished { probe, phase, cut });
}

/// Runs the probes and gathers their facts; no finding is made here (that
/// is src/evaluate.rs). Phase 1 (the mount table and the boundary) comes
/// first because the other probes look inside the host mounts; the rest run
/// side by side, and the network probe from the start.
pub fn gather(ctx: Arc<Context>) -> Gathered {
    let mut facts = Facts::default();
    let mut g = Gathered {
        facts: Facts::default(),
        records: Vec::new(),
        unfinished: Vec::new(),
        panicked: false,
        cut_by_deadline: Vec::new(),
        env_missing: ctx.host.env().missing.clone(),
        proc_untrusted: ctx.host.proc_untrusted().map(str::to_string),
        network_asked: network::asked(&ctx.policy, &ctx.net),
        users_missing: false,
        timeout: ctx.host.timeout(),
    };
    let none = Had::default();
    let net = g.network_asked.then(|| {
        start(
            &NETWORK,
            &ctx,
            &none,
            network::budget(&ctx.policy, &ctx.net),
        )
    });

    // Not asked to send anything, the network's resolver files are still
    // read: on a thread with a deadline, like every read of the probed
    // system (not a probe of its own: no record); if they hang, the
    // resolver is unknown.
    let resolver = (!g.network_asked).then(|| {
        let c = ctx.clone();
        let deadline = ctx.host.deadline_within(PROBE_BUDGET);
        spawn("resolver", 3, deadline, move || {
            Ok(network::resolver(&c.host))
        })
    });

    let first: Vec<_> = FIRST
        .iter()
        .map(|e| start(e, &ctx, &none, PROBE_BUDGET))
        .collect();
    for r in first {
        settle(r, &mut facts, &mut g);
    }
    // Seen from a sandbox over the machine's own root filesystem, "/" is
    // the host's root: the mount table learns it from the boundary.
    if let (Some(m), Some(b)) = (facts.mounts.as_mut(), facts.boundary.as_ref()) {
        if b.machine_root {
            mount_table::machine_root(&ctx.host, m);
        }
    }
    let mut had = Had {
        mounts: facts.mounts.take().map(Arc::new),
        boundary: facts.boundary.clone().map(Arc::new),
        users: Arc::default(),
    };
    settle(start(&USERS, &ctx, &had, users::BUDGET), &mut facts, &mut g);
    // Without it the readers go on as with an unreadable /etc/passwd and no
    // homes found; each says what that left unchecked (src/evaluate.rs).
    g.users_missing = facts.users.is_none();
    had.users = Arc::new(facts.users.take().unwrap_or_default());
    let mounts = had.mounts.clone();

    let rest: Vec<_> = REST
        .iter()
        .map(|e| start(e, &ctx, &had, PROBE_BUDGET))
        .collect();
    // Only the probes hold the table now, so it comes back without a copy.
    drop(had);
    for r in rest {
        settle(r, &mut facts, &mut g);
    }
    match net {
        Some(r) => settle(r, &mut facts, &mut g),
        None => {
            let mut f = network::not_asked(&ctx.host, &ctx.policy);
            if let Some(Settled::Done(conf)) = resolver.map(|r| r.wait(&mut Vec::new())) {
                f.resolver = Some(conf);
            }
            facts.network = Some(f);
        }
    }
    facts.mounts = mounts.map(|m| Arc::try_unwrap(m).unwrap_or_else(|a| (*a).clone()));

    // A probe that timed out once the run's deadline had passed was cut by
    // --timeout, not by its own budget: the run as a whole is unfinished.
    if Instant::now() >= ctx.host.deadline() {
        for u in g
            .unfinished
            .iter_mut()
            .filter(|u| matches!(u.cut, Cut::TimedOut))
        {
            u.cut = Cut::RunDeadline;
        }
        g.cut_by_deadline = g
            .records
            .iter()
            .filter(|r| r.status == ProbeStatus::Timeout)
            .map(|r| r.name.clone())
            .collect();
    }
    g.facts = facts;
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe its deadline cuts puts what it kept in place, and is still
    /// recorded as cut; one that kept nothing has no facts.
    #[test]
    fn a_cut_probe_keeps_what_it_found() {
        for keeps in [true, false] {
            let kept: Kept = Arc::default();
            let k = kept.clone();
            let deadline = Instant::now() + Duration::from_millis(100);
            let running = spawn("sockets", 2, deadline, move || {
                if keeps {
                    let mut f = sockets::SocketFacts::default();
                    f.not_reached.push("/tmp/x".into());
                    *k.lock().unwrap() = Some(fill(f, |x, v| x.sockets = Some(v)));
                }
                std::thread::sleep(Duration::from_secs(2));
                Ok(fill(sockets::SocketFacts::default(), |x, v| {
                    x.sockets = Some(v)
                }))
            });
            let mut facts = Facts::default();
            let mut g = Gathered::for_tests(Vec::new(), Duration::from_secs(1));
            settle(Started { running, kept }, &mut facts, &mut g);
            assert_eq!(g.unfinished.len(), 1);
            assert!(matches!(g.unfinished[0].cut, Cut::TimedOut));
            assert_eq!(g.records[0].status, ProbeStatus::Timeout);
            match (keeps, &facts.sockets) {
                (true, Some(s)) => assert_eq!(s.not_reached, ["/tmp/x"]),
                (false, None) => {}
                (k, s) => panic!("kept {k}: {s:?}"),
            }
        }
    }
}
