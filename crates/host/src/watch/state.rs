//! DIR/watch.json: what the watch knows of every container it has taken
//! on, so that a watch started again (after a crash, a reboot, an upgrade)
//! inspects none twice, tears down what ended while it was away and knows
//! from when to catch up on the engine's events. Written whole or not at
//! all (a new file beside it, fsync, rename: host::write_whole) after every
//! change that matters, and before each inspection begins, so a watch killed
//! mid-inspection finds it marked as begun.

use std::collections::BTreeMap;
use std::path::Path;

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
    pub fn load(dir: &Path) -> Result<Option<State>, String> {
        let path = dir.join(FILE);
        let bytes = match selfprobe::host::read_regular_nofollow(&path, MAX_STATE + 1) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        if bytes.len() as u64 > MAX_STATE {
            return Err(format!(
                "{}: larger than {} MiB: not a watch's state",
                path.display(),
                MAX_STATE >> 20
            ));
        }
        State::parse(&path, &bytes).map(Some)
    }

    /// watch.json's bytes (read from `path`, for messages): a watch's
    /// state, or why not. Whoever can write the out-dir wrote them: every
    /// id must be an engine's and every inspection a directory the watch
    /// names, as they become file names.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<State, String> {
        let st: State = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "{}: not a watch's state ({e}): move it away, or use another --out-dir",
                path.display()
            )
        })?;
        if st.schema != SCHEMA {
            return Err(format!(
                "{}: schema {:?}, not {SCHEMA}: move it away, or use another --out-dir",
                path.display(),
                selfprobe::util::sanitize::escape(&st.schema)
            ));
        }
        // Ids are file names' parts: only the engines' own.
        if let Some(bad) = st
            .containers
            .keys()
            .find(|id| !super::events::is_engine_id(id))
        {
            return Err(format!(
                "{}: container id {:?} is not 64 hex digits: not a watch's state",
                path.display(),
                selfprobe::util::sanitize::short(&selfprobe::util::sanitize::escape(bad), 80)
            ));
        }
        if let Some((id, _)) = st.containers.iter().find(|(_, e)| {
            e.inspection
                .as_deref()
                .is_some_and(|d| super::inspection_dir_name(d).is_none())
        }) {
            return Err(format!(
                "{}: the inspection of {id} is not a directory the watch makes: not a watch's state",
                path.display()
            ));
        }
        Ok(st)
    }

    /// Writes DIR/watch.json whole (host::write_whole).
    pub fn save(&mut self, dir: &Path) -> Result<(), String> {
        self.updated = selfprobe::host::rfc3339(std::time::SystemTime::now());
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        let cleanup = selfprobe::host::Cleanup::default();
        selfprobe::host::write_whole(&dir.join(FILE), text.as_bytes(), &cleanup)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(FILE).display()))
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
        assert!(State::load(&dir).unwrap_err().contains("not a watch"));
        let mut bad = st.clone();
        bad.containers.get_mut(&id).unwrap().inspection = Some("../../etc".into());
        bad.save(&dir).unwrap();
        assert!(State::load(&dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
