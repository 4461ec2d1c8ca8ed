//! The Docker Engine API on a local Unix socket, for the two calls an
//! inspection makes for every container: its record
//! (`GET /containers/{id}/json`) and the probe's exec (create, start
//! attached, inspect). Everything else (info, ps, events, cp, images,
//! volumes) stays with the CLI (outside/engine.rs).
//!
//! Why: each `docker` CLI call starts a Go program that reads its
//! configuration and pings the daemon before it asks anything. Measured
//! here (docker CLI 28.2, dockerd 20.10, idle 2-CPU machine, medians of
//! 10): `docker container inspect` 38-64 ms against 0.5 ms for the same
//! request on the socket; `docker exec CTR true` 120 ms against 61 ms for
//! the API's create, start and inspect. The watch makes both calls for
//! every container it inspects (issue 31's latency).
//!
//! Which daemon: the one the CLI would talk to. `docker context inspect`
//! names the CLI's current endpoint (DOCKER_HOST, DOCKER_CONTEXT, the
//! configuration's current context, as the CLI resolves them); only a
//! `unix://` endpoint is used, and only once it answers `/_ping`. Any other
//! (ssh://, tcp:// with its TLS settings, a CLI without contexts such as
//! podman's docker shim) keeps the CLI for everything, as does
//! `--engine-cli-only`. Podman is always reached through its CLI: its API
//! service is not running unless a user started it.
//!
//! What comes back is what the CLI would have shown: the record is the
//! answer `docker container inspect` prints; the exec's stdout and stderr
//! are the frames of its multiplexed stream, and its exit code the exec's
//! own (126 or 127 with the runtime's "OCI runtime exec failed" on stdout
//! when the program cannot start, as the CLI prints it); an error from the
//! daemon is stderr "Error response from daemon: …" and exit 1, the CLI's
//! words.
//!
//! Bounds, as the CLI runner's (util/command.rs): every read and write
//! waits only for the time left before the deadline (util::http1's
//! `Timed`); a stream's output is capped, and output past a cap ends the
//! call (the connection is closed, as killing the CLI closes it) with the
//! stream named in `overflow`; a frame's length is the container's word
//! and only ever bounds a read, never an allocation.
//!
//! The HTTP codec is the probe library's util::http1, which the registry
//! client uses too. bollard (the Rust Docker client) was built and set
//! aside: a scratch program of one inspect and one attached exec with stdin
//! (bollard 0.19, tokio's current-thread runtime) works, and brings 65
//! crates the host does not have (tokio, hyper, hyper-util, hyperlocal,
//! bollard-stubs, futures, url with ICU's tables…; the host has 72), built
//! alone in 1 min 54 s on this 2-CPU machine, for three requests that the
//! host's worker threads make one after another; and its streams take no
//! deadline per read, which a container's output needs here.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use selfprobe::util::command::{human_bytes, Captured, ToolStatus};
use selfprobe::util::http1::{self, Request, Response, Timed, Version};
use selfprobe::util::sanitize;

/// What one answer other than an exec's stream may hold: a record is a
/// few kilobytes, a few hundred of them fit.
const MAX_ANSWER: usize = 4 << 20;

/// The Engine API on a Unix socket, and the API version to ask in.
#[derive(Debug, Clone)]
pub struct Api {
    socket: PathBuf,
    version: String,
}

impl Serialize for Api {
    /// As the endpoint the CLI named: `unix:///var/run/docker.sock`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.endpoint())
    }
}

/// Why the API did not answer a request: the socket, a timeout, bytes that
/// are not the answer expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the Docker API at {endpoint}: {why}")]
pub struct ApiError {
    endpoint: String,
    why: String,
}

/// The records found (a JSON array as `container inspect` prints it) and
/// the refs the daemon does not know, with its words.
pub type Records = (Vec<u8>, Vec<(String, String)>);

