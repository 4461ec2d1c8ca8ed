//! Runs a command and prints its wall time and peak RSS, measured on the
//! child alone with wait4(2), as one line on stderr:
//!   BENCH wall_us=N maxrss_kib=N exit=N
//! Built static (rustc -C target-feature=+crt-static) so it runs in the
//! FROM scratch bench image, inside the container, next to selfprobe:
//! timing `podman exec` from outside adds the engine's ~100 ms, and
//! busybox's `time` reports ru_maxrss four times too large (it converts
//! the kernel's KiB as if they were pages).
//! No dependencies beyond std, so it builds without cargo.

use std::process::Command;
use std::time::Instant;

extern "C" {
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
}

/// struct rusage on x86_64 Linux: two timevals, then fourteen longs.
#[repr(C)]
struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    maxrss: i64,
    rest: [i64; 13],
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(prog) = args.next() else {
        eprintln!("usage: maxrss PROG [ARGS...]");
        std::process::exit(2);
    };
    let started = Instant::now();
    let child = match Command::new(&prog).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("maxrss: {}: {e}", prog.to_string_lossy());
            std::process::exit(127);
        }
    };
    let pid = child.id() as i32;
    let mut status = 0i32;
    let mut ru = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss: 0,
        rest: [0; 13],
    };
    // SAFETY: pid is our own child, not yet reaped; both pointers are to
    // live locals of the right layout.
    let r = unsafe { wait4(pid, &mut status, 0, &mut ru) };
    let wall = started.elapsed();
    if r != pid {
        eprintln!("maxrss: wait4 failed");
        std::process::exit(125);
    }
    let code = if status & 0x7f == 0 {
        (status >> 8) & 0xff
    } else {
        128 + (status & 0x7f)
    };
    eprintln!(
        "BENCH wall_us={} maxrss_kib={} user_us={} sys_us={} exit={code}",
        wall.as_micros(),
        ru.maxrss,
        ru.utime[0] * 1_000_000 + ru.utime[1],
        ru.stime[0] * 1_000_000 + ru.stime[1],
    );
    std::process::exit(code);
}
