//! Tests of the test helpers themselves.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use crate::common::fixture::BIN;
use crate::common::other_user::{self, NOBODY};

/// A checkout under a 0700 directory (`/root`, `mktemp -d`): nobody cannot
/// start the binary built there, and the helper's copy is what lets the
/// tests that drop to nobody run at all.
#[test]
fn a_binary_under_a_private_directory_runs_as_nobody_through_a_place() {
    let Some(outer) = other_user::nobody("a_binary_under_a_private_directory_runs_as_nobody")
    else {
        return;
    };
    // The "checkout": a 0700 directory holding the built binary.
    let private = outer.dir.join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let built = private.join("target/release/selfprobe");
    fs::create_dir_all(built.parent().unwrap()).unwrap();
    fs::copy(BIN, &built).unwrap();
    fs::set_permissions(&built, fs::Permissions::from_mode(0o755)).unwrap();

    assert_eq!(
        other_user::unreachable_ancestor(&built, NOBODY).as_deref(),
        Some(private.as_path()),
        "the private directory is what stops nobody"
    );
    let direct = Command::new(&built)
        .arg("--version")
        .uid(NOBODY)
        .gid(NOBODY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(
        direct.is_err(),
        "nobody started a binary under a 0700 directory: {direct:?}"
    );

    let place = other_user::place_for("private_checkout", &built, NOBODY)
        .expect("a place nobody can reach");
    assert!(other_user::unreachable_ancestor(&place.bin, NOBODY).is_none());
    let o = place.command().arg("--version").output().unwrap();
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("selfprobe"));
    // A tree made in the place is readable by nobody too.
    let tree = place.subdir("tree");
    assert!(other_user::unreachable_ancestor(&tree, NOBODY).is_none());
    let dir = place.dir.clone();
    drop(place);
    assert!(!dir.exists(), "the place is removed on drop");
}
