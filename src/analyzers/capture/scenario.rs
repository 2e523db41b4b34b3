//! The scenario an agent asks to run, and the policy check that turns it into an
//! `ApprovedScenario` or a `Refusal`. Checking reads files but never starts anything.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::outcome::{ExecutableFormat, Limits, OutputOverflow, ScenarioEcho};
use super::policy::{Policy, is_valid_variable_name};
use crate::vocabulary::Format;

/// Directories whose interpreters (`/usr/bin/sh`, `/usr/bin/python3`, …) a `#!` script may
/// name even when they lie outside the executable roots.
pub const SYSTEM_INTERPRETER_DIRECTORIES: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// One run the agent asks for. Nothing runs unless `approved` is true and the `[capture]` policy
/// allows every part of it; limits left out take the policy's ceilings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Must be `true`: the person driving the agent approved this exact run. Missing means
    /// `false`, and the run is refused.
    #[serde(default)]
    pub approved: bool,
    /// Absolute path of the program: an ELF for this machine, or a `#!` script. It must lie
    /// inside the policy's executable roots once symlinks and `..` are resolved.
    pub executable: PathBuf,
    /// Arguments after `argv[0]` (which is `executable` as written).
    #[serde(default)]
    pub arguments: Vec<String>,
    /// Directory to run in; it must lie inside the policy's working-directory roots once
    /// resolved.
    pub working_directory: PathBuf,
    /// The program's whole environment: each name must be in the policy's
    /// `allowed_environment`. Nothing else is inherited (not even `PATH`).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Text to write to stdin before closing it. At most one of `stdin` and `stdin_base64`;
    /// with neither, stdin is empty.
    #[serde(default)]
    pub stdin: Option<String>,
    /// Bytes to write to stdin, as standard base64, for input that is not text.
    #[serde(default)]
    pub stdin_base64: Option<String>,
    /// Wall-clock limit in milliseconds (default: the policy ceiling). The whole process group
    /// is killed when it passes.
    #[serde(default)]
    pub wall_time_ms: Option<u64>,
    /// CPU-time limit in milliseconds (default: the policy ceiling), enforced by `RLIMIT_CPU`
    /// in whole seconds, rounded up.
    #[serde(default)]
    pub cpu_time_ms: Option<u64>,
    /// Address-space limit (`RLIMIT_AS`) in bytes (default: the policy ceiling).
    #[serde(default)]
    pub memory_bytes: Option<u64>,
    /// Bytes of stdout to keep (default: the policy ceiling).
    #[serde(default)]
    pub stdout_cap_bytes: Option<u64>,
    /// Bytes of stderr to keep (default: the policy ceiling).
    #[serde(default)]
    pub stderr_cap_bytes: Option<u64>,
    /// `RLIMIT_NPROC` for the run (default: the policy ceiling).
    #[serde(default)]
    pub max_processes: Option<u64>,
    /// What a stream past its cap does: `kill` the group (default) or `discard` the excess and
    /// let the program go on.
    #[serde(default)]
    pub output_overflow: OutputOverflow,
    /// Whether the program may use the network (default `false`: it runs in a new, empty
    /// network namespace, and is not started if one cannot be made). `true` needs the policy's
    /// `allow_network`.
    #[serde(default)]
    pub network: bool,
    /// Whether core dumps follow the system's settings (default `false`: `RLIMIT_CORE = 0`).
    #[serde(default)]
    pub core_dumps: bool,
}

/// A scenario the policy approved, with every path resolved and every limit filled in. Only
/// `check` makes one, so holding one means the checks passed.
#[derive(Debug, Clone)]
pub struct ApprovedScenario {
    scenario: Scenario,
    executable: PathBuf,
    /// What the run checks the executable against before it starts it (Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    identity: FileIdentity,
    format: ExecutableFormat,
    working_directory: PathBuf,
    stdin: Vec<u8>,
    limits: Limits,
}

/// Device and inode of the approved executable, so a file swapped in after the check is noticed
/// before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    pub(crate) device: u64,
    pub(crate) inode: u64,
}

