//! Deep provider candidates: heavier external analyzers found on this host (never started to be
//! found), and bounded runs of the ones whose output rea can read (GNU and LLVM objdump).

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fsroot::RegularFile;
use crate::providers::native::{DocumentSpec, Procedure, display_name, hex};

/// Most bytes of a tool's stderr kept for an error message.
const STDERR_CAP: usize = 16 * 1024;

/// How often a running tool is checked for exit, timeout or overflow.
const POLL: Duration = Duration::from_millis(5);

/// One external analyzer present on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Candidate {
    /// Stable id used to name the provider in tool calls: `objdump`, `llvm-objdump`,
    /// `llvm-objdump-14`, `gdb`, `radare2`, `r2`, `rizin`, `ghidra` or `angr`.
    pub id: String,
    /// Human name, for example `GNU objdump` or `LLVM objdump 14`.
    pub name: String,
    /// Absolute path of the executable (for `angr`, of the Python interpreter that runs it).
    pub path: PathBuf,
}

/// A deep provider's result with the provider identity to record beside it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DeepOutput<T> {
    /// Candidate id.
    pub provider: String,
    /// Candidate name.
    pub name: String,
    /// First line of the tool's `--version` output.
    pub version: String,
    /// The parsed result.
    pub result: T,
}

/// One instruction as printed by an external disassembler.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DeepInstruction {
    /// Address of the instruction.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// The instruction's bytes, lowercase hex without spaces.
    pub bytes: String,
    /// The tool's rendering, whitespace-normalized, annotations included.
    pub text: String,
}

/// Why a deep provider run failed.
#[derive(Debug, thiserror::Error)]
pub enum DeepError {
    /// The provider exists but rea cannot run this operation with it.
    #[error("{provider} does not support {operation} in rea")]
    Unsupported {
        /// Candidate id.
        provider: String,
        /// The operation asked for.
        operation: &'static str,
    },
    /// The provider cannot read this document's format.
    #[error("{provider} cannot read {format} documents")]
    FormatMismatch {
        /// Candidate id.
        provider: String,
        /// The document format.
        format: String,
    },
    /// The tool could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The executable.
        program: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The tool ran past its time limit and was killed.
    #[error("{provider} did not finish within {limit:?} and was stopped")]
    Timeout {
        /// Candidate id.
        provider: String,
        /// The time limit.
        limit: Duration,
    },
    /// The tool printed more than the output cap and was killed.
    #[error("{provider} printed more than {limit} bytes and was stopped; narrow the request")]
    OutputLimit {
        /// Candidate id.
        provider: String,
        /// The output cap in bytes.
        limit: usize,
    },
    /// The tool reads the document from a descriptor it inherits, which rea passes on Unix only.
    #[error(
        "{provider} is given the document on an inherited descriptor, which rea does on Linux and other Unix systems only; on this system it cannot run it"
    )]
    NoDescriptorPassing {
        /// Candidate id.
        provider: String,
    },
    /// The document's file could not be reached as admitted.
    #[error(transparent)]
    File(#[from] crate::fsroot::FsError),
    /// The tool exited with failure.
    #[error("{provider} failed ({status}): {stderr}")]
    Failed {
        /// Candidate id.
        provider: String,
        /// Exit status as text.
        status: String,
        /// The start of its stderr.
        stderr: String,
    },
}

/// What a candidate can read: `elf`, `pe`, `macho`; `All` for the multi-format analyzers.
/// The format that every candidate fits: `candidates(ANY_FORMAT, ..)` lists all of them (doctor).
pub const ANY_FORMAT: &str = "any";

#[derive(Clone, Copy)]
enum Formats {
    ElfPe,
    ElfPeMacho,
    Elf,
    All,
}

impl Formats {
    fn accepts(self, format: &str) -> bool {
        if format == ANY_FORMAT {
            return true;
        }
        let macho = matches!(format, "macho" | "macho-universal" | "app-bundle");
        match self {
            Formats::All => true,
            Formats::Elf => format == "elf",
            Formats::ElfPe => matches!(format, "elf" | "pe"),
            Formats::ElfPeMacho => matches!(format, "elf" | "pe") || macho,
        }
    }
}

/// Fixed-name tools, in the order they are looked for.
const FIXED: [(&str, &str, Formats); 6] = [
    ("objdump", "GNU objdump", Formats::ElfPe),
    ("llvm-objdump", "LLVM objdump", Formats::ElfPeMacho),
    ("gdb", "GDB", Formats::Elf),
    ("radare2", "radare2", Formats::All),
    ("r2", "radare2 (r2)", Formats::All),
    ("rizin", "rizin", Formats::All),
];

/// Ghidra's headless analyzer, on PATH or under `$GHIDRA_INSTALL_DIR/support`.
const HEADLESS: &str = "analyzeHeadless";

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The version suffix of `llvm-objdump-NN`, when the name has that form.
fn llvm_version_suffix(name: &str) -> Option<&str> {
    let suffix = name.strip_prefix("llvm-objdump-")?;
    (!suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit())).then_some(suffix)
}

/// Deep analyzers on `PATH` (given, or the process's), Ghidra's `analyzeHeadless` under
/// `$GHIDRA_INSTALL_DIR`, and the angr decompiler when `$REA_ANGR_PYTHON` (or `rea.toml`) names
/// an interpreter whose environment holds angr, that can read documents of `format`; sorted by
/// id, one per id (the first found on `PATH` wins). Nothing is started.
pub fn candidates(format: &str, path_env: Option<&OsStr>) -> Vec<Candidate> {
    let ghidra = std::env::var_os("GHIDRA_INSTALL_DIR");
    let mut found = candidates_with(format, path_env, ghidra.as_deref());
    if let Some(angr) = angr_candidate(format)
        && !found.iter().any(|c| c.id == angr.id)
    {
        found.push(angr);
        found.sort_by(|a, b| a.id.cmp(&b.id));
    }
    for c in &mut found {
        if let Some(note) = platform_note(c) {
            c.name = format!("{} ({note})", c.name);
        }
    }
    found
}

