//! The network contract through real egress proxies (issue 15): Debian's
//! squid and tinyproxy, started by each test on a loopback port with its
//! own configuration (tests/it/common/proxies.rs). A proxy's refusal (403,
//! 407, squid's ERR_ACCESS_DENIED, tinyproxy's "Filtered") keeps a deny
//! entry; an upstream failure through it (squid's 502 ERR_ZERO_SIZE_OBJECT
//! for a server that closes at once, 503 ERR_CONNECT_FAIL, 504
//! ERR_READ_TIMEOUT, tinyproxy's 500 "Unable to connect") shows that the
//! proxy forwards there.
//!
//! Network rule: every destination is a 127.0.0.1 (or 127.0.0.2, for the
//! ACL by destination) IP literal served by the test's own loopback
//! servers; the proxies listen on 127.0.0.1, squid's only name server is
//! 127.0.0.1 and nothing asks it a name; every run passes
//! `--net-loopback-only`.

use std::net::TcpListener;
use std::process::Command;

use serde_json::Value;

use crate::common::canary;
use crate::common::netserve::*;
use crate::common::proxies::{squid, tinyproxy, SquidConf, TinyConf};
use crate::network::{closed_port, ok_server, Root, Run, BIN, CLEARED};

const CA_FILE: &str = "/etc/selfprobe-proxy-test-ca.pem";

fn policy(allow: &[&str], deny: &[&str]) -> String {
    let list = |v: &[&str]| {
        v.iter()
            .map(|d| format!("\"{d}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "[network]\nallow = [{}]\ndeny = [{}]\n",
        list(allow),
        list(deny)
    )
}

/// The network-policy control: (score, reason).
fn network_policy(r: &Run) -> (Option<u64>, String) {
    let c = r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == "network-policy")
        .unwrap();
    (
        c["score"].as_u64(),
        c["reason"].as_str().unwrap().to_string(),
    )
}

/// A control's level: the rubric's words when what decided is what the
/// rubric names.
fn control_level(r: &Run, key: &str) -> String {
    r.json["scorecard"]["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["control"] == key)
        .and_then(|c| c["level"].as_str())
        .unwrap_or("")
        .to_string()
}

fn both(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("HTTP_PROXY", url.to_string()),
        ("HTTPS_PROXY", url.to_string()),
    ]
}

fn run(root: &Root, env: &[(&str, String)]) -> Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    root.run(&[], &env)
}

