//! The blueprint's readiness scorecard: 8 controls, 0/1/2 each, 16 in all.
//! A control is scored only when every probe that feeds it finished; "could
//! not check" is shown as not assessed and counts 0, never as a pass.

use serde::Serialize;

use crate::finding::{Finding, Severity, Status};
use crate::probe::{ProbeRecord, ProbeStatus};

pub struct Control {
    pub key: &'static str,
    pub name: &'static str,
    /// The probes whose results the score rests on. A control whose probes
    /// do not exist yet is not assessed.
    pub probes: &'static [&'static str],
    /// The blueprint's readiness scorecard row: what 0, 1 and 2 points mean.
    pub rubric: [&'static str; 3],
    /// Findings below this severity are hygiene notes for this control: they
    /// are listed with it but do not lower it (no LSM label does not let the
    /// agent drive the host engine).
    pub floor: Severity,
    /// The score an owned, unexpired exception leaves a finding at: 1 where
    /// the blueprint calls a reviewed exception "partly controlled", 2 where
    /// it calls an owned, intentional retention the recommended state.
    pub excepted: u8,
    /// A finding that is this control's 0-point signal whatever its severity.
    pub zero: Option<fn(&Finding) -> bool>,
}

/// A "pet container": nothing in the workspace says how to rebuild it.
fn pet_container(f: &Finding) -> bool {
    f.code == "repro.image-unpinned"
        && f.evidence.get("setup_contract_found") == Some(&serde_json::Value::Bool(false))
}

pub const CONTROLS: &[Control] = &[
    Control {
        key: "repo-scope",
        name: "Repo scope",
        // The boundary first: without knowing whether a container exists
        // at all, the workspace's scope cannot be 2.
        probes: &["boundary", "mounts", "writable", "devices"],
        rubric: [
            "Broad host mounts",
            "Repo mount but extra paths visible",
            "Single clean repo/worktree and explicit denied paths",
        ],
        floor: Severity::Info,
        excepted: 1,
        zero: None,
    },
    Control {
        key: "engine-socket",
        name: "Engine socket",
        probes: &["sockets", "privilege", "namespaces", "devices", "writable"],
        rubric: [
            "Host socket mounted",
            "Mounted for convenience with manual review",
            "No host socket or tightly mediated task-specific service",
        ],
        floor: Severity::High,
        excepted: 1,
        zero: None,
    },
    Control {
        key: "secret-boundary",
        name: "Secret boundary",
        probes: &["secrets"],
        rubric: [
            "Long-lived host secrets exposed",
            "Task secrets but weak TTL/rotation",
            "Short-lived scoped secret injection and named rotation owner",
        ],
        floor: Severity::Info,
        excepted: 1,
        zero: None,
    },
    Control {
        key: "network-policy",
        name: "Network policy",
        probes: &["network"],
        rubric: [
            "Unrestricted network",
            "Some proxy or manual domain controls",
            "Default-deny or audited allowlist for the task",
        ],
        floor: Severity::Info,
        excepted: 1,
        zero: None,
    },
    Control {
        key: "cache-policy",
        name: "Cache policy",
        probes: &["caches"],
        rubric: [
            "Host/global caches shared blindly",
            "Some isolated caches",
            "Sensitive caches separated, owned, and cleaned or retained intentionally",
        ],
        floor: Severity::Info,
        excepted: 2,
        zero: None,
    },
    Control {
        key: "browser-isolation",
        name: "Browser isolation",
        probes: &["browsers"],
        rubric: [
            "Personal browser profile exposed",
            "Dedicated profile reused indefinitely",
            "Dedicated profile with allowed domains and reset rule",
        ],
        floor: Severity::Info,
        excepted: 1,
        zero: None,
    },
    Control {
        key: "reproducibility",
        name: "Reproducibility",
        probes: &["repro", "writable"],
        rubric: [
            "Pet container",
            "Dockerfile/devcontainer exists but drifts",
            "Pinned image, tool versions, lockfiles, and setup contract",
        ],
        floor: Severity::Info,
        excepted: 1,
        zero: Some(pet_container),
    },
    Control {
        key: "teardown",
        name: "Teardown",
        // The rubric's 1 point is "volumes/logs remain": logs on persistent
        // mounts come from the artifacts walk, shell histories from the
        // secrets search; without all three teardown cannot be scored.
        probes: &["teardown", "artifacts", "secrets"],
        rubric: [
            "Manual unknown cleanup",
            "Container removed but volumes/logs remain",
            "Automated artifact export plus container, volume, cache, and credential cleanup",
        ],
        floor: Severity::Info,
        excepted: 2,
        zero: None,
    },
];

