//! The floor set by docker-bench-security's section 5 ("container runtime",
//! CIS Docker Benchmark 1.6), which reads only the engine's record: each of
//! its checks, decided from the same record the way its
//! tests/5_container_runtime.sh decides it (our own code, written from
//! reading that script), beside the inside report's findings that say
//! whether the workspace actually feels it. docs/inspect.md maps the checks
//! one by one.

use serde::Serialize;
use serde_json::Value;

use super::crosscheck::engine_socket;
use super::record::{normalize_cap, MountKind, Record, DOCKER_DEFAULT_CAPS};

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    /// docker-bench-security would warn (or, for its informational checks,
    /// note) this container.
    pub warn: bool,
    /// What in the record decided it.
    pub detail: String,
    /// The inside report's findings that show the same thing ("code subject").
    pub inside: Vec<String>,
    /// Whether the workspace feels it: a matching inside finding was seen.
    /// None when the check passed, the inside cannot see it (limits, restart
    /// policy, ports) or there is no report.
    pub felt: Option<bool>,
}

/// The directories check 5.6 calls sensitive.
const SENSITIVE: [&str; 8] = [
    "/", "/boot", "/dev", "/etc", "/lib", "/proc", "/sys", "/usr",
];

fn findings(report: Option<&Value>) -> Vec<(String, String)> {
    report
        .and_then(|r| r.get("findings"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f.get("code")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                f.get("subject")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

/// Section 5 for one container. `outside` are the inspection's own
/// findings for it (the limits only the outside knows).
pub fn section5(
    rec: &Record,
    report: Option<&Value>,
    outside: &[selfprobe::finding::Finding],
) -> Vec<Check> {
    let inside = findings(report);
    let mut out = Vec::new();
    let mut check = |id: &'static str,
                     title: &'static str,
                     warn: bool,
                     detail: String,
                     matches: &dyn Fn(&str, &str) -> bool,
                     seen_inside: bool| {
        let hits: Vec<String> = inside
            .iter()
            .filter(|(c, s)| matches(c, s))
            .map(|(c, s)| format!("{c} {s}"))
            .chain(
                outside
                    .iter()
                    .filter(|f| matches(&f.code, &f.subject))
                    .map(|f| format!("{} {}", f.code, f.subject)),
            )
            .collect();
        let felt = (warn && seen_inside && report.is_some())
            .then(|| hits.iter().any(|h| !h.starts_with("outside.")));
        out.push(Check {
            id,
            title,
            warn,
            detail,
            inside: hits,
            felt,
        });
    };
    let code_is = |want: &'static str| move |c: &str, _: &str| c == want;

    check(
        "5.2",
        "an AppArmor profile is enabled",
        rec.apparmor_profile.is_empty() || rec.apparmor_profile == "unconfined",
        format!("AppArmorProfile={:?}", rec.apparmor_profile),
        &code_is("priv.no-lsm"),
        true,
    );
    check(
        "5.3",
        "SELinux security options are set",
        rec.security_opt.is_empty(),
        format!("SecurityOpt={:?}", rec.security_opt),
        &code_is("priv.no-lsm"),
        true,
    );
    let added: Vec<String> = rec
        .cap_add
        .iter()
        .map(|c| normalize_cap(c))
        .filter(|c| !DOCKER_DEFAULT_CAPS.contains(&c.as_str()))
        .collect();
    let added2 = added.clone();
    check(
        "5.4",
        "Linux kernel capabilities are restricted",
        !added.is_empty(),
        format!(
            "capabilities added: {}",
            if added.is_empty() {
                "none".into()
            } else {
                added.join(", ")
            }
        ),
        &move |c: &str, s: &str| {
            c == "priv.capability"
                && (added2.iter().any(|a| a == s) || added2.iter().any(|a| a == "ALL"))
        },
        true,
    );
    check(
        "5.5",
        "privileged containers are not used",
        rec.privileged,
        format!("Privileged={}", rec.privileged),
        &code_is("priv.privileged"),
        true,
    );
    let sensitive: Vec<String> = rec
        .mounts
        .iter()
        .filter(|m| m.rw && m.kind != MountKind::Tmpfs)
        .filter(|m| {
            SENSITIVE.contains(&m.source.as_str()) || SENSITIVE.contains(&m.destination.as_str())
        })
        .map(|m| m.destination.clone())
        .collect();
    let dests = sensitive.clone();
    check(
        "5.6",
        "sensitive host system directories are not mounted",
        !sensitive.is_empty(),
        format!(
            "read-write mounts of sensitive directories at: {}",
            if sensitive.is_empty() {
                "none".into()
            } else {
                sensitive.join(", ")
            }
        ),
        &move |c: &str, s: &str| {
            dests
                .iter()
                .any(|d| s == d || s.starts_with(&format!("{d}/")))
                && (c.starts_with("mount.") || c.starts_with("write."))
        },
        true,
    );
    let ports: Vec<String> = rec
        .ports
        .iter()
        .map(|(p, ip, hp)| format!("{ip}:{hp}->{p}"))
        .collect();
    let low: Vec<&String> = rec
        .ports
        .iter()
        .filter(|(_, _, hp)| hp.parse::<u32>().is_ok_and(|n| n > 0 && n < 1025))
        .map(|(p, _, _)| p)
        .collect();
    check(
        "5.8",
        "privileged ports are not mapped",
        !low.is_empty(),
        format!(
            "published: {}",
            if ports.is_empty() {
                "none".into()
            } else {
                ports.join(", ")
            }
        ),
        &|_, _| false,
        false,
    );
    check(
        "5.10",
        "the host's network namespace is not shared",
        rec.shares_host("net"),
        format!(
            "NetworkMode={:?}",
            rec.namespaces.get("net").cloned().unwrap_or_default()
        ),
        &code_is("ns.host-network"),
        true,
    );
    check(
        "5.11",
        "memory usage is limited",
        rec.memory_limit.is_none(),
        format!("Memory={}", rec.memory_limit.unwrap_or(0)),
        &code_is("outside.memory-unlimited"),
        false,
    );
    check(
        "5.12",
        "CPU priority is set",
        rec.cpu_shares == 0 && rec.nano_cpus == 0,
        format!("CpuShares={} NanoCpus={}", rec.cpu_shares, rec.nano_cpus),
        &|_, _| false,
        false,
    );
    check(
        "5.13",
        "the root filesystem is mounted read-only",
        !rec.read_only_root,
        format!("ReadonlyRootfs={}", rec.read_only_root),
        &code_is("write.rootfs"),
        true,
    );
    let wildcard: Vec<&String> = ports
        .iter()
        .filter(|p| p.starts_with("0.0.0.0:") || p.starts_with(':'))
        .collect();
    check(
        "5.14",
        "incoming traffic is bound to a specific host interface",
        !wildcard.is_empty(),
        format!("published on every interface: {}", wildcard.len()),
        &|_, _| false,
        false,
    );
    check(
        "5.15",
        "the on-failure restart policy is at most 5",
        rec.restart_max_retries > 5,
        format!(
            "RestartPolicy={} MaximumRetryCount={}",
            rec.restart_policy, rec.restart_max_retries
        ),
        &|_, _| false,
        false,
    );
    check(
        "5.16",
        "the host's PID namespace is not shared",
        rec.shares_host("pid"),
        format!(
            "PidMode={:?}",
            rec.namespaces.get("pid").cloned().unwrap_or_default()
        ),
        &code_is("ns.host-pid"),
        true,
    );
    check(
        "5.17",
        "the host's IPC namespace is not shared",
        rec.shares_host("ipc"),
        format!(
            "IpcMode={:?}",
            rec.namespaces.get("ipc").cloned().unwrap_or_default()
        ),
        &code_is("ns.host-ipc"),
        true,
    );
    let devs: Vec<String> = rec.devices.iter().map(|d| d.container.clone()).collect();
    let devs2 = devs.clone();
    check(
        "5.18",
        "host devices are not exposed directly",
        !devs.is_empty(),
        format!(
            "Devices: {}",
            if devs.is_empty() {
                "none".into()
            } else {
                devs.join(", ")
            }
        ),
        &move |c: &str, s: &str| c.starts_with("device.") && devs2.iter().any(|d| d == s),
        true,
    );
    check(
        "5.19",
        "the default ulimit is overwritten where needed",
        rec.ulimits.is_empty(),
        format!(
            "Ulimits: {}",
            if rec.ulimits.is_empty() {
                "none".into()
            } else {
                rec.ulimits.join(", ")
            }
        ),
        &|_, _| false,
        false,
    );
    let shared: Vec<String> = rec
        .mounts
        .iter()
        .filter(|m| m.propagation.contains("shared"))
        .map(|m| m.destination.clone())
        .collect();
    check(
        "5.20",
        "mount propagation is not shared",
        !shared.is_empty(),
        format!(
            "shared propagation: {}",
            if shared.is_empty() {
                "none".into()
            } else {
                shared.join(", ")
            }
        ),
        &|_, _| false,
        false,
    );
    check(
        "5.21",
        "the host's UTS namespace is not shared",
        rec.shares_host("uts"),
        format!(
            "UTSMode={:?}",
            rec.namespaces.get("uts").cloned().unwrap_or_default()
        ),
        &code_is("ns.host-uts"),
        true,
    );
    check(
        "5.22",
        "the default seccomp profile is not disabled",
        rec.seccomp == "unconfined",
        format!("seccomp {}", rec.seccomp),
        &code_is("priv.seccomp-disabled"),
        true,
    );
    check(
        "5.25",
        "cgroup usage is confirmed",
        !rec.cgroup_parent.is_empty(),
        format!("CgroupParent={:?}", rec.cgroup_parent),
        &|_, _| false,
        false,
    );
    check(
        "5.26",
        "the container cannot acquire additional privileges",
        !rec.no_new_privileges,
        format!(
            "no-new-privileges {}",
            if rec.no_new_privileges {
                "set"
            } else {
                "not set"
            }
        ),
        &code_is("priv.no-new-privs-unset"),
        true,
    );
    check(
        "5.27",
        "container health is checked",
        !rec.healthcheck,
        format!(
            "health check {}",
            if rec.healthcheck { "set" } else { "not set" }
        ),
        &|_, _| false,
        false,
    );
    check(
        "5.28",
        "commands use a pinned version of their image",
        true,
        format!(
            "image {} (digest {})",
            rec.image,
            rec.image_digest.as_deref().unwrap_or("not known")
        ),
        &code_is("repro.image-unpinned"),
        true,
    );
    check(
        "5.29",
        "the PIDs cgroup limit is used",
        rec.pids_limit.is_none(),
        format!("PidsLimit={}", rec.pids_limit.unwrap_or(0)),
        &code_is("outside.pids-unlimited"),
        false,
    );
    let net = rec.namespaces.get("net").cloned().unwrap_or_default();
    check(
        "5.30",
        "Docker's default bridge docker0 is not used",
        net == "bridge" || net == "default",
        format!("NetworkMode={net:?}"),
        &|_, _| false,
        false,
    );
    let userns = rec.namespaces.get("user").cloned().unwrap_or_default();
    check(
        "5.31",
        "the host's user namespace is not shared",
        userns.to_ascii_lowercase().contains("host"),
        format!("UsernsMode={userns:?}"),
        &code_is("priv.root-without-userns"),
        true,
    );
    let socks: Vec<String> = rec
        .mounts
        .iter()
        .filter(|m| {
            m.kind == MountKind::Bind
                && (m.source.contains("docker.sock") || engine_socket(&m.source).is_some())
        })
        .map(|m| m.destination.clone())
        .collect();
    let socks2 = socks.clone();
    check(
        "5.32",
        "the Docker socket is not mounted inside",
        !socks.is_empty(),
        format!(
            "engine sockets bound at: {}",
            if socks.is_empty() {
                "none".into()
            } else {
                socks.join(", ")
            }
        ),
        &move |c: &str, s: &str| {
            matches!(
                c,
                "engine.socket-reachable" | "engine.socket-present" | "mount.socket"
            ) && socks2.iter().any(|d| s == d)
        },
        true,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(name: &str) -> Record {
        crate::outside::record::fixture(name)
    }

    fn get<'a>(c: &'a [Check], id: &str) -> &'a Check {
        c.iter().find(|c| c.id == id).unwrap()
    }

    #[test]
    fn the_b_container_warns_on_capabilities_pid_and_the_socket_and_feels_them() {
        let r = rec("docker-b");
        let rep = json!({"findings": [
            {"code": "priv.capability", "subject": "CAP_SYS_ADMIN"},
            {"code": "ns.host-pid", "subject": "pid"},
            {"code": "engine.socket-reachable", "subject": "/var/run/docker.sock"}]});
        let c = section5(&r, Some(&rep), &[]);
        for id in ["5.4", "5.16", "5.32"] {
            let k = get(&c, id);
            assert!(k.warn && k.felt == Some(true), "{k:?}");
        }
        assert!(!get(&c, "5.5").warn);
        assert!(get(&c, "5.11").warn && get(&c, "5.11").felt.is_none());
        let k = get(&c, "5.13");
        assert!(
            k.warn && k.felt == Some(false),
            "no write.rootfs in this report"
        );
    }

    #[test]
    fn limits_and_options_decide_their_checks() {
        let r = rec("docker-volumes");
        let c = section5(&r, None, &[]);
        assert!(!get(&c, "5.11").warn && !get(&c, "5.29").warn && !get(&c, "5.13").warn);
        assert!(get(&c, "5.17").warn && get(&c, "5.21").warn && get(&c, "5.18").warn);
        assert!(!get(&c, "5.26").warn && !get(&c, "5.15").warn);
        let p = rec("docker-privileged");
        let c = section5(&p, None, &[]);
        assert!(get(&c, "5.5").warn && get(&c, "5.22").warn && get(&c, "5.10").warn);
    }
}
