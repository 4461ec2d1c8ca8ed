//! `selfprobe-host inspect` against hostile workspaces (issue 21): what comes
//! back from a container is untrusted. Each hostile container swaps the
//! probe inspect places for a stand-in of its own (a loop watching `/` for
//! `.selfprobe-*` moves the placed binary aside and puts a shell script in
//! its place, as a workspace can: issue 28), whose behaviour the
//! container's HOSTILE variable picks: it hangs, floods 1 GiB, prints JSON
//! that is not a report, dies mid-run, changes its report after signing,
//! answers another nonce, runs another binary, or runs the real one as
//! another user so that it lies about its capabilities. Each is reported as
//! not probed, not verified or not clean with the reason, inside the
//! container's --timeout, with the host's memory bounded, while a container
//! in the same call with the real probe bind-mounted is verified as usual.
//! An engine CLI that hangs is bounded the same way.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::engines::docker_image;
use crate::common::inspect::*;
use crate::common::podman::{run_bounded, TempPath};
use crate::common::shipped;

/// The workspace's watcher: every `/.selfprobe-*` inspect places is moved
/// aside (to `….real`) and the stand-in put in its place.
const WATCH: &str = r#"#!/bin/sh
while :; do
  for f in /.selfprobe-*; do
    case "$f" in *'*'*|*.policy.toml|*.real) continue ;; esac
    [ -e "$f.real" ] && continue
    mv "$f" "$f.real" && cp /opt/hostile/standin "$f" && chmod 755 "$f"
  done
  usleep 1000
done
"#;

const STANDIN: &str = r#"#!/bin/sh
# A hostile stand-in for selfprobe: $HOSTILE (the container's variable)
# picks the lie; "$0.real" is the probe inspect placed, /opt/other another
# selfprobe binary.
real="$0.real"
if [ "$1" = "canary" ]; then exec "$real" "$@"; fi
echo "$HOSTILE" > /tmp/standin-ran
case "$HOSTILE" in
hang) exec sleep 1000 ;;
flood) exec head -c 1073741824 /dev/zero ;;
notreport) echo '{"hello": "not a report"}'; exit 0 ;;
midrun) "$real" "$@" | head -c 5000; exit 1 ;;
tamper) "$real" "$@" | sed 's/"schema_version": 1,/"schema_version": 1, "tampered": true,/'; exit 0 ;;
nonce)
  first=1
  for a in "$@"; do
    if [ $first = 1 ]; then set --; first=0; fi
    if [ "$prev" = "--nonce" ]; then a=0000replayed0000; fi
    set -- "$@" "$a"; prev=$a
  done
  exec "$real" "$@" ;;
lie) exec start-stop-daemon -S -c dev:dev -x "$real" -- "$@" ;;
subst) exec /opt/other "$@" ;;
*) exec "$real" "$@" ;;
esac
"#;

