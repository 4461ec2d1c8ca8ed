//! Phase 3, network: the policy's `[network]` section as a task contract.
//! Every allow entry must be reachable, every deny entry and every built-in
//! destination (probes/destinations.toml, only when asked) must be blocked.
//! All destinations are tried at once, each on its own thread with its own
//! deadline, so the phase lasts about as long as the slowest single timeout.
//! Without a policy entry and without `--network-defaults` nothing is sent.
//!
//! `collect` gathers facts (one [`DestResult`] per destination);
//! `evaluate` turns them into findings and is pure.

pub mod builtin;
pub mod dial;
pub mod proxy;
pub mod resolve;

use crate::finding::Code;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::util::text::Text;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::finding::{Finding, Severity};
use crate::host::Host;
use crate::policy::Policy;

use crate::target::{self, HostName, Scheme, Target};
use crate::util::http1::{self, Request, Response, Timed, Version};
use crate::util::panics;
use crate::util::tls::{Presented, Tls, TlsError, TrustStore};
use builtin::Kind;
use dial::{Dial, NetError};
use proxy::{Answer, ProxyEnv, ProxyInfo, ProxySaid, ProxyUrl};
use resolve::{ResolverConf, Via};

/// The timeout of a destination when neither it nor `[network] timeout` sets one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);
/// The runner waits this much longer than the slowest destination.
const MARGIN: Duration = Duration::from_millis(700);
const THREAD_STACK: usize = 512 * 1024;

/// What the command line adds to the policy's `[network]` section.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--network-defaults`.
    pub defaults_flag: bool,
    /// Test hooks: `--net-redirect` and `--net-loopback-only`.
    pub dial: Dial,
}

/// Whether anything asks for network probes. When nothing does, no
/// connection is attempted at all.
pub fn asked(policy: &Policy, opts: &Options) -> bool {
    opts.defaults_flag
        || policy.network.defaults
        || !policy.network.allow.is_empty()
        || !policy.network.deny.is_empty()
}

fn defaults_wanted(policy: &Policy, opts: &Options) -> bool {
    opts.defaults_flag || policy.network.defaults
}

/// How long the runner gives the network probe: the slowest destination's
/// timeout and a margin.
pub fn budget(policy: &Policy, opts: &Options) -> Duration {
    let global = policy.network.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let longest = policy
        .network
        .allow
        .iter()
        .chain(&policy.network.deny)
        .map(|r| r.timeout.unwrap_or(global))
        .chain(defaults_wanted(policy, opts).then_some(global))
        .max()
        .unwrap_or(global);
    longest + MARGIN
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetOutcome {
    /// Connected (tcp), got an HTTP answer (http, https), or resolved (dns).
    Reachable,
    Refused,
    Timeout,
    /// No route to the address.
    Unreachable,
    /// This host refused to send (EPERM/EACCES: a local firewall rule).
    Blocked,
    DnsFailure,
    TlsFailure,
    /// The proxy refused to forward it (403, squid's ERR_ACCESS_DENIED,
    /// tinyproxy's "Filtered" or "Access violation").
    ProxyDenied,
    /// The proxy asks for credentials (407) before it forwards anything.
    ProxyAuthRequired,
    /// The proxy tried to forward it and the destination failed (502, 503,
    /// 504, squid's ERR_CONNECT_FAIL or ERR_ZERO_SIZE_OBJECT, tinyproxy's
    /// "Unable to connect"): the proxy forwards there.
    ProxyUpstreamFailure,
    /// The proxy took the request and closed the connection or stayed
    /// silent: neither a refusal nor a forward is shown.
    ProxyNoAnswer,
    /// The proxy's own answer says neither that it refuses nor that the
    /// destination failed (a 501 to CONNECT, an answer that is not HTTP).
    ProxyError,
    /// Stopped by the `--net-loopback-only` test guard.
    NotAttempted,
    Error,
}

impl NetOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            NetOutcome::Reachable => "reachable",
            NetOutcome::Refused => "refused",
            NetOutcome::Timeout => "timeout",
            NetOutcome::Unreachable => "unreachable",
            NetOutcome::Blocked => "blocked",
            NetOutcome::DnsFailure => "dns-failure",
            NetOutcome::TlsFailure => "tls-failure",
            NetOutcome::ProxyDenied => "proxy-denied",
            NetOutcome::ProxyAuthRequired => "proxy-auth-required",
            NetOutcome::ProxyUpstreamFailure => "proxy-upstream-failure",
            NetOutcome::ProxyNoAnswer => "proxy-no-answer",
            NetOutcome::ProxyError => "proxy-error",
            NetOutcome::NotAttempted => "not-attempted",
            NetOutcome::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum List {
    Allow,
    Deny,
}

/// Whether the destination's result keeps the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Holds,
    Violated,
    /// It could not be checked; never a pass.
    Unknown,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    pub request: String,
    pub status: Option<u16>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSeen {
    /// The chain verified against the trust store.
    pub verified: bool,
    /// system or embedded.
    pub trust_store: Text,
    pub subject: Option<String>,
    pub issuer: Option<String>,
    pub chain_length: usize,
    pub error: Option<String>,
}

/// One destination tried: what was asked, by which rule, and what happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DestResult {
    pub destination: String,
    pub list: List,
    /// The rule it came from: `policy FILE:LINE` or `built-in NAME (…)`.
    pub rule: String,
    pub kind: Kind,
    pub name: Option<String>,
    pub provider: Option<String>,
    pub method: Scheme,
    pub outcome: NetOutcome,
    /// Where it stopped: dns, connect, proxy, tls, http.
    pub stage: Option<Text>,
    pub contract: Verdict,
    /// A connection to the destination (or a proxy tunnel to it) completed.
    pub connected: bool,
    pub latency_ms: f64,
    pub timeout_ms: u64,
    pub resolved_via: Option<Via>,
    pub resolved: Vec<String>,
    /// The address connected to (or last tried).
    pub address: Option<String>,
    pub proxy: Option<String>,
    /// Whether Proxy-Authorization was sent (credentials from the proxy
    /// variable's URL); never what it held.
    pub proxy_credentials_sent: Option<bool>,
    /// The proxy's own answer, when it gave one (a refusal, an upstream
    /// failure, a request for credentials).
    pub proxy_answer: Option<ProxySaid>,
    pub http_status: Option<u16>,
    /// metadata: the provider's request got a 2xx; engine: /_ping said OK;
    /// browser-debug: /json/version answered as DevTools.
    pub answered: Option<bool>,
    pub steps: Vec<Step>,
    pub tls: Option<TlsSeen>,
    /// What the service said about itself (engine or DevTools version), sanitized.
    pub service: BTreeMap<String, String>,
    pub error: Option<String>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Skipped {
    pub name: String,
    pub reason: String,
}

/// Everything the network probe found, for the report's inventory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NetFacts {
    /// At least one destination was tried.
    pub assessed: bool,
    /// What asked for the probes.
    pub asked_by: Vec<String>,
    /// Why nothing was tried, when nothing was.
    pub reason: Option<String>,
    /// Every destination tried, in policy order, then the built-ins.
    pub destinations: Vec<DestResult>,
    /// Built-in destinations that do not apply here, and why.
    pub skipped: Vec<Skipped>,
    pub resolver: Option<ResolverConf>,
    /// The trust store of https:// destinations (only when one was tried).
    pub trust_store: Option<TrustStore>,
    pub proxy: ProxyInfo,
    /// Test hooks in force; empty in real use.
    pub redirects: Vec<String>,
    pub loopback_only: bool,
    /// Wall time of the whole network phase.
    pub duration_ms: f64,
}

