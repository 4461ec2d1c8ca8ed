//! Attestations in a registry (issue 23, DESIGN §15): `selfprobe-host attest
//! push` and `attest fetch` against Debian's docker-registry (distribution
//! 2.8), which each test starts for itself on 127.0.0.1 (tests/it/common/
//! registry.rs): anonymous over plain HTTP, and with htpasswd (bcrypt) over
//! TLS with a CA of the test's own. An image is pushed with skopeo; two
//! envelopes are attached; `attest fetch` returns and verifies both; skopeo
//! (`inspect --raw`, `copy … dir:`) and oras-py read the same artifacts back
//! byte for byte; a second push keeps the first in the referrers index;
//! wrong or missing credentials give an error naming the registry; and no
//! byte of a credential appears in any output.
//!
//! distribution 2.8 has no referrers API, so these runs take the
//! referrers tag schema (`sha256-<hex>`), which the output says.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64ct::{Base64, Encoding};
use serde_json::Value;

use crate::common::fixture::BIN;
use crate::common::podman::{unique, TempPath};
use crate::common::registry::{auth_file, ready, Auth, Registry};
use crate::common::shipped;

const TOOLS: &[&str] = &["docker-registry", "skopeo", "openssl"];
const NONCE: &str = "registry-nonce-1";

fn python() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python")
}

fn oras_ready(test: &str) -> bool {
    let ok = Command::new(python())
        .args(["-c", "import oras.client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::common::podman::skip_or_fail(
            test,
            "no oras-py in .ci/venv (.ci/run installs the PyPI package oras there)",
        );
    }
    ok
}

/// Every output of the selfprobe commands of one test, for the leak check.
#[derive(Default)]
struct Seen(Vec<u8>);

impl Seen {
    fn sp(&mut self, env: &[(&str, &str)], args: &[&str]) -> Output {
        // `attest` is the host tool's; `install` the probe's.
        let mut cmd = if args.first() == Some(&"attest") {
            Command::new(shipped::host_bin())
        } else {
            Command::new(BIN)
        };
        cmd.env_clear().env("PATH", "/usr/bin:/bin");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(args).output().expect("run selfprobe");
        self.0.extend_from_slice(&out.stdout);
        self.0.extend_from_slice(&out.stderr);
        out
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A key (openssl, as a user makes one), its public half, and two signed
/// envelopes of quick `--root` runs on an empty tree.
struct Signed {
    pubkey: PathBuf,
    other_pubkey: PathBuf,
    envelopes: [PathBuf; 2],
}

fn signed(dir: &Path, seen: &mut Seen) -> Signed {
    let key = dir.join("key.pem");
    let other = dir.join("other.pem");
    for k in [&key, &other] {
        let st = Command::new("openssl")
            .args(["genpkey", "-algorithm", "ed25519", "-out"])
            .arg(k)
            .output()
            .unwrap();
        assert!(st.status.success(), "openssl genpkey: {st:?}");
    }
    let pubkey = dir.join("key.pub");
    let other_pubkey = dir.join("other.pub");
    for (k, p) in [(&key, &pubkey), (&other, &other_pubkey)] {
        let o = seen.sp(&[], &["pubkey", "--sign-key", k.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o));
        std::fs::write(p, &o.stdout).unwrap();
    }
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let envelopes = [dir.join("one.intoto.json"), dir.join("two.intoto.json")];
    for e in &envelopes {
        let o = seen.sp(
            &[],
            &[
                "--root",
                tree.to_str().unwrap(),
                "--format",
                "json",
                "-o",
                dir.join("r.json").to_str().unwrap(),
                "--attest",
                e.to_str().unwrap(),
                "--sign-key",
                key.to_str().unwrap(),
                "--nonce",
                NONCE,
                "--fail-on",
                "none",
            ],
        );
        assert!(e.is_file(), "no envelope: {}", text(&o));
    }
    Signed {
        pubkey,
        other_pubkey,
        envelopes,
    }
}

/// The descriptors of the referrers tag's index.
fn index_entries(reg: &Registry, repo: &str, digest: &str, authfile: Option<&Path>) -> Vec<Value> {
    let raw = reg.skopeo_raw(&format!("{repo}:sha256-{}", &digest[7..]), authfile);
    let v: Value = serde_json::from_slice(&raw).expect("the referrers tag is JSON");
    assert_eq!(v["mediaType"], "application/vnd.oci.image.index.v1+json");
    v["manifests"].as_array().unwrap().clone()
}

/// push one, push two, push one again, fetch, read back with skopeo and
/// oras. `env` is the commands' environment (credentials, CA).
fn round_trip(
    reg: &Registry,
    dir: &Path,
    env: &[(&str, &str)],
    authfile: Option<&Path>,
    oras_env: &[(&str, &str)],
    seen: &mut Seen,
) {
    let repo = "team/app";
    let digest = reg.push_image(repo, "v1", authfile);
    let s = signed(dir, seen);
    let reference = format!("{}/{repo}:v1@{digest}", reg.addr);
    let env1 = s.envelopes[0].to_str().unwrap();
    let env2 = s.envelopes[1].to_str().unwrap();

    let o = seen.sp(env, &["attest", "push", &reference, env1]);
    assert_eq!(o.status.code(), Some(0), "first push: {}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(&format!(
            "referrers tag sha256-{} now lists 1 (0 kept, 1 added)",
            &digest[7..]
        )),
        "distribution 2.8 has no referrers API: the tag schema: {out}"
    );
    let first = index_entries(reg, repo, &digest, authfile);
    assert_eq!(first.len(), 1, "{first:?}");

