//! Destinations as the policy writes them: `tcp://host:port`, `http://…`,
//! `https://…` and `dns://name`. Parsed once, at policy load, so a typo is a
//! policy error with a line number and never a probe failure.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Tcp,
    Http,
    Https,
    Dns,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Tcp => "tcp",
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Dns => "dns",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostName {
    Ip(IpAddr),
    /// Lower case, without a trailing dot unless it was written with one.
    Name(String),
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostName::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            HostName::Ip(IpAddr::V4(a)) => write!(f, "{a}"),
            HostName::Name(n) => f.write_str(n),
        }
    }
}

impl HostName {
    /// The name as DNS, TLS SNI and the Host header want it: no brackets.
    pub fn bare(&self) -> String {
        match self {
            HostName::Ip(a) => a.to_string(),
            HostName::Name(n) => n.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    pub host: HostName,
    /// 53 for dns:// (unused there).
    pub port: u16,
    /// Path and query for http(s); "/" when none was written.
    pub path: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scheme {
            Scheme::Dns => write!(f, "dns://{}", self.host.bare()),
            Scheme::Tcp => write!(f, "tcp://{}:{}", self.host, self.port),
            Scheme::Http | Scheme::Https => {
                let default = if self.scheme == Scheme::Http { 80 } else { 443 };
                if self.port == default {
                    write!(f, "{}://{}{}", self.scheme.as_str(), self.host, self.path)
                } else {
                    write!(
                        f,
                        "{}://{}:{}{}",
                        self.scheme.as_str(),
                        self.host,
                        self.port,
                        self.path
                    )
                }
            }
        }
    }
}

impl Target {
    /// `host:port` as an HTTP Host header or CONNECT line writes it.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

const EXPECTED: &str =
    "expected tcp://host:port, http://host[:port]/path, https://host[:port]/path or dns://name";

/// Parses one destination. The error says what is wrong and what was expected.
pub fn parse(s: &str) -> Result<Target, String> {
    let (scheme, rest) = match s.split_once("://") {
        Some(("tcp", r)) => (Scheme::Tcp, r),
        Some(("http", r)) => (Scheme::Http, r),
        Some(("https", r)) => (Scheme::Https, r),
        Some(("dns", r)) => (Scheme::Dns, r),
        Some((other, _)) => {
            return Err(format!(
                "destination '{s}' has the scheme '{other}': {EXPECTED}"
            ))
        }
        None => return Err(format!("destination '{s}' has no scheme: {EXPECTED}")),
    };
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "destination '{}' contains white space: {EXPECTED}",
            s.escape_debug()
        ));
    }
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(format!(
            "destination '{}' carries credentials (user@ or user:password@): the policy is printed in reports, so write the destination without them",
            crate::util::redact::redact(s)
        ));
    }
    if authority.is_empty() {
        return Err(format!("destination '{s}' has no host: {EXPECTED}"));
    }
    let (host, port) =
        split_host_port(authority).map_err(|e| format!("destination '{s}': {e}: {EXPECTED}"))?;
    let host = parse_host(host).map_err(|e| format!("destination '{s}': {e}"))?;
    let port = match (scheme, port) {
        (Scheme::Tcp, None) => {
            return Err(format!(
                "destination '{s}' has no port: expected tcp://host:port"
            ))
        }
        (Scheme::Dns, Some(_)) => {
            return Err(format!(
                "destination '{s}' has a port: expected dns://name (the resolver of /etc/resolv.conf is asked)"
            ))
        }
        (Scheme::Dns, None) => 53,
        (Scheme::Http, None) => 80,
        (Scheme::Https, None) => 443,
        (_, Some(p)) => p,
    };
    match scheme {
        Scheme::Tcp | Scheme::Dns if !path.is_empty() && path != "/" => {
            return Err(format!(
                "destination '{s}' has a path: a path only means something for http:// and https://"
            ))
        }
        Scheme::Dns if matches!(host, HostName::Ip(_)) => {
            return Err(format!(
                "destination '{s}' is an address: expected dns://name, a name to resolve"
            ))
        }
        _ => {}
    }
    let path = match scheme {
        Scheme::Http | Scheme::Https if path.is_empty() => "/".to_string(),
        Scheme::Http | Scheme::Https if path.starts_with('?') => format!("/{path}"),
        Scheme::Http | Scheme::Https => path.to_string(),
        _ => String::new(),
    };
    Ok(Target {
        scheme,
        host,
        port,
        path,
    })
}

