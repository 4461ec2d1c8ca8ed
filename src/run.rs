//! One run of selfprobe: from a resolved Config to the finished Report.

use std::sync::Arc;
use std::time::SystemTime;

use crate::cli::Config;
use crate::evaluate;
use crate::host::{self, Cleanup, Host};
use crate::model::{self, Report, RunInfo, ToolInfo};
use crate::probe::{self, Context};
use crate::scorecard;

pub fn execute(cfg: Config, cleanup: Arc<Cleanup>) -> Report {
    let run_id = host::run_id();
    let host = Host::new(cfg.root.clone(), cfg.timeout);
    let started = host.started();
    // Hashing the binary (3.8 MB, a fifth of a run's CPU) beside the
    // probes rather than after them; where no thread can be had (a pids
    // limit), after them as before.
    let own_sha = std::thread::Builder::new()
        .name("self-sha256".into())
        .spawn(host::self_sha256)
        .ok();
    let ctx = Arc::new(Context {
        host,
        policy: cfg.policy.clone(),
        workspace: cfg.workspace.clone(),
        run_id: run_id.clone(),
        write_test: cfg.write_test,
        cleanup: cleanup.clone(),
        net: cfg.net.clone(),
    });
    let mut collected = probe::gather(ctx.clone());
    let findings = evaluate::evaluate(
        &collected,
        &cfg.policy,
        &evaluate::Run {
            run_id: &run_id,
            started,
        },
    );
    // Whatever a timed-out write test left registered goes now, before the
    // report is written.
    cleanup.remove_all();

    let now = SystemTime::now();
    let mut findings = findings;
    let raised = cfg.policy.apply(&mut findings, host::today(now));
    findings.extend(raised);
    model::sort_findings(&mut findings);
    let observed = scorecard::Observed::new(&collected.facts, &cfg.policy);
    let sc = scorecard::score_observed(&findings, &collected.records, &observed);
    // A run cut short by --timeout has not checked everything: like a crashed
    // probe, that is exit 3, whatever was found before the cut.
    let summary = model::summarize(
        &findings,
        cfg.fail_on,
        collected.panicked || !collected.cut_by_deadline.is_empty(),
    );
    crate::util::sort::sort_by_key(&mut collected.records, |r| (r.phase, r.name.clone()));

    Report {
        schema: model::SCHEMA.into(),
        schema_version: model::SCHEMA_VERSION,
        tool: ToolInfo {
            name: "selfprobe".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            sha256: match own_sha {
                Some(h) => h.join().ok().flatten(),
                None => host::self_sha256(),
            },
        },
        run: RunInfo {
            id: run_id,
            started: host::rfc3339(started),
            finished: host::rfc3339(now),
            duration_ms: ctx.host.elapsed().as_millis(),
            duration_us: ctx.host.elapsed().as_micros(),
            root: cfg.root.to_string_lossy().into_owned(),
            workspace: cfg
                .workspace
                .as_ref()
                .map(|w| w.0.to_string_lossy().into_owned()),
            workspace_source: cfg.workspace.as_ref().map(|w| w.1.clone()),
            policy: cfg
                .policy
                .source
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            policy_sha256: cfg.policy.sha256.clone(),
            fail_on: cfg.fail_on,
            timeout_ms: cfg.timeout.as_millis(),
            unfinished: collected.cut_by_deadline,
            write_test: cfg.write_test,
            nonce: cfg.nonce.clone(),
        },
        summary,
        scorecard: sc,
        findings,
        inventory: collected.facts,
        probes: collected.records,
        signing: None,
    }
}

/// `selfprobe canary plant`: find the persistent locations the same way a
/// run does, then plant. Fails (exit 3) only when the mounts cannot be read.
pub fn plant(
    cfg: Config,
    cleanup: Arc<Cleanup>,
    signer: &crate::keys::Signer,
) -> Result<crate::probe::teardown::PlantReport, crate::facts::unchecked::Unchecked> {
    let run_id = host::run_id();
    let host = Host::new(cfg.root.clone(), cfg.timeout);
    let mut mounts = crate::facts::mounts::collect(&host, cfg.workspace.clone(), host.deadline())?;
    crate::facts::mounts::apply_policy(&mut mounts, &cfg.policy);
    let opts = crate::probe::teardown::PlantOptions {
        only_in: cfg.only_in.clone(),
        nonce: cfg.nonce.clone(),
    };
    let rep = crate::probe::teardown::plant(&host, &mounts, &run_id, &cleanup, signer, &opts);
    // A canary still being written when the deadline passed goes now.
    cleanup.remove_all();
    Ok(rep)
}
