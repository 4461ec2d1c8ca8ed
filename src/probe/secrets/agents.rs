//! secret.agent-socket: SSH and GnuPG agents. An SSH agent is sent the one
//! read-only request there is, SSH_AGENTC_REQUEST_IDENTITIES, and the answer
//! is counted; a GnuPG agent (Assuan) is asked KEYINFO --list. Nothing is
//! ever signed, decrypted or added, and key comments are not kept.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use serde::{Deserialize, Serialize};

use super::rules::Protocol;
use crate::util::socket::connect_unix;

/// One request and its answer; an agent answers at once.
const QUERY_TIMEOUT: Duration = Duration::from_millis(600);
/// A socket nothing says is an agent (a mounted one) gets less: it is
/// more likely a display or a bus that never answers the request.
const UNKNOWN_TIMEOUT: Duration = Duration::from_millis(300);
/// How long an unknown socket is given to greet first, as Assuan servers do.
const GREETING_WAIT: Duration = Duration::from_millis(150);
const MAX_ANSWER: usize = 256 * 1024;
const SSH_AGENTC_REQUEST_IDENTITIES: u8 = 11;
const SSH_AGENT_IDENTITIES_ANSWER: u8 = 12;
const SSH_AGENT_FAILURE: u8 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentOutcome {
    /// Spoke the agent protocol.
    Answered,
    Refused,
    Denied,
    /// Connected, but no agent answer in time.
    NoAnswer,
    /// Answered, but not as an agent.
    NotAgent,
    Error,
}

#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub protocol: Option<Protocol>,
    pub identities: Option<usize>,
    pub key_types: Vec<String>,
    pub detail: Option<String>,
}

fn connect(path: &Path) -> Result<UnixStream, AgentOutcome> {
    connect_unix(path).map_err(|e| match e {
        Errno::ECONNREFUSED | Errno::ENOENT => AgentOutcome::Refused,
        Errno::EACCES | Errno::EPERM => AgentOutcome::Denied,
        Errno::EAGAIN => AgentOutcome::NoAnswer,
        _ => AgentOutcome::Error,
    })
}

/// Asks the socket at `path` (a path on this machine, already mapped
/// through the root) what agent it is and how many keys it offers.
pub fn query(path: &Path, hint: Option<Protocol>, deadline: Instant) -> (AgentOutcome, Answer) {
    let left = |cap: Duration| deadline.saturating_duration_since(Instant::now()).min(cap);
    let mut s = match connect(path) {
        Ok(s) => s,
        Err(o) => return (o, Answer::default()),
    };
    if hint != Some(Protocol::Ssh) {
        // An Assuan server speaks first; an SSH agent waits for a request.
        let wait = if hint == Some(Protocol::Gpg) {
            QUERY_TIMEOUT
        } else {
            GREETING_WAIT
        };
        let _ = s.set_read_timeout(Some(left(wait).max(Duration::from_millis(1))));
        let mut first = [0u8; 512];
        match s.read(&mut first) {
            Ok(n) if n >= 2 && &first[..2] == b"OK" => return gpg_keyinfo(s, deadline),
            Ok(0) => return (AgentOutcome::NoAnswer, Answer::default()),
            Ok(_) => return (AgentOutcome::NotAgent, Answer::default()),
            Err(_) if hint == Some(Protocol::Gpg) => {
                return (AgentOutcome::NoAnswer, Answer::default())
            }
            Err(_) => {}
        }
    }
    let t = if hint.is_some() {
        QUERY_TIMEOUT
    } else {
        UNKNOWN_TIMEOUT
    };
    ssh_identities(s, left(t))
}

fn ssh_identities(mut s: UnixStream, timeout: Duration) -> (AgentOutcome, Answer) {
    if timeout.is_zero() {
        return (AgentOutcome::NoAnswer, Answer::default());
    }
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    if s.write_all(&[0, 0, 0, 1, SSH_AGENTC_REQUEST_IDENTITIES])
        .is_err()
    {
        return (AgentOutcome::Error, Answer::default());
    }
    let started = Instant::now();
    let mut len = [0u8; 4];
    if s.read_exact(&mut len).is_err() {
        return (AgentOutcome::NoAnswer, Answer::default());
    }
    let n = u32::from_be_bytes(len) as usize;
    if n == 0 || n > MAX_ANSWER {
        return (AgentOutcome::NotAgent, Answer::default());
    }
    let mut body = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match s.read(&mut body[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(_) => break,
        }
        if started.elapsed() > timeout {
            break;
        }
    }
    if got < n {
        return (AgentOutcome::NoAnswer, Answer::default());
    }
    match parse_identities(&body) {
        Some(a) => (AgentOutcome::Answered, a),
        None => (AgentOutcome::NotAgent, Answer::default()),
    }
}