/// stdout and stderr of a run in every format but JSON (which `run` gives).
fn other_formats(root: &Root, env: &[(&str, String)]) -> String {
    let mut all = String::new();
    for format in ["text", "sarif", "junit"] {
        let mut cmd = Command::new(BIN);
        cmd.arg("--root")
            .arg(&root.dir)
            .arg("--policy")
            .arg(&root.policy)
            .args(["--format", format, "--net-loopback-only"]);
        for v in CLEARED {
            cmd.env_remove(v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        all.push_str(&String::from_utf8_lossy(&out.stdout));
        all.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    all
}

fn answer<'a>(d: &'a Value, key: &str) -> &'a Value {
    &d["proxy_answer"][key]
}

/// Live servers a test's proxy must refuse to reach: (by port on
/// 127.0.0.1, by destination on 127.0.0.2).
fn refused_targets() -> (Server, Server) {
    let by_dest = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2 (loopback)");
    (
        ok_server(),
        Server::http_on(by_dest, |_| reply(200, &[], "ok")),
    )
}

#[test]
fn squid_that_enforces_the_contract_scores_two_and_is_named() {
    const TEST: &str = "squid_that_enforces_the_contract_scores_two_and_is_named";
    let web = ok_server();
    let (ca, leaf) = ca_and_leaf("selfprobe proxy test CA", &["127.0.0.1"]);
    let tls = Server::tls_on(loopback(), tls_config(&leaf), |_| {
        reply(200, &[], "over tls")
    });
    let (by_port, by_dest) = refused_targets();
    let conf = SquidConf {
        http_ports: vec![web.port, by_dest.port],
        connect_ports: vec![tls.port],
        ..Default::default()
    };
    let Some(squid) = squid(TEST, &conf) else {
        return;
    };
    let root = Root::new("squid-enforces");
    root.file(&CA_FILE[1..], &ca.cert_pem);
    let allow_http = format!("http://127.0.0.1:{}/pkgs", web.port);
    let allow_tls = format!("https://127.0.0.1:{}/", tls.port);
    let deny_get = format!("http://127.0.0.1:{}/", by_port.port);
    let deny_connect = format!("https://127.0.0.1:{}/", by_port.port);
    let deny_dest = format!("http://127.0.0.2:{}/", by_dest.port);
    root.with_policy(&policy(
        &[&allow_http, &allow_tls],
        &[&deny_get, &deny_connect, &deny_dest],
    ));
    let mut env = both(&squid.url());
    env.push(("SSL_CERT_FILE", CA_FILE.to_string()));
    let r = run(&root, &env);

    // Allowed: forwarded in absolute form, answered by the destination.
    let d = r.dest(&allow_http);
    assert_eq!(
        (&d["outcome"], &d["http_status"], &d["contract"]),
        (&"reachable".into(), &200.into(), &"holds".into()),
        "{d:#}"
    );
    assert_eq!(d["proxy"], squid.url());
    assert_eq!(d["resolved_via"], "proxy");
    assert!(d["proxy_answer"].is_null(), "{d:#}");
    assert_eq!(web.requests()[0].target, "/pkgs", "squid forwarded it");
    // CONNECT to an allowed port, then TLS verified against the test CA.
    let d = r.dest(&allow_tls);
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert_eq!(d["tls"]["verified"], true);
    assert!(d["tls"]["issuer"]
        .as_str()
        .unwrap()
        .contains("selfprobe proxy test CA"));
    assert_eq!(tls.requests().len(), 1);

    // Denied by ACL: by port for GET and for CONNECT, by destination.
    for (dest, what) in [
        (&deny_get, format!("GET {deny_get}")),
        (&deny_connect, format!("CONNECT 127.0.0.1:{}", by_port.port)),
        (&deny_dest, format!("GET {deny_dest}")),
    ] {
        let d = r.dest(dest);
        assert_eq!(d["outcome"], "proxy-denied", "{d:#}");
        assert_eq!(d["http_status"], 403);
        assert_eq!(d["contract"], "holds");
        assert_eq!(d["connected"], false);
        assert_eq!(answer(d, "answer"), "denied");
        assert_eq!(answer(d, "error"), "ERR_ACCESS_DENIED 0");
        assert!(answer(d, "software")
            .as_str()
            .unwrap()
            .starts_with("squid/"));
        assert!(
            d["error"].as_str().unwrap().starts_with(&format!(
                "the proxy {} refused {what} (HTTP 403 Forbidden, X-Squid-Error ERR_ACCESS_DENIED 0, squid/",
                squid.url()
            )),
            "{d:#}"
        );
    }
    assert_eq!(by_port.connections(), 0, "squid never connected to it");
    assert_eq!(by_dest.connections(), 0, "squid never connected to it");
    assert_eq!(
        squid.log_lines(&["TCP_DENIED", "/403 "], 3).len(),
        3,
        "{}",
        squid.log()
    );
    assert_eq!(
        squid.log_lines(&["TCP_TUNNEL/200"], 1).len(),
        1,
        "{}",
        squid.log()
    );

    for code in [
        "net.denied-reachable",
        "net.allowed-unreachable",
        "net.proxy-forwards-denied",
    ] {
        assert_eq!(r.count(code), 0, "{:#?}", r.pairs());
    }
    let np = r.must("net.proxy", "environment");
    assert_eq!(np["evidence"]["enforces_contract"], true, "{np:#}");
    assert_eq!(np["evidence"]["denied_by_proxy"], 3);
    assert_eq!(np["evidence"]["reached_through_proxy"], 2);
    assert_eq!(
        network_policy(&r),
        (
            Some(2),
            format!(
                "every destination tried kept its contract: 3 deny destinations refused or unreachable, 2 allow destinations reached; the proxy {} enforces the contract (3 deny destination(s) refused by it, 2 allow destination(s) reached through it)",
                squid.url()
            )
        )
    );
    // A proxy seen enforcing the contract is the rubric's audited
    // allowlist: the level may say so.
    assert_eq!(
        control_level(&r, "network-policy"),
        "Default-deny or audited allowlist for the task"
    );
    assert_eq!(r.code, 0, "{:#?}", r.pairs());
}

#[test]
fn squid_upstream_failures_show_that_it_forwards() {
    const TEST: &str = "squid_upstream_failures_show_that_it_forwards";
    // Servers on ports squid allows: one that closes without an answer
    // (squid: 502 ERR_ZERO_SIZE_OBJECT) for an allow and for a deny entry; it
    // reads the request first, since one that closes before squid has
    // written it makes the write a reset (502 ERR_READ_ERROR 104, the same
    // class, but not the same answer every time); a closed port
    // (503 ERR_CONNECT_FAIL), one that never answers (504
    // ERR_READ_TIMEOUT after squid's read_timeout) and one whose own answer
    // is a 403 (passed on by squid: the destination answered).
    let closing_allow = Server::hangup();
    let closing_deny = Server::hangup();
    let refused = closed_port();
    let silent = Server::silent();
    let forbidding = Server::http(|_| reply(403, &[], "the origin says no"));
    let web = ok_server();
    let conf = SquidConf {
        http_ports: vec![
            closing_allow.port,
            closing_deny.port,
            refused,
            silent.port,
            forbidding.port,
            web.port,
        ],
        // squid checks its timeouts against a clock it updates once per
        // event loop turn, so one can fire up to a second early: 2 s keeps
        // the hangups above (a few ms) from ever being read timeouts.
        read_timeout_s: Some(2),
        ..Default::default()
    };
    let Some(squid) = squid(TEST, &conf) else {
        return;
    };
    let allow_closing = format!("http://127.0.0.1:{}/", closing_allow.port);
    let deny_closing = format!("http://127.0.0.1:{}/", closing_deny.port);
    let deny_refused = format!("http://127.0.0.1:{refused}/");
    let deny_silent = format!("http://127.0.0.1:{}/", silent.port);
    let deny_forbidding = format!("http://127.0.0.1:{}/", forbidding.port);
    let root = Root::new("squid-upstream");
    root.with_policy(&format!(
        "{}timeout = \"5s\"\n",
        policy(
            &[&allow_closing],
            &[&deny_closing, &deny_refused, &deny_silent, &deny_forbidding],
        )
    ));
    let env = both(&squid.url());
    // The second case below, run meanwhile: the read timeout takes 2 s.
    let web_url = format!("http://127.0.0.1:{}/", web.port);
    let medium_root = Root::new("squid-upstream-medium");
    medium_root.with_policy(&policy(&[&web_url], &[&deny_refused]));
    let (r, medium) = std::thread::scope(|s| {
        let m = s.spawn(|| run(&medium_root, &env));
        (run(&root, &env), m.join().unwrap())
    });

    // An allow entry: unreachable, with the honest evidence.
    let d = r.dest(&allow_closing);
    assert_eq!(d["outcome"], "proxy-upstream-failure", "{d:#}");
    assert_eq!(d["http_status"], 502);
    assert_eq!(d["contract"], "violated");
    assert_eq!(answer(d, "error"), "ERR_ZERO_SIZE_OBJECT 0");
    assert_eq!(answer(d, "upstream_connected"), true);
    let f = r.must("net.allowed-unreachable", &allow_closing);
    assert_eq!(f["evidence"]["outcome"], "proxy-upstream-failure");
    assert!(
        f["message"].as_str().unwrap().contains(&format!(
            "but the proxy {} forwarded GET {allow_closing} and the destination failed (HTTP 502 Bad Gateway, X-Squid-Error ERR_ZERO_SIZE_OBJECT 0, squid/",
            squid.url()
        )),
        "{f:#}"
    );
    assert_eq!(
        closing_allow.requests()[0].target,
        "/",
        "squid sent the request"
    );

    // A deny entry: not a block that holds; the proxy forwards there.
    for (dest, status, err, connected, severity) in [
        (&deny_closing, 502, "ERR_ZERO_SIZE_OBJECT 0", true, "high"),
        (&deny_refused, 503, "ERR_CONNECT_FAIL 111", false, "medium"),
        (&deny_silent, 504, "ERR_READ_TIMEOUT 0", true, "high"),
    ] {
        let d = r.dest(dest);
        assert_eq!(d["outcome"], "proxy-upstream-failure", "{d:#}");
        assert_eq!(d["http_status"], status);
        assert_eq!(d["contract"], "violated");
        assert_eq!(answer(d, "error"), err);
        let f = r.must("net.proxy-forwards-denied", dest);
        assert_eq!(f["severity"], severity, "{f:#}");
        assert_eq!(f["evidence"]["delivered"], connected);
        assert_eq!(f["evidence"]["proxy"], squid.url());
        assert_eq!(f["evidence"]["proxy_answer"]["status"], status);
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .ends_with("): the proxy does not block it"),
            "{f:#}"
        );
        assert!(r.find("net.denied-reachable", dest).is_none());
    }
    assert_eq!(
        squid
            .log_lines(
                &["TCP_MISS", "/502 ", &deny_closing, "HIER_DIRECT/127.0.0.1"],
                1
            )
            .len(),
        1,
        "squid forwarded it: {}",
        squid.log()
    );

    // The destination's own 403, passed on: it was reached, not refused.
    let d = r.dest(&deny_forbidding);
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert_eq!(d["http_status"], 403);
    assert_eq!(
        r.must("net.denied-reachable", &deny_forbidding)["severity"],
        "high"
    );
    assert_eq!(r.count("net.proxy-forwards-denied"), 3, "{:#?}", r.pairs());
    assert_eq!(r.code, 1);
    let (score, reason) = network_policy(&r);
    assert_eq!(score, Some(0), "{reason}");
    // The level is the rubric's (every decisive finding is a network
    // one); the reason is what was seen, never the rubric's words.
    assert_eq!(control_level(&r, "network-policy"), "Unrestricted network");
    assert!(reason.contains("net.proxy-forwards-denied "), "{reason}");
    assert!(reason.contains("; deny destinations: "), "{reason}");

    // Only a proxy that could not connect to a denied destination: medium,
    // the rubric's "some proxy control", 1 point; never 2.
    let r = medium;
    assert_eq!(r.dest(&web_url)["outcome"], "reachable");
    assert_eq!(
        r.must("net.proxy-forwards-denied", &deny_refused)["severity"],
        "medium"
    );
    assert_eq!(
        r.must("net.proxy", "environment")["evidence"]["enforces_contract"],
        false
    );
    let (score, reason) = network_policy(&r);
    assert_eq!(score, Some(1), "{reason}");
    assert!(
        reason.starts_with(&format!(
            "net.proxy-forwards-denied {deny_refused}, net.proxy environment; deny destinations: "
        )),
        "{reason}"
    );
    assert_eq!(
        control_level(&r, "network-policy"),
        "Some proxy or manual domain controls"
    );
    assert_eq!(
        r.code, 0,
        "medium does not gate at the default --fail-on high"
    );
}