/// The facts when nothing asked for network probes: no connection at all.
pub fn not_asked(host: &Host, policy: &Policy) -> NetFacts {
    let reason = if policy.source.is_none() {
        "no policy and no --network-defaults: no destination was tried"
    } else {
        "the policy has no [network] allow or deny entries, defaults = false, and --network-defaults was not given: no destination was tried"
    };
    NetFacts {
        reason: Some(reason.into()),
        proxy: ProxyEnv::from_env(host).info,
        ..Default::default()
    }
}

/// The resolver configuration (/etc/resolv.conf, /etc/hosts) without a
/// destination to try: two files read, nothing sent. It is the workspace's
/// DNS, which `selfprobe-host diff` compares, so it is reported either way.
pub fn resolver(host: &Host) -> ResolverConf {
    ResolverConf::load(host)
}

#[derive(Debug, Clone)]
struct TokenStep {
    method: String,
    target: Target,
    headers: Vec<(String, String)>,
    header: String,
}

#[derive(Debug, Clone)]
struct Planned {
    list: List,
    rule: String,
    kind: Kind,
    name: Option<String>,
    provider: Option<String>,
    target: Target,
    method: String,
    headers: Vec<(String, String)>,
    token: Option<TokenStep>,
    timeout: Duration,
    /// How much of the answer's body to read (0: none).
    body: usize,
}

fn plan(host: &Host, policy: &Policy, opts: &Options) -> (Vec<Planned>, Vec<Skipped>, Vec<String>) {
    let global = policy.network.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let file = policy
        .source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "policy".into());
    let mut out = Vec::new();
    let mut asked_by = Vec::new();
    for (list, rules) in [
        (List::Allow, &policy.network.allow),
        (List::Deny, &policy.network.deny),
    ] {
        if !rules.is_empty() {
            asked_by.push(format!(
                "policy network.{}",
                if list == List::Allow { "allow" } else { "deny" }
            ));
        }
        for r in rules {
            out.push(Planned {
                list,
                rule: format!("policy {file}:{}:{}", r.line, r.column),
                kind: Kind::Policy,
                name: None,
                provider: None,
                target: r.target.clone(),
                method: "GET".into(),
                headers: Vec::new(),
                token: None,
                timeout: r.timeout.unwrap_or(global),
                body: 0,
            });
        }
    }
    let mut skipped = Vec::new();
    if defaults_wanted(policy, opts) {
        let why = if opts.defaults_flag {
            "--network-defaults"
        } else {
            "defaults = true"
        };
        asked_by.push(why.to_string());
        let gw = std::cell::OnceCell::new();
        let gateway = || *gw.get_or_init(|| builtin::default_gateway(host));
        let var = |n: &str| host.env().get(n).map(str::to_string);
        for b in builtin::builtins() {
            let target = match builtin::destination(&b.url, &var, &gateway) {
                Ok(t) => t,
                Err(e) => {
                    skipped.push(Skipped {
                        name: b.name.clone(),
                        reason: e.to_string(),
                    });
                    continue;
                }
            };
            let token = match &b.token {
                None => None,
                Some(t) => match builtin::destination(&t.url, &var, &gateway) {
                    Ok(tt) => Some(TokenStep {
                        method: t.method.clone(),
                        target: tt,
                        headers: t
                            .headers
                            .iter()
                            .filter_map(|h| builtin::header(h))
                            .collect(),
                        header: t.header.clone(),
                    }),
                    Err(e) => {
                        skipped.push(Skipped {
                            name: b.name.clone(),
                            reason: e.to_string(),
                        });
                        continue;
                    }
                },
            };
            out.push(Planned {
                list: List::Deny,
                rule: format!("built-in {} ({why})", b.name),
                kind: b.kind,
                name: Some(b.name.clone()),
                provider: b.provider.clone(),
                target,
                method: b.method.clone().unwrap_or_else(|| "GET".into()),
                headers: b
                    .headers
                    .iter()
                    .filter_map(|h| builtin::header(h))
                    .collect(),
                token,
                timeout: global,
                body: match b.kind {
                    Kind::BrowserDebug => 16 * 1024,
                    Kind::Engine => 64,
                    _ => 0,
                },
            });
        }
    }
    (out, skipped, asked_by)
}

struct Shared {
    resolver: ResolverConf,
    dial: Dial,
    proxy: ProxyEnv,
    tls: Option<Tls>,
}

/// Tries every destination the policy and the options ask for, at once.
/// `deadline` bounds the whole phase; each destination also has its own.
pub fn collect(host: &Host, policy: &Policy, opts: &Options, deadline: Instant) -> NetFacts {
    let started = Instant::now();
    let (planned, skipped, asked_by) = plan(host, policy, opts);
    let needs_tls = planned.iter().any(|p| p.target.scheme == Scheme::Https);
    let shared = Arc::new(Shared {
        resolver: ResolverConf::load(host),
        dial: opts.dial.clone(),
        proxy: ProxyEnv::from_env(host),
        tls: needs_tls.then(|| Tls::load(host)),
    });

    let (tx, rx) = mpsc::channel::<(usize, DestResult)>();
    let mut results: Vec<Option<DestResult>> = vec![None; planned.len()];
    for (i, p) in planned.iter().enumerate() {
        let own = std::cmp::min(deadline, Instant::now() + p.timeout);
        let (p2, sh, tx) = (p.clone(), shared.clone(), tx.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("net-{i}"))
            .stack_size(THREAD_STACK)
            .spawn(move || {
                // A panic sends this destination's failure instead
                // (src/util/panics.rs).
                let (on_panic, planned) = (tx.clone(), p2.clone());
                let r = panics::guard(
                    move |_| {
                        let r = failed(
                            &planned,
                            NetOutcome::Error,
                            "probe",
                            "internal error while probing it".into(),
                        );
                        let _ = on_panic.send((i, r));
                    },
                    || {
                        panics::planted(format_args!("net:{i}"));
                        probe_one(&p2, &sh, own)
                    },
                );
                let _ = tx.send((i, r));
            });
        if let Err(e) = spawned {
            results[i] = Some(failed(
                p,
                NetOutcome::Error,
                "probe",
                format!("cannot start a thread: {e}"),
            ));
        }
    }
    drop(tx);
    // Each destination stops itself at its deadline; this only guards
    // against one that does not.
    let hard = deadline + Duration::from_millis(100);
    while results.iter().any(Option::is_none) {
        let left = hard.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, r)) => results[i] = Some(r),
            Err(_) => break,
        }
    }
    let destinations: Vec<DestResult> = results
        .into_iter()
        .zip(&planned)
        .map(|(r, p)| {
            r.unwrap_or_else(|| {
                let mut r = failed(
                    p,
                    NetOutcome::Timeout,
                    "probe",
                    "it did not finish before the network probe's deadline".into(),
                );
                r.latency_ms = ms(started.elapsed());
                r
            })
        })
        .collect();
    NetFacts {
        assessed: !destinations.is_empty(),
        asked_by,
        reason: destinations
            .is_empty()
            .then(|| "every destination asked for was skipped".to_string()),
        destinations,
        skipped,
        resolver: Some(shared.resolver.clone()),
        trust_store: shared.tls.as_ref().map(|t| t.store.clone()),
        proxy: shared.proxy.info.clone(),
        redirects: opts
            .dial
            .redirects
            .iter()
            .map(|r| format!("{}={}", tcp_authority(&r.host, r.port), r.to))
            .collect(),
        loopback_only: opts.dial.loopback_only,
        duration_ms: ms(started.elapsed()),
    }
}

fn tcp_authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

