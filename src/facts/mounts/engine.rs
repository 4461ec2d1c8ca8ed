//! Files an engine writes for a container, recognised by the shape of the
//! path inside their source filesystem (mountinfo field 4), wherever the
//! engine's storage lives: /var/lib/docker or ~/.local/share/docker, a
//! podman graphroot or runroot (which on a tmpfs shows relative to that
//! tmpfs, `/containers/overlay-containers/<id>/userdata/hosts`), kubelet's
//! root under /var/lib, an ostree deployment, a btrfs subvolume or a
//! minikube/kind volume. A prefix list cannot cover those; the tail of the
//! path can, because each engine names the files the same way everywhere.
//!
//! Sandboxed runtimes hide the host path: gVisor's gofer shows each bind as
//! a 9p mount of root `/` (`trans=fd`), Kata's shared directory shows
//! `<container>-<random>-<name>` on the `kataShared` virtio-fs. There the
//! mount point and the name are all there is to go on.
//!
//! Sysbox (sysbox-runc) shifts the engine's files through shiftfs, whose
//! field 4 is relative to the host directory it shifts (parse.rs joins the
//! two), serves parts of /proc and /sys from its sysbox-fs FUSE daemon as
//! lxcfs does, and backs the inner engines' state with a directory per
//! container under /var/lib/sysbox. systemd-nspawn binds its propagation
//! directory, `/run/systemd/nspawn/propagate/<machine>`, at
//! /run/systemd/nspawn/incoming.

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use super::Mount;

/// Who wrote a file and which file it is.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Managed {
    /// docker, podman, cri-o, containerd, kubelet, lxc, runsc, kata,
    /// sysbox, systemd-nspawn; or containers-storage until the table says
    /// whether podman or CRI-O.
    pub by: Text,
    /// hosts, hostname, resolv.conf, .containerenv, etc-hosts,
    /// termination-log, secrets, kubernetes.io~projected, init…
    pub file: String,
    /// The container (or pod sandbox) id the path names, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// What the shape of a mount's source path says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A file or directory the engine made for this container.
    Managed(Managed),
    /// An engine volume (`…/volumes/<name>/_data`, a kubelet PV plugin
    /// directory), by name.
    Volume(String),
}

/// Engine files seen through a sandbox, where only the mount point is left.
const ENGINE_FILE_POINTS: &[&str] = &[
    "/etc/hosts",
    "/etc/hostname",
    "/etc/resolv.conf",
    "/dev/termination-log",
    "/run/.containerenv",
    "/.dockerenv",
    "/run/secrets",
    "/run/secrets/kubernetes.io/serviceaccount",
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "/var/run/secrets/eks.amazonaws.com/serviceaccount",
];

/// Names Kata gives shared engine files (`<cid>-<random>-<name>`).
const KATA_FILES: &[&str] = &[
    "hosts",
    "hostname",
    "resolv.conf",
    "termination-log",
    "serviceaccount",
];

/// Kubelet volume plugins whose directories are made for the pod and go
/// with it: projected service-account tokens, secrets, config maps,
/// downward API files and emptyDir scratch space.
const KUBELET_POD_VOLUMES: &[&str] = &[
    "kubernetes.io~projected",
    "kubernetes.io~secret",
    "kubernetes.io~configmap",
    "kubernetes.io~downward-api",
    "kubernetes.io~empty-dir",
];

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A pod UID: a UUID, or the 32-hex config hash of a static pod.
fn is_pod_uid(s: &str) -> bool {
    if is_hex(s, 32) {
        return true;
    }
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && [8, 4, 4, 4, 12]
            .iter()
            .zip(&parts)
            .all(|(n, p)| is_hex(p, *n))
}

fn managed(by: &'static str, file: &str, id: Option<&str>) -> Option<Shape> {
    Some(Shape::Managed(Managed {
        by: by.into(),
        file: file.to_string(),
        id: id.map(str::to_string),
    }))
}

