//! Reports for a person: the one-shot analyses of the command line (`rea analyze`, `inspect`,
//! `compare`, `capture`), made without a session, each with the text a person reads and the
//! recording whose primary record `--json` prints.

use std::path::Path;

use super::javascript::{Route, route};
use super::{Analyzed, Cancel, Captured, InspectArgs, Investigation, Progress, Recording, Result};
use crate::analyzers::artifact::{self, Comparison, Inventory};
use crate::analyzers::{capture, javascript};

/// One analysis made without a session: what was observed, and the recording the server would
/// keep of the same observation (same records, same ids), built but not committed.
#[derive(Debug)]
pub struct Report {
    /// The recording; its primary record is the observation's Evidence.
    pub recording: Recording,
    observed: Observed,
}

/// What a report is of, kept whole so that its text is written only when it is read.
#[derive(Debug)]
enum Observed {
    JavaScript(Box<Analyzed>),
    Inventory(Box<Inventory>),
    Comparison(Box<Comparison>),
    Capture(Box<Captured>),
}

impl Report {
    /// The report as text for a person, as `rea` prints it without `--json`.
    pub fn text(&self) -> String {
        match &self.observed {
            Observed::JavaScript(a) => javascript::render_report(&a.analysis),
            Observed::Inventory(i) => artifact::render_inventory_report(i),
            Observed::Comparison(c) => artifact::render_comparison_report(c),
            Observed::Capture(c) => capture::render_report(&c.capture),
        }
    }
}

impl Investigation {
    /// `rea analyze PATH`: a JavaScript/Electron application is `analyze_javascript_application`
    /// (uncut, see [`Investigation::analyze_detached`]), anything else [`Self::inspect_report`].
    /// Blocking.
    pub fn analyze_report(&self, path: &Path, progress: &dyn Progress) -> Result<Report> {
        if route(path) == Route::Binary {
            return self.inspect_report(path);
        }
        let (analyzed, recording) = self.analyze_detached(path, progress)?;
        Ok(Report {
            recording,
            observed: Observed::JavaScript(Box::new(analyzed)),
        })
    }

    /// `rea inspect TARGET`: the artifact inventory of a file or bundle, as `open_binary` then
    /// `inspect_artifact` records it. Blocking.
    pub fn inspect_report(&self, path: &Path) -> Result<Report> {
        let (inventory, _, recording) = self.inspect_detached(path, InspectArgs::default())?;
        Ok(Report {
            recording,
            observed: Observed::Inventory(Box::new(inventory)),
        })
    }

    /// `rea compare LEFT RIGHT`: the inventories of both and their comparison. Blocking.
    pub fn compare_report(&self, left: &Path, right: &Path) -> Result<Report> {
        let (comparison, recording) = self.compare_detached(left, right)?;
        Ok(Report {
            recording,
            observed: Observed::Comparison(Box::new(comparison)),
        })
    }

    /// `rea capture SCENARIO`: one bounded run under this investigation's capture policy, with
    /// no target open. Blocking.
    pub fn capture_report(&self, scenario: &super::Scenario, cancel: &Cancel) -> Result<Report> {
        let (captured, recording) = self.capture_detached(scenario, cancel)?;
        Ok(Report {
            recording,
            observed: Observed::Capture(Box::new(captured)),
        })
    }
}
