//! `selfprobe-host watch` against real engines (issue 31, part 2): Docker,
//! rootful and rootless podman, and a private dockerd killed and started
//! again. Each engine's test runs the watch as a process of its own (as the
//! engine's user) over one life:
//!
//! 1. a burst of 40 labelled containers with 10 unlabelled beside them, at
//!    the default --timeout and --jobs: each labelled one inspected exactly
//!    once and verified, none of the unlabelled touched (no exec or copy
//!    event, no probe in its `diff`, not in the state); the latency from
//!    each start to its verified report;
//! 2. SIGTERM mid-burst: exit 0, the inspections under way finished, no
//!    probe file left in any container (`diff`);
//! 3. the watch started again with a --timeout of 12 s: the ones SIGTERM
//!    left waiting are inspected, nothing twice;
//! 4. hostile containers among honest ones (one hanging, one flooding, one
//!    dying mid-run: the stand-ins of tests/it/inspect_hostile.rs): each
//!    ends within its deadline, not verified, with the reason, holding one
//!    worker no longer than that; no honest container waits while a worker
//!    is idle;
//! 5. the watch killed (SIGKILL) mid-burst while containers start, end and
//!    are removed, and started again: none of them unrecorded, the
//!    inspection the kill cut short done again;
//! 6. every container removed: one signed teardown statement per inspected
//!    container, each verified with `selfprobe verify`; the fleet view
//!    holds every workspace; SIGTERM, exit 0; the key in no output.
//!
//! The private dockerd's test kills the engine itself mid-burst instead
//! (docker's daemon, not the watch) and checks the same "none unrecorded".
//! Network rule: every container runs with --network none. A missing
//! engine is a visible SKIP, a failure under CI=true.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::common::dockerd::Dockerd;
use crate::common::engines::{docker_image, Rootless};
use crate::common::podman::{self, unique, TempPath};
use crate::common::shipped;
use crate::common::watch::*;

/// Each container's --timeout in the hostile round: what a hostile one may
/// cost (the other rounds run with the default, 60 s).
const DEADLINE: &str = "12s";
const DEADLINE_MS: u64 = 12_000;
const LABEL_KEY: &str = "selfprobe.test.watch";

/// The workspace's watcher and its stand-in for the probe (as
/// tests/it/inspect_hostile.rs has them): each `/.selfprobe-*` placed is
/// moved aside to `….real` and the stand-in put in its place.
const WATCHER: &str = r#"#!/bin/sh
while :; do
  for f in /.selfprobe-* /tmp/.selfprobe-*; do
    case "$f" in *'*'*|*.policy.toml|*.real) continue ;; esac
    [ -e "$f.real" ] && continue
    mv "$f" "$f.real" && cp /opt/hostile/standin "$f" && chmod 755 "$f"
  done
  usleep 1000
done
"#;

const STANDIN: &str = r#"#!/bin/sh
real="$0.real"
if [ "$1" = "canary" ]; then exec "$real" "$@"; fi
echo "$HOSTILE" > /tmp/standin-ran
case "$HOSTILE" in
hang) exec sleep 1000 ;;
flood) exec head -c 1073741824 /dev/zero ;;
midrun) "$real" "$@" | head -c 5000; exit 1 ;;
*) exec "$real" "$@" ;;
esac
"#;

struct Ctx<'a> {
    t: &'a Target<'a>,
    bin: PathBuf,
    out: PathBuf,
    label: String,
    filter: String,
    hostile: PathBuf,
    cleanup: Cleanup<'a>,
    /// Every labelled container: name by id.
    labelled: BTreeMap<String, String>,
    unlabelled: BTreeMap<String, String>,
    /// The labelled ones removed so far.
    removed: BTreeSet<String>,
}