fn new_result(p: &Planned) -> DestResult {
    DestResult {
        destination: p.target.to_string(),
        list: p.list,
        rule: p.rule.clone(),
        kind: p.kind,
        name: p.name.clone(),
        provider: p.provider.clone(),
        method: p.target.scheme,
        outcome: NetOutcome::Error,
        stage: None,
        contract: Verdict::Unknown,
        connected: false,
        latency_ms: 0.0,
        timeout_ms: p.timeout.as_millis() as u64,
        resolved_via: None,
        resolved: Vec::new(),
        address: None,
        proxy: None,
        proxy_credentials_sent: None,
        proxy_answer: None,
        http_status: None,
        answered: None,
        steps: Vec::new(),
        tls: None,
        service: BTreeMap::new(),
        error: None,
    }
}

fn failed(p: &Planned, outcome: NetOutcome, stage: &'static str, why: String) -> DestResult {
    let mut r = new_result(p);
    r.outcome = outcome;
    r.stage = Some(stage.into());
    r.error = Some(why);
    r.contract = verdict(&r);
    r
}

/// Why a destination did not get as far as "reachable".
#[derive(Debug)]
struct Fail {
    outcome: NetOutcome,
    stage: &'static str,
    message: String,
}

impl Fail {
    fn net(stage: &'static str, e: NetError) -> Fail {
        let outcome = match e {
            NetError::Refused | NetError::Reset => NetOutcome::Refused,
            NetError::Timeout => NetOutcome::Timeout,
            NetError::Unreachable => NetOutcome::Unreachable,
            NetError::Blocked => NetOutcome::Blocked,
            NetError::NotAttempted(_) => NetOutcome::NotAttempted,
            NetError::Other(_) => NetOutcome::Error,
        };
        Fail {
            outcome,
            stage,
            message: e.describe(),
        }
    }

    fn io(stage: &'static str, e: std::io::Error) -> Fail {
        if e.kind() == std::io::ErrorKind::InvalidData {
            return Fail {
                outcome: NetOutcome::Error,
                stage,
                message: format!("it answered, but not with HTTP: {e}"),
            };
        }
        Fail::net(stage, NetError::from_io(&e))
    }
}

fn probe_one(p: &Planned, sh: &Shared, deadline: Instant) -> DestResult {
    let start = Instant::now();
    let mut r = new_result(p);
    let res = match p.target.scheme {
        Scheme::Dns => probe_dns(p, sh, deadline, &mut r),
        Scheme::Tcp => probe_tcp(p, sh, deadline, &mut r),
        Scheme::Http | Scheme::Https => probe_http(p, sh, deadline, &mut r),
    };
    match res {
        Ok(()) => r.outcome = NetOutcome::Reachable,
        Err(f) => {
            r.outcome = f.outcome;
            r.stage = Some(f.stage.into());
            r.error = Some(f.message);
        }
    }
    r.latency_ms = ms(start.elapsed());
    r.contract = verdict(&r);
    r
}

/// Resolves `host` and applies the redirects. With `record`, the result
/// says how the destination's name was resolved.
fn endpoints(
    sh: &Shared,
    host: &HostName,
    port: u16,
    deadline: Instant,
    r: &mut DestResult,
    record: bool,
) -> Result<Vec<SocketAddr>, Fail> {
    if let Some(to) = sh.dial.redirect(&host.bare(), port) {
        if record {
            r.resolved_via = Some(Via::Redirect);
            r.resolved = vec![to.to_string()];
        }
        return Ok(vec![to]);
    }
    let (ips, via) = match host {
        HostName::Ip(ip) => (vec![*ip], Via::Literal),
        HostName::Name(n) => match resolve::resolve(&sh.resolver, &sh.dial, n, deadline) {
            Ok(res) => (res.addrs, res.via),
            Err(e) => {
                let outcome = match e.network {
                    Some(NetError::NotAttempted(_)) => NetOutcome::NotAttempted,
                    _ => NetOutcome::DnsFailure,
                };
                return Err(Fail {
                    outcome,
                    stage: "dns",
                    message: e.message,
                });
            }
        },
    };
    if record {
        r.resolved_via = Some(via);
        r.resolved = ips.iter().map(IpAddr::to_string).collect();
    }
    Ok(ips
        .into_iter()
        .take(4)
        .map(|ip| {
            sh.dial
                .redirect(&ip.to_string(), port)
                .unwrap_or(SocketAddr::new(ip, port))
        })
        .collect())
}

/// Connects to the first address that accepts, giving each an equal share
/// of the time left. The most telling failure is reported.
fn connect_any(
    sh: &Shared,
    addrs: &[SocketAddr],
    deadline: Instant,
    r: &mut DestResult,
) -> Result<(TcpStream, SocketAddr), Fail> {
    let mut errors: Vec<(SocketAddr, NetError)> = Vec::new();
    for (k, a) in addrs.iter().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        let share = left / (addrs.len() - k) as u32;
        let until = if k + 1 == addrs.len() {
            deadline
        } else {
            Instant::now() + share
        };
        match sh.dial.connect(*a, until) {
            Ok(s) => return Ok((s, *a)),
            Err(e) => errors.push((*a, e)),
        }
    }
    let rank = |e: &NetError| match e {
        NetError::Refused => 0,
        NetError::Timeout => 1,
        NetError::Blocked => 2,
        NetError::Reset => 3,
        NetError::Unreachable => 4,
        NetError::Other(_) => 5,
        NetError::NotAttempted(_) => 6,
    };
    let (a, e) = errors
        .into_iter()
        .min_by_key(|(_, e)| rank(e))
        .ok_or_else(|| Fail {
            outcome: NetOutcome::Error,
            stage: "connect",
            message: "no address to connect to".into(),
        })?;
    r.address = Some(a.to_string());
    let mut f = Fail::net("connect", e);
    f.message = format!("{a}: {}", f.message);
    Err(f)
}

fn probe_dns(p: &Planned, sh: &Shared, deadline: Instant, r: &mut DestResult) -> Result<(), Fail> {
    endpoints(sh, &p.target.host, 53, deadline, r, true).map(|_| ())
}

fn probe_tcp(p: &Planned, sh: &Shared, deadline: Instant, r: &mut DestResult) -> Result<(), Fail> {
    let addrs = endpoints(sh, &p.target.host, p.target.port, deadline, r, true)?;
    let (_s, a) = connect_any(sh, &addrs, deadline, r)?;
    r.connected = true;
    r.address = Some(a.to_string());
    Ok(())
}

fn probe_http(p: &Planned, sh: &Shared, deadline: Instant, r: &mut DestResult) -> Result<(), Fail> {
    let mut headers = p.headers.clone();
    if let Some(tok) = &p.token {
        let resp = request(
            sh,
            &tok.target,
            &tok.method,
            &tok.headers,
            4096,
            deadline,
            r,
        )?;
        r.steps.push(Step {
            request: format!("{} {}", tok.method, tok.target.path),
            status: Some(resp.status),
        });
        r.http_status = Some(resp.status);
        let token = String::from_utf8_lossy(&resp.body).trim().to_string();
        let usable = (200..300).contains(&resp.status)
            && !token.is_empty()
            && token.len() <= 1024
            && token.bytes().all(|b| b.is_ascii_graphic());
        if !usable {
            // The service answered, so it is reachable; without a token
            // the main request would only repeat the token-less variant.
            r.answered = Some(false);
            return Ok(());
        }
        headers.push((tok.header.clone(), token));
    }
    let resp = request(sh, &p.target, &p.method, &headers, p.body, deadline, r)?;
    if p.token.is_some() || p.kind == Kind::Metadata {
        r.steps.push(Step {
            request: format!("{} {}", p.method, p.target.path),
            status: Some(resp.status),
        });
    }
    r.http_status = Some(resp.status);
    r.answered = match p.kind {
        Kind::Metadata => Some((200..300).contains(&resp.status)),
        Kind::Engine => {
            for (h, k) in [
                ("api-version", "api_version"),
                ("server", "server"),
                ("docker-experimental", "experimental"),
            ] {
                if let Some(v) = resp.header(h) {
                    r.service.insert(k.into(), clean(v));
                }
            }
            Some(resp.status == 200 && String::from_utf8_lossy(&resp.body).trim() == "OK")
        }
        Kind::BrowserDebug => Some(devtools(&resp, &mut r.service)),
        _ => None,
    };
    Ok(())
}

