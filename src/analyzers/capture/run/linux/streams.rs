//! The I/O thread: feeds stdin, drains stdout and stderr under their caps, and kills the group
//! at the wall limit, on cancellation or when a stream passes its cap.

use super::*;

/// One output stream being drained.
pub(super) struct Stream {
    fd: Option<OwnedFd>,
    kept: Vec<u8>,
    total: u64,
    cap: u64,
}

impl Stream {
    pub(super) fn new(fd: OwnedFd, cap: u64) -> Stream {
        Stream {
            fd: Some(fd),
            kept: Vec::new(),
            total: 0,
            cap,
        }
    }

    pub(super) fn truncated(&self) -> bool {
        self.total > self.cap
    }

    /// Reads what is available without blocking (at most `budget` bytes, so timers are
    /// still looked at). Returns whether the stream went past its cap.
    pub(super) fn drain(&mut self, budget: usize) -> bool {
        let Some(fd) = &self.fd else {
            return false;
        };
        let mut buffer = [0u8; 65_536];
        let mut read_now = 0usize;
        while read_now < budget {
            // SAFETY: reading into a stack buffer of the given length.
            let n = unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
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

    pub(super) fn into_captured(self) -> CapturedStream {
        let truncated = self.truncated();
        CapturedStream::from_bytes(&self.kept, self.total, truncated)
    }
}

/// Inputs of the I/O thread.
pub(super) struct IoPlan<'a> {
    pub(super) stdin: Option<OwnedFd>,
    pub(super) stdin_data: &'a [u8],
    pub(super) stdout: Stream,
    pub(super) stderr: Stream,
    pub(super) wake: OwnedFd,
    pub(super) overflow: OutputOverflow,
    pub(super) deadline: Instant,
    pub(super) cancel: &'a AtomicBool,
    pub(super) killer: &'a Killer,
}

/// Feeds stdin, drains stdout and stderr, and kills the group at the wall limit, on
/// cancellation or (with `OutputOverflow::Kill`) when a stream passes its cap. Returns when
/// the tracer writes to the wake pipe, after a last non-blocking drain.
pub(super) fn io_loop(mut plan: IoPlan<'_>) -> (Stream, Stream) {
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
