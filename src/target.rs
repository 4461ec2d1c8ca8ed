//! Destinations as the policy writes them: `tcp://host:port`, `http://…`,
//! `https://…` and `dns://name`. Parsed once, at policy load, so a typo is a
//! policy error with a line number and never a probe failure.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// Why a destination was refused. Each variant holds the destination as
/// written (`dest`), except `Credentials`, which holds only its redacted
/// form: the password is in no field, so no Display or Debug can show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// `scheme://` other than tcp, http, https or dns.
    Scheme { dest: String, scheme: String },
    /// No `://` at all.
    NoScheme { dest: String },
    /// White space or a control character anywhere in it.
    WhiteSpace { dest: String },
    /// `user@` or `user:password@` before the host.
    Credentials { redacted: String },
    /// Nothing between `://` and the path.
    NoHost { dest: String },
    /// The `host:port` part does not split.
    Authority { dest: String, why: AuthorityError },
    /// The host is neither an address nor a DNS name.
    Host { dest: String, why: HostError },
    /// tcp:// without a port.
    NoPort { dest: String },
    /// dns:// with a port.
    DnsPort { dest: String },
    /// tcp:// or dns:// with a path.
    Path { dest: String },
    /// dns:// with an address instead of a name.
    DnsAddress { dest: String },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Scheme { dest, scheme } => {
                write!(f, "destination '{dest}' has the scheme '{scheme}': {EXPECTED}")
            }
            TargetError::NoScheme { dest } => {
                write!(f, "destination '{dest}' has no scheme: {EXPECTED}")
            }
            TargetError::WhiteSpace { dest } => write!(
                f,
                "destination '{}' contains white space: {EXPECTED}",
                dest.escape_debug()
            ),
            TargetError::Credentials { redacted } => write!(
                f,
                "destination '{redacted}' carries credentials (user@ or user:password@): the policy is printed in reports, so write the destination without them"
            ),
            TargetError::NoHost { dest } => {
                write!(f, "destination '{dest}' has no host: {EXPECTED}")
            }
            TargetError::Authority { dest, why } => {
                write!(f, "destination '{dest}': {why}: {EXPECTED}")
            }
            TargetError::Host { dest, why } => write!(f, "destination '{dest}': {why}"),
            TargetError::NoPort { dest } => write!(
                f,
                "destination '{dest}' has no port: expected tcp://host:port"
            ),
            TargetError::DnsPort { dest } => write!(
                f,
                "destination '{dest}' has a port: expected dns://name (the resolver of /etc/resolv.conf is asked)"
            ),
            TargetError::Path { dest } => write!(
                f,
                "destination '{dest}' has a path: a path only means something for http:// and https://"
            ),
            TargetError::DnsAddress { dest } => write!(
                f,
                "destination '{dest}' is an address: expected dns://name, a name to resolve"
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// Why `host:port` does not split into a host and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorityError {
    /// `[` without its `]`.
    UnclosedBracket,
    /// Something other than `:port` after `[address]`.
    AfterAddress(String),
    /// An IPv6 address without brackets (its colons would be read as a port).
    Ipv6NeedsBrackets,
    /// Not a number from 1 to 65535.
    BadPort(String),
}

impl fmt::Display for AuthorityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthorityError::UnclosedBracket => {
                f.write_str("an IPv6 address is missing its closing ']'")
            }
            AuthorityError::AfterAddress(after) => {
                write!(f, "unexpected '{after}' after the address")
            }
            AuthorityError::Ipv6NeedsBrackets => {
                f.write_str("an IPv6 address must be written in brackets, [::1]")
            }
            AuthorityError::BadPort(p) => write!(f, "'{p}' is not a port (1-65535)"),
        }
    }
}

impl std::error::Error for AuthorityError {}