/// The shape of `root`, a path inside a source filesystem.
pub fn shape_of_root(root: &str) -> Option<Shape> {
    let c: Vec<&str> = root.split('/').filter(|s| !s.is_empty()).collect();
    // kubelet: …/pods/<uid>/{etc-hosts, containers/<name>/<id>, volumes/<plugin>/<name>/…}
    for i in 0..c.len() {
        if c[i] != "pods" || !c.get(i + 1).is_some_and(|u| is_pod_uid(u)) {
            continue;
        }
        let uid = Some(c[i + 1]);
        match &c[i + 2..] {
            ["etc-hosts"] => return managed("kubelet", "etc-hosts", uid),
            ["containers", _, _] => return managed("kubelet", "termination-log", uid),
            ["volumes", plugin, _, ..] if KUBELET_POD_VOLUMES.contains(plugin) => {
                return managed("kubelet", plugin, uid)
            }
            ["volumes", _, name, ..] => return Some(Shape::Volume(name.to_string())),
            ["volume-subpaths", name, ..] => return Some(Shape::Volume(name.to_string())),
            _ => {}
        }
    }
    // containers/storage (podman, CRI-O, buildah):
    // …/{overlay,vfs,btrfs,zfs,aufs,devmapper}-containers/<id>/userdata/…
    for i in 0..c.len() {
        let Some(driver) = c[i].strip_suffix("-containers") else {
            continue;
        };
        if !["overlay", "vfs", "btrfs", "zfs", "aufs", "devmapper"].contains(&driver) {
            continue;
        }
        if let [id, "userdata", rest @ ..] = &c[i + 1..] {
            if is_hex(id, 64) && !rest.is_empty() {
                return managed("containers-storage", &rest.join("/"), Some(id));
            }
        }
    }
    // containerd CRI: …/io.containerd.grpc.v1.cri/sandboxes/<id>/{hostname,resolv.conf,hosts,shm}
    // and the image's VOLUME directories …/io.containerd.grpc.v1.cri/containers/<id>/volumes/<v>,
    // removed with the container.
    for i in 1..c.len() {
        if !c[i - 1].starts_with("io.containerd.grpc.v1.cri") {
            continue;
        }
        match &c[i..] {
            ["sandboxes", id, f] if is_hex(id, 64) => {
                return managed("containerd", f, Some(id));
            }
            ["containers", id, "volumes", _, ..] if is_hex(id, 64) => {
                return managed("containerd", "image-volume", Some(id));
            }
            _ => {}
        }
    }
    // nerdctl: …/nerdctl/<hash>/{containers,etchosts}/<namespace>/<id>/<file>
    for i in 0..c.len() {
        if c[i] != "nerdctl" {
            continue;
        }
        if let [_, "containers" | "etchosts", _, id, f] = &c[i + 1..] {
            if is_hex(id, 64) {
                return managed("containerd", f, Some(id));
            }
        }
    }
    // Docker, rootful, rootless, userns-remapped or inside a dind volume:
    // …/containers/<id>/{hosts,hostname,resolv.conf,mounts/secrets…,mounts/shm}
    for i in 0..c.len() {
        if c[i] != "containers" || !c.get(i + 1).is_some_and(|id| is_hex(id, 64)) {
            continue;
        }
        let id = Some(c[i + 1]);
        match &c[i + 2..] {
            [f @ ("hosts" | "hostname" | "resolv.conf")] => return managed("docker", f, id),
            ["mounts", "secrets", ..] => return managed("docker", "secrets", id),
            ["mounts", "shm"] => return managed("docker", "shm", id),
            _ => {}
        }
    }
    // Sysbox: the inner engines' state of one system container,
    // …/sysbox/{docker,kubelet,containerd,…}/[baseVol/]<id>, made for it
    // by sysbox-mgr.
    for i in 0..c.len() {
        if c[i] != "sysbox" || i == 0 || c[i - 1] != "lib" {
            continue;
        }
        if let (Some(what), Some(id)) = (c.get(i + 1), c[i + 1..].iter().find(|s| is_hex(s, 64))) {
            return managed("sysbox", what, Some(id));
        }
    }
    // Engine volumes: …/volumes/<name>/_data[/…] (docker, podman, rootless podman).
    for i in 0..c.len() {
        if c[i] == "volumes" && c.get(i + 2) == Some(&"_data") {
            return Some(Shape::Volume(c[i + 1].to_string()));
        }
    }
    None
}

