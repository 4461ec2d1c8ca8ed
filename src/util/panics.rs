//! What a panic does, the same whether the build unwinds or aborts.
//!
//! The shipped build has `panic = "abort"` and no unwind tables (Cargo.toml,
//! build.rs): the unwinder's tables and landing pads were 0.96 MB of a
//! binary that must stay under 4 MiB (bench/RESULTS.md, "Size"), and
//! nothing but a panic ever unwinds. What a user relies on stays as it was
//! when probe panics were caught with `catch_unwind`:
//!
//! - a probe that panics is reported as `probe.incomplete` (exit 3) with
//!   the panic's message, and the report is still written;
//! - a network destination whose thread panics is that destination's
//!   "internal error while probing it", a tool runner's is "the runner
//!   failed internally";
//! - a panic on the main thread prints Rust's message and exits 101.
//!
//! Under abort a panic cannot return to its caller, so the hook never
//! returns: on a thread that `guard` armed it hands the message to that
//! thread's `on_panic` (which sends the result its scheduler waits for) and
//! parks the thread for good, as a probe abandoned at its deadline is left
//! blocked; on the main thread it prints Rust's message and exits 101; on
//! any other thread (the workers of util/workers.rs, which their caller
//! already stops waiting for at a deadline) it parks the thread silently,
//! as that thread's death was silent before. The same hook runs in the
//! unwinding builds (`cargo test`'s binary), so the tests exercise the path
//! the shipped binary takes. A parked thread keeps what it held: no lock
//! is held across probe code (host.rs Cleanup takes its lock only around
//! its own bookkeeping), and its files and sockets close at exit.
//!
//! Without the hook (a unit test of the library), a panic unwinds as
//! usual: `guard` catches it, hands over the message the same way, and
//! lets it go on.

use std::cell::RefCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, PanicHookInfo};

type Sink = Box<dyn FnOnce(String)>;

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with `on_panic` armed: if `f` panics,
/// `on_panic` gets the panic's message (and the thread then ends or parks,
/// never returning here).
pub fn guard<R>(on_panic: impl FnOnce(String) + 'static, f: impl FnOnce() -> R) -> R {
    let before = SINK.with(|s| s.borrow_mut().replace(Box::new(on_panic)));
    let r = catch_unwind(AssertUnwindSafe(f));
    let sink = SINK.with(|s| std::mem::replace(&mut *s.borrow_mut(), before));
    match r {
        Ok(v) => v,
        Err(payload) => {
            if let Some(sink) = sink {
                sink(message(payload.downcast_ref::<&str>().copied(), || {
                    payload.downcast_ref::<String>().cloned()
                }));
            }
            resume_unwind(payload)
        }
    }
}

/// The panic's message, as catch_unwind's payload gave it.
fn message(s: Option<&str>, owned: impl FnOnce() -> Option<String>) -> String {
    s.map(str::to_string)
        .or_else(owned)
        .unwrap_or_else(|| "unknown panic".into())
}

/// Installs the hook (main does, first thing). Rust's own hook keeps
/// printing a main-thread panic's message.
pub fn install() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| on_panic(info, &*default)));
}

fn on_panic(info: &PanicHookInfo<'_>, default: &(dyn Fn(&PanicHookInfo<'_>) + Sync + Send)) {
    let sink = SINK
        .try_with(|s| s.try_borrow_mut().ok().and_then(|mut s| s.take()))
        .ok()
        .flatten();
    if let Some(sink) = sink {
        let p = info.payload();
        sink(message(p.downcast_ref::<&str>().copied(), || {
            p.downcast_ref::<String>().cloned()
        }));
        park();
    }
    if std::thread::current().name() == Some("main") {
        default(info);
        std::process::exit(101);
    }
    park()
}

fn park() -> ! {
    loop {
        std::thread::park();
    }
}

/// A panic planted by the tests in a debug build (never in the shipped
/// one): `SELFPROBE_DEBUG_PANIC=<where>` panics at the point named `at`
/// (`main`, `probe:<name>`, `net:<index>`, `tool:<name>`).
#[cfg(debug_assertions)]
pub fn planted(at: std::fmt::Arguments<'_>) {
    let at = at.to_string();
    if std::env::var_os("SELFPROBE_DEBUG_PANIC").is_some_and(|v| v == at.as_str()) {
        panic!("planted panic at {at} (SELFPROBE_DEBUG_PANIC)");
    }
}

/// The shipped build has no planted panics.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn planted(_at: std::fmt::Arguments<'_>) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    // Without the hook (the test harness keeps its own), a panic unwinds
    // through `guard`, which hands the message over and lets it go on.
    #[test]
    fn guard_hands_over_the_message_and_lets_the_panic_go_on() {
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || {
            guard(
                move |m| tx.send(m).unwrap(),
                || -> u8 { panic!("boom {}", 7) },
            )
        });
        assert!(t.join().is_err(), "the panic went on");
        assert_eq!(rx.recv().unwrap(), "boom 7");

        let (tx, rx) = mpsc::channel::<String>();
        let v = guard(move |m| tx.send(m).unwrap(), || 5);
        assert_eq!(v, 5);
        assert!(rx.try_recv().is_err(), "nothing sent without a panic");
        // Disarmed after: the slot holds what it held before.
        assert!(SINK.with(|s| s.borrow().is_none()));
    }
}
