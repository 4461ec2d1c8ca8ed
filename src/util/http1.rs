//! The HTTP/1.x client codec of both HTTP clients: the network probe's
//! (TCP, TLS, through a proxy) and the engine-socket probe's (Unix sockets).
//! One request per connection: the request writer, the response head parser
//! with its limits, the body framing (Content-Length, chunked, or until the
//! peer closes), and the exchange over any stream whose reads and writes a
//! deadline can bound. What to ask and how to read the answer stays with
//! each probe.
//!
//! Every byte read is the peer's: the head is bounded ([`MAX_HEAD`],
//! [`MAX_HEADERS`]), the reason phrase is cut to printable ASCII, a body is
//! never kept past what the caller asked for, and every read waits only for
//! the time left before the deadline.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Instant;

/// The response head, status line to blank line, must fit in this many bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// Header lines kept; the rest of a longer head is read past, not kept.
pub const MAX_HEADERS: usize = 100;
/// Characters kept of the reason phrase.
const MAX_REASON: usize = 80;
/// A chunk-size line longer than this is not one (a hex size and short
/// extensions take a few bytes): the body is malformed.
const MAX_CHUNK_LINE: usize = 1024;

/// A stream whose socket timeouts can be set from a deadline.
pub trait Timed: Read + Write {
    /// Bounds the next reads and writes by the time left before `deadline`;
    /// TimedOut once it has passed.
    fn arm(&self, deadline: Instant) -> io::Result<()>;
}

fn left(deadline: Instant) -> io::Result<std::time::Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::from(io::ErrorKind::TimedOut));
    }
    Ok(left)
}

impl Timed for TcpStream {
    fn arm(&self, deadline: Instant) -> io::Result<()> {
        let left = left(deadline)?;
        self.set_read_timeout(Some(left))?;
        self.set_write_timeout(Some(left))
    }
}

impl Timed for UnixStream {
    fn arm(&self, deadline: Instant) -> io::Result<()> {
        let left = left(deadline)?;
        self.set_read_timeout(Some(left))?;
        self.set_write_timeout(Some(left))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The server closes after its answer and never chunks it (the engine
    /// sockets are asked this way).
    Http10,
    /// With `Connection: close` (CONNECT excepted: the tunnel stays open).
    Http11,
}

pub struct Request<'a> {
    pub method: &'a str,
    /// "/path" (origin form), "http://host/path" (absolute form, to a
    /// proxy) or "host:port" (CONNECT).
    pub target: &'a str,
    pub host: &'a str,
    pub headers: &'a [(String, String)],
    pub version: Version,
}

impl Request<'_> {
    /// The request's bytes: request line, Host, User-Agent, Accept, the
    /// caller's headers, and an empty body's length where the method has a
    /// body.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.head(None)
    }

    /// The head of a request that carries `body`, then the body: its
    /// Content-Length is the body's. (The registry client uploads blobs
    /// and manifests; the probes send no bodies.)
    pub fn with_body(&self, body: &[u8]) -> Vec<u8> {
        let mut msg = self.head(Some(body.len()));
        msg.extend_from_slice(body);
        msg
    }

    /// A caller's own Accept replaces the default `*/*` (a registry picks
    /// the manifest format it serves by it).
    fn head(&self, body: Option<usize>) -> Vec<u8> {
        let version = match self.version {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        };
        let mut msg = format!(
            "{} {} {version}\r\nHost: {}\r\nUser-Agent: selfprobe/{}\r\n",
            self.method,
            self.target,
            self.host,
            env!("CARGO_PKG_VERSION")
        );
        if !self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
        {
            msg.push_str("Accept: */*\r\n");
        }
        if self.version == Version::Http11 && self.method != "CONNECT" {
            msg.push_str("Connection: close\r\n");
        }
        for (k, v) in self.headers {
            msg.push_str(&format!("{k}: {v}\r\n"));
        }
        match body {
            Some(n) => msg.push_str(&format!("Content-Length: {n}\r\n")),
            None if matches!(self.method, "PUT" | "POST") => msg.push_str("Content-Length: 0\r\n"),
            None => {}
        }
        msg.push_str("\r\n");
        msg.into_bytes()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The status line's reason phrase (tinyproxy says why it refused in
    /// it: "Filtered", "Access violation"), printable ASCII, bounded.
    pub reason: String,
    /// Names in lower case, names and values trimmed, at most [`MAX_HEADERS`].
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// How the body that follows this head ends.
    pub fn framing(&self, method: &str) -> Framing {
        if method == "HEAD" || method == "CONNECT" || matches!(self.status, 204 | 304) {
            return Framing::Empty;
        }
        if self
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
        {
            return Framing::Chunked;
        }
        match self
            .header("content-length")
            .and_then(|v| v.parse::<usize>().ok())
        {
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (HEAD, CONNECT, 204, 304).
    Empty,
    /// Content-Length bytes.
    Length(usize),
    /// Transfer-Encoding: chunked.
    Chunked,
    /// Until the peer closes (Connection: close ends bodies of unknown length).
    UntilClose,
}

/// Why bytes read are not an HTTP response head. Carried inside the
/// io::Error that [`exchange`] and [`receive`] return ([`head_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// No blank line within [`MAX_HEAD`] bytes.
    TooLarge,
    /// The first line does not start with "HTTP/".
    NotHttp,
    /// "HTTP/…" without a three-digit status code (100 to 999) after it.
    NoStatus,
    /// The peer closed before the blank line that ends the head.
    Truncated,
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HeadError::TooLarge => "the response head is larger than 16 KiB",
            HeadError::NotHttp => "the status line does not start with HTTP/",
            HeadError::NoStatus => "the status line has no status code (three digits, 100 to 999)",
            HeadError::Truncated => "the answer ended before the end of its head",
        })
    }
}

