//! The typed call stack of a crash: registers at the fault and the frames a bounded walk found,
//! each placed in a module, a file offset and a static address, with the reason the walk ended.
//!
//! `unwind` produces these; `compare` and `report` read them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The most frames a backtrace holds; a deeper stack is cut and says so (`end: frame_limit`).
pub const MAX_FRAMES: usize = 64;

/// One general register at the fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RegisterValue {
    /// The register's conventional name, for example `rip`, `rsp` or `x29`.
    pub name: String,
    /// Its value, lowercase `0x` hex.
    pub value: String,
}

/// How a frame's registers were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameSource {
    /// Read from the stopped thread: the faulting frame.
    Registers,
    /// Recovered from the callee's call frame information (`.eh_frame`): the canonical frame
    /// address and register rules evaluated against the callee's registers and stack.
    CallFrameInfo,
    /// Recovered by following the callee's frame pointer (`rbp`): the saved frame pointer at
    /// `[rbp]`, the return address at `[rbp + 8]`. Used where the callee has no call frame
    /// information.
    FramePointer,
}

/// What a frame's instruction pointer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// The faulting instruction (frame 0).
    Fault,
    /// A return address: the frame is inside a call. Its location (`module_offset`,
    /// `static_address`) is that of `instruction_pointer - 1`, a byte of the call
    /// instruction, so it lies in the calling procedure even when the call is that
    /// procedure's last instruction.
    Call,
    /// The instruction a signal interrupted (the frame below a signal handler's trampoline);
    /// its location is that of the instruction pointer itself.
    Interrupted,
}

/// One frame of a backtrace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Frame {
    /// Position from the innermost frame, which is 0.
    pub index: u32,
    /// Whether this is the faulting instruction, a return address or an interrupted
    /// instruction; says which address the location describes.
    pub kind: FrameKind,
    /// How this frame's registers were found.
    pub found_by: FrameSource,
    /// The run-time instruction pointer of the frame (the faulting instruction, or the return
    /// address), lowercase `0x` hex.
    pub instruction_pointer: String,
    /// The run-time stack pointer of the frame, lowercase `0x` hex; absent when unknown.
    pub stack_pointer: Option<String>,
    /// The file mapped at the frame's location (from `/proc/<pid>/maps`); absent for
    /// anonymous memory, the stack or the vDSO.
    pub module: Option<PathBuf>,
    /// The frame's location as an offset into `module`'s file, lowercase `0x` hex.
    pub module_offset: Option<String>,
    /// `module_offset` as a virtual address of the module's ELF image (the address a
    /// disassembler shows, and the one to map to a procedure), lowercase `0x` hex.
    pub static_address: Option<String>,
}

/// Why a backtrace walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WalkEnd {
    /// The last frame is the outermost: its call frame information marks the return address
    /// undefined (`_start`, a thread's entry), its return address is 0, or its frame pointer
    /// is 0.
    Outermost,
    /// The walk stopped at `MAX_FRAMES` (64) frames; the stack may go deeper.
    FrameLimit,
    /// Reading the stopped program's memory failed (an unmapped or unreadable stack address),
    /// so the caller of the last frame is unknown.
    UnreadableMemory,
    /// The last frame has no call frame information and no usable frame pointer.
    NoUnwindInfo,
    /// The last frame's call frame information could not be evaluated (an unsupported or
    /// malformed rule, or a register it needs is unknown).
    InvalidUnwindInfo,
    /// The caller's return address is not in executable mapped memory: a corrupt stack, or
    /// a frame the walk misread.
    BadReturnAddress,
    /// The caller's stack pointer would not be above the callee's (outside a signal frame):
    /// a corrupt or looping frame chain.
    StackNotAdvancing,
    /// The walk used up its bounded number of memory reads.
    ReadLimit,
    /// Unwinding is implemented for x86-64 only; the backtrace holds the faulting frame.
    UnsupportedArchitecture,
}

impl WalkEnd {
    /// The wire name, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            WalkEnd::Outermost => "outermost",
            WalkEnd::FrameLimit => "frame_limit",
            WalkEnd::UnreadableMemory => "unreadable_memory",
            WalkEnd::NoUnwindInfo => "no_unwind_info",
            WalkEnd::InvalidUnwindInfo => "invalid_unwind_info",
            WalkEnd::BadReturnAddress => "bad_return_address",
            WalkEnd::StackNotAdvancing => "stack_not_advancing",
            WalkEnd::ReadLimit => "read_limit",
            WalkEnd::UnsupportedArchitecture => "unsupported_architecture",
        }
    }
}

/// The call stack at a fault, read from the stopped program before the signal was delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Backtrace {
    /// The frames, innermost (the faulting instruction) first; at most 64.
    pub frames: Vec<Frame>,
    /// Why the walk stopped after the last frame.
    pub end: WalkEnd,
    /// The reason in a sentence, with the addresses involved.
    pub end_detail: String,
    /// Whether the walk was cut at the frame limit (`end` is `frame_limit`), so deeper frames
    /// were not read.
    pub truncated: bool,
    /// How many words of the program's memory the walk read (bounded).
    pub memory_reads: u32,
}

impl Frame {
    /// `module-file-name static-address`, or the run-time address when there is no static one.
    pub fn describe(&self) -> String {
        match (&self.module, &self.static_address) {
            (Some(module), Some(address)) => format!(
                "{} {address}",
                module
                    .file_name()
                    .map_or_else(|| module.to_string_lossy(), |name| name.to_string_lossy())
            ),
            _ => format!("{} (no module)", self.instruction_pointer),
        }
    }

    /// What two frames are compared by: the module's file name (versions may live in different
    /// directories) and the static address. `None` when the frame has no static address.
    pub fn comparison_key(&self) -> Option<(String, &str)> {
        let name = self
            .module
            .as_ref()?
            .file_name()?
            .to_string_lossy()
            .into_owned();
        Some((name, self.static_address.as_deref()?))
    }
}

impl Backtrace {
    /// A one-line summary: the frames innermost first and why the walk ended.
    pub fn describe(&self) -> String {
        let frames: Vec<String> = self.frames.iter().map(Frame::describe).collect();
        format!(
            "{} frame{}: {} (ended: {})",
            self.frames.len(),
            if self.frames.len() == 1 { "" } else { "s" },
            frames.join(" <- "),
            self.end.as_str()
        )
    }
}