/// The angr decompiler as the candidate for a target of `format`, when it is installed and reads
/// that format. Only files are read; nothing is started. Made here, not in `angr`, so that the
/// decompiler knows nothing of the candidates it is listed among.
fn angr_candidate(format: &str) -> Option<Candidate> {
    use crate::providers::angr;
    if format != ANY_FORMAT && !angr::accepts_format(format) {
        return None;
    }
    let found = angr::locate().ok()?;
    Some(Candidate {
        id: angr::PROVIDER_ID.to_string(),
        name: format!("angr {} decompiler", found.version),
        path: found.python,
    })
}

/// What this system keeps rea from doing with a candidate that is present, said beside its name
/// so that doctor shows it: the angr worker runs on Linux only, and objdump is handed the
/// document on an inherited descriptor, which rea passes on Unix only.
fn platform_note(c: &Candidate) -> Option<&'static str> {
    if c.id == "angr" && !cfg!(target_os = "linux") {
        return Some("not run on this system: rea runs the angr worker on Linux only");
    }
    if (c.id == "objdump" || is_llvm(c)) && !cfg!(unix) {
        return Some(
            "not run on this system: rea hands it the document on an inherited descriptor, on Unix only",
        );
    }
    None
}

/// The names of directory `dir` a deep candidate may have (those of [`FIXED`], `analyzeHeadless`
/// and versioned LLVM objdumps such as `llvm-objdump-14`), read again only when the directory
/// has changed since they were last read (its modification time or size differ). Provider
/// completion looks for the deep candidates at every keystroke: reading each PATH directory
/// (about 1,200 names in `/usr/bin`) cost about a millisecond each time, and looking each
/// candidate up in each directory about sixty `stat` calls. A listing is kept only when the
/// directory was last modified more than two seconds before it was read, so a change made within
/// the file system's timestamp granularity of that read is never missed; whether a candidate
/// listed there is an executable file is still checked on every call.
fn candidate_names_in(dir: &Path) -> Option<Arc<[String]>> {
    type Listing = (std::time::SystemTime, u64, Arc<[String]>);
    static LISTINGS: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, Listing>>> =
        std::sync::Mutex::new(None);
    let meta = std::fs::metadata(dir).ok()?;
    let modified = meta.modified().ok()?;
    let mut listings = LISTINGS.lock().unwrap_or_else(|p| p.into_inner());
    let listings = listings.get_or_insert_with(Default::default);
    if let Some((at, size, names)) = listings.get(dir)
        && *at == modified
        && *size == meta.len()
    {
        return Some(names.clone());
    }
    // Only the names a candidate may have are kept: picking them out of every name at each
    // call cost more than the cached read saved.
    let names: Arc<[String]> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            (FIXED.iter().any(|(id, _, _)| *id == name)
                || name == HEADLESS
                || llvm_version_suffix(&name).is_some())
            .then_some(name)
        })
        .collect();
    let settled = std::time::SystemTime::now()
        .duration_since(modified)
        .is_ok_and(|age| age > Duration::from_secs(2));
    if settled {
        listings.insert(dir.to_path_buf(), (modified, meta.len(), names.clone()));
    } else {
        listings.remove(dir);
    }
    Some(names)
}

/// [`candidates`] with an explicit Ghidra installation directory (tests use it).
pub fn candidates_with(
    format: &str,
    path_env: Option<&OsStr>,
    ghidra_dir: Option<&OsStr>,
) -> Vec<Candidate> {
    let path_env: OsString = match path_env {
        Some(p) => p.to_os_string(),
        None => std::env::var_os("PATH").unwrap_or_default(),
    };
    let mut found: Vec<Candidate> = Vec::new();
    let push = |found: &mut Vec<Candidate>, id: String, name: String, path: PathBuf| {
        if !found.iter().any(|c| c.id == id) {
            found.push(Candidate { id, name, path });
        }
    };
    for dir in std::env::split_paths(&path_env) {
        if !dir.is_absolute() {
            // A relative PATH entry would make the result depend on the working directory.
            continue;
        }
        // Only the names the directory holds are looked at; a directory that cannot be listed
        // (searchable, not readable) is asked for each fixed name.
        let listed = candidate_names_in(&dir);
        let present = |name: &str| {
            listed
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == name))
        };
        for (id, name, formats) in FIXED {
            if formats.accepts(format) && present(id) {
                let path = dir.join(id);
                if is_executable(&path) {
                    push(&mut found, id.to_string(), name.to_string(), path);
                }
            }
        }
        if Formats::ElfPeMacho.accepts(format)
            && let Some(names) = &listed
        {
            let mut versioned: Vec<(String, PathBuf)> = names
                .iter()
                .filter(|name| llvm_version_suffix(name).is_some())
                .map(|name| (name.clone(), dir.join(name)))
                .filter(|(_, p)| is_executable(p))
                .collect();
            versioned.sort();
            for (id, path) in versioned {
                let version = llvm_version_suffix(&id).unwrap_or_default().to_string();
                push(
                    &mut found,
                    id.clone(),
                    format!("LLVM objdump {version}"),
                    path,
                );
            }
        }
        let headless = dir.join(HEADLESS);
        if present(HEADLESS) && is_executable(&headless) {
            push(
                &mut found,
                "ghidra".to_string(),
                "Ghidra headless".to_string(),
                headless,
            );
        }
    }
    if let Some(ghidra) = ghidra_dir {
        let headless = Path::new(ghidra).join("support").join(HEADLESS);
        if headless.is_absolute() && is_executable(&headless) {
            push(
                &mut found,
                "ghidra".to_string(),
                "Ghidra headless".to_string(),
                headless,
            );
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

/// Output of one bounded run.
struct Captured {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: ExitStatus,
}

/// Reads a pipe into memory up to `cap` bytes; past the cap, raises `overflow` and stops.
fn drain(
    mut pipe: impl Read + Send + 'static,
    cap: usize,
    overflow: Arc<AtomicBool>,
    mark: bool,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buffer = [0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(out.len());
                    out.extend_from_slice(&buffer[..n.min(room)]);
                    // Past the cap, stdout marks the overflow and stops; stderr keeps
                    // draining so the child never blocks on it.
                    if n > room && mark {
                        overflow.store(true, Ordering::SeqCst);
                        break;
                    }
                }
            }
        }
        out
    })
}

