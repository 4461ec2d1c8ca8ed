//! `selfprobe-host watch` (DESIGN.md §17, docs/watch.md): every workspace a host
//! runs, inspected when it starts and proven gone when it ends, with nobody
//! there to run a command.
//!
//! It follows the engine's event stream (events.rs) for the containers the
//! `--filter` labels match. A container that starts is inspected by the
//! very steps of `selfprobe inspect` (outside::inspect::Session: placement,
//! the run, verification, the second witness, canaries), `--jobs` at a
//! time, into an inspection directory of its own under DIR/inspections;
//! one that is removed gets `selfprobe teardown` over that directory and
//! its signed statement. The state (state.rs) survives the watch's own
//! restart: no container is inspected twice, and what started or ended
//! while the watch or the engine was away is caught up from the engine's
//! `--since` and reconciled with its list of containers (`ps -a`); what can
//! no longer be inspected is recorded as missed, with why. The fleet view
//! (fleet.rs) is kept current. SIGTERM, SIGINT or SIGHUP stop it: the
//! inspections under way finish (each within its deadline, which also
//! removes the probe), nothing new starts, exit 0.
//!
//! Bounded: each inspection is bounded by `--timeout` as inspect bounds it
//! (a hanging or flooding container holds one worker for its deadline, no
//! more), its output capped as inspect caps it; event lines are capped; the
//! records of ended workspaces are kept by count and age (`--keep`,
//! `--max-age`). Names, labels and event lines are the workspaces' own
//! words: validated (ids are 64 hex digits, directories are named by the
//! watch) and escaped wherever they are shown.

pub mod events;
pub mod fleet;
pub mod state;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;
use serde_json::Value;
use zeroize::Zeroizing;

use crate::cli::{EngineName, WatchArgs};
use crate::error::CannotWrite;
use crate::outside::engine::{failure, find_cli, Engine, CLI_STDERR_CAP, CLI_STDOUT_CAP};
use crate::outside::inspect::{self as insp, Session};
use crate::outside::record::{EngineKind, Record};
use crate::outside::teardown as td;
use selfprobe::host::rfc3339;
use selfprobe::keys::{self, KeySource, Signer};
use selfprobe::util::command::ToolStatus;
use selfprobe::util::sanitize;

use state::{Entry, Phase, State, TeardownOut};

/// The inspection directories, under the out-dir.
pub const INSPECTIONS: &str = "inspections";
pub const KEY_FILE: &str = concat!("watch", ".key");
pub const PUBKEY_FILE: &str = concat!("signing", ".pub");
const LOCK_FILE: &str = concat!("watch", ".lock");

/// Teardown waits this long after a removal: Docker removes a container's
/// anonymous volumes after its `destroy` event.
const TEARDOWN_GRACE: Duration = Duration::from_secs(2);
/// Reconnecting to the engine: the first wait, doubled up to the last.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A stream up this long starts the back-off afresh when it ends.
const STREAM_STEADY: Duration = Duration::from_secs(30);
/// Catching up starts this much before the last event taken: the engines'
/// `--since` is by time, and an event of the same instant must not be
/// lost (one seen twice changes nothing).
const SINCE_MARGIN_NS: i128 = 1_000_000_000;
/// An inspection or teardown the engine did not answer is tried this often.
const MAX_ATTEMPTS: u32 = 3;
const RETRY_AFTER: Duration = Duration::from_secs(15);
const RETENTION_EVERY: Duration = Duration::from_secs(60);
/// The engine's list is asked for in slices of this many containers.
const INSPECT_SLICE: usize = 100;
/// The deadline of one engine call of the watch's own (list, teardown).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Teardowns made at once: each is a few engine calls that do not enter the
/// container, on workers of their own so they never wait behind a hanging
/// inspection, nor inspections behind them.
const TEARDOWN_JOBS: usize = 2;
/// The most messages (events, results, signals) waiting for the loop.
const MSG_QUEUE: usize = 10_000;
/// How long the end waits for the fleet view to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(60);

/// The watch's options, checked.
#[derive(Debug, Clone)]
pub struct Options {
    pub engine: Option<EngineKind>,
    pub filters: Vec<String>,
    pub out_dir: PathBuf,
    pub jobs: usize,
    /// What each container's inspection is given (its out_dir, all, filter
    /// and containers are not used).
    pub inspect: insp::Options,
    pub sign_key: Option<PathBuf>,
    pub keep: usize,
    pub max_age: Duration,
}

/// Why the watch could not start or had to end: the host tool's one error
/// (exit 2 for usage, 3 when the world does not answer).
pub use crate::error::Error as WatchError;

impl Options {
    /// Checks the command line: each error says what was wrong and what was
    /// expected.
    pub fn from_args(a: &WatchArgs) -> Result<Options, OptionError> {
        for f in &a.filter {
            let ok = f
                .strip_prefix("label=")
                .is_some_and(|kv| !kv.is_empty() && !kv.starts_with('='));
            if !ok {
                return Err(OptionError::Filter(f.clone()));
            }
        }
        for (flag, v) in [("--place-in", &a.place_in), ("--workspace", &a.workspace)] {
            if let Some(path) = v.as_ref().filter(|p| !p.starts_with('/')) {
                let path = path.clone();
                return Err(OptionError::Relative { flag, path });
            }
        }
        let jobs = a.jobs.unwrap_or_else(default_jobs);
        if !(1..=16).contains(&jobs) {
            return Err(OptionError::Jobs(jobs));
        }
        if a.timeout < Duration::from_secs(1) {
            return Err(OptionError::Timeout(a.timeout));
        }
        if a.keep == 0 {
            return Err(OptionError::Keep);
        }
        if a.max_age < Duration::from_secs(60) {
            return Err(OptionError::MaxAge(a.max_age));
        }
        let engine = a.engine.map(|e| match e {
            EngineName::Docker => EngineKind::Docker,
            EngineName::Podman => EngineKind::Podman,
        });
        Ok(Options {
            engine,
            filters: a.filter.clone(),
            out_dir: a.out_dir.clone(),
            jobs,
            inspect: insp::Options {
                engine,
                engine_cli_only: a.engine_cli_only,
                out_dir: None,
                timeout: a.timeout,
                place_in: a.place_in.clone().map(|p| {
                    selfprobe::util::path::normalize(Path::new(&p))
                        .to_string_lossy()
                        .into_owned()
                }),
                policy: a.policy.clone(),
                binary: a.binary.clone(),
                workspace: a.workspace.clone(),
                fail_on: a.fail_on.0,
                all: false,
                filter: None,
                containers: Vec::new(),
                parallel: 1,
            },
            sign_key: a.sign_key.clone(),
            keep: a.keep,
            max_age: a.max_age,
        })
    }
}

/// The default `--jobs`: the CPUs this process may use (its affinity and
/// its cgroup's quota, as the standard library counts them), at least 2 and
/// at most 16. An inspection is mostly CPU (the engine's exec, the probe's
/// run, verification): on 2 CPUs, 40 containers in a burst waited 259 ms
/// (p95 431) from start to verified report at 4 at once and 143-174 ms
/// (p95 262-298) at 2 (bench/RESULTS.md, the watch, "2026-12-03"). At
/// least 2 so a container that holds a worker to its deadline never holds
/// them all.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 16)
}

/// A watch command line that cannot be: what was given and what was
/// expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("--filter {0:?}: expected label=KEY or label=KEY=VALUE")]
    Filter(String),
    #[error("{flag} {path:?} is relative: expected an absolute path inside the containers")]
    Relative { flag: &'static str, path: String },
    #[error("--jobs {0}: expected 1 to 16 containers at once")]
    Jobs(usize),
    #[error("--timeout {} ms: expected at least 1s per container", .0.as_millis())]
    Timeout(Duration),
    #[error("--keep 0: expected at least 1 ended workspace's record")]
    Keep,
    #[error("--max-age {} s: expected at least 1m", .0.as_secs())]
    MaxAge(Duration),
}

