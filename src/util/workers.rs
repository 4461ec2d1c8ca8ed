//! A bounded worker pool for reads that may block in the kernel: a stat(2)
//! of a hung FUSE or NFS mount never returns, so each item is answered by
//! whichever worker is free and the caller stops waiting at its deadline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

/// Runs `f` on each of `items` with up to `workers` threads pulling from
/// one queue, and waits for the answers until `deadline`. `None` marks an
/// item that was not answered in time: one stuck in the kernel (a hung
/// mount) holds one worker for good while the others go on with the rest.
/// Without a thread to spare, the items are done inline, unbounded.
pub fn map_until<T, R, F>(
    name: &str,
    items: Vec<T>,
    workers: usize,
    deadline: Instant,
    f: F,
) -> Vec<Option<R>>
where
    T: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(&T) -> R + Send + Sync + 'static,
{
    let n = items.len();
    let mut out: Vec<Option<R>> = std::iter::repeat_with(|| None).take(n).collect();
    if n == 0 {
        return out;
    }
    let (items, f) = (Arc::new(items), Arc::new(f));
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let mut started = 0;
    for _ in 0..workers.min(n) {
        let (items, f, next, tx) = (items.clone(), f.clone(), next.clone(), tx.clone());
        let spawned = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || tx.send((i, f(&items[i]))).is_err() {
                    break;
                }
            });
        started += usize::from(spawned.is_ok());
    }
    drop(tx);
    if started == 0 {
        for (slot, item) in out.iter_mut().zip(items.iter()) {
            *slot = Some(f(item));
        }
        return out;
    }
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((i, r)) => out[i] = Some(r),
            Err(_) => break,
        }
    }
    out
}
