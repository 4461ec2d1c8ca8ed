//! The boundary (docs/checks.md, "The boundary first"): which kind of isolation this process runs
//! in, gathered once and read by the probes whose findings depend on it.
//! Every finding is about a boundary, so the first fact is which one
//! exists: namespaces on the host's kernel (a container), a kernel in user
//! space (gVisor), a VM of its own (Kata), or none (the machine itself).
//!
//! Each field comes with the evidence that decided it. Everything is read
//! through the root path, so a fixture tree answers as a live system does,
//! and nothing is run or connected to. Where the evidence is missing the
//! field says "unknown"; a kind that cannot be told is a probe.incomplete,
//! never a pass.

use crate::finding::Code;
use std::collections::BTreeMap;

use crate::util::text::Text;
use serde::{Deserialize, Serialize};

use crate::facts::platform::{self, Platform};
use crate::finding::Finding;
use crate::host::{read_regular, Host, MAX_ENVIRON};

/// include/linux/proc_ns.h: initial namespaces have fixed inode numbers.
/// Dynamic ones start at 0xF0000000, so a match cannot be a coincidence.
/// NET and MNT got fixed numbers only in recent kernels (6.18 here shows
/// them); older kernels give init_net and the initial mount namespace a
/// dynamic number, hence the corroboration below (kthreadd, PID 1's mount
/// namespace).
pub const INIT_INODES: &[(&str, u64)] = &[
    ("ipc", 0xEFFF_FFFF),
    ("uts", 0xEFFF_FFFE),
    ("user", 0xEFFF_FFFD),
    ("pid", 0xEFFF_FFFC),
    ("cgroup", 0xEFFF_FFFB),
    ("time", 0xEFFF_FFFA),
    ("net", 0xEFFF_FFF9),
    ("mnt", 0xEFFF_FFF8),
];

/// The build string gVisor's Sentry reports for every kernel release it
/// emulates (pkg/sentry/syscalls/linux/linux64.go: "4.4.0" in older
/// releases, "4.19.0-gvisor" in newer ones): no Linux build has it.
pub const GVISOR_BUILD: &str = "#1 SMP Sun Jan 10 15:06:54 PST 2016";

pub fn init_inode(name: &str) -> Option<u64> {
    INIT_INODES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, i)| *i)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Namespaces on the host's kernel (runc, crun, LXC).
    Container,
    /// A kernel in user space between the workload and the host (gVisor).
    Sandbox,
    /// A container whose kernel is a VM of its own (Kata).
    VmContainer,
    /// No container: the machine's (or VM's) own namespaces.
    Host,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    Docker,
    Podman,
    /// containerd, directly or as Kubernetes' CRI runtime.
    Containerd,
    CriO,
    /// LXC, LXD or Incus.
    Lxc,
    /// systemd-nspawn (machinectl).
    SystemdNspawn,
    /// bubblewrap (bwrap): the sandbox coding agents and Flatpak run
    /// commands in, usually over the machine's own root filesystem.
    Bubblewrap,
    /// firejail.
    Firejail,
    /// A bare unshare(1) (or a program's own unshare(2)): namespaces of
    /// their own over the machine's root filesystem and nothing else.
    Unshare,
    /// No engine: the kind is host.
    None,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Runtime {
    /// An OCI runtime on the host kernel; runc and crun cannot be told
    /// apart from inside.
    #[serde(rename = "runc/crun")]
    RuncCrun,
    #[serde(rename = "runsc")]
    Runsc,
    #[serde(rename = "kata")]
    Kata,
    #[serde(rename = "lxc")]
    Lxc,
    /// Sysbox's runc fork: system containers with a user namespace always,
    /// sysbox-fs over parts of /proc and /sys, shiftfs or ID-mapped mounts.
    #[serde(rename = "sysbox-runc")]
    SysboxRunc,
    #[serde(rename = "systemd-nspawn")]
    SystemdNspawn,
    /// The sandbox programs are their own runtimes: they make the
    /// namespaces and mounts themselves, with no OCI runtime between.
    #[serde(rename = "bubblewrap")]
    Bubblewrap,
    #[serde(rename = "firejail")]
    Firejail,
    #[serde(rename = "unshare")]
    Unshare,
    #[serde(rename = "none")]
    None,
    #[default]
    #[serde(rename = "unknown")]
    Unknown,
}

/// The hypervisor under the kernel this process sees. Under a container it
/// is the host machine's; under gVisor what the Sentry passes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Virtualized {
    Kvm,
    Firecracker,
    /// Hyper-V, WSL2 among them.
    Hyperv,
    /// QEMU without KVM (TCG), or QEMU whose accelerator is not shown.
    Qemu,
    Xen,
    Vmware,
    Virtualbox,
    /// No hypervisor flag: bare metal.
    None,
    #[default]
    Unknown,
}

/// One observation and what it told.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Evidence {
    /// The field it decided or supported: kind, engine, runtime, rootless,
    /// virtualized.
    pub field: Text,
    /// Where it was read.
    pub source: String,
    /// What was there (short, never an environment value but $container).
    pub seen: String,
    pub means: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Boundary {
    pub kind: Kind,
    pub engine: Engine,
    pub runtime: Runtime,
    /// uid 0 here maps to a non-zero host uid (or is not mapped at all in a
    /// user namespace of its own); None when /proc/self/uid_map is unread.
    pub rootless: Option<bool>,
    pub virtualized: Virtualized,
    /// WSL2: Hyper-V with Microsoft's kernel.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub wsl: bool,
    pub evidence: Vec<Evidence>,
    /// Sources that could not be read, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// The machine and kernel under the boundary (src/facts/platform.rs),
    /// read from the same sources; what `selfprobe-host diff` compares.
    pub platform: Platform,
    /// The root filesystem is the machine's own, mounted whole (a sandbox
    /// over the machine's root: bubblewrap's `--ro-bind / /`, firejail,
    /// unshare), not an image's: the mounts fact names it the host root.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub machine_root: bool,
    /// Whether this process is in the initial user namespace (None when
    /// /proc/self/ns/user is unread): a capability the kernel asks of the
    /// initial namespace (release_agent's CAP_SYS_ADMIN) is never held in
    /// another, whatever access(2) says.
    #[serde(skip)]
    pub initial_user_ns: Option<bool>,
}