/// A DevTools /json/version answer names the browser and protocol; the
/// webSocketDebuggerUrl is a capability (it grants control) and is not kept.
fn devtools(resp: &Response, service: &mut BTreeMap<String, String>) -> bool {
    if resp.status != 200 {
        return false;
    }
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&resp.body) else {
        return false;
    };
    let is = m.contains_key("webSocketDebuggerUrl") || m.contains_key("Protocol-Version");
    for k in ["Browser", "Protocol-Version", "V8-Version"] {
        if let Some(Value::String(v)) = m.get(k) {
            service.insert(k.to_ascii_lowercase(), clean(v));
        }
    }
    is
}

/// Service answers are attacker controlled: printable ASCII, bounded.
fn clean(s: &str) -> String {
    crate::util::sanitize::ascii(s, 120)
}

fn host_header(t: &Target) -> String {
    let default = match t.scheme {
        Scheme::Https => 443,
        _ => 80,
    };
    if t.port == default {
        t.host.to_string()
    } else {
        t.authority()
    }
}

/// One HTTP(S) request to `t`, directly or through the environment's proxy.
fn request(
    sh: &Shared,
    t: &Target,
    method: &str,
    headers: &[(String, String)],
    body_max: usize,
    deadline: Instant,
    r: &mut DestResult,
) -> Result<Response, Fail> {
    let host = host_header(t);
    match sh.proxy.for_target(t) {
        Some(px) => {
            r.proxy = Some(px.shown.clone());
            r.proxy_credentials_sent = Some(px.auth.is_some());
            if let Some(why) = &px.unsupported {
                return Err(Fail {
                    outcome: NetOutcome::Error,
                    stage: "proxy",
                    message: why.clone(),
                });
            }
            // The proxy resolves the destination's name, not us.
            r.resolved_via = Some(Via::Proxy);
            let unreachable = |mut f: Fail| {
                f.stage = "proxy";
                f.message = format!(
                    "the proxy {} could not be reached ({}), so the destination was not tried through it",
                    px.shown, f.message
                );
                f
            };
            let addrs =
                endpoints(sh, &px.host, px.port, deadline, r, false).map_err(unreachable)?;
            let (mut s, a) = connect_any(sh, &addrs, deadline, r).map_err(unreachable)?;
            r.address = Some(format!("{a} (proxy)"));
            let auth: Vec<(String, String)> = px
                .auth
                .iter()
                .map(|a| ("Proxy-Authorization".to_string(), a.clone()))
                .collect();
            if t.scheme == Scheme::Https {
                let authority = t.authority();
                let what = format!("CONNECT {authority}");
                let connect = Request {
                    method: "CONNECT",
                    target: &authority,
                    host: &authority,
                    headers: &auth,
                    version: Version::Http11,
                };
                let resp = http1::exchange(&mut s, &connect, 0, deadline)
                    .map_err(|e| no_answer(px, &what, e))?;
                if !(200..300).contains(&resp.status) {
                    return Err(proxy_refusal(px, &what, &resp, true, r));
                }
                r.connected = true;
                let mut stream = tls_handshake(sh, s, t, deadline, r)?;
                let req = Request {
                    method,
                    target: &t.path,
                    host: &host,
                    headers,
                    version: Version::Http11,
                };
                http1::exchange(&mut stream, &req, body_max, deadline)
                    .map_err(|e| Fail::io("http", e))
            } else {
                let mut all = headers.to_vec();
                all.extend(auth);
                let absolute = t.to_string();
                let what = format!("{method} {absolute}");
                let req = Request {
                    method,
                    target: &absolute,
                    host: &host,
                    headers: &all,
                    version: Version::Http11,
                };
                let resp = http1::exchange(&mut s, &req, body_max, deadline)
                    .map_err(|e| no_answer(px, &what, e))?;
                // A forwarding proxy answers for the destination: its own
                // answers (a refusal, a gateway error) are told from the
                // destination's, passed on.
                if proxy::classify(&resp, false).answer != Answer::Forwarded {
                    return Err(proxy_refusal(px, &what, &resp, false, r));
                }
                r.connected = true;
                Ok(resp)
            }
        }
        None => {
            let addrs = endpoints(sh, &t.host, t.port, deadline, r, true)?;
            let (mut s, a) = connect_any(sh, &addrs, deadline, r)?;
            r.address = Some(a.to_string());
            r.connected = true;
            let req = Request {
                method,
                target: &t.path,
                host: &host,
                headers,
                version: Version::Http11,
            };
            if t.scheme == Scheme::Https {
                let mut stream = tls_handshake(sh, s, t, deadline, r)?;
                http1::exchange(&mut stream, &req, body_max, deadline)
                    .map_err(|e| Fail::io("http", e))
            } else {
                http1::exchange(&mut s, &req, body_max, deadline).map_err(|e| Fail::io("http", e))
            }
        }
    }
}

/// The proxy's own answer to `what` as a failure: which one its answer
/// shows (proxy::classify), in words that name the proxy and, for a 407,
/// whether credentials were sent (never what they were).
fn proxy_refusal(
    px: &ProxyUrl,
    what: &str,
    resp: &Response,
    connect: bool,
    r: &mut DestResult,
) -> Fail {
    let said = proxy::classify(resp, connect);
    r.http_status = Some(resp.status);
    let shown = said.describe();
    let (outcome, message) = match said.answer {
        Answer::Denied => (
            NetOutcome::ProxyDenied,
            format!("the proxy {} refused {what} ({shown})", px.shown),
        ),
        Answer::AuthRequired => {
            let challenge = said
                .challenge
                .as_ref()
                .map(|c| format!(", it asks for {c}"))
                .unwrap_or_default();
            let creds = if px.auth.is_some() {
                format!("it did not accept the credentials in {}", px.var)
            } else {
                format!("{} holds no credentials", px.var)
            };
            (
                NetOutcome::ProxyAuthRequired,
                format!(
                    "the proxy {} requires proxy authentication for {what} ({shown}{challenge}): {creds}",
                    px.shown
                ),
            )
        }
        Answer::UpstreamFailure => {
            let how = match said.upstream_connected {
                Some(true) => "; it had connected to the destination and sent the request",
                Some(false) => "; it could not connect to the destination",
                None => "",
            };
            (
                NetOutcome::ProxyUpstreamFailure,
                format!(
                    "the proxy {} forwarded {what} and the destination failed ({shown}{how})",
                    px.shown
                ),
            )
        }
        Answer::Unclear | Answer::Forwarded => (
            NetOutcome::ProxyError,
            format!(
                "the proxy {} answered {what} with {shown}, which says neither that it refuses it nor that the destination failed",
                px.shown
            ),
        ),
    };
    r.proxy_answer = Some(said);
    Fail {
        outcome,
        stage: "proxy",
        message,
    }
}

/// The proxy took the connection but gave no answer to `what`.
fn no_answer(px: &ProxyUrl, what: &str, e: std::io::Error) -> Fail {
    if e.kind() == std::io::ErrorKind::InvalidData {
        return Fail {
            outcome: NetOutcome::ProxyError,
            stage: "proxy",
            message: format!(
                "the proxy {} answered {what}, but not with HTTP: {e}",
                px.shown
            ),
        };
    }
    let how = match NetError::from_io(&e) {
        NetError::Timeout => format!("gave no answer to {what} before the deadline"),
        NetError::Reset => format!("closed the connection without answering {what}"),
        other => format!("gave no answer to {what} ({})", other.describe()),
    };
    Fail {
        outcome: NetOutcome::ProxyNoAnswer,
        stage: "proxy",
        message: format!(
            "the proxy {} accepted the connection, but {how}: a proxy that drops what it refuses (squid's deny_info TCP_RESET) and one whose destination failed (tinyproxy closes then) look the same from here",
            px.shown
        ),
    }
}

