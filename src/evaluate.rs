//! From gathered facts to findings, with no system access: each probe's own
//! evaluate, the rules that need more than one probe's facts (privileged
//! signals from the mount table, writable kernel interfaces and devices;
//! the boundary's wording), and the findings for what could not be checked
//! (`probe.incomplete`, status unknown: never a pass). The same facts give
//! the same findings, so this is tested without running a probe.

use crate::finding::Code;
use std::path::Path;
use std::time::SystemTime;

use crate::facts::boundary;
use crate::finding::{finding_id, Finding};
use crate::policy::Policy;
use crate::probe::{
    artifacts, devices, mounts, namespaces, network, privilege, repro, rootpaths, secrets, sockets,
    teardown, writable, Cut, Gathered,
};

/// What evaluation needs to know about the run itself.
pub struct Run<'a> {
    pub run_id: &'a str,
    /// When the run started: the clock tokens' expiries are read against.
    pub started: SystemTime,
}

fn incomplete(probe: &str, phase: u8, why: String) -> Finding {
    Finding::new(
        Code::ProbeIncomplete,
        probe.to_string(),
        format!("the {probe} probe could not finish: {why}"),
    )
    .unknown()
    .with("probe", probe.to_string())
    .with("phase", phase)
    .with("reason", why)
}

/// `incomplete`, about one part of a probe (`subject` is `probe:part`).
fn incomplete_part(probe: &str, phase: u8, part: &str, why: String) -> Finding {
    let mut f = incomplete(probe, phase, why);
    f.subject = format!("{probe}:{part}");
    f.id = finding_id(&f.code, &f.subject);
    f
}

/// Why a probe that ended without facts did so, in the finding's words.
fn reason(cut: &Cut, g: &Gathered) -> String {
    match cut {
        Cut::Failed(e) => e.to_string(),
        Cut::TimedOut => "it timed out".into(),
        Cut::RunDeadline => format!(
            "the run's deadline (--timeout {} ms) passed before it finished",
            g.timeout.as_millis()
        ),
        Cut::Panicked(m) => format!("it failed internally ({m})"),
    }
}

pub fn evaluate(g: &Gathered, policy: &Policy, run: &Run) -> Vec<Finding> {
    let facts = &g.facts;
    let mut out: Vec<Finding> = g
        .unfinished
        .iter()
        .map(|u| incomplete(u.probe, u.phase, reason(&u.cut, g)))
        .collect();
    // Without it the findings keep the container wording they always had.
    let bd = facts.boundary.clone().unwrap_or_default();
    if let Some(b) = &facts.boundary {
        out.extend(boundary::evaluate(b));
    }
    out.extend(environ_unknown(g));
    out.extend(users_unknown(g));

    if let Some(r) = &facts.repro {
        out.extend(repro::evaluate(r));
    }
    if let Some(c) = &facts.caches {
        out.extend(artifacts::evaluate_caches(c));
    }
    if let Some(b) = &facts.browsers {
        out.extend(artifacts::evaluate_browsers(b));
    }
    if let Some(a) = &facts.artifacts {
        out.extend(artifacts::evaluate_artifacts(a));
    }
    if let Some(n) = &facts.network {
        out.extend(network::evaluate(n));
    }
    if let Some(m) = &facts.mounts {
        out.extend(mounts::evaluate(m, &bd));
        // A line that does not parse costs that line: the rest of the table
        // stands, and the repo scope rests on a line nobody could read.
        for e in &m.parse_errors {
            let mut f = incomplete_part("mounts", 1, &format!("line {}", e.line), e.to_string())
                .with("line", e.line);
            f.control = "repo-scope".into();
            out.push(f);
        }
        for mp in &m.unresponsive {
            out.push(
                incomplete_part(
                    "mounts",
                    1,
                    mp,
                    format!("the mount {mp} did not answer lstat(2) within the inspection wait; a hung FUSE or network filesystem is likely, and what it holds is unknown"),
                )
                .with("mount_point", mp.clone()),
            );
        }
    }
    if let Some(n) = &facts.namespaces {
        out.extend(namespaces::evaluate(n, &bd));
        for (ns, why) in &n.unreadable {
            // gVisor's Sentry has no such namespace: nothing to check.
            if bd.is_sandbox() && n.absent.contains(ns) {
                continue;
            }
            out.push(incomplete_part(
                "namespaces",
                2,
                ns,
                format!("/proc/self/ns/{ns}: {why}"),
            ));
        }
    }
    if let Some(d) = &facts.devices {
        out.extend(devices::evaluate(d));
    }
    if let Some(r) = &facts.rootpaths {
        out.extend(rootpaths::evaluate(r));
    }
    if let Some(s) = &facts.sockets {
        out.extend(sockets::evaluate(s));
    }
    if let Some(w) = &facts.writable {
        out.extend(writable::evaluate(w, &bd));
    }
    if let Some(s) = &facts.secrets {
        out.extend(secrets::evaluate(s, policy, run.started));
    }
    if let Some(t) = &facts.teardown {
        out.extend(teardown::evaluate(t, run.run_id));
    }
    if let Some(p) = &facts.privilege {
        out.extend(privilege::evaluate(p, policy, &privileged_signals(g), &bd));
        for (what, why) in &p.incomplete {
            out.push(incomplete_part(
                "privilege",
                2,
                what,
                format!("{what}: {why}"),
            ));
        }
    }
    if let Some(why) = &g.proc_untrusted {
        // The probes that read /proc through the host failed with this
        // reason. Other processes' environments are the one /proc source
        // whose absence reads like "none found", so they are said to be
        // unknown here (this process's own comes from libc, not /proc).
        for (code, what) in [
            (Code::SecretProcessEnv, "environments"),
            (Code::SecretProcessCmdline, "command lines"),
        ] {
            out.push(
                Finding::new(
                    code,
                    "/proc",
                    format!("other processes' {what} were not checked: {why}"),
                )
                .unknown()
                .with("reason", why.clone()),
            );
        }
    }
    one_per_id(out)
}

