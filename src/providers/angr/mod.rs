//! The `angr` deep provider: pseudo-C of one procedure at a time from angr's decompiler, run in
//! a long-lived worker process that rea feeds with what it already knows of the document.
//!
//! rea does not let angr load the file: angr's loaders are slow on large binaries and fail on
//! some (its Mach-O loader raises on the flat-namespace binds of a dylib linked with
//! `-undefined dynamic_lookup`). The worker maps the document's sections as a `blob` from the
//! bytes rea parsed, learns rea's names for procedures, imports and data, and builds the CFG of
//! one procedure's region only (a whole-binary CFG of a real program takes minutes).
//!
//! # Layout
//! - `discover`: finding the interpreter and its angr distribution by reading files.
//! - `protocol`: the JSON-lines requests and replies, and line framing under a cap.
//! - `process`: the worker process (limits, process group, parent-death signal, deadlines).
//! - `render`: the returned text, with the addresses angr left as numbers named as rea knows them.
//! - `worker.py`: the worker script, embedded in rea and written out when a worker starts.
//! - `requirements.txt`: the pinned, hash-checked environment CI installs (`.ci/angr-venv.sh`).
//!
//! The worker runs on Linux only (it is handed the document on a `memfd` descriptor, with a
//! parent-death signal): elsewhere the provider is built, found and reported, and a call says it
//! cannot run, so the worker's half is unused there.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

mod discover;
#[cfg(target_os = "linux")]
mod process;
mod protocol;
mod render;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use discover::{
    Installation, Missing, Origin, PINNED, PYTHON_VARIABLE, inspect, install_hint, locate,
    locate_with, python_from_config,
};

use crate::providers::decompile::{
    AnalystHints, CodeReference, Control, DeclarationCheck, DecompileError, Decompiled, Decompiler,
    DecompilerIdentity, PseudoCode, PseudoCodePage, ReferenceKind, Referent, Timings,
};
use crate::providers::native::{DocumentSpec, Image, display_name};
use protocol::{CalleeRegion, Load, Named, RawReference, Request, Segment, Zero};

/// The provider id: what a call names to get angr's pseudo-code.
pub const PROVIDER_ID: &str = "angr";

/// The human name recorded beside the id.
pub const PROVIDER_NAME: &str = "angr decompiler";

/// The worker script rea ships.
const WORKER_SCRIPT: &str = include_str!("worker.py");

/// Where a decompilation's stages begin on its progress scale (0 to 100): starting angr from 0,
/// loading the document, recovering the procedure's control flow, then decompiling to 100.
const LOADING: u64 = 5;
const CFG: u64 = 15;
const DECOMPILING: u64 = 30;

/// How many recent results a session keeps, so the pages of one procedure cost one run.
const RECENT: usize = 8;

/// Whether angr (through rea) reads documents of `format`: a target format (`elf`, `macho`,
/// `macho-universal`, `app-bundle`) or a document format.
pub fn accepts_format(format: &str) -> bool {
    matches!(
        format,
        "elf" | "macho" | "macho-universal" | "app-bundle" | "pe"
    )
}

/// archinfo's name for a document architecture rea decompiles with angr.
fn arch_name(architecture: &str) -> Option<&'static str> {
    match architecture {
        "x86_64" => Some("AMD64"),
        "arm64" => Some("AARCH64"),
        _ => None,
    }
}

/// Limits of a worker and of each call to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Starting the worker: Python and angr's imports (about a second here).
    pub start_timeout: Duration,
    /// Loading a document into the worker.
    pub load_timeout: Duration,
    /// One procedure's CFG and decompilation. No caller waits this long (it is answered at its
    /// `wait_seconds` while the decompilation goes on, and can cancel it), so the limit only ends
    /// a worker that hangs; `/usr/bin/ls`'s `main` takes 26 s alone and several times that on a
    /// loaded machine.
    pub call_timeout: Duration,
    /// Address-space limit (`RLIMIT_AS`) of the worker, in bytes. Measured: 7za's
    /// `GetPassword` and a callee peak at 250 MiB of address space (130 MiB resident).
    pub memory_bytes: u64,
    /// Longest reply the worker may send, in bytes.
    pub reply_cap: usize,
    /// Longest pseudo-code kept, in bytes; longer code is cut at a line end and says so.
    pub max_text_bytes: usize,
    /// Largest procedure region handed to angr, in bytes.
    pub region_cap: u64,
    /// Longest wait, once a call is stopped, for the worker to say it stopped; past it the
    /// worker is killed (and the next call starts a fresh one).
    pub cancel_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            start_timeout: Duration::from_secs(60),
            load_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(600),
            memory_bytes: 4 << 30,
            reply_cap: 16 << 20,
            max_text_bytes: 4 << 20,
            region_cap: 1 << 20,
            cancel_grace: Duration::from_secs(5),
        }
    }
}

/// A worker that has loaded one document.
#[cfg(target_os = "linux")]
struct Live {
    process: process::Process,
    identity: DecompilerIdentity,
    document: DocumentSpec,
}

/// angr for one binary session: at most one worker, started on the first call and kept for
/// the next ones; replaced when another document is asked for; killed by [`Angr::close`], on
/// drop, or when it fails (a crash, a timeout, an oversized reply), so the next call starts a
/// fresh one.
pub struct Angr {
    installation: Installation,
    limits: Limits,
    #[cfg(target_os = "linux")]
    live: Option<Live>,
    /// Recent results by document, procedure and the analyst's hints they applied.
    recent: VecDeque<(DocumentSpec, u64, AnalystHints, Arc<PseudoCode>)>,
}

impl std::fmt::Debug for Angr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Angr")
            .field("python", &self.installation.python)
            .field("version", &self.installation.version)
            .field("running", &self.worker_pid().is_some())
            .finish()
    }
}

