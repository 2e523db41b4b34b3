//! The native provider's plain types: targets, documents, procedures, sections, imports and its
//! errors. The bottom of the provider: every other file of it builds on these, and these on
//! nothing of it but the address adapters.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::address::{format_address, hex};
use crate::fsroot::{DeadlineExceeded, Directory, FileId, FsError, Opened, RegularFile};
use crate::vocabulary::{Architecture, DocumentRole, Format, FoundBy, ImportKind, NameOrigin};

/// The provider id under which the native reader records its observations.
pub const PROVIDER_ID: &str = "auto";

/// What `open_binary` opened: one file or one `.app` bundle, with the documents inside it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Target {
    /// Canonical absolute path of the file or bundle directory.
    pub path: PathBuf,
    /// File name, or the bundle directory's name (for example `Foo.app`).
    pub name: String,
    /// Lowercase hex SHA-256 of the file; for a bundle, of the sorted list of
    /// `relpath\0sha256hex\n` lines of every regular file inside it.
    pub sha256: String,
    /// `elf`, `macho`, `macho-universal`, `pe`, `app-bundle` or `raw`.
    pub format: Format,
    /// `x86_64`, `arm64`, `x86`, `ppc`, `ppc64`, … ; `multi` when the documents differ; `unknown`
    /// when the header names no known architecture.
    pub architecture: Architecture,
    /// The documents to analyze, sorted by name; names are unique within the target.
    pub documents: Vec<DocumentSpec>,
    /// Bundle metadata when the target is an `.app` directory.
    pub bundle: Option<BundleInfo>,
    /// The file or bundle directory as admitted, held open: every later read of the target goes
    /// through it (`None` only for a target built from serialized data).
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) opened: Option<Opened>,
}

impl Target {
    /// The file or bundle directory as admitted, held by descriptor.
    pub fn opened(&self) -> Option<&Opened> {
        self.opened.as_ref()
    }

    /// Device and inode of the file or bundle directory that was admitted.
    pub fn id(&self) -> Option<FileId> {
        self.opened.as_ref().map(Opened::id)
    }
}

/// One analyzable image: a whole file, one slice of a universal Mach-O, or one image of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentSpec {
    /// Stable, unique name: the file name, `name (arch)` for a slice, or the path relative to
    /// the bundle (plus ` (arch)` for a slice of a universal image inside a bundle).
    pub name: String,
    /// Canonical path of the file holding the document's bytes.
    pub file: PathBuf,
    /// Byte offset of the document inside `file`.
    pub offset: u64,
    /// Length of the document in bytes.
    pub size: u64,
    /// `elf`, `macho`, `pe` or `raw`.
    pub format: Format,
    /// Architecture of this document (`x86_64`, `arm64`, `ppc`, …, or `unknown`).
    pub architecture: Architecture,
    /// `file`, `slice`, or for bundle images `main-executable`, `framework`, `library`,
    /// `helper`, `plug-in`, `xpc-service`, `native-module` or `image`.
    pub role: DocumentRole,
    /// Where the bytes are read from: the file held open since admission (`None` only for a
    /// document built from serialized data, which is then opened by `file`).
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) source: Option<DocumentSource>,
}

impl DocumentSpec {
    /// Where the document's bytes are read from.
    pub fn source(&self) -> Option<&DocumentSource> {
        self.source.as_ref()
    }

    /// The file holding the document, as admitted: the kept descriptor, or (for a document
    /// built from serialized data) `file` opened now with the regular-file rule.
    pub fn open_file(&self) -> Result<RegularFile, FsError> {
        match &self.source {
            Some(source) => source.open(),
            None => RegularFile::open(&self.file),
        }
    }
}

/// How a document's file is reached after admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentSource {
    /// The file held open since admission.
    Kept(RegularFile),
    /// An image of a bundle with more images than are kept open: reopened beneath the bundle
    /// with no link followed, and refused unless it is still the file (device and inode) that
    /// was admitted.
    Beneath {
        /// The bundle directory, held open.
        bundle: Directory,
        /// Path of the file relative to the bundle.
        rel: String,
        /// Device and inode at admission.
        id: FileId,
    },
}