fn tls_handshake(
    sh: &Shared,
    s: TcpStream,
    t: &Target,
    deadline: Instant,
    r: &mut DestResult,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, Fail> {
    let Some(tls) = &sh.tls else {
        return Err(Fail {
            outcome: NetOutcome::Error,
            stage: "tls",
            message: "TLS was not set up".into(),
        });
    };
    s.arm(deadline).map_err(|e| Fail::io("tls", e))?;
    let seen = |p: Presented, verified: bool, error: Option<String>| TlsSeen {
        verified,
        trust_store: tls.store.kind.clone(),
        subject: p.subject,
        issuer: p.issuer,
        chain_length: p.chain_length,
        error,
    };
    match tls.handshake(s, &t.host.bare(), deadline) {
        Ok((stream, p)) => {
            r.tls = Some(seen(p, true, None));
            Ok(stream)
        }
        Err((TlsError::Rejected(m), p)) => {
            let shown = match (&p.subject, &p.issuer) {
                (Some(s), Some(i)) => {
                    format!("; the server presented a certificate for '{s}' issued by '{i}'")
                }
                _ => String::new(),
            };
            let message = format!(
                "TLS handshake failed: {m}{shown} (trust store: {})",
                tls.store.kind
            );
            r.tls = Some(seen(p, false, Some(m)));
            Err(Fail {
                outcome: NetOutcome::TlsFailure,
                stage: "tls",
                message,
            })
        }
        Err((TlsError::Io(e), p)) => {
            let ne = NetError::from_io(&e);
            if !p.is_empty() {
                r.tls = Some(seen(p, false, Some(e.to_string())));
            }
            match ne {
                NetError::Reset => Err(Fail {
                    outcome: NetOutcome::TlsFailure,
                    stage: "tls",
                    message: "the connection was closed during the TLS handshake (TLS interception or SNI filtering can do this)".into(),
                }),
                other => Err(Fail::net("tls", other)),
            }
        }
        Err((TlsError::Setup(m), _)) => Err(Fail {
            outcome: NetOutcome::Error,
            stage: "tls",
            message: m,
        }),
    }
}

/// Whether a result keeps its contract. Pure: used when collecting and
/// when evaluating.
pub fn verdict(r: &DestResult) -> Verdict {
    if matches!(r.outcome, NetOutcome::NotAttempted | NetOutcome::Error) && !r.connected {
        return Verdict::Unknown;
    }
    match r.list {
        List::Allow => {
            let ok = r.outcome == NetOutcome::Reachable
                && match r.method {
                    Scheme::Http | Scheme::Https => r.http_status.is_some_and(|s| s < 400),
                    _ => true,
                };
            if ok {
                Verdict::Holds
            } else {
                Verdict::Violated
            }
        }
        List::Deny => {
            // A completed connection counts as reachable: the request was
            // delivered, so data could have been. A DevTools port counts
            // only when DevTools answers on it.
            let reached = match r.kind {
                Kind::BrowserDebug => r.answered == Some(true),
                _ => r.connected || r.outcome == NetOutcome::Reachable,
            };
            if reached {
                return Verdict::Violated;
            }
            if r.kind == Kind::BrowserDebug {
                return Verdict::Holds;
            }
            // Through a proxy only the proxy's refusal proves the block: an
            // upstream failure shows it forwards there, and a proxy that
            // cannot be reached or does not answer says nothing about the
            // destination. A refusal, timeout or missing route with no proxy
            // between, or a local block, proves it.
            match r.outcome {
                NetOutcome::ProxyUpstreamFailure => Verdict::Violated,
                NetOutcome::ProxyDenied | NetOutcome::ProxyAuthRequired => Verdict::Holds,
                _ if r.proxy.is_some() => Verdict::Unknown,
                _ => Verdict::Holds,
            }
        }
    }
}

const METADATA_HOSTS: &[&str] = &[
    "169.254.169.254",
    "169.254.170.2",
    "169.254.170.23",
    "fd00:ec2::254",
    "fd00:ec2::23",
    "100.100.100.200",
    "metadata.google.internal",
    "metadata",
];

fn is_metadata(r: &DestResult) -> bool {
    let host = target::parse(&r.destination)
        .map(|t| t.host.bare())
        .unwrap_or_default();
    let canon = |s: &str| {
        s.parse::<IpAddr>()
            .map(|a| a.to_string())
            .unwrap_or(s.to_string())
    };
    METADATA_HOSTS.iter().any(|m| canon(m) == canon(&host))
        || r.resolved
            .iter()
            .any(|a| METADATA_HOSTS.iter().any(|m| canon(m) == canon(a)))
}

/// A globally routable address: the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            !(a.is_private()
                || a.is_loopback()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_documentation()
                || a.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240)
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s0 = a.segments()[0];
            (s0 & 0xe000) == 0x2000 && a.segments()[..2] != [0x2001, 0x0db8]
        }
    }
}

fn public_destination(r: &DestResult) -> bool {
    let literal = target::parse(&r.destination)
        .ok()
        .and_then(|t| match t.host {
            HostName::Ip(ip) => Some(ip),
            HostName::Name(_) => None,
        });
    let resolved = r.resolved.iter().filter_map(|a| {
        a.parse::<IpAddr>()
            .ok()
            .or_else(|| a.parse::<SocketAddr>().ok().map(|s| s.ip()))
    });
    let mut any = false;
    for ip in literal.into_iter().chain(resolved) {
        if r.resolved_via == Some(Via::Redirect) {
            return false;
        }
        any = true;
        if !is_public(ip) {
            return false;
        }
    }
    any
}

/// How it went, in words, for a finding's message.
fn what_happened(r: &DestResult) -> String {
    let err = r.error.clone().unwrap_or_default();
    match r.outcome {
        NetOutcome::Reachable => match r.http_status {
            Some(s) => format!("it answered HTTP {s}"),
            None if r.method == Scheme::Dns => format!("it resolved to {}", r.resolved.join(", ")),
            None => format!(
                "it accepted a connection at {}",
                r.address.clone().unwrap_or_default()
            ),
        },
        NetOutcome::Refused => format!("the connection was refused ({err})"),
        NetOutcome::Timeout => format!("it did not answer within {} ms ({err})", r.timeout_ms),
        NetOutcome::Unreachable => format!("there is no route to it ({err})"),
        NetOutcome::Blocked => format!("this host refused to send to it ({err})"),
        NetOutcome::DnsFailure => format!("its name did not resolve: {err}"),
        NetOutcome::TlsFailure
        | NetOutcome::ProxyDenied
        | NetOutcome::ProxyAuthRequired
        | NetOutcome::ProxyUpstreamFailure
        | NetOutcome::ProxyNoAnswer
        | NetOutcome::ProxyError => err,
        NetOutcome::Error if r.connected => err,
        NetOutcome::NotAttempted | NetOutcome::Error => format!("it could not be checked: {err}"),
    }
}

