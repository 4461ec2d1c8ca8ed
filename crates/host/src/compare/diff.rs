//! `selfprobe-host diff A B`: the facts of two reports side by side, each
//! `same`, `differs`, `only in A`, `only in B` or `unknown` (a side could not
//! check it: never `same`). A difference the policy's `[parity] allow`
//! does not cover is exit 1; an unknown fact is listed, and does not gate:
//! it is not a difference that was seen. Pure: facts in, a Diff out; the
//! renderers return text.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::facts::{obs_json, shown, Axis, FactSet, Obs, ROOTS};
use selfprobe::util::glob::matches_component;
use selfprobe::util::sanitize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Same,
    Differs,
    OnlyA,
    OnlyB,
    Unknown,
}

impl State {
    /// The names the JSON output and the documentation use.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Same => "same",
            State::Differs => "differs",
            State::OnlyA => "only in A",
            State::OnlyB => "only in B",
            State::Unknown => "unknown",
        }
    }

    pub fn is_difference(self) -> bool {
        matches!(self, State::Differs | State::OnlyA | State::OnlyB)
    }
}

#[derive(Debug)]
pub struct Compared {
    pub key: String,
    pub axis: Axis,
    pub state: State,
    pub a: Option<Obs>,
    pub b: Option<Obs>,
    /// The `[parity] allow` pattern that covers this difference.
    pub allowed_by: Option<String>,
    /// Why it is unknown, when it is.
    pub why: Option<String>,
}

/// One input, as the output names it.
#[derive(Debug, Clone)]
pub struct Side {
    pub path: String,
    pub run_id: Option<String>,
    /// "container docker runc/crun" …
    pub boundary: Option<String>,
    /// The envelope verified against --pubkey (keyid), or None: a report
    /// taken as it is.
    pub verified_by: Option<String>,
}

pub struct Diff {
    pub a: Side,
    pub b: Side,
    pub facts: Vec<Compared>,
    pub allow: Vec<String>,
}

impl Diff {
    /// Differences no `[parity] allow` pattern covers.
    pub fn gating(&self) -> usize {
        self.facts
            .iter()
            .filter(|f| f.state.is_difference() && f.allowed_by.is_none())
            .count()
    }
}

/// A `[parity] allow` pattern that names no key: its first segment is not
/// a key's (a typo would otherwise allow nothing, silently). The message
/// says what was expected.
pub fn check_pattern(p: &str) -> Result<(), NamesNoFact> {
    let root = p.split('.').next().unwrap_or("");
    let ok = ROOTS.iter().any(|(r, _)| matches_component(root, r));
    if p.is_empty() || !ok {
        return Err(NamesNoFact(p.to_string()));
    }
    Ok(())
}

/// A `[parity] allow` pattern (the field) whose first segment is no key's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "parity.allow {0:?} names no fact: expected a key or glob starting with one of {roots} (docs/parity.md lists the keys)",
    roots = ROOTS.iter().map(|(r, _)| *r).collect::<Vec<&str>>().join(", ")
)]
pub struct NamesNoFact(pub String);

pub fn compare(a: &FactSet, b: &FactSet, allow: &[String], sa: Side, sb: Side) -> Diff {
    let keys: BTreeSet<&String> = a.facts.keys().chain(b.facts.keys()).collect();
    let mut facts = Vec::with_capacity(keys.len());
    for key in keys {
        let (oa, ob) = (a.facts.get(key), b.facts.get(key));
        let (state, why) = match (oa, ob) {
            (Some(Obs::Unknown(w)), _) => (State::Unknown, Some(format!("A: {w}"))),
            (_, Some(Obs::Unknown(w))) => (State::Unknown, Some(format!("B: {w}"))),
            (Some(Obs::Value(x)), Some(Obs::Value(y))) if x == y => (State::Same, None),
            (Some(Obs::Value(_)), Some(Obs::Value(_))) => (State::Differs, None),
            (Some(_), None) => match b.partial_for(key) {
                Some(w) => (State::Unknown, Some(format!("B: {w}"))),
                None => (State::OnlyA, None),
            },
            (None, Some(_)) => match a.partial_for(key) {
                Some(w) => (State::Unknown, Some(format!("A: {w}"))),
                None => (State::OnlyB, None),
            },
            (None, None) => continue,
        };
        let allowed_by = state
            .is_difference()
            .then(|| allow.iter().find(|p| matches_component(p, key)).cloned())
            .flatten();
        facts.push(Compared {
            key: key.clone(),
            axis: Axis::of(key).unwrap_or(Axis::Orchestration),
            state,
            a: oa.cloned(),
            b: ob.cloned(),
            allowed_by,
            why,
        });
    }
    selfprobe::util::sort::sort_by(&mut facts, |x, y| {
        x.axis.cmp(&y.axis).then(x.key.cmp(&y.key))
    });
    Diff {
        a: sa,
        b: sb,
        facts,
        allow: allow.to_vec(),
    }
}

