//! The probe's commands: each takes its parsed arguments, does the work
//! (run.rs, the gate, attest, report), writes what it prints, and returns
//! the exit code or the one `Failure` (src/output.rs) that main turns into
//! a message and a code. src/main.rs only parses and dispatches.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use zeroize::Zeroizing;

use crate::attest::{self, verify};
use crate::cli::{Format, PubkeyArgs, RunArgs, VerifyArgs};
use crate::gate;
use crate::host::{self, Cleanup};
use crate::keys;
use crate::model::Exit;
use crate::output::{cleanup_on_signal, emit, warn, write_out, Failure};
use crate::report;
use crate::util::digest;

/// `--remove-self` (for `selfprobe-host inspect`, which placed this binary and
/// may find no `rm` in the image): unlinks the file this process was
/// started from, once everything is written, and says so on stderr, where
/// inspect reads it; and the `--policy` file when inspect placed it beside
/// the binary (its path is the binary's with `.policy.toml` appended). Only
/// a regular file is removed: a binary bind-mounted in, or reached through
/// a symlink, is left alone.
pub fn remove_self(policy: Option<&std::path::Path>) {
    let exe = match std::fs::read_link("/proc/self/exe") {
        Ok(p) => p,
        Err(e) => {
            warn(&format!(
                "--remove-self: cannot tell which file this is ({e}): left in place"
            ));
            return;
        }
    };
    let shown = exe.display().to_string();
    if let Some(p) = policy {
        let beside = format!("{shown}.policy.toml");
        if p == std::path::Path::new(&beside)
            && std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
        {
            if let Err(e) = std::fs::remove_file(p) {
                warn(&format!("--remove-self: cannot remove {beside}: {e}"));
            }
        }
    }
    match std::fs::symlink_metadata(&exe) {
        Ok(m) if m.file_type().is_file() => match std::fs::remove_file(&exe) {
            Ok(()) => warn(&format!("--remove-self: removed {shown}")),
            Err(e) => warn(&format!("--remove-self: cannot remove {shown}: {e}")),
        },
        Ok(_) => warn(&format!(
            "--remove-self: {shown} is not a regular file: left in place"
        )),
        Err(e) => warn(&format!("--remove-self: {shown}: {e}")),
    }
}

/// The key given, else (when `or_ephemeral`) one made for this run.
fn signer(
    cfg: &crate::cli::Config,
    env_key: Option<Zeroizing<Vec<u8>>>,
) -> Result<keys::Signer, Failure> {
    keys::load(cfg.key_source.as_ref(), env_key)
        .and_then(|k| match k {
            Some(k) => Ok(k),
            None => keys::Signer::ephemeral(),
        })
        .map_err(Failure::usage)
}

pub fn plant(args: RunArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    let cfg = args.resolve_for_plant().map_err(Failure::usage)?;
    if cfg.attest.is_some() || cfg.sshsig.is_some() {
        return Err(Failure::usage("canary plant writes canaries, not reports: expected no --attest or --sshsig (the canaries are signed with --sign-key, --sign-key-fd or an ephemeral key)"));
    }
    // Canaries are always signed: with the key given, else an ephemeral one.
    let signer = signer(&cfg, env_key)?;
    let (cleanup, outputs, _) = cleanup_on_signal()?;
    let (format, output) = (cfg.format, cfg.output.clone());
    let rep = crate::run::plant(cfg, cleanup, &signer)
        .map_err(|e| Failure::failed(format!("canary plant: {e}")))?;
    let text = match format {
        Format::Json => report::plant::json(&rep),
        _ => report::plant::text(&rep),
    };
    let code = if rep.incomplete {
        Exit::ProbeFailed
    } else {
        Exit::Clean
    };
    write_out(output.as_deref(), &text, &outputs, code)?;
    Ok(code)
}

