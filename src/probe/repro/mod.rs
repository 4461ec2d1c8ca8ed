//! Phase 4: can another machine recreate this workspace? The image's
//! identity (/etc/os-release, /run/.containerenv, /.dockerenv, $container,
//! the container id in cgroup paths and engine mounts, a digest where one is
//! known), the setup contract in the workspace (devcontainer.json,
//! Containerfile, compose, flake) and whether it pins the image by digest,
//! toolchain pins (mise.toml, .tool-versions, rust-toolchain.toml,
//! .python-version, .nvmrc, devcontainer features…), lockfiles for every
//! manifest, and the versions the tools on PATH report (src/probe/repro/tools/mod.rs).

use crate::finding::Code;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::FileType;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use crate::catalog::{self, Walk};
use crate::facts::mounts::MountFacts;
use crate::facts::place;
use crate::facts::unchecked::Unchecked;
use crate::finding::Finding;
use crate::host::Host;
mod tools;

use crate::util::command::ToolStatus;
use crate::util::walk::{self, Dir, Order, Step, Stop, Visit, Walker};
pub use tools::ToolRun;

/// How far below the workspace manifests and pins are looked for, and how
/// many entries at most: a monorepo's packages sit a few levels down, and
/// node_modules and the like are pruned.
pub const WALK_DEPTH: usize = 4;
pub const WALK_ENTRIES: usize = 50_000;
const MAX_FOUND: usize = 500;

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Hint {
    pub value: String,
    /// Where it came from: a file, a variable, a cgroup line.
    pub source: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ImageIdentity {
    /// ID, VERSION_ID, PRETTY_NAME… from /etc/os-release.
    pub os_release: BTreeMap<String, String>,
    /// Files and variables that say "this is a container".
    pub markers: Vec<String>,
    pub engine: Option<Hint>,
    pub container_id: Option<Hint>,
    /// Image references: from the engine (.containerenv) and the contract.
    pub references: Vec<Hint>,
    pub image_id: Option<Hint>,
    /// The reference that pins the image, if one does: the engine's, or
    /// the workspace's setup contract's.
    pub pinned_by: Option<Hint>,
    /// The running image's sha256 digest, only when the engine reports it
    /// (a digest in a workspace file is a claim, kept in `pinned_by`). The
    /// signed statement names the image by this (src/attest).
    pub digest: Option<String>,
    /// The engine's reference that carries `digest`.
    pub reference: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ImageRef {
    pub reference: String,
    pub pinned: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ContractFile {
    pub path: String,
    /// devcontainer.json, containerfile, compose or nix-flake.
    pub kind: Text,
    pub images: Vec<ImageRef>,
    /// Every base it builds from is pinned (or it builds FROM scratch).
    pub pins_image: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolPin {
    pub file: String,
    pub tool: String,
    pub version: String,
    /// "latest", "stable", "lts/*", "system": a name, not a version.
    pub floating: bool,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub path: String,
    pub ecosystem: Text,
    pub expected: Vec<Text>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lockfile: Option<String>,
    /// Why no lockfile is needed, or what is wrong without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub needs_lock: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReproFacts {
    /// Reported as the inventory's top-level `image` (see probe::run).
    #[serde(skip)]
    pub image: ImageIdentity,
    pub workspace: Option<String>,
    pub setup_contract: Vec<ContractFile>,
    pub tool_pins: Vec<ToolPin>,
    pub manifests: Vec<Manifest>,
    pub tools: Vec<ToolRun>,
    pub walk_entries: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk_truncated: Option<String>,
    /// Why the workspace itself could not be listed, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_unreadable: Option<String>,
}

// ---------------------------------------------------------------------------
// Small parsers (pure)

/// KEY=value lines, optionally quoted, as in os-release(5) and /run/.containerenv.
pub fn env_file(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            m.insert(k.trim().to_string(), v.to_string());
        }
    }
    m
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The sha256 digest in `name@sha256:<64 hex>`.
pub fn digest_of(reference: &str) -> Option<String> {
    let (_, d) = reference.rsplit_once("@sha256:")?;
    let d = d.get(..64)?;
    is_hex(d, 64).then(|| format!("sha256:{}", d.to_ascii_lowercase()))
}

/// A container id from a cgroup path: docker-<id>.scope, /docker/<id>,
/// libpod-<id>, crio-<id>, cri-containerd-<id>…
pub fn cgroup_container_id(text: &str) -> Option<(String, &'static str)> {
    let mut found = None;
    for line in text.lines() {
        let path = line.splitn(3, ':').nth(2).unwrap_or("");
        let segs: Vec<&str> = path.split('/').collect();
        for (i, seg) in segs.iter().enumerate() {
            let s = seg.strip_suffix(".scope").unwrap_or(seg);
            let (engine, rest) = [
                ("docker-", "docker"),
                ("libpod-", "podman"),
                ("crio-", "cri-o"),
                ("cri-containerd-", "containerd"),
                ("containerd-", "containerd"),
            ]
            .iter()
            .find_map(|(p, e)| s.strip_prefix(p).map(|r| (*e, r)))
            .unwrap_or_else(|| {
                let parent = if i > 0 { segs[i - 1] } else { "" };
                let e = match parent {
                    "docker" => "docker",
                    p if p.starts_with("libpod") => "podman",
                    p if p.contains("kubepods") || p.starts_with("pod") => "kubernetes",
                    _ => "",
                };
                (e, s)
            });
            if is_hex(rest, 64) {
                found = Some((rest.to_string(), engine));
            }
        }
    }
    found
}

/// A container id from the engine's own bind mounts (field 4 of mountinfo),
/// recognised by their shape wherever the engine's storage lives
/// (src/facts/mounts/engine.rs). podman and CRI-O share containers/storage:
/// kubelet's files or crio-<id> cgroup roots say CRI-O.
pub fn mount_container_id(roots: &[String]) -> Option<(String, &'static str)> {
    use crate::facts::mounts::engine::{self, Shape};
    let files: Vec<engine::Managed> = roots
        .iter()
        .filter_map(|r| match engine::shape_of_root(r) {
            Some(Shape::Managed(m)) => Some(m),
            _ => None,
        })
        .collect();
    let refs: Vec<&engine::Managed> = files.iter().collect();
    let storage = engine::resolve_storage_engine(
        &refs,
        engine::cgroup_engine(roots.iter().map(String::as_str)),
    );
    files.iter().find_map(|m| {
        let by = match &*m.by {
            "containers-storage" => storage,
            "docker" => "docker",
            _ => return None,
        };
        m.id.clone().filter(|id| is_hex(id, 64)).map(|id| (id, by))
    })
}

/// The identifying keys of an os-release file, each value kept short and
/// printable: the file is the image's text, not ours.
pub fn os_release(text: &str) -> BTreeMap<String, String> {
    let m = env_file(text);
    let mut out = BTreeMap::new();
    for k in [
        "ID",
        "VERSION_ID",
        "PRETTY_NAME",
        "VERSION_CODENAME",
        "BUILD_ID",
        "IMAGE_ID",
        "IMAGE_VERSION",
    ] {
        if let Some(v) = m.get(k) {
            out.insert(k.to_string(), short(v));
        }
    }
    out
}

fn short(s: &str) -> String {
    crate::util::sanitize::short(s, 200)
}

/// FROM lines of a Containerfile: each base, pinned when it is scratch, an
/// earlier stage or carries a digest.
pub fn containerfile_images(text: &str) -> Vec<ImageRef> {
    let mut stages: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    for line in joined.lines() {
        let t = line.trim();
        let mut words = t.split_whitespace();
        if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            continue;
        }
        let rest: Vec<&str> = words.filter(|w| !w.starts_with("--")).collect();
        let Some(image) = rest.first() else { continue };
        let lower = image.to_ascii_lowercase();
        // Judged against the stages named on earlier lines only.
        let (pinned, note) = if lower == "scratch" {
            (true, Some("scratch: an empty base".to_string()))
        } else if stages.contains(&lower) {
            (true, Some("an earlier build stage".to_string()))
        } else if image.contains('$') {
            (false, Some("set by a build argument".to_string()))
        } else {
            (digest_of(image).is_some(), None)
        };
        if let Some(pos) = rest.iter().position(|w| w.eq_ignore_ascii_case("AS")) {
            if let Some(name) = rest.get(pos + 1) {
                stages.push(name.to_ascii_lowercase());
            }
        }
        out.push(ImageRef {
            reference: short(image),
            pinned,
            note,
        });
    }
    out
}

fn compose_images(text: &str) -> Vec<ImageRef> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("image:"))
        .map(|v| {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
            ImageRef {
                reference: short(v),
                pinned: digest_of(v).is_some(),
                note: v.contains('$').then(|| "set by a variable".to_string()),
            }
        })
        .collect()
}

