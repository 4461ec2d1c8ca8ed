//! `selfprobe-host teardown DIR` against Docker (issue 21): a container with an
//! anonymous and a named volume is inspected (the probe plants its canaries
//! in both), then removed. `rm -f` without -v leaves the anonymous volume
//! and the named one, unowned, with the canary in it: exit 1. `rm -f -v`
//! with the named volume retained by the policy: exit 0. Each statement
//! verifies with `selfprobe verify` and is a teardown statement.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::engines::docker_image;
use crate::common::inspect::*;
use crate::common::podman::{unique, TempPath};
use crate::common::shipped;

fn inspect_one(dir: &std::path::Path, key: &std::path::Path, name: &str) -> Value {
    let out = dir.join(unique("out"));
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args([
        "inspect",
        "--engine",
        "docker",
        "--format",
        "json",
        "--sign-key",
    ])
    .arg(key)
    .arg("--out-dir")
    .arg(&out)
    .arg(name);
    let ran = run_measured(cmd, Duration::from_secs(120));
    assert!(
        ran.code == 0 || ran.code == 1,
        "inspect exit {}: {}\n{}",
        ran.code,
        ran.stdout,
        ran.stderr
    );
    let file = std::fs::read_to_string(out.join("inspection.json")).unwrap();
    assert_eq!(
        ran.stdout, file,
        "--format json prints inspection.json, byte for byte"
    );
    let mut insp = read_json(&out.join("inspection.json"));
    insp["dir"] = Value::String(out.display().to_string());
    insp
}

fn teardown(dir: &str, args: &[&str]) -> (i32, Value, String) {
    let mut cmd = Command::new(shipped::host_bin());
    cmd.arg("teardown")
        .args(args)
        .arg(dir)
        .args(["--format", "json"]);
    let ran = run_measured(cmd, Duration::from_secs(120));
    let v: Value = serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "teardown output is not JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    });
    (ran.code, v, ran.stderr)
}