impl std::error::Error for HeadError {}

impl From<HeadError> for io::Error {
    /// A truncated head is the peer closing early (UnexpectedEof, as a reset
    /// is read); the others are bytes that are not HTTP (InvalidData).
    fn from(e: HeadError) -> io::Error {
        let kind = match e {
            HeadError::Truncated => io::ErrorKind::UnexpectedEof,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}

/// The head error inside an error of [`exchange`] or [`receive`], if that
/// is what it is (and not a socket error or a timeout).
pub fn head_error(e: &io::Error) -> Option<HeadError> {
    e.get_ref()?.downcast_ref::<HeadError>().copied()
}

/// Where the head's blank line ends, searching from `from` (a caller that
/// reads piece by piece searches only what is new), within [`MAX_HEAD`].
fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let upto = buf.len().min(MAX_HEAD);
    let from = from.min(upto);
    find(&buf[from..upto], b"\r\n\r\n").map(|p| from + p + 4)
}

/// Parses the response head at the start of `buf`: the response (with an
/// empty body) and the head's length, None while the head is incomplete.
/// The result depends on the bytes only, not on how they were read.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Response, usize)>, HeadError> {
    let Some(end) = head_end(buf, 0) else {
        return if buf.len() >= MAX_HEAD {
            Err(HeadError::TooLarge)
        } else {
            Ok(None)
        };
    };
    let head = String::from_utf8_lossy(&buf[..end - 4]);
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or("").splitn(3, ' ');
    if !parts.next().unwrap_or("").starts_with("HTTP/") {
        return Err(HeadError::NotHttp);
    }
    let status = parts
        .next()
        .filter(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|c| c.parse::<u16>().ok())
        // Three digits, the first a class (RFC 9110 §15): "050" is none.
        .filter(|c| *c >= 100)
        .ok_or(HeadError::NoStatus)?;
    let reason = parts
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(MAX_REASON)
        .collect::<String>()
        .trim()
        .to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .take(MAX_HEADERS)
        .collect();
    Ok(Some((
        Response {
            status,
            reason,
            headers,
            body: Vec::new(),
        },
        end,
    )))
}

/// Sends `req` and reads the answer. `max_body` 0 reads no body.
pub fn exchange<S: Timed>(
    s: &mut S,
    req: &Request,
    max_body: usize,
    deadline: Instant,
) -> io::Result<Response> {
    send(s, req, deadline)?;
    receive(s, req.method, max_body, deadline)
}

pub fn send<S: Timed>(s: &mut S, req: &Request, deadline: Instant) -> io::Result<()> {
    write_bounded(s, &req.to_bytes(), deadline)
}

