//! The binary session an MCP connection works in: the session on disk plus its active target.

use std::path::Path;
use std::sync::Arc;

use super::{Session, SessionError};
use crate::providers::native::{self, Procedure, Target};
use crate::store::{NewDocument, NewProcedure, NewTarget, Store};

/// One binary session: starts at the first `open_binary`, switches targets inside the same
/// ledger, ends at `close_binary`.
#[derive(Debug)]
pub struct BinarySession {
    session: Session,
    /// The active target as the provider admitted it (documents with their byte ranges).
    active: Option<Target>,
}

impl BinarySession {
    /// Starts a new session under `state_dir`.
    pub fn create(state_dir: &Path) -> Result<Self, SessionError> {
        Ok(Self {
            session: Session::create(state_dir)?,
            active: None,
        })
    }

    /// Resumes a session left by a process that is gone. Its active target is admitted again
    /// from its path; when that fails (moved, changed), the session has no active target.
    pub fn resume(state_dir: &Path, id: &str) -> Result<Self, SessionError> {
        let session = Session::resume(state_dir, id)?;
        let active = session.store().active_target()?.and_then(|row| {
            native::admit(Path::new(&row.path))
                .ok()
                .filter(|t| t.sha256 == row.sha256)
        });
        Ok(Self { session, active })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.session.id()
    }

    /// The session directory.
    pub fn dir(&self) -> &Path {
        self.session.dir()
    }

    /// The session's store.
    pub fn store(&self) -> &Arc<Store> {
        self.session.store()
    }

    /// The active target, if one is open.
    pub fn active(&self) -> Option<&Target> {
        self.active.as_ref()
    }

    /// Makes `target` the active target in memory. The store already marked it active when it
    /// recorded it (see [`new_target`]).
    pub fn set_active(&mut self, target: Target) {
        self.active = Some(target);
    }

    /// Ends the session and deletes its database (in the background; see [`Session::close`]).
    pub fn close(self) -> Result<super::Deletion, SessionError> {
        self.session.close()
    }
}

/// The store rows for `target` with the complete procedure inventory of each of its documents (in
/// the order of `target.documents`).
pub fn new_target(target: &Target, inventories: Vec<Vec<Procedure>>) -> NewTarget {
    NewTarget {
        path: target.path.display().to_string(),
        name: target.name.clone(),
        sha256: target.sha256.clone(),
        format: target.format.clone(),
        architecture: target.architecture.clone(),
        documents: target
            .documents
            .iter()
            .zip(inventories)
            .map(|(d, procs)| NewDocument {
                name: d.name.clone(),
                format: d.format.clone(),
                architecture: d.architecture.clone(),
                role: d.role.clone(),
                file: d.file.display().to_string(),
                file_offset: d.offset,
                file_size: d.size,
                procedures: procs
                    .into_iter()
                    .map(|p| NewProcedure {
                        address: p.address,
                        name: p.name,
                        raw_name: p.raw_name,
                        size: p.size,
                    })
                    .collect(),
            })
            .collect(),
    }
}
