//! Registry credentials and challenges.
//!
//! Credentials come from the files the container tools write, in the order
//! containers-auth.json(5) gives (the first file with an entry for the
//! registry wins): `$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`
//! (podman login), `~/.config/containers/auth.json`, then Docker's
//! `$DOCKER_CONFIG/config.json` or `~/.docker/config.json` (docker login).
//! Each holds `{"auths": {"<registry>": {"auth": base64("user:password")}}}`;
//! a key may carry a scheme (`https://index.docker.io/v1/`) or, in the
//! containers tools' files, a repository path (`registry.example.com/team`:
//! the longest match wins). Credential helpers (`credHelpers`, `credsStore`)
//! are programs: selfprobe runs none, and says so when one is all a file
//! has for the registry.
//!
//! A credential is never printed, logged or put in an error: messages name
//! the file it came from and the registry, nothing else of it (not the user
//! name either). It lives in Zeroizing memory.
//!
//! Challenges are RFC 7235 `WWW-Authenticate` values: `Basic realm="…"`
//! (the htpasswd of Debian's docker-registry) and `Bearer realm="…",
//! service="…",scope="…"` (the distribution spec's token flow, docs/spec/auth/token.md).

use std::path::{Path, PathBuf};

use serde_json::Value;
use zeroize::Zeroizing;

use selfprobe::host::{read_regular, Environ};
use selfprobe::util::codec;

/// An auth file is a few entries; a larger one is not read.
const MAX_AUTH_FILE: u64 = 1 << 20;

/// A user name and password, and the file they came from.
pub struct Credential {
    pub user: Zeroizing<String>,
    pub password: Zeroizing<String>,
    /// Where it came from, as shown to the user.
    pub source: String,
}

impl Credential {
    /// The `Authorization` value for Basic.
    pub fn basic(&self) -> Zeroizing<String> {
        let mut raw = Zeroizing::new(String::new());
        raw.push_str(&self.user);
        raw.push(':');
        raw.push_str(&self.password);
        Zeroizing::new(format!("Basic {}", codec::b64_encode(raw.as_bytes())))
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential(from {})", self.source)
    }
}

/// What the credential search found for a registry.
#[derive(Debug, Default)]
pub struct Lookup {
    pub credential: Option<Credential>,
    /// The files read, each with what it held for the registry.
    pub searched: Vec<String>,
    /// A file that could not be used (unreadable, not JSON, a bad `auth`):
    /// a usage error, since the user pointed there.
    pub broken: Option<String>,
}

/// The auth files to read, in order, from the environment.
pub fn auth_files(env: &Environ) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(f) = env.get("REGISTRY_AUTH_FILE").filter(|v| !v.is_empty()) {
        out.push(PathBuf::from(f));
    }
    if let Some(d) = env.get("XDG_RUNTIME_DIR").filter(|v| v.starts_with('/')) {
        out.push(Path::new(d).join("containers/auth.json"));
    }
    let home = env.get("HOME").filter(|v| v.starts_with('/'));
    if let Some(h) = home {
        out.push(Path::new(h).join(".config/containers/auth.json"));
    }
    match env.get("DOCKER_CONFIG").filter(|v| v.starts_with('/')) {
        Some(d) => out.push(Path::new(d).join("config.json")),
        None => {
            if let Some(h) = home {
                out.push(Path::new(h).join(".docker/config.json"));
            }
        }
    }
    out
}

/// The registry's names in auth files: Docker Hub has several.
fn keys_for(registry: &str) -> Vec<&str> {
    if registry == super::reference::DOCKER_HUB {
        vec!["docker.io", "index.docker.io", "registry-1.docker.io"]
    } else {
        vec![registry]
    }
}

/// A key of `auths` without its scheme and Docker Hub's `/v1/`.
fn normalize_key(k: &str) -> &str {
    let k = k
        .strip_prefix("https://")
        .or_else(|| k.strip_prefix("http://"))
        .unwrap_or(k);
    let k = k.strip_suffix("/v1/").unwrap_or(k);
    k.trim_end_matches('/')
}

