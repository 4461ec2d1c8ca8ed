//! Phase 6: what would survive teardown. `selfprobe canary plant` leaves a
//! clearly named canary in each writable persistent location; a later run in
//! a fresh workspace that finds one has proof that state leaked across runs.

use crate::finding::Code;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use crate::facts::mounts::{MountClass, MountEntry, MountFacts};
use crate::facts::unchecked::Unchecked;
use crate::finding::Finding;
use crate::host::{read_regular, rfc3339, Cleanup, Host};
use crate::keys::{self, Signer};

pub const CANARY_PREFIX: &str = ".selfprobe-canary-";
/// A canary is a few hundred bytes; anything larger is not ours.
const MAX_CANARY: u64 = 64 * 1024;
/// Entries read per location when looking for canaries: they sit at the
/// top, and a name is only compared, so a large top level costs little;
/// past this the location is reported as not fully searched.
const MAX_ENTRIES: usize = 1_000_000;
/// Threads writing canaries at once.
const PLANT_WRITERS: usize = 4;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Canary {
    pub selfprobe_canary: u32,
    pub run_id: String,
    pub planted_at: String,
    /// The mount point it was planted in, as the planting run saw it.
    pub location: String,
    pub host_path: String,
    pub class: String,
    pub tool_version: String,
    /// The verifier's challenge (`--nonce`), when the plant was given one:
    /// `selfprobe-host teardown` matches a canary to the inspection that planted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    /// Ed25519 over the canary's JSON without this field: a canary cannot be
    /// edited (say, to blame another run) without the signature failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<CanarySignature>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CanarySignature {
    pub keyid: String,
    /// `ssh-ed25519 AAAA…`
    pub public_key: String,
    pub ephemeral: bool,
    /// Base64 of the 64-byte signature.
    pub sig: String,
}

impl Canary {
    fn signed_bytes(&self) -> Vec<u8> {
        let mut unsigned = self.clone();
        unsigned.signature = None;
        serde_json::to_vec(&unsigned).unwrap_or_default()
    }

    fn sign(&mut self, signer: &Signer) {
        use base64ct::{Base64, Encoding};
        let sig = signer.sign(&self.signed_bytes());
        self.signature = Some(CanarySignature {
            keyid: signer.keyid(),
            public_key: keys::public_openssh(&signer.verifying_key()),
            ephemeral: signer.is_ephemeral(),
            sig: Base64::encode_string(&sig),
        });
    }

