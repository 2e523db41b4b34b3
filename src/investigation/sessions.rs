//! Sessions on disk as the operator's own commands see them (`rea sessions`, `rea evidence`,
//! `rea complete`): listed, shown, pruned, and read through a read-only store that takes no lock
//! and writes nothing, so the reading commands work beside a live server and on a read-only
//! file system.

use std::ops::ControlFlow;

use super::{InvestigationError, Result};
use crate::evidence::StoredEvidence;
use crate::ids::EvidenceId;
use crate::session::{self, SessionInfo};
use crate::settings::Settings;
use crate::store::{EvidenceFilter, EvidenceSummary, ReadOnlyStore};

/// Every session under the operator's state directory, live or not, whoever owns it, in order
/// of id. Reads only.
pub fn list_sessions(settings: &Settings) -> Result<Vec<SessionInfo>> {
    Ok(session::list(&settings.state_dir)?)
}

/// One session under the operator's state directory, by id. Reads only.
pub fn show_session(settings: &Settings, id: &str) -> Result<SessionInfo> {
    Ok(session::show(&settings.state_dir, id)?)
}

/// What `rea sessions prune` did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// Sessions deleted, in order of id.
    pub deleted: Vec<String>,
    /// Sessions kept because they were never exported.
    pub kept_unexported: Vec<String>,
    /// Sessions kept because deleting them failed, with why, in order of id.
    pub failed: Vec<(String, InvestigationError)>,
}

/// Deletes the sessions under the operator's state directory that no live process holds,
/// after the files closed sessions left behind; a session never exported is kept unless
/// `force`.
pub fn prune_sessions(settings: &Settings, force: bool) -> Result<Pruned> {
    let dir = &settings.state_dir;
    let mut pruned = Pruned::default();
    session::sweep_closed_now(dir)?;
    for s in session::list(dir)?.into_iter().filter(|s| !s.live) {
        if s.exported_at.is_none() && !force {
            pruned.kept_unexported.push(s.id);
            continue;
        }
        match session::delete(dir, &s.id) {
            Ok(()) => pruned.deleted.push(s.id),
            Err(e) => pruned.failed.push((s.id, e.into())),
        }
    }
    Ok(pruned)
}

/// One session's database opened for the operator's reading commands: read-only, no writer,
/// no migration, no lock, nothing written (see [`ReadOnlyStore`]).
#[derive(Debug)]
pub struct ReadOnlySession {
    store: ReadOnlyStore,
}

impl ReadOnlySession {
    /// Opens session `id` under the operator's state directory.
    pub fn open(settings: &Settings, id: &str) -> Result<ReadOnlySession> {
        let path = session::database_path(&settings.state_dir, id)?;
        Ok(ReadOnlySession {
            store: ReadOnlyStore::open(&path)?,
        })
    }

    /// One record of the ledger, whole, if it is there.
    pub fn evidence(&self, id: &EvidenceId) -> Result<Option<StoredEvidence>> {
        Ok(self.store.evidence(id)?)
    }

    /// The ledger rows `filter` selects in recording order, handed to `each` one at a time
    /// (until it says to stop), so a listing of any length holds one row in memory.
    pub fn each_evidence_summary(
        &self,
        filter: &EvidenceFilter,
        each: impl FnMut(EvidenceSummary) -> ControlFlow<()>,
    ) -> Result<()> {
        Ok(self.store.each_evidence_summary(filter, each)?)
    }

    /// How many rows of the ledger hold records of `operation`, or of any operation.
    pub fn count_evidence(&self, operation: Option<&str>) -> Result<u64> {
        Ok(self.store.count_evidence(operation)?)
    }

    /// The reader connections completion answers from, as the server's completion does.
    pub fn completion_source(&self) -> &ReadOnlyStore {
        &self.store
    }
}