/// What the decision rests on, read once from the root path; `decide` is
/// pure so the unit tests feed it captured text.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// /proc/self/ns/* inodes.
    pub ns: BTreeMap<String, u64>,
    /// /proc/1/ns/mnt inode (readable by root or PID 1's owner).
    pub pid1_mnt: Option<u64>,
    /// /proc/2 is kthreadd: only the initial PID namespace sees it.
    pub kthreadd: Option<bool>,
    pub version: Option<String>,
    pub osrelease: Option<String>,
    pub cmdline: Option<String>,
    pub mountinfo: Option<String>,
    pub uid_map: Option<String>,
    pub cgroup: Option<String>,
    /// PID 1's program (argv[0] of /proc/1/cmdline; the arguments may hold
    /// secrets and are never kept).
    pub pid1_program: Option<String>,
    /// `container=` of this process's environment, then of PID 1's.
    pub container_env: Option<(String, String)>,
    pub kubernetes_env: bool,
    pub dockerenv: bool,
    pub containerenv: Option<String>,
    pub cpu_hypervisor: Option<bool>,
    pub dmi_vendor: Option<String>,
    pub dmi_product: Option<String>,
    pub sys_hypervisor: Option<String>,
    /// OEM ID of the ACPI DSDT (bytes 10..16): Firecracker writes "FIRECK".
    pub acpi_oem: Option<String>,
    pub clocksources: Option<String>,
    /// For the platform (src/facts/platform.rs): /proc/sys/kernel/arch,
    /// uname(2)'s machine (live system only), /proc/self/auxv and
    /// /sys/devices/system/cpu/online.
    pub arch: Option<String>,
    pub uname_machine: Option<String>,
    pub auxv: Option<Vec<u8>>,
    pub cpus_online: Option<String>,
    pub unread: Vec<String>,
}

fn short(s: &str, n: usize) -> String {
    let s = s.trim();
    let mut out = crate::util::sanitize::short(s, n);
    if s.chars().count() > n {
        out.push('…');
    }
    out
}

/// The value of `name` in a NUL-separated environ, and nothing else of it:
/// PID 1's environment may hold secrets, and only $container is kept.
fn environ_value(bytes: &[u8], name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    bytes
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
        .map(|v| short(&String::from_utf8_lossy(v), 64))
}

fn ns_inode(link: &str) -> Option<u64> {
    let start = link.find('[')? + 1;
    let end = link[start..].find(']')? + start;
    link[start..end].parse().ok()
}

impl Inputs {
    pub fn read(host: &Host) -> Inputs {
        let mut i = Inputs::default();
        let text = |p: &str, unread: &mut Vec<String>| -> Option<String> {
            match host.read(p) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    unread.push(format!("{p}: {e}"));
                    None
                }
            }
        };
        let mut unread = Vec::new();
        for (name, _) in INIT_INODES {
            if let Some(ino) = host
                .read_link(format!("/proc/self/ns/{name}"))
                .ok()
                .and_then(|l| ns_inode(&l.to_string_lossy()))
            {
                i.ns.insert(name.to_string(), ino);
            }
        }
        i.pid1_mnt = host
            .read_link("/proc/1/ns/mnt")
            .ok()
            .and_then(|l| ns_inode(&l.to_string_lossy()));
        i.kthreadd = match host.read("/proc/2/status") {
            Ok(s) => Some(
                s.lines()
                    .next()
                    .is_some_and(|l| l.trim_start_matches("Name:").trim() == "kthreadd"),
            ),
            // No PID 2 where PID 1 is seen: this PID namespace does not
            // hold the kernel's threads. With no PID 1 either (a tree that
            // is a mount table and little else) nothing is seen at all.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                host.path("/proc/1").is_dir().then_some(false)
            }
            Err(_) => None,
        };
        // Raw reads of PID 1's files, so they honour an untrusted /proc
        // (src/host.rs) by hand: nothing is read from a /proc that is not
        // procfs.
        let proc_ok = host.proc_untrusted().is_none();
        i.pid1_program = read_regular(&host.path("/proc/1/cmdline"), 4096)
            .ok()
            .filter(|_| proc_ok)
            .and_then(|b| {
                let argv0 = b.split(|c| *c == 0).next()?;
                (!argv0.is_empty()).then(|| short(&String::from_utf8_lossy(argv0), 80))
            });
        i.version = text("/proc/version", &mut unread);
        i.osrelease = text("/proc/sys/kernel/osrelease", &mut unread);
        i.cmdline = text("/proc/cmdline", &mut unread);
        i.mountinfo = text("/proc/self/mountinfo", &mut unread);
        i.uid_map = text("/proc/self/uid_map", &mut unread);
        i.cgroup = text("/proc/self/cgroup", &mut unread);
        i.containerenv = text("/run/.containerenv", &mut unread).map(|t| short(&t, 512));
        i.dockerenv = std::fs::symlink_metadata(host.path("/.dockerenv")).is_ok();
        let env = host.env();
        i.container_env = env
            .get("container")
            .map(|v| ("$container".to_string(), short(v, 64)))
            .or_else(|| {
                read_regular(&host.path("/proc/1/environ"), MAX_ENVIRON)
                    .ok()
                    .filter(|_| proc_ok)
                    .and_then(|b| environ_value(&b, "container"))
                    .map(|v| ("/proc/1/environ container".to_string(), v))
            });
        i.kubernetes_env = env.get("KUBERNETES_SERVICE_HOST").is_some();
        i.cpu_hypervisor = text("/proc/cpuinfo", &mut unread).map(|t| {
            t.lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
        });
        i.dmi_vendor = text("/sys/class/dmi/id/sys_vendor", &mut unread).map(|t| short(&t, 80));
        i.dmi_product = text("/sys/class/dmi/id/product_name", &mut unread).map(|t| short(&t, 80));
        i.sys_hypervisor = text("/sys/hypervisor/type", &mut unread).map(|t| short(&t, 32));
        i.clocksources = text(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            &mut unread,
        );
        // Root-only (0400); 16 bytes are the table header up to the OEM ID.
        i.acpi_oem = read_regular(&host.path("/sys/firmware/acpi/tables/DSDT"), 16)
            .ok()
            .filter(|b| b.len() == 16)
            .map(|b| String::from_utf8_lossy(&b[10..16]).trim().to_string());
        i.arch = text("/proc/sys/kernel/arch", &mut unread);
        // A fixture tree's machine is its own file's or unknown, never ours.
        i.uname_machine = host
            .is_live()
            .then(|| nix::sys::utsname::uname().ok())
            .flatten()
            .map(|u| u.machine().to_string_lossy().into_owned());
        i.auxv = read_regular(&host.path("/proc/self/auxv"), 4096)
            .ok()
            .filter(|_| proc_ok);
        i.cpus_online = text("/sys/devices/system/cpu/online", &mut unread);
        i.unread = unread;
        i
    }
}

/// The part of a mountinfo line this module needs, from the one parser
/// (src/facts/mounts/parse.rs). Lines that do not parse are skipped here:
/// the mounts probe reports them.
struct Line {
    root: String,
    mount_point: String,
    fstype: String,
    source: String,
    super_options: String,
}

fn lines(mountinfo: &str) -> Vec<Line> {
    crate::facts::mounts::parse_mountinfo(mountinfo)
        .0
        .into_iter()
        .map(|m| Line {
            root: m.root.to_string_lossy().into_owned(),
            mount_point: m.mount_point.to_string_lossy().into_owned(),
            fstype: m.fstype,
            source: m.source,
            super_options: m.super_options,
        })
        .collect()
}

struct Decider {
    evidence: Vec<Evidence>,
}

