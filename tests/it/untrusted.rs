//! What comes back is untrusted input (issue 28, points 8 to 10; DESIGN.md
//! §13): container names that spell the inspection directory's other files,
//! a report field of megabytes in the fleet table, reports over the size
//! `summary` and `diff` take, a workspace name with a bidi override in
//! JUnit, and a registry that answers escapes, bidi and CR LF in its
//! referrers' digests, or floods `attest fetch -o` with envelopes that do
//! not verify.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::common::engines::docker_image;
use crate::common::fixture::{data, Fixture, BIN};
use crate::common::inspect::*;
use crate::common::netserve::{Seen, Server};
use crate::common::podman::{unique, TempPath};
use crate::common::registry::{ready, Registry};
use crate::common::shipped;

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The hazards of util/sanitize.rs that a test plants.
fn hazard(s: &str) -> Option<char> {
    s.chars()
        .find(|c| matches!(c, '\u{1b}' | '\u{202e}' | '\r' | '\u{200b}' | '\u{9b}'))
}

/// Containers named X, X.intoto, X.teardown, inspection and teardown, in one
/// inspection: five reports, five envelopes and (after they are removed)
/// five teardown statements, none written over another or over
/// inspection.json or teardown.json; summary shows five verified rows
/// under the containers' own names, before and after teardown.
#[test]
fn container_names_that_spell_other_files_overwrite_nothing() {
    const T: &str = "container_names_that_spell_other_files_overwrite_nothing";
    let Some(img) = docker_image(T) else {
        return;
    };
    let tmp = TempPath::dir("names").unwrap();
    let key = key(&tmp.path);
    let x = unique("names");
    let names = [
        x.clone(),
        format!("{x}.intoto"),
        format!("{x}.teardown"),
        "inspection".to_string(),
        "teardown".to_string(),
    ];
    // Fixed names on a shared daemon: one left by a killed run goes first.
    for n in &names[3..] {
        let _ = crate::common::engines::docker()
            .args(["rm", "-f", "-v", n])
            .output();
    }
    let ctrs: Vec<Ctr> = names
        .iter()
        .map(|n| {
            let c = Ctr {
                name: n.clone(),
                eng: Eng::Docker,
                rl: None,
            };
            let o = crate::common::engines::docker()
                .args(["run", "-d", "--network", "none", "--name", n, img])
                .args(["/bin/sleep", "600"])
                .output()
                .unwrap();
            assert!(o.status.success(), "docker run {n}: {}", text(&o));
            c
        })
        .collect();
    let out = tmp.path.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args(["inspect", "--engine", "docker", "--timeout", "60s"])
        .arg("--sign-key")
        .arg(&key)
        .arg("--out-dir")
        .arg(&out)
        .args(&names);
    let ran = run_measured(cmd, Duration::from_secs(240));
    assert!(
        ran.code == 0 || ran.code == 1,
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );
    let insp = read_json(&out.join("inspection.json"));
    assert_eq!(
        insp["schema"], "https://selfprobe.dev/schema/inspection/v1",
        "inspection.json is the inspection, not a container's report"
    );
    let nonces = std::fs::read_to_string(out.join("nonces")).unwrap();
    let mut files = Vec::new();
    for n in &names {
        let c = entry(&insp, n);
        assert_eq!(c["verified"], true, "{n}: {c:#}");
        let report = c["report"].as_str().unwrap().to_string();
        let envelope = c["envelope"].as_str().unwrap().to_string();
        assert!(
            !files.contains(&report) && !files.contains(&envelope),
            "{n}"
        );
        for f in [&report, &envelope] {
            assert!(
                !["inspection.json", "teardown.json", "nonces", "signing.pub"]
                    .contains(&f.as_str()),
                "{n}: {f}"
            );
        }
        files.push(report.clone());
        files.push(envelope.clone());
        let nonce = c["nonce"].as_str().unwrap();
        let stem = report.strip_suffix(".json").unwrap();
        assert!(nonces.contains(&format!("{stem} {nonce}\n")), "{nonces}");
        // Each envelope is its own container's: it verifies with that
        // container's nonce (summary checks each report is what it attests).
        let o = Command::new(shipped::bin())
            .args(["verify", "--pubkey"])
            .arg(out.join("signing.pub"))
            .args(["--nonce", nonce])
            .arg(out.join(&envelope))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{n}: {}", text(&o));
    }
    let summary = |what: &str| -> Value {
        let o = Command::new(shipped::host_bin())
            .args(["summary", "--format", "json", "--pubkey"])
            .arg(out.join("signing.pub"))
            .arg("--nonces")
            .arg(out.join("nonces"))
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0) | Some(1)),
            "summary {what}: {}",
            text(&o)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let ws = v["workspaces"].as_array().unwrap();
        let mut shown: Vec<&str> = ws.iter().filter_map(|w| w["name"].as_str()).collect();
        shown.sort();
        let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
        want.sort();
        assert_eq!(shown, want, "summary {what}: {v:#}");
        for w in ws {
            assert_eq!(w["verified"], true, "summary {what}: {w:#}");
        }
        v
    };
    summary("after inspect");
    for c in &ctrs {
        c.rm(true);
    }
    let o = Command::new(shipped::host_bin())
        .args(["teardown", "--format", "json", "--sign-key"])
        .arg(&key)
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "teardown: {}", text(&o));
    let td: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut statements: Vec<String> = td["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["statement"].as_str().unwrap().to_string())
        .collect();
    statements.sort();
    statements.dedup();
    assert_eq!(statements.len(), names.len(), "{td:#}");
    for s in &statements {
        assert!(
            !files.contains(s),
            "{s} is a report's or an envelope's name"
        );
    }
    assert_eq!(
        read_json(&out.join("inspection.json"))["schema"],
        "https://selfprobe.dev/schema/inspection/v1"
    );
    assert_eq!(
        read_json(&out.join("teardown.json"))["schema"],
        "https://selfprobe.dev/schema/teardown-run/v1",
        "teardown.json is teardown's, not the report of the container named teardown"
    );
    let v = summary("after teardown");
    for w in v["workspaces"].as_array().unwrap() {
        assert_eq!(w["teardown_result"], "gone", "{w:#}");
    }
}

