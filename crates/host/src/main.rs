//! Thin: parse the command line, run the command, write, map to an exit
//! code. Every command returns `Result<Exit, Failure>`; `finish` is the one
//! place that prints an error and picks the code (selfprobe::output).

use std::process::ExitCode;

use clap::Parser;
use zeroize::Zeroizing;

use selfprobe::attest::{self, keys};
use selfprobe::host;
use selfprobe::model::Exit;
use selfprobe::output::{cleanup_on_signal, emit, finish, warn, write_out, Failure};
use selfprobe::report;
use selfprobe::util::panics;
use selfprobe_host::cli::{
    AttestAction, AttestFetchArgs, AttestPushArgs, Cli, Command, DiffArgs, HostFormat, InspectArgs,
    SummaryArgs, TeardownArgs, WatchArgs,
};
use selfprobe_host::compare;
use selfprobe_host::report as host_report;

/// The largest public key file read.
const MAX_VERIFY_INPUT: u64 = 64 << 20;

fn main() -> ExitCode {
    // Worker threads report a panic as data; a panic on the main thread is
    // a bug and keeps Rust's message (src/util/panics.rs).
    panics::install();
    selfprobe::output::set_program("selfprobe-host");
    // While this is the only thread: the signing key out of the environment
    // (and /proc/self/environ), so no engine CLI this runs ever sees it.
    let env_key = keys::take_env_key();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect(args, env_key),
        Command::Teardown(args) => teardown(args, env_key),
        Command::Watch(args) => watch(args, env_key),
        Command::Attest { action } => {
            drop(env_key);
            match action {
                AttestAction::Push(args) => attest_push(args),
                AttestAction::Fetch(args) => attest_fetch(args),
            }
        }
        Command::Diff(args) => diff(args),
        Command::Summary(args) => summary(args),
    };
    host::exit_if_signalled();
    finish(result)
}

/// The key a host-side command signs with: `--sign-key FILE`, else
/// SELFPROBE_SIGNING_KEY, else an ephemeral one.
fn host_signer(
    file: Option<&std::path::Path>,
    env_key: Option<Zeroizing<Vec<u8>>>,
) -> Result<keys::Signer, Failure> {
    let source = file.map(|p| keys::KeySource::File(p.to_path_buf()));
    keys::load(source.as_ref(), env_key)
        .and_then(|k| match k {
            Some(k) => Ok(k),
            None => keys::Signer::ephemeral(),
        })
        .map_err(Failure::usage)
}

/// `selfprobe-host watch` (src/watch): runs until a signal ends it, then
/// exit 0.
fn watch(args: WatchArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    use selfprobe_host::watch::{self, WatchError};
    let opts =
        watch::Options::from_args(&args).map_err(|e| Failure::usage(format!("watch: {e}")))?;
    watch::run(opts, env_key)
        .map(|()| Exit::Clean)
        .map_err(|e| match e {
            WatchError::Usage(m) => Failure::usage(format!("watch: {m}")),
            WatchError::Failed(m) => Failure::failed(format!("watch: {m}")),
        })
}

fn exit_of(code: i32) -> Exit {
    match code {
        0 => Exit::Clean,
        1 => Exit::Findings,
        2 => Exit::Usage,
        _ => Exit::ProbeFailed,
    }
}

fn inspect(args: InspectArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    use selfprobe_host::outside::inspect::{self as insp, InspectError};
    let opts = args
        .resolve()
        .map_err(|e| Failure::usage(format!("inspect: {e}")))?;
    let signer = host_signer(args.sign_key.as_deref(), env_key)?;
    let mut result = insp::inspect(&opts, &signer).map_err(|e| match e {
        InspectError::Usage(m) => Failure::usage(format!("inspect: {m}")),
        InspectError::Failed(m) => Failure::failed(format!("inspect: {m}")),
    })?;
    insp::name_files(&mut result);
    let dir = std::path::PathBuf::from(&result.out_dir);
    let pubkey = report::verify::render_pubkey(&signer.verifying_key(), "selfprobe");
    insp::write_pubkey(&dir, &pubkey).map_err(Failure::failed)?;
    let json = insp::render_json(&result);
    insp::write(&mut result, &json).map_err(Failure::failed)?;
    let code = exit_of(result.exit);
    let text = match args.format {
        HostFormat::Json => json,
        HostFormat::Text => host_report::inspect::render(&result),
    };
    emit(&text, code)?;
    Ok(code)
}

fn teardown(args: TeardownArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    use selfprobe_host::outside::teardown::{self as td, TeardownError};
    let signer = host_signer(args.sign_key.as_deref(), env_key)?;
    let opts = td::Options {
        dir: args.dir.clone(),
        policy: args.policy.clone(),
        timeout: args.timeout,
    };
    let result = td::teardown(&opts, &signer).map_err(|e| match e {
        TeardownError::Usage(m) => Failure::usage(format!("teardown: {m}")),
        TeardownError::Failed(m) => Failure::failed(format!("teardown: {m}")),
    })?;
    let cleanup = host::Cleanup::default();
    if signer.is_ephemeral() {
        let pubkey = report::verify::render_pubkey(&signer.verifying_key(), "selfprobe");
        host::write_whole(&args.dir.join(td::PUBKEY_FILE), pubkey.as_bytes(), &cleanup)
            .map_err(|e| Failure::failed(format!("teardown: cannot write teardown.pub: {e}")))?;
    }
    let json = td::render_json(&result);
    host::write_whole(&args.dir.join(td::JSON_FILE), json.as_bytes(), &cleanup)
        .map_err(|e| Failure::failed(format!("teardown: cannot write teardown.json: {e}")))?;
    let code = exit_of(result.exit);
    let text = match args.format {
        HostFormat::Json => json,
        HostFormat::Text => host_report::inspect::render_teardown(&result),
    };
    emit(&text, code)?;
    Ok(code)
}