pub fn run(args: RunArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    let cfg = args.resolve().map_err(Failure::usage)?;
    if !cfg.only_in.is_empty() {
        return Err(Failure::usage(
            "--only-in names where `canary plant` may plant: expected it with canary plant, not a run",
        ));
    }
    if cfg.command.is_empty() {
        return probe_and_report(cfg, env_key, None).map(|(code, _)| code);
    }
    // The gate (src/gate.rs): the descriptors the caller gave, before
    // anything of selfprobe's is open; the command, found before anything
    // is probed (127 or 126 at once, as env(1) does).
    let mut inherited = gate::inherited();
    let cmd = gate::resolve(&cfg.command).map_err(|e| Failure {
        code: e.exit_code(),
        message: Some(e.to_string()),
    })?;
    let name = cmd.name();
    // A failure on the way (a key error, a report that cannot be written)
    // ends the gate without the command; never with 0, which would read as
    // the command's success (a closed pipe under `--attest -` keeps the
    // run's code, 0 when clean).
    let not_started = |f: Failure| Failure {
        code: if f.code == Exit::Clean as u8 {
            Exit::ProbeFailed as u8
        } else {
            f.code
        },
        message: Some(format!(
            "{}; {name} was not started",
            f.message
                .unwrap_or_else(|| "cannot write the report".into())
        )),
    };
    if let Some(keys::KeySource::Fd(n)) = cfg.key_source {
        // Read to its end and closed (n > 2) before the report is written;
        // its number is then free for a descriptor of selfprobe's own.
        inherited.forget(n);
    }
    let gated = Gated {
        stdin_was_key: matches!(cfg.key_source, Some(keys::KeySource::Fd(0))),
    };
    let (code, after) = probe_and_report(cfg, env_key, Some(&gated)).map_err(not_started)?;
    let Some(After {
        report,
        cleanup,
        outputs,
        signals,
        shown,
    }) = after
    else {
        return Ok(code);
    };
    if code != Exit::Clean {
        warn_raw(&report::gate::refusal(&report, &name, &shown.outputs()));
        return Ok(code);
    }
    // The write test removed its files before the report; a create still
    // in flight on a mount that hung could leave one behind the command.
    if !cleanup.idle() {
        return Err(not_started(Failure::failed(
            "a --write-test file was still being created when the check ended (a mount that does not answer)",
        )));
    }
    match signals.hand_over() {
        Ok(()) => {}
        Err(host::NotHandedOver::Signal(sig)) => {
            cleanup.remove_all();
            outputs.remove_all();
            std::process::exit(128 + sig);
        }
        Err(host::NotHandedOver::Mask(e)) => {
            return Err(not_started(Failure::failed(format!(
                "cannot restore the signal mask the command must inherit: {e}"
            ))))
        }
    }
    warn_raw(&report::gate::starting(&report, &name, &shown.outputs()));
    drop(report);
    let e = gate::exec(&cmd, &inherited);
    Err(Failure {
        code: e.exit_code(),
        message: Some(e.to_string()),
    })
}

/// The gate's part in a run: whether standard input carried the key
/// (`--sign-key-fd 0`).
struct Gated {
    stdin_was_key: bool,
}

/// What the gate needs once the report is written.
struct After {
    report: crate::model::Report,
    cleanup: Arc<Cleanup>,
    outputs: Arc<Cleanup>,
    signals: host::Signals,
    shown: Shown,
}

/// Where the outputs went, as given on the command line.
struct Shown {
    report: Option<String>,
    attest: Option<String>,
    sshsig: Option<String>,
}

impl Shown {
    fn outputs(&self) -> report::gate::Outputs<'_> {
        report::gate::Outputs {
            report: self.report.as_deref(),
            attest: self.attest.as_deref(),
            sshsig: self.sshsig.as_deref(),
        }
    }
}

