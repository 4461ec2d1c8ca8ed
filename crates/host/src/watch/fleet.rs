//! DIR/fleet.{txt,json,html}: what `selfprobe summary` prints for the
//! watch's inspections (compare::summary, the one verifier and the one set
//! of renderers), kept current as inspections and teardowns are written.
//!
//! Each inspection directory is verified once, with its own nonces and
//! signing.pub and the watch's key (its teardown statement may be signed by
//! a later key), against the placed binary's SHA-256; its rows are kept
//! until the directory changes or goes. A container the watch could not
//! inspect is a row of its own, NOT VERIFIED with the reason, so the page
//! has every workspace the watch saw. The work is done on a thread of its
//! own, and the watch's loop never waits on it.
//!
//! When: once the updates pause for QUIET, or MAX_LAG after the first one
//! not yet shown, whichever comes first. The verifying and the rendering
//! are CPU the inspections of a burst would otherwise share (3 ms a
//! container, 30 % of the watch's CPU, measured over a burst of 40 on 2
//! CPUs; more with a thousand rows to render), so they wait for the burst
//! to pass, and the page is never more than MAX_LAG behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::compare::summary::{self, Cell, Fleet, Workspace};
use crate::compare::{html, input, render};
use crate::error::CannotWrite;
use selfprobe::keys::VerifyingKey;
use selfprobe::model::Exit;
use selfprobe::scorecard::CONTROLS;

pub const TEXT: &str = concat!("fleet", ".txt");
pub const JSON: &str = concat!("fleet", ".json");
pub const HTML: &str = concat!("fleet", ".html");
/// How long the updates must pause before the page is brought up to date.
const QUIET: Duration = Duration::from_secs(1);
/// The most the page lags behind the first update not yet on it.
const MAX_LAG: Duration = Duration::from_secs(10);

/// A container the watch saw and could not inspect.
#[derive(Debug, Clone)]
pub struct Missed {
    pub id: String,
    pub name: String,
    pub why: String,
}

/// What the watch's loop tells the fleet thread.
pub enum Update {
    /// These inspection directories (names under inspections/) changed or
    /// are new; `missed` is the whole current list of missed containers.
    Changed {
        dirs: Vec<String>,
        dropped: Vec<String>,
        missed: Vec<Missed>,
    },
    /// Write now (the watch is ending) and say so on the channel given.
    Flush(std::sync::mpsc::Sender<()>),
}

/// The part of inspection.json that names the binary placed.
#[derive(serde::Deserialize)]
struct Placed {
    binary: PlacedBinary,
}

#[derive(serde::Deserialize)]
struct PlacedBinary {
    sha256: String,
}

struct Rows {
    workspaces: Vec<Workspace>,
    errors: Vec<String>,
}

pub struct View {
    out_dir: PathBuf,
    key: (String, VerifyingKey),
    binary_sha256: String,
    rows: BTreeMap<String, Rows>,
    missed: Vec<Missed>,
}

impl View {
    pub fn new(out_dir: &Path, key: (String, VerifyingKey), binary_sha256: &str) -> View {
        View {
            out_dir: out_dir.to_path_buf(),
            key,
            binary_sha256: binary_sha256.to_string(),
            rows: BTreeMap::new(),
            missed: Vec::new(),
        }
    }

    /// Verifies one inspection directory's files into its rows.
    fn read(&self, dir_name: &str) -> Rows {
        let dir = self.out_dir.join(super::INSPECTIONS).join(dir_name);
        let mut keys = Vec::new();
        let pubfile = dir.join("signing.pub");
        if let Ok(k) = crate::compare::load_key(&pubfile) {
            keys.push((pubfile.display().to_string(), k));
        }
        if !keys.iter().any(|(_, k)| *k == self.key.1) {
            keys.push(self.key.clone());
        }
        let nonce_file = dir.join("nonces");
        let nonces = input::read_capped(&nonce_file, false)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| input::parse_nonces(&nonce_file.display().to_string(), &t).ok())
            .map(|m| (nonce_file.display().to_string(), m));
        // The probe this inspection placed, as its inspection.json (the
        // watch's own file) names it: an upgraded probe does not unverify
        // the inspections made before. A teardown statement names the host
        // tool that made it, which may be an older watch: its signature
        // and nonce are checked, not that binary.
        let placed = selfprobe::host::read_regular_nofollow(&dir.join("inspection.json"), 64 << 20)
            .ok()
            .and_then(|b| serde_json::from_slice::<Placed>(&b).ok())
            .map(|p| p.binary.sha256)
            .unwrap_or_else(|| self.binary_sha256.clone());
        let fleet = summary::summarize(
            &[dir],
            &summary::Options {
                keys,
                nonces,
                binary_sha256: Some(placed),
                host_sha256: None,
            },
        );
        Rows {
            workspaces: fleet.workspaces,
            errors: fleet.errors,
        }
    }

    pub fn update(&mut self, dirs: &[String], dropped: &[String], missed: Vec<Missed>) {
        for d in dropped {
            self.rows.remove(d);
        }
        for d in dirs {
            let rows = self.read(d);
            self.rows.insert(d.clone(), rows);
        }
        self.missed = missed;
    }

    /// All the rows: the inspections' in the order they were made, then the
    /// missed containers.
    pub fn fleet(&self) -> Fleet {
        let mut workspaces = Vec::new();
        let mut errors = Vec::new();
        for r in self.rows.values() {
            workspaces.extend(r.workspaces.iter().cloned());
            errors.extend(r.errors.iter().cloned());
        }
        for m in &self.missed {
            workspaces.push(Workspace {
                name: m.name.clone(),
                source: format!("watch: container {}", m.id),
                files: Vec::new(),
                run_id: None,
                boundary: None,
                controls: vec![Cell::default(); CONTROLS.len()],
                worst: None,
                teardown_result: None,
                verified: false,
                problems: vec![format!("missed by the watch: {}", m.why)],
                checked: Vec::new(),
                notes: Vec::new(),
                findings: Vec::new(),
                exit: Exit::ProbeFailed,
                total: None,
                has_content: false,
            });
        }
        let rank = |e: Exit| match e {
            Exit::Clean => 0,
            Exit::Findings => 1,
            _ => 3,
        };
        let mut exit = Exit::Clean;
        for w in &workspaces {
            if rank(w.exit) > rank(exit) {
                exit = w.exit;
            }
        }
        if !errors.is_empty() {
            exit = Exit::ProbeFailed;
        }
        Fleet {
            workspaces,
            errors,
            notes: Vec::new(),
            exit,
        }
    }

    /// fleet.txt, fleet.json and fleet.html, each whole or not at all.
    pub fn write(&self) -> Result<(), CannotWrite> {
        let f = self.fleet();
        let cleanup = selfprobe::host::Cleanup::default();
        let text = if f.workspaces.is_empty() {
            "selfprobe-host watch: no workspace inspected yet\n".to_string()
        } else {
            render::text(&f)
        };
        for (name, body) in [
            (TEXT, text),
            (JSON, render::json(&f)),
            (HTML, html::render(&f)),
        ] {
            let p = self.out_dir.join(name);
            selfprobe::host::write_whole(&p, body.as_bytes(), &cleanup)
                .map_err(|source| CannotWrite { path: p, source })?;
        }
        Ok(())
    }
}

