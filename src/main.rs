//! The `rea` binary: parses arguments, sets up tracing on stderr, runs the CLI, maps the result
//! to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = rea::cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REA_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    match rea::cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("rea: {error:#}");
            ExitCode::FAILURE
        }
    }
}
