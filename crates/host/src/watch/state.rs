//! DIR/watch.json: what the watch knows of every container it has taken
//! on, so that a watch started again (after a crash, a reboot, an upgrade)
//! inspects none twice, tears down what ended while it was away and knows
//! from when to catch up on the engine's events. Written whole or not at
//! all (a new file beside it, fsync, rename: host::write_whole) after every
//! change that matters, and before each inspection begins, so a watch killed
//! mid-inspection finds it marked as begun.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::CannotWrite;

use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "https://selfprobe.dev/schema/watch/v1";
pub const FILE: &str = concat!("watch", ".json");
/// The largest watch.json read: some thousands of entries are a few MiB.
const MAX_STATE: u64 = 256 << 20;

/// Where a container is in the watch's life of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Seen running (an event or the engine's list), waiting for a worker.
    Queued,
    /// A worker has it; `inspection` names its directory.
    Inspecting,
    /// Its inspection directory is written (whatever it found).
    Inspected,
    /// It could not be inspected: `missed` says why.
    Missed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TeardownOut {
    /// gone, retained, remains or unknown (the statement's `result`).
    pub result: String,
    /// The statement, relative to the out-dir (None when none was written).
    pub statement: Option<String>,
    pub at: String,
    pub exit: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// As the engine names it (untrusted: escaped wherever it is shown).
    pub name: String,
    pub state: Phase,
    /// When the watch first saw it (this host's clock).
    pub seen: String,
    /// When the engine says it started (its start event), if known.
    #[serde(default)]
    pub started: Option<String>,
    /// Its inspection directory, relative to the out-dir.
    #[serde(default)]
    pub inspection: Option<String>,
    #[serde(default)]
    pub inspection_started: Option<String>,
    #[serde(default)]
    pub inspection_finished: Option<String>,
    /// From its start (the engine's event) to its inspection written, in ms.
    #[serde(default)]
    pub latency_ms: Option<u64>,
    #[serde(default)]
    pub verified: Option<bool>,
    /// The inspection's exit for this container (0, 1 or 3).
    #[serde(default)]
    pub exit: Option<i32>,
    #[serde(default)]
    pub not_probed: Option<String>,
    /// Why it was not inspected.
    #[serde(default)]
    pub missed: Option<String>,
    /// When it was recorded as missed (this host's clock): a start event
    /// older than this, caught up from `--since`, is not a new start.
    #[serde(default)]
    pub missed_at: Option<String>,
    /// When the watch learnt it was removed (this host's clock).
    #[serde(default)]
    pub removed: Option<String>,
    #[serde(default)]
    pub teardown: Option<TeardownOut>,
    /// Attempts that ended without an answer from the engine.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Entry {
    pub fn new(name: &str, seen: String) -> Entry {
        Entry {
            name: name.to_string(),
            state: Phase::Queued,
            seen,
            started: None,
            inspection: None,
            inspection_started: None,
            inspection_finished: None,
            latency_ms: None,
            verified: None,
            exit: None,
            not_probed: None,
            missed: None,
            missed_at: None,
            removed: None,
            teardown: None,
            attempts: 0,
            notes: Vec::new(),
        }
    }

    /// Its record is complete: the workspace ended and nothing more is to
    /// be done for it (what retention may remove).
    pub fn finished(&self) -> bool {
        self.removed.is_some()
            && match self.state {
                Phase::Missed => true,
                Phase::Inspected => self.teardown.is_some(),
                Phase::Queued | Phase::Inspecting => false,
            }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub schema: String,
    /// docker or podman: a state is never carried to another engine.
    pub engine: String,
    pub filters: Vec<String>,
    /// The key the inspections and teardown statements are signed with.
    pub keyid: String,
    pub binary_sha256: String,
    /// The engine's time of the last event taken (RFC 3339, nanoseconds):
    /// where a watch catches up from (`events --since`).
    pub cursor: Option<String>,
    pub updated: String,
    /// By container id.
    pub containers: BTreeMap<String, Entry>,
}

impl State {
    pub fn new(engine: &str, filters: &[String]) -> State {
        State {
            schema: SCHEMA.to_string(),
            engine: engine.to_string(),
            filters: filters.to_vec(),
            keyid: String::new(),
            binary_sha256: String::new(),
            cursor: None,
            updated: String::new(),
            containers: BTreeMap::new(),
        }
    }

    /// DIR/watch.json, or None when there is none. A file that is there but
    /// is not a watch's state is an error: it is never written over.
    pub fn load(dir: &Path) -> Result<Option<State>, StateError> {
        let path = dir.join(FILE);
        let bytes = match selfprobe::host::read_regular_nofollow(&path, MAX_STATE + 1) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StateError::Unreadable { path, source }),
        };
        if bytes.len() as u64 > MAX_STATE {
            return Err(StateError::TooLarge(path));
        }
        State::parse(&path, &bytes).map(Some)
    }

    /// watch.json's bytes (read from `path`, for messages): a watch's
    /// state, or why not. Whoever can write the out-dir wrote them: every
    /// id must be an engine's and every inspection a directory the watch
    /// names, as they become file names.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<State, StateError> {
        let path = path.to_path_buf();
        let st: State = match serde_json::from_slice(bytes) {
            Ok(st) => st,
            Err(source) => return Err(StateError::NotState { path, source }),
        };
        if st.schema != SCHEMA {
            let schema = st.schema;
            return Err(StateError::Schema { path, schema });
        }
        // Ids are file names' parts: only the engines' own.
        if let Some(bad) = st
            .containers
            .keys()
            .find(|id| !super::events::is_engine_id(id))
        {
            let id = bad.clone();
            return Err(StateError::BadId { path, id });
        }
        if let Some((id, _)) = st.containers.iter().find(|(_, e)| {
            e.inspection
                .as_deref()
                .is_some_and(|d| super::inspection_dir_name(d).is_none())
        }) {
            let id = id.clone();
            return Err(StateError::BadInspection { path, id });
        }
        Ok(st)
    }

    /// Writes DIR/watch.json whole (host::write_whole).
    pub fn save(&mut self, dir: &Path) -> Result<(), StateError> {
        self.updated = selfprobe::host::rfc3339(std::time::SystemTime::now());
        let mut text = serde_json::to_string_pretty(self).map_err(StateError::Unwritable)?;
        text.push('\n');
        let cleanup = selfprobe::host::Cleanup::default();
        let path = dir.join(FILE);
        selfprobe::host::write_whole(&path, text.as_bytes(), &cleanup)
            .map_err(|source| CannotWrite { path, source }.into())
    }
}

