//! `REF@DIGEST`: an image reference pinned to a manifest digest, parsed by
//! the rules Docker and the containers tools share: the first path
//! component names a registry when it holds a `.` or a `:` or is
//! `localhost`, else the image is on Docker Hub (and a one-component name
//! is under `library/`). Attestations attach to a digest, never to a tag:
//! a tag can move to another image after the attestation was made.

use std::fmt;
use std::net::IpAddr;

/// Docker Hub's name in references and credential files, and where its API is.
pub const DOCKER_HUB: &str = "docker.io";
const DOCKER_HUB_API: &str = "registry-1.docker.io";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The registry as written (`127.0.0.1:5000`, `[::1]:5000`,
    /// `ghcr.io`), `docker.io` when none was: the key of credential files.
    pub registry: String,
    /// The host to connect to, without brackets.
    pub host: String,
    /// The port, when one was written.
    pub port: Option<u16>,
    /// `team/app` (`library/alpine` on Docker Hub).
    pub repository: String,
    /// The tag, when one was written beside the digest; only shown.
    pub tag: Option<String>,
    /// `sha256:<64 hex>`.
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefError {
    pub given: String,
    pub why: String,
}

impl fmt::Display for RefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not REF@DIGEST: {} (expected e.g. registry.example.com/team/app@sha256:<64 hex digits>)",
            selfprobe::util::sanitize::short(&self.given, 200),
            self.why
        )
    }
}

impl std::error::Error for RefError {}

impl Reference {
    pub fn parse(s: &str) -> Result<Reference, RefError> {
        let err = |why: &str| RefError {
            given: s.to_string(),
            why: why.to_string(),
        };
        let Some((name, digest)) = s.rsplit_once('@') else {
            return Err(err("no @sha256:… digest: attestations attach to a manifest digest, not to a tag, which can move"));
        };
        let hex = digest
            .strip_prefix("sha256:")
            .ok_or_else(|| err("the digest does not start with sha256:"))?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(err(
                "the digest is not 64 lowercase hexadecimal digits after sha256:",
            ));
        }
        let (first, rest) = match name.split_once('/') {
            Some((f, r)) if f.contains(['.', ':']) || f == "localhost" => (Some(f), r),
            _ => (None, name),
        };
        // A tag is after the last ':' that follows the last '/'.
        let last = rest.rsplit('/').next().unwrap_or(rest);
        let (repo, tag) = match last.rsplit_once(':') {
            Some((_, t)) => {
                let cut = rest.len() - t.len() - 1;
                (&rest[..cut], Some(t))
            }
            None => (rest, None),
        };
        if let Some(t) = tag {
            let ok = !t.is_empty()
                && t.len() <= 128
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
                && !t.starts_with(['.', '-']);
            if !ok {
                return Err(err("the tag is not [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"));
            }
        }
        check_repository(repo).map_err(|w| err(&w.to_string()))?;
        let (registry, host, port) = match first {
            Some(r) => {
                let (h, p) = split_host_port(r).map_err(|w| err(&w.to_string()))?;
                (r.to_string(), h, p)
            }
            None => (DOCKER_HUB.to_string(), DOCKER_HUB_API.to_string(), None),
        };
        let repository = if first.is_none() && !repo.contains('/') {
            format!("library/{repo}")
        } else {
            repo.to_string()
        };
        Ok(Reference {
            registry,
            host,
            port,
            repository,
            tag: tag.map(str::to_string),
            digest: digest.to_string(),
        })
    }

    /// The digest's hex, without `sha256:`.
    pub fn hex(&self) -> &str {
        &self.digest["sha256:".len()..]
    }

    /// The referrers tag schema's tag for this digest (distribution spec
    /// 1.1, "Referrers Tag Schema"): `sha256-<hex>`.
    pub fn referrers_tag(&self) -> String {
        format!("sha256-{}", self.hex())
    }

    /// Plain HTTP may be used only here: the registry is on this machine
    /// (127.0.0.0/8, ::1 or localhost), as Docker treats such registries.
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        write!(f, "@{}", self.digest)
    }
}