impl Angr {
    /// angr from an installation found by [`locate`] or [`inspect`], with default limits.
    pub fn new(installation: Installation) -> Angr {
        Angr::with_limits(installation, Limits::default())
    }

    /// angr with explicit limits.
    pub fn with_limits(installation: Installation, limits: Limits) -> Angr {
        Angr {
            installation,
            limits,
            #[cfg(target_os = "linux")]
            live: None,
            recent: VecDeque::new(),
        }
    }

    /// angr as this process's environment names it (`$REA_ANGR_PYTHON`, else `rea.toml`), or
    /// the error that says what is missing and how to install it.
    pub fn from_environment() -> Result<Angr, DecompileError> {
        locate().map(Angr::new).map_err(not_installed)
    }

    /// [`Angr::from_environment`] with the variable's value and the config directory given.
    pub fn locate_with(
        variable: Option<&std::ffi::OsStr>,
        config_dir: Option<&std::path::Path>,
    ) -> Result<Angr, DecompileError> {
        locate_with(variable, config_dir)
            .map(Angr::new)
            .map_err(not_installed)
    }

    /// The installation this session runs.
    pub fn installation(&self) -> &Installation {
        &self.installation
    }

    /// The running worker's process id, when one runs.
    pub fn worker_pid(&self) -> Option<u32> {
        #[cfg(target_os = "linux")]
        {
            self.live.as_ref().map(|l| l.process.pid() as u32)
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// Lines `[offset, offset + limit)` of the procedure's pseudo-code; pages of a procedure
    /// decompiled recently come from memory.
    pub fn page(
        &mut self,
        image: &Image,
        procedure: u64,
        offset: usize,
        limit: usize,
    ) -> Result<(PseudoCodePage, Timings), DecompileError> {
        let done = self.decompile(image, procedure)?;
        Ok((done.code.page(offset, limit), done.timings))
    }

    fn remembered(
        &self,
        document: &DocumentSpec,
        procedure: u64,
        hints: &AnalystHints,
    ) -> Option<Arc<PseudoCode>> {
        self.recent
            .iter()
            .find(|(d, p, h, _)| d == document && *p == procedure && h == hints)
            .map(|(_, _, _, code)| code.clone())
    }

    fn remember(
        &mut self,
        document: &DocumentSpec,
        procedure: u64,
        hints: &AnalystHints,
        code: Arc<PseudoCode>,
    ) {
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent
            .push_back((document.clone(), procedure, hints.clone(), code));
    }
}

fn not_installed(missing: Missing) -> DecompileError {
    DecompileError::NotInstalled {
        provider: PROVIDER_ID,
        reason: missing.to_string(),
        hint: install_hint(),
    }
}

impl Decompiler for Angr {
    fn id(&self) -> &'static str {
        PROVIDER_ID
    }

    fn decompile_controlled(
        &mut self,
        image: &Image,
        procedure: u64,
        hints: &AnalystHints,
        control: &Control<'_>,
    ) -> Result<Decompiled, DecompileError> {
        let began = Instant::now();
        let doc = image.document();
        if !matches!(doc.format.as_str(), "elf" | "macho" | "pe") {
            return Err(DecompileError::UnsupportedFormat {
                provider: PROVIDER_ID,
                format: doc.format.to_string(),
            });
        }
        if arch_name(doc.architecture.as_str()).is_none() {
            return Err(DecompileError::UnsupportedArchitecture {
                provider: PROVIDER_ID,
                architecture: doc.architecture.to_string(),
            });
        }
        if image.procedure_index(procedure).is_none() {
            return Err(DecompileError::NoProcedure { address: procedure });
        }
        if let Some(code) = self.remembered(doc, procedure, hints) {
            return Ok(Decompiled {
                code,
                timings: Timings {
                    total: began.elapsed(),
                    cached: true,
                    ..Timings::default()
                },
            });
        }
        let (code, mut timings) = self.run(image, procedure, hints, control)?;
        timings.total = began.elapsed();
        let code = Arc::new(code);
        self.remember(doc, procedure, hints, code.clone());
        Ok(Decompiled { code, timings })
    }

    fn close(&mut self) {
        #[cfg(target_os = "linux")]
        {
            self.live = None;
        }
        self.recent.clear();
    }
}

#[cfg(not(target_os = "linux"))]
impl Angr {
    fn run(
        &mut self,
        _: &Image,
        _: u64,
        _: &AnalystHints,
        _: &Control<'_>,
    ) -> Result<(PseudoCode, Timings), DecompileError> {
        Err(DecompileError::NotInstalled {
            provider: PROVIDER_ID,
            reason: "rea runs the angr worker on Linux only".into(),
            hint: install_hint(),
        })
    }

    /// Without the worker nothing parses C: see the Linux version.
    pub fn check_declaration(
        &mut self,
        _: &Image,
        _: &'static str,
        _: &str,
        _: &[String],
    ) -> Result<DeclarationCheck, DecompileError> {
        Err(DecompileError::NotInstalled {
            provider: PROVIDER_ID,
            reason: "rea runs the angr worker on Linux only".into(),
            hint: install_hint(),
        })
    }
}

#[cfg(target_os = "linux")]
impl Angr {
    /// Starts a worker for `image`'s document unless one has it loaded already. A worker
    /// stopped by `control` while it starts or loads is killed: it has no document to keep.
    fn ensure(
        &mut self,
        image: &Image,
        timings: &mut Timings,
        control: &Control<'_>,
    ) -> Result<(), DecompileError> {
        if self
            .live
            .as_ref()
            .is_some_and(|l| &l.document == image.document())
        {
            return Ok(());
        }
        // Another document, or none yet: the old worker (if any) goes first.
        self.live = None;
        let stopped = DecompileError::Cancelled {
            provider: PROVIDER_ID,
            kept: false,
        };
        if control.stopped() {
            return Err(stopped);
        }
        control.report(0, "starting angr");
        match self.start(image, timings, control) {
            Err(_) if control.stopped() => Err(stopped),
            outcome => outcome,
        }
    }