fn split_host_port(a: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let end = rest
            .find(']')
            .ok_or_else(|| "an IPv6 address is missing its closing ']'".to_string())?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("unexpected '{after}' after the address")),
        };
        (&a[..end + 2], port)
    } else {
        match a.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err("an IPv6 address must be written in brackets, [::1]".into())
            }
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("'{p}' is not a port (1-65535)")),
        },
    };
    Ok((host, port))
}

fn parse_host(h: &str) -> Result<HostName, String> {
    if let Some(inner) = h.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|a| HostName::Ip(IpAddr::V6(a)))
            .map_err(|_| format!("'{inner}' is not an IPv6 address"));
    }
    if let Ok(a) = h.parse::<Ipv4Addr>() {
        return Ok(HostName::Ip(IpAddr::V4(a)));
    }
    let name = h.to_ascii_lowercase();
    check_name(&name)?;
    Ok(HostName::Name(name))
}

/// A DNS name: labels of letters, digits, '-' and '_', 1-63 bytes each.
pub fn check_name(name: &str) -> Result<(), String> {
    let body = name.strip_suffix('.').unwrap_or(name);
    if body.is_empty() || body.len() > 253 {
        return Err(format!("'{name}' is not a host name"));
    }
    for label in body.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(format!(
                "'{name}' is not a host name: expected labels of letters, digits and '-'"
            ));
        }
    }
    if body.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!("'{name}' is not an IPv4 address or a host name"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme() {
        let t = parse("tcp://127.0.0.1:8080").unwrap();
        assert_eq!((t.scheme, t.port), (Scheme::Tcp, 8080));
        assert_eq!(t.to_string(), "tcp://127.0.0.1:8080");
        let t = parse("https://Pkgs.Internal/simple?x=1").unwrap();
        assert_eq!(t.host, HostName::Name("pkgs.internal".into()));
        assert_eq!((t.port, t.path.as_str()), (443, "/simple?x=1"));
        assert_eq!(t.to_string(), "https://pkgs.internal/simple?x=1");
        let t = parse("http://[fd00:ec2::254]/latest/").unwrap();
        assert_eq!(t.host.bare(), "fd00:ec2::254");
        assert_eq!(t.authority(), "[fd00:ec2::254]:80");
        let t = parse("http://h:81").unwrap();
        assert_eq!(t.to_string(), "http://h:81/");
        let t = parse("dns://example.com").unwrap();
        assert_eq!(
            (t.scheme, t.to_string()),
            (Scheme::Dns, "dns://example.com".into())
        );
        assert_eq!(
            parse("tcp://[::1]:22").unwrap().to_string(),
            "tcp://[::1]:22"
        );
    }

    #[test]
    fn rejects_with_reasons() {
        for (bad, why) in [
            ("169.254.169.254", "no scheme"),
            ("ftp://x/", "scheme 'ftp'"),
            ("tcp://host", "no port"),
            ("tcp://host:0", "not a port"),
            ("tcp://host:99999", "not a port"),
            ("dns://host:53", "has a port"),
            ("dns://10.0.0.1", "is an address"),
            ("tcp://h:1/x", "has a path"),
            ("http://::1/", "brackets"),
            ("http://[::1/", "closing"),
            ("https://u:p@h/", "credentials"),
            ("http:// h/", "white space"),
            ("http://bad_host!/", "not a host name"),
            ("tcp://:80", "not a host name"),
            ("http://1.2.3/", "not an IPv4"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert!(!parse("https://u:secret@h/").unwrap_err().contains("secret"));
    }

    #[test]
    fn redacts() {
        use crate::util::redact::redact;
        assert_eq!(redact("http://u:p@proxy:3128"), "http://***@proxy:3128");
        assert_eq!(redact("http://proxy:3128/a@b"), "http://proxy:3128/a@b");
    }
}