impl Ctx<'_> {
    /// The watch with the default --timeout (60 s), as users run it.
    fn watch(&self) -> Watcher {
        self.watch_with(&[])
    }

    fn watch_with(&self, more: &[&str]) -> Watcher {
        let mut args = vec!["--filter", &self.filter];
        args.extend_from_slice(more);
        self.t.watch(&self.bin, &self.out, &args)
    }

    /// Starts `n` labelled sleepers (and `unl` unlabelled ones, some with
    /// the label's key and another value); their ids.
    fn burst(&mut self, tag: &str, n: usize, unl: usize) -> Vec<String> {
        let mut specs = Vec::new();
        let mut is_labelled = Vec::new();
        for i in 0..n + unl {
            // The unlabelled ones spread among the labelled.
            let labelled = i % 5 != 4 || i >= 5 * unl;
            let labelled = labelled && is_labelled.iter().filter(|l| **l).count() < n;
            let name = unique(if labelled { tag } else { "unl" });
            let flags: Vec<String> = if labelled {
                vec!["--label".into(), self.label.clone()]
            } else if i % 2 == 0 {
                vec!["--label".into(), format!("{LABEL_KEY}=other")]
            } else {
                Vec::new()
            };
            specs.push((name, flags, vec!["/bin/sleep".into(), "600".into()]));
            is_labelled.push(labelled);
        }
        self.cleanup.add(specs.iter().map(|s| s.0.clone()));
        let ids = self.t.start_all(&specs);
        let mut out = Vec::new();
        for ((spec, id), l) in specs.iter().zip(ids).zip(is_labelled) {
            if l {
                self.labelled.insert(id.clone(), spec.0.clone());
                out.push(id);
            } else {
                self.unlabelled.insert(id, spec.0.clone());
            }
        }
        out
    }

    /// Starts labelled containers running the hostile watcher, one per case.
    fn hostile(&mut self, cases: &[&str]) -> Vec<String> {
        let vol = format!("{}:/opt/hostile:ro", self.hostile.display());
        let specs: Vec<(String, Vec<String>, Vec<String>)> = cases
            .iter()
            .map(|c| {
                (
                    unique(&format!("h{c}")),
                    vec![
                        "--label".into(),
                        self.label.clone(),
                        "-e".into(),
                        format!("HOSTILE={c}"),
                        "-v".into(),
                        vol.clone(),
                    ],
                    vec!["/bin/sh".into(), "/opt/hostile/watch".into()],
                )
            })
            .collect();
        self.cleanup.add(specs.iter().map(|s| s.0.clone()));
        let ids = self.t.start_all(&specs);
        for (s, id) in specs.iter().zip(&ids) {
            self.labelled.insert(id.clone(), s.0.clone());
        }
        ids
    }

    /// Removes labelled containers (as their workspaces end).
    fn remove(&mut self, ids: &[String]) {
        let names: Vec<String> = ids.iter().map(|id| self.labelled[id].clone()).collect();
        self.t.remove_all(&names);
        self.removed.extend(ids.iter().cloned());
    }

    fn inspection_dir(&self, st: &Value, id: &str) -> Option<PathBuf> {
        entry(st, id)["inspection"]
            .as_str()
            .map(|d| self.out.join(d))
    }

    /// Every inspection directory under out/inspections: (dir, the id its
    /// inspection.json names).
    fn dirs(&self) -> Vec<(PathBuf, String)> {
        let mut v = Vec::new();
        let Ok(rd) = std::fs::read_dir(self.out.join("inspections")) else {
            return v;
        };
        for e in rd {
            let p = e.unwrap().path();
            let insp = read_json_file(&p.join("inspection.json"));
            let id = insp["containers"][0]["id"]
                .as_str()
                .unwrap_or("")
                .to_string();
            v.push((p, id));
        }
        v
    }
}