/// [`exchange`] for a request with a body.
pub fn exchange_body<S: Timed>(
    s: &mut S,
    req: &Request,
    body: &[u8],
    max_body: usize,
    deadline: Instant,
) -> io::Result<Response> {
    write_bounded(s, &req.with_body(body), deadline)?;
    receive(s, req.method, max_body, deadline)
}

/// Writes `bytes` in pieces, each bounded by the time left, so a large body
/// to a peer that stops reading ends at the deadline.
fn write_bounded<S: Timed>(s: &mut S, bytes: &[u8], deadline: Instant) -> io::Result<()> {
    for piece in bytes.chunks(64 * 1024) {
        s.arm(deadline)?;
        s.write_all(piece)?;
    }
    s.arm(deadline)?;
    s.flush()
}

/// Reads the answer to a `method` request: interim (1xx) answers are
/// passed over, then the final head and at most `max_body` bytes of its
/// body (none when 0).
pub fn receive<S: Timed>(
    s: &mut S,
    method: &str,
    max_body: usize,
    deadline: Instant,
) -> io::Result<Response> {
    let mut buf = Vec::new();
    loop {
        let (mut resp, used) = read_head(s, &mut buf, deadline)?;
        buf.drain(..used);
        if (100..200).contains(&resp.status) && resp.status != 101 {
            continue; // 100 Continue and friends: the real answer follows
        }
        if max_body > 0 {
            resp.body = read_body(s, resp.framing(method), buf, max_body, deadline)?;
        }
        return Ok(resp);
    }
}