fn floating(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    v.is_empty()
        || [
            "latest", "lts", "system", "stable", "beta", "nightly", "node", "current", "lts/*",
        ]
        .contains(&v.as_str())
        || v.starts_with("lts/")
        || v.starts_with("ref:")
        || v.starts_with("path:")
}

/// Tool pins in one file, by its name.
pub fn parse_pins(name: &str, text: &str) -> Vec<(String, String)> {
    let first = || {
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .map(short)
    };
    fn tool_of(n: &str) -> &str {
        match n {
            ".nvmrc" | ".node-version" => "node",
            ".python-version" => "python",
            ".ruby-version" => "ruby",
            ".go-version" => "go",
            ".java-version" => "java",
            ".terraform-version" => "terraform",
            "rust-toolchain" => "rust",
            _ => n,
        }
    }
    match name {
        "mise.toml" | ".mise.toml" | "config.toml" => {
            let Ok(v) = toml::from_str::<toml::Value>(text) else {
                return Vec::new();
            };
            let Some(t) = v.get("tools").and_then(|t| t.as_table()) else {
                return Vec::new();
            };
            t.iter()
                .take(100)
                .map(|(k, v)| {
                    let ver = match v {
                        toml::Value::String(s) => s.clone(),
                        toml::Value::Array(a) => {
                            a.first().and_then(|x| x.as_str()).unwrap_or("").to_string()
                        }
                        toml::Value::Table(t) => t
                            .get("version")
                            .and_then(|x| x.as_str())
                            .unwrap_or("")
                            .to_string(),
                        other => other.to_string(),
                    };
                    (short(k), short(&ver))
                })
                .collect()
        }
        ".tool-versions" => text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .filter(|l| !l.is_empty())
            .take(100)
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                Some((short(w.next()?), short(w.next().unwrap_or(""))))
            })
            .collect(),
        "rust-toolchain.toml" => toml::from_str::<toml::Value>(text)
            .ok()
            .and_then(|v| {
                v.get("toolchain")?
                    .get("channel")?
                    .as_str()
                    .map(|c| vec![("rust".to_string(), short(c))])
            })
            .unwrap_or_default(),
        ".sdkmanrc" => text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .take(100)
            .map(|(k, v)| (short(k.trim()), short(v.trim())))
            .collect(),
        _ => first()
            .map(|v| vec![(tool_of(name).to_string(), v)])
            .unwrap_or_default(),
    }
}

