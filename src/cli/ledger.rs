//! `rea evidence`: list, show, verify and export a session's ledger.

use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::investigation::{self, EvidenceFilter, EvidenceId, ExportSource, ReadOnlySession};
use crate::settings::Settings;

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
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// At most this many rows (default: all of them).
        #[arg(long)]
        limit: Option<u64>,
        /// Print a JSON array.
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
        /// Replace the destination if it is an earlier rea export (a SQLite copy or JSON lines
        /// rea wrote); any other file is left as it is and the export refused.
        #[arg(long)]
        overwrite: bool,
    },
}

/// Runs an evidence subcommand.
pub fn run(settings: &Settings, action: EvidenceAction) -> anyhow::Result<ExitCode> {
    let open = |session: Option<&str>| -> anyhow::Result<ReadOnlySession> {
        super::open_read_only(settings, session)?
            .context("no session exists under the state directory")
    };
    match action {
        EvidenceAction::List {
            session,
            operation,
            offset,
            limit,
            json,
        } => {
            let store = open(session.as_deref())?;
            let filter = EvidenceFilter {
                operation,
                offset,
                limit: limit.unwrap_or(u64::MAX >> 1),
            };
            list(&store, &filter, json)?;
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
            let check = investigation::verify_session(settings, &id)?;
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
                println!(
                    "chain: {} rows, head {}, head file {}; unchained (written before the chain): {} Evidence rows, {} revisions",
                    check.chain.rows,
                    check
                        .chain
                        .head
                        .as_ref()
                        .map_or("none".into(), |(seq, _)| format!("at row {seq}")),
                    check
                        .chain
                        .head_file
                        .as_ref()
                        .map_or("none".into(), |(seq, _)| format!("at row {seq}")),
                    check.chain.unchained_evidence,
                    check.chain.unchained_revisions
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
            // The operator's own command is not confined to the roots, but never writes into
            // rea's state or configuration or over a session's files.
            let target = investigation::export_destination(settings, &dest)?;
            let claim = investigation::claim_export(&target, overwrite)?;
            // A session no live process holds is taken for the export, so the export time is
            // noted in it; a live server's session is read beside it and left as it is.
            let source = ExportSource::take(settings, &id)?;
            // A damaged session is not written to: what is readable is copied beside it.
            if let Some(e) = source.damage() {
                eprintln!("rea: {e}");
            }
            if jsonl {
                let done = source.jsonl(&target, claim)?;
                if !done.skipped.is_empty() {
                    eprintln!(
                        "rea: {} unreadable records were left out:",
                        done.skipped.len()
                    );
                    for row in done.listed() {
                        eprintln!("  {row}");
                    }
                }
                println!("exported {} records to {}", done.records, dest.display());
            } else {
                let copied = source.sqlite(&target, claim)?;
                // The copy is of the file as it is; say so when a row in it is damaged.
                if let Some(check) = &copied.damaged {
                    eprintln!("rea: the copy holds a damaged record: ledger check {check}");
                }
                if !copied.noted {
                    eprintln!(
                        "rea: session {id} is not held by this command; its export time is not noted"
                    );
                }
                println!("exported the session database to {}", dest.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the rows `filter` selects as they are read, so the listing of a ledger of any size
/// starts at once and holds one row in memory; the total goes to stderr after them.
fn list(store: &ReadOnlySession, filter: &EvidenceFilter, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failed: Option<anyhow::Error> = None;
    let mut rows = 0u64;
    if json {
        out.write_all(b"[")?;
    }
    store.each_evidence_summary(filter, |r| {
        let written = if json {
            serde_json::to_string(&r)
                .map_err(anyhow::Error::from)
                .and_then(|row| {
                    let sep = if rows == 0 { "\n  " } else { ",\n  " };
                    Ok(write!(out, "{sep}{row}")?)
                })
        } else {
            writeln!(
                out,
                "{:>6} {} {:<24} {:<10} {}",
                r.seq, r.id, r.operation, r.confidence, r.created_at
            )
            .map_err(anyhow::Error::from)
        };
        rows += 1;
        // A reader that went away (`| head`) ends the listing: nothing more is read.
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if json {
        out.write_all(if rows == 0 { b"]\n" } else { b"\n]\n" })?;
    }
    out.flush()?;
    if !json {
        eprintln!(
            "{} records",
            store.count_evidence(filter.operation.as_deref())?
        );
    }
    Ok(())
}
