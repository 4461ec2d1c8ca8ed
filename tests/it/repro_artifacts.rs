//! Fixture-tree tests for phases 4 and 5 (repro.*, cache.*, browser.*,
//! artifact.persistent) and the scorecard controls they feed. The probes run
//! against a tree through `--root`; mount lines are added to a mountinfo
//! captured in a real podman container (tests/data/plain.mountinfo).

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::fixture::{data, set_environ, Fixture, Run, BIN};
use serde_json::Value;

const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The captured podman mountinfo, read-only root when asked, plus `extra`.
fn mountinfo(ro_root: bool, extra: &[&str]) -> String {
    let mut m = data("plain.mountinfo");
    if ro_root {
        m = m.replacen(
            "80 53 0:40 / / rw,relatime",
            "80 53 0:40 / / ro,relatime",
            1,
        );
    }
    for l in extra {
        m.push_str(l);
        m.push('\n');
    }
    m
}

/// A podman-like tree (tests/common/fixture.rs) with an empty /workspace.
fn fixture(name: &str, mountinfo: &str) -> Fixture {
    let f = Fixture::container(&format!("p45-{name}"), mountinfo, &data("plain.status"));
    f.dir("workspace");
    f
}

fn run(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> Run {
    run_format(f, "json", args, env)
}

/// The tree's own environment (under --root the only one the probes see),
/// so the caller's CARGO_HOME or XDG_CACHE_HOME never decide what the
/// fixture contains; the command's is cleared as well.
fn run_format(f: &Fixture, format: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec![("HOME", "/root"), ("PATH", "/usr/bin:/bin")];
    all.extend_from_slice(env);
    set_environ(&f.dir, &all);
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .arg("--root")
        .arg(&f.dir)
        .arg("--format")
        .arg(format)
        .args(args);
    Run::from(cmd.output().unwrap())
}

trait RunExt {
    fn subjects(&self, code: &str) -> Vec<String>;
    fn score(&self, control: &str) -> Value;
    fn probe_ok(&self, name: &str);
}

impl RunExt for Run {
    fn subjects(&self, code: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .pairs()
            .into_iter()
            .filter(|(c, _)| c == code)
            .map(|(_, s)| s)
            .collect();
        v.sort();
        v
    }

    fn score(&self, control: &str) -> Value {
        self.json["scorecard"]["controls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["control"] == control)
            .map(|c| c["score"].clone())
            .unwrap()
    }

    fn probe_ok(&self, name: &str) {
        let p = self.json["probes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no probe record {name}"));
        assert_eq!(p["status"], "ok", "{name}: {p}");
    }
}

fn host_bind(id: u32, host: &str, at: &str, ro: bool) -> String {
    let o = if ro { "ro" } else { "rw" };
    format!("{id} 80 254:0 {host} {at} {o},relatime - ext4 /dev/vda rw")
}

fn volume(id: u32, name: &str, at: &str) -> String {
    format!("{id} 80 254:0 /var/lib/containers/storage/volumes/{name}/_data {at} rw,relatime - ext4 /dev/vda rw")
}

// ---------------------------------------------------------------------------
// Phase 5: caches

#[test]
fn caches_by_where_they_live() {
    let f = fixture(
        "caches",
        &mountinfo(
            false,
            &[
                &host_bind(200, "/home/alice/.cache", "/root/.cache", false),
                &volume(201, "cargo-reg", "/home/dev/.cargo/registry"),
                &host_bind(202, "/srv/m2", "/home/dev/.m2/repository", true),
                &host_bind(203, "/srv/shared", "/data", false),
                &host_bind(204, "/home/alice/.cache/go-build", "/gocache", false),
            ],
        ),
    );
    f.dir("root/.cache/pip/http");
    f.dir("root/.cache/huggingface/hub");
    f.dir("home/dev/.cargo/registry/index");
    f.dir("home/dev/.m2/repository/org");
    f.dir("home/dev/.npm/_cacache");
    f.dir("data/pipcache");
    f.dir("gocache/00");
    let r = run(&f, &[], &[("PIP_CACHE_DIR", "/data/pipcache")]);
    r.probe_ok("caches");

    let pip = r.find("cache.shared-writable", "/root/.cache/pip");
    assert_eq!(
        pip["severity"], "high",
        "a host cache is the 0-point signal"
    );
    assert_eq!(pip["evidence"]["cache"], "pip");
    assert_eq!(pip["evidence"]["shared_with"], "host");
    assert_eq!(pip["evidence"]["retention"], "persistent");
    assert_eq!(pip["evidence"]["host_path"], "/home/alice/.cache/pip");
    assert_eq!(pip["evidence"]["owner"]["uid"], 0);
    assert_eq!(pip["evidence"]["sensitivity"], "public-dependency");
    let hf = r.find("cache.shared-writable", "/root/.cache/huggingface");
    assert_eq!(hf["evidence"]["class"], "model");
    let cargo = r.find("cache.shared-writable", "/home/dev/.cargo/registry");
    assert_eq!(cargo["severity"], "medium", "a volume is some isolation");
    assert_eq!(cargo["evidence"]["shared_with"], "volume");
    let env = r.find("cache.shared-writable", "/data/pipcache");
    assert_eq!(env["evidence"]["origin"], "env PIP_CACHE_DIR");
    // Mounted at an unusual place, known by the host path (field 4).
    let gob = r.find("cache.shared-writable", "/gocache");
    assert_eq!(gob["evidence"]["cache"], "go-build");
    assert_eq!(gob["evidence"]["origin"], "mount");
    // The generic root is not repeated when specific caches below it are.
    assert!(!r.has("cache.shared-writable", "/root/.cache"));
    // Read-only and ephemeral caches are listed, not reported.
    assert!(!r.has("cache.shared-writable", "/home/dev/.m2/repository"));
    assert!(!r.has("cache.shared-writable", "/home/dev/.npm"));
    let inv = r.json["inventory"]["caches"]["caches"].as_array().unwrap();
    let get = |p: &str| inv.iter().find(|c| c["path"] == p).unwrap().clone();
    assert_eq!(get("/home/dev/.m2/repository")["writable"], false);
    assert_eq!(get("/home/dev/.m2/repository")["retention"], "persistent");
    assert_eq!(get("/home/dev/.npm")["retention"], "ephemeral");
    assert_eq!(get("/home/dev/.npm")["shared_with"], "none");
    assert_eq!(r.score("cache-policy"), 0);
}

#[test]
fn an_owned_exception_is_intentional_retention() {
    let f = fixture(
        "cache-ex",
        &mountinfo(false, &[&volume(200, "uv", "/root/.cache/uv")]),
    );
    f.dir("root/.cache/uv");
    let r = run(&f, &[], &[]);
    assert_eq!(r.score("cache-policy"), 1, "a writable shared volume");
    f.file(
        "policy.toml",
        "[[exception]]\ncode = \"cache.shared-writable\"\nsubject = \"/root/.cache/uv\"\n\
         owner = \"platform@example.com\"\nreason = \"warm uv cache for CI\"\nexpires = \"2099-01-01\"\n",
    );
    let policy = f.path("policy.toml");
    let r = run(&f, &["--policy", policy.to_str().unwrap()], &[]);
    assert_eq!(
        r.find("cache.shared-writable", "/root/.cache/uv")["status"],
        "excepted"
    );
    assert_eq!(r.score("cache-policy"), 2);
}

#[test]
fn a_generic_cache_root_alone_is_reported() {
    let f = fixture(
        "xdg",
        &mountinfo(
            false,
            &[&host_bind(200, "/home/alice/.cache", "/root/.cache", false)],
        ),
    );
    f.dir("root/.cache/some-tool");
    let r = run(&f, &[], &[]);
    let c = r.find("cache.shared-writable", "/root/.cache");
    assert_eq!(c["evidence"]["cache"], "xdg-cache");
    assert_eq!(c["severity"], "high");
}

// ---------------------------------------------------------------------------
// Phase 5: credentials in caches and tool configurations

const CANARY_NPM: &str = "npm_CANARYa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6";
const CANARY_PIP: &str = "CANARYpipPassw0rdZ9y8x7w6v5";
const CANARY_HF: &str = "hf_CANARYhuggingfaceQwErTy123456";
const CANARY_M2: &str = "CANARYmavenS3cretValue42";
const CANARY_GRADLE: &str = "CANARYgradleTokenZZ99";
const CANARY_CARGO: &str = "cio_CANARYcargoTokenABCDEF";
const CANARY_YARN: &str = "CANARYyarnAuthTok3n777";
const CANARIES: &[&str] = &[
    CANARY_NPM,
    CANARY_PIP,
    CANARY_HF,
    CANARY_M2,
    CANARY_GRADLE,
    CANARY_CARGO,
    CANARY_YARN,
];

fn assert_no_canary(what: &str, text: &str) {
    for c in CANARIES {
        // The whole value, and a long piece of it past its well-known prefix.
        let core = c
            .trim_start_matches("npm_")
            .trim_start_matches("hf_")
            .trim_start_matches("cio_");
        for needle in [*c, &core[..core.len().min(16)]] {
            assert!(!text.contains(needle), "{what} contains {needle}:\n{text}");
        }
    }
}

#[test]
fn credentials_in_tool_configs_are_found_and_never_printed() {
    let f = fixture(
        "creds",
        &mountinfo(
            false,
            &[
                &host_bind(200, "/home/alice/.cache", "/root/.cache", false),
                &host_bind(201, "/home/alice/src/app", "/workspace", false),
            ],
        ),
    );
    f.file(
        "root/.npmrc",
        &format!(
            "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={CANARY_NPM}\n"
        ),
    );
    f.file(
        "root/.config/pip/pip.conf",
        &format!("[global]\nindex-url = https://ci:{CANARY_PIP}@pypi.internal.example/simple\n"),
    );
    f.file("root/.cache/huggingface/token", &format!("{CANARY_HF}\n"));
    f.file(
        "home/dev/.m2/settings.xml",
        &format!("<settings><servers><server><id>r</id>\n<password>{CANARY_M2}</password></server></servers></settings>\n"),
    );
    f.file(
        "home/dev/.gradle/gradle.properties",
        &format!("org.gradle.caching=true\nartifactoryToken={CANARY_GRADLE}\n"),
    );
    f.file(
        "home/dev/.cargo/credentials.toml",
        &format!("[registry]\ntoken = \"{CANARY_CARGO}\"\n"),
    );
    f.file(
        "workspace/.yarnrc.yml",
        &format!("npmAuthToken: \"{CANARY_YARN}\"\n"),
    );
    // Only a reference: nothing is stored, nothing to report.
    f.file(
        "workspace/.npmrc",
        "//npm.pkg.github.com/:_authToken=${GITHUB_TOKEN}\n",
    );
    // A FIFO where a config should be is never opened (it would block).
    nix::unistd::mkfifo(&f.path("home/dev/.npmrc"), nix::sys::stat::Mode::S_IRWXU).unwrap();

    let started = Instant::now();
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    assert!(started.elapsed() < Duration::from_secs(10));
    r.probe_ok("caches");
    let npm = r.find("cache.credentials", "/root/.npmrc");
    assert_eq!(npm["severity"], "high");
    assert_eq!(npm["evidence"]["tool"], "npm");
    assert_eq!(npm["evidence"]["hosts"][0], "registry.npmjs.org");
    assert_eq!(npm["evidence"]["keys"][0], "_authToken");
    assert_eq!(npm["evidence"]["lines"][0], 2);
    assert_eq!(npm["evidence"]["sensitivity"], "secret");
    let pip = r.find("cache.credentials", "/root/.config/pip/pip.conf");
    assert_eq!(pip["evidence"]["kinds"][0], "password in URL");
    assert_eq!(pip["evidence"]["hosts"][0], "pypi.internal.example");
    let hf = r.find("cache.credentials", "/root/.cache/huggingface/token");
    assert_eq!(hf["evidence"]["in_cache"], "huggingface");
    assert_eq!(hf["evidence"]["shared_with"], "host");
    assert!(r.has("cache.credentials", "/home/dev/.m2/settings.xml"));
    assert_eq!(
        r.find("cache.credentials", "/home/dev/.gradle/gradle.properties")["evidence"]["keys"][0],
        "artifactoryToken"
    );
    assert!(r.has("cache.credentials", "/home/dev/.cargo/credentials.toml"));
    assert!(r.has("cache.credentials", "/workspace/.yarnrc.yml"));
    assert!(!r.has("cache.credentials", "/workspace/.npmrc"));
    assert!(!r.has("cache.credentials", "/home/dev/.npmrc"));
    assert_eq!(r.score("cache-policy"), 0);

    // Not a byte of any value in any format or on stderr.
    assert_no_canary("json", &r.stdout);
    assert_no_canary("stderr", &r.stderr);
    let t = run_format(&f, "text", &["--workspace", "/workspace"], &[]);
    assert!(t.stdout.contains("cache.credentials"), "{}", t.stdout);
    assert_no_canary("text", &t.stdout);
    assert_no_canary("text stderr", &t.stderr);
}

// ---------------------------------------------------------------------------
// Phase 5: browser profiles

#[test]
fn browser_profiles_by_retention() {
    let f = fixture(
        "browsers",
        &mountinfo(
            false,
            &[
                &host_bind(
                    200,
                    "/home/alice/.config/google-chrome",
                    "/root/.config/google-chrome",
                    false,
                ),
                &volume(201, "ffprofile", "/home/dev/.mozilla/firefox"),
                &host_bind(202, "/home/bob/.config", "/cfg", true),
            ],
        ),
    );
    // A personal Chrome profile from the host, with its leveldb logs.
    f.file("root/.config/google-chrome/Local State", "{}");
    f.file(
        "root/.config/google-chrome/Default/Cookies",
        "SQLite format 3\0",
    );
    f.file(
        "root/.config/google-chrome/Default/Login Data",
        "SQLite format 3\0",
    );
    f.file(
        "root/.config/google-chrome/Default/Local Storage/leveldb/000003.log",
        "x",
    );
    f.file(
        "root/.config/google-chrome/DevToolsActivePort",
        "9222\n/devtools/browser/abc\n",
    );
    // A dedicated Firefox profile on a volume, reused by every run.
    f.file("home/dev/.mozilla/firefox/profiles.ini", "[Profile0]\n");
    f.file(
        "home/dev/.mozilla/firefox/ab12.default-release/cookies.sqlite",
        "x",
    );
    f.file(
        "home/dev/.mozilla/firefox/ab12.default-release/logins.json",
        "{}",
    );
    // A whole host ~/.config mounted elsewhere: Chromium inside it.
    f.file("cfg/chromium/Default/Network/Cookies", "x");
    // A throwaway automation profile in the container's own layer.
    f.file("home/dev/.config/chromium/Default/Cookies", "x");

    let r = run(&f, &[], &[]);
    r.probe_ok("browsers");
    let chrome = r.find("browser.profile", "/root/.config/google-chrome");
    assert_eq!(chrome["severity"], "high");
    assert_eq!(chrome["evidence"]["browser"], "chrome");
    let files: Vec<&str> = chrome["evidence"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"Default/Cookies") && files.contains(&"Default/Login Data"),
        "{files:?}"
    );
    assert!(files.contains(&"Local State"));
    assert_eq!(chrome["evidence"]["profiles"][0], "Default");
    assert_eq!(chrome["evidence"]["shared_with"], "host");
    let dbg = r.find(
        "browser.debug-port",
        "/root/.config/google-chrome/DevToolsActivePort",
    );
    assert_eq!(dbg["evidence"]["port"], 9222);
    let ff = r.find("browser.profile", "/home/dev/.mozilla/firefox");
    assert_eq!(
        ff["severity"], "medium",
        "a dedicated profile reused indefinitely"
    );
    assert_eq!(ff["evidence"]["profiles"][0], "ab12.default-release");
    let cfg = r.find("browser.profile", "/cfg/chromium");
    assert_eq!(cfg["evidence"]["files"][0], "Default/Network/Cookies");
    assert!(
        !r.has("browser.profile", "/home/dev/.config/chromium"),
        "ephemeral profile"
    );
    let inv = r.json["inventory"]["browsers"]["profiles"]
        .as_array()
        .unwrap();
    let eph = inv
        .iter()
        .find(|p| p["path"] == "/home/dev/.config/chromium")
        .expect("the ephemeral profile is in the inventory");
    assert_eq!(eph["retention"], "ephemeral");
    assert_eq!(eph["session_state"], true);
    // Browser internals are not "logs on a persistent mount".
    assert!(
        r.subjects("artifact.persistent").is_empty(),
        "{:?}",
        r.subjects("artifact.persistent")
    );
    assert_eq!(r.score("browser-isolation"), 0);
}

