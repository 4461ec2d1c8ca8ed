//! The blueprint's readiness scorecard: 8 controls, 0/1/2 each, 16 in all.
//! A control is scored only when every probe that feeds it finished; "could
//! not check" is shown as not assessed and counts 0, never as a pass.

use serde::Serialize;

use crate::finding::{Finding, Severity, Status};
use crate::probe::ProbeRecord;

pub struct Control {
    pub key: &'static str,
    pub name: &'static str,
    /// The probes whose results the score rests on. A control whose probes
    /// do not exist yet is not assessed.
    pub probes: &'static [&'static str],
}

pub const CONTROLS: &[Control] = &[
    Control {
        key: "repo-scope",
        name: "Repo scope",
        probes: &["mounts", "writable", "devices"],
    },
    Control {
        key: "engine-socket",
        name: "Engine socket",
        probes: &["sockets", "privilege", "namespaces", "devices", "writable"],
    },
    Control {
        key: "secret-boundary",
        name: "Secret boundary",
        probes: &["secrets"],
    },
    Control {
        key: "network-policy",
        name: "Network policy",
        probes: &["network"],
    },
    Control {
        key: "cache-policy",
        name: "Cache policy",
        probes: &["caches"],
    },
    Control {
        key: "browser-isolation",
        name: "Browser isolation",
        probes: &["browsers"],
    },
    Control {
        key: "reproducibility",
        name: "Reproducibility",
        probes: &["repro"],
    },
    Control {
        key: "teardown",
        name: "Teardown",
        // The rubric's 1 point is "volumes/logs remain": shell histories on
        // persistent mounts (artifact.shell-history) come from the secrets
        // search, so without it teardown cannot be scored.
        probes: &["teardown", "secrets"],
    },
];

#[derive(Debug, Clone, Serialize)]
pub struct ControlScore {
    pub control: &'static str,
    pub name: &'static str,
    /// None: not assessed.
    pub score: Option<u8>,
    pub assessed: bool,
    pub reason: String,
    pub findings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scorecard {
    pub controls: Vec<ControlScore>,
    pub total: u8,
    pub max: u8,
    pub assessed: usize,
}

pub fn score(findings: &[Finding], records: &[ProbeRecord]) -> Scorecard {
    let mut controls = Vec::new();
    for c in CONTROLS {
        let ids: Vec<String> = findings
            .iter()
            .filter(|f| f.control == c.key)
            .map(|f| f.id.clone())
            .collect();
        let missing: Vec<&str> = c
            .probes
            .iter()
            .copied()
            .filter(|p| !records.iter().any(|r| r.name == *p && r.status == "ok"))
            .collect();
        let (score, reason) = if !missing.is_empty() {
            (
                None,
                format!("not assessed: no result from {}", missing.join(", ")),
            )
        } else {
            let mine = findings.iter().filter(|f| f.control == c.key);
            let danger = mine
                .clone()
                .filter(|f| f.status == Status::Fail && f.severity >= Severity::High)
                .count();
            let partial = mine.count();
            if danger > 0 {
                (
                    Some(0),
                    format!("{danger} danger signal(s) at high or above"),
                )
            } else if partial > 0 {
                (
                    Some(1),
                    format!("{partial} finding(s) below high or covered by an owned exception"),
                )
            } else {
                (Some(2), "the recommended boundary holds".to_string())
            }
        };
        controls.push(ControlScore {
            control: c.key,
            name: c.name,
            assessed: score.is_some(),
            score,
            reason,
            findings: ids,
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
            status: "ok",
            duration_us: 1,
            reason: None,
        }
    }

    #[test]
    fn scores_follow_the_rubric() {
        let recs: Vec<ProbeRecord> = [
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

    #[test]
    fn a_failed_probe_is_not_assessed() {
        let mut recs = vec![rec("mounts"), rec("devices")];
        recs.push(ProbeRecord {
            name: "writable",
            phase: 2,
            status: "timeout",
            duration_us: 1,
            reason: None,
        });
        let sc = score(&[], &recs);
        assert_eq!(sc.controls[0].score, None);
        assert!(sc.controls[0].reason.contains("writable"));
    }
}