/// A stand-in for the probe: the real one, whose report's boundary.kind
/// is made 3 MiB long in the container named by BIG.
const STANDIN: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "selfprobe 0.1.0"; exit 0; fi
if [ "$1" != "run" ] || [ -z "$BIG" ]; then exec /opt/real "$@"; fi
/opt/real "$@" | awk 'BEGIN { s = "K"; while (length(s) < 3145728) s = s s }
  /"boundary": \{/ { b = 1 }
  b && !d && /"kind": "/ { sub(/"kind": "[^"]*"/, "\"kind\": \"" s "\""); d = 1 }
  { print }'
"#;

/// One container's 3 MiB `boundary.kind` pads no row of the fleet table:
/// every line of inspect's text stays short, and so does the whole.
#[test]
fn a_megabyte_report_field_does_not_pad_the_fleet_table() {
    const T: &str = "a_megabyte_report_field_does_not_pad_the_fleet_table";
    let Some(img) = docker_image(T) else {
        return;
    };
    let tmp = TempPath::dir("bigcell").unwrap();
    let key = key(&tmp.path);
    let standin = tmp.path.join("standin");
    std::fs::write(&standin, STANDIN).unwrap();
    std::fs::set_permissions(&standin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let real = format!("{}:/opt/real:ro", shipped::bin_str());
    let ctrs: Vec<Ctr> = (0..4)
        .map(|i| {
            let mut f = vec!["--network", "none", "-v", real.as_str()];
            if i == 0 {
                f.extend(["-e", "BIG=1"]);
            }
            Ctr::start(
                Eng::Docker,
                None,
                "bigcell",
                &f,
                img,
                &["/bin/sleep", "600"],
            )
        })
        .collect();
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args(["inspect", "--engine", "docker", "--timeout", "60s"])
        .arg("--sign-key")
        .arg(&key)
        .arg("--binary")
        .arg(&standin)
        .arg("--out-dir")
        .arg(tmp.path.join("out"))
        .args(ctrs.iter().map(|c| c.name.as_str()));
    let ran = run_measured(cmd, Duration::from_secs(240));
    let insp = read_json(&tmp.path.join("out/inspection.json"));
    let big = entry(&insp, &ctrs[0].name);
    assert!(
        big["glance"]["boundary"].as_str().unwrap_or("").len() >= 3 << 20,
        "the stand-in did not make the field 3 MiB: {}",
        ran.stderr
    );
    let longest = ran.stdout.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest < 1100 && ran.stdout.len() < 64 << 10,
        "inspect printed {} bytes, its longest line {longest} bytes:\n{}",
        ran.stdout.len(),
        ran.stdout.chars().take(3000).collect::<String>()
    );
    let row = ran
        .stdout
        .lines()
        .find(|l| l.starts_with(&ctrs[0].name[..20]))
        .unwrap_or_else(|| panic!("no row for {}:\n{}", ctrs[0].name, ran.stdout));
    assert!(row.contains("KKK…"), "the cell is cut, and says so: {row}");
}

