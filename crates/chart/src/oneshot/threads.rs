//! Where a thread started beside the caller first runs: on another core.
//!
//! Linux may queue a new thread on its creator's core even while another
//! core is idle, and move it only at the next load balancing: on the
//! two-core machines we measure on, a thread started by a busy caller
//! waited 1.5–3 ms to run in about half the starts, longer than a whole
//! render of most charts. A thread whose allowed cores leave out the
//! creator's is placed on another core at once (a start in ~0.05 ms). So
//! the thread is first pinned away from the creator's core, and given back
//! every core the process may use as soon as it runs, so that the
//! scheduler stays free to move it later.
//!
//! A thread that has done its job for [`reuse`] waits for the next one
//! rather than exiting: its start, its allocator's fresh memory and what it
//! set up for itself (Sprig's function table, say) serve the next job of
//! the same render. It is pinned away the same way before each job.

use std::cell::RefCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::{Builder, JoinHandle};

/// Spawns `f` as `thread` would, on another core than the caller's at
/// first (when the process may use another), free to move after that.
pub fn spawn<R: Send + 'static>(
    thread: Builder,
    f: impl FnOnce() -> R + Send + 'static,
) -> std::io::Result<JoinHandle<R>> {
    let placing = Placing::new();
    let theirs = placing.clone();
    let handle = thread.spawn(move || {
        theirs.started();
        f()
    })?;
    placing.place(&handle);
    Ok(handle)
}

/// A job for a kept thread, and whether it was pinned away for it.
type Job = (Box<dyn FnOnce() + Send>, bool);

/// A thread [`reuse`] started, kept for the next job; `idle` while it
/// waits for one.
struct Kept {
    thread: JoinHandle<()>,
    jobs: SyncSender<Job>,
    idle: Arc<AtomicBool>,
}

thread_local! {
    /// The threads this thread started with [`reuse`]: they exit with it.
    static KEPT: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// Most threads one thread keeps for its next jobs.
const KEPT_MAX: usize = 4;

/// The outcome of a job [`reuse`] runs on another thread.
pub struct Beside<T> {
    result: Receiver<std::thread::Result<T>>,
}

impl<T> Beside<T> {
    /// Waits for the job's result; a panic in the job goes on here.
    pub fn join(self) -> T {
        match self.result.recv() {
            Ok(Ok(value)) => value,
            Ok(Err(panic)) => resume_unwind(panic),
            // The job is caught whole: its thread cannot end without it.
            Err(_) => unreachable!("a kept thread ended before its job"),
        }
    }
}

/// Runs `f` on a thread this thread started earlier and that now waits for
/// a job, else on a new one started as `thread` (and [`spawn`]) and kept
/// for later jobs. Every job of the threads kept must suit the way `thread`
/// builds them (their stack size): one kind of thread per caller. A kept
/// thread keeps the name it was started with. Fails only when no thread
/// can be had.
pub fn reuse<T: Send + 'static>(
    thread: impl FnOnce() -> Builder,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<Beside<T>> {
    let (tell, result) = sync_channel(1);
    let job: Box<dyn FnOnce() + Send> = Box::new(move || {
        let _ = tell.send(catch_unwind(AssertUnwindSafe(f)));
    });
    let job = KEPT.with(|kept| {
        let mut job = job;
        for k in kept.borrow().iter() {
            if k.idle
                .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            let pinned = os::pin_away(&k.thread).is_some();
            match k.jobs.send((job, pinned)) {
                Ok(()) => return None,
                Err(back) => job = back.0 .0,
            }
        }
        Some(job)
    });
    let Some(job) = job else {
        return Ok(Beside { result });
    };
    let (jobs, next) = sync_channel::<Job>(1);
    let idle = Arc::new(AtomicBool::new(false));
    let waiting = idle.clone();
    let handle = spawn(thread(), move || {
        job();
        loop {
            waiting.store(true, Ordering::Release);
            let Ok((job, pinned)) = next.recv() else {
                break;
            };
            if pinned {
                os::unpin_self();
            }
            job();
        }
    })?;
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() < KEPT_MAX {
            kept.push(Kept {
                thread: handle,
                jobs,
                idle,
            });
        }
    });
    Ok(Beside { result })
}

/// The handshake between a creator ([`Placing::place`]) and its new thread
/// ([`Placing::started`]): whichever of the two comes second gives the
/// thread its cores back, so that this always happens after the pin.
#[derive(Clone, Default)]
struct Placing(Arc<AtomicU8>);

const STARTED: u8 = 1;
const PINNED: u8 = 2;

impl Placing {
    fn new() -> Placing {
        Placing::default()
    }

    /// Called first thing on the new thread.
    fn started(&self) {
        if self.0.swap(STARTED, Ordering::AcqRel) == PINNED {
            os::unpin_self();
        }
    }

    /// Called by the creator once the thread is spawned.
    fn place<T>(&self, thread: &JoinHandle<T>) {
        if os::pin_away(thread).is_none() {
            return;
        }
        if self.0.swap(PINNED, Ordering::AcqRel) == STARTED {
            os::unpin(thread);
        }
    }
}

#[cfg(target_os = "linux")]
mod os {
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::OnceLock;

    const SET_SIZE: usize = std::mem::size_of::<libc::cpu_set_t>();

