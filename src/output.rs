//! What both binaries do at their ends: the one error path (`Failure`,
//! `finish`), notes on stderr, and writing to standard output or a file
//! whole. Every command of `selfprobe` and `selfprobe-host` returns
//! `Result<Exit, Failure>`; `finish` prints the error (sanitised) and picks
//! the code.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use crate::host::{self, Cleanup};
use crate::model::Exit;
use crate::util::sanitize;

/// The name stderr's messages begin with: `selfprobe` unless a binary set
/// its own (`selfprobe-host`), once, before its first message.
static PROGRAM: OnceLock<&'static str> = OnceLock::new();

/// Names the binary in every message that follows.
pub fn set_program(name: &'static str) {
    let _ = PROGRAM.set(name);
}

fn program() -> &'static str {
    PROGRAM.get().copied().unwrap_or("selfprobe")
}

/// What ended a command early: the code, and the message for stderr (None
/// for a closed pipe: the reader left, and there is nobody to tell).
pub struct Failure {
    /// An Exit, or the gate's 126 and 127 (a command that could not start).
    pub code: u8,
    pub message: Option<String>,
}

impl Failure {
    pub fn usage(m: impl std::fmt::Display) -> Failure {
        Failure {
            code: Exit::Usage as u8,
            message: Some(m.to_string()),
        }
    }

    pub fn failed(m: impl std::fmt::Display) -> Failure {
        Failure {
            code: Exit::ProbeFailed as u8,
            message: Some(m.to_string()),
        }
    }

    /// Names what was being done (`--attest: cannot write …`).
    pub fn within(mut self, what: &str) -> Failure {
        self.message = self.message.map(|m| format!("{what}: {m}"));
        self
    }
}

/// The one error path: the message (sanitised: it may echo a path or a
/// policy value) to stderr, then the code.
pub fn finish(result: Result<Exit, Failure>) -> ExitCode {
    match result {
        Ok(code) => code.into(),
        Err(f) => {
            if let Some(m) = f.message {
                let _ = writeln!(std::io::stderr(), "{}: {}", program(), sanitize::escape(&m));
            }
            ExitCode::from(f.code)
        }
    }
}

/// A note on stderr that does not end the command.
pub fn warn(m: &str) {
    let _ = writeln!(std::io::stderr(), "{}: {}", program(), sanitize::escape(m));
}

/// Writes `text` to standard output. A closed pipe (`selfprobe … | head`)
/// ends the command quietly with `on_closed`, the code it would have had;
/// any other failure (a full disk, `> /dev/full`) is exit 3 with the reason.
pub fn emit(text: &str, on_closed: Exit) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure {
            code: on_closed as u8,
            message: None,
        }),
        Err(e) => Err(Failure::failed(format!(
            "cannot write to standard output: {e}"
        ))),
    }
}

/// The files this run creates and a signal removes, in two lists: the
/// probes' (write-test files, canaries) is closed when the probes end, so a
/// probe cut off by the deadline cannot create a file after that; the
/// report files are written later.
pub fn cleanup_on_signal() -> Result<(Arc<Cleanup>, Arc<Cleanup>, host::Signals), Failure> {
    let (probes, outputs) = (Arc::new(Cleanup::default()), Arc::new(Cleanup::default()));
    let signals =
        host::remove_on_signal(vec![probes.clone(), outputs.clone()]).map_err(Failure::failed)?;
    Ok((probes, outputs, signals))
}

/// Writes to `output` whole or not at all (see host::write_whole), else to
/// standard output (see `emit`).
pub fn write_out(
    output: Option<&std::path::Path>,
    text: &str,
    files: &Cleanup,
    on_closed: Exit,
) -> Result<(), Failure> {
    match output {
        Some(path) => host::write_whole(path, text.as_bytes(), files)
            .map_err(|e| Failure::failed(format!("cannot write {}: {e}", path.display()))),
        None => emit(text, on_closed),
    }
}