/// Why a host is neither an address nor a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    /// In brackets, but not an IPv6 address.
    NotIpv6(String),
    /// Not a DNS name.
    Name(NameError),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::NotIpv6(inner) => write!(f, "'{inner}' is not an IPv6 address"),
            HostError::Name(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HostError {}

/// Why a string is not a DNS name (see `check_name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// Empty, or longer than 253 bytes.
    Length(String),
    /// A label that is empty, longer than 63 bytes or has other characters.
    Label(String),
    /// Digits and dots only: an IPv4 address that does not parse.
    Digits(String),
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Length(name) => write!(f, "'{name}' is not a host name"),
            NameError::Label(name) => write!(
                f,
                "'{name}' is not a host name: expected labels of letters, digits and '-'"
            ),
            NameError::Digits(name) => {
                write!(f, "'{name}' is not an IPv4 address or a host name")
            }
        }
    }
}

impl std::error::Error for NameError {}

/// Parses one destination. The error says what is wrong and what was expected.
pub fn parse(s: &str) -> Result<Target, TargetError> {
    let dest = || s.to_string();
    let (scheme, rest) = match s.split_once("://") {
        Some(("tcp", r)) => (Scheme::Tcp, r),
        Some(("http", r)) => (Scheme::Http, r),
        Some(("https", r)) => (Scheme::Https, r),
        Some(("dns", r)) => (Scheme::Dns, r),
        Some((other, _)) => {
            return Err(TargetError::Scheme {
                dest: dest(),
                scheme: other.to_string(),
            })
        }
        None => return Err(TargetError::NoScheme { dest: dest() }),
    };
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TargetError::WhiteSpace { dest: dest() });
    }
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err(TargetError::Credentials {
            redacted: crate::util::redact::redact(s),
        });
    }
    if authority.is_empty() {
        return Err(TargetError::NoHost { dest: dest() });
    }
    let (host, port) =
        split_host_port(authority).map_err(|why| TargetError::Authority { dest: dest(), why })?;
    let host = parse_host(host).map_err(|why| TargetError::Host { dest: dest(), why })?;
    let port = match (scheme, port) {
        (Scheme::Tcp, None) => return Err(TargetError::NoPort { dest: dest() }),
        (Scheme::Dns, Some(_)) => return Err(TargetError::DnsPort { dest: dest() }),
        (Scheme::Dns, None) => 53,
        (Scheme::Http, None) => 80,
        (Scheme::Https, None) => 443,
        (_, Some(p)) => p,
    };
    match scheme {
        Scheme::Tcp | Scheme::Dns if !path.is_empty() && path != "/" => {
            return Err(TargetError::Path { dest: dest() })
        }
        Scheme::Dns if matches!(host, HostName::Ip(_)) => {
            return Err(TargetError::DnsAddress { dest: dest() })
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

fn split_host_port(a: &str) -> Result<(&str, Option<u16>), AuthorityError> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let end = rest.find(']').ok_or(AuthorityError::UnclosedBracket)?;
        let after = &rest[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(AuthorityError::AfterAddress(after.to_string())),
        };
        (&a[..end + 2], port)
    } else {
        match a.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => return Err(AuthorityError::Ipv6NeedsBrackets),
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(AuthorityError::BadPort(p.to_string())),
        },
    };
    Ok((host, port))
}

fn parse_host(h: &str) -> Result<HostName, HostError> {
    if let Some(inner) = h.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|a| HostName::Ip(IpAddr::V6(a)))
            .map_err(|_| HostError::NotIpv6(inner.to_string()));
    }
    if let Ok(a) = h.parse::<Ipv4Addr>() {
        return Ok(HostName::Ip(IpAddr::V4(a)));
    }
    let name = h.to_ascii_lowercase();
    check_name(&name).map_err(HostError::Name)?;
    Ok(HostName::Name(name))
}

