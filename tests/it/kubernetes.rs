//! The Kubernetes recipe (deploy/kubernetes; issue 23). No kubelet can run
//! on these machines, so the Pod runs under `podman kube play --network
//! none`, which supports initContainers, emptyDir and hostPath (not `kind:
//! Job`), and the Job is rendered by kubectl without a cluster (`kubectl
//! create job --dry-run=client`, through deploy/kubernetes/job.sh).
//!
//! - The Pod, as the recipe writes it (the workload image filled in with
//!   envsubst, as documented), exits 0 and its log is a JSON report: the
//!   workload container is a non-root user with every capability dropped,
//!   a read-only root, no privilege escalation and no service-account token,
//!   and the report shows each of those.
//! - The same Pod with a hostPath `/` mounted exits 1 with mount.host-root.
//! - `podman kube down` leaves no volume of theirs.
//! - job.yaml is what job.sh renders, and its pod spec is the Pod's.
//!
//! The probe's image is built by deploy/kubernetes/image.sh (FROM scratch,
//! only the binary) under a tag of this test's own; the workload image is
//! the busybox tree of tests/it/common/engines.rs, imported, with no
//! selfprobe in it. Each Pod's name and volume names are made unique in the
//! test's copy, so concurrent runs never share a volume.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::engines::image_tar;
use crate::common::podman::{
    missing_prerequisite, podman, run_bounded, skip_or_fail, unique, PodmanService, TempPath,
    MACHINE,
};
use crate::common::shipped;

fn recipe(f: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/kubernetes")
        .join(f)
}

fn tool(test: &str, t: &str, pkg: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {t}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip_or_fail(test, &format!("{t} not found ({pkg})"));
    }
    ok
}

fn envsubst(file: &Path, image: &str) -> String {
    envsubst_var(file, "WORKLOAD_IMAGE", image)
}