/// Why a container's teardown job made no teardown.json.
#[derive(Debug, thiserror::Error)]
pub enum TeardownJobError {
    #[error(transparent)]
    Teardown(#[from] td::TeardownError),
    #[error(transparent)]
    Write(#[from] CannotWrite),
    #[error("the inspection names no container to tear down")]
    NoContainer,
}

/// The signal thread could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SignalsError {
    #[error("cannot block signals: {0}")]
    Block(nix::Error),
    #[error("cannot start the signal thread: {0}")]
    Thread(std::io::Error),
}

/// What the watch's loop hears from its threads.
#[derive(Debug)]
pub enum Msg {
    Stream(events::Msg),
    Signal(i32),
    Inspected(String, Outcome),
    TornDown(String, Result<TornDown, TeardownJobError>),
}

/// How one container's inspection job ended.
#[derive(Debug)]
pub enum Outcome {
    /// The inspection directory is written (`written`: when its last
    /// file, inspection.json, was on disk: the end of the latency, not when
    /// the loop got to the message).
    Inspected {
        verified: bool,
        exit: i32,
        not_probed: Option<String>,
        written: SystemTime,
    },
    /// It could not be inspected; `gone`: it no longer exists.
    Missed { why: String, gone: bool },
    /// Its labels do not match the filters: never touched.
    NotOurs,
    /// The engine did not answer before anything was done.
    Retry(String),
}

#[derive(Debug)]
pub struct TornDown {
    result: String,
    statement: Option<String>,
    exit: i32,
}

enum Job {
    Inspect {
        id: String,
        dir: String,
        batch: Arc<Batch>,
    },
    Teardown {
        id: String,
        dir: String,
    },
}

/// The containers handed to workers in one turn of the loop (a burst of
/// start events, the catch-up after a reconnection): their records are
/// taken with one `container inspect` of them all, by the first of their
/// workers to start, where each worker took its own (one engine CLI call
/// each, about 20 ms alone and several times that under load). The others
/// wait for that call, which they would have made themselves.
///
/// Fresh enough for the cross-check: the call is made when the batch's
/// first worker starts, the moment a container's own call was made before,
/// never ahead for containers still waiting for a worker. So a record is
/// no older than it was; a container restarted or changed after it (as
/// after any record) is what the probe's run and the cross-check see:
/// its old pid fails the direct write's and the resolver's checks (the
/// engine's cp places the probe, the resolution is said refused) and a
/// setting changed since is a disagreement the inspection shows.
struct Batch {
    ids: Vec<String>,
    records: OnceLock<Result<Vec<Record>, String>>,
}

impl Batch {
    fn new(ids: Vec<String>) -> Batch {
        Batch {
            ids,
            records: OnceLock::new(),
        }
    }

    /// `id`'s record: Ok(None) when the engine no longer has it (the
    /// others' records are printed all the same); Err when the engine did
    /// not answer.
    fn record(
        &self,
        engine: &Engine,
        id: &str,
        deadline: Instant,
    ) -> Result<Option<Record>, String> {
        let got = self.records.get_or_init(|| {
            engine
                .inspect(&self.ids, deadline)
                .map(|(records, _missing)| records)
                .map_err(|e| e.to_string())
        });
        match got {
            Ok(records) => Ok(records.iter().find(|r| r.id == id).cloned()),
            Err(e) => Err(e.clone()),
        }
    }
}

/// Whether a container's record lets its inspection begin, as the watch
/// decides it for each container: gone, no longer running (missed), or
/// not carrying the filters' labels (not ours).
fn admit(rec: Option<Record>, filters: &[String]) -> Result<Record, Outcome> {
    let Some(rec) = rec else {
        return Err(Outcome::Missed {
            why: "removed before the watch could inspect it".into(),
            gone: true,
        });
    };
    if !labels_match(filters, &rec.labels) {
        return Err(Outcome::NotOurs);
    }
    if !rec.running {
        return Err(Outcome::Missed {
            why: format!(
                "no longer running when its inspection could begin (state {})",
                sanitize::short(&sanitize::escape(&rec.status), 60)
            ),
            gone: false,
        });
    }
    Ok(rec)
}

/// One line on stderr: a time, and the message made safe to show.
fn log(m: &str) {
    use std::io::Write;
    let line = format!(
        "{} selfprobe-host watch: {}\n",
        rfc3339(SystemTime::now()),
        sanitize::escape(m)
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// `inspections/<stamp>Z-<id12>[-N]`'s last part when `rel` is such a
/// path: the only directories the watch makes, reads back or removes.
pub fn inspection_dir_name(rel: &str) -> Option<&str> {
    let name = rel.strip_prefix(INSPECTIONS)?.strip_prefix('/')?;
    let b = name.as_bytes();
    let stamp_ok = b.len() >= 29
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && &name[15..17] == "Z-"
        && b[17..29]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c));
    let rest = &name[29.min(name.len())..];
    let rest_ok = rest.is_empty()
        || (rest.len() <= 3
            && rest.starts_with('-')
            && rest.len() > 1
            && rest[1..].bytes().all(|c| c.is_ascii_digit()));
    (stamp_ok && rest_ok).then_some(name)
}

/// The labels `filters` ask for are all on the container.
pub fn labels_match(filters: &[String], labels: &BTreeMap<String, String>) -> bool {
    filters.iter().all(|f| {
        let kv = f.strip_prefix("label=").unwrap_or(f);
        match kv.split_once('=') {
            Some((k, v)) => labels.get(k).is_some_and(|x| x == v),
            None => labels.contains_key(kv),
        }
    })
}

fn ns_of(t: SystemTime) -> i128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Runs the watch until a signal ends it.
pub fn run(opts: Options, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<(), WatchError> {
    use WatchError::{Failed, Usage};
    // Bounded: a flood of events (or of anything) while the loop is busy
    // (a slow `ps -a`) waits in the engine's CLI, not in this memory.
    let (tx, rx) = sync_channel::<Msg>(MSG_QUEUE);
    // The signals first, while this is the only thread: blocked here (so in
    // every thread started after) and waited for on a thread of their own.
    // The engine CLIs the watch runs get an empty mask (Rust's spawn resets
    // it) and process groups of their own, so a Ctrl-C reaches only this.
    signals(tx.clone()).map_err(|e| Failed(e.to_string()))?;
    let out = opts.out_dir.clone();
    prepare_dir(&out)?;
    let lock = lock_dir(&out)?;
    let mut st = match State::load(&out)? {
        Some(s) => s,
        None => {
            let empty = std::fs::read_dir(&out)
                .map_err(|e| Failed(format!("{}: {e}", out.display())))?
                .filter_map(Result::ok)
                .all(|e| e.file_name() == LOCK_FILE);
            if !empty {
                return Err(Usage(format!(
                    "--out-dir {}: holds files but no {}: expected a watch's own directory or an empty one",
                    out.display(),
                    state::FILE
                )));
            }
            State::new("", &opts.filters)
        }
    };
    let signer = watch_key(&opts, env_key, &out)?;
    let pubkey = selfprobe::report::verify::render_pubkey(&signer.verifying_key(), "selfprobe");
    let cleanup = selfprobe::host::Cleanup::default();
    selfprobe::host::write_whole(&out.join(PUBKEY_FILE), pubkey.as_bytes(), &cleanup).map_err(
        |e| {
            Failed(format!(
                "cannot write {}: {e}",
                out.join(PUBKEY_FILE).display()
            ))
        },
    )?;
    let inspections = out.join(INSPECTIONS);
    make_private_dir(&inspections)?;
    // The state first: an out-dir with the watch's key in it is the
    // watch's own even if no engine ever answered this one.
    if st.schema.is_empty() || !out.join(state::FILE).exists() {
        st.keyid = signer.keyid();
        st.save(&out)?;
    }
    let engine = match connect(&opts, &rx)? {
        Some(e) => e,
        None => return Ok(()),
    };
    if !st.engine.is_empty() && st.engine != engine.name.as_str() {
        return Err(Usage(format!(
            "--out-dir {}: its state is of the {} engine, not {}: use another --out-dir",
            out.display(),
            sanitize::escape(&st.engine),
            engine.name.as_str()
        )));
    }
    if !st.keyid.is_empty() && st.keyid != signer.keyid() {
        log(&format!(
            "the signing key changed (was {}, now {}): earlier inspections verify with the signing.pub in their own directories",
            st.keyid,
            signer.keyid()
        ));
    }
    if st.filters != opts.filters && !st.containers.is_empty() {
        log(&format!(
            "the filters changed (were {:?}, now {:?}): containers taken on before keep their records",
            st.filters, opts.filters
        ));
    }
    st.engine = engine.name.as_str().to_string();
    st.filters = opts.filters.clone();
    st.keyid = signer.keyid();
    let key_for_fleet = ("watch key".to_string(), signer.verifying_key());
    let session = Arc::new(Session::open(&opts.inspect, signer, engine)?);
    st.binary_sha256 = session.binary_sha256().to_string();
    let recovered = recover(&mut st, &out);
    st.save(&out)?;

    // The fleet view, on its own thread, from every inspection there is.
    let (fleet_tx, fleet_rx) = channel::<fleet::Update>();
    let mut view = fleet::View::new(&out, key_for_fleet, session.binary_sha256());
    let all_dirs: Vec<String> = st
        .containers
        .values()
        .filter_map(|e| e.inspection.as_deref().and_then(inspection_dir_name))
        .map(str::to_string)
        .collect();
    view.update(&all_dirs, &[], missed_list(&st));
    let fleet_thread = std::thread::Builder::new()
        .name("fleet".into())
        .spawn(move || fleet::serve(view, fleet_rx, log))
        .map_err(|e| Failed(format!("cannot start the fleet thread: {e}")))?;
    let _ = fleet_tx.send(fleet::Update::Changed {
        dirs: Vec::new(),
        dropped: Vec::new(),
        missed: missed_list(&st),
    });

    // The workers: `jobs` for inspections, TEARDOWN_JOBS for teardowns.
    let (job_tx, job_rx) = channel::<Job>();
    let (td_tx, td_rx) = channel::<Job>();
    let mut workers = Vec::new();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let td_rx = Arc::new(Mutex::new(td_rx));
    for i in 0..opts.jobs + TEARDOWN_JOBS {
        let rx = if i < opts.jobs {
            job_rx.clone()
        } else {
            td_rx.clone()
        };
        let (tx, session, opts, out) = (tx.clone(), session.clone(), opts.clone(), out.clone());
        let h = std::thread::Builder::new()
            .name(format!("watch-{i}"))
            .spawn(move || worker(&rx, &tx, &session, &opts, &out))
            .map_err(|e| Failed(format!("cannot start a worker thread: {e}")))?;
        workers.push(h);
    }
    log(&format!(
        "watching the {} engine ({}) for {}; {} at a time, --timeout {} s; out-dir {} (key {})",
        session.engine().name.as_str(),
        session.engine().version,
        if opts.filters.is_empty() {
            "every container".to_string()
        } else {
            opts.filters.join(" and ")
        },
        opts.jobs,
        opts.inspect.timeout.as_secs(),
        out.display(),
        st.keyid
    ));
    for r in recovered {
        log(&r);
    }
    let mut w = Watch::new(
        opts,
        out,
        session,
        st,
        Channels {
            job_tx,
            td_tx,
            fleet_tx,
            tx: tx.clone(),
        },
    );
    drop(tx);
    w.run(&rx);
    // The end: every worker is idle. The job channels close, so they end.
    let Watch {
        job_tx,
        td_tx,
        fleet_tx,
        ..
    } = w;
    drop((job_tx, td_tx));
    for h in workers {
        let _ = h.join();
    }
    let (done_tx, done_rx) = channel();
    if fleet_tx.send(fleet::Update::Flush(done_tx)).is_ok()
        && done_rx.recv_timeout(FLUSH_WAIT).is_err()
    {
        log("the fleet view was not written in time: it may be behind");
    }
    drop(fleet_tx);
    let _ = fleet_thread.join();
    // Released when the process ends, after everything above is written.
    std::mem::forget(lock);
    log("stopped");
    Ok(())
}

/// Blocks SIGINT, SIGTERM and SIGHUP and sends each to the loop.
fn signals(tx: SyncSender<Msg>) -> Result<(), SignalsError> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal};
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(s);
    }
    set.thread_swap_mask(SigmaskHow::SIG_BLOCK)
        .map_err(SignalsError::Block)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || loop {
            match set.wait() {
                Ok(sig) => {
                    if tx.send(Msg::Signal(sig as i32)).is_err() {
                        return;
                    }
                }
                Err(_) => continue,
            }
        })
        .map(drop)
        .map_err(SignalsError::Thread)
}