/// A digest from a registry's answer, checked before it is used in a
/// request line or shown: `algorithm:hex` as the OCI image spec gives it
/// (algorithm: lower-case letters and digits, components joined by `+`,
/// `.`, `_` or `-`), with lower-case hex of the length the algorithm has
/// (sha256: 64, sha512: 128; another: 32 to 128 digits). Err says what is
/// wrong, with the value escaped and cut for a terminal.
pub fn check_digest(d: &str) -> Result<(), DigestError> {
    let bad = |problem| {
        let mut shown: String = d.chars().take(100).collect();
        if d.chars().count() > 100 {
            shown.push('…');
        }
        Err(DigestError {
            shown: selfprobe::util::sanitize::escape(&shown),
            problem,
        })
    };
    let Some((alg, hex)) = d.split_once(':') else {
        return bad(DigestProblem::NoColon);
    };
    let alg_ok = !alg.is_empty()
        && alg.len() <= 32
        && alg.split(['+', '.', '_', '-']).all(|c| {
            !c.is_empty()
                && c.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if !alg_ok {
        return bad(DigestProblem::Algorithm);
    }
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return bad(DigestProblem::NotHex);
    }
    let len_ok = match alg {
        "sha256" => hex.len() == 64,
        "sha512" => hex.len() == 128,
        _ => (32..=128).contains(&hex.len()),
    };
    if !len_ok {
        return bad(DigestProblem::Length);
    }
    Ok(())
}

/// A digest that is not `algorithm:hex`: `shown` is the value escaped and
/// cut for a terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the digest '{shown}' {problem}: expected algorithm:hex (e.g. sha256:<64 hex digits>)")]
pub struct DigestError {
    pub shown: String,
    pub problem: DigestProblem,
}

/// What is wrong with a digest (the words fit "the digest '…' ___").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DigestProblem {
    #[error("has no ':'")]
    NoColon,
    #[error("has an algorithm that is not lower-case letters and digits")]
    Algorithm,
    #[error("holds more than lower-case hex digits after the ':'")]
    NotHex,
    #[error("has the wrong number of hex digits for its algorithm")]
    Length,
}

/// A part of a reference that is not as the distribution spec and Docker
/// have it: the `why` of a RefError. Names are cut for a terminal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("an IPv6 address without its closing ]")]
    UnclosedV6,
    #[error("[{0}] is not an IPv6 address")]
    NotV6(String),
    #[error("text after the IPv6 address")]
    AfterV6,
    #[error("the port '{0}' is not a number from 1 to 65535")]
    Port(String),
    #[error("the registry host '{}' is not a name or an IP address", selfprobe::util::sanitize::short(.0, 80))]
    Host(String),
    #[error("the repository name is empty or longer than 255 characters")]
    RepositoryLength,
    #[error(
        "the repository component '{}' is not lowercase letters and digits joined by '.', '_' or '-'",
        selfprobe::util::sanitize::short(.0, 80)
    )]
    RepositoryComponent(String),
}

pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_end_matches('.');
    h.eq_ignore_ascii_case("localhost") || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
pub fn split_host_port(s: &str) -> Result<(String, Option<u16>), NameError> {
    let (host, port) = if let Some(r) = s.strip_prefix('[') {
        let (h, after) = r.split_once(']').ok_or(NameError::UnclosedV6)?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(NameError::NotV6(h.to_string()));
        }
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':').ok_or(NameError::AfterV6)?)),
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| NameError::Port(p.to_string()))?,
        ),
        None => None,
    };
    let name_ok = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'));
    if !name_ok {
        return Err(NameError::Host(host.to_string()));
    }
    Ok((host.to_string(), port))
}

