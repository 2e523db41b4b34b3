//! The tracer: waits for the leader under ptrace, follows its stops, and reads a crash's fault
//! (signal, address, instruction pointer mapped to a module) and the leader's peak memory.

use super::*;
use crate::analyzers::capture::cfi::ModuleCache;
use crate::analyzers::capture::tracee::read_crash_state;

/// What the tracer learned.
pub(super) struct Traced {
    pub(super) status: c_int,
    pub(super) usage: libc::rusage,
    pub(super) fault: Option<Fault>,
    pub(super) leader_memory: Option<LeaderMemory>,
}

pub(super) fn ptrace_continue(pid: libc::pid_t, signal: c_int) {
    // SAFETY: restarting our own tracee; failure (ESRCH when it was just killed) is fine,
    // the wait loop sees its end.
    unsafe {
        libc::ptrace(libc::PTRACE_CONT, pid, 0, signal as usize);
    }
}

/// Waits for a state change of `pid` and consumes it, with the resource usage if it ended.
pub(super) fn wait_consume(pid: libc::pid_t) -> Result<(c_int, libc::rusage), CaptureError> {
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid value; wait4 fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::__WALL, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        if r < 0 && last_errno() == libc::EINTR {
            continue;
        }
        return Err(system("wait for the program"));
    }
}

/// Follows the leader until it ends: answers ptrace stops, records crash details, and
/// reaps it after killing the rest of its group.
pub(super) fn trace(
    pid: libc::pid_t,
    traced: bool,
    killer: &Killer,
) -> Result<Traced, CaptureError> {
    let mut options_set = false;
    // The latest fault per (signal, raised by the kernel) pair; the terminating signal
    // picks one at the end.
    let mut faults: BTreeMap<(c_int, bool), Fault> = BTreeMap::new();
    let mut leader_memory = None;
    // Modules' unwind tables, read once per run however often the program faults.
    let mut modules = ModuleCache::default();
    let flags = libc::WEXITED | libc::WNOWAIT | libc::__WALL;
    loop {
        // SAFETY: zeroed siginfo is a valid value; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // Peek without reaping, so the leader's pid stays reserved until the group is dead.
        // SAFETY: valid pointer to a local.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        if r != 0 {
            if last_errno() == libc::EINTR {
                continue;
            }
            return Err(system("wait for the program"));
        }
        if matches!(
            info.si_code,
            libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED
        ) {
            break;
        }
        let (status, usage) = wait_consume(pid)?;
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            // It ended between the peek and the wait (killed while stopped): already reaped.
            killer.lock().reaped = true;
            return Ok(Traced {
                status,
                usage,
                fault: pick_fault(status, &mut faults),
                leader_memory,
            });
        }
        if !traced || !libc::WIFSTOPPED(status) {
            continue;
        }
        let signal = libc::WSTOPSIG(status);
        let event = (status >> 16) & 0xffff;
        if !options_set && signal == libc::SIGTRAP && event == 0 {
            // The stop after exec: from here on, exec and exit are reported as events
            // instead of SIGTRAPs, and the program dies if this process does.
            let options =
                libc::PTRACE_O_EXITKILL | libc::PTRACE_O_TRACEEXIT | libc::PTRACE_O_TRACEEXEC;
            // SAFETY: setting options on our stopped tracee.
            unsafe {
                libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, options as usize);
            }
            options_set = true;
            ptrace_continue(pid, 0);
            continue;
        }
        if event == libc::PTRACE_EVENT_EXIT {
            leader_memory = read_leader_memory(pid);
            ptrace_continue(pid, 0);
            continue;
        }
        if event != 0 {
            ptrace_continue(pid, 0);
            continue;
        }
        // SAFETY: zeroed siginfo is valid; PTRACE_GETSIGINFO fills it.
        let mut signal_info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to a local.
        let got = unsafe {
            libc::ptrace(
                libc::PTRACE_GETSIGINFO,
                pid,
                0,
                &mut signal_info as *mut libc::siginfo_t,
            )
        };
        if got != 0 {
            // A group-stop (SIGSTOP and friends): nobody will send SIGCONT, so resume.
            ptrace_continue(pid, 0);
            continue;
        }
        if CRASH_SIGNALS.contains(&signal)
            && let Some(fault) = read_fault(pid, signal, &signal_info, &mut modules)
        {
            faults.insert((signal, signal_info.si_code > 0), fault);
        }
        // Deliver the signal as it would have been without us.
        ptrace_continue(pid, signal);
    }

    // The leader is a zombie: kill whatever is left of its group while its pid still
    // reserves the ids, then reap it.
    let mut state = killer.lock();
    kill_group_and_session(pid);
    let (status, usage) = wait_consume(pid)?;
    state.reaped = true;
    drop(state);
    Ok(Traced {
        status,
        usage,
        fault: pick_fault(status, &mut faults),
        leader_memory,
    })
}

