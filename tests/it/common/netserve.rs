//! Loopback servers for the network tests (the README's Set-up: tests send only to
//! loopback or to namespaces they create): HTTP, TLS, silent and counting TCP
//! listeners, a DNS server, and private network namespaces. Every server
//! stops when dropped. The proxies are real ones (squid, tinyproxy:
//! tests/it/common/proxies.rs).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One request a server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Vec<u8> + Send + Sync>;

#[derive(Clone)]
enum Mode {
    /// Answers each request with the handler's bytes.
    Http(Handler),
    /// TLS, then HTTP.
    Tls(Arc<rustls::ServerConfig>, Handler),
    /// Accepts and never says anything.
    Silent,
    /// Accepts and closes at once.
    Close,
    /// Reads the request, then closes without an answer (a clean FIN: a
    /// proxy in front sees end of file, never a reset).
    Hangup,
}

pub struct Server {
    pub port: u16,
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Seen>>>,
    conns: Arc<AtomicUsize>,
    handle: Option<JoinHandle<()>>,
}

pub fn loopback() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0")
}

impl Server {
    pub fn http(handler: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static) -> Server {
        Server::start(loopback(), Mode::Http(Arc::new(handler)))
    }

    pub fn http_on(
        l: TcpListener,
        handler: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static,
    ) -> Server {
        Server::start(l, Mode::Http(Arc::new(handler)))
    }

    pub fn tls_on(
        l: TcpListener,
        config: Arc<rustls::ServerConfig>,
        handler: impl Fn(&Seen) -> Vec<u8> + Send + Sync + 'static,
    ) -> Server {
        Server::start(l, Mode::Tls(config, Arc::new(handler)))
    }

    pub fn silent() -> Server {
        Server::start(loopback(), Mode::Silent)
    }

    pub fn closing() -> Server {
        Server::start(loopback(), Mode::Close)
    }

    pub fn hangup() -> Server {
        Server::start(loopback(), Mode::Hangup)
    }

    fn start(l: TcpListener, mode: Mode) -> Server {
        let addr = l.local_addr().expect("local_addr");
        l.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::new(AtomicUsize::new(0));
        let (s2, l2, c2) = (stop.clone(), log.clone(), conns.clone());
        let handle = std::thread::spawn(move || {
            let mut open: Vec<TcpStream> = Vec::new();
            while !s2.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((c, _)) => {
                        c2.fetch_add(1, Ordering::SeqCst);
                        let _ = c.set_nonblocking(false);
                        match mode.clone() {
                            Mode::Silent => open.push(c),
                            Mode::Close => drop(c),
                            Mode::Hangup => {
                                let log = l2.clone();
                                std::thread::spawn(move || {
                                    let mut c = c;
                                    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                                    if let Some(seen) = read_request(&mut c) {
                                        log.lock().unwrap().push(seen);
                                    }
                                });
                            }
                            Mode::Http(h) => {
                                let log = l2.clone();
                                std::thread::spawn(move || serve_http(c, &h, &log));
                            }
                            Mode::Tls(cfg, h) => {
                                let log = l2.clone();
                                std::thread::spawn(move || serve_tls(c, cfg, &h, &log));
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Server {
            port: addr.port(),
            addr,
            stop,
            log,
            conns,
            handle: Some(handle),
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    pub fn connections(&self) -> usize {
        self.conns.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn read_request<S: Read>(s: &mut S) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut b).ok()?;
        if n == 0 || buf.len() > 64 * 1024 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Seen {
        method,
        target,
        headers,
    })
}

fn serve_http(mut c: TcpStream, h: &Handler, log: &Mutex<Vec<Seen>>) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    if let Some(seen) = read_request(&mut c) {
        log.lock().unwrap().push(seen.clone());
        let _ = c.write_all(&h(&seen));
    }
}

fn serve_tls(c: TcpStream, cfg: Arc<rustls::ServerConfig>, h: &Handler, log: &Mutex<Vec<Seen>>) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    let Ok(conn) = rustls::ServerConnection::new(cfg) else {
        return;
    };
    let mut s = rustls::StreamOwned::new(conn, c);
    if let Some(seen) = read_request(&mut s) {
        log.lock().unwrap().push(seen.clone());
        let _ = s.write_all(&h(&seen));
        s.conn.send_close_notify();
        let _ = s.flush();
    }
}

/// An HTTP/1.1 answer with Content-Length.
pub fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut s = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.push_str(body);
    s.into_bytes()
}

/// A certificate and its key, PEM and DER.
pub struct Cert {
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    pub key_der: Vec<u8>,
}

/// A self-signed certificate for `names` with common name `cn`.
pub fn self_signed(cn: &str, names: &[&str]) -> Cert {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut p =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, "selfprobe tests");
    let c = p.self_signed(&key).expect("self-sign");
    Cert {
        cert_pem: c.pem(),
        cert_der: c.der().to_vec(),
        key_der: key.serialize_der(),
    }
}

/// A CA and a leaf for `names` that it signed: (ca, leaf).
pub fn ca_and_leaf(ca_cn: &str, names: &[&str]) -> (Cert, Cert) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut cp = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    cp.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    cp.distinguished_name = rcgen::DistinguishedName::new();
    cp.distinguished_name.push(rcgen::DnType::CommonName, ca_cn);
    let ca = cp.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::new(cp, ca_key);
    let leaf_key = rcgen::KeyPair::generate().expect("key");
    let mut lp =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    lp.distinguished_name = rcgen::DistinguishedName::new();
    lp.distinguished_name
        .push(rcgen::DnType::CommonName, names[0]);
    let leaf = lp.signed_by(&leaf_key, &issuer).expect("leaf");
    (
        Cert {
            cert_pem: ca.pem(),
            cert_der: ca.der().to_vec(),
            key_der: Vec::new(),
        },
        Cert {
            cert_pem: leaf.pem(),
            cert_der: leaf.der().to_vec(),
            key_der: leaf_key.serialize_der(),
        },
    )
}

pub fn tls_config(c: &Cert) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(c.cert_der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.key_der.clone())),
        )
        .expect("server config");
    Arc::new(cfg)
}

