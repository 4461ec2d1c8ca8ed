//! The registry's HTTP side: one request per connection over the HTTP/1
//! codec (src/util/http1.rs) and rustls (src/util/tls.rs), the scheme
//! (HTTPS, or plain HTTP where allowed), and authentication as the
//! distribution spec has it: a request answered 401 is retried once with
//! Basic credentials or a Bearer token from the challenge's realm.
//!
//! Everything is bounded: one deadline for the whole command bounds every
//! name lookup, connect, read and write; every body is read up to a cap
//! for its kind, and a larger one is an error, not a truncated document.
//! Credentials and tokens go only into request headers, never into a
//! message.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rustls::ClientConnection;
use zeroize::Zeroizing;

use super::auth::{self, Challenge, Lookup};
use super::reference::{is_loopback_host, split_host_port, Reference};
use super::Error;
use selfprobe::util::http1::{self, Request, Response, Timed, Version};
use selfprobe::util::sanitize;
use selfprobe::util::tls::{Tls, TlsError};

/// Registries cap manifests at 4 MiB (distribution's default); so do we.
pub const MAX_MANIFEST: usize = 4 << 20;
/// An envelope blob: selfprobe's are tens of KiB; `verify` reads 64 MiB.
pub const MAX_BLOB: usize = 64 << 20;
/// A token answer, an error body.
pub const MAX_SMALL: usize = 64 << 10;
const MAX_REDIRECTS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Https,
    Http,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
        }
    }
}

/// How the registry was reached and who we were to it, for the output.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// `https (trust store: …)` or `http (…)`.
    pub transport: String,
    /// `anonymous`, `basic (credentials from FILE)`, `bearer token from REALM …`.
    pub auth: String,
}

pub struct Client {
    pub reference: Reference,
    scheme: Option<Scheme>,
    /// Plain HTTP allowed: a loopback registry, or --insecure.
    plain_ok: bool,
    insecure: bool,
    tls: Tls,
    creds: Lookup,
    authz: Option<Zeroizing<String>>,
    /// The scope asked of a token service: pull, or pull and push.
    actions: &'static str,
    deadline: Instant,
    resolver: Resolver,
    pub session: Session,
}

/// Resolves a host name (never an IP literal or localhost) to addresses
/// within a deadline.
pub type Resolver = Box<dyn Fn(&str, Instant) -> Result<Vec<IpAddr>, String> + Send + Sync>;

/// A connection, plain or TLS.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<ClientConnection, TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(b),
            Conn::Tls(s) => s.read(b),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(b),
            Conn::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

impl Timed for Conn {
    fn arm(&self, deadline: Instant) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.arm(deadline),
            Conn::Tls(s) => s.arm(deadline),
        }
    }
}

/// Where a request goes: an origin and a request target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// Path and query.
    pub target: String,
}

impl Url {
    pub fn parse(s: &str) -> Option<Url> {
        let (scheme, rest) = if let Some(r) = s.strip_prefix("https://") {
            (Scheme::Https, r)
        } else if let Some(r) = s.strip_prefix("http://") {
            (Scheme::Http, r)
        } else {
            return None;
        };
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(end);
        if authority.contains('@') {
            return None;
        }
        let (host, port) = split_host_port(authority).ok()?;
        let target = match target {
            "" => "/".to_string(),
            t if t.starts_with('?') => format!("/{t}"),
            t => t.to_string(),
        };
        Some(Url {
            scheme,
            port: port.unwrap_or(scheme.default_port()),
            host,
            target,
        })
    }

    fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// For messages: scheme, authority and path, without the query (an
    /// upload's `_state`, a token request's scope).
    pub fn shown(&self) -> String {
        let path = self.target.split('?').next().unwrap_or("/");
        format!("{}://{}{path}", self.scheme.name(), self.authority())
    }
}

impl Client {
    pub fn new(
        reference: Reference,
        insecure: bool,
        tls: Tls,
        creds: Lookup,
        push: bool,
        resolver: Resolver,
        deadline: Instant,
    ) -> Client {
        let plain_ok = insecure || reference.is_loopback();
        Client {
            reference,
            scheme: None,
            plain_ok,
            insecure,
            tls,
            creds,
            authz: None,
            actions: if push { "pull,push" } else { "pull" },
            deadline,
            resolver,
            session: Session {
                auth: "anonymous".into(),
                ..Session::default()
            },
        }
    }

