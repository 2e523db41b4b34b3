//! A binary session's decompiler: one thread that owns the angr session and its worker, a queue
//! in which work a caller waits for goes before work decompiled ahead in the background, and
//! the decompilations in flight, so that a second ask of the same procedure joins the first
//! instead of queueing it twice.
//!
//! A decompilation goes on when its caller stops waiting at a deadline: a task of its own
//! records the result in the ledger, where the next ask finds it.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{Cancel, InvestigationError, Progress, Result};
use crate::providers::angr::{self, Angr};
use crate::providers::decompile::{
    AnalystHints, Control, DeclarationCheck, DecompileError, Decompiler, PseudoCode,
};
use crate::providers::native::Image;

/// Where a decompiler thread's answer goes.
type Reply<T> = tokio::sync::oneshot::Sender<std::result::Result<T, DecompileError>>;

/// What became of a decompilation in flight: recorded in the ledger, or why not.
pub(crate) type Outcome = std::result::Result<(), Arc<str>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// One decompilation, from the moment it is asked for until it is recorded: whether a caller
/// waits for it, what it has done, and the requests to stop it.
pub(crate) struct Running {
    /// A caller cancelled: the decompilation stops and is not recorded.
    cancel: Cancel,
    /// A caller waits for it; otherwise it is decompiled ahead, in the background.
    wanted: AtomicBool,
    /// Work a caller waits for needs the thread: this background decompilation stops and is
    /// queued again behind it.
    preempt: AtomicBool,
    log: Mutex<Log>,
}

/// What a decompilation has reported, and who hears it.
#[derive(Default)]
struct Log {
    /// Share done, 0 to 100; never decreasing.
    percent: u64,
    /// What it does now.
    message: String,
    /// The stages it went through, each with when it began.
    stages: Vec<(String, Instant)>,
    /// The callers' progress reporters, by listener number.
    listeners: Vec<(u64, Arc<dyn Progress>)>,
    next_listener: u64,
}

/// The stage a progress message belongs to: `angr: decompiling: Structuring code` is in
/// `decompiling`.
fn stage_of(message: &str) -> &str {
    let message = message.strip_prefix("angr: ").unwrap_or(message);
    message.split(':').next().unwrap_or(message)
}

impl Running {
    fn new(wanted: bool) -> Running {
        Running {
            cancel: Cancel::new(),
            wanted: AtomicBool::new(wanted),
            preempt: AtomicBool::new(false),
            log: Mutex::new(Log::default()),
        }
    }

    fn wanted(&self) -> bool {
        self.wanted.load(Ordering::SeqCst)
    }

    fn stop_asked(&self) -> bool {
        self.cancel.is_cancelled() || self.preempt.load(Ordering::SeqCst)
    }

    /// Whether a caller asked it to stop.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Asks the decompilation to stop; it is not recorded.
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    fn report(&self, percent: u64, message: &str) {
        let mut log = lock(&self.log);
        log.percent = log.percent.max(percent.min(100));
        let stage = stage_of(message);
        if log.stages.last().is_none_or(|(s, _)| s != stage) {
            log.stages.push((stage.to_owned(), Instant::now()));
        }
        log.message = message.to_owned();
        let percent = log.percent;
        for (_, listener) in &log.listeners {
            listener.report(percent, 100, message);
        }
    }

    /// Forgets what a preempted run reported: it starts again from the beginning.
    fn restart(&self) {
        let mut log = lock(&self.log);
        log.percent = 0;
        log.message.clear();
        log.stages.clear();
    }

    /// Passes the decompilation's progress to `progress` until the guard is dropped, starting
    /// with where it is now.
    pub(crate) fn listen(self: &Arc<Self>, progress: Arc<dyn Progress>) -> Listening {
        let mut log = lock(&self.log);
        let id = log.next_listener;
        log.next_listener += 1;
        if !log.message.is_empty() {
            progress.report(log.percent, 100, &log.message);
        }
        log.listeners.push((id, progress));
        Listening {
            running: self.clone(),
            id,
        }
    }