#[test]
fn hostile_probes_are_not_probed_or_not_verified_and_the_others_are_unaffected() {
    const T: &str = "hostile_probes_are_not_probed_or_not_verified_and_the_others_are_unaffected";
    let Some(img) = docker_image(T) else {
        return;
    };
    let tmp = TempPath::dir("hostile").unwrap();
    std::fs::set_permissions(&tmp.path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let key = key(&tmp.path);
    let hostile = tmp.path.join("hostile");
    std::fs::create_dir(&hostile).unwrap();
    for (name, text) in [("watch", WATCH), ("standin", STANDIN)] {
        std::fs::write(hostile.join(name), text).unwrap();
        std::fs::set_permissions(hostile.join(name), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    // Another selfprobe binary: the shipped one with bytes after its end
    // (it still runs; its SHA-256 is not the inspector's).
    let other = tmp.path.join("other");
    let mut bytes = std::fs::read(shipped::bin()).unwrap();
    bytes.extend_from_slice(b"\nanother build\n");
    std::fs::write(&other, bytes).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hdir = format!("{}:/opt/hostile:ro", hostile.display());
    let otherv = format!("{}:/opt/other:ro", other.display());
    let mounted = format!("{}:/usr/local/bin/selfprobe:ro", shipped::bin_str());
    let cases = [
        "good",
        "hang",
        "flood",
        "notreport",
        "midrun",
        "tamper",
        "nonce",
        "lie",
        "subst",
    ];
    let ctrs: Vec<(Ctr, &str)> = std::thread::scope(|s| {
        let hs: Vec<_> = cases
            .iter()
            .map(|case| {
                let (hdir, otherv, mounted) = (&hdir, &otherv, &mounted);
                s.spawn(move || {
                    let env = format!("HOSTILE={case}");
                    let mut f = vec!["--network", "none", "-e", &env];
                    let cmd: &[&str] = if *case == "good" {
                        // The inspector's own binary, bind-mounted as the
                        // instruction says: run as it is.
                        f.extend(["-v", mounted.as_str()]);
                        &["/bin/sleep", "600"]
                    } else {
                        f.extend(["-v", hdir.as_str(), "-v", otherv.as_str()]);
                        &["/bin/sh", "/opt/hostile/watch"]
                    };
                    (Ctr::start(Eng::Docker, None, case, &f, img, cmd), *case)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let out = tmp.path.join("out");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args([
        "inspect",
        "--engine",
        "docker",
        "--timeout",
        "10s",
        "--sign-key",
    ])
    .arg(&key)
    .arg("--out-dir")
    .arg(&out)
    .args(ctrs.iter().map(|(c, _)| c.name.as_str()));
    let ran = run_measured(cmd, Duration::from_secs(120));
    let insp = read_json(&out.join("inspection.json"));
    let mut bad = Vec::new();
    let reason = |e: &Value| e["not_probed"].as_str().unwrap_or("").to_string();
    let checks = |e: &Value| -> Vec<String> {
        e["verification"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .map(|s| s.split(':').next().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    for (c, case) in &ctrs {
        let e = entry(&insp, &c.name);
        let total = e["steps_ms"]["total"].as_u64().unwrap_or(u64::MAX);
        if total > 11_500 {
            bad.push(format!(
                "{case}: took {total} ms, past its --timeout of 10 s"
            ));
        }
        let want: Result<(), String> = match *case {
            "good" => {
                if e["verified"] == true && e["placement"]["existing"] == true && e["exit"] != 3 {
                    Ok(())
                } else {
                    Err(format!("{e:#}"))
                }
            }
            "hang" if reason(e).contains("did not finish within --timeout") => Ok(()),
            "flood" if reason(e).contains("more than 16 MiB on stdout") => Ok(()),
            "notreport" if reason(e).contains("not a selfprobe report") => Ok(()),
            "midrun"
                if reason(e).contains("exited with 1")
                    || reason(e).contains("not a JSON report") =>
            {
                Ok(())
            }
            "tamper" if e["verified"] == false && checks(e).contains(&"report".to_string()) => {
                Ok(())
            }
            "nonce" if e["verified"] == false && checks(e).contains(&"nonce".to_string()) => Ok(()),
            "subst" if e["verified"] == false && checks(e) == ["binary"] => Ok(()),
            // The real probe, run as another user: its signature holds,
            // the capabilities it reports do not.
            "lie" => {
                let caps = e["disagreements"]
                    .as_array()
                    .and_then(|d| d.iter().find(|d| d["fact"] == "capabilities.effective"))
                    .cloned();
                match caps {
                    Some(d)
                        if d["severity"] == "high"
                            && d["inside"]["missing"]
                                .as_array()
                                .is_some_and(|m| !m.is_empty())
                            && e["verified"] == true
                            && e["findings"].as_array().is_some_and(|f| {
                                f.iter().any(|f| f["code"] == "disagree.capabilities")
                            }) =>
                    {
                        Ok(())
                    }
                    other => Err(format!("no high capability disagreement: {other:?}")),
                }
            }
            _ => Err(format!(
                "not_probed {:?}, verification {}",
                reason(e),
                e["verification"]
            )),
        };
        if let Err(why) = want {
            bad.push(format!("{case}: {why}"));
        }
        // The stand-in ran: the workspace won its race with the placement.
        if *case != "good" {
            let mut c2 = c.cmd();
            c2.args(["exec", &c.name, "cat", "/tmp/standin-ran"]);
            let said = run_bounded(c2, Duration::from_secs(20), None).unwrap();
            if !said.stdout.contains(case) {
                bad.push(format!(
                    "{case}: the stand-in never ran (the watcher lost its race): {}",
                    e["placement"]
                ));
            }
        }
        // Not probed or not verified is 3; the verified liar is not clean.
        let want_exit = match *case {
            "good" => None,
            "lie" => Some(1),
            _ => Some(3),
        };
        if want_exit.is_some_and(|w| e["exit"] != w) {
            bad.push(format!("{case}: exit {} (want {want_exit:?})", e["exit"]));
        }
    }
    if ran.code != 3 {
        bad.push(format!("exit {} (want 3)", ran.code));
    }
    // Nine containers, four at a time, one hanging for its 10 s.
    if ran.wall > Duration::from_secs(40) {
        bad.push(format!("the inspection took {:?}", ran.wall));
    }
    // The 1 GiB flood is cut at 16 MiB; the host keeps well under this
    // (the largest of selfprobe and the engine CLIs it ran: 25 MiB here).
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "FIGURES hostile inspection: wall {:?}, peak RSS {} KiB\n",
            ran.wall, ran.maxrss_kib
        )
        .as_bytes(),
    );
    if ran.maxrss_kib > 96 * 1024 {
        bad.push(format!("peak RSS {} KiB", ran.maxrss_kib));
    }
    assert_none(&bad, &ran);
    // A place the copy cannot start from (the noexec /dev/shm every
    // container has, named with --place-in): the run's exec says so, and
    // with no other place allowed the container is not probed.
    let subst = &ctrs.iter().find(|(_, case)| *case == "subst").unwrap().0;
    let out2 = tmp.path.join("out2");
    let mut cmd = Command::new(shipped::host_bin());
    cmd.args([
        "inspect",
        "--engine",
        "docker",
        "--place-in",
        "/dev/shm",
        "--out-dir",
    ])
    .arg(&out2)
    .arg(&subst.name);
    let ran2 = run_measured(cmd, Duration::from_secs(60));
    let e = read_json(&out2.join("inspection.json"));
    let e = entry(&e, &subst.name);
    let passed = e["placement_passed"].to_string();
    assert!(
        ran2.code == 3 && e["placement"].is_null() && passed.contains("does not start there"),
        "{e:#}\n{}",
        ran2.stdout
    );
    assert_no_key_in(
        &out,
        &key,
        &[
            ("stdout", ran.stdout.as_bytes()),
            ("stderr", ran.stderr.as_bytes()),
        ],
    );
}

/// A `docker` that hangs: at `info` (the engine does not answer), and at
/// `container inspect` once `info` answers. Each ends at --timeout, exit 3,
/// with the reason; the CLI's process group is killed with it.
#[test]
fn a_hanging_engine_cli_is_bounded() {
    let tmp = TempPath::dir("fakecli").unwrap();
    let fake = tmp.path.join("docker");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = info ] && [ -z \"$HANG_INFO\" ]; then echo '{\"ServerVersion\": \"fake\"}'; exit 0; fi\nexec sleep 1000\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        tmp.path.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (hang_info, want) in [
        (true, "does not answer"),
        (false, "did not answer within its deadline"),
    ] {
        let mut cmd = Command::new(shipped::host_bin());
        cmd.args([
            "inspect",
            "--engine",
            "docker",
            "--timeout",
            "2s",
            "--out-dir",
        ])
        .arg(tmp.path.join(format!("out-{hang_info}")))
        .arg("some-container")
        .env("PATH", &path);
        if hang_info {
            cmd.env("HANG_INFO", "1");
        }
        let ran = run_measured(cmd, Duration::from_secs(30));
        assert_eq!(ran.code, 3, "{}", ran.stderr);
        assert!(ran.stderr.contains(want), "{}", ran.stderr);
        assert!(ran.wall < Duration::from_secs(6), "{:?}", ran.wall);
    }
    // No sleep of the fake CLI is left behind.
    let ps = Command::new("pgrep").args(["-f", "sleep 1000"]).output();
    if let Ok(ps) = ps {
        let pids = String::from_utf8_lossy(&ps.stdout);
        for pid in pids.split_whitespace() {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let ours =
                memchr::memmem::find(&env, tmp.path.as_os_str().as_encoded_bytes()).is_some();
            assert!(
                !ours,
                "a sleep of the fake CLI survived: {}",
                String::from_utf8_lossy(&cmdline)
            );
        }
    }
}

#[test]
fn usage_and_missing_cli_errors_are_clear() {
    let bin = shipped::host_bin();
    let run = |args: &[&str], path: Option<&str>| {
        let mut c = Command::new(bin);
        c.args(args);
        if let Some(p) = path {
            c.env("PATH", p);
        }
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["inspect"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("CONTAINER"), "{err}");
    let (code, err) = run(&["inspect", "--all", "--filter", "name=x"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("expected label=KEY or label=KEY=VALUE"),
        "{err}"
    );
    let (code, err) = run(&["inspect", "--place-in", "tmp", "c"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("relative"), "{err}");
    let empty = TempPath::dir("nocli").unwrap();
    let (code, err) = run(&["inspect", "--engine", "podman", "c"], Some(empty.arg()));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("the podman CLI is not on PATH"), "{err}");
    let (code, err) = run(&["inspect", "c"], Some(empty.arg()));
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("neither the docker nor the podman CLI"),
        "{err}"
    );
    // An output directory that holds anything is never written over, and
    // a directory made for an engine that is not there does not stay.
    let full = TempPath::dir("full").unwrap();
    std::fs::write(full.path.join("keep"), "mine\n").unwrap();
    let (code, err) = run(&["inspect", "--out-dir", full.arg(), "c"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not empty: expected a new or empty directory"),
        "{err}"
    );
    let fresh = empty.path.join("fresh");
    let (code, _) = run(
        &["inspect", "--out-dir", fresh.to_str().unwrap(), "c"],
        Some(empty.arg()),
    );
    assert_eq!(code, Some(3));
    assert!(
        !fresh.exists(),
        "the directory made for the inspection stays"
    );
    let (code, err) = run(&["teardown", empty.arg()], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("inspection.json"), "{err}");
    // A bad [[retain]] names its file, line and column.
    let pol = empty.path.join("p.toml");
    std::fs::write(
        &pol,
        "[[retain]]\nvolume = \"v\"\nowner = \"o\"\nexpires = \"tomorrow\"\n",
    )
    .unwrap();
    let (code, err) = run(
        &["teardown", "--policy", pol.to_str().unwrap(), empty.arg()],
        None,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("p.toml:4:11: retain expires 'tomorrow' is not a date"),
        "{err}"
    );
}
