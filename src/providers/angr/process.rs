//! The worker process: started with limits (address space, no core dumps), in a process group of
//! its own, killed with its parent; spoken to one line at a time with a deadline and a reply
//! cap; killed on drop, so none outlives the session that started it.

use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ExitStatus};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::protocol::{self, Frame};
use crate::providers::decompile::DecompileError;

const PROVIDER: &str = super::PROVIDER_ID;

/// Longest wait, after the worker's group was killed, for its stderr to be read to the end.
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// How often a request in progress asks whether its caller wants it stopped.
const STOP_POLL: Duration = Duration::from_millis(50);

/// How long an interrupted worker has to say it stopped before it is interrupted again: the
/// first SIGINT can land where Python drops the exception it raises (a finaliser, a callback
/// from C), and a pass can run for seconds before the next progress callback looks again.
const INTERRUPT_AGAIN: Duration = Duration::from_millis(500);

/// Most bytes of the worker's stderr kept for an error message.
const STDERR_TAIL: usize = 8 * 1024;

/// The prefix of a worker script directory's name: `rea-angr-<server pid>-…`.
const SCRIPT_DIR_PREFIX: &str = "rea-angr-";

/// A private directory holding the worker script, removed as soon as the worker has read the
/// script (see [`Process::script_read`]), else on drop. Removed that early, it outlives no server
/// however the server ends (stdin closed, SIGTERM, SIGINT, SIGKILL); one left by a server killed
/// while its worker was starting is removed by the next server's first worker.
struct ScriptDir {
    dir: PathBuf,
    script: PathBuf,
}

/// Removes, once per process, the script directories in `base` of servers that are no longer
/// running: the name carries the server's pid, and only this user's directories are touched.
fn remove_stale_script_dirs(base: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| remove_stale_in(base));
}

fn remove_stale_in(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRIPT_DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid > 0)
        else {
            continue;
        };
        // A live process with that pid (ours or another's, reused) keeps its directory.
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let mine =
            std::fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if gone && mine {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl ScriptDir {
    /// Writes the embedded script into a fresh directory only this user can enter; `mkdir`
    /// fails on an existing name, so nothing else can have placed a file there.
    fn create(text: &str) -> Result<ScriptDir, DecompileError> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let io = |source| DecompileError::Io {
            provider: PROVIDER,
            operation: "write the worker script",
            source,
        };
        let base = std::env::temp_dir();
        remove_stale_script_dirs(&base);
        let mut attempt = 0;
        loop {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let dir = base.join(format!(
                "{SCRIPT_DIR_PREFIX}{}-{}-{nanos:08x}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    let script = dir.join("rea_angr_worker.py");
                    let written = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&script)
                        .and_then(|mut f| f.write_all(text.as_bytes()));
                    if let Err(e) = written {
                        let _ = std::fs::remove_dir_all(&dir);
                        return Err(io(e));
                    }
                    return Ok(ScriptDir { dir, script });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                    attempt += 1;
                }
                Err(e) => return Err(io(e)),
            }
        }
    }
}

impl ScriptDir {
    fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for ScriptDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// What the keeper thread hands back once the child runs.
type Pipes = (
    ChildStdin,
    std::process::ChildStdout,
    std::process::ChildStderr,
    u32,
);

/// A running worker.
pub(crate) struct Process {
    stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Frame>,
    pid: libc::pid_t,
    /// Tells the keeper to reap the child (after it was killed or has ended).
    release: Option<mpsc::Sender<()>>,
    /// The thread that started the child and reaps it: the parent-death signal is tied to the
    /// thread that forked, so that thread lives exactly as long as the child.
    keeper: Option<std::thread::JoinHandle<Option<ExitStatus>>>,
    status: Option<ExitStatus>,
    cancel_grace: Duration,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Ends (disconnects) when the stderr reader has read to the end of the pipe.
    stderr_done: mpsc::Receiver<()>,
    script: ScriptDir,
}

/// Limits the worker process runs under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcessLimits {
    /// `RLIMIT_AS` of the worker, in bytes.
    pub memory_bytes: u64,
    /// Longest reply line, in bytes.
    pub reply_cap: usize,
    /// Longest wait, after the worker was interrupted, for the reply saying it stopped.
    pub cancel_grace: Duration,
}

impl Process {
    /// Starts `python` on the embedded worker script with `document` readable on descriptor 3.
    pub(crate) fn spawn(
        python: &Path,
        script: &str,
        document: &[u8],
        limits: ProcessLimits,
    ) -> Result<Process, DecompileError> {
        spawn_linux(python, script, document, limits)
    }

    /// Sends one request line and waits for its reply.
    pub(crate) fn request(
        &mut self,
        line: &[u8],
        timeout: Duration,
        phase: &'static str,
        reply_cap: usize,
    ) -> Result<Vec<u8>, DecompileError> {
        self.call(line, timeout, phase, reply_cap, &mut |_| {}, &|| false)
    }

