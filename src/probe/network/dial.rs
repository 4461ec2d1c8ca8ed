//! Every connection the network probe makes goes through [`Dial`]: it applies
//! the test redirects (`--net-redirect`, so tests point built-in destinations
//! such as 169.254.169.254 at loopback servers) and the `--net-loopback-only`
//! guard (nothing leaves loopback, whatever a test forgot to redirect), and it
//! turns socket errors into the classes the report uses.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Instant;

use nix::errno::Errno;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetError {
    Refused,
    Timeout,
    /// No route: ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL.
    Unreachable,
    /// This host refused to send: EPERM/EACCES from a local firewall rule,
    /// seccomp or an LSM.
    Blocked,
    /// The peer reset or closed the connection before answering.
    Reset,
    /// The `--net-loopback-only` guard stopped it.
    NotAttempted(String),
    Other(String),
}

impl NetError {
    pub fn from_io(e: &io::Error) -> NetError {
        if let Some(code) = e.raw_os_error() {
            return match Errno::from_raw(code) {
                Errno::ECONNREFUSED => NetError::Refused,
                Errno::ETIMEDOUT | Errno::EAGAIN | Errno::EINPROGRESS => NetError::Timeout,
                Errno::ENETUNREACH
                | Errno::EHOSTUNREACH
                | Errno::EADDRNOTAVAIL
                | Errno::ENETDOWN
                | Errno::EHOSTDOWN
                | Errno::EAFNOSUPPORT => NetError::Unreachable,
                Errno::EPERM | Errno::EACCES => NetError::Blocked,
                Errno::ECONNRESET | Errno::EPIPE | Errno::ECONNABORTED => NetError::Reset,
                _ => NetError::Other(e.to_string()),
            };
        }
        match e.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => NetError::Timeout,
            io::ErrorKind::ConnectionRefused => NetError::Refused,
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof => NetError::Reset,
            _ => NetError::Other(e.to_string()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            NetError::Refused => "connection refused".into(),
            NetError::Timeout => "no answer before the deadline".into(),
            NetError::Unreachable => "no route to the address".into(),
            NetError::Blocked => {
                "this host refused to send (a local firewall rule, seccomp or an LSM)".into()
            }
            NetError::Reset => "the connection was reset or closed before an answer".into(),
            NetError::NotAttempted(why) => format!("not attempted: {why}"),
            NetError::Other(m) => m.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// Host as written (lower case, IPv6 without brackets) and port.
    pub host: String,
    pub port: u16,
    pub to: SocketAddr,
}

/// Why a `--net-redirect` value was refused; each variant holds the value
/// as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectError {
    /// No `=` between the destination and where it goes.
    NoEquals { arg: String },
    /// What follows `=` is not an IP:PORT.
    BadTo { arg: String, to: String },
    /// What precedes `=` is not a `host:port` destination.
    From {
        arg: String,
        why: crate::target::TargetError,
    },
}

impl fmt::Display for RedirectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedirectError::NoEquals { arg } => {
                write!(f, "--net-redirect '{arg}': expected HOST:PORT=IP:PORT")
            }
            RedirectError::BadTo { arg, to } => write!(
                f,
                "--net-redirect '{arg}': '{to}' is not IP:PORT ([::1]:PORT for IPv6)"
            ),
            RedirectError::From { arg, why } => write!(f, "--net-redirect '{arg}': {why}"),
        }
    }
}

impl std::error::Error for RedirectError {}