/// A report of the tree, as JSON.
fn tree_report() -> Value {
    let f = Fixture::container("big", &data("plain.mountinfo"), &data("plain.status"));
    let r = f.run(&[]);
    serde_json::from_str(&r.stdout).unwrap()
}

/// A report over the documented 16 MiB is refused by summary and by diff,
/// with the figure; one under it is read as before.
#[test]
fn summary_and_diff_refuse_a_report_over_the_limit() {
    let tmp = TempPath::dir("bigreport").unwrap();
    let mut r = tree_report();
    let small = tmp.path.join("small.json");
    std::fs::write(&small, serde_json::to_vec(&r).unwrap()).unwrap();
    r["padding"] = Value::String("x".repeat((16 << 20) + 1));
    let big = tmp.path.join("big.json");
    std::fs::write(&big, serde_json::to_vec(&r).unwrap()).unwrap();
    let o = Command::new(shipped::host_bin())
        .args(["summary", "--format", "json"])
        .arg(&big)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let problems = v["workspaces"][0]["problems"].to_string();
    assert!(
        problems.contains("more than the 16 MiB a report may be: refused"),
        "{problems}"
    );
    assert!(
        v["workspaces"][0]["run_id"].is_null(),
        "nothing of it is read"
    );
    let o = Command::new(shipped::host_bin())
        .arg("diff")
        .arg(&small)
        .arg(&big)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("B: ") && err.contains("more than the 16 MiB a report may be"),
        "{err}"
    );
    let o = Command::new(shipped::host_bin())
        .arg("diff")
        .arg(&small)
        .arg(&small)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// summary's JUnit, SARIF, HTML and text carry a workspace's bidi override,
/// zero-width space and escape only as visible `\u{..}`.
#[test]
fn summary_formats_carry_no_bidi_or_escape() {
    let tmp = TempPath::dir("bidi").unwrap();
    let mut r = tree_report();
    let reason = "fine\u{202e}txt.exe\u{200b} \u{1b}[31m";
    for c in r["scorecard"]["controls"].as_array_mut().unwrap() {
        c["reason"] = Value::String(reason.into());
        c["score"] = Value::from(0);
    }
    if let Some(f) = r["findings"].as_array_mut().and_then(|a| a.first_mut()) {
        f["message"] = Value::String(reason.into());
    }
    let file = tmp.path.join("w\u{202e}gnp.json");
    std::fs::write(&file, serde_json::to_vec(&r).unwrap()).unwrap();
    for format in ["junit", "sarif", "html", "text"] {
        let o = Command::new(shipped::host_bin())
            .args(["summary", "--format", format])
            .arg(&file)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("\\u{202e}"), "{format}: the override is shown");
        if let Some(c) = hazard(&out) {
            let at = out.find(c).unwrap();
            panic!(
                "{format}: U+{:04X} reaches the output: {:?}",
                c as u32,
                &out[at.saturating_sub(80)..at + 1]
            );
        }
    }
}

/// A registry on 127.0.0.1 of the test's own whose referrers answer lists
/// digests holding CR LF (a header injected into the next request), an
/// escape sequence and a bidi override. Each is refused with a clear
/// message before any request is made with it; nothing raw reaches the
/// terminal.
#[test]
fn attest_fetch_refuses_referrer_digests_that_are_not_algorithm_hex() {
    let good = format!("sha256:{}", "a".repeat(64));
    for (what, digest, artifact) in [
        (
            "CR LF",
            format!("{good}\r\nX-Injected: 1"),
            "application/vnd.dsse.envelope.v1+json",
        ),
        (
            "escape",
            "sha256:\u{1b}]0;owned\u{7}\u{1b}[2J".to_string(),
            "application/spdx+json",
        ),
        (
            "bidi",
            format!("sha256:\u{202e}{}", "b".repeat(64)),
            "application/vnd.dsse.envelope.v1+json",
        ),
    ] {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": 100,
                "artifactType": artifact,
            }],
        })
        .to_string();
        let srv = Server::http(move |s: &Seen| {
            let body = if s.target.starts_with("/v2/app/referrers/") {
                index.clone()
            } else if s.target == "/v2/" {
                "{}".to_string()
            } else {
                return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec();
            };
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        });
        let reference = format!("127.0.0.1:{}/app@{good}", srv.port);
        let o = Command::new(shipped::host_bin())
            .args(["attest", "fetch", &reference, "--timeout", "20s"])
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        for r in srv.requests() {
            assert!(
                r.header("x-injected").is_none() && !r.target.contains("manifests/sha256:"),
                "{what}: a request was made with the digest: {r:?}"
            );
        }
        assert_eq!(o.status.code(), Some(3), "{what}: {}", text(&o));
        assert!(
            all.contains("is not algorithm:hex") || all.contains("expected algorithm:hex"),
            "{what}: {all}"
        );
        assert!(all.contains("refused"), "{what}: {all}");
        assert_eq!(hazard(&all), None, "{what}: {all:?}");
    }
}

