//! Debian's docker-registry (distribution 2.8), started by a test for
//! itself: `docker-registry serve CONFIG` on a free 127.0.0.1 port, its
//! storage, configuration and htpasswd in a temporary directory, killed by
//! its pid when dropped. The system service the package may install is
//! never used (.ci/run stops it). Optional: htpasswd (bcrypt, from
//! `htpasswd -B` of apache2-utils) and TLS with a CA of the test's own.
//! Images are pushed with skopeo from a tarball made here: nothing is
//! pulled.
#![allow(dead_code)]

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::netserve;
use super::podman::{run_bounded, skip_or_fail, stop_child, unique, TempPath};

pub struct Registry {
    child: Child,
    pub dir: TempPath,
    pub port: u16,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// The CA that signed its certificate, when it serves TLS.
    pub ca: Option<PathBuf>,
}

pub struct Auth<'a> {
    pub user: &'a str,
    pub password: &'a str,
}

/// Which of the tools the registry tests use is missing, if one is.
pub fn missing(tools: &[&str]) -> Option<String> {
    for t in tools {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            let pkg = match *t {
                "docker-registry" => "docker-registry",
                "htpasswd" => "apache2-utils",
                other => other,
            };
            return Some(format!(
                "{t} not found (apt-get install -y {pkg}; .ci/run installs it)"
            ));
        }
    }
    None
}