fn make_private_dir(dir: &Path) -> Result<(), WatchError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(WatchError::Usage(format!(
            "{} is not a directory",
            dir.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| WatchError::Failed(format!("cannot make {}: {e}", dir.display()))),
        Err(e) => Err(WatchError::Failed(format!("{}: {e}", dir.display()))),
    }
}

fn prepare_dir(dir: &Path) -> Result<(), WatchError> {
    use std::os::unix::fs::MetadataExt;
    make_private_dir(dir)?;
    // Others who can write here could put files where the watch reads its
    // state and inspections: said, as the out-dir is the user's to choose.
    if std::fs::metadata(dir).is_ok_and(|m| m.mode() & 0o022 != 0) {
        log(&format!(
            "{} is writable by others than its owner: chmod go-w it (the watch makes it 0700)",
            dir.display()
        ));
    }
    Ok(())
}

/// One watch per out-dir: an exclusive lock on DIR/watch.lock, held for
/// the process's life.
fn lock_dir(dir: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, WatchError> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join(LOCK_FILE);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&p)
        .map_err(|e| WatchError::Failed(format!("cannot open {}: {e}", p.display())))?;
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(|(_, e)| {
        WatchError::Usage(format!(
            "--out-dir {}: another watch is using it ({}: {e})",
            dir.display(),
            p.display()
        ))
    })
}

