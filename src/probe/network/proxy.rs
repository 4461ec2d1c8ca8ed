//! HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY as curl reads them (the
//! lower-case name wins), applied to http:// and https:// destinations. The
//! report shows the proxies with any credentials replaced by a marker.
//!
//! [`classify`] reads a proxy's answer: whether the proxy refused the request
//! itself (an ACL, a filter, authentication) or tried to forward it and the
//! destination failed. Only the first keeps a deny entry: the second shows
//! that the proxy forwards there.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::target::{self, HostName, Scheme, Target};
use crate::util::codec::b64_encode;
use crate::util::http1::Response;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProxyInfo {
    /// The variables that are set (names only).
    pub variables: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all: Option<String>,
    pub no_proxy: Vec<String>,
}

impl ProxyInfo {
    pub fn configured(&self) -> bool {
        self.http.is_some() || self.https.is_some() || self.all.is_some()
    }
}

#[derive(Clone)]
pub struct ProxyUrl {
    /// The variable it came from (HTTPS_PROXY, all_proxy, …).
    pub var: String,
    pub host: HostName,
    pub port: u16,
    /// `Basic …` for Proxy-Authorization; never reported.
    pub auth: Option<String>,
    /// The URL with credentials replaced by a marker.
    pub shown: String,
    /// Why it cannot be used (a SOCKS or HTTPS proxy), if it cannot.
    pub unsupported: Option<String>,
}

/// Written by hand so that no debug print can show the credentials.
impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyUrl")
            .field("var", &self.var)
            .field("shown", &self.shown)
            .field("auth", &self.auth.as_ref().map(|_| "***"))
            .field("unsupported", &self.unsupported)
            .finish()
    }
}

#[derive(Debug, Clone, Default)]
pub struct ProxyEnv {
    pub info: ProxyInfo,
    http: Option<ProxyUrl>,
    https: Option<ProxyUrl>,
    all: Option<ProxyUrl>,
    no_proxy: Vec<String>,
}

impl ProxyEnv {
    /// The proxies of the environment the probes see (the tree's under
    /// `--root`, never the caller's).
    pub fn from_env(host: &Host) -> ProxyEnv {
        ProxyEnv::from_vars(|k| host.env().get(k).map(str::to_string))
    }

    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        let mut env = ProxyEnv::default();
        let mut pick = |lower: &str, upper: &str| -> Option<(String, String)> {
            let mut found = None;
            for name in [upper, lower] {
                if let Some(v) = get(name)
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                {
                    env.info.variables.push(name.to_string());
                    found = Some((name.to_string(), v)); // lower case read last, so it wins
                }
            }
            found
        };
        let http = pick("http_proxy", "HTTP_PROXY");
        let https = pick("https_proxy", "HTTPS_PROXY");
        let all = pick("all_proxy", "ALL_PROXY");
        let no = pick("no_proxy", "NO_PROXY").map(|(_, v)| v);
        let parse = |(var, v): (String, String)| ProxyUrl {
            var,
            ..parse_proxy(&v)
        };
        env.http = http.map(parse);
        env.https = https.map(parse);
        env.all = all.map(parse);
        env.info.http = env.http.as_ref().map(|p| p.shown.clone());
        env.info.https = env.https.as_ref().map(|p| p.shown.clone());
        env.info.all = env.all.as_ref().map(|p| p.shown.clone());
        env.no_proxy = no
            .unwrap_or_default()
            .split(',')
            .map(|e| e.trim().to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .take(200)
            .collect();
        env.info.no_proxy = env.no_proxy.clone();
        env
    }

    /// The proxy an http(s) destination goes through, if any.
    pub fn for_target(&self, t: &Target) -> Option<&ProxyUrl> {
        let p = match t.scheme {
            Scheme::Http => self.http.as_ref().or(self.all.as_ref()),
            Scheme::Https => self.https.as_ref().or(self.all.as_ref()),
            _ => None,
        }?;
        if self.bypassed(&t.host) {
            return None;
        }
        Some(p)
    }