/// `envsubst '${VAR}'` of `file` with VAR set to `value`, as the recipes
/// tell users to fill them in.
fn envsubst_var(file: &Path, var: &str, value: &str) -> String {
    let mut c = Command::new("envsubst")
        .arg(format!("${{{var}}}"))
        .env(var, value)
        .stdin(std::fs::File::open(file).unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(c.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(c.wait().unwrap().success(), "envsubst");
    out
}

/// YAML to JSON with kubectl, locally (no cluster).
fn to_json(yaml: &str) -> Value {
    let mut c = Command::new("kubectl")
        .args([
            "patch",
            "--local",
            "-f",
            "-",
            "--type=merge",
            "-p",
            "{}",
            "-o",
            "json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(c.stdin.as_mut().unwrap(), yaml.as_bytes()).unwrap();
    drop(c.stdin.take());
    let out = c.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl patch --local: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// An image under a tag of the test's own, removed on drop.
struct Tagged(String);

impl Drop for Tagged {
    fn drop(&mut self) {
        let _ = podman().args(["rmi", "-f", &self.0]).output();
    }
}

fn probe_image() -> Tagged {
    let tag = format!("localhost/selfprobe-kube:{}", unique("t"));
    let out = Command::new("sh")
        .arg(recipe("image.sh"))
        .arg("podman")
        .env("SELFPROBE_BIN", shipped::bin())
        .env("SELFPROBE_HOST_BIN", shipped::host_bin())
        .env("SELFPROBE_IMAGE", &tag)
        .env("CONTAINERS_CONF", crate::common::podman::conf())
        .output()
        .unwrap();
    assert!(out.status.success(), "image.sh: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), tag);
    // FROM scratch with the two binaries alone, in one layer.
    let o = podman()
        .args([
            "image",
            "inspect",
            "--format",
            "{{len .RootFS.Layers}} {{.Config.User}}",
            &tag,
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "1 65532:65532");
    Tagged(tag)
}

fn workload_image() -> (Tagged, TempPath) {
    let dir = TempPath::dir("kube-wl").unwrap();
    let tar = image_tar(&dir.path).unwrap();
    let tag = format!("localhost/selfprobe-kube-workload:{}", unique("t"));
    let mut cmd = podman();
    cmd.arg("import").arg(&tar).arg(&tag);
    let out = run_bounded(cmd, Duration::from_secs(120), None).unwrap();
    assert_eq!(out.code, Some(0), "podman import: {}", out.stderr);
    (Tagged(tag), dir)
}

fn volumes() -> Vec<String> {
    let o = podman().args(["volume", "ls", "-q"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect()
}

/// The Pod's outcome: exit code, the workload's log (stdout), its stderr
/// and its engine record.
struct Played {
    code: i64,
    log: String,
    stderr: String,
    inspect: Value,
    volumes: Vec<String>,
}

/// `podman kube play --network none` of `pod` (JSON, which is YAML), waits
/// for the workload container, reads it, then `podman kube down`.
fn play(pod: &Value, dir: &Path) -> Played {
    play_container(pod, dir, "workload")
}

/// `play`, waiting for the container named `container`.
fn play_container(pod: &Value, dir: &Path, container: &str) -> Played {
    let name = pod["metadata"]["name"].as_str().unwrap().to_string();
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, serde_json::to_string_pretty(pod).unwrap()).unwrap();
    let mut cmd = podman();
    cmd.args(["kube", "play", "--network", "none"]).arg(&file);
    let out = run_bounded(cmd, Duration::from_secs(120), None).unwrap();
    let down = || {
        let mut cmd = podman();
        cmd.args(["kube", "down"]).arg(&file);
        let _ = run_bounded(cmd, Duration::from_secs(120), None);
    };
    if out.code != Some(0) {
        down();
        panic!("podman kube play: {}\n{}", out.stdout, out.stderr);
    }
    let ctr = format!("{name}-{container}");
    let deadline = Instant::now() + Duration::from_secs(90);
    let inspect = loop {
        let o = podman().args(["inspect", &ctr]).output().unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        if v[0]["State"]["Status"] == "exited" {
            break v[0].clone();
        }
        if Instant::now() > deadline {
            down();
            panic!("{ctr} did not exit within 90 s: {v}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let logs = podman().args(["logs", &ctr]).output().unwrap();
    let mut vols: Vec<String> = inspect["Mounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["Name"].as_str().map(String::from))
        .collect();
    vols.sort();
    down();
    Played {
        code: inspect["State"]["ExitCode"].as_i64().unwrap_or(-1),
        log: String::from_utf8_lossy(&logs.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&logs.stderr).into_owned(),
        inspect,
        volumes: vols,
    }
}

/// The recipe's Pod for this test: the probe image's tag, a unique pod
/// name and unique volume names.
fn pod_for(base: &Value, probe: &str, tag: &str) -> Value {
    let mut pod = base.clone();
    let name = unique(tag);
    pod["metadata"]["name"] = json!(name);
    let spec = &mut pod["spec"];
    spec["initContainers"][0]["image"] = json!(probe);
    let rename = |n: &str| format!("{name}-{n}");
    for v in spec["volumes"].as_array_mut().unwrap() {
        let n = rename(v["name"].as_str().unwrap());
        v["name"] = json!(n);
    }
    for kind in ["initContainers", "containers"] {
        for c in spec[kind].as_array_mut().unwrap() {
            for m in c["volumeMounts"].as_array_mut().unwrap() {
                let n = rename(m["name"].as_str().unwrap());
                m["name"] = json!(n);
            }
        }
    }
    pod
}

fn codes(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["code"].as_str().unwrap(), f["subject"]))
        .collect()
}

#[test]
fn kubernetes_pod_with_podman_kube_play() {
    let test = "kubernetes_pod_with_podman_kube_play";
    if let Some(why) = missing_prerequisite() {
        skip_or_fail(test, &why);
        return;
    }
    if !tool(
        test,
        "kubectl",
        "kubectl: /usr/bin/kubectl on these machines",
    ) || !tool(test, "envsubst", "apt-get install -y gettext-base")
    {
        return;
    }
    let probe = probe_image();
    let (workload, _tree) = workload_image();
    let dir = TempPath::dir("kube").unwrap();
    // The recipe as documented: envsubst fills the workload's image.
    let text = envsubst(&recipe("pod.yaml"), &workload.0);
    assert!(!text.contains("${WORKLOAD_IMAGE}"));
    let base = to_json(&text);
    assert_eq!(base["spec"]["containers"][0]["image"], workload.0.as_str());

    let clean_pod = pod_for(&base, &probe.0, "kube-clean");
    let mut root_pod = pod_for(&base, &probe.0, "kube-root");
    let root_vol = format!(
        "{}-host-root",
        root_pod["metadata"]["name"].as_str().unwrap()
    );
    root_pod["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": root_vol, "hostPath": {"path": "/", "type": "Directory"}}));
    root_pod["spec"]["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": root_vol, "mountPath": "/host", "readOnly": true}));

    let before = volumes();
    let (clean, root) = std::thread::scope(|s| {
        let a = s.spawn(|| play(&clean_pod, &dir.path));
        let b = s.spawn(|| play(&root_pod, &dir.path));
        (a.join().unwrap(), b.join().unwrap())
    });

    // The clean Pod: exit 0, a JSON report on stdout.
    let report: Value = serde_json::from_str(&clean.log).unwrap_or_else(|e| {
        panic!(
            "the log is a JSON report ({e}):\n{}\nstderr:\n{}",
            clean.log, clean.stderr
        )
    });
    let found = codes(&report);
    assert_eq!(clean.code, 0, "exit {}: {found:#?}", clean.code);
    assert_eq!(report["summary"]["exit_code"], 0);
    // The container is as the recipe says, by the engine's record …
    let hc = &clean.inspect["HostConfig"];
    assert_eq!(clean.inspect["Config"]["User"], "65532:65532");
    assert_eq!(hc["ReadonlyRootfs"], true);
    assert!(
        hc["SecurityOpt"].to_string().contains("no-new-privileges"),
        "{}",
        hc["SecurityOpt"]
    );
    assert!(
        !clean.inspect["Mounts"]
            .to_string()
            .contains("serviceaccount"),
        "no service-account token is mounted: {}",
        clean.inspect["Mounts"]
    );
    // … and by the probe's own view.
    for absent in [
        "priv.capability",
        "priv.root-without-userns",
        "priv.no-new-privs-unset",
        "write.rootfs",
        "secret.file",
        "secret.token-long-lived",
        "mount.host-root",
        "engine.socket-reachable",
        "probe.incomplete",
    ] {
        assert!(
            !found.iter().any(|c| c.starts_with(&format!("{absent} "))),
            "{absent} in a Pod as the recipe writes it: {found:#?}"
        );
    }
    let pr = &report["inventory"]["privilege"];
    assert_eq!(pr["uid"][1], 65532, "a non-root user: {pr}");
    for set in ["permitted", "effective", "bounding", "ambient"] {
        assert_eq!(pr["caps"][set], 0, "every capability dropped ({set}): {pr}");
    }
    assert_eq!(pr["no_new_privs"], true, "no privilege escalation: {pr}");
    assert_eq!(pr["seccomp"], 2, "the runtime's seccomp filter: {pr}");

    // With the host's root mounted: exit 1, mount.host-root.
    let rep: Value = serde_json::from_str(&root.log).unwrap_or_else(|e| {
        panic!(
            "hostPath run: not JSON ({e}): {}\n{}",
            root.log, root.stderr
        )
    });
    let found = codes(&rep);
    assert_eq!(root.code, 1, "{found:#?}");
    assert!(
        found.iter().any(|c| c == "mount.host-root \"/host\""),
        "{found:#?}"
    );

    // kube down left none of their volumes.
    let after = volumes();
    for p in [&clean, &root] {
        assert!(
            !p.volumes.is_empty(),
            "the emptyDir is a volume under podman"
        );
        for v in &p.volumes {
            assert!(!after.contains(v), "podman kube down left the volume {v}");
        }
    }
    let new: Vec<&String> = after
        .iter()
        .filter(|v| !before.contains(v) && v.contains("selfprobe-test-kube"))
        .collect();
    assert!(new.is_empty(), "volumes left: {new:?}");
}

#[test]
fn kubernetes_job_renders_with_kubectl_and_runs_the_pod_spec() {
    let test = "kubernetes_job_renders_with_kubectl_and_runs_the_pod_spec";
    if !tool(
        test,
        "kubectl",
        "kubectl: /usr/bin/kubectl on these machines",
    ) || !tool(test, "envsubst", "apt-get install -y gettext-base")
    {
        return;
    }
    // job.sh with the placeholder kept renders job.yaml byte for byte.
    let out = Command::new("sh")
        .arg(recipe("job.sh"))
        .env("WORKLOAD_IMAGE", "${WORKLOAD_IMAGE}")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "job.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = std::fs::read(recipe("job.yaml")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&committed),
        "deploy/kubernetes/job.yaml is job.sh's output (regenerate it: WORKLOAD_IMAGE='${{WORKLOAD_IMAGE}}' deploy/kubernetes/job.sh > deploy/kubernetes/job.yaml)"
    );
    // Filled in, the Job's pod spec is the Pod's.
    let image = "registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let job = to_json(&envsubst(&recipe("job.yaml"), image));
    let pod = to_json(&envsubst(&recipe("pod.yaml"), image));
    assert_eq!(
        (job["apiVersion"].as_str(), job["kind"].as_str()),
        (Some("batch/v1"), Some("Job"))
    );
    assert_eq!(
        job["spec"]["backoffLimit"], 0,
        "a failed check is not retried"
    );
    assert_eq!(job["spec"]["template"]["spec"], pod["spec"]);
    assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
    let sc = &pod["spec"]["containers"][0]["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
}

// ---------------------------------------------------------------------------
// The Agent Sandbox SandboxTemplate (deploy/kubernetes/sandbox-template.yaml,
// issue 31). No controller can run here: the template is checked against the
// project's own CRD (its OpenAPI schema, as the API server's strict field
// validation checks it), and its pod template is run as the controller makes
// the Pod, under `podman kube play --network none`.

/// The SandboxTemplate CRD of kubernetes-sigs/agent-sandbox (its v1beta1
/// version, descriptions dropped; tests/data/captures/agent-sandbox/SOURCE).
const SANDBOX_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/captures/agent-sandbox/sandboxtemplates.v1beta1.json"
);

/// The template as documented: envsubst fills the agent's image.
fn sandbox_template(image: &str) -> Value {
    let text = envsubst_var(&recipe("sandbox-template.yaml"), "AGENT_IMAGE", image);
    assert!(!text.contains("${AGENT_IMAGE}"));
    to_json(&text)
}

/// `v` against the OpenAPI v3 schema `s` as the API server checks a custom
/// resource with strict field validation: a field the schema does not name
/// (unless it keeps unknown fields), a wrong type, a value outside an enum,
/// a required field missing. Each error names its path.
fn check_schema(v: &Value, s: &Value, path: &str, errs: &mut Vec<String>) {
    if s["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    if s["x-kubernetes-int-or-string"] == true {
        if !(v.is_i64() || v.is_u64() || v.is_string()) {
            errs.push(format!("{path}: expected an integer or a string, got {v}"));
        }
        return;
    }
    if let Some(allowed) = s["enum"].as_array() {
        if !allowed.contains(v) {
            errs.push(format!("{path}: {v} is not one of {allowed:?}"));
        }
    }
    match s["type"].as_str() {
        Some("object") => {
            let Some(obj) = v.as_object() else {
                errs.push(format!("{path}: expected an object, got {v}"));
                return;
            };
            for r in s["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or_default();
                if !obj.contains_key(r) {
                    errs.push(format!("{path}: missing required field {r}"));
                }
            }
            let props = s["properties"].as_object();
            let extra = &s["additionalProperties"];
            for (k, val) in obj {
                let at = format!("{path}.{k}");
                match props.and_then(|p| p.get(k)) {
                    Some(ps) => check_schema(val, ps, &at, errs),
                    None if extra.is_object() => check_schema(val, extra, &at, errs),
                    // An object schema that names no fields takes any.
                    None if props.is_none() && extra.is_null() => {}
                    None => errs.push(format!("{at}: unknown field")),
                }
            }
        }
        Some("array") => match v.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    check_schema(item, &s["items"], &format!("{path}[{i}]"), errs);
                }
            }
            None => errs.push(format!("{path}: expected an array, got {v}")),
        },
        Some("string") if !v.is_string() => {
            errs.push(format!("{path}: expected a string, got {v}"))
        }
        Some("integer") if !(v.is_i64() || v.is_u64()) => {
            errs.push(format!("{path}: expected an integer, got {v}"))
        }
        Some("boolean") if !v.is_boolean() => {
            errs.push(format!("{path}: expected a boolean, got {v}"))
        }
        _ => {}
    }
}

fn template_errors(t: &Value, crd: &Value) -> Vec<String> {
    let version = &crd["spec"]["versions"][0];
    let mut errs = Vec::new();
    let want = format!(
        "{}/{}",
        crd["spec"]["group"].as_str().unwrap(),
        version["name"].as_str().unwrap()
    );
    if t["apiVersion"] != want.as_str() {
        errs.push(format!("apiVersion {} (want {want})", t["apiVersion"]));
    }
    if t["kind"] != crd["spec"]["names"]["kind"] {
        errs.push(format!("kind {}", t["kind"]));
    }
    check_schema(t, &version["schema"]["openAPIV3Schema"], "", &mut errs);
    errs
}

#[test]
fn sandbox_template_is_a_valid_agent_sandbox_resource_that_starts_the_agent_through_the_gate() {
    let test =
        "sandbox_template_is_a_valid_agent_sandbox_resource_that_starts_the_agent_through_the_gate";
    if !tool(
        test,
        "kubectl",
        "kubectl: /usr/bin/kubectl on these machines",
    ) || !tool(test, "envsubst", "apt-get install -y gettext-base")
    {
        return;
    }
    let crd: Value = serde_json::from_str(&std::fs::read_to_string(SANDBOX_CRD).unwrap()).unwrap();
    let version = &crd["spec"]["versions"][0];
    assert_eq!(
        (version["name"].as_str(), version["served"].as_bool()),
        (Some("v1beta1"), Some(true))
    );
    let t = sandbox_template("registry.example.com/team/agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    assert_eq!(template_errors(&t, &crd), Vec::<String>::new());

    // The check can fail: a misspelt field, a wrong type, a value outside
    // an enum, a required field missing are each caught.
    let mut bad = t.clone();
    let pt = bad["spec"]
        .as_object_mut()
        .unwrap()
        .remove("podTemplate")
        .unwrap();
    bad["spec"]["podTemplates"] = pt;
    bad["spec"]["networkPolicyManagement"] = json!("Sometimes");
    bad["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] = json!("ReadWriteOnce");
    let errs = template_errors(&bad, &crd);
    for want in [
        ".spec: missing required field podTemplate",
        ".spec.podTemplates: unknown field",
        ".spec.networkPolicyManagement: \"Sometimes\" is not one of",
        ".spec.volumeClaimTemplates[0].spec.accessModes: expected an array",
    ] {
        assert!(
            errs.iter().any(|e| e.starts_with(want)),
            "{want}: {errs:#?}"
        );
    }
    let mut bad = t.clone();
    bad["spec"]["podTemplate"]["spec"]["containers"][0]["comand"] = json!(["x"]);
    assert_eq!(
        template_errors(&bad, &crd),
        vec![".spec.podTemplate.spec.containers[0].comand: unknown field".to_string()]
    );

    // The agent's container: the gate as its command, ending in `--`, the
    // agent's own command as its args; the probe installed by the
    // initContainer, read-only in the agent's container.
    let spec = &t["spec"]["podTemplate"]["spec"];
    let agent = &spec["containers"][0];
    let cmd: Vec<&str> = agent["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(cmd.first(), Some(&"/opt/selfprobe/selfprobe"));
    assert_eq!(cmd.last(), Some(&"--"));
    assert!(
        cmd.windows(2).any(|w| w == ["--fail-on", "high"]),
        "{cmd:?}"
    );
    assert!(!agent["args"].as_array().unwrap().is_empty());
    assert_eq!(
        spec["initContainers"][0]["command"],
        json!(["/selfprobe", "install", "/opt/selfprobe"])
    );
    assert_eq!(spec["automountServiceAccountToken"], false);
}

/// The Pod the agent-sandbox controller makes of the template
/// (controllers/sandbox_controller.go): its podTemplate's spec as written,
/// its labels, and a volume per volumeClaimTemplate named after it, bound to
/// the claim `<template name>-<sandbox name>` (the Pod is named after the
/// Sandbox).
fn sandbox_pod(t: &Value, sandbox: &str) -> Value {
    let bp = &t["spec"];
    let mut spec = bp["podTemplate"]["spec"].clone();
    for vct in bp["volumeClaimTemplates"].as_array().into_iter().flatten() {
        let n = vct["metadata"]["name"].as_str().unwrap();
        spec["volumes"].as_array_mut().unwrap().push(
            json!({"name": n, "persistentVolumeClaim": {"claimName": format!("{n}-{sandbox}")}}),
        );
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": sandbox, "labels": bp["podTemplate"]["metadata"]["labels"]},
        "spec": spec,
    })
}

/// The gate's stderr in the log: what came before the JSON report (the
/// ephemeral key's warning), the report, and what came after it.
fn report_in_log(stderr: &str) -> (&str, Value, &str) {
    let at = stderr
        .find("{\n")
        .unwrap_or_else(|| panic!("no JSON report in the log:\n{stderr}"));
    let mut stream = serde_json::Deserializer::from_str(&stderr[at..]).into_iter::<Value>();
    let report = stream
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON report in the log:\n{stderr}"));
    (&stderr[..at], report, &stderr[at + stream.byte_offset()..])
}

/// The agent's stand-in: says it ran, as which PID, whether the key
/// reached it, and how long the attestation the gate wrote is.
const AGENT: &str = "echo AGENT-RAN pid $$ key ${SELFPROBE_SIGNING_KEY:-unset}; wc -c < /var/run/selfprobe/selfprobe.intoto.json";

#[test]
fn sandbox_template_pod_runs_the_agent_through_the_gate_under_podman_kube_play() {
    let test = "sandbox_template_pod_runs_the_agent_through_the_gate_under_podman_kube_play";
    if let Some(why) = missing_prerequisite() {
        skip_or_fail(test, &why);
        return;
    }
    if !tool(
        test,
        "kubectl",
        "kubectl: /usr/bin/kubectl on these machines",
    ) || !tool(test, "envsubst", "apt-get install -y gettext-base")
    {
        return;
    }
    let probe = probe_image();
    let (workload, _tree) = workload_image();
    let dir = TempPath::dir("sandbox").unwrap();
    let t = sandbox_template(&workload.0);
    // As the controller would make it, then: the test's probe image, unique
    // names, the stand-in as the agent, and restartPolicy Never (the
    // template leaves Kubernetes' default, Always, under which kube play
    // would start the container again).
    let pod = |tag: &str| {
        let mut p = pod_for(&sandbox_pod(&t, "sandbox"), &probe.0, tag);
        let name = p["metadata"]["name"].as_str().unwrap().to_string();
        for v in p["spec"]["volumes"].as_array_mut().unwrap() {
            if v["persistentVolumeClaim"].is_object() {
                v["persistentVolumeClaim"]["claimName"] = json!(format!("workspace-{name}"));
            }
        }
        p["spec"]["restartPolicy"] = json!("Never");
        p["spec"]["containers"][0]["args"] = json!(["/bin/sh", "-c", AGENT]);
        p
    };
    let claims = |p: &Value| format!("workspace-{}", p["metadata"]["name"].as_str().unwrap());
    struct Claims(Vec<String>);
    impl Drop for Claims {
        fn drop(&mut self) {
            for c in &self.0 {
                let _ = podman().args(["volume", "rm", "-f", c]).output();
            }
        }
    }
    let clean_pod = pod("sandbox-clean");
    let mut sock_pod = pod("sandbox-sock");
    let _claims = Claims(vec![claims(&clean_pod), claims(&sock_pod)]);

    // Clean: the agent runs, after the report and the gate's one line.
    let clean = play_container(&clean_pod, &dir.path, "agent");
    assert_eq!(clean.code, 0, "{}\n{}", clean.log, clean.stderr);
    let ran: Vec<&str> = clean.log.lines().collect();
    assert_eq!(
        ran.first(),
        Some(&"AGENT-RAN pid 1 key unset"),
        "{}",
        clean.log
    );
    let attest_bytes: u64 = ran.get(1).and_then(|l| l.trim().parse().ok()).unwrap_or(0);
    assert!(attest_bytes > 100, "the attestation file: {}", clean.log);
    let (before, report, after) = report_in_log(&clean.stderr);
    assert_eq!(report["summary"]["exit_code"], 0, "{}", report["findings"]);
    assert!(
        before.starts_with("selfprobe: signing with an ephemeral key"),
        "no Secret, so an ephemeral key: {before}"
    );
    let after: Vec<&str> = after.trim().lines().collect();
    let last = after.last().copied().unwrap_or_default();
    assert!(
        last.starts_with("selfprobe: nothing at or above --fail-on high")
            && last.ends_with("; report: above, on standard error; attestation: /var/run/selfprobe/selfprobe.intoto.json; starting /bin/sh"),
        "{last}"
    );

    // The engine's socket as a hostPath: refused, the agent never runs.
    let _alone = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    let svc = PodmanService::start();
    std::fs::set_permissions(
        &svc.sock.path,
        std::os::unix::fs::PermissionsExt::from_mode(0o666),
    )
    .unwrap();
    let vol = format!(
        "{}-engine-socket",
        sock_pod["metadata"]["name"].as_str().unwrap()
    );
    sock_pod["spec"]["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": vol, "hostPath": {"path": svc.sock.arg(), "type": "Socket"}}));
    sock_pod["spec"]["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": vol, "mountPath": "/var/run/docker.sock"}));
    let sock = play_container(&sock_pod, &dir.path, "agent");
    drop(svc);
    // kube down left none of the Pods' volumes but the claims, which
    // outlive a Pod as a PersistentVolumeClaim does (removed here).
    drop(_claims);
    let names =
        [&clean_pod, &sock_pod].map(|p| p["metadata"]["name"].as_str().unwrap().to_string());
    let left: Vec<String> = volumes()
        .into_iter()
        .filter(|v| names.iter().any(|n| v.contains(n.as_str())))
        .collect();
    assert!(left.is_empty(), "volumes left: {left:?}");
    assert_eq!(sock.code, 1, "{}\n{}", sock.log, sock.stderr);
    assert!(
        !sock.log.contains("AGENT-RAN"),
        "the agent ran: {}",
        sock.log
    );
    let (_, report, reason) = report_in_log(&sock.stderr);
    assert!(
        codes(&report).contains(&"engine.socket-reachable \"/var/run/docker.sock\"".to_string()),
        "{:#?}",
        codes(&report)
    );
    assert!(
        reason.contains("selfprobe: refused to start /bin/sh: ")
            && reason.contains("  CRITICAL engine.socket-reachable /var/run/docker.sock")
            && reason.contains("/bin/sh was not started (exit 1)"),
        "{reason}"
    );
}