    fn start(
        &mut self,
        image: &Image,
        timings: &mut Timings,
        control: &Control<'_>,
    ) -> Result<(), DecompileError> {
        let stop = || control.stopped();
        let limits = self.limits;
        let process_limits = process::ProcessLimits {
            memory_bytes: limits.memory_bytes,
            reply_cap: limits.reply_cap,
            cancel_grace: limits.cancel_grace,
        };
        let started = Instant::now();
        let mut process = process::Process::spawn(
            &self.installation.python,
            WORKER_SCRIPT,
            &image.bytes,
            process_limits,
        )?;
        let line = process.reply(
            limits.start_timeout,
            "start",
            limits.reply_cap,
            &mut |_| {},
            &stop,
        )?;
        process.script_read();
        let ready = protocol::ready(&line).map_err(|e| protocol_error(e, 0))?;
        timings.start = Some(started.elapsed());
        control.report(LOADING, "loading the document into angr");
        let load = load_request(image)?;
        let loading = Instant::now();
        let line = process.call(
            &protocol::encode(&Request::Load(load)),
            limits.load_timeout,
            "load the document",
            limits.reply_cap,
            &mut |_| {},
            &stop,
        )?;
        let _: protocol::Loaded = protocol::reply(&line).map_err(|e| protocol_error(e, 0))?;
        timings.load = Some(loading.elapsed());
        self.live = Some(Live {
            process,
            identity: DecompilerIdentity {
                id: PROVIDER_ID.to_string(),
                name: PROVIDER_NAME.to_string(),
                version: ready.angr,
            },
            document: image.document().clone(),
        });
        Ok(())
    }

    /// Parses an analyst's C declaration (`prototype`, `type`, `data-type`) in the worker for
    /// `image`'s document, as the decompiler will parse it, `types` (the document's) first.
    pub fn check_declaration(
        &mut self,
        image: &Image,
        kind: &'static str,
        text: &str,
        types: &[String],
    ) -> Result<DeclarationCheck, DecompileError> {
        let mut timings = Timings::default();
        let outcome = self.check_in_worker(image, kind, text, types, &mut timings);
        if outcome.is_err() {
            // A check never leaves the worker in a state it reported; any failure is the
            // process's, so the next call starts a fresh one.
            self.live = None;
        }
        outcome
    }

    fn check_in_worker(
        &mut self,
        image: &Image,
        kind: &'static str,
        text: &str,
        types: &[String],
        timings: &mut Timings,
    ) -> Result<DeclarationCheck, DecompileError> {
        self.ensure(image, timings, &Control::default())?;
        let limits = self.limits;
        let live = self.live.as_mut().expect("ensure leaves a worker");
        let request = Request::Check {
            kind,
            text: text.to_owned(),
            types: types.to_vec(),
        };
        let line = live.process.request(
            &protocol::encode(&request),
            limits.call_timeout,
            "check a declaration",
            limits.reply_cap,
        )?;
        // A worker answers every check it understands, so a refusal means it speaks another
        // protocol than rea's, not that the declaration is bad.
        let checked: protocol::Checked = protocol::reply(&line).map_err(|e| match e {
            protocol::ReplyError::Failed { kind, message } => DecompileError::Protocol {
                provider: PROVIDER_ID,
                reason: format!("it refused to check a declaration ({kind}): {message}"),
            },
            other => protocol_error(other, 0),
        })?;
        Ok(if checked.valid {
            DeclarationCheck::Valid { name: checked.name }
        } else {
            DeclarationCheck::Invalid {
                position: checked.position.unwrap_or(0).min(text.len()),
                problem: checked
                    .problem
                    .unwrap_or_else(|| "the C parser refused it".into()),
            }
        })
    }

    fn run(
        &mut self,
        image: &Image,
        start: u64,
        hints: &AnalystHints,
        control: &Control<'_>,
    ) -> Result<(PseudoCode, Timings), DecompileError> {
        let mut timings = Timings::default();
        let outcome = self.run_in_worker(image, start, hints, &mut timings, control);
        if let Err(error) = &outcome {
            // Only a failure the worker reported (or a stop it made itself) leaves it in a
            // known state; after any other it is already killed, and the next call starts a
            // fresh one.
            if !matches!(
                error,
                DecompileError::Failed { .. } | DecompileError::Cancelled { kept: true, .. }
            ) && let Some(live) = self.live.take()
            {
                tracing::warn!(pid = live.process.pid(), %error, "angr worker dropped after an error");
            }
        }
        outcome.map(|code| (code, timings))
    }