/// One finding per id (code and subject): a mount table that lists a mount
/// again, or a file reached by two names, says it once, at the most
/// severe of what was said, in the place it was first said.
fn one_per_id(all: Vec<Finding>) -> Vec<Finding> {
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out: Vec<Finding> = Vec::with_capacity(all.len());
    for f in all {
        match at.get(&f.id) {
            Some(&i) => {
                if f.severity > out[i].severity {
                    out[i] = f;
                }
            }
            None => {
                at.insert(f.id.clone(), out.len());
                out.push(f);
            }
        }
    }
    out
}

/// Under --root the environment is the tree's /proc/self/environ; a tree
/// without one leaves these probes' variables unknown, so each says it
/// could not check them and its controls are not assessed.
fn environ_unknown(g: &Gathered) -> Vec<Finding> {
    let Some(why) = &g.env_missing else {
        return Vec::new();
    };
    let mut readers = vec![
        (
            "sockets",
            2,
            "DOCKER_HOST, CONTAINER_HOST, BUILDKIT_HOST and CONTAINERD_ADDRESS",
        ),
        (
            "secrets",
            3,
            "secret-looking variables, SSH_AUTH_SOCK, HOME and the credential pointers",
        ),
        (
            "caches",
            5,
            "the cache locations variables name (CARGO_HOME, XDG_CACHE_HOME, ...)",
        ),
    ];
    if g.network_asked {
        readers.push((
            "network",
            3,
            "the proxy variables and SSL_CERT_FILE / SSL_CERT_DIR",
        ));
    }
    readers
        .into_iter()
        .map(|(probe, phase, what)| {
            incomplete_part(
                probe,
                phase,
                "environ",
                format!("{what} could not be checked: {why}"),
            )
        })
        .collect()
}