/// The fault matching the signal that ended the leader, preferring one the kernel raised
/// (a real fault) over one a process sent (a crash handler re-raising).
pub(super) fn pick_fault(
    status: c_int,
    faults: &mut BTreeMap<(c_int, bool), Fault>,
) -> Option<Fault> {
    if !libc::WIFSIGNALED(status) {
        return None;
    }
    let signal = libc::WTERMSIG(status);
    faults
        .remove(&(signal, true))
        .or_else(|| faults.remove(&(signal, false)))
}

/// Builds the fault record at a crash signal's delivery stop.
pub(super) fn read_fault(
    pid: libc::pid_t,
    signal: c_int,
    info: &libc::siginfo_t,
    modules: &mut ModuleCache,
) -> Option<Fault> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mappings = parse_maps(&maps);
    // Registers and the stack walk, read before the signal is delivered.
    let crash = read_crash_state(pid, &mappings, modules)?;
    let ip = crash.instruction_pointer;
    let raised_by_kernel = info.si_code > 0;
    let address = (raised_by_kernel && signal != libc::SIGABRT).then(|| {
        // SAFETY: for a kernel-raised SIGSEGV/SIGBUS/SIGILL/SIGFPE the union holds si_addr.
        hex(unsafe { info.si_addr() } as u64)
    });
    let mapping = mapping_for(&mappings, ip);
    let module = mapping.and_then(|m| m.file()).map(PathBuf::from);
    let offset = match (mapping, &module) {
        (Some(mapping), Some(_)) => file_offset(mapping, ip),
        _ => None,
    };
    let static_address = match (mapping, &module, offset) {
        (Some(mapping), Some(module), Some(offset)) => {
            // map_files names exactly the mapped file, even if the path was replaced
            // since; it needs privileges, so fall back to the path.
            let exact = PathBuf::from(format!(
                "/proc/{pid}/map_files/{:x}-{:x}",
                mapping.start, mapping.end
            ));
            static_address_in_file(&exact, offset)
                .or_else(|| static_address_in_file(module, offset))
        }
        _ => None,
    };
    Some(Fault {
        signal: SignalId::from_number(signal),
        code: info.si_code,
        address,
        instruction_pointer: hex(ip),
        module,
        module_offset: offset.map(hex),
        static_address: static_address.map(hex),
        registers: crash.registers,
        backtrace: Some(crash.backtrace),
    })
}

/// Reads `VmHWM` and `VmPeak` of the leader at its exit stop.
pub(super) fn read_leader_memory(pid: libc::pid_t) -> Option<LeaderMemory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kilobytes = |key: &str| {
        status.lines().find_map(|line| {
            let value = line.strip_prefix(key)?.trim();
            value.strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    };
    Some(LeaderMemory {
        peak_rss_bytes: kilobytes("VmHWM:")?.saturating_mul(1024),
        peak_virtual_bytes: kilobytes("VmPeak:")?.saturating_mul(1024),
    })
}

pub(super) fn millis(time: libc::timeval) -> u64 {
    let seconds = u64::try_from(time.tv_sec).unwrap_or(0);
    let micros = u64::try_from(time.tv_usec).unwrap_or(0);
    seconds.saturating_mul(1000).saturating_add(micros / 1000)
}
