//! Phase 5: what a run leaves behind or inherits. Package, model and build
//! caches (probes/caches.toml) and whether each sits on a mount that
//! outlives the container; registry credentials in tool configurations next
//! to them; browser profiles with session state (probes/browsers.toml); and
//! logs, traces, screenshots and downloads on persistent mounts
//! (probes/artifacts.toml). Every item carries its owner, a sensitivity class
//! and its retention, which together make the artifact manifest.
//!
//! Nothing here opens a cookie jar, a key store or an artifact: profiles and
//! artifacts are recognised by name, and only tool configurations are read
//! (bounded, regular files only) to tell whether they hold a literal
//! credential, whose value never leaves the scanner.

use crate::finding::Code;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs::FileType;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use crate::util::text::Text;
use nix::unistd::AccessFlags;
use serde::{Deserialize, Serialize};

use crate::catalog::{self, Walk};
use crate::facts::mounts::{MountClass, MountFacts};
use crate::facts::place::{self, Placement, Retention};
use crate::facts::unchecked::Unchecked;
use crate::facts::users::{Owner, Users, MAX_HOMES};
use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::util::glob::Glob;
use crate::util::walk::{self, Dir, Order, Step, Stop, Visit, Walker};

// ---------------------------------------------------------------------------
// Catalogs

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheDef {
    pub name: String,
    pub class: String,
    pub sensitivity: String,
    pub paths: Vec<String>,
    pub env: Vec<String>,
    #[serde(default)]
    pub generic: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CredFormat {
    UrlUserinfo,
    Npmrc,
    Yarnrc,
    XmlPassword,
    Properties,
    TomlToken,
    TokenFile,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialDef {
    pub tool: String,
    pub paths: Vec<String>,
    pub workspace: Vec<String>,
    pub env: Vec<String>,
    pub format: CredFormat,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FamilyDef {
    pub name: String,
    pub root_files: Vec<String>,
    pub profile_files: Vec<String>,
    pub session_files: Vec<String>,
    pub debug_file: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserDef {
    pub name: String,
    pub family: String,
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactDef {
    pub class: String,
    pub sensitivity: String,
    pub names: Vec<String>,
    pub dirs: Vec<String>,
    pub dir_names: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CachesToml {
    cache: Vec<CacheDef>,
    credential: Vec<CredentialDef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BrowsersToml {
    family: Vec<FamilyDef>,
    browser: Vec<BrowserDef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactsToml {
    artifact: Vec<ArtifactDef>,
}

// Read without serde (util/embedded.rs); the tests read them both ways.
crate::embedded_struct!(CacheDef {
    get [name, class, sensitivity, paths, env]
    or_default [generic]
});
crate::embedded_enum!(CredFormat {
    "url-userinfo" => UrlUserinfo,
    "npmrc" => Npmrc,
    "yarnrc" => Yarnrc,
    "xml-password" => XmlPassword,
    "properties" => Properties,
    "toml-token" => TomlToken,
    "token-file" => TokenFile,
});
crate::embedded_struct!(CredentialDef { get [tool, paths, workspace, env, format] });
crate::embedded_struct!(FamilyDef {
    get [name, root_files, profile_files, session_files, debug_file]
});
crate::embedded_struct!(BrowserDef { get [name, family, paths] });
crate::embedded_struct!(ArtifactDef { get [class, sensitivity, names, dirs, dir_names] });
crate::embedded_struct!(CachesToml { get [cache, credential] });
crate::embedded_struct!(BrowsersToml { get [family, browser] });
crate::embedded_struct!(ArtifactsToml { get [artifact] });

#[cfg(test)]
#[test]
fn artifact_catalogs_read_as_serde_read_them() {
    crate::util::embedded::tests::same::<CachesToml>("caches.toml", CACHES_TOML);
    crate::util::embedded::tests::same::<BrowsersToml>("browsers.toml", BROWSERS_TOML);
    crate::util::embedded::tests::same::<ArtifactsToml>("artifacts.toml", ARTIFACTS_TOML);
}

pub const CACHES_TOML: &str = include_str!("../../probes/caches.toml");
pub const BROWSERS_TOML: &str = include_str!("../../probes/browsers.toml");
pub const ARTIFACTS_TOML: &str = include_str!("../../probes/artifacts.toml");

use crate::catalog::parse_embedded as parse;

fn caches_toml() -> &'static CachesToml {
    static C: OnceLock<CachesToml> = OnceLock::new();
    C.get_or_init(|| parse("caches.toml", CACHES_TOML))
}

fn browsers_toml() -> &'static BrowsersToml {
    static C: OnceLock<BrowsersToml> = OnceLock::new();
    C.get_or_init(|| parse("browsers.toml", BROWSERS_TOML))
}

pub fn cache_defs() -> &'static [CacheDef] {
    &caches_toml().cache
}

pub fn credential_defs() -> &'static [CredentialDef] {
    &caches_toml().credential
}

pub fn families() -> &'static [FamilyDef] {
    &browsers_toml().family
}

pub fn browser_defs() -> &'static [BrowserDef] {
    &browsers_toml().browser
}

pub fn artifact_defs() -> &'static [ArtifactDef] {
    static C: OnceLock<Vec<ArtifactDef>> = OnceLock::new();
    C.get_or_init(|| {
        let mut defs = parse::<ArtifactsToml>("artifacts.toml", ARTIFACTS_TOML).artifact;
        // Matching is case-insensitive: lower-case the patterns once.
        for d in &mut defs {
            for p in d
                .names
                .iter_mut()
                .chain(&mut d.dirs)
                .chain(&mut d.dir_names)
            {
                *p = p.to_lowercase();
            }
        }
        defs
    })
}

fn family(name: &str) -> &'static FamilyDef {
    families()
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("browsers.toml: unknown family {name} (checked by a test)"))
}