const PIN_FILES: &[&str] = &[
    "mise.toml",
    ".mise.toml",
    ".tool-versions",
    "rust-toolchain.toml",
    "rust-toolchain",
    ".python-version",
    ".nvmrc",
    ".node-version",
    ".ruby-version",
    ".go-version",
    ".java-version",
    ".terraform-version",
    ".sdkmanrc",
];

struct Ecosystem {
    manifest: &'static str,
    name: &'static str,
    locks: &'static [&'static str],
    /// The lockfile may sit in a directory above (workspaces).
    ancestors: bool,
}

const ECOSYSTEMS: &[Ecosystem] = &[
    Ecosystem {
        manifest: "Cargo.toml",
        name: "cargo",
        locks: &["Cargo.lock"],
        ancestors: true,
    },
    Ecosystem {
        manifest: "package.json",
        name: "node",
        locks: &[
            "package-lock.json",
            "npm-shrinkwrap.json",
            "pnpm-lock.yaml",
            "yarn.lock",
            "bun.lock",
            "bun.lockb",
        ],
        ancestors: true,
    },
    Ecosystem {
        manifest: "pyproject.toml",
        name: "python",
        locks: &[
            "uv.lock",
            "poetry.lock",
            "pdm.lock",
            "pylock.toml",
            "Pipfile.lock",
        ],
        ancestors: true,
    },
    Ecosystem {
        manifest: "requirements.txt",
        name: "python",
        locks: &["uv.lock", "poetry.lock", "pdm.lock", "pylock.toml"],
        ancestors: false,
    },
    Ecosystem {
        manifest: "Pipfile",
        name: "python",
        locks: &["Pipfile.lock"],
        ancestors: false,
    },
    Ecosystem {
        manifest: "go.mod",
        name: "go",
        locks: &["go.sum", "go.work.sum"],
        ancestors: true,
    },
    Ecosystem {
        manifest: "Gemfile",
        name: "ruby",
        locks: &["Gemfile.lock"],
        ancestors: false,
    },
    Ecosystem {
        manifest: "composer.json",
        name: "php",
        locks: &["composer.lock"],
        ancestors: false,
    },
    Ecosystem {
        manifest: "flake.nix",
        name: "nix",
        locks: &["flake.lock"],
        ancestors: false,
    },
    Ecosystem {
        manifest: "mix.exs",
        name: "elixir",
        locks: &["mix.lock"],
        ancestors: false,
    },
    Ecosystem {
        manifest: "pubspec.yaml",
        name: "dart",
        locks: &["pubspec.lock"],
        ancestors: false,
    },
];

/// Whether a manifest has dependencies to lock, and why not if it has none.
fn needs_lock(manifest: &str, text: &str) -> (bool, Option<String>) {
    let nonempty_obj = |v: Option<&serde_json::Value>| {
        v.and_then(|x| x.as_object()).is_some_and(|o| !o.is_empty())
    };
    match manifest {
        "package.json" => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => {
                let any = ["dependencies", "devDependencies", "optionalDependencies"]
                    .iter()
                    .any(|k| nonempty_obj(v.get(*k)));
                (any, (!any).then(|| "no dependencies".to_string()))
            }
            Err(_) => (true, Some("does not parse as JSON".into())),
        },
        "pyproject.toml" => match toml::from_str::<toml::Value>(text) {
            Ok(v) => {
                let arr = |x: Option<&toml::Value>| {
                    x.and_then(|a| a.as_array()).is_some_and(|a| !a.is_empty())
                };
                let tbl = |x: Option<&toml::Value>| {
                    x.and_then(|a| a.as_table()).is_some_and(|t| !t.is_empty())
                };
                let project = v.get("project");
                let poetry = v
                    .get("tool")
                    .and_then(|t| t.get("poetry"))
                    .and_then(|p| p.get("dependencies"))
                    .and_then(|d| d.as_table())
                    .is_some_and(|d| d.keys().any(|k| k != "python"));
                let any = arr(project.and_then(|p| p.get("dependencies")))
                    || tbl(project.and_then(|p| p.get("optional-dependencies")))
                    || tbl(v.get("dependency-groups"))
                    || poetry;
                (any, (!any).then(|| "no dependencies".to_string()))
            }
            Err(_) => (true, Some("does not parse as TOML".into())),
        },
        "go.mod" => {
            let any = text.lines().any(|l| l.trim_start().starts_with("require"));
            (any, (!any).then(|| "no require directives".to_string()))
        }
        "requirements.txt" => {
            let loose = text
                .lines()
                .map(|l| l.split('#').next().unwrap_or("").trim())
                .filter(|l| !l.is_empty() && !l.starts_with('-'))
                .filter(|l| !(l.contains("==") || l.contains(" @ ") || l.contains("://")))
                .count();
            if loose == 0 {
                (false, Some("every requirement is pinned with ==".into()))
            } else {
                (
                    true,
                    Some(format!("{loose} requirement(s) without an exact pin")),
                )
            }
        }
        _ => (true, None),
    }
}

