//! The cap on live binary sessions of one server process: every connection's investigation
//! takes a permit from one shared [`SessionBudget`] before it creates or resumes a session, and
//! the permit goes back when that session is closed or released (its client gone). Each
//! principal has a share of its own (`max_live_per_principal`), so no one caller can hold every
//! slot and refuse everyone else. The budget also knows which connection holds each live
//! session, so its principal can take it up from another connection of the same server at once
//! (an HTTP client that went away without ending its MCP session still holds its binary session
//! until the idle timeout).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use super::InvestigationError;
use crate::settings::Principal;

/// A connection's session slot, as the budget keeps it: the budget only hands it back to the
/// session module, which knows its type (so neither module imports the other both ways).
pub(crate) type Slot = dyn Any + Send + Sync;

/// Live binary sessions, counted against a maximum, in all and per principal.
#[derive(Debug)]
pub struct SessionBudget {
    max: usize,
    per_principal: usize,
    /// Sessions live now: in all, and by principal (a principal with none has no entry). One
    /// lock for both, so a permit is counted in both or in neither.
    live: Mutex<Live>,
    /// The connection slot holding each live session, by session id, with its principal; an
    /// entry goes with the session's permit.
    holders: Mutex<HashMap<String, (Principal, Weak<Slot>)>>,
}

#[derive(Debug, Default)]
struct Live {
    all: usize,
    by: HashMap<Principal, usize>,
}

impl SessionBudget {
    /// A budget of `max` live sessions, `per_principal` of them for any one principal.
    pub fn new(max: usize, per_principal: usize) -> Arc<SessionBudget> {
        Arc::new(SessionBudget {
            max,
            per_principal,
            live: Mutex::default(),
            holders: Mutex::default(),
        })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sessions live now.
    pub fn live(&self) -> usize {
        self.counts().all
    }

    /// Sessions `principal` holds live now.
    pub fn live_of(&self, principal: &Principal) -> usize {
        self.counts().by.get(principal).copied().unwrap_or(0)
    }

    /// A permit for one more live session of `principal`, or the refusal that says why there
    /// is none.
    pub(crate) fn take(
        self: &Arc<Self>,
        principal: &Principal,
    ) -> Result<Permit, InvestigationError> {
        // A full server says so first: that is true whoever asks.
        let mut live = self.counts();
        let own = live.by.get(principal).copied().unwrap_or(0);
        if live.all >= self.max {
            return Err(InvestigationError::SessionState(format!(
                "this server already holds {} live binary sessions, its limit (max_live in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released",
                self.max
            )));
        }
        if own >= self.per_principal {
            return Err(InvestigationError::SessionState(format!(
                "you already hold {} live binary sessions, the limit of one caller (max_live_per_principal in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released",
                self.per_principal
            )));
        }
        live.all += 1;
        *live.by.entry(principal.clone()).or_default() += 1;
        Ok(Permit {
            budget: self.clone(),
            principal: principal.clone(),
            session: None,
        })
    }

    fn holders(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Principal, Weak<Slot>)>> {
        self.holders.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection slot of this server that holds live session `id` for `principal`, if one
    /// does.
    pub(crate) fn holder(&self, id: &str, principal: &Principal) -> Option<Arc<Slot>> {
        let holders = self.holders();
        let (owner, slot) = holders.get(id)?;
        if owner != principal {
            return None;
        }
        slot.upgrade()
    }
}

impl Default for SessionBudget {
    /// No limit: a single-connection server or a command line holds one session at most.
    fn default() -> Self {
        SessionBudget {
            max: usize::MAX,
            per_principal: usize::MAX,
            live: Mutex::default(),
            holders: Mutex::default(),
        }
    }
}

/// One live session's share of the budget; returned when dropped.
#[derive(Debug)]
pub(crate) struct Permit {
    budget: Arc<SessionBudget>,
    principal: Principal,
    /// The session it was given to and the slot holding it, once named by [`Permit::hold`].
    session: Option<(String, Weak<Slot>)>,
}

impl Permit {
    /// Names session `id`, held in `slot`, as the one this permit is for.
    pub(crate) fn hold(&mut self, id: &str, slot: Weak<Slot>) {
        self.budget
            .holders()
            .insert(id.to_owned(), (self.principal.clone(), slot.clone()));
        self.session = Some((id.to_owned(), slot));
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((id, slot)) = &self.session {
            let mut holders = self.budget.holders();
            // Only this permit's entry: another connection may hold the session already (its
            // lock goes before its permit when a session is dropped).
            if holders.get(id).is_some_and(|(_, s)| s.ptr_eq(slot)) {
                holders.remove(id);
            }
        }
        let mut live = self.budget.counts();
        live.all = live.all.saturating_sub(1);
        if let Some(n) = live.by.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                live.by.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_principal_cannot_take_every_slot_regression_25() {
        let budget = SessionBudget::new(4, 2);
        let (alice, bob, carol) = (
            Principal::token("alice"),
            Principal::token("bob"),
            Principal::token("carol"),
        );
        let a1 = budget.take(&alice).unwrap();
        let _a2 = budget.take(&alice).unwrap();
        assert_eq!(
            budget.take(&alice).unwrap_err().to_string(),
            "you already hold 2 live binary sessions, the limit of one caller (max_live_per_principal in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released"
        );
        let _b1 = budget.take(&bob).unwrap();
        let _b2 = budget.take(&bob).unwrap();
        assert_eq!(
            budget.take(&carol).unwrap_err().to_string(),
            "this server already holds 4 live binary sessions, its limit (max_live in the [sessions] table of rea.toml); close_binary one, or wait until idle ones are released"
        );
        assert_eq!((budget.live(), budget.live_of(&alice)), (4, 2));
        drop(a1);
        assert_eq!((budget.live(), budget.live_of(&alice)), (3, 1));
        let _c1 = budget.take(&carol).unwrap();
        assert_eq!(budget.live_of(&carol), 1);
    }
}