    /// What is done and what runs now, for an answer given before the decompilation ends:
    /// `done: starting angr (1.2 s), …; now: decompiling, 52% (…), for 12.0 s`.
    pub(crate) fn summary(&self) -> String {
        let log = lock(&self.log);
        let Some(((stage, began), done)) = log.stages.split_last() else {
            return "it waits behind other decompilations of this session".into();
        };
        let mut text = String::new();
        if !done.is_empty() {
            let finished: Vec<String> = done
                .iter()
                .zip(log.stages.iter().skip(1))
                .map(|((s, from), (_, to))| {
                    format!("{s} ({:.1} s)", to.duration_since(*from).as_secs_f64())
                })
                .collect();
            text.push_str(&format!("done: {}; ", finished.join(", ")));
        }
        let detail = log
            .message
            .strip_prefix("angr: ")
            .unwrap_or(&log.message)
            .strip_prefix(stage.as_str())
            .and_then(|rest| rest.strip_prefix(": "))
            .map(|d| format!(", {d}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "now: {stage} ({}% of the whole{detail}) for {:.1} s",
            log.percent,
            began.elapsed().as_secs_f64()
        ));
        text
    }
}

/// A caller hearing a decompilation's progress; dropping it stops the reports, so none reaches
/// a request that has already been answered.
pub(crate) struct Listening {
    running: Arc<Running>,
    id: u64,
}

impl Drop for Listening {
    fn drop(&mut self) {
        lock(&self.running.log)
            .listeners
            .retain(|(id, _)| *id != self.id);
    }
}

/// Work asked of the decompiler thread.
enum Work {
    /// A procedure's pseudo-code with the analyst's hints applied.
    Decompile {
        image: Arc<Image>,
        start: u64,
        hints: AnalystHints,
        running: Arc<Running>,
        reply: Reply<Arc<PseudoCode>>,
    },
    /// A C declaration parsed as the decompiler parses it: kind, text, the document's types.
    Check {
        image: Arc<Image>,
        kind: &'static str,
        text: String,
        types: Vec<String>,
        reply: Reply<DeclarationCheck>,
    },
}

impl Work {
    /// Whether a caller waits for it (a check always has one).
    fn wanted(&self) -> bool {
        match self {
            Work::Decompile { running, .. } => running.wanted(),
            Work::Check { .. } => true,
        }
    }
}

#[derive(Default)]
struct Queue {
    work: VecDeque<Work>,
    /// The decompilation the thread runs now.
    running: Option<Arc<Running>>,
    closed: bool,
}

/// The queue between the session and its decompiler thread.
#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

impl Shared {
    /// Queues `work`; a background decompilation running now is preempted when a caller waits
    /// for the new work. Gives the work back when the thread has been stopped.
    fn submit(&self, work: Work) -> std::result::Result<(), Work> {
        let mut queue = lock(&self.queue);
        if queue.closed {
            return Err(work);
        }
        if work.wanted() {
            preempt_background(&queue);
        }
        queue.work.push_back(work);
        self.wake.notify_one();
        Ok(())
    }

    /// The next work: the first a caller waits for, else the first decompiled ahead; `None`
    /// once stopped.
    fn next(&self) -> Option<Work> {
        let mut queue = lock(&self.queue);
        loop {
            if queue.closed {
                return None;
            }
            let first = queue
                .work
                .iter()
                .position(Work::wanted)
                .or((!queue.work.is_empty()).then_some(0));
            if let Some(work) = first.and_then(|i| queue.work.remove(i)) {
                if let Work::Decompile { running, .. } = &work {
                    queue.running = Some(running.clone());
                }
                return Some(work);
            }
            queue = self.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn finished(&self) {
        lock(&self.queue).running = None;
    }

    /// A caller now waits for `running`, which may be queued behind background work.
    fn promote(&self, running: &Arc<Running>) {
        running.wanted.store(true, Ordering::SeqCst);
        let queue = lock(&self.queue);
        preempt_background(&queue);
        self.wake.notify_one();
    }

    /// Stops the thread after what it runs now (which is asked to stop); queued work is
    /// dropped, and its callers hear that the decompiler is gone.
    fn close(&self) {
        let mut queue = lock(&self.queue);
        queue.closed = true;
        if let Some(running) = &queue.running {
            running.cancel();
        }
        queue.work.clear();
        self.wake.notify_all();
    }
}

fn preempt_background(queue: &Queue) {
    if let Some(running) = &queue.running
        && !running.wanted()
    {
        running.preempt.store(true, Ordering::SeqCst);
    }
}

/// A decompilation in flight, as its callers see it.
#[derive(Clone)]
pub(crate) struct InFlight {
    pub running: Arc<Running>,
    /// `Some` once it has been recorded, or has failed.
    pub done: tokio::sync::watch::Receiver<Option<Outcome>>,
}

impl InFlight {
    /// Waits for the outcome at most `wait`, with `progress` hearing the stages and `cancel`
    /// stopping the decompilation. `None` when `wait` passed first: the decompilation goes on.
    /// Dropped while waiting (the request was abandoned), it stops the decompilation.
    pub(crate) async fn wait(
        &self,
        wait: Duration,
        progress: Arc<dyn Progress>,
        cancel: &Cancel,
    ) -> Option<Outcome> {
        struct StopUnlessDone<'a>(Option<&'a Running>);
        impl Drop for StopUnlessDone<'_> {
            fn drop(&mut self) {
                if let Some(running) = self.0 {
                    running.cancel();
                }
            }
        }
        let _listening = self.running.listen(progress);
        let mut guard = StopUnlessDone(Some(&self.running));
        let mut done = self.done.clone();
        let until = tokio::time::Instant::now() + wait;
        let answer = loop {
            if let Some(outcome) = done.borrow_and_update().clone() {
                break Some(outcome);
            }
            if cancel.is_cancelled() {
                // It stops within the worker's grace period and answers that it stopped.
                self.running.cancel();
            }
            tokio::select! {
                changed = done.changed() => {
                    if changed.is_err() {
                        break Some(Err(thread_gone().to_string().into()));
                    }
                }
                _ = tokio::time::sleep(CANCEL_POLL) => {}
                _ = tokio::time::sleep_until(until) => break None,
            }
        };
        guard.0 = None;
        answer
    }
}