// ---------------------------------------------------------------------------
// Credential scanning: pure, and the only code that sees a credential's value.
// It returns where and what kind, never the value or any part of it.

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CredItem {
    pub line: usize,
    pub kind: Text,
    /// The configuration key (never its value), reduced to a safe shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The registry or index host the credential is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A value that only names a variable (${NPM_TOKEN}, $TOKEN) stores nothing.
fn is_reference(v: &str) -> bool {
    let v = v.trim();
    (v.starts_with("${") && v.ends_with('}'))
        || (v.starts_with('$')
            && v.len() > 1
            && v[1..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// Keeps a key or host printable and short, and drops anything that is not
/// an identifier character, so that a malformed line cannot smuggle text out.
fn safe_label(s: &str, max: usize) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '/' | '@'))
        .take(max)
        .collect()
}

fn url_credentials(line_no: usize, line: &str, out: &mut Vec<CredItem>) {
    let mut rest = line;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after
            .find(|c: char| c == '/' || c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '>'))
            .unwrap_or(after.len());
        let authority = &after[..end];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            let host = &authority[at + 1..];
            let kind = match userinfo.split_once(':') {
                Some((_, pw)) if !pw.is_empty() && !is_reference(pw) && !pw.contains("${") => {
                    Some("password in URL")
                }
                None if userinfo.len() >= 20 && !userinfo.contains('$') => Some("token in URL"),
                _ => None,
            };
            if let Some(kind) = kind {
                out.push(CredItem {
                    line: line_no,
                    kind: kind.into(),
                    key: None,
                    host: Some(safe_label(host, 100)),
                });
            }
        }
        rest = &after[end..];
    }
}

fn key_value(line: &str, seps: &[char]) -> Option<(String, String)> {
    let i = line.find(|c| seps.contains(&c))?;
    Some((
        line[..i].trim().to_string(),
        line[i + 1..].trim().to_string(),
    ))
}