/// The distribution spec's repository name: path components of lowercase
/// letters and digits, separated within by `.`, `_`, `__` or dashes.
fn check_repository(repo: &str) -> Result<(), NameError> {
    if repo.is_empty() || repo.len() > 255 {
        return Err(NameError::RepositoryLength);
    }
    for c in repo.split('/') {
        let ok = !c.is_empty()
            && c.bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
            && c.as_bytes()[0].is_ascii_alphanumeric()
            && c.as_bytes()[c.len() - 1].is_ascii_alphanumeric()
            && !c.contains("..")
            && !c.contains("___");
        if !ok {
            return Err(NameError::RepositoryComponent(c.to_string()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_parse_as_docker_reads_them() {
        let r = Reference::parse(&format!("127.0.0.1:5000/team/app:v1@{D}")).unwrap();
        assert_eq!(
            (r.registry.as_str(), r.host.as_str(), r.port),
            ("127.0.0.1:5000", "127.0.0.1", Some(5000))
        );
        assert_eq!(
            (r.repository.as_str(), r.tag.as_deref()),
            ("team/app", Some("v1"))
        );
        assert!(r.is_loopback());
        assert_eq!(r.referrers_tag(), format!("sha256-{}", &D[7..]));
        assert_eq!(r.to_string(), format!("127.0.0.1:5000/team/app:v1@{D}"));

        let hub = Reference::parse(&format!("alpine@{D}")).unwrap();
        assert_eq!(
            (
                hub.registry.as_str(),
                hub.host.as_str(),
                hub.repository.as_str()
            ),
            ("docker.io", "registry-1.docker.io", "library/alpine")
        );
        assert!(!hub.is_loopback());
        let ns = Reference::parse(&format!("team/app@{D}")).unwrap();
        assert_eq!(ns.repository, "team/app");
        let v6 = Reference::parse(&format!("[::1]:5001/app@{D}")).unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", Some(5001)));
        assert!(v6.is_loopback());
        let lh = Reference::parse(&format!("localhost/app@{D}")).unwrap();
        assert_eq!((lh.host.as_str(), lh.port), ("localhost", None));
        assert!(lh.is_loopback());
        assert!(!Reference::parse(&format!("ghcr.io/o/app@{D}"))
            .unwrap()
            .is_loopback());
    }

    #[test]
    fn registry_digests_are_algorithm_and_hex_or_refused() {
        assert_eq!(check_digest(D), Ok(()));
        assert_eq!(check_digest(&format!("sha512:{}", "a".repeat(128))), Ok(()));
        assert_eq!(check_digest(&format!("blake3:{}", "0".repeat(64))), Ok(()));
        for (bad, why) in [
            ("sha256", "no ':'"),
            (
                &format!("{D}\r\nX-Injected: 1")[..],
                "more than lower-case hex",
            ),
            ("sha256:\u{1b}[31mred", "more than lower-case hex"),
            ("sha256:\u{202e}abc", "more than lower-case hex"),
            (&format!("SHA256:{}", &D[7..])[..], "algorithm"),
            (&format!("sha-:{}", &D[7..])[..], "algorithm"),
            ("sha256:abc", "number of hex digits"),
            (
                &D.to_uppercase().replace("SHA256", "sha256")[..],
                "more than lower-case hex",
            ),
            ("sha256:../../x", "more than lower-case hex"),
        ] {
            let e = check_digest(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
            assert!(
                !e.chars().any(selfprobe::util::sanitize::is_hazard),
                "{e:?}"
            );
        }
    }

    #[test]
    fn bad_references_say_what_was_expected() {
        for (bad, why) in [
            ("127.0.0.1:5000/app:v1", "no @sha256"),
            ("app@sha512:00", "does not start with sha256:"),
            ("app@sha256:ABC", "64 lowercase"),
            (&format!("Team/App@{D}"), "repository component 'Team'"),
            (&format!("127.0.0.1:99999/app@{D}"), "port '99999'"),
            (&format!("r.io/app:-x@{D}"), "the tag"),
            (&format!("r.io//app@{D}"), "repository component ''"),
        ] {
            let e = Reference::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains("expected e.g."), "{e}");
        }
    }
}
