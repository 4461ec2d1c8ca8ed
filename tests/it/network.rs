//! The network boundary as a task contract (issue 3; the README's The policy file and Set-up).
//!
//! Network rule: every byte these tests make selfprobe send goes to loopback
//! servers of the test's own, or stays inside a network namespace the test
//! made (`unshare -n`). Every run passes `--net-loopback-only`, so even a
//! destination a test forgot to redirect is never contacted; the built-in
//! destinations (metadata, public egress) are only ever tried through
//! `--net-redirect` to loopback servers.

use std::fs;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::netserve::*;
use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_selfprobe");

/// Variables that would change what the probe does; each run starts without them.
pub(crate) const CLEARED: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "BUILDKIT_HOST",
    "CONTAINERD_ADDRESS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

static N: AtomicUsize = AtomicUsize::new(0);

/// A fixture root (`--root`) and a policy file beside it; removed on drop.
pub(crate) struct Root {
    pub(crate) dir: PathBuf,
    pub(crate) policy: PathBuf,
}

impl Root {
    pub(crate) fn new(tag: &str) -> Root {
        let base = std::env::temp_dir().join(format!(
            "selfprobe-net-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("root/etc")).unwrap();
        Root {
            dir: base.join("root"),
            policy: base.join("selfprobe.toml"),
        }
    }

    pub(crate) fn file(&self, rel: &str, content: &str) {
        let p = self.dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    fn file_bytes(&self, rel: &str, content: &[u8]) {
        let p = self.dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    pub(crate) fn with_policy(&self, text: &str) -> &Root {
        fs::write(&self.policy, text).unwrap();
        self
    }

    pub(crate) fn policy_arg(&self) -> String {
        self.policy.to_str().unwrap().to_string()
    }

    pub(crate) fn command(&self, prefix: &[&str]) -> Command {
        let mut cmd = if prefix.is_empty() {
            Command::new(BIN)
        } else {
            let mut c = Command::new(prefix[0]);
            c.args(&prefix[1..]).arg(BIN);
            c
        };
        cmd.arg("--root")
            .arg(&self.dir)
            .args(["--format", "json", "--net-loopback-only"]);
        for v in CLEARED {
            cmd.env_remove(v);
        }
        cmd
    }

    /// selfprobe with the policy (when written), `args` and `env`.
    pub(crate) fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.run_in(&[], args, env)
    }

    pub(crate) fn run_in(&self, prefix: &[&str], args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(prefix);
        if self.policy.exists() {
            cmd.arg("--policy").arg(&self.policy);
        }
        cmd.args(args);
        // Under --root the tree's /proc/self/environ is the probes' whole
        // environment (src/host.rs): the variables go there, and the file
        // is rewritten for every run so one run's proxies stay its own.
        let environ: Vec<u8> = env
            .iter()
            .flat_map(|(k, v)| format!("{k}={v}\0").into_bytes())
            .collect();
        self.file_bytes("proc/self/environ", &environ);
        let started = Instant::now();
        let out = cmd.output().expect("run selfprobe");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        crate::common::dump::report(&out.stdout);
        let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                out.status
            )
        });
        Run {
            code: out.status.code().unwrap_or(-1),
            json,
            stdout,
            stderr,
            wall: started.elapsed(),
        }
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        if let Some(base) = self.dir.parent() {
            let _ = fs::remove_dir_all(base);
        }
    }
}

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) json: Value,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) wall: Duration,
}

impl Run {
    pub(crate) fn destinations(&self) -> &Vec<Value> {
        self.json["inventory"]["network"]["destinations"]
            .as_array()
            .unwrap_or_else(|| panic!("no inventory.network.destinations: {}", self.stdout))
    }

    /// The result for a destination, by its text or built-in name.
    pub(crate) fn dest(&self, key: &str) -> &Value {
        self.destinations()
            .iter()
            .find(|d| d["destination"] == key || d["name"] == key)
            .unwrap_or_else(|| {
                panic!(
                    "no destination {key}; got {:#?}",
                    self.destinations()
                        .iter()
                        .map(|d| d["destination"].clone())
                        .collect::<Vec<_>>()
                )
            })
    }

    pub(crate) fn findings(&self) -> Vec<&Value> {
        self.json["findings"].as_array().unwrap().iter().collect()
    }

    pub(crate) fn find(&self, code: &str, subject: &str) -> Option<&Value> {
        self.findings()
            .into_iter()
            .find(|f| f["code"] == code && f["subject"] == subject)
    }