/// Reads into `buf` until it holds a whole head, and parses it.
fn read_head<S: Timed>(
    s: &mut S,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<(Response, usize)> {
    let mut chunk = [0u8; 1024];
    // The blank line may straddle two reads: search again from three bytes
    // before the end of what was searched.
    let mut searched = 0;
    while head_end(buf, searched).is_none() && buf.len() < MAX_HEAD {
        searched = buf.len().saturating_sub(3);
        s.arm(deadline)?;
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(HeadError::Truncated.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    // A whole head or MAX_HEAD bytes were read: parse_head decides.
    parse_head(buf)?.ok_or_else(|| HeadError::Truncated.into())
}

/// The body after a head: `have` holds what was read past the head.
fn read_body<S: Timed>(
    s: &mut S,
    framing: Framing,
    have: Vec<u8>,
    max: usize,
    deadline: Instant,
) -> io::Result<Vec<u8>> {
    let want = match framing {
        Framing::Empty => return Ok(Vec::new()),
        Framing::Length(n) => n.min(max),
        Framing::UntilClose => max,
        Framing::Chunked => usize::MAX,
    };
    // The body as read; for a chunked one, what the decoder has yet to see.
    let mut raw = have;
    let mut chunked = Dechunk::default();
    let mut chunk = [0u8; 4096];
    // Reads until the body is complete, the bound is reached or the peer closes.
    loop {
        let complete = if framing == Framing::Chunked {
            let ended = chunked.feed(&raw, max);
            raw.clear();
            ended
        } else {
            raw.len() >= want
        };
        if complete {
            break;
        }
        s.arm(deadline)?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            // A peer that closes without close_notify still sent its body.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
    }
    if framing == Framing::Chunked {
        return Ok(chunked.body());
    }
    raw.truncate(want);
    Ok(raw)
}

/// A chunked body decoded as its bytes arrive: each call goes on from where
/// the last one stopped and keeps only an unfinished line, so a peer that
/// sends a byte at a time costs no more than one that sends it all at once,
/// and chunk framing never piles up in memory.
#[derive(Default)]
struct Dechunk {
    /// Bytes not decoded yet: at most an unfinished line.
    pending: Vec<u8>,
    /// How much of an unfinished size line was searched for its CRLF.
    searched: usize,
    state: ChunkState,
    out: Vec<u8>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// At a chunk-size line.
    #[default]
    Size,
    /// Inside a chunk, this many bytes of it to go.
    Data(usize),
    /// At the CRLF after a chunk's data.
    DataEnd,
    /// The last chunk was read, or `max` bytes were.
    Done,
    /// Not chunked encoding: nothing of it is kept.
    Bad,
}

impl Dechunk {
    /// Decodes `more` after what came before; true when decoding has ended
    /// (the body is complete, `max` bytes are decoded, or it is malformed).
    fn feed(&mut self, more: &[u8], max: usize) -> bool {
        self.pending.extend_from_slice(more);
        let mut at = 0;
        let ended = loop {
            let rest = &self.pending[at..];
            match self.state {
                ChunkState::Done | ChunkState::Bad => break true,
                ChunkState::Size => {
                    // A CRLF may straddle two reads: one byte back.
                    let from = self.searched.saturating_sub(1).min(rest.len());
                    let Some(eol) = find(&rest[from..], b"\r\n").map(|p| from + p) else {
                        self.searched = rest.len();
                        // The line is at least this long (less a CR that
                        // may start the CRLF): decided alike however the
                        // bytes were split into reads.
                        if rest.len() > MAX_CHUNK_LINE + 1 {
                            self.state = ChunkState::Bad;
                            continue;
                        }
                        break false;
                    };
                    let line = String::from_utf8_lossy(&rest[..eol]);
                    let size = line.split(';').next().unwrap_or("").trim();
                    self.state = match usize::from_str_radix(size, 16) {
                        _ if eol > MAX_CHUNK_LINE => ChunkState::Bad,
                        Ok(0) => ChunkState::Done,
                        Ok(n) => ChunkState::Data(n),
                        Err(_) => ChunkState::Bad,
                    };
                    at += eol + 2;
                    self.searched = 0;
                }
                ChunkState::Data(n) => {
                    let k = n.min(rest.len()).min(max - self.out.len());
                    self.out.extend_from_slice(&rest[..k]);
                    at += k;
                    self.state = if self.out.len() >= max {
                        ChunkState::Done
                    } else if k == n {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(n - k)
                    };
                    if k < n && self.state != ChunkState::Done {
                        break false;
                    }
                }
                ChunkState::DataEnd => {
                    if rest.len() < 2 {
                        break false;
                    }
                    self.state = if rest.starts_with(b"\r\n") {
                        ChunkState::Size
                    } else {
                        ChunkState::Bad
                    };
                    at += 2;
                }
            }
        };
        self.pending.drain(..at);
        ended
    }

    /// The decoded body; empty unless it was complete (or reached `max`):
    /// a body cut short or malformed is not what the server meant to say.
    fn body(self) -> Vec<u8> {
        match self.state {
            ChunkState::Done => self.out,
            _ => Vec::new(),
        }
    }
}

/// Where `n` first stands in `h`. Byte by byte rather than slice equality:
/// the needles are two and four bytes long, and a memcmp call per window
/// costs more than the comparison (and under libFuzzer is traced, each one).
fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len())
        .position(|w| w.iter().zip(n).all(|(a, b)| a == b))
}

/// A peer that is bytes in memory: it sends `data`, at most `piece` bytes a
/// read, then closes, and keeps what is written to it. The codec's reading
/// without a socket, for the fuzz targets (fuzz/src/lib.rs) and the tests,
/// which read an answer whole and in pieces and compare.
pub struct Canned<'a> {
    data: &'a [u8],
    piece: usize,
    sent: Vec<u8>,
}

impl<'a> Canned<'a> {
    pub fn new(data: &'a [u8], piece: usize) -> Canned<'a> {
        Canned {
            data,
            piece: piece.max(1),
            sent: Vec::new(),
        }
    }

    /// What was written to it.
    pub fn sent(&self) -> &[u8] {
        &self.sent
    }
}

impl Read for Canned<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let n = b.len().min(self.piece).min(self.data.len());
        b[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

impl Write for Canned<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.sent.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Bytes in memory never wait: there is nothing to bound.
impl Timed for Canned<'_> {
    fn arm(&self, _: Instant) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Duration;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    /// The answer to a GET read whole and a byte at a time: the same.
    fn answer(data: &[u8], max: usize) -> io::Result<Response> {
        let read = |piece| receive(&mut Canned::new(data, piece), "GET", max, far());
        let whole = read(usize::MAX);
        let trickled = read(1);
        match (&whole, &trickled) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(
                (a.kind(), head_error(a)),
                (b.kind(), head_error(b)),
                "{a} / {b}"
            ),
            _ => panic!("{whole:?} / {trickled:?}"),
        }
        whole
    }

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