impl Decider {
    fn saw(&mut self, field: &'static str, source: &str, seen: &str, means: &str) {
        self.evidence.push(Evidence {
            field: field.into(),
            source: source.to_string(),
            seen: short(seen, 160),
            means: means.to_string(),
        });
    }
}

/// The engine markers found, before they are weighed.
#[derive(Default)]
struct Marks {
    kubernetes: bool,
    docker: bool,
    podman: bool,
    /// containers/storage (podman and CRI-O share it).
    containers_storage: bool,
    containerd: bool,
    crio: bool,
    lxc: bool,
    nspawn: bool,
    bubblewrap: bool,
    firejail: bool,
}

impl Marks {
    fn any(&self) -> bool {
        self.kubernetes
            || self.docker
            || self.podman
            || self.containers_storage
            || self.containerd
            || self.crio
            || self.lxc
            || self.nspawn
            || self.bubblewrap
            || self.firejail
    }

    /// An engine that gives each container a root filesystem of its own
    /// (an image, a directory, a volume): with one of these the root is
    /// never the machine's.
    fn own_roots(&self) -> bool {
        self.kubernetes
            || self.docker
            || self.podman
            || self.containers_storage
            || self.containerd
            || self.crio
            || self.lxc
            || self.nspawn
    }
}

pub fn decide(i: &Inputs) -> Boundary {
    let mut d = Decider {
        evidence: Vec::new(),
    };
    let mounts = i.mountinfo.as_deref().map(lines).unwrap_or_default();
    let root_mount = mounts.iter().rev().find(|m| m.mount_point == "/");

    // gVisor: the Sentry's fixed build string, its boot line, the gofer's
    // 9p root.
    let mut sandbox = false;
    if let Some(v) = i.version.as_deref().filter(|v| v.contains(GVISOR_BUILD)) {
        d.saw(
            "kind",
            "/proc/version",
            v,
            "gVisor's fixed kernel build string: system calls reach its Sentry",
        );
        sandbox = true;
    }
    if let Some(r) = i.osrelease.as_deref().filter(|r| r.contains("gvisor")) {
        d.saw(
            "kind",
            "/proc/sys/kernel/osrelease",
            r,
            "a gVisor kernel release",
        );
        sandbox = true;
    }
    if let Some(c) = i.cmdline.as_deref().filter(|c| c.contains("gvisor")) {
        d.saw("kind", "/proc/cmdline", c, "gVisor's boot line");
        sandbox = true;
    }
    if let Some(m) = root_mount.filter(|m| m.fstype == "9p" && m.super_options.contains("trans=fd"))
    {
        d.saw(
            "kind",
            "/proc/self/mountinfo",
            &format!("/ on 9p {}", m.super_options),
            "a 9p root served over a file descriptor: gVisor's gofer",
        );
        sandbox = true;
    }

    // Kata: the shared directory the runtime exports into its VM.
    let mut vm = false;
    if let Some(m) = mounts.iter().find(|m| m.source == "kataShared") {
        d.saw(
            "kind",
            "/proc/self/mountinfo",
            &format!("{} on {} kataShared", m.mount_point, m.fstype),
            "Kata's shared directory: the container runs in a VM of its own",
        );
        vm = true;
    }
    if let Some(m) = mounts.iter().find(|m| m.root.contains("/kata-containers/")) {
        d.saw(
            "kind",
            "/proc/self/mountinfo",
            &format!("{} from {}", m.mount_point, m.root),
            "a file of Kata's guest-side shared directory",
        );
        vm = true;
    }
    if let Some(c) = i.cmdline.as_deref().filter(|c| {
        c.contains("kata-containers.target")
            || c.contains("agent.log=")
            || c.contains("agent.debug_console")
    }) {
        d.saw(
            "kind",
            "/proc/cmdline",
            c,
            "the guest kernel's boot line names the Kata agent",
        );
        vm = true;
    }

    // Engine markers.
    let mut marks = Marks::default();
    if let Some(ce) = &i.containerenv {
        let engine = ce
            .lines()
            .find_map(|l| l.strip_prefix("engine="))
            .map(|e| e.trim_matches('"').to_string());
        d.saw(
            "engine",
            "/run/.containerenv",
            engine.as_deref().unwrap_or("(present)"),
            "written by podman (and CRI-O) into each container",
        );
        marks.podman = true;
    }
    if let Some(cg) = &i.cgroup {
        for path in cg.lines().filter_map(|l| l.splitn(3, ':').nth(2)) {
            let mut hit = |what: &str, flag: &mut bool| {
                if !*flag {
                    d.saw("engine", "/proc/self/cgroup", path, what);
                }
                *flag = true;
            };
            if path.contains("crio-") {
                hit("a CRI-O container's cgroup", &mut marks.crio);
            }
            if path.contains("cri-containerd") {
                hit("a containerd CRI container's cgroup", &mut marks.containerd);
            }
            if path.contains("libpod") {
                hit("a podman container's cgroup", &mut marks.podman);
            }
            if path.contains("/docker/") || path.contains("docker-") {
                hit("a Docker container's cgroup", &mut marks.docker);
            }
            if path.contains("/lxc/") || path.contains("lxc.payload") {
                hit("an LXC container's cgroup", &mut marks.lxc);
            }
            if path.contains("kubepods") {
                hit("a Kubernetes pod's cgroup", &mut marks.kubernetes);
            }
        }
    }
    // Sysbox: its sysbox-fs serves parts of /proc and /sys, and sysbox-mgr
    // keeps the inner engines' state under /var/lib/sysbox.
    let mut sysbox = false;
    for m in &mounts {
        let sysbox_dir = m.root.contains("/lib/sysbox/");
        let seen =
            if matches!(m.fstype.as_str(), "fuse" | "fuse.sysboxfs") && m.source == "sysboxfs" {
                format!("{} on fuse sysboxfs", m.mount_point)
            } else if sysbox_dir {
                format!("{} from {}", m.mount_point, m.root)
            } else {
                continue;
            };
        d.saw(
            "runtime",
            "/proc/self/mountinfo",
            &seen,
            "Sysbox: sysbox-fs emulates parts of /proc and /sys, sysbox-mgr keeps each system container's inner state under /var/lib/sysbox",
        );
        sysbox = true;
        break;
    }
    for m in &mounts {
        let r = m.root.as_str();
        let mut hit = |what: &str, flag: &mut bool| {
            if !*flag {
                d.saw(
                    "engine",
                    "/proc/self/mountinfo",
                    &format!("{} from {r}", m.mount_point),
                    what,
                );
            }
            *flag = true;
        };
        if r.contains("/docker/containers/") {
            hit("a file of Docker's container storage", &mut marks.docker);
        }
        if r.contains("-containers/") && r.contains("/userdata/") {
            hit(
                "a file of containers/storage (podman, CRI-O)",
                &mut marks.containers_storage,
            );
        }
        // A cgroup mount's root names the container's scope (crio-<id>):
        // containers/storage alone cannot tell CRI-O from podman.
        if r.contains("/crio-") {
            hit("a CRI-O container's cgroup root", &mut marks.crio);
        }
        // Sysbox's per-container directories for an inner engine name
        // that engine (/var/lib/sysbox/containerd/<id>): not the outer one.
        let sysbox_dir = r.contains("/lib/sysbox/");
        if (r.contains("/io.containerd.") || r.contains("/containerd/")) && !sysbox_dir {
            hit("a file of containerd's state", &mut marks.containerd);
        }
        // systemd-nspawn binds its propagation directory at
        // /run/systemd/nspawn/incoming (before systemd 249) or
        // /run/host/incoming.
        if r.contains("/systemd/nspawn/propagate/")
            && (m.mount_point == "/run/systemd/nspawn/incoming"
                || m.mount_point == "/run/host/incoming")
        {
            hit(
                "systemd-nspawn's propagation directory (machinectl bind)",
                &mut marks.nspawn,
            );
        }
        if r.contains("/kubelet/pods/") {
            hit("a file of a kubelet pod", &mut marks.kubernetes);
        }
        // firejail hides a path by binding an empty read-only file or
        // directory of its own over it: such a bind exists only in the
        // namespace firejail made (its own copies, bound onto themselves,
        // show in the machine's table too).
        // (On a tmpfs /run field 4 is relative to it: /firejail/….)
        if crate::facts::mounts::engine::is_firejail_mask(r) && !m.mount_point.ends_with(r) {
            hit(
                "firejail's masking bind (it hides the path below it)",
                &mut marks.firejail,
            );
        }
        if r.contains("/lxc/") || r.contains("/lxd/") || r.contains("/incus/") {
            hit("a file of LXC, LXD or Incus", &mut marks.lxc);
        }
    }
    // bubblewrap builds the sandbox's root in a tmpfs at "/newroot" and
    // pivots into it: a root still showing it is bwrap's (with
    // `--ro-bind / /` the machine's root is bound over it instead).
    if let Some(m) = root_mount.filter(|m| m.fstype == "tmpfs" && m.root == "/newroot") {
        d.saw(
            "engine",
            "/proc/self/mountinfo",
            &format!("/ on tmpfs {}", m.root),
            "bubblewrap's new root, a tmpfs it pivots into",
        );
        marks.bubblewrap = true;
    }
    if let Some((src, v)) = &i.container_env {
        let what = match v.as_str() {
            "firejail" => Some(&mut marks.firejail),
            "podman" => Some(&mut marks.podman),
            "docker" => Some(&mut marks.docker),
            "lxc" | "lxc-libvirt" => Some(&mut marks.lxc),
            "crio" | "cri-o" => Some(&mut marks.crio),
            "systemd-nspawn" => Some(&mut marks.nspawn),
            _ => None,
        };
        d.saw(
            "engine",
            src,
            v,
            "the container= variable engines set for systemd",
        );
        if let Some(flag) = what {
            *flag = true;
        }
    }
    if let Some(p) = &i.pid1_program {
        let base = p.rsplit('/').next().unwrap_or(p);
        let (means, flag) = match base {
            "systemd" | "init" | "openrc-init" | "runit-init" => (
                "PID 1 is an init system: a machine, or a system container",
                None,
            ),
            "docker-init" => ("Docker's --init as PID 1", Some(&mut marks.docker)),
            "catatonit" => ("podman's --init as PID 1", Some(&mut marks.podman)),
            "pause" => (
                "a Kubernetes pod's pause process as PID 1",
                Some(&mut marks.kubernetes),
            ),
            "bwrap" => (
                "bubblewrap as PID 1 of the sandbox's PID namespace",
                Some(&mut marks.bubblewrap),
            ),
            "firejail" => (
                "firejail as PID 1 of the sandbox's PID namespace",
                Some(&mut marks.firejail),
            ),
            _ => ("PID 1's program", None),
        };
        d.saw("kind", "/proc/1/cmdline", p, means);
        if let Some(flag) = flag {
            *flag = true;
        }
    }
    if i.kubernetes_env {
        d.saw(
            "engine",
            "environment",
            "KUBERNETES_SERVICE_HOST",
            "a Kubernetes pod",
        );
        marks.kubernetes = true;
    }
    // The root is the machine's own filesystem mounted whole and no
    // engine that gives a container a root of its own left a mark: a
    // sandbox over the machine's root (bubblewrap, firejail, unshare) or
    // the machine itself. A marker file on it is the machine's.
    let machine_root = root_mount.is_some_and(whole_disk_root) && !marks.own_roots();
    let dockerenv = i.dockerenv && !machine_root;
    if i.dockerenv {
        d.saw(
            "engine",
            "/.dockerenv",
            "(present)",
            if dockerenv {
                "written by Docker into each container (it outlives an image built from one)"
            } else {
                "on the machine's own root filesystem: the machine's file, no evidence of this boundary's engine"
            },
        );
    }

    // Namespaces.
    let own = |n: &str| i.ns.get(n).copied();
    let is_init = |n: &str| own(n).map(|ino| Some(ino) == init_inode(n));
    for n in ["pid", "mnt", "user", "net", "uts", "ipc", "cgroup"] {
        if let Some(ino) = own(n) {
            let init = is_init(n) == Some(true);
            d.saw(
                "kind",
                &format!("/proc/self/ns/{n}"),
                &format!("{n}:[{ino}]"),
                if init {
                    "the machine's initial namespace"
                } else {
                    "a namespace of its own"
                },
            );
        }
    }
    let pid_initial = is_init("pid") == Some(true) || i.kthreadd == Some(true);
    // A user namespace of its own: root here holds capabilities only over
    // what that namespace owns. Not the machine's own namespaces, even
    // where the PID namespace is (bwrap without --unshare-pid).
    let own_userns = is_init("user") == Some(false);
    if i.kthreadd == Some(true) {
        d.saw(
            "kind",
            "/proc/2/status",
            "kthreadd",
            "kernel threads are visible: the initial PID namespace",
        );
    }
    let mnt_shared = if is_init("mnt") == Some(true) {
        Some(true)
    } else {
        match (own("mnt"), i.pid1_mnt) {
            (Some(a), Some(b)) if pid_initial => {
                d.saw(
                    "kind",
                    "/proc/1/ns/mnt",
                    &format!("mnt:[{b}]"),
                    if a == b {
                        "the same mount namespace as the machine's init"
                    } else {
                        "a mount namespace other than the machine's init"
                    },
                );
                Some(a == b)
            }
            _ => None,
        }
    };
    // An overlay root, or Sysbox's shiftfs over an engine's overlay.
    let root_layered = root_mount.is_some_and(|m| {
        m.fstype == "overlay" || (m.fstype == "shiftfs" && m.root.contains("/overlay2/"))
    });
    let engine_files = marks.any() || i.containerenv.is_some() || sysbox;
    let container_like = root_layered || engine_files || dockerenv || own_userns;
    let no_ns = i.ns.is_empty() && i.kthreadd.is_none();

    let kind = if sandbox {
        Kind::Sandbox
    } else if vm {
        Kind::VmContainer
    } else if no_ns {
        if engine_files {
            Kind::Container
        } else {
            Kind::Unknown
        }
    } else if pid_initial {
        match mnt_shared {
            Some(true) => Kind::Host,
            // `--pid=host`: the machine's processes, the container's files.
            Some(false) if container_like => Kind::Container,
            // A service's own mount namespace (systemd PrivateTmp) on the
            // machine's own root filesystem.
            Some(false) => Kind::Host,
            None if root_layered || engine_files || own_userns => Kind::Container,
            None => Kind::Host,
        }
    } else {
        Kind::Container
    };

    let engine = match kind {
        Kind::Host => Engine::None,
        _ if marks.kubernetes => {
            if marks.crio || marks.containers_storage || marks.podman {
                Engine::CriO
            } else if marks.containerd {
                Engine::Containerd
            } else if marks.docker {
                Engine::Docker
            } else {
                Engine::Unknown
            }
        }
        _ if marks.crio => Engine::CriO,
        // The sandbox programs' marks are the innermost view (PID 1,
        // $container, their own masks): a bwrap inside a Docker container
        // is bwrap's boundary.
        _ if marks.bubblewrap => Engine::Bubblewrap,
        _ if marks.firejail => Engine::Firejail,
        _ if marks.podman || marks.containers_storage => Engine::Podman,
        _ if marks.docker || dockerenv => Engine::Docker,
        _ if marks.lxc => Engine::Lxc,
        _ if marks.nspawn => Engine::SystemdNspawn,
        _ if marks.containerd => Engine::Containerd,
        Kind::Container if machine_root && !marks.any() => {
            d.saw(
                "engine",
                "/proc/self/mountinfo",
                "namespaces of its own over the machine's root filesystem",
                "no engine left a mark (no $container, no engine's files, PID 1 is the workload): unshare(1), or a program's own unshare(2)",
            );
            Engine::Unshare
        }
        _ => Engine::Unknown,
    };
    let runtime = match kind {
        Kind::Host => Runtime::None,
        Kind::Sandbox => Runtime::Runsc,
        Kind::VmContainer => Runtime::Kata,
        Kind::Container if sysbox => Runtime::SysboxRunc,
        Kind::Container if engine == Engine::Lxc => Runtime::Lxc,
        Kind::Container if engine == Engine::SystemdNspawn => Runtime::SystemdNspawn,
        Kind::Container if engine == Engine::Bubblewrap => Runtime::Bubblewrap,
        Kind::Container if engine == Engine::Firejail => Runtime::Firejail,
        Kind::Container if engine == Engine::Unshare => Runtime::Unshare,
        Kind::Container if engine != Engine::Unknown => Runtime::RuncCrun,
        _ => Runtime::Unknown,
    };

    let rootless = i.uid_map.as_deref().and_then(|t| {
        let map: Vec<(u64, u64, u64)> = t
            .lines()
            .filter_map(|l| {
                let v: Vec<u64> = l
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                (v.len() == 3).then(|| (v[0], v[1], v[2]))
            })
            .collect();
        if map.is_empty() {
            return None;
        }
        let zero = map
            .iter()
            .find(|(inside, _, len)| *inside == 0 && *len > 0)
            .map(|(_, outside, _)| *outside);
        let seen = short(&t.split_whitespace().collect::<Vec<_>>().join(" "), 80);
        let (value, means) = match zero {
            Some(0) => (false, "uid 0 here is uid 0 outside"),
            Some(_) => (true, "uid 0 here maps to a non-zero uid outside"),
            None if is_init("user") == Some(false) => (
                true,
                "uid 0 is not mapped in this user namespace: no one here is root outside",
            ),
            None => (false, "the initial user namespace"),
        };
        d.saw("rootless", "/proc/self/uid_map", &seen, means);
        Some(value)
    });

    let (virtualized, wsl) = virtualization(i, &mut d);

    let mut unread = i.unread.clone();
    if kind == Kind::Unknown {
        unread.push(
            "no /proc/self/ns links, no kthreadd and no engine marker: whether a container boundary exists cannot be told"
                .into(),
        );
    }
    Boundary {
        kind,
        engine,
        runtime,
        rootless,
        virtualized,
        wsl,
        evidence: d.evidence,
        unread,
        platform: platform::derive(&platform::Sources {
            arch: i.arch.as_deref(),
            uname_machine: i.uname_machine.as_deref(),
            osrelease: i.osrelease.as_deref(),
            version: i.version.as_deref(),
            auxv: i.auxv.as_deref(),
            cpus_online: i.cpus_online.as_deref(),
            mountinfo: i.mountinfo.as_deref(),
            cgroup: i.cgroup.as_deref(),
        }),
        machine_root: machine_root && kind == Kind::Container,
        initial_user_ns: is_init("user"),
    }
}