/// How often a caller waiting for a decompilation looks whether it was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// The decompiler of one binary session: a thread of its own that owns the angr session and its
/// worker, started on the first call that needs it and stopped when the session closes or
/// switches target. The worker dies with the thread that started it (its parent-death signal
/// is per thread), so it must be a thread that lives as long as the session, never one of the
/// runtime's blocking threads, which end when idle; and with rea, since that thread does.
#[derive(Default)]
pub(crate) struct Decompilers {
    thread: Mutex<Option<DecompilerThread>>,
    /// Decompilations asked for and not yet recorded, by their ledger key.
    in_flight: Arc<Mutex<HashMap<String, InFlight>>>,
    /// Changes when the thread stops: a result that arrives after is not recorded.
    generation: Arc<AtomicU64>,
}

impl std::fmt::Debug for Decompilers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decompilers")
            .field("running", &self.running())
            .field("in_flight", &lock(&self.in_flight).len())
            .finish()
    }
}

struct DecompilerThread {
    shared: Arc<Shared>,
    thread: std::thread::JoinHandle<()>,
}

impl Decompilers {
    fn running(&self) -> bool {
        lock(&self.thread).is_some()
    }

    /// Queues `work` on the session's decompiler thread, started now when it is not running.
    fn submit(&self, work: Work) -> Result<()> {
        let mut slot = lock(&self.thread);
        if slot.is_none() {
            let angr = Angr::from_environment()?;
            *slot = Some(DecompilerThread::start(angr)?);
        }
        let thread = slot.as_ref().expect("started above");
        if thread.shared.submit(work).is_err() {
            *slot = None;
            return Err(thread_gone());
        }
        Ok(())
    }

    /// The decompilation of `key` in flight, when there is one; a caller that will wait for
    /// it (`wanted`) moves it ahead of the background work.
    pub(crate) fn in_flight(&self, key: &str, wanted: bool) -> Option<InFlight> {
        // A cancelled one is ending without a result: a new ask starts afresh.
        let flight = lock(&self.in_flight)
            .get(key)
            .filter(|f| !f.running.cancel.is_cancelled())
            .cloned()?;
        if wanted
            && !flight.running.wanted()
            && let Some(thread) = lock(&self.thread).as_ref()
        {
            thread.shared.promote(&flight.running);
        }
        Some(flight)
    }

