//! Completion: the normalized match key, the eight session families of prompt arguments it
//! serves, and the three path families (`paths`).
//!
//! Every answer is a live projection of the current session: nothing is cached, so opening,
//! switching or closing a target changes the next answer. A family whose source fails (provider
//! error, unsupported operation, malformed output) answers with an empty list, never with an
//! identifier that was not verified.

pub mod key;
pub mod paths;

use serde::{Deserialize, Serialize};

pub use crate::store::CompletionPage;
use crate::store::{ProcedureScope, ReadOnlyStore};

/// The protocol's limit on values in one completion answer.
pub const MAX_VALUES: usize = 100;

/// Where an argument's suggestions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Documents of the active target (the provider's list_documents).
    Document,
    /// Procedure addresses and uniquely naming names of the active target's inventory.
    Procedure,
    /// `auto` and the deep provider candidates for the active target.
    Provider,
    /// Evidence ids retained in the ledger.
    Evidence,
    /// Evidence ids of validated process captures.
    ProcessCapture,
    /// Manifest ids of schema-valid artifact inventories.
    ArtifactManifest,
    /// Occurrence ids of schema-valid artifact inventory pages.
    ArtifactOccurrence,
    /// Ids of residual unknowns whose head is not resolved.
    ResidualUnknown,
    /// Paths of targets: directories, binaries and `.asar` archives (see [`paths`]).
    TargetPath,
    /// Paths of executables: directories and files with an execute bit.
    ExecutablePath,
    /// Paths of directories.
    DirectoryPath,
}

impl Family {
    /// The path families, answered from the file system by [`paths::complete`].
    pub const PATHS: [Family; 3] = [
        Family::TargetPath,
        Family::ExecutablePath,
        Family::DirectoryPath,
    ];

    /// Every session family, in the order of `mcp-prompts.md`.
    pub const ALL: [Family; 8] = [
        Family::Document,
        Family::Procedure,
        Family::Provider,
        Family::Evidence,
        Family::ProcessCapture,
        Family::ArtifactManifest,
        Family::ArtifactOccurrence,
        Family::ResidualUnknown,
    ];

    /// The family's name as written in prompt files and documentation.
    pub fn name(self) -> &'static str {
        match self {
            Family::Document => "document",
            Family::Procedure => "procedure",
            Family::Provider => "provider",
            Family::Evidence => "evidence",
            Family::ProcessCapture => "process-capture",
            Family::ArtifactManifest => "artifact-manifest",
            Family::ArtifactOccurrence => "artifact-occurrence",
            Family::ResidualUnknown => "residual-unknown",
            Family::TargetPath => "target-path",
            Family::ExecutablePath => "executable-path",
            Family::DirectoryPath => "directory-path",
        }
    }

    /// Whether the family completes paths (from the file system, not the session).
    pub fn is_path(self) -> bool {
        Family::PATHS.contains(&self)
    }
}

/// Filters and orders a small in-memory list the same way the store's range scans do: match-key
/// prefix, duplicates removed, code-point order, first `limit` values with the exact total.
pub fn complete_in_memory<I: IntoIterator<Item = String>>(
    candidates: I,
    typed: &str,
    limit: usize,
) -> CompletionPage {
    if typed.chars().count() > key::MAX_PREFIX_CHARS {
        return CompletionPage::default();
    }
    let prefix = key::match_key(typed);
    let mut matches: Vec<String> = candidates
        .into_iter()
        .filter(|c| key::match_key(c).starts_with(&prefix))
        .collect();
    matches.sort();
    matches.dedup();
    let total = matches.len() as u64;
    matches.truncate(limit);
    CompletionPage {
        has_more: total > matches.len() as u64,
        values: matches,
        total,
    }
}

