//! Artifact inventory of a shipped file or `.app` bundle: manifest, edges, occurrences, findings,
//! plus comparison of two inventories and verification of reconstruction claims against them.
//!
//! Layout:
//! - `ids`: the `agm_`/`occ_` identifiers and how they are computed from canonical JSON.
//! - `walk`: enumerates a target's files and classifies each one into a [`PartKind`].
//! - `image`: reads native images (Mach-O thin or universal, ELF, PE) for regions, libraries,
//!   signatures, exports, URLs and Electron fuse wires.
//! - `macho_sig`: parses the embedded code signature SuperBlob of a Mach-O image.
//! - `bundle`: Info.plist keys and Electron markers (asar integrity, fuses).
//! - `resolve`: resolves library install names (`@rpath`, `@loader_path`, …) inside a target.
//! - `inventory`: puts the above together into an [`Inventory`] ([`inspect`]).
//! - `page`: occurrence pages and their schema check ([`validate_page`]).
//! - `compare`: differences between two inventories, dimension by dimension ([`compare()`]).
//! - `verify`: evaluates a finite [`ReconstructionSpec`] against supplied evidence ([`verify()`]).
//! - `report`: human-readable reports.

mod bundle;
mod compare;
mod ids;
mod image;
mod inventory;
mod macho_sig;
mod page;
mod report;
mod resolve;
mod verify;
mod walk;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::vocabulary::Architecture;

pub use compare::{
    Comparison, DimensionStatus, EdgeChange, EdgesDiff, OccurrenceKindDiff, OccurrenceRef,
    PartChange, PartDocuments, PartsDiff, ProcedurePartDiff, ProceduresDiff, SideInfo, compare,
};
pub use ids::{ManifestId, OccurrenceId, occurrence_id};
pub use inventory::{inspect, inspect_opened};
pub use page::validate_page;
pub use report::{render_comparison_report, render_inventory_report};
pub use verify::{
    Claim, ClaimResult, ClaimStatus, ComparisonEvidence, Dimension, EvidenceView,
    InventoryEvidence, MAX_CLAIMS, ProcedureComparisonEvidence, ProcedureEvidence,
    ReconstructionSpec, Verdict, verify,
};

/// The provider id stamped on inventories made by this module (the built-in native provider).
pub const PROVIDER_ID: &str = "auto";

/// How [`inspect`] walks and bounds its work. Every cap that is hit is recorded in the result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct InspectOptions {
    /// Occurrences per page; 0 means the default of 500.
    pub page_size: usize,
    /// Version of the provider producing the inventory (e.g. the crate version); comparisons
    /// refuse to call two inventories equal when their provider versions differ.
    pub provider_version: String,
    /// URL occurrences kept per part (sorted, first N); the same cap applies to hostnames.
    pub max_urls_per_part: usize,
    /// Exported-symbol occurrences kept per part (sorted, first N).
    pub max_symbols_per_part: usize,
    /// Files (and symbolic links) walked in a directory target before the manifest is cut.
    pub max_files: usize,
    /// Files larger than this are hashed but not parsed.
    pub max_parse_bytes: u64,
}

impl Default for InspectOptions {
    fn default() -> Self {
        InspectOptions {
            page_size: 500,
            provider_version: String::from("0.0.0"),
            max_urls_per_part: 500,
            max_symbols_per_part: 2_000,
            max_files: 200_000,
            max_parse_bytes: 1 << 30,
        }
    }
}

/// Who produced an inventory; two inventories are comparable only when their stamps are equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderStamp {
    /// Provider id; always `auto` for this module.
    pub id: String,
    /// Provider version as passed in [`InspectOptions::provider_version`].
    pub version: String,
}

/// What kind of target was inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// A single file.
    File,
    /// A macOS bundle directory (`*.app`).
    Bundle,
    /// Another directory admitted by the caller.
    Directory,
}

/// The inspected target, identified by its name only so the manifest does not depend on where
/// the target sits on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TargetInfo {
    /// File or directory name of the target (no directories above it).
    pub name: String,
    /// File, bundle or directory.
    pub kind: TargetKind,
    /// Lowercase hex SHA-256 of the file, for a single-file target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Total size in bytes of all regular files of the target.
    pub size: u64,
}