    fn run_in_worker(
        &mut self,
        image: &Image,
        start: u64,
        hints: &AnalystHints,
        timings: &mut Timings,
        control: &Control<'_>,
    ) -> Result<PseudoCode, DecompileError> {
        self.ensure(image, timings, control)?;
        let limits = self.limits;
        let index = image
            .procedure_index(start)
            .ok_or(DecompileError::NoProcedure { address: start })?;
        let end = image.procedure_end(index, limits.region_cap);
        let full_end = image.procedure_end(index, u64::MAX);
        let edges = image
            .callees(start)
            .map(|edges| edges.callees)
            .unwrap_or_default();
        let calls: Vec<_> = edges.iter().filter(|e| e.via == "call").cloned().collect();
        let (sites, targets) = calls
            .iter()
            .flat_map(|edge| edge.sites.iter().map(|&site| (site, edge.target)))
            .filter(|(site, _)| (start..end).contains(site))
            .unzip();
        let callees = callee_regions(image, start, &edges, limits.region_cap);
        let live = self.live.as_mut().expect("ensure leaves a worker");
        let request = Request::Decompile {
            start,
            end,
            max_text_bytes: limits.max_text_bytes,
            sites,
            targets,
            callees,
            hints: hints.clone(),
        };
        control.report(CFG, "angr: recovering the control flow");
        let mut shown = CFG;
        let mut progress = |p: protocol::Progress| {
            let (from, to, what) = match p.stage.as_str() {
                "cfg" => (CFG, DECOMPILING, "recovering the control flow"),
                _ => (DECOMPILING, 100, "decompiling"),
            };
            let share = p.percent.clamp(0.0, 100.0) / 100.0;
            shown = shown.max(from + ((to - from) as f64 * share) as u64);
            match p.text {
                Some(text) => control.report(shown, &format!("angr: {what}: {text}")),
                None => control.report(shown, &format!("angr: {what}")),
            }
        };
        let line = live.process.call(
            &protocol::encode(&request),
            limits.call_timeout,
            "decompile",
            limits.reply_cap,
            &mut progress,
            &|| control.stopped(),
        )?;
        let reply: protocol::Decompiled =
            protocol::reply(&line).map_err(|e| protocol_error(e, start))?;
        timings.cfg = Duration::from_secs_f64(reply.cfg_seconds.max(0.0));
        timings.decompile = Duration::from_secs_f64(reply.decompile_seconds.max(0.0));
        let mut limitations = Vec::new();
        if full_end > end {
            limitations.push(format!(
                "the procedure's region was cut to its first {} bytes (rea's extent ends at {})",
                end - start,
                crate::providers::native::format_address(full_end)
            ));
        }
        limitations.extend(reply.limitations);
        let mut lines: Vec<String> = reply.text.split('\n').map(str::to_string).collect();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        let mut references: Vec<CodeReference> = reply
            .references
            .iter()
            .filter(|r| r.line >= 1 && r.line <= lines.len())
            .filter_map(|r| resolve(image, r))
            .collect();
        let operands = image.operand_addresses(start);
        render::name_data(image, operands.as_deref(), &mut lines, &mut references);
        limitations.extend(render::tail_calls_through_tables(&mut lines));
        limitations.extend(unshown_tail_jumps(image, start, &references));
        limitations.extend(unshown_calls(&calls, &references));
        Ok(PseudoCode {
            provider: live.identity.clone(),
            document: image.document().name.clone(),
            procedure: start,
            name: image
                .procedure_starting_at(start)
                .and_then(|p| p.name.clone()),
            end,
            lines,
            references,
            limitations,
        })
    }
}

/// rea's own tail jumps of the procedure at `start` that angr's code does not show as a call:
/// angr ends a function at a jump into another one, so a procedure that is only a tail jump
/// reads as an empty body, which would otherwise look like a function that does nothing.
fn unshown_tail_jumps(image: &Image, start: u64, references: &[CodeReference]) -> Vec<String> {
    let Ok(edges) = image.callees(start) else {
        return Vec::new();
    };
    edges
        .callees
        .iter()
        .filter(|edge| edge.via == "tail-jump")
        .filter(|edge| {
            !references
                .iter()
                .any(|r| r.kind == ReferenceKind::Call && r.address == edge.target)
        })
        .map(|edge| {
            let target = crate::providers::native::format_address(edge.target);
            let name = edge
                .name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            let sites: Vec<String> = edge
                .sites
                .iter()
                .map(|s| crate::providers::native::format_address(*s))
                .collect();
            format!(
                "the tail jump at {} to {target}{name} is not shown in angr's code",
                sites.join(", ")
            )
        })
        .collect()
}

/// The most callees whose prototypes angr recovers for one decompilation: each costs a variable
/// recovery of its own code.
const MAX_CALLEE_REGIONS: usize = 32;

/// The regions of the procedures `start` calls or tail-jumps to directly (imports have their
/// library's prototypes instead), at most [`MAX_CALLEE_REGIONS`], nearest first.
fn callee_regions(
    image: &Image,
    start: u64,
    edges: &[crate::providers::native::CalleeEdge],
    cap: u64,
) -> Vec<CalleeRegion> {
    let mut regions: Vec<CalleeRegion> = edges
        .iter()
        .filter(|edge| {
            edge.kind == crate::vocabulary::CalleeKind::Procedure && edge.target != start
        })
        .filter_map(|edge| {
            let index = image.procedure_index(edge.target)?;
            Some(CalleeRegion {
                start: edge.target,
                end: image.procedure_end(index, cap),
                tail: edge.via == "tail-jump",
            })
        })
        .filter(|r| r.end > r.start)
        .collect();
    // A procedure both called and tail-jumped to is lifted with the region.
    regions.sort_unstable_by_key(|r| (r.start, !r.tail));
    regions.dedup_by_key(|r| r.start);
    regions.sort_by_key(|r| r.start.abs_diff(start));
    regions.truncate(MAX_CALLEE_REGIONS);
    regions.sort_unstable_by_key(|r| r.start);
    regions
}

/// The direct calls rea decodes that angr's code shows nowhere, each by target, name and call
/// sites: code angr did not lift (a stretch it could not decompile on its own either), or a
/// call it folded away. Without this an agent would read the code as the whole procedure.
fn unshown_calls(
    calls: &[crate::providers::native::CalleeEdge],
    references: &[CodeReference],
) -> Vec<String> {
    use crate::providers::native::format_address;
    calls
        .iter()
        .filter(|edge| {
            !references.iter().any(|r| {
                matches!(r.kind, ReferenceKind::Call | ReferenceKind::Function)
                    && r.address == edge.target
            })
        })
        .map(|edge| {
            let name = edge
                .name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            let sites: Vec<String> = edge.sites.iter().map(|s| format_address(*s)).collect();
            format!(
                "call to {}{name} at {} not shown: angr's code does not have the block that \
                 holds it",
                format_address(edge.target),
                sites.join(", ")
            )
        })
        .collect()
}

fn protocol_error(error: protocol::ReplyError, address: u64) -> DecompileError {
    match error {
        protocol::ReplyError::Failed { kind, .. } if kind == "cancelled" => {
            DecompileError::Cancelled {
                provider: PROVIDER_ID,
                kept: true,
            }
        }
        protocol::ReplyError::Failed { kind, message } => DecompileError::Failed {
            provider: PROVIDER_ID,
            address,
            kind,
            message,
        },
        protocol::ReplyError::Malformed(reason) => DecompileError::Protocol {
            provider: PROVIDER_ID,
            reason,
        },
    }
}

/// What the worker needs to map `image`'s document: its sections as blob segments (no two
/// overlapping), zero-filled tails, and every name rea knows.
fn load_request(image: &Image) -> Result<Load, DecompileError> {
    let doc = image.document();
    let arch = arch_name(doc.architecture.as_str()).ok_or_else(|| {
        DecompileError::UnsupportedArchitecture {
            provider: PROVIDER_ID,
            architecture: doc.architecture.to_string(),
        }
    })?;
    // (address, end, Some(file offset) for bytes / None for zero fill)
    let mut ranges: Vec<(u64, u64, Option<u64>)> = Vec::new();
    for section in image.sections() {
        let present = section.file_size.min(section.size);
        if let Some(offset) = section.file_offset
            && present > 0
        {
            ranges.push((section.address, section.address + present, Some(offset)));
        }
        if section.size > present {
            ranges.push((
                section.address + present,
                section.address + section.size,
                None,
            ));
        }
    }
    ranges.sort_by_key(|&(address, end, _)| (address, end));
    let mut load = Load {
        arch,
        platform: (doc.format == "pe").then_some("windows"),
        entry: image.entry(),
        ..Load::default()
    };
    let mut covered = 0u64;
    for (address, end, offset) in ranges {
        // Sections do not overlap in a well-formed document; a crafted one keeps the first.
        if address < covered || end <= address {
            continue;
        }
        covered = end;
        match offset {
            Some(offset) => load.segments.push(Segment {
                offset,
                address,
                size: end - address,
            }),
            None => load.zero.push(Zero {
                address,
                size: end - address,
            }),
        }
    }
    let mut named = std::collections::HashSet::new();
    let mut name = |load: &mut Load, address: u64, text: &str| {
        if named.insert(address) {
            load.names.push(Named {
                address,
                name: text.to_string(),
            });
        }
    };
    for procedure in image.procedures() {
        if let Some(n) = &procedure.name {
            name(&mut load, procedure.address, n);
        }
    }
    for import in image.imports() {
        let entry = Named {
            address: import.address,
            name: import.name.clone(),
        };
        match import.kind.as_str() {
            // A PE thunk is code (`jmp [__imp_puts]`), called like a PLT stub.
            "plt" | "stub" | "thunk" => {
                name(&mut load, import.address, &import.name);
                load.imports.push(entry);
            }
            _ => load.slots.push(entry),
        }
    }
    let macho = image.document().format == "macho";
    for (address, raw) in image.symbols() {
        name(&mut load, *address, &display_name(raw, macho));
    }
    Ok(load)
}

/// A worker reference with what rea knows at its address; `None` for a kind rea does not know.
fn resolve(image: &Image, raw: &RawReference) -> Option<CodeReference> {
    let kind = match raw.kind.as_str() {
        "call" => ReferenceKind::Call,
        "function" => ReferenceKind::Function,
        "string" => ReferenceKind::String,
        "data" => ReferenceKind::Data,
        _ => return None,
    };
    let address = raw.address;
    let procedure = || {
        image
            .procedure_starting_at(address)
            .map(|p| Referent::Procedure {
                address,
                name: p.name.clone(),
            })
    };
    let import = || {
        image.import_at(address).map(|i| Referent::Import {
            name: i.name.clone(),
            library: i.library.clone(),
            via: i.kind.to_string(),
        })
    };
    let string = || {
        image
            .string_at(address)
            .map(|(text, encoding)| Referent::String {
                text,
                encoding: encoding.to_string(),
            })
    };
    let symbol = || {
        image.symbol_name_at(address).map(|raw| Referent::Symbol {
            name: display_name(raw, image.document().format == "macho"),
        })
    };
    let referent = match kind {
        ReferenceKind::Call | ReferenceKind::Function => {
            procedure().or_else(import).or_else(symbol)
        }
        ReferenceKind::String => string().or_else(symbol),
        ReferenceKind::Data => symbol().or_else(string).or_else(import).or_else(procedure),
    }
    .unwrap_or_else(|| Referent::Unknown {
        section: image.section_at(address).map(|s| s.name.clone()),
    });
    Some(CodeReference {
        line: raw.line,
        kind,
        address,
        shown: raw.text.clone(),
        referent,
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    //! The session against fake interpreters (shell scripts speaking the protocol), so framing,
    //! limits, crashes and clean-up are checked without angr.

    use super::*;
    use crate::providers::native::test_support::document;
    use sha2::Digest;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    /// A fake interpreter in its own directory; `mode` (a file beside it) says how it behaves
    /// on a decompile request, `runs` counts its starts.
    struct Fake {
        dir: tempfile::TempDir,
    }

    impl Fake {
        fn new() -> Fake {
            use std::os::unix::fs::PermissionsExt;
            let dir = tempfile::tempdir().unwrap();
            let python = dir.path().join("python");
            std::fs::write(&python, FAKE).unwrap();
            std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
            let fake = Fake { dir };
            fake.mode("answer");
            fake
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }

        fn mode(&self, mode: &str) {
            std::fs::write(self.path("mode"), mode).unwrap();
        }

        fn runs(&self) -> usize {
            std::fs::read_to_string(self.path("runs"))
                .map(|s| s.trim().parse().unwrap())
                .unwrap_or(0)
        }

        fn angr(&self, limits: Limits) -> Angr {
            Angr::with_limits(
                Installation {
                    python: self.path("python"),
                    site_packages: self.dir.path().to_path_buf(),
                    version: "0.0".into(),
                    origin: Origin::Environment,
                },
                limits,
            )
        }
    }

    /// Reads the load request, hashes the document on descriptor 3, and answers each request
    /// as `mode` says; the answer's text carries the digest and the request it got. A mode that
    /// handles SIGINT sets its trap before its first progress line: rea may interrupt as soon
    /// as it reads one.
    const FAKE: &str = r#"#!/bin/sh
dir=$(dirname "$0")
n=$(cat "$dir/runs" 2>/dev/null || echo 0)
echo $((n + 1)) > "$dir/runs"
echo $$ > "$dir/pid"
echo '{"event":"ready","protocol":1,"angr":"0.0-fake","python":"3.11.7"}'
read -r load
echo "$load" > "$dir/load.json"
digest=$(sha256sum <&3 | cut -d' ' -f1)
echo '{"ok":true}'
while read -r request; do
  echo "$request" > "$dir/request.json"
  case "$(cat "$dir/mode")" in
    crash) echo "Traceback: boom" >&2; exit 7 ;;
    hang) sleep 600 & echo $! > "$dir/sleeper"; wait ;;
    slow)
      sleep 600 & sleeper=$!
      echo $sleeper > "$dir/sleeper"
      trap 'kill $sleeper' INT
      echo '{"event":"progress","stage":"cfg","percent":50.0,"text":null}'
      echo '{"event":"progress","stage":"decompile","percent":40.0,"text":"Structuring code"}'
      wait $sleeper
      trap - INT
      echo '{"ok":false,"error":{"kind":"cancelled","message":"stopped at rea'"'"'s request"}}' ;;
    deaf-once)
      sleep 600 & sleeper=$!
      echo $sleeper > "$dir/sleeper"
      heard=0
      trap 'heard=$((heard + 1)); if [ $heard -ge 2 ]; then kill $sleeper; fi' INT
      echo '{"event":"progress","stage":"decompile","percent":40.0,"text":"Structuring code"}'
      while kill -0 $sleeper 2>/dev/null; do wait $sleeper; done
      trap - INT
      echo $heard > "$dir/heard"
      echo '{"ok":false,"error":{"kind":"cancelled","message":"stopped at rea'"'"'s request"}}' ;;
    stubborn)
      trap '' INT
      echo '{"event":"progress","stage":"cfg","percent":10.0,"text":null}'
      sleep 600 & echo $! > "$dir/sleeper"; wait ;;
    flood) head -c 70000 /dev/zero | tr '\0' a; echo ;;
    refuse) echo '{"ok":false,"error":{"kind":"lift","message":"no function there"}}' ;;
    garbage) echo 'Segmentation fault (core dumped)' ;;
    *) printf '{"ok":true,"text":"int f()\\n{\\n    return %s;\\n}\\n","references":[{"kind":"call","address":%s,"line":3,"text":"x"},{"kind":"mystery","address":1,"line":2,"text":"y"},{"kind":"data","address":1,"line":9,"text":"z"}],"limitations":["fake"],"cfg_seconds":0.001,"decompile_seconds":0.002}\n' "$digest" "$(cat "$dir/callee" 2>/dev/null || echo 0)" ;;
  esac
