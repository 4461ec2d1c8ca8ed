//! The host tool's one error type. Every command ends in one of two ways
//! when it cannot do its work: the operator asked for something that cannot
//! be (a bad option, key, policy, reference or input file: exit 2), or the
//! world did not answer (the engine, the registry, the output directory:
//! exit 3). inspect, teardown, watch, diff, summary and attest all return this;
//! main turns it into the exit code and the one message on stderr.

use selfprobe::model::Exit;
use selfprobe::output::Failure;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Bad options, key, policy, reference or input: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The engine, the registry or the output directory: exit 3.
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// The exit code it ends the command with.
    pub fn exit(&self) -> Exit {
        match self {
            Error::Usage(_) => Exit::Usage,
            Error::Failed(_) => Exit::ProbeFailed,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Usage(m) => Failure::usage(m),
            Error::Failed(m) => Failure::failed(m),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A file the host tool could not write (host::write_whole): which, and
/// the system's reason. Its words are the same wherever it is said.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct CannotWrite {
    pub path: std::path::PathBuf,
    pub source: std::io::Error,
}

/// The output directory is the world's: exit 3.
impl From<CannotWrite> for Error {
    fn from(e: CannotWrite) -> Error {
        Error::Failed(e.to_string())
    }
}
