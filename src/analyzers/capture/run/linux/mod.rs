//! The Linux capture: forks the program into its own session under limits and ptrace, drains its
//! output on a second thread, and assembles the `Capture`. The run loop is here; the child, the
//! process group, the I/O thread and the tracer have a file each.

mod child;
mod group;
mod streams;
mod trace;

use std::collections::BTreeMap;
use std::ffi::{CString, c_char, c_int};
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::CaptureError;
use crate::analyzers::capture::fault::{
    file_offset, mapping_for, parse_maps, static_address_in_file,
};
use crate::analyzers::capture::outcome::{
    Capture, CapturedStream, EndedBy, Fault, LeaderMemory, NetworkIsolation, OutputOverflow,
    SignalId, Termination, hex,
};
use crate::analyzers::capture::scenario::{ApprovedScenario, FileIdentity};

use child::*;
pub(crate) use group::*;
use streams::*;
use trace::*;

/// Signals whose fatal delivery we describe as a crash.
pub(super) const CRASH_SIGNALS: [c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// How long cleanup keeps killing and re-scanning before it reports leftovers.
pub(super) const CLEANUP_LIMIT: Duration = Duration::from_secs(2);

/// How often the I/O thread looks at the cancellation flag when nothing else wakes it.
pub(super) const CANCEL_POLL: Duration = Duration::from_millis(20);

/// Pipe ends are moved to descriptors at or above this, so `dup2` onto 0..=3 in the child
/// never overwrites one of them.
pub(super) const LOWEST_PIPE_FD: c_int = 10;

/// `SIOCGIFFLAGS` / `SIOCSIFFLAGS` (linux/sockios.h), absent from the libc crate for glibc.
pub(super) const SIOCGIFFLAGS: libc::Ioctl = 0x8913;
pub(super) const SIOCSIFFLAGS: libc::Ioctl = 0x8914;

/// A close-on-exec pipe whose ends sit at or above `LOWEST_PIPE_FD`.
fn pipe() -> Result<(OwnedFd, OwnedFd), CaptureError> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(system("create a pipe"));
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((raise(read)?, raise(write)?))
}

fn raise(fd: OwnedFd) -> Result<OwnedFd, CaptureError> {
    if fd.as_raw_fd() >= LOWEST_PIPE_FD {
        return Ok(fd);
    }
    // SAFETY: duplicating a descriptor we own.
    let raised = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, LOWEST_PIPE_FD) };
    if raised < 0 {
        return Err(system("move a pipe descriptor"));
    }
    // SAFETY: fcntl returned a new descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(raised) })
}

fn set_nonblocking(fd: &OwnedFd) -> Result<(), CaptureError> {
    // SAFETY: reading and setting the status flags of a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(system("make a pipe non-blocking"));
        }
    }
    Ok(())
}

fn system(operation: &'static str) -> CaptureError {
    CaptureError::System {
        operation,
        source: io::Error::last_os_error(),
    }
}

/// Reads the child's setup reports until exec closes the pipe (or the child exits). Waits at
/// most `limit`, since a child stuck before exec (a hung working directory) must not hang
/// the caller.
fn read_reports(fd: &OwnedFd, limit: Duration) -> Result<Vec<[i32; 3]>, ()> {
    let deadline = Instant::now() + limit;
    let mut bytes = Vec::new();
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(());
        }
        let mut pollfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = c_int::try_from(remaining.as_millis().max(1)).unwrap_or(c_int::MAX);
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pollfd, 1, timeout) };
        let mut buffer = [0u8; 256];
        // SAFETY: reading into a stack buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        if n == 0 {
            break;
        }
        if n > 0 {
            bytes.extend_from_slice(&buffer[..n as usize]);
        } else if !matches!(last_errno(), libc::EINTR | libc::EAGAIN) {
            break;
        }
    }
    Ok(bytes
        .chunks_exact(12)
        .map(|record| {
            let field = |at: usize| {
                i32::from_ne_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]])
            };
            [field(0), field(4), field(8)]
        })
        .collect())
}