    /// The cores the process may run on, as it started.
    fn process_cores() -> Option<&'static libc::cpu_set_t> {
        static CORES: OnceLock<Option<libc::cpu_set_t>> = OnceLock::new();
        CORES
            .get_or_init(|| {
                // SAFETY: cpu_set_t is plain bits, valid all zero;
                // sched_getaffinity writes at most SET_SIZE bytes into it.
                unsafe {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    (libc::sched_getaffinity(0, SET_SIZE, &mut set) == 0).then_some(set)
                }
            })
            .as_ref()
    }

    /// Pins `thread` to the process's cores but the caller's, and returns
    /// the caller's; `None` when there is no other core (or the caller's is
    /// unknown).
    pub(super) fn pin_away<T>(thread: &std::thread::JoinHandle<T>) -> Option<usize> {
        let all = process_cores()?;
        // SAFETY: sched_getcpu has no preconditions; CPU_CLR and CPU_COUNT
        // touch only the set given (an index past its size is ignored);
        // the thread handle is alive, so its pthread_t is valid.
        unsafe {
            let mine = usize::try_from(libc::sched_getcpu()).ok()?;
            let mut others = *all;
            libc::CPU_CLR(mine, &mut others);
            let pinned = libc::CPU_COUNT(&others) > 0
                && libc::pthread_setaffinity_np(thread.as_pthread_t(), SET_SIZE, &others) == 0;
            pinned.then_some(mine)
        }
    }

    /// Gives `thread` every core of the process back.
    pub(super) fn unpin<T>(thread: &std::thread::JoinHandle<T>) {
        if let Some(all) = process_cores() {
            // SAFETY: the handle is alive, so its pthread_t is valid (a
            // thread already finished answers ESRCH, which is ignored).
            unsafe { libc::pthread_setaffinity_np(thread.as_pthread_t(), SET_SIZE, all) };
        }
    }

    /// Gives the calling thread every core of the process back.
    pub(super) fn unpin_self() {
        if let Some(all) = process_cores() {
            // SAFETY: sched_setaffinity reads SET_SIZE bytes of the set.
            unsafe { libc::sched_setaffinity(0, SET_SIZE, all) };
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub(super) fn pin_away<T>(_: &std::thread::JoinHandle<T>) -> Option<usize> {
        None
    }
    pub(super) fn unpin<T>(_: &std::thread::JoinHandle<T>) {}
    pub(super) fn unpin_self() {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const SET_SIZE: usize = std::mem::size_of::<libc::cpu_set_t>();

    fn own_cores() -> libc::cpu_set_t {
        // SAFETY: as in `process_cores`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, SET_SIZE, &mut set), 0);
            set
        }
    }

    fn cpu() -> usize {
        // SAFETY: no preconditions.
        usize::try_from(unsafe { libc::sched_getcpu() }).expect("sched_getcpu")
    }

    fn core_count(set: &libc::cpu_set_t) -> i32 {
        // SAFETY: reads the set only.
        unsafe { libc::CPU_COUNT(set) }
    }

    /// Runs a thread that waits for `go` before it calls `started`, and
    /// reports the core it first ran on after `go` and its cores at the end.
    fn placed(start_first: bool) -> (Option<usize>, usize, libc::cpu_set_t) {
        let placing = Placing::new();
        let theirs = placing.clone();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (ran_tx, ran_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if start_first {
                theirs.started();
                ran_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                (cpu(), own_cores())
            } else {
                go_rx.recv().unwrap();
                let first = cpu();
                theirs.started();
                (first, own_cores())
            }
        });
        if start_first {
            ran_rx.recv().unwrap();
        }
        let pinned_from = os::pin_away(&thread);
        // `place` pins again (the same set) and completes the handshake.
        placing.place(&thread);
        go_tx.send(()).unwrap();
        let (first, cores) = thread.join().unwrap();
        (pinned_from, first, cores)
    }

    fn same(a: &libc::cpu_set_t, b: &libc::cpu_set_t) -> bool {
        // SAFETY: comparing two plain bit sets.
        unsafe { libc::CPU_EQUAL(a, b) }
    }

    #[test]
    fn a_pinned_thread_first_runs_away_from_its_creator_then_gets_every_core_back() {
        let all = own_cores();
        let (pinned_from, first, cores) = placed(false);
        assert!(
            same(&cores, &all),
            "the thread keeps a narrowed set of cores"
        );
        match pinned_from {
            Some(creator) => assert_ne!(first, creator, "ran on its creator's core"),
            None => {
                assert_eq!(core_count(&all), 1, "not pinned although cores are free");
                eprintln!("SKIPPED the placement check: this process may use one core only");
            }
        }
    }

    /// Waits (briefly) until this thread's kept threads all wait for a job.
    fn kept_idle() {
        for _ in 0..2000 {
            let idle = KEPT.with(|k| k.borrow().iter().all(|k| k.idle.load(Ordering::Acquire)));
            if idle {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("a kept thread never came back for a job");
    }

    #[test]
    fn a_kept_thread_takes_the_next_job_and_survives_a_panic() {
        let builder = || Builder::new().name("kept".into());
        let first = reuse(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_ne!(first, std::thread::current().id());
        kept_idle();
        let second = reuse(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_eq!(first, second, "the kept thread took the next job");
        kept_idle();
        let panicked = reuse(builder, || -> u8 { panic!("in the job") }).unwrap();
        let caught = catch_unwind(AssertUnwindSafe(|| panicked.join()));
        assert!(caught.is_err(), "the job's panic goes on in join");
        kept_idle();
        let after = reuse(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_eq!(after, first, "still kept after a panic");
        // A busy kept thread is not waited for: a second thread takes the job.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let busy = reuse(builder, move || wait.recv().ok()).unwrap();
        let other = reuse(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_ne!(other, first);
        go.send(()).unwrap();
        busy.join();
    }

    #[test]
    fn a_thread_that_started_before_the_pin_gets_every_core_back_too() {
        let all = own_cores();
        let (_, _, cores) = placed(true);
        assert!(
            same(&cores, &all),
            "the thread keeps a narrowed set of cores"
        );
    }
}