impl FileIdentity {
    #[cfg(unix)]
    pub(crate) fn of(metadata: &std::fs::Metadata) -> FileIdentity {
        use std::os::unix::fs::MetadataExt as _;
        FileIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn of(_metadata: &std::fs::Metadata) -> FileIdentity {
        FileIdentity {
            device: 0,
            inode: 0,
        }
    }
}

impl ApprovedScenario {
    /// The scenario as the agent sent it.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The executable to start: symlinks and `..` resolved.
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// The working directory, resolved.
    pub fn working_directory(&self) -> &Path {
        &self.working_directory
    }

    /// The bytes to write to stdin.
    pub fn stdin(&self) -> &[u8] {
        &self.stdin
    }

    /// The limits the run will use.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn identity(&self) -> FileIdentity {
        self.identity
    }

    /// The scenario as a result echoes it: environment names only.
    pub fn echo(&self) -> ScenarioEcho {
        ScenarioEcho {
            executable: self.scenario.executable.clone(),
            resolved_executable: self.executable.clone(),
            format: self.format.clone(),
            arguments: self.scenario.arguments.clone(),
            working_directory: self.working_directory.clone(),
            environment_names: self.scenario.environment.keys().cloned().collect(),
            stdin_bytes: self.stdin.len() as u64,
            network: self.scenario.network,
        }
    }
}

/// Why a scenario was not run. Nothing was started.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The policy has `enabled = false` (or there is no `[capture]` table).
    #[error(
        "process capture is disabled: set `enabled = true` in the [capture] table of rea.toml to allow it"
    )]
    Disabled,
    /// `approved` was missing or false.
    #[error("the scenario is not approved: a person must approve the run and set `approved: true`")]
    NotApproved,
    /// A path was relative; it would depend on the server's own working directory.
    #[error("`{field}` must be an absolute path, not {path}")]
    RelativePath {
        /// The scenario field.
        field: &'static str,
        /// The path given.
        path: PathBuf,
    },
    /// The executable path does not exist or cannot be resolved.
    #[error("cannot resolve the executable {path}: {source}")]
    ExecutableNotFound {
        /// The path the scenario gave.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The resolved executable lies outside every executable root.
    #[error(
        "the executable {path} (resolved to {resolved}) is outside the policy's executable_roots"
    )]
    ExecutableOutsideRoots {
        /// The path the scenario gave.
        path: PathBuf,
        /// Where it leads once symlinks and `..` are resolved.
        resolved: PathBuf,
    },
    /// The executable is not a regular file with an execute bit.
    #[error("{path} is not an executable regular file")]
    NotExecutable {
        /// The resolved path.
        path: PathBuf,
    },
    /// The working directory does not exist, is not a directory, or cannot be resolved.
    #[error("the working directory {path} cannot be used: {reason}")]
    WorkingDirectoryInvalid {
        /// The path the scenario gave.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The resolved working directory lies outside every working-directory root.
    #[error(
        "the working directory {path} (resolved to {resolved}) is outside the policy's working_directory_roots"
    )]
    WorkingDirectoryOutsideRoots {
        /// The path the scenario gave.
        path: PathBuf,
        /// Where it leads once resolved.
        resolved: PathBuf,
    },
    /// An environment variable is not in `allowed_environment`.
    #[error(
        "environment variable `{name}` is not allowed: add it to allowed_environment in the [capture] policy or leave it out"
    )]
    EnvironmentNotAllowed {
        /// The variable's name.
        name: String,
    },
    /// A name or value cannot be passed to a program (`=` in a name, NUL anywhere).
    #[error("environment variable `{name}` cannot be passed: {reason}")]
    InvalidEnvironment {
        /// The variable's name (possibly the bad one).
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An argument holds a NUL byte, which no program can receive.
    #[error("argument {index} contains a NUL byte")]
    InvalidArgument {
        /// Position in `arguments`, from 0.
        index: usize,
    },
    /// The scenario asked for network access and the policy does not allow it.
    #[error("the scenario asks for network access but the policy does not set allow_network")]
    NetworkNotAllowed,
    /// A limit is zero or above the policy's ceiling.
    #[error("{limit} = {requested} is not allowed: it must be between 1 and {ceiling}")]
    LimitOutOfRange {
        /// The scenario field.
        limit: &'static str,
        /// What was asked.
        requested: u64,
        /// The policy's ceiling.
        ceiling: u64,
    },
    /// stdin is given twice, is not valid base64, or is larger than the policy allows.
    #[error("stdin cannot be used: {reason}")]
    InvalidStdin {
        /// What is wrong.
        reason: String,
    },
    /// The executable is a format this machine cannot run (Mach-O, PE, an ELF for another
    /// architecture, an unknown format, or a script whose interpreter is not allowed).
    #[error("{path} cannot be run on this machine: {reason}")]
    Unsupported {
        /// The resolved path.
        path: PathBuf,
        /// The format found and why it is refused.
        reason: String,
    },
}

