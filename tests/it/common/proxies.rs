//! Real egress proxies for the network tests: Debian's squid and tinyproxy,
//! each started by the test as its own child process, on a loopback port,
//! with its own configuration, logs and pid file in a temporary directory
//! (never the system service, never /etc/squid or /etc/tinyproxy). The
//! child is killed, by its pid, when the [`Proxy`] is dropped.
//!
//! Network rule (the README's Set-up): the proxies listen on 127.0.0.1 only and
//! their ACLs allow only 127.0.0.1; squid asks only 127.0.0.1 for DNS
//! (`dns_nameservers`) and the tests give both IP literals only, so neither
//! ever needs a name server.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::netserve::loopback;
use super::podman::{skip_or_fail, TempPath};

/// Debian's path of squid's Basic authentication helper.
pub const NCSA_AUTH: &str = "/usr/lib/squid/basic_ncsa_auth";

/// A running proxy of the test's own.
pub struct Proxy {
    pub port: u16,
    /// squid or tinyproxy.
    pub kind: &'static str,
    dir: TempPath,
    log: PathBuf,
    child: Child,
    /// The child is `unshare --pid --fork` and the proxy PID 1 of a PID
    /// namespace of its own (see [`squid`]).
    wrapped: bool,
}

impl Proxy {
    /// `http://127.0.0.1:PORT`, for HTTP_PROXY / HTTPS_PROXY.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The URL with `user:password` as its userinfo.
    pub fn url_with(&self, user: &str, password: &str) -> String {
        format!("http://{user}:{password}@127.0.0.1:{}", self.port)
    }

