//! Package trees (probes/package-trees.toml): site-packages, CPython's test
//! suite, a pyenv install, a cargo registry's sources, the Go module cache,
//! node_modules, maven and gradle caches, rustup toolchains, nvm installs,
//! a lockfile-bearing project's vendor directory. They hold other projects'
//! code and fixtures, so a private key found in one is package data: the
//! credential search tags what it finds there with the tree, and evaluation
//! reports one secret.package-data finding per tree instead of one
//! secret.file per key.
//!
//! A tree is told by the layout its manager gives it (the end of the
//! directory's path, plus a name that must be inside it or beside it), never
//! by the name of the file found in it: `keycert.pem` in a home's own
//! directory is still a credential.

use crate::finding::Code;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::files::CredFile;
use crate::facts::mounts::MountClass;
use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::util::glob::{matches_component, suffix_match, Glob};

pub const PACKAGE_TREES_TOML: &str = include_str!("../../../probes/package-trees.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeRule {
    pub layout: String,
    pub kind: String,
    pub manager: String,
    #[serde(default)]
    pub inside: Vec<String>,
    #[serde(default)]
    pub beside: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalog {
    tree: Vec<TreeRule>,
}

// Read without serde (util/embedded.rs); the tests read them both ways.
crate::embedded_struct!(TreeRule { get [layout, kind, manager] or_default [inside, beside] });
crate::embedded_struct!(Catalog { get [tree] });

#[cfg(test)]
#[test]
fn package_trees_read_as_serde_read_them() {
    crate::util::embedded::tests::same::<Catalog>("package-trees.toml", PACKAGE_TREES_TOML);
}

pub fn rules() -> &'static [TreeRule] {
    static C: OnceLock<Vec<TreeRule>> = OnceLock::new();
    C.get_or_init(|| {
        crate::catalog::parse_embedded::<Catalog>("package-trees.toml", PACKAGE_TREES_TOML).tree
    })
}

/// One package tree the search entered.
#[derive(Debug, Clone, Serialize)]
pub struct PackageTree {
    pub path: String,
    pub kind: String,
    pub manager: String,
    /// The root being searched when it was met (home:…, workspace, host-mount:…).
    pub origin: String,
    /// Credential-looking files confirmed inside it.
    pub files: usize,
    /// Of those, by kind (private-key, env-file…).
    pub kinds: BTreeMap<String, usize>,
    /// Tokens and credential helpers inside those files: counted, not reported.
    #[serde(skip_serializing_if = "is_zero")]
    pub tokens: usize,
    /// A few of the files, for the reader to check.
    pub examples: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount_class: Option<MountClass>,
    pub persistent: Option<bool>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Package trees kept in the facts; beyond this they are counted only.
pub const MAX_TREES: usize = 500;
const EXAMPLES: usize = 3;

/// The layouts, indexed by their last component like the walk's other
/// matchers: a directory name costs one lookup, and only a name that fits
/// costs a stat of the markers.
pub struct TreeMatcher {
    last: Vec<Glob>,
}

impl TreeMatcher {
    pub fn new() -> TreeMatcher {
        TreeMatcher {
            last: rules()
                .iter()
                .map(|r| Glob::new(r.layout.rsplit('/').next().unwrap_or("")))
                .collect(),
        }
    }