/// A registry step's error: usage (exit 2) or a failed step (exit 3).
fn registry_failure(e: selfprobe_host::registry::Error) -> Failure {
    match e {
        selfprobe_host::registry::Error::Usage(m) => Failure::usage(m),
        selfprobe_host::registry::Error::Failed(m) => Failure::failed(m),
    }
}

fn attest_push(args: AttestPushArgs) -> Result<Exit, Failure> {
    let opts = selfprobe_host::registry::Options {
        reference: args.reference,
        insecure: args.registry.insecure,
        timeout: args.registry.timeout,
        resolver: name_resolver,
    };
    if let Some(w) = args.wait {
        selfprobe_host::registry::wait_for(&args.envelopes, w).map_err(registry_failure)?;
    }
    let out = selfprobe_host::registry::push(&opts, &args.envelopes).map_err(registry_failure)?;
    emit(&host_report::registry::push(&out), Exit::Clean)?;
    Ok(Exit::Clean)
}

fn attest_fetch(args: AttestFetchArgs) -> Result<Exit, Failure> {
    let usage = |e: String| Failure::usage(format!("attest fetch: {e}"));
    if let Some(n) = &args.nonce {
        attest::check_nonce(n).map_err(|e| usage(e.to_string()))?;
    }
    let pubkey = match &args.pubkey {
        Some(p) => {
            let bytes =
                keys::read_public_file(p, MAX_VERIFY_INPUT).map_err(|e| usage(e.to_string()))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| usage(format!("{}: not text", p.display())))?;
            Some(
                keys::parse_public_key(&text)
                    .map_err(|e| usage(format!("--pubkey {}: {e}", p.display())))?,
            )
        }
        None => None,
    };
    let opts = selfprobe_host::registry::Options {
        reference: args.reference,
        insecure: args.registry.insecure,
        timeout: args.registry.timeout,
        resolver: name_resolver,
    };
    let fetch = selfprobe_host::registry::FetchOptions {
        pubkey,
        nonce: args.nonce,
        out_dir: args.out_dir,
    };
    let (_, outputs, _) = cleanup_on_signal()?;
    let out = selfprobe_host::registry::fetch(&opts, &fetch, &outputs).map_err(registry_failure)?;
    let code = if out.valid() {
        Exit::Clean
    } else {
        Exit::Findings
    };
    emit(&host_report::registry::fetch(&out), code)?;
    Ok(code)
}

/// The registry client's name resolver: the network probe's own, without
/// NSS (/etc/hosts, then the nameservers of /etc/resolv.conf, bounded by
/// the deadline), handed in here so that src/registry imports no probe.
fn name_resolver() -> selfprobe_host::registry::client::Resolver {
    use selfprobe::probe::network::{dial::Dial, resolve};
    let host = host::Host::new(
        std::path::PathBuf::from("/"),
        std::time::Duration::from_secs(60),
    );
    let conf = resolve::ResolverConf::load(&host);
    Box::new(move |name, deadline| {
        resolve::resolve(&conf, &Dial::default(), name, deadline)
            .map(|r| r.addrs)
            .map_err(|e| e.message)
    })
}

// `selfprobe-host diff` and `selfprobe-host summary`: the work is src/compare's; here
// only the printing and the exit code.

fn compared(r: Result<compare::Outcome, compare::Stop>) -> Result<compare::Outcome, Failure> {
    r.map_err(|s| Failure {
        code: s.exit as u8,
        message: Some(s.message),
    })
}

fn diff(args: DiffArgs) -> Result<Exit, Failure> {
    let out = compared(compare::diff_command(
        &args.a,
        &args.b,
        args.pubkey.as_deref(),
        args.policy.as_deref(),
        args.format,
    ))
    .map_err(|f| f.within("diff"))?;
    for w in &out.warnings {
        warn(&format!("diff: {w}"));
    }
    emit(&out.text, out.exit)?;
    Ok(out.exit)
}

fn summary(args: SummaryArgs) -> Result<Exit, Failure> {
    let out = compared(compare::summary_command(
        &args.paths,
        &args.pubkey,
        args.nonces.as_deref(),
        args.binary_sha256.clone(),
        args.host_sha256.clone(),
        args.format,
    ))
    .map_err(|f| f.within("summary"))?;
    // Bad inputs are in the output too; stderr says so where a format has
    // no place for them (SARIF, JUnit).
    for w in &out.warnings {
        warn(&format!("summary: {w}"));
    }
    let (_, files, _) = cleanup_on_signal()?;
    write_out(args.output.as_deref(), &out.text, &files, out.exit)?;
    Ok(out.exit)
}