#[derive(Debug, Clone, Serialize)]
pub struct ControlScore {
    pub control: &'static str,
    pub name: &'static str,
    /// None: not assessed.
    pub score: Option<u8>,
    pub assessed: bool,
    /// The rubric's wording for the score reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<&'static str>,
    pub reason: String,
    /// Every finding of this control.
    pub findings: Vec<String>,
    /// The findings that set the score (empty at 2).
    pub decisive: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    pub controls: Vec<ControlScore>,
    pub total: u8,
    pub max: u8,
    pub assessed: usize,
}

/// Could not check: the finding says the control is not known either way.
fn unknown(f: &Finding) -> bool {
    f.status == Status::Unknown || f.code == "net.not-assessed"
}

/// A probe.incomplete from one of the probes `c` rests on: a part of that
/// probe was not checked (a walk cut short, a tree without
/// /proc/self/environ), so the control cannot be 2 on it, even though the
/// probe itself ended "ok".
fn incomplete_part_of(c: &Control, f: &Finding) -> bool {
    f.code == "probe.incomplete"
        && f.evidence
            .get("probe")
            .and_then(|p| p.as_str())
            .is_some_and(|p| c.probes.contains(&p))
}

/// The most a finding lets its control score, or None if it does not lower it.
fn cap(c: &Control, f: &Finding) -> Option<u8> {
    if f.status == Status::Fail && c.zero.is_some_and(|z| z(f)) {
        return Some(0);
    }
    if f.severity < c.floor {
        return None;
    }
    match f.status {
        Status::Fail if f.severity >= Severity::High => Some(0),
        Status::Fail => Some(1),
        Status::Excepted => (c.excepted < 2).then_some(c.excepted),
        Status::Unknown => None,
    }
}

fn label(f: &Finding) -> String {
    format!("{} {}", f.code, f.subject)
}

