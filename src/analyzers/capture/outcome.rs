//! The typed result of one capture and the shared vocabulary (limits, signals, streams) used by
//! the scenario, the runner, the comparison and the report.
//!
//! A `Capture` holds no start time and no process id, so two runs of the same deterministic
//! program differ only in their measured times.

use std::path::PathBuf;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::backtrace::{Backtrace, RegisterValue};
use crate::ids::EvidenceId;

/// What happens when a program writes more than the cap to stdout or stderr.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OutputOverflow {
    /// Kill the whole process group as soon as either stream passes its cap; `ended_by` is then
    /// `output`. Keeps runaway writers bounded (the default).
    #[default]
    Kill,
    /// Keep reading and discarding past the cap so the program is never blocked on a full pipe,
    /// and let it finish (or hit another limit). `total_bytes` counts everything written.
    Discard,
}

/// The limits a run was started with, after defaults were filled in from the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limits {
    /// Wall-clock limit in milliseconds; the whole process group is killed when it passes.
    pub wall_time_ms: u64,
    /// CPU-time limit asked for, in milliseconds.
    pub cpu_time_ms: u64,
    /// The `RLIMIT_CPU` soft limit actually set, in whole seconds (the kernel counts seconds):
    /// `cpu_time_ms` rounded up. The hard limit is one second more.
    pub cpu_time_limit_seconds: u64,
    /// Address-space limit (`RLIMIT_AS`) in bytes.
    pub memory_bytes: u64,
    /// Bytes of stdout kept; more is counted and discarded, or kills the run (see
    /// `output_overflow`).
    pub stdout_cap_bytes: u64,
    /// Bytes of stderr kept, as for stdout.
    pub stderr_cap_bytes: u64,
    /// `RLIMIT_NPROC`: how many processes the user may have while the program runs. The kernel
    /// counts every process of the real user id, and does not enforce it for root.
    pub max_processes: u64,
    /// Whether core dumps were left to the system's settings (`true`) or disabled with
    /// `RLIMIT_CORE = 0` (`false`, the default).
    pub core_dumps: bool,
    /// What a stream past its cap does to the run.
    pub output_overflow: OutputOverflow,
}

/// The kind of executable that the policy approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExecutableFormat {
    /// An ELF executable or shared object for this machine's architecture.
    Elf {
        /// The ELF machine, for example `x86_64`.
        machine: String,
    },
    /// A `#!` script whose interpreter is an ELF for this machine inside the executable roots or
    /// a system directory.
    Script {
        /// The interpreter named on the `#!` line, resolved.
        interpreter: PathBuf,
    },
}

/// The scenario as it was run, with environment values left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioEcho {
    /// The executable as the scenario named it (also passed as `argv[0]`).
    pub executable: PathBuf,
    /// The executable that was started: symlinks and `..` resolved.
    pub resolved_executable: PathBuf,
    /// What kind of executable it is.
    pub format: ExecutableFormat,
    /// The arguments after `argv[0]`.
    pub arguments: Vec<String>,
    /// The working directory, resolved.
    pub working_directory: PathBuf,
    /// Names of the environment variables passed (values are redacted); the environment held
    /// nothing else.
    pub environment_names: Vec<String>,
    /// How many bytes were offered on stdin before it was closed.
    pub stdin_bytes: u64,
    /// Whether the scenario allowed network access.
    pub network: bool,
}

/// How the program was kept off the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetworkIsolation {
    /// A new network namespace (no interfaces but its own loopback): the host's network and
    /// loopback services are unreachable.
    NetworkNamespace,
    /// A new user namespace holding a new network namespace (used when creating a network
    /// namespace alone was not permitted); same isolation, with the user id mapped to itself.
    UserAndNetworkNamespace,
    /// Not isolated: the scenario asked for network access and the policy allowed it.
    NotIsolated,
}

/// A signal, by number and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SignalId {
    /// The signal number on this machine (Linux numbering).
    pub number: i32,
    /// The conventional name, for example `SIGSEGV`; `SIGRTMIN+n` for real-time signals.
    pub name: String,
}

impl SignalId {
    /// The signal with this number.
    pub fn from_number(number: i32) -> SignalId {
        SignalId {
            number,
            name: signal_name(number),
        }
    }
}

