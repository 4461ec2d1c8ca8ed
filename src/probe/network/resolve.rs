//! Name resolution without NSS: a static glibc binary cannot load NSS
//! modules (docs/layout.md, Dependencies), so /etc/hosts and /etc/resolv.conf are read here,
//! through the Host root so fixture trees work, and A and AAAA queries go to
//! the nameservers over UDP (TCP when the answer is truncated), each bounded
//! by the destination's deadline.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::dial::{Dial, NetError};
use crate::host::Host;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_NAMESERVERS: usize = 3;
const MAX_ADDRS: usize = 16;
const AAAA_GRACE: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ResolverConf {
    /// Where the nameservers came from: /etc/resolv.conf, or why there are none.
    pub resolv_conf: String,
    pub nameservers: Vec<IpAddr>,
    pub search: Vec<String>,
    pub ndots: usize,
    pub timeout_ms: u64,
    pub attempts: usize,
    /// /etc/hosts, or why it was not read.
    pub hosts_file: String,
    pub hosts_entries: usize,
    #[serde(skip)]
    hosts: Vec<(IpAddr, Vec<String>)>,
}

impl ResolverConf {
    pub fn load(host: &Host) -> ResolverConf {
        let mut c = ResolverConf {
            ndots: 1,
            timeout_ms: DEFAULT_TIMEOUT.as_millis() as u64,
            attempts: 2,
            ..Default::default()
        };
        match host.read("/etc/hosts") {
            Ok(text) => {
                c.hosts = parse_hosts(&text);
                c.hosts_entries = c.hosts.len();
                c.hosts_file = "/etc/hosts".into();
            }
            Err(e) => c.hosts_file = format!("/etc/hosts not read: {e}"),
        }
        match host.read("/etc/resolv.conf") {
            Ok(text) => {
                c.apply_resolv_conf(&text);
                c.resolv_conf = "/etc/resolv.conf".into();
            }
            Err(e) => c.resolv_conf = format!("/etc/resolv.conf not read: {e}"),
        }
        c
    }