#[test]
fn a_volume_profile_scores_one() {
    let f = fixture(
        "ffvol",
        &mountinfo(
            false,
            &[&volume(201, "ffprofile", "/home/dev/.mozilla/firefox")],
        ),
    );
    f.file("home/dev/.mozilla/firefox/x.default/cookies.sqlite", "x");
    let r = run(&f, &[], &[]);
    assert_eq!(r.score("browser-isolation"), 1);
}

// ---------------------------------------------------------------------------
// Phase 5: logs, traces, screenshots, downloads

#[test]
fn persistent_artifacts_with_owner_class_and_retention() {
    let f = fixture(
        "artifacts",
        &mountinfo(
            false,
            &[
                &host_bind(200, "/srv/out", "/data", false),
                &host_bind(201, "/home/alice/src/app", "/workspace", false),
            ],
        ),
    );
    f.file("data/logs/app.log", "line\n");
    f.file("data/logs/2024/01/worker.txt", "line\n");
    f.file("data/test-results/t1/trace.zip", "PK");
    f.file("data/test-results/t1/test-failed-1.png", "png");
    f.file("data/test-results/t1/notes.md", "not an artifact");
    f.file("data/Downloads/installer.sh", "#!/bin/sh\n");
    f.file("data/node_modules/pkg/debug.log", "pruned");
    f.file("data/src/main.rs", "fn main() {}");
    f.file("workspace/build.log", "ok");
    f.file("var/log/in-the-layer.log", "ephemeral");
    nix::unistd::mkfifo(&f.path("data/fifo.log"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    symlink("..", f.path("data/logs/loop")).unwrap();

    let started = Instant::now();
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    assert!(started.elapsed() < Duration::from_secs(10));
    r.probe_ok("artifacts");
    assert_eq!(
        r.subjects("artifact.persistent"),
        vec![
            "download:/data/Downloads",
            "log:/data/logs",
            "log:/workspace",
            "screenshot:/data/test-results/t1",
            "trace:/data/test-results/t1",
        ]
    );
    let logs = r.find("artifact.persistent", "log:/data/logs");
    assert_eq!(
        logs["evidence"]["count"], 2,
        "app.log and a file below logs/; not the FIFO"
    );
    assert_eq!(logs["severity"], "medium");
    assert_eq!(logs["evidence"]["sensitivity"], "internal");
    assert_eq!(logs["evidence"]["retention"], "persistent");
    assert_eq!(logs["evidence"]["owners"][0], "uid 0");
    let trace = r.find("artifact.persistent", "trace:/data/test-results/t1");
    assert_eq!(trace["evidence"]["sensitivity"], "confidential");
    assert_eq!(
        r.find("artifact.persistent", "log:/workspace")["severity"],
        "low",
        "the workspace is exported and reviewed by design"
    );
    let manifest = r.json["inventory"]["artifacts"]["manifest"]
        .as_array()
        .unwrap();
    assert_eq!(manifest.len(), 6);
    for a in manifest {
        assert!(
            a["owner"]["uid"].is_u64() && a["sensitivity"].is_string(),
            "{a}"
        );
        assert_eq!(a["retention"], "persistent");
    }
    assert!(!manifest
        .iter()
        .any(|a| a["path"].as_str().unwrap().contains("node_modules")));
}

// ---------------------------------------------------------------------------
// Phase 4: reproducibility

#[test]
fn a_pet_container_scores_zero() {
    let f = fixture("pet", &mountinfo(true, &[]));
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    r.probe_ok("repro");
    let img = r.find("repro.image-unpinned", "image");
    assert_eq!(img["evidence"]["setup_contract_found"], false);
    assert!(r.has("repro.no-tool-pins", "toolchain"));
    assert_eq!(r.score("reproducibility"), 0);
}

#[test]
fn a_pinned_workspace_scores_two_and_drift_scores_one() {
    let f = fixture("pinned", &mountinfo(true, &[]));
    f.file(
        "workspace/.devcontainer/devcontainer.json",
        &format!(
            "// a devcontainer.json is JSON with comments\n{{\n  \"name\": \"app\",\n  \
             \"image\": \"ghcr.io/example/dev@sha256:{DIGEST}\", /* pinned */\n  \
             \"features\": {{ \"ghcr.io/devcontainers/features/node:1\": {{ \"version\": \"20.11.0\" }}, }},\n}}\n"
        ),
    );
    f.file(
        "workspace/rust-toolchain.toml",
        "[toolchain]\nchannel = \"1.83.0\"\n",
    );
    f.file(
        "workspace/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    );
    f.file("workspace/Cargo.lock", "version = 4\n");
    f.file(
        "workspace/crates/core/Cargo.toml",
        "[package]\nname = \"core\"\n",
    );
    f.file(
        "workspace/web/package.json",
        "{\"name\":\"web\",\"packageManager\":\"pnpm@9.1.0\"}\n",
    );
    f.file("workspace/go.mod", "module example.com/app\n\ngo 1.22\n");
    f.file(
        "workspace/node_modules/x/package.json",
        "{\"dependencies\":{\"y\":\"1\"}}",
    );
    f.file(
        "run/.containerenv",
        &format!("engine=\"podman-4.3.1\"\nname=\"ctr\"\nid=\"{DIGEST}\"\nimage=\"localhost/dev:latest\"\nimageid=\"{DIGEST}\"\nrootless=0\n"),
    );
    f.file(
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n",
    );
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    r.probe_ok("repro");
    let pairs = r.pairs();
    assert!(
        !pairs.iter().any(|(c, _)| c.starts_with("repro.")),
        "a pinned workspace has no repro finding: {pairs:#?}"
    );
    let inv = &r.json["inventory"]["repro"];
    let image = &r.json["inventory"]["image"];
    // The engine names the image by tag: the contract's digest pins it, but
    // is not claimed as the running image's digest.
    assert!(image["digest"].is_null(), "{image}");
    assert_eq!(
        image["pinned_by"]["source"],
        "/workspace/.devcontainer/devcontainer.json"
    );
    assert_eq!(image["engine"]["value"], "podman-4.3.1");
    assert_eq!(image["image_id"]["value"], format!("sha256:{DIGEST}"));
    assert_eq!(image["container_id"]["value"], DIGEST);
    assert_eq!(image["os_release"]["ID"], "debian");
    let pins: Vec<String> = inv["tool_pins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["tool"].as_str().unwrap(),
                p["version"].as_str().unwrap()
            )
        })
        .collect();
    for want in ["rust 1.83.0", "node 20.11.0", "pnpm 9.1.0"] {
        assert!(pins.contains(&want.to_string()), "{want} in {pins:?}");
    }
    let core = inv["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"] == "/workspace/crates/core/Cargo.toml")
        .unwrap();
    assert_eq!(
        core["lockfile"], "/workspace/Cargo.lock",
        "a workspace lock above"
    );
    assert_eq!(r.score("reproducibility"), 2);

    // The engine's own digest is the running image's (podman --privileged
    // writes the reference into /run/.containerenv).
    f.file(
        "run/.containerenv",
        &format!("engine=\"podman-4.3.1\"\nimage=\"ghcr.io/example/dev@sha256:{DIGEST}\"\n"),
    );
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    let image = &r.json["inventory"]["image"];
    assert_eq!(image["digest"], format!("sha256:{DIGEST}"), "{image}");
    assert_eq!(
        image["reference"],
        format!("ghcr.io/example/dev@sha256:{DIGEST}")
    );
    assert_eq!(image["pinned_by"]["source"], "/run/.containerenv");
    assert!(
        r.json["inventory"]["repro"]["image"].is_null(),
        "reported once"
    );

    // Drift: a tag instead of a digest, a floating pin, a manifest unlocked.
    f.file(
        "workspace/.devcontainer/devcontainer.json",
        "{ \"build\": { \"dockerfile\": \"Containerfile\" } }",
    );
    f.file(
        "workspace/.devcontainer/Containerfile",
        "FROM debian:12\nRUN true\n",
    );
    f.file(
        "workspace/rust-toolchain.toml",
        "[toolchain]\nchannel = \"stable\"\n",
    );
    f.file(
        "workspace/web/package.json",
        "{\"dependencies\":{\"left-pad\":\"^1\"}}",
    );
    f.file(
        "run/.containerenv",
        "engine=\"podman-4.3.1\"\nimage=\"localhost/dev:latest\"\n",
    );
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    let img = r.find("repro.image-unpinned", "image");
    assert_eq!(img["evidence"]["setup_contract_found"], true);
    assert!(r.json["inventory"]["image"]["digest"].is_null());
    assert!(
        img["message"].as_str().unwrap().contains("debian:12"),
        "{img}"
    );
    let pins = r.find("repro.no-tool-pins", "toolchain");
    assert!(pins["evidence"]["floating"][0]
        .as_str()
        .unwrap()
        .contains("stable"));
    let lock = r.find("repro.no-lockfile", "/workspace/web/package.json");
    assert_eq!(lock["evidence"]["ecosystem"], "node");
    assert!(
        !r.has("repro.no-lockfile", "/workspace/go.mod"),
        "no requirements, nothing to lock"
    );
    assert!(!r.has(
        "repro.no-lockfile",
        "/workspace/node_modules/x/package.json"
    ));
    assert_eq!(r.score("reproducibility"), 1);
}