/// A DNS name: labels of letters, digits, '-' and '_', 1-63 bytes each.
pub fn check_name(name: &str) -> Result<(), NameError> {
    let body = name.strip_suffix('.').unwrap_or(name);
    if body.is_empty() || body.len() > 253 {
        return Err(NameError::Length(name.to_string()));
    }
    for label in body.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(NameError::Label(name.to_string()));
        }
    }
    if body.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(NameError::Digits(name.to_string()));
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
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert!(!parse("https://u:secret@h/")
            .unwrap_err()
            .to_string()
            .contains("secret"));
    }

    /// The words of each error, exactly as they were when the errors were
    /// strings (policy errors and --net-redirect quote them to users).
    #[test]
    fn error_words_are_exact() {
        let expected = EXPECTED;
        for (bad, words) in [
            (
                "169.254.169.254",
                format!("destination '169.254.169.254' has no scheme: {expected}"),
            ),
            (
                "ftp://x/",
                format!("destination 'ftp://x/' has the scheme 'ftp': {expected}"),
            ),
            (
                "http://a\tb/",
                format!("destination 'http://a\\tb/' contains white space: {expected}"),
            ),
            (
                "https://u:secret@h/",
                "destination 'https://***@h/' carries credentials (user@ or user:password@): the policy is printed in reports, so write the destination without them".to_string(),
            ),
            ("http:///x", format!("destination 'http:///x' has no host: {expected}")),
            (
                "http://[::1/",
                format!("destination 'http://[::1/': an IPv6 address is missing its closing ']': {expected}"),
            ),
            (
                "http://[::1]x/",
                format!("destination 'http://[::1]x/': unexpected 'x' after the address: {expected}"),
            ),
            (
                "http://::1/",
                format!("destination 'http://::1/': an IPv6 address must be written in brackets, [::1]: {expected}"),
            ),
            (
                "tcp://h:0",
                format!("destination 'tcp://h:0': '0' is not a port (1-65535): {expected}"),
            ),
            (
                "http://[zz]/",
                "destination 'http://[zz]/': 'zz' is not an IPv6 address".to_string(),
            ),
            (
                "tcp://:80",
                "destination 'tcp://:80': '' is not a host name".to_string(),
            ),
            (
                "http://Bad_Host!/",
                "destination 'http://Bad_Host!/': 'bad_host!' is not a host name: expected labels of letters, digits and '-'".to_string(),
            ),
            (
                "http://1.2.3/",
                "destination 'http://1.2.3/': '1.2.3' is not an IPv4 address or a host name".to_string(),
            ),
            (
                "tcp://host",
                "destination 'tcp://host' has no port: expected tcp://host:port".to_string(),
            ),
            (
                "dns://host:53",
                "destination 'dns://host:53' has a port: expected dns://name (the resolver of /etc/resolv.conf is asked)".to_string(),
            ),
            (
                "tcp://h:1/x",
                "destination 'tcp://h:1/x' has a path: a path only means something for http:// and https://".to_string(),
            ),
            (
                "dns://10.0.0.1",
                "destination 'dns://10.0.0.1' is an address: expected dns://name, a name to resolve".to_string(),
            ),
        ] {
            assert_eq!(parse(bad).unwrap_err().to_string(), words, "{bad:?}");
        }
    }

    #[test]
    fn error_kinds() {
        let dest = |s: &str| s.to_string();
        assert_eq!(
            parse("ftp://x/"),
            Err(TargetError::Scheme {
                dest: dest("ftp://x/"),
                scheme: "ftp".into()
            })
        );
        assert_eq!(
            parse("tcp://h:99999"),
            Err(TargetError::Authority {
                dest: dest("tcp://h:99999"),
                why: AuthorityError::BadPort("99999".into())
            })
        );
        assert_eq!(
            parse("http://1.2.3/"),
            Err(TargetError::Host {
                dest: dest("http://1.2.3/"),
                why: HostError::Name(NameError::Digits("1.2.3".into()))
            })
        );
        // The credential case keeps only the redacted form, so not even
        // Debug can print the password.
        let e = parse("https://u:secret@h/").unwrap_err();
        assert_eq!(
            e,
            TargetError::Credentials {
                redacted: "https://***@h/".into()
            }
        );
        assert!(!format!("{e:?}").contains("secret"), "{e:?}");
        assert_eq!(check_name("a..b"), Err(NameError::Label("a..b".into())));
        assert_eq!(check_name(""), Err(NameError::Length(String::new())));
        assert_eq!(check_name("example.com."), Ok(()));
    }

    #[test]
    fn redacts() {
        use crate::util::redact::redact;
        assert_eq!(redact("http://u:p@proxy:3128"), "http://***@proxy:3128");
        assert_eq!(redact("http://proxy:3128/a@b"), "http://proxy:3128/a@b");
    }
}