    fn apply_resolv_conf(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut w = line.split_whitespace();
            match w.next() {
                Some("nameserver") => {
                    // A zone index (fe80::1%eth0) cannot be used without the
                    // interface's index; such a server is skipped.
                    if let Some(ip) = w.next().and_then(|a| a.parse::<IpAddr>().ok()) {
                        if self.nameservers.len() < MAX_NAMESERVERS {
                            self.nameservers.push(ip);
                        }
                    }
                }
                Some("search") | Some("domain") => {
                    self.search = w
                        .map(|d| d.trim_end_matches('.').to_ascii_lowercase())
                        .filter(|d| crate::target::check_name(d).is_ok())
                        .take(6)
                        .collect();
                }
                Some("options") => {
                    for o in w {
                        if let Some(n) = o.strip_prefix("ndots:").and_then(|n| n.parse().ok()) {
                            self.ndots = std::cmp::min(n, 15);
                        } else if let Some(n) = o
                            .strip_prefix("timeout:")
                            .and_then(|n| n.parse::<u64>().ok())
                        {
                            self.timeout_ms = n.clamp(1, 30) * 1000;
                        } else if let Some(n) = o
                            .strip_prefix("attempts:")
                            .and_then(|n| n.parse::<usize>().ok())
                        {
                            self.attempts = n.clamp(1, 5);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn in_hosts(&self, name: &str) -> Vec<IpAddr> {
        let name = name.trim_end_matches('.');
        let mut out = Vec::new();
        for (ip, names) in &self.hosts {
            if names.iter().any(|n| n == name) && !out.contains(ip) {
                out.push(*ip);
            }
        }
        out
    }
}

fn parse_hosts(text: &str) -> Vec<(IpAddr, Vec<String>)> {
    let mut out = Vec::new();
    for line in text.lines().take(10_000) {
        let line = line.split('#').next().unwrap_or("");
        let mut w = line.split_whitespace();
        let Some(ip) = w.next().and_then(|a| a.parse::<IpAddr>().ok()) else {
            continue;
        };
        let names: Vec<String> = w
            .map(|n| n.trim_end_matches('.').to_ascii_lowercase())
            .collect();
        if !names.is_empty() {
            out.push((ip, names));
        }
    }
    out
}

/// How a name was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    Literal,
    Hosts,
    /// RFC 6761: localhost names are loopback even without /etc/hosts.
    Localhost,
    Dns,
    Redirect,
    Proxy,
}

#[derive(Debug, Clone)]
pub struct Resolved {
    pub addrs: Vec<IpAddr>,
    pub via: Via,
    /// The nameserver that answered, for DNS.
    pub server: Option<SocketAddr>,
    /// The name that answered after the search list was applied.
    pub name: String,
}

#[derive(Debug, Clone)]
pub struct DnsError {
    pub message: String,
    /// The failure was the network's (no answer, no route), not the name's.
    pub network: Option<NetError>,
}

impl DnsError {
    fn new(message: impl Into<String>) -> DnsError {
        DnsError {
            message: message.into(),
            network: None,
        }
    }
}

/// Resolves `name` (no IP literals here) within `deadline`.
pub fn resolve(
    conf: &ResolverConf,
    dial: &Dial,
    name: &str,
    deadline: Instant,
) -> Result<Resolved, DnsError> {
    let from_hosts = conf.in_hosts(name);
    if !from_hosts.is_empty() {
        return Ok(Resolved {
            addrs: from_hosts,
            via: Via::Hosts,
            server: None,
            name: name.to_string(),
        });
    }
    let bare = name.trim_end_matches('.');
    if bare == "localhost" || bare.ends_with(".localhost") {
        return Ok(Resolved {
            addrs: vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ],
            via: Via::Localhost,
            server: None,
            name: name.to_string(),
        });
    }
    if conf.nameservers.is_empty() {
        return Err(DnsError::new(format!(
            "'{name}' is not in /etc/hosts and no nameserver is configured ({})",
            conf.resolv_conf
        )));
    }
    let mut last = DnsError::new(format!("'{name}' did not resolve"));
    for candidate in candidates(conf, name) {
        match query_all(conf, dial, &candidate, deadline) {
            Ok(r) => return Ok(r),
            // The name does not exist under this suffix: try the next one.
            Err(e) if e.network.is_none() => last = e,
            // The nameservers did not answer: other suffixes would not either.
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The names to try, in resolv.conf's order (ndots and search).
fn candidates(conf: &ResolverConf, name: &str) -> Vec<String> {
    if let Some(abs) = name.strip_suffix('.') {
        return vec![abs.to_string()];
    }
    let searched: Vec<String> = conf.search.iter().map(|d| format!("{name}.{d}")).collect();
    let dots = name.matches('.').count();
    let mut out = Vec::new();
    if dots >= conf.ndots {
        out.push(name.to_string());
        out.extend(searched);
    } else {
        out.extend(searched);
        out.push(name.to_string());
    }
    out
}

fn query_all(
    conf: &ResolverConf,
    dial: &Dial,
    name: &str,
    deadline: Instant,
) -> Result<Resolved, DnsError> {
    let a = encode_query(query_id(1), name, TYPE_A).map_err(DnsError::new)?;
    let aaaa = encode_query(query_id(2), name, TYPE_AAAA).map_err(DnsError::new)?;
    let per_try = Duration::from_millis(conf.timeout_ms);
    let mut last: Option<DnsError> = None;
    for _ in 0..conf.attempts {
        for ns in &conf.nameservers {
            let now = Instant::now();
            if now >= deadline {
                return Err(last.unwrap_or_else(|| timeout_error(name, None)));
            }
            let server = SocketAddr::new(*ns, 53);
            let try_deadline = std::cmp::min(deadline, now + per_try);
            match exchange(dial, server, &[&a, &aaaa], try_deadline) {
                Ok(answers) => return interpret(name, server, answers),
                Err(e) => last = Some(e),
            }
        }
    }
    Err(last.unwrap_or_else(|| timeout_error(name, None)))
}

fn timeout_error(name: &str, server: Option<SocketAddr>) -> DnsError {
    DnsError {
        message: match server {
            Some(s) => format!("no DNS answer for '{name}' from {s} in time"),
            None => format!("no DNS answer for '{name}' in time"),
        },
        network: Some(NetError::Timeout),
    }
}

fn interpret(name: &str, server: SocketAddr, answers: Vec<Answer>) -> Result<Resolved, DnsError> {
    let mut addrs = Vec::new();
    let mut rcodes = Vec::new();
    for a in answers {
        rcodes.push(a.rcode);
        for ip in a.addrs {
            if !addrs.contains(&ip) && addrs.len() < MAX_ADDRS {
                addrs.push(ip);
            }
        }
    }
    if !addrs.is_empty() {
        // A before AAAA: IPv4 is what most workspaces can route.
        crate::util::sort::sort_by_key(&mut addrs, |a| a.is_ipv6());
        return Ok(Resolved {
            addrs,
            via: Via::Dns,
            server: Some(server),
            name: name.to_string(),
        });
    }
    let what = if rcodes.contains(&3) {
        "does not exist (NXDOMAIN)".to_string()
    } else if rcodes.iter().all(|r| *r == 0) {
        "has no A or AAAA record".to_string()
    } else {
        let worst = rcodes.iter().copied().find(|r| *r != 0).unwrap_or(0);
        format!("could not be resolved ({})", rcode_name(worst))
    };
    Err(DnsError::new(format!(
        "'{name}' {what}, says the nameserver {server}"
    )))
}

fn rcode_name(r: u8) -> String {
    match r {
        1 => "FORMERR".into(),
        2 => "SERVFAIL".into(),
        3 => "NXDOMAIN".into(),
        4 => "NOTIMP".into(),
        5 => "REFUSED".into(),
        n => format!("RCODE {n}"),
    }
}

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;

/// Query ids need not be secret here (we only read addresses, and a forged
/// answer could at worst make a destination look reachable or not), but
/// they should differ between runs and queries.
fn query_id(salt: u16) -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mix = t ^ (std::process::id() << 7) ^ (u32::from(salt) << 3);
    let tid = std::thread::current().id();
    let h = format!("{tid:?}")
        .bytes()
        .fold(mix, |a, b| a.rotate_left(5) ^ u32::from(b));
    ((h >> 16) as u16 ^ h as u16).wrapping_add(salt)
}

pub fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, String> {
    let mut m = Vec::with_capacity(32 + name.len());
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0x01, 0x00]); // RD
    m.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(format!("'{name}' is not a valid DNS name"));
        }
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    Ok(m)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub id: u16,
    pub rcode: u8,
    pub truncated: bool,
    pub addrs: Vec<IpAddr>,
}

/// Parses a DNS response: header, questions skipped, A and AAAA answers.
pub fn decode_answer(m: &[u8]) -> Option<Answer> {
    let u16_at =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*m.get(i)?, *m.get(i + 1)?])) };
    // The header is twelve bytes whatever its counts say: a shorter message
    // with no questions or answers is still not a whole one.
    if m.len() < 12 {
        return None;
    }
    let id = u16_at(0)?;
    let flags = u16_at(2)?;
    if flags & 0x8000 == 0 {
        return None; // not a response
    }
    let qd = u16_at(4)?;
    let an = u16_at(6)?;
    let mut i = 12;
    for _ in 0..qd {
        i = skip_name(m, i)? + 4;
    }
    let mut addrs = Vec::new();
    for _ in 0..an {
        i = skip_name(m, i)?;
        let rtype = u16_at(i)?;
        let class = u16_at(i + 2)?;
        let len = usize::from(u16_at(i + 8)?);
        let data = m.get(i + 10..i + 10 + len)?;
        i += 10 + len;
        if class != 1 {
            continue;
        }
        match (rtype, len) {
            (TYPE_A, 4) => addrs.push(IpAddr::V4(Ipv4Addr::new(
                data[0], data[1], data[2], data[3],
            ))),
            (TYPE_AAAA, 16) => {
                let mut b = [0u8; 16];
                b.copy_from_slice(data);
                addrs.push(IpAddr::V6(Ipv6Addr::from(b)));
            }
            _ => {}
        }
    }
    Some(Answer {
        id,
        rcode: (flags & 0x000f) as u8,
        truncated: flags & 0x0200 != 0,
        addrs,
    })
}