    fn bypassed(&self, host: &HostName) -> bool {
        let name = host.bare();
        let ip = name.parse::<IpAddr>().ok();
        self.no_proxy.iter().any(|e| {
            if e == "*" {
                return true;
            }
            let e = e.trim_start_matches('.').trim_start_matches('[');
            let e = e.trim_end_matches(']');
            if let (Some(ip), Some((net, bits))) = (ip, e.split_once('/')) {
                return match (net.parse::<IpAddr>(), bits.parse::<u8>()) {
                    (Ok(net), Ok(bits)) => in_cidr(ip, net, bits),
                    _ => false,
                };
            }
            if let (Some(ip), Ok(eip)) = (ip, e.parse::<IpAddr>()) {
                return ip == eip;
            }
            name == e || name.ends_with(&format!(".{e}"))
        })
    }
}

/// What a proxy's answer says about the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// The proxy refused to forward it: an ACL, a filter, a CONNECT port rule.
    Denied,
    /// 407: the proxy wants (other) credentials before it forwards anything.
    AuthRequired,
    /// The proxy tried to forward it and the destination failed: it forwards there.
    UpstreamFailure,
    /// Not the proxy's own answer: the destination answered through it.
    Forwarded,
    /// The proxy's own answer, saying neither that it refuses nor that the
    /// destination failed.
    Unclear,
}

/// A proxy's own answer, as the report shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProxySaid {
    pub answer: Answer,
    pub status: u16,
    /// The status line's reason phrase.
    pub reason: String,
    /// squid's `X-Squid-Error` (`ERR_CONNECT_FAIL 111`), or tinyproxy's
    /// reason phrase, which names its refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The proxy software, from its answer's Server or Via header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub software: Option<String>,
    /// Whether the proxy says it had connected to the destination when it
    /// failed (squid's ERR_ZERO_SIZE_OBJECT, ERR_READ_TIMEOUT…): the request
    /// then reached it. None when its answer does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_connected: Option<bool>,
    /// A 407's challenge (`Basic realm="…"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
}

impl ProxySaid {
    /// "HTTP 502 Bad Gateway, X-Squid-Error ERR_ZERO_SIZE_OBJECT 0, squid/5.7".
    pub fn describe(&self) -> String {
        let mut s = format!("HTTP {}", self.status);
        if !self.reason.is_empty() {
            s.push_str(&format!(" {}", self.reason));
        }
        if let (Some(e), true) = (&self.error, self.squid()) {
            s.push_str(&format!(", X-Squid-Error {e}"));
        }
        if let Some(sw) = &self.software {
            s.push_str(&format!(", {sw}"));
        }
        s
    }

    fn squid(&self) -> bool {
        self.error.as_deref().is_some_and(|e| e.starts_with("ERR_"))
    }
}

/// squid's error pages (`X-Squid-Error`, /usr/share/squid/errors/templates)
/// that refuse the request itself.
const SQUID_DENIED: &[&str] = &[
    "ERR_ACCESS_DENIED",
    "ERR_CACHE_ACCESS_DENIED",
    "ERR_CACHE_MGR_ACCESS_DENIED",
    "ERR_FORWARDING_DENIED",
    "ERR_ACL_TIME_QUOTA_EXCEEDED",
    "ERR_NO_RELAY",
    "ERR_CONFLICT_HOST",
    "ERR_INVALID_REQ",
    "ERR_INVALID_URL",
    "ERR_UNSUP_REQ",
    "ERR_PROTOCOL_UNKNOWN",
];
/// squid's upstream failures after it had connected to the destination and
/// sent the request (or, for TLS, begun the handshake).
const SQUID_UPSTREAM_CONNECTED: &[&str] = &[
    "ERR_ZERO_SIZE_OBJECT",
    "ERR_READ_TIMEOUT",
    "ERR_READ_ERROR",
    "ERR_WRITE_ERROR",
    "ERR_INVALID_RESP",
    "ERR_LIFETIME_EXP",
    "ERR_SECURE_CONNECT_FAIL",
];
/// squid's upstream failures before any connection to the destination.
const SQUID_UPSTREAM_UNCONNECTED: &[&str] = &[
    "ERR_CONNECT_FAIL",
    "ERR_DNS_FAIL",
    "ERR_CANNOT_FORWARD",
    "ERR_GATEWAY_FAILURE",
    "ERR_SOCKET_FAILURE",
];

