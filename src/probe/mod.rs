//! The probes, one file per area. Each collects facts; evaluation into
//! findings is separate and pure. This module schedules them: every probe
//! runs on its own thread with a deadline, so a hung mount, a FIFO or a
//! socket that never answers costs at most that probe, never the run.

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

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::facts::boundary::{self, Boundary};
use crate::facts::mounts::{self as mount_table, MountFacts};
use crate::facts::users;
use crate::finding::Finding;
use crate::host::{Cleanup, Host};
use crate::policy::Policy;

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

#[derive(Debug, Clone, Serialize)]
pub struct ProbeRecord {
    pub name: &'static str,
    pub phase: u8,
    pub status: ProbeStatus,
    pub duration_us: u128,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a probe ended, as the JSON report's `probes[].status` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeStatus {
    /// It finished and its facts are complete.
    Ok,
    /// It finished but could not check everything (the reason says what).
    Incomplete,
    /// Its deadline passed first.
    Timeout,
    /// It failed internally; the panic was caught.
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

pub enum Outcome<T> {
    Done(T),
    Failed(String),
    TimedOut,
    Panicked(String),
}

/// A probe started on its own thread.
pub struct Running<T> {
    name: &'static str,
    phase: u8,
    started: Instant,
    deadline: Instant,
    /// The probe's result and how long it ran, measured on its own thread
    /// (waiting on the probes one after another must not add to it).
    rx: mpsc::Receiver<(std::thread::Result<Result<T, String>>, Duration)>,
}

pub fn spawn<T, F>(name: &'static str, phase: u8, deadline: Instant, f: F) -> Running<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, String> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let spawned = std::thread::Builder::new()
        .name(format!("probe-{name}"))
        .spawn(move || {
            let t0 = Instant::now();
            let r = catch_unwind(AssertUnwindSafe(f));
            let _ = tx.send((r, t0.elapsed()));
        });
    if let Err(e) = spawned {
        // Could not even start a thread: report it through the same path.
        let (tx, rx2) = mpsc::channel();
        let _ = tx.send((
            Ok(Err(format!("cannot start a thread: {e}"))),
            Duration::ZERO,
        ));
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
    pub fn wait(self, records: &mut Vec<ProbeRecord>) -> Outcome<T> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let (res, dur) = match self.rx.recv_timeout(left) {
            Ok((r, d)) => (Ok(r), d.as_micros()),
            Err(e) => (Err(e), self.started.elapsed().as_micros()),
        };
        let (out, status, reason) = match res {
            Ok(Ok(Ok(v))) => (Outcome::Done(v), ProbeStatus::Ok, None),
            Ok(Ok(Err(e))) => (Outcome::Failed(e.clone()), ProbeStatus::Incomplete, Some(e)),
            Ok(Err(p)) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                (
                    Outcome::Panicked(msg.clone()),
                    ProbeStatus::Panic,
                    Some(msg),
                )
            }
            Err(_) => (
                Outcome::TimedOut,
                ProbeStatus::Timeout,
                Some(format!("did not finish within {} ms", left.as_millis())),
            ),
        };
        records.push(ProbeRecord {
            name: self.name,
            phase: self.phase,
            status,
            duration_us: dur,
            reason,
        });
        out
    }
}