fn read_json_file(p: &Path) -> Value {
    std::fs::read(p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

fn ms(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// How long the container waited for a worker, from the state's times.
fn queue_wait_ms(e: &Value) -> Option<u64> {
    let t = |k: &str| {
        e[k].as_str()
            .and_then(selfprobe_host::watch::events::parse_rfc3339_ns)
    };
    let (seen, begun) = (t("seen")?, t("inspection_started")?);
    Some(((begun - seen).max(0) / 1_000_000) as u64)
}

/// How long its inspection took, from the state's times.
fn inspection_ms(e: &Value) -> Option<u64> {
    let t = |k: &str| {
        e[k].as_str()
            .and_then(selfprobe_host::watch::events::parse_rfc3339_ns)
    };
    let (begun, done) = (t("inspection_started")?, t("inspection_finished")?);
    Some(((done - begun).max(0) / 1_000_000) as u64)
}

fn say(line: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

/// The five phases of the module comment, on one engine.
/// The context of one engine's test: the hostile stand-ins written under
/// `work`, a label of this run's own.
fn context<'a>(t: &'a Target<'a>, bin: PathBuf, work: &Path, out: PathBuf) -> Ctx<'a> {
    let hostile = work.join("hostile");
    std::fs::create_dir_all(&hostile).unwrap();
    for (name, text) in [("watch", WATCHER), ("standin", STANDIN)] {
        std::fs::write(hostile.join(name), text).unwrap();
        std::fs::set_permissions(hostile.join(name), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    std::fs::set_permissions(&hostile, std::fs::Permissions::from_mode(0o755)).unwrap();
    let label = format!("{LABEL_KEY}={}", unique("v"));
    Ctx {
        t,
        bin,
        out,
        filter: format!("label={label}"),
        label,
        hostile,
        cleanup: Cleanup::new(t),
        labelled: BTreeMap::new(),
        unlabelled: BTreeMap::new(),
        removed: BTreeSet::new(),
    }
}

/// The five phases of the module comment, on one engine.
fn life(test: &str, t: &Target, bin: PathBuf, work: &Path, out: PathBuf) {
    let mut cx = context(t, bin, work, out);
    let mut clock = std::time::Instant::now();
    let mut lap = |what: &str| {
        say(&format!(
            "TIMING watch [{}]: {what} {} ms",
            t.what,
            clock.elapsed().as_millis()
        ));
        clock = std::time::Instant::now();
    };
    let t0 = SystemTime::now();
    let mut w = cx.watch();
    let mut bad: Vec<String> = Vec::new();

    // 1. The burst: 40 labelled, 10 unlabelled beside them.
    let first = cx.burst("wl", 40, 10);
    assert_eq!(first.len(), 40);
    assert_eq!(cx.unlabelled.len(), 10);
    let st = w.wait_for(
        "the 40 labelled containers inspected",
        Duration::from_secs(300),
        |st| first.iter().all(|id| settled(st, id)),
    );
    let mut lat = Vec::new();
    for id in &first {
        let e = entry(&st, id);
        if e["state"] != "inspected" || e["verified"] != true || e["exit"] == 3 {
            bad.push(format!("{}: {e}", cx.labelled[id]));
        }
        match ms(&e["latency_ms"]) {
            Some(l) => lat.push(l),
            None => bad.push(format!("{}: no latency: {e}", cx.labelled[id])),
        }
    }
    let dirs = cx.dirs();
    let ids: Vec<&String> = dirs.iter().map(|(_, id)| id).collect();
    let distinct: BTreeSet<&&String> = ids.iter().collect();
    if dirs.len() != 40 || distinct.len() != 40 || !ids.iter().all(|id| first.contains(id)) {
        bad.push(format!(
            "not one inspection per labelled container: {} directories for {} containers",
            dirs.len(),
            distinct.len()
        ));
    }
    // The default --jobs: the CPUs, 2 to 16 (as this process counts them:
    // the watch runs on the same machine, in no narrower cgroup).
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 16);
    if !w.log().contains(&format!("; {jobs} at a time, ")) {
        bad.push(format!(
            "the watch does not say it runs {jobs} at a time by default: {}",
            w.log()
                .lines()
                .find(|l| l.contains("at a time"))
                .unwrap_or("")
        ));
    }
    let (median, p95) = median_p95(&lat);
    say(&format!(
        "FIGURES watch [{}]: 40-container burst, {jobs} at a time: latency from start to verified report median {median} ms, p95 {p95} ms, max {} ms",
        t.what,
        lat.iter().max().unwrap_or(&0)
    ));

    lap("the burst");
    // 2. SIGTERM mid-burst.
    let third = cx.burst("wt", 6, 0);
    w.wait_for("an inspection under way", Duration::from_secs(120), |st| {
        third.iter().any(|id| {
            matches!(
                entry(st, id)["state"].as_str(),
                Some("inspecting") | Some("inspected")
            )
        })
    });
    w.signal(Signal::SIGTERM);
    let code = w.wait_exit(Duration::from_secs(90));
    if code != 0 {
        bad.push(format!("SIGTERM mid-burst: exit {code} (want 0)"));
    }
    let st = w.state();
    for id in &third {
        // Inspected, waiting, or not seen yet (started after the stream
        // stopped): the next start takes the last two up.
        let s = entry(&st, id)["state"]
            .as_str()
            .unwrap_or("unseen")
            .to_string();
        if !["inspected", "queued", "unseen"].contains(&s.as_str()) {
            bad.push(format!(
                "{} after SIGTERM: {s} (an inspection under way must finish)",
                cx.labelled[id]
            ));
        }
    }
    // No probe left behind: every inspection says its probe was removed,
    // and the engine's own `diff` of each container SIGTERM met (the ones
    // at risk) shows no probe file.
    let st = w.state();
    for id in first.iter().chain(&third) {
        let Some(dir) = cx.inspection_dir(&st, id) else {
            continue;
        };
        let c = &read_json_file(&dir.join("inspection.json"))["containers"][0];
        if c["placement"]["removed"] != true {
            bad.push(format!(
                "{}: the probe was not removed: {}",
                cx.labelled[id], c["placement"]
            ));
        }
    }
    let names: Vec<String> = third.iter().map(|id| cx.labelled[id].clone()).collect();
    for (name, diff) in t.diff_all(&names) {
        let left: Vec<&String> = diff.iter().filter(|l| l.contains(".selfprobe")).collect();
        if !left.is_empty() {
            bad.push(format!("{name}: the probe was left behind: {left:?}"));
        }
    }
    let log1 = w.log();
    drop(w);
    // Thirty of the burst end while no watch runs: the next one tears them
    // down. (Fewer containers alive at once also keeps rootless podman
    // within its user's kernel keyring quota: 200 keys, one per container.)
    let ended: Vec<String> = first[10..].to_vec();
    cx.remove(&ended);

    lap("SIGTERM");
    // 3. Started again, with a deadline of DEADLINE_MS: what SIGTERM left
    // waiting is inspected, nothing twice.
    let mut w = cx.watch_with(&["--timeout", DEADLINE]);
    let st = w.wait_for(
        "the ones left waiting inspected, the ended ones torn down",
        Duration::from_secs(180),
        |st| {
            third.iter().all(|id| settled(st, id))
                && ended.iter().all(|id| !entry(st, id)["teardown"].is_null())
        },
    );
    for id in &ended {
        if entry(&st, id)["teardown"]["result"] != "gone" {
            bad.push(format!("ended while no watch ran: {}", entry(&st, id)));
        }
    }
    for id in &third {
        if entry(&st, id)["verified"] != true {
            bad.push(format!(
                "{} after the restart: {}",
                cx.labelled[id],
                entry(&st, id)
            ));
        }
    }
    lap("the restart");
    // 4. Hostile containers among honest ones: the hanging one first, so
    // the honest ones come while it holds its worker.
    let hang = cx.hostile(&["hang"]);
    let rest = cx.hostile(&["flood", "midrun"]);
    let honest = cx.burst("wh", 6, 0);
    let all2: Vec<String> = hang.iter().chain(&rest).chain(&honest).cloned().collect();
    let st = w.wait_for(
        "the hostile round inspected",
        Duration::from_secs(180),
        |st| all2.iter().all(|id| settled(st, id)),
    );
    for (id, case) in hang
        .iter()
        .map(|i| (i, "hang"))
        .chain(rest.iter().zip(["flood", "midrun"]))
    {
        let e = entry(&st, id);
        let why = e["not_probed"].as_str().unwrap_or("");
        let ok = match case {
            "hang" => why.contains("did not finish within"),
            "flood" => why.contains("more than 16 MiB"),
            // Cut off mid-report, or (its stand-in racing the copy in)
            // not started at all: either way said, never verified.
            _ => {
                why.contains("exited with 1")
                    || why.contains("not a JSON report")
                    || why.contains("printed nothing")
            }
        };
        if e["verified"] != false || !ok {
            bad.push(format!("hostile {case}: {e}"));
        }
        // What --timeout bounds: inspect's own steps, from placement to
        // removal (else, when nothing was placed, the whole job).
        let total = cx
            .inspection_dir(&st, id)
            .map(|d| read_json_file(&d.join("inspection.json")))
            .and_then(|i| i["containers"][0]["steps_ms"]["total"].as_u64())
            .or_else(|| inspection_ms(e));
        if total.is_none_or(|t| t > DEADLINE_MS + 2_000) {
            bad.push(format!(
                "hostile {case}: its inspection took {total:?} ms, past its --timeout of {DEADLINE_MS} ms"
            ));
        }
    }
    // Each honest one waited only while every worker was busy: the hostile
    // ones hold one worker each, for at most their deadline (above), and
    // the others go on. Sampled every 20 ms of each wait (its first and
    // last 100 ms left out: the loop hands a job over in between); the
    // moments a worker was idle while one waited must be few (a handover
    // under load takes some milliseconds). Load does not move this check,
    // as it would a bound on the wait itself.
    let ns = |e: &Value, k: &str| {
        e[k].as_str()
            .and_then(selfprobe_host::watch::events::parse_rfc3339_ns)
    };
    let busy: Vec<(i128, i128)> = st["containers"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|e| Some((ns(e, "inspection_started")?, ns(e, "inspection_finished")?)))
        .collect();
    let (mut samples, mut idle) = (0u64, 0u64);
    let mut waits = Vec::new();
    for id in &honest {
        let e = entry(&st, id);
        if e["verified"] != true {
            bad.push(format!("honest beside the hostile: {e}"));
        }
        waits.push(queue_wait_ms(e).unwrap_or(u64::MAX));
        let (Some(seen), Some(begun)) = (ns(e, "seen"), ns(e, "inspection_started")) else {
            bad.push(format!("honest beside the hostile: no times: {e}"));
            continue;
        };
        let mut at = seen + 100_000_000;
        while at < begun - 100_000_000 {
            samples += 1;
            let running = busy.iter().filter(|(a, b)| *a <= at && at < *b).count();
            if running < jobs {
                idle += 1;
            }
            at += 20_000_000;
        }
    }
    if samples > 0 && idle * 10 > samples {
        bad.push(format!(
            "honest containers waited while a worker was idle: {idle} of {samples} samples"
        ));
    }
    say(&format!(
        "FIGURES watch [{}]: 6 honest beside 1 hanging, 1 flooding, 1 dying (deadline {DEADLINE_MS} ms): longest wait for a worker {} ms, a worker idle at {idle} of {samples} moments of waiting",
        t.what,
        waits.iter().max().unwrap_or(&0)
    ));
    cx.remove(&all2);

    lap("the hostile round");
    // 5. Killed mid-burst while containers start, end and go.
    let fourth = cx.burst("wk", 5, 0);
    w.wait_for("an inspection under way", Duration::from_secs(120), |st| {
        fourth
            .iter()
            .any(|id| entry(st, id)["state"] == "inspecting")
    });
    w.signal(Signal::SIGKILL);
    w.wait_exit(Duration::from_secs(10));
    let log2 = w.log();
    drop(w);
    // While nobody watches: three inspected ones removed, two started,
    // one started that ends at once, one started and removed.
    let gone_meanwhile: Vec<String> = first[..3].to_vec();
    cx.remove(&gone_meanwhile);
    let started_meanwhile = cx.burst("wm", 2, 0);
    let short = unique("wq");
    let brief = unique("wr");
    cx.cleanup.add([short.clone(), brief.clone()]);
    let quick = t.start_all(&[
        (
            short.clone(),
            vec!["--label".into(), cx.label.clone()],
            vec!["/bin/true".into()],
        ),
        (
            brief.clone(),
            vec!["--label".into(), cx.label.clone()],
            vec!["/bin/sleep".into(), "600".into()],
        ),
    ]);
    cx.labelled.insert(quick[0].clone(), short.clone());
    cx.labelled.insert(quick[1].clone(), brief.clone());
    cx.remove(&quick[1..]);
    let mut w = cx.watch();
    let everyone: Vec<String> = cx.labelled.keys().cloned().collect();
    let st = w.wait_for(
        "every labelled container recorded after the kill",
        Duration::from_secs(180),
        |st| {
            everyone.iter().all(|id| {
                settled(st, id)
                    && (!gone_meanwhile.contains(id) || !entry(st, id)["teardown"].is_null())
            })
        },
    );
    for id in &started_meanwhile {
        if entry(&st, id)["verified"] != true {
            bad.push(format!(
                "started while the watch was down: {}",
                entry(&st, id)
            ));
        }
    }
    for id in &fourth {
        let e = entry(&st, id);
        let note = e["notes"].to_string();
        if e["state"] != "inspected" || (e["verified"] != true && !note.contains("cut short")) {
            bad.push(format!("killed mid-burst: {}: {e}", cx.labelled[id]));
        }
    }
    let e = entry(&st, &quick[0]);
    if e["state"] != "missed"
        || !e["missed"]
            .as_str()
            .is_some_and(|m| m.contains("not following"))
    {
        bad.push(format!("started and ended while the watch was down: {e}"));
    }
    let e = entry(&st, &quick[1]);
    if t.kind != Kind::Docker || !e.is_null() {
        // podman keeps its events in a file: the start and the removal are
        // caught up. (Docker keeps its last 256 events in memory, which a
        // burst's exec events can push this one out of.)
        if e["state"] != "missed" || e["removed"].is_null() {
            bad.push(format!("started and removed while the watch was down: {e}"));
        }
    }
    for id in &gone_meanwhile {
        if entry(&st, id)["teardown"]["result"] != "gone" {
            bad.push(format!(
                "removed while the watch was down: {}",
                entry(&st, id)
            ));
        }
    }

    lap("the kill");
    // 6. Every container removed: a signed teardown statement for each
    // inspected one.
    the_end(test, &mut cx, w, t0, log1 + &log2, bad);
}

/// Removes every labelled container still there, waits for their
/// teardowns and checks them (one verified statement per inspected
/// container, none inspected twice), that no unlabelled container was
/// touched, the fleet view, the final SIGTERM and the key.
fn the_end(
    test: &str,
    cx: &mut Ctx,
    mut w: Watcher,
    t0: SystemTime,
    logs: String,
    mut bad: Vec<String>,
) {
    let t = cx.t;
    let everyone: Vec<String> = cx.labelled.keys().cloned().collect();
    let left: Vec<String> = everyone
        .iter()
        .filter(|id| !cx.removed.contains(*id))
        .cloned()
        .collect();
    cx.remove(&left);
    let st = w.wait_for("every teardown written", Duration::from_secs(240), |st| {
        everyone.iter().all(|id| {
            let e = entry(st, id);
            !e["removed"].is_null() && (e["state"] != "inspected" || !e["teardown"].is_null())
        })
    });
    let dirs = cx.dirs();
    let mut per_id: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, id) in &dirs {
        *per_id.entry(id.as_str()).or_default() += 1;
    }
    if let Some((id, n)) = per_id.iter().find(|(_, n)| **n > 1) {
        bad.push(format!("{id} was inspected {n} times"));
    }
    let mut statements = 0;
    for id in &everyone {
        let e = entry(&st, id);
        if e["state"] != "inspected" {
            continue;
        }
        let stmt = e["teardown"]["statement"].as_str().unwrap_or("");
        let dir = cx.inspection_dir(&st, id).unwrap();
        let nonce = read_json_file(&dir.join("inspection.json"))["containers"][0]["nonce"]
            .as_str()
            .unwrap_or("")
            .to_string();
        // The probe's own verifier.
        let o = Command::new(shipped::bin())
            .args(["verify", "--pubkey"])
            .arg(cx.out.join("signing.pub"))
            .args(["--nonce", &nonce])
            .arg(cx.out.join(stmt))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        if o.status.code() != Some(0) || !text.contains("https://selfprobe.dev/schema/teardown/v1")
        {
            bad.push(format!(
                "{}: teardown statement {stmt} does not verify: {text}",
                cx.labelled[id]
            ));
        } else {
            statements += 1;
        }
        if e["teardown"]["result"] != "gone" {
            bad.push(format!("{}: teardown {}", cx.labelled[id], e["teardown"]));
        }
    }
    let inspected = everyone
        .iter()
        .filter(|id| entry(&st, id)["state"] == "inspected")
        .count();
    if statements != inspected || statements == 0 {
        bad.push(format!(
            "{statements} verified teardown statements for {inspected} inspected containers"
        ));
    }
    // Never touched: not in the state, no exec or copy event, nothing in
    // their diffs.
    for (id, name) in &cx.unlabelled {
        if !entry(&st, id).is_null() {
            bad.push(format!("unlabelled {name} is in the state"));
        }
    }
    // (podman's own /etc changes are in every container's diff.)
    let names: Vec<String> = cx.unlabelled.values().cloned().collect();
    for (name, diff) in t.diff_all(&names) {
        if diff.iter().any(|l| l.contains(".selfprobe")) {
            bad.push(format!("unlabelled {name}: diff {diff:?}"));
        }
    }
    for (id, action) in t.events_since(t0) {
        if cx.unlabelled.contains_key(&id)
            && ["exec", "copy", "archive", "extract"]
                .iter()
                .any(|a| action.contains(a))
        {
            bad.push(format!("unlabelled {id}: the engine saw {action}"));
        }
    }
    // The fleet view: a row per workspace the watch saw, once the
    // inspections have paused (1 s; 10 s at most behind: docs/watch.md).
    let want_rows = everyone
        .iter()
        .filter(|id| {
            matches!(
                entry(&st, id)["state"].as_str(),
                Some("inspected") | Some("missed")
            )
        })
        .count();
    let fleet_rows = || {
        let f = cx.out.join("fleet.json");
        f.is_file().then(|| {
            read_json_file(&f)["workspaces"]
                .as_array()
                .map_or(0, Vec::len)
        })
    };
    let until = std::time::Instant::now() + Duration::from_secs(15);
    let mut rows = fleet_rows();
    while rows != Some(want_rows) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(250));
        rows = fleet_rows();
    }
    let rows = rows.unwrap_or(0);
    if rows != want_rows {
        bad.push(format!(
            "fleet.json has {rows} rows for {want_rows} workspaces"
        ));
    }
    for f in ["fleet.txt", "fleet.html"] {
        if !cx.out.join(f).is_file() {
            bad.push(format!("no {f}"));
        }
    }
    // Its memory, over the whole life: each inspection's output is capped
    // as inspect caps it (16 MiB of report, --jobs at once).
    let hwm_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", w.pid()))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    say(&format!(
        "FIGURES watch [{}]: the watch's peak RSS {hwm_kib} KiB over {} workspaces",
        t.what,
        everyone.len()
    ));
    if hwm_kib > 256 * 1024 {
        bad.push(format!("the watch's peak RSS is {hwm_kib} KiB"));
    }
    w.signal(Signal::SIGTERM);
    let code = w.wait_exit(Duration::from_secs(90));
    if code != 0 {
        bad.push(format!("the final SIGTERM: exit {code}"));
    }
    // The key: in watch.key only (0600), in no output and no other file.
    let key = std::fs::read_to_string(cx.out.join("watch.key")).unwrap();
    let body: String = key
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .join("");
    let mode = std::fs::metadata(cx.out.join("watch.key"))
        .unwrap()
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        bad.push(format!("watch.key has mode {:o}", mode & 0o777));
    }
    for (what, text) in [("log", logs + &w.log())] {
        if text.contains("PRIVATE KEY") || text.contains(&body) {
            bad.push(format!("the key is in the watch's {what}"));
        }
    }
    for e in walk(&cx.out) {
        if e.file_name().is_some_and(|n| n == "watch.key") {
            continue;
        }
        let b = std::fs::read(&e).unwrap_or_default();
        if b.windows(body.len().max(1)).any(|w| w == body.as_bytes()) {
            bad.push(format!("the key is in {}", e.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "{test} [{}]:\n{}\n\nlast log:\n{}",
        t.what,
        bad.join("\n"),
        w.log()
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

#[test]
fn watch_docker() {
    const T: &str = "watch_docker";
    let Some(img) = docker_image(T) else {
        return;
    };
    let t = Target::docker(img);
    let work = TempPath::dir("watch").unwrap();
    let out = work.path.join("out");
    life(T, &t, shipped::host_bin().to_path_buf(), &work.path, out);
}

#[test]
fn watch_podman_rootful() {
    const T: &str = "watch_podman_rootful";
    let Some(img) = podman::setup(T) else {
        return;
    };
    let t = Target {
        what: "podman",
        kind: Kind::Podman,
        rl: None,
        docker_host: None,
        image: img.to_string(),
    };
    let work = TempPath::dir("watch").unwrap();
    let out = work.path.join("out");
    life(T, &t, shipped::host_bin().to_path_buf(), &work.path, out);
}

#[test]
fn watch_podman_rootless() {
    const T: &str = "watch_podman_rootless";
    let Some(rl) = Rootless::new(T) else {
        return;
    };
    let t = Target {
        what: "rootless podman",
        kind: Kind::Rootless,
        rl: Some(&rl),
        docker_host: None,
        image: rl.image.clone(),
    };
    let work = rl.place.subdir("watch");
    // The out-dir the watch's user owns (the watch makes none where it
    // cannot write).
    let out = work.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).unwrap();
    nix::unistd::chown(
        &out,
        Some(nix::unistd::Uid::from_raw(rl.uid)),
        Some(nix::unistd::Gid::from_raw(rl.uid)),
    )
    .unwrap();
    life(T, &t, rl.place.host(), &work, out);
}

/// The engine itself restarted mid-burst: a private dockerd (never the
/// machine's) killed with SIGKILL while the watch inspects a burst, and
/// started again while its containers are removed and new ones start. The
/// watch reconnects with back-off, catches up (`--since`, the engine's
/// list): every labelled container is recorded, inspected or missed with
/// why (dockerd without live-restore stops the containers that ran when it
/// died); the ones started after are all verified; each removed one gets its
/// teardown.
#[test]
fn watch_docker_engine_restarted() {
    const T: &str = "watch_docker_engine_restarted";
    let Some(mut d) = Dockerd::start(T) else {
        return;
    };
    let t = Target {
        what: "private dockerd",
        kind: Kind::Docker,
        rl: None,
        docker_host: Some(d.host()),
        image: d.import_image(),
    };
    let work = TempPath::dir("watchd").unwrap();
    let mut cx = context(
        &t,
        shipped::host_bin().to_path_buf(),
        &work.path,
        work.path.join("out"),
    );
    let t0 = SystemTime::now();
    let mut w = cx.watch();
    let mut bad = Vec::new();
    let first = cx.burst("dl", 16, 4);
    w.wait_for("a few inspected", Duration::from_secs(120), |st| {
        first
            .iter()
            .filter(|id| entry(st, id)["state"] == "inspected")
            .count()
            >= 3
    });
    d.kill();
    w.wait_log("event stream ended", Duration::from_secs(30));
    // Down for a while: the watch tries again, backing off.
    std::thread::sleep(Duration::from_secs(2));
    d.up();
    // While it reconnects: two of the first removed, more started.
    let gone: Vec<String> = first[..2].to_vec();
    cx.remove(&gone);
    let second = cx.burst("dm", 8, 4);
    let everyone: Vec<String> = cx.labelled.keys().cloned().collect();
    let st = w.wait_for(
        "every labelled container recorded after the engine's restart",
        Duration::from_secs(240),
        |st| {
            everyone.iter().all(|id| {
                let e = entry(st, id);
                settled(st, id)
                    && (!gone.contains(id)
                        || (!e["removed"].is_null()
                            && (e["state"] != "inspected" || !e["teardown"].is_null())))
            })
        },
    );
    for id in &second {
        if entry(&st, id)["verified"] != true {
            bad.push(format!("started after the restart: {}", entry(&st, id)));
        }
    }
    for id in &first {
        let e = entry(&st, id);
        let recorded = match e["state"].as_str() {
            Some("inspected") => e["verified"] == true || e["not_probed"].is_string(),
            Some("missed") => e["missed"].as_str().is_some_and(|m| !m.is_empty()),
            _ => false,
        };
        if !recorded {
            bad.push(format!("{}: not recorded with why: {e}", cx.labelled[id]));
        }
    }
    // Records and execs went to this daemon's own socket, as DOCKER_HOST
    // names it (never the system's), before and after its restart.
    for (dir, id) in cx.dirs() {
        let insp = read_json_file(&dir.join("inspection.json"));
        if insp["engine"]["api"] != d.host().as_str() {
            bad.push(format!(
                "{id}: the engine reached through {} (want the Engine API at {})",
                insp["engine"],
                d.host()
            ));
        }
    }
    let log = w.log();
    if !log.contains("does not answer") && !log.contains("reconnecting") {
        bad.push("the watch never said it was reconnecting".into());
    }
    say(&format!(
        "FIGURES watch [private dockerd restarted]: of the {} started before, {} verified, {} inspected but cut by the restart, {} missed",
        first.len(),
        first.iter().filter(|id| entry(&st, id)["verified"] == true).count(),
        first
            .iter()
            .filter(|id| entry(&st, id)["state"] == "inspected" && entry(&st, id)["verified"] != true)
            .count(),
        first.iter().filter(|id| entry(&st, id)["state"] == "missed").count()
    ));
    the_end(T, &mut cx, w, t0, String::new(), bad);
    drop(cx);
    drop(d);
}

/// `systemd-analyze verify` of the two units in deploy/systemd, as shipped:
/// the system unit in a mount namespace of its own where /usr/local/bin is
/// a tmpfs holding the built selfprobe-host (the machine's own is never
/// touched), the user unit with HOME and XDG_RUNTIME_DIR in a temp
/// directory holding it in ~/.local/bin. Any word from systemd-analyze (an
/// unknown key, a bad value) fails, not only its exit code: a unit with a
/// bogus key must be caught the same way (the check can fail).
#[test]
fn systemd_units_verify() {
    const T: &str = "systemd_units_verify";
    let missing = ["systemd-analyze", "unshare"].into_iter().find(|c| {
        !std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(c).is_file()))
    });
    if let Some(c) = missing {
        podman::skip_or_fail(
            T,
            &format!("no {c} on PATH; apt-get install -y systemd util-linux"),
        );
        return;
    }
    if !podman::is_root() {
        podman::skip_or_fail(T, "not root (a mount namespace of its own needs root)");
        return;
    }
    let units = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/systemd");
    let host = shipped::host_bin();
    let tmp = TempPath::dir("units").unwrap();
    let verify_system = |unit: &Path| {
        let script = "mount -t tmpfs selfprobe-test /usr/local/bin && cp \"$1\" /usr/local/bin/selfprobe-host && exec systemd-analyze verify \"$2\"";
        let o = Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
                "sh",
            ])
            .arg(host)
            .arg(unit)
            .output()
            .unwrap();
        (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    let home = tmp.path.join("home");
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::fs::copy(host, home.join(".local/bin/selfprobe-host")).unwrap();
    let verify_user = |unit: &Path| {
        let o = Command::new("systemd-analyze")
            .args(["--user", "verify"])
            .arg(unit)
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &tmp.path)
            .output()
            .unwrap();
        (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    };
    let system = units.join("selfprobe-watch.service");
    let user = units.join("selfprobe-watch-user.service");
    for (what, (code, said)) in [
        ("system unit", verify_system(&system)),
        ("user unit", verify_user(&user)),
    ] {
        assert!(
            code == Some(0) && said.trim().is_empty(),
            "{what}: systemd-analyze verify exited {code:?}:\n{said}"
        );
    }
    // The control: a bogus key in a copy of each is reported.
    for (unit, user_unit) in [(&system, false), (&user, true)] {
        let text = std::fs::read_to_string(unit).unwrap();
        let bad = tmp.path.join(unit.file_name().unwrap());
        std::fs::write(&bad, text.replace("[Service]\n", "[Service]\nBogusKey=1\n")).unwrap();
        let (_, said) = if user_unit {
            verify_user(&bad)
        } else {
            verify_system(&bad)
        };
        assert!(
            said.contains("BogusKey"),
            "a bogus key went unreported:\n{said}"
        );
    }
}

/// Usage errors before any engine is asked: each exits 2 with what was
/// wrong; an engine CLI that is not on PATH exits 3; nothing is written
/// where the watch refused to work.
#[test]
fn watch_refuses_what_it_cannot_use() {
    let host = shipped::host_bin();
    let tmp = TempPath::dir("watchuse").unwrap();
    let run = |args: &[&str], path: Option<&str>| {
        let mut c = Command::new(host);
        c.arg("watch").args(args);
        if let Some(p) = path {
            c.env("PATH", p);
        }
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let out = |n: &str| tmp.path.join(n).display().to_string();
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (
            vec![
                "--out-dir".into(),
                out("a"),
                "--filter".into(),
                "name=x".into(),
            ],
            2,
            "expected label=KEY or label=KEY=VALUE",
        ),
        (
            vec!["--out-dir".into(), out("a"), "--jobs".into(), "0".into()],
            2,
            "expected 1 to 16",
        ),
        (
            vec!["--out-dir".into(), out("a"), "--keep".into(), "0".into()],
            2,
            "--keep 0",
        ),
        (
            vec![
                "--out-dir".into(),
                out("a"),
                "--workspace".into(),
                "rel".into(),
            ],
            2,
            "is relative",
        ),
        (vec![], 2, "--out-dir"),
    ];
    for (args, code, said) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (c, err) = run(&args, None);
        assert!(
            c == Some(*code) && err.contains(said),
            "{args:?}: exit {c:?}, want {code} and {said:?}:\n{err}"
        );
    }
    assert!(
        !tmp.path.join("a").exists(),
        "a refused watch made its out-dir"
    );
    // A directory that holds something else is not taken over.
    let foreign = tmp.path.join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine\n").unwrap();
    let (c, err) = run(&["--out-dir", &out("foreign")], None);
    assert!(
        c == Some(2) && err.contains("holds files but no watch.json"),
        "{c:?} {err}"
    );
    let names: Vec<_> = std::fs::read_dir(&foreign)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names.iter().all(|n| n == "notes.txt" || n == "watch.lock"),
        "{names:?}"
    );
    // A watch.json that is not a watch's.
    let other = tmp.path.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("watch.json"), "{\"schema\": \"x\"}").unwrap();
    let (c, err) = run(&["--out-dir", &out("other")], None);
    assert!(
        c == Some(2) && err.contains("not a watch's state"),
        "{c:?} {err}"
    );
    // A key others can read.
    let loose = tmp.path.join("loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::write(
        loose.join("watch.json"),
        r#"{"schema": "https://selfprobe.dev/schema/watch/v1", "engine": "", "filters": [], "keyid": "", "binary_sha256": "", "cursor": null, "updated": "", "containers": {}}"#,
    )
    .unwrap();
    std::fs::write(loose.join("watch.key"), "x").unwrap();
    std::fs::set_permissions(
        loose.join("watch.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let (c, err) = run(&["--out-dir", &out("loose")], None);
    assert!(
        c == Some(2) && err.contains("readable by its owner only"),
        "{c:?} {err}"
    );
    // Another watch holds the out-dir.
    let held = tmp.path.join("held");
    std::fs::create_dir(&held).unwrap();
    let f = std::fs::File::create(held.join("watch.lock")).unwrap();
    let _lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap();
    let (c, err) = run(&["--out-dir", &out("held")], None);
    assert!(
        c == Some(2) && err.contains("another watch is using it"),
        "{c:?} {err}"
    );
    // No engine CLI at all: exit 3, with what to install.
    let (c, err) = run(
        &["--engine", "podman", "--out-dir", &out("noengine")],
        Some("/nonexistent"),
    );
    assert!(c == Some(3) && err.contains("not on PATH"), "{c:?} {err}");
    // The key was never shown.
    assert!(!err.contains("PRIVATE KEY"));
}

/// Retention on a real engine: with `--keep 2`, once four workspaces have
/// ended (inspected, removed, torn down), the records of the two that
/// ended first are gone (their inspection directories and state entries),
/// the two newest are kept, and a container still running keeps its record
/// whatever the count.
#[test]
fn watch_keeps_only_the_newest_ended_records() {
    const T: &str = "watch_keeps_only_the_newest_ended_records";
    let Some(img) = docker_image(T) else {
        return;
    };
    let t = Target::docker(img);
    let work = TempPath::dir("watchkeep").unwrap();
    let mut cx = context(
        &t,
        shipped::host_bin().to_path_buf(),
        &work.path,
        work.path.join("out"),
    );
    let mut w = cx.watch_with(&["--keep", "2"]);
    let ids = cx.burst("wr", 5, 0);
    w.wait_for("five inspected", Duration::from_secs(120), |st| {
        ids.iter().all(|id| entry(st, id)["state"] == "inspected")
    });
    // Ended one after the other, so "oldest" means something.
    for id in &ids[..4] {
        cx.remove(std::slice::from_ref(id));
        w.wait_for("its teardown", Duration::from_secs(60), |st| {
            entry(st, id).is_null() || !entry(st, id)["teardown"].is_null()
        });
    }
    let st = w.wait_for("two ended records left", Duration::from_secs(60), |st| {
        ids[..4]
            .iter()
            .filter(|id| !entry(st, id).is_null())
            .count()
            == 2
    });
    let kept: Vec<&String> = ids[..4]
        .iter()
        .filter(|id| !entry(&st, id).is_null())
        .collect();
    assert_eq!(kept, vec![&ids[2], &ids[3]], "the newest two stay");
    assert_eq!(
        entry(&st, &ids[4])["state"],
        "inspected",
        "the live one stays"
    );
    let dirs = cx.dirs();
    let mut on_disk: Vec<&String> = dirs.iter().map(|(_, id)| id).collect();
    on_disk.sort();
    let mut want = vec![&ids[2], &ids[3], &ids[4]];
    want.sort();
    assert_eq!(
        on_disk, want,
        "the inspection directories of the kept records only"
    );
    w.signal(Signal::SIGTERM);
    assert_eq!(w.wait_exit(Duration::from_secs(90)), 0);
}
