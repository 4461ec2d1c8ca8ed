//! The engine's event stream, as its CLI gives it: `docker events --format
//! '{{json .}}'` or `podman events --format json`, filtered by the engine
//! to containers' `start` and removal (`destroy` in Docker, `remove` in
//! podman) and to the watch's labels, from `--since` when the watch is
//! catching up.
//!
//! A line is what the engine says about a container whose name and labels
//! whoever started it chose: each is read up to MAX_LINE bytes (a longer
//! one is dropped whole, never split into two events), parsed as JSON and
//! kept only when its id is an engine id (64 hex digits). The CLI runs in a
//! process group of its own, so stopping the stream kills it and whatever it
//! started.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::outside::record::EngineKind;

/// The longest event line taken. Docker's and podman's lines are a few
/// hundred bytes plus the container's labels.
pub const MAX_LINE: usize = 256 << 10;
/// What is kept of the CLI's stderr, for the reason the stream ended.
const STDERR_KEEP: usize = 4 << 10;

/// What happened to a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Start,
    /// Removed: Docker's `destroy`, podman's `remove`.
    Remove,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: Kind,
    /// The full id (64 hex digits).
    pub id: String,
    /// The container's name as the event gives it (untrusted: shown only
    /// escaped).
    pub name: String,
    /// When the engine says it happened: nanoseconds since the epoch on the
    /// engine's clock (None when the line does not say).
    pub time_ns: Option<i128>,
}

/// What the stream sends to the watch's loop. `epoch` tells a stream from
/// the ones before it, whose last words are then ignored.
#[derive(Debug)]
pub enum Msg {
    Event(u64, Event),
    /// A line that was not an event the watch can use, and why (said once
    /// in a while, not per line).
    Unreadable(u64, String),
    /// The CLI ended (or its output did): why, in words.
    Ended(u64, String),
}

/// The CLI's arguments for the stream: JSON lines of container start and
/// removal events, the watch's label filters, and `since` (nanoseconds
/// since the epoch) when catching up.
pub fn args(engine: EngineKind, filters: &[String], since: Option<i128>) -> Vec<String> {
    let mut a: Vec<String> = vec!["events".into(), "--format".into()];
    let removal = match engine {
        EngineKind::Docker => {
            a.push("{{json .}}".into());
            "destroy"
        }
        EngineKind::Podman => {
            a.push("json".into());
            "remove"
        }
    };
    for f in ["type=container", "event=start"]
        .into_iter()
        .map(str::to_string)
        .chain([format!("event={removal}")])
        .chain(filters.iter().cloned())
    {
        a.push("--filter".into());
        a.push(f);
    }
    if let Some(ns) = since {
        a.push("--since".into());
        a.push(match engine {
            // Docker takes seconds since the epoch with a fraction.
            EngineKind::Docker => {
                let ns = ns.max(0);
                format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
            }
            // podman takes RFC 3339 (and reads its own file of events).
            EngineKind::Podman => rfc3339_ns(ns),
        });
    }
    a
}

/// One line of the stream: Some(event) for a container's start or removal,
/// None for any other event, Err when it is not an event at all.
pub fn parse_line(engine: EngineKind, line: &[u8]) -> Result<Option<Event>, String> {
    let v: Value = serde_json::from_slice(line).map_err(|e| format!("not a JSON event ({e})"))?;
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (kind, action, id, name, time_ns) = match engine {
        EngineKind::Docker => {
            let kind = match s("/Type") {
                "" => s("/type"),
                k => k,
            };
            let action = match s("/Action") {
                "" => s("/status"),
                a => a,
            };
            let id = match s("/Actor/ID") {
                "" => s("/id"),
                i => i,
            };
            let time = v
                .get("timeNano")
                .and_then(Value::as_i64)
                .map(i128::from)
                .or_else(|| {
                    v.get("time")
                        .and_then(Value::as_i64)
                        .map(|t| i128::from(t) * 1_000_000_000)
                });
            (kind, action, id, s("/Actor/Attributes/name"), time)
        }
        EngineKind::Podman => (
            s("/Type"),
            s("/Status"),
            s("/ID"),
            s("/Name"),
            parse_rfc3339_ns(s("/Time")),
        ),
    };
    if kind != "container" {
        return Ok(None);
    }
    let kind = match (engine, action) {
        (_, "start") => Kind::Start,
        (EngineKind::Docker, "destroy") | (EngineKind::Podman, "remove") => Kind::Remove,
        _ => return Ok(None),
    };
    if !is_engine_id(id) {
        return Err(format!(
            "a container event whose id is not 64 hex digits ({})",
            selfprobe::util::sanitize::short(&selfprobe::util::sanitize::escape(id), 80)
        ));
    }
    Ok(Some(Event {
        kind,
        id: id.to_ascii_lowercase(),
        name: name.trim_start_matches('/').to_string(),
        time_ns,
    }))
}