fn evidence(mut f: Finding, r: &DestResult, facts: &NetFacts) -> Finding {
    f = f
        .with("destination", r.destination.clone())
        .with("rule", r.rule.clone())
        .with(
            "list",
            if r.list == List::Allow {
                "allow"
            } else {
                "deny"
            },
        )
        .with("method", r.method.as_str())
        .with("outcome", r.outcome.as_str())
        .with("connected", r.connected)
        .with("latency_ms", r.latency_ms)
        .with("timeout_ms", r.timeout_ms);
    let opt = |f: Finding, k: &str, v: Option<Value>| match v {
        Some(v) if !v.is_null() => f.with(k, v),
        _ => f,
    };
    f = opt(f, "stage", r.stage.clone().map(Value::from));
    f = opt(f, "error", r.error.clone().map(Value::from));
    f = opt(f, "address", r.address.clone().map(Value::from));
    f = opt(f, "http_status", r.http_status.map(Value::from));
    f = opt(f, "proxy", r.proxy.clone().map(Value::from));
    f = opt(
        f,
        "proxy_credentials_sent",
        r.proxy_credentials_sent.map(Value::from),
    );
    f = opt(
        f,
        "proxy_answer",
        r.proxy_answer
            .as_ref()
            .and_then(|p| serde_json::to_value(p).ok()),
    );
    f = opt(f, "provider", r.provider.clone().map(Value::from));
    f = opt(f, "answered", r.answered.map(Value::from));
    f = opt(
        f,
        "resolved_via",
        r.resolved_via.and_then(|v| serde_json::to_value(v).ok()),
    );
    if !r.resolved.is_empty() {
        f = f.with("resolved", r.resolved.clone());
    }
    if !r.steps.is_empty() {
        f = opt(f, "steps", serde_json::to_value(&r.steps).ok());
    }
    if !r.service.is_empty() {
        f = opt(f, "service", serde_json::to_value(&r.service).ok());
    }
    f = opt(
        f,
        "tls",
        r.tls.as_ref().and_then(|t| serde_json::to_value(t).ok()),
    );
    if r.method == Scheme::Https {
        f = opt(
            f,
            "trust_store",
            facts
                .trust_store
                .as_ref()
                .and_then(|t| serde_json::to_value(t).ok()),
        );
    }
    if r.list == List::Allow {
        f = opt(
            f,
            "nameservers",
            facts.resolver.as_ref().map(|c| {
                c.nameservers
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .into()
            }),
        );
    }
    f
}

/// Findings from the network facts. Pure.
pub fn evaluate(facts: &NetFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let p = &facts.proxy;
    if !p.variables.is_empty() {
        let what = if p.configured() {
            let mut v = Vec::new();
            for (k, u) in [("http", &p.http), ("https", &p.https), ("all", &p.all)] {
                if let Some(u) = u {
                    v.push(format!("{k} via {u}"));
                }
            }
            format!("requests go through a proxy: {}", v.join(", "))
        } else {
            "only NO_PROXY is set; no proxy is configured".to_string()
        };
        let rec = proxy_record(facts);
        let record = if rec.enforces {
            format!(
                "; it enforces the network contract: {} deny destination(s) refused by it, {} allow destination(s) reached through it, every other destination held",
                rec.denied_by_proxy, rec.reached_through
            )
        } else if rec.through > 0 {
            let why = if rec.all_hold {
                "no deny destination was refused by the proxy itself"
            } else {
                "not every destination kept its contract"
            };
            format!(
                "; {} destination(s) went through it, but it is not seen to enforce the network contract: {why}",
                rec.through
            )
        } else {
            String::new()
        };
        let mut f = Finding::new(
            Code::NetProxy,
            "environment",
            format!(
                "{what}; NO_PROXY entries: {}{record}",
                if p.no_proxy.is_empty() {
                    "none".into()
                } else {
                    p.no_proxy.join(",")
                }
            ),
        )
        .with("variables", p.variables.clone())
        .with("no_proxy", p.no_proxy.clone())
        .with("through_proxy", rec.through)
        .with("denied_by_proxy", rec.denied_by_proxy)
        .with("reached_through_proxy", rec.reached_through)
        .with("enforces_contract", rec.enforces)
        .with("used_proxies", rec.proxies.clone());
        for (k, u) in [
            ("http_proxy", &p.http),
            ("https_proxy", &p.https),
            ("all_proxy", &p.all),
        ] {
            if let Some(u) = u {
                f = f.with(k, u.clone());
            }
        }
        out.push(f);
    }
    if !facts.assessed {
        let why = facts
            .reason
            .clone()
            .unwrap_or_else(|| "no destination was tried".into());
        out.push(
            Finding::new(
                Code::NetNotAssessed,
                "network",
                format!("the network policy was not assessed: {why}"),
            )
            .with("reason", why)
            .with("proxy_variables", p.variables.clone()),
        );
    }
    for r in &facts.destinations {
        let subject = r.name.clone().unwrap_or_else(|| r.destination.clone());
        match verdict(r) {
            Verdict::Holds => {}
            // Could not check: the code it would have raised, unknown, so
            // the network-policy control is not assessed rather than passed.
            Verdict::Unknown => {
                let why = r.error.clone().unwrap_or_default();
                let mut f = if r.list == List::Allow {
                    Finding::new(Code::NetAllowedUnreachable, subject, String::new())
                } else {
                    deny_finding(r, subject)
                };
                f.message = format!("{} ({}) could not be checked: {why}", r.destination, r.rule);
                out.push(evidence(f.unknown().with("reason", why), r, facts));
            }
            Verdict::Violated if r.list == List::Allow => out.push(evidence(
                Finding::new(
                    Code::NetAllowedUnreachable,
                    subject,
                    format!(
                        "{} is allowed by {} for the task, but {}",
                        r.destination,
                        r.rule,
                        what_happened(r)
                    ),
                ),
                r,
                facts,
            )),
            Verdict::Violated => out.push(evidence(deny_finding(r, subject), r, facts)),
        }
    }
    out
}

fn deny_finding(r: &DestResult, subject: String) -> Finding {
    if r.outcome == NetOutcome::ProxyUpstreamFailure {
        return proxy_forwards_denied(r, subject);
    }
    let how = if r.connected && r.outcome != NetOutcome::Reachable {
        format!(
            "it accepted a connection ({}), and then {}",
            r.address.clone().unwrap_or_default(),
            what_happened(r)
        )
    } else {
        what_happened(r)
    };
    match r.kind {
        Kind::Engine => {
            let confirmed = r.answered == Some(true);
            let f = Finding::new(
                Code::EngineTcpEndpoint,
                subject,
                if confirmed {
                    format!(
                        "a container engine answers GET /_ping with OK on {} (API {}): this workspace can drive it over TCP",
                        r.destination,
                        r.service.get("api_version").cloned().unwrap_or_else(|| "?".into())
                    )
                } else {
                    format!("the engine port {} accepts connections ({how}); it was not confirmed as an engine", r.destination)
                },
            )
            .with("connected", true);
            if confirmed {
                f
            } else {
                f.severity(Severity::Medium)
            }
        }
        Kind::BrowserDebug => Finding::new(
            Code::BrowserDebugPort,
            subject,
            format!(
                "a DevTools remote-debugging endpoint answers on {} ({}): whoever reaches it controls that browser or process",
                r.destination,
                r.service.get("browser").cloned().unwrap_or_else(|| "unknown browser".into())
            ),
        ),
        _ if r.kind == Kind::Metadata || (r.kind == Kind::Policy && is_metadata(r)) => {
            let answered = r.answered == Some(true);
            let provider = r.provider.clone().unwrap_or_else(|| "cloud".into());
            let f = Finding::new(
                Code::NetMetadataReachable,
                subject,
                if answered {
                    format!("the {provider} metadata service at {} answered the provider's request ({how}): the workspace can take the instance's cloud identity", r.destination)
                } else {
                    format!("the {provider} metadata service at {} is reachable ({how}), though this request was not answered with data", r.destination)
                },
            );
            if answered || r.kind == Kind::Policy {
                f
            } else {
                f.severity(Severity::High)
            }
        }
        Kind::Egress => Finding::new(
            Code::NetEgressOpen,
            subject,
            format!("the public egress canary {} is reachable ({how}): the workspace can reach the internet", r.destination),
        ),
        Kind::Policy if public_destination(r) => Finding::new(
            Code::NetEgressOpen,
            subject,
            format!("{} is denied by {} and is a public address, but {how}", r.destination, r.rule),
        ),
        _ => Finding::new(
            Code::NetDeniedReachable,
            subject,
            format!("{} is denied by {} but {how}", r.destination, r.rule),
        ),
    }
}

