//! Versions that files say, so that no interpreter is started to ask: a
//! node package's package.json, a Python distribution's dist-info, a venv's
//! pyvenv.cfg, a JDK's release file, a Go root's VERSION, and dpkg's status
//! for a binary that a package's .list names. Every path is inside the
//! probed tree; every file is read only as far as a bound, and a value is
//! kept only when it looks like a version.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::host::{read_regular_nofollow, Host};

const SMALL: u64 = 64 * 1024;
/// dpkg's status in a full Debian image is about 0.5 MB.
const DPKG_STATUS_MAX: u64 = 16 << 20;
const DPKG_LIST_MAX: u64 = 4 << 20;
/// How far above a script its package.json may be (bin/npm-cli.js is one).
const PACKAGE_UP: usize = 4;

/// Never through a final symlink: a package.json linked out of the tree
/// is not the tree's.
fn read(host: &Host, p: &Path, max: u64) -> Option<String> {
    read_regular_nofollow(&host.path(p), max)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// A version as files write it: starts with a digit (or v/go and a digit),
/// short, of version characters only.
fn version_like(v: &str) -> Option<String> {
    let v = v.trim().trim_matches('"');
    let digits = v.trim_start_matches('v').trim_start_matches("go");
    let ok = !v.is_empty()
        && v.len() <= 64
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+-~_:".contains(c));
    ok.then(|| v.to_string())
}

/// The node packages each tool is (yarn 2+ ships as @yarnpkg/cli-dist).
fn node_packages(tool: &str) -> &'static [&'static str] {
    match tool {
        "npm" | "npx" => &["npm"],
        "pnpm" => &["pnpm"],
        "yarn" => &["yarn", "@yarnpkg/cli-dist"],
        "corepack" => &["corepack"],
        _ => &[],
    }
}

/// The nearest package.json above the script, if it is one of `names`.
/// Another package's (corepack's, for its pnpm shim) says nothing about
/// the tool: the search stops there.
fn package_json(host: &Host, real: &Path, names: &[&str]) -> Option<(String, String)> {
    let mut dir = real.parent();
    for _ in 0..PACKAGE_UP {
        let d = dir?;
        let p = d.join("package.json");
        if let Some(text) = read(host, &p, SMALL) {
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            let name = v.get("name")?.as_str()?;
            if !names.contains(&name) {
                return None;
            }
            let ver = version_like(v.get("version")?.as_str()?)?;
            return Some((ver, p.to_string_lossy().into_owned()));
        }
        dir = d.parent();
    }
    None
}