/// `unix:///path` to the path; None for any other endpoint.
pub fn unix_endpoint(host: &str) -> Option<PathBuf> {
    let path = host.strip_prefix("unix://")?;
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// An API version as the daemon and DOCKER_API_VERSION write it: "1.41".
fn is_version(v: &str) -> bool {
    let mut parts = v.split('.');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

impl Api {
    /// The API at `socket` once it answers `/_ping`: None when it does not
    /// (the caller keeps the CLI). The version asked in is the user's
    /// DOCKER_API_VERSION, as the CLI takes it, else the daemon's own.
    pub fn at(socket: &Path, deadline: Instant) -> Option<Api> {
        let mut api = Api {
            socket: socket.to_path_buf(),
            version: String::new(),
        };
        let r = api.request("GET", "/_ping", None, 64, deadline).ok()?;
        if r.status != 200 {
            return None;
        }
        let pinned = std::env::var("DOCKER_API_VERSION")
            .ok()
            .filter(|v| is_version(v));
        api.version = pinned.or_else(|| {
            r.header("api-version")
                .filter(|v| is_version(v))
                .map(str::to_string)
        })?;
        Some(api)
    }

    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    fn error(&self, why: impl std::fmt::Display) -> ApiError {
        ApiError {
            endpoint: self.endpoint(),
            why: why.to_string(),
        }
    }

    fn connect(&self, deadline: Instant) -> io::Result<UnixStream> {
        if Instant::now() >= deadline {
            return Err(io::ErrorKind::TimedOut.into());
        }
        selfprobe::util::socket::connect_unix(&self.socket).map_err(io::Error::from)
    }

    /// One request on a connection of its own; the answer's body up to `max`.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        max: usize,
        deadline: Instant,
    ) -> io::Result<Response> {
        let mut s = self.connect(deadline)?;
        let headers = [("Content-Type".to_string(), "application/json".to_string())];
        let req = Request {
            method,
            target: path,
            host: "docker",
            headers: if body.is_some() { &headers } else { &[] },
            version: Version::Http11,
        };
        match body {
            Some(b) => http1::exchange_body(&mut s, &req, b, max, deadline),
            None => http1::exchange(&mut s, &req, max, deadline),
        }
    }

    fn path(&self, rest: &str) -> String {
        format!("/v{}{rest}", self.version)
    }

    /// The records of `refs`, one request each (each answers in well under
    /// a millisecond): a JSON array as `container inspect` prints it, and
    /// the refs the daemon does not know with what it said.
    pub fn records(&self, refs: &[String], deadline: Instant) -> Result<Records, ApiError> {
        let mut out = b"[".to_vec();
        let mut missing = Vec::new();
        for r in refs {
            // What cannot name a container is not asked for: the CLI's
            // answer for it, without a request.
            let name = r.trim_start_matches('/');
            if !is_ref(name) {
                missing.push((
                    r.clone(),
                    format!(
                        "No such container: {}",
                        sanitize::short(&sanitize::escape(r), 100)
                    ),
                ));
                continue;
            }
            let path = self.path(&format!("/containers/{name}/json"));
            let resp = self
                .request("GET", &path, None, MAX_ANSWER + 1, deadline)
                .map_err(|e| self.error(e))?;
            match resp.status {
                200 if resp.body.len() <= MAX_ANSWER => {
                    if out.len() > 1 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&resp.body);
                }
                200 => return Err(self.error("a container's record is larger than 4 MiB")),
                // Not found, or a prefix of several ids (dockerd 20.10
                // answers that one 500): that ref's answer, as the CLI
                // prints it and goes on with the others. Any other error
                // is the daemon's, for every ref.
                400..=499 => missing.push((r.clone(), daemon_said(&resp))),
                _ if daemon_said(&resp).starts_with("Multiple IDs found") => {
                    missing.push((r.clone(), daemon_said(&resp)))
                }
                _ => return Err(self.error(daemon_said(&resp))),
            }
        }
        out.push(b']');
        Ok((out, missing))
    }

    /// `docker exec [-i] [-u USER] CTR ARGV…` through the API, with the
    /// CLI runner's result: stdout and stderr capped, the exit code, the
    /// deadline.
    pub fn exec(
        &self,
        ctr: &str,
        user: Option<&str>,
        argv: &[String],
        stdin: Option<&[u8]>,
        deadline: Instant,
        caps: (usize, usize),
    ) -> Captured {
        let started = Instant::now();
        let mut c = nothing_yet(ToolStatus::Error);
        let done = |mut c: Captured| {
            c.duration = started.elapsed();
            c
        };
        // A refusal from the daemon (no such container, not running) is
        // what the CLI shows for it: its words on stderr, exit 1.
        let refused = |mut c: Captured, r: &Response| {
            c.status = ToolStatus::Failed;
            c.exit_code = Some(1);
            c.stderr = format!("Error response from daemon: {}\n", daemon_said(r)).into_bytes();
            c.reason = Some("exited with exit status: 1".into());
            done(c)
        };
        let failed = |mut c: Captured, e: io::Error| {
            if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock {
                c.status = ToolStatus::Timeout;
                c.reason = Some(format!(
                    "did not finish within {} ms and was killed",
                    deadline.saturating_duration_since(started).as_millis()
                ));
            } else {
                c.status = ToolStatus::Error;
                c.reason = Some(self.error(e).to_string());
            }
            done(c)
        };
        let create = serde_json::json!({
            "User": user.unwrap_or(""),
            "AttachStdin": stdin.is_some(),
            "AttachStdout": true,
            "AttachStderr": true,
            "Tty": false,
            "Cmd": argv,
        });
        let name = ctr.trim_start_matches('/');
        if !is_ref(name) {
            let r = Response {
                status: 404,
                reason: "Not Found".into(),
                headers: Vec::new(),
                body: serde_json::json!({"message": format!("No such container: {ctr}")})
                    .to_string()
                    .into_bytes(),
            };
            return refused(c, &r);
        }
        let path = self.path(&format!("/containers/{name}/exec"));
        let body = create.to_string();
        let r = match self.request("POST", &path, Some(body.as_bytes()), 64 << 10, deadline) {
            Ok(r) => r,
            Err(e) => return failed(c, e),
        };
        if r.status != 201 {
            return refused(c, &r);
        }
        let Some(id) = serde_json::from_slice::<Value>(&r.body)
            .ok()
            .and_then(|v| v.get("Id")?.as_str().map(str::to_string))
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
        else {
            return failed(c, io::Error::other("the exec it created has no id"));
        };
        match self.attach(&id, stdin, deadline, caps, &mut c) {
            Ok(Some(r)) => return refused(c, &r),
            Ok(None) => {}
            Err(e) => return failed(c, e),
        }
        if let Some(which) = c.overflow {
            c.status = ToolStatus::Failed;
            let cap = if which == "stdout" { caps.0 } else { caps.1 };
            c.reason = Some(format!(
                "wrote more than {} on {which} and was killed",
                human_bytes(cap)
            ));
            return done(c);
        }
        // The daemon ends the stream once the exec's exit is recorded; a
        // moment's grace for a daemon that closes it first.
        let mut wait = std::time::Duration::from_micros(200);
        loop {
            let path = self.path(&format!("/exec/{id}/json"));
            let r = match self.request("GET", &path, None, 64 << 10, deadline) {
                Ok(r) => r,
                Err(e) => return failed(c, e),
            };
            if r.status != 200 {
                return refused(c, &r);
            }
            let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            let running = v.get("Running").and_then(Value::as_bool).unwrap_or(false);
            let code = v
                .get("ExitCode")
                .and_then(Value::as_i64)
                .and_then(|n| i32::try_from(n).ok());
            if !running {
                if let Some(code) = code {
                    c.exit_code = Some(code);
                    c.status = if code == 0 {
                        ToolStatus::Ok
                    } else {
                        ToolStatus::Failed
                    };
                    c.reason = (code != 0).then(|| format!("exited with exit status: {code}"));
                    return done(c);
                }
            }
            if Instant::now() + wait >= deadline {
                return failed(c, io::ErrorKind::TimedOut.into());
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(std::time::Duration::from_millis(5));
        }
    }

    /// Starts exec `id` attached: stdin written and closed, then the
    /// stream demultiplexed into `c` until the daemon ends it. Ok(Some)
    /// is the daemon's refusal.
    fn attach(
        &self,
        id: &str,
        stdin: Option<&[u8]>,
        deadline: Instant,
        caps: (usize, usize),
        c: &mut Captured,
    ) -> io::Result<Option<Response>> {
        let mut s = self.connect(deadline)?;
        let path = self.path(&format!("/exec/{id}/start"));
        // The Upgrade header is what makes the daemon answer 101 and hand
        // the connection over to the stream (as the CLI asks).
        let headers = [
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Upgrade".to_string(), "tcp".to_string()),
        ];
        let req = Request {
            method: "POST",
            target: &path,
            host: "docker",
            headers: &headers,
            version: Version::Http11,
        };
        s.arm(deadline)?;
        s.write_all(&req.with_body(br#"{"Detach":false,"Tty":false}"#))?;
        // The head, then what was read past it: the stream's first bytes.
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head, used) = loop {
            if let Some(parsed) = http1::parse_head(&buf)? {
                break parsed;
            }
            s.arm(deadline)?;
            let n = s.read(&mut chunk)?;
            if n == 0 {
                return Err(http1::HeadError::Truncated.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        if !matches!(head.status, 101 | 200) {
            // The refusal's body: a JSON message, small.
            let mut r = head;
            let mut body = buf.split_off(used);
            let _ = (&mut s).take(64 << 10).read_to_end(&mut body);
            r.body = body;
            return Ok(Some(r));
        }
        buf.drain(..used);
        // Stdin only once the daemon has handed the connection over: bytes
        // sent with the request are lost. The key is small: it fits the
        // socket's buffer whether or not the program reads it.
        // A program that ends without reading it may have had its stream
        // closed already: what it wrote is still to be read.
        if let Some(input) = stdin {
            s.arm(deadline)?;
            match s.write_all(input) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                    ) => {}
                other => other?,
            }
        }
        let _ = s.shutdown(Shutdown::Write);
        let mut demux = Demux::new(caps);
        demux.feed(&buf, c)?;
        while c.overflow.is_none() {
            s.arm(deadline)?;
            let n = match s.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                break;
            }
            demux.feed(&chunk[..n], c)?;
        }
        if c.overflow.is_none() && !demux.between_frames() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the exec's stream ended inside a frame",
            ));
        }
        Ok(None)
    }
}