    /// Decompiles the procedure at `start` (or joins its decompilation in flight, by `key`);
    /// a task of its own hands the result to `record`, whoever still waits. `wanted`: a caller
    /// waits for it; otherwise it is decompiled ahead, behind every wanted one.
    pub(crate) fn launch<F, Fut>(
        &self,
        key: String,
        image: Arc<Image>,
        start: u64,
        hints: AnalystHints,
        wanted: bool,
        record: F,
    ) -> Result<InFlight>
    where
        F: FnOnce(Arc<PseudoCode>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        if let Some(flight) = self.in_flight(&key, wanted) {
            return Ok(flight);
        }
        let mut in_flight = lock(&self.in_flight);
        if let Some(flight) = in_flight
            .get(&key)
            .filter(|f| !f.running.cancel.is_cancelled())
        {
            return Ok(flight.clone());
        }
        let running = Arc::new(Running::new(wanted));
        let (reply, answer) = tokio::sync::oneshot::channel();
        let generation = self.generation.load(Ordering::SeqCst);
        self.submit(Work::Decompile {
            image,
            start,
            hints,
            running: running.clone(),
            reply,
        })?;
        let (done, watch) = tokio::sync::watch::channel(None);
        let flight = InFlight {
            running: running.clone(),
            done: watch,
        };
        in_flight.insert(key.clone(), flight.clone());
        drop(in_flight);
        let (map, generations) = (self.in_flight.clone(), self.generation.clone());
        tokio::spawn(async move {
            let outcome: Outcome = match answer.await {
                Ok(Ok(code)) if generations.load(Ordering::SeqCst) == generation => {
                    record(code).await.map_err(|e| e.to_string().into())
                }
                Ok(Ok(_)) => Err(
                    "the session closed or changed its target before the decompilation ended; nothing was recorded"
                        .into(),
                ),
                Ok(Err(e)) => Err(e.to_string().into()),
                Err(_) => Err(thread_gone().to_string().into()),
            };
            let mut map = lock(&map);
            if map
                .get(&key)
                .is_some_and(|f| Arc::ptr_eq(&f.running, &running))
            {
                map.remove(&key);
            }
            drop(map);
            done.send_replace(Some(outcome));
        });
        Ok(flight)
    }

    /// A C declaration parsed by the session's decompiler as it would parse it when
    /// decompiling; `None` when no decompiler is installed (nothing is started then).
    pub(crate) async fn check(
        &self,
        image: Arc<Image>,
        kind: &'static str,
        text: String,
        types: Vec<String>,
    ) -> Result<Option<DeclarationCheck>> {
        if !self.running() && angr::locate().is_err() {
            return Ok(None);
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.submit(Work::Check {
            image,
            kind,
            text,
            types,
            reply,
        })?;
        Ok(Some(answer.await.map_err(|_| thread_gone())??))
    }

    /// Stops the session's decompiler and its worker: what runs is asked to stop, what waits is
    /// dropped, and nothing arriving after is recorded. Blocking: waits for the thread to end.
    pub fn stop(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let running = lock(&self.thread).take();
        if let Some(running) = running {
            running.shared.close();
            let _ = running.thread.join();
        }
    }
}

impl DecompilerThread {
    fn start(mut angr: Angr) -> Result<DecompilerThread> {
        let shared = Arc::new(Shared::default());
        let queue = shared.clone();
        let thread = std::thread::Builder::new()
            .name("rea-decompiler".into())
            .spawn(move || {
                while let Some(work) = queue.next() {
                    serve(&queue, &mut angr, work);
                }
                angr.close();
            })
            .map_err(|source| DecompileError::Io {
                provider: angr::PROVIDER_ID,
                operation: "start the decompiler thread",
                source,
            })?;
        Ok(DecompilerThread { shared, thread })
    }
}

/// Runs one piece of work on the decompiler thread and answers it; a background decompilation
/// preempted by wanted work goes back in the queue.
fn serve(queue: &Shared, angr: &mut Angr, work: Work) {
    match work {
        Work::Check {
            image,
            kind,
            text,
            types,
            reply,
        } => {
            let _ = reply.send(angr.check_declaration(&image, kind, &text, &types));
        }
        Work::Decompile {
            image,
            start,
            hints,
            running,
            reply,
        } => {
            let report = |percent: u64, message: &str| running.report(percent, message);
            let stop = || running.stop_asked();
            let control = Control {
                report: Some(&report),
                stop: Some(&stop),
            };
            let outcome = angr
                .decompile_controlled(&image, start, &hints, &control)
                .map(|d| d.code);
            queue.finished();
            let preempted = running.preempt.swap(false, Ordering::SeqCst);
            if preempted
                && !running.cancel.is_cancelled()
                && matches!(outcome, Err(DecompileError::Cancelled { .. }))
            {
                running.restart();
                // Once stopped, the queue drops it, and its task hears the thread is gone.
                let _ = queue.submit(Work::Decompile {
                    image,
                    start,
                    hints,
                    running,
                    reply,
                });
            } else {
                let _ = reply.send(outcome);
            }
        }
    }
}

fn thread_gone() -> InvestigationError {
    DecompileError::Crashed {
        provider: angr::PROVIDER_ID,
        status: "its thread in rea ended".into(),
        stderr: String::new(),
    }
    .into()
}