// ---------------------------------------------------------------------------
// Collection

fn identity(host: &Host, mounts: Option<&MountFacts>) -> ImageIdentity {
    let mut id = ImageIdentity::default();
    for p in ["/etc/os-release", "/usr/lib/os-release"] {
        if let Ok(t) = host.read(p) {
            id.os_release = os_release(&t);
            break;
        }
    }
    if std::fs::symlink_metadata(host.path("/.dockerenv")).is_ok() {
        id.markers.push("/.dockerenv".into());
        id.engine.get_or_insert(Hint {
            value: "docker".into(),
            source: "/.dockerenv".into(),
        });
    }
    if std::fs::symlink_metadata(host.path("/run/.containerenv")).is_ok() {
        id.markers.push("/run/.containerenv".into());
        // Written by podman; with --privileged it names the image too.
        let m = host
            .read("/run/.containerenv")
            .map(|t| env_file(&t))
            .unwrap_or_default();
        let src = "/run/.containerenv".to_string();
        if let Some(e) = m.get("engine") {
            id.engine = Some(Hint {
                value: short(e),
                source: src.clone(),
            });
        } else {
            id.engine.get_or_insert(Hint {
                value: "podman".into(),
                source: src.clone(),
            });
        }
        if let Some(c) = m.get("id").filter(|c| is_hex(c, 64)) {
            id.container_id = Some(Hint {
                value: c.clone(),
                source: src.clone(),
            });
        }
        if let Some(i) = m.get("image").filter(|i| !i.is_empty()) {
            id.references.push(Hint {
                value: short(i),
                source: src.clone(),
            });
        }
        if let Some(i) = m.get("imageid").filter(|i| is_hex(i, 64)) {
            id.image_id = Some(Hint {
                value: format!("sha256:{i}"),
                source: src,
            });
        }
    }
    if let Some(c) = host.env().get("container") {
        id.markers.push(format!("$container={}", short(c)));
        id.engine.get_or_insert(Hint {
            value: short(c),
            source: "$container".into(),
        });
    }
    if id.container_id.is_none() {
        let from_cgroup = host
            .read("/proc/self/cgroup")
            .ok()
            .and_then(|t| cgroup_container_id(&t))
            .map(|(c, e)| (c, e, "/proc/self/cgroup"));
        let from_mounts = || {
            let m = mounts?;
            if let Some(h) = &m.engine {
                if let Some(c) = &h.container_id {
                    return Some((c.clone(), &*h.engine, "/proc/self/mountinfo"));
                }
            }
            let roots: Vec<String> = m
                .mounts
                .iter()
                .map(|e| e.mount.root.to_string_lossy().into_owned())
                .collect();
            mount_container_id(&roots).map(|(c, e)| (c, e, "/proc/self/mountinfo"))
        };
        if let Some((c, e, src)) = from_cgroup.or_else(from_mounts) {
            id.container_id = Some(Hint {
                value: c,
                source: src.into(),
            });
            if !e.is_empty() {
                id.engine.get_or_insert(Hint {
                    value: e.into(),
                    source: src.into(),
                });
            }
        }
    }
    id
}

fn read_contract(host: &Host, path: &Path, kind: &'static str) -> ContractFile {
    let mut c = ContractFile {
        path: path.to_string_lossy().into_owned(),
        kind: kind.into(),
        images: Vec::new(),
        pins_image: false,
        error: None,
    };
    let text = match host.read(path) {
        Ok(t) => t,
        Err(e) => {
            c.error = Some(format!("cannot read: {e}"));
            return c;
        }
    };
    match kind {
        "containerfile" => c.images = containerfile_images(&text),
        "compose" => c.images = compose_images(&text),
        _ => {}
    }
    c.pins_image = !c.images.is_empty() && c.images.iter().all(|i| i.pinned);
    c
}

/// devcontainer.json: its image, or the Containerfile or compose file it
/// builds from, and version options of its features (tool pins).
fn read_devcontainer(host: &Host, path: &Path, pins: &mut Vec<ToolPin>) -> Vec<ContractFile> {
    let mut c = ContractFile {
        path: path.to_string_lossy().into_owned(),
        kind: "devcontainer.json".into(),
        images: Vec::new(),
        pins_image: false,
        error: None,
    };
    let mut more = Vec::new();
    let v = match host.read(path).map(|t| crate::util::jsonc::strip_jsonc(&t)) {
        Ok(t) => match serde_json::from_str::<serde_json::Value>(&t) {
            Ok(v) => v,
            Err(e) => {
                c.error = Some(format!("does not parse: {e}"));
                return vec![c];
            }
        },
        Err(e) => {
            c.error = Some(format!("cannot read: {e}"));
            return vec![c];
        }
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    if let Some(img) = v.get("image").and_then(|i| i.as_str()) {
        c.images.push(ImageRef {
            reference: short(img),
            pinned: digest_of(img).is_some(),
            note: None,
        });
    }
    let dockerfile = v
        .get("build")
        .and_then(|b| b.get("dockerfile").or_else(|| b.get("dockerFile")))
        .or_else(|| v.get("dockerFile"))
        .and_then(|d| d.as_str());
    if let Some(df) = dockerfile {
        if let Some(p) = place::resolve(host, &dir.join(df)) {
            more.push(read_contract(host, &p, "containerfile"));
        }
    }
    let compose: Vec<&str> = match v.get("dockerComposeFile") {
        Some(serde_json::Value::String(s)) => vec![s.as_str()],
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|x| x.as_str()).collect(),
        _ => Vec::new(),
    };
    for f in compose.into_iter().take(8) {
        if let Some(p) = place::resolve(host, &dir.join(f)) {
            more.push(read_contract(host, &p, "compose"));
        }
    }
    if let Some(feats) = v.get("features").and_then(|f| f.as_object()) {
        for (id, opts) in feats.iter().take(100) {
            let base = id.rsplit('/').next().unwrap_or(id);
            let tool = base.split([':', '@']).next().unwrap_or(base);
            let version = match opts {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Object(o) => o
                    .get("version")
                    .and_then(|x| x.as_str())
                    .unwrap_or("")
                    .to_string(),
                _ => String::new(),
            };
            pins.push(ToolPin {
                file: c.path.clone(),
                tool: short(tool),
                floating: floating(&version),
                version: if version.is_empty() {
                    "(feature default)".into()
                } else {
                    short(&version)
                },
            });
        }
    }
    c.pins_image = !c.images.is_empty() && c.images.iter().all(|i| i.pinned);
    let mut out = vec![c];
    out.extend(more);
    out
}