/// Checks `scenario` against `policy`. On success nothing has run yet; on refusal nothing will.
pub fn check(policy: &Policy, scenario: &Scenario) -> Result<ApprovedScenario, Refusal> {
    if !policy.enabled {
        return Err(Refusal::Disabled);
    }
    if !scenario.approved {
        return Err(Refusal::NotApproved);
    }
    for (field, path) in [
        ("executable", &scenario.executable),
        ("working_directory", &scenario.working_directory),
    ] {
        if !path.is_absolute() {
            return Err(Refusal::RelativePath {
                field,
                path: path.clone(),
            });
        }
    }

    let executable = std::fs::canonicalize(&scenario.executable).map_err(|source| {
        Refusal::ExecutableNotFound {
            path: scenario.executable.clone(),
            source,
        }
    })?;
    if !inside_any(&executable, &policy.executable_roots) {
        return Err(Refusal::ExecutableOutsideRoots {
            path: scenario.executable.clone(),
            resolved: executable,
        });
    }

    let working_directory = std::fs::canonicalize(&scenario.working_directory).map_err(|e| {
        Refusal::WorkingDirectoryInvalid {
            path: scenario.working_directory.clone(),
            reason: e.to_string(),
        }
    })?;
    if !working_directory.is_dir() {
        return Err(Refusal::WorkingDirectoryInvalid {
            path: scenario.working_directory.clone(),
            reason: "not a directory".to_owned(),
        });
    }
    if !inside_any(&working_directory, &policy.working_directory_roots) {
        return Err(Refusal::WorkingDirectoryOutsideRoots {
            path: scenario.working_directory.clone(),
            resolved: working_directory,
        });
    }

    for (name, value) in &scenario.environment {
        if !is_valid_variable_name(name) {
            return Err(Refusal::InvalidEnvironment {
                name: name.clone(),
                reason: "a name must be non-empty and contain neither `=` nor NUL".to_owned(),
            });
        }
        if !policy.allows_variable(name) {
            return Err(Refusal::EnvironmentNotAllowed { name: name.clone() });
        }
        if value.contains('\0') {
            return Err(Refusal::InvalidEnvironment {
                name: name.clone(),
                reason: "the value contains a NUL byte".to_owned(),
            });
        }
    }
    if let Some(index) = scenario.arguments.iter().position(|a| a.contains('\0')) {
        return Err(Refusal::InvalidArgument { index });
    }
    if scenario.network && !policy.allow_network {
        return Err(Refusal::NetworkNotAllowed);
    }

    let limits = resolve_limits(policy, scenario)?;
    let stdin = resolve_stdin(policy, scenario)?;

    // The format is judged before the permission bits so a Mach-O or PE is reported as what it
    // is, even when it happens to carry an execute bit.
    let format = classify_executable(&executable, policy)?;
    let metadata =
        std::fs::metadata(&executable).map_err(|source| Refusal::ExecutableNotFound {
            path: scenario.executable.clone(),
            source,
        })?;
    if !metadata.is_file() || !has_execute_bit(&metadata) {
        return Err(Refusal::NotExecutable { path: executable });
    }

    Ok(ApprovedScenario {
        scenario: scenario.clone(),
        identity: FileIdentity::of(&metadata),
        executable,
        format,
        working_directory,
        stdin,
        limits,
    })
}

/// Whether `path` (already resolved) lies inside one of `roots` (resolved here; roots that do
/// not exist are skipped). `Path::starts_with` compares whole components, so `/opt/app2` is not
/// inside `/opt/app`.
fn inside_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| {
        std::fs::canonicalize(root)
            .map(|root| path.starts_with(root))
            .unwrap_or(false)
    })
}

