//! The child side of a capture: everything prepared before `fork`, and the child itself, which
//! after `fork` makes only async-signal-safe calls, sets up its session, limits, namespace and
//! descriptors, reports each stage on a pipe and execs the program.

use super::*;

/// `struct ifreq` reduced to the name and the flags member of its union (40 bytes on 64-bit
/// Linux).
#[repr(C)]
pub(super) struct InterfaceFlagsRequest {
    name: [u8; 16],
    flags: libc::c_short,
    padding: [u8; 22],
}

/// Steps of the child between `fork` and `exec`; the number goes over the report pipe.
#[derive(Clone, Copy)]
#[repr(i32)]
pub(super) enum Stage {
    Session = 1,
    Signals = 2,
    Network = 3,
    UserNamespaceMap = 4,
    WorkingDirectory = 5,
    Stdio = 6,
    CloseDescriptors = 7,
    Limits = 8,
    Exec = 9,
}

pub(super) fn stage_name(code: i32) -> &'static str {
    match code {
        1 => "creating a new session",
        2 => "resetting signal handling",
        3 => "creating a network namespace",
        4 => "mapping the user id in the new user namespace",
        5 => "changing to the working directory",
        6 => "connecting stdin, stdout and stderr",
        7 => "closing inherited file descriptors",
        8 => "setting resource limits",
        9 => "exec",
        _ => "an unknown step",
    }
}

/// Report-pipe record tags that are not failures.
pub(super) const REPORT_NETWORK_MODE: i32 = 0;
pub(super) const REPORT_UNTRACED: i32 = 100;

/// Everything the child needs, prepared before `fork` because the child of a multithreaded
/// process may only make async-signal-safe calls (no allocation).
pub(super) struct ChildPlan {
    program: CString,
    /// Owns the strings `argv_pointers` points into.
    _argv: Vec<CString>,
    argv_pointers: Vec<*const c_char>,
    /// Owns the strings `envp_pointers` points into.
    _envp: Vec<CString>,
    envp_pointers: Vec<*const c_char>,
    working_directory: CString,
    limits: Vec<(libc::__rlimit_resource_t, libc::rlimit)>,
    isolate_network: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    parent: libc::pid_t,
}

/// The child's ends of the pipes.
pub(super) struct ChildFds {
    pub(super) stdin: RawFd,
    pub(super) stdout: RawFd,
    pub(super) stderr: RawFd,
    pub(super) report: RawFd,
}

pub(super) fn c_string(bytes: &[u8], what: &'static str) -> Result<CString, CaptureError> {
    CString::new(bytes).map_err(|_| CaptureError::System {
        operation: what,
        source: io::Error::new(io::ErrorKind::InvalidInput, "contains a NUL byte"),
    })
}

impl ChildPlan {
    pub(super) fn new(approved: &ApprovedScenario) -> Result<ChildPlan, CaptureError> {
        let scenario = approved.scenario();
        let program = c_string(
            approved.executable().as_os_str().as_bytes(),
            "pass the executable path",
        )?;
        let mut argv = vec![c_string(
            scenario.executable.as_os_str().as_bytes(),
            "pass argv[0]",
        )?];
        for argument in &scenario.arguments {
            argv.push(c_string(argument.as_bytes(), "pass an argument")?);
        }
        let mut envp = Vec::with_capacity(scenario.environment.len());
        for (name, value) in &scenario.environment {
            envp.push(c_string(
                format!("{name}={value}").as_bytes(),
                "pass an environment variable",
            )?);
        }
        let working_directory = c_string(
            approved.working_directory().as_os_str().as_bytes(),
            "pass the working directory",
        )?;
        let mut argv_pointers: Vec<*const c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_pointers.push(std::ptr::null());
        let mut envp_pointers: Vec<*const c_char> = envp.iter().map(|e| e.as_ptr()).collect();
        envp_pointers.push(std::ptr::null());

        let limits = approved.limits();
        let mut rlimits = vec![
            bounded_limit(
                libc::RLIMIT_CPU,
                limits.cpu_time_limit_seconds,
                limits.cpu_time_limit_seconds.saturating_add(1),
            ),
            bounded_limit(libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
            bounded_limit(
                libc::RLIMIT_NPROC,
                limits.max_processes,
                limits.max_processes,
            ),
        ];
        if !limits.core_dumps {
            rlimits.push(bounded_limit(libc::RLIMIT_CORE, 0, 0));
        }
        // SAFETY: getuid, getgid and getpid cannot fail.
        let (uid, gid, parent) = unsafe { (libc::getuid(), libc::getgid(), libc::getpid()) };
        Ok(ChildPlan {
            program,
            _argv: argv,
            argv_pointers,
            _envp: envp,
            envp_pointers,
            working_directory,
            limits: rlimits,
            isolate_network: !scenario.network,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            parent,
        })
    }
}

/// A limit no higher than the current hard limit, so an unprivileged caller can set it.
pub(super) fn bounded_limit(
    resource: libc::__rlimit_resource_t,
    soft: u64,
    hard: u64,
) -> (libc::__rlimit_resource_t, libc::rlimit) {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `current` is a valid rlimit to write into.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        current.rlim_max = libc::RLIM_INFINITY;
    }
    let ceiling = current.rlim_max;
    let hard = hard.min(ceiling);
    let soft = soft.min(hard);
    (
        resource,
        libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        },
    )
}

