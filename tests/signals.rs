//! SIGINT and SIGTERM in the middle of `--write-test`: whatever selfprobe
//! had created is removed before it exits, so an interrupted run leaves the
//! host tree as it was.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fixture::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".selfprobe-write-test-") {
                out.push(e.path().display().to_string());
            }
            if e.file_type().unwrap().is_dir() && !e.file_type().unwrap().is_symlink() {
                stack.push(e.path());
            }
        }
    }
    out
}

#[test]
fn interrupted_write_tests_leave_nothing_behind() {
    // Many writable host mounts make the write phase long enough to be hit.
    let mut lines = Vec::new();
    for i in 0..400 {
        lines.push(format!(
            "{} 80 254:0 /srv/m{i} /mnt/m{i} rw,relatime - ext4 /dev/vda rw",
            200 + i
        ));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let f = Fixture::container("signals", &mountinfo_with(&refs), &data("plain.status"));
    for i in 0..400 {
        f.dir(&format!("mnt/m{i}"));
    }
    let mut interrupted = 0;
    for round in 0..40u64 {
        let sig = if round % 2 == 0 {
            Signal::SIGINT
        } else {
            Signal::SIGTERM
        };
        let mut child = Command::new(BIN)
            .arg("--root")
            .arg(&f.dir)
            .args(["--write-test", "--format", "json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Spread the signal over the run: early, mid-walk, mid-write.
        std::thread::sleep(Duration::from_micros(500 + round * 250));
        let _ = kill(Pid::from_raw(child.id() as i32), sig);
        let started = Instant::now();
        let status = child.wait().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "exit after a signal is prompt"
        );
        if status.code() == Some(128 + sig as i32) {
            interrupted += 1;
        }
        let left = leftovers(&f.dir);
        assert!(
            left.is_empty(),
            "round {round} ({sig:?}, exit {status:?}) left {left:?}"
        );
    }
    eprintln!("interrupted {interrupted} of 40");
    assert!(
        interrupted > 0,
        "no round was interrupted mid-run: the test proved nothing"
    );
}