    fn registry(&self) -> &str {
        &self.reference.registry
    }

    fn origin(&self, scheme: Scheme) -> Url {
        Url {
            scheme,
            host: self.reference.host.clone(),
            port: self.reference.port.unwrap_or(scheme.default_port()),
            target: "/".into(),
        }
    }

    fn failed(&self, m: impl std::fmt::Display) -> Error {
        Error::Failed(format!("registry {}: {m}", self.registry()))
    }

    /// Decides the scheme with `GET /v2/` (the spec's version check),
    /// asked without credentials. A registry elsewhere: HTTPS, and with
    /// --insecure plain HTTP after HTTPS failed (the TLS attempt then has 5
    /// s: a plain server may wait for more of a ClientHello). A registry on
    /// this machine: plain HTTP first, as Docker treats 127.0.0.0/8, then
    /// HTTPS (a TLS server answers plain HTTP with 400 at once).
    fn scheme(&mut self) -> Result<Scheme, Error> {
        if let Some(s) = self.scheme {
            return Ok(s);
        }
        let is_registry = |r: &Response| r.status == 200 || r.status == 401;
        let http = self.origin(Scheme::Http);
        let https = self.origin(Scheme::Https);
        let plain_first = self.reference.is_loopback();
        let mut plain_said = None;
        if plain_first {
            match self.send(&http, "GET", "/v2/", &[], None, MAX_SMALL, self.deadline) {
                Ok(r) if is_registry(&r) => return Ok(self.chose(Scheme::Http, None)),
                Ok(r) => plain_said = Some(format!("GET /v2/ answered {} {}", r.status, r.reason)),
                Err(e) => plain_said = Some(e.to_string()),
            }
        }
        let tls_deadline = if self.plain_ok && !plain_first {
            self.deadline.min(Instant::now() + Duration::from_secs(5))
        } else {
            self.deadline
        };
        let tls_err = match self.send(&https, "GET", "/v2/", &[], None, MAX_SMALL, tls_deadline) {
            Ok(r) if is_registry(&r) => return Ok(self.chose(Scheme::Https, None)),
            Ok(r) => format!(
                "GET /v2/ answered {} {}, not a registry's 200 or 401",
                r.status, r.reason
            ),
            Err(e) => e.to_string(),
        };
        if let Some(p) = plain_said {
            return Err(self.failed(format!("over plain HTTP: {p}; over HTTPS: {tls_err}")));
        }
        if !self.plain_ok {
            return Err(self.failed(format!(
                "{tls_err}; plain HTTP is used only for a registry on this machine (127.0.0.0/8, ::1, localhost) or with --insecure"
            )));
        }
        match self.send(&http, "GET", "/v2/", &[], None, MAX_SMALL, self.deadline) {
            Ok(r) if is_registry(&r) => Ok(self.chose(Scheme::Http, Some(tls_err))),
            Ok(r) => Err(self.failed(format!(
                "HTTPS failed ({tls_err}), and over plain HTTP GET /v2/ answered {} {}, not a registry's 200 or 401",
                r.status, r.reason
            ))),
            Err(e) => Err(self.failed(format!(
                "HTTPS failed ({tls_err}), and plain HTTP failed too ({e})"
            ))),
        }
    }

    fn chose(&mut self, s: Scheme, tls_err: Option<String>) -> Scheme {
        self.scheme = Some(s);
        self.session.transport = match s {
            Scheme::Https => format!(
                "https (trust store: {}, {})",
                self.tls.store.kind, self.tls.store.source
            ),
            Scheme::Http if self.reference.is_loopback() => {
                "http (a registry on this machine)".to_string()
            }
            Scheme::Http => format!(
                "http (--insecure; HTTPS failed: {})",
                tls_err.unwrap_or_default()
            ),
        };
        s
    }

