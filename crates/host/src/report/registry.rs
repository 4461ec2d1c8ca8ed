//! Printing for `selfprobe-host attest push` and `attest fetch`. What the
//! registry sent (digests aside, which were checked) is untrusted text on
//! its way to a terminal: it goes through `sanitize`. No credential reaches
//! these structures, so none can be printed.

use std::fmt::Write;

use crate::registry::{FetchOutcome, PushOutcome};
use selfprobe::report::text::sanitize;

pub fn push(p: &PushOutcome) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "selfprobe-host attest push: {}",
        sanitize(&p.reference.to_string())
    );
    let _ = writeln!(
        o,
        "  subject    {}, {} bytes",
        sanitize(p.subject["mediaType"].as_str().unwrap_or("?")),
        p.subject["size"]
    );
    for e in &p.pushed {
        let _ = writeln!(
            o,
            "  attached   {}  {} ({}, {} bytes{}, predicate {})",
            sanitize(&e.manifest_digest),
            sanitize(&e.file),
            sanitize(&e.blob_digest),
            e.size,
            if e.uploaded {
                ""
            } else {
                ", already in the registry"
            },
            sanitize(&e.predicate_type)
        );
        if !e.names_image {
            let _ = writeln!(
                o,
                "             note: its statement does not name this image's digest among its subjects"
            );
        }
    }
    let _ = writeln!(o, "  referrers  {}", sanitize(&p.referrers));
    let _ = writeln!(o, "  transport  {}", sanitize(&p.session.transport));
    let _ = writeln!(o, "  auth       {}", sanitize(&p.session.auth));
    o
}

pub fn fetch(f: &FetchOutcome) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "selfprobe-host attest fetch: {}",
        sanitize(&f.reference.to_string())
    );
    let _ = writeln!(o, "  referrers  {}", sanitize(&f.via));
    let _ = writeln!(o, "  transport  {}", sanitize(&f.session.transport));
    let _ = writeln!(o, "  auth       {}", sanitize(&f.session.auth));
    for e in &f.fetched {
        let status = if !e.problems.is_empty() {
            "INVALID"
        } else {
            match &e.verdict {
                Some(v) if v.valid() => "VALID",
                Some(_) => "INVALID",
                None => "NOT VERIFIED",
            }
        };
        let _ = writeln!(
            o,
            "\n{status}  {}  envelope {}, {} bytes, predicate {}",
            sanitize(&e.manifest_digest),
            if e.blob_digest.is_empty() {
                "-".to_string()
            } else {
                sanitize(&e.blob_digest)
            },
            e.size,
            sanitize(e.predicate_type.as_deref().unwrap_or("-"))
        );
        for p in &e.problems {
            let _ = writeln!(o, "  - {}", sanitize(p));
        }
        if let Some(path) = &e.file {
            let _ = writeln!(o, "  written to {}", sanitize(&path.display().to_string()));
        }
        if let Some(why) = &e.not_written {
            let _ = writeln!(o, "  {}", sanitize(why));
        }
        if let Some(v) = &e.verdict {
            for line in selfprobe::report::verify::render(v).lines() {
                let _ = writeln!(o, "  | {line}");
            }
        }
    }
    for (d, t) in &f.others {
        let _ = writeln!(
            o,
            "\nother      {}  artifactType {}: not a DSSE envelope, left alone",
            sanitize(d),
            sanitize(if t.is_empty() { "(none)" } else { t })
        );
    }
    let n = f.fetched.len();
    let good = f.fetched.iter().filter(|e| e.valid()).count();
    let _ = writeln!(o);
    if n == 0 {
        let _ = writeln!(
            o,
            "No DSSE envelope is attached to this image (artifactType application/vnd.dsse.envelope.v1+json)."
        );
    } else if f.verified {
        let _ = writeln!(o, "{n} attestation(s), {good} verified.");
    } else {
        let _ = writeln!(
            o,
            "{n} attestation(s), none verified: pass --pubkey FILE to verify them."
        );
    }
    o
}