pub fn scan_credentials(format: CredFormat, text: &str) -> Vec<CredItem> {
    let mut out = Vec::new();
    if format == CredFormat::TokenFile {
        if !text.trim().is_empty() {
            out.push(CredItem {
                line: 1,
                kind: "token file".into(),
                key: None,
                host: None,
            });
        }
        return out;
    }
    if format == CredFormat::XmlPassword {
        for tag in ["password", "passphrase"] {
            let open = format!("<{tag}>");
            let close = format!("</{tag}>");
            let mut from = 0;
            while let Some(s) = text[from..].find(&open) {
                let start = from + s + open.len();
                let Some(e) = text[start..].find(&close) else {
                    break;
                };
                let inner = text[start..start + e].trim();
                if !inner.is_empty() && !is_reference(inner) {
                    out.push(CredItem {
                        line: text[..start].matches('\n').count() + 1,
                        kind: "password in settings".into(),
                        key: Some(tag.to_string()),
                        host: None,
                    });
                }
                from = start + e + close.len();
            }
        }
        return out;
    }
    for (n, raw) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = raw.trim();
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with(';')
            || line.starts_with('!')
        {
            continue;
        }
        match format {
            CredFormat::UrlUserinfo => url_credentials(line_no, line, &mut out),
            CredFormat::Npmrc => {
                if let Some((key, value)) = key_value(line, &['=']) {
                    let last = key.rsplit(':').next().unwrap_or(&key);
                    let v = unquote(&value);
                    let secret_key =
                        ["_authToken", "_auth", "_password", "authToken"].contains(&last);
                    if secret_key && !v.is_empty() && !is_reference(v) {
                        let host = key
                            .strip_prefix("//")
                            .and_then(|k| k.split('/').next())
                            .map(|h| safe_label(h, 100));
                        out.push(CredItem {
                            line: line_no,
                            kind: "npm registry credential".into(),
                            key: Some(last.to_string()),
                            host,
                        });
                        continue;
                    }
                }
                url_credentials(line_no, line, &mut out);
            }
            CredFormat::Yarnrc => {
                if let Some((key, value)) = key_value(line, &[':']) {
                    let v = unquote(&value);
                    if ["npmAuthToken", "npmAuthIdent"].contains(&key.as_str())
                        && !v.is_empty()
                        && !is_reference(v)
                    {
                        out.push(CredItem {
                            line: line_no,
                            kind: "yarn registry credential".into(),
                            key: Some(key),
                            host: None,
                        });
                        continue;
                    }
                }
                url_credentials(line_no, line, &mut out);
            }
            CredFormat::Properties => {
                if let Some((key, value)) = key_value(line, &['=', ':']) {
                    let k = key.to_ascii_lowercase();
                    let named = [
                        "password",
                        "passwd",
                        "token",
                        "secret",
                        "apikey",
                        "api_key",
                        "api-key",
                        "credential",
                    ]
                    .iter()
                    .any(|w| k.contains(w));
                    let v = unquote(&value);
                    if named && !v.is_empty() && !is_reference(v) {
                        out.push(CredItem {
                            line: line_no,
                            kind: "credential property".into(),
                            key: Some(safe_label(&key, 80)),
                            host: None,
                        });
                        continue;
                    }
                }
                url_credentials(line_no, line, &mut out);
            }
            CredFormat::TomlToken => {
                if let Some((key, value)) = key_value(line, &['=']) {
                    let v = unquote(&value);
                    if ["token", "secret-key"].contains(&key.as_str())
                        && !v.is_empty()
                        && !is_reference(v)
                    {
                        out.push(CredItem {
                            line: line_no,
                            kind: "registry token".into(),
                            key: Some(key),
                            host: None,
                        });
                    }
                }
            }
            CredFormat::TokenFile | CredFormat::XmlPassword => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Caches

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheEntry {
    pub name: String,
    pub class: String,
    pub sensitivity: String,
    pub path: String,
    /// Where `path` leads once links are followed inside the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// home /root, env PIP_CACHE_DIR, or mount.
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    pub writable: bool,
    #[serde(flatten)]
    pub placement: Placement,
    #[serde(skip)]
    pub generic: bool,
    #[serde(skip)]
    pub real: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CredentialHit {
    pub tool: String,
    pub path: String,
    pub format: CredFormat,
    pub items: Vec<CredItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// The cache this file lives in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_cache: Option<String>,
    pub sensitivity: Text,
    #[serde(flatten)]
    pub placement: Placement,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheFacts {
    pub homes: Vec<String>,
    /// Cache locations looked at (under each home, named by a variable,
    /// mounted), found or not: what a "none found" rests on.
    #[serde(skip)]
    pub looked_at: usize,
    pub caches: Vec<CacheEntry>,
    pub credentials: Vec<CredentialHit>,
    /// Configuration files that exist but could not be read, with why.
    pub unreadable: Vec<(String, String)>,
}

fn is_dir_at(host: &Host, p: &Path) -> bool {
    std::fs::symlink_metadata(host.path(p)).is_ok_and(|m| m.is_dir())
}

fn is_file_at(host: &Host, p: &Path) -> bool {
    std::fs::symlink_metadata(host.path(p)).is_ok_and(|m| m.is_file())
}

/// Mounts whose contents outlive the container.
fn persistent_mounts(mounts: Option<&MountFacts>) -> Vec<PathBuf> {
    mounts
        .map(|m| {
            m.mounts
                .iter()
                .filter(|e| {
                    matches!(
                        e.class,
                        MountClass::HostBind
                            | MountClass::Volume
                            | MountClass::Workspace
                            | MountClass::HostRoot
                    )
                })
                // The machine's own root seen from a sandbox is the whole
                // machine, not a mount to walk; its parts and the engines'
                // storage of other containers neither.
                .filter(|e| e.walked())
                .filter(|e| {
                    !(e.class == MountClass::HostRoot && e.mount.mount_point == Path::new("/"))
                })
                .filter(|e| {
                    !catalog::pruned_or_below(Walk::Artifacts, &e.mount.mount_point)
                        && !catalog::pruned_path(Walk::Artifacts, &e.mount.root)
                })
                .map(|e| e.mount.mount_point.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The catalog cache a mounted directory is, judged by its path inside the
/// source (field 4) or its mount point ending in a catalog path.
fn cache_for_mount(root: &Path, mount_point: &Path) -> Option<&'static CacheDef> {
    let specific = cache_defs().iter().filter(|d| !d.generic);
    let generic = cache_defs().iter().filter(|d| d.generic);
    specific.chain(generic).find(|d| {
        d.paths
            .iter()
            .filter(|p| !p.starts_with('/'))
            .any(|p| root.ends_with(p) || mount_point.ends_with(p))
    })
}

pub fn collect_caches(
    host: &Host,
    mounts: Option<&MountFacts>,
    users: &Users,
    workspace: Option<&Path>,
    deadline: Instant,
) -> Result<CacheFacts, Unchecked> {
    // Whether a cache outlives the container depends on the mount it is on:
    // without the mount table an empty result would read as a pass.
    if mounts.is_none() {
        return Err(Unchecked::Missing(
            "no mount table: whether caches outlive the container cannot be told",
        ));
    }
    let homes = users.home_paths(MAX_HOMES);
    let mut facts = CacheFacts {
        homes: homes
            .iter()
            .map(|h| h.to_string_lossy().into_owned())
            .collect(),
        ..CacheFacts::default()
    };

    let mut candidates: Vec<(&'static CacheDef, PathBuf, String)> = Vec::new();
    for def in cache_defs() {
        for home in &homes {
            for rel in &def.paths {
                candidates.push((
                    def,
                    place::under(home, rel),
                    format!("home {}", home.display()),
                ));
            }
        }
        for e in &def.env {
            if let Some(p) = place::env_path(host, e) {
                let var = e.split('/').next().unwrap_or(e);
                candidates.push((def, p, format!("env {var}")));
            }
        }
    }
    if let Some(m) = mounts {
        for e in &m.mounts {
            if !matches!(e.class, MountClass::HostBind | MountClass::Volume) || !e.walked() {
                continue;
            }
            let def = cache_for_mount(&e.mount.root, &e.mount.mount_point).or_else(|| {
                e.has_kind("cache")
                    .then(|| cache_defs().iter().find(|d| d.generic))
                    .flatten()
            });
            if let Some(def) = def {
                candidates.push((def, e.mount.mount_point.clone(), "mount".to_string()));
            }
        }
    }

    facts.looked_at = candidates
        .iter()
        .map(|(_, p, _)| p)
        .collect::<BTreeSet<_>>()
        .len();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    for (def, path, origin) in candidates {
        if Instant::now() > deadline {
            return Err(Unchecked::OutOfTime("looking at cache locations"));
        }
        let Some(real) = place::resolve(host, &path) else {
            continue;
        };
        if !is_dir_at(host, &real) || !seen.insert(real.clone()) {
            continue;
        }
        let placement = place::place(mounts, &real);
        let writable = host.access(&real, AccessFlags::W_OK).is_ok() && !placement.read_only_mount;
        facts.caches.push(CacheEntry {
            name: def.name.clone(),
            class: def.class.clone(),
            sensitivity: def.sensitivity.clone(),
            path: path.to_string_lossy().into_owned(),
            resolved: (real != path).then(|| real.to_string_lossy().into_owned()),
            origin,
            owner: place::uid_of(host, &real).map(|u| users.owner(u)),
            writable,
            placement,
            generic: def.generic,
            real,
        });
    }

    let mut files: Vec<(&'static CredentialDef, PathBuf)> = Vec::new();
    for def in credential_defs() {
        for home in &homes {
            for rel in def.paths.iter().filter(|p| !p.starts_with('/')) {
                files.push((def, place::under(home, rel)));
            }
        }
        for abs in def.paths.iter().filter(|p| p.starts_with('/')) {
            files.push((def, PathBuf::from(abs)));
        }
        if let Some(ws) = workspace {
            for name in &def.workspace {
                files.push((def, ws.join(name)));
            }
        }
        for e in &def.env {
            if let Some(p) = place::env_path(host, e) {
                files.push((def, p));
            }
        }
    }
    let mut seen_files: BTreeSet<PathBuf> = BTreeSet::new();
    for (def, path) in files {
        if Instant::now() > deadline {
            return Err(Unchecked::OutOfTime("reading tool configurations"));
        }
        let Some(real) = place::resolve(host, &path) else {
            continue;
        };
        if !is_file_at(host, &real) || !seen_files.insert(real.clone()) {
            continue;
        }
        let text = match host.read(&real) {
            Ok(t) => t,
            Err(e) => {
                facts
                    .unreadable
                    .push((path.to_string_lossy().into_owned(), e.kind().to_string()));
                continue;
            }
        };
        let items = scan_credentials(def.format, &text);
        drop(text);
        if items.is_empty() {
            continue;
        }
        let in_cache = facts
            .caches
            .iter()
            .filter(|c| !c.generic && real.starts_with(&c.real))
            .map(|c| c.name.clone())
            .next();
        facts.credentials.push(CredentialHit {
            tool: def.tool.clone(),
            path: path.to_string_lossy().into_owned(),
            format: def.format,
            items,
            owner: place::uid_of(host, &real).map(|u| users.owner(u)),
            in_cache,
            sensitivity: "secret".into(),
            placement: place::place(mounts, &real),
        });
    }
    Ok(facts)
}

/// A cache that should be reported: specific caches always, a generic cache
/// root only when no reported specific cache lies below it.
fn reported_caches(f: &CacheFacts) -> Vec<&CacheEntry> {
    let shared = |c: &CacheEntry| c.placement.retention == Retention::Persistent && c.writable;
    let specific: Vec<&CacheEntry> = f
        .caches
        .iter()
        .filter(|c| !c.generic && shared(c))
        .collect();
    let mut out = specific.clone();
    for c in f.caches.iter().filter(|c| c.generic && shared(c)) {
        if !specific.iter().any(|s| s.real.starts_with(&c.real)) {
            out.push(c);
        }
    }
    out
}

fn with_placement(f: Finding, p: &Placement) -> Finding {
    let mut f = f
        .with("mount_point", p.mount_point.clone())
        .with(
            "retention",
            serde_json::to_value(p.retention).unwrap_or_default(),
        )
        .with("shared_with", p.shared_with.clone())
        .with("fstype", p.fstype.clone());
    if let Some(c) = p.mount_class {
        f = f.with("mount_class", serde_json::to_value(c).unwrap_or_default());
    }
    if let Some(h) = &p.host_path {
        f = f.with("host_path", h.clone());
    }
    f
}

fn owner_value(o: &Option<Owner>) -> serde_json::Value {
    serde_json::to_value(o).unwrap_or_default()
}

pub fn evaluate_caches(f: &CacheFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for c in reported_caches(f) {
        // The blueprint's 0-point signal is a host or global cache shared
        // blindly; a volume is at least the engine's, not the host's.
        let (sev, whose) = match &*c.placement.shared_with {
            "host" => (Severity::High, "a host path shared with the host"),
            "volume" => (Severity::Medium, "a volume that outlives the container"),
            _ => (
                Severity::Medium,
                "the workspace mount (a host checkout or a volume), which outlives the container",
            ),
        };
        let fnd = Finding::new(
            Code::CacheSharedWritable,
            &c.path,
            format!(
                "the {} cache at {} is writable and lives on {whose} ({})",
                c.name,
                c.path,
                c.placement
                    .host_path
                    .as_deref()
                    .unwrap_or(&c.placement.mount_point)
            ),
        )
        .severity(sev)
        .with("cache", c.name.clone())
        .with("class", c.class.clone())
        .with("sensitivity", c.sensitivity.clone())
        .with("path", c.path.clone())
        .with("origin", c.origin.clone())
        .with("owner", owner_value(&c.owner))
        .with("writable", c.writable);
        out.push(with_placement(fnd, &c.placement));
    }
    for h in &f.credentials {
        let kinds: BTreeSet<&str> = h.items.iter().map(|i| &*i.kind).collect();
        let hosts: BTreeSet<&str> = h.items.iter().filter_map(|i| i.host.as_deref()).collect();
        let keys: BTreeSet<&str> = h.items.iter().filter_map(|i| i.key.as_deref()).collect();
        let lines: Vec<usize> = h.items.iter().map(|i| i.line).collect();
        let mut fnd = Finding::new(
            Code::CacheCredentials,
            &h.path,
            format!(
                "{} ({} configuration) holds {} credential(s): {}; the value is not shown",
                h.path,
                h.tool,
                h.items.len(),
                kinds.iter().copied().collect::<Vec<_>>().join(", ")
            ),
        )
        .with("tool", h.tool.clone())
        .with("path", h.path.clone())
        .with("format", serde_json::to_value(h.format).unwrap_or_default())
        .with("count", h.items.len())
        .with("kinds", kinds.into_iter().collect::<Vec<_>>())
        .with("lines", lines)
        .with("owner", owner_value(&h.owner))
        .with("sensitivity", "secret");
        if !hosts.is_empty() {
            fnd = fnd.with("hosts", hosts.into_iter().collect::<Vec<_>>());
        }
        if !keys.is_empty() {
            fnd = fnd.with("keys", keys.into_iter().collect::<Vec<_>>());
        }
        if let Some(c) = &h.in_cache {
            fnd = fnd.with("in_cache", c.clone());
        }
        out.push(with_placement(fnd, &h.placement));
    }
    out
}

// ---------------------------------------------------------------------------
// Browser profiles

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserProfile {
    pub browser: String,
    pub family: String,
    /// The user-data directory (or a single profile directory mounted alone).
    pub path: String,
    pub origin: String,
    /// Profile directories found in it ("Default", "Profile 1", "abcd.default-release").
    pub profiles: Vec<String>,
    /// Sensitive files present, relative to `path`.
    pub files: Vec<String>,
    /// Cookies or saved logins are present.
    pub session_state: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug_port_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    pub writable: bool,
    pub sensitivity: Text,
    #[serde(flatten)]
    pub placement: Placement,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BrowserFacts {
    pub profiles: Vec<BrowserProfile>,
    /// Homes searched and user-data locations looked at (under each home
    /// and at each persistent mount): what a "none found" rests on.
    #[serde(skip)]
    pub homes: usize,
    #[serde(skip)]
    pub looked_at: usize,
}

/// Entries of a profile directory or user-data directory looked at, at most.
const PROFILE_ENTRIES: usize = 256;

fn exists_at(host: &Host, p: &Path) -> bool {
    std::fs::symlink_metadata(host.path(p)).is_ok()
}

/// Looks at a candidate user-data directory; None if nothing of a browser is there.
fn inspect_profile(
    host: &Host,
    users: &Users,
    mounts: Option<&MountFacts>,
    def: &BrowserDef,
    path: &Path,
    origin: String,
) -> Option<BrowserProfile> {
    let fam = family(&def.family);
    let real = place::resolve(host, path)?;
    if !is_dir_at(host, &real) {
        return None;
    }
    let mut files = Vec::new();
    let mut profiles = Vec::new();
    let mut session_state = false;
    for f in &fam.root_files {
        if exists_at(host, &real.join(f)) {
            session_state |= fam.session_files.contains(f);
            files.push(f.clone());
        }
    }
    // The directory may itself be a profile (one mounted on its own).
    let mut dirs: Vec<(String, PathBuf)> = vec![(".".into(), real.clone())];
    if let Ok(rd) = std::fs::read_dir(host.path(&real)) {
        for e in rd.flatten().take(PROFILE_ENTRIES) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let name = e.file_name().to_string_lossy().into_owned();
                dirs.push((name.clone(), real.join(&name)));
            }
        }
    }
    crate::util::sort::sort(&mut dirs[1..]);
    for (name, dir) in &dirs {
        let mut any = false;
        for f in &fam.profile_files {
            if exists_at(host, &dir.join(f)) {
                any = true;
                session_state |= fam.session_files.contains(f);
                files.push(if name == "." {
                    f.clone()
                } else {
                    format!("{name}/{f}")
                });
            }
        }
        if any {
            profiles.push(name.clone());
        }
    }
    if files.is_empty() {
        return None;
    }
    let debug = real.join(&fam.debug_file);
    let (debug_port_file, debug_port) = if is_file_at(host, &debug) {
        // The file holds the port number and a browser id: not a secret.
        let port = host
            .read(&debug)
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u16>().ok()));
        (Some(debug.to_string_lossy().into_owned()), port)
    } else {
        (None, None)
    };
    let placement = place::place(mounts, &real);
    Some(BrowserProfile {
        browser: def.name.clone(),
        family: def.family.clone(),
        path: path.to_string_lossy().into_owned(),
        origin,
        profiles,
        files,
        session_state,
        debug_port_file,
        debug_port,
        owner: place::uid_of(host, &real).map(|u| users.owner(u)),
        writable: host.access(&real, AccessFlags::W_OK).is_ok() && !placement.read_only_mount,
        sensitivity: "browser-session".into(),
        placement,
    })
}

pub fn collect_browsers(
    host: &Host,
    mounts: Option<&MountFacts>,
    users: &Users,
    deadline: Instant,
) -> Result<BrowserFacts, Unchecked> {
    if mounts.is_none() {
        return Err(Unchecked::Missing(
            "no mount table: whether browser profiles outlive the container cannot be told",
        ));
    }
    let homes = users.home_paths(MAX_HOMES);
    let mut cands: Vec<(&'static BrowserDef, PathBuf, String)> = Vec::new();
    for def in browser_defs() {
        for home in &homes {
            for rel in &def.paths {
                cands.push((
                    def,
                    place::under(home, rel),
                    format!("home {}", home.display()),
                ));
            }
        }
    }
    // A profile mounted somewhere else: the mount point is the user-data
    // directory, a profile, or a directory above one (-v ~/.config:/cfg).
    for mp in persistent_mounts(mounts) {
        for def in browser_defs() {
            cands.push((def, mp.clone(), "mount".into()));
            for rel in &def.paths {
                let comps: Vec<&str> = rel.split('/').collect();
                for i in 1..comps.len() {
                    cands.push((def, mp.join(comps[i..].join("/")), "mount".into()));
                }
            }
        }
    }
    let mut facts = BrowserFacts {
        homes: homes.len(),
        looked_at: cands
            .iter()
            .map(|(_, p, _)| p)
            .collect::<BTreeSet<_>>()
            .len(),
        ..BrowserFacts::default()
    };
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    for (def, path, origin) in cands {
        if Instant::now() > deadline {
            return Err(Unchecked::OutOfTime("looking at browser profiles"));
        }
        let Some(real) = place::resolve(host, &path) else {
            continue;
        };
        if seen.contains(&real) {
            continue;
        }
        if let Some(p) = inspect_profile(host, users, mounts, def, &path, origin) {
            seen.insert(real);
            facts.profiles.push(p);
        }
    }
    Ok(facts)
}

pub fn evaluate_browsers(f: &BrowserFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &f.profiles {
        // A profile in the container's own layer or a tmpfs is the
        // blueprint's dedicated profile that is reset with the container:
        // it is listed in the inventory, not reported.
        if p.placement.retention == Retention::Ephemeral {
            continue;
        }
        if p.session_state {
            let (sev, what) = match &*p.placement.shared_with {
                "volume" => (
                    Severity::Medium,
                    "a volume, so the profile is reused by every run that mounts it",
                ),
                "unknown" => (Severity::High, "a mount that could not be classified"),
                _ => (
                    Severity::High,
                    "a host path: this is a personal or shared profile",
                ),
            };
            let fnd = Finding::new(
                Code::BrowserProfile,
                &p.path,
                format!(
                    "{} {} profile at {} holds session state ({}) and lives on {what}",
                    crate::util::text::article(&p.browser),
                    p.browser,
                    p.path,
                    p.files.join(", ")
                ),
            )
            .severity(sev)
            .with("browser", p.browser.clone())
            .with("path", p.path.clone())
            .with("profiles", p.profiles.clone())
            .with("files", p.files.clone())
            .with("owner", owner_value(&p.owner))
            .with("writable", p.writable)
            .with("sensitivity", p.sensitivity.clone());
            out.push(with_placement(fnd, &p.placement));
        }
        if let Some(dbg) = &p.debug_port_file {
            let mut fnd = Finding::new(
                Code::BrowserDebugPort,
                dbg,
                format!(
                    "the {} profile at {} holds {}: a remote-debugging endpoint was open for it",
                    p.browser,
                    p.path,
                    dbg.rsplit('/').next().unwrap_or(dbg)
                ),
            )
            .with("browser", p.browser.clone())
            .with("profile", p.path.clone());
            if let Some(port) = p.debug_port {
                fnd = fnd.with("port", port);
            }
            out.push(with_placement(fnd, &p.placement));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Logs, traces, screenshots and downloads on persistent mounts

/// Directory depth below a mount point, entries per run, and the manifest
/// size. An artifact can be anywhere that is not pruned, so the entry count
/// is a backstop and the deadline the real bound (a million entries take
/// about a second here); memory depends on MAX_PENDING, not on entries.
pub const WALK_DEPTH: usize = 8;
pub const WALK_ENTRIES: usize = 4_000_000;
pub const MANIFEST_MAX: usize = 500;
/// Directories found but not yet listed. Depth first, this is the sum of
/// the fan-outs along one path: only a level of this many sibling
/// directories overruns it, and that is reported rather than held.
pub const MAX_PENDING: usize = 50_000;
/// Artifacts held back per directory until it is known not to be a
/// browser profile; past this the markers are looked up by name instead.
const HELD_HITS: usize = 256;

/// A directory that holds one of these is a browser profile: not walked.
const PROFILE_MARKERS: &[&str] = &["Local State", "profiles.ini", "Cookies", "cookies.sqlite"];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ArtifactEntry {
    pub class: String,
    pub sensitivity: String,
    pub path: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    pub retention: Retention,
    pub mount_point: String,
    pub shared_with: Text,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WalkStat {
    pub mount_point: String,
    pub entries: usize,
    /// Directories listed (or tried).
    pub dirs: usize,
    pub unreadable_dirs: usize,
    /// Why the walk stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ArtifactFacts {
    /// Persistent artifacts, at most MANIFEST_MAX; `counts` has them all.
    pub manifest: Vec<ArtifactEntry>,
    pub manifest_truncated: bool,
    pub walks: Vec<WalkStat>,
    #[serde(skip)]
    pub groups: BTreeMap<(String, String), Group>,
}

#[derive(Debug, Clone, Default)]
pub struct Group {
    pub sensitivity: String,
    pub shared_with: Text,
    pub count: usize,
    pub bytes: u64,
    pub examples: Vec<String>,
    pub owners: BTreeSet<String>,
    pub dir: Option<PathBuf>,
}

/// `*` matches any run of bytes: the reference the compiled patterns below
/// are tested against.
#[cfg(test)]
fn wild(p: &[u8], x: &[u8]) -> bool {
    match p.iter().position(|&c| c == b'*') {
        None => p == x,
        Some(i) => {
            if x.len() < i || p[..i] != x[..i] {
                return false;
            }
            let rest = &p[i + 1..];
            (i..=x.len()).any(|j| wild(rest, &x[j..]))
        }
    }
}

/// The catalog's name and dir_names patterns, compiled once: the walk
/// matches every file name it meets against all of them.
fn compiled() -> &'static [(Vec<Glob>, Vec<Glob>)] {
    static C: OnceLock<Vec<(Vec<Glob>, Vec<Glob>)>> = OnceLock::new();
    C.get_or_init(|| {
        artifact_defs()
            .iter()
            .map(|d| {
                (
                    d.names.iter().map(|p| Glob::new(p)).collect(),
                    d.dir_names.iter().map(|p| Glob::new(p)).collect(),
                )
            })
            .collect()
    })
}

/// The artifact class of a file, from its name or the artifact directory
/// (`inherited`, an index into the catalog) it sits below. Patterns are
/// lower-cased by the catalog loader; an ASCII name is lower-cased on the
/// stack, anything else as Unicode, as before.
fn classify(name: &str, inherited: Option<usize>) -> Option<usize> {
    let mut buf = [0u8; 256];
    let owned;
    let lower: &[u8] = if name.is_ascii() && name.len() <= buf.len() {
        let b = &mut buf[..name.len()];
        b.copy_from_slice(name.as_bytes());
        b.make_ascii_lowercase();
        b
    } else {
        owned = name.to_lowercase();
        owned.as_bytes()
    };
    let pats = compiled();
    if let Some(i) = pats
        .iter()
        .position(|(names, _)| names.iter().any(|g| g.matches(lower)))
    {
        return Some(i);
    }
    let i = inherited?;
    let dir_names = &pats[i].1;
    (dir_names.is_empty() || dir_names.iter().any(|g| g.matches(lower))).then_some(i)
}

fn dir_class(name: &str) -> Option<usize> {
    let n = name.to_lowercase();
    artifact_defs().iter().position(|d| d.dirs.contains(&n))
}

fn common_dir(a: &Path, b: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for (x, y) in a.components().zip(b.components()) {
        if x != y {
            break;
        }
        out.push(x);
    }
    out
}

/// Whether `dir` holds one of PROFILE_MARKERS, asked by name: for a
/// directory too large to hold its artifacts back until its listing ends.
fn has_profile_marker(host: &Host, dir: &Path) -> bool {
    PROFILE_MARKERS
        .iter()
        .any(|m| std::fs::symlink_metadata(host.path(dir.join(m))).is_ok())
}

/// Where one artifact walk adds what it finds.
struct Sink<'a> {
    host: &'a Host,
    users: &'a Users,
    placement: &'a Placement,
    mount_point: &'a str,
    mp: &'a Path,
}

impl Sink<'_> {
    fn record(&self, facts: &mut ArtifactFacts, child: PathBuf, ci: usize) {
        let def = &artifact_defs()[ci];
        let meta = std::fs::symlink_metadata(self.host.path(&child)).ok();
        let size = meta.as_ref().map(|m| m.len()).unwrap_or(0);
        let owner = meta.as_ref().map(|m| self.users.owner(m.uid()));
        let path = child.to_string_lossy().into_owned();
        let g = facts
            .groups
            .entry((self.mount_point.to_string(), def.class.clone()))
            .or_default();
        g.sensitivity = def.sensitivity.clone();
        g.shared_with = self.placement.shared_with.clone();
        g.count += 1;
        g.bytes += size;
        if g.examples.len() < 5 {
            g.examples.push(path.clone());
        }
        if let Some(o) = &owner {
            if g.owners.len() < 5 {
                g.owners.insert(o.label());
            }
        }
        let parent = child.parent().unwrap_or(self.mp).to_path_buf();
        g.dir = Some(match &g.dir {
            None => parent,
            Some(d) => common_dir(d, &parent),
        });
        if facts.manifest.len() < MANIFEST_MAX {
            facts.manifest.push(ArtifactEntry {
                class: def.class.clone(),
                sensitivity: def.sensitivity.clone(),
                path,
                size,
                owner,
                retention: self.placement.retention,
                mount_point: self.mount_point.to_string(),
                shared_with: self.placement.shared_with.clone(),
            });
        } else {
            facts.manifest_truncated = true;
        }
    }
}

pub fn collect_artifacts(
    host: &Host,
    mounts: Option<&MountFacts>,
    users: &Users,
    deadline: Instant,
) -> Result<ArtifactFacts, Unchecked> {
    let Some(m) = mounts else {
        return Err(Unchecked::Missing(
            "no mount table: persistent mounts cannot be told apart",
        ));
    };
    let all_points: BTreeSet<PathBuf> = m
        .mounts
        .iter()
        .map(|e| e.mount.mount_point.clone())
        .collect();
    let mut facts = ArtifactFacts::default();
    // One budget for all the mounts.
    let mut budget = WALK_ENTRIES;
    for mp in persistent_mounts(Some(m)) {
        if !is_dir_at(host, &mp) {
            continue;
        }
        let placement = place::place(Some(m), &mp);
        let mount_point = mp.to_string_lossy().into_owned();
        let mut v = ArtifactWalk {
            host,
            sink: Sink {
                host,
                users,
                placement: &placement,
                mount_point: &mount_point,
                mp: &mp,
            },
            facts: &mut facts,
            all_points: &all_points,
            held: Vec::new(),
            streaming: false,
        };
        // Depth first, the order the manifest has always been in;
        // directories down to WALK_DEPTH - 1 are listed. A walker per
        // mount: a volume mounted twice is reported under each mount point.
        // No visited set: the walk never enters a mount point (all_points),
        // so it cannot meet a directory twice, and its memory stays bounded
        // by MAX_PENDING however many directories it lists.
        let limits = walk::Budget {
            entries: budget,
            depth: WALK_DEPTH - 1,
            queued: MAX_PENDING,
        };
        let w = Walker::new(Order::DepthFirst, catalog::prune(Walk::Artifacts), deadline)
            .without_visited()
            .walk(host, &mp, limits, None, &mut v);
        budget -= w.entries;
        for g in facts.groups.values_mut() {
            if let Some(d) = &mut g.dir {
                if d.as_os_str().is_empty() {
                    *d = mp.clone();
                }
            }
        }
        facts.walks.push(WalkStat {
            mount_point,
            entries: w.entries,
            dirs: w.listed + w.unlisted,
            unreadable_dirs: w.unlisted,
            truncated: w.stop.map(|s| match s {
                Stop::Entries => format!("the walk budget of {WALK_ENTRIES} entries ran out"),
                Stop::Deadline => "the probe's deadline came first".into(),
                Stop::Queued { .. } => {
                    format!("more than {MAX_PENDING} directories were waiting to be listed")
                }
                Stop::Dirs => Stop::Dirs.to_string(),
            }),
        });
    }
    Ok(facts)
}

/// One mount's artifact walk. A browser profile is not walked, and its
/// marker may come last in the listing: what a directory adds (its
/// subdirectories, its artifacts in `held`) stays undone until then, or
/// until HELD_HITS artifacts make it look the markers up by name.
struct ArtifactWalk<'a> {
    host: &'a Host,
    sink: Sink<'a>,
    facts: &'a mut ArtifactFacts,
    /// Mount points: each is walked on its own, if at all.
    all_points: &'a BTreeSet<PathBuf>,
    held: Vec<(std::ffi::OsString, usize)>,
    /// The directory is known not to be a profile: artifacts are recorded
    /// as they come.
    streaming: bool,
}

impl Visit for ArtifactWalk<'_> {
    /// The artifact class of a directory above (`logs/`), an index into
    /// the catalog.
    type Mark = Option<usize>;

    fn enter(&mut self, _dir: &Dir<'_, Self::Mark>) -> bool {
        self.held.clear();
        self.streaming = false;
        true
    }

    fn entry(&mut self, dir: &Dir<'_, Self::Mark>, name: &OsStr, ft: FileType) -> Step {
        if PROFILE_MARKERS.iter().any(|p| name == *p) {
            return Step::Abandon;
        }
        if ft.is_dir() {
            if self.all_points.contains(&dir.path.join(name)) {
                return Step::Next;
            }
            return Step::Descend;
        }
        // Regular files only: a FIFO, socket or device named app.log is
        // never an artifact we account for.
        if !ft.is_file() {
            return Step::Next;
        }
        let Some(ci) = classify(&name.to_string_lossy(), *dir.mark) else {
            return Step::Next;
        };
        if self.streaming {
            self.sink.record(self.facts, dir.path.join(name), ci);
            return Step::Next;
        }
        self.held.push((name.to_os_string(), ci));
        if self.held.len() >= HELD_HITS {
            if has_profile_marker(self.host, dir.path) {
                return Step::Abandon;
            }
            self.streaming = true;
            self.flush(dir.path);
        }
        Step::Next
    }

    fn mark(&mut self, dir: &Dir<'_, Self::Mark>, name: &OsStr, _path: &Path) -> Self::Mark {
        dir_class(&name.to_string_lossy()).or(*dir.mark)
    }

    fn leave(&mut self, dir: &Dir<'_, Self::Mark>) {
        self.flush(dir.path);
    }
}

impl ArtifactWalk<'_> {
    fn flush(&mut self, dir: &Path) {
        for (n, ci) in std::mem::take(&mut self.held) {
            self.sink.record(self.facts, dir.join(n), ci);
        }
    }
}

pub fn evaluate_artifacts(f: &ArtifactFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for ((mp, class), g) in &f.groups {
        let dir = g
            .dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_else(|| mp.clone());
        // The workspace is exported and reviewed by design; what else
        // persists has no owner unless the policy names one.
        let sev = if g.shared_with == "workspace" {
            Severity::Low
        } else {
            Severity::Medium
        };
        out.push(
            Finding::new(
                Code::ArtifactPersistent,
                format!("{class}:{dir}"),
                format!(
                    "{} {class} file(s) ({} bytes) under {dir} on the persistent mount {mp}",
                    g.count, g.bytes
                ),
            )
            .severity(sev)
            .with("class", class.clone())
            .with("sensitivity", g.sensitivity.clone())
            .with("retention", "persistent")
            .with("shared_with", g.shared_with.clone())
            .with("mount_point", mp.clone())
            .with("directory", dir.clone())
            .with("count", g.count)
            .with("bytes", g.bytes)
            .with("examples", g.examples.clone())
            .with("owners", g.owners.iter().cloned().collect::<Vec<_>>()),
        );
    }
    for w in &f.walks {
        if let Some(why) = &w.truncated {
            let why = format!(
                "the walk of {} stopped after {} entries: {why}",
                w.mount_point, w.entries
            );
            out.push(
                Finding::new(
                    Code::ProbeIncomplete,
                    format!("artifacts:{}", w.mount_point),
                    format!("{why}; artifacts beyond that point are not checked"),
                )
                .unknown()
                .with("probe", "artifacts")
                .with("phase", 5)
                .with("reason", why),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogs_parse_and_are_consistent() {
        assert!(cache_defs().iter().any(|c| c.name == "pip"));
        assert_eq!(cache_defs().iter().filter(|c| c.generic).count(), 1);
        for c in cache_defs() {
            assert!(
                ["package", "model", "build", "mixed"].contains(&c.class.as_str()),
                "{}",
                c.name
            );
            assert!(!c.paths.is_empty(), "{}", c.name);
            for p in &c.paths {
                assert!(!p.starts_with('/') && !p.ends_with('/'), "{}: {p}", c.name);
            }
            for e in &c.env {
                assert!(!e.starts_with('/') && !e.is_empty(), "{}: {e}", c.name);
            }
        }
        for f in families() {
            for s in &f.session_files {
                assert!(
                    f.profile_files.contains(s) || f.root_files.contains(s),
                    "{}: {s}",
                    f.name
                );
            }
        }
        for b in browser_defs() {
            let _ = family(&b.family);
            assert!(!b.paths.is_empty());
        }
        for a in artifact_defs() {
            assert!(
                ["log", "trace", "screenshot", "download"].contains(&a.class.as_str()),
                "{}",
                a.class
            );
            assert!(
                ["internal", "confidential", "untrusted"].contains(&a.sensitivity.as_str()),
                "{}",
                a.sensitivity
            );
        }
        assert!(!credential_defs().is_empty());
    }

    const CANARY: &str = "CANARYxq7Zp2Lm9Vt4Rw8Ys1Nk6Bd3Hf5Jg0";

    fn no_leak(items: &[CredItem]) {
        let text = serde_json::to_string(items).unwrap();
        for w in [CANARY, &CANARY[6..18], "hunter2secret"] {
            assert!(!text.contains(w), "{w} leaked in {text}");
        }
    }

    #[test]
    fn finds_credentials_without_their_values() {
        let pip = format!(
            "[global]\nindex-url = https://alice:{CANARY}@pypi.example.com/simple\n\
             extra-index-url = https://pypi.org/simple\n; https://u:{CANARY}@commented.example\n"
        );
        let items = scan_credentials(CredFormat::UrlUserinfo, &pip);
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].line, 2);
        assert_eq!(items[0].host.as_deref(), Some("pypi.example.com"));
        no_leak(&items);

        let npmrc = format!(
            "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={CANARY}\n\
             //npm.pkg.github.com/:_authToken=${{GITHUB_TOKEN}}\nalways-auth=true\n"
        );
        let items = scan_credentials(CredFormat::Npmrc, &npmrc);
        assert_eq!(
            items.len(),
            1,
            "a ${{VAR}} reference stores nothing: {items:?}"
        );
        assert_eq!(items[0].key.as_deref(), Some("_authToken"));
        assert_eq!(items[0].host.as_deref(), Some("registry.npmjs.org"));
        no_leak(&items);

        let yarn =
            format!("npmRegistries:\n  \"https://r.example\":\n    npmAuthToken: \"{CANARY}\"\n");
        let items = scan_credentials(CredFormat::Yarnrc, &yarn);
        assert_eq!(items.len(), 1);
        no_leak(&items);

        let xml = format!(
            "<settings><servers><server><id>x</id><username>u</username>\n<password>{CANARY}</password>\
             </server><server><password>${{env.PW}}</password></server></servers></settings>"
        );
        let items = scan_credentials(CredFormat::XmlPassword, &xml);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].line, 2);
        no_leak(&items);

        let props = format!("org.gradle.jvmargs=-Xmx2g\nartifactoryPassword={CANARY}\nmyToken=\n");
        let items = scan_credentials(CredFormat::Properties, &props);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].key.as_deref(), Some("artifactoryPassword"));
        no_leak(&items);

        let cargo = format!("[registry]\ntoken = \"{CANARY}\"\n");
        let items = scan_credentials(CredFormat::TomlToken, &cargo);
        assert_eq!(items.len(), 1);
        no_leak(&items);

        assert_eq!(scan_credentials(CredFormat::TokenFile, "\n  \n").len(), 0);
        let items = scan_credentials(CredFormat::TokenFile, &format!("hf_{CANARY}\n"));
        assert_eq!(items.len(), 1);
        no_leak(&items);

        // A bare user is not a credential; a long token as the user is.
        assert!(
            scan_credentials(CredFormat::UrlUserinfo, "url = ssh://git@github.com/x").is_empty()
        );
        let t = format!("GOPROXY=https://{CANARY}@proxy.example,direct");
        let items = scan_credentials(CredFormat::UrlUserinfo, &t);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].kind, "token in URL");
        no_leak(&items);
    }

    #[test]
    fn artifact_classes() {
        let idx = |c: &str| artifact_defs().iter().position(|d| d.class == c);
        assert_eq!(classify("app.log", None), idx("log"));
        assert_eq!(classify("app.log.3.gz", None), idx("log"));
        assert_eq!(classify("session.HAR", None), idx("trace"));
        assert_eq!(
            classify("Screenshot 2024-01-01.png", None),
            idx("screenshot")
        );
        assert_eq!(
            classify("failed-1.png", dir_class("test-results")),
            idx("screenshot")
        );
        assert_eq!(classify("notes.txt", dir_class("test-results")), None);
        assert_eq!(
            classify("setup.exe", dir_class("Downloads")),
            idx("download")
        );
        assert_eq!(classify("README.md", None), None);
        assert_eq!(classify("catalog.rs", None), None);
        assert!(wild(b"*.log.*", b"a.log.1") && !wild(b"*.log.*", b"a.log"));
        assert!(wild(b"*screenshot*.png", b"my screenshot 1.png"));
        assert!(!wild(b"trace.zip", b"xtrace.zip") && wild(b"*-trace.zip", b"x-trace.zip"));
        assert_eq!(classify("BUILD.LOG", None), idx("log"));
        assert_eq!(
            classify("ÉCRAN.LOG", None),
            idx("log"),
            "non-ASCII names too"
        );
    }

    #[test]
    fn compiled_patterns_agree_with_the_reference() {
        let names = [
            "app.log",
            "a.log.1",
            "a.log",
            "npm-debug.log.123",
            "yarn-error.log",
            "x.har",
            "trace.zip",
            "xtrace.zip",
            "x-trace.zip",
            "my screenshot 1.png",
            "screenshot.png",
            "screenshotpng",
            "screen shot 2024",
            "file.crdownload",
            "part",
            ".part",
            "f12.ts",
            "",
            "*",
            "log",
            "ab.log.log.",
        ];
        for d in artifact_defs() {
            for p in d.names.iter().chain(&d.dir_names) {
                let g = Glob::new(p);
                for n in names {
                    assert_eq!(
                        g.matches(n.as_bytes()),
                        wild(p.as_bytes(), n.as_bytes()),
                        "{p} on {n:?}"
                    );
                }
            }
        }
        for (p, n) in [
            ("a*b*c", "abc"),
            ("a*b*c", "ac"),
            ("*a*a*", "aa"),
            ("*a*a*", "a"),
        ] {
            assert_eq!(
                Glob::new(p).matches(n.as_bytes()),
                wild(p.as_bytes(), n.as_bytes()),
                "{p} {n}"
            );
        }
    }
}
