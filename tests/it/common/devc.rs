//! The devcontainer-style image (tests/devc/build.sh): Debian bookworm by
//! debootstrap (minbase, with sudo), user vscode, with and without
//! NOPASSWD sudo, and laid out as Claude Code's reference devcontainer
//! (user node and its init-firewall.sh rule); the root tarballs cached under
//! /var/tmp/selfprobe-test-cache and imported into an engine once, by tag.
//! A real Debian root: `/var/run` is a symlink to `/run`, as in every
//! Debian and Ubuntu image. Used by the agents suite and by inspect's
//! (the engine socket bound at both spellings).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::podman::{self, run_bounded, skip_or_fail};

/// tests/devc/build.sh: the recipe of the two root tarballs, and their
/// cache (.ci/run runs it in the background while the crate compiles).
fn build_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/devc/build.sh")
}

/// The script's RECIPE, which names its tarballs and so the images here:
/// one place to bump when the recipe changes.
fn recipe() -> Result<String, String> {
    let script = build_script();
    let text =
        std::fs::read_to_string(&script).map_err(|e| format!("{}: {e}", script.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("RECIPE="))
        .map(|r| r.trim().to_string())
        .ok_or_else(|| format!("{}: no RECIPE= line", script.display()))
}

/// The three root tarballs of tests/devc/build.sh.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Devc {
    /// User vscode, no sudo rule.
    Plain,
    /// `vscode ALL=(root) NOPASSWD:ALL`.
    Sudo,
    /// Claude Code's reference devcontainer: user node and its one sudo rule.
    Claude,
}

impl Devc {
    fn name(self) -> &'static str {
        match self {
            Devc::Plain => "plain",
            Devc::Sudo => "sudo",
            Devc::Claude => "claude",
        }
    }
}

fn tag(v: Devc) -> Result<String, String> {
    Ok(format!(
        "localhost/selfprobe-devc:bookworm-{}-{}",
        v.name(),
        recipe()?
    ))
}

fn sh(cmd: &mut Command, what: &str, limit: Duration) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = run_bounded(std::mem::replace(cmd, Command::new("true")), limit, None)?;
    if out.code != Some(0) {
        return Err(format!(
            "{what}: {shown} exited {:?}\n{}\n{}",
            out.code,
            out.stdout
                .lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .join("\n"),
            out.stderr
        ));
    }
    Ok(out.stdout)
}

/// The three root tarballs (plain, sudo, claude), from tests/devc/build.sh:
/// made once from Debian's mirror and then found in its cache.
fn tars() -> Result<[PathBuf; 3], String> {
    static TARS: OnceLock<Result<[PathBuf; 3], String>> = OnceLock::new();
    TARS.get_or_init(|| {
        let mut cmd = Command::new("bash");
        cmd.arg(build_script());
        let out = sh(
            &mut cmd,
            "the devcontainer tarballs",
            Duration::from_secs(1200),
        )?;
        let tars: Vec<PathBuf> = out.lines().map(PathBuf::from).collect();
        match <[PathBuf; 3]>::try_from(tars) {
            Ok(t) if t.iter().all(|p| p.is_file()) => Ok(t),
            _ => Err(format!(
                "{} printed {out:?}: expected the plain, the sudo and the claude tarball's paths",
                build_script().display()
            )),
        }
    })
    .clone()
}

/// The plain and the sudo root tarballs.
pub fn devc_tars() -> Result<(PathBuf, PathBuf), String> {
    let [plain, sudo, _] = tars()?;
    Ok((plain, sudo))
}

/// The image's tag in this engine, imported from the cached tarball when
/// the engine does not have it yet.
fn devc_image(name: &str, base: fn() -> Command, v: Devc) -> Result<String, String> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _one = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let t = tag(v)?;
    let exists = base()
        .args(["image", "inspect", &t])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if exists {
        return Ok(t);
    }
    let [plain, with_sudo, claude] = tars()?;
    let tar = match v {
        Devc::Plain => plain,
        Devc::Sudo => with_sudo,
        Devc::Claude => claude,
    };
    sh(
        base().arg("import").arg(&tar).arg(&t),
        &format!("{name} import"),
        Duration::from_secs(300),
    )?;
    Ok(t)
}

/// Gate for a devcontainer case: the rootful engine `name` (whose calls
/// start from `base()`) and the image's tag in it, or a visible SKIP (a
/// failure under CI=true).
pub fn setup(test: &str, name: &str, base: fn() -> Command, sudo: bool) -> Option<String> {
    let v = if sudo { Devc::Sudo } else { Devc::Plain };
    setup_variant(test, name, base, v)
}

/// `setup` for any of the three images.
pub fn setup_variant(test: &str, name: &str, base: fn() -> Command, v: Devc) -> Option<String> {
    if !podman::rootful_engine_answers(test, name, base()) {
        return None;
    }
    match devc_image(name, base, v) {
        Ok(t) => Some(t),
        Err(why) if why.contains("debootstrap is missing") => {
            skip_or_fail(test, &why);
            None
        }
        Err(why) => panic!("{test}: building the devcontainer image failed: {why}"),
    }
}