/// Classification of a part.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PartKind {
    /// Mach-O image of type `MH_EXECUTE`.
    MachoExecutable,
    /// Mach-O image of type `MH_DYLIB` outside a framework.
    MachoDylib,
    /// Mach-O image of type `MH_BUNDLE` (plug-ins, Node add-ons).
    MachoBundle,
    /// Universal (fat) Mach-O file; its slices are separate parts.
    MachoUniversal,
    /// Another Mach-O file type (object file, dSYM companion, kext, …).
    MachoOther,
    /// The Mach-O binary of a `.framework` (thin or universal).
    FrameworkBinary,
    /// XML property list.
    Plist,
    /// Binary property list (`bplist00`).
    BinaryPlist,
    /// Electron asar archive.
    Asar,
    /// Interface Builder nib.
    Nib,
    /// Localized strings table (`.strings`).
    StringsTable,
    /// Code-signature resource seal (`_CodeSignature/CodeResources`).
    CodeSignature,
    /// Image, icon, document or other bundle resource.
    Resource,
    /// Script source (`.js`, `.mjs`, `.cjs`, `.sh`, `.py`, or a `#!` file).
    Script,
    /// ELF image.
    Elf,
    /// PE/COFF image.
    Pe,
    /// Symbolic link (not followed); its target is in `link_target`.
    Symlink,
    /// Segment (Mach-O segment, ELF loadable segment) of a single-file target's image.
    Segment,
    /// Section of a single-file target's image.
    Section,
    /// Anything else.
    Other,
}

impl PartKind {
    /// The kebab-case name used in JSON and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::MachoExecutable => "macho-executable",
            PartKind::MachoDylib => "macho-dylib",
            PartKind::MachoBundle => "macho-bundle",
            PartKind::MachoUniversal => "macho-universal",
            PartKind::MachoOther => "macho-other",
            PartKind::FrameworkBinary => "framework-binary",
            PartKind::Plist => "plist",
            PartKind::BinaryPlist => "binary-plist",
            PartKind::Asar => "asar",
            PartKind::Nib => "nib",
            PartKind::StringsTable => "strings-table",
            PartKind::CodeSignature => "code-signature",
            PartKind::Resource => "resource",
            PartKind::Script => "script",
            PartKind::Elf => "elf",
            PartKind::Pe => "pe",
            PartKind::Symlink => "symlink",
            PartKind::Segment => "segment",
            PartKind::Section => "section",
            PartKind::Other => "other",
        }
    }

    /// Whether parts of this kind hold executable code whose procedures can change.
    pub fn is_code(self) -> bool {
        matches!(
            self,
            PartKind::MachoExecutable
                | PartKind::MachoDylib
                | PartKind::MachoBundle
                | PartKind::MachoUniversal
                | PartKind::MachoOther
                | PartKind::FrameworkBinary
                | PartKind::Elf
                | PartKind::Pe
        )
    }
}

/// One part of the target: a file of a directory target, a slice of a universal Mach-O, or a
/// segment or section of a single-file target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Part {
    /// Path of the part, '/'-separated and relative to the target. A single-file target's file
    /// is its name; a slice is `<file>#<arch>`; regions are `<image>/segment:<name>` and
    /// `<image>/section:<segment>,<name>` (Mach-O) or `<image>/section:<name>` (ELF, PE).
    pub path: String,
    /// Classification.
    pub kind: PartKind,
    /// Size in bytes (for a symbolic link, the length of its target text).
    pub size: u64,
    /// Lowercase hex SHA-256 of the part's bytes; absent for zero-fill regions and unreadable
    /// files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Architecture of a slice or region (`x86_64`, `arm64`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<Architecture>,
    /// Path of the part that contains this one (the file of a slice, the image of a region).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Virtual address of a region, lowercase `0x` hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Offset of a slice or region from the start of its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_offset: Option<u64>,
    /// Target text of a symbolic link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_target: Option<String>,
}

/// The reproducible list of a target's parts. Same bytes give the same id: parts are sorted by
/// path and nothing depends on time or on where the target is stored.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Manifest {
    /// `agm_` + SHA-256 of the canonical JSON (RFC 8785) of `{target, complete, parts}`.
    pub id: ManifestId,
    /// The inspected target.
    pub target: TargetInfo,
    /// False when the walk stopped early (file cap, unreadable entries); see the inventory's
    /// limitations.
    pub complete: bool,
    /// Parts sorted by path.
    pub parts: Vec<Part>,
}