#[test]
fn squid_basic_auth_is_used_and_never_printed() {
    const TEST: &str = "squid_basic_auth_is_used_and_never_printed";
    let user = format!("u{}", canary::random(10, canary::ALNUM));
    let password = canary::random(24, canary::ALNUM);
    let wrong = canary::random(24, canary::ALNUM);
    let web = ok_server();
    let (ca, leaf) = ca_and_leaf("selfprobe proxy test CA", &["127.0.0.1"]);
    let tls = Server::tls_on(loopback(), tls_config(&leaf), |_| reply(200, &[], "hi"));
    let (by_port, _) = refused_targets();
    let conf = SquidConf {
        http_ports: vec![web.port],
        connect_ports: vec![tls.port],
        auth: Some((user.clone(), password.clone())),
        ..Default::default()
    };
    let Some(squid) = squid(TEST, &conf) else {
        return;
    };
    let root = Root::new("squid-auth");
    root.file(&CA_FILE[1..], &ca.cert_pem);
    let allow_http = format!("http://127.0.0.1:{}/", web.port);
    let allow_tls = format!("https://127.0.0.1:{}/", tls.port);
    let deny = format!("http://127.0.0.1:{}/", by_port.port);
    root.with_policy(&policy(&[&allow_http, &allow_tls], &[&deny]));
    let with_ca = |mut env: Vec<(&'static str, String)>| {
        env.push(("SSL_CERT_FILE", CA_FILE.to_string()));
        env
    };

    // No credentials: 407 for GET and for CONNECT, named as such.
    let r = run(&root, &with_ca(both(&squid.url())));
    for (dest, what) in [
        (&allow_http, format!("GET {allow_http}")),
        (&allow_tls, format!("CONNECT 127.0.0.1:{}", tls.port)),
        (&deny, format!("GET {deny}")),
    ] {
        let d = r.dest(dest);
        assert_eq!(d["outcome"], "proxy-auth-required", "{d:#}");
        assert_eq!(d["http_status"], 407);
        assert_eq!(d["proxy_credentials_sent"], false);
        assert_eq!(answer(d, "error"), "ERR_CACHE_ACCESS_DENIED 0");
        assert_eq!(answer(d, "challenge"), "Basic realm=\"selfprobe-test\"");
        let var = if dest.starts_with("https") {
            "HTTPS_PROXY"
        } else {
            "HTTP_PROXY"
        };
        let msg = d["error"].as_str().unwrap();
        assert!(
            msg.starts_with(&format!(
                "the proxy {} requires proxy authentication for {what} (HTTP 407 Proxy Authentication Required"
            , squid.url())) && msg.ends_with(&format!("it asks for Basic realm=\"selfprobe-test\"): {var} holds no credentials")),
            "{msg}"
        );
    }
    assert_eq!(r.dest(&deny)["contract"], "holds", "a 407 refuses it");
    assert_eq!(r.count("net.allowed-unreachable"), 2, "{:#?}", r.pairs());
    assert_eq!(r.count("net.denied-reachable"), 0);
    assert_eq!(web.connections() + tls.connections(), 0);

    // Wrong credentials: sent, refused, never printed.
    let wrong_url = squid.url_with(&user, &wrong);
    let env = with_ca(both(&wrong_url));
    let r = run(&root, &env);
    let d = r.dest(&allow_http);
    assert_eq!(d["outcome"], "proxy-auth-required", "{d:#}");
    assert_eq!(d["proxy_credentials_sent"], true);
    assert!(d["error"]
        .as_str()
        .unwrap()
        .ends_with("it did not accept the credentials in HTTP_PROXY"));
    assert_eq!(d["proxy"], format!("http://***@127.0.0.1:{}", squid.port));
    let mut out = format!("{}{}", r.stdout, r.stderr);
    out.push_str(&other_formats(&root, &env));

    // The right ones: used (squid logs the user), then the ACLs apply.
    let right_url = squid.url_with(&user, &password);
    let env = with_ca(both(&right_url));
    let r = run(&root, &env);
    assert_eq!(
        r.dest(&allow_http)["outcome"],
        "reachable",
        "{:#}",
        r.dest(&allow_http)
    );
    assert_eq!(r.dest(&allow_tls)["outcome"], "reachable");
    assert_eq!(r.dest(&allow_tls)["tls"]["verified"], true);
    let d = r.dest(&deny);
    assert_eq!(d["outcome"], "proxy-denied", "{d:#}");
    assert_eq!(answer(d, "error"), "ERR_ACCESS_DENIED 0");
    let authed = format!(" {user} ");
    assert_eq!(
        squid
            .log_lines(&["TCP_MISS", "/200 ", &allow_http, &authed], 1)
            .len(),
        1,
        "squid authenticated the user: {}",
        squid.log()
    );
    let shown = format!("http://***@127.0.0.1:{}", squid.port);
    assert_eq!(
        network_policy(&r),
        (
            Some(2),
            format!(
                "every destination tried kept its contract: 1 deny destination refused or unreachable, 2 allow destinations reached; the proxy {shown} enforces the contract (1 deny destination(s) refused by it, 2 allow destination(s) reached through it)"
            )
        )
    );
    let np = r.must("net.proxy", "environment");
    assert_eq!(np["evidence"]["http_proxy"], shown);
    assert_eq!(np["evidence"]["https_proxy"], shown);
    out.push_str(&r.stdout);
    out.push_str(&r.stderr);
    out.push_str(&other_formats(&root, &env));
    assert!(out.contains("proxy-denied"), "the other formats ran");

    // No byte of either credential in any format: as written, as base64 (a
    // Proxy-Authorization value), or the user name alone.
    for secret in [
        password.clone(),
        wrong.clone(),
        user.clone(),
        canary::b64(format!("{user}:{password}").as_bytes(), false),
        canary::b64(format!("{user}:{wrong}").as_bytes(), false),
    ] {
        assert!(!out.contains(&secret), "a credential leaked: {secret}");
    }
}

