//! The built-in native provider (`auto`): admits targets and reads shipped binaries in pure Rust.
//!
//! # Layout
//! - `address`: canonical address text and its serde adapters.
//! - `format`: header sniffing (ELF, Mach-O thin and universal, PE, raw) without a full parse.
//! - `admit`: turns a path into a [`Target`] with its [`DocumentSpec`]s (files, slices, bundles).
//! - `symbols`: demangling and the choice of one name among aliases.
//! - `procedures`: the union of every source of function starts for one document.
//! - `ehframe`, `pclntab`: the parsers behind the less common sources of function starts.
//! - `imports`: PLT stubs, Mach-O stubs and pointer slots, PE import address table slots.
//! - `image`: a loaded document (bytes, sections, imports, procedures) for the analysis operations.
//! - `disasm`: x86 and arm64 decoding behind one instruction model.
//! - `arm64_text`: where yaxpeax-arm's AArch64 text differs from LLVM's, LLVM's spelling.
//! - `body`: masked-byte digests, basic blocks and operand facts of one procedure, for comparing
//!   builds.
//! - `analysis`: assembly pages, callers, callees, cross-references and function dossiers.
//! - `strings`: string search over sections.

mod address;
mod admit;
mod analysis;
mod arm64_text;
mod body;
mod disasm;
mod ehframe;
mod format;
mod image;
mod imports;
mod pclntab;
mod procedures;
mod strings;
mod symbols;

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fsroot::{DeadlineExceeded, Directory, FileId, FsError, Opened, RegularFile};

pub use address::{format_address, hex, hex_opt, parse_address};
pub use admit::{admit, admit_opened, admit_with};
pub use analysis::{
    AssemblyPage, CallGraphEdges, CalleeEdge, CallerEdge, Callers, CodeXref, DataXref, Dossier,
    DossierString, Instruction, ProcedureInfo, UnresolvedCall, Xrefs,
};
pub use body::BodyFacts;
pub use image::{Image, ImportEntry, SectionInfo};
pub use procedures::procedures;
pub use strings::{StringMatch, StringMatches, StringQuery};
pub(crate) use symbols::display_name;

/// The provider id under which the native reader records its observations.
pub const PROVIDER_ID: &str = "auto";

/// A human name for the native provider, recorded beside its id.
pub const PROVIDER_NAME: &str = "rea native reader";

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
    pub format: String,
    /// `x86_64`, `arm64`, `x86`, `ppc`, `ppc64`, … ; `multi` when the documents differ; `unknown`
    /// when the header names no known architecture.
    pub architecture: String,
    /// The documents to analyze, sorted by name; names are unique within the target.
    pub documents: Vec<DocumentSpec>,
    /// Bundle metadata when the target is an `.app` directory.
    pub bundle: Option<BundleInfo>,
    /// The file or bundle directory as admitted, held open: every later read of the target goes
    /// through it (`None` only for a target built from serialized data).
    #[serde(skip)]
    #[schemars(skip)]
    opened: Option<Opened>,
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
    pub format: String,
    /// Architecture of this document (`x86_64`, `arm64`, `ppc`, …, or `unknown`).
    pub architecture: String,
    /// `file`, `slice`, or for bundle images `main-executable`, `framework`, `library`,
    /// `helper`, `plug-in`, `xpc-service`, `native-module` or `image`.
    pub role: String,
    /// Where the bytes are read from: the file held open since admission (`None` only for a
    /// document built from serialized data, which is then opened by `file`).
    #[serde(skip)]
    #[schemars(skip)]
    source: Option<DocumentSource>,
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
    /// Name from symbols, exports, PLT relocations or Go's pclntab, demangled where possible.
    pub name: Option<String>,
    /// The symbol as stored, present only when it differs from `name`: mangled, with Mach-O's
    /// leading underscore, or with its ELF version as `nm -D` prints it (`memcpy@@GLIBC_2.14`
    /// for the default version, whose `name` is plain `memcpy`; a non-default version keeps
    /// `@VERSION` in `name` too).
    pub raw_name: Option<String>,
    /// Size in bytes when a source states it (symbol size, FDE length, `.pdata` range, a PLT
    /// entry's spacing), or for Mach-O the extent to the next function start or the section's
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Field docs become the JSON schema agents read; addresses are canonical strings.
    #[test]
    fn result_schemas_document_fields_and_use_text_addresses() {
        let schemas = [
            serde_json::to_value(schemars::schema_for!(Target)).unwrap(),
            serde_json::to_value(schemars::schema_for!(Procedure)).unwrap(),
            serde_json::to_value(schemars::schema_for!(AssemblyPage)).unwrap(),
            serde_json::to_value(schemars::schema_for!(Dossier)).unwrap(),
            serde_json::to_value(schemars::schema_for!(Xrefs)).unwrap(),
            serde_json::to_value(schemars::schema_for!(StringMatches)).unwrap(),
        ];
        let procedure = &schemas[1]["properties"];
        assert_eq!(procedure["address"]["type"], "string");
        assert!(
            procedure["raw_name"]["description"]
                .as_str()
                .unwrap()
                .contains("stored")
        );
        for schema in &schemas {
            assert!(schema.to_string().contains("description"));
        }
        let p = Procedure {
            address: 0x401000,
            name: Some("main".into()),
            raw_name: None,
            size: Some(16),
            aliases: Vec::new(),
        };
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["address"], "0x401000");
        assert_eq!(serde_json::from_value::<Procedure>(json).unwrap(), p);
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by the native provider's tests: fixture paths and external tools.

    use std::path::{Path, PathBuf};

    use super::{DocumentSpec, Target, admit};

    /// The fixture root: `$REA_FIXTURES`, else `.fixtures` beside the manifest.
    pub(crate) fn fixtures() -> PathBuf {
        std::env::var("REA_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
    }

    /// Admits a fixture (relative to the fixture root) or an absolute path.
    pub(crate) fn target(path: &str) -> Target {
        let path = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            fixtures().join(path)
        };
        admit(&path).unwrap_or_else(|e| panic!("admit {}: {e}", path.display()))
    }

    /// The one document of a thin file, or the named slice of a universal one.
    pub(crate) fn document(path: &str, arch: Option<&str>) -> DocumentSpec {
        let target = target(path);
        match arch {
            None => target.documents[0].clone(),
            Some(arch) => target
                .documents
                .into_iter()
                .find(|d| d.architecture == arch)
                .unwrap_or_else(|| panic!("{path} has no {arch} slice")),
        }
    }

    /// Runs a tool and returns its stdout, or `None` when the tool is not installed.
    pub(crate) fn tool_output(program: &str, args: &[&str]) -> Option<String> {
        let output = std::process::Command::new(program)
            .args(args)
            .output()
            .ok()?;
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Some(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}