#[test]
fn fixture_binaries_are_never_executed() {
    let f = fixture("tools", &mountinfo(true, &[]));
    let marker = f.path("EXECUTED");
    f.file(
        "usr/bin/node",
        &format!("#!/bin/sh\ntouch {}\necho v99.0.0\n", marker.display()),
    );
    fs::set_permissions(f.path("usr/bin/node"), fs::Permissions::from_mode(0o755)).unwrap();
    let r = run(&f, &[], &[]);
    let tools = r.json["inventory"]["repro"]["tools"].as_array().unwrap();
    let node = tools
        .iter()
        .find(|t| t["tool"] == "node")
        .expect("node is found on PATH");
    assert_eq!(node["path"], "/usr/bin/node");
    assert_eq!(node["status"], "not-run");
    assert!(node["reason"].as_str().unwrap().contains("--root"));
    assert!(
        !marker.exists(),
        "a binary in the fixture tree was executed"
    );
}

#[test]
fn walks_are_bounded_and_prune_dependency_trees() {
    let f = fixture(
        "budget",
        &mountinfo(
            false,
            &[&host_bind(201, "/home/alice/src/app", "/workspace", false)],
        ),
    );
    // 30,000 files under node_modules, 4,000 in .git: never walked.
    for d in 0..300 {
        let dir = f.path(&format!("workspace/node_modules/p{d}"));
        fs::create_dir_all(&dir).unwrap();
        for i in 0..100 {
            fs::write(dir.join(format!("f{i}.log")), "").unwrap();
        }
    }
    for i in 0..4000 {
        if i % 1000 == 0 {
            fs::create_dir_all(f.path(&format!("workspace/.git/objects/{i}"))).unwrap();
        }
        fs::write(
            f.path(&format!("workspace/.git/objects/{}/o{i}", i / 1000 * 1000)),
            "",
        )
        .unwrap();
    }
    // A deep chain: below WALK_DEPTH nothing is looked at.
    let mut deep = String::from("workspace");
    for i in 0..40 {
        deep.push_str(&format!("/d{i}"));
    }
    f.file(&format!("{deep}/deep.log"), "x");
    symlink("/workspace", f.path("workspace/self")).unwrap();
    f.file("workspace/package.json", "{\"dependencies\":{\"a\":\"1\"}}");
    f.file("workspace/package-lock.json", "{}");

    let started = Instant::now();
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    r.probe_ok("repro");
    r.probe_ok("artifacts");
    let repro_entries = r.json["inventory"]["repro"]["walk_entries"]
        .as_u64()
        .unwrap();
    assert!(repro_entries < 100, "repro walked {repro_entries} entries");
    let walks = r.json["inventory"]["artifacts"]["walks"]
        .as_array()
        .unwrap();
    let ws = walks
        .iter()
        .find(|w| w["mount_point"] == "/workspace")
        .unwrap();
    assert!(ws["entries"].as_u64().unwrap() < 100, "{ws}");
    assert!(
        r.subjects("artifact.persistent").is_empty(),
        "{:?}",
        r.subjects("artifact.persistent")
    );
    assert!(!r.has("repro.no-lockfile", "/workspace/package.json"));
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
}