/// Finds the credential for `registry` (and `repository`, for keys with a
/// path) in `files`.
pub fn lookup(files: &[PathBuf], registry: &str, repository: &str) -> Lookup {
    let mut out = Lookup::default();
    let names = keys_for(registry);
    for f in files {
        let shown = f.display().to_string();
        let bytes = match read_regular(f, MAX_AUTH_FILE) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                out.searched.push(format!("{shown}: not there"));
                continue;
            }
            Err(e) => {
                out.broken = Some(format!("{shown}: cannot be read: {e}"));
                return out;
            }
        };
        let doc: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                out.broken = Some(format!(
                    "{shown}: not JSON ({e}): expected {{\"auths\": {{\"<registry>\": {{\"auth\": \"<base64 of user:password>\"}}}}}}"
                ));
                return out;
            }
        };
        // The most specific key: the registry alone, or with a repository
        // path that the repository is in.
        let mut best: Option<(usize, &Value)> = None;
        if let Some(auths) = doc.get("auths").and_then(Value::as_object) {
            for (k, v) in auths {
                let key = normalize_key(k);
                let spec = names.iter().find_map(|n| {
                    if key == *n {
                        Some(0)
                    } else {
                        let path = key.strip_prefix(n)?.strip_prefix('/')?;
                        let within = repository == path
                            || repository
                                .strip_prefix(path)
                                .is_some_and(|r| r.starts_with('/'));
                        within.then_some(path.len())
                    }
                });
                if let Some(s) = spec {
                    if best.is_none_or(|(b, _)| s > b) {
                        best = Some((s, v));
                    }
                }
            }
        }
        if let Some((_, entry)) = best {
            match credential_of(entry) {
                Ok(Some((user, password))) => {
                    out.credential = Some(Credential {
                        user,
                        password,
                        source: shown.clone(),
                    });
                    out.searched
                        .push(format!("{shown}: an entry for {registry}"));
                    return out;
                }
                Ok(None) => {
                    out.searched.push(format!(
                        "{shown}: the entry for {registry} has no auth (an identitytoken or an empty entry: selfprobe uses only auth, or username and password)"
                    ));
                }
                Err(why) => {
                    out.broken = Some(format!("{shown}: the entry for {registry}: {why}"));
                    return out;
                }
            }
            continue;
        }
        let helper = names.iter().find_map(|n| {
            doc.get("credHelpers")
                .and_then(|h| h.get(*n))
                .and_then(Value::as_str)
        });
        let store = doc.get("credsStore").and_then(Value::as_str);
        match (helper, store) {
            (Some(h), _) | (None, Some(h)) => out.searched.push(format!(
                "{shown}: no auths entry for {registry}; it names the credential helper docker-credential-{}, and selfprobe runs no helper programs (add an auths entry, or log in with podman login, which writes one)",
                selfprobe::util::sanitize::short(h, 40)
            )),
            (None, None) => out.searched.push(format!("{shown}: no entry for {registry}")),
        }
    }
    out
}

type UserPass = (Zeroizing<String>, Zeroizing<String>);

/// `auth` (base64 of user:password), else `username` and `password`.
fn credential_of(entry: &Value) -> Result<Option<UserPass>, String> {
    if let Some(a) = entry
        .get("auth")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
    {
        let raw = Zeroizing::new(
            codec::b64_decode_loose(a)
                .ok_or("auth is not base64 (expected base64 of user:password)")?,
        );
        let text = std::str::from_utf8(&raw)
            .map_err(|_| "auth does not decode to text (expected user:password)")?;
        let (u, p) = text
            .split_once(':')
            .ok_or("auth does not decode to user:password (no ':')")?;
        return Ok(Some((
            Zeroizing::new(u.to_string()),
            Zeroizing::new(p.to_string()),
        )));
    }
    match (
        entry.get("username").and_then(Value::as_str),
        entry.get("password").and_then(Value::as_str),
    ) {
        (Some(u), Some(p)) if !u.is_empty() => Ok(Some((
            Zeroizing::new(u.to_string()),
            Zeroizing::new(p.to_string()),
        ))),
        _ => Ok(None),
    }
}

/// One challenge of a WWW-Authenticate header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// Lowercase: `basic`, `bearer`.
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Parses `Scheme k=v, k="v", …` (one challenge: registries send one per
/// header). Quoted strings may hold commas and backslash escapes.
pub fn parse_challenge(value: &str) -> Option<Challenge> {
    let value = value.trim();
    let (scheme, mut rest) = match value.split_once(' ') {
        Some((s, r)) => (s, r.trim_start()),
        None => (value, ""),
    };
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return None;
    }
    let mut params = Vec::new();
    while !rest.is_empty() && params.len() < 16 {
        let (k, after) = rest.split_once('=')?;
        let k = k.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (v, next) = if let Some(q) = after.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = q.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            v.push(n);
                        }
                    }
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => v.push(c),
                }
            }
            (v, &q[end?..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        params.push((k, v));
        rest = next.trim_start().trim_start_matches(',').trim_start();
    }
    Some(Challenge {
        scheme: scheme.to_ascii_lowercase(),
        params,
    })
}

