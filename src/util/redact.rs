//! The one rule for credentials inside a URL that selfprobe shows but did
//! not write: an engine endpoint (DOCKER_HOST), a policy destination, an
//! MCP server's address. What it removes is the userinfo, and only that:
//!
//! - the userinfo of a URL is what lies between `scheme://` and the last
//!   `@` of its authority, which ends at the first `/`, `?` or `#`
//!   (RFC 3986 §3.2); without a scheme, the value itself starts with the
//!   authority (a proxy variable's `user:pass@host:port`);
//! - a password may hold an unencoded `/`, `?` or `#` (curl accepts that):
//!   when the authority so cut holds no `@` and is not a `host[:port]` (its
//!   port is not a number, as in `u:pa/ss@host`), the userinfo runs to the
//!   last `@` before the next URL in the value. A host is lost sooner than a
//!   byte of a password;
//! - every URL in the value is treated so, not only the first (a redirect
//!   target in a query can carry credentials of its own);
//! - percent-encoding changes nothing: `%40` is not an `@`, so an encoded
//!   password is removed whole with the rest of the userinfo.
//!
//! What it cannot find: a password that is all digits before an unencoded
//! `/` (`u:12/ab@host`) reads as `host:port/path`, and nothing tells the two
//! apart.
//!
//! Query values and fragments are left as they are: their place does not
//! make them credentials. Callers that show query values judge them by
//! their keys (the MCP reader replaces every one).

use std::ops::Range;

/// The byte ranges of the userinfo of every URL in `value`, each with the
/// `@` that ends it, in order and not overlapping.
pub fn userinfo_spans(value: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    // The first authority: after a leading scheme, or at the start.
    let mut start = Some(scheme_end(value).unwrap_or(0));
    while let Some(a) = start {
        // This URL ends where the next one's "://" is.
        let next = value[a..].find("://").map(|i| a + i);
        let seg = &value[a..next.unwrap_or(value.len())];
        let auth = &seg[..seg.find(['/', '?', '#']).unwrap_or(seg.len())];
        let at = match auth.rfind('@') {
            Some(at) => Some(at),
            None if !host_port(auth) => seg.rfind('@'),
            None => None,
        };
        let mut resume = a;
        if let Some(at) = at {
            out.push(a..a + at + 1);
            resume = a + at + 1;
        }
        start = value[resume..].find("://").map(|i| resume + i + 3);
    }
    out
}

/// True when `value` holds a URL with userinfo.
pub fn has_userinfo(value: &str) -> bool {
    !userinfo_spans(value).is_empty()
}

/// `value` with each URL's userinfo replaced by `***`
/// (`http://***@proxy:3128`), so a reader sees that there was some.
pub fn redact(value: &str) -> String {
    replace(value, "***@")
}

/// `value` with each URL's userinfo dropped (`https://mcp.example.com/x`).
pub fn strip(value: &str) -> String {
    replace(value, "")
}

fn replace(value: &str, with: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut last = 0;
    for r in userinfo_spans(value) {
        out.push_str(&value[last..r.start]);
        out.push_str(with);
        last = r.end;
    }
    out.push_str(&value[last..]);
    out
}

/// Where the authority starts when `value` begins with `scheme://`
/// (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`).
fn scheme_end(value: &str) -> Option<usize> {
    let i = value.find("://")?;
    let s = &value[..i];
    let ok = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some(i + 3)
}