/// What an edge links.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// Mach-O `LC_LOAD_DYLIB`.
    LoadDylib,
    /// Mach-O `LC_LOAD_WEAK_DYLIB`.
    LoadWeakDylib,
    /// Mach-O `LC_REEXPORT_DYLIB`.
    ReexportDylib,
    /// Mach-O `LC_LAZY_LOAD_DYLIB`.
    LazyLoadDylib,
    /// Mach-O `LC_LOAD_UPWARD_DYLIB`.
    LoadUpwardDylib,
    /// ELF `DT_NEEDED`.
    Needed,
    /// PE import table entry.
    Import,
    /// PE delay-load import table entry.
    DelayImport,
    /// A bundle's `Info.plist`.
    InfoPlist,
    /// A bundle's main executable (`CFBundleExecutable`).
    MainExecutable,
    /// Embedded code signature (`LC_CODE_SIGNATURE`) of a Mach-O image.
    CodeSignature,
    /// Resource seal (`_CodeSignature/CodeResources`) of a bundle's executable.
    CodeResources,
    /// An asar archive's `.unpacked` folder.
    AsarUnpacked,
}

impl EdgeKind {
    /// The kebab-case name used in JSON and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::LoadDylib => "load-dylib",
            EdgeKind::LoadWeakDylib => "load-weak-dylib",
            EdgeKind::ReexportDylib => "reexport-dylib",
            EdgeKind::LazyLoadDylib => "lazy-load-dylib",
            EdgeKind::LoadUpwardDylib => "load-upward-dylib",
            EdgeKind::Needed => "needed",
            EdgeKind::Import => "import",
            EdgeKind::DelayImport => "delay-import",
            EdgeKind::InfoPlist => "info-plist",
            EdgeKind::MainExecutable => "main-executable",
            EdgeKind::CodeSignature => "code-signature",
            EdgeKind::CodeResources => "code-resources",
            EdgeKind::AsarUnpacked => "asar-unpacked",
        }
    }
}

/// Where an edge's target was found.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Resolution {
    /// Inside the target; `resolved` names the part (or folder).
    Internal,
    /// An operating-system path (`/usr/lib`, `/System`).
    System,
    /// An absolute path outside the target that is not a system path.
    Outside,
    /// A bare library name found at run time through the loader's search path.
    SearchPath,
    /// Could not be resolved (missing inside the target, unknown `@rpath`, relative path).
    Unresolved,
    /// Stored inside the source part itself (an embedded code signature).
    Embedded,
}

impl Resolution {
    /// The kebab-case name used in JSON and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Internal => "internal",
            Resolution::System => "system",
            Resolution::Outside => "outside",
            Resolution::SearchPath => "search-path",
            Resolution::Unresolved => "unresolved",
            Resolution::Embedded => "embedded",
        }
    }
}

/// A link from one part (or the target root, `.`) to something it depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Edge {
    /// Source part path, or `.` for the target root.
    pub from: String,
    /// What the edge links.
    pub kind: EdgeKind,
    /// The target as written (an install name such as `@rpath/Foo.framework/Foo`, a DLL name, or
    /// a part path).
    pub target: String,
    /// Where the target was found.
    pub resolution: Resolution,
    /// The part (or folder) path the target resolved to inside the target, when internal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// The search directory that resolved an `@rpath` name, as written in `LC_RPATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Architectures of the slices that carry this edge (empty when not per-slice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub architectures: Vec<Architecture>,
}

/// What an occurrence records.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum OccurrenceKind {
    /// An entitlement of an embedded code signature: key = entitlement name, value = its value
    /// (`true`/`false`, a string, or JSON for arrays and dictionaries).
    Entitlement,
    /// A code-signature fact: key one of `signed`, `identifier`, `team-id`, `flags`,
    /// `hardened-runtime`, `adhoc`, `linker-signed`, `hash-type`, `cms-signature`,
    /// `entitlements` (number of XML entitlements), `der-entitlements`, `malformed`.
    CodeSignature,
    /// An Info.plist key that matters: key = dotted key path, value = its value.
    InfoPlist,
    /// An Electron marker: key one of `app-asar`, `asar-header-sha256`, `asar-entries`,
    /// `asar-unpacked-entries`, `asar-integrity`, `framework`, `asar-unreadable`.
    Electron,
    /// An Electron fuse: key = fuse name (or `wire-version`), value `on`, `off`, `removed`, or
    /// the raw byte as `0x..`.
    ElectronFuse,
    /// A linked library: key = resolution (`internal`, `system`, …), value = name as written.
    Library,
    /// An http/https/ws/wss URL found in the strings of an executable image.
    Url,
    /// A hostname taken from those URLs.
    Hostname,
    /// An exported symbol name.
    ExportedSymbol,
}

