//! What `selfprobe canary plant` did, as text or JSON.

use std::fmt::Write;

use super::text::sanitize;
use crate::probe::teardown::PlantReport;

pub fn text(r: &PlantReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "selfprobe canary plant: run {} at {}",
        r.run_id, r.planted_at
    );
    for p in &r.planted {
        match (&p.path, &p.error) {
            (Some(path), _) => {
                let _ = writeln!(o, "  planted  {}", sanitize(path));
            }
            (None, e) => {
                let _ = writeln!(
                    o,
                    "  failed   {}: {}",
                    sanitize(&p.location),
                    sanitize(e.as_deref().unwrap_or("?"))
                );
            }
        }
    }
    for s in &r.skipped {
        let _ = writeln!(
            o,
            "  skipped  {}: {}",
            sanitize(&s.location),
            sanitize(s.error.as_deref().unwrap_or(""))
        );
    }
    if r.planted.is_empty() {
        let _ = writeln!(o, "  no writable persistent location: nothing planted");
    }
    if r.incomplete {
        let _ = writeln!(
            o,
            "  incomplete: a location could not be tried (see skipped); a later run cannot vouch for it"
        );
    }
    o
}

pub fn json(r: &PlantReport) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_default();
    s.push('\n');
    s
}