fn side_value(o: &Option<Obs>) -> String {
    match o {
        Some(Obs::Value(v)) => shown(v),
        Some(Obs::Unknown(_)) => "unknown".into(),
        None => "(absent)".into(),
    }
}

fn side_line(label: &str, s: &Side) -> String {
    let mut out = format!("{label} = {}", sanitize::escape(&s.path));
    let mut about = Vec::new();
    if let Some(r) = &s.run_id {
        about.push(format!("run {}", sanitize::escape(r)));
    }
    if let Some(b) = &s.boundary {
        about.push(sanitize::escape(b));
    }
    about.push(match &s.verified_by {
        Some(k) => format!("verified, keyid {k}"),
        None => "not verified".into(),
    });
    out.push_str(&format!(" ({})", about.join(", ")));
    out
}

/// Differences grouped by axis, then one count line per axis.
pub fn text(d: &Diff) -> String {
    let mut out = format!(
        "selfprobe-host diff\n  {}\n  {}\n",
        side_line("A", &d.a),
        side_line("B", &d.b)
    );
    let width = d
        .facts
        .iter()
        .filter(|f| f.state.is_difference())
        .map(|f| f.key.chars().count())
        .max()
        .unwrap_or(0)
        .min(48);
    for axis in Axis::ALL {
        let mine: Vec<&Compared> = d.facts.iter().filter(|f| f.axis == axis).collect();
        let diffs: Vec<&&Compared> = mine.iter().filter(|f| f.state.is_difference()).collect();
        let unknown: Vec<&&Compared> = mine.iter().filter(|f| f.state == State::Unknown).collect();
        if diffs.is_empty() && unknown.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{}\n", axis.as_str()));
        for f in &diffs {
            let key = sanitize::escape(&f.key);
            let what = match f.state {
                State::Differs => format!(
                    "{} | {}",
                    sanitize::escape(&side_value(&f.a)),
                    sanitize::escape(&side_value(&f.b))
                ),
                State::OnlyA => sanitize::escape(&side_value(&f.a)),
                _ => sanitize::escape(&side_value(&f.b)),
            };
            let allowed = match &f.allowed_by {
                Some(p) => format!("  (allowed: {})", sanitize::escape(p)),
                None => String::new(),
            };
            out.push_str(&format!(
                "  {:<9}  {key:<width$}  {what}{allowed}\n",
                f.state.as_str()
            ));
        }
        if !unknown.is_empty() {
            let keys: Vec<String> = unknown.iter().map(|f| sanitize::escape(&f.key)).collect();
            out.push_str(&format!(
                "  unknown    {} (a side could not check it; --format json says why)\n",
                keys.join(", ")
            ));
        }
    }
    out.push_str("\ncounts\n");
    for axis in Axis::ALL {
        let n = |st: State| {
            d.facts
                .iter()
                .filter(|f| f.axis == axis && f.state == st)
                .count()
        };
        out.push_str(&format!(
            "  {:<14} {} differ, {} only in A, {} only in B, {} same, {} unknown\n",
            axis.as_str(),
            n(State::Differs),
            n(State::OnlyA),
            n(State::OnlyB),
            n(State::Same),
            n(State::Unknown),
        ));
    }
    let total = d.facts.iter().filter(|f| f.state.is_difference()).count();
    let gating = d.gating();
    out.push_str(&match (total, gating) {
        (0, _) => "\nno differences\n".to_string(),
        (t, 0) => format!("\n{t} difference(s), every one allowed by [parity] allow\n"),
        (t, g) => format!("\n{t} difference(s), {g} not allowed by [parity] allow (exit 1)\n"),
    });
    out
}

