//! The host tool's commands: each takes its parsed arguments, does the
//! work through outside, compare and registry, writes what it prints, and
//! returns the exit code or the one `Failure` (selfprobe::output) main
//! turns into a message and a code.

use zeroize::Zeroizing;

use selfprobe::attest;
use selfprobe::host;
use selfprobe::keys;
use selfprobe::model::Exit;
use selfprobe::output::{cleanup_on_signal, emit, warn, write_out, Failure};
use selfprobe::report;

use crate::cli::{
    AttestFetchArgs, AttestPushArgs, DiffArgs, HostFormat, InspectArgs, SummaryArgs, TeardownArgs,
    WatchArgs,
};
use crate::compare;

/// The largest public key file read.
const MAX_VERIFY_INPUT: u64 = 64 << 20;

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

fn exit_of(code: i32) -> Exit {
    match code {
        0 => Exit::Clean,
        1 => Exit::Findings,
        2 => Exit::Usage,
        _ => Exit::ProbeFailed,
    }
}

pub fn inspect(args: InspectArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    use crate::outside::inspect as insp;
    let opts = args
        .resolve()
        .map_err(|e| Failure::usage(format!("inspect: {e}")))?;
    let signer = host_signer(args.sign_key.as_deref(), env_key)?;
    let mut result =
        insp::inspect(&opts, &signer).map_err(|e| Failure::from(e).within("inspect"))?;
    insp::name_files(&mut result);
    let pubkey = report::verify::render_pubkey(&signer.verifying_key(), "selfprobe");
    let json = insp::render_json(&result);
    insp::write(&mut result, &json, &pubkey).map_err(|e| Failure::failed(e.to_string()))?;
    let code = exit_of(result.exit);
    let text = match args.format {
        HostFormat::Json => json,
        HostFormat::Text => crate::report::inspect::render(&result),
    };
    emit(&text, code)?;
    Ok(code)
}

pub fn teardown(args: TeardownArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    use crate::outside::teardown as td;
    let signer = host_signer(args.sign_key.as_deref(), env_key)?;
    let opts = td::Options {
        dir: args.dir.clone(),
        policy: args.policy.clone(),
        timeout: args.timeout,
        engine_cli_only: args.engine_cli_only,
    };
    let result = td::teardown(&opts, &signer).map_err(|e| Failure::from(e).within("teardown"))?;
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
        HostFormat::Text => crate::report::inspect::render_teardown(&result),
    };
    emit(&text, code)?;
    Ok(code)
}

/// `selfprobe-host watch` (src/watch): runs until a signal ends it, then
/// exit 0.
pub fn watch(args: WatchArgs, env_key: Option<Zeroizing<Vec<u8>>>) -> Result<Exit, Failure> {
    let opts = crate::watch::Options::from_args(&args)
        .map_err(|e| Failure::usage(format!("watch: {e}")))?;
    crate::watch::run(opts, env_key)
        .map(|()| Exit::Clean)
        .map_err(|e| Failure::from(e).within("watch"))
}

pub fn attest_push(args: AttestPushArgs) -> Result<Exit, Failure> {
    let opts = crate::registry::Options {
        reference: args.reference,
        insecure: args.registry.insecure,
        timeout: args.registry.timeout,
        resolver: name_resolver,
    };
    if let Some(w) = args.wait {
        crate::registry::wait_for(&args.envelopes, w).map_err(Failure::from)?;
    }
    let out = crate::registry::push(&opts, &args.envelopes).map_err(Failure::from)?;
    emit(&crate::report::registry::push(&out), Exit::Clean)?;
    Ok(Exit::Clean)
}

pub fn attest_fetch(args: AttestFetchArgs) -> Result<Exit, Failure> {
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
    let opts = crate::registry::Options {
        reference: args.reference,
        insecure: args.registry.insecure,
        timeout: args.registry.timeout,
        resolver: name_resolver,
    };
    let fetch = crate::registry::FetchOptions {
        pubkey,
        nonce: args.nonce,
        out_dir: args.out_dir,
    };
    let (_, outputs, _) = cleanup_on_signal()?;
    let out = crate::registry::fetch(&opts, &fetch, &outputs).map_err(Failure::from)?;
    let code = if out.valid() {
        Exit::Clean
    } else {
        Exit::Findings
    };
    emit(&crate::report::registry::fetch(&out), code)?;
    Ok(code)
}

/// The registry client's name resolver: the network probe's own, without
/// NSS (/etc/hosts, then the nameservers of /etc/resolv.conf, bounded by
/// the deadline), handed in here so that src/registry imports no probe.
fn name_resolver() -> crate::registry::client::Resolver {
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

pub fn diff(args: DiffArgs) -> Result<Exit, Failure> {
    let out = compare::diff_command(
        &args.a,
        &args.b,
        args.pubkey.as_deref(),
        args.policy.as_deref(),
        args.format,
    )
    .map_err(|e| Failure::from(e).within("diff"))?;
    for w in &out.warnings {
        warn(&format!("diff: {w}"));
    }
    emit(&out.text, out.exit)?;
    Ok(out.exit)
}

pub fn summary(args: SummaryArgs) -> Result<Exit, Failure> {
    let out = compare::summary_command(
        &args.paths,
        &args.pubkey,
        args.nonces.as_deref(),
        args.binary_sha256.clone(),
        args.host_sha256.clone(),
        args.format,
    )
    .map_err(|e| Failure::from(e).within("summary"))?;
    // Bad inputs are in the output too; stderr says so where a format has
    // no place for them (SARIF, JUnit).
    for w in &out.warnings {
        warn(&format!("summary: {w}"));
    }
    let (_, files, _) = cleanup_on_signal()?;
    write_out(args.output.as_deref(), &out.text, &files, out.exit)?;
    Ok(out.exit)
}
