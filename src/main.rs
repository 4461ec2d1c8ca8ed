//! Thin: parse the command line, run, print, map to an exit code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use selfprobe::cli::{CanaryAction, Cli, Command, Format, RunArgs};
use selfprobe::host::{self, Cleanup};
use selfprobe::report::{self, EXIT_PROBE_FAILED, EXIT_USAGE};

fn main() -> ExitCode {
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
        Some(Command::Run(args)) => run(args),
        Some(Command::Canary {
            action: CanaryAction::Plant(args),
        }) => plant(args),
        None => run(cli.run),
    };
    ExitCode::from(code as u8)
}

fn write_out(output: Option<&std::path::Path>, text: &str) -> Result<(), String> {
    match output {
        Some(path) => std::fs::write(path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the report to standard output: {e}")),
    }
}

fn plant(args: RunArgs) -> i32 {
    let cfg = match args.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("selfprobe: {e}");
            return EXIT_USAGE;
        }
    };
    let cleanup = Arc::new(Cleanup::default());
    if let Err(e) = host::remove_on_signal(cleanup.clone()) {
        eprintln!("selfprobe: {e}");
        return EXIT_PROBE_FAILED;
    }
    let (format, output) = (cfg.format, cfg.output.clone());
    let rep = match selfprobe::run::plant(cfg, cleanup) {
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
    if let Err(e) = write_out(output.as_deref(), &text) {
        eprintln!("selfprobe: {e}");
        return EXIT_PROBE_FAILED;
    }
    0
}

fn run(args: RunArgs) -> i32 {
    let cfg = match args.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("selfprobe: {e}");
            return EXIT_USAGE;
        }
    };
    let cleanup = Arc::new(Cleanup::default());
    if let Err(e) = host::remove_on_signal(cleanup.clone()) {
        eprintln!("selfprobe: {e}");
        return EXIT_PROBE_FAILED;
    }
    let format = cfg.format;
    let output = cfg.output.clone();
    let report = selfprobe::run::execute(cfg, cleanup);
    let to_tty = output.is_none() && std::io::stdout().is_terminal();
    let color = to_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = match format {
        Format::Text => report::text::render(&report, color),
        Format::Json => report::json::render(&report),
        Format::Sarif => report::sarif::render(&report),
        Format::Junit => report::junit::render(&report),
    };
    let written = match &output {
        Some(path) => std::fs::write(path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display())),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the report to standard output: {e}")),
    };
    if let Err(e) = written {
        eprintln!("selfprobe: {e}");
        return EXIT_PROBE_FAILED;
    }
    report.summary.exit_code
}
