//! Thin: parse the command line, run, print, map to an exit code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use zeroize::Zeroizing;

use selfprobe::attest::{self, keys, verify, SigningInfo};
use selfprobe::cli::{CanaryAction, Cli, Command, Format, PubkeyArgs, RunArgs, VerifyArgs};
use selfprobe::host::{self, Cleanup};
use selfprobe::report::{self, EXIT_FINDINGS, EXIT_PROBE_FAILED, EXIT_USAGE};

fn main() -> ExitCode {
    // First, while this is the only thread: take the signing key out of the
    // environment (and out of /proc/self/environ), so no probe, child
    // process or other reader of the environment ever sees it.
    let env_key = keys::take_env_key();
    // Probe threads report panics as data (probe.incomplete, exit 3); the
    // default hook would print to stderr from inside a probe.
    std::panic::set_hook(Box::new(|_| {}));
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::ListChecks) => {
            print!("{}", report::catalog::list_checks());
            0
        }
        Some(Command::Explain { code }) => match report::catalog::explain(&code) {
            Ok(t) => {
                print!("{t}");
                0
            }
            Err(e) => {
                eprintln!("selfprobe: {e}");
                EXIT_USAGE
            }
        },
        Some(Command::Verify(args)) => verify(args),
        Some(Command::Pubkey(args)) => pubkey(args, env_key),
        Some(Command::Run(args)) => run(args, env_key),
        Some(Command::Canary {
            action: CanaryAction::Plant(args),
        }) => plant(args, env_key),
        None => run(cli.run, env_key),
    };
    ExitCode::from(code as u8)
}

/// The files this run creates and a signal removes, in two lists: the
/// probes' (write-test files, canaries) is closed when the probes end, so a
/// probe cut off by the deadline cannot create a file after that; the
/// report files are written later.
fn cleanup_on_signal() -> Option<(Arc<Cleanup>, Arc<Cleanup>)> {
    let (probes, outputs) = (Arc::new(Cleanup::default()), Arc::new(Cleanup::default()));
    match host::remove_on_signal(vec![probes.clone(), outputs.clone()]) {
        Ok(()) => Some((probes, outputs)),
        Err(e) => {
            eprintln!("selfprobe: {e}");
            None
        }
    }
}

/// Writes to `output` whole or not at all (see host::write_whole), else to
/// standard output.
fn write_out(output: Option<&std::path::Path>, text: &str, files: &Cleanup) -> Result<(), String> {
    match output {
        Some(path) => host::write_whole(path, text.as_bytes(), files)
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the report to standard output: {e}")),
    }
}

fn plant(args: RunArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> i32 {
    let cfg = match args.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("selfprobe: {e}");
            return EXIT_USAGE;
        }
    };
    if cfg.attest.is_some() || cfg.sshsig.is_some() {
        eprintln!("selfprobe: canary plant writes canaries, not reports: expected no --attest or --sshsig (the canaries are signed with --sign-key, --sign-key-fd or an ephemeral key)");
        return EXIT_USAGE;
    }
    // Canaries are always signed: with the key given, else an ephemeral one.
    let signer = match keys::load(cfg.key_source.as_ref(), env_key).and_then(|k| match k {
        Some(k) => Ok(k),
        None => keys::Signer::ephemeral(),
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("selfprobe: {e}");
            return EXIT_USAGE;
        }
    };
    let Some((cleanup, outputs)) = cleanup_on_signal() else {
        return EXIT_PROBE_FAILED;
    };
    let (format, output) = (cfg.format, cfg.output.clone());
    let rep = match selfprobe::run::plant(cfg, cleanup, &signer) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("selfprobe: canary plant: {e}");
            return EXIT_PROBE_FAILED;
        }
    };
    let text = match format {
        Format::Json => report::plant::json(&rep),
        _ => report::plant::text(&rep),
    };
    if let Err(e) = write_out(output.as_deref(), &text, &outputs) {
        eprintln!("selfprobe: {e}");
        return EXIT_PROBE_FAILED;
    }
    if rep.incomplete {
        EXIT_PROBE_FAILED
    } else {
        0
    }
}