/// Answers one completion request for `family` from the live session's store (or from no
/// session).
///
/// `document` is the `document` argument of the request's context, forwarded to Procedure
/// completion. Errors of any source become an empty answer.
pub fn complete(
    session: Option<&ReadOnlyStore>,
    family: Family,
    typed: &str,
    document: Option<&str>,
    limit: usize,
) -> CompletionPage {
    let limit = limit.min(MAX_VALUES);
    let answer = match (family, session) {
        (Family::Provider, _) => Ok(complete_providers(session, typed, limit)),
        // Paths come from the file system beneath the roots: `paths::complete` answers them.
        (Family::TargetPath | Family::ExecutablePath | Family::DirectoryPath, _) => {
            Ok(CompletionPage::default())
        }
        (_, None) => Ok(CompletionPage::default()),
        (Family::Document, Some(s)) => s.complete_documents(typed, limit),
        (Family::Procedure, Some(s)) => {
            let scope = match document {
                Some(d) if !d.is_empty() => ProcedureScope::Document(d),
                _ => ProcedureScope::Target,
            };
            s.complete_procedures(scope, typed, limit)
        }
        (Family::Evidence, Some(s)) => s.complete_evidence(typed, limit),
        (Family::ProcessCapture, Some(s)) => s.complete_process_captures(typed, limit),
        (Family::ArtifactManifest, Some(s)) => s.complete_manifests(typed, limit),
        (Family::ArtifactOccurrence, Some(s)) => s.complete_occurrences(typed, limit),
        (Family::ResidualUnknown, Some(s)) => s.complete_unknowns(typed, limit),
    };
    answer.unwrap_or_else(|error| {
        tracing::warn!(%error, family = family.name(), "completion source failed; answering with no values");
        CompletionPage::default()
    })
}

/// Annotation ids of the active target (the Annotation family), for `annotate`'s `supersedes`.
/// No guided prompt takes an annotation id, so this family is reached through the store API and
/// `rea complete annotate supersedes PREFIX`, not through `completion/complete`.
pub fn complete_annotations(
    session: Option<&ReadOnlyStore>,
    typed: &str,
    limit: usize,
) -> CompletionPage {
    let Some(s) = session else {
        return CompletionPage::default();
    };
    s.complete_annotations(typed, limit.min(MAX_VALUES))
        .unwrap_or_else(|error| {
            tracing::warn!(%error, family = "annotation", "completion source failed; answering with no values");
            CompletionPage::default()
        })
}

/// The candidates a `provider_id` may name: those that some tool taking one runs (objdump and
/// llvm-objdump for procedure_assembly), never one every such tool would refuse (gdb, angr…).
fn offered(candidates: Vec<crate::providers::deep::Candidate>) -> impl Iterator<Item = String> {
    use crate::providers::deep::{PROVIDER_TOOLS, answers};
    candidates
        .into_iter()
        .filter(|c| PROVIDER_TOOLS.iter().any(|tool| answers(c, tool)))
        .map(|c| c.id)
}

/// `auto`, plus the deep candidates for the active target's format that a tool taking
/// `provider_id` accepts, when a target is open. Looking for candidates reads PATH; it never
/// starts them, and without a target it does not even look.
fn complete_providers(
    session: Option<&ReadOnlyStore>,
    typed: &str,
    limit: usize,
) -> CompletionPage {
    let mut candidates = vec![crate::providers::native::PROVIDER_ID.to_owned()];
    match session.map(ReadOnlyStore::active_target) {
        Some(Ok(Some(target))) => {
            candidates.extend(offered(crate::providers::deep::candidates(
                target.format.as_str(),
                None,
            )));
        }
        Some(Err(error)) => {
            tracing::warn!(%error, "provider completion could not read the active target; answering with no values");
            return CompletionPage::default();
        }
        _ => {}
    }
    complete_in_memory(candidates, typed, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 17 item 7 / issue 15 item 11: gdb was offered as a provider_id that
    /// procedure_assembly then refused.
    #[test]
    fn only_providers_a_tool_accepts_are_offered_regression_17() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "gdb",
            "objdump",
            "llvm-objdump-14",
            "radare2",
            "rizin",
            "analyzeHeadless",
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = dir.path().as_os_str();
        let found = crate::providers::deep::candidates_with("elf", Some(path), None);
        let ids: Vec<&str> = found.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "gdb",
                "ghidra",
                "llvm-objdump-14",
                "objdump",
                "radare2",
                "rizin"
            ]
        );
        assert_eq!(
            offered(found).collect::<Vec<_>>(),
            ["llvm-objdump-14", "objdump"]
        );
        let macho = crate::providers::deep::candidates_with("macho", Some(path), None);
        assert_eq!(offered(macho).collect::<Vec<_>>(), ["llvm-objdump-14"]);
    }
}