#[cfg(unix)]
fn has_execute_bit(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn has_execute_bit(_metadata: &std::fs::Metadata) -> bool {
    false
}

/// Fills in absent limits from the policy and refuses any outside `1..=ceiling`.
fn resolve_limits(policy: &Policy, scenario: &Scenario) -> Result<Limits, Refusal> {
    let pick = |limit: &'static str, requested: Option<u64>, ceiling: u64| match requested {
        None => Ok(ceiling),
        Some(value) if value >= 1 && value <= ceiling => Ok(value),
        Some(value) => Err(Refusal::LimitOutOfRange {
            limit,
            requested: value,
            ceiling,
        }),
    };
    let wall_time_ms = pick(
        "wall_time_ms",
        scenario.wall_time_ms,
        policy.max_wall_time_ms,
    )?;
    let cpu_time_ms = pick("cpu_time_ms", scenario.cpu_time_ms, policy.max_cpu_time_ms)?;
    let memory_bytes = pick(
        "memory_bytes",
        scenario.memory_bytes,
        policy.max_memory_bytes,
    )?;
    let stdout_cap_bytes = pick(
        "stdout_cap_bytes",
        scenario.stdout_cap_bytes,
        policy.max_output_bytes,
    )?;
    let stderr_cap_bytes = pick(
        "stderr_cap_bytes",
        scenario.stderr_cap_bytes,
        policy.max_output_bytes,
    )?;
    let max_processes = pick(
        "max_processes",
        scenario.max_processes,
        policy.max_processes,
    )?;
    Ok(Limits {
        wall_time_ms,
        cpu_time_ms,
        cpu_time_limit_seconds: cpu_time_ms.div_ceil(1000),
        memory_bytes,
        stdout_cap_bytes,
        stderr_cap_bytes,
        max_processes,
        core_dumps: scenario.core_dumps,
        output_overflow: scenario.output_overflow,
    })
}