fn run(args: RunArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> i32 {
    let cfg = match args.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("selfprobe: {e}");
            return EXIT_USAGE;
        }
    };
    // The key is loaded (and a bad one refused) before anything is probed.
    let signs = cfg.attest.is_some() || cfg.sshsig.is_some();
    let signer = if signs {
        let loaded = keys::load(cfg.key_source.as_ref(), env_key).and_then(|k| match k {
            Some(k) => Ok(k),
            None => keys::Signer::ephemeral(),
        });
        match loaded {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("selfprobe: {e}");
                return EXIT_USAGE;
            }
        }
    } else {
        drop(env_key);
        None
    };
    if let Some(s) = signer.as_ref().filter(|s| s.is_ephemeral()) {
        eprintln!(
            "selfprobe: signing with an ephemeral key (keyid {}): the signature shows the report was not changed after signing, not who made it; pass --sign-key or --sign-key-fd for a key a verifier trusts",
            s.keyid()
        );
    }
    let Some((cleanup, outputs)) = cleanup_on_signal() else {
        return EXIT_PROBE_FAILED;
    };
    let format = cfg.format;
    let verbose = cfg.verbose;
    let output = cfg.output.clone();
    let attest_path = cfg.attest.clone();
    let sshsig_path = cfg.sshsig.clone();
    let mut report = selfprobe::run::execute(cfg, cleanup);
    if let Some(s) = &signer {
        report.signing = Some(SigningInfo::new(
            s,
            attest_path.is_some(),
            sshsig_path.is_some(),
        ));
    }
    let to_tty = output.is_none() && std::io::stdout().is_terminal();
    let color = to_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = match format {
        Format::Text => report::text::render(&report, color, verbose),
        Format::Json => report::json::render(&report),
        Format::Sarif => report::sarif::render(&report),
        Format::Junit => report::junit::render(&report),
    };
    if let Err(e) = write_out(output.as_deref(), &text, &outputs) {
        eprintln!("selfprobe: {e}");
        return EXIT_PROBE_FAILED;
    }
    if let (Some(signer), Some(path)) = (&signer, &sshsig_path) {
        // Over the very bytes just written to -o.
        let sig = attest::sshsig::sign(signer, text.as_bytes());
        if let Err(e) = sig.and_then(|sig| write_out(Some(path), &sig, &outputs)) {
            eprintln!("selfprobe: --sshsig: {e}");
            return EXIT_PROBE_FAILED;
        }
    }
    if let (Some(signer), Some(path)) = (&signer, &attest_path) {
        let env = attest::envelope(&report, signer);
        if let Err(e) = env.and_then(|env| write_out(Some(path), &env, &outputs)) {
            eprintln!("selfprobe: --attest: {e}");
            return EXIT_PROBE_FAILED;
        }
    }
    report.summary.exit_code
}

/// Bounds what `verify` reads: selfprobe's outputs are far smaller.
const MAX_VERIFY_INPUT: u64 = 64 << 20;

fn verify(args: VerifyArgs) -> i32 {
    if let Err(e) = args.check() {
        eprintln!("selfprobe verify: {e}");
        return EXIT_USAGE;
    }
    let read = |p: &std::path::Path| keys::read_public_file(p, MAX_VERIFY_INPUT);
    let pubkey = match read(&args.pubkey).and_then(|b| {
        let text =
            String::from_utf8(b).map_err(|_| format!("{}: not text", args.pubkey.display()))?;
        keys::parse_public_key(&text)
            .map_err(|e| format!("--pubkey {}: {e}", args.pubkey.display()))
    }) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("selfprobe verify: {e}");
            return EXIT_USAGE;
        }
    };
    let load = |p: &Option<std::path::PathBuf>| -> Result<Option<(String, Vec<u8>)>, String> {
        p.as_ref()
            .map(|p| read(p).map(|b| (p.display().to_string(), b)))
            .transpose()
    };
    let (env, sig, rep) = match (load(&args.envelope), load(&args.sshsig), load(&args.report)) {
        (Ok(e), Ok(s), Ok(r)) => (e, s, r),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            eprintln!("selfprobe verify: {e}");
            return EXIT_USAGE;
        }
    };
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
        envelope,
        sshsig,
    });
    print!("{}", report::verify::render(&verdict));
    if verdict.valid() {
        0
    } else {
        EXIT_FINDINGS
    }
}

fn pubkey(args: PubkeyArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> i32 {
    if let Err(e) = args.check() {
        eprintln!("selfprobe pubkey: {e}");
        return EXIT_USAGE;
    }
    match keys::load(args.key.source().as_ref(), env_key) {
        Ok(Some(signer)) => {
            print!(
                "{}",
                report::verify::render_pubkey(&signer.verifying_key(), &args.principal)
            );
            0
        }
        Ok(None) => {
            eprintln!(
                "selfprobe pubkey: no key given: expected --sign-key FILE, --sign-key-fd N or {}",
                keys::ENV_KEY
            );
            EXIT_USAGE
        }
        Err(e) => {
            eprintln!("selfprobe pubkey: {e}");
            EXIT_USAGE
        }
    }
}