/// A run: probe, then write the report, the SSHSIG and the attestation.
/// With the gate (`gated`), the report goes to standard error when no -o
/// is given (standard output is the command's), and what the gate needs
/// next comes back with the code.
fn probe_and_report(
    cfg: crate::cli::Config,
    env_key: Option<Zeroizing<Vec<u8>>>,
    gated: Option<&Gated>,
) -> Result<(Exit, Option<After>), Failure> {
    // The signal thread first: the key's reader (below) inherits the mask.
    let (cleanup, outputs, signals) = cleanup_on_signal()?;
    // A key from a file or the environment is loaded (and a bad one
    // refused) before anything is probed; one on a descriptor is checked
    // now and read while the probes run (keys::load_while_probing says
    // why), and a bad one refused once they are done, before anything is
    // written.
    let signs = cfg.attest.is_some() || cfg.sshsig.is_some();
    let loading = if signs {
        let l =
            keys::load_while_probing(cfg.key_source.as_ref(), env_key).map_err(Failure::usage)?;
        Some(match l {
            keys::Loading::Loaded(None) => {
                keys::Loading::Loaded(Some(keys::Signer::ephemeral().map_err(Failure::usage)?))
            }
            l => l,
        })
    } else {
        drop(env_key);
        None
    };
    if let Some(keys::Loading::Loaded(Some(s))) = &loading {
        if s.is_ephemeral() {
            warn(&format!(
                "signing with an ephemeral key (keyid {}): the signature shows the report was not changed after signing, not who made it; pass --sign-key or --sign-key-fd for a key a verifier trusts",
                s.keyid()
            ));
        }
    }
    let format = cfg.format;
    let verbose = cfg.verbose;
    let output = cfg.output.clone();
    let attest_path = cfg.attest.clone();
    let sshsig_path = cfg.sshsig.clone();
    let mut report = crate::run::execute(cfg, cleanup.clone());
    let signer = match loading {
        Some(l) => l.finish().map_err(Failure::usage)?,
        None => None,
    };
    if gated.is_some_and(|g| g.stdin_was_key) {
        gate::stdin_from_null().map_err(|e| {
            Failure::failed(format!(
                "--sign-key-fd 0: cannot put /dev/null in place of the key's standard input ({e}), which the command would inherit"
            ))
        })?;
    }
    if let Some(s) = &signer {
        report.signing = Some(attest::signing_info(
            s,
            attest_path.is_some(),
            sshsig_path.is_some(),
        ));
    }
    let code = report.summary.exit_code;
    // The gate's report never goes to standard output unless asked (-o
    // /dev/stdout): that is the command's.
    let to_stderr = gated.is_some() && output.is_none();
    let to_tty = output.is_none()
        && if to_stderr {
            std::io::stderr().is_terminal()
        } else {
            std::io::stdout().is_terminal()
        };
    let color = to_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = match format {
        Format::Text => report::text::render(&report, color, verbose),
        Format::Json => report::json::render(&report),
        Format::Sarif => report::sarif::render(&report),
        Format::Junit => report::junit::render(&report),
    };
    if to_stderr {
        emit_stderr(&text)?;
    } else {
        write_out(output.as_deref(), &text, &outputs, code)?;
    }
    if let (Some(signer), Some(path)) = (&signer, &sshsig_path) {
        // Over the very bytes just written to -o.
        let sig = attest::sshsig::sign(signer, text.as_bytes());
        write_out(Some(path), &sig, &outputs, code).map_err(|f| f.within("--sshsig"))?;
    }
    if let (Some(signer), Some(path)) = (&signer, &attest_path) {
        let env = attest::envelope(&report, signer)
            .map_err(|e| Failure::failed(format!("--attest: {e}")))?;
        // `--attest -`: on standard output, after the report (how `selfprobe
        // inspect` takes both back: a user other than root may not reopen
        // its own stdout through /dev/fd/1, whose pipe root made).
        let to = (path.as_os_str() != "-").then_some(path.as_path());
        write_out(to, &env, &outputs, code).map_err(|f| f.within("--attest"))?;
    }
    let after = gated.map(|_| {
        let shown = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
        After {
            report,
            cleanup,
            outputs,
            signals,
            shown: Shown {
                report: shown(&output),
                attest: shown(&attest_path),
                sshsig: shown(&sshsig_path),
            },
        }
    });
    Ok((code, after))
}

/// The gate's report on standard error (the reader gone or any other
/// failure: the report could not be given, and the command does not start).
fn emit_stderr(text: &str) -> Result<(), Failure> {
    let mut err = std::io::stderr().lock();
    err.write_all(text.as_bytes())
        .and_then(|()| err.flush())
        .map_err(|e| Failure::failed(format!("cannot write the report to standard error: {e}")))
}

