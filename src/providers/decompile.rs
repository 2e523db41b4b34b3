//! The decompiler interface: pseudo-C of one procedure from a deep provider, with what it
//! references resolved to rea's own identities, and the result's line pages.
//!
//! [`Decompiler`] is what a decompiling provider implements; `angr` does today (see
//! [`crate::providers::angr`]). Another decompiler (Ghidra headless, for instance) would plug in
//! by implementing the same trait over the same [`Image`]: rea hands it the document it already
//! parsed, and it answers in the same [`PseudoCode`].

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::providers::native::{Image, format_address, hex};

/// Most lines one page of pseudo-code may hold.
pub const MAX_PAGE_LINES: usize = 2000;

/// Lines a page holds when the caller does not say.
pub const DEFAULT_PAGE_LINES: usize = 200;

/// A decompiling provider: one instance per binary session, holding whatever it keeps running
/// (a worker process, a project) until [`Decompiler::close`] or drop.
pub trait Decompiler: Send {
    /// The provider id callers name it by (`angr`).
    fn id(&self) -> &'static str;

    /// Pseudo-C of the procedure starting at `procedure` in `image`'s document. An error leaves
    /// the decompiler usable: the next call starts afresh whatever had failed.
    fn decompile(&mut self, image: &Image, procedure: u64) -> Result<Decompiled, DecompileError> {
        self.decompile_with(image, procedure, &AnalystHints::default())
    }

    /// [`Decompiler::decompile`] with the analyst's names, prototypes and types applied: a
    /// result is remembered per set of hints, so other hints decompile anew.
    fn decompile_with(
        &mut self,
        image: &Image,
        procedure: u64,
        hints: &AnalystHints,
    ) -> Result<Decompiled, DecompileError> {
        self.decompile_controlled(image, procedure, hints, &Control::default())
    }

    /// [`Decompiler::decompile_with`], reporting its stages to `control` while it runs and
    /// stopping (with [`DecompileError::Cancelled`]) once `control` asks it to.
    fn decompile_controlled(
        &mut self,
        image: &Image,
        procedure: u64,
        hints: &AnalystHints,
        control: &Control<'_>,
    ) -> Result<Decompiled, DecompileError>;

    /// Stops whatever the decompiler keeps running. Dropping it does the same.
    fn close(&mut self);
}

/// A decompilation's progress reporter: the share done (0 to 100) and what it does now.
pub type Report<'a> = dyn Fn(u64, &str) + Sync + 'a;

/// What a running decompilation tells its caller, and how the caller stops it. The default hears
/// nothing and never stops.
#[derive(Default)]
pub struct Control<'a> {
    /// Called with the share done (0 to 100) and what is being done now; never decreasing.
    pub report: Option<&'a Report<'a>>,
    /// Polled while the decompiler works; `true` stops it.
    pub stop: Option<&'a (dyn Fn() -> bool + Sync + 'a)>,
}

impl Control<'_> {
    /// Reports `percent` done (0 to 100) and what is being done.
    pub fn report(&self, percent: u64, message: &str) {
        if let Some(report) = self.report {
            report(percent.min(100), message);
        }
    }

    /// Whether the caller asks the decompiler to stop.
    pub fn stopped(&self) -> bool {
        self.stop.is_some_and(|stop| stop())
    }
}

/// What the analyst has said that a decompilation uses (from the annotations of the document):
/// names and prototypes of the procedure and its callees, names and types of data, and the
/// document's C types the declarations may name. Addresses are rea's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct AnalystHints {
    /// Procedures: a name, a C prototype, or both.
    pub procedures: Vec<ProcedureHint>,
    /// Data locations: a name, a C type, or both.
    pub data: Vec<DataHint>,
    /// The document's C types (struct, union, enum definitions and typedefs), in order.
    pub types: Vec<String>,
}

impl AnalystHints {
    /// Whether there is nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.procedures.is_empty() && self.data.is_empty() && self.types.is_empty()
    }
}

/// The analyst's name and prototype of one procedure.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ProcedureHint {
    /// The procedure's start.
    pub address: u64,
    /// Its analyst name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its C prototype (`int check(const char *s)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prototype: Option<String>,
}

