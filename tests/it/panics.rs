//! A panic is reported, not a crash (src/util/panics.rs; the README's Exit
//! codes): a probe's panic is its `probe.incomplete` with exit 3 and the
//! report still written, a network destination's is that destination's
//! internal error, a tool runner's is "the runner failed internally", and
//! a main-thread panic prints Rust's message and exits 101.
//!
//! The panics are planted with SELFPROBE_DEBUG_PANIC, which only the debug
//! build (this test binary's selfprobe) reads. Its hook is the shipped
//! build's: under `panic = "abort"` the same hook is all that stands
//! between a panic and an abort, and it never returns in either build.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::fixture::{data, mountinfo_with, Fixture, BIN};
use crate::common::netserve::{loopback, Server};
use crate::common::podman::TempPath;

fn planted(at: &str, cmd: &mut Command) -> (Output, Value) {
    let out = cmd.env("SELFPROBE_DEBUG_PANIC", at).output().unwrap();
    crate::common::dump::report(&out.stdout);
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, json)
}

fn probe<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["probes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no probe record {name}: {j}"))
}

#[test]
fn a_probe_panic_is_its_probe_incomplete_and_the_report_is_written() {
    let f = Fixture::container("panic", &mountinfo_with(&[]), &data("plain.status"));
    let mut cmd = Command::new(BIN);
    cmd.arg("--root").arg(&f.dir).args(["--format", "json"]);
    let (out, j) = planted("probe:devices", &mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "exit 3; stderr: {stderr}");
    let why = "planted panic at probe:devices (SELFPROBE_DEBUG_PANIC)";
    let rec = probe(&j, "devices");
    assert_eq!(rec["status"], "panic", "{rec}");
    assert_eq!(rec["reason"], why, "{rec}");
    let incomplete: Vec<&Value> = j["findings"]
        .as_array()
        .expect("the report is written, findings and all")
        .iter()
        .filter(|f| f["code"] == "probe.incomplete" && f["subject"] == "devices")
        .collect();
    assert_eq!(incomplete.len(), 1, "{j}");
    assert_eq!(incomplete[0]["status"], "unknown");
    assert_eq!(
        incomplete[0]["message"],
        format!("the devices probe could not finish: it failed internally ({why})")
    );
    // The others finished: one probe's panic costs that probe only.
    for other in ["mounts", "boundary", "privilege", "namespaces", "writable"] {
        assert_eq!(probe(&j, other)["status"], "ok", "{other}");
    }
    assert!(!stderr.contains("panicked"), "silent: {stderr}");
}

#[test]
fn a_destination_thread_panic_is_that_destinations_error() {
    let srv = Server::http(|_| crate::common::netserve::reply(200, &[], "ok\n"));
    let closed = loopback().local_addr().unwrap().port();
    let f = Fixture::container("panic-net", &mountinfo_with(&[]), &data("plain.status"));
    let policy = f.path("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[network]\nallow = [\"http://127.0.0.1:{}/\", \"tcp://127.0.0.1:{closed}\"]\n",
            srv.port
        ),
    )
    .unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("--root")
        .arg(&f.dir)
        .args(["--format", "json", "--net-loopback-only", "--policy"])
        .arg(&policy);
    for v in crate::network::CLEARED {
        cmd.env_remove(v);
    }
    let (out, j) = planted("net:0", &mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dests = j["inventory"]["network"]["destinations"]
        .as_array()
        .unwrap_or_else(|| panic!("no destinations; stderr: {stderr}"));
    let first = &dests[0];
    assert_eq!(
        first["destination"],
        format!("http://127.0.0.1:{}/", srv.port)
    );
    assert_eq!(first["outcome"], "error", "{first}");
    assert_eq!(first["stage"], "probe", "{first}");
    assert_eq!(first["error"], "internal error while probing it", "{first}");
    // The other destination went on, and so did the network probe.
    assert_eq!(dests[1]["outcome"], "refused", "{}", dests[1]);
    assert_eq!(probe(&j, "network")["status"], "ok");
    assert!(!stderr.contains("panicked"), "silent: {stderr}");
}

#[test]
fn a_tool_runner_panic_is_that_tools_internal_failure() {
    // A live run (tools are never run under --root) with a PATH of one
    // tool of our own: no version file names it, so it would be run.
    let dir = TempPath::dir("panic-tool").unwrap();
    let bin = dir.path.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("deno");
    std::fs::write(&tool, "#!/bin/sh\necho deno 9.9.9\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ws = dir.path.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["--format", "json", "--fail-on", "none", "--timeout", "20s"])
        .arg("--workspace")
        .arg(&ws)
        .env("PATH", &bin);
    let (out, j) = planted("tool:deno", &mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tools = j["inventory"]["repro"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no repro tools; stderr: {stderr}"));
    let deno = tools
        .iter()
        .find(|t| t["tool"] == "deno")
        .unwrap_or_else(|| panic!("no deno in {tools:?}"));
    assert_eq!(deno["status"], "error", "{deno}");
    assert_eq!(deno["reason"], "the runner failed internally", "{deno}");
    assert_eq!(probe(&j, "repro")["status"], "ok");
    assert!(!stderr.contains("panicked"), "silent: {stderr}");
}

#[test]
fn a_main_thread_panic_prints_rusts_message_and_exits_101() {
    let (out, _) = planted("main", Command::new(BIN).arg("list-checks"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "nothing listed after the panic");
    assert!(
        stderr.contains("thread 'main'")
            && stderr.contains("panicked at")
            && stderr.contains("planted panic at main (SELFPROBE_DEBUG_PANIC)"),
        "Rust's message: {stderr}"
    );
}