impl OccurrenceKind {
    /// Every kind, in a fixed order (comparisons report each one).
    pub const ALL: [OccurrenceKind; 9] = [
        OccurrenceKind::Entitlement,
        OccurrenceKind::CodeSignature,
        OccurrenceKind::InfoPlist,
        OccurrenceKind::Electron,
        OccurrenceKind::ElectronFuse,
        OccurrenceKind::Library,
        OccurrenceKind::Url,
        OccurrenceKind::Hostname,
        OccurrenceKind::ExportedSymbol,
    ];

    /// The kebab-case name used in JSON, reports and occurrence ids.
    pub fn as_str(self) -> &'static str {
        match self {
            OccurrenceKind::Entitlement => "entitlement",
            OccurrenceKind::CodeSignature => "code-signature",
            OccurrenceKind::InfoPlist => "info-plist",
            OccurrenceKind::Electron => "electron",
            OccurrenceKind::ElectronFuse => "electron-fuse",
            OccurrenceKind::Library => "library",
            OccurrenceKind::Url => "url",
            OccurrenceKind::Hostname => "hostname",
            OccurrenceKind::ExportedSymbol => "exported-symbol",
        }
    }

    /// Parses the kebab-case name.
    pub fn parse(text: &str) -> Option<OccurrenceKind> {
        OccurrenceKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }
}

/// A notable item found in a part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Occurrence {
    /// `occ_` + SHA-256 of `manifest_id \0 part \0 kind \0 key \0 value` (key empty when absent);
    /// see [`occurrence_id`].
    pub id: OccurrenceId,
    /// Path of the part it was found in.
    pub part: String,
    /// What it records.
    pub kind: OccurrenceKind,
    /// Name within the kind (entitlement name, Info.plist key path, fuse name, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The value found.
    pub value: String,
}

/// One page of an inventory's occurrences. A page set is pages `0..pages` of one manifest.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OccurrencePage {
    /// The manifest the occurrences belong to.
    pub manifest_id: ManifestId,
    /// Zero-based page number.
    pub page: u32,
    /// Number of pages in the set (at least 1).
    pub pages: u32,
    /// Number of occurrences across all pages of the set.
    pub total: u64,
    /// Whether the page set holds every occurrence the provider looks for; false when a cap was
    /// hit (the inventory's `occurrence_set` says which kinds and why).
    pub complete: bool,
    /// Occurrences of this page, sorted by part, kind, key and value.
    pub occurrences: Vec<Occurrence>,
}

/// A kind whose occurrences were cut, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KindGap {
    /// The kind that is incomplete.
    pub kind: OccurrenceKind,
    /// The part whose content caused the gap (a cap hit or an unreadable structure in it);
    /// comparisons ignore the gap when this part is byte-identical on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// Why (which part hit which cap).
    pub reason: String,
}

/// Whether the page set is complete, and if not, which kinds are missing occurrences.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OccurrenceSet {
    /// True only when no cap was hit and every part was read.
    pub complete: bool,
    /// Total number of occurrences across all pages.
    pub total: u64,
    /// Number of pages.
    pub pages: u32,
    /// Occurrences per page.
    pub page_size: u32,
    /// Kinds cut by a per-part cap; other kinds are complete unless `reasons` is non-empty.
    pub incomplete_kinds: Vec<KindGap>,
    /// Reasons that make every kind incomplete (unread parts, truncated manifest).
    pub reasons: Vec<String>,
}

impl OccurrenceSet {
    /// Whether occurrences of `kind` are complete, and if not, why.
    pub fn kind_gap(&self, kind: OccurrenceKind) -> Option<String> {
        if let Some(reason) = self.reasons.first() {
            return Some(reason.clone());
        }
        if let Some(gap) = self.incomplete_kinds.iter().find(|gap| gap.kind == kind) {
            return Some(gap.reason.clone());
        }
        // Incomplete without saying which kinds: every kind is in doubt.
        (!self.complete && self.incomplete_kinds.is_empty())
            .then(|| String::from("the page set is marked incomplete"))
    }
}

/// Which rule a finding comes from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FindingRule {
    /// A Mach-O image without an embedded code signature.
    UnsignedCode,
    /// A Mach-O image signed ad hoc (no identity).
    AdhocSignature,
    /// An entitlement that turns off a runtime protection.
    ProtectionDisablingEntitlement,
    /// ElectronAsarIntegrity's hash differs from the asar header's SHA-256.
    AsarIntegrityMismatch,
    /// An Electron fuse in its insecure state.
    InsecureElectronFuse,
    /// A library loaded from a non-system absolute path outside the target.
    LibraryOutsideBundle,
    /// App Transport Security allows arbitrary loads.
    AtsArbitraryLoads,
}