pub fn collect(
    host: &Host,
    mounts: Option<&MountFacts>,
    workspace: Option<&Path>,
    deadline: Instant,
) -> Result<ReproFacts, Unchecked> {
    let mut f = ReproFacts {
        image: identity(host, mounts),
        workspace: workspace.map(|w| w.to_string_lossy().into_owned()),
        ..ReproFacts::default()
    };
    if let Some(ws) = workspace.filter(|w| host.path(w).is_dir()) {
        walk_workspace(host, ws, deadline, &mut f);
    }

    // Only the engine's own references are in the list so far.
    if let Some((r, d)) = f
        .image
        .references
        .iter()
        .find_map(|r| digest_of(&r.value).map(|d| (r.value.clone(), d)))
    {
        f.image.reference = Some(r);
        f.image.digest = Some(d);
    }
    let mut refs: Vec<Hint> = f.image.references.clone();
    for c in &f.setup_contract {
        for i in &c.images {
            refs.push(Hint {
                value: i.reference.clone(),
                source: c.path.clone(),
            });
        }
    }
    f.image.references = refs;
    f.image.pinned_by = f
        .image
        .references
        .iter()
        .find(|r| digest_of(&r.value).is_some())
        .cloned()
        .or_else(|| {
            f.setup_contract
                .iter()
                .find(|c| c.pins_image)
                .map(|c| Hint {
                    value: c
                        .images
                        .iter()
                        .map(|i| i.reference.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                    source: c.path.clone(),
                })
        });

    f.tools = tools::observe(host, deadline);
    Ok(f)
}

/// The file names walk_workspace does something with: setup contracts,
/// pins, manifests and lockfiles.
fn wanted(name: &str) -> bool {
    matches!(
        name,
        "Containerfile"
            | "Dockerfile"
            | "devcontainer.json"
            | ".devcontainer.json"
            | "compose.yaml"
            | "compose.yml"
            | "docker-compose.yaml"
            | "docker-compose.yml"
            | "flake.nix"
            | "config.toml"
    ) || PIN_FILES.contains(&name)
        || ECOSYSTEMS
            .iter()
            .any(|e| e.manifest == name || e.locks.contains(&name))
}

/// Walks the workspace for setup contracts, pins and manifests, then finds
/// each manifest's lockfile.
fn walk_workspace(host: &Host, ws: &Path, deadline: Instant, f: &mut ReproFacts) {
    let mut v = WorkspaceWalk {
        host,
        ws,
        f,
        names: Vec::new(),
        manifests: Vec::new(),
        files_in: BTreeMap::new(),
    };
    // Depth first, the order the manifests and pins have always been
    // listed in; directories down to WALK_DEPTH - 1 are listed.
    let budget = walk::Budget {
        entries: WALK_ENTRIES,
        depth: WALK_DEPTH - 1,
        queued: usize::MAX,
    };
    let w = Walker::new(Order::DepthFirst, catalog::prune(Walk::Workspace), deadline).walk(
        host,
        ws,
        budget,
        (),
        &mut v,
    );
    let WorkspaceWalk {
        manifests,
        files_in,
        ..
    } = v;
    f.walk_entries = w.entries;
    f.walk_truncated = w.stop.map(|s| match s {
        Stop::Entries => format!("the budget of {WALK_ENTRIES} entries ran out"),
        Stop::Deadline => "the probe's deadline came first".into(),
        other => other.to_string(),
    });
    for (p, eco) in manifests {
        let m = manifest(host, ws, &p, eco, &files_in, &mut f.tool_pins);
        f.manifests.push(m);
    }
}

/// The workspace walk's part: keeps, per directory, the names this probe
/// reads or looks up (a directory of 100,000 source files costs a listing,
/// not a list), and reads the contracts and pins among them.
struct WorkspaceWalk<'a> {
    host: &'a Host,
    ws: &'a Path,
    f: &'a mut ReproFacts,
    /// The wanted names of the directory being listed.
    names: Vec<String>,
    manifests: Vec<(PathBuf, &'static Ecosystem)>,
    /// Every listed directory's wanted names, where lockfiles are looked up.
    files_in: BTreeMap<PathBuf, Vec<String>>,
}

impl Visit for WorkspaceWalk<'_> {
    type Mark = ();

    fn enter(&mut self, _dir: &Dir<'_, ()>) -> bool {
        self.names.clear();
        true
    }

    fn unlisted(&mut self, dir: &Dir<'_, ()>, err: &std::io::Error) {
        if dir.depth == 0 {
            self.f.workspace_unreadable = Some(err.to_string());
        }
    }

    fn entry(&mut self, _dir: &Dir<'_, ()>, name: &OsStr, ft: FileType) -> Step {
        if ft.is_dir() {
            return Step::Descend;
        }
        // Links are followed only for names we read, and only inside the
        // root; FIFOs and sockets are never opened (host.read).
        let name = name.to_string_lossy();
        if (ft.is_file() || ft.is_symlink()) && wanted(&name) {
            self.names.push(name.into_owned());
        }
        Step::Next
    }

    fn leave(&mut self, dir: &Dir<'_, ()>) {
        let names = std::mem::take(&mut self.names);
        self.read_dir_files(dir.path, &names);
        self.files_in.insert(dir.path.to_path_buf(), names);
    }
}