    let o = seen.sp(env, &["attest", "push", &reference, env2]);
    assert_eq!(o.status.code(), Some(0), "second push: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("now lists 2 (1 kept, 1 added)"),
        "{}",
        text(&o)
    );
    let both = index_entries(reg, repo, &digest, authfile);
    assert_eq!(both.len(), 2, "{both:?}");
    assert_eq!(both[0], first[0], "the first entry is kept as it was");
    // The same envelope again: nothing new, the index unchanged.
    let o = seen.sp(env, &["attest", "push", &reference, env1]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("now lists 2 (2 kept, 0 added)"),
        "{}",
        text(&o)
    );
    assert_eq!(index_entries(reg, repo, &digest, authfile), both);

    // Each artifact manifest, as skopeo reads it: the subject is the image,
    // the layer the envelope, the types the DSSE ecosystem's.
    let originals: Vec<Vec<u8>> = s
        .envelopes
        .iter()
        .map(|e| std::fs::read(e).unwrap())
        .collect();
    let mut blobs = Vec::new();
    for (i, d) in both.iter().enumerate() {
        assert_eq!(d["artifactType"], "application/vnd.dsse.envelope.v1+json");
        let md = d["digest"].as_str().unwrap();
        let raw = reg.skopeo_raw(&format!("{repo}@{md}"), authfile);
        assert_eq!(
            selfprobe_host::registry::sha256(&raw),
            md,
            "skopeo reads the manifest's bytes"
        );
        let m: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(m["subject"]["digest"], digest.as_str());
        assert_eq!(m["artifactType"], "application/vnd.dsse.envelope.v1+json");
        assert_eq!(
            m["config"]["mediaType"],
            "application/vnd.oci.empty.v1+json"
        );
        assert_eq!(
            m["layers"][0]["annotations"]["in-toto.io/predicate-type"],
            "https://selfprobe.dev/schema/report/v1"
        );
        let blob = m["layers"][0]["digest"].as_str().unwrap().to_string();
        assert_eq!(blob, selfprobe_host::registry::sha256(&originals[i]));
        // skopeo copies the artifact to a directory: the envelope's bytes.
        let out = dir.join(format!("skopeo-{i}"));
        reg.skopeo_copy_dir(&format!("{repo}@{md}"), &out, authfile);
        assert_eq!(
            std::fs::read(out.join(&blob[7..])).unwrap(),
            originals[i],
            "skopeo reads back the envelope byte for byte"
        );
        blobs.push(blob);
    }