    /// A request to the registry, authenticated when it asks. `body` is
    /// sent with `content_type`. Statuses are the caller's to judge, but a
    /// 401 that remains after authenticating is an error here.
    pub fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
        max: usize,
    ) -> Result<Response, Error> {
        let scheme = self.scheme()?;
        let mut url = self.origin(scheme);
        url.target = target.to_string();
        let mut tried_auth = false;
        let mut redirects = 0;
        loop {
            let mut all = headers.to_vec();
            let same_origin =
                url.host == self.reference.host && url.port == self.origin(scheme).port;
            if let (Some(a), true) = (&self.authz, same_origin) {
                all.push(("Authorization".into(), a.to_string()));
            }
            let resp = self
                .send(
                    &url,
                    method,
                    &url.target.clone(),
                    &all,
                    body,
                    max,
                    self.deadline,
                )
                .map_err(|e| self.failed(format!("{method} {}: {e}", url.shown())))?;
            drop(all);
            if resp.status == 401 && same_origin {
                if tried_auth {
                    return Err(self.refused(&resp));
                }
                tried_auth = true;
                self.authenticate(&resp)?;
                continue;
            }
            if matches!(resp.status, 301 | 302 | 303 | 307 | 308)
                && matches!(method, "GET" | "HEAD")
            {
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(self.failed(format!(
                        "{method} {target}: more than {MAX_REDIRECTS} redirects"
                    )));
                }
                let loc = resp.header("location").unwrap_or("").to_string();
                url = self.resolve_location(&url, &loc).ok_or_else(|| {
                    self.failed(format!(
                        "{method} {target}: a redirect to '{}', which is not a URL this client follows",
                        sanitize::short(&loc, 120)
                    ))
                })?;
                continue;
            }
            return Ok(resp);
        }
    }

    /// A Location (absolute, or a path on the same origin) as a URL, if
    /// its scheme is one this registry may use.
    pub fn resolve_location(&self, base: &Url, loc: &str) -> Option<Url> {
        let url = if loc.starts_with('/') {
            Url {
                target: loc.to_string(),
                ..base.clone()
            }
        } else {
            Url::parse(loc)?
        };
        let plain_ok = self.insecure || is_loopback_host(&url.host);
        (url.scheme == Scheme::Https || plain_ok).then_some(url)
    }

    /// Where an upload's Location points, as a request target on this
    /// registry (uploads to another origin are not followed).
    pub fn upload_target(&self, loc: &str) -> Result<String, Error> {
        if loc.starts_with('/') {
            return Ok(loc.to_string());
        }
        let scheme = self.scheme.unwrap_or(Scheme::Https);
        match Url::parse(loc) {
            Some(u) if u.host == self.reference.host && u.port == self.origin(scheme).port => {
                Ok(u.target)
            }
            _ => Err(self.failed(format!(
                "the upload location '{}' is not on the registry itself: uploads elsewhere are not supported",
                sanitize::short(loc.split('?').next().unwrap_or(""), 120)
            ))),
        }
    }

    /// The error for a 401 that stayed after authenticating: names the
    /// registry and where the credentials came from, never what they are.
    fn refused(&self, resp: &Response) -> Error {
        let said = registry_errors(&resp.body);
        match &self.creds.credential {
            Some(c) => self.failed(format!(
                "the registry refused the credentials from {} (401 {}{said}): wrong user name or password, or not allowed here",
                c.source, resp.reason
            )),
            None => self.failed(format!(
                "the registry refused access (401 {}{said}) and no credentials for it were found",
                resp.reason
            )),
        }
    }

    fn no_credentials(&self, challenge: &str) -> Error {
        let searched = if self.creds.searched.is_empty() {
            "no auth file to search (HOME, XDG_RUNTIME_DIR, REGISTRY_AUTH_FILE and DOCKER_CONFIG are unset)".to_string()
        } else {
            self.creds.searched.join("; ")
        };
        self.failed(format!(
            "the registry asks for credentials ({challenge}) and none were found for it: {searched}; log in with `podman login` or `docker login`, or point REGISTRY_AUTH_FILE at an auth.json"
        ))
    }

    /// Answers a 401's challenge: Basic with the credentials, or a Bearer
    /// token from the realm (with the credentials, when there are any).
    fn authenticate(&mut self, resp: &Response) -> Result<(), Error> {
        let value = resp.header("www-authenticate").unwrap_or("");
        let Some(ch) = auth::parse_challenge(value) else {
            return Err(self.failed(format!(
                "401 without a challenge this client understands (WWW-Authenticate: '{}')",
                sanitize::short(value, 120)
            )));
        };
        match ch.scheme.as_str() {
            "basic" => {
                let Some(c) = &self.creds.credential else {
                    return Err(self.no_credentials("Basic"));
                };
                self.authz = Some(c.basic());
                self.session.auth = format!("basic (credentials from {})", c.source);
                Ok(())
            }
            "bearer" => self.bearer(&ch),
            other => Err(self.failed(format!(
                "401 with the challenge scheme '{}': expected Basic or Bearer",
                sanitize::short(other, 40)
            ))),
        }
    }

    fn bearer(&mut self, ch: &Challenge) -> Result<(), Error> {
        let realm = ch.param("realm").unwrap_or("");
        let Some(mut url) = Url::parse(realm) else {
            return Err(self.failed(format!(
                "the Bearer challenge's realm '{}' is not an http(s) URL",
                sanitize::short(realm, 120)
            )));
        };
        let plain_ok = self.insecure || is_loopback_host(&url.host);
        if url.scheme == Scheme::Http && !plain_ok {
            return Err(self.failed(format!(
                "the token service {} is plain HTTP: credentials go only over HTTPS, to a service on this machine, or with --insecure",
                url.shown()
            )));
        }
        let scope = ch.param("scope").map(str::to_string).unwrap_or_else(|| {
            format!("repository:{}:{}", self.reference.repository, self.actions)
        });
        let mut query = Vec::new();
        if let Some(s) = ch.param("service") {
            query.push(format!("service={}", auth::query_escape(s)));
        }
        query.push(format!("scope={}", auth::query_escape(&scope)));
        let sep = if url.target.contains('?') { '&' } else { '?' };
        url.target = format!("{}{sep}{}", url.target, query.join("&"));
        let mut headers = Vec::new();
        if let Some(c) = &self.creds.credential {
            headers.push(("Authorization".to_string(), c.basic().to_string()));
        }
        let resp = self
            .send(
                &url,
                "GET",
                &url.target.clone(),
                &headers,
                None,
                MAX_SMALL,
                self.deadline,
            )
            .map_err(|e| self.failed(format!("the token service {}: {e}", url.shown())))?;
        drop(headers);
        if resp.status != 200 {
            let who = match &self.creds.credential {
                Some(c) => format!("with the credentials from {}", c.source),
                None => "anonymously (no credentials found)".to_string(),
            };
            return Err(self.failed(format!(
                "the token service {} refused a token {who}: {} {}{}",
                url.shown(),
                resp.status,
                resp.reason,
                registry_errors(&resp.body)
            )));
        }
        let Some(token) = auth::token_of(&resp.body) else {
            return Err(self.failed(format!(
                "the token service {} answered without a token (expected JSON with \"token\" or \"access_token\")",
                url.shown()
            )));
        };
        self.authz = Some(Zeroizing::new(format!("Bearer {}", token.as_str())));
        self.session.auth = match &self.creds.credential {
            Some(c) => format!(
                "bearer token from {} (credentials from {})",
                url.shown(),
                c.source
            ),
            None => format!("bearer token from {} (anonymous)", url.shown()),
        };
        Ok(())
    }

    /// One exchange on a new connection. Errors say what failed (name,
    /// connect, TLS, HTTP), and never hold a header.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        url: &Url,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
        max: usize,
        deadline: Instant,
    ) -> Result<Response, SendError> {
        check_request(target, headers)?;
        let tcp = connect(&url.host, url.port, &self.resolver, deadline)?;
        let mut conn = match url.scheme {
            Scheme::Http => Conn::Plain(tcp),
            Scheme::Https => match self.tls.handshake(tcp, &url.host, deadline) {
                Ok((s, _)) => Conn::Tls(Box::new(s)),
                Err((e, presented)) => {
                    let cert = match (&presented.subject, &presented.issuer) {
                        (Some(s), Some(i)) => format!(" (certificate {s}, issued by {i})"),
                        _ => String::new(),
                    };
                    return Err(match e {
                        TlsError::Rejected(why) => SendError::TlsRejected {
                            authority: url.authority(),
                            why,
                            cert,
                            store: format!("{} ({})", self.tls.store.kind, self.tls.store.source),
                        },
                        TlsError::Io(e) => SendError::TlsIo {
                            authority: url.authority(),
                            why: io_text(&e),
                        },
                        TlsError::Setup(m) => SendError::TlsSetup(m),
                    });
                }
            },
        };
        let req = Request {
            method,
            target,
            host: &url.authority(),
            headers,
            version: Version::Http11,
        };
        // One byte past the cap shows a body that is larger than allowed.
        let resp = match body {
            Some(b) => http1::exchange_body(&mut conn, &req, b, max + 1, deadline),
            None => http1::exchange(&mut conn, &req, max + 1, deadline),
        }
        .map_err(|e| match http1::head_error(&e) {
            Some(h) => SendError::NotHttp(h),
            None => SendError::Io(io_text(&e)),
        })?;
        if resp.body.len() > max {
            return Err(SendError::TooLarge {
                method: method.to_string(),
                url: url.shown(),
                max,
            });
        }
        Ok(resp)
    }

    /// The digest and scheme actually used, for messages.
    pub fn base_url(&self) -> String {
        let s = self.scheme.unwrap_or(Scheme::Https);
        let o = self.origin(s);
        format!("{}://{}", s.name(), o.authority())
    }
}

