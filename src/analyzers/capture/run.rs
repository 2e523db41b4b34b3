//! Runs an approved scenario: its own session and process group, resource limits, a new network
//! namespace, an empty environment, output drained under caps, crash details read under ptrace,
//! and the whole group killed at the end so nothing is left running.
//!
//! The work is blocking and uses two threads: the calling thread forks, traces the program (a
//! ptrace tracer is a thread, so every ptrace request must come from the thread that forked) and
//! reaps it; a scoped helper thread feeds stdin, drains stdout and stderr, and enforces the wall
//! limit and cancellation. The calling thread must stay alive for the whole run, because the
//! program's parent-death signal is tied to it.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::outcome::Capture;
use super::scenario::ApprovedScenario;

/// Why a run could not be carried out. When one of these is returned the program did not get to
/// run, or it was killed and reaped before the error was returned.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Process capture is implemented for Linux only.
    #[error("process capture needs Linux; this build runs on {os}")]
    UnsupportedPlatform {
        /// The operating system of this build.
        os: &'static str,
    },
    /// Cancellation was requested before the program started.
    #[error("the run was cancelled before the program started")]
    CancelledBeforeStart,
    /// The executable is not the file that was checked (replaced or removed since).
    #[error(
        "the approved executable {path} changed after it was checked; check the scenario again"
    )]
    ExecutableChanged {
        /// The resolved executable.
        path: PathBuf,
    },
    /// The scenario asked for no network and no network namespace could be created, so the
    /// program was not started.
    #[error(
        "the program was not started: network isolation is unavailable ({reason}); \
         run rea where unprivileged user namespaces or CAP_SYS_ADMIN are available, or set `network: true` \
         if the policy allows network access"
    )]
    NetworkIsolationUnavailable {
        /// Why the kernel refused, for both attempts.
        reason: String,
    },
    /// A step between `fork` and `exec` failed in the child, so the program was not started.
    #[error("the program was not started: {stage} failed: {source}")]
    ChildSetup {
        /// The step, for example `exec` or `change to the working directory`.
        stage: &'static str,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },
    /// A system call in the capturing process failed.
    #[error("process capture could not {operation}: {source}")]
    System {
        /// What was being done.
        operation: &'static str,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },
}

/// Runs `approved` once and observes it. Setting `cancel` to true kills the process group; the
/// result then says `ended_by: cancelled`.
pub fn run(approved: &ApprovedScenario, cancel: &AtomicBool) -> Result<Capture, CaptureError> {
    #[cfg(target_os = "linux")]
    {
        linux::run(approved, cancel)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (approved, cancel);
        Err(CaptureError::UnsupportedPlatform {
            os: std::env::consts::OS,
        })
    }
}

#[cfg(target_os = "linux")]
pub(crate) mod linux {
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
    use crate::analyzers::capture::cfi::ModuleCache;
    use crate::analyzers::capture::fault::{
        file_offset, mapping_for, parse_maps, static_address_in_file,
    };
    use crate::analyzers::capture::outcome::{
        Capture, CapturedStream, EndedBy, Fault, LeaderMemory, NetworkIsolation, OutputOverflow,
        SignalId, Termination, hex,
    };
    use crate::analyzers::capture::scenario::{ApprovedScenario, FileIdentity};
    use crate::analyzers::capture::tracee::read_crash_state;

    /// Signals whose fatal delivery we describe as a crash.
    const CRASH_SIGNALS: [c_int; 5] = [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
    ];

    /// How long cleanup keeps killing and re-scanning before it reports leftovers.
    const CLEANUP_LIMIT: Duration = Duration::from_secs(2);

    /// How often the I/O thread looks at the cancellation flag when nothing else wakes it.
    const CANCEL_POLL: Duration = Duration::from_millis(20);

    /// Pipe ends are moved to descriptors at or above this, so `dup2` onto 0..=3 in the child
    /// never overwrites one of them.
    const LOWEST_PIPE_FD: c_int = 10;

    /// `SIOCGIFFLAGS` / `SIOCSIFFLAGS` (linux/sockios.h), absent from the libc crate for glibc.
    const SIOCGIFFLAGS: libc::Ioctl = 0x8913;
    const SIOCSIFFLAGS: libc::Ioctl = 0x8914;

    /// `struct ifreq` reduced to the name and the flags member of its union (40 bytes on 64-bit
    /// Linux).
    #[repr(C)]
    struct InterfaceFlagsRequest {
        name: [u8; 16],
        flags: libc::c_short,
        padding: [u8; 22],
    }

    /// Steps of the child between `fork` and `exec`; the number goes over the report pipe.
    #[derive(Clone, Copy)]
    #[repr(i32)]
    enum Stage {
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

    fn stage_name(code: i32) -> &'static str {
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
    const REPORT_NETWORK_MODE: i32 = 0;
    const REPORT_UNTRACED: i32 = 100;

    /// Everything the child needs, prepared before `fork` because the child of a multithreaded
    /// process may only make async-signal-safe calls (no allocation).
    struct ChildPlan {
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
    struct ChildFds {
        stdin: RawFd,
        stdout: RawFd,
        stderr: RawFd,
        report: RawFd,
    }

    fn c_string(bytes: &[u8], what: &'static str) -> Result<CString, CaptureError> {
        CString::new(bytes).map_err(|_| CaptureError::System {
            operation: what,
            source: io::Error::new(io::ErrorKind::InvalidInput, "contains a NUL byte"),
        })
    }

    impl ChildPlan {
        fn new(approved: &ApprovedScenario) -> Result<ChildPlan, CaptureError> {
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
    fn bounded_limit(
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

    fn last_errno() -> i32 {
        io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    /// Writes one 12-byte record to the report pipe. Async-signal-safe.
    fn report(fd: RawFd, tag: i32, a: i32, b: i32) {
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
    fn fail(fd: RawFd, stage: Stage, errno: i32, errno2: i32) -> ! {
        report(fd, stage as i32, errno, errno2);
        // SAFETY: _exit is async-signal-safe and ends the child immediately.
        unsafe { libc::_exit(127) }
    }

    /// Writes `bytes` to a /proc file of the child itself. Async-signal-safe.
    fn write_proc_file(path: &[u8], bytes: &[u8]) -> Result<(), i32> {
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
    fn loopback_up() {
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
    unsafe fn child(plan: &ChildPlan, fds: &ChildFds) -> ! {
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
            if libc::dup2(fds.report, 3) < 0 || libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC) < 0
            {
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
            if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0
            {
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

    /// Kills the program's group; shared by the tracer and the I/O thread. The lock orders a
    /// kill against the reaping of the leader: while the leader is unreaped its pid keeps the
    /// group and session ids from being reused, so `kill(-pgid)` cannot reach a stranger.
    pub(crate) struct Killer {
        leader: libc::pid_t,
        state: Mutex<KillState>,
    }

    struct KillState {
        reaped: bool,
        reason: Option<EndedBy>,
    }

    impl Killer {
        fn new(leader: libc::pid_t) -> Killer {
            Killer {
                leader,
                state: Mutex::new(KillState {
                    reaped: false,
                    reason: None,
                }),
            }
        }

        fn lock(&self) -> MutexGuard<'_, KillState> {
            self.state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        }

        /// Kills every process of the group and session, remembering the first reason given.
        fn kill(&self, reason: EndedBy) {
            let mut state = self.lock();
            if state.reaped {
                return;
            }
            state.reason.get_or_insert(reason);
            kill_group_and_session(self.leader);
        }

        fn reason(&self) -> Option<EndedBy> {
            self.lock().reason
        }
    }

    /// SIGKILLs the process group `leader` and every other process of the session `leader`
    /// (a process can leave the group with `setpgid` but not the session without `setsid`).
    fn kill_group_and_session(leader: libc::pid_t) {
        // SAFETY: kill has no memory effects; an empty group gives ESRCH, which is fine.
        unsafe {
            libc::kill(-leader, libc::SIGKILL);
        }
        for pid in live_members(leader) {
            // SAFETY: as above.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }

    /// Processes, other than zombies, whose process group or session is `leader`.
    pub(crate) fn live_members(leader: libc::pid_t) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut members = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(ids) = parse_stat(&stat)
                && !matches!(ids.state, 'Z' | 'X' | 'x')
                && (ids.group == leader || ids.session == leader)
            {
                members.push(pid);
            }
        }
        members.sort_unstable();
        members
    }

    /// The fields of `/proc/<pid>/stat` that cleanup needs.
    #[derive(Debug, PartialEq, Eq)]
    pub(crate) struct StatIds {
        pub(crate) state: char,
        pub(crate) group: libc::pid_t,
        pub(crate) session: libc::pid_t,
    }

    /// Parses `pid (comm) state ppid pgrp session ...`; `comm` may hold spaces and parentheses,
    /// so fields are counted from the last `)`.
    pub(crate) fn parse_stat(stat: &str) -> Option<StatIds> {
        let after = &stat[stat.rfind(')')? + 1..];
        let mut fields = after.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let _parent = fields.next()?;
        let group = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        Some(StatIds {
            state,
            group,
            session,
        })
    }

    /// Kills and re-scans until no live member of the group or session is left, for at most
    /// `CLEANUP_LIMIT`. Returns the members still alive then.
    fn clean_up(leader: libc::pid_t) -> Vec<u32> {
        let deadline = Instant::now() + CLEANUP_LIMIT;
        loop {
            let members = live_members(leader);
            if members.is_empty() || Instant::now() >= deadline {
                return members;
            }
            kill_group_and_session(leader);
            // Killed processes need a moment to exit; re-scanning at once would only spin.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// One output stream being drained.
    struct Stream {
        fd: Option<OwnedFd>,
        kept: Vec<u8>,
        total: u64,
        cap: u64,
    }

    impl Stream {
        fn new(fd: OwnedFd, cap: u64) -> Stream {
            Stream {
                fd: Some(fd),
                kept: Vec::new(),
                total: 0,
                cap,
            }
        }

        fn truncated(&self) -> bool {
            self.total > self.cap
        }

        /// Reads what is available without blocking (at most `budget` bytes, so timers are
        /// still looked at). Returns whether the stream went past its cap.
        fn drain(&mut self, budget: usize) -> bool {
            let Some(fd) = &self.fd else {
                return false;
            };
            let mut buffer = [0u8; 65_536];
            let mut read_now = 0usize;
            while read_now < budget {
                // SAFETY: reading into a stack buffer of the given length.
                let n =
                    unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
                if n > 0 {
                    let n = n as usize;
                    read_now += n;
                    self.total = self.total.saturating_add(n as u64);
                    let room = usize::try_from(self.cap)
                        .unwrap_or(usize::MAX)
                        .saturating_sub(self.kept.len());
                    self.kept.extend_from_slice(&buffer[..n.min(room)]);
                    continue;
                }
                if n < 0 {
                    match last_errno() {
                        libc::EINTR => continue,
                        libc::EAGAIN => break,
                        _ => {}
                    }
                }
                // End of file, or an error that will not go away.
                self.fd = None;
                break;
            }
            self.truncated()
        }

        fn into_captured(self) -> CapturedStream {
            let truncated = self.truncated();
            CapturedStream::from_bytes(&self.kept, self.total, truncated)
        }
    }

    /// Inputs of the I/O thread.
    struct IoPlan<'a> {
        stdin: Option<OwnedFd>,
        stdin_data: &'a [u8],
        stdout: Stream,
        stderr: Stream,
        wake: OwnedFd,
        overflow: OutputOverflow,
        deadline: Instant,
        cancel: &'a AtomicBool,
        killer: &'a Killer,
    }

    /// Feeds stdin, drains stdout and stderr, and kills the group at the wall limit, on
    /// cancellation or (with `OutputOverflow::Kill`) when a stream passes its cap. Returns when
    /// the tracer writes to the wake pipe, after a last non-blocking drain.
    fn io_loop(mut plan: IoPlan<'_>) -> (Stream, Stream) {
        // A write to a stdin pipe whose reader is gone must give EPIPE here, not a SIGPIPE
        // that could end the whole capturing process.
        // SAFETY: changing this thread's signal mask only.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGPIPE);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        }
        let mut written = 0usize;
        if plan.stdin_data.is_empty() {
            plan.stdin = None;
        }
        let mut timed_out = false;
        let mut cancelled = false;
        let mut output_killed = false;
        loop {
            let mut pollfds = Vec::with_capacity(4);
            pollfds.push(libc::pollfd {
                fd: plan.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            let slots = [
                plan.stdin
                    .as_ref()
                    .map(|fd| (fd.as_raw_fd(), libc::POLLOUT)),
                plan.stdout
                    .fd
                    .as_ref()
                    .map(|fd| (fd.as_raw_fd(), libc::POLLIN)),
                plan.stderr
                    .fd
                    .as_ref()
                    .map(|fd| (fd.as_raw_fd(), libc::POLLIN)),
            ];
            let mut indices = [None; 3];
            for (slot, entry) in slots.iter().enumerate() {
                if let Some((fd, events)) = entry {
                    indices[slot] = Some(pollfds.len());
                    pollfds.push(libc::pollfd {
                        fd: *fd,
                        events: *events,
                        revents: 0,
                    });
                }
            }
            let now = Instant::now();
            let mut timeout = CANCEL_POLL;
            if !timed_out {
                timeout = timeout.min(plan.deadline.saturating_duration_since(now));
            }
            // Round up so a wait never ends just before the deadline and spins.
            let timeout_ms = c_int::try_from(timeout.as_micros().div_ceil(1000)).unwrap_or(20);
            // SAFETY: `pollfds` is a valid array of the length given.
            unsafe {
                libc::poll(
                    pollfds.as_mut_ptr(),
                    pollfds.len() as libc::nfds_t,
                    timeout_ms,
                );
            }

            if !cancelled && plan.cancel.load(Ordering::Relaxed) {
                cancelled = true;
                plan.killer.kill(EndedBy::Cancelled);
            }
            if !timed_out && Instant::now() >= plan.deadline {
                timed_out = true;
                plan.killer.kill(EndedBy::WallTime);
            }

            let ready = |index: Option<usize>| index.is_some_and(|i| pollfds[i].revents != 0);
            if ready(indices[0])
                && let Some(fd) = &plan.stdin
            {
                let rest = &plan.stdin_data[written..];
                // SAFETY: writing from a live slice of the given length.
                let n = unsafe { libc::write(fd.as_raw_fd(), rest.as_ptr().cast(), rest.len()) };
                if n > 0 {
                    written += n as usize;
                    if written >= plan.stdin_data.len() {
                        plan.stdin = None;
                    }
                } else if !matches!(last_errno(), libc::EAGAIN | libc::EINTR) {
                    // The reader is gone (EPIPE) or the pipe broke: stop offering input.
                    plan.stdin = None;
                }
            }
            let budget = 4 << 20;
            let mut over_cap = false;
            if ready(indices[1]) {
                over_cap |= plan.stdout.drain(budget);
            }
            if ready(indices[2]) {
                over_cap |= plan.stderr.drain(budget);
            }
            if over_cap && plan.overflow == OutputOverflow::Kill && !output_killed {
                output_killed = true;
                plan.killer.kill(EndedBy::Output);
            }
            if pollfds[0].revents != 0 {
                // Every process of the run is dead, so what is left in the pipes is all there
                // will be (unless something escaped with setsid; then stop at what is there).
                plan.stdout.drain(usize::MAX);
                plan.stderr.drain(usize::MAX);
                return (plan.stdout, plan.stderr);
            }
        }
    }

    /// What the tracer learned.
    struct Traced {
        status: c_int,
        usage: libc::rusage,
        fault: Option<Fault>,
        leader_memory: Option<LeaderMemory>,
    }

    fn ptrace_continue(pid: libc::pid_t, signal: c_int) {
        // SAFETY: restarting our own tracee; failure (ESRCH when it was just killed) is fine,
        // the wait loop sees its end.
        unsafe {
            libc::ptrace(libc::PTRACE_CONT, pid, 0, signal as usize);
        }
    }

    /// Waits for a state change of `pid` and consumes it, with the resource usage if it ended.
    fn wait_consume(pid: libc::pid_t) -> Result<(c_int, libc::rusage), CaptureError> {
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
    fn trace(pid: libc::pid_t, traced: bool, killer: &Killer) -> Result<Traced, CaptureError> {
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
    fn pick_fault(status: c_int, faults: &mut BTreeMap<(c_int, bool), Fault>) -> Option<Fault> {
        if !libc::WIFSIGNALED(status) {
            return None;
        }
        let signal = libc::WTERMSIG(status);
        faults
            .remove(&(signal, true))
            .or_else(|| faults.remove(&(signal, false)))
    }

    /// Builds the fault record at a crash signal's delivery stop.
    fn read_fault(
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
    fn read_leader_memory(pid: libc::pid_t) -> Option<LeaderMemory> {
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

    fn millis(time: libc::timeval) -> u64 {
        let seconds = u64::try_from(time.tv_sec).unwrap_or(0);
        let micros = u64::try_from(time.tv_usec).unwrap_or(0);
        seconds.saturating_mul(1000).saturating_add(micros / 1000)
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
        let metadata = std::fs::metadata(approved.executable()).map_err(|_| {
            CaptureError::ExecutableChanged {
                path: approved.executable().to_path_buf(),
            }
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
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::collections::BTreeMap;
    use std::net::TcpListener;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use object::{Object as _, ObjectSymbol as _};

    use super::linux::{live_members, parse_stat};
    use super::*;
    use crate::analyzers::capture::outcome::{
        EndedBy, ExecutableFormat, NetworkIsolation, OutputOverflow, StreamEncoding, Termination,
    };
    use crate::analyzers::capture::policy::Policy;
    use crate::analyzers::capture::scenario::{Refusal, Scenario, check};

    fn fixtures() -> PathBuf {
        std::env::var("REA_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
    }

    /// A temporary directory that is both an executable root and a working-directory root.
    struct Lab {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    impl Lab {
        fn new() -> Lab {
            let dir = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(dir.path()).unwrap();
            Lab { _dir: dir, root }
        }

        /// Compiles a C program into the lab and returns its path.
        fn compile(&self, name: &str, source: &str) -> PathBuf {
            self.compile_with(name, source, &[])
        }

        /// Compiles with extra compiler flags.
        fn compile_with(&self, name: &str, source: &str, flags: &[&str]) -> PathBuf {
            let source_path = self.root.join(format!("{name}.c"));
            std::fs::write(&source_path, source).unwrap();
            let binary = self.root.join(name);
            let output = std::process::Command::new("cc")
                .args(["-O0", "-g"])
                .args(flags)
                .arg("-o")
                .arg(&binary)
                .arg(&source_path)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "cc failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            binary
        }

        fn policy(&self) -> Policy {
            Policy {
                enabled: true,
                executable_roots: vec![self.root.clone(), PathBuf::from("/usr/bin")],
                working_directory_roots: vec![self.root.clone()],
                allowed_environment: vec!["LANG".to_owned()],
                ..Policy::default()
            }
        }

        fn scenario(&self, executable: &Path, arguments: &[&str]) -> Scenario {
            Scenario {
                approved: true,
                executable: executable.to_path_buf(),
                arguments: arguments.iter().map(|a| (*a).to_owned()).collect(),
                working_directory: self.root.clone(),
                environment: BTreeMap::new(),
                stdin: None,
                stdin_base64: None,
                wall_time_ms: Some(20_000),
                cpu_time_ms: None,
                memory_bytes: None,
                stdout_cap_bytes: None,
                stderr_cap_bytes: None,
                max_processes: None,
                output_overflow: OutputOverflow::Kill,
                network: false,
                core_dumps: false,
            }
        }

        fn marker_program(&self) -> PathBuf {
            self.compile(
                "marker",
                "#include <fcntl.h>\n\
                 int main(int argc, char **argv) {\n\
                   return argc < 2 || open(argv[1], O_CREAT | O_WRONLY, 0644) < 0;\n\
                 }\n",
            )
        }
    }

    fn run_ok(policy: &Policy, scenario: &Scenario) -> Capture {
        let approved = check(policy, scenario).unwrap();
        run(&approved, &AtomicBool::new(false)).unwrap()
    }

    fn exited(code: i32) -> Termination {
        Termination::Exited { code }
    }

    fn signal_of(capture: &Capture) -> Option<i32> {
        match &capture.termination {
            Termination::Signaled { signal, .. } => Some(signal.number),
            Termination::Exited { .. } => None,
        }
    }

    /// Whether a process is gone (or a zombie, which runs nothing).
    fn is_dead(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => parse_stat(&stat).is_none_or(|ids| matches!(ids.state, 'Z' | 'X')),
        }
    }

    #[test]
    fn shell_exit_code() {
        let lab = Lab::new();
        let policy = lab.policy();
        let capture = run_ok(
            &policy,
            &lab.scenario(Path::new("/bin/sh"), &["-c", "exit 3"]),
        );
        assert_eq!(capture.termination, exited(3));
        assert_eq!(capture.ended_by, EndedBy::None);
        // Root gets a network namespace; other users get one inside a user namespace.
        assert_ne!(capture.network_isolation, NetworkIsolation::NotIsolated);
        assert!(capture.traced);
        assert!(capture.leftover_processes.is_empty());
        assert!(capture.fault.is_none());
        assert_eq!(capture.scenario.executable, PathBuf::from("/bin/sh"));
        assert!(capture.scenario.resolved_executable.is_absolute());
        assert!(matches!(
            capture.scenario.format,
            ExecutableFormat::Elf { .. }
        ));
        assert_eq!(capture.stdout.data, "");
    }

    #[test]
    fn stdin_environment_and_streams() {
        let lab = Lab::new();
        let policy = lab.policy();
        let mut scenario = lab.scenario(Path::new("/usr/bin/env"), &[]);
        scenario
            .environment
            .insert("LANG".to_owned(), "C.UTF-8".to_owned());
        // env prints the whole environment: only the allowed variable is there.
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.stdout.data, "LANG=C.UTF-8\n");
        assert_eq!(capture.scenario.environment_names, vec!["LANG".to_owned()]);
        let echo = serde_json::to_string(&capture.scenario).unwrap();
        assert!(!echo.contains("C.UTF-8"), "environment values are redacted");

        let mut scenario = lab.scenario(
            Path::new("/bin/sh"),
            &["-c", "read line; echo \"got $line\"; echo oops >&2; exit 5"],
        );
        scenario.stdin = Some("hello\n".to_owned());
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.termination, exited(5));
        assert_eq!(capture.stdout.data, "got hello\n");
        assert_eq!(capture.stderr.data, "oops\n");
        assert_eq!(capture.scenario.stdin_bytes, 6);

        // Binary stdin comes back as base64 through cat.
        let mut scenario = lab.scenario(Path::new("/usr/bin/cat"), &[]);
        scenario.stdin_base64 = Some("AP8BAg==".to_owned());
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.stdout.encoding, StreamEncoding::Base64);
        assert_eq!(
            capture.stdout.bytes().unwrap(),
            vec![0x00, 0xff, 0x01, 0x02]
        );
    }

    /// The address of `name` and its size, from the ELF symbol table.
    fn symbol_range(program: &Path, name: &str) -> (u64, u64) {
        let data = std::fs::read(program).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let symbol = file
            .symbols()
            .find(|s| s.name() == Ok(name))
            .unwrap_or_else(|| panic!("{name} in the symbol table"));
        (symbol.address(), symbol.size())
    }

    fn parse_hex(text: &str) -> u64 {
        u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
    }

    #[test]
    fn segfault_in_named_function_is_located() {
        const SOURCE: &str = "#include <stdio.h>\n\
             __attribute__((noinline)) void crash_here(volatile int *p) { *p = 42; }\n\
             int main(void) { puts(\"about to crash\"); fflush(stdout); crash_here(0); return 0; }\n";
        let lab = Lab::new();
        // A position-independent build (file offsets equal virtual addresses in its text
        // segment) and a fixed-address one (they differ by 0x400000), so the PT_LOAD
        // conversion is really exercised.
        for (name, flags) in [("crash_pie", &[][..]), ("crash_fixed", &["-no-pie"][..])] {
            let program = lab.compile_with(name, SOURCE, flags);
            let capture = run_ok(&lab.policy(), &lab.scenario(&program, &[]));
            let Termination::Signaled { signal, .. } = &capture.termination else {
                panic!("not signaled: {:?}", capture.termination);
            };
            assert_eq!(signal.number, 11);
            assert_eq!(signal.name, "SIGSEGV");
            assert_eq!(capture.stdout.data, "about to crash\n");
            assert_eq!(capture.ended_by, EndedBy::None);
            let fault = capture.fault.as_ref().expect("fault details");
            assert_eq!(fault.signal.number, 11);
            assert_eq!(fault.code, 1, "SEGV_MAPERR");
            assert_eq!(fault.address.as_deref(), Some("0x0"));
            assert_eq!(fault.module.as_deref(), Some(program.as_path()));
            let static_address = parse_hex(fault.static_address.as_deref().unwrap());
            let (start, size) = symbol_range(&program, "crash_here");
            assert!(
                start <= static_address && static_address < start + size,
                "{name}: static address {static_address:#x} outside crash_here {start:#x}+{size:#x}"
            );
            if name == "crash_fixed" {
                let offset = parse_hex(fault.module_offset.as_deref().unwrap());
                assert_ne!(
                    offset, static_address,
                    "non-PIE offsets differ from addresses"
                );
                // Without relocation the run-time address is the static one.
                assert_eq!(parse_hex(&fault.instruction_pointer), static_address);
            }
            let memory = capture.leader_memory.as_ref().expect("exit stop memory");
            assert!(memory.peak_rss_bytes > 0);
            assert!(memory.peak_virtual_bytes >= memory.peak_rss_bytes);
            let report = crate::analyzers::capture::render_report(&capture);
            assert!(report.contains("SIGSEGV"), "{report}");
            assert!(
                report.contains(fault.static_address.as_deref().unwrap()),
                "{report}"
            );
        }
    }

    #[test]
    fn abort_reports_libc_and_no_data_address() {
        let lab = Lab::new();
        let program = lab.compile(
            "abort",
            "#include <stdlib.h>\n\
             __attribute__((noinline)) void abort_here(void) { abort(); }\n\
             int main(void) { abort_here(); return 0; }\n",
        );
        let capture = run_ok(&lab.policy(), &lab.scenario(&program, &[]));
        assert_eq!(signal_of(&capture), Some(6));
        let fault = capture.fault.as_ref().expect("fault details");
        assert_eq!(fault.signal.name, "SIGABRT");
        assert!(fault.code <= 0, "sent by a process, not the kernel");
        assert_eq!(fault.address, None);
        let module = fault.module.as_ref().expect("module");
        assert!(
            module.to_string_lossy().contains("libc"),
            "abort raises inside libc, got {}",
            module.display()
        );
        assert!(fault.static_address.is_some());
    }

    #[test]
    fn wall_limit_kills_the_whole_group() {
        let lab = Lab::new();
        let program = lab.compile(
            "forker",
            "#include <stdio.h>\n#include <unistd.h>\n\
             int main(void) {\n\
               printf(\"pgid %d\\n\", (int)getpgrp()); fflush(stdout);\n\
               for (int i = 0; i < 3; i++) {\n\
                 pid_t pid = fork();\n\
                 if (pid == 0) { if (i == 2) setpgid(0, 0); for (;;) pause(); }\n\
                 printf(\"child %d\\n\", (int)pid); fflush(stdout);\n\
               }\n\
               for (;;) pause();\n\
             }\n",
        );
        let mut scenario = lab.scenario(&program, &[]);
        scenario.wall_time_ms = Some(300);
        let started = Instant::now();
        let capture = run_ok(&lab.policy(), &scenario);
        let elapsed = started.elapsed();
        assert_eq!(capture.ended_by, EndedBy::WallTime);
        assert_eq!(signal_of(&capture), Some(9));
        assert!(capture.wall_time_ms >= 300, "{}", capture.wall_time_ms);
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert!(capture.leftover_processes.is_empty());

        let mut lines = capture.stdout.data.lines();
        let pgid: i32 = lines
            .next()
            .and_then(|l| l.strip_prefix("pgid "))
            .unwrap()
            .parse()
            .unwrap();
        let children: Vec<u32> = lines
            .filter_map(|l| l.strip_prefix("child "))
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(children.len(), 3, "{}", capture.stdout.data);
        assert!(live_members(pgid).is_empty(), "{:?}", live_members(pgid));
        for child in children {
            assert!(is_dead(child), "child {child} still runs");
        }
    }

    #[test]
    fn hundred_megabytes_are_capped() {
        let lab = Lab::new();
        let program = lab.compile(
            "bigout",
            "#include <string.h>\n#include <unistd.h>\n\
             int main(void) {\n\
               static char buf[65536]; memset(buf, 'A', sizeof buf);\n\
               long left = 100000000;\n\
               while (left > 0) {\n\
                 long n = left < (long)sizeof buf ? left : (long)sizeof buf;\n\
                 ssize_t w = write(1, buf, n); if (w <= 0) return 1; left -= w;\n\
               }\n\
               return 0;\n\
             }\n",
        );
        let policy = lab.policy();
        let mut scenario = lab.scenario(&program, &[]);
        scenario.stdout_cap_bytes = Some(1 << 20);

        let started = Instant::now();
        let killed = run_ok(&policy, &scenario);
        let kill_time = started.elapsed();
        assert_eq!(killed.ended_by, EndedBy::Output);
        assert_eq!(signal_of(&killed), Some(9));
        assert!(killed.stdout.truncated);
        assert_eq!(killed.stdout.captured_bytes, 1 << 20);
        assert!(killed.stdout.total_bytes > 1 << 20);
        assert!(killed.stdout.data.bytes().all(|b| b == b'A'));
        assert!(kill_time < Duration::from_secs(5), "{kill_time:?}");

        scenario.output_overflow = OutputOverflow::Discard;
        let started = Instant::now();
        let drained = run_ok(&policy, &scenario);
        let drain_time = started.elapsed();
        assert_eq!(drained.termination, exited(0));
        assert_eq!(drained.ended_by, EndedBy::None);
        assert!(drained.stdout.truncated);
        assert_eq!(drained.stdout.captured_bytes, 1 << 20);
        assert_eq!(drained.stdout.total_bytes, 100_000_000);
        assert!(drain_time < Duration::from_secs(10), "{drain_time:?}");
        eprintln!("100 MB: killed at cap in {kill_time:?}, drained to the end in {drain_time:?}");
    }

    #[test]
    fn network_is_isolated_unless_allowed() {
        let lab = Lab::new();
        let program = lab.compile(
            "connect",
            "#include <arpa/inet.h>\n#include <errno.h>\n#include <netinet/in.h>\n\
             #include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/socket.h>\n\
             int main(int argc, char **argv) {\n\
               int s = socket(AF_INET, SOCK_STREAM, 0);\n\
               struct sockaddr_in a; memset(&a, 0, sizeof a);\n\
               a.sin_family = AF_INET; a.sin_port = htons(atoi(argv[1]));\n\
               a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n\
               if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) { puts(\"connected\"); return 0; }\n\
               printf(\"connect failed: %s\\n\", strerror(errno)); return 2;\n\
             }\n",
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();

        let mut policy = lab.policy();
        let isolated = run_ok(&policy, &lab.scenario(&program, &[&port]));
        assert_ne!(isolated.network_isolation, NetworkIsolation::NotIsolated);
        assert_eq!(isolated.termination, exited(2), "{}", isolated.stdout.data);
        assert!(isolated.stdout.data.starts_with("connect failed"));

        let mut open = lab.scenario(&program, &[&port]);
        open.network = true;
        assert!(matches!(
            check(&policy, &open),
            Err(Refusal::NetworkNotAllowed)
        ));
        policy.allow_network = true;
        let connected = run_ok(&policy, &open);
        assert_eq!(connected.network_isolation, NetworkIsolation::NotIsolated);
        assert_eq!(
            connected.termination,
            exited(0),
            "{}",
            connected.stdout.data
        );
        drop(listener);
    }

    #[test]
    fn refusals_start_nothing() {
        let lab = Lab::new();
        let marker_program = lab.marker_program();
        let policy = lab.policy();
        let marker = lab.root.join("ran");
        let marker_arg = marker.to_str().unwrap();
        let scenario = lab.scenario(&marker_program, &[marker_arg]);

        // The program itself works, so a missing marker below means it was never started.
        let control_marker = lab.root.join("control");
        run_ok(
            &policy,
            &lab.scenario(&marker_program, &[control_marker.to_str().unwrap()]),
        );
        assert!(control_marker.exists());

        let disabled = Policy {
            enabled: false,
            ..policy.clone()
        };
        assert!(matches!(
            check(&disabled, &scenario),
            Err(Refusal::Disabled)
        ));

        let mut unapproved = scenario.clone();
        unapproved.approved = false;
        assert!(matches!(
            check(&policy, &unapproved),
            Err(Refusal::NotApproved)
        ));
        let missing: Scenario = serde_json::from_value(serde_json::json!({
            "executable": marker_program,
            "working_directory": lab.root,
            "arguments": [marker_arg],
        }))
        .unwrap();
        assert!(matches!(
            check(&policy, &missing),
            Err(Refusal::NotApproved)
        ));

        let outside = Lab::new();
        let outside_program = outside.marker_program();
        let error = check(&policy, &lab.scenario(&outside_program, &[marker_arg])).unwrap_err();
        assert!(
            matches!(error, Refusal::ExecutableOutsideRoots { .. }),
            "{error}"
        );
        // A symlink inside the root does not lead out of it.
        let link = lab.root.join("link");
        std::os::unix::fs::symlink(&outside_program, &link).unwrap();
        let error = check(&policy, &lab.scenario(&link, &[marker_arg])).unwrap_err();
        assert!(
            matches!(error, Refusal::ExecutableOutsideRoots { .. }),
            "{error}"
        );
        // Nor does `..`.
        let dotdot = lab
            .root
            .join("..")
            .join(outside.root.file_name().unwrap())
            .join("marker");
        let error = check(&policy, &lab.scenario(&dotdot, &[marker_arg])).unwrap_err();
        assert!(
            matches!(error, Refusal::ExecutableOutsideRoots { .. }),
            "{error}"
        );

        let mut elsewhere = scenario.clone();
        elsewhere.working_directory = outside.root.clone();
        assert!(matches!(
            check(&policy, &elsewhere),
            Err(Refusal::WorkingDirectoryOutsideRoots { .. })
        ));

        let mut environment = scenario.clone();
        environment
            .environment
            .insert("LD_PRELOAD".to_owned(), "/tmp/evil.so".to_owned());
        let error = check(&policy, &environment).unwrap_err();
        assert!(
            matches!(&error, Refusal::EnvironmentNotAllowed { name } if name == "LD_PRELOAD"),
            "{error}"
        );

        let mut greedy = scenario.clone();
        greedy.wall_time_ms = Some(policy.max_wall_time_ms + 1);
        assert!(matches!(
            check(&policy, &greedy),
            Err(Refusal::LimitOutOfRange {
                limit: "wall_time_ms",
                ..
            })
        ));
        let mut zero = scenario.clone();
        zero.memory_bytes = Some(0);
        assert!(matches!(
            check(&policy, &zero),
            Err(Refusal::LimitOutOfRange { .. })
        ));

        let mut relative = scenario.clone();
        relative.executable = PathBuf::from("marker");
        assert!(matches!(
            check(&policy, &relative),
            Err(Refusal::RelativePath {
                field: "executable",
                ..
            })
        ));

        let mut both = scenario.clone();
        both.stdin = Some("a".to_owned());
        both.stdin_base64 = Some("YQ==".to_owned());
        assert!(matches!(
            check(&policy, &both),
            Err(Refusal::InvalidStdin { .. })
        ));

        assert!(!marker.exists(), "a refused scenario ran");
    }

    #[test]
    fn foreign_formats_are_unsupported() {
        let fixtures = fixtures();
        let lab = Lab::new();
        let mut policy = lab.policy();
        policy.executable_roots.push(fixtures.clone());
        for (path, expected) in [
            ("fsevents/package/fsevents.node", "Mach-O"),
            (
                "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
                "PE",
            ),
            ("7zip-bin-5.2.0/package/mac/arm64/7za", "Mach-O"),
        ] {
            let path = fixtures.join(path);
            let error = check(&policy, &lab.scenario(&path, &[])).unwrap_err();
            assert!(
                matches!(&error, Refusal::Unsupported { reason, .. } if reason.contains(expected)),
                "{}: {error}",
                path.display()
            );
        }
        // A foreign-architecture ELF, made by rewriting e_machine of a copy of a host ELF.
        let mut elf = std::fs::read("/usr/bin/true").unwrap();
        elf[18..20].copy_from_slice(&183u16.to_le_bytes());
        let foreign = lab.root.join("foreign");
        std::fs::write(&foreign, &elf).unwrap();
        make_executable(&foreign);
        let error = check(&policy, &lab.scenario(&foreign, &[])).unwrap_err();
        assert!(
            matches!(&error, Refusal::Unsupported { reason, .. } if reason.contains("AArch64")),
            "{error}"
        );
    }

    fn make_executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn scripts_run_when_their_interpreter_is_allowed() {
        let lab = Lab::new();
        let policy = lab.policy();
        let script = lab.root.join("hello.sh");
        std::fs::write(&script, "#!/bin/sh\necho \"script $1\"\n").unwrap();
        make_executable(&script);
        let capture = run_ok(&policy, &lab.scenario(&script, &["ok"]));
        assert_eq!(capture.stdout.data, "script ok\n");
        assert!(matches!(
            capture.scenario.format,
            ExecutableFormat::Script { .. }
        ));

        let elsewhere = Lab::new();
        let interpreter = elsewhere.root.join("sh");
        std::fs::copy("/bin/sh", &interpreter).unwrap();
        let bad = lab.root.join("bad.sh");
        std::fs::write(&bad, format!("#!{}\necho no\n", interpreter.display())).unwrap();
        make_executable(&bad);
        let error = check(&policy, &lab.scenario(&bad, &[])).unwrap_err();
        assert!(matches!(error, Refusal::Unsupported { .. }), "{error}");
    }

    #[test]
    fn cancellation_kills_the_group() {
        let lab = Lab::new();
        let program = lab.compile(
            "pauser",
            "#include <fcntl.h>\n#include <unistd.h>\n\
             int main(int argc, char **argv) { close(open(argv[1], O_CREAT | O_WRONLY, 0644)); for (;;) pause(); }\n",
        );
        let started = lab.root.join("started");
        let approved = check(
            &lab.policy(),
            &lab.scenario(&program, &[started.to_str().unwrap()]),
        )
        .unwrap();
        let cancel = AtomicBool::new(false);
        let capture = std::thread::scope(|scope| {
            let runner = scope.spawn(|| run(&approved, &cancel));
            // Cancel once the program shows it is running.
            let give_up = Instant::now() + Duration::from_secs(15);
            while !started.exists() && Instant::now() < give_up {
                std::thread::yield_now();
            }
            cancel.store(true, Ordering::Relaxed);
            runner.join().unwrap()
        })
        .unwrap();
        assert_eq!(capture.ended_by, EndedBy::Cancelled);
        assert_eq!(signal_of(&capture), Some(9));
        assert!(capture.leftover_processes.is_empty());

        let error = run(&approved, &AtomicBool::new(true)).unwrap_err();
        assert!(matches!(error, CaptureError::CancelledBeforeStart));
    }

    #[test]
    fn cpu_and_memory_limits_are_named() {
        let lab = Lab::new();
        let policy = lab.policy();
        let spin = lab.compile(
            "spin",
            "int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n",
        );
        let mut scenario = lab.scenario(&spin, &[]);
        scenario.cpu_time_ms = Some(300);
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.limits.cpu_time_limit_seconds, 1);
        assert_eq!(capture.ended_by, EndedBy::CpuTime);
        assert_eq!(signal_of(&capture), Some(libc::SIGXCPU));
        assert!(capture.cpu_time_ms >= 900, "{}", capture.cpu_time_ms);

        let hog = lab.compile(
            "hog",
            "#include <stdio.h>\n#include <stdlib.h>\n\
             int main(void) { for (;;) { if (!malloc(1 << 20)) { fputs(\"out of memory\\n\", stderr); return 3; } } }\n",
        );
        let mut scenario = lab.scenario(&hog, &[]);
        scenario.memory_bytes = Some(64 << 20);
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.termination, exited(3));
        assert_eq!(capture.stderr.data, "out of memory\n");
        assert_eq!(capture.ended_by, EndedBy::Memory);
    }

    #[test]
    fn captures_of_the_same_program_compare_equal() {
        let lab = Lab::new();
        let policy = lab.policy();
        let scenario = lab.scenario(
            Path::new("/bin/sh"),
            &["-c", "echo pid=$$; echo done >&2; exit 4"],
        );
        let first = run_ok(&policy, &scenario);
        let second = run_ok(&policy, &scenario);
        use crate::analyzers::capture::compare::{
            BuiltinRule, NormalizationRule, Verdict, compare,
        };
        let raw = compare(&first, &second, &[]);
        // Each run is pid 1 of nothing in particular, but pids differ between runs.
        assert_eq!(raw.exit_status.verdict, Verdict::Equal);
        assert_eq!(raw.stderr.verdict, Verdict::Equal);
        let normalized = compare(
            &first,
            &second,
            &[NormalizationRule::Builtin(BuiltinRule::Pids)],
        );
        assert_eq!(normalized.verdict, Verdict::Equal, "{normalized:?}");
        // Apart from times, the two results are identical: nothing run-specific is recorded.
        let strip = |c: &Capture| {
            let mut c = c.clone();
            c.wall_time_ms = 0;
            c.user_cpu_time_ms = 0;
            c.system_cpu_time_ms = 0;
            c.cpu_time_ms = 0;
            c.peak_rss_bytes = 0;
            c.leader_memory = None;
            c.stdout.data = String::new();
            c
        };
        assert_eq!(strip(&first), strip(&second));
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let ids = parse_stat("1234 (a (b) c) S 1 777 888 0 -1 4194560 ...").unwrap();
        assert_eq!(ids.state, 'S');
        assert_eq!(ids.group, 777);
        assert_eq!(ids.session, 888);
        assert!(parse_stat("garbage").is_none());
    }
}
