//! Just enough HTTP/1.1 for reachability: one request per connection
//! (Connection: close), the status line and headers always, the body only
//! when asked (an IMDSv2 token, a DevTools /json/version) and bounded. Every
//! read and write is bounded by the destination's deadline.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

const MAX_HEAD: usize = 16 * 1024;

/// A stream whose socket timeouts can be set from a deadline.
pub trait Timed: Read + Write {
    fn socket(&self) -> &TcpStream;

    fn arm(&self, deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.socket().set_read_timeout(Some(left))?;
        self.socket().set_write_timeout(Some(left))
    }
}

impl Timed for TcpStream {
    fn socket(&self) -> &TcpStream {
        self
    }
}

impl Timed for rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    fn socket(&self) -> &TcpStream {
        &self.sock
    }
}

pub struct Request<'a> {
    pub method: &'a str,
    /// "/path" (origin form) or "http://host/path" (absolute form, to a proxy).
    pub target: &'a str,
    pub host: &'a str,
    pub headers: &'a [(String, String)],
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// The status line's reason phrase (tinyproxy says why it refused in
    /// it: "Filtered", "Access violation"), printable ASCII, bounded.
    pub reason: String,
    /// Names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `req` and reads the answer. `max_body` 0 reads no body.
pub fn exchange<S: Timed>(
    s: &mut S,
    req: &Request,
    max_body: usize,
    deadline: Instant,
) -> io::Result<Response> {
    let mut msg = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: selfprobe/{}\r\nAccept: */*\r\n",
        req.method,
        req.target,
        req.host,
        env!("CARGO_PKG_VERSION")
    );
    if req.method != "CONNECT" {
        msg.push_str("Connection: close\r\n");
    }
    for (k, v) in req.headers {
        msg.push_str(&format!("{k}: {v}\r\n"));
    }
    if matches!(req.method, "PUT" | "POST") {
        msg.push_str("Content-Length: 0\r\n");
    }
    msg.push_str("\r\n");
    s.arm(deadline)?;
    s.write_all(msg.as_bytes())?;
    s.flush()?;
    let mut pending = Vec::new();
    loop {
        let (mut resp, rest) = read_head(s, pending, deadline)?;
        if (100..200).contains(&resp.status) && resp.status != 101 {
            pending = rest; // 100 Continue and friends: the real answer follows
            continue;
        }
        if max_body > 0 && req.method != "HEAD" && req.method != "CONNECT" {
            resp.body = read_body(s, &resp, rest, max_body, deadline)?;
        }
        return Ok(resp);
    }
}

fn read_head<S: Timed>(
    s: &mut S,
    mut buf: Vec<u8>,
    deadline: Instant,
) -> io::Result<(Response, Vec<u8>)> {
    let mut chunk = [0u8; 1024];
    let end = loop {
        if let Some(p) = find(&buf, b"\r\n\r\n") {
            break p;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("the response head is larger than 16 KiB"));
        }
        s.arm(deadline)?;
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let rest = buf[end + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/"))
        .ok_or_else(|| bad("the answer is not HTTP"))?;
    let reason = parts
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(80)
        .collect::<String>()
        .trim()
        .to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .take(100)
        .collect();
    Ok((
        Response {
            status,
            reason,
            headers,
            body: Vec::new(),
        },
        rest,
    ))
}

fn read_body<S: Timed>(
    s: &mut S,
    resp: &Response,
    mut have: Vec<u8>,
    max: usize,
    deadline: Instant,
) -> io::Result<Vec<u8>> {
    if matches!(resp.status, 204 | 304) {
        return Ok(Vec::new());
    }
    let chunked = resp
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let want = if chunked {
        usize::MAX
    } else {
        resp.header("content-length")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(usize::MAX)
    };
    let mut chunk = [0u8; 4096];
    // Reads until the body is complete, the bound is reached or the peer
    // closes (Connection: close ends bodies of unknown length).
    loop {
        if chunked {
            if let Some(b) = dechunk(&have) {
                return Ok(b.into_iter().take(max).collect());
            }
        }
        if have.len() >= want || have.len() >= max.saturating_add(64) {
            break;
        }
        s.arm(deadline)?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => have.extend_from_slice(&chunk[..n]),
            // A peer that closes without close_notify still sent its body.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
    }
    if chunked {
        return Ok(dechunk(&have)
            .unwrap_or_default()
            .into_iter()
            .take(max)
            .collect());
    }
    have.truncate(std::cmp::min(want, max));
    Ok(have)
}

/// Decodes a complete chunked body; None while it is incomplete.
fn dechunk(b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        let eol = find(&b[i..], b"\r\n")? + i;
        let size_txt = String::from_utf8_lossy(&b[i..eol]);
        let size = usize::from_str_radix(size_txt.split(';').next()?.trim(), 16).ok()?;
        i = eol + 2;
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(i..i.checked_add(size)?)?);
        i += size + 2;
        if out.len() > 1 << 20 {
            return Some(out);
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn bad(m: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    fn serve(answer: &'static [u8]) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            let mut b = [0u8; 1024];
            while find(&got, b"\r\n\r\n").is_none() {
                let n = c.read(&mut b).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&b[..n]);
            }
            c.write_all(answer).unwrap();
            got
        });
        (port, h)
    }

    #[test]
    fn request_and_bodies() {
        let deadline = Instant::now() + Duration::from_secs(5);
        let (port, h) = serve(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhelloEXTRA");
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let hdrs = vec![("Metadata-Flavor".to_string(), "Google".to_string())];
        let req = Request {
            method: "GET",
            target: "/computeMetadata/v1/",
            host: "metadata.google.internal",
            headers: &hdrs,
        };
        let r = exchange(&mut s, &req, 100, deadline).unwrap();
        assert_eq!(
            (
                r.status,
                r.reason.as_str(),
                r.body.as_slice(),
                r.header("X-a")
            ),
            (200, "OK", &b"hello"[..], Some("b"))
        );
        let sent = String::from_utf8(h.join().unwrap()).unwrap();
        assert!(
            sent.starts_with(
                "GET /computeMetadata/v1/ HTTP/1.1\r\nHost: metadata.google.internal\r\n"
            ),
            "{sent}"
        );
        assert!(sent.contains("Metadata-Flavor: Google\r\n"));

        let (port, _h) = serve(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let r = exchange(
            &mut s,
            &Request {
                method: "PUT",
                target: "/t",
                host: "h",
                headers: &[],
            },
            100,
            deadline,
        )
        .unwrap();
        assert_eq!(r.body, b"abcde");

        let (port, _h) = serve(b"SSH-2.0-OpenSSH_9.6\r\n\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let e = exchange(
            &mut s,
            &Request {
                method: "GET",
                target: "/",
                host: "h",
                headers: &[],
            },
            0,
            deadline,
        )
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t = Instant::now();
        let e = exchange(
            &mut s,
            &Request {
                method: "GET",
                target: "/",
                host: "h",
                headers: &[],
            },
            0,
            Instant::now() + Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{e:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
