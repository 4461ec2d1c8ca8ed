//! Phase 2: what this process could write on the host. Host mounts and kernel
//! escape interfaces are checked with access(2) and mount flags, never
//! written. Only `--write-test` creates (and at once removes) a uniquely
//! named file, to prove that a host path really takes writes.

use crate::finding::Code;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::unistd::AccessFlags;
use serde::Serialize;

use crate::catalog;
use crate::facts::boundary::Boundary;
use crate::facts::mounts::{MountClass, MountFacts};
use crate::finding::Finding;
use crate::host::{Cleanup, Host};

#[derive(Debug, Clone, Serialize)]
pub struct WritablePath {
    pub path: String,
    pub host_path: String,
    pub read_only_mount: bool,
    pub writable: bool,
    pub allowed: bool,
    /// With --write-test: "created and removed", or why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_test: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KernelInterfaceState {
    pub path: String,
    pub writable: bool,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct WritableFacts {
    pub host_paths: Vec<WritablePath>,
    pub kernel_interfaces: Vec<KernelInterfaceState>,
    pub rootfs_writable: bool,
    pub rootfs_read_only_mount: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rootfs_write_test: Option<String>,
}

fn expand_one_star(host: &Host, pattern: &str) -> Vec<String> {
    let Some((dir, rest)) = pattern.split_once("/*/") else {
        return vec![pattern.to_string()];
    };
    let Ok(rd) = std::fs::read_dir(host.path(dir)) else {
        return Vec::new();
    };
    rd.flatten()
        .take(256)
        .map(|e| format!("{dir}/{}/{rest}", e.file_name().to_string_lossy()))
        .collect()
}

/// CAP_SYS_ADMIN's bit in /proc/self/status CapEff.
const CAP_SYS_ADMIN: u32 = 21;

/// Why the kernel refuses a write to `k` whatever access(2) says, or None
/// when nothing beyond the file's permissions is known to stand in the way.
fn refused(
    k: &catalog::KernelInterface,
    path: &str,
    mounts: Option<&MountFacts>,
    initial_user_ns: Option<bool>,
    cap_sys_admin: Option<bool>,
) -> Option<String> {
    // The mount the path is on, as the table says: read-only there is
    // refused whatever access(2) says of a fixture tree's files (the live
    // system's access(2) says EROFS itself).
    let on = mounts.and_then(|m| {
        m.mounts
            .iter()
            .filter(|e| !e.hidden && Path::new(path).starts_with(&e.mount.mount_point))
            .max_by_key(|e| e.mount.mount_point.as_os_str().len())
    });
    if let Some(e) = on.filter(|e| e.read_only) {
        return Some(format!(
            "on the read-only mount {}",
            e.mount.mount_point.display()
        ));
    }
    if let (Some(fs), Some(m)) = (&k.filesystem, mounts) {
        let served = m
            .mounts
            .iter()
            .any(|e| &e.mount.fstype == fs && Path::new(path).starts_with(&e.mount.mount_point));
        if !served {
            return Some(format!(
                "no {fs} is mounted at {path}: an empty directory of the filesystem above it, not the interface"
            ));
        }
    }
    if k.needs.as_deref() == Some("cap-sys-admin-initial-userns") {
        if initial_user_ns == Some(false) {
            return Some(
                "the kernel takes a write only from CAP_SYS_ADMIN in the initial user namespace; this process is in a user namespace of its own"
                    .into(),
            );
        }
        if cap_sys_admin == Some(false) {
            return Some(
                "the kernel takes a write only from CAP_SYS_ADMIN in the initial user namespace; this process does not hold CAP_SYS_ADMIN"
                    .into(),
            );
        }
    }
    None
}

/// Whether CapEff holds CAP_SYS_ADMIN, from the root path's
/// /proc/self/status; None when it cannot be read.
fn holds_cap_sys_admin(host: &Host) -> Option<bool> {
    let status = host.read("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    let eff = u64::from_str_radix(hex, 16).ok()?;
    Some(eff & (1 << CAP_SYS_ADMIN) != 0)
}

/// `initial_user_ns` is the boundary's (src/facts/boundary.rs): None when
/// it is unknown.
pub fn collect(
    host: &Host,
    mounts: Option<&MountFacts>,
    initial_user_ns: Option<bool>,
    write_test: Option<(&Cleanup, &str)>,
) -> WritableFacts {
    let mut f = WritableFacts::default();
    if let Some(m) = mounts {
        for e in &m.mounts {
            // The host's /run mounted whole is a host path too; mounts inside
            // a host surface are reported with it.
            if !matches!(
                e.class,
                MountClass::HostBind | MountClass::HostRoot | MountClass::HostTmpfs
            ) || !e.reported()
            {
                continue;
            }
            let mut wp = WritablePath {
                path: e.mount.mount_point.to_string_lossy().into_owned(),
                // gVisor's gofer and Kata's shared directory hide the host
                // path: their "/" is the bind's own root, not the host's.
                host_path: if e.kinds.contains(&"gofer") || e.kinds.contains(&"kata-shared") {
                    "(hidden by the sandbox)".into()
                } else {
                    e.mount.root.to_string_lossy().into_owned()
                },
                read_only_mount: e.read_only,
                writable: e.contents.writable,
                allowed: e.allowed,
                write_test: None,
            };
            if let Some((cleanup, run_id)) = write_test {
                if e.contents.file_type == "dir" {
                    wp.write_test = Some(prove_write(host, &e.mount.mount_point, cleanup, run_id));
                }
            }
            f.host_paths.push(wp);
        }
        f.rootfs_read_only_mount = m
            .mounts
            .iter()
            .find(|e| e.class == MountClass::RootFs)
            .is_some_and(|e| e.read_only);
    }
    let cap_sys_admin = holds_cap_sys_admin(host);
    for k in catalog::kernel_interfaces() {
        for path in expand_one_star(host, &k.path) {
            let why_not = refused(k, &path, mounts, initial_user_ns, cap_sys_admin);
            match host.access(&path, AccessFlags::W_OK) {
                Ok(()) if why_not.is_some() => f.kernel_interfaces.push(KernelInterfaceState {
                    path,
                    writable: false,
                    error: why_not,
                }),
                Ok(()) => f.kernel_interfaces.push(KernelInterfaceState {
                    path,
                    writable: true,
                    error: None,
                }),
                Err(nix::Error::ENOENT) => {}
                Err(e) => f.kernel_interfaces.push(KernelInterfaceState {
                    path,
                    writable: false,
                    error: Some(e.desc().to_string()),
                }),
            }
        }
    }
    // Where "/" is the machine's own root (a sandbox over it), writing it
    // is writing a host path, said above; there is no image to drift.
    let root_is_host = mounts.is_some_and(|m| {
        m.mounts
            .iter()
            .any(|e| e.class == MountClass::HostRoot && e.mount.mount_point == Path::new("/"))
    });
    if root_is_host {
        return f;
    }
    f.rootfs_writable = host.access("/", AccessFlags::W_OK).is_ok();
    if let Some((cleanup, run_id)) = write_test {
        f.rootfs_write_test = Some(prove_write(host, Path::new("/"), cleanup, run_id));
    }
    f
}

/// Creates `.selfprobe-write-test-<run>` with O_EXCL|O_NOFOLLOW (so it can
/// never truncate or follow anything that exists) and removes it at once.
/// Created through `Cleanup`, so a signal or deadline still removes it.
fn prove_write(host: &Host, dir: &Path, cleanup: &Cleanup, run_id: &str) -> String {
    let path: PathBuf = host
        .path(dir)
        .join(format!(".selfprobe-write-test-{run_id}"));
    let res = cleanup.create(&path, || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&path)
    });
    match res {
        None => "not attempted: the run is stopping".into(),
        Some(Ok(file)) => {
            drop(file);
            let out = match std::fs::remove_file(&path) {
                Ok(()) => "created and removed".to_string(),
                Err(e) => format!("created, but removing it failed: {e}"),
            };
            cleanup.forget(&path);
            out
        }
        // Not ours, so never registered and never removed.
        Some(Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => {
            "not attempted: a file of that name already exists".into()
        }
        Some(Err(e)) => format!("create failed: {e}"),
    }
}

pub fn evaluate(f: &WritableFacts, b: &Boundary) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in &f.host_paths {
        if p.allowed {
            continue;
        }
        let proven = p.write_test.as_deref() == Some("created and removed");
        if !(p.writable || proven) {
            continue;
        }
        let mut fnd = Finding::new(
            Code::WriteHostPath,
            &p.path,
            format!(
                "{} is a host path ({}) this process can write",
                p.path, p.host_path
            ),
        )
        .with("path", p.path.clone())
        .with("host_path", p.host_path.clone())
        .with("read_only_mount", p.read_only_mount)
        .with(
            "checked_with",
            if proven { "--write-test" } else { "access(2)" },
        );
        if let Some(t) = &p.write_test {
            fnd = fnd.with("write_test", t.clone());
        }
        out.push(fnd);
    }
    for k in f.kernel_interfaces.iter().filter(|k| k.writable) {
        let cat = catalog::kernel_interfaces()
            .iter()
            .find(|c| crate::util::glob::matches_path(&c.path, &k.path));
        let (sev, why) = cat.map(|c| (c.severity, c.why.clone())).unwrap_or((
            crate::finding::Severity::Critical,
            "host kernel interface".into(),
        ));
        // Behind a kernel of its own the file is that kernel's (the
        // Sentry's, the VM's): one step lower, and said.
        let (sev, whose) = if b.own_kernel() {
            (
                sev.lowered(),
                format!("; here it is the interface of {}", b.kernel()),
            )
        } else {
            (sev, String::new())
        };
        out.push(
            Finding::new(
                Code::WriteKernelInterface,
                &k.path,
                format!("{} is writable: {why}{whose}", k.path),
            )
            .severity(sev)
            .with("kernel", b.kernel())
            .with("path", k.path.clone())
            .with("checked_with", "access(2)"),
        );
    }
    if f.rootfs_writable && !f.rootfs_read_only_mount {
        // On a host nothing discards the changes at teardown: they persist
        // into every later run, so it ranks higher.
        let mut fnd = if b.is_host() {
            Finding::new(
                Code::WriteRootfs,
                "/",
                "the machine's root filesystem is writable by this process: tools and configuration drift, and no container layer discards the changes when the task ends",
            )
            .severity(crate::finding::Severity::Medium)
        } else {
            Finding::new(
                Code::WriteRootfs,
                "/",
                format!(
                    "the {}'s root filesystem is writable: tools and configuration can drift during the run",
                    b.noun()
                ),
            )
        }
        .with("checked_with", "access(2)");
        if let Some(t) = &f.rootfs_write_test {
            fnd = fnd.with("write_test", t.clone());
        }
        out.push(fnd);
    }
    out
}