/// Runs a tool with stdin closed, a time limit and an output cap; the child is always waited
/// for, and killed when it overruns either limit.
///
/// `inherit` is a file whose descriptor the child keeps (the document's, which it is given as
/// [`fsroot::descriptor_name`](crate::fsroot::descriptor_name)): every other descriptor of ours
/// is close-on-exec. Unix only: elsewhere a run that needs it is refused.
fn run_bounded(
    provider: &str,
    program: &Path,
    args: &[OsString],
    inherit: Option<&RegularFile>,
    timeout: Duration,
    cap: usize,
) -> Result<Captured, DeepError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C");
    #[cfg(unix)]
    if let Some(file) = inherit {
        use std::os::unix::process::CommandExt;
        let fd = file.as_raw_fd();
        // SAFETY: runs in the child between fork and exec and only clears FD_CLOEXEC on a
        // descriptor the parent holds open for the whole run (fcntl is async-signal-safe).
        unsafe {
            command.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(unix))]
    if inherit.is_some() {
        return Err(DeepError::NoDescriptorPassing {
            provider: provider.to_string(),
        });
    }
    let mut child = command.spawn().map_err(|source| DeepError::Spawn {
        program: program.to_path_buf(),
        source,
    })?;
    let overflow = Arc::new(AtomicBool::new(false));
    let stdout = child
        .stdout
        .take()
        .map(|pipe| drain(pipe, cap, overflow.clone(), true));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| drain(pipe, STDERR_CAP, overflow.clone(), false));
    let deadline = Instant::now() + timeout;
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(source) => {
                break Err(DeepError::Spawn {
                    program: program.to_path_buf(),
                    source,
                });
            }
        }
        if overflow.load(Ordering::SeqCst) {
            break Err(DeepError::OutputLimit {
                provider: provider.to_string(),
                limit: cap,
            });
        }
        if Instant::now() >= deadline {
            break Err(DeepError::Timeout {
                provider: provider.to_string(),
                limit: timeout,
            });
        }
        std::thread::sleep(POLL);
    };
    if outcome.is_err() {
        let _ = child.kill();
    }
    // Always reap the child, whatever happened, so nothing is left behind.
    let _ = child.wait();
    let stdout = stdout.and_then(|t| t.join().ok()).unwrap_or_default();
    let stderr = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let status = outcome?;
    if overflow.load(Ordering::SeqCst) {
        return Err(DeepError::OutputLimit {
            provider: provider.to_string(),
            limit: cap,
        });
    }
    Ok(Captured {
        stdout,
        stderr,
        status,
    })
}

fn run_checked(
    c: &Candidate,
    args: &[OsString],
    inherit: Option<&RegularFile>,
    timeout: Duration,
    cap: usize,
) -> Result<String, DeepError> {
    let captured = run_bounded(&c.id, &c.path, args, inherit, timeout, cap)?;
    if !captured.status.success() {
        let stderr = String::from_utf8_lossy(&captured.stderr);
        return Err(DeepError::Failed {
            provider: c.id.clone(),
            status: captured.status.to_string(),
            stderr: stderr
                .chars()
                .take(2000)
                .collect::<String>()
                .trim()
                .to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&captured.stdout).into_owned())
}

/// First non-empty line of `--version`, run with the same limits.
fn version(c: &Candidate, timeout: Duration, cap: usize) -> Result<String, DeepError> {
    let text = run_checked(c, &[OsString::from("--version")], None, timeout, cap)?;
    Ok(text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("unknown")
        .to_string())
}

fn is_llvm(c: &Candidate) -> bool {
    c.id == "llvm-objdump" || llvm_version_suffix(&c.id).is_some()
}

/// Arguments selecting the document: for a slice of a universal file, `--arch=` (LLVM only).
fn document_args(
    c: &Candidate,
    doc: &DocumentSpec,
    file: &RegularFile,
) -> Result<Vec<OsString>, DeepError> {
    let formats = if is_llvm(c) {
        Formats::ElfPeMacho
    } else {
        Formats::ElfPe
    };
    if !formats.accepts(doc.format.as_str()) {
        return Err(DeepError::FormatMismatch {
            provider: c.id.clone(),
            format: doc.format.to_string(),
        });
    }
    let mut args = Vec::new();
    let universal = doc.offset != 0 || file_is_universal(file);
    if universal {
        if !is_llvm(c) {
            return Err(DeepError::FormatMismatch {
                provider: c.id.clone(),
                format: "macho-universal".to_string(),
            });
        }
        args.push(OsString::from(format!("--arch={}", doc.architecture)));
    }
    Ok(args)
}

fn file_is_universal(file: &RegularFile) -> bool {
    file.read_head(0, super::native::HEAD_LEN)
        .is_ok_and(|head| {
            super::native::sniff(&head, file.len()) == crate::vocabulary::Format::MachOUniversal
        })
}

/// The document's file as admitted, and the name the child opens it by: `/proc/self/fd/N` (or
/// `/dev/fd/N`) of the descriptor kept since admission, so a file swapped at the path since
/// cannot be read. Unix only: elsewhere rea has no such name to give, and refuses the run.
fn document_file(c: &Candidate, doc: &DocumentSpec) -> Result<(RegularFile, OsString), DeepError> {
    #[cfg(unix)]
    {
        let _ = c;
        let file = doc.open_file()?;
        let name = crate::fsroot::descriptor_name(file.as_raw_fd()).into_os_string();
        Ok((file, name))
    }
    #[cfg(not(unix))]
    {
        let _ = doc;
        Err(DeepError::NoDescriptorPassing {
            provider: c.id.clone(),
        })
    }
}

/// The tools whose `provider_id` argument takes a deep provider: what provider completion offers
/// candidates for. A tool that starts taking one is added here and to [`answers`].
pub const PROVIDER_TOOLS: [&str; 2] = ["procedure_assembly", "procedure_pseudo_code"];

/// Whether rea runs `tool` with candidate `c`: `procedure_assembly` (and `list_procedures` of a
/// deep inventory) with objdump or llvm-objdump, `procedure_pseudo_code` with angr; gdb,
/// radare2, rizin and Ghidra are found and reported by doctor but answer none of these tools.
pub fn answers(c: &Candidate, tool: &str) -> bool {
    match tool {
        "procedure_assembly" | "list_procedures" => c.id == "objdump" || is_llvm(c),
        "procedure_pseudo_code" => c.id == "angr",
        _ => false,
    }
}

fn require_objdump(c: &Candidate, operation: &'static str) -> Result<(), DeepError> {
    if answers(c, operation) {
        Ok(())
    } else {
        Err(DeepError::Unsupported {
            provider: c.id.clone(),
            operation,
        })
    }
}

/// A COFF symbol line of `--syms` on a PE file (GNU and LLVM print the same layout):
/// `[116](sec  1)(fl 0x00)(ty   20)(scl   2) (nx 1) 0x0000000000000530 leaf_add`. Type `20`
/// marks a function; the value is an offset into the numbered section, whose virtual address
/// `sections` gives (numbered from 1).
fn coff_function<'a>(line: &'a str, sections: &[u64]) -> Option<(u64, &'a str)> {
    let field =
        |key: &str| -> Option<&str> { Some(line.split(key).nth(1)?.split(')').next()?.trim()) };
    if field("(ty")? != "20" {
        return None;
    }
    let section: usize = field("(sec")?.parse().ok()?;
    let (value, name) = line.split(") 0x").nth(1)?.split_once(' ')?;
    let value = u64::from_str_radix(value, 16).ok()?;
    let base = sections.get(section.checked_sub(1)?)?;
    Some((base.checked_add(value)?, name.trim()))
}

