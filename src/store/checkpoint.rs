//! Checkpoints off the writer thread.
//!
//! In WAL mode every commit appends the pages it changed to the `-wal` file, and a checkpoint
//! copies them back into the database. SQLite's automatic checkpoint runs inside the commit that
//! crosses its threshold, so the writer stops taking writes while it copies: on a large ledger,
//! where every new id lands on a random page of the id index, that was over a third of the
//! writer's time. Here a second connection on its own thread copies the pages (a PASSIVE
//! checkpoint never blocks the writer), and the writer only copies the few frames appended while
//! that pass ran. Once every frame is in the database, the writer's next transaction starts the
//! WAL over from its beginning, so the file stops growing.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, InterruptHandle, OpenFlags};

use super::{BUSY_TIMEOUT, StoreError};

/// When checkpoints start and when the writer takes over. Sizes are WAL frames (pages of 4 KiB).
#[derive(Debug, Clone, Copy)]
pub(super) struct CheckpointPolicy {
    /// A background pass starts once the WAL holds this many frames.
    pub start_frames: i64,
    /// The writer copies the rest itself once a background pass has left at most this many.
    pub finish_gap: i64,
    /// Once the WAL holds this many and no pass is running, the writer checkpoints by itself, as
    /// SQLite would: passes that keep falling behind let the WAL grow past this by no more than
    /// what is written during one pass.
    pub writer_limit: i64,
}

impl Default for CheckpointPolicy {
    /// SQLite's automatic checkpoint starts at 1,000 frames; a longer WAL (about 40 MiB) lets a
    /// page changed by many commits be copied once.
    fn default() -> Self {
        CheckpointPolicy {
            start_frames: 10_000,
            finish_gap: 1_000,
            writer_limit: 40_000,
        }
    }
}

/// Makes `conn` skip the checkpoint SQLite runs when the last connection closes: for a database
/// about to be deleted.
pub(super) fn skip_checkpoint_on_close(conn: &Connection) {
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
}

/// What the writer and the checkpoint thread share.
#[derive(Default)]
struct Shared {
    /// Frames in the WAL after the writer's last commit (from SQLite's WAL hook).
    frames: AtomicI64,
    /// A background pass is queued or running.
    busy: AtomicBool,
    /// The last background pass: frames in the WAL when it ran (high 32 bits) and frames it had
    /// copied into the database by its end (low 32 bits); 0 when there is none to build on.
    last_pass: AtomicU64,
    /// The store is closing: a kick still queued is dropped.
    stopping: AtomicBool,
    /// The database is deleted after closing: nothing needs to wait for the last pass.
    discard: AtomicBool,
    /// Passes run by the background thread.
    background_passes: AtomicU64,
    /// Checkpoints run by the writer.
    writer_passes: AtomicU64,
}

fn pack(log: i64, copied: i64) -> u64 {
    ((log.clamp(0, u32::MAX as i64) as u64) << 32) | copied.clamp(0, u32::MAX as i64) as u64
}

fn unpack(pass: u64) -> (i64, i64) {
    ((pass >> 32) as i64, (pass & u64::from(u32::MAX)) as i64)
}

/// How many checkpoints ran where (see [`super::Store::write_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Passes the background thread ran.
    pub background: u64,
    /// Checkpoints the writer ran: finishing a background pass, or on its own when the passes
    /// fell behind.
    pub writer: u64,
}

/// The checkpoint thread, owned by the writer thread.
pub(super) struct Checkpointer {
    policy: CheckpointPolicy,
    shared: Arc<Shared>,
    kick: Option<mpsc::SyncSender<()>>,
    interrupt: InterruptHandle,
    thread: Option<JoinHandle<()>>,
}

/// Reads [`CheckpointStats`] while the checkpointer lives on the writer thread.
#[derive(Clone)]
pub(super) struct CheckpointCounters(Arc<Shared>);

impl CheckpointCounters {
    pub fn stats(&self) -> CheckpointStats {
        CheckpointStats {
            background: self.0.background_passes.load(Ordering::Relaxed),
            writer: self.0.writer_passes.load(Ordering::Relaxed),
        }
    }
}

