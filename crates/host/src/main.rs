//! Thin: parse the command line, run the command (src/commands.rs), map
//! to an exit code. `finish` (selfprobe::output) is the one place that
//! prints an error and picks the code.

use std::process::ExitCode;

use clap::Parser;

use selfprobe::host;
use selfprobe::keys;
use selfprobe::output::finish;
use selfprobe::util::panics;
use selfprobe_host::cli::{AttestAction, Cli, Command};
use selfprobe_host::commands;

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
        Command::Inspect(args) => commands::inspect(args, env_key),
        Command::Teardown(args) => commands::teardown(args, env_key),
        Command::Watch(args) => commands::watch(args, env_key),
        Command::Attest { action } => {
            drop(env_key);
            match action {
                AttestAction::Push(args) => commands::attest_push(args),
                AttestAction::Fetch(args) => commands::attest_fetch(args),
            }
        }
        Command::Diff(args) => commands::diff(args),
        Command::Summary(args) => commands::summary(args),
    };
    host::exit_if_signalled();
    finish(result)
}