/// A disk filesystem mounted whole at "/": field 4 is its own root ("/",
/// or on btrfs the subvolume that subvol= names, "/@" on Ubuntu). An
/// engine's container root is an overlay, or a directory of the disk
/// (field 4 /var/lib/lxc/NAME/rootfs, /var/lib/machines/NAME).
fn whole_disk_root(m: &Line) -> bool {
    let subvol = m
        .super_options
        .split(',')
        .find_map(|o| o.strip_prefix("subvol="));
    crate::facts::mounts::is_machine_disk(&m.fstype, &m.source)
        && (m.root == "/" || (m.fstype == "btrfs" && subvol == Some(m.root.as_str())))
}

fn virtualization(i: &Inputs, d: &mut Decider) -> (Virtualized, bool) {
    let lower = |s: &Option<String>| s.as_deref().unwrap_or("").to_ascii_lowercase();
    let (vendor, product) = (lower(&i.dmi_vendor), lower(&i.dmi_product));
    let dmi = format!("{} / {}", vendor, product);
    let release = format!("{} {}", lower(&i.osrelease), lower(&i.version));
    if release.contains("microsoft") {
        d.saw(
            "virtualized",
            "/proc/sys/kernel/osrelease",
            i.osrelease.as_deref().unwrap_or(""),
            "Microsoft's kernel: WSL2 on Hyper-V",
        );
        return (Virtualized::Hyperv, true);
    }
    if i.acpi_oem.as_deref() == Some("FIRECK") {
        d.saw(
            "virtualized",
            "/sys/firmware/acpi/tables/DSDT",
            "OEM ID FIRECK",
            "ACPI tables written by Firecracker",
        );
        return (Virtualized::Firecracker, false);
    }
    if i.dmi_vendor.is_none()
        && i.cmdline
            .as_deref()
            .is_some_and(|c| c.contains("virtio_mmio.device="))
    {
        d.saw(
            "virtualized",
            "/proc/cmdline",
            "virtio_mmio.device=",
            "virtio devices on MMIO and no DMI: a Firecracker microVM",
        );
        return (Virtualized::Firecracker, false);
    }
    if let Some(t) = i.sys_hypervisor.as_deref().filter(|t| !t.is_empty()) {
        d.saw(
            "virtualized",
            "/sys/hypervisor/type",
            t,
            "the hypervisor the kernel runs on",
        );
        if t.eq_ignore_ascii_case("xen") {
            return (Virtualized::Xen, false);
        }
    }
    let by_dmi = if vendor.contains("microsoft") && product.contains("virtual") {
        Some(Virtualized::Hyperv)
    } else if vendor.contains("vmware") {
        Some(Virtualized::Vmware)
    } else if vendor.contains("innotek") || product.contains("virtualbox") {
        Some(Virtualized::Virtualbox)
    } else if vendor.contains("xen") {
        Some(Virtualized::Xen)
    } else if vendor.contains("amazon ec2")
        || vendor.contains("google")
        || product.contains("kvm")
        || vendor.contains("openstack")
    {
        Some(Virtualized::Kvm)
    } else if vendor.contains("qemu") {
        Some(Virtualized::Qemu)
    } else {
        None
    };
    let kvm_clock = i
        .clocksources
        .as_deref()
        .is_some_and(|c| c.split_whitespace().any(|s| s == "kvm-clock"));
    if let Some(v) = by_dmi {
        d.saw(
            "virtualized",
            "/sys/class/dmi/id",
            &dmi,
            "the machine's DMI vendor and product",
        );
        // QEMU's machine with KVM underneath shows QEMU in DMI and the
        // paravirtual KVM clock.
        if v == Virtualized::Qemu && kvm_clock {
            d.saw(
                "virtualized",
                "/sys/devices/system/clocksource/clocksource0/available_clocksource",
                "kvm-clock",
                "KVM accelerates the QEMU machine",
            );
            return (Virtualized::Kvm, false);
        }
        return (v, false);
    }
    if kvm_clock {
        d.saw(
            "virtualized",
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
            "kvm-clock",
            "KVM's paravirtual clock",
        );
        return (Virtualized::Kvm, false);
    }
    match i.cpu_hypervisor {
        Some(true) => {
            d.saw(
                "virtualized",
                "/proc/cpuinfo",
                "hypervisor",
                "the CPU reports a hypervisor, not identified further",
            );
            (Virtualized::Unknown, false)
        }
        Some(false) => {
            d.saw(
                "virtualized",
                "/proc/cpuinfo",
                "no hypervisor flag",
                "bare metal",
            );
            (Virtualized::None, false)
        }
        None => (Virtualized::Unknown, false),
    }
}