#[test]
fn no_proxy_goes_around_squid() {
    const TEST: &str = "no_proxy_goes_around_squid";
    let web = ok_server();
    let (by_port, _) = refused_targets();
    let conf = SquidConf {
        http_ports: vec![web.port],
        ..Default::default()
    };
    let Some(squid) = squid(TEST, &conf) else {
        return;
    };
    let deny = format!("http://127.0.0.1:{}/", by_port.port);
    let root = Root::new("squid-no-proxy");
    root.with_policy(&policy(&[], &[&deny]));

    let r = run(&root, &both(&squid.url()));
    assert_eq!(r.dest(&deny)["outcome"], "proxy-denied");
    assert_eq!(by_port.connections(), 0);

    // The same deny entry, bypassed with NO_PROXY: straight to the server.
    let mut env = both(&squid.url());
    env.push(("NO_PROXY", "localhost,127.0.0.1".to_string()));
    let r = run(&root, &env);
    let d = r.dest(&deny);
    assert_eq!(d["outcome"], "reachable", "{d:#}");
    assert!(d["proxy"].is_null(), "{d:#}");
    assert_eq!(d["resolved_via"], "literal");
    assert_eq!(d["address"], format!("127.0.0.1:{}", by_port.port));
    let f = r.must("net.denied-reachable", &deny);
    assert!(f["evidence"]["proxy"].is_null());
    assert_eq!(by_port.connections(), 1);
    assert_eq!(
        squid.log_lines(&[&deny], 1).len(),
        1,
        "only the first run went through squid: {}",
        squid.log()
    );
    let np = r.must("net.proxy", "environment");
    assert_eq!(
        np["evidence"]["no_proxy"],
        serde_json::json!(["localhost", "127.0.0.1"])
    );
    assert_eq!(np["evidence"]["through_proxy"], 0);
    assert_eq!(network_policy(&r).0, Some(0));
}