/// How the program's first process (the group leader) ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Termination {
    /// It called `exit` (or returned from `main`).
    Exited {
        /// The exit code, 0 to 255.
        code: i32,
    },
    /// A signal ended it.
    Signaled {
        /// The signal.
        signal: SignalId,
        /// Whether the kernel reported a core dump.
        core_dumped: bool,
    },
}

impl Termination {
    /// A one-line description such as `exit code 3` or `signal SIGSEGV (11)`.
    pub fn describe(&self) -> String {
        match self {
            Termination::Exited { code } => format!("exit code {code}"),
            Termination::Signaled {
                signal,
                core_dumped,
            } => format!(
                "signal {} ({}){}",
                signal.name,
                signal.number,
                if *core_dumped { ", core dumped" } else { "" }
            ),
        }
    }
}

/// Which limit ended the run, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndedBy {
    /// The wall-clock limit passed and the group was killed.
    WallTime,
    /// `RLIMIT_CPU` ended the program (`SIGXCPU`, or `SIGKILL` at the hard limit).
    CpuTime,
    /// Inferred: the program failed while its peak address space was within 10% of
    /// `RLIMIT_AS`, so an allocation most likely failed. The kernel does not report this directly.
    Memory,
    /// A stream passed its cap and `output_overflow` was `kill`.
    Output,
    /// The caller cancelled the run and the group was killed.
    Cancelled,
    /// No limit: the program ended by itself.
    None,
}

impl EndedBy {
    /// The wire name, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            EndedBy::WallTime => "wall_time",
            EndedBy::CpuTime => "cpu_time",
            EndedBy::Memory => "memory",
            EndedBy::Output => "output",
            EndedBy::Cancelled => "cancelled",
            EndedBy::None => "none",
        }
    }
}

/// How a stream's bytes are written in `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StreamEncoding {
    /// `data` is the bytes as UTF-8 text.
    Utf8,
    /// The bytes were not UTF-8; `data` is standard base64 with padding.
    Base64,
}

/// What the program wrote to stdout or stderr.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapturedStream {
    /// How `data` encodes the kept bytes.
    pub encoding: StreamEncoding,
    /// The kept bytes (at most the cap), as text or base64.
    pub data: String,
    /// How many bytes were kept.
    pub captured_bytes: u64,
    /// How many bytes were read in all, kept or discarded. With `output_overflow = kill` this
    /// stops shortly after the cap.
    pub total_bytes: u64,
    /// Whether bytes were discarded: the stream went past its cap.
    pub truncated: bool,
    /// Set when `data` holds only the first bytes of the kept bytes, so that the result fits the
    /// message bound; every kept byte is then in a chain of Evidence pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_truncated: Option<DataTruncated>,
}

/// Where the kept bytes of a stream cut for the message bound are: `pages` Evidence records of
/// operation `capture_output_page`, the first named here and each naming the next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DataTruncated {
    /// How many of the kept bytes `data` holds (a prefix).
    pub inline_bytes: u64,
    /// How many pages hold all `captured_bytes`.
    pub pages: u64,
    /// The first page (read it with get_evidence; its `next_page` names the next).
    pub first_page: EvidenceId,
}

impl CapturedStream {
    /// Builds the stream from the kept bytes. Text that is valid UTF-8 except for a sequence cut
    /// at the cap stays text (the cut bytes are dropped); anything else becomes base64.
    pub fn from_bytes(kept: &[u8], total_bytes: u64, truncated: bool) -> CapturedStream {
        let (encoding, data, captured) = match std::str::from_utf8(kept) {
            Ok(text) => (StreamEncoding::Utf8, text.to_owned(), kept.len()),
            Err(error) if truncated && error.error_len().is_none() => {
                let valid = &kept[..error.valid_up_to()];
                let text = String::from_utf8_lossy(valid).into_owned();
                (StreamEncoding::Utf8, text, valid.len())
            }
            Err(_) => (
                StreamEncoding::Base64,
                base64::engine::general_purpose::STANDARD.encode(kept),
                kept.len(),
            ),
        };
        CapturedStream {
            encoding,
            data,
            captured_bytes: captured as u64,
            total_bytes,
            truncated,
            data_truncated: None,
        }
    }