/// Proxy answers are attacker controlled: printable ASCII, bounded.
fn clean(s: &str, max: usize) -> String {
    crate::util::sanitize::ascii(s, max).trim().to_string()
}

/// "squid/5.7" from `Via: 1.1 localhost (squid/5.7)`.
fn via_software(via: &str) -> Option<String> {
    let open = via.rfind('(')?;
    let close = via[open..].find(')')? + open;
    Some(clean(&via[open + 1..close], 40)).filter(|s| !s.is_empty())
}

/// Reads a proxy's answer to a request sent through it: the answer to
/// CONNECT (`connect`, never 2xx here) is always the proxy's own; the answer
/// to an absolute-form GET may be the destination's, forwarded.
///
/// squid marks its own answers with `X-Squid-Error` (and its forwarded ones
/// only with Via/X-Cache); tinyproxy marks its own with `Server: tinyproxy/…`
/// and names the refusal in the reason phrase ("Filtered", "Access
/// violation", "Access denied"; "Unable to connect" is its upstream
/// failure, with status 500). Any other proxy: 407 asks for credentials, 403
/// is its refusal, 502/503/504 are gateway errors, i.e. the proxy forwarded
/// and the destination failed.
pub fn classify(resp: &Response, connect: bool) -> ProxySaid {
    let server = resp.header("server").map(|v| clean(v, 40));
    let via = resp.header("via").and_then(via_software);
    let squid_error = resp
        .header("x-squid-error")
        .map(|v| clean(v, 60))
        .filter(|v| v.starts_with("ERR_"));
    let tinyproxy_own = server
        .as_deref()
        .is_some_and(|s| s.to_ascii_lowercase().starts_with("tinyproxy"));
    let software = if tinyproxy_own {
        server.clone()
    } else {
        via.clone()
    }
    .or_else(|| squid_error.is_some().then(|| server.clone()).flatten());
    let mut said = ProxySaid {
        answer: Answer::Unclear,
        status: resp.status,
        reason: clean(&resp.reason, 60),
        error: None,
        software,
        upstream_connected: None,
        challenge: resp.header("proxy-authenticate").map(|v| clean(v, 80)),
    };
    let status = resp.status;
    if let Some(err) = squid_error {
        let code = err.split(' ').next().unwrap_or("");
        said.answer = if status == 407 {
            Answer::AuthRequired
        } else if SQUID_DENIED.contains(&code) {
            Answer::Denied
        } else if SQUID_UPSTREAM_CONNECTED.contains(&code) {
            said.upstream_connected = Some(true);
            Answer::UpstreamFailure
        } else if SQUID_UPSTREAM_UNCONNECTED.contains(&code) {
            said.upstream_connected = Some(false);
            Answer::UpstreamFailure
        } else if status >= 500 {
            Answer::UpstreamFailure
        } else if status >= 400 {
            Answer::Denied
        } else {
            Answer::Unclear
        };
        said.error = Some(err);
        return said;
    }
    if status == 407 {
        said.answer = Answer::AuthRequired;
        return said;
    }
    if tinyproxy_own {
        said.error = Some(said.reason.clone()).filter(|r| !r.is_empty());
        said.answer = match status {
            500 if said.reason.eq_ignore_ascii_case("Unable to connect") => {
                said.upstream_connected = Some(false);
                Answer::UpstreamFailure
            }
            400..=499 => Answer::Denied,
            500..=599 => Answer::UpstreamFailure,
            _ => Answer::Unclear,
        };
        return said;
    }
    // squid and tinyproxy mark what they forward (Via, squid's X-Cache) and
    // mark their own errors as above: an answer with only the first is the
    // destination's, passed on, even a 403. Other proxies may put Via on
    // their own refusals too, so for them the status decides.
    let known = via
        .as_deref()
        .is_some_and(|v| v.starts_with("squid") || v.starts_with("tinyproxy"));
    let forwarded_marked = !connect && (known || resp.header("x-cache").is_some());
    said.answer = match status {
        _ if forwarded_marked => Answer::Forwarded,
        502..=504 => Answer::UpstreamFailure,
        403 => Answer::Denied,
        400..=499 if connect => Answer::Denied,
        _ if connect => Answer::Unclear,
        _ => Answer::Forwarded,
    };
    said
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

fn parse_proxy(v: &str) -> ProxyUrl {
    let (scheme, rest) = match v.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), v),
    };
    // The credentials end at the last '@': a password may hold an
    // unencoded '/', '?' or '#' (curl accepts that), and a proxy URL has
    // no path worth an '@'. Everything before it is replaced in `shown`,
    // with or without a scheme, so no spelling of the URL leaks them.
    let (userinfo, after) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let shown = match (userinfo, v.find("://")) {
        (None, _) => v.to_string(),
        (Some(_), Some(s)) => format!("{}://***@{after}", &v[..s]),
        (Some(_), None) => format!("***@{after}"),
    };
    let hostport = after.split(['/', '?', '#']).next().unwrap_or("");
    let mut out = ProxyUrl {
        var: String::new(),
        host: HostName::Name(String::new()),
        port: 0,
        auth: userinfo.map(|u| format!("Basic {}", b64_encode(&percent_decode(u)))),
        shown,
        unsupported: None,
    };
    if scheme != "http" {
        out.unsupported = Some(format!(
            "the proxy scheme {scheme}:// is not supported (only http:// proxies are)"
        ));
        return out;
    }
    let with_port = if hostport.ends_with(']') || !hostport.contains(':') {
        format!("tcp://{hostport}:80")
    } else {
        format!("tcp://{hostport}")
    };
    match target::parse(&with_port) {
        Ok(t) => {
            out.host = t.host;
            out.port = t.port;
        }
        Err(e) => out.unsupported = Some(format!("the proxy address is not understood: {e}")),
    }
    out
}