done
"#;

    fn quick() -> Limits {
        Limits {
            start_timeout: Duration::from_secs(20),
            load_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(20),
            reply_cap: 64 * 1024,
            ..Limits::default()
        }
    }

    fn ls() -> Image {
        Image::load(&document("/usr/bin/ls", None)).unwrap()
    }

    /// Whether a process is gone (or a zombie nobody will run again), waiting a bounded time
    /// for the kernel to deliver the kill.
    fn gone(pid: u32) -> bool {
        for _ in 0..500 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat) => {
                    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                    if state.starts_with('Z') || state.starts_with('X') {
                        return true;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn pid_file(path: &Path) -> u32 {
        std::fs::read_to_string(path)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn the_worker_gets_the_document_bytes_and_rea_s_names_and_its_answer_is_resolved() {
        let fake = Fake::new();
        let image = ls();
        let start = image
            .procedures()
            .iter()
            .find(|p| p.size.is_some())
            .unwrap()
            .address;
        // A call to a PLT stub resolves to rea's procedure there.
        let plt = image
            .procedures()
            .iter()
            .find(|p| p.name.as_deref().is_some_and(|n| n.ends_with("@plt")))
            .unwrap()
            .clone();
        std::fs::write(fake.path("callee"), plt.address.to_string()).unwrap();
        let mut angr = fake.angr(quick());
        let done = angr.decompile(&image, start).unwrap();
        let digest = hex::encode(sha2::Sha256::digest(std::fs::read("/usr/bin/ls").unwrap()));
        assert_eq!(
            done.code.lines,
            ["int f()", "{", &format!("    return {digest};"), "}"]
        );
        assert_eq!(done.code.provider.id, "angr");
        assert_eq!(done.code.provider.version, "0.0-fake");
        assert_eq!(done.code.procedure, start);
        let index = image.procedure_index(start).unwrap();
        assert_eq!(done.code.end, image.procedure_end(index, 1 << 20));
        // The unknown kind is dropped, and so is the reference past the last line.
        assert_eq!(done.code.references.len(), 1);
        assert_eq!(
            done.code.references[0].referent,
            Referent::Procedure {
                address: plt.address,
                name: plt.name.clone()
            }
        );
        assert_eq!(done.code.limitations, ["fake"]);
        assert!(done.timings.start.is_some() && done.timings.load.is_some());

        let load: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fake.path("load.json")).unwrap())
                .unwrap();
        assert_eq!(load["op"], "load");
        assert_eq!(load["arch"], "AMD64");
        let names = load["names"].as_array().unwrap();
        assert!(
            names
                .iter()
                .any(|n| n["address"] == plt.address && n["name"].as_str() == plt.name.as_deref())
        );
        // ls calls its imports through PLT stubs: each is an import with its own name.
        let imports = load["imports"].as_array().unwrap();
        assert!(imports.iter().any(|i| i["address"] == plt.address
            && plt.name.as_deref() == Some(&format!("{}@plt", i["name"].as_str().unwrap()))));
        // Every mapped section is there, none overlapping.
        let segments = load["segments"].as_array().unwrap();
        let text = image.sections().iter().find(|s| s.name == ".text").unwrap();
        assert!(segments.iter().any(|s| s["address"] == text.address
            && s["offset"] == text.file_offset.unwrap()
            && s["size"] == text.file_size));
        let mut spans: Vec<(u64, u64)> = segments
            .iter()
            .chain(load["zero"].as_array().unwrap())
            .map(|s| {
                let a = s["address"].as_u64().unwrap();
                (a, a + s["size"].as_u64().unwrap())
            })
            .collect();
        spans.sort();
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0));
        let request: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fake.path("request.json")).unwrap())
                .unwrap();
        assert_eq!(request["op"], "decompile");
        assert_eq!(request["start"], start);
        assert_eq!(request["end"], done.code.end);

        // The same procedure again is remembered; another one goes to the same worker.
        let again = angr.decompile(&image, start).unwrap();
        assert!(again.timings.cached);
        assert!(Arc::ptr_eq(&again.code, &done.code));
        let other = image
            .procedures()
            .iter()
            .find(|p| p.address != start)
            .unwrap()
            .address;
        let next = angr.decompile(&image, other).unwrap();
        assert!(next.timings.start.is_none() && !next.timings.cached);
        assert_eq!(fake.runs(), 1);
        let pid = angr.worker_pid().unwrap();
        drop(angr);
        assert!(gone(pid), "the worker outlived its session");
    }

    #[test]
    fn a_crash_is_an_error_and_the_next_call_starts_a_fresh_worker() {
        let fake = Fake::new();
        let image = ls();
        let start = image.procedures()[0].address;
        let mut angr = fake.angr(quick());
        fake.mode("crash");
        let err = angr.decompile(&image, start).unwrap_err();
        match &err {
            DecompileError::Crashed { status, stderr, .. } => {
                assert_eq!(status, "exit code 7");
                assert!(stderr.contains("Traceback: boom"), "{stderr}");
            }
            other => panic!("expected a crash, got {other}"),
        }
        assert!(err.to_string().contains("the next call starts it afresh"));
        assert!(angr.worker_pid().is_none());
        fake.mode("answer");
        angr.decompile(&image, start).unwrap();
        assert_eq!(fake.runs(), 2);
    }

    #[test]
    fn a_hung_worker_is_stopped_at_the_time_limit_with_its_children() {
        let fake = Fake::new();
        let image = ls();
        let start = image.procedures()[0].address;
        let mut angr = fake.angr(Limits {
            call_timeout: Duration::from_millis(300),
            ..quick()
        });
        fake.mode("hang");
        let began = Instant::now();
        let err = angr.decompile(&image, start).unwrap_err();
        assert!(
            matches!(
                err,
                DecompileError::Timeout {
                    phase: "decompile",
                    ..
                }
            ),
            "{err}"
        );
        assert!(began.elapsed() < Duration::from_secs(15));
        // The whole process group went: the worker and what it had started.
        assert!(gone(pid_file(&fake.path("pid"))));
        assert!(gone(pid_file(&fake.path("sleeper"))));
        fake.mode("answer");
        angr.decompile(&image, start).unwrap();
    }

    /// A control that keeps every report and asks to stop once angr reports decompiling.
    fn stopping_at_decompile(
        reports: &Mutex<Vec<(u64, String)>>,
    ) -> (
        impl Fn(u64, &str) + Sync + '_,
        impl Fn() -> bool + Sync + '_,
    ) {
        (
            move |p: u64, m: &str| reports.lock().unwrap().push((p, m.to_owned())),
            move || {
                reports
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|(_, m)| m.starts_with("angr: decompiling"))
            },
        )
    }

    /// A decompilation of `ls`'s first procedure by the fake in `mode`, stopped once it reports
    /// decompiling, which must say the worker stopped and kept the document.
    struct Stopped {
        fake: Fake,
        angr: Angr,
        image: Image,
        start: u64,
        reports: Vec<(u64, String)>,
    }

    fn stopped_while_decompiling(mode: &str) -> Stopped {
        let fake = Fake::new();
        let image = ls();
        let start = image.procedures()[0].address;
        let mut angr = fake.angr(quick());
        fake.mode(mode);
        let reports = Mutex::new(Vec::new());
        let err = {
            let (report, stop) = stopping_at_decompile(&reports);
            let control = Control {
                report: Some(&report),
                stop: Some(&stop),
            };
            angr.decompile_controlled(&image, start, &AnalystHints::default(), &control)
                .unwrap_err()
        };
        assert!(
            matches!(err, DecompileError::Cancelled { kept: true, .. }),
            "{err}"
        );
        let reports = reports.into_inner().unwrap();
        Stopped {
            fake,
            angr,
            image,
            start,
            reports,
        }
    }

    impl Stopped {
        /// The next call is served by the same worker, without loading the document again.
        fn serves_on(mut self) {
            let pid = self.angr.worker_pid().expect("the worker stays");
            self.fake.mode("answer");
            self.angr.decompile(&self.image, self.start).unwrap();
            assert_eq!(self.angr.worker_pid(), Some(pid));
            assert_eq!(self.fake.runs(), 1, "the document was not loaded again");
        }
    }

    #[test]
    fn a_stopped_decompilation_reported_its_stages_and_the_worker_keeps_the_document() {
        let stopped = stopped_while_decompiling("slow");
        // Starting (0), loading (5), the control flow (15, then half of 15..30), decompiling
        // (40% of 30..100): in order, never decreasing.
        assert_eq!(
            stopped.reports,
            [
                (0, "starting angr".to_string()),
                (5, "loading the document into angr".to_string()),
                (15, "angr: recovering the control flow".to_string()),
                (22, "angr: recovering the control flow".to_string()),
                (58, "angr: decompiling: Structuring code".to_string()),
            ]
        );
        assert!(gone(pid_file(&stopped.fake.path("sleeper"))));
        stopped.serves_on();
    }

    #[test]
    fn a_worker_that_drops_the_first_interrupt_is_interrupted_again_and_kept() {
        let stopped = stopped_while_decompiling("deaf-once");
        assert_eq!(
            std::fs::read_to_string(stopped.fake.path("heard"))
                .unwrap()
                .trim(),
            "2"
        );
        stopped.serves_on();
    }

    #[test]
    fn a_worker_that_does_not_stop_within_the_grace_is_killed_and_replaced() {
        let fake = Fake::new();
        let image = ls();
        let start = image.procedures()[0].address;
        let mut angr = fake.angr(Limits {
            cancel_grace: Duration::from_millis(200),
            ..quick()
        });
        fake.mode("stubborn");
        let reports = Mutex::new(Vec::new());
        let report = |p: u64, m: &str| reports.lock().unwrap().push((p, m.to_owned()));
        let stop = || reports.lock().unwrap().iter().any(|(p, _)| *p > 15);
        let control = Control {
            report: Some(&report),
            stop: Some(&stop),
        };
        let err = angr
            .decompile_controlled(&image, start, &AnalystHints::default(), &control)
            .unwrap_err();
        assert!(
            matches!(err, DecompileError::Cancelled { kept: false, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("killed"), "{err}");
        assert!(angr.worker_pid().is_none());
        assert!(gone(pid_file(&fake.path("pid"))));
        assert!(gone(pid_file(&fake.path("sleeper"))));
        fake.mode("answer");
        angr.decompile(&image, start).unwrap();
        assert_eq!(fake.runs(), 2);
    }

    #[test]
    fn a_stop_asked_before_the_worker_runs_starts_nothing() {
        let fake = Fake::new();
        let image = ls();
        let mut angr = fake.angr(quick());
        let control = Control {
            report: None,
            stop: Some(&|| true),
        };
        let err = angr
            .decompile_controlled(
                &image,
                image.procedures()[0].address,
                &AnalystHints::default(),
                &control,
            )
            .unwrap_err();
        assert!(
            matches!(err, DecompileError::Cancelled { kept: false, .. }),
            "{err}"
        );
        assert_eq!(fake.runs(), 0);
    }

    #[test]
    fn oversized_garbled_and_refused_replies_are_errors() {
        let fake = Fake::new();
        let image = ls();
        let start = image.procedures()[0].address;
        let mut angr = fake.angr(quick());
        fake.mode("flood");
        assert!(matches!(
            angr.decompile(&image, start),
            Err(DecompileError::OutputLimit { limit: 65536, .. })
        ));
        assert!(gone(pid_file(&fake.path("pid"))));
        fake.mode("garbage");
        assert!(matches!(
            angr.decompile(&image, start),
            Err(DecompileError::Protocol { .. })
        ));
        // A refusal the worker reports keeps the worker: it is still serving.
        fake.mode("refuse");
        let err = angr.decompile(&image, start).unwrap_err();
        let runs = fake.runs();
        assert!(
            matches!(&err, DecompileError::Failed { kind, address, .. } if kind == "lift" && *address == start),
            "{err}"
        );
        assert!(angr.worker_pid().is_some());
        fake.mode("answer");
        angr.decompile(&image, start).unwrap();
        assert_eq!(fake.runs(), runs);
    }

    #[test]
    fn what_angr_cannot_read_is_refused_before_anything_starts() {
        let fake = Fake::new();
        let mut angr = fake.angr(quick());
        let image = ls();
        assert!(matches!(
            angr.decompile(&image, 1),
            Err(DecompileError::NoProcedure { address: 1 })
        ));
        let raw = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(raw.path(), b"just some bytes, not a binary").unwrap();
        let target = crate::providers::native::admit(raw.path()).unwrap();
        let raw = Image::load(&target.documents[0]).unwrap();
        assert!(matches!(
            angr.decompile(&raw, 0),
            Err(DecompileError::UnsupportedFormat { .. })
        ));
        assert_eq!(fake.runs(), 0);
        let missing =
            Angr::locate_with(Some(std::ffi::OsStr::new("/nonexistent/python")), None).unwrap_err();
        let text = missing.to_string();
        assert!(
            text.contains("/nonexistent/python is not an executable Python interpreter"),
            "{text}"
        );
        assert!(
            text.contains("pip install angr==9.2.213 bitstring==4.1.4 pycparser==3.0"),
            "{text}"
        );
        assert!(accepts_format("elf") && accepts_format("macho-universal"));
        assert!(accepts_format("pe") && !accepts_format("raw"));
    }
}