/// Returns the offset after a (possibly compressed) name.
fn skip_name(m: &[u8], mut i: usize) -> Option<usize> {
    for _ in 0..128 {
        let len = *m.get(i)?;
        match len {
            0 => return Some(i + 1),
            l if l & 0xc0 == 0xc0 => {
                m.get(i + 1)?;
                return Some(i + 2);
            }
            l if l & 0xc0 == 0 => i += 1 + usize::from(l),
            _ => return None,
        }
    }
    None
}

/// Sends every query to `server` over UDP and collects one answer each;
/// a truncated answer is asked again over TCP.
fn exchange(
    dial: &Dial,
    server: SocketAddr,
    queries: &[&[u8]],
    deadline: Instant,
) -> Result<Vec<Answer>, DnsError> {
    let net_err = |e: NetError, what: String| DnsError {
        message: format!("DNS to {server}: {what}"),
        network: Some(e),
    };
    let target = dial
        .dns_server(server)
        .map_err(|e| net_err(e.clone(), e.describe()))?;
    let bind: SocketAddr = if target.is_ipv6() {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind).map_err(|e| {
        let ne = NetError::from_io(&e);
        net_err(ne, format!("cannot open a UDP socket: {e}"))
    })?;
    sock.connect(target).map_err(|e| {
        let ne = NetError::from_io(&e);
        net_err(ne.clone(), ne.describe())
    })?;
    for q in queries {
        sock.send(q).map_err(|e| {
            let ne = NetError::from_io(&e);
            net_err(ne.clone(), ne.describe())
        })?;
    }
    let ids: Vec<u16> = queries
        .iter()
        .map(|q| u16::from_be_bytes([q[0], q[1]]))
        .collect();
    let mut got: Vec<Option<Answer>> = vec![None; queries.len()];
    let mut buf = [0u8; 1500];
    // Some resolvers never answer AAAA: once an answer with addresses is
    // in, the other one gets a short grace, not the whole deadline.
    let mut until = deadline;
    while got.iter().any(Option::is_none) {
        let left = until.saturating_duration_since(Instant::now());
        let have_addrs = got.iter().flatten().any(|a| !a.addrs.is_empty());
        if left.is_zero() {
            if have_addrs {
                break;
            }
            return Err(timeout_error(&query_name(queries[0]), Some(server)));
        }
        let _ = sock.set_read_timeout(Some(left));
        match sock.recv(&mut buf) {
            Ok(n) => {
                if let Some(a) = decode_answer(&buf[..n]) {
                    if let Some(k) = ids.iter().position(|id| *id == a.id) {
                        if !a.addrs.is_empty() {
                            until = std::cmp::min(deadline, Instant::now() + AAAA_GRACE);
                        }
                        got[k] = Some(a);
                    }
                }
            }
            Err(e) => {
                let ne = NetError::from_io(&e);
                if ne == NetError::Timeout {
                    if have_addrs {
                        break;
                    }
                    return Err(timeout_error(&query_name(queries[0]), Some(server)));
                }
                return Err(net_err(ne.clone(), ne.describe()));
            }
        }
    }
    let mut out = Vec::new();
    for (k, a) in got.into_iter().enumerate() {
        let a = a.unwrap_or(Answer {
            id: 0,
            rcode: 0,
            truncated: false,
            addrs: Vec::new(),
        });
        if a.truncated {
            out.push(exchange_tcp(dial, server, queries[k], deadline)?);
        } else {
            out.push(a);
        }
    }
    Ok(out)
}