pub fn collect(host: &Host) -> Boundary {
    decide(&Inputs::read(host))
}

impl Virtualized {
    fn label(self) -> Option<&'static str> {
        match self {
            Virtualized::Kvm => Some("a KVM virtual machine"),
            Virtualized::Firecracker => Some("a Firecracker microVM"),
            Virtualized::Hyperv => Some("a Hyper-V virtual machine"),
            Virtualized::Qemu => Some("a QEMU virtual machine"),
            Virtualized::Xen => Some("a Xen virtual machine"),
            Virtualized::Vmware => Some("a VMware virtual machine"),
            Virtualized::Virtualbox => Some("a VirtualBox virtual machine"),
            Virtualized::None => Some("bare metal"),
            Virtualized::Unknown => None,
        }
    }
}

impl Boundary {
    pub fn is_host(&self) -> bool {
        self.kind == Kind::Host
    }

    pub fn is_sandbox(&self) -> bool {
        self.kind == Kind::Sandbox
    }

    pub fn is_vm(&self) -> bool {
        self.kind == Kind::VmContainer
    }

    /// uid 0 here is not uid 0 outside: capabilities act only on what the
    /// user namespace owns.
    pub fn in_user_namespace(&self) -> bool {
        self.rootless == Some(true)
    }

    /// The kernel that system calls, capabilities and kernel interfaces
    /// reach, as a finding says it.
    pub fn kernel(&self) -> &'static str {
        match self.kind {
            Kind::Sandbox => "gVisor's Sentry (a kernel in user space), not the host kernel",
            Kind::VmContainer => "the VM's own kernel, not the host's",
            Kind::Host => "the machine's own kernel",
            Kind::Container | Kind::Unknown => "the host kernel",
        }
    }

    /// A kernel of its own between the workload and the host's: findings
    /// about kernel reach rank one step lower behind it.
    pub fn own_kernel(&self) -> bool {
        matches!(self.kind, Kind::Sandbox | Kind::VmContainer)
    }

    /// What the workspace is, as a finding names it.
    pub fn noun(&self) -> &'static str {
        match self.kind {
            Kind::Host => "machine",
            Kind::Sandbox => "sandbox",
            Kind::VmContainer => "VM-isolated container",
            Kind::Container | Kind::Unknown => "container",
        }
    }

    fn evidence_of(&self, field: &str) -> Vec<String> {
        self.evidence
            .iter()
            .filter(|e| e.field == field)
            .map(|e| format!("{}: {} ({})", e.source, e.seen, e.means))
            .collect()
    }
}