    pub(crate) fn must(&self, code: &str, subject: &str) -> &Value {
        self.find(code, subject)
            .unwrap_or_else(|| panic!("expected {code} on {subject}; got {:#?}", self.pairs()))
    }

    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        self.findings()
            .iter()
            .map(|f| {
                (
                    f["code"].as_str().unwrap().to_string(),
                    f["subject"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    pub(crate) fn count(&self, code: &str) -> usize {
        self.pairs().iter().filter(|(c, _)| c == code).count()
    }

    pub(crate) fn probe(&self, name: &str) -> Option<&Value> {
        self.json["probes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
    }
}

pub(crate) fn ok_server() -> Server {
    Server::http(|_| reply(200, &[], "ok\n"))
}

pub(crate) fn closed_port() -> u16 {
    // Bound and dropped: nothing listens there now.
    loopback().local_addr().unwrap().port()
}

#[test]
fn allow_entry_on_a_loopback_http_server_is_reachable() {
    let srv = ok_server();
    let closed = closed_port();
    let root = Root::new("allow");
    root.with_policy(&format!(
        "[network]\nallow = [\n  \"http://127.0.0.1:{}/health\",\n  \"tcp://127.0.0.1:{closed}\",\n]\n",
        srv.port
    ));
    let r = root.run(&[], &[]);
    let d = r.dest(&format!("http://127.0.0.1:{}/health", srv.port));
    assert_eq!(d["outcome"], "reachable");
    assert_eq!(d["contract"], "holds");
    assert_eq!(d["http_status"], 200);
    assert_eq!(d["list"], "allow");
    assert_eq!(d["rule"], format!("policy {}:3:3", root.policy_arg()));
    assert!(d["latency_ms"].as_f64().unwrap() > 0.0);
    assert!(r
        .find(
            "net.allowed-unreachable",
            &format!("http://127.0.0.1:{}/health", srv.port)
        )
        .is_none());
    assert_eq!(srv.requests()[0].target, "/health");
    assert_eq!(
        srv.requests()[0].header("host"),
        Some(format!("127.0.0.1:{}", srv.port).as_str())
    );

    // The same policy with a closed port: the contract is broken and said so.
    let c = r.must(
        "net.allowed-unreachable",
        &format!("tcp://127.0.0.1:{closed}"),
    );
    assert_eq!(c["evidence"]["outcome"], "refused");
    assert_eq!(c["severity"], "medium");
    assert_eq!(
        r.code, 0,
        "medium does not gate at the default --fail-on high"
    );
    assert_eq!(r.probe("network").unwrap()["status"], "ok");
    let sc = r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == "network-policy")
        .unwrap()
        .clone();
    assert_eq!(sc["assessed"], true);
    assert_eq!(sc["score"], 1);
}

#[test]
fn closed_port_on_a_deny_entry_is_refused_and_the_contract_holds() {
    let closed = closed_port();
    let root = Root::new("deny-closed");
    root.with_policy(&format!(
        "[network]\ndeny = [\"tcp://127.0.0.1:{closed}\"]\n"
    ));
    let r = root.run(&[], &[]);
    let d = r.dest(&format!("tcp://127.0.0.1:{closed}"));
    assert_eq!(d["outcome"], "refused");
    assert_eq!(d["stage"], "connect");
    assert_eq!(d["contract"], "holds");
    assert_eq!(d["connected"], false);
    assert_eq!(r.count("net.denied-reachable"), 0);
    assert_eq!(r.count("net.not-assessed"), 0);
    assert_eq!(r.code, 0, "{:#?}", r.pairs());
    let sc = &r.json["scorecard"]["controls"][3];
    assert_eq!(
        (sc["control"].as_str(), sc["score"].as_u64()),
        (Some("network-policy"), Some(2))
    );

    // JUnit: with the policy the network checks ran and pass; without it
    // the network probe does not run, and its checks are skipped, never
    // passed, while the secrets checks of the same phase did run.
    let junit = |policy: bool| {
        let mut cmd = Command::new(BIN);
        cmd.arg("--root").arg(&root.dir);
        if policy {
            cmd.arg("--policy").arg(&root.policy);
        }
        cmd.args(["--format", "junit", "--net-loopback-only"]);
        for v in CLEARED {
            cmd.env_remove(v);
        }
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    };
    let case = |xml: &str, code: &str| {
        let start = xml
            .find(&format!("name=\"{code}\""))
            .unwrap_or_else(|| panic!("no test case {code}: {xml}"));
        let end = start + xml[start..].find("</testcase>").unwrap();
        xml[start..end].to_string()
    };
    let with = junit(true);
    assert!(
        !case(&with, "net.denied-reachable").contains("<skipped"),
        "{with}"
    );
    let without = junit(false);
    assert!(
        case(&without, "net.denied-reachable").contains("<skipped"),
        "{without}"
    );
    assert!(
        !case(&without, "secret.env").contains("<skipped"),
        "{without}"
    );
}

#[test]
fn open_port_on_a_deny_entry_is_denied_reachable_and_exits_1() {
    let open = Server::closing();
    let web = ok_server();
    let root = Root::new("deny-open");
    root.with_policy(&format!(
        "[network]\ndeny = [\"tcp://127.0.0.1:{}\", \"http://127.0.0.1:{}/\"]\n",
        open.port, web.port
    ));
    let r = root.run(&[], &[]);
    let subject = format!("tcp://127.0.0.1:{}", open.port);
    let f = r.must("net.denied-reachable", &subject);
    assert_eq!(f["severity"], "high");
    assert_eq!(f["evidence"]["outcome"], "reachable");
    assert_eq!(f["evidence"]["address"], format!("127.0.0.1:{}", open.port));
    assert!(f["evidence"]["rule"].as_str().unwrap().ends_with(":2:9"));
    let h = r.must(
        "net.denied-reachable",
        &format!("http://127.0.0.1:{}/", web.port),
    );
    assert_eq!(h["evidence"]["http_status"], 200);
    assert_eq!(r.dest(&subject)["contract"], "violated");
    assert_eq!(r.code, 1);
    assert_eq!(r.json["summary"]["exit_code"], 1);
    assert!(open.connections() >= 1);
}

#[test]
fn a_drop_rule_in_a_namespace_of_our_own_is_a_timeout() {
    if let Some(why) = netns_missing() {
        crate::common::podman::skip_or_fail(
            "a_drop_rule_in_a_namespace_of_our_own_is_a_timeout",
            &why,
        );
        return;
    }
    let ns = NetNs::new();
    ns.exec(&[
        "iptables",
        "-A",
        "INPUT",
        "-p",
        "tcp",
        "--dport",
        "7001:7002",
        "-j",
        "DROP",
    ]);
    let root = Root::new("drop");
    root.with_policy(
        "[network]\n\
         allow = [{ url = \"http://127.0.0.1:7002/\", timeout = \"800ms\" }]\n\
         deny = [\"tcp://127.0.0.1:7001\", \"tcp://127.0.0.1:7003\"]\n\
         timeout = \"1s\"\n",
    );
    let netarg = format!("--net={}", ns.path);
    let r = root.run_in(&["nsenter", &netarg], &[], &[]);
    let d = r.dest("tcp://127.0.0.1:7001");
    assert_eq!(d["outcome"], "timeout", "{d:#}");
    assert_eq!(d["contract"], "holds");
    // The promise: it waits its whole second (never gives up early), and
    // the probe ends inside its own budget (the longest timeout and the
    // runner's margin) instead of being cut. How far past 1 s the answer
    // came is the machine's load, not the code: that figure is a
    // benchmark's (bench/network.sh).
    let ms = d["latency_ms"].as_f64().unwrap();
    assert!(ms >= 950.0, "a 1 s timeout gave up after {ms} ms");
    assert_eq!(d["timeout_ms"], 1000);
    assert_eq!(
        r.probe("network").unwrap()["status"],
        "ok",
        "cut by its budget"
    );
    // Not dropped: refused at once, in the same namespace.
    assert_eq!(r.dest("tcp://127.0.0.1:7003")["outcome"], "refused");
    let a = r.dest("http://127.0.0.1:7002/");
    assert_eq!(a["outcome"], "timeout");
    assert_eq!(a["timeout_ms"], 800, "the per-destination timeout wins");
    let f = r.must("net.allowed-unreachable", "http://127.0.0.1:7002/");
    assert!(f["message"].as_str().unwrap().contains("800 ms"), "{f:#}");
}

#[test]
fn a_hundred_timeouts_of_1s_finish_the_phase_in_under_2s() {
    if let Some(why) = netns_missing() {
        crate::common::podman::skip_or_fail(
            "a_hundred_timeouts_of_1s_finish_the_phase_in_under_2s",
            &why,
        );
        return;
    }
    let ns = NetNs::new();
    ns.exec(&[
        "iptables",
        "-A",
        "INPUT",
        "-p",
        "tcp",
        "--dport",
        "20000:20099",
        "-j",
        "DROP",
    ]);
    let root = Root::new("hundred");
    let deny: Vec<String> = (20000..20100)
        .map(|p| format!("  \"tcp://127.0.0.1:{p}\",\n"))
        .collect();
    root.with_policy(&format!(
        "[network]\ntimeout = \"1s\"\ndeny = [\n{}]\n",
        deny.concat()
    ));
    let netarg = format!("--net={}", ns.path);
    let r = root.run_in(&["nsenter", &netarg], &[], &[]);
    assert_eq!(r.destinations().len(), 100);
    for d in r.destinations() {
        assert_eq!(d["outcome"], "timeout", "{d:#}");
        assert_eq!(d["contract"], "holds");
    }
    let phase = r.json["inventory"]["network"]["duration_ms"]
        .as_f64()
        .unwrap();
    let record = r.probe("network").unwrap()["duration_us"].as_f64().unwrap() / 1000.0;
    let slowest = r
        .destinations()
        .iter()
        .map(|d| d["latency_ms"].as_f64().unwrap())
        .fold(0.0, f64::max);
    // Straight to fd 2 so the figure shows with --nocapture or not.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "BENCH network: 100 deny destinations timing out at 1 s: phase {phase:.1} ms, probe {record:.1} ms, slowest destination {slowest:.1} ms, whole run {:.1} ms",
        r.wall.as_secs_f64() * 1000.0
    );
    assert!(phase >= 1000.0, "each waited its full second: {phase}");
    // Side by side, not one after another: the probe ended inside its
    // budget (1 s and the runner's 0.7 s margin; 100 in a row would take
    // 100 s) rather than being cut by it. The figures above are the
    // benchmark; the machine's load decides them, not the code.
    assert_eq!(
        r.probe("network").unwrap()["status"],
        "ok",
        "phase {phase} ms, probe {record} ms"
    );
    assert!(
        !r.findings()
            .iter()
            .any(|f| f["code"] == "probe.incomplete" && f["evidence"]["probe"] == "network"),
        "the network probe was cut: phase {phase} ms"
    );
    assert_eq!(r.count("net.denied-reachable"), 0);
    assert_eq!(r.code, 0);
}

#[test]
fn a_name_from_etc_hosts() {
    let srv = ok_server();
    let root = Root::new("hosts");
    root.file(
        "etc/hosts",
        "127.0.0.1 localhost\n127.0.0.1 pkgs.internal pkgs # the task's registry\n",
    );
    // No resolv.conf at all: the name must come from /etc/hosts alone.
    root.with_policy(&format!(
        "[network]\nallow = [\"http://pkgs.internal:{}/simple/\", \"dns://PKGS.internal\", \"dns://pkgs\"]\ndeny = [\"dns://not-in-hosts.internal\"]\n",
        srv.port
    ));
    let r = root.run(&[], &[]);
    let d = r.dest(&format!("http://pkgs.internal:{}/simple/", srv.port));
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert_eq!(d["resolved_via"], "hosts");
    assert_eq!(d["resolved"][0], "127.0.0.1");
    assert_eq!(
        srv.requests()[0].header("host"),
        Some(format!("pkgs.internal:{}", srv.port).as_str())
    );
    assert_eq!(r.dest("dns://pkgs.internal")["outcome"], "reachable");
    assert_eq!(r.dest("dns://pkgs")["resolved_via"], "hosts");
    let nx = r.dest("dns://not-in-hosts.internal");
    assert_eq!(nx["outcome"], "dns-failure");
    assert_eq!(nx["contract"], "holds");
    assert!(
        nx["error"].as_str().unwrap().contains("no nameserver"),
        "{nx:#}"
    );
    assert_eq!(r.count("net.allowed-unreachable"), 0, "{:#?}", r.pairs());
    assert_eq!(
        r.json["inventory"]["network"]["resolver"]["hosts_entries"],
        2
    );
}

#[test]
fn names_through_the_nameserver_of_resolv_conf() {
    let srv = ok_server();
    let dns = Dns::start(&[("api.corp.test", Ipv4Addr::LOCALHOST)]);
    let root = Root::new("dns");
    // 127.0.0.153 is not listening; the redirect sends its queries to our
    // server, and the loopback guard would stop anything else.
    root.file(
        "etc/resolv.conf",
        "nameserver 127.0.0.153\nsearch corp.test\noptions ndots:1 timeout:1 attempts:1\n",
    );
    root.with_policy(&format!(
        "[network]\nallow = [\"tcp://api.corp.test:{0}\", \"http://api:{0}/\"]\ndeny = [\"dns://exfil.example\"]\n",
        srv.port
    ));
    let redirect = format!("127.0.0.153:53=127.0.0.1:{}", dns.port);
    let r = root.run(&["--net-redirect", &redirect], &[]);
    let d = r.dest(&format!("tcp://api.corp.test:{}", srv.port));
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert_eq!(d["resolved_via"], "dns");
    let s = r.dest(&format!("http://api:{}/", srv.port));
    assert_eq!(
        s["outcome"], "reachable",
        "the search domain applies: {s:#}"
    );
    let nx = r.dest("dns://exfil.example");
    assert_eq!(nx["outcome"], "dns-failure");
    assert!(nx["error"].as_str().unwrap().contains("NXDOMAIN"), "{nx:#}");
    assert_eq!(nx["contract"], "holds");
    let q = dns.queries();
    assert!(q.contains(&"api.corp.test/1".to_string()), "{q:?}");
    assert!(
        q.contains(&"api.corp.test/28".to_string()),
        "A and AAAA: {q:?}"
    );
    assert_eq!(r.json["inventory"]["network"]["redirects"][0], redirect);
    assert_eq!(r.code, 0);
}

#[test]
fn a_resolver_that_never_answers_aaaa_costs_little() {
    let srv = ok_server();
    let dns = Dns::start_with(&[("slow6.corp.test", Ipv4Addr::LOCALHOST)], false);
    let root = Root::new("dns-aaaa");
    root.file(
        "etc/resolv.conf",
        "nameserver 127.0.0.153\noptions timeout:3\n",
    );
    root.with_policy(&format!(
        "[network]\ntimeout = \"3s\"\nallow = [\"tcp://slow6.corp.test:{}\"]\n",
        srv.port
    ));
    let redirect = format!("127.0.0.153:53=127.0.0.1:{}", dns.port);
    let r = root.run(&["--net-redirect", &redirect], &[]);
    let d = r.dest(&format!("tcp://slow6.corp.test:{}", srv.port));
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    let ms = d["latency_ms"].as_f64().unwrap();
    assert!(
        ms < 1500.0,
        "waited {ms} ms for an AAAA answer that never comes"
    );
    assert!(dns.queries().contains(&"slow6.corp.test/28".to_string()));
}

#[test]
fn a_self_signed_tls_server_is_a_tls_failure_with_its_issuer() {
    let cert = self_signed("selfprobe self-signed test", &["localhost"]);
    let srv = Server::tls_on(loopback(), tls_config(&cert), |_| reply(200, &[], "hi"));
    let root = Root::new("tls");
    root.file("etc/hosts", "127.0.0.1 localhost\n");
    root.with_policy(&format!(
        "[network]\nallow = [\"https://localhost:{}/\"]\n",
        srv.port
    ));
    let r = root.run(&[], &[]);
    let subject = format!("https://localhost:{}/", srv.port);
    let d = r.dest(&subject);
    assert_eq!(d["outcome"], "tls-failure", "{d:#}");
    assert_eq!(d["stage"], "tls");
    assert_eq!(d["tls"]["verified"], false);
    assert_eq!(
        d["tls"]["trust_store"], "embedded",
        "the fixture has no CA bundle"
    );
    let issuer = d["tls"]["issuer"].as_str().unwrap();
    assert!(issuer.contains("CN=selfprobe self-signed test"), "{issuer}");
    assert!(issuer.contains("O=selfprobe tests"), "{issuer}");
    assert_eq!(d["tls"]["subject"], d["tls"]["issuer"], "self-signed");
    let f = r.must("net.allowed-unreachable", &subject);
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("issued by '") && m.contains("CN=selfprobe self-signed test'"),
        "{f:#}"
    );
    assert_eq!(f["evidence"]["trust_store"]["kind"], "embedded");
    assert_eq!(
        r.json["inventory"]["network"]["trust_store"]["kind"],
        "embedded"
    );
    assert!(
        srv.requests().is_empty(),
        "no request is sent over a failed handshake"
    );

    // Denied, the same server counts as reached: a handshake happened.
    root.with_policy(&format!(
        "[network]\ndeny = [\"https://localhost:{}/\"]\n",
        srv.port
    ));
    let r = root.run(&[], &[]);
    let f = r.must("net.denied-reachable", &subject);
    assert_eq!(f["evidence"]["outcome"], "tls-failure");
    assert_eq!(r.code, 1);
}

#[test]
fn the_image_ca_bundle_is_used_when_there_is_one() {
    let (ca, leaf) = ca_and_leaf("selfprobe test CA", &["localhost"]);
    let srv = Server::tls_on(loopback(), tls_config(&leaf), |s| {
        reply(if s.target == "/ok" { 200 } else { 404 }, &[], "hi")
    });
    let root = Root::new("bundle");
    root.file("etc/hosts", "127.0.0.1 localhost\n");
    root.file("etc/ssl/certs/ca-certificates.crt", &ca.cert_pem);
    root.with_policy(&format!(
        "[network]\nallow = [\"https://localhost:{}/ok\"]\n",
        srv.port
    ));
    let r = root.run(&[], &[]);
    let d = r.dest(&format!("https://localhost:{}/ok", srv.port));
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert_eq!(d["http_status"], 200);
    assert_eq!(d["tls"]["verified"], true);
    assert_eq!(d["tls"]["trust_store"], "system");
    assert_eq!(d["tls"]["issuer"], "CN=selfprobe test CA");
    assert_eq!(d["tls"]["subject"], "CN=localhost");
    let ts = &r.json["inventory"]["network"]["trust_store"];
    assert_eq!(ts["kind"], "system");
    assert_eq!(ts["source"], "/etc/ssl/certs/ca-certificates.crt");
    assert_eq!(ts["certificates"], 1);
    assert_eq!(r.count("net.allowed-unreachable"), 0);
}

#[test]
fn a_ca_added_through_ssl_cert_dir_is_trusted_and_named() {
    let (ca, leaf) = ca_and_leaf("selfprobe corporate CA", &["localhost"]);
    let srv = Server::tls_on(loopback(), tls_config(&leaf), |_| reply(200, &[], "hi"));
    let root = Root::new("certdir");
    root.file("etc/hosts", "127.0.0.1 localhost\n");
    // The layout c_rehash makes: a PEM file and a hashed name linking to it.
    // Beside them, what a workspace may leave there: a FIFO named like a
    // certificate (must not hang the run) and a file that is not PEM.
    root.file("opt/corp-certs/corp.pem", &ca.cert_pem);
    std::os::unix::fs::symlink("corp.pem", root.dir.join("opt/corp-certs/1a2b3c4d.0")).unwrap();
    nix::unistd::mkfifo(
        &root.dir.join("opt/corp-certs/0badf1f0.0"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    root.file("opt/corp-certs/README", "not a certificate\n");
    let subject = format!("https://localhost:{}/", srv.port);
    root.with_policy(&format!("[network]\nallow = [\"{subject}\"]\n"));

    // Without SSL_CERT_DIR the CA is unknown: the embedded roots refuse it.
    let r = root.run(&[], &[]);
    assert_eq!(r.dest(&subject)["outcome"], "tls-failure");

    let r = root.run(&[], &[("SSL_CERT_DIR", "/nonexistent:/opt/corp-certs")]);
    let d = r.dest(&subject);
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert_eq!(d["tls"]["verified"], true);
    assert_eq!(d["tls"]["trust_store"], "system");
    let ts = &r.json["inventory"]["network"]["trust_store"];
    assert_eq!(ts["source"], "/opt/corp-certs (SSL_CERT_DIR)", "{ts:#}");
    assert_eq!(ts["certificates"], 1, "the same CA twice counts once");
    assert_eq!(r.count("net.allowed-unreachable"), 0);

    // With a bundle as well, both are named, and a certificate in both is
    // counted once.
    let (other, _) = ca_and_leaf("selfprobe other CA", &["example.invalid"]);
    root.file(
        "etc/ssl/certs/ca-certificates.crt",
        &format!("{}{}", other.cert_pem, ca.cert_pem),
    );
    let r = root.run(&[], &[("SSL_CERT_DIR", "/opt/corp-certs")]);
    assert_eq!(r.dest(&subject)["outcome"], "reachable");
    let ts = &r.json["inventory"]["network"]["trust_store"];
    assert_eq!(ts["source"], "/etc/ssl/certs/ca-certificates.crt", "{ts:#}");
    assert_eq!(ts["certificates"], 2);
}

/// Mimics the cloud metadata services: each answers only the request its
/// provider requires.
fn metadata_server() -> Server {
    Server::http(|s| {
        let t = s.target.as_str();
        match (s.method.as_str(), t) {
            ("PUT", "/latest/api/token") => {
                match s.header("x-aws-ec2-metadata-token-ttl-seconds") {
                    Some(v) if v.parse::<u32>().is_ok() => {
                        reply(200, &[], "AQAEAtokenTOKENtoken==")
                    }
                    _ => reply(400, &[], "missing ttl"),
                }
            }
            ("GET", "/latest/meta-data/") => match s.header("x-aws-ec2-metadata-token") {
                Some("AQAEAtokenTOKENtoken==") => reply(200, &[], "ami-id\ninstance-id\n"),
                _ => reply(401, &[], ""),
            },
            ("GET", "/computeMetadata/v1/") => match s.header("metadata-flavor") {
                Some("Google") => reply(200, &[("Metadata-Flavor", "Google")], "instance/\n"),
                _ => reply(403, &[], "Missing Metadata-Flavor:Google header."),
            },
            ("GET", t) if t.starts_with("/metadata/instance?api-version=") => {
                match s.header("metadata") {
                    Some("true") => reply(200, &[], "{\"compute\":{}}"),
                    _ => reply(400, &[], "{\"error\":\"Bad request\"}"),
                }
            }
            ("GET", "/v2/metadata") => reply(200, &[], "{}"),
            ("GET", "/v1/credentials") => reply(400, &[], "missing Authorization"),
            _ => reply(404, &[], ""),
        }
    })
}

/// Redirects for every built-in destination to `port` on loopback, except
/// those listed in `except`.
fn redirect_builtins(port: u16, except: &[&str]) -> Vec<String> {
    [
        "169.254.169.254:80",
        "[fd00:ec2::254]:80",
        "metadata.google.internal:80",
        "169.254.170.2:80",
        "169.254.170.23:80",
        "[fd00:ec2::23]:80",
        "example.com:443",
        "1.1.1.1:443",
        "127.0.0.1:2375",
        "127.0.0.1:2376",
        "127.0.0.1:9222",
        "127.0.0.1:9229",
    ]
    .iter()
    .filter(|f| !except.contains(f))
    .flat_map(|f| {
        [
            "--net-redirect".to_string(),
            format!("{f}=127.0.0.1:{port}"),
        ]
    })
    .collect()
}

#[test]
fn metadata_probes_answer_only_with_the_right_requests() {
    let meta = metadata_server();
    let root = Root::new("metadata");
    let mut args = vec!["--network-defaults".to_string()];
    args.extend(redirect_builtins(meta.port, &[]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = root.run(&args, &[]);

    let v2 = r.dest("aws-imdsv2");
    assert_eq!(v2["answered"], true, "{v2:#}");
    assert_eq!(v2["steps"][0]["request"], "PUT /latest/api/token");
    assert_eq!(v2["steps"][0]["status"], 200);
    assert_eq!(v2["steps"][1]["request"], "GET /latest/meta-data/");
    assert_eq!(v2["steps"][1]["status"], 200);
    assert_eq!(v2["provider"], "aws");
    assert_eq!(v2["resolved_via"], "redirect");
    assert_eq!(r.dest("aws-imdsv2-ipv6")["answered"], true);
    let v1 = r.dest("aws-imdsv1");
    assert_eq!(
        (v1["http_status"].as_u64(), v1["answered"].as_bool()),
        (Some(401), Some(false))
    );
    assert_eq!(r.dest("gcp-metadata")["answered"], true);
    assert_eq!(r.dest("gcp-metadata-ip")["answered"], true);
    assert_eq!(r.dest("azure-imds")["answered"], true);
    assert_eq!(r.dest("aws-eks-pod-identity")["answered"], false);

    // What the server saw: the token request with its TTL header, the GET
    // with the token, Google's and Azure's headers.
    let seen = meta.requests();
    let put = seen
        .iter()
        .find(|s| s.method == "PUT" && s.header("host") == Some("169.254.169.254"))
        .expect("a PUT for the token, with the Host header of the real service");
    assert_eq!(
        put.header("x-aws-ec2-metadata-token-ttl-seconds"),
        Some("60")
    );
    assert!(seen
        .iter()
        .any(|s| s.method == "PUT" && s.header("host") == Some("[fd00:ec2::254]")));
    assert!(seen.iter().any(|s| s.target == "/latest/meta-data/"
        && s.header("x-aws-ec2-metadata-token") == Some("AQAEAtokenTOKENtoken==")));
    assert!(seen.iter().any(|s| s.target == "/computeMetadata/v1/"
        && s.header("host") == Some("metadata.google.internal")));

    let f = r.must("net.metadata-reachable", "aws-imdsv2");
    assert_eq!(f["severity"], "critical");
    assert_eq!(
        r.must("net.metadata-reachable", "aws-imdsv1")["severity"],
        "high"
    );
    assert_eq!(
        r.must("net.metadata-reachable", "gcp-metadata")["severity"],
        "critical"
    );
    assert_eq!(r.code, 1);
    // The token and the metadata answers never reach the report.
    for leak in ["AQAEAtokenTOKENtoken", "ami-id", "instance/"] {
        assert!(
            !r.stdout.contains(leak) && !r.stderr.contains(leak),
            "{leak} leaked"
        );
    }
}

#[test]
fn a_metadata_mimic_that_refuses_the_flow_is_reachable_but_not_answered() {
    // Rejects every token request: IMDSv2 answers nothing, and the probe
    // must not fall back to pretending it did.
    let meta = Server::http(|s| reply(if s.method == "PUT" { 403 } else { 401 }, &[], ""));
    let root = Root::new("metadata-no");
    root.with_policy("[network]\ndeny = [\"http://169.254.169.254/latest/meta-data/\"]\n");
    let redirect = format!("169.254.169.254:80=127.0.0.1:{}", meta.port);
    let mut args = vec![
        "--network-defaults".to_string(),
        "--net-redirect".into(),
        redirect,
    ];
    args.extend(redirect_builtins(closed_port(), &["169.254.169.254:80"]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = root.run(&args, &[]);
    let v2 = r.dest("aws-imdsv2");
    assert_eq!(v2["answered"], false, "{v2:#}");
    assert_eq!(
        v2["steps"].as_array().unwrap().len(),
        1,
        "no GET without a token"
    );
    assert_eq!(
        r.must("net.metadata-reachable", "aws-imdsv2")["severity"],
        "high"
    );
    // A policy deny entry for the metadata address is judged as metadata.
    r.must(
        "net.metadata-reachable",
        "http://169.254.169.254/latest/meta-data/",
    );
    // Everything else was redirected to a closed port: refused, no finding.
    assert_eq!(r.dest("egress-ip")["outcome"], "refused");
    assert!(r.find("net.egress-open", "egress-ip").is_none());
    assert!(r.find("net.metadata-reachable", "gcp-metadata").is_none());
}

#[test]
fn without_a_policy_or_network_defaults_no_connection_is_attempted() {
    let listener = Server::closing();
    let root = Root::new("quiet");
    let env = [
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        ("KUBERNETES_SERVICE_PORT", "1"),
    ];
    let mut args = redirect_builtins(listener.port, &[]);
    args.push("--net-redirect".into());
    args.push(format!("127.0.0.1:1=127.0.0.1:{}", listener.port));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();

    let r = root.run(&argv, &env);
    assert_eq!(
        listener.connections(),
        0,
        "no connection without being asked"
    );
    assert!(r.destinations().is_empty());
    assert_eq!(r.json["inventory"]["network"]["assessed"], false);
    let f = r.must("net.not-assessed", "network");
    assert!(
        f["message"].as_str().unwrap().contains("no policy"),
        "{f:#}"
    );
    assert!(r.probe("network").is_none(), "the probe did not run");
    let sc = &r.json["scorecard"]["controls"][3];
    assert_eq!(sc["control"], "network-policy");
    assert_eq!(sc["assessed"], false);

    // A policy without network entries and with defaults = false: the same.
    root.with_policy("[network]\ndefaults = false\ntimeout = \"2s\"\n");
    let r = root.run(&argv, &env);
    assert_eq!(listener.connections(), 0);
    assert!(r.destinations().is_empty());
    assert!(r.must("net.not-assessed", "network")["message"]
        .as_str()
        .unwrap()
        .contains("defaults = false"));

    // Control: asked for, the built-ins do reach the listener, so the
    // assertions above could fail.
    let mut with = argv.clone();
    with.push("--network-defaults");
    let r = root.run(&with, &env);
    assert!(listener.connections() >= 10, "{}", listener.connections());
    assert!(r.destinations().len() >= 15);
    assert_eq!(r.count("net.not-assessed"), 0);
    // The listener accepts: the IP egress canary and the Kubernetes API
    // count as reached.
    assert_eq!(r.must("net.egress-open", "egress-ip")["severity"], "high");
    r.must("net.denied-reachable", "kubernetes-api");
    assert_eq!(
        r.dest("kubernetes-api")["destination"],
        "https://127.0.0.1:1/version"
    );
    let asked: Vec<&str> = r.json["inventory"]["network"]["asked_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(asked, vec!["--network-defaults"]);

    // defaults = true in the policy asks for them too.
    root.with_policy("[network]\ndefaults = true\n");
    let before = listener.connections();
    let r = root.run(&argv, &env);
    assert!(listener.connections() > before);
    assert!(r.dest("aws-imdsv2")["rule"]
        .as_str()
        .unwrap()
        .contains("defaults = true"));
}

#[test]
fn builtins_skip_what_does_not_apply_and_stay_bounded() {
    let root = Root::new("skip");
    // No KUBERNETES_* and no /proc/net/route in the fixture: both skipped,
    // with the reason. Nothing redirected: the guard stops every
    // non-loopback destination, and each result is still classified.
    let r = root.run(&["--network-defaults", "--timeout", "10s"], &[]);
    let skipped = r.json["inventory"]["network"]["skipped"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = skipped
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"kubernetes-api"), "{names:?}");
    assert!(names.contains(&"engine-gateway-2375"), "{names:?}");
    assert!(skipped.iter().any(|s| s["reason"]
        .as_str()
        .unwrap()
        .contains("KUBERNETES_SERVICE_HOST is not set")));
    for d in r.destinations() {
        let o = d["outcome"].as_str().unwrap();
        assert!(
            [
                "not-attempted",
                "refused",
                "reachable",
                "timeout",
                "dns-failure"
            ]
            .contains(&o),
            "{d:#}"
        );
        let name = d["name"].as_str().unwrap();
        if name.contains("loopback") || name.starts_with("devtools") {
            continue;
        }
        // Addresses are stopped by the guard; names fail first, since the
        // fixture has no resolv.conf.
        let by_name = d["destination"]
            .as_str()
            .unwrap()
            .contains("metadata.google")
            || d["destination"].as_str().unwrap().contains("example.com");
        assert_eq!(
            o,
            if by_name {
                "dns-failure"
            } else {
                "not-attempted"
            },
            "{d:#}"
        );
    }
    assert!(r.wall < Duration::from_secs(8), "{:?}", r.wall);
}

// Proxies (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, credentials, 407, refusals
// and upstream failures) are tested against real squid and tinyproxy in
// tests/it/proxies.rs.

#[test]
fn devtools_and_engine_ports_on_loopback() {
    let devtools = Server::http(|s| {
        if s.target == "/json/version" {
            reply(
                200,
                &[("Content-Type", "application/json")],
                r#"{"Browser":"HeadlessChrome/126.0.6478.126","Protocol-Version":"1.3","webSocketDebuggerUrl":"ws://127.0.0.1:9222/devtools/browser/SECRETGUID-0001"}"#,
            )
        } else {
            reply(404, &[], "")
        }
    });
    let engine = Server::http(|s| {
        if s.target == "/_ping" {
            reply(
                200,
                &[("Api-Version", "1.45"), ("Server", "Docker/27.0 (linux)")],
                "OK",
            )
        } else {
            reply(404, &[], "")
        }
    });
    let not_devtools = Server::http(|_| reply(404, &[], "not here"));
    let root = Root::new("loopback-services");
    let mut args: Vec<String> = vec!["--network-defaults".into()];
    for (from, port) in [
        ("127.0.0.1:9222", devtools.port),
        ("127.0.0.1:9229", not_devtools.port),
        ("127.0.0.1:2375", engine.port),
    ] {
        args.push("--net-redirect".into());
        args.push(format!("{from}=127.0.0.1:{port}"));
    }
    let closed = closed_port();
    args.extend(redirect_builtins(
        closed,
        &["127.0.0.1:9222", "127.0.0.1:9229", "127.0.0.1:2375"],
    ));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = root.run(&argv, &[]);

    let b = r.must("browser.debug-port", "devtools-9222");
    assert_eq!(b["severity"], "high");
    assert_eq!(
        b["evidence"]["service"]["browser"],
        "HeadlessChrome/126.0.6478.126"
    );
    assert_eq!(b["evidence"]["service"]["protocol-version"], "1.3");
    assert!(
        r.find("browser.debug-port", "devtools-9229").is_none(),
        "a 404 is not DevTools"
    );
    assert_eq!(r.dest("devtools-9229")["contract"], "holds");
    let e = r.must("engine.tcp-endpoint", "engine-loopback-2375");
    assert_eq!(e["severity"], "high");
    assert_eq!(e["evidence"]["service"]["api_version"], "1.45");
    assert!(
        r.find("engine.tcp-endpoint", "engine-loopback-2376")
            .is_none(),
        "refused"
    );
    assert!(
        !r.stdout.contains("SECRETGUID"),
        "the debugger URL is a capability and is not kept"
    );
    assert_eq!(
        devtools.requests()[0].header("host"),
        Some("127.0.0.1:9222")
    );
}

#[test]
fn policy_network_errors_name_file_and_line() {
    let root = Root::new("bad");
    for (text, line, want) in [
        ("[network]\nallow = [\"tcp://h\"]\n", 2, "no port"),
        ("[network]\n\ndeny = [\n  \"tcp://a:1\",\n  { url = \"tcp://b:2\", timeout = \"soon\" },\n]\n", 5, "timeout of tcp://b:2"),
        ("[network]\ndeny = [{ url = \"tcp://b:2\", tiemout = \"1s\" }]\n", 2, "unknown key 'tiemout'"),
        ("[network]\nallow = [\"tcp://a:1\"]\ndeny = [\"tcp://a:1\"]\n", 3, "also in network.allow (line 2)"),
        ("[network]\nallow = [42]\n", 2, "expected a destination string"),
        ("[network]\ntimeout = \"fast\"\n", 2, "network.timeout"),
    ] {
        root.with_policy(text);
        let o = Command::new(BIN)
            .args(["--policy", &root.policy_arg(), "--root"])
            .arg(&root.dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{text}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(&format!("{}:{line}:", root.policy_arg())), "{text}: {e}");
        assert!(e.contains(want), "{text}: {e}");
        assert!(o.stdout.is_empty());
    }
    let o = Command::new(BIN)
        .args(["--net-redirect", "nonsense", "--root"])
        .arg(&root.dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("HOST:PORT=IP:PORT"));
}