#[test]
fn a_walk_that_runs_out_of_budget_says_so() {
    let f = fixture(
        "truncated",
        &mountinfo(
            true,
            &[&host_bind(201, "/home/alice/src/big", "/workspace", false)],
        ),
    );
    // 52,000 entries outside any pruned directory: more than the repro
    // walk's 50,000, fewer than the artifact walk's 200,000.
    for d in 0..52 {
        let dir = f.path(&format!("workspace/src/m{d}"));
        fs::create_dir_all(&dir).unwrap();
        for i in 0..1000 {
            fs::write(dir.join(format!("f{i}.rs")), "").unwrap();
        }
    }
    let started = Instant::now();
    let r = run(&f, &["--workspace", "/workspace"], &[]);
    assert!(started.elapsed() < Duration::from_secs(10));
    r.probe_ok("repro");
    let i = r.find("probe.incomplete", "repro:workspace");
    assert_eq!(i["status"], "unknown");
    assert!(
        i["evidence"]["reason"].as_str().unwrap().contains("50000"),
        "{i}"
    );
    assert!(r.json["inventory"]["repro"]["walk_truncated"].is_string());
    let walks = r.json["inventory"]["artifacts"]["walks"]
        .as_array()
        .unwrap();
    assert!(walks.iter().all(|w| w["truncated"].is_null()), "{walks:?}");
    assert!(!r.has("probe.incomplete", "artifacts:/workspace"));
}

