//! The network probe in the FROM scratch image (Containerfile.test): no
//! /etc/resolv.conf, no CA bundle, a static binary without NSS. Every
//! destination must come back as a classified result, never a panic.
//!
//! Network rule (the README's Set-up): the container runs either with
//! `--network none` or in a network namespace this test made (`unshare -n`:
//! loopback only, nothing routes out of it), and the servers it reaches are
//! the test's own, bound inside that namespace. Every run also passes
//! `--net-loopback-only`.

use crate::common::netserve::*;
use crate::common::podman::*;
use serde_json::Value;

/// The outcomes a destination may have; "error" is not among them.
const CLASSIFIED: &[&str] = &[
    "reachable",
    "refused",
    "timeout",
    "unreachable",
    "blocked",
    "dns-failure",
    "tls-failure",
    "proxy-denied",
    "not-attempted",
];

/// `probe`, with the image's empty /etc/resolv.conf (left by the build's
/// RUN steps) removed first, so the image really has none.
fn probe_without_resolv_conf(img: &str, flags: &[&str], args: &[&str]) -> Run {
    let _shared = MACHINE.read().unwrap_or_else(|e| e.into_inner());
    let name = unique("ctr");
    let mut cmd = podman();
    cmd.args(["run", "--rm", "--name", &name])
        .args(flags)
        .arg(img)
        .args([
            "/bin/sh",
            "-c",
            &format!("rm -f /etc/resolv.conf && exec {IN_IMAGE} --format json \"$@\""),
            "sh",
        ])
        .args(args);
    let what = format!(
        "podman run {} IMG (no resolv.conf) selfprobe --format json {}",
        flags.join(" "),
        args.join(" ")
    );
    let out = run_bounded(cmd, RUN_TIMEOUT, Some(&name)).unwrap_or_else(|e| panic!("{e}"));
    let code = out.code.unwrap_or(-1);
    let json = serde_json::from_str(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: exit {code}, stdout is not JSON ({e})\nstdout:\n{}\nstderr:\n{}",
            out.stdout, out.stderr
        )
    });
    Run {
        what,
        code,
        json,
        stderr: out.stderr,
    }
}

fn no_resolv_conf(c: &mut Check) {
    let inv = &c.run.json["inventory"]["network"];
    if !inv["resolver"]["resolv_conf"]
        .as_str()
        .is_some_and(|s| s.contains("not read") && s.contains("No such file"))
    {
        c.fail(format!(
            "the image should have no resolv.conf: {}",
            inv["resolver"]
        ));
    }
}

fn dest<'a>(r: &'a Run, key: &str) -> &'a Value {
    r.json["inventory"]["network"]["destinations"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no destinations: {}", r.what, r.json))
        .iter()
        .find(|d| d["destination"] == key || d["name"] == key)
        .unwrap_or_else(|| panic!("{}: no destination {key}", r.what))
}