/// Parses `--syms` output: function symbols (`F` flag, or COFF type 20) defined in a section,
/// named the way the native provider names them (demangled; Mach-O C names without their
/// leading underscore). `coff_sections` holds the section addresses of a PE file.
pub(crate) fn parse_syms(text: &str, macho: bool, coff_sections: &[u64]) -> Vec<Procedure> {
    let mut out: Vec<Procedure> = Vec::new();
    for line in text.lines() {
        if line.starts_with('[') {
            if let Some((address, name)) = coff_function(line, coff_sections)
                && !name.is_empty()
            {
                let shown = display_name(name, false);
                out.push(Procedure {
                    address,
                    raw_name: (shown != name).then(|| name.to_string()),
                    name: Some(shown),
                    name_source: None,
                    found_by: None,
                    size: None,
                    aliases: Vec::new(),
                });
            }
            continue;
        }
        let Some((address, rest)) = line.split_once(' ') else {
            continue;
        };
        let Some(address) = listing_address(address).filter(|_| address.len() >= 8) else {
            continue;
        };
        // Seven flag characters follow the address; `F` in the sixth marks a function.
        let Some(flags) = rest.get(..7) else { continue };
        if flags.as_bytes().get(6) != Some(&b'F') {
            continue;
        }
        let rest = rest[7..].trim_start();
        let Some((section, rest)) = rest.split_once([' ', '\t']) else {
            continue;
        };
        if section == "*UND*" || section.is_empty() {
            continue;
        }
        let rest = rest.trim_start();
        // ELF and PE listings carry a size column; Mach-O listings do not.
        let (size, name) = match rest.split_once([' ', '\t']) {
            Some((size, name))
                if size.len() >= 8 && size.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                (u64::from_str_radix(size, 16).ok(), name.trim())
            }
            _ => (None, rest.trim()),
        };
        let name = [".hidden ", ".protected ", ".internal "]
            .iter()
            .fold(name, |n, p| n.strip_prefix(p).unwrap_or(n))
            .trim();
        if name.is_empty() {
            continue;
        }
        let shown = display_name(name, macho);
        let raw = (shown != name).then(|| name.to_string());
        out.push(Procedure {
            address,
            name: Some(shown),
            raw_name: raw,
            name_source: None,
            found_by: None,
            size: size.filter(|&s| s > 0),
            aliases: Vec::new(),
        });
    }
    out.sort_by_key(|p| p.address);
    out.dedup_by_key(|p| p.address);
    out
}

/// Parses `-d` output into instructions. GNU objdump prints `address:<TAB>bytes<TAB>text` (an
/// AArch64 instruction as one 32-bit word); LLVM 14 prints `address: bytes<TAB>text` for ELF,
/// PE and thin Mach-O, and with a tab after the colon for a slice of a universal file. Bytes are
/// returned in memory order. A `lock` prefix llvm-objdump prints on a line of its own is
/// joined to the instruction it prefixes.
pub(crate) fn parse_disassembly(text: &str) -> Vec<DeepInstruction> {
    let mut out: Vec<DeepInstruction> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let Some((address, rest)) = trimmed.split_once(':') else {
            continue;
        };
        if address.is_empty() || !address.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Some(address) = listing_address(address) else {
            continue;
        };
        let rest = rest.trim_start_matches([' ', '\t']);
        let (bytes_field, text) = rest.split_once('\t').unwrap_or((rest, ""));
        let Some(bytes) = hex_bytes(bytes_field) else {
            continue;
        };
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            // A continuation line of a long instruction: more bytes for the previous one.
            if let Some(last) = out.last_mut() {
                last.bytes.push_str(&bytes);
            }
            continue;
        }
        if let Some(last) = out.last_mut()
            && last.text == "lock"
            && last.address + (last.bytes.len() / 2) as u64 == address
        {
            last.bytes.push_str(&bytes);
            last.text = format!("lock {text}");
            continue;
        }
        out.push(DeepInstruction {
            address,
            bytes,
            text,
        });
    }
    out
}