#[test]
fn tinyproxy_filter_connect_port_and_upstream_failure() {
    const TEST: &str = "tinyproxy_filter_connect_port_and_upstream_failure";
    let web = ok_server();
    let (ca, leaf) = ca_and_leaf("selfprobe proxy test CA", &["127.0.0.1"]);
    let tls = Server::tls_on(loopback(), tls_config(&leaf), |_| reply(200, &[], "hi"));
    let (_, by_dest) = refused_targets();
    let refused = closed_port();
    // Reads the request, then closes: tinyproxy then closes too, without an
    // answer. (One that closes before reading races tinyproxy's write, which
    // then fails with 503 "Could not send data to remote server".)
    let closing = Server::hangup();
    let conf = TinyConf {
        filter: vec![r"^127\.0\.0\.1$".into()],
        connect_ports: vec![tls.port],
        ..Default::default()
    };
    let Some(tiny) = tinyproxy(TEST, &conf) else {
        return;
    };
    let root = Root::new("tinyproxy");
    root.file(&CA_FILE[1..], &ca.cert_pem);
    let allow_http = format!("http://127.0.0.1:{}/", web.port);
    let allow_tls = format!("https://127.0.0.1:{}/", tls.port);
    let deny_filtered = format!("http://127.0.0.2:{}/", by_dest.port);
    let deny_port = format!("https://127.0.0.1:{}/", web.port);
    let deny_refused = format!("http://127.0.0.1:{refused}/");
    let deny_closing = format!("http://127.0.0.1:{}/", closing.port);
    let mut env = both(&tiny.url());
    env.push(("SSL_CERT_FILE", CA_FILE.to_string()));

    // Enforcing: the allowed ones reached, the filter and the CONNECT port
    // rule refuse the rest.
    root.with_policy(&policy(
        &[&allow_http, &allow_tls],
        &[&deny_filtered, &deny_port],
    ));
    let r = run(&root, &env);
    assert_eq!(r.dest(&allow_http)["outcome"], "reachable");
    assert_eq!(
        r.dest(&allow_tls)["outcome"],
        "reachable",
        "{:#}",
        r.dest(&allow_tls)
    );
    assert_eq!(r.dest(&allow_tls)["tls"]["verified"], true);
    for (dest, reason) in [
        (&deny_filtered, "Filtered"),
        (&deny_port, "Access violation"),
    ] {
        let d = r.dest(dest);
        assert_eq!(d["outcome"], "proxy-denied", "{d:#}");
        assert_eq!(d["http_status"], 403);
        assert_eq!(d["contract"], "holds");
        assert_eq!(answer(d, "reason"), reason);
        assert!(answer(d, "software")
            .as_str()
            .unwrap()
            .starts_with("tinyproxy/"));
    }
    assert_eq!(by_dest.connections(), 0);
    let refused_port = format!("Refused CONNECT method on port {}", web.port);
    for line in [
        "Proxying refused on filtered domain \"127.0.0.2\"",
        &refused_port,
    ] {
        assert_eq!(tiny.log_lines(&[line], 1).len(), 1, "{}", tiny.log());
    }
    assert_eq!(
        network_policy(&r),
        (
            Some(2),
            format!(
                "every destination tried kept its contract: 2 deny destinations refused or unreachable, 2 allow destinations reached; the proxy {} enforces the contract (2 deny destination(s) refused by it, 2 allow destination(s) reached through it)",
                tiny.url()
            )
        )
    );

    // Upstream failures: a closed port is tinyproxy's 500 "Unable to
    // connect" (it forwards there); a server that closes makes tinyproxy
    // close too, without an answer, which proves nothing either way.
    root.with_policy(&policy(&[], &[&deny_refused, &deny_closing]));
    let r = run(&root, &env);
    let d = r.dest(&deny_refused);
    assert_eq!(d["outcome"], "proxy-upstream-failure", "{d:#}");
    assert_eq!(d["http_status"], 500);
    assert_eq!(answer(d, "error"), "Unable to connect");
    assert_eq!(answer(d, "upstream_connected"), false);
    let f = r.must("net.proxy-forwards-denied", &deny_refused);
    assert_eq!(f["severity"], "medium");
    let d = r.dest(&deny_closing);
    assert_eq!(d["outcome"], "proxy-no-answer", "{d:#}");
    assert_eq!(d["contract"], "unknown");
    let f = r.must("net.denied-reachable", &deny_closing);
    assert_eq!(f["status"], "unknown", "{f:#}");
    assert!(f["message"]
        .as_str()
        .unwrap()
        .contains("could not be checked: the proxy"));
    assert_eq!(closing.requests().len(), 1, "tinyproxy sent the request");
    assert_eq!(
        network_policy(&r),
        (
            None,
            format!("not assessed: could not check net.denied-reachable {deny_closing}")
        )
    );
}

/// A dead proxy says nothing about the destinations behind it: an allow
/// entry is unreachable, a deny entry could not be checked.
#[test]
fn an_unreachable_proxy_proves_no_deny() {
    let port = closed_port();
    let web = ok_server();
    let root = Root::new("proxy-down");
    let allow = format!("http://127.0.0.1:{}/", web.port);
    let deny = format!("http://127.0.0.1:{}/x", web.port);
    root.with_policy(&policy(&[&allow], &[&deny]));
    let url = format!("http://127.0.0.1:{port}");
    let r = run(&root, &both(&url));
    for dest in [&allow, &deny] {
        let d = r.dest(dest);
        assert_eq!(d["outcome"], "refused", "{d:#}");
        assert_eq!(d["stage"], "proxy");
        assert!(d["error"].as_str().unwrap().starts_with(&format!(
            "the proxy {url} could not be reached (127.0.0.1:{port}: connection refused), so the destination was not tried through it"
        )));
    }
    assert_eq!(r.dest(&allow)["contract"], "violated");
    assert_eq!(r.dest(&deny)["contract"], "unknown");
    assert_eq!(web.connections(), 0);
}