/// A real registry (Debian's docker-registry on 127.0.0.1) holding ten
/// envelopes of 4 MiB that do not verify: `attest fetch -o` writes none of
/// them and says why; the verified one is written, byte for byte; -o
/// without --pubkey is refused.
#[test]
fn attest_fetch_writes_only_verified_envelopes() {
    const T: &str = "attest_fetch_writes_only_verified_envelopes";
    if !ready(T, &["docker-registry", "skopeo", "openssl"]) {
        return;
    }
    let reg = Registry::start(None, false);
    let dir = TempPath::dir("flood").unwrap();
    let key = dir.path.join("key.pem");
    let o = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(o.status.success());
    let o = Command::new(BIN)
        .args(["pubkey", "--sign-key"])
        .arg(&key)
        .output()
        .unwrap();
    let pubkey = dir.path.join("key.pub");
    std::fs::write(&pubkey, &o.stdout).unwrap();
    let image = reg.push_image("app", "v1", None);
    let reference = format!("{}/app@{image}", reg.addr);
    // One signed envelope, of a quick run on an empty tree.
    let tree = dir.path.join("tree");
    std::fs::create_dir(&tree).unwrap();
    let signed = dir.path.join("signed.intoto.json");
    let o = Command::new(BIN)
        .args(["--root", tree.to_str().unwrap(), "--format", "json"])
        .args(["-o", dir.path.join("r.json").to_str().unwrap()])
        .args(["--attest", signed.to_str().unwrap(), "--sign-key"])
        .arg(&key)
        .args(["--fail-on", "none"])
        .output()
        .unwrap();
    assert!(signed.is_file(), "{}", text(&o));
    // Ten that are envelopes in shape (attest push takes them) but carry
    // no valid signature: 4 MiB each.
    let mut flood: Vec<PathBuf> = Vec::new();
    for i in 0..10 {
        let statement = serde_json::json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "x", "digest": {"sha256": "0".repeat(64)}}],
            "predicateType": "https://selfprobe.dev/schema/report/v1",
            "predicate": {"n": i, "pad": "A".repeat(3 << 20)},
        });
        let env = serde_json::json!({
            "payloadType": "application/vnd.in-toto+json",
            "payload": b64(&serde_json::to_vec(&statement).unwrap()),
            "signatures": [{"keyid": "", "sig": b64(&[0u8; 64])}],
        });
        let p = dir.path.join(format!("flood{i}.intoto.json"));
        std::fs::write(&p, env.to_string()).unwrap();
        flood.push(p);
    }
    let mut push = Command::new(shipped::host_bin());
    push.args(["attest", "push", &reference])
        .arg(&signed)
        .args(&flood);
    let o = push.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "push: {}", text(&o));
    let got = dir.path.join("fetched");
    std::fs::create_dir(&got).unwrap();
    let o = Command::new(shipped::host_bin())
        .args(["attest", "fetch", &reference, "-o"])
        .arg(&got)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "-o without --pubkey: {}",
        text(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("-o writes only envelopes that verified"),
        "{}",
        text(&o)
    );
    let o = Command::new(shipped::host_bin())
        .args(["attest", "fetch", &reference, "--pubkey"])
        .arg(&pubkey)
        .arg("-o")
        .arg(&got)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "ten do not verify: {}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.matches("not written to -o: it did not verify").count(),
        10,
        "{out}"
    );
    let written: Vec<PathBuf> = std::fs::read_dir(&got)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "only the verified envelope: {written:?}");
    assert_eq!(
        std::fs::read(&written[0]).unwrap(),
        std::fs::read(&signed).unwrap()
    );
}

fn b64(b: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    Base64::encode_string(b)
}
