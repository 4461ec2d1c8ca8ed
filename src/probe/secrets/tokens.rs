//! secret.token-long-lived and secret.token-expired: bearer tokens whose
//! claims can be read (JWTs), from the service-account paths, files named
//! by variables, variables holding a JWT and kube config user tokens. Only
//! the header's alg and the claims exp, iat, nbf, iss, aud and sub (plus
//! Kubernetes' warnafter and namespace) are kept; never the token.

use crate::util::text::Text;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::short;
use crate::util::codec::b64_decode_loose;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Token {
    /// A path, `env:NAME`, `PATH user NAME` for a kube config entry, or
    /// `PATH FIELD` for a JWT inside a JSON credential file.
    pub source: String,
    pub kind: String,
    /// jwt; stated-expiry when the file states the expiry beside an opaque
    /// token; opaque when the token has no readable claims.
    pub format: Text,
    /// What else is known of its lifetime (a refresh token beside it, the
    /// issuer's documented lifetime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alg: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aud: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    pub exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// Kubernetes' kubernetes.io.warnafter: when the kubelet would have
    /// refreshed a token the API server extended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnafter: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
}

fn int(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// Claims are not secrets, but they are the token issuer's text: keep them
/// short and free of anything a terminal would act on.
fn claim(s: &str) -> String {
    short(s, 96)
}

/// Decodes a compact JWS (header.payload.signature). None when `text` is
/// not one; the signature is never looked at.
pub fn decode_jwt(text: &str, source: &str, kind: &str) -> Option<Token> {
    let t = text.trim();
    let mut parts = t.split('.');
    let (h, p, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || h.len() > 4096 || p.len() > 65_536 {
        return None;
    }
    let header: Value = serde_json::from_slice(&b64_decode_loose(h)?).ok()?;
    let alg = header.get("alg")?.as_str()?;
    let payload: Value = serde_json::from_slice(&b64_decode_loose(p)?).ok()?;
    let payload = payload.as_object()?;
    let aud = match payload.get("aud") {
        Some(Value::String(s)) => vec![claim(s)],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .take(5)
            .map(claim)
            .collect(),
        _ => Vec::new(),
    };
    let k8s = payload.get("kubernetes.io");
    Some(Token {
        source: source.to_string(),
        kind: kind.to_string(),
        format: "jwt".into(),
        alg: Some(claim(alg)),
        iss: payload.get("iss").and_then(Value::as_str).map(claim),
        aud,
        sub: payload.get("sub").and_then(Value::as_str).map(claim),
        exp: int(payload.get("exp")),
        iat: int(payload.get("iat")),
        nbf: int(payload.get("nbf")),
        warnafter: int(k8s.and_then(|k| k.get("warnafter"))),
        namespace: k8s
            .and_then(|k| k.get("namespace"))
            .and_then(Value::as_str)
            .map(claim),
        mount: None,
        note: None,
    })
}

/// A token file: a JWT, or (unless `jwt_only`) an opaque token, which has
/// no expiry anyone could check.
pub fn from_file_text(text: &str, source: &str, kind: &str, jwt_only: bool) -> Option<Token> {
    let t = text.trim();
    if let Some(tok) = decode_jwt(t, source, kind) {
        return Some(tok);
    }
    if jwt_only || t.is_empty() || t.len() > 16 * 1024 || t.contains(char::is_whitespace) {
        return None;
    }
    Some(Token {
        source: source.to_string(),
        kind: kind.to_string(),
        format: "opaque".into(),
        ..Token::default()
    })
}

/// A Claude subscription OAuth token (sk-ant-oat01-) in a variable: what
/// `claude setup-token` prints for CI, valid for one year and stating no
/// expiry of its own. Claude Code's own login keeps its tokens in
/// .credentials.json with their expiry, not in the environment.
pub fn claude_oauth_in_env(name: &str, value: &str) -> Option<Token> {
    let v = value.trim();
    let oauth = v.starts_with("sk-ant-oat01-") && v.len() > 40;
    if !oauth {
        return None;
    }
    Some(Token {
        source: format!("env:{}", short(name, 128)),
        kind: "claude-oauth-token".into(),
        format: "opaque".into(),
        note: Some(
            "`claude setup-token` issues such tokens valid for one year: treat it as one unless it was made otherwise"
                .into(),
        ),
        ..Token::default()
    })
}

/// `token: eyJ...` entries of a kube config, each with the user it belongs to.
pub fn from_kube_config(text: &str, path: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut user = String::new();
    for line in text.lines() {
        let l = line.trim_start().trim_start_matches("- ");
        if let Some(n) = l.strip_prefix("name:") {
            user = short(n.trim().trim_matches('"'), 64);
        } else if let Some(v) = l.strip_prefix("token:") {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
            let src = if user.is_empty() {
                path.to_string()
            } else {
                format!("{path} user {user}")
            };
            if let Some(t) = decode_jwt(v, &src, "kube-config-token") {
                out.push(t);
            }
        }
        if out.len() >= 16 {
            break;
        }
    }
    out
}

/// "365d 0h", "7h 59m", "42s".
pub fn human(secs: i64) -> String {
    let s = secs.unsigned_abs();
    let (d, h, m) = (s / 86_400, (s / 3600) % 24, (s / 60) % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {}s", s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64url(b: &[u8]) -> String {
        use base64ct::{Base64UrlUnpadded, Encoding};
        Base64UrlUnpadded::encode_string(b)
    }

    #[test]
    fn base64_round_trip() {
        for t in [&b""[..], b"f", b"fo", b"foo", b"foob", b"\xff\xfe\x00"] {
            assert_eq!(b64_decode_loose(&b64url(t)).unwrap(), t);
        }
        assert_eq!(b64_decode_loose("Zm9vYg==").unwrap(), b"foob");
        assert!(b64_decode_loose("a b").is_none());
    }

    #[test]
    fn decodes_claims_never_the_signature() {
        let h = b64url(br#"{"alg":"RS256","kid":"k"}"#);
        let p = b64url(
            br#"{"iss":"https://kubernetes.default.svc","aud":["api"],"sub":"system:serviceaccount:ci:builder","exp":1900000000,"iat":1700000000,"kubernetes.io":{"namespace":"ci","warnafter":1700003607}}"#,
        );
        let jwt = format!("{h}.{p}.c2lnbmF0dXJl");
        let t = decode_jwt(&jwt, "/t", "k").unwrap();
        assert_eq!(t.exp, Some(1_900_000_000));
        assert_eq!(t.aud, vec!["api"]);
        assert_eq!(t.namespace.as_deref(), Some("ci"));
        assert_eq!(t.warnafter, Some(1_700_003_607));
        assert!(!format!("{t:?}").contains("c2lnbmF0dXJl"));
        assert!(decode_jwt("not.a.jwt", "/t", "k").is_none());
        assert!(decode_jwt(&format!("{h}.{p}"), "/t", "k").is_none());
        let o = from_file_text("opaque-token-value", "/t", "k", false).unwrap();
        assert_eq!((&*o.format, o.exp), ("opaque", None));
        assert!(from_file_text("opaque", "/t", "k", true).is_none());
        let kc = format!("users:\n- name: ci\n  user:\n    token: {jwt}\n");
        let ks = from_kube_config(&kc, "/k");
        assert_eq!(ks.len(), 1);
        assert_eq!(ks[0].source, "/k user ci");
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(365 * 86_400), "365d 0h");
        assert_eq!(human(8 * 3600 - 60), "7h 59m");
        assert_eq!(human(42), "42s");
    }
}