/// The gate of a registry test: false after a visible SKIP (a failure
/// under CI=true).
pub fn ready(test: &str, tools: &[&str]) -> bool {
    match missing(tools) {
        Some(why) => {
            skip_or_fail(test, &why);
            false
        }
        None => true,
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn pem(label: &str, der: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    let b = Base64::encode_string(der);
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in b.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(line).unwrap());
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

/// The distribution spec's token authentication: the registry sends
/// clients to `realm` for a JWT that `issuer` signed with the key of the
/// certificate in `bundle`.
pub struct TokenAuth<'a> {
    pub realm: &'a str,
    pub service: &'a str,
    pub issuer: &'a str,
    pub bundle: &'a Path,
}

impl Registry {
    /// Starts one; panics with its log when it does not come up.
    pub fn start(auth: Option<&Auth>, tls: bool) -> Registry {
        Registry::start_with(auth, None, tls)
    }

    pub fn start_with(auth: Option<&Auth>, token: Option<&TokenAuth>, tls: bool) -> Registry {
        let dir = TempPath::dir("registry").expect("registry dir");
        let mut extra = String::new();
        if let Some(t) = token {
            extra.push_str(&format!(
                "auth:\n  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                t.realm,
                t.service,
                t.issuer,
                t.bundle.display()
            ));
        }
        if let Some(a) = auth {
            let htpasswd = dir.path.join("htpasswd");
            let mut c = Command::new("htpasswd")
                .args(["-B", "-i", "-n", a.user])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn htpasswd");
            c.stdin
                .take()
                .unwrap()
                .write_all(a.password.as_bytes())
                .unwrap();
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "htpasswd -B: {:?}", out);
            std::fs::write(&htpasswd, &out.stdout).unwrap();
            extra.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: selfprobe-test\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let mut ca = None;
        let mut http_tls = String::new();
        if tls {
            let (authority, leaf) =
                netserve::ca_and_leaf("selfprobe test registry CA", &["127.0.0.1"]);
            let (cert, key, ca_file) = (
                dir.path.join("registry.crt"),
                dir.path.join("registry.key"),
                dir.path.join("ca.crt"),
            );
            std::fs::write(&cert, &leaf.cert_pem).unwrap();
            std::fs::write(&key, pem("PRIVATE KEY", &leaf.key_der)).unwrap();
            std::fs::write(&ca_file, &authority.cert_pem).unwrap();
            http_tls = format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                cert.display(),
                key.display()
            );
            ca = Some(ca_file);
        }
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            let config = dir.path.join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: {}\n{http_tls}{extra}",
                    dir.path.join("store").display(),
                    unique("secret")
                ),
            )
            .unwrap();
            let log = std::fs::File::create(dir.path.join("registry.log")).unwrap();
            let mut child = Command::new("docker-registry")
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("spawn docker-registry");
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Registry {
                        child,
                        port,
                        addr: format!("127.0.0.1:{port}"),
                        ca,
                        dir,
                    };
                }
                if let Ok(Some(st)) = child.try_wait() {
                    // Most likely the port was taken meanwhile: another try.
                    last = format!(
                        "docker-registry exited {st}: {}",
                        std::fs::read_to_string(dir.path.join("registry.log")).unwrap_or_default()
                    );
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last = "docker-registry did not listen within 20 s".into();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("docker-registry did not start: {last}");
    }

    /// skopeo's TLS flags for this registry.
    fn skopeo_tls(&self, prefix: &str) -> Vec<String> {
        match &self.ca {
            Some(ca) => vec![format!(
                "--{prefix}cert-dir={}",
                ca.parent().unwrap().join("skopeo-certs").display()
            )],
            None => vec![format!("--{prefix}tls-verify=false")],
        }
    }

    fn skopeo_certs(&self) {
        if let Some(ca) = &self.ca {
            let d = ca.parent().unwrap().join("skopeo-certs");
            let _ = std::fs::create_dir(&d);
            std::fs::copy(ca, d.join("ca.crt")).unwrap();
        }
    }

    /// Pushes a one-file image to `repo:tag` with skopeo (from a tarball
    /// made here) and returns its manifest digest.
    pub fn push_image(&self, repo: &str, tag: &str, authfile: Option<&Path>) -> String {
        self.skopeo_certs();
        let tree = self.dir.path.join(format!("image-{tag}"));
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("hello"), format!("{}\n", unique("image"))).unwrap();
        let tar = self.dir.path.join(format!("image-{tag}.tar"));
        super::engines::pack(&tree, &tar).unwrap();
        let digestfile = self.dir.path.join(format!("digest-{tag}"));
        let mut cmd = Command::new("skopeo");
        cmd.arg("copy")
            .args(self.skopeo_tls("dest-"))
            .arg("--digestfile")
            .arg(&digestfile);
        if let Some(a) = authfile {
            cmd.arg("--dest-authfile").arg(a);
        }
        cmd.arg(format!("tarball:{}", tar.display()))
            .arg(format!("docker://{}/{repo}:{tag}", self.addr));
        let out = run_bounded(cmd, Duration::from_secs(60), None).unwrap();
        assert_eq!(out.code, Some(0), "skopeo copy: {}", out.stderr);
        std::fs::read_to_string(&digestfile)
            .unwrap()
            .trim()
            .to_string()
    }

    /// `skopeo inspect --raw docker://ADDR/REF`: the manifest's bytes as
    /// the registry serves them.
    pub fn skopeo_raw(&self, reference: &str, authfile: Option<&Path>) -> Vec<u8> {
        self.skopeo_certs();
        let mut cmd = Command::new("skopeo");
        cmd.arg("inspect").arg("--raw").args(self.skopeo_tls(""));
        if let Some(a) = authfile {
            cmd.arg("--authfile").arg(a);
        }
        cmd.arg(format!("docker://{}/{reference}", self.addr));
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "skopeo inspect --raw {reference}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// `skopeo copy docker://ADDR/REF dir:OUT`: the artifact's blobs as
    /// files named by their digests' hex.
    pub fn skopeo_copy_dir(&self, reference: &str, out: &Path, authfile: Option<&Path>) {
        self.skopeo_certs();
        let mut cmd = Command::new("skopeo");
        cmd.arg("copy").args(self.skopeo_tls("src-"));
        if let Some(a) = authfile {
            cmd.arg("--src-authfile").arg(a);
        }
        cmd.arg(format!("docker://{}/{reference}", self.addr))
            .arg(format!("dir:{}", out.display()));
        let o = run_bounded(cmd, Duration::from_secs(60), None).unwrap();
        assert_eq!(o.code, Some(0), "skopeo copy {reference}: {}", o.stderr);
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        stop_child(&mut self.child);
    }
}

/// An auth.json (the containers tools' and Docker's format) holding `auth`
/// for `registry`.
pub fn auth_file(dir: &Path, name: &str, registry: &str, auth: &Auth) -> PathBuf {
    use base64ct::{Base64, Encoding};
    let p = dir.join(name);
    let b = Base64::encode_string(format!("{}:{}", auth.user, auth.password).as_bytes());
    std::fs::write(
        &p,
        format!("{{\"auths\":{{\"{registry}\":{{\"auth\":\"{b}\"}}}}}}\n"),
    )
    .unwrap();
    p
}