pub fn score(findings: &[Finding], records: &[ProbeRecord]) -> Scorecard {
    let mut controls = Vec::new();
    for c in CONTROLS {
        let mine: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.control == c.key || incomplete_part_of(c, f))
            .collect();
        let ids: Vec<String> = mine.iter().map(|f| f.id.clone()).collect();
        let missing: Vec<&str> = c
            .probes
            .iter()
            .copied()
            .filter(|p| {
                !records
                    .iter()
                    .any(|r| r.name == *p && r.status == ProbeStatus::Ok)
            })
            .collect();
        let capped: Vec<(&Finding, u8)> = mine
            .iter()
            .filter(|f| !unknown(f))
            .filter_map(|f| cap(c, f).map(|s| (*f, s)))
            .collect();
        let lowest = capped.iter().map(|(_, s)| *s).min().unwrap_or(2);
        let unknowns: Vec<&Finding> = mine.iter().copied().filter(|f| unknown(f)).collect();
        let notes = mine
            .iter()
            .filter(|f| !unknown(f) && cap(c, f).is_none())
            .count();
        let mut decisive: Vec<String> = Vec::new();
        let (score, reason) = if !missing.is_empty() {
            (
                None,
                format!("not assessed: no result from {}", missing.join(", ")),
            )
        } else if lowest > 0 && !unknowns.is_empty() {
            // 0 is certain whatever could not be checked; anything higher is not.
            decisive = unknowns.iter().map(|f| f.id.clone()).collect();
            (
                None,
                format!(
                    "not assessed: could not check {}",
                    unknowns
                        .iter()
                        .map(|f| label(f))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        } else {
            let at: Vec<&Finding> = capped
                .iter()
                .filter(|(_, s)| *s == lowest)
                .map(|(f, _)| *f)
                .collect();
            decisive = at.iter().map(|f| f.id.clone()).collect();
            let mut why = c.rubric[lowest as usize].to_string();
            if !at.is_empty() {
                let shown: Vec<String> = at.iter().take(3).map(|f| label(f)).collect();
                let more = at.len().saturating_sub(shown.len());
                why.push_str(&format!(": {}", shown.join(", ")));
                if more > 0 {
                    why.push_str(&format!(" and {more} more"));
                }
            }
            if notes > 0 {
                why.push_str(&format!(
                    " ({notes} note(s) below {} or covered by an owned exception do not lower it)",
                    c.floor
                ));
            }
            (Some(lowest), why)
        };
        controls.push(ControlScore {
            control: c.key,
            name: c.name,
            assessed: score.is_some(),
            level: score.map(|s| c.rubric[s as usize]),
            score,
            reason,
            findings: ids,
            decisive,
        });
    }
    Scorecard {
        total: controls.iter().filter_map(|c| c.score).sum(),
        max: (CONTROLS.len() * 2) as u8,
        assessed: controls.iter().filter(|c| c.assessed).count(),
        controls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &'static str) -> ProbeRecord {
        ProbeRecord {
            name,
            phase: 2,
            status: ProbeStatus::Ok,
            duration_us: 1,
            reason: None,
        }
    }

    #[test]
    fn scores_follow_the_rubric() {
        let recs: Vec<ProbeRecord> = [
            "boundary",
            "mounts",
            "writable",
            "devices",
            "sockets",
            "privilege",
            "namespaces",
        ]
        .into_iter()
        .map(rec)
        .collect();
        let fs = vec![Finding::new(
            "engine.socket-reachable",
            "/var/run/docker.sock",
            "m",
        )];
        let sc = score(&fs, &recs);
        assert_eq!(sc.controls[0].score, Some(2));
        assert_eq!(sc.controls[1].score, Some(0));
        assert_eq!(sc.controls[1].findings, vec![fs[0].id.clone()]);
        assert_eq!(sc.controls[2].score, None, "secrets are not probed yet");
        assert_eq!(sc.total, 2);

        let mut ex = fs.clone();
        ex[0].status = Status::Excepted;
        assert_eq!(
            score(&ex, &recs).controls[1].score,
            Some(1),
            "an owned exception is 'mounted with review'"
        );

        let low = vec![Finding::new("mount.unexpected", "/data", "m")];
        assert_eq!(score(&low, &recs).controls[0].score, Some(1));
    }

    fn all_records() -> Vec<ProbeRecord> {
        [
            "boundary",
            "mounts",
            "writable",
            "devices",
            "sockets",
            "privilege",
            "namespaces",
            "repro",
            "caches",
            "browsers",
            "artifacts",
        ]
        .into_iter()
        .map(rec)
        .collect()
    }

    fn control<'a>(sc: &'a Scorecard, key: &str) -> &'a ControlScore {
        sc.controls.iter().find(|c| c.control == key).unwrap()
    }

    #[test]
    fn engine_socket_counts_only_what_reaches_the_host() {
        let recs = all_records();
        let notes = vec![
            Finding::new("priv.no-lsm", "lsm", "m"),
            Finding::new("priv.no-new-privs-unset", "no_new_privs", "m"),
        ];
        let sc = score(&notes, &recs);
        let es = control(&sc, "engine-socket");
        assert_eq!(es.score, Some(2), "{}", es.reason);
        assert!(es.reason.contains("2 note(s)"), "{}", es.reason);
        assert_eq!(es.findings.len(), 2, "notes are still listed");
        assert!(es.decisive.is_empty());
        let sc = score(&[Finding::new("priv.privileged", "container", "m")], &recs);
        assert_eq!(control(&sc, "engine-socket").score, Some(0));
        assert_eq!(
            control(&sc, "engine-socket").level,
            Some("Host socket mounted")
        );
    }

    #[test]
    fn phase_four_and_five_rubrics() {
        let recs = all_records();
        // A pet container: no setup contract at all is 0 at medium severity.
        let pet =
            Finding::new("repro.image-unpinned", "image", "m").with("setup_contract_found", false);
        let drift =
            Finding::new("repro.image-unpinned", "image", "m").with("setup_contract_found", true);
        assert_eq!(
            control(&score(&[pet], &recs), "reproducibility").score,
            Some(0)
        );
        let sc = score(
            &[
                drift.clone(),
                Finding::new("repro.no-lockfile", "/w/Cargo.toml", "m"),
            ],
            &recs,
        );
        assert_eq!(control(&sc, "reproducibility").score, Some(1));
        assert_eq!(control(&sc, "reproducibility").decisive.len(), 2);
        // A host cache is high (0); a volume cache medium (1); an owned
        // exception is "retained intentionally" (2).
        let host =
            Finding::new("cache.shared-writable", "/root/.cache/pip", "m").severity(Severity::High);
        let vol = Finding::new("cache.shared-writable", "/root/.cache/uv", "m");
        assert_eq!(
            control(&score(std::slice::from_ref(&host), &recs), "cache-policy").score,
            Some(0)
        );
        assert_eq!(
            control(&score(std::slice::from_ref(&vol), &recs), "cache-policy").score,
            Some(1)
        );
        let mut owned = host.clone();
        owned.status = Status::Excepted;
        assert_eq!(
            control(&score(&[owned], &recs), "cache-policy").score,
            Some(2)
        );
        let prof = Finding::new("browser.profile", "/root/.config/google-chrome", "m");
        assert_eq!(
            control(&score(&[prof], &recs), "browser-isolation").score,
            Some(0)
        );
        assert_eq!(
            control(&score(&[], &recs), "browser-isolation").score,
            Some(2)
        );
        assert_eq!(
            control(&score(&[], &recs), "teardown").score,
            None,
            "no teardown probe"
        );
    }

    #[test]
    fn could_not_check_is_not_a_pass_but_zero_is_certain() {
        let recs = all_records();
        let unk = Finding::new("cache.credentials", "/root/.npmrc", "m").unknown();
        let sc = score(std::slice::from_ref(&unk), &recs);
        assert_eq!(control(&sc, "cache-policy").score, None);
        assert!(control(&sc, "cache-policy")
            .reason
            .contains("could not check"));
        let host = Finding::new("cache.shared-writable", "/x", "m").severity(Severity::High);
        let sc = score(&[unk, host], &recs);
        assert_eq!(control(&sc, "cache-policy").score, Some(0));
    }

    #[test]
    fn a_part_left_unchecked_keeps_its_control_from_two() {
        let recs = all_records();
        let env = Finding::new("probe.incomplete", "secrets:environ", "m")
            .unknown()
            .with("probe", "secrets");
        let mut recs = recs;
        recs.push(rec("secrets"));
        let sc = score(std::slice::from_ref(&env), &recs);
        let sb = control(&sc, "secret-boundary");
        assert_eq!(sb.score, None, "{}", sb.reason);
        assert!(sb.reason.contains("secrets:environ"), "{}", sb.reason);
        assert_eq!(sb.decisive, vec![env.id.clone()]);
        // A danger it did see is still certain.
        let hit = Finding::new("secret.env", "GITHUB_TOKEN", "m");
        let sc = score(&[env, hit], &recs);
        assert_eq!(control(&sc, "secret-boundary").score, Some(0));
        // Another probe's gap does not touch this control.
        let other = Finding::new("probe.incomplete", "caches:environ", "m")
            .unknown()
            .with("probe", "caches");
        let sc = score(&[other], &recs);
        assert_eq!(control(&sc, "secret-boundary").score, Some(2));
    }

    #[test]
    fn a_failed_probe_is_not_assessed() {
        let mut recs = vec![rec("boundary"), rec("mounts"), rec("devices")];
        recs.push(ProbeRecord {
            name: "writable",
            phase: 2,
            status: ProbeStatus::Timeout,
            duration_us: 1,
            reason: None,
        });
        let sc = score(&[], &recs);
        assert_eq!(sc.controls[0].score, None);
        assert!(sc.controls[0].reason.contains("writable"));
    }
}