/// The updates taken and not yet applied: each directory's last word
/// (true: changed or new, false: dropped), the newest list of missed
/// containers, and when the first and the last of them came.
#[derive(Default)]
struct Pending {
    dirs: BTreeMap<String, bool>,
    missed: Option<Vec<Missed>>,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Pending {
    fn take(&mut self, dirs: Vec<String>, dropped: Vec<String>, missed: Vec<Missed>) {
        // A message's dropped directories go before its changed ones, as
        // View::update takes them.
        for d in dropped {
            self.dirs.insert(d, false);
        }
        for d in dirs {
            self.dirs.insert(d, true);
        }
        self.missed = Some(missed);
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// When the page is due: QUIET after the last update, MAX_LAG after
    /// the first, whichever is sooner; None with nothing pending.
    fn due(&self) -> Option<Instant> {
        Some((self.last? + QUIET).min(self.first? + MAX_LAG))
    }

    /// Applies what is pending to `view`, which is then up to date.
    fn apply(&mut self, view: &mut View) {
        let (changed, dropped): (Vec<_>, Vec<_>) = std::mem::take(&mut self.dirs)
            .into_iter()
            .partition(|(_, c)| *c);
        let missed = self.missed.take().unwrap_or_else(|| view.missed.clone());
        view.update(
            &changed.into_iter().map(|(d, _)| d).collect::<Vec<_>>(),
            &dropped.into_iter().map(|(d, _)| d).collect::<Vec<_>>(),
            missed,
        );
        self.first = None;
        self.last = None;
    }
}

/// The fleet thread: takes updates as they come, applies and renders them
/// once they pause (Pending::due), and on Flush renders what it has and
/// answers.
pub fn serve(mut view: View, rx: Receiver<Update>, warn: impl Fn(&str)) {
    let mut pending = Pending::default();
    let write = |view: &View| {
        if let Err(e) = view.write() {
            warn(&e.to_string());
        }
    };
    loop {
        let wait = pending.due().map_or(Duration::from_secs(3600), |t| {
            t.saturating_duration_since(Instant::now())
        });
        match rx.recv_timeout(wait) {
            Ok(Update::Changed {
                dirs,
                dropped,
                missed,
            }) => pending.take(dirs, dropped, missed),
            Ok(Update::Flush(done)) => {
                pending.apply(&mut view);
                write(&view);
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if pending.due().is_some_and(|t| Instant::now() >= t) {
            pending.apply(&mut view);
            write(&view);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_waits_for_a_pause_and_never_longer_than_max_lag() {
        let mut p = Pending::default();
        assert_eq!(p.due(), None, "nothing pending, nothing due");
        p.take(vec!["a".into()], Vec::new(), Vec::new());
        let due = p.due().expect("an update makes the page due");
        let last = p.last.unwrap();
        assert_eq!(due, last + QUIET, "due a pause after the last update");
        // A burst that has gone on for longer than MAX_LAG: due at once,
        // however recent its last update.
        // (A clock younger than MAX_LAG cannot go back that far.)
        if let Some(early) = last.checked_sub(MAX_LAG + Duration::from_millis(1)) {
            p.first = Some(early);
            p.take(vec!["b".into()], Vec::new(), Vec::new());
            assert!(
                p.due().unwrap() <= Instant::now(),
                "MAX_LAG bounds the wait"
            );
        }
        // Each directory's last word counts: dropped after it changed.
        p.take(Vec::new(), vec!["a".into()], Vec::new());
        assert_eq!(p.dirs.get("a"), Some(&false));
        p.take(vec!["b".into()], Vec::new(), Vec::new());
        assert_eq!(p.dirs.get("b"), Some(&true));
    }
}