impl FindingRule {
    /// The kebab-case name used in JSON and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingRule::UnsignedCode => "unsigned-code",
            FindingRule::AdhocSignature => "adhoc-signature",
            FindingRule::ProtectionDisablingEntitlement => "protection-disabling-entitlement",
            FindingRule::AsarIntegrityMismatch => "asar-integrity-mismatch",
            FindingRule::InsecureElectronFuse => "insecure-electron-fuse",
            FindingRule::LibraryOutsideBundle => "library-outside-bundle",
            FindingRule::AtsArbitraryLoads => "ats-arbitrary-loads",
        }
    }
}

/// How much a finding matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Weakens a protection slightly.
    Low,
    /// Weakens a protection.
    Medium,
    /// Disables a protection.
    High,
}

/// A security-relevant conclusion drawn from occurrences, citing them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The rule that fired.
    pub rule: FindingRule,
    /// How much it matters.
    pub severity: Severity,
    /// The part it concerns.
    pub part: String,
    /// One sentence for a person.
    pub message: String,
    /// Occurrences the finding rests on.
    pub occurrence_ids: Vec<OccurrenceId>,
}

/// Everything [`inspect`] learned about a target.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Inventory {
    /// Who produced it; comparisons need equal stamps.
    pub provider: ProviderStamp,
    /// The parts.
    pub manifest: Manifest,
    /// Links between parts and to libraries, sorted.
    pub edges: Vec<Edge>,
    /// Findings, sorted by rule, part and message.
    pub findings: Vec<Finding>,
    /// Completeness of the occurrence pages.
    pub occurrence_set: OccurrenceSet,
    /// The occurrence pages, in order.
    pub pages: Vec<OccurrencePage>,
    /// What was not done or not read, one sentence each.
    pub limitations: Vec<String>,
}

/// Counts of an inventory, for reports and tool summaries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InventorySummary {
    /// Manifest id.
    pub manifest_id: ManifestId,
    /// Number of parts.
    pub parts: u64,
    /// Parts per kind.
    pub parts_by_kind: BTreeMap<String, u64>,
    /// Bytes in the target's regular files.
    pub bytes: u64,
    /// Number of edges.
    pub edges: u64,
    /// Edges per resolution.
    pub edges_by_resolution: BTreeMap<String, u64>,
    /// Number of occurrences.
    pub occurrences: u64,
    /// Occurrences per kind.
    pub occurrences_by_kind: BTreeMap<String, u64>,
    /// Number of findings.
    pub findings: u64,
    /// Findings per severity.
    pub findings_by_severity: BTreeMap<String, u64>,
    /// Number of occurrence pages.
    pub pages: u32,
    /// Whether the manifest and the page set are complete.
    pub complete: bool,
}

impl Inventory {
    /// Iterates every occurrence of every page.
    pub fn occurrences(&self) -> impl Iterator<Item = &Occurrence> {
        self.pages.iter().flat_map(|page| page.occurrences.iter())
    }

    /// Counts parts, edges, occurrences and findings.
    pub fn summary(&self) -> InventorySummary {
        let mut parts_by_kind = BTreeMap::new();
        for part in &self.manifest.parts {
            *parts_by_kind
                .entry(part.kind.as_str().to_string())
                .or_insert(0) += 1;
        }
        let mut edges_by_resolution = BTreeMap::new();
        for edge in &self.edges {
            *edges_by_resolution
                .entry(edge.resolution.as_str().to_string())
                .or_insert(0) += 1;
        }
        let mut occurrences_by_kind = BTreeMap::new();
        let mut occurrences = 0;
        for occurrence in self.occurrences() {
            occurrences += 1;
            *occurrences_by_kind
                .entry(occurrence.kind.as_str().to_string())
                .or_insert(0) += 1;
        }
        let mut findings_by_severity = BTreeMap::new();
        for finding in &self.findings {
            let name = match finding.severity {
                Severity::Info => "info",
                Severity::Low => "low",
                Severity::Medium => "medium",
                Severity::High => "high",
            };
            *findings_by_severity.entry(name.to_string()).or_insert(0) += 1;
        }
        InventorySummary {
            manifest_id: self.manifest.id.clone(),
            parts: self.manifest.parts.len() as u64,
            parts_by_kind,
            bytes: self.manifest.target.size,
            edges: self.edges.len() as u64,
            edges_by_resolution,
            occurrences,
            occurrences_by_kind,
            findings: self.findings.len() as u64,
            findings_by_severity,
            pages: self.occurrence_set.pages,
            complete: self.manifest.complete && self.occurrence_set.complete,
        }
    }

