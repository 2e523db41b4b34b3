//! The crashed program as the stack walk sees it while its fatal signal is stopped under
//! ptrace: its registers (`PTRACE_GETREGSET`), its memory (`process_vm_readv`, or
//! `PTRACE_PEEKDATA` where that is refused), and its code mappings (`/proc/<pid>/maps` and the
//! modules' files, through the run's `ModuleCache`).
//!
//! Every request here must come from the tracing thread, like the rest of the tracer.

use std::ffi::c_void;
use std::path::PathBuf;

use super::backtrace::{Backtrace, RegisterValue};
use super::cfi::{ModuleCache, ModuleInfo};
use super::fault::{Mapping, file_offset, mapping_for};
use super::outcome::hex;
use super::unwind::{CodeMap, Location, Memory, Row};

/// `NT_PRSTATUS`: the general registers for `PTRACE_GETREGSET`.
const NT_PRSTATUS: usize = 1;

/// What was read of a stopped crash: the instruction pointer, the registers and the stack.
pub(crate) struct CrashState {
    /// The run-time instruction pointer.
    pub(crate) instruction_pointer: u64,
    /// The general registers, named.
    pub(crate) registers: Vec<RegisterValue>,
    /// The walked stack.
    pub(crate) backtrace: Backtrace,
}

/// Reads the registers of the stopped `pid` and walks its stack. `None` when the registers
/// cannot be read (the tracee is gone).
pub(crate) fn read_crash_state(
    pid: libc::pid_t,
    mappings: &[Mapping],
    modules: &mut ModuleCache,
) -> Option<CrashState> {
    let registers = general_registers(pid)?;
    let mut memory = TraceeMemory {
        pid,
        peek_only: false,
    };
    let mut code = ProcessCode {
        pid,
        mappings,
        modules,
    };
    #[cfg(target_arch = "x86_64")]
    {
        use super::unwind::{Registers, walk};
        let r = &registers;
        // DWARF order of the x86-64 psABI.
        let values = [
            r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9, r.r10, r.r11,
            r.r12, r.r13, r.r14, r.r15, r.rip,
        ];
        let backtrace = walk(Registers::from_values(values), &mut memory, &mut code);
        let named = [
            ("rax", r.rax),
            ("rbx", r.rbx),
            ("rcx", r.rcx),
            ("rdx", r.rdx),
            ("rsi", r.rsi),
            ("rdi", r.rdi),
            ("rbp", r.rbp),
            ("rsp", r.rsp),
            ("r8", r.r8),
            ("r9", r.r9),
            ("r10", r.r10),
            ("r11", r.r11),
            ("r12", r.r12),
            ("r13", r.r13),
            ("r14", r.r14),
            ("r15", r.r15),
            ("rip", r.rip),
            ("eflags", r.eflags),
            ("cs", r.cs),
            ("ss", r.ss),
            ("ds", r.ds),
            ("es", r.es),
            ("fs", r.fs),
            ("gs", r.gs),
            ("fs_base", r.fs_base),
            ("gs_base", r.gs_base),
            ("orig_rax", r.orig_rax),
        ];
        Some(CrashState {
            instruction_pointer: r.rip,
            registers: name_values(&named),
            backtrace,
        })
    }
    #[cfg(target_arch = "aarch64")]
    {
        use super::backtrace::WalkEnd;
        use super::unwind::faulting_frame_only;
        let _ = &mut memory;
        let r = &registers;
        let mut named: Vec<(String, u64)> = (0..31).map(|i| (format!("x{i}"), r.regs[i])).collect();
        named.extend([
            ("sp".to_owned(), r.sp),
            ("pc".to_owned(), r.pc),
            ("pstate".to_owned(), r.pstate),
        ]);
        let backtrace = faulting_frame_only(
            r.pc,
            Some(r.sp),
            &mut code,
            WalkEnd::UnsupportedArchitecture,
            "stack walking is implemented for x86-64; this backtrace holds the faulting frame",
        );
        Some(CrashState {
            instruction_pointer: r.pc,
            registers: named
                .into_iter()
                .map(|(name, value)| RegisterValue {
                    name,
                    value: hex(value),
                })
                .collect(),
            backtrace,
        })
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (registers, &mut memory, &mut code);
        None
    }
}

#[cfg(target_arch = "x86_64")]
fn name_values(named: &[(&str, u64)]) -> Vec<RegisterValue> {
    named
        .iter()
        .map(|(name, value)| RegisterValue {
            name: (*name).to_owned(),
            value: hex(*value),
        })
        .collect()
}