impl DocumentSource {
    /// The document's file, as admitted.
    pub fn open(&self) -> Result<RegularFile, FsError> {
        match self {
            DocumentSource::Kept(f) => Ok(f.clone()),
            DocumentSource::Beneath { bundle, rel, id } => {
                let f = bundle.open_file_nofollow(rel)?;
                if f.id() == *id {
                    Ok(f)
                } else {
                    Err(FsError::Changed {
                        path: f.path().to_path_buf(),
                        what: "it is no longer the file that was opened as part of the target"
                            .into(),
                    })
                }
            }
        }
    }
}

/// Values read from a bundle's `Contents/Info.plist` (XML or binary).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct BundleInfo {
    /// `CFBundleExecutable`: the main executable's file name in `Contents/MacOS/`.
    pub executable: Option<String>,
    /// `CFBundleIdentifier`, for example `fr.julienxx.oss.terminal-notifier`.
    pub identifier: Option<String>,
    /// `CFBundleShortVersionString`: the marketing version.
    pub short_version: Option<String>,
    /// `CFBundleVersion`: the build version.
    pub version: Option<String>,
    /// `CFBundleName`.
    pub bundle_name: Option<String>,
    /// Path of the main executable relative to the bundle, when it exists.
    pub main_executable: Option<String>,
    /// Why `Info.plist` could not be read, when it could not; the fields above are then empty.
    pub info_plist_error: Option<String>,
}

/// One function of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Procedure {
    /// Entry address (canonical lowercase `0x` hex).
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Name from symbols, exports, PLT relocations or Go's pclntab, demangled where possible;
    /// else a name the file states without a symbol (see `name_source`).
    pub name: Option<String>,
    /// The symbol as stored, present only when it differs from `name`: mangled, with Mach-O's
    /// leading underscore, or with its ELF version as `nm -D` prints it (`memcpy@@GLIBC_2.14`
    /// for the default version, whose `name` is plain `memcpy`; a non-default version keeps
    /// `@VERSION` in `name` too).
    pub raw_name: Option<String>,
    /// Where `name` comes from when no symbol gives it: `main` of a stripped executable
    /// (`LC_MAIN`, `entry:__libc_start_main`, `entry:__tmainCRTStartup`, `entry:msvc-static-crt`,
    /// `entry:mainCRTStartup`) or an Objective-C method (`objc_classlist`, `objc_catlist`);
    /// absent for a symbol's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_source: Option<NameOrigin>,
    /// How the procedure was found when no table of the file (symbols, exports, unwind
    /// entries, function starts, PLT or import thunks, Go's pclntab) lists it: `call` or
    /// `tail-jump` when code followed from a known start reaches it, `pointer` for a code
    /// pointer in data, else the root the file points at (`init_array`, `DT_INIT`,
    /// `tls_callback`, ...); absent for a listed procedure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_by: Option<FoundBy>,
    /// Size in bytes when a source states it (symbol size, FDE length, `.pdata` range, a PLT
    /// entry's spacing, a thunk's jump, for a procedure found by following code the extent
    /// that code decoded), or for Mach-O the extent to the next function start or the section's
    /// end (`LC_FUNCTION_STARTS` lists every function the linker laid out).
    pub size: Option<u64>,
    /// Other names of the same address (aliases such as `__libc_malloc` beside `malloc`, the
    /// local name of an IFUNC's resolver), displayed like `name`, sorted and without
    /// duplicates. `name` is the primary one: a global name before a local one, a plain or
    /// default-version name before a non-default version, an IFUNC's name before its
    /// resolver's, then fewest leading underscores, shortest, alphabetical.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

/// Why a path was not admitted as a target.
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    /// Nothing exists at the path.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path as given.
        path: PathBuf,
    },
    /// The path exists but could not be resolved or read (permissions, symlink loop, I/O).
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A directory that is not an `.app` bundle.
    #[error(
        "{path} is a directory, and only files and macOS .app bundles open as binaries{}",
        match suggestion { Some(s) => format!("; it looks like a JavaScript/Electron application: use {s}"), None => String::new() }
    )]
    UnsupportedDirectory {
        /// The canonical directory path.
        path: PathBuf,
        /// The analysis that applies instead, when one is recognized.
        suggestion: Option<&'static str>,
    },
    /// A path that is neither a regular file nor a directory (device, socket, FIFO), refused
    /// before anything was read.
    #[error("{path} is {kind}, not a regular file or directory; only those open as targets")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is instead (`a FIFO (named pipe)`, `a character device`, …).
        kind: &'static str,
    },
    /// A file too large for the native reader, refused before it was hashed.
    #[error("{path} is {size} bytes, over the {limit}-byte limit of the native reader")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The path lies outside the allowed roots, leads out of its bundle, or changed while read.
    #[error(transparent)]
    Path(FsError),
    /// Admission ran past its deadline.
    #[error(transparent)]
    Stopped(#[from] DeadlineExceeded),
    /// A bundle too large to inventory safely.
    #[error("{path} holds more than {limit} files; refusing to inventory it")]
    TooManyFiles {
        /// The bundle path.
        path: PathBuf,
        /// The file-count limit that was exceeded.
        limit: usize,
    },
}