/// The exec stream's frames: 8 bytes (the stream: 0 stdin, 1 stdout, 2
/// stderr, 3 the daemon's own error; three zeros; the length, big-endian)
/// then that many bytes. Fed as bytes arrive, in pieces of any size.
struct Demux {
    caps: (usize, usize),
    head: Vec<u8>,
    /// The current frame's stream and what is left of it.
    frame: Option<(u8, usize)>,
}

impl Demux {
    fn new(caps: (usize, usize)) -> Demux {
        Demux {
            caps,
            head: Vec::with_capacity(8),
            frame: None,
        }
    }

    fn between_frames(&self) -> bool {
        self.frame.is_none() && self.head.is_empty()
    }

    fn feed(&mut self, mut bytes: &[u8], c: &mut Captured) -> io::Result<()> {
        while !bytes.is_empty() && c.overflow.is_none() {
            let Some((stream, left)) = self.frame else {
                let take = (8 - self.head.len()).min(bytes.len());
                self.head.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if self.head.len() == 8 {
                    let h = std::mem::take(&mut self.head);
                    if h[0] > 3 || h[1..4] != [0, 0, 0] {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "the exec's stream is not the daemon's multiplexed stream",
                        ));
                    }
                    let len = u32::from_be_bytes([h[4], h[5], h[6], h[7]]) as usize;
                    self.frame = (len > 0).then_some((h[0], len));
                }
                continue;
            };
            let take = left.min(bytes.len());
            let (piece, rest) = bytes.split_at(take);
            bytes = rest;
            self.frame = (left > take).then_some((stream, left - take));
            let (sink, cap, name) = match stream {
                1 => (&mut c.stdout, self.caps.0, "stdout"),
                // Stdin is never echoed; the daemon's own errors are stderr.
                0 => continue,
                _ => (&mut c.stderr, self.caps.1, "stderr"),
            };
            let room = cap.saturating_sub(sink.len());
            sink.extend_from_slice(&piece[..piece.len().min(room)]);
            if piece.len() > room {
                c.overflow = Some(name);
            }
        }
        Ok(())
    }
}

