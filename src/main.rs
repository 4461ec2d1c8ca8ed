//! Thin: parse the command line, run the command (src/commands.rs), map to
//! an exit code. Every command returns `Result<Exit, Failure>`; `finish`
//! (src/output.rs) is the one place that prints an error and picks the code.

use std::process::ExitCode;

use clap::Parser;

use selfprobe::cli::{CanaryAction, Cli, Command};
use selfprobe::commands::{install, plant, pubkey, remove_self, run, verify};
use selfprobe::host;
use selfprobe::keys;
use selfprobe::model::Exit;
use selfprobe::output::{emit, finish, Failure};
use selfprobe::report;
use selfprobe::util::panics;

fn main() -> ExitCode {
    // Probe and worker threads report a panic as data (probe.incomplete,
    // exit 3), silently. A panic on the main thread is a bug and keeps
    // Rust's message (and exit 101). The shipped build aborts on a panic;
    // the hook is what keeps this (src/util/panics.rs), so it goes first.
    panics::install();
    // Then, while this is the only thread: take the signing key out of the
    // environment (and out of /proc/self/environ), so no probe, child
    // process or other reader of the environment ever sees it.
    let env_key = keys::take_env_key();
    let cli = Cli::parse();
    panics::planted(format_args!("main"));
    let run_args = match &cli.command {
        Some(Command::Run(a))
        | Some(Command::Canary {
            action: CanaryAction::Plant(a),
        }) => Some(a),
        None => Some(&cli.run),
        _ => None,
    };
    // Never with a command: the gate refuses --remove-self (and when it
    // starts the command, nothing after this runs anyway).
    let remove = run_args
        .filter(|a| a.remove_self && a.command.is_empty())
        .map(|a| a.policy.clone());
    if run_args.is_some_and(|a| a.command.is_empty()) && dash_dash_alone() {
        return finish(Err(Failure::usage(
            "`--` ends selfprobe's options and must be followed by the command to start: expected `selfprobe [OPTIONS] -- COMMAND [ARGS...]`",
        )));
    }
    let result = match cli.command {
        Some(Command::ListChecks) => {
            emit(&report::catalog::list_checks(), Exit::Clean).map(|()| Exit::Clean)
        }
        Some(Command::Explain { code }) => report::catalog::explain(&code)
            .map_err(Failure::usage)
            .and_then(|t| emit(&t, Exit::Clean).map(|()| Exit::Clean)),
        Some(Command::Verify(args)) => verify(args),
        Some(Command::Pubkey(args)) => pubkey(args, env_key),
        Some(Command::Run(args)) => run(args, env_key),
        Some(Command::Canary {
            action: CanaryAction::Plant(args),
        }) => plant(args, env_key),
        Some(Command::Install { dir }) => {
            drop(env_key);
            install(&dir)
        }
        None => run(cli.run, env_key),
    };
    if let Some(policy) = remove {
        remove_self(policy.as_deref());
    }
    host::exit_if_signalled();
    finish(result)
}

/// Whether the command line's first `--` (clap's end of options: an
/// option's value is never a bare `--`) is its last argument: the gate
/// asked for, with no command.
fn dash_dash_alone() -> bool {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    args.iter().position(|a| a == "--") == Some(args.len().saturating_sub(1)) && !args.is_empty()
}