    /// Checks the inventory's own consistency: the manifest id recomputes from the manifest,
    /// every page validates and belongs to this manifest, and the pages form one set whose
    /// occurrence count matches its total. Verification uses this to refuse altered evidence.
    pub fn check(&self) -> Result<(), SchemaError> {
        let computed = ids::manifest_id(
            &self.manifest.target,
            self.manifest.complete,
            &self.manifest.parts,
        )
        .map_err(|reason| SchemaError::Malformed { reason })?;
        if computed != self.manifest.id {
            return Err(SchemaError::ManifestIdMismatch {
                stored: self.manifest.id.to_string(),
                computed: computed.to_string(),
            });
        }
        page::check_page_set(&self.manifest.id, self.occurrence_set.total, &self.pages)
    }
}

/// Why [`inspect`] could not produce an inventory.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The target could not be read at all.
    #[error("cannot read target {path}: {source}")]
    Unreadable {
        /// The target path as given.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The target is neither a regular file nor a directory (a device, a socket, …).
    #[error("target {path} is neither a regular file nor a directory")]
    NotFileOrDirectory {
        /// The target path as given.
        path: PathBuf,
    },
    /// The target's name is not valid UTF-8, so it cannot be recorded faithfully.
    #[error("target name of {path} is not valid UTF-8; rename it and retry")]
    NonUtf8Name {
        /// The target path as given.
        path: PathBuf,
    },
    /// Canonical JSON could not be produced (an internal error).
    #[error("cannot serialize the manifest canonically: {reason}")]
    Canonical {
        /// What failed.
        reason: String,
    },
    /// The target could not be opened as a regular file or directory, or changed while read.
    #[error(transparent)]
    File(crate::fsroot::FsError),
    /// The inventory ran past its deadline.
    #[error(transparent)]
    Stopped(#[from] crate::fsroot::DeadlineExceeded),
}

/// Why a stored page or inventory is not schema-valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The JSON does not have the page's shape.
    #[error("malformed occurrence page: {reason}")]
    Malformed {
        /// What the parser reported.
        reason: String,
    },
    /// The manifest id is not `agm_` followed by 64 lowercase hex digits.
    #[error("manifest id {value:?} is not agm_ followed by 64 hex digits")]
    BadManifestId {
        /// The value found.
        value: String,
    },
    /// An occurrence id is not `occ_` followed by 64 lowercase hex digits.
    #[error("occurrence {index}: id {value:?} is not occ_ followed by 64 hex digits")]
    BadOccurrenceId {
        /// Index of the occurrence in the page.
        index: usize,
        /// The value found.
        value: String,
    },
    /// `page` is not below `pages`, or `pages` is zero.
    #[error("page {page} is out of range for a set of {pages} pages")]
    PageOutOfRange {
        /// Page number found.
        page: u32,
        /// Page count found.
        pages: u32,
    },
    /// An occurrence id does not recompute from its fields.
    #[error(
        "occurrence {index}: stored id {stored} does not match {computed} computed from its fields"
    )]
    OccurrenceIdMismatch {
        /// Index of the occurrence in the page.
        index: usize,
        /// Id stored in the page.
        stored: String,
        /// Id computed from manifest id, part, kind, key and value.
        computed: String,
    },
    /// The same occurrence appears twice in a page.
    #[error("occurrence {index}: duplicate id {id}")]
    DuplicateOccurrence {
        /// Index of the repeated occurrence.
        index: usize,
        /// Its id.
        id: String,
    },
    /// The page holds more occurrences than the set's total.
    #[error("page holds {found} occurrences but the set's total is {total}")]
    TotalExceeded {
        /// Occurrences in the page.
        found: u64,
        /// Total claimed by the page.
        total: u64,
    },
    /// The manifest id does not recompute from the manifest.
    #[error("manifest id {stored} does not match {computed} computed from the manifest")]
    ManifestIdMismatch {
        /// Id stored in the manifest.
        stored: String,
        /// Id computed from it.
        computed: String,
    },
    /// A page of the set belongs to another manifest, is missing, repeated or disagrees on the
    /// set's size.
    #[error("inconsistent page set: {reason}")]
    InconsistentPageSet {
        /// What disagrees.
        reason: String,
    },
}