/// The gate's own lines on stderr, as they are (report::gate sanitised
/// what came from the workspace, and fits them to the screen).
fn warn_raw(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Bounds what `verify` reads: selfprobe's outputs are far smaller.
const MAX_VERIFY_INPUT: u64 = 64 << 20;

pub fn verify(args: VerifyArgs) -> Result<Exit, Failure> {
    let usage = |e: String| Failure::usage(format!("verify: {e}"));
    args.check().map_err(|e| usage(e.to_string()))?;
    // The messages of the steps, joined here, where they are printed.
    let read = |p: &std::path::Path| {
        keys::read_public_file(p, MAX_VERIFY_INPUT).map_err(|e| e.to_string())
    };
    let pubkey = read(&args.pubkey)
        .and_then(|b| {
            let text =
                String::from_utf8(b).map_err(|_| format!("{}: not text", args.pubkey.display()))?;
            keys::parse_public_key(&text)
                .map_err(|e| format!("--pubkey {}: {e}", args.pubkey.display()))
        })
        .map_err(usage)?;
    let load = |p: &Option<std::path::PathBuf>| -> Result<Option<(String, Vec<u8>)>, String> {
        p.as_ref()
            .map(|p| read(p).map(|b| (p.display().to_string(), b)))
            .transpose()
    };
    let env = load(&args.envelope).map_err(usage)?;
    let sig = load(&args.sshsig).map_err(usage)?;
    let rep = load(&args.report).map_err(usage)?;
    let envelope = env.as_ref().map(|(n, b)| (n.as_str(), b.as_slice()));
    let sshsig = match (&sig, &rep) {
        (Some((sn, sb)), Some((rn, rb))) => Some(verify::SshsigInput {
            sig_name: sn,
            sig: sb,
            report_name: rn,
            report: rb,
        }),
        _ => None,
    };
    let verdict = verify::verify(&verify::Inputs {
        pubkey,
        nonce: args.nonce.as_deref(),
        binary_sha256: args.binary_sha256.as_deref(),
        envelope,
        sshsig,
    });
    let code = if verdict.valid() {
        Exit::Clean
    } else {
        Exit::Findings
    };
    emit(&report::verify::render(&verdict), code)?;
    Ok(code)
}

pub fn pubkey(args: PubkeyArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    let usage = |e: String| Failure::usage(format!("pubkey: {e}"));
    args.check().map_err(|e| usage(e.to_string()))?;
    match keys::load(args.key.source().as_ref(), env_key) {
        Ok(Some(signer)) => {
            let text = report::verify::render_pubkey(&signer.verifying_key(), &args.principal);
            emit(&text, Exit::Clean)?;
            Ok(Exit::Clean)
        }
        Ok(None) => Err(usage(format!(
            "no key given: expected --sign-key FILE, --sign-key-fd N or {}",
            keys::ENV_KEY
        ))),
        Err(e) => Err(usage(e.to_string())),
    }
}

/// The largest binary `install` copies: the shipped one is a few MiB.
const MAX_SELF: u64 = 64 << 20;

/// `selfprobe install DIR`: this very binary (read through /proc/self/exe,
/// so a moved or replaced file on disk does not matter) to DIR/selfprobe,
/// mode 0755, whole or not at all (a new file beside it, then a rename).
pub fn install(dir: &std::path::Path) -> Result<Exit, Failure> {
    use std::os::unix::fs::PermissionsExt;
    if !dir.is_dir() {
        return Err(Failure::usage(format!(
            "install: {} is not a directory: expected an existing directory (an emptyDir mount)",
            dir.display()
        )));
    }
    let bytes = host::read_regular(std::path::Path::new("/proc/self/exe"), MAX_SELF + 1)
        .map_err(|e| Failure::failed(format!("install: cannot read /proc/self/exe: {e}")))?;
    if bytes.len() as u64 > MAX_SELF {
        return Err(Failure::failed(format!(
            "install: /proc/self/exe is larger than {MAX_SELF} bytes: not the selfprobe binary"
        )));
    }
    let dest = dir.join("selfprobe");
    let tmp = dir.join(format!(".selfprobe.{}", std::process::id()));
    let fail = |e: std::io::Error| {
        let _ = std::fs::remove_file(&tmp);
        Failure::failed(format!("install: cannot write {}: {e}", dest.display()))
    };
    std::fs::write(&tmp, &bytes).map_err(fail)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    std::fs::rename(&tmp, &dest).map_err(fail)?;
    let sha = digest::sha256_hex(&bytes);
    emit(
        &format!(
            "selfprobe install: {} ({} bytes, {sha})\n",
            dest.display(),
            bytes.len()
        ),
        Exit::Clean,
    )?;
    Ok(Exit::Clean)
}
