//! A deadline that long-running work checks between steps, so no analysis of a hostile input runs
//! unbounded: the work stops and says which limit it hit.

use std::time::{Duration, Instant};

/// How long one analysis (admission, inventory, JavaScript analysis) may run by default. Honest
/// inputs of hundreds of megabytes finish in seconds; this is the bound for everything else.
pub const ANALYSIS_BUDGET: Duration = Duration::from_secs(120);

/// When work must stop.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Option<Instant>,
    budget: Duration,
}

/// The work ran past its deadline and was stopped; nothing it computed was kept.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{what} was stopped after its {} s deadline; the input is too large or too costly to analyze in full",
    budget.as_secs_f64()
)]
pub struct DeadlineExceeded {
    /// What was stopped (`admission of X`, `the JavaScript analysis`, …).
    pub what: String,
    /// The budget it had.
    pub budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub fn after(budget: Duration) -> Deadline {
        Deadline {
            at: Instant::now().checked_add(budget),
            budget,
        }
    }

    /// The default deadline of one analysis, from now.
    pub fn analysis() -> Deadline {
        Deadline::after(ANALYSIS_BUDGET)
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// `Err` naming `what` once the deadline has passed.
    pub fn check(&self, what: impl FnOnce() -> String) -> Result<(), DeadlineExceeded> {
        if self.expired() {
            Err(DeadlineExceeded {
                what: what(),
                budget: self.budget,
            })
        } else {
            Ok(())
        }
    }
}
