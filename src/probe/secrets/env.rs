//! secret.env, secret.process-env and secret.process-cmdline: this
//! process's environment, every other process's /proc/PID/environ that can
//! be read, and every other process's command line (/proc/PID/cmdline,
//! which any process of the PID namespace may read: `aider
//! --openai-api-key KEY` as PID 1 shows its key to all of them), through
//! the rules of probes/env-secrets.toml. Values stay in memory only as long
//! as the rules look at them; what is kept is the name, the kind, the rule
//! and the argument's position.

use std::collections::HashMap;
use std::io;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::rules::env_secrets;
use super::short;
use crate::host::{read_regular, Host, MAX_ENVIRON};

const MAX_PROCESSES: usize = 4096;
/// Bytes of one command line read: more than any option list a person
/// types, less than ARG_MAX.
const MAX_CMDLINE: u64 = 128 * 1024;
/// Arguments of one command line looked at.
const MAX_ARGS: usize = 4096;

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct EnvHit {
    pub name: String,
    pub kind: String,
    /// The rule that matched: "name *TOKEN", "value prefix ghp_", ...
    pub rule: String,
    /// What the issuer documents about such a secret (a one-year lifetime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
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
    /// Command lines read (/proc/PID/cmdline), and those with a
    /// secret-looking argument.
    pub cmdlines_read: usize,
    pub cmdline_hits: Vec<CmdlineHit>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CmdlineHit {
    pub pid: u32,
    pub comm: String,
    pub uid: Option<u32>,
    pub arguments: Vec<ArgHit>,
}

/// One secret-looking argument: where it is and what it looks like, never
/// what it is.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ArgHit {
    /// Its position in argv (0 is the program).
    pub index: usize,
    /// The option or variable it is the value of (`--openai-api-key`,
    /// `API_TOKEN=`), when it is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    pub kind: String,
    pub rule: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
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
    let who = |pid: u32| {
        let comm = host
            .read(format!("/proc/{pid}/comm"))
            .map(|c| short(c.trim(), 32))
            .unwrap_or_default();
        let uid = host
            .read(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| status_uid(&s));
        (comm, uid)
    };
    for pid in pids {
        if Instant::now() > deadline {
            f.truncated = true;
            break;
        }
        f.scanned += 1;
        // The command line first: it is readable where the environment
        // is not (another uid), and a kernel thread has none.
        if let Ok(b) = read_regular(&host.path(format!("/proc/{pid}/cmdline")), MAX_CMDLINE) {
            if !b.is_empty() {
                f.cmdlines_read += 1;
                let argv: Vec<String> = b
                    .split(|c| *c == 0)
                    .take(MAX_ARGS)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                let arguments = scan_cmdline(&argv);
                if !arguments.is_empty() {
                    let (comm, uid) = who(pid);
                    f.cmdline_hits.push(CmdlineHit {
                        pid,
                        comm,
                        uid,
                        arguments,
                    });
                }
            }
        }
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
        let (comm, uid) = who(pid);
        f.hits.push(ProcHit {
            pid,
            comm,
            uid,
            variables: vars,
        });
    }
    f
}

/// `--openai-api-key` as a variable's name: OPENAI_API_KEY, so the name
/// rules of env-secrets.toml apply to options as to variables.
fn option_name(opt: &str) -> Option<String> {
    let n = opt.trim_start_matches('-');
    let ok = !n.is_empty()
        && n.len() <= 64
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    ok.then(|| n.replace(['-', '.'], "_").to_ascii_uppercase())
}