/// Could `a` (an authority without `@`) be `host[:port]`: a port, if any,
/// is digits; an IPv6 literal is bracketed, or bare with a numeric tail.
fn host_port(a: &str) -> bool {
    let port = match a.strip_prefix('[') {
        Some(r) => match r.find(']') {
            Some(i) => match &r[i + 1..] {
                "" => return true,
                p => match p.strip_prefix(':') {
                    Some(p) => p,
                    None => return false,
                },
            },
            None => return false,
        },
        None => match a.rfind(':') {
            Some(i) => &a[i + 1..],
            None => return true,
        },
    };
    port.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A password that no redacted spelling may keep a piece of.
    const PW: &str = "Kq7Zx9Wm";

    fn leaks(shown: &str) -> bool {
        // Any four characters of the password in a row, and its encodings.
        (0..=PW.len() - 4).any(|i| shown.contains(&PW[i..i + 4]))
    }

    #[test]
    fn removes_the_userinfo_and_keeps_the_rest() {
        for (url, shown) in [
            ("http://u:p@proxy:3128", "http://***@proxy:3128"),
            ("tcp://u:secret@10.0.0.1:2376", "tcp://***@10.0.0.1:2376"),
            ("ssh://user@host", "ssh://***@host"),
            ("HTTP://u@proxy", "HTTP://***@proxy"),
            ("u:s3cret@proxy:3128", "***@proxy:3128"),
            ("http://u:s3/cr?et#x@proxy:3128/", "http://***@proxy:3128/"),
            ("http://u:p@[fd00::1]:8080/x", "http://***@[fd00::1]:8080/x"),
            (
                "https://h/?next=http://u:p@x/",
                "https://h/?next=http://***@x/",
            ),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
        assert_eq!(
            strip("https://u:pw12345@mcp.example.com/x?k=v"),
            "https://mcp.example.com/x?k=v"
        );
    }

    #[test]
    fn leaves_what_has_no_userinfo() {
        for url in [
            "http://proxy:3128/a@b",
            "tcp://127.0.0.1:2375",
            "http://[::1]:2375/v1.41/_ping",
            "tcp://[fe80::1%25eth0]:22",
            "tcp://::1:2375",
            "/var/run/docker.sock",
            "unix:///run/user/1000/podman/podman.sock",
            "npipe:////./pipe/docker_engine",
            "https://pkgs.internal/simple?x=1#top",
            "",
            "é://ü@",
        ] {
            let want = if url == "é://ü@" { "é://***@" } else { url };
            assert_eq!(redact(url), want, "{url}");
        }
        assert!(!has_userinfo("https://h/a@b"));
        assert!(has_userinfo("https://a@h/"));
    }

    #[test]
    fn no_spelling_of_a_password_survives() {
        let spellings = [
            format!("http://user:{PW}@proxy:3128"),
            format!("http://user:{PW}@proxy:3128/path@x"),
            format!("http://user%40corp:{PW}@proxy"),
            // @ in the password, bare and encoded.
            format!("http://user:{}@{}@proxy:3128", &PW[..4], &PW[4..]),
            format!("http://user:{}%40{}@proxy", &PW[..4], &PW[4..]),
            // Percent-encoded throughout.
            format!(
                "http://user:{}@proxy",
                PW.bytes().map(|b| format!("%{b:02X}")).collect::<String>()
            ),
            // Unencoded delimiters inside the password.
            format!("http://user:{}/{}@proxy/", &PW[..4], &PW[4..]),
            format!("http://user:{}?{}@proxy/", &PW[..4], &PW[4..]),
            format!("http://user:{}#{}@proxy/", &PW[..4], &PW[4..]),
            format!("http://user:{} {}@proxy/", &PW[..4], &PW[4..]),
            // IPv6 hosts, with and without a zone.
            format!("http://user:{PW}@[::1]:3128"),
            format!("http://user:{PW}@[fe80::1%25eth0]/"),
            format!("tcp://{PW}@[2001:db8::7]:2376"),
            // A token as the user, no scheme, a second URL in the query.
            format!("https://{PW}@github.com/org/repo.git"),
            format!("user:{PW}@proxy:3128"),
            format!("https://h/login?next=https://u:{PW}@evil/"),
            format!("git+ssh://git:{PW}@host:22/x"),
        ];
        for s in &spellings {
            let percent: String = PW.bytes().map(|b| format!("%{b:02X}")).collect();
            for shown in [redact(s), strip(s)] {
                assert!(!leaks(&shown), "{s} -> {shown}");
                assert!(!shown.contains(&percent[..12]), "{s} -> {shown}");
                assert!(!shown.contains("%40"), "{s} -> {shown}");
            }
        }
    }

    #[test]
    fn hostile_values_never_panic() {
        let pieces = ["://", "@", "/", "?", "#", ":", "[", "]", "é", "a", "9", " "];
        let mut x: u32 = 0x2545_F491;
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..(x % 10) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                s.push_str(pieces[(x % pieces.len() as u32) as usize]);
            }
            let spans = userinfo_spans(&s);
            for w in spans.windows(2) {
                assert!(w[0].end <= w[1].start, "{s:?}");
            }
            let _ = (redact(&s), strip(&s));
        }
    }
}