fn list(host: &Host, dir: &Path) -> Vec<String> {
    std::fs::read_dir(host.path(dir))
        .map(|rd| {
            rd.flatten()
                .take(5_000)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `<dist>-<version>.dist-info` in the Python library directories beside
/// the tool's bin directory (a venv, /usr/local, /usr). One version found
/// is the answer; two different ones (a pip in /usr/local shadowing
/// Debian's) mean the file cannot say which runs.
fn dist_info(host: &Host, bin_dirs: &[&Path], dist: &str) -> Option<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for bin in bin_dirs {
        let Some(prefix) = bin.parent() else { continue };
        let mut lib_dirs = vec![prefix.join("lib/python3/dist-packages")];
        if prefix == Path::new("/usr") {
            lib_dirs.push(PathBuf::from("/usr/local/lib/python3/dist-packages"));
        }
        for py in list(host, &prefix.join("lib"))
            .into_iter()
            .filter(|n| n.starts_with("python3."))
        {
            lib_dirs.push(prefix.join("lib").join(&py).join("site-packages"));
            lib_dirs.push(prefix.join("lib").join(&py).join("dist-packages"));
            if prefix == Path::new("/usr") {
                lib_dirs.push(Path::new("/usr/local/lib").join(&py).join("dist-packages"));
            }
        }
        for lib in lib_dirs {
            for n in list(host, &lib) {
                let Some(rest) = n
                    .strip_prefix(dist)
                    .and_then(|r| r.strip_prefix('-'))
                    .and_then(|r| r.strip_suffix(".dist-info"))
                else {
                    continue;
                };
                let meta = lib.join(&n).join("METADATA");
                let from_meta = read(host, &meta, SMALL).and_then(|t| {
                    t.lines()
                        .take_while(|l| !l.is_empty())
                        .find_map(|l| l.strip_prefix("Version:"))
                        .and_then(version_like)
                });
                if let Some(v) = from_meta.or_else(|| version_like(rest)) {
                    let file = meta.to_string_lossy().into_owned();
                    if !found.iter().any(|(x, _)| *x == v) {
                        found.push((v, file));
                    }
                }
            }
        }
    }
    (found.len() == 1).then(|| found.remove(0))
}

/// dpkg's database, read once per run and only when a tool needs it.
#[derive(Default)]
pub struct Dpkg {
    status: Option<HashMap<String, String>>,
}

impl Dpkg {
    /// Installed packages and their versions, from /var/lib/dpkg/status.
    fn versions(&mut self, host: &Host) -> &HashMap<String, String> {
        self.status.get_or_insert_with(|| {
            let mut m = HashMap::new();
            let Some(text) = read(host, Path::new("/var/lib/dpkg/status"), DPKG_STATUS_MAX) else {
                return m;
            };
            for stanza in text.split("\n\n") {
                let mut name = None;
                let mut arch = None;
                let mut ver = None;
                let mut installed = false;
                for l in stanza.lines() {
                    if let Some(v) = l.strip_prefix("Package: ") {
                        name = Some(v.trim());
                    } else if let Some(v) = l.strip_prefix("Architecture: ") {
                        arch = Some(v.trim());
                    } else if let Some(v) = l.strip_prefix("Version: ") {
                        ver = version_like(v);
                    } else if let Some(v) = l.strip_prefix("Status: ") {
                        installed = v.trim().ends_with(" installed");
                    }
                }
                if let (Some(n), Some(v), true) = (name, ver, installed) {
                    m.insert(n.to_string(), v.clone());
                    if let Some(a) = arch {
                        m.insert(format!("{n}:{a}"), v);
                    }
                }
            }
            m
        })
    }

    /// The package owning `real`, among a few names guessed from the tool
    /// and the file (node -> nodejs, python3.11 -> python3.11-minimal,
    /// x86_64-linux-gnu-gcc-12 -> gcc-12): a guess counts only when that
    /// package's file list names the path, so a wrong guess costs a miss,
    /// never a wrong version.
    fn owner(&mut self, host: &Host, tool: &str, real: &Path) -> Option<(String, String)> {
        let file = real.file_name()?.to_string_lossy().into_owned();
        let unarch = file
            .split_once("-linux-gnu-")
            .map(|(_, r)| r.to_string())
            .unwrap_or_else(|| file.clone());
        let mut guesses: Vec<String> = vec![
            tool.to_string(),
            file.clone(),
            unarch.clone(),
            format!("{tool}js"),
            format!("{file}-minimal"),
            format!("{unarch}-minimal"),
        ];
        guesses.dedup();
        let real_s = real.to_string_lossy().into_owned();
        let info = Path::new("/var/lib/dpkg/info");
        for g in guesses {
            if g.contains('/') || g.starts_with('.') {
                continue;
            }
            for list_name in [
                format!("{g}.list"),
                format!("{g}:amd64.list"),
                format!("{g}:arm64.list"),
            ] {
                let p = info.join(&list_name);
                let Some(text) = read(host, &p, DPKG_LIST_MAX) else {
                    continue;
                };
                if text.lines().any(|l| l == real_s) {
                    let pkg = list_name.trim_end_matches(".list").to_string();
                    let v = self.versions(host).get(&pkg)?.clone();
                    return Some((v, format!("/var/lib/dpkg/status ({pkg})")));
                }
            }
        }
        None
    }
}

/// A version manager's shim (pyenv, rbenv, nodenv: `<root>/shims/<tool>`,
/// a script that picks `<root>/versions/<v>`): the version the shim would
/// pick from `<root>/version` when run as the probe runs tools (working
/// directory /, no PYENV_VERSION), and that file. "system" or a version
/// that is not installed says nothing.
fn shim_version(host: &Host, found: &Path) -> Option<(PathBuf, String, String)> {
    let shims = found.parent()?;
    if shims.file_name()? != "shims" {
        return None;
    }
    let root = shims.parent()?;
    let head = read(host, found, 4096)?;
    if !head.starts_with("#!") {
        return None;
    }
    let vf = root.join("version");
    let sel = read(host, &vf, 4096)?
        .split_whitespace()
        .next()
        .and_then(version_like)?;
    let dir = root.join("versions").join(&sel);
    std::fs::symlink_metadata(host.path(&dir)).ok()?;
    Some((dir, sel, vf.to_string_lossy().into_owned()))
}

/// An interpreter inside an installed version's directory says its
/// version by that directory's name: `<root>/versions/3.11.7/bin/python3`
/// (pyenv), `…/versions/node/v20.1.0/bin/node` (nvm).
fn versioned_dir(real: &Path) -> Option<String> {
    let bin = real.parent()?;
    (bin.file_name()? == "bin").then_some(())?;
    let vdir = bin.parent()?;
    let up = vdir.parent()?;
    let up_name = up.file_name()?.to_string_lossy();
    let is_versions =
        up_name == "versions" || (up_name == "node" && up.parent()?.file_name()? == "versions");
    is_versions.then(|| version_like(&vdir.file_name()?.to_string_lossy()))?
}

fn interpreter(tool: &str) -> Option<&'static str> {
    match tool {
        "python" | "python3" => Some("Python "),
        "node" => Some(""),
        "ruby" => Some("ruby "),
        _ => None,
    }
}

/// A tool as PATH gives it: its name, where it was found and what that
/// resolves to once links are followed.
#[derive(Clone, Copy)]
pub struct OnPath<'a> {
    pub tool: &'a str,
    pub found: &'a Path,
    pub real: &'a Path,
}

