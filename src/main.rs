//! The `ddp-probe` command line: argument parsing and dispatch only. The work is done by the
//! library crates (`probe-launch` launches, `probe` reads and exports traces).

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, ExportCommand, ImportCommand};

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    init_logging(cli.verbose);
    if cli.strict {
        // Every reader of traces (the loader, report, explain, tui) follows the variable, so one
        // flag sets the rule for all of them, in this process only: ranks started by `run` do
        // not read traces.
        std::env::set_var(probe::reader::STRICT_ENV, "1");
    }
    let result = match cli.command {
        Command::Run(args) => commands::run::run(*args),
        Command::Summary(args) => commands::analyze::summary(args),
        Command::Advise(args) => commands::analyze::advise(args),
        Command::Compare(args) => commands::analyze::compare(args),
        Command::Explain(args) => commands::explain::explain(args),
        Command::Export(ExportCommand::Chrome(args)) => commands::export::chrome(args),
        Command::Tui(args) => commands::tui::tui(args),
        Command::Report(args) => commands::report::report(args),
        Command::Scale(args) => commands::scale::scale(args),
        Command::Tune(args) => commands::tune::tune(args),
        Command::Import(ImportCommand::Kineto(args)) => commands::import::kineto(args),
        Command::Breakdown(args) => commands::import::breakdown(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("ddp-probe: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs of ddp-probe itself go to stderr: warnings by default, more with `-v`/`-vv` or RUST_LOG.
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

/// Output piped into `head` and closed early ends the program quietly, as for other command-line
/// tools, instead of a panic in `println!` (Rust ignores SIGPIPE by default).
fn restore_sigpipe() {
    // SAFETY: setting a signal's disposition to its default at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
