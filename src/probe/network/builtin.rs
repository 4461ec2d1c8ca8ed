//! The built-in destinations of probes/destinations.toml: cloud metadata,
//! public egress canaries, the Kubernetes API, engine ports and DevTools
//! ports. Embedded at build time and validated by a test; tried only when
//! asked (`--network-defaults` or `defaults = true`).

use std::fmt;
use std::net::Ipv4Addr;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::target::{self, Target, TargetError};

pub const DESTINATIONS_TOML: &str = include_str!("../../../probes/destinations.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A [network] allow or deny entry of the policy.
    Policy,
    Metadata,
    Egress,
    Kubernetes,
    Engine,
    BrowserDebug,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Builtin {
    pub name: String,
    pub kind: Kind,
    pub url: String,
    pub provider: Option<String>,
    pub method: Option<String>,
    #[serde(default)]
    pub headers: Vec<String>,
    pub token: Option<TokenSpec>,
    pub why: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSpec {
    pub method: String,
    pub url: String,
    #[serde(default)]
    pub headers: Vec<String>,
    /// The header of the main request that carries the token.
    pub header: String,
}

#[derive(Debug, Deserialize)]
struct Catalog {
    destination: Vec<Builtin>,
}

// Read without serde (util/embedded.rs); the tests read them both ways.
crate::embedded_enum!(Kind {
    "policy" => Policy,
    "metadata" => Metadata,
    "egress" => Egress,
    "kubernetes" => Kubernetes,
    "engine" => Engine,
    "browser-debug" => BrowserDebug,
});
crate::embedded_struct!(Builtin {
    get [name, kind, url, why]
    opt [provider, method, token]
    or_default [headers]
});
crate::embedded_struct!(TokenSpec { get [method, url, header] or_default [headers] });
crate::embedded_struct!(Catalog { get [destination] });

#[cfg(test)]
#[test]
fn destinations_read_as_serde_read_them() {
    crate::util::embedded::tests::same::<Catalog>("destinations.toml", DESTINATIONS_TOML);
}

pub fn builtins() -> &'static [Builtin] {
    static C: OnceLock<Vec<Builtin>> = OnceLock::new();
    C.get_or_init(|| {
        crate::catalog::parse_embedded::<Catalog>("destinations.toml", DESTINATIONS_TOML)
            .destination
    })
}

/// Splits "Name: value".
pub fn header(h: &str) -> Option<(String, String)> {
    let (k, v) = h.split_once(':')?;
    let k = k.trim();
    let ok = !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let v = v.trim();
    (ok && !v.contains(['\r', '\n'])).then(|| (k.to_string(), v.to_string()))
}

/// Why a built-in URL could not be filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// `${` without its `}` (in the URL given).
    Unclosed { url: String },
    /// `${gateway}`, and /proc/net/route names no default IPv4 gateway.
    NoGateway,
    /// `${NAME}`, and NAME is unset or empty.
    Unset { name: String },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::Unclosed { url } => write!(f, "'{url}': unclosed ${{"),
            ExpandError::NoGateway => f.write_str("no default IPv4 gateway in /proc/net/route"),
            ExpandError::Unset { name } => write!(f, "{name} is not set"),
        }
    }
}

impl std::error::Error for ExpandError {}

/// Why a built-in destination is skipped: its URL could not be filled in,
/// or, filled in, is not a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    Expand(ExpandError),
    Target(TargetError),
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::Expand(e) => e.fmt(f),
            UrlError::Target(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for UrlError {}

/// Fills ${NAME} from `var` and ${gateway} from `gateway`.
pub fn expand(
    url: &str,
    var: &dyn Fn(&str) -> Option<String>,
    gateway: &dyn Fn() -> Option<Ipv4Addr>,
) -> Result<String, ExpandError> {
    let mut out = String::new();
    let mut rest = url;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| ExpandError::Unclosed {
            url: url.to_string(),
        })?;
        let name = &after[..end];
        let value = if name == "gateway" {
            gateway()
                .map(|g| g.to_string())
                .ok_or(ExpandError::NoGateway)?
        } else {
            let v = var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| ExpandError::Unset {
                    name: name.to_string(),
                })?;
            // An IPv6 service host (KUBERNETES_SERVICE_HOST=fd00::1) needs brackets in a URL.
            if v.contains(':') && !v.starts_with('[') && !name.ends_with("PORT") {
                format!("[{v}]")
            } else {
                v
            }
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The default IPv4 gateway from /proc/net/route (through the Host root).
pub fn default_gateway(host: &Host) -> Option<Ipv4Addr> {
    let text = host.read("/proc/net/route").ok()?;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 || f[1] != "00000000" {
            continue;
        }
        let flags = u32::from_str_radix(f[3], 16).ok()?;
        if flags & 0x2 == 0 {
            continue; // RTF_GATEWAY
        }
        let gw = u32::from_str_radix(f[2], 16).ok()?;
        // The kernel prints the address in host byte order of its network-order bytes.
        let b = gw.to_le_bytes();
        return Some(Ipv4Addr::new(b[0], b[1], b[2], b[3]));
    }
    None
}

/// Parses an expanded built-in URL.
pub fn target_of(url: &str) -> Result<Target, TargetError> {
    target::parse(url)
}