fn resolve_stdin(policy: &Policy, scenario: &Scenario) -> Result<Vec<u8>, Refusal> {
    let bytes = match (&scenario.stdin, &scenario.stdin_base64) {
        (Some(_), Some(_)) => {
            return Err(Refusal::InvalidStdin {
                reason: "give either `stdin` or `stdin_base64`, not both".to_owned(),
            });
        }
        (Some(text), None) => text.as_bytes().to_vec(),
        (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| Refusal::InvalidStdin {
                reason: format!("`stdin_base64` is not standard base64: {e}"),
            })?,
        (None, None) => Vec::new(),
    };
    if bytes.len() as u64 > policy.max_stdin_bytes {
        return Err(Refusal::InvalidStdin {
            reason: format!(
                "{} bytes is more than the policy's max_stdin_bytes ({})",
                bytes.len(),
                policy.max_stdin_bytes
            ),
        });
    }
    Ok(bytes)
}

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Detected {
    /// An ELF image.
    Elf {
        /// `EI_CLASS`: 1 for 32-bit, 2 for 64-bit.
        class: u8,
        /// `EI_DATA`: 1 little-endian, 2 big-endian.
        data: u8,
        /// `e_machine`.
        machine: u16,
        /// `e_type`.
        kind: u16,
    },
    /// A Mach-O image, thin or universal.
    MachO(&'static str),
    /// A DOS/PE image.
    Pe,
    /// A `#!` script naming this interpreter path (as written).
    Script(PathBuf),
    /// A `#!` line that names no absolute interpreter.
    BadScript(String),
    /// Anything else.
    Unknown,
}

/// The ELF `e_machine` this build runs on, if it is one we know how to check.
pub(crate) const HOST_ELF_MACHINE: Option<u16> = if cfg!(target_arch = "x86_64") {
    Some(62)
} else if cfg!(target_arch = "aarch64") {
    Some(183)
} else {
    None
};

const HOST_ELF_CLASS: u8 = if cfg!(target_pointer_width = "64") {
    2
} else {
    1
};

const HOST_ELF_DATA: u8 = if cfg!(target_endian = "little") { 1 } else { 2 };

/// The kernel reads at most this many bytes of a `#!` line.
const SHEBANG_LEN: usize = 256;

/// Recognizes a format from a file's first bytes and its length: native images by the one
/// sniffer rea has (`providers::native`), scripts by their `#!` line.
pub(crate) fn detect(header: &[u8], len: u64) -> Detected {
    match crate::providers::native::sniff(header, len) {
        Format::Elf => {
            let data = header[5];
            let read16 = |at: usize| {
                let bytes = [header[at], header[at + 1]];
                if data == 2 {
                    u16::from_be_bytes(bytes)
                } else {
                    u16::from_le_bytes(bytes)
                }
            };
            return Detected::Elf {
                class: header[4],
                data,
                kind: read16(16),
                machine: read16(18),
            };
        }
        Format::MachO if crate::providers::native::macho_is_64(header) => {
            return Detected::MachO("64-bit Mach-O");
        }
        Format::MachO => return Detected::MachO("32-bit Mach-O"),
        Format::MachOUniversal => return Detected::MachO("universal (fat) Mach-O"),
        Format::Pe => return Detected::Pe,
        _ => {}
    }
    let first = &header[..header.len().min(SHEBANG_LEN)];
    if let Some(rest) = first.strip_prefix(b"#!") {
        let line = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
        let line = String::from_utf8_lossy(line);
        let interpreter = line.split([' ', '\t']).find(|part| !part.is_empty());
        return match interpreter {
            Some(path) if path.starts_with('/') => Detected::Script(PathBuf::from(path)),
            _ => Detected::BadScript(line.trim().to_owned()),
        };
    }
    Detected::Unknown
}

/// A readable name for an ELF machine number.
pub(crate) fn elf_machine_name(machine: u16) -> String {
    match machine {
        3 => "x86".to_owned(),
        8 => "MIPS".to_owned(),
        20 => "PowerPC".to_owned(),
        21 => "PowerPC64".to_owned(),
        22 => "s390".to_owned(),
        40 => "ARM".to_owned(),
        62 => "x86_64".to_owned(),
        183 => "AArch64".to_owned(),
        243 => "RISC-V".to_owned(),
        258 => "LoongArch".to_owned(),
        other => format!("ELF machine {other}"),
    }
}

/// The first bytes of `path` (as many as the sniffer reads) and the file's length.
pub(crate) fn read_header(path: &Path) -> std::io::Result<(Vec<u8>, u64)> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut header = Vec::with_capacity(SHEBANG_LEN);
    file.take(crate::providers::native::HEAD_LEN as u64)
        .read_to_end(&mut header)?;
    Ok((header, len))
}

/// Whether an ELF header describes a program this machine runs; `Err` says why not.
fn host_elf(class: u8, data: u8, machine: u16, kind: u16) -> Result<String, String> {
    let name = elf_machine_name(machine);
    if HOST_ELF_MACHINE != Some(machine) || class != HOST_ELF_CLASS || data != HOST_ELF_DATA {
        let bits = if class == 1 { "32-bit" } else { "64-bit" };
        return Err(format!(
            "it is a {bits} ELF for {name}, not for this machine ({})",
            std::env::consts::ARCH
        ));
    }
    // ET_EXEC and ET_DYN (position-independent executables) run; relocatable objects and core
    // files do not.
    if kind != 2 && kind != 3 {
        return Err(format!("it is an ELF of type {kind}, not an executable"));
    }
    Ok(name)
}