fn exchange_tcp(
    dial: &Dial,
    server: SocketAddr,
    query: &[u8],
    deadline: Instant,
) -> Result<Answer, DnsError> {
    let net_err = |e: NetError| DnsError {
        message: format!("DNS over TCP to {server}: {}", e.describe()),
        network: Some(e),
    };
    let target = dial.dns_server(server).map_err(net_err)?;
    let mut s = dial.connect(target, deadline).map_err(net_err)?;
    let mut msg = (query.len() as u16).to_be_bytes().to_vec();
    msg.extend_from_slice(query);
    let io = |e: std::io::Error| net_err(NetError::from_io(&e));
    s.write_all(&msg).map_err(io)?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(io)?;
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut body).map_err(io)?;
    decode_answer(&body)
        .ok_or_else(|| DnsError::new(format!("{server} sent a malformed DNS answer")))
}

fn query_name(q: &[u8]) -> String {
    let mut out = Vec::new();
    let mut i = 12;
    while let Some(&l) = q.get(i) {
        if l == 0 {
            break;
        }
        if let Some(label) = q.get(i + 1..i + 1 + usize::from(l)) {
            out.push(String::from_utf8_lossy(label).into_owned());
        }
        i += 1 + usize::from(l);
    }
    out.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_and_hosts() {
        let mut c = ResolverConf {
            ndots: 1,
            attempts: 2,
            ..Default::default()
        };
        c.apply_resolv_conf(
            "# comment\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver ::1\nsearch corp.example svc.cluster.local\noptions ndots:5 timeout:2 attempts:3\n",
        );
        assert_eq!(
            c.nameservers,
            vec![
                "10.0.0.2".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        assert_eq!(c.search, vec!["corp.example", "svc.cluster.local"]);
        assert_eq!((c.ndots, c.timeout_ms, c.attempts), (5, 2000, 3));
        assert_eq!(
            candidates(&c, "api.internal"),
            vec![
                "api.internal.corp.example",
                "api.internal.svc.cluster.local",
                "api.internal"
            ]
        );
        assert_eq!(candidates(&c, "x.y."), vec!["x.y"]);
        c.ndots = 1;
        assert_eq!(candidates(&c, "a.b")[0], "a.b");

        c.hosts = parse_hosts(
            "127.0.0.1 localhost\n10.1.2.3 pkgs.internal pkgs # x\n::1 ip6-localhost\nbogus line\n",
        );
        assert_eq!(
            c.in_hosts("PKGS.internal".to_ascii_lowercase().as_str()),
            vec!["10.1.2.3".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(
            c.in_hosts("pkgs."),
            vec!["10.1.2.3".parse::<IpAddr>().unwrap()]
        );
        assert!(c.in_hosts("nothere").is_empty());
    }

    #[test]
    fn wire_format_round_trip() {
        let q = encode_query(0x1234, "example.com", TYPE_A).unwrap();
        assert_eq!(query_name(&q), "example.com");
        assert!(encode_query(1, "a..b", TYPE_A).is_err());
        // A response: the question, a CNAME, then an A record whose name is
        // a compression pointer.
        let mut r = q.clone();
        r[2] = 0x81;
        r[3] = 0x80;
        r[7] = 2; // ancount
        r.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
        r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 215, 14]);
        let a = decode_answer(&r).unwrap();
        assert_eq!(a.id, 0x1234);
        assert_eq!(a.rcode, 0);
        assert_eq!(a.addrs, vec!["93.184.215.14".parse::<IpAddr>().unwrap()]);
        assert!(decode_answer(&q).is_none(), "a query is not an answer");
        assert!(decode_answer(&r[..20]).is_none(), "truncated input");
        // Found by fuzz/run.sh: a response header cut at nine bytes whose
        // counts are zero.
        let cut = [0x39, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff];
        assert!(decode_answer(&cut).is_none(), "a header cut short");
        let mut nx = q.clone();
        nx[2] = 0x81;
        nx[3] = 0x83;
        assert_eq!(decode_answer(&nx).unwrap().rcode, 3);
        let mut bare = nx[..12].to_vec();
        bare[4..6].copy_from_slice(&[0, 0]); // no question
        assert!(decode_answer(&bare).is_some(), "a whole header is enough");
    }
}
