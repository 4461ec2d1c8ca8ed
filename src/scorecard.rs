//! The blueprint's readiness scorecard: 8 controls, 0/1/2 each, 16 in all.
//! A control is scored only when every probe that feeds it finished; "could
//! not check" is shown as not assessed and counts 0, never as a pass.

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

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
    /// Codes listed with the control that never lower it: package trees'
    /// own test keys are not the workspace's secrets.
    pub notes: &'static [&'static str],
    /// A finding that shows the control working: it does not lower the
    /// score, and what it says is added to the reason at 2.
    pub credit: Option<fn(&Finding) -> Option<String>>,
}

/// The rule every score follows, for `selfprobe explain scorecard`.
pub const RULE: &str = "Each control scores 0, 1 or 2 by the blueprint's rubric, from the findings of its control: a failing finding at high or above is the 0-point signal, one below high is partly controlled (1), an owned, unexpired exception counts 1 (2 for cache policy and teardown, where an owned retention is the recommended state). A control whose probes did not all finish, or with a finding that could not be checked, is not assessed and counts 0. A score's reason says what was checked and seen, never the rubric's words for a condition that was not checked: the level carries the rubric's wording only when every condition it names was observed, and otherwise says what was established. A condition the probe can check but did not see hold keeps the score below 2: repo scope needs the workspace's git repository with a status of no uncommitted or untracked change and the policy's [workspace] deny paths, none of them shown by a host mount. A condition that cannot be seen from inside the workspace (who rotates the task's secrets, whether artifacts are exported and the container, volumes, caches and credentials are removed after the run) is named as unseen in the reason and does not lower the score: the score is the most the evidence supports. Package trees' own test keys (secret.package-data) and hardening notes below a control's floor are listed with the control but never lower it.";

/// `selfprobe explain scorecard` or `selfprobe explain <control>`.
pub fn explain(key: &str) -> Option<String> {
    let wrap = |t: &str| crate::util::text::wrap(t, 78);
    if key == "scorecard" {
        let mut out = format!(
            "scorecard: the blueprint's readiness scorecard, 8 controls of 0/1/2

{}

Controls (selfprobe explain CONTROL for one):
",
            wrap(RULE)
        );
        for c in CONTROLS {
            out.push_str(&format!(
                "  {:<18} {}
",
                c.key, c.name
            ));
        }
        return Some(out);
    }
    let c = CONTROLS.iter().find(|c| c.key == key)?;
    let codes: Vec<&str> = crate::finding::catalog()
        .iter()
        .filter(|i| i.control == c.key)
        .map(|i| i.code.as_str())
        .collect();
    Some(format!(
        "{key}: {name} (scorecard control)

0: {r0}
1: {r1}
2: {r2}

probes: {probes}
findings: {codes}

{rule}
",
        name = c.name,
        r0 = c.rubric[0],
        r1 = c.rubric[1],
        r2 = c.rubric[2],
        probes = c.probes.join(", "),
        codes = wrap(&codes.join(", ")),
        rule = wrap(RULE),
    ))
}

/// A "pet container": nothing in the workspace says how to rebuild it.
fn pet_container(f: &Finding) -> bool {
    f.code == "repro.image-unpinned"
        && f.evidence.get("setup_contract_found") == Some(&serde_json::Value::Bool(false))
}

/// A proxy is "some proxy control" (1) until it is seen to enforce the
/// task's contract: net.proxy's evidence then says that every destination
/// kept its contract and that the proxy itself refused at least one deny
/// destination (src/probe/network/mod.rs), and the network policy is the
/// rubric's audited allowlist, enforced by that proxy.
fn proxy_enforces(f: &Finding) -> Option<String> {
    let ev = &f.evidence;
    if f.code != "net.proxy"
        || f.status != Status::Fail
        || ev.get("enforces_contract") != Some(&serde_json::Value::Bool(true))
    {
        return None;
    }
    let n = |k: &str| ev.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let proxies: Vec<&str> = ev
        .get("used_proxies")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|p| p.as_str()).collect())
        .unwrap_or_default();
    Some(format!(
        "the proxy {} enforces the contract ({} deny destination(s) refused by it, {} allow destination(s) reached through it)",
        proxies.join(" and "),
        n("denied_by_proxy"),
        n("reached_through_proxy")
    ))
}

impl Control {
    /// A control as most are: every finding counts, an owned exception
    /// leaves it at 1, no finding is its 0 whatever the severity, none is
    /// a note, none shows it working. The table below says where one is not.
    const fn new(
        key: &'static str,
        name: &'static str,
        probes: &'static [&'static str],
        rubric: [&'static str; 3],
    ) -> Control {
        Control {
            key,
            name,
            probes,
            rubric,
            floor: Severity::Info,
            excepted: 1,
            zero: None,
            notes: &[],
            credit: None,
        }
    }
}

pub const CONTROLS: &[Control] = &[
    // The boundary first: without knowing whether a container exists at
    // all, the workspace's scope cannot be 2.
    Control::new(
        "repo-scope",
        "Repo scope",
        &["boundary", "mounts", "writable", "devices"],
        [
            "Broad host mounts",
            "Repo mount but extra paths visible",
            "Single clean repo/worktree and explicit denied paths",
        ],
    ),
    Control {
        floor: Severity::High,
        ..Control::new(
            "engine-socket",
            "Engine socket",
            &[
                "sockets",
                "privilege",
                "rootpaths",
                "namespaces",
                "devices",
                "writable",
            ],
            [
                "Host socket mounted",
                "Mounted for convenience with manual review",
                "No host socket or tightly mediated task-specific service",
            ],
        )
    },
    Control {
        notes: &["secret.package-data"],
        ..Control::new(
            "secret-boundary",
            "Secret boundary",
            &["secrets"],
            [
                "Long-lived host secrets exposed",
                "Task secrets but weak TTL/rotation",
                "Short-lived scoped secret injection and named rotation owner",
            ],
        )
    },
    Control {
        credit: Some(proxy_enforces),
        ..Control::new(
            "network-policy",
            "Network policy",
            &["network"],
            [
                "Unrestricted network",
                "Some proxy or manual domain controls",
                "Default-deny or audited allowlist for the task",
            ],
        )
    },
    Control {
        excepted: 2,
        ..Control::new(
            "cache-policy",
            "Cache policy",
            &["caches"],
            [
                "Host/global caches shared blindly",
                "Some isolated caches",
                "Sensitive caches separated, owned, and cleaned or retained intentionally",
            ],
        )
    },
    Control::new(
        "browser-isolation",
        "Browser isolation",
        &["browsers"],
        [
            "Personal browser profile exposed",
            "Dedicated profile reused indefinitely",
            "Dedicated profile with allowed domains and reset rule",
        ],
    ),
    Control {
        zero: Some(pet_container),
        ..Control::new(
            "reproducibility",
            "Reproducibility",
            &["repro", "writable"],
            [
                "Pet container",
                "Dockerfile/devcontainer exists but drifts",
                "Pinned image, tool versions, lockfiles, and setup contract",
            ],
        )
    },
    // The rubric's 1 point is "volumes/logs remain": logs on persistent
    // mounts come from the artifacts walk, shell histories from the secrets
    // search; without all three teardown cannot be scored.
    Control {
        excepted: 2,
        ..Control::new(
            "teardown",
            "Teardown",
            &["teardown", "artifacts", "secrets"],
            [
                "Manual unknown cleanup",
                "Container removed but volumes/logs remain",
                "Automated artifact export plus container, volume, cache, and credential cleanup",
            ],
        )
    },
];

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ControlScore {
    pub control: Text,
    pub name: Text,
    /// None: not assessed.
    pub score: Option<u8>,
    pub assessed: bool,
    /// The rubric's wording for the score reached, when every condition it
    /// names was checked; otherwise what was established, with what could
    /// not be seen from inside.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    pub reason: String,
    /// Every finding of this control.
    pub findings: Vec<String>,
    /// The findings that set the score (empty at 2).
    pub decisive: Vec<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
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
    if c.notes.contains(&f.code.as_str()) {
        return None;
    }
    if f.status == Status::Fail && c.zero.is_some_and(|z| z(f)) {
        return Some(0);
    }
    if f.severity < c.floor || credited(c, f).is_some() {
        return None;
    }
    match f.status {
        Status::Fail if f.severity >= Severity::High => Some(0),
        Status::Fail => Some(1),
        Status::Excepted => (c.excepted < 2).then_some(c.excepted),
        Status::Unknown => None,
    }
}