/// The shape of a whole mount: its root path, and where the runtime hides
/// the path, its filesystem, source and mount point.
pub fn shape(m: &Mount) -> Option<Shape> {
    let root = m.root.to_string_lossy();
    let mp = m.mount_point.to_string_lossy();
    // lxcfs serves the container's own view of /proc and /sys files (the
    // daemon's own mount, /var/lib/lxcfs on the host, is no engine file).
    let proc_or_sys = mp.starts_with("/proc/") || mp.starts_with("/sys/");
    if m.fstype == "fuse.lxcfs" && proc_or_sys {
        return managed("lxc", &root, None);
    }
    // sysbox-fs does the same for a Sysbox system container.
    if is_sysbox_fs(m) {
        return managed("sysbox", &root, None);
    }
    // systemd-nspawn's propagation directory: machinectl bind moves mounts
    // in through it.
    if mp == "/run/systemd/nspawn/incoming" {
        let c: Vec<&str> = root.split('/').filter(|s| !s.is_empty()).collect();
        if let [.., "systemd", "nspawn", "propagate", _] = c.as_slice() {
            return managed("systemd-nspawn", "incoming", None);
        }
    }
    // systemd 249 and later: the propagation directory at
    // /run/host/incoming, and the host's os-release at /run/host/os-release
    // (from /etc/os-release or /usr/lib/os-release).
    if mp == "/run/host/incoming" && root.contains("/systemd/nspawn/propagate/") {
        return managed("systemd-nspawn", "incoming", None);
    }
    if mp == "/run/host/os-release" && root.ends_with("/os-release") {
        return managed("systemd-nspawn", "os-release", None);
    }
    // firejail: its masks (an empty read-only file or directory bound over
    // what it hides) and its own runtime directory, /run/firejail.
    if is_firejail_mask(&root) {
        return managed("firejail", "mask", None);
    }
    if mp.starts_with("/run/firejail/") {
        return managed("firejail", mp.trim_start_matches("/run/firejail/"), None);
    }
    // gVisor's gofer: every bind is 9p over a file descriptor, root "/".
    if is_gofer(m) && root == "/" && ENGINE_FILE_POINTS.contains(&mp.as_ref()) {
        return managed("runsc", mp.rsplit('/').next().unwrap_or(""), None);
    }
    // Kata: the shared directory names files <cid>-<random>-<name>.
    if m.source == "kataShared" && matches!(m.fstype.as_str(), "virtiofs" | "9p") {
        let name = root.rsplit('/').next().unwrap_or("");
        let mut parts = name.splitn(3, '-');
        let (cid, rand, file) = (parts.next(), parts.next(), parts.next());
        let named = matches!((cid, rand), (Some(c), Some(r))
            if c.len() >= 8 && is_hex(c, c.len()) && is_hex(r, 16));
        if named
            && (file.is_some_and(|f| KATA_FILES.contains(&f))
                || ENGINE_FILE_POINTS.contains(&mp.as_ref()))
        {
            return managed("kata", file.unwrap_or(""), cid);
        }
    }
    if let Some(by) = init_binary(&root, &mp) {
        return managed(by, "init", None);
    }
    shape_of_root(&root)
}

/// firejail's masking file or directory (field 4 relative to whatever
/// holds /run: the root disk, or a tmpfs /run).
pub fn is_firejail_mask(root: &str) -> bool {
    root.ends_with("/firejail/firejail.ro.dir") || root.ends_with("/firejail/firejail.ro.file")
}

/// A mount of Sysbox's sysbox-fs, the FUSE daemon that emulates parts of
/// /proc and /sys inside a Sysbox system container.
pub fn is_sysbox_fs(m: &Mount) -> bool {
    matches!(m.fstype.as_str(), "fuse" | "fuse.sysboxfs") && m.source == "sysboxfs"
}

/// A mount served by gVisor's gofer (or another 9p-over-fd server).
pub fn is_gofer(m: &Mount) -> bool {
    m.fstype == "9p" && m.super_options.split(',').any(|o| o == "trans=fd")
}

/// The engine's init binary: docker --init binds docker-init at
/// /sbin/docker-init; podman --init binds catatonit at /run/podman-init.
fn init_binary(root: &str, mp: &str) -> Option<&'static str> {
    let base = |p: &str| p.rsplit('/').next().unwrap_or("").to_string();
    let (rb, mb) = (base(root), base(mp));
    match (mp, rb.as_str()) {
        ("/sbin/docker-init", _) => Some("docker"),
        ("/run/podman-init", _) => Some("podman"),
        (_, "docker-init") if ["docker-init", "init"].contains(&mb.as_str()) => Some("docker"),
        (_, "catatonit") if ["podman-init", "catatonit", "init"].contains(&mb.as_str()) => {
            Some("podman")
        }
        _ => None,
    }
}