fn errno_text(errno: i32) -> String {
    io::Error::from_raw_os_error(errno).to_string()
}

pub(super) fn run(
    approved: &ApprovedScenario,
    cancel: &AtomicBool,
) -> Result<Capture, CaptureError> {
    let metadata =
        std::fs::metadata(approved.executable()).map_err(|_| CaptureError::ExecutableChanged {
            path: approved.executable().to_path_buf(),
        })?;
    if FileIdentity::of(&metadata) != approved.identity() {
        return Err(CaptureError::ExecutableChanged {
            path: approved.executable().to_path_buf(),
        });
    }
    if cancel.load(Ordering::Relaxed) {
        return Err(CaptureError::CancelledBeforeStart);
    }
    let limits = approved.limits().clone();
    let plan = ChildPlan::new(approved)?;
    let (stdin_read, stdin_write) = pipe()?;
    let (stdout_read, stdout_write) = pipe()?;
    let (stderr_read, stderr_write) = pipe()?;
    let (report_read, report_write) = pipe()?;
    let (wake_read, wake_write) = pipe()?;
    for fd in [
        &stdin_write,
        &stdout_read,
        &stderr_read,
        &report_read,
        &wake_read,
    ] {
        set_nonblocking(fd)?;
    }
    let child_fds = ChildFds {
        stdin: stdin_read.as_raw_fd(),
        stdout: stdout_write.as_raw_fd(),
        stderr: stderr_write.as_raw_fd(),
        report: report_write.as_raw_fd(),
    };

    let started = Instant::now();
    let wall_limit = Duration::from_millis(limits.wall_time_ms);
    // SAFETY: the child branch only makes async-signal-safe calls (see `child`).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(system("fork"));
    }
    if pid == 0 {
        // SAFETY: we are the child of fork and the plan was prepared before it.
        unsafe { child(&plan, &child_fds) }
    }
    drop((stdin_read, stdout_write, stderr_write, report_write));

    let mut isolation = NetworkIsolation::NotIsolated;
    let mut traced = true;
    let reports = read_reports(&report_read, wall_limit);
    drop(report_read);
    let reports = match reports {
        Ok(reports) => reports,
        Err(()) => {
            // Stuck before exec: it is our direct child, so kill it by pid and reap it.
            // SAFETY: signalling our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = wait_consume(pid);
            return Err(CaptureError::ChildSetup {
                stage: "preparing the child before exec",
                source: io::Error::new(
                    io::ErrorKind::TimedOut,
                    "it did not reach exec within the wall-time limit",
                ),
            });
        }
    };
    for [tag, a, b] in reports {
        match tag {
            REPORT_NETWORK_MODE => {
                isolation = if a == 2 {
                    NetworkIsolation::UserAndNetworkNamespace
                } else {
                    NetworkIsolation::NetworkNamespace
                };
            }
            REPORT_UNTRACED => traced = false,
            stage => {
                // The child exits right after a failure report; reap it.
                let _ = wait_consume(pid);
                if stage == Stage::Network as i32 {
                    return Err(CaptureError::NetworkIsolationUnavailable {
                        reason: format!(
                            "a network namespace: {}; a user and network namespace: {}",
                            errno_text(a),
                            errno_text(b)
                        ),
                    });
                }
                return Err(CaptureError::ChildSetup {
                    stage: stage_name(stage),
                    source: io::Error::from_raw_os_error(a),
                });
            }
        }
    }

    let killer = Killer::new(pid);
    let io_plan = IoPlan {
        stdin: Some(stdin_write),
        stdin_data: approved.stdin(),
        stdout: Stream::new(stdout_read, limits.stdout_cap_bytes),
        stderr: Stream::new(stderr_read, limits.stderr_cap_bytes),
        wake: wake_read,
        overflow: limits.output_overflow,
        deadline: started + wall_limit,
        cancel,
        killer: &killer,
    };
    let (traced_result, wall_time, leftovers, streams) = std::thread::scope(|scope| {
        let io = std::thread::Builder::new()
            .name("rea-capture-io".to_owned())
            .spawn_scoped(scope, move || io_loop(io_plan));
        let io = match io {
            Ok(io) => io,
            Err(source) => {
                // Without the I/O thread nobody drains the pipes: end the run now.
                killer.kill(EndedBy::Cancelled);
                let _ = trace(pid, traced, &killer);
                clean_up(pid);
                return (
                    Err(CaptureError::System {
                        operation: "start the output thread",
                        source,
                    }),
                    Duration::ZERO,
                    Vec::new(),
                    None,
                );
            }
        };
        let traced_result = trace(pid, traced, &killer);
        let wall_time = started.elapsed();
        let leftovers = clean_up(pid);
        // SAFETY: writing one byte from a stack buffer to our wake pipe.
        unsafe { libc::write(wake_write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        let streams = io.join().ok();
        (traced_result, wall_time, leftovers, streams)
    });
    let outcome = traced_result?;
    let (stdout, stderr) = streams.ok_or_else(|| CaptureError::System {
        operation: "collect the program's output",
        source: io::Error::other("the output thread panicked"),
    })?;

    let termination = if libc::WIFSIGNALED(outcome.status) {
        Termination::Signaled {
            signal: SignalId::from_number(libc::WTERMSIG(outcome.status)),
            core_dumped: libc::WCOREDUMP(outcome.status),
        }
    } else {
        Termination::Exited {
            code: libc::WEXITSTATUS(outcome.status),
        }
    };
    let user_cpu_time_ms = millis(outcome.usage.ru_utime);
    let system_cpu_time_ms = millis(outcome.usage.ru_stime);
    let cpu_time_ms = user_cpu_time_ms.saturating_add(system_cpu_time_ms);
    let ended_by = ended_by(
        &termination,
        killer.reason(),
        cpu_time_ms,
        &limits,
        outcome.leader_memory.as_ref(),
    );
    Ok(Capture {
        scenario: approved.echo(),
        limits,
        network_isolation: isolation,
        traced,
        termination,
        ended_by,
        wall_time_ms: u64::try_from(wall_time.as_millis()).unwrap_or(u64::MAX),
        user_cpu_time_ms,
        system_cpu_time_ms,
        cpu_time_ms,
        peak_rss_bytes: u64::try_from(outcome.usage.ru_maxrss)
            .unwrap_or(0)
            .saturating_mul(1024),
        leader_memory: outcome.leader_memory,
        stdout: stdout.into_captured(),
        stderr: stderr.into_captured(),
        fault: outcome.fault,
        leftover_processes: leftovers,
    })
}

/// Which limit ended the run. Our own kills are SIGKILLs, so a reason we recorded counts
/// only if SIGKILL is what ended the leader; otherwise the program ended first.
fn ended_by(
    termination: &Termination,
    reason: Option<EndedBy>,
    cpu_time_ms: u64,
    limits: &crate::analyzers::capture::outcome::Limits,
    leader_memory: Option<&LeaderMemory>,
) -> EndedBy {
    let signal = match termination {
        Termination::Signaled { signal, .. } => Some(signal.number),
        Termination::Exited { .. } => None,
    };
    if signal == Some(libc::SIGKILL)
        && let Some(reason) = reason
    {
        return reason;
    }
    let cpu_limit_ms = limits.cpu_time_limit_seconds.saturating_mul(1000);
    if signal == Some(libc::SIGXCPU)
        || (signal == Some(libc::SIGKILL) && cpu_time_ms >= cpu_limit_ms)
    {
        return EndedBy::CpuTime;
    }
    let failed = !matches!(termination, Termination::Exited { code: 0 });
    if failed
        && let Some(memory) = leader_memory
        && memory.peak_virtual_bytes >= limits.memory_bytes / 10 * 9
    {
        return EndedBy::Memory;
    }
    EndedBy::None
}
