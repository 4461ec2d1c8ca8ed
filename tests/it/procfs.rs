//! /proc is believed only when it is procfs (statfs magic). A live run in a
//! mount namespace of the test's own, with a tmpfs over /proc holding a
//! status that claims every capability: the probes that read /proc are
//! incomplete with the reason, and nothing is concluded from the forgery.

use std::process::Command;

use serde_json::Value;

use crate::common::fixture::BIN;
use crate::common::podman::skip_or_fail;

#[test]
fn a_tmpfs_over_proc_is_not_believed() {
    let test = "a_tmpfs_over_proc_is_not_believed";
    if !nix::unistd::geteuid().is_root() {
        skip_or_fail(test, "needs root for a mount namespace of its own");
        return;
    }
    if Command::new("unshare").arg("--version").output().is_err() {
        skip_or_fail(test, "unshare not found; apt-get install -y util-linux");
        return;
    }
    let script = r#"mount -t tmpfs none /proc && mkdir -p /proc/self &&
printf 'Name:\tx\nCapEff:\t000001ffffffffff\nCapPrm:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\nSeccomp:\t0\nNoNewPrivs:\t0\n' > /proc/self/status &&
printf '1 0 0:1 / / rw - ext4 /dev/sda1 rw\n' > /proc/self/mountinfo &&
exec "$0" --format json --fail-on none --timeout 20s"#;
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, BIN])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    crate::common::dump::report(&o.stdout);
    let r: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr: {stderr}"));
    let findings = r["findings"].as_array().unwrap();
    let has = |code: &str, subject: &str| {
        findings
            .iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
    };
    for probe in ["privilege", "mounts"] {
        let f = has("probe.incomplete", probe)
            .unwrap_or_else(|| panic!("{probe} must be incomplete: {findings:#?}"));
        let why = f["evidence"]["reason"].as_str().unwrap_or("");
        assert!(why.contains("/proc is not procfs"), "{probe}: {why}");
    }
    let env = has("secret.process-env", "/proc").expect("other environments are unknown");
    assert_eq!(env["status"], "unknown");
    let cmd = has("secret.process-cmdline", "/proc").expect("other command lines are unknown");
    assert_eq!(cmd["status"], "unknown");
    for code in [
        "priv.capability",
        "priv.privileged",
        "priv.seccomp-disabled",
        "mount.host-root",
    ] {
        assert!(
            !findings.iter().any(|f| f["code"] == code),
            "{code} concluded from a forged /proc"
        );
    }
    let controls = r["scorecard"]["controls"].as_array().unwrap();
    let control = |key: &str| controls.iter().find(|c| c["control"] == key).unwrap();
    for key in ["engine-socket", "repo-scope"] {
        assert_eq!(control(key)["assessed"], false, "{key}: {}", control(key));
    }
    // The environment is unknown: the secret boundary may still be 0 on a
    // credential file found elsewhere (this machine's homes), never 2.
    let sb = control("secret-boundary");
    assert!(sb["assessed"] == false || sb["score"] == 0, "{sb}");
}