/// boundary.none on a host; probe.incomplete when the kind cannot be told.
pub fn evaluate(b: &Boundary) -> Vec<Finding> {
    match b.kind {
        Kind::Host => {
            let on = b
                .virtualized
                .label()
                .map(|l| format!(", on {l}"))
                .unwrap_or_default();
            vec![Finding::new(
                Code::BoundaryNone,
                "boundary",
                format!(
                    "no container boundary: this process runs in the machine's own namespaces{on}; every file, process, device and socket this user can reach is the machine's"
                ),
            )
            .with("kind", "host")
            .with("virtualized", serde_json::to_value(b.virtualized).unwrap_or_default())
            .with("evidence", b.evidence_of("kind"))]
        }
        Kind::Unknown => vec![Finding::new(
            Code::ProbeIncomplete,
            "boundary",
            format!(
                "the boundary could not be told: {}",
                b.unread.last().cloned().unwrap_or_default()
            ),
        )
        .unknown()
        .with("probe", "boundary")
        .with("phase", 1)
        .with("reason", b.unread.join("; "))],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(n, i)| (n.to_string(), *i)).collect()
    }

    const INITIAL: &[(&str, u64)] = &[
        ("pid", 0xEFFF_FFFC),
        ("mnt", 0xEFFF_FFF8),
        ("user", 0xEFFF_FFFD),
        ("net", 0xEFFF_FFF9),
        ("uts", 0xEFFF_FFFE),
        ("ipc", 0xEFFF_FFFF),
        ("cgroup", 0xEFFF_FFFB),
    ];

    const PRIVATE: &[(&str, u64)] = &[
        ("pid", 4026532252),
        ("mnt", 4026532249),
        ("user", 0xEFFF_FFFD),
        ("net", 4026532177),
        ("uts", 4026532250),
        ("ipc", 4026532251),
        ("cgroup", 4026532301),
    ];

    #[test]
    fn this_ci_machine_a_firecracker_vm_with_a_leftover_dockerenv_is_a_host() {
        let i = Inputs {
            ns: ns(INITIAL),
            kthreadd: Some(true),
            dockerenv: true,
            mountinfo: Some("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n".into()),
            uid_map: Some("         0          0 4294967295\n".into()),
            cgroup: Some("4:memory:/process_api/c0186477\n0::/\n".into()),
            cpu_hypervisor: Some(true),
            acpi_oem: Some("FIRECK".into()),
            clocksources: Some("tsc kvm-clock \n".into()),
            ..Inputs::default()
        };
        let b = decide(&i);
        assert_eq!(b.kind, Kind::Host);
        assert_eq!(b.engine, Engine::None);
        assert_eq!(b.runtime, Runtime::None);
        assert_eq!(b.rootless, Some(false));
        assert_eq!(b.virtualized, Virtualized::Firecracker);
        let f = evaluate(&b);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, "boundary.none");
        assert!(f[0].message.contains("Firecracker"), "{}", f[0].message);
    }

    #[test]
    fn docker_with_the_host_pid_namespace_is_still_a_container() {
        let mut p = ns(PRIVATE);
        p.insert("pid".into(), 0xEFFF_FFFC);
        let i = Inputs {
            ns: p,
            pid1_mnt: Some(4026531832),
            kthreadd: Some(true),
            dockerenv: true,
            mountinfo: Some(
                "473 387 0:143 / / rw,relatime - overlay overlay rw,lowerdir=/l\n".into(),
            ),
            ..Inputs::default()
        };
        let b = decide(&i);
        assert_eq!(b.kind, Kind::Container);
        assert_eq!(b.engine, Engine::Docker);
        assert_eq!(b.runtime, Runtime::RuncCrun);
    }

    #[test]
    fn a_service_with_a_private_mount_namespace_on_the_machine_root_is_a_host() {
        let mut p = ns(INITIAL);
        p.insert("mnt".into(), 4026532400);
        let i = Inputs {
            ns: p,
            pid1_mnt: Some(4026531840),
            mountinfo: Some("20 0 0:17 / / rw,relatime - btrfs /dev/sdd3 rw\n".into()),
            ..Inputs::default()
        };
        assert_eq!(decide(&i).kind, Kind::Host);
    }

    #[test]
    fn gvisor_by_build_string_release_or_gofer_root() {
        for i in [
            Inputs {
                version: Some(format!("Linux version 4.4.0 {GVISOR_BUILD}\n")),
                ..Inputs::default()
            },
            Inputs {
                osrelease: Some("4.19.0-gvisor\n".into()),
                ..Inputs::default()
            },
            Inputs {
                mountinfo: Some(
                    "8 8 0:8 / / rw  - 9p none rw,trans=fd,rfdno=4,wfdno=4,aname=/\n".into(),
                ),
                ..Inputs::default()
            },
        ] {
            let b = decide(&i);
            assert_eq!(b.kind, Kind::Sandbox, "{:?}", b.evidence);
            assert_eq!(b.runtime, Runtime::Runsc);
        }
    }

    #[test]
    fn kata_by_its_shared_directory() {
        let i = Inputs {
            ns: ns(PRIVATE),
            mountinfo: Some(
                "73 46 0:35 / / ro,nodev,relatime master:22 - virtiofs none rw\n\
                 85 73 0:33 /81f3e754-11d3f9074a20c122-hosts /etc/hosts ro,relatime - virtiofs kataShared rw\n"
                    .into(),
            ),
            ..Inputs::default()
        };
        let b = decide(&i);
        assert_eq!(b.kind, Kind::VmContainer);
        assert_eq!(b.runtime, Runtime::Kata);
        assert!(b.kernel().contains("VM"));
    }

    #[test]
    fn engines_by_their_marks() {
        let base = Inputs {
            ns: ns(PRIVATE),
            ..Inputs::default()
        };
        let podman = Inputs {
            containerenv: Some("engine=\"podman-4.3.1\"\nrootless=0\n".into()),
            container_env: Some(("$container".into(), "podman".into())),
            ..base.clone()
        };
        assert_eq!(decide(&podman).engine, Engine::Podman);
        let crio = Inputs {
            kubernetes_env: true,
            cgroup: Some("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/crio-abc.scope\n".into()),
            ..base.clone()
        };
        assert_eq!(decide(&crio).engine, Engine::CriO);
        let cri = Inputs {
            mountinfo: Some("1 0 0:1 /var/lib/kubelet/pods/9f/etc-hosts /etc/hosts rw - ext4 /dev/sda1 rw\n2 0 0:1 /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/1/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n".into()),
            ..base.clone()
        };
        assert_eq!(decide(&cri).engine, Engine::Containerd);
        let lxc = Inputs {
            container_env: Some(("/proc/1/environ container".into(), "lxc".into())),
            ..base.clone()
        };
        let b = decide(&lxc);
        assert_eq!((b.engine, b.runtime), (Engine::Lxc, Runtime::Lxc));
        assert_eq!(decide(&base).engine, Engine::Unknown);
        assert_eq!(decide(&base).runtime, Runtime::Unknown);
        // Sysbox: sysbox-fs and Docker's files through a shiftfs mark (not
        // the inner containerd's directory under /var/lib/sysbox).
        let id = "acbc2a6670e672cbaf39897aaaabce7f245a8c09a27458173e8a9b99c28ac6ae";
        let sysbox = Inputs {
            mountinfo: Some(format!("1526 1218 0:86 / / rw - shiftfs /var/lib/docker/overlay2/85/merged rw\n1644 1590 0:77 /proc/uptime /proc/uptime rw - fuse sysboxfs rw\n1717 1526 0:94 /hosts /etc/hosts rw - shiftfs /var/lib/docker/containers/{id} rw\n1723 1526 8:1 /var/lib/sysbox/containerd/{id} /var/lib/containerd rw - ext4 /dev/sda1 rw\n")),
            ..base.clone()
        };
        let b = decide(&sysbox);
        assert_eq!((b.engine, b.runtime), (Engine::Docker, Runtime::SysboxRunc));
        // The same table alone, without namespace links, is still a container.
        let alone = Inputs {
            ns: BTreeMap::new(),
            ..sysbox
        };
        assert_eq!(decide(&alone).kind, Kind::Container);
        let nspawn = Inputs {
            mountinfo: Some("913 912 0:24 /systemd/nspawn/propagate/rootfs /run/systemd/nspawn/incoming ro - tmpfs tmpfs rw\n".into()),
            ..base.clone()
        };
        let b = decide(&nspawn);
        assert_eq!(
            (b.engine, b.runtime),
            (Engine::SystemdNspawn, Runtime::SystemdNspawn)
        );
        let env = Inputs {
            container_env: Some(("$container".into(), "systemd-nspawn".into())),
            ..base.clone()
        };
        assert_eq!(decide(&env).engine, Engine::SystemdNspawn);
    }

    #[test]
    fn rootless_from_the_uid_map() {
        let with = |m: &str| {
            decide(&Inputs {
                ns: ns(PRIVATE),
                uid_map: Some(m.into()),
                ..Inputs::default()
            })
            .rootless
        };
        assert_eq!(
            with("         0       1000          1\n         1     100000      65536\n"),
            Some(true)
        );
        assert_eq!(with("         0          0 4294967295\n"), Some(false));
        let mut own_user = ns(PRIVATE);
        own_user.insert("user".into(), 4026532600);
        let b = decide(&Inputs {
            ns: own_user,
            uid_map: Some("      1000       1000          1\n".into()),
            ..Inputs::default()
        });
        assert_eq!(b.rootless, Some(true), "uid 0 not mapped at all");
        assert_eq!(with(""), None);
    }

    #[test]
    fn virtualization_sources() {
        let v = |i: Inputs| decide(&i).virtualized;
        assert_eq!(
            v(Inputs {
                osrelease: Some("5.15.153.1-microsoft-standard-WSL2\n".into()),
                ..Inputs::default()
            }),
            Virtualized::Hyperv
        );
        assert_eq!(
            v(Inputs {
                dmi_vendor: Some("QEMU".into()),
                clocksources: Some("kvm-clock tsc acpi_pm".into()),
                ..Inputs::default()
            }),
            Virtualized::Kvm
        );
        assert_eq!(
            v(Inputs {
                dmi_vendor: Some("QEMU".into()),
                ..Inputs::default()
            }),
            Virtualized::Qemu
        );
        assert_eq!(
            v(Inputs {
                cmdline: Some("console=ttyS0 virtio_mmio.device=4K@0xd0000000:5".into()),
                ..Inputs::default()
            }),
            Virtualized::Firecracker
        );
        assert_eq!(
            v(Inputs {
                cpu_hypervisor: Some(false),
                ..Inputs::default()
            }),
            Virtualized::None
        );
        assert_eq!(v(Inputs::default()), Virtualized::Unknown);
    }

    #[test]
    fn nothing_to_go_on_is_unknown_and_incomplete() {
        let b = decide(&Inputs::default());
        assert_eq!(b.kind, Kind::Unknown);
        // A machine's mount table alone: an ext4 root, Docker's netns binds
        // below its /run, its containers' roots. Nothing decides the kind.
        let table = Inputs {
            mountinfo: Some("28 0 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n27 28 0:24 / /run rw - tmpfs tmpfs rw\n510 27 0:3 net:[4026531993] /run/docker/netns/default rw shared:255 - nsfs nsfs rw\n450 28 0:51 / /var/lib/docker/overlay2/3a/merged rw - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/E6\n".into()),
            ..Inputs::default()
        };
        let b = decide(&table);
        assert_eq!(b.kind, Kind::Unknown, "{:?}", b.evidence);
        assert!(b.evidence.iter().all(|e| e.field != "kind"));
        let f = evaluate(&b);
        assert_eq!(f[0].code, "probe.incomplete");
        assert_eq!(f[0].evidence["probe"], "boundary");
    }

    #[test]
    fn pid1_program_is_evidence_and_an_engine_hint() {
        let i = Inputs {
            ns: ns(PRIVATE),
            pid1_program: Some("/usr/bin/catatonit".into()),
            ..Inputs::default()
        };
        let b = decide(&i);
        assert_eq!(b.engine, Engine::Podman);
        assert!(b.evidence.iter().any(|e| e.source == "/proc/1/cmdline"));
    }

    /// The machine's own root (ext4, field 4 "/") with namespaces of its
    /// own: a sandbox over it. Its /.dockerenv is the machine's.
    #[test]
    fn sandboxes_over_the_machine_root() {
        let mut own_user = ns(PRIVATE);
        own_user.insert("user".into(), 4026532600);
        let base = Inputs {
            ns: own_user,
            dockerenv: true,
            mountinfo: Some(
                "79 48 254:0 / / ro,nosuid,nodev,relatime - ext4 /dev/vda rw\n99 79 254:0 /var/lib/docker /var/lib/docker ro - ext4 /dev/vda rw\n".into(),
            ),
            uid_map: Some("         0          0          1\n".into()),
            ..Inputs::default()
        };
        let b = decide(&base);
        assert_eq!(b.kind, Kind::Container);
        assert_eq!((b.engine, b.runtime), (Engine::Unshare, Runtime::Unshare));
        assert!(b.machine_root);
        assert_eq!(b.initial_user_ns, Some(false));
        let bwrap = Inputs {
            pid1_program: Some("bwrap".into()),
            ..base.clone()
        };
        let b = decide(&bwrap);
        assert_eq!(
            (b.engine, b.runtime),
            (Engine::Bubblewrap, Runtime::Bubblewrap)
        );
        let firejail = Inputs {
            container_env: Some(("$container".into(), "firejail".into())),
            ..base.clone()
        };
        assert_eq!(decide(&firejail).engine, Engine::Firejail);
        // The same root under an engine that gives containers roots of
        // their own is not the machine's, and its /.dockerenv is Docker's.
        let docker = Inputs {
            cgroup: Some("0::/docker/abc\n".into()),
            ..base.clone()
        };
        let b = decide(&docker);
        assert!(!b.machine_root);
        assert_eq!(b.engine, Engine::Docker);
        // bwrap's own tmpfs root, pivoted into: bubblewrap without PID 1.
        let narrow = Inputs {
            mountinfo: Some("79 51 0:42 /newroot / rw - tmpfs tmpfs rw\n".into()),
            ..base.clone()
        };
        let b = decide(&narrow);
        assert_eq!(b.engine, Engine::Bubblewrap);
        assert!(!b.machine_root);
        // bwrap without --unshare-pid: the machine's PID namespace, a user
        // namespace of its own: a container all the same.
        let mut pid_host = ns(PRIVATE);
        pid_host.insert("pid".into(), 0xEFFF_FFFC);
        pid_host.insert("user".into(), 4026532600);
        let b = decide(&Inputs {
            ns: pid_host,
            kthreadd: Some(true),
            pid1_mnt: Some(4026531840),
            ..base.clone()
        });
        assert_eq!(b.kind, Kind::Container);
        // Ubuntu's btrfs root is the subvolume /@.
        let btrfs = Inputs {
            mountinfo: Some(
                "30 1 0:27 /@ / rw,relatime - btrfs /dev/nvme0n1p2 rw,ssd,subvolid=256,subvol=/@\n"
                    .into(),
            ),
            ..base
        };
        assert!(decide(&btrfs).machine_root);
    }

    #[test]
    fn pid1_environ_keeps_only_container() {
        let env = b"SECRET_TOKEN=ghp_x\0container=podman\0HOME=/root\0";
        assert_eq!(environ_value(env, "container").as_deref(), Some("podman"));
        assert_eq!(environ_value(env, "containerx"), None);
    }
}
