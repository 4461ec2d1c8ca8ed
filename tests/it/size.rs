//! The shipped binary's size (DESIGN.md §8; issue 24): at most 4 MiB
//! stripped with every feature in it, as `cargo build --release` leaves it
//! (the release profile strips; tests/it/common/shipped.rs builds it).
//! bench/RESULTS.md ("Size, issue 24") has where the bytes go and what
//! each cut saved.

/// 4 MiB: the limit. The goal is 3 MiB.
const LIMIT: u64 = 4 * 1024 * 1024;

#[test]
fn the_shipped_binary_is_at_most_4_mib_stripped() {
    let bin = crate::common::shipped::bin();
    let size = std::fs::metadata(bin).unwrap().len();
    // Figures for the log (bench/RESULTS.md quotes them).
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "FIGURES shipped binary: {size} bytes ({:.2} MiB), limit {LIMIT}\n",
            size as f64 / (1024.0 * 1024.0)
        )
        .as_bytes(),
    );
    assert!(
        size <= LIMIT,
        "{}: {size} bytes stripped, over the 4 MiB limit ({LIMIT} bytes) by {}: \
         see bench/RESULTS.md (\"Size, issue 24\") for where the bytes go",
        bin.display(),
        size - LIMIT
    );
}