    /// Sends one request line and waits for its reply, handing the worker's progress lines to
    /// `progress` as they come. Once `stop` says so the worker is interrupted (SIGINT): the
    /// reply it then gives is returned as it is (a worker that stopped says `cancelled`), and
    /// one that does not come within the `cancel_grace` of its limits kills it.
    pub(crate) fn call(
        &mut self,
        line: &[u8],
        timeout: Duration,
        phase: &'static str,
        reply_cap: usize,
        progress: &mut dyn FnMut(protocol::Progress),
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<u8>, DecompileError> {
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(line).and_then(|()| stdin.flush()),
            None => Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
        };
        if written.is_err() {
            // A worker that cannot read its requests has ended or is ending.
            return Err(self.crashed());
        }
        self.reply(timeout, phase, reply_cap, progress, stop)
    }

    /// Waits for the reply to the request last sent: see [`Process::call`].
    pub(crate) fn reply(
        &mut self,
        timeout: Duration,
        phase: &'static str,
        reply_cap: usize,
        progress: &mut dyn FnMut(protocol::Progress),
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<u8>, DecompileError> {
        let deadline = Instant::now() + timeout;
        let mut interrupted: Option<Instant> = None;
        let mut last_interrupt = Instant::now();
        loop {
            let again = interrupted.is_some() && last_interrupt.elapsed() >= INTERRUPT_AGAIN;
            if again || (interrupted.is_none() && stop()) {
                // SAFETY: plain syscall; the child is not reaped before `kill` releases it, so
                // its pid cannot name another process. A SIGINT that reaches the worker once it
                // has replied finds it idle, and it ignores it.
                unsafe {
                    libc::kill(self.pid, libc::SIGINT);
                }
                last_interrupt = Instant::now();
                interrupted.get_or_insert(last_interrupt);
            }
            let until = interrupted.map_or(deadline, |at| (at + self.cancel_grace).min(deadline));
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.kill();
                return Err(match interrupted {
                    Some(_) => DecompileError::Cancelled {
                        provider: PROVIDER,
                        kept: false,
                    },
                    None => DecompileError::Timeout {
                        provider: PROVIDER,
                        phase,
                        limit: timeout,
                    },
                });
            }
            match self.frames.recv_timeout(left.min(STOP_POLL)) {
                Ok(Frame::Line(line)) => match protocol::progress(&line) {
                    Some(p) => progress(p),
                    None => return Ok(line),
                },
                Ok(Frame::TooLong) => {
                    self.kill();
                    return Err(DecompileError::OutputLimit {
                        provider: PROVIDER,
                        limit: reply_cap,
                    });
                }
                Ok(Frame::End) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.crashed());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Kills the worker and says how it had ended.
    fn crashed(&mut self) -> DecompileError {
        // Give an exiting process a moment to be reaped with its real status.
        self.kill();
        let status = self
            .status
            .map(describe)
            .unwrap_or_else(|| "no exit status".into());
        // The worker's group is dead, so its stderr reaches its end: wait for the reader to
        // take what the worker wrote last (its traceback), within a bound.
        let _ = self.stderr_done.recv_timeout(STDERR_DRAIN);
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        DecompileError::Crashed {
            provider: PROVIDER,
            status,
            stderr: last_lines(&String::from_utf8_lossy(&stderr), 6),
        }
    }

    /// Kills the worker's process group and reaps the worker. Idempotent.
    pub(crate) fn kill(&mut self) {
        self.stdin = None;
        let Some(keeper) = self.keeper.take() else {
            return;
        };
        // SAFETY: plain syscall. The child is not reaped until `release` is sent below, so its
        // pid, which is also its process group id, cannot name another process yet.
        unsafe {
            libc::killpg(self.pid, libc::SIGKILL);
        }
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
        self.status = keeper.join().ok().flatten();
    }

    /// The worker's process id (its process group id too).
    pub(crate) fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

impl Process {
    /// The worker has read its script (it wrote its first line): the script's directory goes
    /// now, so nothing of this worker is left on disk whatever ends the server.
    pub(crate) fn script_read(&self) {
        self.script.remove();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(libc::SIGKILL)) => {
            "killed by SIGKILL (its memory limit, or the system's out-of-memory killer)".into()
        }
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A memory file holding `bytes`, positioned at its start, closed on exec.
fn memory_file(bytes: &[u8]) -> Result<std::fs::File, DecompileError> {
    use std::io::{Seek, SeekFrom};
    use std::os::fd::FromRawFd;
    let io = |source| DecompileError::Io {
        provider: PROVIDER,
        operation: "hand the document to the worker",
        source,
    };
    // SAFETY: a NUL-terminated name and valid flags; the descriptor is owned by the File.
    let fd = unsafe { libc::memfd_create(c"rea-angr-document".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(bytes).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    Ok(file)
}

fn spawn_linux(
    python: &Path,
    script: &str,
    document: &[u8],
    limits: ProcessLimits,
) -> Result<Process, DecompileError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let script = ScriptDir::create(script)?;
    let memory = memory_file(document)?;
    let document_fd = memory.as_raw_fd();
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    let memory_limit = limits.memory_bytes;
    let mut command = Command::new(python);
    // -s: no user site-packages (discovery did not look there either); -B: no bytecode files
    // written beside angr's sources. The environment is rea's own, none of the caller's
    // PYTHON* variables: a fixed hash seed keeps the set orders angr's output depends on, so
    // the same procedure reads the same from one worker to the next.
    command
        .arg("-s")
        .arg("-B")
        .arg(&script.script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LC_ALL", "C.UTF-8")
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONSAFEPATH", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // Not the script's directory, which is removed once the script is read: a worker whose
        // working directory is gone fails wherever a library resolves a relative path.
        .current_dir("/")
        .process_group(0);
    for name in ["HOME", "TMPDIR"] {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    // SAFETY: the closure runs in the child between fork and exec and makes only
    // async-signal-safe calls on values copied before the fork.
    unsafe {
        command.pre_exec(move || {
            // Die with the thread that started us; if it is already gone, do not run at all.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != parent {
                libc::_exit(127);
            }
            // SIGINT is how a request is stopped: a rea started in the background of a
            // non-interactive shell inherits it ignored, and a shell cannot trap a signal
            // ignored on entry.
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            if document_fd == 3 {
                let flags = libc::fcntl(3, libc::F_GETFD);
                if flags < 0 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(document_fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            for (resource, value) in [(libc::RLIMIT_AS, memory_limit), (libc::RLIMIT_CORE, 0)] {
                let mut current = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(resource, &mut current) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Never above the hard limit, which an unprivileged process cannot raise.
                let value = value.min(current.rlim_max);
                let limit = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }

    let (started_tx, started_rx) = mpsc::channel::<std::io::Result<Pipes>>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let keeper = std::thread::Builder::new()
        .name("rea-angr-worker".into())
        .spawn(move || {
            let mut child = match command.spawn() {
                Ok(child) => child,
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                    return None;
                }
            };
            let pipes = (
                child.stdin.take(),
                child.stdout.take(),
                child.stderr.take(),
                child.id(),
            );
            let (Some(stdin), Some(stdout), Some(stderr), pid) = pipes else {
                // Cannot happen with every stream piped; never leave the child running.
                let _ = child.kill();
                let _ = child.wait();
                return None;
            };
            let _ = started_tx.send(Ok((stdin, stdout, stderr, pid)));
            // Wait for the child to end without reaping it, then for the owner's word: the
            // owner kills the process group by the child's pid, which must stay reserved.
            // SAFETY: a zeroed siginfo_t is a valid output buffer for waitid.
            unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                while libc::waitid(
                    libc::P_PID,
                    child.id() as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                ) != 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                }
            }
            let _ = release_rx.recv();
            child.wait().ok()
        })
        .map_err(|source| DecompileError::Io {
            provider: PROVIDER,
            operation: "start the worker's keeper thread",
            source,
        })?;
    let (stdin, stdout, stderr, pid) = match started_rx.recv() {
        Ok(Ok(pipes)) => pipes,
        Ok(Err(source)) => {
            let _ = keeper.join();
            return Err(DecompileError::Spawn {
                program: python.to_path_buf(),
                source,
            });
        }
        Err(_) => {
            let _ = keeper.join();
            return Err(DecompileError::Spawn {
                program: python.to_path_buf(),
                source: std::io::Error::other("the worker's pipes were not set up"),
            });
        }
    };
    // The child has its own copy of the document descriptor now.
    drop(memory);

    let (frames_tx, frames) = mpsc::channel();
    let cap = limits.reply_cap;
    std::thread::Builder::new()
        .name("rea-angr-replies".into())
        .spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 16, stdout);
            loop {
                let frame = protocol::read_frame(&mut reader, cap);
                let last = !matches!(frame, Frame::Line(_));
                if frames_tx.send(frame).is_err() || last {
                    break;
                }
            }
        })
        .map_err(|source| DecompileError::Io {
            provider: PROVIDER,
            operation: "start the worker's reply reader",
            source,
        })?;
    let tail = Arc::new(Mutex::new(Vec::new()));
    let sink = tail.clone();
    let (done_tx, stderr_done) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("rea-angr-stderr".into())
        .spawn(move || {
            let _done = done_tx;
            let mut stderr = stderr;
            let mut buffer = [0u8; 8192];
            loop {
                match stderr.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if let Ok(mut kept) = sink.lock() {
                            kept.extend_from_slice(&buffer[..n]);
                            let excess = kept.len().saturating_sub(STDERR_TAIL);
                            kept.drain(..excess);
                        }
                    }
                }
            }
        })
        .map_err(|source| DecompileError::Io {
            provider: PROVIDER,
            operation: "start the worker's stderr reader",
            source,
        })?;
    Ok(Process {
        stdin: Some(stdin),
        frames,
        pid: pid as libc::pid_t,
        release: Some(release_tx),
        keeper: Some(keeper),
        status: None,
        cancel_grace: limits.cancel_grace,
        stderr: tail,
        stderr_done,
        script,
    })
}