fn all_classified(c: &mut Check) {
    let run = c.run;
    let ds = run.json["inventory"]["network"]["destinations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if ds.is_empty() {
        c.fail("no destination was tried".into());
    }
    for d in ds {
        let o = d["outcome"].as_str().unwrap_or("?");
        if !CLASSIFIED.contains(&o) {
            c.fail(format!(
                "{} has outcome {o}: {}",
                d["destination"], d["error"]
            ));
        }
        if d["latency_ms"].as_f64().is_none() || d["rule"].as_str().is_none() {
            c.fail(format!("{} lacks latency or rule", d["destination"]));
        }
    }
    match run.json["probes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "network"))
    {
        Some(p) if p["status"] == "ok" => {}
        other => c.fail(format!("network probe record: {other:?}")),
    }
    if run.code == 3 || !run.stderr.trim().is_empty() {
        c.fail(format!("exit {} stderr {:?}", run.code, run.stderr));
    }
    // The probe as a whole finished; single destinations stopped by the
    // loopback guard are reported as incomplete, by name.
    c.lacks("probe.incomplete", "network");
}

fn expect(c: &mut Check, key: &str, field: &str, want: Value) {
    let got = dest(c.run, key)[field].clone();
    if got != want {
        c.fail(format!("{key}: {field} is {got} (want {want})"));
    }
}

#[test]
fn scratch_image_classifies_every_outcome() {
    let Some(img) = setup("scratch_image_classifies_every_outcome") else {
        return;
    };
    if let Some(why) = netns_missing() {
        skip_or_fail("scratch_image_classifies_every_outcome", &why);
        return;
    }
    let ns = NetNs::new();
    ns.exec(&[
        "iptables", "-A", "INPUT", "-p", "tcp", "--dport", "81", "-j", "DROP",
    ]);
    let web = Server::http_on(ns.listen("127.0.0.1:8080"), |_| reply(200, &[], "ok"));
    let cert = self_signed("selfprobe container test", &["localhost"]);
    let tls = Server::tls_on(ns.listen("127.0.0.1:8443"), tls_config(&cert), |_| {
        reply(200, &[], "hi")
    });
    let proxy = Server::http_on(ns.listen("127.0.0.1:3128"), |_| reply(403, &[], "denied"));

    let dir = TempPath::dir("netpolicy").expect("policy dir");
    std::fs::write(
        dir.path.join("p.toml"),
        "[network]\n\
         timeout = \"1s\"\n\
         allow = [\"http://pkgs.test:8080/\", \"https://localhost:8443/\", \"https://registry.example/\"]\n\
         deny = [\"tcp://127.0.0.1:9\", \"tcp://127.0.0.1:81\", \"dns://exfil.example\"]\n",
    )
    .unwrap();
    let network = format!("ns:{}", ns.path);
    let policy = vol(&dir, "/policy:ro");
    let r = probe_without_resolv_conf(
        img,
        &[
            "--network",
            &network,
            "--dns=none",
            "--add-host",
            "pkgs.test:127.0.0.1",
            "-v",
            &policy,
            "-e",
            "HTTPS_PROXY=http://127.0.0.1:3128",
            "-e",
            "NO_PROXY=localhost,127.0.0.1,pkgs.test",
        ],
        &["--policy", "/policy/p.toml", "--net-loopback-only"],
    );
    let mut c = r.check();
    all_classified(&mut c);
    expect(
        &mut c,
        "http://pkgs.test:8080/",
        "outcome",
        "reachable".into(),
    );
    expect(
        &mut c,
        "http://pkgs.test:8080/",
        "resolved_via",
        "hosts".into(),
    );
    expect(
        &mut c,
        "https://localhost:8443/",
        "outcome",
        "tls-failure".into(),
    );
    expect(
        &mut c,
        "https://registry.example/",
        "outcome",
        "proxy-denied".into(),
    );
    expect(
        &mut c,
        "https://registry.example/",
        "http_status",
        403.into(),
    );
    expect(&mut c, "tcp://127.0.0.1:9", "outcome", "refused".into());
    expect(&mut c, "tcp://127.0.0.1:81", "outcome", "timeout".into());
    expect(
        &mut c,
        "dns://exfil.example",
        "outcome",
        "dns-failure".into(),
    );
    let t = &dest(&r, "https://localhost:8443/")["tls"];
    if !t["issuer"]
        .as_str()
        .is_some_and(|i| i.contains("CN=selfprobe container test"))
        || t["trust_store"] != "embedded"
    {
        c.fail(format!("tls evidence: {t}"));
    }
    let inv = &r.json["inventory"]["network"];
    if inv["trust_store"]["kind"] != "embedded" {
        c.fail(format!("trust store: {}", inv["trust_store"]));
    }
    no_resolv_conf(&mut c);
    c.has("net.allowed-unreachable", "https://localhost:8443/");
    c.has("net.allowed-unreachable", "https://registry.example/");
    c.lacks("net.allowed-unreachable", "http://pkgs.test:8080/");
    c.lacks_code("net.denied-reachable");
    c.has_code("net.proxy");
    c.done();
    assert_eq!(web.connections(), 1, "the reachable server saw the probe");
    assert!(tls.connections() >= 1);
    assert_eq!(proxy.requests()[0].method, "CONNECT");
}

#[test]
fn scratch_image_without_network_tries_every_builtin() {
    let Some(img) = setup("scratch_image_without_network_tries_every_builtin") else {
        return;
    };
    let r = probe_without_resolv_conf(
        img,
        &["--network", "none"],
        &[
            "--network-defaults",
            "--net-loopback-only",
            "--timeout",
            "20s",
        ],
    );
    let mut c = r.check();
    all_classified(&mut c);
    no_resolv_conf(&mut c);
    if r.json["inventory"]["network"]["trust_store"]["kind"] != "embedded" {
        c.fail(format!(
            "trust store: {}",
            r.json["inventory"]["network"]["trust_store"]
        ));
    }
    // Addresses are stopped by the guard, names fail without a resolver,
    // loopback ports are refused in the empty namespace.
    expect(&mut c, "aws-imdsv2", "outcome", "not-attempted".into());
    expect(&mut c, "gcp-metadata", "outcome", "dns-failure".into());
    expect(&mut c, "egress-https", "outcome", "dns-failure".into());
    expect(&mut c, "devtools-9222", "outcome", "refused".into());
    expect(&mut c, "engine-loopback-2375", "outcome", "refused".into());
    c.lacks_code("browser.debug-port")
        .lacks_code("engine.tcp-endpoint")
        .lacks_code("net.not-assessed");
    // Destinations the guard stopped are "could not check" (unknown),
    // never a failure and never a pass.
    for f in r.findings() {
        let code = f["code"].as_str().unwrap_or("");
        if (code == "net.metadata-reachable" || code == "net.egress-open")
            && f["status"] != "unknown"
        {
            c.fail(format!(
                "{code} {} has status {}",
                f["subject"], f["status"]
            ));
        }
    }
    if !r
        .pairs()
        .iter()
        .any(|(c, s)| c == "net.metadata-reachable" && s == "aws-imdsv2")
    {
        c.fail("aws-imdsv2 should be reported as not checked".into());
    }
    c.done();
}