/// Everything the probes found, for the reports' inventory.
#[derive(Debug, Default, Serialize)]
pub struct Facts {
    /// Which boundary exists (src/facts/boundary.rs): the fact the other findings'
    /// wording and severities follow.
    pub boundary: Option<Boundary>,
    pub mounts: Option<MountFacts>,
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

pub struct Collected {
    pub facts: Facts,
    pub findings: Vec<Finding>,
    pub records: Vec<ProbeRecord>,
    pub panicked: bool,
    /// Probes still running when the run's own deadline (--timeout) passed.
    pub cut_by_deadline: Vec<&'static str>,
}

fn incomplete(probe: &str, phase: u8, why: String) -> Finding {
    Finding::new(
        "probe.incomplete",
        probe.to_string(),
        format!("the {probe} probe could not finish: {why}"),
    )
    .unknown()
    .with("probe", probe.to_string())
    .with("phase", phase)
    .with("reason", why)
}

/// Unwraps a probe outcome into its facts, or records why there are none.
fn take<T>(
    o: Outcome<T>,
    probe: &str,
    phase: u8,
    findings: &mut Vec<Finding>,
    panicked: &mut bool,
) -> Option<T> {
    match o {
        Outcome::Done(v) => Some(v),
        Outcome::Failed(e) => {
            findings.push(incomplete(probe, phase, e));
            None
        }
        Outcome::TimedOut => {
            findings.push(incomplete(probe, phase, "it timed out".into()));
            None
        }
        Outcome::Panicked(m) => {
            *panicked = true;
            findings.push(incomplete(
                probe,
                phase,
                format!("it failed internally ({m})"),
            ));
            None
        }
    }
}

/// Runs the probes. Mounts come first because sockets, writability,
/// secrets, caches, profiles, artifacts and teardown look inside the host
/// mounts; the rest run side by side, and the network probe from the start.
pub fn run(ctx: Arc<Context>) -> Collected {
    let mut records = Vec::new();
    let mut findings = Vec::new();
    let mut panicked = false;
    let budget = |ctx: &Context| ctx.host.deadline_within(PROBE_BUDGET);

    // Network first: its destinations wait on the network, not on the
    // other probes, so the phases overlap. Nothing is sent unless asked.
    let net_running = network::asked(&ctx.policy, &ctx.net).then(|| {
        let deadline = ctx
            .host
            .deadline_within(network::budget(&ctx.policy, &ctx.net));
        let inner = deadline
            .checked_sub(Duration::from_millis(300))
            .unwrap_or(deadline);
        let c = ctx.clone();
        spawn("network", 3, deadline, move || {
            Ok(network::collect(&c.host, &c.policy, &c.net, inner))
        })
    });

    // The boundary beside the mount table: a handful of small reads.
    let c = ctx.clone();
    let boundary_running = spawn("boundary", 1, budget(&ctx), move || {
        Ok(boundary::collect(&c.host))
    });

    let c = ctx.clone();
    let d = budget(&ctx);
    let m = spawn("mounts", 1, d, move || {
        let mut f = mount_table::collect(&c.host, c.workspace.clone(), d)?;
        mount_table::apply_policy(&mut f, &c.policy);
        Ok(f)
    })
    .wait(&mut records);
    let mount_facts = take(m, "mounts", 1, &mut findings, &mut panicked).map(Arc::new);
    // Users and homes, once (src/facts/users.rs), for the probes that name
    // owners or look in homes. After the mount table: mounts show homes too,
    // and nothing on a mount that did not answer is looked at. Under a
    // deadline of its own, so a slow /home costs this one step.
    let (c, mf) = (ctx.clone(), mount_facts.clone());
    let u = spawn(
        "users",
        1,
        ctx.host.deadline_within(users::BUDGET),
        move || Ok(users::Users::collect(&c.host, mf.as_deref())),
    )
    .wait(&mut records);
    let users_fact = take(u, "users", 1, &mut findings, &mut panicked);
    if users_fact.is_none() {
        // The readers go on as with an unreadable /etc/passwd and no homes
        // found; each says what that left unchecked.
        for (probe, phase, what) in [
            (
                "rootpaths",
                2,
                "the user's name, which sudoers and doas rules match",
            ),
            ("secrets", 3, "the credential files in homes"),
            ("caches", 5, "the caches and tool configurations in homes"),
            ("browsers", 5, "the browser profiles in homes"),
        ] {
            let why = format!("{what} could not be checked: the users fact did not finish");
            let mut f = incomplete(probe, phase, why);
            f.subject = format!("{probe}:users");
            f.id = crate::finding::finding_id(&f.code, &f.subject);
            findings.push(f);
        }
    }
    let users_fact = Arc::new(users_fact.unwrap_or_default());
    let boundary_facts = take(
        boundary_running.wait(&mut records),
        "boundary",
        1,
        &mut findings,
        &mut panicked,
    );
    // Without it the findings keep the container wording they always had.
    let bd = boundary_facts.clone().unwrap_or_default();
    if let Some(b) = &boundary_facts {
        findings.extend(boundary::evaluate(b));
    }
    // Under --root the environment is the tree's /proc/self/environ; a
    // tree without one leaves these probes' variables unknown, so each says
    // it could not check them and its controls are not assessed.
    if let Some(why) = &ctx.host.env().missing {
        let mut readers = vec![
            (
                "sockets",
                2,
                "DOCKER_HOST, CONTAINER_HOST, BUILDKIT_HOST and CONTAINERD_ADDRESS",
            ),
            (
                "secrets",
                3,
                "secret-looking variables, SSH_AUTH_SOCK, HOME and the credential pointers",
            ),
            (
                "caches",
                5,
                "the cache locations variables name (CARGO_HOME, XDG_CACHE_HOME, ...)",
            ),
        ];
        if network::asked(&ctx.policy, &ctx.net) {
            readers.push((
                "network",
                3,
                "the proxy variables and SSL_CERT_FILE / SSL_CERT_DIR",
            ));
        }
        for (probe, phase, what) in readers {
            let mut f = incomplete(probe, phase, format!("{what} could not be checked: {why}"));
            f.subject = format!("{probe}:environ");
            f.id = crate::finding::finding_id(&f.code, &f.subject);
            findings.push(f);
        }
    }

    let c = ctx.clone();
    let privilege = spawn("privilege", 2, budget(&ctx), move || {
        privilege::collect(&c.host)
    });
    let (c, uf) = (ctx.clone(), users_fact.clone());
    let rp_deadline = budget(&ctx);
    // `sudo -n -l` and the program scan stop a little before the runner
    // gives up on the probe, so a hung sudo is a classified answer.
    let inner = rp_deadline
        .checked_sub(Duration::from_millis(300))
        .unwrap_or(rp_deadline);
    let rootpaths = spawn("rootpaths", 2, rp_deadline, move || {
        rootpaths::collect(&c.host, &uf, inner)
    });
    let c = ctx.clone();
    let namespaces = spawn("namespaces", 2, budget(&ctx), move || {
        namespaces::collect(&c.host)
    });
    let c = ctx.clone();
    let devices = spawn("devices", 2, budget(&ctx), move || {
        devices::collect(&c.host)
    });
    let c = ctx.clone();
    let mf = mount_facts.clone();
    let sock_deadline = budget(&ctx);
    // The probe stops its own requests a little before the runner gives up
    // on it, so a slow engine yields a classified answer, not a timeout.
    let inner = sock_deadline
        .checked_sub(Duration::from_millis(200))
        .unwrap_or(sock_deadline);
    let sockets = spawn("sockets", 2, sock_deadline, move || {
        Ok(sockets::collect(&c.host, mf.as_deref(), inner))
    });
    let c = ctx.clone();
    let mf = mount_facts.clone();
    let writable = spawn("writable", 2, budget(&ctx), move || {
        let wt = c
            .write_test
            .then_some((c.cleanup.as_ref(), c.run_id.as_str()));
        Ok(writable::collect(&c.host, mf.as_deref(), wt))
    });

    // Phase 3 secrets need only the mounts; they run beside phase 2.
    let (c, mf, uf) = (ctx.clone(), mount_facts.clone(), users_fact.clone());
    let sec_deadline = budget(&ctx);
    let inner = sec_deadline
        .checked_sub(Duration::from_millis(300))
        .unwrap_or(sec_deadline);
    let secrets = spawn("secrets", 3, sec_deadline, move || {
        let ws = c.workspace.as_ref().map(|w| w.0.as_path());
        Ok(secrets::collect(&c.host, mf.as_deref(), &uf, ws, inner))
    });

    // Phases 4 and 5 need the mount table (which mount holds a cache, a
    // profile or an artifact) and stop their own work a little before the
    // runner gives up on them, so a big tree yields a truncated answer.
    let inner = |d: Instant| d.checked_sub(Duration::from_millis(300)).unwrap_or(d);
    let (c, mf, d) = (ctx.clone(), mount_facts.clone(), budget(&ctx));
    let repro = spawn("repro", 4, d, move || {
        let ws = c.workspace.as_ref().map(|w| w.0.as_path());
        repro::collect(&c.host, mf.as_deref(), ws, inner(d))
    });
    let (c, mf, d) = (ctx.clone(), mount_facts.clone(), budget(&ctx));
    let uf = users_fact.clone();
    let caches = spawn("caches", 5, d, move || {
        let ws = c.workspace.as_ref().map(|w| w.0.as_path());
        artifacts::collect_caches(&c.host, mf.as_deref(), &uf, ws, inner(d))
    });
    let (c, mf, d) = (ctx.clone(), mount_facts.clone(), budget(&ctx));
    let uf = users_fact.clone();
    let browsers = spawn("browsers", 5, d, move || {
        artifacts::collect_browsers(&c.host, mf.as_deref(), &uf, inner(d))
    });
    let (c, mf, d) = (ctx.clone(), mount_facts.clone(), budget(&ctx));
    let uf = users_fact.clone();
    let persistent = spawn("artifacts", 5, d, move || {
        artifacts::collect_artifacts(&c.host, mf.as_deref(), &uf, inner(d))
    });
    // The repository's git state: read from .git, the status from git.
    let (c, d) = (ctx.clone(), budget(&ctx));
    let repository = spawn("repository", 1, d, move || {
        Ok(c.workspace
            .as_ref()
            .and_then(|w| gitstate::collect(&c.host, &w.0, d)))
    });
    let c = ctx.clone();
    let mf = mount_facts.clone();
    let teardown = spawn("teardown", 6, budget(&ctx), move || {
        teardown::collect(&c.host, mf.as_deref())
    });

    let mut facts = Facts {
        privilege: take(
            privilege.wait(&mut records),
            "privilege",
            2,
            &mut findings,
            &mut panicked,
        ),
        rootpaths: take(
            rootpaths.wait(&mut records),
            "rootpaths",
            2,
            &mut findings,
            &mut panicked,
        ),
        namespaces: take(
            namespaces.wait(&mut records),
            "namespaces",
            2,
            &mut findings,
            &mut panicked,
        ),
        devices: take(
            devices.wait(&mut records),
            "devices",
            2,
            &mut findings,
            &mut panicked,
        ),
        sockets: take(
            sockets.wait(&mut records),
            "sockets",
            2,
            &mut findings,
            &mut panicked,
        ),
        writable: take(
            writable.wait(&mut records),
            "writable",
            2,
            &mut findings,
            &mut panicked,
        ),
        secrets: take(
            secrets.wait(&mut records),
            "secrets",
            3,
            &mut findings,
            &mut panicked,
        ),
        teardown: take(
            teardown.wait(&mut records),
            "teardown",
            6,
            &mut findings,
            &mut panicked,
        ),
        boundary: boundary_facts,
        mounts: None,
        network: None,
        repository: take(
            repository.wait(&mut records),
            "repository",
            1,
            &mut findings,
            &mut panicked,
        )
        .flatten(),
        image: None,
        repro: None,
        caches: None,
        browsers: None,
        artifacts: None,
    };
    facts.repro = take(
        repro.wait(&mut records),
        "repro",
        4,
        &mut findings,
        &mut panicked,
    );
    facts.caches = take(
        caches.wait(&mut records),
        "caches",
        5,
        &mut findings,
        &mut panicked,
    );
    facts.browsers = take(
        browsers.wait(&mut records),
        "browsers",
        5,
        &mut findings,
        &mut panicked,
    );
    facts.artifacts = take(
        persistent.wait(&mut records),
        "artifacts",
        5,
        &mut findings,
        &mut panicked,
    );
    if let Some(r) = &facts.repro {
        findings.extend(repro::evaluate(r));
        facts.image = Some(r.image.clone());
    }
    if let Some(c) = &facts.caches {
        findings.extend(artifacts::evaluate_caches(c));
    }
    if let Some(b) = &facts.browsers {
        findings.extend(artifacts::evaluate_browsers(b));
    }
    if let Some(a) = &facts.artifacts {
        findings.extend(artifacts::evaluate_artifacts(a));
    }
    facts.network = match net_running {
        Some(r) => take(
            r.wait(&mut records),
            "network",
            3,
            &mut findings,
            &mut panicked,
        ),
        None => Some(network::not_asked(&ctx.host, &ctx.policy)),
    };
    if let Some(n) = &facts.network {
        findings.extend(network::evaluate(n));
    }

    if let Some(m) = &mount_facts {
        findings.extend(mounts::evaluate(m));
        // A line that does not parse costs that line: the rest of the table
        // stands, and the repo scope rests on a line nobody could read.
        for e in &m.parse_errors {
            let mut f = incomplete("mounts", 1, e.to_string()).with("line", e.line);
            f.subject = format!("mounts:line {}", e.line);
            f.id = crate::finding::finding_id(&f.code, &f.subject);
            f.control = "repo-scope".into();
            findings.push(f);
        }
        for mp in &m.unresponsive {
            let mut f = incomplete(
                "mounts",
                1,
                format!("the mount {mp} did not answer lstat(2) within the inspection wait; a hung FUSE or network filesystem is likely, and what it holds is unknown"),
            );
            f.subject = format!("mounts:{mp}");
            f.id = crate::finding::finding_id(&f.code, &f.subject);
            findings.push(f.with("mount_point", mp.clone()));
        }
    }
    if let Some(n) = &facts.namespaces {
        findings.extend(namespaces::evaluate(n, &bd));
        for (ns, why) in &n.unreadable {
            // gVisor's Sentry has no such namespace: nothing to check.
            if bd.is_sandbox() && n.absent.contains(ns) {
                continue;
            }
            let mut f = incomplete("namespaces", 2, format!("/proc/self/ns/{ns}: {why}"));
            f.subject = format!("namespaces:{ns}");
            f.id = crate::finding::finding_id(&f.code, &f.subject);
            findings.push(f);
        }
    }
    if let Some(d) = &facts.devices {
        findings.extend(devices::evaluate(d));
    }
    if let Some(r) = &facts.rootpaths {
        findings.extend(rootpaths::evaluate(r));
    }
    if let Some(s) = &facts.sockets {
        findings.extend(sockets::evaluate(s));
    }
    if let Some(w) = &facts.writable {
        findings.extend(writable::evaluate(w, &bd));
    }
    if let Some(s) = &facts.secrets {
        findings.extend(secrets::evaluate(s, &ctx.policy, ctx.host.started()));
    }
    if let Some(t) = &facts.teardown {
        findings.extend(teardown::evaluate(t, &ctx.run_id));
    }
    if let Some(p) = &facts.privilege {
        let sig = privilege::PrivilegedSignals {
            sysfs_writable: mount_facts.as_ref().is_some_and(|m| {
                m.mounts.iter().any(|e| {
                    e.mount.fstype == "sysfs"
                        && e.mount.mount_point == std::path::Path::new("/sys")
                        && !e.read_only
                })
            }),
            writable_kernel_interfaces: facts
                .writable
                .as_ref()
                .map(|w| {
                    w.kernel_interfaces
                        .iter()
                        .filter(|k| k.writable)
                        .map(|k| k.path.clone())
                        .collect()
                })
                .unwrap_or_default(),
            host_block_devices: facts
                .devices
                .as_ref()
                .map(|d| d.block_devices())
                .unwrap_or_default(),
        };
        findings.extend(privilege::evaluate(p, &ctx.policy, &sig, &bd));
        for (what, why) in &p.incomplete {
            let mut f = incomplete("privilege", 2, format!("{what}: {why}"));
            f.subject = format!("privilege:{what}");
            f.id = crate::finding::finding_id(&f.code, &f.subject);
            findings.push(f);
        }
    }
    facts.mounts = mount_facts.map(|m| Arc::try_unwrap(m).unwrap_or_else(|a| (*a).clone()));
    // A probe that timed out once the run's deadline had passed was cut by
    // --timeout, not by its own budget: the run as a whole is unfinished.
    let cut_by_deadline = if Instant::now() >= ctx.host.deadline() {
        records
            .iter()
            .filter(|r| r.status == ProbeStatus::Timeout)
            .map(|r| r.name)
            .collect()
    } else {
        Vec::new()
    };
    for f in findings.iter_mut() {
        if f.code == "probe.incomplete"
            && cut_by_deadline
                .iter()
                .any(|n| f.evidence.get("probe").is_some_and(|p| p == n))
            && f.evidence
                .get("reason")
                .is_some_and(|r| r == "it timed out")
        {
            let why = format!(
                "the run's deadline (--timeout {} ms) passed before it finished",
                ctx.host.timeout().as_millis()
            );
            f.message = format!("the {} probe could not finish: {why}", f.subject);
            f.evidence.insert("reason".into(), why.into());
        }
    }
    Collected {
        facts,
        findings,
        records,
        panicked,
        cut_by_deadline,
    }
}
