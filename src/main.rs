//! The `rea` binary: parses arguments, sets up tracing on stderr, runs the CLI, maps the result
//! to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A command piped into `head` ends the way Unix tools do when the reader goes: quietly, by
    // SIGPIPE. Rust ignores SIGPIPE, which turns every later print into an error or a panic.
    // Restored before parsing, so that `--help` ends the same way.
    // SAFETY: setting a signal's action, before any thread is started.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = rea::cli::Cli::parse();
    #[cfg(unix)]
    if matches!(cli.command, rea::cli::Command::Serve { .. }) {
        // The server keeps ignoring it: a client that closes its end must not kill the server
        // in the middle of a write it can report and recover from.
        // SAFETY: as above; no thread has been started yet.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
    tracing_subscriber::fmt()
        .with_writer(|| LossyStderr)
        .log_internal_errors(false)
        // Colour codes only for a person at a terminal: a log file or a client's pipe gets text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REA_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    match rea::cli::run(cli) {
        Ok(code) => code,
        // Output that could not be written because its reader left is not an error to report.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rea: {}", causes(&error));
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes, each said once: a cause whose message already ends (or holds) the
/// message before it is not repeated, and the message before it is cut to what it adds.
fn causes(error: &anyhow::Error) -> String {
    let messages: Vec<String> = error.chain().map(|c| c.to_string()).collect();
    let mut said: Vec<String> = vec![];
    for (i, message) in messages.iter().enumerate() {
        if said.iter().any(|s| s.contains(message.trim())) {
            continue;
        }
        let mut own = message.as_str();
        if let Some(next) = messages.get(i + 1)
            && let Some(head) = own.strip_suffix(next.as_str())
        {
            own = head.trim_end_matches([':', ' ', '\n']);
        }
        if !own.trim().is_empty() {
            said.push(own.to_owned());
        }
    }
    said.join(": ")
}

/// The log's stderr: a log line that cannot be written (stderr closed, or a pipe whose reader
/// left) is dropped. tracing's own writer would report the failure with `eprintln!`, which
/// panics on that same stderr, inside whatever request was logging: the request was never
/// answered.
struct LossyStderr;

impl std::io::Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}