/// Docker's and podman's container ids: 64 hex digits.
pub fn is_engine_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days_from_civil, the inverse of host::civil_from_days).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// An RFC 3339 time (`2026-12-02T12:10:29.520867638Z`, `…+02:00`) as
/// nanoseconds since the epoch; None when it is not one.
pub fn parse_rfc3339_ns(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 20 || !s.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac: i128 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 9 {
                frac = frac * 10 + i128::from(b[i] - b'0');
            }
            i += 1;
        }
        let digits = (i - start).min(9);
        if digits == 0 {
            return None;
        }
        frac *= 10i128.pow(9 - digits as u32);
    }
    let offset_s: i64 = match &s[i..] {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_s;
    // An engine's times are after 1970 and before 10000 (so that each
    // prints back as the same four-digit year).
    if !(0..253_402_300_800).contains(&secs) {
        return None;
    }
    Some(i128::from(secs) * 1_000_000_000 + frac)
}

/// Nanoseconds since the epoch as RFC 3339 UTC with nanoseconds.
pub fn rfc3339_ns(ns: i128) -> String {
    let secs = ns.div_euclid(1_000_000_000) as i64;
    let frac = ns.rem_euclid(1_000_000_000);
    let (y, m, d) = selfprobe::host::civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Now, in nanoseconds since the epoch, on this host's clock.
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// A running event stream: the CLI, read on a thread of its own.
pub struct Stream {
    pgid: i32,
    /// Set by the reader once it has reaped the CLI: from then on its pid
    /// (and group id) may belong to another process and is never signalled.
    reaped: Arc<Mutex<bool>>,
}

impl Stream {
    /// Starts `cli args` and a thread that sends each event to `tx`.
    pub fn spawn(
        cli: &Path,
        args: &[String],
        engine: EngineKind,
        epoch: u64,
        tx: SyncSender<super::Msg>,
    ) -> std::io::Result<Stream> {
        let mut child = Command::new(cli)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let pgid = child.id() as i32;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let said = Arc::new(Mutex::new(Vec::new()));
        let said_w = said.clone();
        let err_reader = std::thread::Builder::new()
            .name("events-stderr".into())
            .spawn(move || {
                let Some(mut e) = stderr else { return };
                let mut buf = [0u8; 4096];
                while let Ok(n) = e.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = said_w.lock().unwrap_or_else(|p| p.into_inner());
                    kept.extend_from_slice(&buf[..n]);
                    let over = kept.len().saturating_sub(STDERR_KEEP);
                    kept.drain(..over);
                }
            })
            .ok();
        let reaped = Arc::new(Mutex::new(false));
        let reaped_r = reaped.clone();
        std::thread::Builder::new()
            .name("events".into())
            .spawn(move || {
                if let Some(out) = stdout {
                    read_lines(out, |line| {
                        let msg = match parse_line(engine, line) {
                            Ok(Some(ev)) => events_msg(Msg::Event(epoch, ev)),
                            Ok(None) => return true,
                            Err(why) => events_msg(Msg::Unreadable(epoch, why)),
                        };
                        tx.send(msg).is_ok()
                    });
                }
                // The output ended: the CLI is ending, or it closed its
                // stdout and lives on, which a stream must not.
                let until = Instant::now() + Duration::from_secs(5);
                let status = loop {
                    let mut r = reaped_r.lock().unwrap_or_else(|p| p.into_inner());
                    match child.try_wait() {
                        Ok(Some(st)) => {
                            *r = true;
                            break Some(st);
                        }
                        Ok(None) if Instant::now() < until => {}
                        _ => {
                            let _ = nix::sys::signal::killpg(
                                nix::unistd::Pid::from_raw(pgid),
                                nix::sys::signal::Signal::SIGKILL,
                            );
                            let st = child.wait().ok();
                            *r = true;
                            break st;
                        }
                    }
                    drop(r);
                    std::thread::sleep(Duration::from_millis(20));
                };
                if let Some(h) = err_reader {
                    let _ = h.join();
                }
                let text = String::from_utf8_lossy(&said.lock().unwrap_or_else(|p| p.into_inner()))
                    .into_owned();
                let text: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                let last = text[text.len().saturating_sub(2)..].join(" / ");
                let how = match status {
                    Some(st) => format!("the events CLI ended ({st})"),
                    None => "the events CLI ended".to_string(),
                };
                let why = if last.is_empty() {
                    how
                } else {
                    format!(
                        "{how}: {}",
                        selfprobe::util::sanitize::short(
                            &selfprobe::util::sanitize::escape(&last),
                            300
                        )
                    )
                };
                let _ = tx.send(events_msg(Msg::Ended(epoch, why)));
            })?;
        Ok(Stream { pgid, reaped })
    }

    /// Ends the stream: its CLI's process group is killed (unless the
    /// reader has already reaped it); the reader then sends `Ended`.
    pub fn stop(&self) {
        let r = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        if !*r {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.stop();
    }
}

fn events_msg(m: Msg) -> super::Msg {
    super::Msg::Stream(m)
}

/// Calls `each` with every line of `r` (without its newline) up to
/// MAX_LINE bytes; a longer line is skipped whole. Stops at the end of the
/// input or when `each` returns false.
pub fn read_lines(r: impl Read, mut each: impl FnMut(&[u8]) -> bool) {
    let mut r = BufReader::with_capacity(64 << 10, r);
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if buf.is_empty() {
            return;
        }
        let (take, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if !overlong {
            if line.len() + take > MAX_LINE {
                overlong = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(&buf[..take]);
            }
        }
        r.consume(take + usize::from(end));
        if end {
            let ok = overlong || line.is_empty() || each(&line);
            line.clear();
            overlong = false;
            if !ok {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "dd1fb4c47f6e51dbf7f89b2e3c36d414822afac0a6337cae10222386fd7224e3";

    #[test]
    fn docker_and_podman_lines_become_events() {
        let docker = format!(
            r#"{{"status":"start","id":"{ID}","from":"img","Type":"container","Action":"start","Actor":{{"ID":"{ID}","Attributes":{{"image":"img","name":"wtry1","agent.workspace":"1"}}}},"scope":"local","time":1796213413,"timeNano":1796213413513840713}}"#
        );
        let ev = parse_line(EngineKind::Docker, docker.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(ev.kind, Kind::Start);
        assert_eq!(ev.id, ID);
        assert_eq!(ev.name, "wtry1");
        assert_eq!(ev.time_ns, Some(1796213413513840713));
        let destroy = docker.replace("\"start\"", "\"destroy\"");
        assert_eq!(
            parse_line(EngineKind::Docker, destroy.as_bytes())
                .unwrap()
                .unwrap()
                .kind,
            Kind::Remove
        );
        // exec_start and die are not the watch's.
        let exec = docker.replace("\"start\"", "\"exec_start: /x run\"");
        assert_eq!(
            parse_line(EngineKind::Docker, exec.as_bytes()).unwrap(),
            None
        );
        let podman = format!(
            r#"{{"ID":"{ID}","Image":"localhost/x:latest","Name":"wtry1","Status":"remove","Time":"2026-12-02T12:10:31.769070153Z","Type":"container","Attributes":{{"a":"1"}}}}"#
        );
        let ev = parse_line(EngineKind::Podman, podman.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(ev.kind, Kind::Remove);
        assert_eq!(
            ev.time_ns.map(rfc3339_ns).as_deref(),
            Some("2026-12-02T12:10:31.769070153Z")
        );
        // Docker's word for removal is not podman's.
        let p2 = podman.replace("\"remove\"", "\"destroy\"");
        assert_eq!(parse_line(EngineKind::Podman, p2.as_bytes()).unwrap(), None);
    }

    #[test]
    fn hostile_lines_are_refused_not_trusted() {
        for bad in [
            &b"not json"[..],
            br#"{"Type":"container","Action":"start","Actor":{"ID":"../../etc"}}"#,
            br#"{"Type":"container","Action":"start","Actor":{"ID":"zz1fb4c47f6e51dbf7f89b2e3c36d414822afac0a6337cae10222386fd7224e3"}}"#,
        ] {
            assert!(parse_line(EngineKind::Docker, bad).is_err(), "{bad:?}");
        }
        // A line past MAX_LINE is dropped whole; the next one is read.
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"a\":1}\n\nlast");
        let mut seen = Vec::new();
        read_lines(&input[..], |l| {
            seen.push(l.to_vec());
            true
        });
        assert_eq!(seen, vec![b"{\"a\":1}".to_vec()]);
    }

    #[test]
    fn times_round_trip_and_offsets_count() {
        let t = parse_rfc3339_ns("2026-12-02T12:10:29.520867638Z").unwrap();
        assert_eq!(rfc3339_ns(t), "2026-12-02T12:10:29.520867638Z");
        assert_eq!(
            parse_rfc3339_ns("2026-12-02T14:10:29.5+02:00"),
            Some(t - 20_867_638)
        );
        assert_eq!(parse_rfc3339_ns("1970-01-01T00:00:00Z"), Some(0));
        for bad in [
            "",
            "2026-13-02T12:10:29Z",
            "2026-12-02T12:10:29",
            "1970-01-01T00:00:00+01:00",
            "9999-12-31T23:59:59-01:00",
            "2026-12-02T12:10:29.Z",
        ] {
            assert_eq!(parse_rfc3339_ns(bad), None, "{bad}");
        }
        let a = args(EngineKind::Docker, &["label=a=1".into()], Some(t));
        assert_eq!(a[a.len() - 1], "1796213429.520867638");
        assert!(a
            .windows(2)
            .any(|w| w[0] == "--filter" && w[1] == "event=destroy"));
        let p = args(EngineKind::Podman, &[], Some(t));
        assert!(p
            .windows(2)
            .any(|w| w[0] == "--filter" && w[1] == "event=remove"));
        assert_eq!(p[p.len() - 1], "2026-12-02T12:10:29.520867638Z");
    }
}