    fn get<'a>(target: &'a str, host: &'a str, headers: &'a [(String, String)]) -> Request<'a> {
        Request {
            method: "GET",
            target,
            host,
            headers,
            version: Version::Http11,
        }
    }

    #[test]
    fn request_and_bodies_over_tcp() {
        let deadline = Instant::now() + Duration::from_secs(5);
        let (port, h) = serve(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhelloEXTRA");
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let hdrs = vec![("Metadata-Flavor".to_string(), "Google".to_string())];
        let req = get("/computeMetadata/v1/", "metadata.google.internal", &hdrs);
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
        assert!(sent.contains("Connection: close\r\n"));

        let (port, _h) = serve(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let put = Request {
            method: "PUT",
            ..get("/t", "h", &[])
        };
        let r = exchange(&mut s, &put, 100, deadline).unwrap();
        assert_eq!(r.body, b"abcde");

        let (port, _h) = serve(b"SSH-2.0-OpenSSH_9.6\r\n\r\n");
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let e = exchange(&mut s, &get("/", "h", &[]), 0, deadline).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(head_error(&e), Some(HeadError::NotHttp));
    }

    #[test]
    fn silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t = Instant::now();
        let e = exchange(
            &mut s,
            &get("/", "h", &[]),
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
        assert_eq!(head_error(&e), None, "a timeout is not a bad head");
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn requests_by_version_and_method() {
        let req = Request {
            version: Version::Http10,
            ..get("/_ping", "localhost", &[])
        };
        let sent = String::from_utf8(req.to_bytes()).unwrap();
        assert_eq!(
            sent,
            format!(
                "GET /_ping HTTP/1.0\r\nHost: localhost\r\nUser-Agent: selfprobe/{}\r\nAccept: */*\r\n\r\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        let auth = vec![("Proxy-Authorization".to_string(), "Basic eA==".to_string())];
        let connect = Request {
            method: "CONNECT",
            ..get("h:443", "h:443", &auth)
        };
        let sent = String::from_utf8(connect.to_bytes()).unwrap();
        assert!(sent.starts_with("CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n"));
        assert!(sent.ends_with("Proxy-Authorization: Basic eA==\r\n\r\n"));
        assert!(!sent.contains("Connection:"), "a tunnel stays open");
        let post = Request {
            method: "POST",
            ..get("/", "h", &[])
        };
        assert!(String::from_utf8(post.to_bytes())
            .unwrap()
            .ends_with("Content-Length: 0\r\n\r\n"));
        // A body, and the caller's Accept in place of the default.
        let accept = vec![(
            "Accept".to_string(),
            "application/vnd.oci.image.index.v1+json".to_string(),
        )];
        let put = Request {
            method: "PUT",
            ..get("/v2/a/manifests/t", "h", &accept)
        };
        let sent = String::from_utf8(put.with_body(b"{}")).unwrap();
        assert!(!sent.contains("*/*"), "{sent}");
        assert_eq!(sent.matches("Accept:").count(), 1, "{sent}");
        assert!(sent.ends_with("Content-Length: 2\r\n\r\n{}"), "{sent}");
        assert_eq!(sent.matches("Content-Length").count(), 1, "{sent}");
    }

    #[test]
    fn heads_and_their_limits() {
        let (r, used) = parse_head(
            b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Libpod/4.3.1 (linux)\r\n\r\nOK",
        )
        .unwrap()
        .unwrap();
        assert_eq!((r.status, used), (200, 68));
        assert_eq!(r.header("api-version"), Some("1.41"));
        assert_eq!(
            r.headers[1],
            ("server".into(), "Libpod/4.3.1 (linux)".into())
        );
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nServer: x\r\n"), Ok(None));
        assert_eq!(
            parse_head(b"SSH-2.0-OpenSSH\r\n\r\n"),
            Err(HeadError::NotHttp)
        );
        for bad in [
            &b"HTTP/1.1 abc\r\n\r\n"[..],
            b"HTTP/1.1\r\n\r\n",
            b"HTTP/1.1 +20 x\r\n\r\n",
            b"HTTP/1.1 2000 x\r\n\r\n",
            // Found by fuzz/run.sh http_head: a 1xx-looking "050".
            b"HTTP/1.1 050 Continue\r\n\r\n",
        ] {
            assert_eq!(parse_head(bad), Err(HeadError::NoStatus), "{bad:?}");
        }
        // The reason phrase is printable ASCII and short.
        let (r, _) = parse_head(
            format!("HTTP/1.1 403 \x1b[31mFiltered{}\r\n\r\n", "x".repeat(200)).as_bytes(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.reason.len(), MAX_REASON);
        assert!(r.reason.starts_with("[31mFiltered"), "{}", r.reason);
        // A header bomb: the first MAX_HEADERS kept.
        let mut bomb = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..1000 {
            bomb.extend_from_slice(format!("X-{i}: {i}\r\n").as_bytes());
        }
        bomb.extend_from_slice(b"\r\n");
        let (r, _) = parse_head(&bomb).unwrap().unwrap();
        assert_eq!(r.headers.len(), MAX_HEADERS);
        assert_eq!(r.headers[99], ("x-99".into(), "99".into()));
        // A head that does not end within 16 KiB, whatever follows.
        let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        big.resize(MAX_HEAD - 3, b'a');
        assert_eq!(parse_head(&big), Ok(None));
        big.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_head(&big), Err(HeadError::TooLarge));
        big.truncate(MAX_HEAD - 4);
        big.extend_from_slice(b"\r\n\r\n");
        assert!(parse_head(&big).unwrap().is_some(), "exactly 16 KiB");
        assert_eq!(
            answer(&big[..MAX_HEAD - 1], 10).map_err(|e| head_error(&e)),
            Err(Some(HeadError::Truncated))
        );
        let mut bigger = big.clone();
        bigger.insert(20, b'a');
        assert_eq!(
            answer(&bigger, 10).map_err(|e| head_error(&e)),
            Err(Some(HeadError::TooLarge))
        );
    }

    #[test]
    fn bodies_by_framing_read_whole_or_trickled() {
        let body = |data: &[u8], max| answer(data, max).unwrap().body;
        let cl = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
        assert_eq!(body(cl, 100), b"hello");
        assert_eq!(body(cl, 3), b"hel");
        assert_eq!(body(cl, 0), b"");
        // Cut short: what came.
        assert_eq!(
            body(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhel", 100),
            b"hel"
        );
        // No length: until the peer closes, bounded.
        let close = b"HTTP/1.0 200 OK\r\n\r\n{\"Version\":\"1\"}";
        assert_eq!(body(close, 100), b"{\"Version\":\"1\"}");
        assert_eq!(body(close, 4), b"{\"Ve");
        for no_body in [
            &b"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc"[..],
            b"HTTP/1.1 304 Not Modified\r\n\r\nabc",
        ] {
            assert_eq!(body(no_body, 100), b"");
        }
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n";
        assert_eq!(body(chunked, 100), b"abcde");
        assert_eq!(body(chunked, 4), b"abcd", "the first max bytes");
        for bad in [
            &b"3\r\nabc\r\n2\r\nde"[..], // no last chunk
            b"3\r\nabcXX2\r\nde\r\n0\r\n\r\n",
            b"zz\r\nabc\r\n0\r\n\r\n",
            b"3\r\nab",
        ] {
            let data = [
                &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
                bad,
            ]
            .concat();
            assert_eq!(body(&data, 100), b"", "{:?}", String::from_utf8_lossy(bad));
        }
        // A chunk larger than the bound ends at the bound.
        let huge = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\nabcdefgh";
        assert_eq!(body(huge, 5), b"abcde");
        // A size line that never ends is not chunked encoding.
        let endless = [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            &[b'0'; 2000],
        ]
        .concat();
        assert_eq!(body(&endless, 100), b"");
        // Interim answers are passed over; HEAD has no body.
        let r = answer(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 2\r\n\r\nno",
            100,
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (407, &b"no"[..]));
        assert_eq!(r.header("proxy-authenticate"), Some("Basic realm=\"x\""));
        let mut c = Canned::new(cl, 7);
        assert_eq!(receive(&mut c, "HEAD", 100, far()).unwrap().body, b"");
        assert!(c.sent().is_empty(), "receive writes nothing");
    }
}