fn credited(c: &Control, f: &Finding) -> Option<String> {
    c.credit.and_then(|k| k(f))
}

fn label(f: &Finding) -> String {
    format!("{} {}", f.code, f.subject)
}

/// Scores from the findings alone: nothing observed beyond them, so no
/// control claims a condition only the facts could show (a clean
/// repository, declared denied paths).
pub fn score(findings: &[Finding], records: &[ProbeRecord]) -> Scorecard {
    score_observed(findings, records, &Observed::default())
}

/// Scores the controls from the findings, with reasons built from what the
/// probes observed (`obs`). A score's reason says what was checked and
/// seen; a level's rubric wording is given only when every condition it
/// names was checked; a condition that cannot be seen from inside (an
/// export pipeline, a rotation owner) is named as unseen and does not
/// lower the score, while one the probes could check and did not find
/// (a clean status, declared denied paths) does.
pub fn score_observed(findings: &[Finding], records: &[ProbeRecord], obs: &Observed) -> Scorecard {
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
        let credits: Vec<String> = mine.iter().filter_map(|f| credited(c, f)).collect();
        let notes = mine
            .iter()
            .filter(|f| !unknown(f) && cap(c, f).is_none() && credited(c, f).is_none())
            .count();
        let mut decisive: Vec<String> = Vec::new();
        let (score, level, reason) = if !missing.is_empty() {
            (
                None,
                None,
                format!("not assessed: no result from {}", missing.join(", ")),
            )
        } else if lowest > 0 && !unknowns.is_empty() {
            // 0 is certain whatever could not be checked; anything higher is not.
            decisive = unknowns.iter().map(|f| f.id.clone()).collect();
            (
                None,
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
            let d = describe(c, lowest, &at, obs, &credits);
            let mut why = d.reason;
            if notes > 0 {
                why.push_str(&format!(
                    " ({} below {}, under an owned exception or package data: they do not lower it)",
                    plural(notes, "note", "notes"),
                    c.floor
                ));
            }
            (Some(d.score), d.level, why)
        };
        controls.push(ControlScore {
            control: c.key.into(),
            name: c.name.into(),
            assessed: score.is_some(),
            level,
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

/// What the probes saw that the reasons quote, beyond the findings.
/// None (or empty) where a probe did not report: a reason then claims
/// nothing about it.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub repo: Option<RepoSeen>,
    pub secrets: Option<SecretsSeen>,
    pub teardown: Option<TeardownSeen>,
    /// Engine socket paths tried (catalog, DOCKER_HOST, host mounts).
    pub sockets_checked: Option<usize>,
    pub network: Option<NetSeen>,
    pub caches: Option<CachesSeen>,
    pub browsers: Option<BrowsersSeen>,
    pub repro: Option<ReproSeen>,
}

/// The destinations tried, by list and by whether they kept the contract.
#[derive(Debug, Clone, Default)]
pub struct NetSeen {
    pub deny: usize,
    pub deny_held: usize,
    pub allow: usize,
    pub allow_held: usize,
}

#[derive(Debug, Clone, Default)]
pub struct CachesSeen {
    pub homes: usize,
    pub looked_at: usize,
    /// Each cache found: its name, whom its mount is shared with ("none"
    /// for the container's own layer or a tmpfs) and whether it is writable.
    pub caches: Vec<(String, String, bool)>,
}

#[derive(Debug, Clone, Default)]
pub struct BrowsersSeen {
    pub homes: usize,
    pub looked_at: usize,
    /// Each profile found: browser, path, and whom its mount is shared with.
    pub profiles: Vec<(String, String, String)>,
}

#[derive(Debug, Clone, Default)]
pub struct ReproSeen {
    /// The setup contract's files (devcontainer.json, Containerfile…).
    pub contract: Vec<String>,
    /// What pins the image, when something does.
    pub pinned_by: Option<String>,
    pub tool_pins: usize,
    pub manifests: usize,
    pub locked: usize,
}

#[derive(Debug, Clone, Default)]
pub struct RepoSeen {
    pub workspace: Option<String>,
    /// Whether the workspace itself is mounted from the host.
    pub workspace_from_host: bool,
    /// Other mounts from the host (binds, host roots, sockets), engine
    /// plumbing aside.
    pub other_host_mounts: Vec<String>,
    /// The workspace's repository: its path, what it is ("git, branch
    /// main, clean") and whether its status is known clean.
    pub repository: Option<(String, String, bool)>,
    /// The policy's denied paths, each with the mount points that show it.
    pub denied: Vec<(String, Vec<String>)>,
}

#[derive(Debug, Clone, Default)]
pub struct SecretsSeen {
    pub homes: usize,
    pub roots: usize,
    pub entries: usize,
    pub files_checked: usize,
    pub processes_read: usize,
    /// Package trees whose own test keys were found (secret.package-data).
    pub package_trees: usize,
    /// Tokens found that are within max_token_ttl.
    pub short_lived_tokens: usize,
}

#[derive(Debug, Clone, Default)]
pub struct TeardownSeen {
    pub persistent: usize,
    pub canaries: usize,
}

/// Whether a host path `root` (a mount's source) shows the denied path
/// `deny`: it is the path, lies inside it, or holds it. `~/` stands for
/// any home: /root, /home/<user>, or /<user> where /home is its own
/// filesystem.
pub fn shows(deny: &str, root: &str) -> bool {
    let under = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{}/", b.trim_end_matches('/'))) || b == "/"
    };
    match deny.strip_prefix("~/") {
        None => under(root, deny) || under(deny, root),
        Some(rel) => {
            let comps: Vec<&str> = root.split('/').filter(|c| !c.is_empty()).collect();
            let rel_c: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
            if comps.is_empty() {
                return true;
            }
            // A home itself (/root, /home/u, /u) or what is above it holds it.
            let home_len = match comps.first() {
                Some(&"root") => 1,
                Some(&"home") if comps.len() >= 2 => 2,
                Some(&"home") => return true,
                // Top directories that are not a home filesystem's users.
                Some(
                    &("tmp" | "var" | "opt" | "usr" | "etc" | "srv" | "mnt" | "media" | "run"
                    | "workspace" | "workspaces" | "data" | "proc" | "sys" | "dev"),
                ) => return false,
                _ => 1,
            };
            if comps.len() <= home_len {
                return true;
            }
            let inside = &comps[home_len..];
            let n = inside.len().min(rel_c.len());
            inside[..n] == rel_c[..n]
        }
    }
}

impl Observed {
    pub fn new(facts: &crate::probe::Facts, policy: &crate::policy::Policy) -> Observed {
        use crate::facts::mounts::MountClass;
        let mut o = Observed::default();
        if let Some(m) = &facts.mounts {
            let mut r = RepoSeen {
                workspace: m
                    .workspace
                    .as_ref()
                    .map(|w| w.path.to_string_lossy().into_owned()),
                ..RepoSeen::default()
            };
            let mut roots: Vec<(String, String)> = Vec::new();
            for e in &m.mounts {
                let mp = e.mount.mount_point.to_string_lossy().into_owned();
                let root = e.mount.root.to_string_lossy().into_owned();
                match e.class {
                    MountClass::Workspace => {
                        r.workspace_from_host = true;
                        roots.push((mp, root));
                    }
                    MountClass::HostBind | MountClass::Socket => {
                        r.other_host_mounts.push(mp.clone());
                        roots.push((mp, root));
                    }
                    MountClass::HostRoot => {
                        r.other_host_mounts.push(mp.clone());
                        roots.push((mp, "/".into()));
                    }
                    _ => {}
                }
            }
            r.repository = facts
                .repository
                .as_ref()
                .map(|g| (g.path.clone(), g.describe(), g.status.state == "clean"));
            r.denied = policy
                .deny_paths
                .iter()
                .map(|d| {
                    let at = roots
                        .iter()
                        .filter(|(_, root)| shows(d, root))
                        .map(|(mp, _)| mp.clone())
                        .collect();
                    (d.clone(), at)
                })
                .collect();
            o.repo = Some(r);
        }
        if let Some(sf) = &facts.secrets {
            let max = policy
                .max_token_ttl
                .unwrap_or(crate::probe::secrets::DEFAULT_MAX_TOKEN_TTL)
                .as_secs() as i64;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            o.secrets = Some(SecretsSeen {
                homes: sf.search.homes.len(),
                roots: sf.search.roots.len(),
                entries: sf.search.entries,
                files_checked: sf.search.files_checked,
                processes_read: sf.processes.readable,
                package_trees: sf
                    .search
                    .package_trees
                    .iter()
                    .filter(|t| t.files > 0)
                    .count(),
                short_lived_tokens: sf
                    .tokens
                    .iter()
                    .filter(|t| t.exp.is_some_and(|e| e > now && e - now <= max))
                    .count(),
            });
        }
        if let Some(t) = &facts.teardown {
            o.teardown = Some(TeardownSeen {
                persistent: t.persistent.iter().filter(|l| l.writable).count(),
                canaries: t.canaries.len(),
            });
        }
        o.sockets_checked = facts.sockets.as_ref().map(|s| s.tried);
        o.network = facts.network.as_ref().map(|n| {
            use crate::probe::network::{List, Verdict};
            let of = |l: List| n.destinations.iter().filter(move |d| d.list == l);
            let held = |l: List| of(l).filter(|d| d.contract == Verdict::Holds).count();
            NetSeen {
                deny: of(List::Deny).count(),
                deny_held: held(List::Deny),
                allow: of(List::Allow).count(),
                allow_held: held(List::Allow),
            }
        });
        o.caches = facts.caches.as_ref().map(|c| CachesSeen {
            homes: c.homes.len(),
            looked_at: c.looked_at,
            caches: c
                .caches
                .iter()
                .map(|e| {
                    (
                        e.name.clone(),
                        e.placement.shared_with.to_string(),
                        e.writable,
                    )
                })
                .collect(),
        });
        o.browsers = facts.browsers.as_ref().map(|b| BrowsersSeen {
            homes: b.homes,
            looked_at: b.looked_at,
            profiles: b
                .profiles
                .iter()
                .map(|p| {
                    (
                        p.browser.clone(),
                        p.path.clone(),
                        p.placement.shared_with.to_string(),
                    )
                })
                .collect(),
        });
        o.repro = facts.repro.as_ref().map(|r| ReproSeen {
            contract: r.setup_contract.iter().map(|c| c.path.clone()).collect(),
            pinned_by: r.image.pinned_by.as_ref().map(|h| h.value.clone()),
            tool_pins: r.tool_pins.len(),
            manifests: r.manifests.len(),
            locked: r.manifests.iter().filter(|m| m.lockfile.is_some()).count(),
        });
        o
    }
}

struct Described {
    score: u8,
    level: Option<String>,
    reason: String,
}

/// "a, b, c and 40 more": the first `shown` of `items`.
fn first_of(items: &[String], shown: usize) -> String {
    let mut s = items
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = items.len().saturating_sub(shown);
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// "3 caches (pip, npm, uv)", or `none` when nothing was found.
fn found(items: &[String], shown: usize, noun: (&str, &str), none: &str) -> String {
    if items.is_empty() {
        return none.to_string();
    }
    format!(
        "{} ({})",
        plural(items.len(), noun.0, noun.1),
        first_of(items, shown)
    )
}

/// "priv.privileged container, priv.capability CAP_SYS_ADMIN and 40 more".
fn listed(at: &[&Finding]) -> String {
    let labels: Vec<String> = at.iter().map(|f| label(f)).collect();
    first_of(&labels, 3)
}

/// The rubric's words for a 0 or 1 only when every decisive finding is the
/// kind of thing the rubric names (`fits`); otherwise what was found.
fn level_of(c: &Control, score: u8, at: &[&Finding], fits: impl Fn(&Finding) -> bool) -> String {
    if at.iter().all(|f| fits(f)) {
        return c.rubric[score as usize].to_string();
    }
    let mut titles: Vec<&str> = Vec::new();
    for f in at {
        if !titles.contains(&f.title.as_str()) {
            titles.push(&f.title);
        }
    }
    let more = titles.len().saturating_sub(2);
    let mut s = titles[..titles.len().min(2)].join("; ");
    if more > 0 {
        s.push_str(&format!("; and {more} more"));
    }
    s
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What the control's probes looked at, in words, for every score: the
/// reason of a 0 or 1 names the findings that decided it and then this.
fn seen(c: &Control, obs: &Observed) -> Option<String> {
    match c.key {
        "engine-socket" => obs.sockets_checked.map(|n| {
            format!(
                "{} tried for an engine socket (DOCKER_HOST included)",
                plural(n, "path", "paths")
            )
        }),
        "secret-boundary" => obs
            .secrets
            .as_ref()
            .map(|s| format!("the secret search read {}", secret_search(s))),
        "network-policy" => obs.network.as_ref().map(|n| {
            format!(
                "deny destinations: {} of {} refused or unreachable; allow destinations: {} of {} reached",
                n.deny_held, n.deny, n.allow_held, n.allow
            )
        }),
        "cache-policy" => obs.caches.as_ref().map(|k| {
            let names: Vec<String> = k.caches.iter().map(|(n, _, _)| n.clone()).collect();
            let found = found(&names, 4, ("cache", "caches"), "no package, model or build cache directory");
            format!(
                "{found} found in {} and {} looked at",
                plural(k.homes, "home", "homes"),
                plural(k.looked_at, "cache location", "cache locations")
            )
        }),
        "browser-isolation" => obs.browsers.as_ref().map(|b| {
            let names: Vec<String> = b
                .profiles
                .iter()
                .map(|(browser, path, _)| format!("{browser} at {path}"))
                .collect();
            let found = found(
                &names,
                2,
                ("browser profile", "browser profiles"),
                "no browser profile",
            );
            format!(
                "{found} found in {} and {} looked at (host mounts included)",
                plural(b.homes, "home", "homes"),
                plural(b.looked_at, "user-data location", "user-data locations")
            )
        }),
        "reproducibility" => obs.repro.as_ref().map(|r| {
            let contract = if r.contract.is_empty() {
                "no setup contract (devcontainer.json, Containerfile, compose file or flake)".to_string()
            } else {
                format!("the setup contract {}", r.contract.join(", "))
            };
            let image = match &r.pinned_by {
                Some(p) => format!("the image pinned by {p}"),
                None => "no pinned image".to_string(),
            };
            format!(
                "{contract}; {image}; {}; manifests locked: {} of {}",
                plural(r.tool_pins, "tool pin", "tool pins"),
                r.locked,
                r.manifests
            )
        }),
        "teardown" => obs.teardown.as_ref().map(|t| {
            format!(
                "{} besides the workspace, {} from an earlier run",
                if t.persistent == 0 {
                    "no writable persistent mount".to_string()
                } else {
                    plural(t.persistent, "writable persistent mount", "writable persistent mounts")
                },
                if t.canaries == 0 { "no canary".to_string() } else { plural(t.canaries, "canary", "canaries") }
            )
        }),
        _ => None,
    }
}

/// What the secret search read: "this process's environment and 4
/// processes of others, 2 homes and 3 search roots (40 entries, 1
/// candidate file opened)".
fn secret_search(s: &SecretsSeen) -> String {
    format!(
        "this process's environment and {} of others, {} and {} ({} entries, {} opened)",
        plural(s.processes_read, "process", "processes"),
        plural(s.homes, "home", "homes"),
        plural(s.roots, "search root", "search roots"),
        s.entries,
        plural(s.files_checked, "candidate file", "candidate files")
    )
}

/// A 0 or 1: the findings that decided it, then what was looked at.
fn decided_reason(decided: Option<String>, seen: Option<String>) -> String {
    match (decided, seen) {
        (Some(d), Some(s)) => format!("{d}; {s}"),
        (Some(d), None) => d,
        (None, Some(s)) => s,
        (None, None) => "no finding".to_string(),
    }
}

/// Where the caches found lie, at a 2: on the container's own layer or a
/// tmpfs (they go with it), read-only on a shared mount, or writable on one
/// under an owned exception (anything else would have lowered the score).
fn cache_places(k: &CachesSeen) -> (usize, String) {
    let own = k.caches.iter().filter(|(_, s, _)| s == "none").count();
    let ro = k
        .caches
        .iter()
        .filter(|(_, s, w)| s != "none" && !w)
        .count();
    let excepted = k.caches.len() - own - ro;
    let mut parts = Vec::new();
    if own > 0 {
        parts.push(format!("{own} on this container's own layer or a tmpfs"));
    }
    if ro > 0 {
        parts.push(format!("{ro} read-only on a shared mount"));
    }
    if excepted > 0 {
        parts.push(format!("{excepted} under an owned exception"));
    }
    (own, parts.join(", "))
}

/// `credits`: what findings that show the control working saw (a proxy
/// that enforces the contract), said at a 2.
fn describe(
    c: &Control,
    lowest: u8,
    at: &[&Finding],
    obs: &Observed,
    credits: &[String],
) -> Described {
    let decided = (!at.is_empty()).then(|| listed(at));
    let seen_s = seen(c, obs);
    // A 0 or 1: the level is the rubric's words when every decisive finding
    // is the kind of thing the rubric names (`fits`); the reason is what
    // was found and looked at.
    let below = |fits: &dyn Fn(&Finding) -> bool| Described {
        score: lowest,
        level: Some(level_of(c, lowest, at, fits)),
        reason: decided_reason(decided.clone(), seen_s.clone()),
    };
    match c.key {
        "repo-scope" => repo_scope(c, lowest, at, decided, obs.repo.as_ref()),
        "engine-socket" => {
            let engine = |f: &Finding| f.code.starts_with("engine.") || f.code == "mount.socket";
            if lowest == 2 {
                let checked = match obs.sockets_checked {
                    Some(n) => format!(
                        "no engine socket answered or is present ({} tried, DOCKER_HOST included)",
                        plural(n, "path", "paths")
                    ),
                    None => "no engine socket finding".to_string(),
                };
                return Described {
                    score: 2,
                    level: Some(c.rubric[2].to_string()),
                    reason: format!("{checked}, and nothing at high or above from the capability, seccomp, namespace, device and kernel-interface checks"),
                };
            }
            below(&engine)
        }
        "secret-boundary" => {
            if lowest == 2 {
                let seen = match &obs.secrets {
                    Some(s) => {
                        let mut t = format!("no credential reachable: {}", secret_search(s));
                        if s.package_trees > 0 {
                            t.push_str(&format!(
                                "; {} hold their packages' own test keys (secret.package-data, not credentials)",
                                plural(s.package_trees, "package tree", "package trees")
                            ));
                        }
                        t
                    }
                    None => "no secret finding".to_string(),
                };
                let injected = match obs.secrets.as_ref().map(|s| s.short_lived_tokens) {
                    Some(n) if n > 0 => {
                        format!("{} within max_token_ttl", plural(n, "token", "tokens"))
                    }
                    _ => "no task secret is injected".to_string(),
                };
                return Described {
                    score: 2,
                    level: Some(format!(
                        "No long-lived secret reachable ({injected}); a rotation owner cannot be seen from inside"
                    )),
                    reason: format!(
                        "{seen}; {injected}; whether a named owner rotates the task's secrets cannot be seen from inside"
                    ),
                };
            }
            let secret =
                |f: &Finding| f.code.starts_with("secret.") && f.code != "secret.package-data";
            let tokens = |f: &Finding| f.code.starts_with("secret.token-");
            if lowest == 0 {
                let lvl = level_of(c, 0, at, secret)
                    .replace("Long-lived host secrets", "Long-lived secrets");
                Described {
                    score: 0,
                    level: Some(lvl),
                    reason: decided_reason(decided, seen_s),
                }
            } else {
                below(&tokens)
            }
        }
        "network-policy" => {
            let limits = |f: &Finding| f.code.starts_with("net.");
            if lowest < 2 {
                return below(&limits);
            }
            let mut parts: Vec<String> = Vec::new();
            if let Some(n) = obs.network.as_ref().filter(|n| n.deny + n.allow > 0) {
                parts.push(format!(
                    "every destination tried kept its contract: {} refused or unreachable, {} reached",
                    plural(n.deny, "deny destination", "deny destinations"),
                    plural(n.allow, "allow destination", "allow destinations")
                ));
            }
            parts.extend(credits.iter().cloned());
            // A proxy seen enforcing the contract is the rubric's audited
            // allowlist: then, and only then, the level says so.
            let level = if !credits.is_empty() {
                c.rubric[2].to_string()
            } else if parts.is_empty() {
                "No network finding".to_string()
            } else {
                "Every destination tried kept the task's contract".to_string()
            };
            if parts.is_empty() {
                parts.push("no network finding".to_string());
            }
            Described {
                score: 2,
                level: Some(level),
                reason: parts.join("; "),
            }
        }
        "cache-policy" => {
            let caches = |f: &Finding| f.code.starts_with("cache.");
            if lowest < 2 {
                return below(&caches);
            }
            let found = obs.caches.as_ref().map(|k| k.caches.len()).unwrap_or(0);
            let (own, places) = obs.caches.as_ref().map(cache_places).unwrap_or_default();
            let level = if found == 0 {
                "No cache found".to_string()
            } else if own == found {
                "Caches are this container's own and go with it; whether they are cleaned or retained on purpose cannot be seen from inside".to_string()
            } else {
                "Caches off this container's layer are read-only or retained under owned exceptions"
                    .to_string()
            };
            let mut reason = seen_s.unwrap_or_else(|| "no cache finding".to_string());
            if found > 0 {
                reason.push_str(&format!(": {places}"));
            }
            Described {
                score: 2,
                level: Some(level),
                reason,
            }
        }
        "browser-isolation" => {
            let profiles = |f: &Finding| f.code == "browser.profile";
            if lowest < 2 {
                return below(&profiles);
            }
            let profiles: &[(String, String, String)] = obs
                .browsers
                .as_ref()
                .map(|b| b.profiles.as_slice())
                .unwrap_or(&[]);
            let own = profiles.iter().filter(|(_, _, s)| s == "none").count();
            let level = if profiles.is_empty() {
                "No browser profile in reach".to_string()
            } else if own == profiles.len() {
                "Profiles are this container's own and go with it; allowed domains cannot be seen from inside".to_string()
            } else {
                "No profile with session state on a shared mount; allowed domains cannot be seen from inside".to_string()
            };
            let mut reason = seen_s.unwrap_or_else(|| "no browser finding".to_string());
            let mut parts = Vec::new();
            if own > 0 {
                parts.push(format!(
                    "{own} on this container's own layer or a tmpfs, reset with it"
                ));
            }
            if profiles.len() > own {
                parts.push(format!(
                    "{} on a shared mount without cookies or saved logins, or under an owned exception",
                    profiles.len() - own
                ));
            }
            if !parts.is_empty() {
                reason.push_str(&format!(": {}", parts.join(", ")));
            }
            Described {
                score: 2,
                level: Some(level),
                reason,
            }
        }
        "reproducibility" => {
            let repro = |f: &Finding| f.code.starts_with("repro.");
            if lowest < 2 {
                return below(&repro);
            }
            // 2 rests on no repro finding: an image pin, tool pins,
            // lockfiles and a setup contract were each seen.
            Described {
                score: 2,
                level: Some(c.rubric[2].to_string()),
                reason: seen_s.unwrap_or_else(|| "no reproducibility finding".to_string()),
            }
        }
        "teardown" => {
            if lowest == 2 && at.is_empty() {
                let seen = match &obs.teardown {
                    Some(_) => format!(
                        "{}, no log or shell history with secrets on persistent storage",
                        seen_s.unwrap_or_default()
                    ),
                    None => "no teardown finding".to_string(),
                };
                return Described {
                    score: 2,
                    level: Some("Nothing seen to survive teardown; export and cleanup automation cannot be seen from inside".into()),
                    reason: format!("{seen}; whether artifacts are exported and the container, volumes, caches and credentials are removed after the run cannot be seen from inside"),
                };
            }
            if lowest == 2 {
                return Described {
                    score: 2,
                    level: Some("Retained intentionally under owned exceptions; export and cleanup automation cannot be seen from inside".into()),
                    reason: format!("retained under owned, unexpired exceptions: {}", decided.unwrap_or_default()),
                };
            }
            if lowest == 1 {
                let remains = |f: &Finding| {
                    f.code == "teardown.persistent-writable" || f.code.starts_with("artifact.")
                };
                let lvl = if at.iter().all(|f| remains(f)) {
                    "Volumes or logs remain (whether the container is removed cannot be seen from inside)".to_string()
                } else {
                    level_of(c, 1, at, |_| false)
                };
                return Described {
                    score: 1,
                    level: Some(lvl),
                    reason: decided_reason(decided, seen_s),
                };
            }
            below(&|_: &Finding| false)
        }
        _ => below(&|_: &Finding| false),
    }
}

fn repo_scope(
    c: &Control,
    lowest: u8,
    at: &[&Finding],
    decided: Option<String>,
    seen: Option<&RepoSeen>,
) -> Described {
    let mounts = |f: &Finding| f.code.starts_with("mount.") || f.code == "write.host-path";
    let Some(r) = seen else {
        // Nothing observed beyond the findings: a clean repository and
        // denied paths are not established.
        let (score, level) = match lowest {
            2 => (
                1,
                "Nothing broad is mounted; a clean repository and denied paths were not observed"
                    .to_string(),
            ),
            s => (s, level_of(c, s, at, mounts)),
        };
        // The reason: what decided, or (with nothing decided) the level,
        // which then says what was not observed rather than the rubric.
        let reason = decided.clone().unwrap_or_else(|| level.clone());
        return Described {
            score,
            level: Some(level),
            reason,
        };
    };
    let ws = r.workspace.as_deref().unwrap_or("(no workspace)");
    let ws_desc = match &r.repository {
        Some((path, what, _)) if path == ws => format!("{ws} ({what})"),
        Some((path, what, _)) => format!("{ws} (in {path}: {what})"),
        None if r.workspace.is_some() => format!("{ws} (not a git repository)"),
        None => "(no workspace)".to_string(),
    };
    // The workspace as a clause of its own: "the workspace is /w (…)", or
    // "no workspace is declared" (never "the workspace is no workspace…").
    let ws_clause = if r.workspace.is_some() {
        format!("the workspace is {ws_desc}")
    } else {
        "no workspace is declared".to_string()
    };
    let mut seen_s = match (r.workspace_from_host, r.other_host_mounts.is_empty()) {
        (true, true) => format!("only {ws_desc} is mounted from the host"),
        (false, true) => format!("nothing is mounted from the host; {ws_clause}"),
        (from_host, false) => {
            // The first three, in order of name, then how many more.
            let mut items = r.other_host_mounts.clone();
            let n = items.len().min(3);
            crate::util::sort::sort(&mut items[..n]);
            let others = format!(
                "{} from the host ({})",
                plural(r.other_host_mounts.len(), "other mount", "other mounts"),
                first_of(&items, 3)
            );
            if from_host {
                format!("{ws_desc} and {others} are mounted")
            } else {
                let verb = if r.other_host_mounts.len() == 1 {
                    "is"
                } else {
                    "are"
                };
                format!("{ws_clause}; {others} {verb} mounted")
            }
        }
    };
    let visible: Vec<String> = r
        .denied
        .iter()
        .filter(|(_, at)| !at.is_empty())
        .map(|(d, at)| format!("{d} at {}", at.join(", ")))
        .collect();
    let denied_s = if r.denied.is_empty() {
        "no denied paths are declared (policy [workspace] deny)".to_string()
    } else {
        let names: Vec<&str> = r.denied.iter().map(|(d, _)| d.as_str()).collect();
        if visible.is_empty() {
            format!(
                "the policy denies {} and no host mount shows them",
                names.join(", ")
            )
        } else {
            format!(
                "the policy denies {}, but a host mount shows {}",
                names.join(", "),
                visible.join("; ")
            )
        }
    };
    seen_s.push_str("; ");
    seen_s.push_str(&denied_s);
    if lowest < 2 {
        let level = level_of(c, lowest, at, mounts);
        return Described {
            score: lowest,
            reason: decided_reason(decided, Some(seen_s)),
            level: Some(level),
        };
    }
    // The findings allow 2: the rubric's conditions must be seen to hold.
    let mut short: Vec<&str> = Vec::new();
    match &r.repository {
        Some((_, _, true)) => {}
        Some(_) => short.push("a repository without uncommitted or untracked changes"),
        None => short.push("a git repository for the workspace"),
    }
    if r.denied.is_empty() {
        short.push("declared denied paths");
    } else if !visible.is_empty() {
        short.push("denied paths that no mount shows");
    }
    if r.workspace.is_none() {
        short.push("a declared workspace");
    }
    if short.is_empty() {
        Described {
            score: 2,
            level: Some(c.rubric[2].to_string()),
            reason: seen_s,
        }
    } else {
        Described {
            score: 1,
            level: Some(format!("Repo mount only, without {}", short.join(" or "))),
            reason: format!("{seen_s}; 2 needs {}", short.join(" and ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Code;

    fn rec(name: &'static str) -> ProbeRecord {
        ProbeRecord {
            name: name.into(),
            phase: 2,
            status: ProbeStatus::Ok,
            duration_us: 1,
            reason: None,
        }
    }

    /// The probes every control but the later phases' rests on, then
    /// those of phases 4 and 5.
    const PROBES: &[&str] = &[
        "boundary",
        "mounts",
        "writable",
        "devices",
        "sockets",
        "privilege",
        "rootpaths",
        "namespaces",
        "repro",
        "caches",
        "browsers",
        "artifacts",
    ];

    #[test]
    fn scores_follow_the_rubric() {
        let recs: Vec<ProbeRecord> = PROBES[..8].iter().copied().map(rec).collect();
        let fs = vec![Finding::new(
            Code::EngineSocketReachable,
            "/var/run/docker.sock",
            "m",
        )];
        let sc = score(&fs, &recs);
        assert_eq!(
            sc.controls[0].score,
            Some(1),
            "without observed git state and policy, repo scope cannot claim 2: {}",
            sc.controls[0].reason
        );
        assert_eq!(sc.controls[1].score, Some(0));
        assert_eq!(sc.controls[1].findings, vec![fs[0].id.clone()]);
        assert_eq!(sc.controls[1].level.as_deref(), Some("Host socket mounted"));
        assert_eq!(sc.controls[2].score, None, "secrets are not probed yet");
        assert_eq!(sc.total, 1);

        let mut ex = fs.clone();
        ex[0].status = Status::Excepted;
        assert_eq!(
            score(&ex, &recs).controls[1].score,
            Some(1),
            "an owned exception is 'mounted with review'"
        );

        let low = vec![Finding::new(Code::MountUnexpected, "/data", "m")];
        assert_eq!(score(&low, &recs).controls[0].score, Some(1));
    }

    fn all_records() -> Vec<ProbeRecord> {
        PROBES.iter().copied().map(rec).collect()
    }

    fn control<'a>(sc: &'a Scorecard, key: &str) -> &'a ControlScore {
        sc.controls.iter().find(|c| c.control == key).unwrap()
    }

    #[test]
    fn engine_socket_counts_only_what_reaches_the_host() {
        let recs = all_records();
        let notes = vec![
            Finding::new(Code::PrivNoLsm, "lsm", "m"),
            Finding::new(Code::PrivNoNewPrivsUnset, "no_new_privs", "m"),
        ];
        let sc = score(&notes, &recs);
        let es = control(&sc, "engine-socket");
        assert_eq!(es.score, Some(2), "{}", es.reason);
        assert!(es.reason.contains("2 notes below high"), "{}", es.reason);
        assert_eq!(es.findings.len(), 2, "notes are still listed");
        assert!(es.decisive.is_empty());
        let sc = score(
            &[Finding::new(Code::PrivPrivileged, "container", "m")],
            &recs,
        );
        let es = control(&sc, "engine-socket");
        assert_eq!(es.score, Some(0));
        assert_eq!(
            es.level.as_deref(),
            Some("The container runs privileged"),
            "the level names the decisive finding, not a socket that is not there"
        );
        assert!(!es.reason.contains("socket mounted"), "{}", es.reason);
        assert!(
            es.reason.contains("priv.privileged container"),
            "{}",
            es.reason
        );
    }

    fn repo_obs(status: &str, deny: &[(&str, &[&str])], others: &[&str]) -> Observed {
        Observed {
            repo: Some(RepoSeen {
                workspace: Some("/workspace".into()),
                workspace_from_host: true,
                other_host_mounts: others.iter().map(|s| s.to_string()).collect(),
                repository: Some((
                    "/workspace".into(),
                    format!("git, branch main, {status}"),
                    status == "clean",
                )),
                denied: deny
                    .iter()
                    .map(|(d, at)| (d.to_string(), at.iter().map(|s| s.to_string()).collect()))
                    .collect(),
            }),
            ..Observed::default()
        }
    }

    #[test]
    fn repo_scope_reasons_say_what_was_seen() {
        let recs = all_records();
        let deny: &[(&str, &[&str])] = &[("~/.ssh", &[]), ("~/.aws", &[])];
        let sc = score_observed(&[], &recs, &repo_obs("clean", deny, &[]));
        let rs = control(&sc, "repo-scope");
        assert_eq!(rs.score, Some(2), "{}", rs.reason);
        assert_eq!(rs.level.as_deref(), Some(CONTROLS[0].rubric[2]));
        assert_eq!(
            rs.reason,
            "only /workspace (git, branch main, clean) is mounted from the host; the policy denies ~/.ssh, ~/.aws and no host mount shows them"
        );

        // Untracked files: not clean, so not 2, and nothing says clean.
        let sc = score_observed(&[], &recs, &repo_obs("dirty: 2 untracked", deny, &[]));
        let rs = control(&sc, "repo-scope");
        assert_eq!(rs.score, Some(1), "{}", rs.reason);
        assert!(rs.reason.contains("dirty: 2 untracked"), "{}", rs.reason);
        assert!(!rs.reason.contains("clean"), "{}", rs.reason);
        assert!(
            !rs.level.as_deref().unwrap().contains("clean"),
            "{:?}",
            rs.level
        );

        // No denied paths declared: the rubric's "explicit denied paths" is not met.
        let sc = score_observed(&[], &recs, &repo_obs("clean", &[], &[]));
        let rs = control(&sc, "repo-scope");
        assert_eq!(rs.score, Some(1));
        assert!(
            rs.reason.contains("no denied paths are declared"),
            "{}",
            rs.reason
        );
        assert_ne!(rs.level.as_deref(), Some(CONTROLS[0].rubric[2]));

        // A denied path a mount shows.
        let shown: &[(&str, &[&str])] = &[("~/.ssh", &["/mnt/keys"])];
        let sc = score_observed(&[], &recs, &repo_obs("clean", shown, &["/mnt/keys"]));
        let rs = control(&sc, "repo-scope");
        assert_eq!(rs.score, Some(1));
        assert!(
            rs.reason.contains("a host mount shows ~/.ssh at /mnt/keys"),
            "{}",
            rs.reason
        );

        // 0 from a finding: the level is the rubric's only for mounts.
        let home = Finding::new(Code::MountHomeDirectory, "/home/me", "m").severity(Severity::High);
        let sc = score_observed(&[home], &recs, &repo_obs("clean", deny, &["/home/me"]));
        let rs = control(&sc, "repo-scope");
        assert_eq!(
            (rs.score, rs.level.as_deref()),
            (Some(0), Some("Broad host mounts"))
        );
        let blk = Finding::new(Code::DeviceHostBlock, "/dev/sda", "m");
        let sc = score_observed(&[blk], &recs, &repo_obs("clean", deny, &[]));
        let rs = control(&sc, "repo-scope");
        assert_eq!(
            rs.level.as_deref(),
            Some("A host block device is visible in the workspace"),
            "{}",
            rs.reason
        );
    }

    #[test]
    fn unseen_conditions_are_named_not_claimed() {
        let mut recs = all_records();
        recs.push(rec("secrets"));
        recs.push(rec("teardown"));
        let obs = Observed {
            secrets: Some(SecretsSeen {
                homes: 2,
                roots: 3,
                entries: 40,
                files_checked: 1,
                processes_read: 4,
                package_trees: 1,
                short_lived_tokens: 0,
            }),
            teardown: Some(TeardownSeen::default()),
            ..Observed::default()
        };
        let pkg = Finding::new(
            Code::SecretPackageData,
            "/home/dev/.pyenv/versions/3.11.2/lib",
            "m",
        );
        let sc = score_observed(&[pkg], &recs, &obs);
        let sb = control(&sc, "secret-boundary");
        assert_eq!(
            sb.score,
            Some(2),
            "package data does not lower it: {}",
            sb.reason
        );
        let lvl = sb.level.as_deref().unwrap();
        assert!(
            !lvl.contains("Short-lived scoped secret injection"),
            "{lvl}"
        );
        assert!(
            lvl.contains("rotation owner cannot be seen from inside"),
            "{lvl}"
        );
        assert!(
            sb.reason.contains("no task secret is injected"),
            "{}",
            sb.reason
        );
        assert!(sb.reason.contains("1 package tree hold"), "{}", sb.reason);
        let td = control(&sc, "teardown");
        assert_eq!(td.score, Some(2));
        let lvl = td.level.as_deref().unwrap();
        assert!(!lvl.contains("Automated artifact export"), "{lvl}");
        assert!(
            td.reason.contains("no writable persistent mount"),
            "{}",
            td.reason
        );
        assert!(
            td.reason.contains("cannot be seen from inside"),
            "{}",
            td.reason
        );
        // A volume that remains: the level does not claim the container is removed.
        let vol = Finding::new(Code::TeardownPersistentWritable, "/data", "m");
        let sc = score_observed(&[vol], &recs, &obs);
        let td = control(&sc, "teardown");
        assert_eq!(td.score, Some(1));
        assert!(td
            .level
            .as_deref()
            .unwrap()
            .contains("cannot be seen from inside"));
    }

    #[test]
    fn denied_paths_shown_by_mounts() {
        assert!(shows("~/.ssh", "/home/alice/.ssh"));
        assert!(shows("~/.ssh", "/home/alice"), "a home holds its .ssh");
        assert!(shows("~/.ssh", "/root/.ssh/id_rsa"));
        assert!(shows("~/.ssh", "/"), "a host root shows everything");
        assert!(!shows("~/.ssh", "/home/alice/src/app"));
        assert!(!shows("~/.aws", "/home/alice/.ssh"));
        assert!(shows("/srv/secrets", "/srv"));
        assert!(shows("/srv/secrets", "/srv/secrets/db"));
        assert!(!shows("/srv/secrets", "/srv/app"));
        assert!(!shows("~/.ssh", "/tmp"));
        assert!(!shows("~/.ssh", "/tmp/selfprobe-ws"));
    }

    #[test]
    fn phase_four_and_five_rubrics() {
        let recs = all_records();
        // A pet container: no setup contract at all is 0 at medium severity.
        let pet = Finding::new(Code::ReproImageUnpinned, "image", "m")
            .with("setup_contract_found", false);
        let drift =
            Finding::new(Code::ReproImageUnpinned, "image", "m").with("setup_contract_found", true);
        assert_eq!(
            control(&score(&[pet], &recs), "reproducibility").score,
            Some(0)
        );
        let sc = score(
            &[
                drift.clone(),
                Finding::new(Code::ReproNoLockfile, "/w/Cargo.toml", "m"),
            ],
            &recs,
        );
        assert_eq!(control(&sc, "reproducibility").score, Some(1));
        assert_eq!(control(&sc, "reproducibility").decisive.len(), 2);
        // A host cache is high (0); a volume cache medium (1); an owned
        // exception is "retained intentionally" (2).
        let host = Finding::new(Code::CacheSharedWritable, "/root/.cache/pip", "m")
            .severity(Severity::High);
        let vol = Finding::new(Code::CacheSharedWritable, "/root/.cache/uv", "m");
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
        let prof = Finding::new(Code::BrowserProfile, "/root/.config/google-chrome", "m");
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
        let unk = Finding::new(Code::CacheCredentials, "/root/.npmrc", "m").unknown();
        let sc = score(std::slice::from_ref(&unk), &recs);
        assert_eq!(control(&sc, "cache-policy").score, None);
        assert!(control(&sc, "cache-policy")
            .reason
            .contains("could not check"));
        let host = Finding::new(Code::CacheSharedWritable, "/x", "m").severity(Severity::High);
        let sc = score(&[unk, host], &recs);
        assert_eq!(control(&sc, "cache-policy").score, Some(0));
    }

    #[test]
    fn a_part_left_unchecked_keeps_its_control_from_two() {
        let recs = all_records();
        let env = Finding::new(Code::ProbeIncomplete, "secrets:environ", "m")
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
        let hit = Finding::new(Code::SecretEnv, "GITHUB_TOKEN", "m");
        let sc = score(&[env, hit], &recs);
        assert_eq!(control(&sc, "secret-boundary").score, Some(0));
        // Another probe's gap does not touch this control.
        let other = Finding::new(Code::ProbeIncomplete, "caches:environ", "m")
            .unknown()
            .with("probe", "caches");
        let sc = score(&[other], &recs);
        assert_eq!(control(&sc, "secret-boundary").score, Some(2));
    }

    #[test]
    fn a_proxy_that_enforces_the_contract_scores_two_and_is_named() {
        let mut recs = all_records();
        recs.push(rec("network"));
        let proxy = |enforces: bool| {
            Finding::new(Code::NetProxy, "environment", "m")
                .with("enforces_contract", enforces)
                .with("denied_by_proxy", 3)
                .with("reached_through_proxy", 2)
                .with("used_proxies", vec!["http://***@127.0.0.1:3128"])
        };
        let sc = score(&[proxy(true)], &recs);
        let np = control(&sc, "network-policy");
        assert_eq!(np.score, Some(2), "{}", np.reason);
        assert_eq!(
            np.reason,
            "the proxy http://***@127.0.0.1:3128 enforces the contract (3 deny destination(s) refused by it, 2 allow destination(s) reached through it)"
        );
        assert_eq!(np.level.as_deref(), Some(CONTROLS[3].rubric[2]));
        assert!(np.decisive.is_empty());
        // A proxy not seen enforcing it is "some proxy control".
        let sc = score(&[proxy(false)], &recs);
        let np = control(&sc, "network-policy");
        assert_eq!(np.score, Some(1));
        assert_eq!(np.reason, "net.proxy environment");
        assert_eq!(np.level.as_deref(), Some(CONTROLS[3].rubric[1]));
        // A proxy that forwards a denied destination: at most 1.
        let fwd = Finding::new(Code::NetProxyForwardsDenied, "http://127.0.0.1:9/", "m");
        let sc = score(&[proxy(false), fwd.clone()], &recs);
        assert_eq!(control(&sc, "network-policy").score, Some(1));
        let sc = score(&[proxy(false), fwd.severity(Severity::High)], &recs);
        assert_eq!(control(&sc, "network-policy").score, Some(0));
    }

    #[test]
    fn no_reason_quotes_the_rubric_and_nothing_found_says_what_was_looked_at() {
        let mut recs = all_records();
        for p in ["secrets", "teardown", "network"] {
            recs.push(rec(p));
        }
        let deny: &[(&str, &[&str])] = &[("~/.ssh", &[])];
        let full = Observed {
            secrets: Some(SecretsSeen {
                homes: 1,
                roots: 2,
                ..SecretsSeen::default()
            }),
            teardown: Some(TeardownSeen::default()),
            sockets_checked: Some(5),
            network: Some(NetSeen {
                deny: 2,
                deny_held: 2,
                allow: 1,
                allow_held: 1,
            }),
            caches: Some(CachesSeen {
                homes: 1,
                looked_at: 30,
                caches: Vec::new(),
            }),
            browsers: Some(BrowsersSeen {
                homes: 1,
                looked_at: 40,
                profiles: Vec::new(),
            }),
            repro: Some(ReproSeen {
                contract: vec!["/w/.devcontainer/devcontainer.json".into()],
                pinned_by: Some("debian@sha256:ab".into()),
                tool_pins: 2,
                manifests: 1,
                locked: 1,
            }),
            ..repo_obs("clean", deny, &[])
        };
        let hi =
            |code: Code, subject: &str| Finding::new(code, subject, "m").severity(Severity::High);
        let lo = |code: Code, subject: &str| Finding::new(code, subject, "m");
        let sets: Vec<Vec<Finding>> = vec![
            vec![],
            vec![hi(Code::EngineSocketReachable, "/var/run/docker.sock")],
            vec![hi(Code::MountHomeDirectory, "/home/me")],
            vec![lo(Code::MountUnexpected, "/data")],
            vec![hi(Code::SecretEnv, "GITHUB_TOKEN")],
            vec![lo(Code::SecretTokenExpired, "/t")],
            vec![hi(Code::NetDeniedReachable, "tcp://127.0.0.1:9")],
            vec![lo(Code::NetProxy, "environment")],
            vec![hi(Code::CacheSharedWritable, "/root/.cache/pip")],
            vec![lo(Code::CacheSharedWritable, "/root/.cache/uv")],
            vec![hi(Code::BrowserProfile, "/root/.config/google-chrome")],
            vec![lo(Code::BrowserProfile, "/data/chrome")],
            vec![lo(Code::ReproImageUnpinned, "image").with("setup_contract_found", false)],
            vec![lo(Code::ReproNoLockfile, "/w/Cargo.toml")],
            vec![lo(Code::TeardownPersistentWritable, "/data")],
            vec![hi(Code::TeardownCanarySurvived, "/data/c")],
        ];
        for obs in [Observed::default(), full.clone()] {
            for fs in &sets {
                let sc = score_observed(fs, &recs, &obs);
                for c in &sc.controls {
                    for cell in CONTROLS.iter().flat_map(|k| k.rubric) {
                        assert!(
                            !c.reason.contains(cell),
                            "{}: {:?} quotes {cell:?}",
                            c.control,
                            c.reason
                        );
                    }
                }
            }
        }
        let sc = score_observed(&[], &recs, &full);
        let reason = |k: &str| control(&sc, k).reason.clone();
        assert_eq!(
            reason("browser-isolation"),
            "no browser profile found in 1 home and 40 user-data locations looked at (host mounts included)"
        );
        assert_eq!(
            reason("cache-policy"),
            "no package, model or build cache directory found in 1 home and 30 cache locations looked at"
        );
        assert_eq!(
            control(&sc, "browser-isolation").level.as_deref(),
            Some("No browser profile in reach")
        );
        assert_eq!(
            control(&sc, "cache-policy").level.as_deref(),
            Some("No cache found")
        );
        assert!(
            reason("network-policy")
                .starts_with("every destination tried kept its contract: 2 deny destinations"),
            "{}",
            reason("network-policy")
        );
        // A 0 names what decided and what was looked at.
        let sc = score_observed(
            &[hi(Code::CacheSharedWritable, "/root/.cache/pip")],
            &recs,
            &full,
        );
        assert_eq!(
            control(&sc, "cache-policy").reason,
            "cache.shared-writable /root/.cache/pip; no package, model or build cache directory found in 1 home and 30 cache locations looked at"
        );
    }

    #[test]
    fn a_failed_probe_is_not_assessed() {
        let mut recs = vec![rec("boundary"), rec("mounts"), rec("devices")];
        recs.push(ProbeRecord {
            name: "writable".into(),
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
