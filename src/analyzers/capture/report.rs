//! A plain-text report of one capture, for the CLI and for people reading a session.

use std::fmt::Write as _;

use super::backtrace::FrameSource;
use super::outcome::{
    Capture, CapturedStream, EndedBy, ExecutableFormat, NetworkIsolation, StreamEncoding,
};

/// Lines of each stream shown in the report; the Capture itself keeps everything up to its cap.
const SHOWN_LINES: usize = 40;
/// Bytes of each stream shown in the report.
const SHOWN_BYTES: usize = 4096;

/// Renders `capture` as a few readable paragraphs.
pub fn render_report(capture: &Capture) -> String {
    let mut out = String::new();
    let scenario = &capture.scenario;
    let mut command = shell_quote(&scenario.executable.to_string_lossy());
    for argument in &scenario.arguments {
        command.push(' ');
        command.push_str(&shell_quote(argument));
    }
    let _ = writeln!(out, "Process capture: {command}");
    let format = match &scenario.format {
        ExecutableFormat::Elf { machine } => format!("ELF ({machine})"),
        ExecutableFormat::Script { interpreter } => {
            format!("script run by {}", interpreter.display())
        }
    };
    let _ = writeln!(
        out,
        "  executable: {} [{format}]",
        scenario.resolved_executable.display()
    );
    let _ = writeln!(
        out,
        "  working directory: {}",
        scenario.working_directory.display()
    );
    let environment = if scenario.environment_names.is_empty() {
        "(empty)".to_owned()
    } else {
        format!(
            "{} (values redacted)",
            scenario.environment_names.join(", ")
        )
    };
    let _ = writeln!(out, "  environment: {environment}");
    let _ = writeln!(out, "  stdin: {} bytes", scenario.stdin_bytes);
    let network = match capture.network_isolation {
        NetworkIsolation::NetworkNamespace => "isolated (new network namespace)",
        NetworkIsolation::UserAndNetworkNamespace => "isolated (new user and network namespace)",
        NetworkIsolation::NotIsolated => "NOT isolated (the scenario allowed network access)",
    };
    let _ = writeln!(out, "  network: {network}");
    let limits = &capture.limits;
    let _ = writeln!(
        out,
        "  limits: wall {} ms, cpu {} s, memory {}, stdout {}, stderr {}, processes {}, core dumps {}",
        limits.wall_time_ms,
        limits.cpu_time_limit_seconds,
        bytes(limits.memory_bytes),
        bytes(limits.stdout_cap_bytes),
        bytes(limits.stderr_cap_bytes),
        limits.max_processes,
        if limits.core_dumps { "allowed" } else { "off" }
    );

    let _ = writeln!(out);
    let _ = writeln!(out, "Result: {}", capture.termination.describe());
    let ended = match capture.ended_by {
        EndedBy::WallTime => "the wall-time limit (group killed)",
        EndedBy::CpuTime => "the CPU-time limit",
        EndedBy::Memory => "the memory limit (inferred from the peak address space)",
        EndedBy::Output => "the output cap (group killed)",
        EndedBy::Cancelled => "cancellation (group killed)",
        EndedBy::None => "itself (no limit hit)",
    };
    let _ = writeln!(out, "  ended by: {ended}");
    let _ = writeln!(
        out,
        "  time: wall {} ms, cpu {} ms (user {}, system {})",
        capture.wall_time_ms,
        capture.cpu_time_ms,
        capture.user_cpu_time_ms,
        capture.system_cpu_time_ms
    );
    match &capture.leader_memory {
        Some(memory) => {
            let _ = writeln!(
                out,
                "  memory: peak RSS {}, peak address space {}",
                bytes(memory.peak_rss_bytes),
                bytes(memory.peak_virtual_bytes)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  memory: peak RSS {} (wait4, includes the pre-exec copy)",
                bytes(capture.peak_rss_bytes)
            );
        }
    }
    if !capture.traced {
        let _ = writeln!(out, "  tracing: refused by the system; no crash details");
    }
    if capture.leftover_processes.is_empty() {
        let _ = writeln!(out, "  cleanup: no process of the run left");
    } else {
        let _ = writeln!(
            out,
            "  cleanup: processes still present: {:?}",
            capture.leftover_processes
        );
    }

    if let Some(fault) = &capture.fault {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Fault: {} ({}), si_code {}",
            fault.signal.name, fault.signal.number, fault.code
        );
        if let Some(address) = &fault.address {
            let _ = writeln!(out, "  address: {address}");
        }
        let _ = writeln!(out, "  instruction pointer: {}", fault.instruction_pointer);
        match &fault.module {
            Some(module) => {
                let _ = writeln!(
                    out,
                    "  module: {} + {} (static address {})",
                    module.display(),
                    fault.module_offset.as_deref().unwrap_or("?"),
                    fault.static_address.as_deref().unwrap_or("unknown")
                );
            }
            None => {
                let _ = writeln!(out, "  module: none (anonymous memory, stack or vDSO)");
            }
        }
        if !fault.registers.is_empty() {
            let registers: Vec<String> = fault
                .registers
                .iter()
                .map(|r| format!("{} {}", r.name, r.value))
                .collect();
            // Four to a line, as debuggers print them.
            for line in registers.chunks(4) {
                let _ = writeln!(out, "  registers: {}", line.join(", "));
            }
        }
        if let Some(backtrace) = &fault.backtrace {
            let _ = writeln!(out, "  backtrace:");
            for frame in &backtrace.frames {
                let found_by = match frame.found_by {
                    FrameSource::Registers => "registers",
                    FrameSource::CallFrameInfo => "call frame info",
                    FrameSource::FramePointer => "frame pointer",
                };
                let _ = writeln!(
                    out,
                    "    #{} {} ({}, {found_by})",
                    frame.index,
                    frame.describe(),
                    frame.instruction_pointer
                );
            }
            let _ = writeln!(
                out,
                "    walk ended: {} ({})",
                backtrace.end.as_str(),
                backtrace.end_detail
            );
        }
    }

    for (name, stream) in [("stdout", &capture.stdout), ("stderr", &capture.stderr)] {
        let _ = writeln!(out);
        render_stream(&mut out, name, stream);
    }
    out
}

