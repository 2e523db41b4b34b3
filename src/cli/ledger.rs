//! `rea evidence`: list, show, verify and export a session's ledger.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::ids::EvidenceId;
use crate::settings::Settings;
use crate::store::EvidenceFilter;

/// Evidence subcommands.
#[derive(Debug, Subcommand)]
pub enum EvidenceAction {
    /// List the ledger in recording order.
    List {
        /// Session id (default: the only session).
        #[arg(long)]
        session: Option<String>,
        /// Only this operation.
        #[arg(long)]
        operation: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one record.
    Show {
        /// Evidence id.
        id: String,
        /// Session id (default: the only session).
        #[arg(long)]
        session: Option<String>,
    },
    /// Recompute every record's id from its canonical JSON, check links, and run SQLite's
    /// integrity check. Exits 1 when anything is wrong.
    Verify {
        /// Session id (default: the only session).
        #[arg(long)]
        session: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export the ledger: a SQLite copy (default) or JSON lines.
    Export {
        /// Destination file.
        dest: std::path::PathBuf,
        /// Session id (default: the only session).
        #[arg(long)]
        session: Option<String>,
        /// Write JSON lines instead of a SQLite copy.
        #[arg(long)]
        jsonl: bool,
        /// Replace the destination if it exists.
        #[arg(long)]
        overwrite: bool,
    },
}

/// Runs an evidence subcommand.
pub fn run(settings: &Settings, action: EvidenceAction) -> anyhow::Result<ExitCode> {
    let open = |session: Option<&str>| -> anyhow::Result<crate::store::ReadOnlyStore> {
        super::open_session_store(settings, session)?
            .context("no session exists under the state directory")
    };
    match action {
        EvidenceAction::List {
            session,
            operation,
            json,
        } => {
            let store = open(session.as_deref())?;
            let (rows, total) = store.list_evidence(&EvidenceFilter {
                operation,
                offset: 0,
                limit: u64::MAX >> 1,
            })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                for r in &rows {
                    println!(
                        "{:>6} {} {:<24} {:<10} {}",
                        r.seq, r.id, r.operation, r.confidence, r.created_at
                    );
                }
                eprintln!("{total} records");
            }
        }
        EvidenceAction::Show { id, session } => {
            let store = open(session.as_deref())?;
            let id = EvidenceId::parse(&id)?;
            let Some(e) = store.evidence(&id)? else {
                bail!("{id} is not in this session's ledger")
            };
            println!("{}", serde_json::to_string_pretty(&e)?);
        }
        EvidenceAction::Verify { session, json } => {
            // Read through a connection of its own that tolerates damage: every bad row is
            // reported and the walk goes on, where the read-only store would stop at the first.
            let id = super::session_id(settings, session.as_deref())?
                .context("no session exists under the state directory")?;
            let path = crate::session::database_path(&settings.state_dir, &id)?;
            let check = crate::store::verify_ledger(&path)?;
            if json {
                println!("{}", serde_json::to_string(&check)?);
            } else {
                println!(
                    "{} records checked, {} bad, {} sequence gaps, integrity_check {}, {} problems",
                    check.records,
                    check.bad_rows.len(),
                    check.gaps,
                    check.integrity_check,
                    check.problems.len()
                );
                for p in &check.problems {
                    println!("  {p}");
                }
            }
            return Ok(if check.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        EvidenceAction::Export {
            dest,
            session,
            jsonl,
            overwrite,
        } => {
            let id = super::session_id(settings, session.as_deref())?
                .context("no session exists under the state directory")?;
            let target = crate::fsroot::Roots::none().open_new(&dest)?;
            // A session no live process holds is taken for the export, so the export time is
            // noted in it (`rea sessions prune` keeps sessions never exported); a live server's
            // session is read beside it and left as it is.
            let owned = match crate::session::Session::resume(&settings.state_dir, &id) {
                Ok(s) => Some(s),
                Err(crate::session::SessionError::InUse { .. }) => None,
                // A damaged session is not written to: what is readable is copied beside it.
                Err(e @ crate::session::SessionError::Damaged { .. }) => {
                    eprintln!("rea: {e}");
                    None
                }
                Err(e) => return Err(e.into()),
            };
            let reader = match &owned {
                Some(_) => None,
                None => Some(open(Some(&id))?),
            };
            let store: &crate::store::ReadOnlyStore = match (&owned, &reader) {
                (Some(s), _) => s.store(),
                (None, Some(r)) => r,
                (None, None) => unreachable!("one of them is open"),
            };
            if jsonl {
                let n = crate::investigation::export_jsonl(store, &target, overwrite)?;
                println!("exported {n} records to {}", dest.display());
            } else {
                match &owned {
                    Some(s) => s.store().export(&target, overwrite)?,
                    None => {
                        store.copy_to(&target, overwrite)?;
                        eprintln!(
                            "rea: session {id} is live; its export time is noted only when its owner exports"
                        );
                    }
                }
                println!("exported the session database to {}", dest.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