/// A token service of the test's own, for docker-registry's token
/// authentication: on 127.0.0.1, it answers `GET /token?…` with a JWT
/// (ES256, the signing certificate in its x5c header) granting what the
/// scope asks, when the request carries `user:password` as Basic
/// credentials, and 401 otherwise. Every token it issued is kept, so a test
/// can check none is printed. Stopped on drop.
pub struct TokenServer {
    pub port: u16,
    pub bundle: PathBuf,
    pub issued: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub const TOKEN_SERVICE: &str = "selfprobe-test-registry";
pub const TOKEN_ISSUER: &str = "selfprobe-test-token-issuer";

fn b64url(b: &[u8]) -> String {
    use base64ct::{Base64UrlUnpadded, Encoding};
    Base64UrlUnpadded::encode_string(b)
}

/// An ASN.1 ECDSA signature (SEQUENCE of two INTEGERs) as JWS's r||s.
fn der_to_raw(der: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 2; // SEQUENCE, length (short form for P-256)
    for _ in 0..2 {
        assert_eq!(der[i], 0x02, "an INTEGER");
        let len = der[i + 1] as usize;
        let mut v = &der[i + 2..i + 2 + len];
        while v.len() > 32 && v[0] == 0 {
            v = &v[1..];
        }
        out.extend(std::iter::repeat_n(0u8, 32 - v.len()));
        out.extend_from_slice(v);
        i += 2 + len;
    }
    out
}

impl TokenServer {
    pub fn start(dir: &Path, user: &str, password: &str) -> TokenServer {
        use base64ct::{Base64, Encoding};
        use rcgen::SigningKey;
        use std::io::Read;
        let key = rcgen::KeyPair::generate().expect("a P-256 key");
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "selfprobe test token issuer");
        let cert = p.self_signed(&key).unwrap();
        let bundle = dir.join("token-issuer.crt");
        std::fs::write(&bundle, cert.pem()).unwrap();
        let x5c = Base64::encode_string(cert.der());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let expected = format!(
            "Basic {}",
            Base64::encode_string(format!("{user}:{password}").as_bytes())
        );
        let user = user.to_string();
        let issued = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (issued2, stop2) = (issued.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                let (mut c, _) = match listener.accept() {
                    Ok(c) => c,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                };
                let _ = c.set_nonblocking(false);
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                let mut req = Vec::new();
                let mut b = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 65536 {
                    match c.read(&mut b) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&b[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&req).into_owned();
                let authorized = head
                    .lines()
                    .filter_map(|l| l.split_once(':'))
                    .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && v.trim() == expected);
                let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let scopes: Vec<String> = target
                    .split(['?', '&'])
                    .filter_map(|kv| kv.strip_prefix("scope="))
                    .map(|v| {
                        v.replace("%3A", ":")
                            .replace("%2F", "/")
                            .replace("%2C", ",")
                    })
                    .collect();
                let answer = if !authorized || !target.starts_with("/token") {
                    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 70\r\nConnection: close\r\n\r\n{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"bad user or password\"}]}\n".to_string()
                } else {
                    let access: Vec<serde_json::Value> = scopes
                        .iter()
                        .filter_map(|s| {
                            let mut p = s.splitn(3, ':');
                            let (t, n, a) = (p.next()?, p.next()?, p.next()?);
                            Some(serde_json::json!({"type": t, "name": n, "actions": a.split(',').collect::<Vec<_>>()}))
                        })
                        .collect();
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_secs();
                    let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "x5c": [x5c]});
                    let claims = serde_json::json!({
                        "iss": TOKEN_ISSUER, "sub": user, "aud": TOKEN_SERVICE,
                        "exp": now + 300, "nbf": now - 10, "iat": now,
                        "jti": unique("jti"), "access": access,
                    });
                    let input = format!(
                        "{}.{}",
                        b64url(header.to_string().as_bytes()),
                        b64url(claims.to_string().as_bytes())
                    );
                    let sig = der_to_raw(&key.sign(input.as_bytes()).unwrap());
                    let jwt = format!("{input}.{}", b64url(&sig));
                    issued2.lock().unwrap().push(jwt.clone());
                    let body =
                        serde_json::json!({"token": jwt, "access_token": jwt, "expires_in": 300})
                            .to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = std::io::Write::write_all(&mut c, answer.as_bytes());
            }
        });
        TokenServer {
            port,
            bundle,
            issued,
            stop,
            thread: Some(thread),
        }
    }

    pub fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