/// A call's result before anything came back: `status`, no output.
fn nothing_yet(status: ToolStatus) -> Captured {
    Captured {
        status,
        exit_code: None,
        stdout: Vec::new(),
        stderr: Vec::new(),
        overflow: None,
        duration: std::time::Duration::ZERO,
        reason: None,
    }
}

/// The exec stream's bytes fed to the demultiplexer in `pieces`, as the
/// socket hands them over: stdout, stderr and the stream that passed its
/// cap; Err where the bytes are not the daemon's stream (the fuzz target
/// exec_stream holds it to what a whole read gives).
pub type Demuxed = (Vec<u8>, Vec<u8>, Option<&'static str>);

pub fn demultiplex(pieces: &[&[u8]], caps: (usize, usize)) -> Result<Demuxed, String> {
    let mut d = Demux::new(caps);
    let mut c = nothing_yet(ToolStatus::Ok);
    for p in pieces {
        d.feed(p, &mut c).map_err(|e| e.to_string())?;
    }
    Ok((c.stdout, c.stderr, c.overflow))
}

/// A container's name or id as the engines allow them
/// (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`): one path segment that needs no escaping
/// and cannot climb out of `/containers/`.
fn is_ref(r: &str) -> bool {
    r.len() <= 256
        && r.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && r.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The daemon's message in an error answer (`{"message": "…"}`), made safe
/// to show; its status when it gave none.
fn daemon_said(r: &Response) -> String {
    let msg = serde_json::from_slice::<Value>(&r.body)
        .ok()
        .and_then(|v| v.get("message")?.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{} {}", r.status, r.reason));
    sanitize::short(&sanitize::escape(msg.trim()), 400)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured() -> Captured {
        nothing_yet(ToolStatus::Error)
    }

    fn frame(stream: u8, data: &[u8]) -> Vec<u8> {
        let mut f = vec![stream, 0, 0, 0];
        f.extend_from_slice(&(data.len() as u32).to_be_bytes());
        f.extend_from_slice(data);
        f
    }

    #[test]
    fn frames_are_split_into_their_streams_however_the_bytes_arrive() {
        let mut all = frame(1, b"{\"report\":");
        all.extend(frame(2, b"a warning\n"));
        all.extend(frame(1, b"1}"));
        all.extend(frame(0, b"the key, never kept"));
        all.extend(frame(1, b""));
        all.extend(frame(3, b"daemon: gone\n"));
        for piece in [1, 3, 7, 8, 9, 4096] {
            let mut d = Demux::new((1 << 20, 1 << 20));
            let mut c = captured();
            for p in all.chunks(piece) {
                d.feed(p, &mut c).unwrap();
            }
            assert!(d.between_frames(), "piece {piece}");
            assert_eq!(c.stdout, b"{\"report\":1}", "piece {piece}");
            assert_eq!(c.stderr, b"a warning\ndaemon: gone\n", "piece {piece}");
            assert!(c.overflow.is_none());
        }
    }

    #[test]
    fn output_past_a_cap_ends_the_read_and_a_frame_length_is_never_allocated() {
        let mut d = Demux::new((10, 4));
        let mut c = captured();
        // A frame that claims 4 GiB: only what arrives is read, up to the cap.
        let mut f = vec![1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        f.extend_from_slice(b"0123456789abcdef");
        d.feed(&f, &mut c).unwrap();
        assert_eq!(c.stdout, b"0123456789");
        assert_eq!(c.overflow, Some("stdout"));
        let mut d = Demux::new((10, 4));
        let mut c = captured();
        d.feed(&frame(2, b"too long"), &mut c).unwrap();
        assert_eq!(c.stderr, b"too ");
        assert_eq!(c.overflow, Some("stderr"));
    }

    #[test]
    fn a_stream_that_is_not_multiplexed_is_an_error_not_output() {
        let mut d = Demux::new((1 << 20, 1 << 20));
        let mut c = captured();
        let e = d.feed(b"OCI runtime exec failed", &mut c).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(c.stdout.is_empty() && c.stderr.is_empty());
        // Ended inside a header or a frame: not between frames.
        let mut d = Demux::new((1 << 20, 1 << 20));
        let mut c = captured();
        d.feed(&frame(1, b"abc")[..9], &mut c).unwrap();
        assert!(!d.between_frames());
    }

    /// A daemon on a Unix socket of its own that answers each connection
    /// with the next of `answers` (after reading the request's head and
    /// body), or holds it open without a word when the answer is None.
    struct Daemon {
        dir: PathBuf,
        api: Api,
        served: std::thread::JoinHandle<Vec<String>>,
    }

    fn daemon(answers: Vec<Option<Vec<u8>>>) -> Daemon {
        use std::os::unix::net::UnixListener;
        let dir = std::env::temp_dir().join(format!(
            "selfprobe-api-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir(&dir).unwrap();
        let sock = dir.join("docker.sock");
        let l = UnixListener::bind(&sock).unwrap();
        let served = std::thread::spawn(move || {
            let mut asked = Vec::new();
            for a in answers {
                let Ok((mut s, _)) = l.accept() else { break };
                let mut req = Vec::new();
                let mut b = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut b).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    req.extend_from_slice(&b[..n]);
                }
                let text = String::from_utf8_lossy(&req).to_string();
                asked.push(text.lines().next().unwrap_or("").to_string());
                match a {
                    Some(bytes) => {
                        let _ = s.write_all(&bytes);
                    }
                    None => std::thread::sleep(std::time::Duration::from_millis(1500)),
                }
            }
            asked
        });
        let api = Api {
            socket: sock,
            version: "1.41".into(),
        };
        Daemon { dir, api, served }
    }

    fn json(status: &str, body: &str) -> Option<Vec<u8>> {
        Some(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        )
    }

    fn upgraded(stream: &[u8]) -> Option<Vec<u8>> {
        let mut v = b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n".to_vec();
        v.extend_from_slice(stream);
        Some(v)
    }

    fn soon(ms: u64) -> Instant {
        Instant::now() + std::time::Duration::from_millis(ms)
    }

    const EXEC_ID: &str = r#"{"Id":"e0e1"}"#;

    #[test]
    fn an_exec_gives_what_the_cli_would_its_output_and_its_exit_code() {
        let mut stream = frame(1, b"{\"report\":1}");
        stream.extend(frame(2, b"a warning\n"));
        let d = daemon(vec![
            json("201 Created", EXEC_ID),
            upgraded(&stream),
            json("200 OK", r#"{"Running":false,"ExitCode":3}"#),
        ]);
        let argv = vec!["/probe".to_string(), "run".to_string()];
        let c = d.api.exec(
            "ws-1",
            Some("0"),
            &argv,
            Some(b"KEY"),
            soon(5000),
            (1 << 20, 1 << 10),
        );
        assert_eq!(c.status, ToolStatus::Failed, "{c:?}");
        assert_eq!(c.exit_code, Some(3));
        assert_eq!(c.stdout, b"{\"report\":1}");
        assert_eq!(c.stderr, b"a warning\n");
        let asked = d.served.join().unwrap();
        assert_eq!(
            asked,
            [
                "POST /v1.41/containers/ws-1/exec HTTP/1.1",
                "POST /v1.41/exec/e0e1/start HTTP/1.1",
                "GET /v1.41/exec/e0e1/json HTTP/1.1"
            ]
        );
        let _ = std::fs::remove_dir_all(&d.dir);
    }

    #[test]
    fn a_refusal_is_the_daemon_s_words_and_exit_1_as_the_cli_shows_it() {
        let d = daemon(vec![json(
            "409 Conflict",
            r#"{"message":"Container ws-1 is not running\u001b[31m"}"#,
        )]);
        let c = d
            .api
            .exec("ws-1", None, &["true".into()], None, soon(5000), (64, 64));
        assert_eq!(
            (c.status, c.exit_code),
            (ToolStatus::Failed, Some(1)),
            "{c:?}"
        );
        let said = String::from_utf8_lossy(&c.stderr).to_string();
        assert!(
            said.starts_with("Error response from daemon: Container ws-1 is not running"),
            "{said}"
        );
        assert!(
            !said.contains('\u{1b}'),
            "an escape reached the output: {said:?}"
        );
        d.served.join().unwrap();
        let _ = std::fs::remove_dir_all(&d.dir);
        // What cannot name a container is refused without a request.
        let d = daemon(vec![]);
        let c = d.api.exec(
            "../../info",
            None,
            &["true".into()],
            None,
            soon(5000),
            (64, 64),
        );
        assert_eq!(c.exit_code, Some(1));
        assert!(String::from_utf8_lossy(&c.stderr).contains("No such container"));
        assert!(d.served.join().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&d.dir);
    }

    #[test]
    fn a_flood_is_cut_at_its_cap_and_a_silent_daemon_at_the_deadline() {
        let mut flood = vec![1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        flood.extend(std::iter::repeat_n(b'x', 256 << 10));
        let d = daemon(vec![json("201 Created", EXEC_ID), upgraded(&flood)]);
        let c = d.api.exec(
            "ws-1",
            None,
            &["yes".into()],
            None,
            soon(5000),
            (1 << 10, 64),
        );
        assert_eq!(c.overflow, Some("stdout"), "{c:?}");
        assert_eq!(c.stdout.len(), 1 << 10);
        assert_eq!(c.status, ToolStatus::Failed);
        assert!(c
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("more than 1 KiB on stdout")));
        d.served.join().unwrap();
        let _ = std::fs::remove_dir_all(&d.dir);
        // The exec started and then nothing: the deadline ends the wait.
        let d = daemon(vec![json("201 Created", EXEC_ID), None]);
        let t = Instant::now();
        let c = d
            .api
            .exec("ws-1", None, &["sleep".into()], None, soon(300), (64, 64));
        assert_eq!(c.status, ToolStatus::Timeout, "{c:?}");
        assert!(
            t.elapsed() < std::time::Duration::from_millis(1200),
            "{:?}",
            t.elapsed()
        );
        d.served.join().unwrap();
        let _ = std::fs::remove_dir_all(&d.dir);
    }

    #[test]
    fn records_are_asked_one_by_one_and_an_unknown_one_is_missing() {
        let d = daemon(vec![
            json("200 OK", r#"{"Id":"aaaa"}"#),
            json("404 Not Found", r#"{"message":"No such container: gone"}"#),
            json("200 OK", r#"{"Id":"bbbb"}"#),
        ]);
        let refs: Vec<String> = ["ws-a", "gone", "/ws-b", "a/../b"]
            .map(String::from)
            .to_vec();
        let (json, missing) = d.api.records(&refs, soon(5000)).unwrap();
        assert_eq!(json, br#"[{"Id":"aaaa"},{"Id":"bbbb"}]"#);
        let names: Vec<&str> = missing.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(names, ["gone", "a/../b"]);
        assert_eq!(
            d.served.join().unwrap(),
            [
                "GET /v1.41/containers/ws-a/json HTTP/1.1",
                "GET /v1.41/containers/gone/json HTTP/1.1",
                "GET /v1.41/containers/ws-b/json HTTP/1.1"
            ]
        );
        let _ = std::fs::remove_dir_all(&d.dir);
        // A daemon that is not there is an error naming its endpoint.
        let d = daemon(vec![]);
        d.served.join().unwrap();
        let _ = std::fs::remove_dir_all(&d.dir);
        let e = d.api.records(&refs[..1], soon(1000)).unwrap_err();
        assert!(
            e.to_string().starts_with("the Docker API at unix://"),
            "{e}"
        );
    }

    #[test]
    fn an_ambiguous_prefix_is_that_ref_s_answer_and_a_sick_daemon_everyone_s() {
        let d = daemon(vec![
            json(
                "500 Internal Server Error",
                r#"{"message":"Multiple IDs found with provided prefix: 4"}"#,
            ),
            json("200 OK", r#"{"Id":"aaaa"}"#),
            json(
                "500 Internal Server Error",
                r#"{"message":"database is locked"}"#,
            ),
        ]);
        let refs: Vec<String> = ["4", "ws-a"].map(String::from).to_vec();
        let (json, missing) = d.api.records(&refs, soon(5000)).unwrap();
        assert_eq!(json, br#"[{"Id":"aaaa"}]"#);
        assert_eq!(missing.len(), 1);
        assert!(
            missing[0].1.starts_with("Multiple IDs found"),
            "{missing:?}"
        );
        let e = d.api.records(&refs[1..], soon(5000)).unwrap_err();
        assert!(e.to_string().contains("database is locked"), "{e}");
        d.served.join().unwrap();
        let _ = std::fs::remove_dir_all(&d.dir);
    }

    #[test]
    fn only_a_unix_endpoint_with_an_absolute_path_is_used() {
        assert_eq!(
            unix_endpoint("unix:///var/run/docker.sock"),
            Some(PathBuf::from("/var/run/docker.sock"))
        );
        assert_eq!(unix_endpoint("unix://relative.sock"), None);
        assert_eq!(unix_endpoint("tcp://127.0.0.1:2376"), None);
        assert_eq!(unix_endpoint("ssh://user@host"), None);
        assert_eq!(unix_endpoint("npipe:////./pipe/docker_engine"), None);
    }

    #[test]
    fn refs_are_one_path_segment() {
        assert!(is_ref("ws-1_a.b") && is_ref("0123abcdef"));
        for bad in [
            "",
            "..",
            ".hidden",
            "../../v1.41/info",
            "a b",
            "a\r\nHost: x",
            "a/b",
            "a?x",
            "a%2F",
        ] {
            assert!(!is_ref(bad), "{bad:?}");
        }
        assert!(is_version("1.41") && is_version("1.9"));
        assert!(!is_version("1.41.0") && !is_version("v1.41") && !is_version("1."));
    }
}
