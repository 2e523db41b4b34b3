//! The built-in native provider (`auto`): admits targets and reads shipped binaries in pure Rust.
//!
//! # Layout
//! - `address`: canonical address text and its serde adapters.
//! - `format`: header sniffing (ELF, Mach-O thin and universal, PE, raw) without a full parse.
//! - `admit`: turns a path into a [`Target`] with its [`DocumentSpec`]s (files, slices, bundles).
//! - `symbols`: demangling and the choice of one name among aliases.
//! - `procedures`: the union of every source of function starts for one document.
//! - `ehframe`, `pclntab`: the parsers behind the less common sources of function starts.
//! - `objc`: Objective-C method names from the class and category lists of a Mach-O.
//! - `discovery`: procedures found by following calls and tail jumps from every known start.
//! - `imports`: PLT stubs, Mach-O stubs and pointer slots, PE import address table slots.
//! - `image`: a loaded document (bytes, sections, imports, procedures) for the analysis operations.
//! - `disasm`: x86 and arm64 decoding behind one instruction model.
//! - `jumptable`: switch jump tables and their destinations, for discovery and the call graph.
//! - `arm64_text`: where yaxpeax-arm's AArch64 text differs from LLVM's, LLVM's spelling.
//! - `body`: masked-byte digests, basic blocks and operand facts of one procedure, for comparing
//!   builds.
//! - `datarefs`: names for the data operands and pointers land in (strings, symbols, slots).
//! - `analysis`: assembly pages, callers, callees, cross-references and function dossiers.
//! - `strings`: string search over sections.

mod address;
mod admit;
mod analysis;
mod arm64_text;
mod body;
mod bytes;
mod code_index;
mod datarefs;
mod disasm;
mod discovery;
mod ehframe;
mod entry_main;
mod format;
mod image;
mod imports;
mod jumptable;
mod leb128;
mod objc;
mod pclntab;
mod procedures;
mod relocations;
mod strings;
mod symbols;
mod types;

pub use address::{format_address, hex, hex_opt, parse_address};
pub use admit::{
    Admitted, Hasher, Unhashed, admit, admit_opened, admit_unhashed, admit_with, documents_of,
};
pub use analysis::{
    AssemblyPage, CallGraphEdges, CalleeEdge, CallerEdge, Callers, CodeXref, DataXref, Dossier,
    DossierString, Instruction, ProcedureInfo, UnresolvedCall, Xrefs,
};
pub use body::{BodyFacts, MaskedInstruction};
pub use bytes::{
    ByteHit, BytePattern, ByteRead, ByteSearch, BytesError, MAX_HITS_PAGE, MAX_READ_BYTES,
    TypedValues,
};
pub use datarefs::DataRef;
pub(crate) use datarefs::{DataName, DataNames};
pub use format::{
    FatSlice, HEAD_LEN, fat_slices, macho_cpu_name, macho_filetype, macho_is_64, sniff,
    thin_architecture,
};
pub use image::{Image, procedures};
pub use strings::{StringMatch, StringMatches, StringQuery, StringUser};
pub(crate) use symbols::display_name;
pub use types::{
    AdmitError, BundleInfo, DocumentSource, DocumentSpec, ImportEntry, PROVIDER_ID, Procedure,
    ProviderError, SectionInfo, Target,
};

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
            name_source: None,
            found_by: None,
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