pub(super) fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Writes one 12-byte record to the report pipe. Async-signal-safe.
pub(super) fn report(fd: RawFd, tag: i32, a: i32, b: i32) {
    let mut record = [0u8; 12];
    record[..4].copy_from_slice(&tag.to_ne_bytes());
    record[4..8].copy_from_slice(&a.to_ne_bytes());
    record[8..].copy_from_slice(&b.to_ne_bytes());
    // SAFETY: writing a stack buffer to a descriptor we own; a failed write only loses the
    // diagnostic.
    unsafe {
        libc::write(fd, record.as_ptr().cast(), record.len());
    }
}

/// Reports a failed step and exits without running any of the parent's atexit handlers.
pub(super) fn fail(fd: RawFd, stage: Stage, errno: i32, errno2: i32) -> ! {
    report(fd, stage as i32, errno, errno2);
    // SAFETY: _exit is async-signal-safe and ends the child immediately.
    unsafe { libc::_exit(127) }
}

/// Writes `bytes` to a /proc file of the child itself. Async-signal-safe.
pub(super) fn write_proc_file(path: &[u8], bytes: &[u8]) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated by the callers; the descriptor is closed before
    // returning.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(last_errno());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let errno = last_errno();
        libc::close(fd);
        if written < 0 || written as usize != bytes.len() {
            return Err(errno);
        }
    }
    Ok(())
}

/// Brings up the loopback interface of a fresh network namespace, so the program can talk
/// to itself over 127.0.0.1 (the host's loopback stays out of reach). Best effort.
pub(super) fn loopback_up() {
    // SAFETY: plain socket and ioctl calls on a request structure laid out as the kernel
    // expects; every descriptor opened is closed.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return;
        }
        let mut request = InterfaceFlagsRequest {
            name: [0; 16],
            flags: 0,
            padding: [0; 22],
        };
        request.name[..2].copy_from_slice(b"lo");
        if libc::ioctl(socket, SIOCGIFFLAGS, &mut request) == 0 {
            request.flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(socket, SIOCSIFFLAGS, &request);
        }
        libc::close(socket);
    }
}

/// The child after `fork`: only async-signal-safe calls, no allocation, no return.
///
/// # Safety
/// Must be called only in the child of `fork`, with `plan` and `fds` prepared before it.
pub(super) unsafe fn child(plan: &ChildPlan, fds: &ChildFds) -> ! {
    let mut report_fd = fds.report;
    // SAFETY (whole block): each call is async-signal-safe and its arguments were prepared
    // before fork and stay alive in this copy of the address space.
    unsafe {
        // A new session makes the child the leader of a new process group whose id is its
        // pid, and drops any controlling terminal.
        if libc::setsid() < 0 {
            fail(report_fd, Stage::Session, last_errno(), 0);
        }
        // Die with the capturing thread; if it is already gone, do not run at all.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != plan.parent {
            libc::_exit(127);
        }
        // Ignored signals and the signal mask survive exec; give the program defaults.
        for signal in 1..=64 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            fail(report_fd, Stage::Signals, last_errno(), 0);
        }

        if plan.isolate_network {
            if libc::unshare(libc::CLONE_NEWNET) == 0 {
                report(report_fd, REPORT_NETWORK_MODE, 1, 0);
            } else {
                let first = last_errno();
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                    fail(report_fd, Stage::Network, first, last_errno());
                }
                // Map the user and group ids to themselves so files keep their owners.
                let maps: [(&[u8], &[u8]); 3] = [
                    (b"/proc/self/setgroups\0", b"deny"),
                    (b"/proc/self/uid_map\0", &plan.uid_map),
                    (b"/proc/self/gid_map\0", &plan.gid_map),
                ];
                for (path, bytes) in maps {
                    if let Err(errno) = write_proc_file(path, bytes) {
                        fail(report_fd, Stage::UserNamespaceMap, errno, 0);
                    }
                }
                report(report_fd, REPORT_NETWORK_MODE, 2, 0);
            }
            loopback_up();
        }

        if libc::chdir(plan.working_directory.as_ptr()) != 0 {
            fail(report_fd, Stage::WorkingDirectory, last_errno(), 0);
        }

        for (from, to) in [(fds.stdin, 0), (fds.stdout, 1), (fds.stderr, 2)] {
            if libc::dup2(from, to) < 0 {
                fail(report_fd, Stage::Stdio, last_errno(), 0);
            }
        }
        if libc::dup2(fds.report, 3) < 0 || libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC) < 0 {
            fail(report_fd, Stage::Stdio, last_errno(), 0);
        }
        report_fd = 3;
        // Nothing of the capturing process (its database, its sockets) reaches the program.
        if libc::close_range(4, libc::c_uint::MAX, 0) != 0 {
            let errno = last_errno();
            if errno != libc::ENOSYS {
                fail(report_fd, Stage::CloseDescriptors, errno, 0);
            }
            for fd in 4..65_536 {
                libc::close(fd);
            }
        }

        for (resource, limit) in &plan.limits {
            if libc::setrlimit(*resource, limit) != 0 {
                fail(report_fd, Stage::Limits, last_errno(), 0);
            }
        }

        // Tracing is what lets the parent read a crash before the signal is delivered; if
        // the system forbids it the program still runs, without fault details.
        if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) != 0 {
            report(report_fd, REPORT_UNTRACED, last_errno(), 0);
        }

        libc::execve(
            plan.program.as_ptr(),
            plan.argv_pointers.as_ptr(),
            plan.envp_pointers.as_ptr(),
        );
        fail(report_fd, Stage::Exec, last_errno(), 0)
    }
}