    /// The kept bytes, decoded from `data`. `None` if `data` is not valid for its encoding
    /// (only possible for a hand-made value).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self.encoding {
            StreamEncoding::Utf8 => Some(self.data.clone().into_bytes()),
            StreamEncoding::Base64 => base64::engine::general_purpose::STANDARD
                .decode(&self.data)
                .ok(),
        }
    }
}

/// Where a crashing program faulted (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), read while the
/// fatal signal was stopped under ptrace, before it was delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Fault {
    /// The signal that ended the program.
    pub signal: SignalId,
    /// `si_code` of the signal: positive when the kernel raised it for a fault (for SIGSEGV, 1
    /// is an unmapped address and 2 a permission fault), zero or negative when a process sent
    /// it (`abort`, `kill`).
    pub code: i32,
    /// The faulting data address (`si_addr`), lowercase `0x` hex; absent when a process sent the
    /// signal, where the field means nothing.
    pub address: Option<String>,
    /// The instruction pointer at the fault, lowercase `0x` hex (run-time address).
    pub instruction_pointer: String,
    /// The file mapped at the instruction pointer (from `/proc/<pid>/maps`); absent for
    /// anonymous memory, the stack or the vDSO.
    pub module: Option<PathBuf>,
    /// The instruction pointer as an offset into `module`'s file:
    /// `ip - mapping start + mapping file offset`, lowercase `0x` hex.
    pub module_offset: Option<String>,
    /// `module_offset` as a virtual address of the module's ELF image (the address a
    /// disassembler shows): the `PT_LOAD` segment holding the offset gives
    /// `offset - p_offset + p_vaddr`. Absent when the module is not an ELF or no segment holds it.
    pub static_address: Option<String>,
    /// The general registers at the fault, lowercase `0x` hex, in gdb's order (x86-64: `rax`,
    /// `rbx`, `rcx`, `rdx`, `rsi`, `rdi`, `rbp`, `rsp`, `r8`–`r15`, `rip`, `eflags`, the
    /// segment registers, `fs_base`, `gs_base`, `orig_rax`; AArch64: `x0`–`x30`, `sp`, `pc`,
    /// `pstate`). Empty in captures recorded before registers were kept.
    #[serde(default)]
    pub registers: Vec<RegisterValue>,
    /// The call stack at the fault, innermost frame first, each frame placed in a module with a
    /// static address, and why the walk ended. Absent in captures recorded before backtraces
    /// were kept.
    #[serde(default)]
    pub backtrace: Option<Backtrace>,
}

/// Peak memory of the group leader, read at its exit (absent when it was killed with SIGKILL,
/// which allows no exit stop).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeaderMemory {
    /// Peak resident set of the program image (`VmHWM`), in bytes.
    pub peak_rss_bytes: u64,
    /// Peak address-space size (`VmPeak`), in bytes; compare with `limits.memory_bytes`.
    pub peak_virtual_bytes: u64,
}

/// One bounded, policy-approved run of a program, observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capture {
    /// The scenario that was run, with environment values redacted.
    pub scenario: ScenarioEcho,
    /// The limits the run was started with.
    pub limits: Limits,
    /// How the program was kept off the network.
    pub network_isolation: NetworkIsolation,
    /// Whether the leader ran under ptrace, which `fault` and `leader_memory` need; false when
    /// the system refused tracing (the run itself is unaffected).
    pub traced: bool,
    /// How the first process (the group leader) ended.
    pub termination: Termination,
    /// Which limit ended the run, or `none`.
    pub ended_by: EndedBy,
    /// Wall-clock time from start to the leader's end, in milliseconds.
    pub wall_time_ms: u64,
    /// User CPU time of the leader and the children it waited for, in milliseconds.
    pub user_cpu_time_ms: u64,
    /// System CPU time of the leader and the children it waited for, in milliseconds.
    pub system_cpu_time_ms: u64,
    /// `user_cpu_time_ms + system_cpu_time_ms`.
    pub cpu_time_ms: u64,
    /// `ru_maxrss` from `wait4`, in bytes: the largest resident set of the leader or a child it
    /// waited for. Linux counts the forked copy of the capturing process before `exec` in this
    /// figure, so it can exceed the program's own peak; `leader_memory` has the program's own.
    pub peak_rss_bytes: u64,
    /// The leader's own peak memory, read at its exit.
    pub leader_memory: Option<LeaderMemory>,
    /// What the program wrote to stdout.
    pub stdout: CapturedStream,
    /// What the program wrote to stderr.
    pub stderr: CapturedStream,
    /// Where it crashed, when a crash signal ended the leader.
    pub fault: Option<Fault>,
    /// Process ids of the run's session or process group still present after cleanup. Empty
    /// unless a process could not be killed (for example one stuck in uninterruptible sleep).
    pub leftover_processes: Vec<u32>,
}

