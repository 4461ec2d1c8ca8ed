//! The text of `selfprobe-host inspect` (a fleet table, then what needs saying
//! per container) and of `selfprobe-host teardown`. Names, images, reasons and
//! paths come from the engine or a container: every one goes through
//! `sanitize` before it reaches a terminal.

use std::fmt::Write;

use crate::outside::crosscheck::Verdict;
use crate::outside::inspect::{ContainerResult, Inspection, DOES_NOT_PROVE, PROVES};
use crate::outside::teardown::Teardown;
use selfprobe::report::text::sanitize;

/// The widest a table cell or a reason line gets: a report, a name or an
/// engine's answer can be megabytes, and one long cell would pad every row.
const CELL: usize = 40;
const LINE: usize = 1000;

fn cut(s: &str, n: usize) -> String {
    let s = sanitize(s);
    if s.chars().count() <= n {
        s
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn row(c: &ContainerResult, engine: &str) -> [String; 9] {
    let g = c.glance.as_ref();
    let rt = c
        .record
        .as_ref()
        .map(|r| r.runtime.clone())
        .unwrap_or_default();
    [
        cut(&c.name, 28),
        cut(&c.image, 32),
        g.map_or("-".into(), |g| cut(&g.boundary, CELL)),
        cut(
            &format!("{engine}/{}", if rt.is_empty() { "?" } else { &rt }),
            CELL,
        ),
        g.and_then(|g| Some(format!("{}/{}", g.score?, g.max?)))
            .unwrap_or_else(|| "-".into()),
        g.and_then(|g| g.worst)
            .map_or("-".into(), |s| s.as_str().to_string()),
        if c.glance.is_some() {
            c.disagreements.len().to_string()
        } else {
            "-".into()
        },
        if c.verified { "yes" } else { "no" }.into(),
        c.exit.to_string(),
    ]
}

pub fn render(insp: &Inspection) -> String {
    let mut o = String::new();
    let n = insp.containers.len();
    let _ = writeln!(
        o,
        "selfprobe-host inspect: {n} container{} on {} {} (inspection {})",
        if n == 1 { "" } else { "s" },
        insp.engine.name,
        cut(&insp.engine.version, 80),
        insp.id
    );
    // Which probe ran: the file the operator can hash and compare.
    let _ = writeln!(
        o,
        "probe: {} (sha256 {})",
        sanitize(&insp.binary.path),
        insp.binary.sha256
    );
    let head = [
        "NAME",
        "IMAGE",
        "BOUNDARY",
        "ENGINE/RUNTIME",
        "SCORE",
        "WORST",
        "DISAGREE",
        "VERIFIED",
        "EXIT",
    ]
    .map(String::from);
    let rows: Vec<[String; 9]> = insp
        .containers
        .iter()
        .map(|c| row(c, insp.engine.name))
        .collect();
    let mut width = [0usize; 9];
    for r in std::iter::once(&head).chain(&rows) {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in std::iter::once(&head).chain(&rows) {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = width[i] - cell.chars().count();
            line.push_str(cell);
            if i + 1 < r.len() {
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
    for c in &insp.containers {
        let name = cut(&c.name, 200);
        if let Some(why) = &c.not_probed {
            let _ = writeln!(o, "\n{name}: not probed: {}", cut(why, LINE));
        }
        if let Some(i) = &c.instruction {
            for l in i.lines().take(100) {
                let _ = writeln!(o, "  {}", cut(l, LINE));
            }
        }
        if c.not_probed.is_none() && !c.verified {
            let _ = writeln!(o, "\n{name}: NOT VERIFIED");
        }
        for v in &c.verification {
            let _ = writeln!(o, "  - {}", cut(v, LINE));
        }
        if !c.disagreements.is_empty() {
            let _ = writeln!(
                o,
                "\n{name}: {} disagreement(s) between the engine's record and the report:",
                c.disagreements.len()
            );
            for f in c
                .findings
                .iter()
                .filter(|f| f.code.starts_with("disagree."))
            {
                let _ = writeln!(
                    o,
                    "  {:<8} {} {}",
                    f.severity.as_str().to_uppercase(),
                    f.code,
                    cut(&f.message, LINE)
                );
            }
        }
        let unknown: Vec<String> = c
            .comparisons
            .iter()
            .filter(|x| x.verdict == Verdict::Unknown)
            .map(|x| {
                format!(
                    "{} ({})",
                    sanitize(&x.fact),
                    sanitize(x.note.as_deref().unwrap_or("no reason"))
                )
            })
            .collect();
        if !unknown.is_empty() {
            let _ = writeln!(
                o,
                "\n{name}: {} fact(s) unknown, with the report's reason:",
                unknown.len()
            );
            for u in &unknown {
                let _ = writeln!(o, "  - {u}");
            }
        }
        if let Some(p) = &c.placement {
            if let Some(why) = &p.bound_refused {
                let _ = writeln!(
                    o,
                    "\n{name}: the probe bind-mounted by its creator was not run ({}); the inspector's own was placed at {}",
                    sanitize(why),
                    sanitize(&p.path)
                );
            }
            if p.removed == Some(false) {
                let _ = writeln!(
                    o,
                    "\n{name}: the probe placed at {} may remain: {}",
                    cut(&p.path, LINE),
                    cut(p.removal.as_deref().unwrap_or("not removed"), LINE)
                );
            }
        }
    }
    let _ = writeln!(
        o,
        "\nReports, envelopes, nonces and inspection.json: {}",
        sanitize(&insp.out_dir)
    );
    if let Some(c) = insp.containers.iter().find(|c| c.envelope.is_some()) {
        let _ = writeln!(
            o,
            "  verify one again: selfprobe verify --pubkey {d}/signing.pub --nonce {} --binary-sha256 {} {d}/{}",
            c.nonce,
            c.placement.as_ref().map_or("", |p| p.sha256.as_str()),
            sanitize(c.envelope.as_deref().unwrap_or("")),
            d = sanitize(&insp.out_dir)
        );
    }
    let _ = writeln!(
        o,
        "Signing key {}{}.",
        insp.signing.keyid,
        if insp.signing.ephemeral {
            " (ephemeral: made for this inspection; its public half is signing.pub)"
        } else {
            ""
        }
    );
    let _ = writeln!(o, "What a verified report proves: {PROVES}");
    let _ = writeln!(o, "What it does not: {DOES_NOT_PROVE}");
    o
}

pub fn render_teardown(t: &Teardown) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "selfprobe-host teardown: inspection {} ({} container{})",
        cut(&t.inspection, 80),
        t.containers.len(),
        if t.containers.len() == 1 { "" } else { "s" }
    );
    for c in &t.containers {
        let _ = writeln!(
            o,
            "\n{}: {} (teardown score {}{})",
            cut(&c.name, 200),
            c.result,
            c.control.score,
            if c.control.status == "assessed" {
                ""
            } else {
                ", not assessed"
            }
        );
        let _ = writeln!(
            o,
            "  container  {}",
            match c.exists {
                Some(true) => "still exists",
                Some(false) => "gone",
                None => "unknown",
            }
        );
        for v in &c.volumes {
            let state = match v.remains {
                Some(false) => "gone".to_string(),
                Some(true) => match &v.retained {
                    Some(r) => format!(
                        "remains, retained by {} until {}",
                        cut(&r.owner, 200),
                        cut(&r.expires, 40)
                    ),
                    None => "remains, unowned".to_string(),
                },
                None => "unknown".to_string(),
            };
            let _ = writeln!(
                o,
                "  volume     {} ({}): {state}",
                cut(&v.name, 200),
                if v.anonymous { "anonymous" } else { "named" }
            );
        }
        for k in &c.canaries {
            let _ = writeln!(
                o,
                "  canary     {} in {}: {}",
                cut(&k.run, 80),
                cut(k.volume.as_deref().unwrap_or("-"), 200),
                match k.found {
                    Some(true) => "found",
                    Some(false) => "not found",
                    None => "not looked for",
                }
            );
        }
        for f in &c.findings {
            let _ = writeln!(
                o,
                "  {:<8} {} {}",
                f.severity.as_str().to_uppercase(),
                f.code,
                cut(&f.message, LINE)
            );
        }
        let _ = writeln!(o, "  reason     {}", cut(&c.control.reason, LINE));
        if let Some(s) = &c.statement {
            let _ = writeln!(o, "  statement  {}", cut(s, LINE));
        }
    }
    let _ = writeln!(
        o,
        "\nSigned with keyid {}{}.",
        t.keyid,
        if t.ephemeral {
            " (ephemeral: its public half is teardown.pub)"
        } else {
            ""
        }
    );
    o
}