/// A request target (from a Location, a Link, a realm, a digest) holds
/// only visible ASCII, and a header value no line break, or the request is
/// not sent: a CR LF there would add a header or a request of the
/// registry's choosing.
pub fn check_request(target: &str, headers: &[(String, String)]) -> Result<(), NotSent> {
    if let Some(byte) = target.bytes().find(|b| !(0x21..=0x7e).contains(b)) {
        return Err(NotSent::TargetByte {
            target: sanitize::escape(&target.chars().take(120).collect::<String>()),
            byte,
        });
    }
    if target.is_empty() {
        return Err(NotSent::EmptyTarget);
    }
    for (k, v) in headers {
        if k.bytes()
            .chain(v.bytes())
            .any(|b| matches!(b, b'\r' | b'\n' | 0))
        {
            return Err(NotSent::HeaderBreak(sanitize::escape(
                &k.chars().take(60).collect::<String>(),
            )));
        }
    }
    Ok(())
}

/// A request that was not sent: what in it a registry's answer put there.
/// Names and targets are escaped and cut for a terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSent {
    #[error("the request target '{target}' holds the byte 0x{byte:02x}, which a request line may not carry: not sent")]
    TargetByte { target: String, byte: u8 },
    #[error("an empty request target: not sent")]
    EmptyTarget,
    #[error("the header {0} holds a line break: not sent")]
    HeaderBreak(String),
}