/// Which engine made the table's own containers/storage files: podman and
/// CRI-O share that layout. A table with kubelet's files in it belongs to a
/// CRI runtime; so does one whose cgroup mounts name crio-<id>.scope. podman
/// names its cgroups libpod-<id>; a --read-only podman container has neither
/// /run/.containerenv nor, with --network none, resolv.conf, so with no word
/// either way the files are podman's, the runtime that runs alone.
pub fn resolve_storage_engine(files: &[&Managed], cgroup: Option<&'static str>) -> &'static str {
    if files.iter().any(|f| f.by == "kubelet") {
        return "cri-o";
    }
    cgroup.unwrap_or("podman")
}

/// The engine that cgroup mount roots (field 4 of cgroup and cgroup2
/// mounts, or any root) name: `…/crio-<id>.scope`, `…/libpod-<id>`.
pub fn cgroup_engine<'a>(roots: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    for r in roots {
        for seg in r.split('/') {
            let rest = seg.strip_suffix(".scope").unwrap_or(seg);
            if rest.strip_prefix("crio-").is_some_and(|id| is_hex(id, 64)) {
                return Some("cri-o");
            }
            if rest
                .strip_prefix("libpod-")
                .is_some_and(|id| is_hex(id, 64))
            {
                return Some("podman");
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "e8153671c0b104067d1bbb7c53325e94a4ac4e7a8918ed37aac1a262f0395f53";

    fn by(root: &str) -> Option<(Text, String)> {
        match shape_of_root(root)? {
            Shape::Managed(m) => Some((m.by, m.file)),
            Shape::Volume(_) => None,
        }
    }

    #[test]
    fn engine_files_wherever_the_storage_lives() {
        for (root, engine, file) in [
            (format!("/var/lib/docker/containers/{ID}/hosts"), "docker", "hosts"),
            (format!("/home/u/.local/share/docker/containers/{ID}/resolv.conf"), "docker", "resolv.conf"),
            (format!("/var/lib/docker/100000.100000/containers/{ID}/hostname"), "docker", "hostname"),
            (format!("/var/lib/docker/volumes/57c9/_data/containers/{ID}/hosts"), "docker", "hosts"),
            (format!("/var/lib/docker/containers/{ID}/mounts/secrets/db"), "docker", "secrets"),
            (format!("/run/containers/storage/overlay-containers/{ID}/userdata/hosts"), "containers-storage", "hosts"),
            (format!("/containers/overlay-containers/{ID}/userdata/.containerenv"), "containers-storage", ".containerenv"),
            (format!("/home/u/.local/share/containers/storage/vfs-containers/{ID}/userdata/run/secrets"), "containers-storage", "run/secrets"),
            ("/var/lib/kubelet/pods/28478e30-384f-41e5-9d85-eae249ae8506/etc-hosts".into(), "kubelet", "etc-hosts"),
            ("/pods/0255d349-f826-4f52-9e37-fbc65e085fc8/etc-hosts".into(), "kubelet", "etc-hosts"),
            ("/docker/volumes/minikube/_data/lib/kubelet/pods/0635783e-afc4-448c-b3c2-ed3c739eaf39/containers/hello/fce2e0f4".into(), "kubelet", "termination-log"),
            ("/var/lib/kubelet/pods/28478e30-384f-41e5-9d85-eae249ae8506/volumes/kubernetes.io~projected/kube-api-access-x".into(), "kubelet", "kubernetes.io~projected"),
            (format!("/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/{ID}/resolv.conf"), "containerd", "resolv.conf"),
            (format!("/var/lib/nerdctl/1935db59/etchosts/default/{ID}/hosts"), "containerd", "hosts"),
        ] {
            assert_eq!(by(&root), Some((engine.into(), file.to_string())), "{root}");
        }
    }

    #[test]
    fn look_alikes_are_not_engine_files() {
        for root in [
            "/var/lib/docker/containers".to_string(),
            format!("/var/lib/docker/containers/{ID}"),
            format!("/var/lib/docker/containers/{ID}/{ID}-json.log"),
            "/home/alice/containers/abc/hosts".into(),
            "/srv/pods/not-a-uid/etc-hosts".into(),
            format!("/run/containers/storage/overlay-containers/{ID}/userdata"),
            "/var/lib/kubelet/pods".into(),
        ] {
            assert_eq!(by(&root), None, "{root}");
        }
        assert_eq!(
            shape_of_root("/var/lib/kubelet/pods/28478e30-384f-41e5-9d85-eae249ae8506/volumes/kubernetes.io~csi/pvc-1/mount"),
            Some(Shape::Volume("pvc-1".into()))
        );
        assert_eq!(
            shape_of_root("/var/lib/docker/volumes/runner-x-cache-c33b/_data/group/project"),
            Some(Shape::Volume("runner-x-cache-c33b".into()))
        );
    }

    fn line(l: &str) -> Mount {
        let (m, e) = super::super::parse_mountinfo(l);
        assert!(e.is_empty(), "{e:?}");
        m.into_iter().next().unwrap()
    }

    fn shaped(l: &str) -> Option<(Text, String)> {
        match shape(&line(l))? {
            Shape::Managed(m) => Some((m.by, m.file)),
            Shape::Volume(_) => None,
        }
    }

    #[test]
    fn sandboxes_lxcfs_and_init_binaries() {
        for (l, want) in [
            ("43 36 0:40 / /etc/hosts rw - 9p none rw,trans=fd,rfdno=50,wfdno=50,aname=/", Some(("runsc", "hosts"))),
            ("58 36 0:49 / /opt/venv rw - 9p none rw,trans=fd", None),
            ("44 36 0:41 / /etc/hosts rw - 9p hostshare rw,trans=virtio", None),
            ("85 73 0:33 /81f3e754-11d3f9074a20c122-hosts /etc/hosts ro - virtiofs kataShared rw", Some(("kata", "hosts"))),
            ("86 73 0:33 /81f3e754-2e9eb70638428f8b-data /data rw - virtiofs kataShared rw", None),
            ("5697 5691 0:44 /proc/cpuinfo /proc/cpuinfo rw - fuse.lxcfs lxcfs rw", Some(("lxc", "/proc/cpuinfo"))),
            ("700 1 8:1 /usr/bin/catatonit /run/podman-init ro - ext4 /dev/vda rw", Some(("podman", "init"))),
            ("701 1 8:1 /usr/libexec/podman/catatonit /run/podman-init ro - ext4 /dev/vda rw", Some(("podman", "init"))),
            ("702 1 8:1 /usr/bin/docker-init /sbin/docker-init ro - ext4 /dev/vda rw", Some(("docker", "init"))),
            ("703 1 8:1 /usr/bin/catatonit /opt/tools/catatonit-copy ro - ext4 /dev/vda rw", None),
            // The host's lxcfs daemon mount is no container's file.
            ("391 28 0:49 / /var/lib/lxcfs rw - fuse.lxcfs lxcfs rw", None),
            // Sysbox: sysbox-fs, and Docker's files through a shiftfs mark.
            ("1638 1590 0:77 /proc/sys /proc/sys rw - fuse sysboxfs rw,user_id=0", Some(("sysbox", "/proc/sys"))),
            ("1644 1590 0:77 /proc/uptime /proc/uptime rw - fuse other rw", None),
            (&format!("1717 1526 0:94 /hosts /etc/hosts rw - shiftfs /var/lib/docker/containers/{ID} rw"), Some(("docker", "hosts"))),
            (&format!("1721 1526 8:1 /var/lib/sysbox/docker/baseVol/{ID} /var/lib/docker rw - ext4 /dev/sda1 rw"), Some(("sysbox", "docker"))),
            (&format!("1722 1526 8:1 /home/u/sysbox/{ID} /data rw - ext4 /dev/sda1 rw"), None),
            // systemd-nspawn's propagation directory, and a look-alike.
            ("913 912 0:24 /systemd/nspawn/propagate/rootfs /run/systemd/nspawn/incoming ro - tmpfs tmpfs rw", Some(("systemd-nspawn", "incoming"))),
            ("914 912 0:24 /systemd/nspawn/propagate/rootfs /mnt/incoming ro - tmpfs tmpfs rw", None),
        ] {
            assert_eq!(
                shaped(l),
                want.map(|(b, f)| (b.into(), f.to_string())),
                "{l}"
            );
        }
    }

    #[test]
    fn storage_engine_by_table() {
        let m = |by: &'static str, file: &str| Managed {
            by: by.into(),
            file: file.into(),
            id: None,
        };
        let hosts = m("containers-storage", "hosts");
        let pod = m("kubelet", "etc-hosts");
        assert_eq!(resolve_storage_engine(&[&hosts], None), "podman");
        assert_eq!(resolve_storage_engine(&[&hosts], Some("cri-o")), "cri-o");
        assert_eq!(
            resolve_storage_engine(&[&hosts, &pod], Some("podman")),
            "cri-o"
        );
        let crio = format!("/system.slice/crio-{ID}.scope");
        let libpod = format!("/libpod_parent/libpod-{ID}");
        assert_eq!(cgroup_engine([crio.as_str()]), Some("cri-o"));
        assert_eq!(cgroup_engine(["/", libpod.as_str()]), Some("podman"));
        assert_eq!(cgroup_engine(["/", "/user.slice"]), None);
    }
}