/// A deny entry the proxy forwards: its answer was an upstream failure, so
/// its rules let the request through and only the destination's own state
/// stopped it. Medium when the proxy could not even connect (the block then
/// holds only while the destination is down, the rubric's "some proxy
/// controls"); high when the proxy says it had connected and sent the request
/// (ERR_ZERO_SIZE_OBJECT, ERR_READ_TIMEOUT…): the request, an exfiltration
/// channel, reached the destination, the very standard net.denied-reachable
/// applies to a completed connection.
fn proxy_forwards_denied(r: &DestResult, subject: String) -> Finding {
    let delivered = r.proxy_answer.as_ref().and_then(|p| p.upstream_connected) == Some(true);
    let f = Finding::new(
        Code::NetProxyForwardsDenied,
        subject,
        format!(
            "{} is denied by {}, but {}: the proxy does not block it",
            r.destination,
            r.rule,
            r.error.clone().unwrap_or_default()
        ),
    )
    .with("delivered", delivered);
    if delivered {
        f.severity(Severity::High)
    } else {
        f
    }
}

/// How the proxies did for the contract, for net.proxy's evidence and the
/// scorecard: the proxy enforces the contract when every destination kept
/// it, at least one went through a proxy, and a proxy refused at least one
/// deny entry itself (otherwise its filtering was never seen).
#[derive(Debug, Default)]
struct ProxyRecord {
    through: usize,
    denied_by_proxy: usize,
    reached_through: usize,
    proxies: Vec<String>,
    all_hold: bool,
    enforces: bool,
}