/// The analyst's name and type of one data location.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct DataHint {
    /// The location.
    pub address: u64,
    /// Its analyst name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its C type (`op_fn[4]`).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub ty: Option<String>,
}

/// What a C parser said of a declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclarationCheck {
    /// It parses; for a prototype, the name it declares.
    Valid {
        /// The declared function's name, for a prototype.
        name: Option<String>,
    },
    /// It does not parse: where (a byte offset into the text) and what the parser said.
    Invalid {
        /// Byte offset of the problem.
        position: usize,
        /// The parser's message.
        problem: String,
    },
}

/// Who produced a pseudo-code: recorded beside every result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecompilerIdentity {
    /// Provider id (`angr`).
    pub id: String,
    /// Human name, for example `angr decompiler`.
    pub name: String,
    /// The decompiler's version as it reported itself when it started (`9.2.213`).
    pub version: String,
}

/// How the code uses a referenced address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReferenceKind {
    /// A call of the function at the address.
    Call,
    /// The function's address used as a value (a callback, a pointer stored away).
    Function,
    /// A string literal the decompiler read at the address.
    String,
    /// A global variable or other data at the address.
    Data,
}

/// What rea itself knows at a referenced address, so an agent can follow the reference with
/// rea's other tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Referent {
    /// A procedure of rea's inventory starting at the address.
    Procedure {
        /// The procedure's start (canonical lowercase hex).
        #[serde(with = "hex")]
        #[schemars(with = "String")]
        address: u64,
        /// rea's name for it, when it has one.
        name: Option<String>,
    },
    /// An imported function reached through a stub or a pointer slot at the address.
    Import {
        /// The imported symbol as stored (`strlen`, `_getpass`).
        name: String,
        /// The library it comes from, when the format records it.
        library: Option<String>,
        /// `plt`, `stub`, `got`, `pointer` or `iat`: how code reaches it.
        via: String,
    },
    /// A string of the document at the address, as rea reads it.
    String {
        /// The text (cut to a bounded length).
        text: String,
        /// `utf-8`, `utf-16le` or `cfstring`.
        encoding: String,
    },
    /// A named symbol of the document at the address.
    Symbol {
        /// The symbol's display name.
        name: String,
    },
    /// Nothing rea knows starts there (an address inside a section, or outside every one).
    Unknown {
        /// The section holding the address, when one does.
        section: Option<String>,
    },
}

/// One reference the pseudo-code shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CodeReference {
    /// Line of the pseudo-code it is on (1-based).
    pub line: usize,
    /// How the code uses it.
    pub kind: ReferenceKind,
    /// The referenced address. A call through an import's pointer slot gives the slot.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub address: u64,
    /// The text the code shows for it (a callee's name, a string literal, a variable).
    pub shown: String,
    /// What rea knows there.
    pub referent: Referent,
}

/// Pseudo-C of one procedure, whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PseudoCode {
    /// Who decompiled it.
    pub provider: DecompilerIdentity,
    /// The document's name.
    pub document: String,
    /// The procedure's start.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub procedure: u64,
    /// rea's name for the procedure, when it has one.
    pub name: Option<String>,
    /// End (exclusive) of the region the decompiler was given: rea's extent of the procedure.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub end: u64,
    /// The pseudo-code, one entry per line.
    pub lines: Vec<String>,
    /// Every call, function pointer, string and global the code shows, in line order.
    pub references: Vec<CodeReference>,
    /// What the decompiler could not do or what was left out: unresolved indirect jumps,
    /// branches out of the region, analyses that failed, text that was cut.
    pub limitations: Vec<String>,
}

/// One page of a [`PseudoCode`], by lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PseudoCodePage {
    /// Who decompiled it.
    pub provider: DecompilerIdentity,
    /// The document's name.
    pub document: String,
    /// The procedure's start.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub procedure: u64,
    /// rea's name for the procedure, when it has one.
    pub name: Option<String>,
    /// End (exclusive) of the region the decompiler was given.
    #[serde(with = "hex")]
    #[schemars(with = "String")]
    pub end: u64,
    /// Lines of the whole pseudo-code.
    pub total_lines: usize,
    /// Index of the first line of this page (0-based; line numbers are `offset + 1` on).
    pub offset: usize,
    /// The page's lines.
    pub lines: Vec<String>,
    /// The references on this page's lines.
    pub references: Vec<CodeReference>,
    /// References of the whole pseudo-code.
    pub total_references: usize,
    /// Limitations of the whole pseudo-code.
    pub limitations: Vec<String>,
    /// Offset of the next page, when lines remain.
    pub next_offset: Option<usize>,
}