    // attest fetch: both, verified, written byte for byte.
    let got = dir.join("fetched");
    std::fs::create_dir(&got).unwrap();
    let pk = s.pubkey.to_str().unwrap();
    let o = seen.sp(
        env,
        &[
            "attest",
            "fetch",
            &reference,
            "--pubkey",
            pk,
            "--nonce",
            NONCE,
            "-o",
            got.to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "fetch: {}", text(&o));
    assert_eq!(out.matches("\nVALID  ").count(), 2, "{out}");
    assert!(out.contains("2 attestation(s), 2 verified."), "{out}");
    assert!(out.contains("nonce matches --nonce"), "{out}");
    for (i, b) in blobs.iter().enumerate() {
        assert_eq!(
            std::fs::read(got.join(format!("{}.intoto.json", &b[7..]))).unwrap(),
            originals[i]
        );
    }
    // What must fail does: another key, another nonce.
    let o = seen.sp(
        env,
        &[
            "attest",
            "fetch",
            &reference,
            "--pubkey",
            s.other_pubkey.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "a key that did not sign: {}",
        text(&o)
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("INVALID") && out.contains("wrong key"),
        "{out}"
    );
    let o = seen.sp(
        env,
        &[
            "attest", "fetch", &reference, "--pubkey", pk, "--nonce", "other",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "another nonce: {}", text(&o));
    // An image without attestations: said, exit 1.
    let bare = reg.push_image(repo, "v2", authfile);
    let o = seen.sp(
        env,
        &[
            "attest",
            "fetch",
            &format!("{}/{repo}@{bare}", reg.addr),
            "--pubkey",
            pk,
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("No DSSE envelope is attached"),
        "{}",
        text(&o)
    );

    // oras-py, a third party, reads the same artifacts back.
    let orasdir = dir.join("oras");
    std::fs::create_dir(&orasdir).unwrap();
    let mut cmd = Command::new(python());
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/oras_read.py"))
        .args([reg.addr.as_str(), repo, &digest])
        .arg(&orasdir);
    for (k, v) in oras_env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "oras_read.py: {}", text(&o));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["via"], "referrers tag");
    let arts = summary["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 2, "{summary}");
    for (i, b) in blobs.iter().enumerate() {
        assert_eq!(arts[i]["subject"], digest.as_str());
        assert_eq!(
            std::fs::read(orasdir.join(format!("{}.blob", &b[7..]))).unwrap(),
            originals[i],
            "oras reads back the envelope byte for byte"
        );
    }
}

#[test]
fn attest_push_and_fetch_with_an_anonymous_registry() {
    let test = "attest_push_and_fetch_with_an_anonymous_registry";
    if !ready(test, TOOLS) || !oras_ready(test) {
        return;
    }
    let reg = Registry::start(None, false);
    let dir = TempPath::dir("reg-anon").unwrap();
    let home = dir.path.join("home");
    std::fs::create_dir(&home).unwrap();
    let mut seen = Seen::default();
    let env = [("HOME", home.to_str().unwrap())];
    round_trip(&reg, &dir.path, &env, None, &[], &mut seen);
    let out = String::from_utf8_lossy(&seen.0);
    assert!(
        out.contains("transport  http (a registry on this machine)"),
        "{out}"
    );
    assert!(out.contains("auth       anonymous"), "{out}");

    // --wait: a push started before the envelope exists (a container
    // beside the probe's) pushes it once it is renamed into place.
    let digest = reg.push_image("team/app", "v9", None);
    let later = dir.path.join("later.intoto.json");
    let child = Command::new(shipped::host_bin())
        .env_clear()
        .env("HOME", &home)
        .args(["attest", "push", &format!("{}/team/app@{digest}", reg.addr)])
        .arg(&later)
        .args(["--wait", "30s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let tmp = dir.path.join(".later.tmp");
    std::fs::copy(dir.path.join("one.intoto.json"), &tmp).unwrap();
    std::fs::rename(&tmp, &later).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "push --wait: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("now lists 1 (0 kept, 1 added)"),
        "{}",
        text(&o)
    );
}

#[test]
fn attest_push_and_fetch_with_htpasswd_over_tls_and_credentials_never_shown() {
    let test = "attest_push_and_fetch_with_htpasswd_over_tls_and_credentials_never_shown";
    if !ready(test, &[TOOLS, &["htpasswd"]].concat()) || !oras_ready(test) {
        return;
    }
    let password = format!("canary-{}", unique("pw"));
    let wrong = format!("canary-wrong-{}", unique("pw"));
    let user = "selfprobe-tester";
    let auth = Auth {
        user,
        password: &password,
    };
    let reg = Registry::start(Some(&auth), true);
    let dir = TempPath::dir("reg-auth").unwrap();
    let home = dir.path.join("home");
    std::fs::create_dir(&home).unwrap();
    let authfile = auth_file(&dir.path, "auth.json", &reg.addr, &auth);
    let wrongfile = auth_file(
        &dir.path,
        "wrong.json",
        &reg.addr,
        &Auth {
            user,
            password: &wrong,
        },
    );
    let ca = reg.ca.clone().unwrap();
    let (h, a, c) = (
        home.to_str().unwrap(),
        authfile.to_str().unwrap(),
        ca.to_str().unwrap(),
    );
    let env = [("HOME", h), ("REGISTRY_AUTH_FILE", a), ("SSL_CERT_FILE", c)];
    let oras_env = [
        ("ORAS_USER", user),
        ("ORAS_PASSWORD", password.as_str()),
        ("ORAS_TLS", "1"),
        ("REQUESTS_CA_BUNDLE", c),
    ];
    let mut seen = Seen::default();
    round_trip(&reg, &dir.path, &env, Some(&authfile), &oras_env, &mut seen);
    let out = String::from_utf8_lossy(&seen.0).into_owned();
    assert!(
        out.contains(&format!("auth       basic (credentials from {a})")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "transport  https (trust store: system, {c} (SSL_CERT_FILE))"
        )),
        "{out}"
    );

    // Podman's place for them works as well as REGISTRY_AUTH_FILE.
    let run = dir.path.join("run");
    std::fs::create_dir_all(run.join("containers")).unwrap();
    std::fs::copy(&authfile, run.join("containers/auth.json")).unwrap();
    let s = Signed {
        envelopes: [
            dir.path.join("one.intoto.json"),
            dir.path.join("two.intoto.json"),
        ],
        pubkey: dir.path.join("key.pub"),
        other_pubkey: dir.path.join("other.pub"),
    };
    let digest = reg.push_image("team/app", "v3", Some(&authfile));
    let reference = format!("{}/team/app@{digest}", reg.addr);
    let e1 = s.envelopes[0].to_str().unwrap();
    let xdg = [
        ("HOME", h),
        ("XDG_RUNTIME_DIR", run.to_str().unwrap()),
        ("SSL_CERT_FILE", c),
    ];
    let o = seen.sp(&xdg, &["attest", "push", &reference, e1]);
    assert_eq!(o.status.code(), Some(0), "podman's auth.json: {}", text(&o));
    // Docker's ~/.docker/config.json too.
    std::fs::create_dir_all(home.join(".docker")).unwrap();
    std::fs::copy(&authfile, home.join(".docker/config.json")).unwrap();
    let o = seen.sp(
        &[("HOME", h), ("SSL_CERT_FILE", c)],
        &[
            "attest",
            "fetch",
            &reference,
            "--pubkey",
            s.pubkey.to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "Docker's config.json: {}",
        text(&o)
    );
    std::fs::remove_file(home.join(".docker/config.json")).unwrap();

    // Wrong credentials: a clear error naming the registry and the file.
    let w = wrongfile.to_str().unwrap();
    let o = seen.sp(
        &[("HOME", h), ("REGISTRY_AUTH_FILE", w), ("SSL_CERT_FILE", c)],
        &["attest", "push", &reference, e1],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains(&format!(
            "registry {}: the registry refused the credentials from {w}",
            reg.addr
        )),
        "{err}"
    );
    let o = seen.sp(
        &[("HOME", h), ("REGISTRY_AUTH_FILE", w), ("SSL_CERT_FILE", c)],
        &["attest", "fetch", &reference],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    // None at all: says where it looked.
    let o = seen.sp(
        &[("HOME", h), ("SSL_CERT_FILE", c)],
        &["attest", "fetch", &reference],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains(&format!(
            "registry {}: the registry asks for credentials (Basic) and none were found",
            reg.addr
        )) && err.contains(".docker/config.json: not there"),
        "{err}"
    );
    // Without the CA: the TLS failure, named, and no fallback to plain HTTP
    // credentials (the registry is TLS-only, so HTTP answers 400).
    let o = seen.sp(
        &[("HOME", h), ("REGISTRY_AUTH_FILE", a)],
        &["attest", "fetch", &reference],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("over HTTPS: TLS with 127.0.0.1:"),
        "{}",
        text(&o)
    );

    // No credential byte in any output: the passwords, and the base64 of
    // user:password that the Authorization header and the auth file carry.
    let mut pats = vec![password.clone(), wrong.clone()];
    for p in [&password, &wrong] {
        pats.push(Base64::encode_string(format!("{user}:{p}").as_bytes()));
        pats.push(Base64::encode_string(p.as_bytes()));
    }
    let hay = String::from_utf8_lossy(&seen.0);
    for p in &pats {
        assert!(
            !hay.contains(p.as_str()),
            "a credential ({p}) appears in the output:\n{hay}"
        );
    }
    assert!(!hay.contains(user), "not even the user name is shown");
}

/// The distribution spec's token flow: docker-registry with token
/// authentication sends clients to a token service (the test's own, on
/// 127.0.0.1), whose JWT the registry checks against the issuer's
/// certificate. attest push and fetch get a token with the credentials
/// from the auth file, for the scope the challenge names; wrong
/// credentials are named; neither the password nor any token is printed.
#[test]
fn attest_push_and_fetch_with_a_token_service() {
    let test = "attest_push_and_fetch_with_a_token_service";
    if !ready(test, TOOLS) {
        return;
    }
    let dir = TempPath::dir("reg-token").unwrap();
    let password = format!("canary-{}", unique("tokpw"));
    let user = "selfprobe-token-user";
    let tokens = crate::common::registry::TokenServer::start(&dir.path, user, &password);
    let realm = tokens.realm();
    let reg = Registry::start_with(
        None,
        Some(&crate::common::registry::TokenAuth {
            realm: &realm,
            service: crate::common::registry::TOKEN_SERVICE,
            issuer: crate::common::registry::TOKEN_ISSUER,
            bundle: &tokens.bundle,
        }),
        false,
    );
    let auth = Auth {
        user,
        password: &password,
    };
    let authfile = auth_file(&dir.path, "auth.json", &reg.addr, &auth);
    let wrong = format!("canary-wrong-{}", unique("tokpw"));
    let wrongfile = auth_file(
        &dir.path,
        "wrong.json",
        &reg.addr,
        &Auth {
            user,
            password: &wrong,
        },
    );
    let home = dir.path.join("home");
    std::fs::create_dir(&home).unwrap();
    let h = home.to_str().unwrap();
    let digest = reg.push_image("team/app", "v1", Some(&authfile));
    let mut seen = Seen::default();
    let s = signed(&dir.path, &mut seen);
    let reference = format!("{}/team/app@{digest}", reg.addr);
    let env = [
        ("HOME", h),
        ("REGISTRY_AUTH_FILE", authfile.to_str().unwrap()),
    ];
    for e in &s.envelopes {
        let o = seen.sp(&env, &["attest", "push", &reference, e.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "push with a token: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            out.contains(&format!(
                "auth       bearer token from {realm} (credentials from {})",
                authfile.display()
            )),
            "{out}"
        );
    }
    let o = seen.sp(
        &env,
        &[
            "attest",
            "fetch",
            &reference,
            "--pubkey",
            s.pubkey.to_str().unwrap(),
            "--nonce",
            NONCE,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "fetch with a token: {}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 attestation(s), 2 verified."),
        "{}",
        text(&o)
    );
    // Anonymous: the token service refuses; wrong credentials: the same, named.
    for (file, what) in [
        (None, "anonymously (no credentials found)"),
        (Some(&wrongfile), "with the credentials from"),
    ] {
        let mut e = vec![("HOME", h)];
        if let Some(f) = file {
            e.push(("REGISTRY_AUTH_FILE", f.to_str().unwrap()));
        }
        let o = seen.sp(&e, &["attest", "fetch", &reference]);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            err.contains(&format!(
                "registry {}: the token service {realm} refused a token {what}",
                reg.addr
            )) && err.contains("401"),
            "{err}"
        );
    }
    let issued = tokens.issued.lock().unwrap().clone();
    assert!(issued.len() >= 3, "tokens were issued: {}", issued.len());
    let hay = String::from_utf8_lossy(&seen.0);
    let mut pats = vec![password.clone(), wrong.clone()];
    for p in [&password, &wrong] {
        pats.push(Base64::encode_string(format!("{user}:{p}").as_bytes()));
    }
    for t in &issued {
        pats.push(t.split('.').nth(2).unwrap().to_string());
    }
    for p in &pats {
        assert!(
            !hay.contains(p.as_str()),
            "a credential or token ({p}) appears in the output:\n{hay}"
        );
    }
}

/// Bad input is refused before anything is sent, with what was expected;
/// a registry that is not there is a failed step naming it.
#[test]
fn attest_usage_errors_and_an_absent_registry() {
    let dir = TempPath::dir("reg-usage").unwrap();
    let mut seen = Seen::default();
    let d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let o = seen.sp(&[], &["attest", "push", "127.0.0.1:5000/app:v1", "x.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no @sha256:… digest"),
        "{}",
        text(&o)
    );
    let not_env = dir.path.join("report.json");
    std::fs::write(&not_env, "{\"schema\": \"x\"}").unwrap();
    let o = seen.sp(
        &[],
        &[
            "attest",
            "push",
            &format!("127.0.0.1:9/app@{d}"),
            not_env.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a DSSE envelope"),
        "{}",
        text(&o)
    );
    // Nothing listens on 127.0.0.1:9 (discard): refused, named.
    let o = seen.sp(
        &[],
        &[
            "attest",
            "fetch",
            &format!("127.0.0.1:9/app@{d}"),
            "--timeout",
            "5s",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains("registry 127.0.0.1:9:") && err.contains("connection refused"),
        "{err}"
    );
    // A broken auth file is a usage error that names the file, not its bytes.
    let bad = dir.path.join("auth.json");
    std::fs::write(
        &bad,
        "{\"auths\": {\"127.0.0.1:9\": {\"auth\": \"!canary-bytes!\"}}}",
    )
    .unwrap();
    let o = seen.sp(
        &[("REGISTRY_AUTH_FILE", bad.to_str().unwrap())],
        &["attest", "fetch", &format!("127.0.0.1:9/app@{d}")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains(bad.to_str().unwrap()) && err.contains("not base64"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&seen.0).contains("canary-bytes"));
    // install: a directory is expected.
    let o = seen.sp(&[], &["install", not_env.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = seen.sp(&[], &["install", dir.path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        std::fs::read(dir.path.join("selfprobe")).unwrap(),
        std::fs::read(BIN).unwrap(),
        "install copies this very binary"
    );
}