/// The secret-looking arguments of one command line: the value of an
/// option whose name a name rule matches (`--api-key=V`, `--api-key V`),
/// `NAME=V` (env, a shell's assignments), and any argument a value rule
/// or a history marker recognises (a key format, `user:pw@` in a URL, an
/// `Authorization: Bearer` header). argv[0], the program, is skipped.
pub fn scan_cmdline(argv: &[String]) -> Vec<ArgHit> {
    let rules = env_secrets();
    let mut out = Vec::new();
    let hit = |index: usize, option: Option<String>, h: super::rules::Hit| ArgHit {
        index,
        option: option.map(|o| short(&o, 64)),
        kind: h.kind,
        rule: h.rule,
        note: h.note,
    };
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        if a.starts_with('-') && a.len() > 1 {
            let (opt, inline) = match a.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (a, None),
            };
            if let Some(name) = option_name(opt) {
                match inline {
                    Some(v) => {
                        if let Some(h) = rules.classify(&name, v) {
                            out.push(hit(i, Some(opt.to_string()), h));
                        }
                        i += 1;
                        continue;
                    }
                    None => {
                        // `--api-key V`: V is the option's only when a name
                        // rule says the option holds a secret.
                        let next = argv.get(i + 1).filter(|n| !n.starts_with('-'));
                        if let Some(v) = next.filter(|_| rules.name_rule(&name).is_some()) {
                            if let Some(h) = rules.classify(&name, v) {
                                out.push(hit(i + 1, Some(opt.to_string()), h));
                                i += 2;
                                continue;
                            }
                        }
                        i += 1;
                        continue;
                    }
                }
            }
        }
        if let Some((n, v)) = a
            .split_once('=')
            .filter(|(n, _)| super::rules::is_identifier(n))
        {
            if let Some(h) = rules.classify(n, v) {
                out.push(hit(i, Some(format!("{n}=")), h));
            }
        } else if let Some(h) = rules.line_hit(a) {
            out.push(hit(i, None, h));
        }
        i += 1;
    }
    out.truncate(20);
    out
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
    fn command_line_arguments() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let key = format!("sk-proj-{}", "Qw3".repeat(16));
        // aider's documented docker run: the key is PID 1's argument.
        let h = scan_cmdline(&argv(&[
            "aider",
            "--openai-api-key",
            &key,
            "--model",
            "gpt-4o",
        ]));
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!(
            (h[0].index, h[0].option.as_deref(), h[0].kind.as_str()),
            (2, Some("--openai-api-key"), "openai-project-key")
        );
        let h = scan_cmdline(&argv(&["x", &format!("--api-key=anthropic={key}")]));
        assert_eq!((h[0].index, h[0].option.as_deref()), (1, Some("--api-key")));
        let h = scan_cmdline(&argv(&["x", "--token", "q8Zr2mVx9Lk3zz"]));
        assert_eq!((h[0].index, h[0].rule.as_str()), (2, "name *TOKEN"));
        let h = scan_cmdline(&argv(&["env", "GITLAB_TOKEN=q8Zr2mVx9Lk3zz", "make"]));
        assert_eq!(h[0].option.as_deref(), Some("GITLAB_TOKEN="));
        let h = scan_cmdline(&argv(&[
            "curl",
            "-H",
            "Authorization: Bearer abcdefgh",
            "u",
        ]));
        assert_eq!((h[0].index, h[0].kind.as_str()), (2, "typed-secret"));
        let h = scan_cmdline(&argv(&["git", "clone", "https://u:s3cretpw@git.example/r"]));
        assert_eq!(h[0].kind, "url-credentials");
        let h = scan_cmdline(&argv(&["run", &key]));
        assert_eq!((h[0].index, h[0].option.as_deref()), (1, None));
        // Not secrets: flags, files, placeholders, the program itself.
        for clean in [
            vec!["sleep", "infinity"],
            vec![
                "dockerd",
                "--tlsverify",
                "--host",
                "unix:///run/docker.sock",
            ],
            vec!["kubelet", "--token-file", "/var/run/secrets/token"],
            vec!["chrome", "--password-store=basic", "--max-tokens", "4096"],
            vec!["docker", "login", "--password-stdin", "-u", "me"],
            vec!["x", "--api-key", "$OPENAI_API_KEY"],
            vec![key.as_str(), "--help"],
        ] {
            assert!(scan_cmdline(&argv(&clean)).is_empty(), "{clean:?}");
        }
        assert!(!format!("{:?}", scan_cmdline(&argv(&["a", &key]))).contains(&key[8..]));
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