/// The body of an SSH agent answer (after the length). None when it is
/// not a well-formed identities answer or failure.
pub fn parse_identities(body: &[u8]) -> Option<Answer> {
    let mut a = Answer {
        protocol: Some(Protocol::Ssh),
        ..Answer::default()
    };
    match *body.first()? {
        SSH_AGENT_FAILURE if body.len() == 1 => {
            a.detail = Some("the agent refused to list its identities".into());
            return Some(a);
        }
        SSH_AGENT_IDENTITIES_ANSWER => {}
        _ => return None,
    }
    let mut r = Reader { b: &body[1..] };
    let count = r.u32()? as usize;
    if count > 100_000 {
        return None;
    }
    for _ in 0..count {
        let blob = r.string()?;
        let _comment = r.string()?;
        let mut k = Reader { b: blob };
        let kt = k.string()?;
        let kt: String = String::from_utf8_lossy(kt)
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || "@.-_".contains(*c))
            .take(48)
            .collect();
        if !a.key_types.contains(&kt) && a.key_types.len() < 16 {
            a.key_types.push(kt);
        }
    }
    if !r.b.is_empty() {
        return None;
    }
    a.identities = Some(count);
    Some(a)
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u32(&mut self) -> Option<u32> {
        let (h, t) = self.b.split_at_checked(4)?;
        self.b = t;
        Some(u32::from_be_bytes(h.try_into().ok()?))
    }
    fn string(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        let (h, t) = self.b.split_at_checked(n)?;
        self.b = t;
        Some(h)
    }
}

fn gpg_keyinfo(mut s: UnixStream, deadline: Instant) -> (AgentOutcome, Answer) {
    let mut a = Answer {
        protocol: Some(Protocol::Gpg),
        ..Answer::default()
    };
    let timeout = deadline
        .saturating_duration_since(Instant::now())
        .min(QUERY_TIMEOUT);
    if timeout.is_zero() || s.write_all(b"KEYINFO --list\n").is_err() {
        return (AgentOutcome::Answered, a);
    }
    let _ = s.set_read_timeout(Some(timeout));
    let started = Instant::now();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let done = |b: &[u8]| {
        b.split(|c| *c == b'\n')
            .any(|l| l.starts_with(b"OK") || l.starts_with(b"ERR"))
    };
    while !done(&buf) && buf.len() < MAX_ANSWER && started.elapsed() < timeout {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let _ = s.write_all(b"BYE\n");
    let lines: Vec<&[u8]> = buf.split(|c| *c == b'\n').collect();
    if lines.iter().any(|l| l.starts_with(b"OK")) {
        a.identities = Some(
            lines
                .iter()
                .filter(|l| l.starts_with(b"S KEYINFO "))
                .count(),
        );
    } else if lines.iter().any(|l| l.starts_with(b"ERR")) {
        a.detail = Some("the agent refused KEYINFO --list".into());
    }
    (AgentOutcome::Answered, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(v: &[u8]) -> Vec<u8> {
        let mut o = (v.len() as u32).to_be_bytes().to_vec();
        o.extend_from_slice(v);
        o
    }

    #[test]
    fn parses_an_identities_answer() {
        let mut b = vec![SSH_AGENT_IDENTITIES_ANSWER];
        b.extend(2u32.to_be_bytes());
        for kt in [&b"ssh-ed25519"[..], b"ssh-rsa"] {
            let mut blob = string(kt);
            blob.extend(string(b"keybytes"));
            b.extend(string(&blob));
            b.extend(string(b"alice@laptop"));
        }
        let a = parse_identities(&b).unwrap();
        assert_eq!(a.identities, Some(2));
        assert_eq!(a.key_types, vec!["ssh-ed25519", "ssh-rsa"]);
        assert!(parse_identities(&b[..b.len() - 1]).is_none());
        assert!(parse_identities(b"HTTP/1.1 400").is_none());
        assert_eq!(
            parse_identities(&[SSH_AGENT_FAILURE]).unwrap().identities,
            None
        );
        let mut empty = vec![SSH_AGENT_IDENTITIES_ANSWER];
        empty.extend(0u32.to_be_bytes());
        assert_eq!(parse_identities(&empty).unwrap().identities, Some(0));
    }
}