/// Why one exchange failed: the request, the name or connection, TLS, or
/// the HTTP answer. Never holds a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    NotSent(#[from] NotSent),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The server's certificate was not trusted: `store` is the trust
    /// store's kind and where it came from.
    #[error("TLS with {authority} failed: {why}{cert}; trusted roots: {store}; SSL_CERT_FILE names a CA bundle to trust instead")]
    TlsRejected {
        authority: String,
        why: String,
        /// " (certificate …, issued by …)" when the server showed one.
        cert: String,
        store: String,
    },
    #[error("TLS with {authority} failed: {why}")]
    TlsIo { authority: String, why: String },
    #[error("TLS set-up: {0}")]
    TlsSetup(String),
    #[error("not an HTTP answer: {0}")]
    NotHttp(http1::HeadError),
    /// The connection failed mid-exchange (io_text's words).
    #[error("{0}")]
    Io(String),
    #[error(
        "{method} {url}: the answer is larger than {max} bytes, more than such a document may be"
    )]
    TooLarge {
        method: String,
        url: String,
        max: usize,
    },
}

/// Why no connection was made to a registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    #[error("the name {host} does not resolve: {why}")]
    Unresolved { host: String, why: String },
    #[error("the name {0} has no address")]
    NoAddress(String),
    /// No address was tried at all.
    #[error("no address")]
    NoneTried,
    #[error("{0}: no connection before the deadline (--timeout)")]
    Deadline(SocketAddr),
    /// The last address tried, and io_text's words.
    #[error("{addr}: {why}")]
    Refused { addr: SocketAddr, why: String },
}