impl From<FsError> for AdmitError {
    fn from(e: FsError) -> AdmitError {
        match e {
            FsError::NotFound { path } => AdmitError::NotFound { path },
            FsError::NotRegular { path, kind } => AdmitError::NotAFile { path, kind },
            FsError::Io { path, source } => AdmitError::Io { path, source },
            FsError::Stopped(d) => AdmitError::Stopped(d),
            other => AdmitError::Path(other),
        }
    }
}

/// Why a native operation on a document failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The document's file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The document's byte range lies outside its file (the file changed or was cut).
    #[error(
        "{path}: document range {offset:#x}+{size:#x} lies outside the file ({file_size} bytes)"
    )]
    OutOfFile {
        /// The file.
        path: PathBuf,
        /// Start of the document.
        offset: u64,
        /// Length of the document.
        size: u64,
        /// Actual size of the file.
        file_size: u64,
    },
    /// The document is larger than the native reader loads into memory.
    #[error("{path}: document of {size} bytes exceeds the {limit}-byte limit of the native reader")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Length of the document.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The headers could not be parsed.
    #[error("{document}: malformed {format}: {reason}")]
    Malformed {
        /// The document name.
        document: String,
        /// The format that was expected.
        format: String,
        /// What the parser rejected.
        reason: String,
    },
    /// The operation has no decoder for this architecture.
    #[error("{operation} is not supported for architecture {architecture} by the native provider")]
    UnsupportedArchitecture {
        /// The document's architecture.
        architecture: String,
        /// The operation asked for.
        operation: &'static str,
    },
    /// No procedure starts at the given address.
    #[error("no procedure starts at {}; list_procedures gives valid starts", format_address(*address))]
    NoProcedure {
        /// The address asked for.
        address: u64,
    },
    /// The address is not inside any section of the document.
    #[error("{} is not inside any section of the document", format_address(*address))]
    AddressOutOfRange {
        /// The address asked for.
        address: u64,
    },
    /// The document's file could not be reached as admitted (replaced, cut, or refused).
    #[error(transparent)]
    File(#[from] FsError),
    /// The string search pattern was rejected.
    #[error("invalid pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// Why it was rejected.
        reason: String,
    },
}

/// Instruction sets the native provider decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    X86,
    X86_64,
    Arm64,
    Other,
}

/// One section of a document, as mapped at run time.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SectionInfo {
    /// Section name; for Mach-O `SEGMENT,section` (for example `__TEXT,__cstring`).
    pub name: String,
    /// Virtual address of the section's first byte.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Size in memory, in bytes.
    pub size: u64,
    /// Whether the section holds code.
    pub executable: bool,
    /// Offset of the section's bytes within the document, when it has bytes in the file.
    pub file_offset: Option<u64>,
    /// Number of bytes present in the file (zero for zero-fill sections such as `.bss`).
    pub file_size: u64,
}

/// One imported symbol reachable at an address of the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ImportEntry {
    /// Address of the stub or pointer slot through which code reaches the import.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// Imported symbol as stored (`free`, `_objc_msgSend`, `CreateFileW`, `ordinal#12`).
    pub name: String,
    /// Library the symbol is imported from, when the format records it per import.
    pub library: Option<String>,
    /// `plt` (ELF stub), `got` (ELF pointer slot), `stub` (Mach-O stub), `pointer` (Mach-O
    /// pointer slot), `iat` (PE import address table slot) or `thunk` (PE code that jumps
    /// through an import address table slot, such as mingw-w64's `puts: jmp [__imp_puts]`).
    pub kind: ImportKind,
}