/// The version a file says for a tool on PATH, and that file.
pub fn from_files(host: &Host, at: OnPath, dpkg: &mut Dpkg) -> Option<(String, String)> {
    let OnPath { tool, found, real } = at;
    if let Some((dir, sel, file)) = shim_version(host, found) {
        if let Some(prefix) = interpreter(tool) {
            return Some((format!("{prefix}{sel}"), file));
        }
        // The tool the shim would run, judged by its own files.
        let inner = dir.join("bin").join(tool);
        std::fs::symlink_metadata(host.path(&inner)).ok()?;
        let inner = OnPath {
            tool,
            found: &inner,
            real: &inner,
        };
        return direct(host, inner, dpkg);
    }
    if let (Some(prefix), Some(v)) = (interpreter(tool), versioned_dir(real)) {
        return Some((format!("{prefix}{v}"), real.to_string_lossy().into_owned()));
    }
    direct(host, at, dpkg)
}

fn direct(host: &Host, at: OnPath, dpkg: &mut Dpkg) -> Option<(String, String)> {
    let OnPath { tool, found, real } = at;
    let names = node_packages(tool);
    if !names.is_empty() {
        if let Some(v) = package_json(host, real, names) {
            return Some(v);
        }
    }
    let bins: Vec<&Path> = [found.parent(), real.parent()]
        .into_iter()
        .flatten()
        .collect();
    let from_tree = match tool {
        "pip" | "pip3" => dist_info(host, &bins, "pip").map(|(v, f)| (format!("pip {v}"), f)),
        "uv" | "mise" => dist_info(host, &bins, tool),
        "python" | "python3" => bins.iter().find_map(|b| {
            // A venv's interpreter: its pyvenv.cfg says which Python it is.
            let p = b.parent()?.join("pyvenv.cfg");
            let t = read(host, &p, SMALL)?;
            let v = t.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                matches!(k.trim(), "version" | "version_info")
                    .then(|| version_like(v))
                    .flatten()
            })?;
            Some((format!("Python {v}"), p.to_string_lossy().into_owned()))
        }),
        "java" => real.parent().and_then(Path::parent).and_then(|home| {
            let p = home.join("release");
            let t = read(host, &p, SMALL)?;
            let v = t
                .lines()
                .find_map(|l| l.strip_prefix("JAVA_VERSION="))
                .and_then(version_like)?;
            Some((v, p.to_string_lossy().into_owned()))
        }),
        "go" => real.parent().and_then(Path::parent).and_then(|root| {
            let p = root.join("VERSION");
            let t = read(host, &p, SMALL)?;
            let v = version_like(t.lines().next()?)?;
            v.starts_with("go")
                .then(|| (v, p.to_string_lossy().into_owned()))
        }),
        _ => None,
    };
    from_tree.or_else(|| dpkg.owner(host, tool, real))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(tag: &str, files: &[(&str, &str)]) -> (PathBuf, Host) {
        let dir = std::env::temp_dir().join(format!("sp-versions-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (f, body) in files {
            let p = dir.join(f.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        (
            dir.clone(),
            Host::new(dir, std::time::Duration::from_secs(5)),
        )
    }

    #[test]
    fn versions_from_package_files() {
        let (dir, host) = tree(
            "pkg",
            &[
                ("/usr/share/nodejs/npm/bin/npm-cli.js", "#!/usr/bin/env node\n"),
                ("/usr/share/nodejs/npm/package.json", r#"{"name":"npm","version":"9.2.0"}"#),
                ("/usr/lib/node_modules/corepack/shims/pnpm", "#!/usr/bin/env node\n"),
                ("/usr/lib/node_modules/corepack/package.json", r#"{"name":"corepack","version":"0.28.0"}"#),
                ("/usr/lib/python3/dist-packages/pip-23.0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: pip\nVersion: 23.0.1\n\nbody Version: 1\n"),
                ("/usr/bin/pip", "#!/usr/bin/python3\n"),
                ("/v/bin/python3", ""),
                ("/v/pyvenv.cfg", "home = /usr/bin\nversion = 3.11.2\n"),
                ("/var/lib/dpkg/info/nodejs.list", "/.\n/usr\n/usr/bin\n/usr/bin/node\n"),
                ("/var/lib/dpkg/status", "Package: nodejs\nStatus: install ok installed\nArchitecture: amd64\nVersion: 18.19.0+dfsg-6~deb12u2\n\nPackage: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n"),
                ("/usr/bin/node", "\x7fELF"),
                ("/r/shims/pip", "#!/usr/bin/env bash\nexec pyenv exec pip\n"),
                ("/r/shims/python3", "#!/usr/bin/env bash\nexec pyenv exec python3\n"),
                ("/r/version", "3.11.7\n"),
                ("/r/versions/3.11.7/bin/pip", "#!/r/versions/3.11.7/bin/python3.11\n"),
                ("/r/versions/3.11.7/lib/python3.11/site-packages/pip-24.0.dist-info/METADATA", "Name: pip\nVersion: 24.0\n"),
                ("/n/.nvm/versions/node/v20.1.0/bin/node", "\x7fELF"),
                ("/usr/local/bin/node", "\x7fELF"),
            ],
        );
        let mut db = Dpkg::default();
        let mut v = |tool: &str, found: &str, real: &str| {
            let at = OnPath {
                tool,
                found: Path::new(found),
                real: Path::new(real),
            };
            from_files(&host, at, &mut db)
        };
        assert_eq!(
            v(
                "npm",
                "/usr/bin/npm",
                "/usr/share/nodejs/npm/bin/npm-cli.js"
            ),
            Some(("9.2.0".into(), "/usr/share/nodejs/npm/package.json".into()))
        );
        assert_eq!(
            v(
                "pnpm",
                "/usr/bin/pnpm",
                "/usr/lib/node_modules/corepack/shims/pnpm"
            ),
            None,
            "corepack's package.json does not say pnpm's version"
        );
        assert_eq!(
            v("pip", "/usr/bin/pip", "/usr/bin/pip").map(|x| x.0),
            Some("pip 23.0.1".into())
        );
        assert_eq!(
            v("python3", "/v/bin/python3", "/v/bin/python3").map(|x| x.0),
            Some("Python 3.11.2".into())
        );
        assert_eq!(
            v("node", "/usr/bin/node", "/usr/bin/node"),
            Some((
                "18.19.0+dfsg-6~deb12u2".into(),
                "/var/lib/dpkg/status (nodejs)".into()
            ))
        );
        assert_eq!(
            v("pip", "/r/shims/pip", "/r/shims/pip"),
            Some((
                "pip 24.0".into(),
                "/r/versions/3.11.7/lib/python3.11/site-packages/pip-24.0.dist-info/METADATA"
                    .into()
            )),
            "a pyenv shim: the version its global version file picks"
        );
        assert_eq!(
            v("python3", "/r/shims/python3", "/r/shims/python3"),
            Some(("Python 3.11.7".into(), "/r/version".into()))
        );
        assert_eq!(
            v(
                "node",
                "/n/.nvm/versions/node/v20.1.0/bin/node",
                "/n/.nvm/versions/node/v20.1.0/bin/node"
            )
            .map(|x| x.0),
            Some("v20.1.0".into())
        );
        assert_eq!(
            v("node", "/usr/local/bin/node", "/usr/local/bin/node"),
            None,
            "a path no package lists is asked, not guessed"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_version_text_is_kept() {
        assert_eq!(version_like("9.2.0").as_deref(), Some("9.2.0"));
        assert_eq!(version_like("go1.22.1").as_deref(), Some("go1.22.1"));
        assert_eq!(version_like("\"17.0.2\"").as_deref(), Some("17.0.2"));
        assert_eq!(version_like("latest"), None);
        assert_eq!(version_like("1.0\u{1b}[2J"), None);
        assert_eq!(version_like(&"1".repeat(65)), None);
    }
}