/// The key: `--sign-key` or SELFPROBE_SIGNING_KEY, else DIR/watch.key,
/// made (mode 0600, never shown) on the first start.
fn watch_key(
    opts: &Options,
    env_key: Option<Zeroizing<Vec<u8>>>,
    out: &Path,
) -> Result<Signer, WatchError> {
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let usage = |e: keys::KeyError| WatchError::Usage(e.to_string());
    if opts.sign_key.is_some() || env_key.is_some() {
        let source = opts.sign_key.clone().map(KeySource::File);
        return keys::load(source.as_ref(), env_key)
            .map_err(usage)?
            .ok_or_else(|| WatchError::Usage("no signing key".into()));
    }
    let path = out.join(KEY_FILE);
    match std::fs::symlink_metadata(&path) {
        Ok(m) => {
            if !m.file_type().is_file() {
                return Err(WatchError::Usage(format!(
                    "{} is not a regular file: expected the watch's key",
                    path.display()
                )));
            }
            if m.mode() & 0o077 != 0 || m.uid() != nix::unistd::geteuid().as_raw() {
                return Err(WatchError::Usage(format!(
                    "{}: mode {:o}, owner uid {}: a signing key must be readable by its owner only (chmod 600, chown to the watch's user)",
                    path.display(),
                    m.mode() & 0o777,
                    m.uid()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let fresh = Signer::ephemeral().map_err(usage)?;
            let pem = fresh.private_pem().map_err(usage)?;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| WatchError::Failed(format!("cannot make {}: {e}", path.display())))?;
            f.write_all(pem.as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|e| {
                    let _ = std::fs::remove_file(&path);
                    WatchError::Failed(format!("cannot write {}: {e}", path.display()))
                })?;
            log(&format!(
                "made a signing key, {} (keyid {}); its public half is {}",
                path.display(),
                fresh.keyid(),
                out.join(PUBKEY_FILE).display()
            ));
        }
        Err(e) => return Err(WatchError::Failed(format!("{}: {e}", path.display()))),
    }
    keys::load(Some(&KeySource::File(path)), None)
        .map_err(usage)?
        .ok_or_else(|| WatchError::Usage("no signing key".into()))
}

/// The engine, asked until it answers (a watch started before its engine,
/// as at boot, waits for it). None: a signal came first.
fn connect(opts: &Options, rx: &Receiver<Msg>) -> Result<Option<Engine>, WatchError> {
    let names: &[&str] = match opts.engine {
        Some(k) => &[k.as_str()],
        None => &["docker", "podman"],
    };
    if names.iter().all(|n| find_cli(n).is_none()) {
        // Not something waiting cures: the same words as inspect's.
        return Engine::connect(opts.engine, Instant::now() + CALL_TIMEOUT)
            .map(Some)
            .map_err(|e| WatchError::Failed(e.to_string()));
    }
    let mut backoff = BACKOFF_MIN;
    loop {
        match Engine::connect(opts.engine, Instant::now() + CALL_TIMEOUT) {
            Ok(mut e) => {
                if opts.inspect.engine_cli_only {
                    e.api = None;
                }
                return Ok(Some(e));
            }
            Err(e) => log(&format!("{e}; trying again in {} ms", backoff.as_millis())),
        }
        match rx.recv_timeout(backoff) {
            Ok(Msg::Signal(_)) => {
                log("stopped before the engine answered");
                return Ok(None);
            }
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// What inspection.json says of its one container.
#[derive(Deserialize)]
struct WrittenInspection {
    #[serde(default)]
    containers: Vec<WrittenContainer>,
}

#[derive(Deserialize)]
struct WrittenContainer {
    #[serde(default)]
    verified: bool,
    #[serde(default)]
    exit: i32,
    not_probed: Option<String>,
}

/// What a written inspection directory says of its container; None when
/// it is not complete. inspection.json is what says so: insp::write puts
/// it in place last, after every other file is there and on disk, so a
/// directory with a readable one holds the whole inspection even after a
/// crash.
fn read_written(dir: &Path) -> Option<WrittenContainer> {
    let bytes =
        selfprobe::host::read_regular_nofollow(&dir.join("inspection.json"), 64 << 20).ok()?;
    let w: WrittenInspection = serde_json::from_slice(&bytes).ok()?;
    w.containers.into_iter().next()
}

/// A watch that ended mid-inspection (killed, the machine down): an
/// inspection whose directory was written is taken as done; one that was
/// not is recorded as cut short, its partial directory removed, and the
/// container is inspected again if it still runs. Returns what to say.
fn recover(st: &mut State, out: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let now = rfc3339(SystemTime::now());
    for (id, e) in st.containers.iter_mut() {
        if e.state != Phase::Inspecting {
            continue;
        }
        let Some(name) = e.inspection.as_deref().and_then(inspection_dir_name) else {
            e.state = Phase::Queued;
            continue;
        };
        let dir = out.join(INSPECTIONS).join(name);
        if let Some(c) = read_written(&dir) {
            e.state = Phase::Inspected;
            e.verified = Some(c.verified);
            e.exit = Some(c.exit);
            e.not_probed = c.not_probed;
            e.inspection_finished.get_or_insert(now.clone());
            continue;
        }
        let _ = std::fs::remove_dir_all(&dir);
        e.notes.push(format!(
            "an inspection begun at {} was cut short (the watch ended during it); the probe it placed may remain in the container if it could not remove itself",
            e.inspection_started.as_deref().unwrap_or("?")
        ));
        e.state = Phase::Queued;
        e.inspection = None;
        e.inspection_started = None;
        said.push(format!(
            "{} ({}): its inspection was cut short when the watch last ended; it is inspected again if it still runs",
            e.name,
            &id[..12]
        ));
    }
    said
}

fn missed_list(st: &State) -> Vec<fleet::Missed> {
    st.containers
        .iter()
        .filter(|(_, e)| e.state == Phase::Missed)
        .map(|(id, e)| fleet::Missed {
            id: id.clone(),
            name: e.name.clone(),
            why: e.missed.clone().unwrap_or_default(),
        })
        .collect()
}

/// A worker: takes jobs until its channel closes.
fn worker(
    rx: &Mutex<Receiver<Job>>,
    tx: &SyncSender<Msg>,
    session: &Session,
    opts: &Options,
    out: &Path,
) {
    loop {
        let job = {
            let r = rx.lock().unwrap_or_else(|p| p.into_inner());
            r.recv()
        };
        let Ok(job) = job else { return };
        let msg = match job {
            Job::Inspect { id, dir, batch } => {
                let o = inspect_one(session, opts, out, &id, &dir, &batch);
                Msg::Inspected(id, o)
            }
            Job::Teardown { id, dir } => {
                let r = teardown_one(session, opts, out, &dir);
                Msg::TornDown(id, r)
            }
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// One container's inspection, into DIR/inspections/<dir>: today's inspect
/// for this one container, once its record says it still runs and carries
/// the filters' labels.
fn inspect_one(
    session: &Session,
    opts: &Options,
    out: &Path,
    id: &str,
    dir: &str,
    batch: &Batch,
) -> Outcome {
    let deadline = Instant::now() + opts.inspect.timeout;
    let rec = match batch.record(session.engine(), id, deadline) {
        Ok(r) => r,
        Err(e) => return Outcome::Retry(e),
    };
    let rec = match admit(rec, &opts.filters) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let path = out.join(INSPECTIONS).join(dir);
    if let Err(e) = make_new_dir(&path) {
        return Outcome::Missed {
            why: format!("its inspection directory could not be made: {e}"),
            gone: false,
        };
    }
    let mut result = session.inspect_records(vec![rec], &path);
    insp::name_files(&mut result);
    let pubkey =
        selfprobe::report::verify::render_pubkey(&session.signer().verifying_key(), "selfprobe");
    let json = insp::render_json(&result);
    let written = insp::write(&mut result, &json, &pubkey);
    if let Err(e) = written {
        return Outcome::Missed {
            why: format!("its inspection could not be written: {e}"),
            gone: false,
        };
    }
    match result.containers.first() {
        Some(c) => Outcome::Inspected {
            verified: c.verified,
            exit: c.exit,
            not_probed: c.not_probed.clone(),
            written: SystemTime::now(),
        },
        None => Outcome::Missed {
            why: "internal: the inspection has no result".into(),
            gone: false,
        },
    }
}

fn make_new_dir(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(p)
}

/// `selfprobe teardown` over one container's inspection directory: its
/// signed statement and teardown.json written there.
fn teardown_one(
    session: &Session,
    opts: &Options,
    out: &Path,
    dir: &str,
) -> Result<TornDown, TeardownJobError> {
    let path = out.join(INSPECTIONS).join(dir);
    let t = td::teardown_on(
        &td::Options {
            dir: path.clone(),
            policy: opts.inspect.policy.clone(),
            timeout: CALL_TIMEOUT,
            engine_cli_only: opts.inspect.engine_cli_only,
        },
        session.signer(),
        Some(session.engine()),
    )?;
    let json = td::render_json(&t);
    let cleanup = selfprobe::host::Cleanup::default();
    let file = path.join(td::JSON_FILE);
    selfprobe::host::write_whole(&file, json.as_bytes(), &cleanup)
        .map_err(|source| CannotWrite { path: file, source })?;
    let c = t.containers.first().ok_or(TeardownJobError::NoContainer)?;
    Ok(TornDown {
        result: c.result.to_string(),
        statement: c
            .statement
            .as_ref()
            .map(|s| format!("{INSPECTIONS}/{dir}/{s}")),
        exit: c.exit,
    })
}

/// A container as the engine lists it, for reconciling.
struct Listed {
    id: String,
    name: String,
    running: bool,
    status: String,
    started_ns: Option<i128>,
}

/// Where the watch's loop sends work and where its workers answer.
struct Channels {
    job_tx: Sender<Job>,
    td_tx: Sender<Job>,
    fleet_tx: Sender<fleet::Update>,
    tx: SyncSender<Msg>,
}

/// The loop's state.
struct Watch {
    opts: Options,
    out: PathBuf,
    session: Arc<Session>,
    st: State,
    /// Inspections waiting for a worker, in the order they came.
    queue: VecDeque<String>,
    queued: BTreeSet<String>,
    running: usize,
    /// Teardowns waiting (not before their instant).
    td_queue: VecDeque<(Instant, String)>,
    td_running: usize,
    /// The containers whose teardown a worker has.
    td_inflight: BTreeSet<String>,
    stream: Option<events::Stream>,
    stream_up: Option<Instant>,
    epoch: u64,
    next_connect: Option<Instant>,
    backoff: Duration,
    stopping: bool,
    dirty: bool,
    job_tx: Sender<Job>,
    td_tx: Sender<Job>,
    fleet_tx: Sender<fleet::Update>,
    last_retention: Instant,
    unreadable_said: Option<Instant>,
    save_failed: Option<Instant>,
    tx: SyncSender<Msg>,
}

impl Watch {
    /// A watch with nothing queued or running, that connects at once.
    fn new(opts: Options, out: PathBuf, session: Arc<Session>, st: State, ch: Channels) -> Watch {
        Watch {
            opts,
            out,
            session,
            st,
            queue: VecDeque::new(),
            queued: BTreeSet::new(),
            running: 0,
            td_queue: VecDeque::new(),
            td_running: 0,
            td_inflight: BTreeSet::new(),
            stream: None,
            stream_up: None,
            epoch: 0,
            next_connect: Some(Instant::now()),
            backoff: BACKOFF_MIN,
            stopping: false,
            dirty: false,
            job_tx: ch.job_tx,
            td_tx: ch.td_tx,
            fleet_tx: ch.fleet_tx,
            last_retention: Instant::now(),
            unreadable_said: None,
            save_failed: None,
            tx: ch.tx,
        }
    }
}

impl Watch {
    fn run(&mut self, rx: &Receiver<Msg>) {
        loop {
            if !self.stopping && self.stream.is_none() {
                if let Some(at) = self.next_connect.filter(|t| Instant::now() >= *t) {
                    let _ = at;
                    self.connect();
                }
            }
            self.dispatch();
            self.save();
            if self.stopping && self.running == 0 && self.td_running == 0 {
                return;
            }
            if !self.stopping && self.last_retention.elapsed() >= RETENTION_EVERY {
                self.retention();
            }
            let wait = self.next_wake();
            let first = match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            // Everything that has come, before the state is written.
            let mut msgs: Vec<Msg> = first.into_iter().collect();
            while let Ok(m) = rx.try_recv() {
                msgs.push(m);
                if msgs.len() >= 1000 {
                    break;
                }
            }
            for m in msgs {
                self.handle(m);
            }
        }
    }

    fn next_wake(&self) -> Duration {
        let mut wake = Instant::now() + Duration::from_secs(5);
        if self.stream.is_none() && !self.stopping {
            if let Some(t) = self.next_connect {
                wake = wake.min(t);
            }
        }
        if let Some((t, _)) = self.td_queue.front() {
            wake = wake.min(*t);
        }
        wake.saturating_duration_since(Instant::now())
            .max(Duration::from_millis(10))
    }

    fn save(&mut self) {
        if !self.dirty {
            return;
        }
        match self.st.save(&self.out) {
            Ok(()) => {
                self.dirty = false;
                self.save_failed = None;
            }
            // Said once a minute while it lasts (a full disk), not at every
            // turn of the loop; the state in memory stays right and is
            // written when it can be.
            Err(e) => {
                if self
                    .save_failed
                    .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
                {
                    log(&e.to_string());
                    self.save_failed = Some(Instant::now());
                }
            }
        }
    }

    fn short(id: &str) -> &str {
        &id[..12.min(id.len())]
    }

    fn fleet_changed(&self, dirs: Vec<String>, dropped: Vec<String>) {
        let _ = self.fleet_tx.send(fleet::Update::Changed {
            dirs,
            dropped,
            missed: missed_list(&self.st),
        });
    }

    /// (Re)connects: the stream first (catching up from the cursor), then
    /// the engine's list, so nothing that happens between the two is lost.
    fn connect(&mut self) {
        let engine = self.session.engine();
        let previous = self.st.cursor.as_deref().and_then(events::parse_rfc3339_ns);
        // Always from a time: the stream subscribes a moment after it is
        // started, and the engine's list below is read meanwhile; a
        // container that starts in between is in neither unless the stream
        // begins before both (the first time, from now).
        let from = previous.unwrap_or_else(events::now_ns);
        let since = Some(from - SINCE_MARGIN_NS);
        if previous.is_none() {
            self.st.cursor = Some(events::rfc3339_ns(from));
            self.dirty = true;
        }
        self.epoch += 1;
        let args = events::args(engine.name, &self.opts.filters, since);
        let stream = match events::Stream::spawn(
            &engine.cli,
            &args,
            engine.name,
            self.epoch,
            self.tx.clone(),
        ) {
            Ok(s) => s,
            Err(e) => {
                self.retry_connect(&format!("cannot start `{} events`: {e}", engine.cli_name()));
                return;
            }
        };
        match self.list() {
            Ok(listed) => {
                self.stream = Some(stream);
                self.stream_up = Some(Instant::now());
                self.next_connect = None;
                self.reconcile(listed, previous);
            }
            Err(e) => {
                stream.stop();
                self.retry_connect(&e);
            }
        }
    }

    fn retry_connect(&mut self, why: &str) {
        log(&format!(
            "the engine does not answer ({why}); trying again in {} ms",
            self.backoff.as_millis()
        ));
        self.next_connect = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// Every container the filters' labels match, running or not.
    fn list(&self) -> Result<Vec<Listed>, String> {
        let engine = self.session.engine();
        let mut args: Vec<String> =
            vec!["ps".into(), "-a".into(), "-q".into(), "--no-trunc".into()];
        for f in &self.opts.filters {
            args.push("--filter".into());
            args.push(f.clone());
        }
        let c = engine.run_capped(
            &args,
            None,
            Instant::now() + CALL_TIMEOUT,
            CLI_STDOUT_CAP,
            CLI_STDERR_CAP,
        );
        if c.status != ToolStatus::Ok {
            return Err(failure(&format!("{} ps -a", engine.cli_name()), &c));
        }
        let ids: Vec<String> = String::from_utf8_lossy(&c.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| events::is_engine_id(l))
            .map(str::to_ascii_lowercase)
            .collect();
        let mut out = Vec::new();
        for slice in ids.chunks(INSPECT_SLICE) {
            let mut args: Vec<String> = vec!["container".into(), "inspect".into(), "--".into()];
            args.extend(slice.iter().cloned());
            let c = engine.run_capped(
                &args,
                None,
                Instant::now() + CALL_TIMEOUT,
                CLI_STDOUT_CAP,
                CLI_STDERR_CAP,
            );
            if matches!(c.status, ToolStatus::Timeout | ToolStatus::Error) || c.overflow.is_some() {
                return Err(failure(
                    &format!("{} container inspect", engine.cli_name()),
                    &c,
                ));
            }
            // A container removed since `ps` is missing here (exit 1): the
            // others are printed all the same.
            let Ok(Value::Array(recs)) = serde_json::from_slice::<Value>(&c.stdout) else {
                if c.status == ToolStatus::Ok {
                    return Err(format!(
                        "`{} container inspect` printed no JSON array",
                        engine.cli_name()
                    ));
                }
                continue;
            };
            for r in recs {
                let s = |p: &str| r.pointer(p).and_then(Value::as_str).unwrap_or("");
                let id = s("/Id").to_ascii_lowercase();
                if !events::is_engine_id(&id) {
                    continue;
                }
                let labels: BTreeMap<String, String> = r
                    .pointer("/Config/Labels")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default();
                if !labels_match(&self.opts.filters, &labels) {
                    continue;
                }
                out.push(Listed {
                    name: s("/Name").trim_start_matches('/').to_string(),
                    running: r
                        .pointer("/State/Running")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    status: s("/State/Status").to_string(),
                    started_ns: events::parse_rfc3339_ns(s("/State/StartedAt")).filter(|n| *n > 0),
                    id,
                });
            }
        }
        Ok(out)
    }

    /// Brings the state in line with the engine's list: what runs and was
    /// never inspected is queued; what started and ended while nobody
    /// watched is missed; what is gone is torn down (or missed).
    fn reconcile(&mut self, listed: Vec<Listed>, previous: Option<i128>) {
        let now = rfc3339(SystemTime::now());
        let present: BTreeSet<String> = listed.iter().map(|l| l.id.clone()).collect();
        for l in listed {
            match self.st.containers.get_mut(&l.id) {
                None if l.running => {
                    let mut e = Entry::new(&l.name, now.clone());
                    e.started = l.started_ns.map(events::rfc3339_ns);
                    self.st.containers.insert(l.id.clone(), e);
                    self.enqueue(&l.id);
                }
                None => {
                    // Exited: missed when it started after the watch last
                    // knew the engine's news; older ones are not the watch's.
                    let meanwhile = matches!(
                        (previous, l.started_ns),
                        (Some(p), Some(s)) if s + SINCE_MARGIN_NS >= p
                    );
                    if meanwhile && l.status != "created" {
                        let mut e = Entry::new(&l.name, now.clone());
                        e.started = l.started_ns.map(events::rfc3339_ns);
                        e.state = Phase::Missed;
                        e.missed_at = Some(rfc3339(SystemTime::now()));
                        e.missed = Some(format!(
                            "started and ended ({}) while the watch was not following the engine",
                            sanitize::short(&sanitize::escape(&l.status), 60)
                        ));
                        log(&format!(
                            "missed {} ({}): {}",
                            l.name,
                            Self::short(&l.id),
                            e.missed.as_deref().unwrap_or("")
                        ));
                        self.st.containers.insert(l.id.clone(), e);
                        self.dirty = true;
                    }
                }
                Some(e) => match e.state {
                    Phase::Queued if l.running => self.enqueue(&l.id),
                    Phase::Queued => {
                        e.state = Phase::Missed;
                        e.missed_at = Some(rfc3339(SystemTime::now()));
                        e.missed = Some(format!(
                            "no longer running when its inspection could begin (state {})",
                            sanitize::short(&sanitize::escape(&l.status), 60)
                        ));
                        self.dirty = true;
                    }
                    Phase::Missed if l.running && e.removed.is_none() && e.inspection.is_none() => {
                        // Started again, never inspected: now it can be.
                        e.notes.push(format!(
                            "missed earlier ({}), started again",
                            e.missed.take().unwrap_or_default()
                        ));
                        e.state = Phase::Queued;
                        self.enqueue(&l.id);
                    }
                    _ => {}
                },
            }
        }
        let mut gone: Vec<String> = self
            .st
            .containers
            .iter()
            .filter(|(id, e)| !present.contains(*id) && !e.finished())
            .map(|(id, _)| id.clone())
            .collect();
        // Not in the list is not yet gone (the filters may have changed
        // since it was taken on): only what the engine no longer knows is.
        if !gone.is_empty() {
            match self
                .session
                .engine()
                .inspect(&gone, Instant::now() + CALL_TIMEOUT)
            {
                Ok((still, _)) => gone.retain(|id| !still.iter().any(|r| &r.id == id)),
                Err(e) => {
                    log(&format!(
                        "cannot tell whether {} container(s) are gone ({e}): asked again at the next reconnection",
                        gone.len()
                    ));
                    gone.clear();
                }
            }
        }
        for id in gone {
            self.removed(&id, None);
        }
        self.fleet_changed(Vec::new(), Vec::new());
    }

    fn enqueue(&mut self, id: &str) {
        if self.queued.insert(id.to_string()) {
            self.queue.push_back(id.to_string());
        }
        self.dirty = true;
    }

    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Signal(sig) => {
                if self.stopping {
                    log(&format!(
                        "signal {sig}: still finishing {} inspection(s) and {} teardown(s), each within its deadline",
                        self.running,
                        self.td_running
                    ));
                    return;
                }
                log(&format!(
                    "signal {sig}: stopping; {} inspection(s) under way finish (each within --timeout {} s, removing the probe), {} waiting are left for the next start",
                    self.running,
                    self.opts.inspect.timeout.as_secs(),
                    self.queue.len()
                ));
                self.stopping = true;
                if let Some(s) = self.stream.take() {
                    s.stop();
                }
            }
            Msg::Stream(events::Msg::Event(epoch, ev)) if epoch == self.epoch => self.event(ev),
            Msg::Stream(events::Msg::Unreadable(epoch, why)) if epoch == self.epoch => {
                // Said once a minute at most: a flood of bad lines must not
                // flood the log.
                if self
                    .unreadable_said
                    .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
                {
                    log(&format!("an event line was passed over: {why}"));
                    self.unreadable_said = Some(Instant::now());
                }
            }
            Msg::Stream(events::Msg::Ended(epoch, why)) if epoch == self.epoch => {
                self.stream = None;
                if self.stopping {
                    return;
                }
                if self.stream_up.is_some_and(|t| t.elapsed() >= STREAM_STEADY) {
                    self.backoff = BACKOFF_MIN;
                }
                self.stream_up = None;
                log(&format!(
                    "the engine's event stream ended ({why}); reconnecting in {} ms, then catching up",
                    self.backoff.as_millis()
                ));
                self.next_connect = Some(Instant::now() + self.backoff);
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
            }
            Msg::Stream(_) => {}
            Msg::Inspected(id, o) => self.inspected(&id, o),
            Msg::TornDown(id, r) => self.torn_down(&id, r),
        }
    }

    fn event(&mut self, ev: events::Event) {
        if let Some(t) = ev.time_ns {
            let cur = self.st.cursor.as_deref().and_then(events::parse_rfc3339_ns);
            if cur.is_none_or(|c| t > c) {
                self.st.cursor = Some(events::rfc3339_ns(t));
                self.dirty = true;
            }
        }
        match ev.kind {
            events::Kind::Start => {
                if self.stopping {
                    return;
                }
                match self.st.containers.get_mut(&ev.id) {
                    None => {
                        let mut e = Entry::new(&ev.name, rfc3339(SystemTime::now()));
                        e.started = ev.time_ns.map(events::rfc3339_ns);
                        self.st.containers.insert(ev.id.clone(), e);
                        self.enqueue(&ev.id);
                    }
                    // Started again after it was missed (never inspected):
                    // now it can be. A start caught up from `--since` that
                    // is older than the miss is the same start.
                    Some(e)
                        if e.state == Phase::Missed
                            && e.removed.is_none()
                            && e.inspection.is_none()
                            && ev.time_ns.is_some_and(|t| {
                                e.missed_at
                                    .as_deref()
                                    .and_then(events::parse_rfc3339_ns)
                                    .is_none_or(|m| t > m)
                            }) =>
                    {
                        e.notes.push(format!(
                            "missed earlier ({}), started again",
                            e.missed.take().unwrap_or_default()
                        ));
                        e.state = Phase::Queued;
                        e.started = ev.time_ns.map(events::rfc3339_ns);
                        self.enqueue(&ev.id);
                    }
                    // Never twice: a container started again keeps its one
                    // inspection.
                    Some(_) => {}
                }
            }
            events::Kind::Remove => self.removed(&ev.id, ev.time_ns),
        }
    }

    /// The container is gone: its teardown is due, or it is missed.
    fn removed(&mut self, id: &str, _at: Option<i128>) {
        let now = rfc3339(SystemTime::now());
        let Some(e) = self.st.containers.get_mut(id) else {
            return;
        };
        if e.removed.is_some() && e.state != Phase::Inspected {
            return;
        }
        let first = e.removed.is_none();
        if first {
            e.removed = Some(now);
            self.dirty = true;
        }
        match e.state {
            Phase::Queued => {
                e.state = Phase::Missed;
                e.missed_at = Some(rfc3339(SystemTime::now()));
                e.missed = Some("removed before the watch could inspect it".into());
                log(&format!(
                    "missed {} ({}): removed before the watch could inspect it",
                    e.name,
                    Self::short(id)
                ));
                if self.queued.remove(id) {
                    self.queue.retain(|q| q != id);
                }
                self.fleet_changed(Vec::new(), Vec::new());
            }
            // Torn down once its inspection is written.
            Phase::Inspecting => {}
            Phase::Inspected if e.teardown.is_none() => {
                // Once: a removal caught up again changes nothing.
                if !self.td_queue.iter().any(|(_, q)| q == id) && !self.td_inflight.contains(id) {
                    self.td_queue
                        .push_back((Instant::now() + TEARDOWN_GRACE, id.to_string()));
                }
            }
            Phase::Inspected | Phase::Missed => {}
        }
    }

    /// Hands waiting work to idle workers; the state records an inspection
    /// as begun (and its directory) before the worker has it: once for all
    /// those handed out in this turn, which share one record call (Batch).
    fn dispatch(&mut self) {
        let mut jobs: Vec<(String, String)> = Vec::new();
        while !self.stopping && self.running + jobs.len() < self.opts.jobs {
            let Some(id) = self.queue.pop_front() else {
                break;
            };
            self.queued.remove(&id);
            let Some(e) = self.st.containers.get_mut(&id) else {
                continue;
            };
            if e.state != Phase::Queued {
                continue;
            }
            let now = SystemTime::now();
            let stamp = rfc3339(now).replace(['-', ':'], "");
            let stamp = stamp.split('.').next().unwrap_or("").to_string();
            let mut dir = format!("{stamp}Z-{}", &id[..12]);
            let taken = |d: &str| {
                self.out.join(INSPECTIONS).join(d).exists() || jobs.iter().any(|(_, j)| j == d)
            };
            for n in 1..10 {
                if !taken(&dir) {
                    break;
                }
                dir = format!("{stamp}Z-{}-{n}", &id[..12]);
            }
            e.state = Phase::Inspecting;
            e.inspection = Some(format!("{INSPECTIONS}/{dir}"));
            e.inspection_started = Some(rfc3339(now));
            self.dirty = true;
            jobs.push((id, dir));
        }
        if !jobs.is_empty() {
            self.save();
            let batch = Arc::new(Batch::new(jobs.iter().map(|(id, _)| id.clone()).collect()));
            for (id, dir) in jobs {
                let batch = batch.clone();
                if self.job_tx.send(Job::Inspect { id, dir, batch }).is_ok() {
                    self.running += 1;
                }
            }
        }
        while self.td_running < TEARDOWN_JOBS {
            let due = self.td_queue.iter().position(|(t, _)| Instant::now() >= *t);
            let Some((_, id)) = due.and_then(|i| self.td_queue.remove(i)) else {
                break;
            };
            let dir = self
                .st
                .containers
                .get(&id)
                .and_then(|e| e.inspection.as_deref())
                .and_then(inspection_dir_name)
                .map(str::to_string);
            if let Some(dir) = dir {
                if self
                    .td_tx
                    .send(Job::Teardown {
                        id: id.clone(),
                        dir,
                    })
                    .is_ok()
                {
                    self.td_running += 1;
                    self.td_inflight.insert(id);
                }
            }
        }
    }

    fn inspected(&mut self, id: &str, o: Outcome) {
        self.running = self.running.saturating_sub(1);
        let now = SystemTime::now();
        let Some(e) = self.st.containers.get_mut(id) else {
            return;
        };
        self.dirty = true;
        let dir = e
            .inspection
            .as_deref()
            .and_then(inspection_dir_name)
            .map(str::to_string);
        match o {
            Outcome::Inspected {
                verified,
                exit,
                not_probed,
                written,
            } => {
                e.state = Phase::Inspected;
                // From here on `attempts` counts the teardown's.
                e.attempts = 0;
                e.verified = Some(verified);
                e.exit = Some(exit);
                e.inspection_finished = Some(rfc3339(written));
                let started = e.started.as_deref().and_then(events::parse_rfc3339_ns);
                e.latency_ms = started
                    .map(|s| (ns_of(written) - s) / 1_000_000)
                    .filter(|ms| *ms >= 0)
                    .map(|ms| ms as u64);
                let how = if verified {
                    "verified".to_string()
                } else {
                    format!(
                        "NOT VERIFIED ({})",
                        not_probed.as_deref().unwrap_or("see its inspection.json")
                    )
                };
                log(&format!(
                    "inspected {} ({}): {how}, exit {exit}{}; {}",
                    e.name,
                    Self::short(id),
                    e.latency_ms
                        .map(|ms| format!(", {ms} ms after its start"))
                        .unwrap_or_default(),
                    e.inspection.as_deref().unwrap_or("")
                ));
                e.not_probed = not_probed;
                if e.removed.is_some() && e.teardown.is_none() {
                    self.td_queue
                        .push_back((Instant::now() + TEARDOWN_GRACE, id.to_string()));
                }
                self.fleet_changed(dir.into_iter().collect(), Vec::new());
            }
            Outcome::Missed { why, gone } => {
                e.state = Phase::Missed;
                e.inspection = None;
                e.inspection_started = None;
                if gone && e.removed.is_none() {
                    e.removed = Some(rfc3339(now));
                }
                log(&format!("missed {} ({}): {why}", e.name, Self::short(id)));
                e.missed_at = Some(rfc3339(SystemTime::now()));
                e.missed = Some(why);
                // A directory made for it and not written goes.
                if let Some(d) = dir {
                    let p = self.out.join(INSPECTIONS).join(&d);
                    if read_written(&p).is_none() {
                        let _ = std::fs::remove_dir_all(&p);
                    }
                }
                self.fleet_changed(Vec::new(), Vec::new());
            }
            Outcome::NotOurs => {
                // Its labels are not the filters': it was never ours.
                self.st.containers.remove(id);
                if let Some(d) = dir {
                    let _ = std::fs::remove_dir(self.out.join(INSPECTIONS).join(d));
                }
            }
            Outcome::Retry(why) => {
                e.attempts += 1;
                e.inspection = None;
                e.inspection_started = None;
                if e.attempts >= MAX_ATTEMPTS {
                    e.state = Phase::Missed;
                    log(&format!(
                        "missed {} ({}): the engine did not answer ({why})",
                        e.name,
                        Self::short(id)
                    ));
                    e.missed_at = Some(rfc3339(SystemTime::now()));
                    e.missed = Some(format!(
                        "the engine did not answer {MAX_ATTEMPTS} times: {why}"
                    ));
                    self.fleet_changed(Vec::new(), Vec::new());
                } else {
                    // Queued again; the next list of the engine (or the
                    // next start event) takes it up when the stream is down.
                    e.state = Phase::Queued;
                    if self.stream.is_some() {
                        self.enqueue(id);
                    }
                }
                if let Some(d) = dir {
                    let _ = std::fs::remove_dir(self.out.join(INSPECTIONS).join(d));
                }
            }
        }
    }

    fn torn_down(&mut self, id: &str, r: Result<TornDown, TeardownJobError>) {
        self.td_running = self.td_running.saturating_sub(1);
        self.td_inflight.remove(id);
        let Some(e) = self.st.containers.get_mut(id) else {
            return;
        };
        self.dirty = true;
        let dir = e
            .inspection
            .as_deref()
            .and_then(inspection_dir_name)
            .map(str::to_string);
        let at = rfc3339(SystemTime::now());
        match r {
            Ok(t) => {
                log(&format!(
                    "teardown of {} ({}): {}, exit {}; {}",
                    e.name,
                    Self::short(id),
                    t.result,
                    t.exit,
                    t.statement.as_deref().unwrap_or("no statement")
                ));
                e.teardown = Some(TeardownOut {
                    result: t.result,
                    statement: t.statement,
                    at,
                    exit: t.exit,
                    error: None,
                });
            }
            Err(why) => {
                e.attempts += 1;
                if e.attempts >= MAX_ATTEMPTS {
                    log(&format!(
                        "teardown of {} ({}) could not be made: {why}",
                        e.name,
                        Self::short(id)
                    ));
                    e.teardown = Some(TeardownOut {
                        result: "unknown".into(),
                        statement: None,
                        at,
                        exit: 3,
                        error: Some(why.to_string()),
                    });
                } else {
                    log(&format!(
                        "teardown of {} ({}) failed ({why}); trying again in {} s",
                        e.name,
                        Self::short(id),
                        RETRY_AFTER.as_secs()
                    ));
                    self.td_queue
                        .push_back((Instant::now() + RETRY_AFTER, id.to_string()));
                }
            }
        }
        self.fleet_changed(dir.into_iter().collect(), Vec::new());
        self.retention();
    }

    /// Keeps the records of at most `--keep` ended workspaces, none older
    /// than `--max-age` (from their removal); the records of containers
    /// still there are always kept.
    fn retention(&mut self) {
        self.last_retention = Instant::now();
        let now = ns_of(SystemTime::now());
        let max_age = self.opts.max_age.as_nanos() as i128;
        let mut ended: Vec<(i128, String)> = self
            .st
            .containers
            .iter()
            .filter(|(_, e)| e.finished())
            .map(|(id, e)| {
                let at = e
                    .removed
                    .as_deref()
                    .and_then(events::parse_rfc3339_ns)
                    .unwrap_or(now);
                (at, id.clone())
            })
            .collect();
        // Newest first: the first `keep` stay, unless too old.
        ended.sort_by(|a, b| b.cmp(a));
        let mut dropped = Vec::new();
        for (i, (at, id)) in ended.into_iter().enumerate() {
            if i < self.opts.keep && now - at <= max_age {
                continue;
            }
            let Some(e) = self.st.containers.remove(&id) else {
                continue;
            };
            self.dirty = true;
            if let Some(d) = e.inspection.as_deref().and_then(inspection_dir_name) {
                let p = self.out.join(INSPECTIONS).join(d);
                // Only a real directory the watch made (never through a
                // symlink someone put in its place).
                if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                    if let Err(err) = std::fs::remove_dir_all(&p) {
                        log(&format!("retention: cannot remove {}: {err}", p.display()));
                    }
                }
                dropped.push(d.to_string());
            }
        }
        if self.dirty {
            self.fleet_changed(Vec::new(), dropped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_watch_s_own_directories_are_named() {
        let id = "0123456789ab";
        assert_eq!(
            inspection_dir_name(&format!("inspections/20261202T121029Z-{id}")),
            Some(format!("20261202T121029Z-{id}").as_str())
        );
        assert!(inspection_dir_name(&format!("inspections/20261202T121029Z-{id}-1")).is_some());
        for bad in [
            "inspections/../../etc".to_string(),
            format!("inspections/20261202T121029Z-{id}/.."),
            format!("other/20261202T121029Z-{id}"),
            format!("inspections/20261202T121029Z-{}", "G".repeat(12)),
            format!("inspections/20261202T121029Z-{id}-x"),
            "inspections/".into(),
        ] {
            assert_eq!(inspection_dir_name(&bad), None, "{bad}");
        }
    }

    #[test]
    fn labels_are_matched_as_ps_matches_them() {
        let labels: BTreeMap<String, String> =
            [("agent.workspace".to_string(), "1".to_string())].into();
        assert!(labels_match(&[], &labels));
        assert!(labels_match(&["label=agent.workspace=1".into()], &labels));
        assert!(labels_match(&["label=agent.workspace".into()], &labels));
        assert!(!labels_match(&["label=agent.workspace=2".into()], &labels));
        assert!(!labels_match(
            &["label=agent.workspace=1".into(), "label=team".into()],
            &labels
        ));
    }

    #[test]
    fn containers_dispatched_together_get_their_own_records_from_one_call() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sp-watch-batch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let id = |c: char| c.to_string().repeat(64);
        let (ours, gone, exited, other) = (id('a'), id('b'), id('c'), id('d'));
        let rec = |id: &str, running: bool, status: &str, label: &str| {
            format!(
                r#"{{"Id": "{id}", "Name": "/w-{}", "State": {{"Running": {running}, "Status": "{status}"}}, "Config": {{"Labels": {{"{label}": "1"}}}}}}"#,
                &id[..1]
            )
        };
        // A stand-in for the engine's CLI: it logs each call and prints
        // the records it knows of those asked, in the order asked, with
        // Docker's exit 1 for one it does not know.
        let known = [
            (ours.clone(), rec(&ours, true, "running", "agent")),
            (exited.clone(), rec(&exited, false, "exited", "agent")),
            (other.clone(), rec(&other, true, "running", "team")),
        ];
        let mut script = format!("#!/bin/sh\necho \"$*\" >> {}/calls\n", dir.display());
        script.push_str("out=''; code=0\nfor a in \"$@\"; do case $a in\n");
        for (id, r) in &known {
            script.push_str(&format!(
                "  {id}) out=\"$out${{out:+,}}{}\";;\n",
                r.replace('"', "\\\"")
            ));
        }
        script.push_str("  container|inspect|--) ;;\n  *) code=1; echo \"Error: No such object: $a\" >&2;;\nesac; done\necho \"[$out]\"\nexit $code\n");
        let cli = dir.join("docker");
        std::fs::write(&cli, script).unwrap();
        std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
        let engine = Engine {
            cli: cli.clone(),
            ..Engine::offline(EngineKind::Docker)
        };
        let filters = vec!["label=agent=1".to_string()];
        let deadline = Instant::now() + Duration::from_secs(20);
        let batch = Batch::new(vec![
            ours.clone(),
            gone.clone(),
            exited.clone(),
            other.clone(),
        ]);
        // Each asks for its own, from threads as the workers do.
        let outcomes: Vec<(String, Result<Record, Outcome>)> = std::thread::scope(|s| {
            let hs: Vec<_> = [&ours, &gone, &exited, &other]
                .into_iter()
                .map(|id| {
                    let (batch, engine, filters) = (&batch, &engine, &filters);
                    s.spawn(move || {
                        let r = batch.record(engine, id, deadline).unwrap();
                        (id.clone(), admit(r, filters))
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (id, o) in outcomes {
            match o {
                Ok(r) => {
                    assert_eq!(id, ours);
                    assert_eq!(r.id, ours, "its own record");
                    assert_eq!(r.name, "w-a");
                }
                Err(Outcome::Missed { gone: true, why }) => {
                    assert_eq!(id, gone, "{why}");
                }
                Err(Outcome::Missed { gone: false, why }) => {
                    assert_eq!(id, exited);
                    assert!(why.contains("exited"), "{why}");
                }
                Err(Outcome::NotOurs) => assert_eq!(id, other),
                Err(o) => panic!("{id}: {o:?}"),
            }
        }
        let calls = std::fs::read_to_string(dir.join("calls")).unwrap();
        assert_eq!(calls.lines().count(), 1, "one engine call for all: {calls}");
        for id in [&ours, &gone, &exited, &other] {
            assert!(calls.contains(id.as_str()), "{calls}");
        }
        // An engine that does not answer: each of the batch is tried again.
        let mute = Engine {
            cli: dir.join("no-such-cli"),
            ..Engine::offline(EngineKind::Docker)
        };
        let batch = Batch::new(vec![ours.clone(), other.clone()]);
        assert!(batch.record(&mute, &ours, deadline).is_err());
        assert!(batch.record(&mute, &other, deadline).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn retention_keeps_live_records_and_the_newest_ended() {
        let dir = std::env::temp_dir().join(format!("sp-watch-ret-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(INSPECTIONS)).unwrap();
        let mut st = State::new("docker", &[]);
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let mut add = |n: u8, removed: Option<SystemTime>| {
            let id = format!("{:02x}", n).repeat(32);
            let d = format!("20260101T000000Z-{}", &id[..12]);
            std::fs::create_dir(dir.join(INSPECTIONS).join(&d)).unwrap();
            let mut e = Entry::new("w", rfc3339(now));
            e.state = Phase::Inspected;
            e.inspection = Some(format!("{INSPECTIONS}/{d}"));
            e.removed = removed.map(rfc3339);
            e.teardown = removed.map(|_| TeardownOut {
                result: "gone".into(),
                statement: None,
                at: rfc3339(now),
                exit: 0,
                error: None,
            });
            st.containers.insert(id.clone(), e);
            (id, d)
        };
        let live = add(1, None);
        let old = add(2, Some(now - 40 * day));
        let a = add(3, Some(now - day));
        let b = add(4, Some(now - 2 * day));
        let c = add(5, Some(now - 3 * day));
        let (tx, _rx) = sync_channel(1);
        let (job_tx, _j) = channel();
        let (td_tx, _t) = channel();
        let (fleet_tx, _f) = channel();
        let a_opts = WatchArgs {
            engine: None,
            engine_cli_only: false,
            filter: vec![],
            out_dir: dir.clone(),
            jobs: None,
            timeout: Duration::from_secs(60),
            sign_key: None,
            place_in: None,
            policy: None,
            // Any file will do: nothing is placed.
            binary: Some(std::env::current_exe().unwrap()),
            workspace: None,
            fail_on: selfprobe::cli::FailOn(None),
            keep: 2,
            max_age: 30 * day,
        };
        let opts = Options::from_args(&a_opts).unwrap();
        let signer = Signer::ephemeral().unwrap();
        let session =
            Session::open(&opts.inspect, signer, Engine::offline(EngineKind::Docker)).unwrap();
        let mut w = Watch::new(
            opts,
            dir.clone(),
            Arc::new(session),
            st,
            Channels {
                job_tx,
                td_tx,
                fleet_tx,
                tx,
            },
        );
        w.next_connect = None;
        w.retention();
        let kept: BTreeSet<&String> = w.st.containers.keys().collect();
        assert!(kept.contains(&live.0), "a live record is never removed");
        assert!(
            kept.contains(&a.0) && kept.contains(&b.0),
            "the newest two stay"
        );
        assert!(!kept.contains(&c.0), "past --keep");
        assert!(!kept.contains(&old.0), "past --max-age");
        for (id, d) in [&live, &a, &b, &c, &old] {
            assert_eq!(
                dir.join(INSPECTIONS).join(d).exists(),
                kept.contains(id),
                "{d}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