impl Checkpointer {
    /// Opens the checkpoint connection on `path` and takes SQLite's automatic checkpoints away
    /// from `writer`: its WAL hook now only counts frames.
    pub fn start(
        path: &Path,
        writer: &mut Connection,
        policy: CheckpointPolicy,
    ) -> Result<(Checkpointer, CheckpointCounters), StoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // A checkpoint needs the connection's WAL open, which the first read does.
        conn.query_row("select count(*) from sqlite_schema", [], |r| {
            r.get::<_, i64>(0)
        })?;
        let shared = Arc::new(Shared::default());
        let frames = shared.clone();
        writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            frames.frames.store(i64::from(pages), Ordering::Relaxed);
            Ok(())
        }))?;
        let interrupt = conn.get_interrupt_handle();
        let (kick, kicks) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("rea-store-checkpoint".into())
            .spawn({
                let shared = shared.clone();
                move || background(conn, kicks, &shared)
            })
            .map_err(|source| StoreError::Io {
                path: path.to_owned(),
                source,
            })?;
        Ok((
            Checkpointer {
                policy,
                shared: shared.clone(),
                kick: Some(kick),
                interrupt,
                thread: Some(thread),
            },
            CheckpointCounters(shared),
        ))
    }

    /// Called by the writer after each commit: starts a background pass, or finishes one.
    pub fn after_commit(&self, writer: &Connection) {
        let frames = self.shared.frames.load(Ordering::Relaxed);
        if frames < self.policy.start_frames || self.shared.busy.load(Ordering::Acquire) {
            return;
        }
        let (log, copied) = unpack(self.shared.last_pass.load(Ordering::Acquire));
        // `frames < log` means the WAL started over since that pass: it says nothing now.
        let caught_up = log > 0 && frames >= log && frames - copied <= self.policy.finish_gap;
        if caught_up || frames >= self.policy.writer_limit {
            match writer.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
                Ok(_) => {
                    self.shared.writer_passes.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => tracing::warn!(error = %e, "checkpoint by the writer failed"),
            }
            self.shared.last_pass.store(0, Ordering::Release);
            return;
        }
        self.shared.busy.store(true, Ordering::Release);
        let queued = self.kick.as_ref().is_some_and(|k| k.try_send(()).is_ok());
        if !queued {
            self.shared.busy.store(false, Ordering::Release);
        }
    }

    /// The database will be deleted once closed: closing does not wait for a running pass
    /// (whose last step, syncing the file, cannot be interrupted), and the checkpoint
    /// connection, which may then close last, skips the checkpoint on close.
    pub fn discard(&self) {
        self.shared.discard.store(true, Ordering::Release);
    }
}

impl Drop for Checkpointer {
    /// Stops a running pass (what it copied stays copied) and ends the thread, so the writer's
    /// connection closes last and checkpoints everything. A discarded database's thread is left
    /// to end by itself.
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        drop(self.kick.take());
        self.interrupt.interrupt();
        if let Some(thread) = self.thread.take()
            && !self.shared.discard.load(Ordering::Acquire)
        {
            let _ = thread.join();
        }
    }
}

fn background(conn: Connection, kicks: mpsc::Receiver<()>, shared: &Shared) {
    while kicks.recv().is_ok() {
        if shared.stopping.load(Ordering::Acquire) {
            break;
        }
        match conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            Ok((log, copied)) if log > 0 => {
                shared
                    .last_pass
                    .store(pack(log.into(), copied.into()), Ordering::Release);
                shared.background_passes.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::OperationInterrupted => {}
            Err(e) => tracing::warn!(error = %e, "background checkpoint failed"),
        }
        shared.busy.store(false, Ordering::Release);
    }
    // Unless the database is discarded, the writer's connection is still open (it waits for
    // this thread), so closing this one never checkpoints.
    if shared.discard.load(Ordering::Acquire) {
        skip_checkpoint_on_close(&conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_survives_packing() {
        assert_eq!(unpack(pack(40_000, 39_123)), (40_000, 39_123));
        assert_eq!(unpack(pack(-1, -1)), (0, 0));
        assert_eq!(unpack(0), (0, 0));
    }
}