/// A built-in URL filled in (see `expand`) and parsed.
pub fn destination(
    url: &str,
    var: &dyn Fn(&str) -> Option<String>,
    gateway: &dyn Fn() -> Option<Ipv4Addr>,
) -> Result<Target, UrlError> {
    let url = expand(url, var, gateway).map_err(UrlError::Expand)?;
    target_of(&url).map_err(UrlError::Target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{HostName, Scheme};
    use std::net::IpAddr;

    fn sample_var(n: &str) -> Option<String> {
        match n {
            "KUBERNETES_SERVICE_HOST" => Some("10.96.0.1".into()),
            "KUBERNETES_SERVICE_PORT" => Some("443".into()),
            _ => None,
        }
    }

    #[test]
    fn catalog_is_valid() {
        let all = builtins();
        assert!(all.len() >= 15);
        let mut names: Vec<&str> = all.iter().map(|b| b.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len(), "names are unique");
        let gw = || Some(Ipv4Addr::new(10, 88, 0, 1));
        for b in all {
            assert_ne!(b.kind, Kind::Policy, "{}", b.name);
            assert!(!b.why.trim().is_empty(), "{}", b.name);
            let url =
                expand(&b.url, &sample_var, &gw).unwrap_or_else(|e| panic!("{}: {e}", b.name));
            let t = target_of(&url).unwrap_or_else(|e| panic!("{}: {e}", b.name));
            for h in &b.headers {
                assert!(header(h).is_some(), "{}: header {h}", b.name);
            }
            if let Some(m) = &b.method {
                assert!(["GET", "HEAD", "PUT"].contains(&m.as_str()), "{}", b.name);
            }
            match b.kind {
                Kind::Metadata => {
                    assert!(b.provider.is_some(), "{}: provider", b.name);
                    assert_eq!(t.scheme, Scheme::Http, "{}", b.name);
                    let special = match &t.host {
                        HostName::Ip(IpAddr::V4(a)) => a.is_link_local(),
                        HostName::Ip(IpAddr::V6(a)) => (a.segments()[0] & 0xfe00) == 0xfc00,
                        HostName::Name(n) => n.ends_with(".internal"),
                    };
                    assert!(
                        special,
                        "{}: metadata lives on link-local or ULA addresses",
                        b.name
                    );
                }
                Kind::BrowserDebug => {
                    assert!(t.path.ends_with("/json/version"), "{}", b.name);
                    assert_eq!(
                        t.host,
                        HostName::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
                        "{}: loopback only",
                        b.name
                    );
                }
                Kind::Engine => assert!([2375, 2376].contains(&t.port), "{}", b.name),
                _ => {}
            }
            if let Some(tok) = &b.token {
                let tu = target_of(&expand(&tok.url, &sample_var, &gw).unwrap()).unwrap();
                assert_eq!(
                    (tu.host.clone(), tu.port),
                    (t.host.clone(), t.port),
                    "{}: token from the same service",
                    b.name
                );
                assert!(header(&format!("{}: x", tok.header)).is_some());
                assert!(tok.headers.iter().all(|h| header(h).is_some()));
            }
        }
        for needed in [
            "aws-imdsv1",
            "aws-imdsv2",
            "aws-imdsv2-ipv6",
            "gcp-metadata",
            "azure-imds",
            "aws-ecs-task-metadata",
            "aws-eks-pod-identity",
            "egress-https",
            "kubernetes-api",
            "engine-gateway-2375",
            "devtools-9222",
        ] {
            assert!(all.iter().any(|b| b.name == needed), "{needed} is listed");
        }
    }

    #[test]
    fn expansion_and_gateway() {
        let none = || None;
        assert_eq!(
            expand(
                "https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}/version",
                &sample_var,
                &none
            )
            .unwrap(),
            "https://10.96.0.1:443/version"
        );
        let v6 = |n: &str| (n == "H").then(|| "fd00::1".to_string());
        assert_eq!(
            expand("https://${H}/", &v6, &none).unwrap(),
            "https://[fd00::1]/"
        );
        let e = expand("tcp://${gateway}:2376", &sample_var, &none).unwrap_err();
        assert_eq!(e, ExpandError::NoGateway);
        assert_eq!(e.to_string(), "no default IPv4 gateway in /proc/net/route");
        let e = expand("https://${NOPE}/", &sample_var, &none).unwrap_err();
        assert_eq!(
            e,
            ExpandError::Unset {
                name: "NOPE".into()
            }
        );
        assert_eq!(e.to_string(), "NOPE is not set");
        let e = expand("https://${NOPE/", &sample_var, &none).unwrap_err();
        assert_eq!(e.to_string(), "'https://${NOPE/': unclosed ${");
        // Filled in and parsed: each step's error, in its own words.
        let e = destination("https://${NOPE}/", &sample_var, &none).unwrap_err();
        assert_eq!(
            e,
            UrlError::Expand(ExpandError::Unset {
                name: "NOPE".into()
            })
        );
        let e = destination("tcp://${KUBERNETES_SERVICE_HOST}", &sample_var, &none).unwrap_err();
        assert!(
            matches!(e, UrlError::Target(TargetError::NoPort { .. })),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "destination 'tcp://10.96.0.1' has no port: expected tcp://host:port"
        );

        let dir = std::env::temp_dir().join(format!("selfprobe-route-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/net")).unwrap();
        std::fs::write(
            dir.join("proc/net/route"),
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
             eth0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n\
             eth0\t00000000\t0100580A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n",
        )
        .unwrap();
        let host = Host::new(dir.clone(), std::time::Duration::from_secs(1));
        assert_eq!(default_gateway(&host), Some(Ipv4Addr::new(10, 88, 0, 1)));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