fn percent_decode(s: &str) -> Vec<u8> {
    crate::util::codec::unescape_with(s, b'%', 2, |h| {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        Some(hex(h[0])? << 4 | hex(h[1])?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ProxyEnv::from_vars(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn picks_and_bypasses() {
        let e = env(&[
            ("HTTP_PROXY", "http://u:s3cret@proxy.corp:3128"),
            ("http_proxy", "http://lower:8080"),
            ("HTTPS_PROXY", "proxy.corp:3129"),
            (
                "NO_PROXY",
                "localhost, .internal,10.0.0.0/8,::1,169.254.169.254",
            ),
        ]);
        assert_eq!(
            env_names(&e),
            vec!["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "NO_PROXY"]
        );
        let t = |s: &str| target::parse(s).unwrap();
        let p = e.for_target(&t("http://example.com/")).unwrap();
        assert_eq!((p.host.bare(), p.port), ("lower".to_string(), 8080));
        let p = e.for_target(&t("https://example.com/")).unwrap();
        assert_eq!((p.host.bare(), p.port), ("proxy.corp".to_string(), 3129));
        assert!(
            e.for_target(&t("tcp://example.com:1")).is_none(),
            "tcp is never proxied"
        );
        for direct in [
            "http://localhost/",
            "http://pkgs.internal/",
            "http://internal/",
            "http://10.1.2.3/",
            "http://[::1]/",
            "http://169.254.169.254/",
        ] {
            assert!(e.for_target(&t(direct)).is_none(), "{direct}");
        }
        assert!(e.for_target(&t("http://notinternal/")).is_some());
        assert!(!format!("{:?}", e.info).contains("s3cret"));
        assert_eq!(e.info.http.as_deref(), Some("http://lower:8080"));
    }

    fn env_names(e: &ProxyEnv) -> Vec<&str> {
        e.info.variables.iter().map(String::as_str).collect()
    }

    /// The head as the network probe reads it (the codec's parser).
    fn answer(head: &str) -> Response {
        let head = format!("{head}\r\n\r\n");
        crate::util::http1::parse_head(head.as_bytes())
            .expect("an HTTP head")
            .expect("a whole head")
            .0
    }

    /// Heads as Debian's squid 5.7 and tinyproxy 1.11.1 sent them
    /// (tests/it/proxies.rs runs both for real).
    #[test]
    fn squid_and_tinyproxy_answers() {
        let squid = |status: &str, err: &str| {
            answer(&format!(
                "HTTP/1.1 {status}\r\nServer: squid/5.7\r\nX-Squid-Error: {err}\r\nX-Cache: MISS from localhost\r\nVia: 1.1 localhost (squid/5.7)"
            ))
        };
        for (resp, connect, want, connected) in [
            (squid("403 Forbidden", "ERR_ACCESS_DENIED 0"), false, Answer::Denied, None),
            (squid("403 Forbidden", "ERR_ACCESS_DENIED 0"), true, Answer::Denied, None),
            (squid("407 Proxy Authentication Required", "ERR_CACHE_ACCESS_DENIED 0"), false, Answer::AuthRequired, None),
            (squid("502 Bad Gateway", "ERR_ZERO_SIZE_OBJECT 0"), false, Answer::UpstreamFailure, Some(true)),
            (squid("504 Gateway Timeout", "ERR_READ_TIMEOUT 0"), false, Answer::UpstreamFailure, Some(true)),
            (squid("503 Service Unavailable", "ERR_CONNECT_FAIL 111"), false, Answer::UpstreamFailure, Some(false)),
            (squid("503 Service Unavailable", "ERR_CONNECT_FAIL 111"), true, Answer::UpstreamFailure, Some(false)),
            (squid("500 Internal Server Error", "ERR_SOMETHING_NEW 0"), false, Answer::UpstreamFailure, None),
            // The destination's own 403, passed on by squid: Via and
            // X-Cache, no X-Squid-Error.
            (answer("HTTP/1.1 403 Forbidden\r\nServer: origin\r\nX-Cache: MISS from localhost\r\nVia: 1.1 localhost (squid/5.7)"), false, Answer::Forwarded, None),
            (answer("HTTP/1.1 502 Bad Gateway\r\nVia: 1.1 localhost (squid/5.7)"), false, Answer::Forwarded, None),
            (answer("HTTP/1.1 403 Filtered\r\nServer: tinyproxy/1.11.1\r\nContent-Type: text/html"), false, Answer::Denied, None),
            (answer("HTTP/1.1 403 Access violation\r\nServer: tinyproxy/1.11.1"), true, Answer::Denied, None),
            (answer("HTTP/1.1 500 Unable to connect\r\nServer: tinyproxy/1.11.1"), false, Answer::UpstreamFailure, Some(false)),
            (answer("HTTP/1.1 503 Could not send data to remote server\r\nServer: tinyproxy/1.11.1"), false, Answer::UpstreamFailure, None),
            (answer("HTTP/1.1 407 Proxy Authentication Required\r\nServer: tinyproxy/1.11.1\r\nProxy-Authenticate: Basic realm=\"Tinyproxy\""), false, Answer::AuthRequired, None),
            // Any other proxy: the status decides.
            (answer("HTTP/1.1 403 Forbidden"), false, Answer::Denied, None),
            (answer("HTTP/1.1 403 Forbidden\r\nVia: 1.1 gw"), false, Answer::Denied, None),
            (answer("HTTP/1.1 502 Bad Gateway"), true, Answer::UpstreamFailure, None),
            (answer("HTTP/1.1 504 Gateway Timeout"), false, Answer::UpstreamFailure, None),
            (answer("HTTP/1.1 405 Method Not Allowed"), true, Answer::Denied, None),
            (answer("HTTP/1.1 501 Not Implemented"), true, Answer::Unclear, None),
            (answer("HTTP/1.1 500 Oops"), false, Answer::Forwarded, None),
            (answer("HTTP/1.1 200 OK"), false, Answer::Forwarded, None),
        ] {
            let said = classify(&resp, connect);
            assert_eq!(
                (said.answer, said.upstream_connected),
                (want, connected),
                "{resp:?} connect={connect}"
            );
        }
        let said = classify(&squid("502 Bad Gateway", "ERR_ZERO_SIZE_OBJECT 0"), false);
        assert_eq!(
            said.describe(),
            "HTTP 502 Bad Gateway, X-Squid-Error ERR_ZERO_SIZE_OBJECT 0, squid/5.7"
        );
        let said = classify(
            &answer("HTTP/1.1 403 Filtered\r\nServer: tinyproxy/1.11.1"),
            false,
        );
        assert_eq!(said.describe(), "HTTP 403 Filtered, tinyproxy/1.11.1");
        assert_eq!(said.error.as_deref(), Some("Filtered"));
        let said = classify(
            &answer("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\u{1b}[31m\""),
            false,
        );
        assert_eq!(
            said.challenge.as_deref(),
            Some("Basic realm=\"x[31m\""),
            "no control characters"
        );
    }

    #[test]
    fn credentials_never_shown() {
        for (v, shown) in [
            ("http://u:s3cret@proxy:3128", "http://***@proxy:3128"),
            ("u:s3cret@proxy:3128", "***@proxy:3128"),
            ("http://u:s3/cr?et#x@proxy:3128/", "http://***@proxy:3128/"),
            ("HTTP://u@proxy", "HTTP://***@proxy"),
            ("http://proxy:3128", "http://proxy:3128"),
        ] {
            let p = parse_proxy(v);
            assert_eq!(p.shown, shown, "{v}");
            assert!(!format!("{p:?}").contains("s3"), "{p:?}");
            if v.contains('@') {
                assert!(p.auth.is_some(), "{v}");
                assert_eq!(
                    (p.host.bare(), p.port),
                    (
                        "proxy".to_string(),
                        if v.contains(":3128") { 3128 } else { 80 }
                    ),
                    "{v}"
                );
            }
        }
        assert_eq!(
            parse_proxy("http://u:s3/cr?et#x@proxy:3128/")
                .auth
                .as_deref(),
            Some(format!("Basic {}", b64_encode(b"u:s3/cr?et#x")).as_str())
        );
        let e = env(&[
            ("HTTPS_PROXY", "http://u:p@proxy:1"),
            ("http_proxy", "proxy:2"),
        ]);
        let t = |s: &str| target::parse(s).unwrap();
        assert_eq!(e.for_target(&t("https://x/")).unwrap().var, "HTTPS_PROXY");
        assert_eq!(e.for_target(&t("http://x/")).unwrap().var, "http_proxy");
    }

    #[test]
    fn credentials_and_schemes() {
        let p = parse_proxy("http://us%40er:p%3Ass@proxy:3128/");
        assert_eq!(
            p.auth.as_deref(),
            Some(format!("Basic {}", b64_encode(b"us@er:p:ss")).as_str())
        );
        assert_eq!(p.shown, "http://***@proxy:3128/");
        assert!(parse_proxy("socks5://proxy:1080").unsupported.is_some());
        assert_eq!(parse_proxy("http://[::1]").port, 80);
        let all = env(&[("ALL_PROXY", "http://all:1"), ("no_proxy", "*")]);
        assert!(all
            .for_target(&target::parse("https://x/").unwrap())
            .is_none());
    }
}