/// The general registers of a stopped tracee.
fn general_registers(pid: libc::pid_t) -> Option<libc::user_regs_struct> {
    // SAFETY: zeroed registers are valid; PTRACE_GETREGSET fills at most iov_len bytes.
    let mut registers: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    let mut vector = libc::iovec {
        iov_base: (&mut registers as *mut libc::user_regs_struct).cast::<c_void>(),
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    // SAFETY: valid pointers to locals.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGSET,
            pid,
            NT_PRSTATUS,
            &mut vector as *mut libc::iovec,
        )
    };
    (r == 0).then_some(registers)
}

/// The tracee's memory.
struct TraceeMemory {
    pid: libc::pid_t,
    /// Set once `process_vm_readv` is refused (seccomp, an old kernel, a permission check it
    /// makes and ptrace does not), so later reads go straight to `PTRACE_PEEKDATA`.
    peek_only: bool,
}

impl Memory for TraceeMemory {
    fn read(&mut self, address: u64, buffer: &mut [u8]) -> bool {
        if buffer.is_empty() {
            return true;
        }
        if !self.peek_only {
            let local = libc::iovec {
                iov_base: buffer.as_mut_ptr().cast::<c_void>(),
                iov_len: buffer.len(),
            };
            let remote = libc::iovec {
                iov_base: address as usize as *mut c_void,
                iov_len: buffer.len(),
            };
            // SAFETY: `local` describes `buffer`, which outlives the call; the remote range is
            // only read by the kernel, in the other process.
            let read = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
            if read >= 0 {
                return read as usize == buffer.len();
            }
            let errno = std::io::Error::last_os_error().raw_os_error();
            if !matches!(errno, Some(libc::ENOSYS | libc::EPERM)) {
                return false;
            }
            self.peek_only = true;
        }
        for (index, chunk) in buffer.chunks_mut(8).enumerate() {
            let Some(at) = address.checked_add(8 * index as u64) else {
                return false;
            };
            // SAFETY: errno is thread-local; PEEKDATA returns the word, or -1 with errno set,
            // and -1 is also a valid word, so errno is cleared first.
            let word = unsafe {
                *libc::__errno_location() = 0;
                libc::ptrace(
                    libc::PTRACE_PEEKDATA,
                    self.pid,
                    at as usize as *mut c_void,
                    std::ptr::null_mut::<c_void>(),
                )
            };
            if word == -1 && std::io::Error::last_os_error().raw_os_error() != Some(0) {
                return false;
            }
            let bytes = word.to_ne_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        true
    }
}

/// The tracee's mappings and their modules.
struct ProcessCode<'a> {
    pid: libc::pid_t,
    mappings: &'a [Mapping],
    modules: &'a mut ModuleCache,
}

impl ProcessCode<'_> {
    fn module(&mut self, mapping: &Mapping) -> Option<std::sync::Arc<ModuleInfo>> {
        let path = mapping.file()?;
        // map_files names exactly the mapped file even if the path was replaced since; it
        // needs privileges, so fall back to the path.
        let exact = PathBuf::from(format!(
            "/proc/{}/map_files/{:x}-{:x}",
            self.pid, mapping.start, mapping.end
        ));
        self.modules.get((path.to_owned(), mapping.inode), || {
            ModuleInfo::load(&exact).or_else(|| ModuleInfo::load(std::path::Path::new(path)))
        })
    }
}

impl CodeMap for ProcessCode<'_> {
    fn locate(&mut self, address: u64) -> Location {
        let Some(mapping) = mapping_for(self.mappings, address) else {
            return Location::default();
        };
        let Some(path) = mapping.file() else {
            return Location {
                executable: mapping.executable,
                ..Location::default()
            };
        };
        let module_offset = file_offset(mapping, address);
        let static_address = match (module_offset, self.module(mapping)) {
            (Some(offset), Some(module)) => module.static_address(offset),
            _ => None,
        };
        Location {
            module: Some(PathBuf::from(path)),
            module_offset,
            static_address,
            executable: mapping.executable,
        }
    }

    fn unwind_row(&mut self, address: u64) -> Result<Row, String> {
        let mapping = mapping_for(self.mappings, address)
            .ok_or_else(|| "the address is not mapped".to_owned())?;
        if mapping.file().is_none() {
            return Err("the address is not in a mapped file".to_owned());
        }
        let module = self
            .module(mapping)
            .ok_or_else(|| "the module is not a readable ELF file".to_owned())?;
        let offset = file_offset(mapping, address)
            .ok_or_else(|| "the address has no file offset".to_owned())?;
        let static_address = module
            .static_address(offset)
            .ok_or_else(|| "no segment of the module holds the address".to_owned())?;
        module.row(static_address)
    }

    fn same_region(&mut self, a: u64, b: u64) -> bool {
        match (mapping_for(self.mappings, a), mapping_for(self.mappings, b)) {
            (Some(x), Some(y)) => x.start == y.start,
            _ => false,
        }
    }
}