fn io_text(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            "no answer before the deadline (--timeout)".into()
        }
        io::ErrorKind::ConnectionRefused => "connection refused".into(),
        io::ErrorKind::UnexpectedEof => "the connection closed before the answer ended".into(),
        _ => e.to_string(),
    }
}

/// The registry's own words from an error body (`{"errors":[{"code":…,
/// "message":…}]}`), cut and made safe to print; empty when there are none.
pub fn registry_errors(body: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return String::new();
    };
    let said: Vec<String> = v
        .get("errors")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .take(3)
        .map(|e| {
            let code = e.get("code").and_then(|c| c.as_str()).unwrap_or("");
            let msg = e.get("message").and_then(|c| c.as_str()).unwrap_or("");
            sanitize::short(&format!("{code}: {msg}"), 160)
        })
        .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!(", {}", said.join("; "))
    }
}

/// The addresses of `host`: an IP literal, localhost as loopback (RFC
/// 6761), else what `resolver` says (selfprobe's own resolver, handed in by
/// main: a static binary has no NSS, and the C library's getaddrinfo would
/// bring NSS's code into the binary for nothing).
fn addrs(
    host: &str,
    port: u16,
    resolver: &Resolver,
    deadline: Instant,
) -> Result<Vec<SocketAddr>, ConnectError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let bare = host.trim_end_matches('.');
    if bare.eq_ignore_ascii_case("localhost") || bare.to_ascii_lowercase().ends_with(".localhost") {
        return Ok(vec![
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
        ]);
    }
    let ips = resolver(host, deadline).map_err(|why| ConnectError::Unresolved {
        host: host.to_string(),
        why,
    })?;
    if ips.is_empty() {
        return Err(ConnectError::NoAddress(host.to_string()));
    }
    Ok(ips
        .into_iter()
        .take(8)
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

fn connect(
    host: &str,
    port: u16,
    resolver: &Resolver,
    deadline: Instant,
) -> Result<TcpStream, ConnectError> {
    let mut last = ConnectError::NoneTried;
    for a in addrs(host, port, resolver, deadline)? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ConnectError::Deadline(a));
        }
        match TcpStream::connect_timeout(&a, left.min(Duration::from_secs(10))) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => {
                last = ConnectError::Refused {
                    addr: a,
                    why: io_text(&e),
                }
            }
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_show_no_query() {
        let u = Url::parse("https://auth.example.com/token?x=1").unwrap();
        assert_eq!(
            (u.scheme, u.host.as_str(), u.port, u.target.as_str()),
            (Scheme::Https, "auth.example.com", 443, "/token?x=1")
        );
        assert_eq!(u.shown(), "https://auth.example.com/token");
        let u = Url::parse("http://[::1]:5000/v2/a/blobs/uploads/x?_state=s").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 5000));
        assert_eq!(u.shown(), "http://[::1]:5000/v2/a/blobs/uploads/x");
        assert!(Url::parse("ftp://x/").is_none());
        assert!(Url::parse("https://user:pw@x/").is_none(), "no userinfo");
        assert_eq!(Url::parse("http://h").unwrap().target, "/");
    }

    #[test]
    fn request_lines_carry_no_break_or_space() {
        assert_eq!(check_request("/v2/app/manifests/sha256:ab", &[]), Ok(()));
        for t in ["/v2/a\r\nX: 1", "/v2/a b", "/v2/\u{1b}", "/v2/\u{202e}", ""] {
            let e = check_request(t, &[]).unwrap_err().to_string();
            assert!(e.contains("not sent"), "{e}");
            assert!(!e.chars().any(sanitize::is_hazard), "{e:?}");
        }
        let h = vec![("Authorization".to_string(), "Bearer a\r\nX: 1".to_string())];
        assert!(check_request("/v2/", &h)
            .unwrap_err()
            .to_string()
            .contains("line break"));
    }

    #[test]
    fn registry_error_bodies_are_cut_and_safe() {
        let b = br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required\u001b[31m"}]}"#;
        let s = registry_errors(b);
        assert!(
            s.starts_with(", UNAUTHORIZED: authentication required"),
            "{s}"
        );
        assert!(!s.contains('\x1b'), "{s:?}");
        assert_eq!(registry_errors(b"<html>"), "");
    }
}