fn proxy_record(facts: &NetFacts) -> ProxyRecord {
    let mut rec = ProxyRecord::default();
    for d in facts.destinations.iter().filter(|d| d.proxy.is_some()) {
        rec.through += 1;
        let holds = verdict(d) == Verdict::Holds;
        match d.list {
            List::Deny
                if holds
                    && matches!(
                        d.outcome,
                        NetOutcome::ProxyDenied | NetOutcome::ProxyAuthRequired
                    ) =>
            {
                rec.denied_by_proxy += 1
            }
            List::Allow if holds => rec.reached_through += 1,
            _ => {}
        }
        let p = d.proxy.clone().unwrap_or_default();
        if !rec.proxies.contains(&p) {
            rec.proxies.push(p);
        }
    }
    rec.all_hold = facts
        .destinations
        .iter()
        .all(|d| verdict(d) == Verdict::Holds);
    rec.enforces = facts.assessed && rec.denied_by_proxy > 0 && rec.all_hold;
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        list: List,
        kind: Kind,
        dest: &str,
        outcome: NetOutcome,
        connected: bool,
    ) -> DestResult {
        let p = Planned {
            list,
            rule: "policy p.toml:3".into(),
            kind,
            name: None,
            provider: None,
            target: target::parse(dest).unwrap(),
            method: "GET".into(),
            headers: Vec::new(),
            token: None,
            timeout: Duration::from_secs(1),
            body: 0,
        };
        let mut r = new_result(&p);
        r.outcome = outcome;
        r.connected = connected;
        r.contract = verdict(&r);
        r
    }

    fn codes(facts: &NetFacts) -> Vec<(String, String)> {
        evaluate(facts)
            .into_iter()
            .map(|f| (f.code, f.subject))
            .collect()
    }

    #[test]
    fn contracts() {
        use List::{Allow, Deny};
        use NetOutcome::{NotAttempted, Reachable, Refused, Timeout};
        // (list, kind, destination, outcome, connected, HTTP status,
        // answered as the service, the verdict, why)
        let cases = [
            (
                Deny,
                Kind::Policy,
                "tcp://127.0.0.1:9",
                Refused,
                false,
                None,
                None,
                Verdict::Holds,
                "refused",
            ),
            (
                Deny,
                Kind::Policy,
                "tcp://127.0.0.1:9",
                Reachable,
                true,
                None,
                None,
                Verdict::Violated,
                "reached",
            ),
            (
                Deny,
                Kind::Policy,
                "http://127.0.0.1:9/",
                Timeout,
                true,
                None,
                None,
                Verdict::Violated,
                "a connection that then hangs still counts",
            ),
            (
                Allow,
                Kind::Policy,
                "http://127.0.0.1:9/",
                Reachable,
                true,
                Some(200),
                None,
                Verdict::Holds,
                "an answer",
            ),
            (
                Allow,
                Kind::Policy,
                "http://127.0.0.1:9/",
                Reachable,
                true,
                Some(503),
                None,
                Verdict::Violated,
                "an error status",
            ),
            (
                Allow,
                Kind::Policy,
                "tcp://127.0.0.1:9",
                NotAttempted,
                false,
                None,
                None,
                Verdict::Unknown,
                "not tried",
            ),
            (
                Deny,
                Kind::BrowserDebug,
                "http://127.0.0.1:9222/json/version",
                Reachable,
                true,
                None,
                Some(false),
                Verdict::Holds,
                "not DevTools",
            ),
        ];
        for (list, kind, dest, outcome, connected, status, answered, want, why) in cases {
            let mut r = result(list, kind, dest, outcome, connected);
            r.http_status = status;
            r.answered = answered;
            assert_eq!(verdict(&r), want, "{dest} {outcome:?}: {why}");
        }
    }

    #[test]
    fn deny_codes_by_class() {
        let mut facts = NetFacts {
            assessed: true,
            ..Default::default()
        };
        let mut meta = result(
            List::Deny,
            Kind::Policy,
            "tcp://169.254.169.254:80",
            NetOutcome::Reachable,
            true,
        );
        meta.resolved = vec!["169.254.169.254".into()];
        let public = result(
            List::Deny,
            Kind::Policy,
            "tcp://1.1.1.1:443",
            NetOutcome::Reachable,
            true,
        );
        let local = result(
            List::Deny,
            Kind::Policy,
            "tcp://10.0.0.1:443",
            NetOutcome::Reachable,
            true,
        );
        let held = result(
            List::Deny,
            Kind::Policy,
            "tcp://10.0.0.2:443",
            NetOutcome::Timeout,
            false,
        );
        let allow = result(
            List::Allow,
            Kind::Policy,
            "tcp://10.0.0.3:443",
            NetOutcome::Refused,
            false,
        );
        facts.destinations = vec![meta, public, local, held, allow];
        assert_eq!(
            codes(&facts),
            vec![
                (
                    "net.metadata-reachable".to_string(),
                    "tcp://169.254.169.254:80".to_string()
                ),
                ("net.egress-open".into(), "tcp://1.1.1.1:443".into()),
                ("net.denied-reachable".into(), "tcp://10.0.0.1:443".into()),
                (
                    "net.allowed-unreachable".into(),
                    "tcp://10.0.0.3:443".into()
                ),
            ]
        );
        let mut guarded = facts.clone();
        guarded.destinations = vec![result(
            List::Allow,
            Kind::Policy,
            "tcp://10.0.0.9:1",
            NetOutcome::NotAttempted,
            false,
        )];
        let f = evaluate(&guarded);
        assert_eq!(f[0].code, "net.allowed-unreachable");
        assert_eq!(f[0].status, crate::finding::Status::Unknown);
        let none = NetFacts {
            reason: Some("no policy".into()),
            ..Default::default()
        };
        assert_eq!(
            codes(&none),
            vec![("net.not-assessed".to_string(), "network".to_string())]
        );
    }

    /// A deny destination the proxy itself refused (403).
    fn refused_by_proxy(dest: &str) -> DestResult {
        proxied(
            List::Deny,
            dest,
            NetOutcome::ProxyDenied,
            said(Answer::Denied, 403, None),
        )
    }

    fn proxied(list: List, dest: &str, outcome: NetOutcome, said: Option<ProxySaid>) -> DestResult {
        let mut r = result(list, Kind::Policy, dest, outcome, false);
        r.proxy = Some("http://***@127.0.0.1:3128".into());
        r.proxy_credentials_sent = Some(true);
        r.http_status = said.as_ref().map(|s| s.status);
        r.proxy_answer = said;
        r.error = Some(format!("the proxy said {}", outcome.as_str()));
        r.contract = verdict(&r);
        r
    }

    fn said(answer: Answer, status: u16, connected: Option<bool>) -> Option<ProxySaid> {
        Some(ProxySaid {
            answer,
            status,
            reason: String::new(),
            error: None,
            software: Some("squid/5.7".into()),
            upstream_connected: connected,
            challenge: None,
        })
    }

    #[test]
    fn through_a_proxy_only_its_refusal_proves_a_deny() {
        use NetOutcome::*;
        for (outcome, deny, allow) in [
            (ProxyDenied, Verdict::Holds, Verdict::Violated),
            (ProxyAuthRequired, Verdict::Holds, Verdict::Violated),
            (ProxyUpstreamFailure, Verdict::Violated, Verdict::Violated),
            (ProxyNoAnswer, Verdict::Unknown, Verdict::Violated),
            (ProxyError, Verdict::Unknown, Verdict::Violated),
            // The proxy itself refused or timed out: the destination was not tried.
            (Refused, Verdict::Unknown, Verdict::Violated),
            (Timeout, Verdict::Unknown, Verdict::Violated),
        ] {
            let d = proxied(List::Deny, "http://127.0.0.1:9/", outcome, None);
            assert_eq!(d.contract, deny, "deny {outcome:?}");
            let a = proxied(List::Allow, "http://127.0.0.1:9/", outcome, None);
            assert_eq!(a.contract, allow, "allow {outcome:?}");
        }
        // With no proxy between, a refusal or a timeout proves it.
        for outcome in [Refused, Timeout, Unreachable, Blocked] {
            let r = result(
                List::Deny,
                Kind::Policy,
                "http://127.0.0.1:9/",
                outcome,
                false,
            );
            assert_eq!(verdict(&r), Verdict::Holds, "{outcome:?}");
        }
    }

    #[test]
    fn a_proxy_that_forwards_a_deny_is_its_own_finding() {
        use NetOutcome::{ProxyNoAnswer, ProxyUpstreamFailure};
        // An upstream connect failure (nothing delivered), a forwarded
        // request (bytes delivered), a refusal, and no answer at all.
        let failure = |code, delivered| said(Answer::UpstreamFailure, code, Some(delivered));
        let mut destinations: Vec<DestResult> = [
            (
                "http://127.0.0.1:9/",
                ProxyUpstreamFailure,
                failure(503, false),
            ),
            (
                "http://127.0.0.1:10/",
                ProxyUpstreamFailure,
                failure(502, true),
            ),
            ("http://127.0.0.1:12/", ProxyNoAnswer, None),
        ]
        .into_iter()
        .map(|(dest, outcome, answer)| proxied(List::Deny, dest, outcome, answer))
        .collect();
        destinations.insert(2, refused_by_proxy("http://127.0.0.1:11/"));
        let facts = NetFacts {
            assessed: true,
            destinations,
            ..Default::default()
        };
        let f = evaluate(&facts);
        let by = |subject: &str| f.iter().find(|f| f.subject == subject).unwrap();
        let a = by("http://127.0.0.1:9/");
        assert_eq!(
            (a.code.as_str(), a.severity, a.status),
            (
                "net.proxy-forwards-denied",
                Severity::Medium,
                crate::finding::Status::Fail
            )
        );
        assert_eq!(a.evidence["delivered"], false);
        assert_eq!(a.evidence["proxy_answer"]["status"], 503);
        assert_eq!(a.evidence["proxy_credentials_sent"], true);
        assert!(
            a.message.contains("the proxy does not block it"),
            "{}",
            a.message
        );
        let b = by("http://127.0.0.1:10/");
        assert_eq!(
            (b.code.as_str(), b.severity),
            ("net.proxy-forwards-denied", Severity::High)
        );
        assert!(
            f.iter().all(|f| f.subject != "http://127.0.0.1:11/"),
            "a refusal holds"
        );
        let c = by("http://127.0.0.1:12/");
        assert_eq!(
            (c.code.as_str(), c.status),
            ("net.denied-reachable", crate::finding::Status::Unknown)
        );
    }

    #[test]
    fn net_proxy_says_whether_the_proxy_enforces_the_contract() {
        let mut facts = NetFacts {
            assessed: true,
            ..Default::default()
        };
        facts.proxy.variables = vec!["HTTP_PROXY".into()];
        facts.proxy.http = Some("http://***@127.0.0.1:3128".into());
        let mut allow = proxied(
            List::Allow,
            "http://127.0.0.1:8/",
            NetOutcome::Reachable,
            None,
        );
        allow.connected = true;
        allow.http_status = Some(200);
        allow.contract = verdict(&allow);
        let deny = refused_by_proxy("http://127.0.0.1:11/");
        let direct = result(
            List::Deny,
            Kind::Policy,
            "tcp://127.0.0.1:7",
            NetOutcome::Refused,
            false,
        );
        facts.destinations = vec![allow.clone(), deny.clone(), direct];
        let np = |facts: &NetFacts| {
            evaluate(facts)
                .into_iter()
                .find(|f| f.code == "net.proxy")
                .unwrap()
        };
        let f = np(&facts);
        assert_eq!(f.evidence["enforces_contract"], true, "{f:?}");
        assert_eq!(f.evidence["denied_by_proxy"], 1);
        assert_eq!(f.evidence["reached_through_proxy"], 1);
        assert_eq!(f.evidence["through_proxy"], 2);
        assert_eq!(
            f.evidence["used_proxies"],
            serde_json::json!(["http://***@127.0.0.1:3128"])
        );
        assert!(
            f.message.contains("it enforces the network contract"),
            "{}",
            f.message
        );

        // Without a deny refused by the proxy itself, its filtering was never seen.
        facts.destinations = vec![allow.clone()];
        assert_eq!(np(&facts).evidence["enforces_contract"], false);
        // One destination that does not hold, anywhere, and it does not.
        let forwarded = proxied(
            List::Deny,
            "http://127.0.0.1:12/",
            NetOutcome::ProxyUpstreamFailure,
            said(Answer::UpstreamFailure, 502, Some(true)),
        );
        facts.destinations = vec![allow, deny, forwarded];
        assert_eq!(np(&facts).evidence["enforces_contract"], false);
    }

    #[test]
    fn public_addresses() {
        for (a, public) in [
            ("1.1.1.1", true),
            ("93.184.215.14", true),
            ("10.1.2.3", false),
            ("100.64.0.1", false),
            ("169.254.169.254", false),
            ("127.0.0.1", false),
            ("2606:4700::1111", true),
            ("fd00:ec2::254", false),
            ("::1", false),
            ("2001:db8::1", false),
            ("::ffff:8.8.8.8", true),
        ] {
            assert_eq!(is_public(a.parse().unwrap()), public, "{a}");
        }
    }
}