impl Redirect {
    /// Parses `HOST:PORT=IP:PORT`, e.g. `169.254.169.254:80=127.0.0.1:8080`
    /// or `[fd00:ec2::254]:80=[::1]:8080`.
    pub fn parse(s: &str) -> Result<Redirect, RedirectError> {
        let arg = || s.to_string();
        let (from, to) = s
            .split_once('=')
            .ok_or_else(|| RedirectError::NoEquals { arg: arg() })?;
        let to: SocketAddr = to.parse().map_err(|_| RedirectError::BadTo {
            arg: arg(),
            to: to.to_string(),
        })?;
        let t = crate::target::parse(&format!("tcp://{from}"))
            .map_err(|why| RedirectError::From { arg: arg(), why })?;
        Ok(Redirect {
            host: t.host.bare(),
            port: t.port,
            to,
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct Dial {
    pub redirects: Vec<Redirect>,
    pub loopback_only: bool,
}

impl Dial {
    /// Where `host:port` (as written or as resolved) really goes, if redirected.
    pub fn redirect(&self, host: &str, port: u16) -> Option<SocketAddr> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host_ip = host.parse::<IpAddr>().ok();
        self.redirects
            .iter()
            .find(|r| {
                r.port == port
                    && (r.host.eq_ignore_ascii_case(host)
                        || (host_ip.is_some() && r.host.parse::<IpAddr>().ok() == host_ip))
            })
            .map(|r| r.to)
    }

    /// The address DNS queries for `server` go to. Under the loopback guard
    /// only a redirected nameserver is asked: a loopback stub resolver such
    /// as systemd-resolved would forward the query off the machine.
    pub fn dns_server(&self, server: SocketAddr) -> Result<SocketAddr, NetError> {
        match self.redirect(&server.ip().to_string(), server.port()) {
            Some(to) => self.check(to).map(|_| to),
            None if self.loopback_only => Err(NetError::NotAttempted(format!(
                "--net-loopback-only: the nameserver {server} is not redirected"
            ))),
            None => Ok(server),
        }
    }

    pub fn check(&self, addr: SocketAddr) -> Result<(), NetError> {
        if self.loopback_only && !addr.ip().is_loopback() {
            return Err(NetError::NotAttempted(format!(
                "--net-loopback-only: {addr} is not a loopback address"
            )));
        }
        Ok(())
    }

    /// A TCP connection to `addr` (redirects already applied), bounded by `deadline`.
    pub fn connect(&self, addr: SocketAddr, deadline: Instant) -> Result<TcpStream, NetError> {
        self.check(addr)?;
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NetError::Timeout);
        }
        let s = TcpStream::connect_timeout(&addr, left).map_err(|e| NetError::from_io(&e))?;
        let _ = s.set_nodelay(true);
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_parse_and_match() {
        let r = Redirect::parse("169.254.169.254:80=127.0.0.1:8080").unwrap();
        assert_eq!((r.host.as_str(), r.port), ("169.254.169.254", 80));
        let r6 = Redirect::parse("[fd00:ec2::254]:80=[::1]:9").unwrap();
        assert_eq!(r6.host, "fd00:ec2::254");
        let n = Redirect::parse("Metadata.Google.Internal:80=127.0.0.1:1").unwrap();
        let d = Dial {
            redirects: vec![r, r6, n],
            loopback_only: true,
        };
        assert_eq!(
            d.redirect("169.254.169.254", 80),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(d.redirect("169.254.169.254", 81), None);
        assert_eq!(
            d.redirect("[fd00:ec2:0::254]", 80),
            Some("[::1]:9".parse().unwrap())
        );
        assert!(d.redirect("metadata.google.internal", 80).is_some());
        assert_eq!(
            Redirect::parse("x:1"),
            Err(RedirectError::NoEquals { arg: "x:1".into() })
        );
        let e = Redirect::parse("x:1=localhost:2").unwrap_err();
        assert_eq!(
            e,
            RedirectError::BadTo {
                arg: "x:1=localhost:2".into(),
                to: "localhost:2".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "--net-redirect 'x:1=localhost:2': 'localhost:2' is not IP:PORT ([::1]:PORT for IPv6)"
        );
        let e = Redirect::parse("x=127.0.0.1:2").unwrap_err();
        assert!(matches!(e, RedirectError::From { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "--net-redirect 'x=127.0.0.1:2': destination 'tcp://x' has no port: expected tcp://host:port"
        );
        assert!(matches!(
            d.check("10.0.0.1:80".parse().unwrap()),
            Err(NetError::NotAttempted(_))
        ));
        assert!(d.check("127.0.0.5:80".parse().unwrap()).is_ok());
        assert!(d.dns_server("10.0.0.2:53".parse().unwrap()).is_err());
        assert!(d.dns_server("127.0.0.53:53".parse().unwrap()).is_err());
    }

    #[test]
    fn errors_classify() {
        let e = |n: Errno| NetError::from_io(&io::Error::from_raw_os_error(n as i32));
        assert_eq!(e(Errno::ECONNREFUSED), NetError::Refused);
        assert_eq!(e(Errno::EAGAIN), NetError::Timeout);
        assert_eq!(e(Errno::ENETUNREACH), NetError::Unreachable);
        assert_eq!(e(Errno::EPERM), NetError::Blocked);
        assert_eq!(e(Errno::ECONNRESET), NetError::Reset);
    }
}