impl PseudoCode {
    /// Lines `[offset, offset + limit)` (limit at most [`MAX_PAGE_LINES`]) with their references.
    pub fn page(&self, offset: usize, limit: usize) -> PseudoCodePage {
        let limit = limit.min(MAX_PAGE_LINES);
        let total = self.lines.len();
        let from = offset.min(total);
        let to = from.saturating_add(limit).min(total);
        let references = self
            .references
            .iter()
            .filter(|r| r.line > from && r.line <= to)
            .cloned()
            .collect();
        PseudoCodePage {
            provider: self.provider.clone(),
            document: self.document.clone(),
            procedure: self.procedure,
            name: self.name.clone(),
            end: self.end,
            total_lines: total,
            offset,
            lines: self.lines[from..to].to_vec(),
            references,
            total_references: self.references.len(),
            limitations: self.limitations.clone(),
            next_offset: (to < total && limit > 0).then_some(to),
        }
    }

    /// The whole text, lines joined with newlines.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// Where the time of one [`Decompiler::decompile`] call went. Kept apart from [`PseudoCode`]:
/// an observation's record must not change with the machine's speed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Starting the decompiler (a worker process and its imports), when this call started it.
    pub start: Option<Duration>,
    /// Loading the document into it, when this call loaded it.
    pub load: Option<Duration>,
    /// Recovering the procedure's control flow.
    pub cfg: Duration,
    /// Decompiling it.
    pub decompile: Duration,
    /// The whole call, as rea saw it.
    pub total: Duration,
    /// Whether the answer came from the decompiler's own cache of recent results.
    pub cached: bool,
}

/// A decompilation and what it cost.
#[derive(Debug, Clone)]
pub struct Decompiled {
    /// The pseudo-code.
    pub code: std::sync::Arc<PseudoCode>,
    /// Where the time went.
    pub timings: Timings,
}

/// Why a decompilation failed. After any of these the decompiler is still usable.
#[derive(Debug, thiserror::Error)]
pub enum DecompileError {
    /// The decompiler is not installed or not configured; the message says how to install it.
    #[error("{provider} is not available: {reason}. {hint}")]
    NotInstalled {
        /// Provider id.
        provider: &'static str,
        /// What was looked for and not found.
        reason: String,
        /// How to install and configure it (an exact command).
        hint: String,
    },
    /// The decompiler cannot read this document's format (in rea).
    #[error("{provider} cannot decompile {format} documents in rea")]
    UnsupportedFormat {
        /// Provider id.
        provider: &'static str,
        /// The document format.
        format: String,
    },
    /// The decompiler cannot decompile this architecture (in rea).
    #[error("{provider} cannot decompile {architecture} code in rea")]
    UnsupportedArchitecture {
        /// Provider id.
        provider: &'static str,
        /// The document's architecture.
        architecture: String,
    },
    /// No procedure of rea's inventory starts at the address.
    #[error("no procedure starts at {}; list_procedures gives valid starts", format_address(*address))]
    NoProcedure {
        /// The address asked for.
        address: u64,
    },
    /// The decompiler's process could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Preparing or talking to the decompiler failed at the operating-system level.
    #[error("{provider}: cannot {operation}: {source}")]
    Io {
        /// Provider id.
        provider: &'static str,
        /// What was being done.
        operation: &'static str,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The decompiler ran past its time limit and was stopped.
    #[error(
        "{provider} did not {phase} within {limit:?} and was stopped; the next call starts it afresh"
    )]
    Timeout {
        /// Provider id.
        provider: &'static str,
        /// What it was doing (`start`, `load the document`, `decompile`).
        phase: &'static str,
        /// The limit.
        limit: Duration,
    },
    /// The decompiler answered with more than the reply cap and was stopped.
    #[error("{provider} answered with more than {limit} bytes and was stopped")]
    OutputLimit {
        /// Provider id.
        provider: &'static str,
        /// The cap in bytes.
        limit: usize,
    },
    /// The decompiler's process ended without answering (a crash, its memory limit, a kill).
    #[error(
        "{provider} stopped unexpectedly ({status}); the next call starts it afresh{}",
        tail(stderr)
    )]
    Crashed {
        /// Provider id.
        provider: &'static str,
        /// How it ended, as text.
        status: String,
        /// The end of what it printed on stderr.
        stderr: String,
    },
    /// The decompiler answered something rea does not understand.
    #[error("{provider} broke the protocol: {reason}")]
    Protocol {
        /// Provider id.
        provider: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The caller asked the decompiler to stop, and it did.
    #[error(
        "{provider} stopped decompiling at the caller's request{}",
        if *kept { "; its worker keeps the document loaded for the next call" } else { "; it did not stop in time and was killed, so the next call starts it afresh" }
    )]
    Cancelled {
        /// Provider id.
        provider: &'static str,
        /// Whether the worker stopped by itself and stays loaded (else it was killed).
        kept: bool,
    },
    /// The decompiler ran and reported that it could not decompile the procedure.
    #[error("{provider} could not decompile {} ({kind}): {message}", format_address(*address))]
    Failed {
        /// Provider id.
        provider: &'static str,
        /// The procedure.
        address: u64,
        /// The decompiler's class of failure (`lift`, `decompile`, `angr`, …).
        kind: String,
        /// Its message.
        message: String,
    },
}