impl WorkspaceWalk<'_> {
    /// The setup contracts, pins and manifests among one directory's names.
    fn read_dir_files(&mut self, dir: &Path, names: &[String]) {
        let parent_name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        // The recipe of the workspace's own container lives at its top or in
        // .devcontainer/ (one level of named configurations below it); a
        // Containerfile deeper down builds some other image.
        let rel = dir.strip_prefix(self.ws).unwrap_or(Path::new(""));
        let top = rel.as_os_str().is_empty();
        let in_devc = rel.starts_with(".devcontainer") && rel.components().count() <= 2;
        for name in names {
            let p = dir.join(name);
            self.contract(&p, name, top, in_devc);
            let in_mise_dir = name == "config.toml"
                && matches!(parent_name.as_deref(), Some(".mise") | Some("mise"));
            if (PIN_FILES.contains(&name.as_str()) || in_mise_dir)
                && self.f.tool_pins.len() < MAX_FOUND
            {
                self.pins(&p, name);
            }
            if let Some(eco) = ECOSYSTEMS.iter().find(|e| e.manifest == name) {
                if self.manifests.len() < MAX_FOUND {
                    self.manifests.push((p.clone(), eco));
                }
            }
        }
    }

    /// `p` (named `name`) as a setup contract: a Containerfile, a
    /// devcontainer.json, a compose file or a flake, where it counts as
    /// the workspace's own.
    fn contract(&mut self, p: &Path, name: &str, top: bool, in_devc: bool) {
        let (host, f) = (self.host, &mut *self.f);
        let is_contract = (top || in_devc) && (name == "Containerfile" || name == "Dockerfile");
        let devc =
            (name == "devcontainer.json" && in_devc) || (name == ".devcontainer.json" && top);
        let compose = top
            && [
                "compose.yaml",
                "compose.yml",
                "docker-compose.yaml",
                "docker-compose.yml",
            ]
            .contains(&name);
        if (is_contract || devc || compose) && f.setup_contract.len() < MAX_FOUND {
            if f.setup_contract.iter().any(|c| Path::new(&c.path) == p) {
                return;
            }
            let Some(real) = place::resolve(host, p) else {
                return;
            };
            if devc {
                let mut pins = Vec::new();
                let cs = read_devcontainer(host, &real, &mut pins);
                for mut c in cs {
                    if c.path == real.to_string_lossy() {
                        c.path = p.to_string_lossy().into_owned();
                    }
                    if !f.setup_contract.iter().any(|x| x.path == c.path) {
                        f.setup_contract.push(c);
                    }
                }
                f.tool_pins.extend(pins);
            } else {
                let kind = if is_contract {
                    "containerfile"
                } else {
                    "compose"
                };
                let mut c = read_contract(host, &real, kind);
                c.path = p.to_string_lossy().into_owned();
                f.setup_contract.push(c);
            }
        }
        if name == "flake.nix" && top {
            f.setup_contract.push(ContractFile {
                path: p.to_string_lossy().into_owned(),
                kind: "nix-flake".into(),
                images: Vec::new(),
                pins_image: false,
                error: None,
            });
        }
    }

    /// The tool versions a pin file (`p`, named `name`) states.
    fn pins(&mut self, p: &Path, name: &str) {
        let host = self.host;
        if let Some(text) = place::resolve(host, p).and_then(|r| host.read(r).ok()) {
            for (tool, version) in parse_pins(name, &text) {
                self.f.tool_pins.push(ToolPin {
                    file: p.to_string_lossy().into_owned(),
                    tool,
                    floating: floating(&version),
                    version,
                });
            }
        }
    }
}

