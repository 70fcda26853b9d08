//! A minimal command line over `probe_launch`, used by the end-to-end tests to
//! run a launcher in its own process (so it can be sent Ctrl-C or SIGTERM).
//! It is not ddp-probe's user-facing command line.
//!
//! ```text
//! probe-launch-harness [--nproc N] [--runs-root DIR] [--out DIR] [--grace-ms MS]
//!                      [--hang-timeout-ms MS] [--console rank0|all|quiet]
//!                      [--master-port PORT] [--max-restarts N] -- CMD ARGS...
//! ```
//!
//! It prints the outcome's summary on stderr and exits with its exit code.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use probe_launch::{launch, ConsoleObserver, LaunchConfig};

fn parse(mut args: impl Iterator<Item = OsString>) -> Result<LaunchConfig, String> {
    let mut config = LaunchConfig::new("", Vec::<OsString>::new());
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        if arg == "--" {
            config.program = args.next().ok_or("no command after --")?;
            config.args = args.collect();
            return Ok(config);
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{arg} needs a value"))?
            .to_string_lossy()
            .into_owned();
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{arg} {v}: {e}"));
        match arg.as_str() {
            "--nproc" => config.nproc_per_node = number(&value)? as usize,
            "--runs-root" => config.runs_root = PathBuf::from(value),
            "--out" => config.out_dir = Some(PathBuf::from(value)),
            "--grace-ms" => config.grace_period = Duration::from_millis(number(&value)?),
            "--hang-timeout-ms" => {
                config.hang_timeout = Some(Duration::from_millis(number(&value)?))
            }
            "--console" => config.console = value.parse().map_err(|e| format!("{e}"))?,
            "--master-port" => {
                config.master_port = Some(value.parse().map_err(|e| format!("{arg} {value}: {e}"))?)
            }
            "--max-restarts" => {
                config.max_restarts = value.parse().map_err(|e| format!("{arg} {value}: {e}"))?
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Err("no command; put it after --".to_owned())
}

fn main() -> ExitCode {
    let config = match parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("probe-launch-harness: {e}");
            return ExitCode::from(2);
        }
    };
    let code = match launch(&config, &mut ConsoleObserver) {
        Ok(outcome) => {
            eprintln!("{}", outcome.render_summary());
            outcome.exit_code
        }
        Err(e) => {
            eprintln!("probe-launch-harness: {e}");
            e.exit_code()
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
