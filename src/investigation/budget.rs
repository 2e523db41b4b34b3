//! The cap on live binary sessions of one server process: every connection's investigation
//! takes a permit from one shared [`SessionBudget`] before it creates or resumes a session, and
//! the permit goes back when that session is closed or released (its client gone).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::InvestigationError;

/// Live binary sessions, counted against a maximum.
#[derive(Debug)]
pub struct SessionBudget {
    max: usize,
    live: AtomicUsize,
}

impl SessionBudget {
    /// A budget of `max` live sessions.
    pub fn new(max: usize) -> Arc<SessionBudget> {
        Arc::new(SessionBudget {
            max,
            live: AtomicUsize::new(0),
        })
    }

    /// Sessions live now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// A permit for one more live session, or the refusal that says why there is none.
    pub(crate) fn take(self: &Arc<Self>) -> Result<Permit, InvestigationError> {
        self.live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map_err(|_| {
                InvestigationError::SessionState(format!(
                    "this server already holds {} live binary sessions, its limit (max_live in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released",
                    self.max
                ))
            })?;
        Ok(Permit(self.clone()))
    }
}

impl Default for SessionBudget {
    /// No limit: a single-connection server or a command line holds one session at most.
    fn default() -> Self {
        SessionBudget {
            max: usize::MAX,
            live: AtomicUsize::new(0),
        }
    }
}

/// One live session's share of the budget; returned when dropped.
#[derive(Debug)]
pub(crate) struct Permit(Arc<SessionBudget>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}