/// A manifest, the lockfile beside it (or, for an ecosystem whose lock
/// sits at the workspace's top, above it) and the tool it pins.
fn manifest(
    host: &Host,
    ws: &Path,
    p: &Path,
    eco: &'static Ecosystem,
    files_in: &BTreeMap<PathBuf, Vec<String>>,
    tool_pins: &mut Vec<ToolPin>,
) -> Manifest {
    let dir = p.parent().unwrap_or(ws).to_path_buf();
    let text = place::resolve(host, p)
        .and_then(|r| host.read(r).ok())
        .unwrap_or_default();
    let (need, mut note) = needs_lock(eco.manifest, &text);
    // packageManager in package.json and toolchain in go.mod pin a tool.
    if eco.manifest == "package.json" {
        if let Some(pm) = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("packageManager")?.as_str().map(str::to_string))
        {
            let (tool, ver) = pm.split_once('@').unwrap_or((&pm, ""));
            tool_pins.push(ToolPin {
                file: p.to_string_lossy().into_owned(),
                tool: short(tool),
                floating: floating(ver),
                version: short(ver.split('+').next().unwrap_or(ver)),
            });
        }
    }
    if eco.manifest == "go.mod" {
        if let Some(tc) = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("toolchain "))
        {
            tool_pins.push(ToolPin {
                file: p.to_string_lossy().into_owned(),
                tool: "go".into(),
                version: short(tc.trim()),
                floating: false,
            });
        }
    }
    let mut lock = None;
    let mut d = Some(dir.as_path());
    while let Some(cur) = d {
        let names = files_in.get(cur);
        let hit = eco.locks.iter().find(|l| {
            names.map_or_else(
                || std::fs::symlink_metadata(host.path(cur.join(l))).is_ok(),
                |n| n.iter().any(|x| x == *l),
            )
        });
        if let Some(l) = hit {
            lock = Some(cur.join(l).to_string_lossy().into_owned());
            break;
        }
        if !eco.ancestors || cur == ws {
            break;
        }
        d = cur.parent();
    }
    if lock.is_some() {
        note = None;
    }
    Manifest {
        path: p.to_string_lossy().into_owned(),
        ecosystem: eco.name.into(),
        expected: eco.locks.iter().map(|&l| Text::from(l)).collect(),
        lockfile: lock,
        note,
        needs_lock: need,
    }
}

// ---------------------------------------------------------------------------
// Evaluation