    /// The rule whose layout `dir` (named `name`) has, if any. `comps`
    /// gives dir's components, asked for only when a layout's last
    /// component fits; markers are looked up inside the probed tree.
    pub fn tree_of(
        &self,
        host: &Host,
        dir: &Path,
        name: &str,
        comps: &mut dyn FnMut() -> Vec<String>,
    ) -> Option<usize> {
        let mut full: Option<Vec<String>> = None;
        (0..self.last.len()).find(|i| {
            let r = &rules()[*i];
            if !self.last[*i].matches(name.as_bytes()) {
                return false;
            }
            let c = full.get_or_insert_with(&mut *comps);
            let refs: Vec<&str> = c.iter().map(String::as_str).collect();
            suffix_match(&r.layout, &refs)
                && (r.inside.is_empty() || r.inside.iter().any(|m| has(host, dir, m)))
                && (r.beside.is_empty()
                    || dir
                        .parent()
                        .is_some_and(|up| r.beside.iter().any(|m| has(host, up, m))))
        })
    }
}

impl Default for TreeMatcher {
    fn default() -> Self {
        TreeMatcher::new()
    }
}

/// Whether `dir` holds `marker` (a name, `*` within it, or a relative path).
fn has(host: &Host, dir: &Path, marker: &str) -> bool {
    if !marker.contains('*') {
        return std::fs::symlink_metadata(host.path(dir.join(marker))).is_ok();
    }
    // Listing a directory the walk is about to list anyway; bounded.
    std::fs::read_dir(host.path(dir)).is_ok_and(|rd| {
        rd.flatten()
            .take(2_000)
            .any(|e| matches_component(marker, &e.file_name().to_string_lossy()))
    })
}

/// Adds one confirmed file to its tree's counts.
pub fn count(tree: &mut PackageTree, file: &CredFile, tokens: usize) {
    tree.files += 1;
    *tree.kinds.entry(file.kind.clone()).or_insert(0) += 1;
    tree.tokens += tokens;
    if tree.examples.len() < EXAMPLES {
        tree.examples.push(file.path.clone());
    }
}

pub fn new_tree(
    rule: usize,
    path: &Path,
    origin: &str,
    mount: Option<(String, MountClass, bool)>,
) -> PackageTree {
    let r = &rules()[rule];
    let (mount, mount_class, persistent) = match mount {
        Some((m, c, p)) => (Some(m), Some(c), Some(p)),
        None => (None, None, None),
    };
    PackageTree {
        path: path.to_string_lossy().into_owned(),
        kind: r.kind.clone(),
        manager: r.manager.clone(),
        origin: origin.to_string(),
        files: 0,
        kinds: BTreeMap::new(),
        tokens: 0,
        examples: Vec::new(),
        mount,
        mount_class,
        persistent,
    }
}

/// One secret.package-data per tree that holds anything: info on the
/// image's own layer or a tmpfs, low when the tree sits on storage that
/// outlives the container or comes from the host (a host mount, a volume).
pub fn evaluate(trees: &[PackageTree]) -> Vec<Finding> {
    let mut out = Vec::new();
    for t in trees.iter().filter(|t| t.files > 0) {
        let kinds: Vec<String> = t.kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let rel: Vec<String> = t
            .examples
            .iter()
            .map(|e| {
                Path::new(e)
                    .strip_prefix(&t.path)
                    .map(|r| r.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| e.clone())
            })
            .collect();
        let more = t.files.saturating_sub(rel.len());
        let mut msg = format!(
            "{} is {} {} tree ({}) holding {} credential-looking file(s) of its packages ({}), e.g. {}{}: package data, not this workspace's credentials",
            t.path,
            crate::util::text::article(&t.kind),
            t.kind,
            t.manager,
            t.files,
            kinds.join(", "),
            rel.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        );
        if t.tokens > 0 {
            msg.push_str(&format!(
                "; {} token(s) or helper(s) in them are not reported",
                t.tokens
            ));
        }
        let mut f = Finding::new(Code::SecretPackageData, &t.path, msg)
            .with("tree", t.path.clone())
            .with("kind", t.kind.clone())
            .with("manager", t.manager.clone())
            .with("origin", t.origin.clone())
            .with("files", t.files)
            .with("kinds", serde_json::to_value(&t.kinds).unwrap_or_default())
            .with("examples", t.examples.clone());
        if let Some(m) = &t.mount {
            f = f.with("mount", m.clone());
        }
        if let Some(c) = t.mount_class {
            f = f.with("mount_class", serde_json::to_value(c).unwrap_or_default());
        }
        if t.persistent == Some(true) {
            f = f.severity(Severity::Low).with("persistent", true);
        }
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_and_layouts_are_directories() {
        let r = rules();
        assert!(r.len() >= 12);
        for t in r {
            assert!(
                !t.layout.starts_with('/') && !t.layout.ends_with('/'),
                "{}",
                t.layout
            );
            assert!(!t.kind.is_empty() && !t.manager.is_empty());
        }
        for k in [
            "cpython-test-suite",
            "python-site-packages",
            "cargo-registry-sources",
            "go-module-cache",
            "node-modules",
            "vendored-dependencies",
        ] {
            assert!(r.iter().any(|t| t.kind == k), "{k}");
        }
    }

    fn tree(tag: &str, files: &[&str]) -> (std::path::PathBuf, Host) {
        let dir = std::env::temp_dir().join(format!("sp-trees-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for f in files {
            let p = dir.join(f.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let host = Host::new(dir.clone(), std::time::Duration::from_secs(30));
        (dir, host)
    }

    fn kind_of(m: &TreeMatcher, host: &Host, p: &str) -> Option<String> {
        let path = Path::new(p);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        m.tree_of(host, path, &name, &mut || crate::util::glob::comps(path))
            .map(|i| rules()[i].kind.clone())
    }

    #[test]
    fn trees_are_told_by_layout_and_markers() {
        let (dir, host) = tree(
            "layout",
            &[
                "/h/.pyenv/versions/3.11.2/lib/python3.11/test/regrtest.py",
                "/h/.pyenv/versions/3.11.2/lib/python3.11/site-packages/x.py",
                "/h/not-python/lib/python3.11/test/keycert.pem",
                "/usr/local/cargo/registry/index/x",
                "/usr/local/cargo/registry/src/index.crates.io-1/a/Cargo.toml",
                "/w/registry/src/main.rs",
                "/p/vendor/github.com/x/y.go",
                "/p/go.sum",
                "/q/vendor/lib.js",
            ],
        );
        let m = TreeMatcher::new();
        let k = |p: &str| kind_of(&m, &host, p);
        assert_eq!(
            k("/h/.pyenv/versions/3.11.2/lib").as_deref(),
            Some("python-install")
        );
        assert_eq!(
            k("/h/.pyenv/versions/3.11.2/lib/python3.11/test").as_deref(),
            Some("cpython-test-suite")
        );
        assert_eq!(
            k("/h/.pyenv/versions/3.11.2/lib/python3.11/site-packages").as_deref(),
            Some("python-site-packages")
        );
        assert_eq!(
            k("/h/not-python/lib/python3.11/test"),
            None,
            "no test runner: not CPython's suite"
        );
        assert_eq!(
            k("/usr/local/cargo/registry/src").as_deref(),
            Some("cargo-registry-sources"),
            "CARGO_HOME elsewhere than ~/.cargo"
        );
        assert_eq!(
            k("/w/registry/src"),
            None,
            "a project's own src/ beside no registry index"
        );
        assert_eq!(k("/p/vendor").as_deref(), Some("vendored-dependencies"));
        assert_eq!(k("/q/vendor"), None, "vendor without a lockfile beside it");
        assert_eq!(k("/h/.ssh"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