fn tail(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(lines: usize) -> PseudoCode {
        PseudoCode {
            provider: DecompilerIdentity {
                id: "angr".into(),
                name: "angr decompiler".into(),
                version: "9.2.213".into(),
            },
            document: "t".into(),
            procedure: 0x1166,
            name: Some("count_spaces".into()),
            end: 0x11c2,
            lines: (1..=lines).map(|n| format!("line {n}")).collect(),
            references: [2, 3, 5]
                .into_iter()
                .map(|line| CodeReference {
                    line,
                    kind: ReferenceKind::Call,
                    address: 0x1040,
                    shown: "strlen@plt".into(),
                    referent: Referent::Procedure {
                        address: 0x1040,
                        name: Some("strlen@plt".into()),
                    },
                })
                .collect(),
            limitations: vec![],
        }
    }

    #[test]
    fn pages_split_lines_and_keep_each_reference_on_its_page() {
        let code = code(5);
        let first = code.page(0, 2);
        assert_eq!(first.lines, ["line 1", "line 2"]);
        assert_eq!(first.total_lines, 5);
        assert_eq!(first.next_offset, Some(2));
        assert_eq!(
            first.references.iter().map(|r| r.line).collect::<Vec<_>>(),
            [2]
        );
        assert_eq!(first.total_references, 3);
        let second = code.page(2, 2);
        assert_eq!(second.lines, ["line 3", "line 4"]);
        assert_eq!(
            second.references.iter().map(|r| r.line).collect::<Vec<_>>(),
            [3]
        );
        let last = code.page(4, 2);
        assert_eq!(last.lines, ["line 5"]);
        assert_eq!(last.next_offset, None);
        let past = code.page(9, 2);
        assert!(past.lines.is_empty());
        assert_eq!(past.next_offset, None);
        assert!(code.page(0, 0).lines.is_empty());
        assert_eq!(code.page(0, usize::MAX).lines.len(), 5);
    }

    #[test]
    fn results_serialize_addresses_as_text_and_referents_by_kind() {
        let json = serde_json::to_value(code(3).page(0, 10)).unwrap();
        assert_eq!(json["procedure"], "0x1166");
        assert_eq!(json["references"][0]["address"], "0x1040");
        assert_eq!(json["references"][0]["kind"], "call");
        assert_eq!(json["references"][0]["referent"]["kind"], "procedure");
        assert_eq!(json["references"][0]["referent"]["address"], "0x1040");
        let schema = serde_json::to_value(schemars::schema_for!(PseudoCodePage)).unwrap();
        assert!(schema.to_string().contains("1-based"));
    }
}