/// The conventional name of a Linux signal number.
pub fn signal_name(number: i32) -> String {
    let name = match number {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        23 => "SIGURG",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        28 => "SIGWINCH",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        34 => "SIGRTMIN",
        64 => "SIGRTMAX",
        35..=63 => return format!("SIGRTMIN+{}", number - 34),
        _ => return format!("signal {number}"),
    };
    name.to_owned()
}

/// Formats an address the way the rest of rea does: lowercase `0x` hex.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn hex(value: u64) -> String {
    format!("{value:#x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(signal_name(36), "SIGRTMIN+2");
        assert_eq!(signal_name(99), "signal 99");
    }

    #[test]
    fn streams_pick_an_encoding() {
        let text = CapturedStream::from_bytes(b"hello\n", 6, false);
        assert_eq!(text.encoding, StreamEncoding::Utf8);
        assert_eq!(text.data, "hello\n");
        let binary = CapturedStream::from_bytes(&[0xff, 0x00, 0x41], 3, false);
        assert_eq!(binary.encoding, StreamEncoding::Base64);
        assert_eq!(binary.bytes().unwrap(), vec![0xff, 0x00, 0x41]);
        // "é" is two bytes; a cap after the first keeps the text and drops the cut byte.
        let cut = CapturedStream::from_bytes(&[b'a', 0xc3], 10, true);
        assert_eq!(cut.encoding, StreamEncoding::Utf8);
        assert_eq!(cut.data, "a");
        assert_eq!(cut.captured_bytes, 1);
    }

    /// Every property of every object in `schema` (including `$defs`) has a description.
    fn assert_documented(schema: &serde_json::Value, at: &str) {
        if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
            for (name, property) in properties {
                // The tag of an internally tagged enum is a bare constant; the variant carries
                // the description.
                let is_tag = property.get("const").is_some();
                assert!(
                    is_tag || property.get("description").is_some(),
                    "{at}.{name} has no description"
                );
            }
        }
        if let Some(object) = schema.as_object() {
            for (key, value) in object {
                if value.is_object() || value.is_array() {
                    assert_documented(value, &format!("{at}/{key}"));
                }
            }
        }
        if let Some(items) = schema.as_array() {
            for (index, item) in items.iter().enumerate() {
                assert_documented(item, &format!("{at}[{index}]"));
            }
        }
    }

    #[test]
    fn result_schemas_document_every_field() {
        use crate::analyzers::capture::{CaptureComparison, Policy, Scenario};
        for (name, schema) in [
            ("Capture", schemars::schema_for!(Capture)),
            (
                "CaptureComparison",
                schemars::schema_for!(CaptureComparison),
            ),
            ("Scenario", schemars::schema_for!(Scenario)),
            ("Policy", schemars::schema_for!(Policy)),
        ] {
            assert_documented(&serde_json::to_value(schema).unwrap(), name);
        }
    }

    #[test]
    fn faults_recorded_before_backtraces_still_parse() {
        let old = serde_json::json!({
            "signal": {"number": 11, "name": "SIGSEGV"},
            "code": 1,
            "address": "0x0",
            "instruction_pointer": "0x55d0c0a01139",
            "module": "/tmp/prog",
            "module_offset": "0x1139",
            "static_address": "0x1139",
        });
        let fault: Fault = serde_json::from_value(old).unwrap();
        assert!(fault.registers.is_empty());
        assert_eq!(fault.backtrace, None);
    }

    #[test]
    fn wire_names() {
        assert_eq!(
            serde_json::to_string(&EndedBy::WallTime).unwrap(),
            "\"wall_time\""
        );
        let termination = Termination::Signaled {
            signal: SignalId::from_number(11),
            core_dumped: false,
        };
        let json = serde_json::to_value(&termination).unwrap();
        assert_eq!(json["kind"], "signaled");
        assert_eq!(json["signal"]["name"], "SIGSEGV");
    }
}