/// Decides whether the resolved executable may run, and as what.
fn classify_executable(path: &Path, policy: &Policy) -> Result<ExecutableFormat, Refusal> {
    let unsupported = |reason: String| Refusal::Unsupported {
        path: path.to_path_buf(),
        reason,
    };
    let (header, len) =
        read_header(path).map_err(|e| unsupported(format!("cannot read it: {e}")))?;
    match detect(&header, len) {
        Detected::Elf {
            class,
            data,
            machine,
            kind,
        } => host_elf(class, data, machine, kind)
            .map(|machine| ExecutableFormat::Elf { machine })
            .map_err(unsupported),
        Detected::MachO(kind) => Err(unsupported(format!(
            "it is a {kind} image, which only macOS runs"
        ))),
        Detected::Pe => Err(unsupported(
            "it is a DOS/PE (Windows) image, which only Windows runs".to_owned(),
        )),
        Detected::BadScript(line) => Err(unsupported(format!(
            "its `#!` line `{line}` names no absolute interpreter"
        ))),
        Detected::Unknown => Err(unsupported(
            "its format is not recognized (neither ELF nor a `#!` script)".to_owned(),
        )),
        Detected::Script(interpreter) => {
            let resolved = std::fs::canonicalize(&interpreter).map_err(|e| {
                unsupported(format!(
                    "its interpreter {} cannot be resolved: {e}",
                    interpreter.display()
                ))
            })?;
            let system: Vec<PathBuf> = SYSTEM_INTERPRETER_DIRECTORIES
                .iter()
                .map(PathBuf::from)
                .collect();
            if !inside_any(&resolved, &policy.executable_roots) && !inside_any(&resolved, &system) {
                return Err(unsupported(format!(
                    "its interpreter {} is neither inside the executable roots nor in a system directory",
                    resolved.display()
                )));
            }
            let (header, len) = read_header(&resolved).map_err(|e| {
                unsupported(format!(
                    "cannot read its interpreter {}: {e}",
                    resolved.display()
                ))
            })?;
            match detect(&header, len) {
                Detected::Elf {
                    class,
                    data,
                    machine,
                    kind,
                } => {
                    host_elf(class, data, machine, kind).map_err(|why| {
                        unsupported(format!("its interpreter {}: {why}", resolved.display()))
                    })?;
                }
                _ => {
                    return Err(unsupported(format!(
                        "its interpreter {} is not an ELF for this machine",
                        resolved.display()
                    )));
                }
            }
            Ok(ExecutableFormat::Script {
                interpreter: resolved,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> PathBuf {
        std::env::var("REA_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
    }

    #[test]
    fn detects_formats_of_real_files() {
        let (fsevents, fsevents_len) =
            read_header(&fixtures().join("fsevents/package/fsevents.node")).unwrap();
        assert_eq!(
            detect(&fsevents, fsevents_len),
            Detected::MachO("universal (fat) Mach-O")
        );
        let (pe, pe_len) = read_header(
            &fixtures().join("node-notifier/package/vendor/snoreToast/snoretoast-x64.exe"),
        )
        .unwrap();
        assert_eq!(detect(&pe, pe_len), Detected::Pe);
        let (ls, ls_len) = read_header(Path::new("/usr/bin/ls")).unwrap();
        assert!(matches!(
            detect(&ls, ls_len),
            Detected::Elf {
                class: 2,
                data: 1,
                machine: 62,
                ..
            }
        ));
        assert_eq!(
            detect(
                b"#!/bin/sh -e\necho hi\n",
                b"#!/bin/sh -e\necho hi\n".len() as u64
            ),
            Detected::Script(PathBuf::from("/bin/sh"))
        );
        assert_eq!(
            detect(
                b"#!  /usr/bin/env python3\n",
                b"#!  /usr/bin/env python3\n".len() as u64
            ),
            Detected::Script(PathBuf::from("/usr/bin/env"))
        );
        assert_eq!(
            detect(b"#!sh\n", b"#!sh\n".len() as u64),
            Detected::BadScript("sh".to_owned())
        );
        assert_eq!(detect(b"\x7fEL", b"\x7fEL".len() as u64), Detected::Unknown);
        assert_eq!(detect(b"", b"".len() as u64), Detected::Unknown);
    }

    #[test]
    fn scenario_json_defaults_and_schema() {
        let scenario: Scenario =
            serde_json::from_str(r#"{"executable": "/usr/bin/true", "working_directory": "/tmp"}"#)
                .unwrap();
        assert!(!scenario.approved);
        assert!(!scenario.network);
        assert_eq!(scenario.output_overflow, OutputOverflow::Kill);
        let unknown: Result<Scenario, _> = serde_json::from_str(
            r#"{"executable": "/usr/bin/true", "working_directory": "/tmp", "netwrok": true}"#,
        );
        assert!(unknown.is_err());
        let schema = serde_json::to_value(schemars::schema_for!(Scenario)).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        for (name, property) in properties {
            assert!(
                property.get("description").is_some(),
                "field {name} has no description"
            );
        }
    }
}
