//! Link arguments for the shipped binary's size: DESIGN.md §8 holds it at or
//! under 4 MiB stripped, and bench/RESULTS.md ("Size, issue 24") has what
//! each of these saved. Only the `selfprobe` binary gets them, never the
//! test binaries.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/discard-unwind-tables.ld");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    // Relative relocations packed as DT_RELR: the static-pie's 195 KB of
    // .rela.dyn become 2 KB. The static glibc applies them at start-up
    // (glibc 2.36 or later on the build machine: an older one's static-pie
    // start-up would not, and every test of the binary would fail).
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    // Identical functions folded: generic code instantiated for types of
    // one layout. Only rust-lld (Rust's default linker on x86_64 Linux
    // since 1.90) has it; the GNU linker would refuse the flag.
    if var("CARGO_CFG_TARGET_ARCH") == "x86_64" && rustc_minor() >= 90 {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
    if var("PROFILE") == "release" {
        // The release profile aborts on a panic, and the panic hook never
        // returns (src/util/panics.rs): nothing unwinds, so the unwind
        // tables (.eh_frame and its index, 0.48 MB) go.
        let script = format!(
            "{}/build/discard-unwind-tables.ld",
            var("CARGO_MANIFEST_DIR")
        );
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{script}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-eh-frame-hdr");
    }
}

/// The minor version of the rustc building this (1.N.x), 0 if unknown.
fn rustc_minor() -> u32 {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout).into_owned();
            v.split_whitespace().nth(1)?.split('.').nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
