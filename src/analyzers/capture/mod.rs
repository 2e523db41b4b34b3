//! Process capture: one bounded, policy-approved run of a program, observed.
//!
//! Layout:
//! - `policy`: the operator's `[capture]` table of `rea.toml` (roots, allowed variables,
//!   ceilings); a missing file means capture is disabled.
//! - `scenario`: what the agent asks to run, and `check`, which approves it against the policy
//!   or refuses with a typed `Refusal` without starting anything.
//! - `run`: starts an approved scenario in its own session with limits, a new network
//!   namespace, and ptrace for crash details; kills the whole group at the end.
//! - `outcome`: the typed `Capture` result and its vocabulary (limits, signals, streams).
//! - `fault`: instruction pointer → module, file offset and static ELF address.
//! - `backtrace`: the typed registers and call stack of a crash.
//! - `unwind`: the bounded x86-64 stack walk (call frame information, else frame pointers).
//! - `cfi`: `.eh_frame` of the mapped modules, read from their files, as unwind rows.
//! - `tracee`: registers, memory and mappings of the stopped crashed program for the walk.
//! - `compare`: two captures compared per dimension after normalization rules.
//! - `report`: a plain-text rendering of a capture.
//!
//! Typical use: `load_policy` → `check` → `run` (on a blocking thread) → record the `Capture`.

mod backtrace;
// The crash backtrace is read under ptrace, on Linux only: elsewhere these are built, unused.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod cfi;
mod compare;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod fault;
mod outcome;
mod policy;
mod report;
mod run;
mod scenario;
#[cfg(target_os = "linux")]
mod tracee;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod unwind;

pub use backtrace::{Backtrace, Frame, FrameKind, FrameSource, MAX_FRAMES, RegisterValue, WalkEnd};
pub use compare::{
    BuiltinRule, CaptureComparison, CompareError, DimensionComparison, InvalidRule,
    NormalizationRule, Verdict, compare, validate_rules,
};
pub use outcome::{
    Capture, CapturedStream, DataTruncated, EndedBy, ExecutableFormat, Fault, LeaderMemory, Limits,
    NetworkIsolation, OutputOverflow, ScenarioEcho, SignalId, StreamEncoding, Termination,
};
pub use policy::{CONFIG_FILE_NAME, Policy, PolicyError, load_policy};
pub use report::render_report;
pub use run::{CaptureError, run};
pub use scenario::{ApprovedScenario, Refusal, Scenario, check};