#[test]
fn homes_on_a_mounted_host_root_are_searched() {
    let f = fixture(
        "hostroot",
        &mountinfo(true, &["300 80 8:1 / /host rw,relatime - xfs /dev/sda1 rw"]),
    );
    f.dir("host/etc");
    f.dir("host/usr");
    f.file("host/home/alice/.config/google-chrome/Default/Cookies", "x");
    f.dir("host/home/alice/.cache/pip");
    f.file(
        "host/root/.npmrc",
        &format!("//r.example/:_authToken={CANARY_NPM}\n"),
    );
    let r = run(&f, &[], &[]);
    assert!(r.has("mount.host-root", "/host"));
    assert_eq!(
        r.find("browser.profile", "/host/home/alice/.config/google-chrome")["severity"],
        "high"
    );
    assert!(r.has("cache.shared-writable", "/host/home/alice/.cache/pip"));
    assert!(r.has("cache.credentials", "/host/root/.npmrc"));
    assert_no_canary("json", &r.stdout);
}

#[test]
fn an_unreadable_workspace_is_not_assessed_rather_than_a_pet() {
    // Root ignores the mode: as root, run the probe as nobody (a copy of
    // the binary, and the tree, where nobody can reach them); as anyone
    // else, the mode alone stops the owner too.
    let root = nix::unistd::geteuid().is_root();
    let place = if root {
        match crate::common::other_user::nobody(
            "an_unreadable_workspace_is_not_assessed_rather_than_a_pet",
        ) {
            Some(p) => Some(p),
            None => return,
        }
    } else {
        None
    };
    let parent = place
        .as_ref()
        .map_or_else(std::env::temp_dir, |p| p.dir.clone());
    let f = Fixture::container_in(
        &parent,
        "p45-unreadable",
        &mountinfo(true, &[]),
        &data("plain.status"),
    );
    f.dir("workspace");
    f.file("workspace/.devcontainer/devcontainer.json", "{}");
    fs::set_permissions(f.path("workspace"), fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = match &place {
        Some(p) => p.command(),
        None => Command::new(BIN),
    };
    cmd.env_clear()
        .env("HOME", "/root")
        .env("PATH", "/usr/bin:/bin")
        .arg("--root")
        .arg(&f.dir)
        .args(["--format", "json", "--workspace", "/workspace"]);
    fs::set_permissions(&f.dir, fs::Permissions::from_mode(0o755)).unwrap();
    let r = Run::from(cmd.output().unwrap());
    fs::set_permissions(f.path("workspace"), fs::Permissions::from_mode(0o755)).unwrap();
    let img = r.find("repro.image-unpinned", "image");
    assert_eq!(img["status"], "unknown", "{img}");
    assert!(img["evidence"]["workspace_unreadable"].is_string());
    assert_eq!(
        r.find("repro.no-tool-pins", "toolchain")["status"],
        "unknown"
    );
    assert_eq!(
        r.score("reproducibility"),
        Value::Null,
        "not assessed, not 0"
    );
}

#[test]
fn the_signed_statement_names_the_image_the_engine_reports() {
    use base64ct::{Base64, Encoding};
    let f = fixture("attest", &mountinfo(true, &[]));
    f.file(
        "run/.containerenv",
        &format!("engine=\"podman-4.3.1\"\nimage=\"ghcr.io/example/dev@sha256:{DIGEST}\"\n"),
    );
    let att = f.path("statement.dsse");
    let r = run(&f, &["--attest", att.to_str().unwrap()], &[]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let env: Value = serde_json::from_str(&fs::read_to_string(&att).unwrap()).unwrap();
    let payload = Base64::decode_vec(env["payload"].as_str().unwrap()).unwrap();
    let st: Value = serde_json::from_slice(&payload).unwrap();
    let subjects = st["subject"].as_array().unwrap();
    assert!(
        subjects.iter().any(|s| s["digest"]["sha256"] == DIGEST
            && s["name"] == format!("ghcr.io/example/dev@sha256:{DIGEST}")),
        "{subjects:?}"
    );

    // A digest only in a workspace file is not claimed for the running image.
    f.file("run/.containerenv", "engine=\"podman-4.3.1\"\n");
    f.file(
        "workspace/.devcontainer/devcontainer.json",
        &format!("{{\"image\": \"ghcr.io/example/dev@sha256:{DIGEST}\"}}"),
    );
    let r = run(
        &f,
        &[
            "--workspace",
            "/workspace",
            "--attest",
            att.to_str().unwrap(),
        ],
        &[],
    );
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let env: Value = serde_json::from_str(&fs::read_to_string(&att).unwrap()).unwrap();
    let payload = Base64::decode_vec(env["payload"].as_str().unwrap()).unwrap();
    let st: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        st["subject"].as_array().unwrap().len(),
        1,
        "{}",
        st["subject"]
    );
}