/// The bytes of a listing's byte column as lowercase hex in memory order: two-digit tokens
/// (x86, LLVM's AArch64) as they stand, an eight-digit token (GNU's AArch64 word) as its
/// little-endian bytes; `None` when the column holds anything else.
fn hex_bytes(field: &str) -> Option<String> {
    let mut out = String::new();
    for token in field.split_whitespace() {
        if !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        match token.len() {
            2 => out.push_str(&token.to_ascii_lowercase()),
            8 => {
                let word = u32::from_str_radix(token, 16).ok()?;
                out.push_str(&::hex::encode(word.to_le_bytes()));
            }
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A page of a deep provider's listing, paged like the native listing.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DeepAssemblyPage {
    /// End (exclusive) of the range disassembled.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub end: u64,
    /// Number of instructions the provider printed in the whole range.
    pub total_instructions: usize,
    /// Index of the first instruction of this page.
    pub offset: usize,
    /// The instructions `[offset, offset + limit)`.
    pub instructions: Vec<DeepInstruction>,
    /// Offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

/// Cuts a listing into the page `[offset, offset + limit)`.
pub fn page(
    instructions: Vec<DeepInstruction>,
    end: u64,
    offset: usize,
    limit: usize,
) -> DeepAssemblyPage {
    page_within(instructions, end, offset, limit, usize::MAX)
}

/// [`page`], ending the page early once its instructions would take more than `max_bytes` of
/// JSON (at least one instruction is shown, so paging always moves on); `next_offset` then
/// names the first instruction left out.
pub fn page_within(
    instructions: Vec<DeepInstruction>,
    end: u64,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> DeepAssemblyPage {
    let total = instructions.len();
    let mut used = 0usize;
    let shown: Vec<DeepInstruction> = instructions
        .into_iter()
        .skip(offset)
        .take(limit)
        .enumerate()
        .take_while(|(index, i)| {
            // One comma between items; a failed measure counts as too large.
            used = used.saturating_add(serde_json::to_vec(i).map_or(usize::MAX, |v| v.len() + 1));
            *index == 0 || used <= max_bytes
        })
        .map(|(_, i)| i)
        .collect();
    let shown_end = offset.saturating_add(shown.len());
    DeepAssemblyPage {
        end,
        total_instructions: total,
        offset,
        next_offset: (shown_end < total && limit > 0).then_some(shown_end),
        instructions: shown,
    }
}

/// Lists function symbols with `objdump --syms` / `llvm-objdump --syms`.
pub fn run_procedures(
    c: &Candidate,
    doc: &DocumentSpec,
    timeout: Duration,
    output_cap: usize,
) -> Result<DeepOutput<Vec<Procedure>>, DeepError> {
    require_objdump(c, "list_procedures")?;
    let (file, name) = document_file(c, doc)?;
    let mut args = document_args(c, doc, &file)?;
    args.push(OsString::from("--syms"));
    args.push(name);
    let text = run_checked(c, &args, Some(&file), timeout, output_cap)?;
    Ok(DeepOutput {
        provider: c.id.clone(),
        name: c.name.clone(),
        version: version(c, timeout, output_cap)?,
        result: parse_syms(&text, doc.format == "macho", &pe_section_addresses(doc)),
    })
}

/// The virtual addresses of a PE document's sections in header order (COFF symbols count them
/// from 1); empty for other formats or an unreadable file.
fn pe_section_addresses(doc: &DocumentSpec) -> Vec<u64> {
    use object::{Object, ObjectSection};
    if doc.format != "pe" {
        return Vec::new();
    }
    let Ok(bytes) = std::fs::read(&doc.file) else {
        return Vec::new();
    };
    let range = usize::try_from(doc.offset).ok().and_then(|start| {
        let end = start.checked_add(usize::try_from(doc.size).ok()?)?;
        bytes.get(start..end)
    });
    let Some(Ok(file)) = range.map(object::File::parse) else {
        return Vec::new();
    };
    file.sections().map(|s| s.address()).collect()
}

/// Default limits for [`run_assembly`], which takes none of its own.
const ASSEMBLY_TIMEOUT: Duration = Duration::from_secs(60);
const ASSEMBLY_CAP: usize = 16 << 20;

/// Disassembles `[start, end)` with `objdump -d` / `llvm-objdump -d` (Intel syntax on x86).
pub fn run_assembly(
    c: &Candidate,
    doc: &DocumentSpec,
    start: u64,
    end: u64,
) -> Result<DeepOutput<Vec<DeepInstruction>>, DeepError> {
    run_assembly_with(c, doc, start, end, ASSEMBLY_TIMEOUT, ASSEMBLY_CAP)
}

/// [`run_assembly`], returning the page `[offset, offset + limit)` with the total.
pub fn run_assembly_page(
    c: &Candidate,
    doc: &DocumentSpec,
    start: u64,
    end: u64,
    offset: usize,
    limit: usize,
) -> Result<DeepOutput<DeepAssemblyPage>, DeepError> {
    run_assembly_page_within(c, doc, start, end, offset, limit, usize::MAX)
}

/// [`run_assembly_page`] with at most `max_bytes` of instructions' JSON in the page (see
/// [`page_within`]).
pub fn run_assembly_page_within(
    c: &Candidate,
    doc: &DocumentSpec,
    start: u64,
    end: u64,
    offset: usize,
    limit: usize,
    max_bytes: usize,
) -> Result<DeepOutput<DeepAssemblyPage>, DeepError> {
    let output = run_assembly(c, doc, start, end)?;
    Ok(DeepOutput {
        provider: output.provider,
        name: output.name,
        version: output.version,
        result: page_within(output.result, end, offset, limit, max_bytes),
    })
}

/// [`run_assembly`] with explicit limits.
pub fn run_assembly_with(
    c: &Candidate,
    doc: &DocumentSpec,
    start: u64,
    end: u64,
    timeout: Duration,
    output_cap: usize,
) -> Result<DeepOutput<Vec<DeepInstruction>>, DeepError> {
    require_objdump(c, "procedure_assembly")?;
    let (file, name) = document_file(c, doc)?;
    let mut args = document_args(c, doc, &file)?;
    args.push(OsString::from("-d"));
    let x86 = matches!(doc.architecture.as_str(), "x86" | "x86_64");
    if is_llvm(c) {
        // The Mach-O printer (which `--arch` selects for a slice anyway) alone honours
        // LC_DATA_IN_CODE: jump tables among the code are printed as data, not decoded.
        if doc.format == "macho" {
            args.push(OsString::from("--macho"));
        }
        if x86 {
            args.push(OsString::from("--x86-asm-syntax=intel"));
        }
    } else {
        args.push(OsString::from("-w"));
        if x86 {
            args.push(OsString::from("-M"));
            args.push(OsString::from("intel"));
        }
    }
    args.push(OsString::from(format!("--start-address={start:#x}")));
    args.push(OsString::from(format!("--stop-address={end:#x}")));
    args.push(name);
    let text = run_checked(c, &args, Some(&file), timeout, output_cap)?;
    // Some builds ignore the address range for universal files; keep only the range asked.
    let result = parse_disassembly(&text)
        .into_iter()
        .filter(|i| i.address >= start && i.address < end)
        .collect();
    Ok(DeepOutput {
        provider: c.id.clone(),
        name: c.name.clone(),
        version: version(c, timeout, output_cap)?,
        result,
    })
}

/// An address as objdump prints it in a listing: bare hex digits (up to 16), its own format,
/// never what an agent sends (those are `0x`-hex only, read by [`crate::ids::Address`]).
fn listing_address(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::native::test_support::document;
    use crate::providers::native::{Image, admit};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rea-deep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn ids(found: &[Candidate]) -> Vec<&str> {
        found.iter().map(|c| c.id.as_str()).collect()
    }

    /// Sets the modification time of directory `dir` to `ago` before now.
    fn age(dir: &Path, ago: Duration) {
        let when = std::time::SystemTime::now() - ago;
        std::fs::File::open(dir)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    /// The ids of the candidates for an ELF file on `path`, space-separated.
    fn elf(path: &OsString) -> String {
        ids(&candidates_with("elf", Some(path), None)).join(" ")
    }

    /// A directory's names are read again once it changes, so an LLVM installed or removed
    /// while rea runs is offered or withdrawn at the next completion, also when its listing was
    /// kept (the directory unchanged for an hour).
    #[test]
    fn path_listings_are_read_again_when_their_directory_changes_regression_30() {
        let dir = scratch("listing");
        script(&dir, "llvm-objdump-14", "exit 0");
        age(&dir, Duration::from_secs(3600));
        let path = dir.clone().into_os_string();
        assert_eq!(elf(&path), "llvm-objdump-14");
        script(&dir, "llvm-objdump-15", "exit 0");
        assert_eq!(elf(&path), "llvm-objdump-14 llvm-objdump-15");
        age(&dir, Duration::from_secs(3600));
        assert_eq!(elf(&path), "llvm-objdump-14 llvm-objdump-15");
        std::fs::remove_file(dir.join("llvm-objdump-14")).unwrap();
        assert_eq!(elf(&path), "llvm-objdump-15");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The fixed candidates and Ghidra's headless analyzer are looked up in the same kept
    /// listing: one installed or removed while rea runs is offered or withdrawn at the next
    /// completion, and one whose file stops being executable is withdrawn though the listing
    /// is unchanged (a mode change leaves the directory's time as it was).
    #[test]
    fn fixed_candidates_come_from_the_kept_listing_and_are_checked_each_call_regression_30() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("fixed-listing");
        script(&dir, "gdb", "exit 0");
        age(&dir, Duration::from_secs(3600));
        let path = dir.clone().into_os_string();
        assert_eq!(elf(&path), "gdb");
        assert_eq!(elf(&path), "gdb");
        script(&dir, "objdump", "exit 0");
        script(&dir, HEADLESS, "exit 0");
        assert_eq!(elf(&path), "gdb ghidra objdump");
        age(&dir, Duration::from_secs(3600));
        assert_eq!(elf(&path), "gdb ghidra objdump");
        std::fs::set_permissions(dir.join("gdb"), std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(elf(&path), "ghidra objdump");
        std::fs::remove_file(dir.join("objdump")).unwrap();
        assert_eq!(elf(&path), "ghidra");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn candidates_are_found_by_looking_and_filtered_by_format() {
        let a = scratch("path-a");
        let b = scratch("path-b");
        let ghidra = scratch("ghidra");
        for name in ["objdump", "llvm-objdump-14", "gdb", "rizin", "r2"] {
            script(&a, name, "exit 0");
        }
        // Same names later on PATH lose to the first; non-executables are not candidates.
        script(&b, "objdump", "exit 0");
        script(&b, "llvm-objdump-15", "exit 0");
        std::fs::write(b.join("radare2"), "not executable").unwrap();
        std::fs::create_dir_all(ghidra.join("support")).unwrap();
        script(&ghidra.join("support"), "analyzeHeadless", "exit 0");
        let path = std::env::join_paths([&a, &b]).unwrap();

        let elf = candidates_with("elf", Some(&path), Some(ghidra.as_os_str()));
        assert_eq!(
            ids(&elf),
            [
                "gdb",
                "ghidra",
                "llvm-objdump-14",
                "llvm-objdump-15",
                "objdump",
                "r2",
                "rizin"
            ]
        );
        assert_eq!(
            elf.iter().find(|c| c.id == "objdump").unwrap().path,
            a.join("objdump")
        );
        let macho = candidates_with("macho-universal", Some(&path), None);
        assert_eq!(
            ids(&macho),
            ["llvm-objdump-14", "llvm-objdump-15", "r2", "rizin"]
        );
        let pe = candidates_with("pe", Some(&path), None);
        assert_eq!(
            ids(&pe),
            [
                "llvm-objdump-14",
                "llvm-objdump-15",
                "objdump",
                "r2",
                "rizin"
            ]
        );
        let raw = candidates_with("raw", Some(&path), None);
        assert_eq!(ids(&raw), ["r2", "rizin"]);
        assert!(candidates_with("elf", Some(OsStr::new("")), None).is_empty());
        for dir in [a, b, ghidra] {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn objdump_procedures_agree_with_native_on_elf() {
        let Some(objdump) = candidates("elf", None)
            .into_iter()
            .find(|c| c.id == "objdump")
        else {
            eprintln!("objdump not installed; deep ELF check skipped");
            return;
        };
        let exe = std::env::current_exe().unwrap();
        let target = admit(&exe).unwrap();
        let doc = &target.documents[0];
        let out = run_procedures(&objdump, doc, Duration::from_secs(120), 256 << 20).unwrap();
        assert!(out.version.contains("objdump"), "{}", out.version);
        assert!(out.result.len() > 1000);
        let image = Image::load(doc).unwrap();
        for p in &out.result {
            let ours = image.procedure_starting_at(p.address).unwrap();
            assert!(ours.name.is_some());
        }
        let sized = image
            .procedures()
            .iter()
            .find(|p| p.size.unwrap_or(0) > 64)
            .unwrap();
        // Stop on an instruction boundary: objdump does not decode across the stop address.
        let native = image.assembly(sized.address, 0, 100).unwrap();
        let stop = native.instructions[8].address;
        let listing = run_assembly(&objdump, doc, sized.address, stop).unwrap();
        assert_eq!(listing.result.len(), 8);
        for (theirs, ours) in listing.result.iter().zip(&native.instructions) {
            assert_eq!(theirs.address, ours.address);
            assert_eq!(theirs.bytes, ours.bytes);
        }
    }

    #[test]
    fn llvm_objdump_reads_a_universal_slice() {
        let Some(llvm) = candidates("macho-universal", None)
            .into_iter()
            .find(|c| c.id.starts_with("llvm-objdump"))
        else {
            eprintln!("llvm-objdump not installed; deep Mach-O check skipped");
            return;
        };
        let doc = document("fsevents/package/fsevents.node", Some("arm64"));
        let out = run_procedures(&llvm, &doc, Duration::from_secs(60), 64 << 20).unwrap();
        let image = Image::load(&doc).unwrap();
        assert!(out.result.len() > 50);
        for p in &out.result {
            let ours = image.procedure_starting_at(p.address).unwrap();
            assert_eq!(ours.name, p.name);
        }
        let start = out
            .result
            .iter()
            .find(|p| p.name.as_deref() == Some("FSEStart"))
            .unwrap();
        let end = image.procedure_end(image.procedure_index(start.address).unwrap(), 4096);
        let listing = run_assembly(&llvm, &doc, start.address, end).unwrap();
        let native = image.assembly(start.address, 0, 2000).unwrap();
        let theirs: Vec<u64> = listing.result.iter().map(|i| i.address).collect();
        let ours: Vec<u64> = native.instructions.iter().map(|i| i.address).collect();
        assert_eq!(theirs, ours);
        // GNU objdump cannot read Mach-O; asking it is a clear error, not a wrong answer.
        if let Some(gnu) = candidates("elf", None)
            .into_iter()
            .find(|c| c.id == "objdump")
        {
            assert!(matches!(
                run_procedures(&gnu, &doc, Duration::from_secs(5), 1 << 20),
                Err(DeepError::FormatMismatch { .. })
            ));
        }
    }

    #[test]
    fn runs_are_bounded_in_time_and_output() {
        let dir = scratch("bounded");
        let doc = document("/usr/bin/ls", None);
        let slow = Candidate {
            id: "objdump".to_string(),
            name: "slow".to_string(),
            path: script(&dir, "objdump", "exec tail -f /dev/null"),
        };
        let started = Instant::now();
        let err = run_procedures(&slow, &doc, Duration::from_millis(300), 1 << 20).unwrap_err();
        assert!(matches!(err, DeepError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
        let chatty = Candidate {
            path: script(&dir, "chatty", "exec yes"),
            ..slow.clone()
        };
        let err = run_procedures(&chatty, &doc, Duration::from_secs(30), 4096).unwrap_err();
        assert!(
            matches!(err, DeepError::OutputLimit { limit: 4096, .. }),
            "{err}"
        );
        let failing = Candidate {
            path: script(&dir, "failing", "echo broken >&2; exit 3"),
            ..slow.clone()
        };
        let err = run_procedures(&failing, &doc, Duration::from_secs(30), 4096).unwrap_err();
        assert!(err.to_string().contains("broken"), "{err}");
        let recorded = Candidate {
            path: script(
                &dir,
                "recorded",
                "if [ \"$1\" = --version ]; then echo 'GNU objdump (fake) 2.40'; exit 0; fi\n\
                 echo '0000000000001139 g     F .text\t000000000000000b              main'\n\
                 echo '0000000000001000 l     F .init\t0000000000000000 .hidden _init'\n\
                 echo '0000000000000000       F *UND*\t0000000000000000 puts@GLIBC_2.2.5'",
            ),
            ..slow.clone()
        };
        let out = run_procedures(&recorded, &doc, Duration::from_secs(30), 4096).unwrap();
        assert_eq!(out.version, "GNU objdump (fake) 2.40");
        let names: Vec<_> = out
            .result
            .iter()
            .map(|p| (p.address, p.name.clone(), p.size))
            .collect();
        assert_eq!(
            names,
            [
                (0x1000, Some("_init".to_string()), None),
                (0x1139, Some("main".to_string()), Some(11))
            ]
        );
        let gdb = Candidate {
            id: "gdb".to_string(),
            ..slow
        };
        assert!(matches!(
            run_procedures(&gdb, &doc, Duration::from_secs(1), 1),
            Err(DeepError::Unsupported { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_recorded_listings() {
        let gnu = "0000000000004020 <.plt>:\n    4020:\tff 35 ca ff 01 00    \tpush   QWORD PTR [rip+0x1ffca]\n    61eb:\tff 15 9f dd 01 00    \tcall   QWORD PTR [rip+0x1dd9f]        # 23f90\n";
        let parsed = parse_disassembly(gnu);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].bytes, "ff35caff0100");
        assert_eq!(parsed[0].text, "push QWORD PTR [rip+0x1ffca]");
        let llvm = "_FSEStart:\n     ea0:\tfc 6f bc a9\tstp\tx28, x27, [sp, #-64]!\n";
        let parsed = parse_disassembly(llvm);
        assert_eq!(parsed[0].address, 0xea0);
        assert_eq!(parsed[0].text, "stp x28, x27, [sp, #-64]!");
        let macho = "0000000000001850 l     F __TEXT,__text _fse_environment_create.cold.1\n\
                     0000000100001864 l     F __TEXT,__text -[AppDelegate printHelpBanner]\n";
        let syms = parse_syms(macho, true, &[]);
        assert_eq!(syms.len(), 2);
        assert_eq!(
            syms[1].name.as_deref(),
            Some("-[AppDelegate printHelpBanner]")
        );
        assert_eq!(syms[1].size, None);
        assert_eq!(
            syms[0].name.as_deref(),
            Some("fse_environment_create.cold.1")
        );
        assert_eq!(
            syms[0].raw_name.as_deref(),
            Some("_fse_environment_create.cold.1")
        );
        // A PE file's COFF symbol table: values are offsets into numbered sections.
        let coff = "[  2](sec  1)(fl 0x00)(ty   20)(scl   3) (nx 1) 0x0000000000000010 pre_c_init\n\
                    AUX scnlen 0x0 nreloc 0 nlnno 0 checksum 0x0 assoc 0 comdat 0\n\
                    [  5](sec  3)(fl 0x00)(ty    0)(scl   3) (nx 1) 0x000004d0 .rdata$x\n\
                    [116](sec  2)(fl 0x00)(ty  20)(scl   2) (nx 1) 0x00000530 leaf_add\n";
        let syms = parse_syms(coff, false, &[0x1000, 0x3000, 0x4000]);
        let rows: Vec<(u64, Option<&str>)> = syms
            .iter()
            .map(|p| (p.address, p.name.as_deref()))
            .collect();
        assert_eq!(
            rows,
            [(0x1010, Some("pre_c_init")), (0x3530, Some("leaf_add"))]
        );
    }

    #[test]
    fn parses_llvm_14_listings_of_elf_pe_and_thin_macho() {
        // LLVM 14 separates the address from the bytes by a space, and the bytes from the
        // text by a tab; an 11-byte instruction leaves no space before the tab; `lock` comes
        // on a line of its own.
        let elf = "0000000000001260 <classify>:\n    1260: 48 83 ec 08                  \tsub\trsp, 8\n\
                   1400016e1: 66 66 2e 0f 1f 84 00 00 00 00 00\tnop\tword ptr cs:[rax + rax]\n\
                   \x20   2000: f0                           \tlock\n\
                   \x20   2001: 48 0f b1 33                  \tcmpxchg\tqword ptr [rbx], rsi\n";
        let parsed = parse_disassembly(elf);
        let rows: Vec<(u64, &str, &str)> = parsed
            .iter()
            .map(|i| (i.address, i.bytes.as_str(), i.text.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                (0x1260, "4883ec08", "sub rsp, 8"),
                (
                    0x1400016e1,
                    "66662e0f1f840000000000",
                    "nop word ptr cs:[rax + rax]"
                ),
                (0x2000, "f0480fb133", "lock cmpxchg qword ptr [rbx], rsi"),
            ]
        );
        let macho = "0000000000000634 <_leaf_add>:\n     634: 20 00 00 0b  \tadd\tw0, w1, w0\n";
        let parsed = parse_disassembly(macho);
        assert_eq!(parsed[0].bytes, "2000000b");
        assert_eq!(parsed[0].text, "add w0, w1, w0");
        // GNU objdump prints an AArch64 instruction as one word; bytes are in memory order.
        let gnu = " aa0:\t90000000 \tadrp\tx0, 0 <__abi_tag-0x278>\n";
        assert_eq!(parse_disassembly(gnu)[0].bytes, "00000090");
    }

    #[test]
    fn deep_listings_page_like_the_native_listing() {
        let listing: Vec<DeepInstruction> = (0..12)
            .map(|i| DeepInstruction {
                address: 0x1000 + i * 4,
                bytes: "1f2003d5".into(),
                text: "nop".into(),
            })
            .collect();
        let first = page(listing.clone(), 0x1030, 0, 5);
        assert_eq!(first.total_instructions, 12);
        assert_eq!(first.instructions.len(), 5);
        assert_eq!(first.next_offset, Some(5));
        let last = page(listing.clone(), 0x1030, 10, 5);
        assert_eq!(last.instructions[0].address, 0x1028);
        assert_eq!(last.instructions.len(), 2);
        assert_eq!(last.next_offset, None);
        assert!(page(listing.clone(), 0x1030, 20, 5).instructions.is_empty());
        // {"address":"0x1000","bytes":"1f2003d5","text":"nop"} is 52 bytes, 53 with its comma:
        // three take 159 bytes, four would take 212.
        assert_eq!(serde_json::to_vec(&listing[0]).unwrap().len(), 52);
        let bounded = page_within(listing.clone(), 0x1030, 0, 12, 160);
        assert_eq!(bounded.instructions.len(), 3);
        assert_eq!(bounded.next_offset, Some(3));
        assert_eq!(bounded.total_instructions, 12);
        let at_least_one = page_within(listing, 0x1030, 11, 5, 10);
        assert_eq!(at_least_one.instructions.len(), 1);
        assert_eq!(at_least_one.next_offset, None);
    }

    /// The deep provider is given the descriptor kept since admission (`/proc/self/fd/N`), so a
    /// target replaced by a link to another file after open_binary is not what it reads.
    #[test]
    fn deep_providers_read_the_admitted_file_not_what_the_path_names_now_regression_16() {
        let Some(objdump) = candidates("elf", None)
            .into_iter()
            .find(|c| c.id == "objdump")
        else {
            eprintln!("objdump not installed; deep descriptor check skipped");
            return;
        };
        let dir = scratch("descriptor");
        let build = |name: &str, function: &str| {
            let source = dir.join(format!("{name}.c"));
            std::fs::write(
                &source,
                format!("int {function}(int x) {{ return x + 1; }}\nint main(void) {{ return {function}(1); }}\n"),
            )
            .unwrap();
            let out = dir.join(name);
            let status = std::process::Command::new("gcc")
                .arg("-O0")
                .arg("-o")
                .arg(&out)
                .arg(&source)
                .status()
                .unwrap();
            assert!(status.success());
            out
        };
        let target = build("target", "inside_marker_fn");
        let elsewhere = build("elsewhere", "outside_marker_fn");
        let admitted = admit(&target).unwrap();
        std::fs::remove_file(&target).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &target).unwrap();
        let out = run_procedures(
            &objdump,
            &admitted.documents[0],
            Duration::from_secs(60),
            16 << 20,
        )
        .unwrap();
        let names: Vec<&str> = out
            .result
            .iter()
            .filter_map(|p| p.name.as_deref())
            .collect();
        assert!(names.contains(&"inside_marker_fn"), "{names:?}");
        assert!(!names.contains(&"outside_marker_fn"), "{names:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