/// Why watch.json could not be read as a watch's state (then it is never
/// written over: the operator is asked to move it away), or not saved.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: larger than {} MiB: not a watch's state", .0.display(), MAX_STATE >> 20)]
    TooLarge(PathBuf),
    #[error("{}: not a watch's state ({source}): move it away, or use another --out-dir", path.display())]
    NotState {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{}: schema {:?}, not {SCHEMA}: move it away, or use another --out-dir",
        path.display(),
        selfprobe::util::sanitize::escape(schema)
    )]
    Schema { path: PathBuf, schema: String },
    /// An id that is not an engine's (ids become file names).
    #[error(
        "{}: container id {:?} is not 64 hex digits: not a watch's state",
        path.display(),
        selfprobe::util::sanitize::short(&selfprobe::util::sanitize::escape(id), 80)
    )]
    BadId { path: PathBuf, id: String },
    #[error("{}: the inspection of {id} is not a directory the watch makes: not a watch's state", path.display())]
    BadInspection { path: PathBuf, id: String },
    /// The state would not serialize (serde_json's reason, as it says it).
    #[error("{0}")]
    Unwritable(serde_json::Error),
    #[error(transparent)]
    Write(#[from] CannotWrite),
}

/// A state that cannot be read is the operator's to move away (usage); one
/// that cannot be saved is the disk's (failed).
impl From<StateError> for crate::error::Error {
    fn from(e: StateError) -> Self {
        match e {
            StateError::Unwritable(_) | StateError::Write(_) => Self::Failed(e.to_string()),
            _ => Self::Usage(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_round_trips_and_a_foreign_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("sp-watch-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(State::load(&dir).unwrap().is_none());
        let mut st = State::new("docker", &["label=a=1".into()]);
        let id = "a".repeat(64);
        let mut e = Entry::new("web-1", "2026-01-01T00:00:00.000Z".into());
        e.state = Phase::Inspected;
        e.inspection = Some(format!("inspections/20260101T000000Z-{}", &id[..12]));
        st.containers.insert(id.clone(), e);
        st.save(&dir).unwrap();
        let back = State::load(&dir).unwrap().unwrap();
        assert_eq!(back.containers[&id].state, Phase::Inspected);
        assert!(!back.containers[&id].finished());
        // Not ours: refused, never written over.
        std::fs::write(dir.join(FILE), b"{\"schema\": \"other\"}").unwrap();
        assert!(State::load(&dir)
            .unwrap_err()
            .to_string()
            .contains("not a watch"));
        let mut bad = st.clone();
        bad.containers.get_mut(&id).unwrap().inspection = Some("../../etc".into());
        bad.save(&dir).unwrap();
        assert!(State::load(&dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
