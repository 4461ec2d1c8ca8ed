//! secret.env and secret.process-env: this process's environment and every
//! other process's /proc/PID/environ that can be read, through the rules of
//! probes/env-secrets.toml. Values stay in memory only as long as the rules
//! look at them; what is kept is the name, the kind and the rule.

use std::collections::HashMap;
use std::io;
use std::time::Instant;

use serde::Serialize;

use super::rules::env_secrets;
use super::short;
use crate::host::{read_regular, Host, MAX_ENVIRON};

const MAX_PROCESSES: usize = 4096;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct EnvHit {
    pub name: String,
    pub kind: String,
    /// The rule that matched: "name *TOKEN", "value prefix ghp_", ...
    pub rule: String,
    /// What the issuer documents about such a secret (a one-year lifetime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ProcFacts {
    /// Processes looked at (all numeric /proc entries but our own).
    pub scanned: usize,
    pub readable: usize,
    /// environ could not be read (another uid without CAP_SYS_PTRACE).
    pub denied: usize,
    /// Secret-looking variables that another process shares with ours, same
    /// name and value: already reported as secret.env.
    pub shared_with_self: usize,
    pub truncated: bool,
    pub hits: Vec<ProcHit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProcHit {
    pub pid: u32,
    pub comm: String,
    pub uid: Option<u32>,
    pub variables: Vec<EnvHit>,
}

pub use crate::host::parse_environ;

/// The real uid of a /proc/PID/status file: the first number of its Uid line.
pub fn status_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
}

/// This process's environment: the live one, or the fixture tree's
/// /proc/self/environ under `--root` (src/host.rs), so tests never see the
/// environment of whoever runs them. None when the tree has none.
pub fn own_environ(host: &Host) -> Option<Vec<(String, String)>> {
    host.env().known().then(|| host.env().vars().to_vec())
}

pub fn scan(vars: &[(String, String)]) -> Vec<EnvHit> {
    let rules = env_secrets();
    let mut out: Vec<EnvHit> = vars
        .iter()
        .filter_map(|(k, v)| {
            rules.classify(k, v).map(|h| EnvHit {
                name: short(k, 128),
                kind: h.kind,
                rule: h.rule,
                note: h.note,
            })
        })
        .collect();
    crate::util::sort::sort_by(&mut out, |a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// Reads every other process's environ. `also` receives (pid, name, value)
/// of the variables the caller wants beyond secrets (SSH_AUTH_SOCK), which
/// are paths, not secrets.
pub fn scan_processes(
    host: &Host,
    own: &[(String, String)],
    wanted: &[&str],
    also: &mut Vec<(u32, String, String)>,
    deadline: Instant,
) -> ProcFacts {
    let mut f = ProcFacts::default();
    let Ok(rd) = std::fs::read_dir(host.path("/proc")) else {
        return f;
    };
    let mine: HashMap<&str, &str> = own.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let self_pid = host.is_live().then(std::process::id);
    let mut pids: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| Some(*p) != self_pid)
        .collect();
    crate::util::sort::sort(&mut pids);
    if pids.len() > MAX_PROCESSES {
        pids.truncate(MAX_PROCESSES);
        f.truncated = true;
    }
    let rules = env_secrets();
    for pid in pids {
        if Instant::now() > deadline {
            f.truncated = true;
            break;
        }
        f.scanned += 1;
        let bytes = match read_regular(&host.path(format!("/proc/{pid}/environ")), MAX_ENVIRON) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                f.denied += 1;
                continue;
            }
            // Gone meanwhile, a kernel thread, or a fixture without one.
            Err(_) => continue,
        };
        f.readable += 1;
        let mut vars = Vec::new();
        for (k, v) in parse_environ(&bytes) {
            if wanted.contains(&k.as_str()) && !v.is_empty() {
                also.push((pid, k.clone(), v.clone()));
            }
            let Some(h) = rules.classify(&k, &v) else {
                continue;
            };
            if mine.get(k.as_str()) == Some(&v.as_str()) {
                f.shared_with_self += 1;
                continue;
            }
            vars.push(EnvHit {
                name: short(&k, 128),
                kind: h.kind,
                rule: h.rule,
                note: h.note,
            });
        }
        if vars.is_empty() {
            continue;
        }
        crate::util::sort::sort_by(&mut vars, |a, b| a.name.cmp(&b.name));
        vars.dedup_by(|a, b| a.name == b.name);
        let comm = host
            .read(format!("/proc/{pid}/comm"))
            .map(|c| short(c.trim(), 32))
            .unwrap_or_default();
        let uid = host
            .read(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| status_uid(&s));
        f.hits.push(ProcHit {
            pid,
            comm,
            uid,
            variables: vars,
        });
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environ_parsing() {
        let v = parse_environ(b"A=1\0B=x=y\0\0NOEQ\0C=\0");
        assert_eq!(
            v,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "x=y".into()),
                ("C".into(), String::new())
            ]
        );
    }

    #[test]
    fn scan_reports_names_only() {
        let secret = format!("glpat-{}", "Xy7".repeat(8));
        let hits = scan(&[
            ("CI_TOKEN".into(), secret.clone()),
            ("HOME".into(), "/root".into()),
        ]);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].name, "CI_TOKEN");
        assert_eq!(hits[0].rule, "value prefix glpat-");
        let shown = format!("{hits:?}");
        assert!(!shown.contains(&secret[6..]));
    }
}