fn verify_statement(dir: &str, pubkey: &str, file: &str, nonce: &str) {
    let o = Command::new(shipped::bin())
        .args([
            "verify",
            "--pubkey",
            &format!("{dir}/{pubkey}"),
            "--nonce",
            nonce,
        ])
        .arg(format!("{dir}/{file}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("https://selfprobe.dev/schema/teardown/v1"),
        "{text}"
    );
}

#[test]
fn teardown_finds_what_survived_and_what_the_policy_retains() {
    const T: &str = "teardown_finds_what_survived_and_what_the_policy_retains";
    let Some(img) = docker_image(T) else {
        return;
    };
    let tmp = TempPath::dir("teardown").unwrap();
    let key = key(&tmp.path);
    let (n1, n2) = (unique("keep"), unique("keep"));
    let _vols = [
        Vol {
            name: n1.clone(),
            eng: Eng::Docker,
        },
        Vol {
            name: n2.clone(),
            eng: Eng::Docker,
        },
    ];
    let m1 = format!("{n1}:/cache");
    let m2 = format!("{n2}:/cache");
    let (c1, c2) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            Ctr::start(
                Eng::Docker,
                None,
                "td1",
                &["--network", "none", "-v", "/data", "-v", &m1],
                img,
                &["/bin/sleep", "600"],
            )
        });
        let b = s.spawn(|| {
            Ctr::start(
                Eng::Docker,
                None,
                "td2",
                &["--network", "none", "-v", "/data", "-v", &m2],
                img,
                &["/bin/sleep", "600"],
            )
        });
        (a.join().unwrap(), b.join().unwrap())
    });
    let (i1, i2) = std::thread::scope(|s| {
        let a = s.spawn(|| inspect_one(&tmp.path, &key, &c1.name));
        let b = s.spawn(|| inspect_one(&tmp.path, &key, &c2.name));
        (a.join().unwrap(), b.join().unwrap())
    });
    for (i, c) in [(&i1, &c1), (&i2, &c2)] {
        let e = entry(i, &c.name);
        assert_eq!(e["verified"], true, "{e:#}");
        let planted: Vec<&str> = e["canaries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|k| k["volume"].as_str())
            .collect();
        assert_eq!(
            planted.len(),
            2,
            "a canary in each volume: {:#}",
            e["canaries"]
        );
    }
    let anon1 = entry(&i1, &c1.name)["record"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["anonymous"] == true)
        .map(|v| v["name"].as_str().unwrap().to_string())
        .expect("an anonymous volume in the record");
    // Whatever happens below, the anonymous volume left by `rm -f` goes.
    let _anon = Vol {
        name: anon1.clone(),
        eng: Eng::Docker,
    };

    // 1. rm -f without -v: everything but the container remains, unowned.
    c1.rm(false);
    let d1 = i1["dir"].as_str().unwrap().to_string();
    let (code, t, err) = teardown(&d1, &[]);
    assert_eq!(code, 1, "{t:#}\n{err}");
    let c = &t["containers"][0];
    assert_eq!(c["exists"], false, "{c:#}");
    assert_eq!(c["result"], "remains");
    assert_eq!(c["control"]["score"], 1, "{c:#}");
    let vol = |name: &str| {
        c["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .cloned()
            .unwrap()
    };
    let a = vol(&anon1);
    assert_eq!(
        (a["anonymous"].clone(), a["remains"].clone()),
        (Value::Bool(true), Value::Bool(true)),
        "{a}"
    );
    let n = vol(&n1);
    assert_eq!(
        (n["remains"].clone(), n["retained"].clone()),
        (Value::Bool(true), Value::Null),
        "{n}"
    );
    let canary = c["canaries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["volume"] == n1.as_str())
        .cloned()
        .unwrap();
    assert_eq!(canary["found"], true, "{canary}");
    assert_eq!(canary["signature"], "valid", "{canary}");
    let codes: Vec<(&str, &str)> = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap(), f["subject"].as_str().unwrap()))
        .collect();
    for want in [
        ("teardown.volume-remains", n1.as_str()),
        ("teardown.volume-remains", anon1.as_str()),
    ] {
        assert!(codes.contains(&want), "{want:?} in {codes:?}");
    }
    assert!(
        codes
            .iter()
            .any(|(c, s)| *c == "teardown.canary-found" && s.starts_with("/cache/")),
        "{codes:?}"
    );
    assert!(
        !codes
            .iter()
            .any(|(c, _)| *c == "teardown.container-remains"),
        "{codes:?}"
    );
    let stmt = c["statement"].as_str().unwrap();
    verify_statement(&d1, "teardown.pub", stmt, c["nonce"].as_str().unwrap());
    let td: Value = read_json(&std::path::Path::new(&d1).join("teardown.json"));
    assert_eq!(td, t, "teardown.json is what --format json printed");

    // 2. rm -f -v, the named volume retained by the policy: exit 0, signed
    // with the inspection's own key.
    c2.rm(true);
    let pol = tmp.path.join("retain.toml");
    std::fs::write(
        &pol,
        format!("[[retain]]\nvolume = \"{n2}\"\nowner = \"platform@example.com\"\nreason = \"the shared build cache\"\nexpires = \"2999-01-31\"\n"),
    )
    .unwrap();
    let d2 = i2["dir"].as_str().unwrap().to_string();
    let (code, t, err) = teardown(
        &d2,
        &[
            "--policy",
            pol.to_str().unwrap(),
            "--sign-key",
            key.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{t:#}\n{err}");
    let c = &t["containers"][0];
    assert_eq!(c["result"], "retained", "{c:#}");
    assert_eq!(c["control"]["score"], 2);
    let vols = c["volumes"].as_array().unwrap();
    assert!(
        vols.iter()
            .any(|v| v["anonymous"] == true && v["remains"] == false),
        "{vols:?}"
    );
    assert!(
        vols.iter()
            .any(|v| v["name"] == n2.as_str() && v["retained"]["owner"] == "platform@example.com"),
        "{vols:?}"
    );
    assert!(
        c["findings"].as_array().unwrap().is_empty(),
        "a retained volume's canary is expected: {:#}",
        c["findings"]
    );
    assert!(
        !std::path::Path::new(&d2).join("teardown.pub").exists(),
        "signed with --sign-key"
    );
    verify_statement(
        &d2,
        "signing.pub",
        c["statement"].as_str().unwrap(),
        c["nonce"].as_str().unwrap(),
    );

    // 3. What inspect and teardown wrote is what summary reads (issue 22,
    // point 4): both directories, their nonces, the keys that signed the
    // reports and the statements, the binary that was placed. Each
    // workspace verifies, and its Teardown column is the host's evidence.
    summary_reads_the_inspection_directories(&tmp.path, &[(&d1, &c1.name), (&d2, &c2.name)]);
}

fn summary_reads_the_inspection_directories(tmp: &std::path::Path, dirs: &[(&str, &str)]) {
    let mut nonces = String::new();
    for (d, _) in dirs {
        nonces.push_str(&std::fs::read_to_string(format!("{d}/nonces")).unwrap());
    }
    let nf = tmp.join("all.nonces");
    std::fs::write(&nf, nonces).unwrap();
    // The reports are the probe's, the teardown statements the host tool's:
    // each is held to its own binary.
    let sha_of = |p: &std::path::Path| {
        use sha2::{Digest, Sha256};
        let b = std::fs::read(p).unwrap();
        format!("{:x}", Sha256::digest(&b))
    };
    let bin_sha = sha_of(shipped::bin());
    let host_sha = sha_of(shipped::host_bin());
    let summary = |extra: &[&str]| {
        let mut cmd = Command::new(shipped::host_bin());
        cmd.args(["summary", "--format", "json", "--nonces"])
            .arg(&nf)
            .args(["--pubkey", &format!("{}/signing.pub", dirs[0].0)])
            .args(["--pubkey", &format!("{}/teardown.pub", dirs[0].0)])
            .args(extra);
        for (d, _) in dirs {
            cmd.arg(d);
        }
        run_measured(cmd, Duration::from_secs(60))
    };
    let ran = summary(&["--binary-sha256", &bin_sha, "--host-sha256", &host_sha]);
    let v: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("summary: not JSON ({e}):\n{}\n{}", ran.stdout, ran.stderr));
    let rows = v["workspaces"]
        .as_array()
        .unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(
        rows.len(),
        dirs.len(),
        "one row per inspected container: {v:#}"
    );
    for ((_, name), want) in dirs.iter().zip(["remains", "retained"]) {
        let row = rows
            .iter()
            .find(|r| r["name"] == *name)
            .unwrap_or_else(|| panic!("no row for {name}: {v:#}"));
        assert_eq!(row["verified"], true, "{row:#}");
        assert_eq!(row["teardown_result"], want, "{row:#}");
        let td = &row["controls"]["teardown"];
        assert_eq!(td["source"], "teardown statement", "{td:#}");
        assert_eq!(td["score"], if want == "remains" { 1 } else { 2 }, "{td:#}");
    }
    assert_eq!(ran.code, 1, "a teardown that remains is 1: {}", ran.stderr);
    // Another host tool than the one that signed the teardown statements:
    // the statements are not believed (the teardown control falls back to
    // what the report said) and each row says which file failed, exit 3.
    let other = "ab".repeat(32);
    let ran = summary(&["--binary-sha256", &bin_sha, "--host-sha256", &other]);
    assert_eq!(ran.code, 3, "{}\n{}", ran.stdout, ran.stderr);
    let v: Value = serde_json::from_str(&ran.stdout).unwrap();
    for row in v["workspaces"].as_array().unwrap() {
        assert_eq!(row["verified"], false, "{row:#}");
        assert_ne!(
            row["controls"]["teardown"]["source"], "teardown statement",
            "a statement of another host tool is not believed: {row:#}"
        );
        let problems = row["problems"].to_string();
        assert!(
            problems.contains(".teardown.intoto.json: tool.sha256 is"),
            "{row:#}"
        );
    }
    // Another binary than the one placed: nothing verifies, exit 3.
    let ran = summary(&["--binary-sha256", &other, "--host-sha256", &other]);
    assert_eq!(ran.code, 3, "{}\n{}", ran.stdout, ran.stderr);
}