/// Every fact, compared.
pub fn json(d: &Diff) -> String {
    let side = |s: &Side| {
        json!({
            "path": s.path,
            "run_id": s.run_id,
            "boundary": s.boundary,
            "verified": s.verified_by.is_some(),
            "keyid": s.verified_by,
        })
    };
    let facts: Vec<Value> = d
        .facts
        .iter()
        .map(|f| {
            let mut v = json!({
                "key": f.key,
                "axis": f.axis,
                "state": f.state.as_str(),
                "a": obs_json(f.a.as_ref()),
                "b": obs_json(f.b.as_ref()),
            });
            if let Some(p) = &f.allowed_by {
                v["allowed_by"] = json!(p);
            }
            if let Some(w) = &f.why {
                v["why"] = json!(w);
            }
            v
        })
        .collect();
    let mut counts = serde_json::Map::new();
    for axis in Axis::ALL {
        let mut c = serde_json::Map::new();
        for st in [
            State::Same,
            State::Differs,
            State::OnlyA,
            State::OnlyB,
            State::Unknown,
        ] {
            let n = d
                .facts
                .iter()
                .filter(|f| f.axis == axis && f.state == st)
                .count();
            c.insert(st.as_str().into(), json!(n));
        }
        counts.insert(axis.as_str().into(), Value::Object(c));
    }
    let doc = json!({
        "schema": "https://selfprobe.dev/schema/diff/v1",
        "a": side(&d.a),
        "b": side(&d.b),
        "allow": d.allow,
        "differences": d.facts.iter().filter(|f| f.state.is_difference()).count(),
        "not_allowed": d.gating(),
        "counts": counts,
        "facts": facts,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::facts::extract;

    fn side(p: &str) -> Side {
        Side {
            path: p.into(),
            run_id: None,
            boundary: None,
            verified_by: None,
        }
    }

    fn report(runtime: &str, caps: u64, with_release: bool) -> Value {
        let mut platform =
            json!({"machine": "x86_64", "page_size": 4096, "cpus": 2, "cgroup": "v2"});
        if with_release {
            platform["kernel_release"] = json!("6.1.0");
        }
        json!({
            "schema": "https://selfprobe.dev/schema/report/v1",
            "probes": [{"name": "boundary", "status": "ok"}, {"name": "privilege", "status": "ok"}],
            "inventory": {
                "boundary": {"kind": "container", "engine": "docker", "runtime": runtime,
                             "rootless": false, "virtualized": "kvm", "platform": platform},
                "privilege": {"uid": [0,0,0,0], "gid": [0,0,0,0], "caps": {"effective": caps},
                              "caps_named_to": 40, "seccomp": 2, "lsm_label": null, "incomplete": []},
            }
        })
    }

    #[test]
    fn same_differs_only_and_unknown() {
        let a = extract(&report("runc/crun", 0b11, true));
        let b = extract(&report("runsc", 0b01, false));
        let d = compare(&a, &b, &[], side("a"), side("b"));
        let st = |k: &str| d.facts.iter().find(|f| f.key == k).map(|f| f.state);
        assert_eq!(st("boundary.runtime"), Some(State::Differs));
        assert_eq!(st("boundary.engine"), Some(State::Same));
        assert_eq!(st("capabilities.CAP_DAC_OVERRIDE"), Some(State::OnlyA));
        assert_eq!(st("capabilities.CAP_CHOWN"), Some(State::Same));
        assert_eq!(
            st("kernel.release"),
            Some(State::Unknown),
            "B lacks it: never same"
        );
        // A section neither report has is unknown on both sides, not same.
        assert_eq!(st("storage.root.read_only"), Some(State::Unknown));
        assert_eq!(d.gating(), 2);
        let allowed = compare(
            &a,
            &b,
            &["boundary.runtime".into(), "capabilities.*".into()],
            side("a"),
            side("b"),
        );
        assert_eq!(allowed.gating(), 0);
        let t = text(&allowed);
        assert!(t.contains("allowed: capabilities.*"), "{t}");
    }

    #[test]
    fn a_report_against_itself_is_empty() {
        let r = report("runc/crun", 0b11, true);
        let d = compare(&extract(&r), &extract(&r), &[], side("a"), side("a"));
        assert_eq!(d.gating(), 0);
        assert!(!d.facts.iter().any(|f| f.state.is_difference()));
        assert!(text(&d).contains("no differences"));
    }

    #[test]
    fn patterns_must_name_a_key() {
        assert!(check_pattern("kernel.release").is_ok());
        assert!(check_pattern("capabilities.*").is_ok());
        assert!(check_pattern("*").is_ok());
        assert!(check_pattern("cap*").is_ok());
        let e = check_pattern("kernal.release").unwrap_err().to_string();
        assert!(e.contains("names no fact"), "{e}");
        assert!(check_pattern("").is_err());
    }
}
