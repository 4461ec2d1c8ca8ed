//! Phase 6 across runs: a canary planted in a volume by one container is
//! found by the next container that mounts the same volume, and by no
//! container without it.

use std::process::Command;

use crate::common::podman::*;
use serde_json::Value;

/// A podman volume removed on drop, pass or fail.
struct Volume(String);

impl Volume {
    fn create() -> Volume {
        let name = unique("vol");
        let out = podman().args(["volume", "create", &name]).output().unwrap();
        assert!(
            out.status.success(),
            "podman volume create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Volume(name)
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = podman().args(["volume", "rm", "-f", &self.0]).output();
    }
}

fn plant(img: &str, flags: &[&str]) -> (i32, Value) {
    plant_args(img, flags, &[])
}

fn plant_args(img: &str, flags: &[&str], args: &[&str]) -> (i32, Value) {
    let name = unique("plant");
    let mut cmd: Command = podman();
    cmd.args(["run", "--rm", "--name", &name])
        .args(flags)
        .arg(img)
        .args([
            "/usr/local/bin/selfprobe",
            "canary",
            "plant",
            "--format",
            "json",
        ])
        .args(args);
    let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
    let json = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "plant output is not JSON ({e}): {}\n{}",
            out.stdout, out.stderr
        )
    });
    (out.code.unwrap_or(-1), json)
}

#[test]
fn a_canary_in_a_shared_volume_survives_into_the_next_container() {
    let Some(img) = setup("a_canary_in_a_shared_volume_survives_into_the_next_container") else {
        return;
    };
    let vol = Volume::create();
    let mount = format!("{}:/cache", vol.0);

    let (code, planted) = plant(img, &["-v", &mount]);
    assert_eq!(code, 0, "{planted}");
    let run_id = planted["run_id"].as_str().unwrap().to_string();
    let paths: Vec<&str> = planted["planted"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert_eq!(
        paths,
        vec![format!("/cache/.selfprobe-canary-{run_id}.json")],
        "{planted}"
    );

    // A fresh container with the same volume: the earlier run leaked into it.
    let second = probe(img, &["-v", &mount], &[]);
    let mut c = second.check();
    let canary = format!("/cache/.selfprobe-canary-{run_id}.json");
    c.evidence(
        "teardown.canary-survived",
        &canary,
        "/evidence/canary_run_id",
        Value::String(run_id.clone()),
    );
    c.has("teardown.persistent-writable", "/cache");
    c.done();
    let f = second
        .find(
            "teardown.canary-survived",
            &format!("/cache/.selfprobe-canary-{run_id}.json"),
        )
        .unwrap();
    assert_eq!(f["evidence"]["planted_in"], "/cache");
    assert_eq!(f["evidence"]["signature"], "valid", "{f}");
    assert_eq!(f["evidence"]["keyid"], planted["keyid"]);
    assert!(f["evidence"]["planted_at"].as_str().unwrap().ends_with('Z'));
    assert_ne!(
        second.json["run"]["id"],
        Value::String(run_id.clone()),
        "a new run has a new id"
    );
    let teardown = second.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == "teardown")
        .unwrap()
        .clone();
    assert_eq!(
        teardown["score"], 0,
        "a surviving canary is 'manual unknown cleanup'"
    );

    // A canary edited afterwards (here: to blame another run) no longer verifies.
    let name = unique("edit");
    let mut cmd = podman();
    cmd.args([
        "run", "--rm", "--name", &name, "-v", &mount, img, "/bin/sed", "-i",
    ])
    .arg(format!(
        "s/\"run_id\": \"{run_id}\"/\"run_id\": \"0000000000000000\"/"
    ))
    .arg(format!("/cache/.selfprobe-canary-{run_id}.json"));
    let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let edited = probe(img, &["-v", &mount], &[]);
    let f = edited
        .find("teardown.canary-survived", &canary)
        .expect("still found");
    assert_eq!(f["evidence"]["canary_run_id"], "0000000000000000");
    assert_eq!(f["evidence"]["signature"], "invalid", "{f}");

    // Without the volume: nothing survived.
    let third = probe(img, &[], &[]);
    let mut c = third.check();
    c.lacks_code("teardown.canary-survived")
        .lacks_code("teardown.persistent-writable");
    c.done();
}

#[test]
fn plant_writes_nothing_into_the_workspace_or_read_only_mounts() {
    let Some(img) = setup("plant_writes_nothing_into_the_workspace_or_read_only_mounts") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let ro = TempPath::dir("ro").unwrap();
    let flags = [
        "-v",
        &format!("{}:/workspace", ws.arg()),
        "-v",
        &format!("{}:/data:ro", ro.arg()),
    ];
    // Declared with --workspace, and undeclared but the working directory
    // (the image's WORKDIR is /workspace): left alone either way.
    for extra in [&["--workspace", "/workspace"][..], &[][..]] {
        let mut f: Vec<&str> = flags.to_vec();
        f.push("--workdir");
        f.push("/workspace");
        let (code, planted) = plant_args(img, &f, extra);
        assert_eq!(code, 0);
        assert!(
            planted["planted"].as_array().unwrap().is_empty(),
            "{planted}"
        );
        assert_eq!(
            std::fs::read_dir(&ws.path).unwrap().count(),
            0,
            "the workspace is left alone"
        );
        assert_eq!(std::fs::read_dir(&ro.path).unwrap().count(), 0);
        let skipped = planted["skipped"].as_array().unwrap();
        assert!(
            skipped.iter().any(|s| s["location"] == "/data"),
            "{planted}"
        );
    }
}