/// A DNS server on loopback: A records for `names`, NOERROR without
/// records for their AAAA, NXDOMAIN for anything else.
pub struct Dns {
    pub port: u16,
    stop: Arc<AtomicBool>,
    queries: Arc<Mutex<Vec<String>>>,
    handle: Option<JoinHandle<()>>,
}

impl Dns {
    pub fn start(names: &[(&str, Ipv4Addr)]) -> Dns {
        Dns::start_with(names, true)
    }

    /// With `answer_aaaa` false, AAAA queries are never answered, as some
    /// broken resolvers do.
    pub fn start_with(names: &[(&str, Ipv4Addr)], answer_aaaa: bool) -> Dns {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
        let port = sock.local_addr().unwrap().port();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let names: Vec<(String, Ipv4Addr)> =
            names.iter().map(|(n, a)| (n.to_string(), *a)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let queries = Arc::new(Mutex::new(Vec::new()));
        let (s2, q2) = (stop.clone(), queries.clone());
        let handle = std::thread::spawn(move || {
            let mut b = [0u8; 512];
            while !s2.load(Ordering::SeqCst) {
                let Ok((n, from)) = sock.recv_from(&mut b) else {
                    continue;
                };
                let q = &b[..n];
                let (name, end) = qname(q);
                let qtype = u16::from_be_bytes([q[end], q[end + 1]]);
                q2.lock().unwrap().push(format!("{name}/{qtype}"));
                if qtype == 28 && !answer_aaaa {
                    continue;
                }
                let known = names.iter().find(|(k, _)| *k == name);
                let mut r = q[..end + 4].to_vec();
                r[2] = 0x81;
                r[3] = if known.is_some() { 0x80 } else { 0x83 };
                r[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 0]);
                if let (Some((_, ip)), 1) = (known, qtype) {
                    r[7] = 1;
                    r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4]);
                    r.extend_from_slice(&ip.octets());
                }
                let _ = sock.send_to(&r, from);
            }
        });
        Dns {
            port,
            stop,
            queries,
            handle: Some(handle),
        }
    }

    pub fn queries(&self) -> Vec<String> {
        self.queries.lock().unwrap().clone()
    }
}

fn qname(q: &[u8]) -> (String, usize) {
    let mut i = 12;
    let mut labels = Vec::new();
    while q[i] != 0 {
        let l = q[i] as usize;
        labels.push(String::from_utf8_lossy(&q[i + 1..i + 1 + l]).to_ascii_lowercase());
        i += 1 + l;
    }
    (labels.join("."), i + 1)
}

impl Drop for Dns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A network namespace of the test's own: `unshare -n sleep`, its loopback
/// up and nothing else in it. Removed (the holder killed) on drop.
pub struct NetNs {
    child: Child,
    pub path: String,
}

/// Why namespaces cannot be made here, if they cannot.
pub fn netns_missing() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: network namespaces and iptables need it".into());
    }
    for tool in ["unshare", "nsenter", "ip", "iptables"] {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
            .unwrap_or(false);
        if !found {
            return Some(format!(
                "{tool} not found (apt-get install -y iproute2 iptables util-linux)"
            ));
        }
    }
    None
}

impl NetNs {
    pub fn new() -> NetNs {
        let child = Command::new("unshare")
            .args(["-n", "sleep", "600"])
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn unshare -n sleep");
        let path = format!("/proc/{}/ns/net", child.id());
        let ns = NetNs { child, path };
        let ours = std::fs::read_link("/proc/self/ns/net").expect("own netns");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if std::fs::read_link(&ns.path).is_ok_and(|l| l != ours) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "unshare -n did not make a namespace"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        ns.exec(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    /// Runs a command inside the namespace; it must succeed.
    pub fn exec(&self, cmd: &[&str]) {
        let out = self.command(cmd).output().expect("nsenter");
        assert!(
            out.status.success(),
            "{cmd:?} in the namespace failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `nsenter --net=NS cmd…`, to be run by the caller.
    pub fn command(&self, cmd: &[&str]) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={}", self.path)).args(cmd);
        c
    }

    /// Binds a TCP listener inside the namespace: a thread enters it,
    /// binds, and hands the socket back (a socket stays in the namespace it
    /// was made in).
    pub fn listen(&self, addr: &str) -> TcpListener {
        let path = self.path.clone();
        let addr = addr.to_string();
        std::thread::spawn(move || {
            let f = std::fs::File::open(Path::new(&path)).expect("open netns");
            nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            TcpListener::bind(&addr).expect("bind in the namespace")
        })
        .join()
        .expect("listener thread")
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
