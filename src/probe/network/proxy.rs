//! HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY as curl reads them (the
//! lower-case name wins), applied to http:// and https:// destinations. The
//! report shows the proxies with any credentials replaced by a marker.

use std::net::IpAddr;

use serde::Serialize;

use super::http::base64;
use super::target::{self, HostName, Scheme, Target};
use crate::host::Host;

#[derive(Debug, Clone, Default, Serialize)]
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

#[derive(Debug, Clone)]
pub struct ProxyUrl {
    pub host: HostName,
    pub port: u16,
    /// `Basic …` for Proxy-Authorization; never reported.
    pub auth: Option<String>,
    /// The URL with credentials replaced by a marker.
    pub shown: String,
    /// Why it cannot be used (a SOCKS or HTTPS proxy), if it cannot.
    pub unsupported: Option<String>,
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
        let mut pick = |lower: &str, upper: &str| -> Option<String> {
            let mut found = None;
            for name in [upper, lower] {
                if let Some(v) = get(name)
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                {
                    env.info.variables.push(name.to_string());
                    found = Some(v); // lower case read last, so it wins
                }
            }
            found
        };
        let http = pick("http_proxy", "HTTP_PROXY");
        let https = pick("https_proxy", "HTTPS_PROXY");
        let all = pick("all_proxy", "ALL_PROXY");
        let no = pick("no_proxy", "NO_PROXY");
        env.http = http.map(|v| parse_proxy(&v));
        env.https = https.map(|v| parse_proxy(&v));
        env.all = all.map(|v| parse_proxy(&v));
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
    let shown = target::redact(v);
    let (scheme, rest) = match v.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), v),
    };
    let rest = rest.split('/').next().unwrap_or("");
    let (userinfo, hostport) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let mut out = ProxyUrl {
        host: HostName::Name(String::new()),
        port: 0,
        auth: userinfo.map(|u| format!("Basic {}", base64(&percent_decode(u)))),
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
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
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

    #[test]
    fn credentials_and_schemes() {
        let p = parse_proxy("http://us%40er:p%3Ass@proxy:3128/");
        assert_eq!(
            p.auth.as_deref(),
            Some(format!("Basic {}", base64(b"us@er:p:ss")).as_str())
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
