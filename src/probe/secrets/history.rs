//! artifact.shell-history: shell and REPL histories, counted line by line
//! for secret-looking lines with the rules of probes/env-secrets.toml. The
//! file is streamed in fixed chunks with a cap per line and per file, so a
//! huge or hostile history costs bounded memory; no line is ever kept.

use std::fs::File;
use std::io::Read;
use std::time::Instant;

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use super::rules::env_secrets;

/// Histories are appended to; a few MiB hold years of typing.
pub const MAX_HISTORY_BYTES: u64 = 16 << 20;
const MAX_LINE: usize = 64 * 1024;
const CHUNK: usize = 64 * 1024;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct History {
    pub path: String,
    pub shell: String,
    pub size: u64,
    pub owner_uid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub readable: bool,
    pub lines: usize,
    pub secret_lines: usize,
    /// Kinds the secret-looking lines matched (token kinds, "typed-secret").
    pub kinds: Vec<String>,
    /// Only the first MAX_HISTORY_BYTES, or the run's deadline, were scanned.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount_class: Option<crate::facts::mounts::MountClass>,
    /// On a host bind or a volume: survives the container.
    pub persistent: Option<bool>,
    /// persistent, ephemeral (the container's own layer or a tmpfs) or unknown.
    pub retention: Text,
    /// secret when it holds secret-looking lines, else internal.
    pub sensitivity: Text,
}

#[derive(Debug, Default)]
pub struct Count {
    pub lines: usize,
    pub secret_lines: usize,
    pub kinds: Vec<String>,
    pub truncated: bool,
    pub bytes: u64,
}

/// A zsh extended-history entry (": 1700000000:0;cmd") or a fish one
/// ("- cmd: cmd") without its bookkeeping.
fn command_of(line: &str) -> &str {
    if let Some(rest) = line.strip_prefix(": ") {
        if let Some((_, cmd)) = rest.split_once(';') {
            return cmd;
        }
    }
    line.strip_prefix("- cmd: ").unwrap_or(line)
}

fn judge(line: &[u8], c: &mut Count) {
    if line.is_empty() {
        return;
    }
    c.lines += 1;
    let text = String::from_utf8_lossy(line);
    if let Some(h) = env_secrets().line_hit(command_of(&text)) {
        c.secret_lines += 1;
        if !c.kinds.contains(&h.kind) && c.kinds.len() < 16 {
            c.kinds.push(h.kind);
        }
    }
}

/// Counts lines and secret-looking lines of an open file.
pub fn count(mut f: File, deadline: Instant) -> Count {
    let mut c = Count::default();
    let mut buf = vec![0u8; CHUNK];
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    loop {
        if c.bytes >= MAX_HISTORY_BYTES || Instant::now() > deadline {
            c.truncated = true;
            break;
        }
        let n = match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        c.bytes += n as u64;
        for part in buf[..n].split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match part.split_last() {
                Some((b'\n', body)) => (body, true),
                _ => (part, false),
            };
            if !overlong {
                let room = MAX_LINE - line.len();
                line.extend_from_slice(&body[..body.len().min(room)]);
                overlong = line.len() >= MAX_LINE;
            }
            if ends {
                judge(&line, &mut c);
                line.clear();
                overlong = false;
            }
        }
    }
    judge(&line, &mut c);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    #[test]
    fn counts_secret_lines_across_chunks() {
        let dir = std::env::temp_dir().join(format!("selfprobe-hist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(".zsh_history");
        let mut f = File::create(&p).unwrap();
        let tok = format!("ghp_{}", "Qw3".repeat(12));
        for i in 0..5000 {
            writeln!(f, ": 17000000{i:02}:0;ls -la /tmp/{i}").unwrap();
        }
        writeln!(f, ": 1700000000:0;export GITHUB_TOKEN={tok}").unwrap();
        writeln!(f, "{}", "x".repeat(200_000)).unwrap();
        write!(f, "curl -H 'Authorization: Bearer abc' http://127.0.0.1/").unwrap();
        drop(f);
        let c = count(
            File::open(&p).unwrap(),
            Instant::now() + Duration::from_secs(5),
        );
        assert_eq!(c.lines, 5003);
        assert_eq!(c.secret_lines, 2);
        assert!(c.kinds.contains(&"github-token".to_string()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