/// Without the users fact its readers went on with no names and no homes:
/// each says what that left unchecked.
fn users_unknown(g: &Gathered) -> Vec<Finding> {
    if !g.users_missing {
        return Vec::new();
    }
    [
        (
            "rootpaths",
            2,
            "the user's name, which sudoers and doas rules match",
        ),
        ("secrets", 3, "the credential files in homes"),
        ("caches", 5, "the caches and tool configurations in homes"),
        ("browsers", 5, "the browser profiles in homes"),
    ]
    .into_iter()
    .map(|(probe, phase, what)| {
        incomplete_part(
            probe,
            phase,
            "users",
            format!("{what} could not be checked: the users fact did not finish"),
        )
    })
    .collect()
}

/// The signs of a privileged container that other probes saw: a writable
/// /sys, writable kernel interfaces, the host's block devices.
fn privileged_signals(g: &Gathered) -> privilege::PrivilegedSignals {
    let facts = &g.facts;
    privilege::PrivilegedSignals {
        sysfs_writable: facts.mounts.as_ref().is_some_and(|m| {
            m.mounts.iter().any(|e| {
                e.mount.fstype == "sysfs"
                    && e.mount.mount_point == Path::new("/sys")
                    && !e.read_only
            })
        }),
        writable_kernel_interfaces: facts
            .writable
            .as_ref()
            .map(|w| {
                w.kernel_interfaces
                    .iter()
                    .filter(|k| k.writable)
                    .map(|k| k.path.clone())
                    .collect()
            })
            .unwrap_or_default(),
        host_block_devices: facts
            .devices
            .as_ref()
            .map(|d| d.block_devices())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Unfinished;
    use std::time::Duration;

    fn gathered(unfinished: Vec<Unfinished>) -> Gathered {
        Gathered::for_tests(unfinished, Duration::from_millis(1500))
    }

    fn run() -> Run<'static> {
        Run {
            run_id: "r",
            started: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn each_cut_says_why_in_its_own_words() {
        use crate::facts::unchecked::Unchecked;
        let cuts = || {
            vec![
                (
                    "devices",
                    Cut::Failed(Unchecked::Missing("no /dev")),
                    "no /dev",
                ),
                ("secrets", Cut::TimedOut, "it timed out"),
                (
                    "repro",
                    Cut::RunDeadline,
                    "the run's deadline (--timeout 1500 ms) passed before it finished",
                ),
                (
                    "caches",
                    Cut::Panicked("boom".into()),
                    "it failed internally (boom)",
                ),
            ]
        };
        let g = gathered(
            cuts()
                .into_iter()
                .map(|(probe, cut, _)| Unfinished {
                    probe,
                    phase: 2,
                    cut,
                })
                .collect(),
        );
        let out = evaluate(&g, &Policy::default(), &run());
        assert_eq!(out.len(), cuts().len(), "{out:?}");
        for ((probe, _, why), f) in cuts().iter().zip(&out) {
            assert_eq!(f.code, "probe.incomplete");
            assert_eq!(f.subject, *probe);
            assert_eq!(f.status, crate::finding::Status::Unknown);
            assert_eq!(f.evidence["reason"], *why);
            assert_eq!(
                f.message,
                format!("the {probe} probe could not finish: {why}")
            );
        }
    }

    #[test]
    fn no_facts_no_findings_but_what_could_not_be_checked() {
        let mut g = gathered(Vec::new());
        assert!(evaluate(&g, &Policy::default(), &run()).is_empty());
        g.env_missing = Some("the tree has no proc/self/environ".into());
        g.proc_untrusted = Some("/proc is not procfs".into());
        let out = evaluate(&g, &Policy::default(), &run());
        let subjects: Vec<&str> = out.iter().map(|f| f.subject.as_str()).collect();
        assert_eq!(
            subjects,
            [
                "sockets:environ",
                "secrets:environ",
                "caches:environ",
                "/proc",
                "/proc"
            ],
            "the network's variables count only when it was asked to send"
        );
        let codes: Vec<&str> = out[3..].iter().map(|f| f.code.as_str()).collect();
        assert_eq!(codes, ["secret.process-env", "secret.process-cmdline"]);
        assert!(out
            .iter()
            .all(|f| f.status == crate::finding::Status::Unknown));
        g.network_asked = true;
        let out = evaluate(&g, &Policy::default(), &run());
        assert!(out.iter().any(|f| f.subject == "network:environ"));
    }
}