/// The token of a token endpoint's JSON answer (`token`, or OAuth2's
/// `access_token`).
pub fn token_of(body: &[u8]) -> Option<Zeroizing<String>> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let t = v
        .get("token")
        .or_else(|| v.get("access_token"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))?;
    Some(Zeroizing::new(t.to_string()))
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "selfprobe-auth-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn challenges_parse() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:team/app:pull,push""#,
        )
        .unwrap();
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.param("realm"), Some("https://auth.example.com/token"));
        assert_eq!(c.param("service"), Some("registry.example.com"));
        assert_eq!(c.param("scope"), Some("repository:team/app:pull,push"));
        let b = parse_challenge(r#"Basic realm="basic-realm""#).unwrap();
        assert_eq!(
            (b.scheme.as_str(), b.param("realm")),
            ("basic", Some("basic-realm"))
        );
        let e = parse_challenge(r#"Basic realm="a \"q\" b", charset=UTF-8"#).unwrap();
        assert_eq!(e.param("realm"), Some(r#"a "q" b"#));
        assert_eq!(e.param("charset"), Some("UTF-8"));
        assert!(parse_challenge(r#"Bearer realm="unterminated"#).is_none());
        assert_eq!(parse_challenge("Basic").unwrap().params, vec![]);
    }

    #[test]
    fn credentials_from_the_files_in_order_and_by_specificity() {
        let d = dir("files");
        let (podman, docker) = (d.join("auth.json"), d.join("config.json"));
        // "user:canary-pw-1" and "other:canary-pw-2".
        std::fs::write(
            &podman,
            r#"{"auths":{"127.0.0.1:5000/team":{"auth":"dXNlcjpjYW5hcnktcHctMQ=="},"ghcr.io":{}}}"#,
        )
        .unwrap();
        std::fs::write(
            &docker,
            r#"{"auths":{"127.0.0.1:5000":{"auth":"b3RoZXI6Y2FuYXJ5LXB3LTI="},"https://index.docker.io/v1/":{"username":"hub","password":"pw"}},"credHelpers":{"gcr.io":"gcloud"}}"#,
        )
        .unwrap();
        let files = vec![podman.clone(), docker.clone()];
        let l = lookup(&files, "127.0.0.1:5000", "team/app");
        let c = l.credential.unwrap();
        assert_eq!(
            (c.user.as_str(), c.password.as_str()),
            ("user", "canary-pw-1")
        );
        assert_eq!(c.source, podman.display().to_string());
        assert!(
            !format!("{c:?}").contains("canary"),
            "Debug shows no secret"
        );
        // Outside team/: the path-scoped key does not apply; Docker's does.
        let c = lookup(&files, "127.0.0.1:5000", "teamx/app")
            .credential
            .unwrap();
        assert_eq!(c.password.as_str(), "canary-pw-2");
        assert_eq!(c.basic().as_str(), "Basic b3RoZXI6Y2FuYXJ5LXB3LTI=");
        let hub = lookup(&files, "docker.io", "library/alpine")
            .credential
            .unwrap();
        assert_eq!(hub.user.as_str(), "hub");
        // An empty entry, then a helper: no credential, and the reasons.
        let l = lookup(&files, "ghcr.io", "o/app");
        assert!(l.credential.is_none());
        assert!(l.searched[0].contains("has no auth"), "{:?}", l.searched);
        let l = lookup(&files, "gcr.io", "p/app");
        assert!(
            l.searched[1].contains("docker-credential-gcloud"),
            "{:?}",
            l.searched
        );
        // A broken file is said, without its contents.
        std::fs::write(
            &podman,
            r#"{"auths":{"127.0.0.1:5000":{"auth":"!!canary!!"}}}"#,
        )
        .unwrap();
        let l = lookup(&files, "127.0.0.1:5000", "a");
        let b = l.broken.unwrap();
        assert!(b.contains("not base64") && !b.contains("canary"), "{b}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_files_searched_follow_the_environment() {
        let env = Environ::from_vars(vec![
            ("HOME".into(), "/home/u".into()),
            ("XDG_RUNTIME_DIR".into(), "/run/user/1000".into()),
            ("REGISTRY_AUTH_FILE".into(), "/etc/auth.json".into()),
        ]);
        assert_eq!(
            auth_files(&env),
            vec![
                PathBuf::from("/etc/auth.json"),
                PathBuf::from("/run/user/1000/containers/auth.json"),
                PathBuf::from("/home/u/.config/containers/auth.json"),
                PathBuf::from("/home/u/.docker/config.json"),
            ]
        );
        let env = Environ::from_vars(vec![("DOCKER_CONFIG".into(), "/d".into())]);
        assert_eq!(auth_files(&env), vec![PathBuf::from("/d/config.json")]);
    }

    #[test]
    fn tokens_and_query_values() {
        assert_eq!(
            token_of(br#"{"token":"abc.def"}"#).unwrap().as_str(),
            "abc.def"
        );
        assert_eq!(token_of(br#"{"access_token":"x"}"#).unwrap().as_str(), "x");
        assert!(token_of(br#"{"token":"a b"}"#).is_none());
        assert!(token_of(b"not json").is_none());
        assert_eq!(
            query_escape("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
    }
}