fn render_stream(out: &mut String, name: &str, stream: &CapturedStream) {
    let truncation = if stream.truncated {
        format!(", truncated: {} bytes written", stream.total_bytes)
    } else {
        String::new()
    };
    let encoding = match stream.encoding {
        StreamEncoding::Utf8 => "text",
        StreamEncoding::Base64 => "binary, shown as base64",
    };
    let _ = writeln!(
        out,
        "{name}: {} bytes ({encoding}{truncation})",
        stream.captured_bytes
    );
    if stream.data.is_empty() {
        return;
    }
    let mut shown = 0usize;
    for (index, line) in stream.data.lines().enumerate() {
        if index == SHOWN_LINES || shown >= SHOWN_BYTES {
            let _ = writeln!(out, "  | …");
            break;
        }
        let room = SHOWN_BYTES - shown;
        let line = if line.len() > room {
            let mut end = room;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            &line[..end]
        } else {
            line
        };
        shown += line.len() + 1;
        let _ = writeln!(out, "  | {line}");
    }
}

fn bytes(value: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if value < 1024 {
        return format!("{value} B");
    }
    let mut scaled = value as f64 / 1024.0;
    let mut unit = 0;
    while scaled >= 1024.0 && unit + 1 < UNITS.len() {
        scaled /= 1024.0;
        unit += 1;
    }
    format!("{scaled:.1} {}", UNITS[unit])
}

/// Quotes a word for display the way a POSIX shell would need it.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_sizes() {
        assert_eq!(shell_quote("/bin/sh"), "/bin/sh");
        assert_eq!(shell_quote("exit 3"), "'exit 3'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(2 * 1024 * 1024 * 1024), "2.0 GiB");
    }
}
