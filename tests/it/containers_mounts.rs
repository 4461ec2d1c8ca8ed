//! Real podman containers for the mount table's engine files (issue 12): the
//! init binary podman binds in for --init, and the probe itself bind-mounted
//! read-only, the way to run it in a --read-only container an engine will
//! not `cp` into. Neither is a host path of the workspace's.
//!
//! Same prerequisites and SKIP/CI rules as tests/it/containers.rs; no
//! network (--network none).

use serde_json::Value;

use crate::common::podman::*;
use crate::common::shipped;

fn entry<'a>(r: &'a Run, mp: &str) -> Option<&'a Value> {
    r.json["inventory"]["mounts"]["mounts"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["mount_point"] == mp)
}

#[test]
fn podman_init_is_the_engines() {
    let Some(img) = setup("podman_init_is_the_engines") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let v = vol(&ws, "/workspace");
    let r = probe(
        img,
        &[CLEAN, &["--init", "-v", &v]].concat(),
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks_code("mount.unexpected")
        .lacks_code("write.host-path")
        .lacks_code("teardown.persistent-writable")
        .probes_ok();
    match entry(&r, "/run/podman-init") {
        Some(e) => {
            if e["class"] != "engine-managed" || e["managed"]["by"] != "podman" {
                c.fail(format!("/run/podman-init: {e:#}"));
            }
            if e["managed"]["file"] != "init" {
                c.fail(format!(
                    "/run/podman-init is not named the init binary: {e:#}"
                ));
            }
        }
        None => c.fail("podman --init bound no /run/podman-init".into()),
    }
    if r.json["inventory"]["mounts"]["engine"]["engine"] != "podman" {
        c.fail(format!(
            "engine {} (want podman)",
            r.json["inventory"]["mounts"]["engine"]
        ));
    }
    lacks_common(&mut c);
    c.done();
}

#[test]
fn the_probe_bind_mounted_read_only_is_itself() {
    let Some(img) = setup("the_probe_bind_mounted_read_only_is_itself") else {
        return;
    };
    let ws = TempPath::dir("ws").unwrap();
    let v = vol(&ws, "/workspace");
    // Over the image's own copy: what runs is the bind-mounted binary.
    let probe_bind = format!("{}:{IN_IMAGE}:ro", shipped::bin_str());
    let r = probe(
        img,
        &[CLEAN, &["-v", &v, "-v", &probe_bind]].concat(),
        &["--workspace", "/workspace"],
    );
    let mut c = r.check();
    c.exit(0)
        .nothing_high()
        .lacks("mount.unexpected", IN_IMAGE)
        .lacks_code("mount.unexpected")
        .lacks("write.host-path", IN_IMAGE)
        .probes_ok();
    match entry(&r, IN_IMAGE) {
        Some(e) if e["class"] == "probe-binary" => {}
        other => c.fail(format!("{IN_IMAGE}: {other:#?} (want class probe-binary)")),
    }
    lacks_common(&mut c);
    c.done();
}
