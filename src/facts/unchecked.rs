//! Why a fact, or a probe's facts, could not be had: the error every
//! collector returns and the scheduler turns into `probe.incomplete`
//! (status unknown, never a pass). Typed, so a caller can tell a file that
//! could not be read from one that says nothing usable, a missing fact from
//! a deadline; the words a report shows are its Display.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum Unchecked {
    /// A file or directory it needs could not be read (`verb` is "read" or
    /// "list").
    Unreadable {
        verb: &'static str,
        path: String,
        error: io::Error,
    },
    /// A file was read but does not say what it must.
    Malformed(String),
    /// A fact it rests on is missing (no mount table, no /proc/self).
    Missing(&'static str),
    /// Its own deadline passed while it was `doing` this.
    OutOfTime(&'static str),
    /// No thread could be started for it.
    NoThread(io::Error),
}

impl Unchecked {
    pub fn unreadable(path: &str, error: io::Error) -> Unchecked {
        Unchecked::Unreadable {
            verb: "read",
            path: path.to_string(),
            error,
        }
    }
}

impl fmt::Display for Unchecked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unchecked::Unreadable { verb, path, error } => {
                write!(f, "cannot {verb} {path}: {error}")
            }
            Unchecked::Malformed(why) => f.write_str(why),
            Unchecked::Missing(why) => f.write_str(why),
            Unchecked::OutOfTime(doing) => write!(f, "ran out of time {doing}"),
            Unchecked::NoThread(e) => write!(f, "cannot start a thread: {e}"),
        }
    }
}

impl std::error::Error for Unchecked {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_a_report_shows() {
        let e = Unchecked::Unreadable {
            verb: "list",
            path: "/dev".into(),
            error: io::Error::from_raw_os_error(13),
        };
        assert_eq!(
            e.to_string(),
            "cannot list /dev: Permission denied (os error 13)"
        );
        assert_eq!(
            Unchecked::OutOfTime("looking at cache locations").to_string(),
            "ran out of time looking at cache locations"
        );
        assert_eq!(
            Unchecked::Missing("no mount list").to_string(),
            "no mount list"
        );
    }
}