pub fn evaluate(f: &ReproFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let recipes: Vec<&ContractFile> = f.setup_contract.iter().collect();
    if f.image.pinned_by.is_none() {
        let refs: Vec<String> = f
            .image
            .references
            .iter()
            .map(|r| format!("{} ({})", r.value, r.source))
            .collect();
        let message = if recipes.is_empty() {
            "nothing says how to rebuild this environment: no devcontainer.json, Containerfile, \
             Dockerfile, compose file or flake in the workspace, and no image digest from the engine"
                .to_string()
        } else if refs.is_empty() {
            format!(
                "the setup contract ({}) names no image digest",
                recipes
                    .iter()
                    .map(|c| c.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(
                "the image is named only by tag, not by digest: {}",
                refs.join("; ")
            )
        };
        let mut fnd = Finding::new(Code::ReproImageUnpinned, "image", message)
            .unknown_if(&f.workspace_unreadable)
            .with("setup_contract_found", !recipes.is_empty())
            .with(
                "setup_contract",
                recipes.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
            )
            .with("references", refs)
            .with("markers", f.image.markers.clone());
        if let Some(e) = &f.image.engine {
            fnd = fnd.with("engine", e.value.clone());
        }
        if let Some(c) = &f.image.container_id {
            fnd = fnd.with("container_id", c.value.clone());
        }
        if let Some(i) = &f.image.image_id {
            fnd = fnd.with("image_id", i.value.clone());
        }
        if let Some(os) = f.image.os_release.get("PRETTY_NAME") {
            fnd = fnd.with("os", os.clone());
        }
        out.push(fnd);
    }

    let fixed: Vec<&ToolPin> = f.tool_pins.iter().filter(|p| !p.floating).collect();
    if fixed.is_empty() {
        let floating: Vec<String> = f
            .tool_pins
            .iter()
            .map(|p| format!("{} {} ({})", p.tool, p.version, p.file))
            .collect();
        let observed: Vec<String> = f
            .tools
            .iter()
            .filter_map(|t| t.version.as_ref().map(|v| format!("{}: {v}", t.tool)))
            .collect();
        let message = match (&f.workspace, floating.is_empty()) {
            (None, _) => "no workspace is known, so no project pins its tools".to_string(),
            (Some(w), true) => format!("nothing in {w} pins a tool version"),
            (Some(w), false) => format!(
                "{w} names tools only by floating versions: {}",
                floating.join("; ")
            ),
        };
        out.push(
            Finding::new(Code::ReproNoToolPins, "toolchain", message)
                .unknown_if(&f.workspace_unreadable)
                .with("searched", PIN_FILES.to_vec())
                .with("floating", floating)
                .with("observed_versions", observed),
        );
    }

    for m in f
        .manifests
        .iter()
        .filter(|m| m.needs_lock && m.lockfile.is_none())
    {
        let why = m
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        out.push(
            Finding::new(
                Code::ReproNoLockfile,
                &m.path,
                format!(
                    "{} has no lockfile{why}: expected one of {}",
                    m.path,
                    m.expected.join(", ")
                ),
            )
            .with("ecosystem", m.ecosystem.clone())
            .with("expected", m.expected.clone()),
        );
    }

    for t in f.tools.iter().filter(|t| t.status == ToolStatus::Timeout) {
        let why = format!(
            "{} {} {}",
            t.path,
            t.args.join(" "),
            t.reason.as_deref().unwrap_or("timed out")
        );
        out.push(
            could_not_check(
                format!("repro:tool:{}", t.tool),
                format!("the version of {} is unknown: {why}", t.tool),
                why,
            )
            .with("tool", t.tool.clone())
            .with("path", t.path.clone())
            .with("duration_ms", t.duration_ms),
        );
    }
    if let Some(why) = &f.walk_truncated {
        let why = format!(
            "the workspace walk stopped after {} entries: {why}",
            f.walk_entries
        );
        out.push(could_not_check(
            "repro:workspace".into(),
            format!("{why}; manifests and pins below that point are not checked"),
            why,
        ));
    }
    out
}

trait UnknownIf {
    fn unknown_if(self, why: &Option<String>) -> Self;
}

impl UnknownIf for Finding {
    /// A workspace this process cannot list hides its contract and pins:
    /// the finding is then "could not check", never a verdict.
    fn unknown_if(self, why: &Option<String>) -> Finding {
        match why {
            Some(e) => {
                let mut f = self.unknown().with("workspace_unreadable", e.clone());
                f.message = format!("{} (the workspace could not be read: {e})", f.message);
                f
            }
            None => self,
        }
    }
}

/// probe.incomplete for one part of the repro probe that could not be
/// checked, while the probe itself finished.
fn could_not_check(subject: String, message: String, reason: String) -> Finding {
    Finding::new(Code::ProbeIncomplete, subject, message)
        .unknown()
        .with("probe", "repro")
        .with("phase", 4)
        .with("reason", reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn digests_and_containerfiles() {
        assert_eq!(
            digest_of(&format!("ghcr.io/x/dev@sha256:{D}")),
            Some(format!("sha256:{D}"))
        );
        assert_eq!(digest_of("debian:12"), None);
        assert_eq!(digest_of("x@sha256:abc"), None);
        let imgs = containerfile_images(&format!(
            "# syntax=docker/dockerfile:1\nFROM --platform=linux/amd64 rust:1.83@sha256:{D} AS build\n\
             RUN cargo build\nFROM scratch\nCOPY --from=build /x /x\nfrom build as again\n"
        ));
        assert_eq!(imgs.len(), 3);
        assert!(imgs.iter().all(|i| i.pinned), "{imgs:?}");
        let imgs = containerfile_images("ARG BASE=debian\nFROM ${BASE}\nFROM debian:12 AS b\n");
        assert!(imgs.iter().all(|i| !i.pinned), "{imgs:?}");
    }

    #[test]
    fn container_ids() {
        let cg = format!("0::/libpod_parent/libpod-{D}\n");
        assert_eq!(cgroup_container_id(&cg), Some((D.to_string(), "podman")));
        let cg = format!("0::/system.slice/docker-{D}.scope\n");
        assert_eq!(cgroup_container_id(&cg), Some((D.to_string(), "docker")));
        let cg = format!("12:memory:/docker/{D}\n");
        assert_eq!(cgroup_container_id(&cg), Some((D.to_string(), "docker")));
        assert_eq!(cgroup_container_id("0::/\n"), None);
        let mut roots = vec![format!(
            "/run/containers/storage/overlay-containers/{D}/userdata/hosts"
        )];
        assert_eq!(mount_container_id(&roots), Some((D.to_string(), "podman")));
        // The same layout with CRI-O's cgroup names is CRI-O's.
        roots.push(format!("/system.slice/crio-{D}.scope"));
        assert_eq!(mount_container_id(&roots), Some((D.to_string(), "cri-o")));
        let roots = vec![format!(
            "/home/u/.local/share/docker/containers/{D}/hostname"
        )];
        assert_eq!(mount_container_id(&roots), Some((D.to_string(), "docker")));
    }

    #[test]
    fn pins() {
        let p = parse_pins(
            "mise.toml",
            "[tools]\npython = \"3.12.7\"\nnode = \"latest\"\nrust = { version = \"1.83.0\" }\n",
        );
        assert_eq!(p.len(), 3);
        assert!(p.contains(&("python".into(), "3.12.7".into())));
        assert!(floating("latest") && floating("lts/iron") && floating("stable"));
        assert!(!floating("3.12") && !floating("1.83.0") && !floating("nightly-2024-01-01"));
        assert_eq!(
            parse_pins(
                ".tool-versions",
                "# c\nnodejs 20.11.0\npython 3.12.1 3.11.0\n"
            )
            .len(),
            2
        );
        assert_eq!(
            parse_pins("rust-toolchain.toml", "[toolchain]\nchannel = \"1.83.0\"\n"),
            vec![("rust".to_string(), "1.83.0".to_string())]
        );
        assert_eq!(
            parse_pins(".nvmrc", "\nv20.11.0\n"),
            vec![("node".to_string(), "v20.11.0".to_string())]
        );
    }

    #[test]
    fn lock_needs() {
        assert!(!needs_lock("package.json", "{\"name\":\"x\"}").0);
        assert!(needs_lock("package.json", "{\"dependencies\":{\"a\":\"1\"}}").0);
        assert!(!needs_lock("go.mod", "module x\n\ngo 1.22\n").0);
        assert!(needs_lock("go.mod", "module x\nrequire a v1\n").0);
        assert!(!needs_lock("requirements.txt", "a==1\n# x\n-r base.txt\n").0);
        assert!(needs_lock("requirements.txt", "a>=1\n").0);
        assert!(!needs_lock("pyproject.toml", "[project]\nname='x'\ndependencies=[]\n").0);
        assert!(
            needs_lock(
                "pyproject.toml",
                "[project]\nname='x'\ndependencies=['a']\n"
            )
            .0
        );
    }
}