    /// "valid", "invalid" or "unsigned". Valid means unchanged since it was
    /// signed by the key it names; whether that key is trusted is the
    /// reader's call (the keyid is in the evidence).
    pub fn signature_state(&self) -> &'static str {
        let Some(s) = &self.signature else {
            return "unsigned";
        };
        let Ok(vk) = keys::parse_public_key(&s.public_key) else {
            return "invalid";
        };
        let Some(sig) = crate::util::codec::b64_decode(&s.sig) else {
            return "invalid";
        };
        let Ok(sig) = <[u8; 64]>::try_from(sig.as_slice()) else {
            return "invalid";
        };
        if keys::keyid(&vk) != s.keyid {
            return "invalid";
        }
        if vk.verify_strict(&self.signed_bytes(), &sig) {
            "valid"
        } else {
            "invalid"
        }
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Location {
    pub path: String,
    pub host_path: String,
    pub class: Text,
    pub writable: bool,
    pub allowed: bool,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Found {
    pub path: String,
    pub canary: Option<Canary>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TeardownFacts {
    /// Persistent locations: host paths and volumes, besides the workspace.
    pub persistent: Vec<Location>,
    pub canaries: Vec<Found>,
    /// Locations with more than MAX_ENTRIES entries: canaries beyond those
    /// were not looked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<String>,
}

fn class_name(e: &MountEntry) -> Option<&'static str> {
    match e.class {
        MountClass::HostBind => Some("host-bind"),
        MountClass::HostRoot => Some("host-root"),
        MountClass::Volume => Some("volume"),
        MountClass::HostTmpfs => Some("host-tmpfs"),
        _ => None,
    }
}

/// Directories whose contents outlive the container: host paths, the host's
/// /run and engine volumes. The workspace is left out, whatever backs it (a
/// host checkout or a volume): it is the task's deliverable, and a canary
/// there would show up in its diff. Engine files (hosts, kubelet's pod
/// files) go with the container; mounts inside a host surface (other
/// containers' roots below the host's /run) are not this run's to plant in.
pub fn persistent_locations(mounts: &MountFacts) -> Vec<Location> {
    mounts
        .mounts
        .iter()
        .filter(|e| e.reported())
        .filter_map(|e| {
            let class = class_name(e)?;
            (e.contents.file_type == "dir" || e.class == MountClass::Volume).then(|| Location {
                path: e.mount.mount_point.to_string_lossy().into_owned(),
                host_path: e.mount.root.to_string_lossy().into_owned(),
                class: class.into(),
                writable: e.contents.writable || (e.class == MountClass::Volume && !e.read_only),
                allowed: e.allowed,
            })
        })
        .collect()
}

pub fn collect(host: &Host, mounts: Option<&MountFacts>) -> Result<TeardownFacts, Unchecked> {
    let mounts = mounts.ok_or(Unchecked::Missing(
        "no mount list: persistent locations are unknown",
    ))?;
    let mut f = TeardownFacts {
        persistent: persistent_locations(mounts),
        canaries: Vec::new(),
        truncated: Vec::new(),
    };
    // Volumes' writability was not checked by the mount probe.
    for l in &mut f.persistent {
        l.writable = l.writable && host.access(&l.path, nix::unistd::AccessFlags::W_OK).is_ok();
    }
    let mut dirs: Vec<PathBuf> = f
        .persistent
        .iter()
        .map(|l| PathBuf::from(&l.path))
        .collect();
    // Homes on a persistent mount are where a plant in a later run would
    // land too; the workspace is scanned so a canary copied into it shows.
    for ws in mounts.workspace.iter() {
        dirs.push(ws.path.clone());
    }
    crate::util::sort::sort(&mut dirs);
    dirs.dedup();
    for d in dirs {
        search(host, &d, MAX_ENTRIES, &mut f);
    }
    Ok(f)
}

/// Canaries at the top of `d`, reading at most `max` entries.
fn search(host: &Host, d: &Path, max: usize, f: &mut TeardownFacts) {
    let Ok(rd) = std::fs::read_dir(host.path(d)) else {
        return;
    };
    for (i, e) in rd.flatten().enumerate() {
        if i == max {
            f.truncated.push(d.to_string_lossy().into_owned());
            break;
        }
        // Compared as bytes: no string is made for the names that are
        // not canaries, which is nearly all of them.
        let os = e.file_name();
        let b = os.as_encoded_bytes();
        if !b.starts_with(CANARY_PREFIX.as_bytes()) || !b.ends_with(b".json") {
            continue;
        }
        let name = os.to_string_lossy().into_owned();
        let path = d.join(&name);
        let found = match read_regular(&e.path(), MAX_CANARY) {
            Ok(bytes) => match serde_json::from_slice::<Canary>(&bytes) {
                Ok(c) => Found {
                    path: path.to_string_lossy().into_owned(),
                    canary: Some(c),
                    error: None,
                },
                Err(err) => Found {
                    path: path.to_string_lossy().into_owned(),
                    canary: None,
                    error: Some(format!("not a selfprobe canary: {err}")),
                },
            },
            Err(err) => Found {
                path: path.to_string_lossy().into_owned(),
                canary: None,
                error: Some(err.to_string()),
            },
        };
        f.canaries.push(found);
    }
}

/// A finding on a path, which its evidence names too.
fn at_path(code: Code, path: &str, msg: String) -> Finding {
    Finding::new(code, path, msg).with("path", path)
}

pub fn evaluate(f: &TeardownFacts, run_id: &str) -> Vec<Finding> {
    let mut out: Vec<Finding> = f
        .canaries
        .iter()
        .filter_map(|found| survived(found, run_id))
        .collect();
    for d in &f.truncated {
        out.push(
            Finding::new(
                Code::ProbeIncomplete,
                format!("teardown:{d}"),
                format!("{d} has more than {MAX_ENTRIES} entries at its top; canaries beyond those were not looked for"),
            )
            .unknown()
            .with("probe", "teardown")
            .with("phase", 6)
            .with("reason", format!("the budget of {MAX_ENTRIES} entries ran out")),
        );
    }
    for l in f.persistent.iter().filter(|l| l.writable && !l.allowed) {
        let what = format!("{} ({} {})", l.path, l.class, l.host_path);
        out.push(
            at_path(
                Code::TeardownPersistentWritable,
                &l.path,
                format!("{what} is writable and outlives the workspace"),
            )
            .with("host_path", l.host_path.clone())
            .with("class", l.class.clone()),
        );
    }
    out
}

/// teardown.canary-survived for a canary of another run, or for a file
/// named like one that could not be read as one; None for this run's own.
fn survived(found: &Found, run_id: &str) -> Option<Finding> {
    let code = Code::TeardownCanarySurvived;
    let Some(c) = &found.canary else {
        let msg = format!(
            "{} is named like a selfprobe canary but could not be read as one",
            found.path
        );
        return Some(at_path(code, &found.path, msg).with("error", found.error.clone()));
    };
    (c.run_id != run_id).then(|| {
        let msg = format!(
            "a canary planted by run {} at {} in {} is still here: state from that run survived its teardown",
            c.run_id, c.planted_at, c.location
        );
        at_path(code, &found.path, msg)
            .with("canary_run_id", c.run_id.clone())
            .with("planted_at", c.planted_at.clone())
            .with("planted_in", c.location.clone())
            .with("planted_host_path", c.host_path.clone())
            .with("signature", c.signature_state())
            .with("keyid", c.signature.as_ref().map(|s| s.keyid.clone()))
    })
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Planted {
    pub location: String,
    pub path: Option<String>,
    pub error: Option<String>,
}

/// What a plant is asked to do beyond its defaults.
#[derive(Debug, Clone, Default)]
pub struct PlantOptions {
    /// Plant only in these locations (`--only-in`); empty: in every one.
    pub only_in: Vec<PathBuf>,
    /// Recorded in each canary (`--nonce`).
    pub nonce: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PlantReport {
    pub run_id: String,
    /// The key the canaries are signed with.
    pub keyid: String,
    pub ephemeral_key: bool,
    pub planted_at: String,
    pub planted: Vec<Planted>,
    /// Persistent locations not planted in, and why.
    pub skipped: Vec<Planted>,
    /// Some location could not be tried: its mount did not answer, or the
    /// deadline passed first. A later run cannot vouch for those (exit 3).
    pub incomplete: bool,
}

/// One location to plant in, its canary already signed and serialized.
struct Job {
    location: String,
    rel: PathBuf,
    real: PathBuf,
    body: Vec<u8>,
}

enum Plant {
    Planted(Planted),
    Skipped(Planted),
}

/// Writes one canary into each writable persistent location, through
/// `cleanup` (so an interrupted plant leaves no half-written canary). The
/// writes run on a few threads of their own and are waited for until the
/// run's deadline only: a mount that hangs (volumes are not inspected by the
/// mount probe) cannot hold the command past --timeout.
pub fn plant(
    host: &Host,
    mounts: &MountFacts,
    run_id: &str,
    cleanup: &Arc<Cleanup>,
    signer: &Signer,
    opts: &PlantOptions,
) -> PlantReport {
    let planted_at = rfc3339(std::time::SystemTime::now());
    let mut rep = PlantReport {
        keyid: signer.keyid(),
        ephemeral_key: signer.is_ephemeral(),
        run_id: run_id.to_string(),
        planted_at: planted_at.clone(),
        planted: Vec::new(),
        skipped: Vec::new(),
        incomplete: false,
    };
    // Without a declared workspace the mount holding the working directory
    // is most likely it; a canary there would land in the task's diff.
    let cwd = if mounts.workspace.is_none() && host.is_live() {
        std::env::current_dir().ok()
    } else {
        None
    };
    let skip = |location: &str, why: &str| Planted {
        location: location.to_string(),
        path: None,
        error: Some(why.to_string()),
    };
    // Host paths whose mount did not answer when inspected are not in the
    // list below (what they hold is unknown); they are named here, since a
    // later run cannot vouch for them.
    for e in &mounts.mounts {
        if class_name(e).is_some() && e.contents.file_type == "unresponsive" {
            let at = e.mount.mount_point.to_string_lossy();
            rep.skipped.push(skip(
                &at,
                "its mount did not answer when inspected: not planted",
            ));
            rep.incomplete = true;
        }
    }
    let mut jobs = Vec::new();
    let locations = persistent_locations(mounts);
    for want in &opts.only_in {
        if !locations
            .iter()
            .any(|l| Path::new(&l.path) == want.as_path())
        {
            rep.skipped.push(skip(
                &want.to_string_lossy(),
                "not a host path or volume (of those, --only-in names where to plant)",
            ));
        }
    }
    for l in locations {
        if !opts.only_in.is_empty()
            && !opts
                .only_in
                .iter()
                .any(|w| w.as_path() == Path::new(&l.path))
        {
            continue;
        }
        if cwd.as_ref().is_some_and(|d| d.starts_with(&l.path)) {
            rep.skipped.push(skip(&l.path, "holds the working directory, probably the workspace (pass --workspace to say which it is)"));
            continue;
        }
        let mut canary = Canary {
            signature: None,
            selfprobe_canary: 1,
            run_id: run_id.to_string(),
            planted_at: planted_at.clone(),
            location: l.path.clone(),
            host_path: l.host_path.clone(),
            class: l.class.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            nonce: opts.nonce.clone(),
        };
        canary.sign(signer);
        let body = match serde_json::to_vec_pretty(&canary) {
            Ok(mut b) => {
                b.push(b'\n');
                b
            }
            Err(e) => {
                rep.planted.push(skip(&l.path, &e.to_string()));
                continue;
            }
        };
        let rel = Path::new(&l.path).join(format!("{CANARY_PREFIX}{run_id}.json"));
        jobs.push(Job {
            real: host.path(&rel),
            location: l.path,
            rel,
            body,
        });
    }
    // A few writers share the queue, so one hung location holds up one
    // writer, not every location after it.
    let locations: Vec<String> = jobs.iter().map(|j| j.location.clone()).collect();
    let (writer_host, writer_cleanup) = (host.clone(), cleanup.clone());
    let outcomes = crate::util::workers::map_until(
        "canary-plant",
        jobs,
        PLANT_WRITERS,
        host.deadline(),
        move |j: &Job| {
            if writer_host
                .access(&j.location, nix::unistd::AccessFlags::W_OK)
                .is_err()
            {
                return Plant::Skipped(skip(&j.location, "not writable"));
            }
            let res = write_new(&j.real, &j.body, &writer_cleanup);
            Plant::Planted(Planted {
                location: j.location.clone(),
                path: res.is_ok().then(|| j.rel.to_string_lossy().into_owned()),
                error: res.err(),
            })
        },
    );
    let why = if Instant::now() >= host.deadline() {
        "not finished before the deadline (--timeout): its mount may be hung; a canary left half-written there was removed"
    } else {
        "not tried: the planting threads stopped"
    };
    for (location, outcome) in locations.iter().zip(outcomes) {
        match outcome {
            Some(Plant::Planted(p)) => rep.planted.push(p),
            Some(Plant::Skipped(p)) => rep.skipped.push(p),
            None => {
                rep.skipped.push(skip(location, why));
                rep.incomplete = true;
            }
        }
    }
    rep
}

fn write_new(path: &Path, body: &[u8], cleanup: &Cleanup) -> Result<(), String> {
    let created = cleanup.create(path, || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .mode(0o644)
            .open(path)
    });
    let mut file = match created {
        None => return Err("the run is stopping".into()),
        Some(Ok(f)) => f,
        // Not created by us (it exists, is a symlink, or the directory
        // refused): nothing of ours to remove.
        Some(Err(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err("a file of that name already exists".into())
        }
        Some(Err(e)) => return Err(e.to_string()),
    };
    let written = file.write_all(body).and_then(|_| file.sync_all());
    drop(file);
    cleanup.forget(path);
    written.map_err(|e| {
        let _ = std::fs::remove_file(path);
        format!("writing failed and the partial canary was removed: {e}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_too_large_to_read_whole_says_so() {
        let dir = std::env::temp_dir().join(format!("sp-teardown-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        for i in 0..20 {
            std::fs::write(dir.join(format!("data/f{i}")), "").unwrap();
        }
        std::fs::write(dir.join(format!("data/{CANARY_PREFIX}x.json")), "{}").unwrap();
        let host = Host::new(dir.clone(), std::time::Duration::from_secs(30));
        let mut whole = TeardownFacts {
            persistent: Vec::new(),
            canaries: Vec::new(),
            truncated: Vec::new(),
        };
        search(&host, Path::new("/data"), 100, &mut whole);
        assert!(whole.truncated.is_empty());
        assert_eq!(whole.canaries.len(), 1, "{:?}", whole.canaries);
        let mut cut = TeardownFacts {
            persistent: Vec::new(),
            canaries: Vec::new(),
            truncated: Vec::new(),
        };
        search(&host, Path::new("/data"), 5, &mut cut);
        assert_eq!(cut.truncated, vec!["/data".to_string()]);
        let findings = evaluate(&cut, "run");
        assert!(
            findings
                .iter()
                .any(|f| f.code == "probe.incomplete" && f.subject == "teardown:/data"),
            "{findings:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