    /// What the proxy logged about the requests (squid's access.log,
    /// tinyproxy's log file).
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The lines of the log that name every one of `needles`, once there are
    /// at least `at_least` of them or 5 s have passed: a proxy writes its log
    /// line when the transaction ends, which may be just after its answer.
    pub fn log_lines(&self, needles: &[&str], at_least: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let lines: Vec<String> = self
                .log()
                .lines()
                .filter(|l| needles.iter().all(|n| l.contains(n)))
                .map(str::to_string)
                .collect();
            if lines.len() >= at_least || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir.path
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Wrapped: kill the proxy, the namespace's init, by its pid; the
        // kernel then kills and reaps its helpers, and unshare (our child)
        // exits. Otherwise our own child, by its pid.
        if self.wrapped {
            let me = self.child.id();
            let inner = fs::read_to_string(format!("/proc/{me}/task/{me}/children"))
                .ok()
                .and_then(|k| k.split_whitespace().next()?.parse::<i32>().ok());
            if let Some(pid) = inner {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let _ = self.child.wait();
                return;
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The executable, looked for in PATH and in /usr/sbin (squid lives there,
/// outside a normal user's PATH).
fn find(bin: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

/// Why `bin` cannot be run here, if it cannot.
pub fn missing(bin: &str) -> Option<String> {
    match find(bin) {
        Some(_) => None,
        None => Some(format!(
            "{bin} not found (apt-get install -y squid tinyproxy)"
        )),
    }
}

/// The user a proxy started by root drops to, and who must own its
/// directory: (name, uid, gid). None when not root (it runs as us).
fn drop_to(name: &str) -> Option<(String, nix::unistd::Uid, nix::unistd::Gid)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let u = nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .or_else(|| nix::unistd::User::from_name("nobody").ok().flatten())
        .expect("a user for the proxy to run as (proxy or nobody)");
    Some((u.name, u.uid, u.gid))
}

fn chown_all(dir: &Path, owner: &Option<(String, nix::unistd::Uid, nix::unistd::Gid)>) {
    let Some((_, uid, gid)) = owner else {
        return;
    };
    for e in fs::read_dir(dir).unwrap().flatten() {
        nix::unistd::chown(&e.path(), Some(*uid), Some(*gid)).unwrap();
    }
    nix::unistd::chown(dir, Some(*uid), Some(*gid)).unwrap();
}

/// Starts `cmd` (configured for `port`) and waits until the port accepts;
/// Err with its output and logs when it exited first (a port taken in the
/// meantime) or did not listen within 20 s.
fn launch(mut cmd: Command, dir: &Path, port: u16) -> Result<Child, String> {
    let out = fs::File::create(dir.join("stdout")).unwrap();
    let err = fs::File::create(dir.join("stderr")).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    let mut child = cmd.spawn().map_err(|e| format!("spawn {cmd:?}: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut logs = String::new();
            for f in ["stdout", "stderr", "cache.log", "tinyproxy.log"] {
                if let Ok(t) = fs::read_to_string(dir.join(f)) {
                    logs.push_str(&format!("--- {f}\n{t}"));
                }
            }
            return Err(format!(
                "{cmd:?} exited ({status}) before listening:\n{logs}"
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{cmd:?} did not listen on 127.0.0.1:{port} in 20 s"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A free loopback port: bound and released. Another test may take it in
/// between, so starting is retried with a new one.
fn free_port() -> u16 {
    loopback().local_addr().unwrap().port()
}

/// What squid allows: plain HTTP (GET) to 127.0.0.1 on `http_ports`,
/// CONNECT to 127.0.0.1 on `connect_ports`, and nothing else (ACLs by
/// destination and by port). With `auth`, Basic authentication first
/// (basic_ncsa_auth and an htpasswd file of the test's own).
#[derive(Default, Clone)]
pub struct SquidConf {
    pub http_ports: Vec<u16>,
    pub connect_ports: Vec<u16>,
    pub auth: Option<(String, String)>,
    /// squid's read_timeout: how long it waits for the destination's answer.
    pub read_timeout_s: Option<u32>,
}

fn squid_conf(dir: &Path, port: u16, c: &SquidConf, user: Option<&str>) -> String {
    let d = dir.display();
    let mut s = format!(
        "http_port 127.0.0.1:{port}\n\
         # Nothing of the machine's resolver: squid asks only 127.0.0.1, and\n\
         # the tests give it IP literals, so it asks nothing at all.\n\
         dns_nameservers 127.0.0.1\n\
         visible_hostname localhost\n\
         pid_filename {d}/squid.pid\n\
         cache_log {d}/cache.log\n\
         access_log stdio:{d}/access.log\n\
         coredump_dir {d}\n\
         netdb_filename none\n\
         pinger_enable off\n\
         cache deny all\n\
         cache_mem 8 MB\n\
         shutdown_lifetime 0 seconds\n"
    );
    if let Some(u) = user {
        s.push_str(&format!("cache_effective_user {u}\n"));
    }
    if let Some(t) = c.read_timeout_s {
        s.push_str(&format!("read_timeout {t} seconds\n"));
    }
    s.push_str("acl to_loopback dst 127.0.0.1\nacl CONNECT method CONNECT\n");
    if let Some((name, _)) = &c.auth {
        s.push_str(&format!(
            "auth_param basic program {NCSA_AUTH} {d}/htpasswd\n\
             auth_param basic realm selfprobe-test\n\
             auth_param basic casesensitive on\n\
             auth_param basic children 1 startup=1 idle=1\n\
             acl authed proxy_auth {name}\n\
             http_access deny !authed\n"
        ));
    }
    if !c.connect_ports.is_empty() {
        let ports: Vec<String> = c.connect_ports.iter().map(u16::to_string).collect();
        s.push_str(&format!(
            "acl tls_ports port {}\nhttp_access allow CONNECT to_loopback tls_ports\n",
            ports.join(" ")
        ));
    }
    s.push_str("http_access deny CONNECT\n");
    if !c.http_ports.is_empty() {
        let ports: Vec<String> = c.http_ports.iter().map(u16::to_string).collect();
        s.push_str(&format!(
            "acl web_ports port {}\nhttp_access allow to_loopback web_ports\n",
            ports.join(" ")
        ));
    }
    s.push_str("http_access deny all\n");
    s
}

/// An htpasswd line, the password hashed by openssl (MD5, apr1) from stdin
/// (never on a command line).
fn htpasswd(user: &str, password: &str) -> String {
    let mut child = Command::new("openssl")
        .args(["passwd", "-apr1", "-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("openssl passwd (apt-get install -y openssl)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "openssl passwd failed");
    format!("{user}:{}\n", String::from_utf8(out.stdout).unwrap().trim())
}

/// squid with `conf`, or None (and a SKIP: line; a failure under CI=true)
/// when squid is not installed.
pub fn squid(test: &str, conf: &SquidConf) -> Option<Proxy> {
    let mut why = missing("squid");
    if why.is_none() && conf.auth.is_some() && !Path::new(NCSA_AUTH).is_file() {
        why = Some(format!("{NCSA_AUTH} not found (apt-get install -y squid)"));
    }
    if let Some(why) = why {
        skip_or_fail(test, &why);
        return None;
    }
    let bin = find("squid").unwrap();
    let owner = drop_to("proxy");
    // squid leaves its helpers (basic_ncsa_auth) behind when it exits, even
    // on SIGTERM; where the machine's init does not reap orphans (a
    // container's or a VM's minimal one) each would stay a zombie. As root,
    // squid runs as PID 1 of a PID namespace of its own, whose exit makes the
    // kernel kill and reap everything in it.
    let unshare = owner.as_ref().and(find("unshare"));
    let mut last = String::new();
    for _ in 0..3 {
        let dir = TempPath::dir("squid").expect("squid dir");
        let port = free_port();
        if let Some((u, p)) = &conf.auth {
            fs::write(dir.path.join("htpasswd"), htpasswd(u, p)).unwrap();
        }
        let cfg = dir.path.join("squid.conf");
        fs::write(
            &cfg,
            squid_conf(&dir.path, port, conf, owner.as_ref().map(|o| o.0.as_str())),
        )
        .unwrap();
        chown_all(&dir.path, &owner);
        let mut cmd = match &unshare {
            Some(u) => {
                let mut c = Command::new(u);
                c.args(["--pid", "--fork", "--kill-child"]).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        // -N: in the foreground, as this test's own child.
        cmd.arg("-N").arg("-f").arg(&cfg);
        match launch(cmd, &dir.path, port) {
            Ok(child) => {
                return Some(Proxy {
                    port,
                    kind: "squid",
                    log: dir.path.join("access.log"),
                    dir,
                    child,
                    wrapped: unshare.is_some(),
                })
            }
            Err(e) => last = e,
        }
    }
    panic!("squid did not start: {last}");
}

/// What tinyproxy allows: destinations whose host matches one of `filter`
/// (POSIX extended regular expressions, default deny), CONNECT only to
/// `connect_ports`; with `auth`, Basic authentication first.
#[derive(Default, Clone)]
pub struct TinyConf {
    pub filter: Vec<String>,
    pub connect_ports: Vec<u16>,
    pub auth: Option<(String, String)>,
}

/// tinyproxy with `conf`, or None (and a SKIP: line; a failure under
/// CI=true) when tinyproxy is not installed.
pub fn tinyproxy(test: &str, conf: &TinyConf) -> Option<Proxy> {
    if let Some(why) = missing("tinyproxy") {
        skip_or_fail(test, &why);
        return None;
    }
    let bin = find("tinyproxy").unwrap();
    let owner = drop_to("nobody");
    let mut last = String::new();
    for _ in 0..3 {
        let dir = TempPath::dir("tinyproxy").expect("tinyproxy dir");
        let port = free_port();
        let d = dir.path.display();
        fs::write(dir.path.join("filter"), conf.filter.join("\n") + "\n").unwrap();
        let mut cfg = format!(
            "Port {port}\n\
             Listen 127.0.0.1\n\
             Timeout 5\n\
             MaxClients 20\n\
             LogLevel Info\n\
             LogFile \"{d}/tinyproxy.log\"\n\
             PidFile \"{d}/tinyproxy.pid\"\n\
             Filter \"{d}/filter\"\n\
             FilterType ere\n\
             FilterDefaultDeny Yes\n"
        );
        if conf.connect_ports.is_empty() {
            cfg.push_str("ConnectPort 0\n");
        }
        for p in &conf.connect_ports {
            cfg.push_str(&format!("ConnectPort {p}\n"));
        }
        if let Some((u, p)) = &conf.auth {
            cfg.push_str(&format!("BasicAuth {u} {p}\n"));
        }
        if let Some((u, _, g)) = &owner {
            cfg.push_str(&format!("User {u}\nGroup {g}\n"));
        }
        let path = dir.path.join("tinyproxy.conf");
        fs::write(&path, cfg).unwrap();
        chown_all(&dir.path, &owner);
        let mut cmd = Command::new(&bin);
        // -d: in the foreground, as this test's own child.
        cmd.arg("-d").arg("-c").arg(&path);
        match launch(cmd, &dir.path, port) {
            Ok(child) => {
                return Some(Proxy {
                    port,
                    kind: "tinyproxy",
                    log: dir.path.join("tinyproxy.log"),
                    dir,
                    child,
                    // One process, no helpers.
                    wrapped: false,
                });
            }
            Err(e) => last = e,
        }
    }
    panic!("tinyproxy did not start: {last}");
}
