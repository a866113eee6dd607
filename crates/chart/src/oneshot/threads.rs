//! The helper threads of a one-shot render: each job runs beside the
//! caller on a deep stack ([`spawn_deep`]), on a thread the caller started
//! for an earlier job and kept, else on a new one.
//!
//! A thread that has done its job waits for the next one rather than
//! exiting: its start, its allocator's fresh memory and what it set up for
//! itself (Sprig's function table, say) serve the next job of the same
//! render. `rudder template` hands out a few jobs in turn (parsing, then
//! the second half of the templates, then reading manifests), so one kept
//! thread does most of them.

use std::cell::RefCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::Builder;

use gocodec::depth::DEEP_STACK_BYTES;

/// The cores this process may run on, as
/// [`std::thread::available_parallelism`] gives them (1 when unknown), read
/// once: it reads the process's cgroup files on every call, which cost a
/// one-shot render ~0.1 ms for each of the places that ask.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `f` on another thread with a [`DEEP_STACK_BYTES`] stack, beside
/// the caller, for work that meets input nested as deep as
/// [`gocodec::depth::on_deep_stack`]'s. The thread is one this thread
/// started before for such work and that waits for more, else a new one
/// named `name`. Fails only when no thread can be started.
pub(crate) fn spawn_deep<R: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> R + Send + 'static,
) -> std::io::Result<JobHandle<R>> {
    run_on_pool(
        || {
            Builder::new()
                .name(name.into())
                .stack_size(DEEP_STACK_BYTES)
        },
        f,
    )
}

/// A job for a kept thread.
type Job = Box<dyn FnOnce() + Send>;

/// A thread of the pool, kept for the next job; `idle` while it waits for
/// one. It exits once `jobs` is dropped, with the thread that started it.
struct PoolThread {
    jobs: SyncSender<Job>,
    idle: Arc<AtomicBool>,
}

thread_local! {
    /// The threads this thread started for its jobs: they exit with it.
    static POOL: RefCell<Vec<PoolThread>> = const { RefCell::new(Vec::new()) };
}

/// Most threads one thread keeps for its next jobs.
const POOL_MAX: usize = 4;

/// A job running on a thread of the pool: its outcome, to wait for.
pub(crate) struct JobHandle<T> {
    result: Receiver<std::thread::Result<T>>,
}

impl<T> JobHandle<T> {
    /// Waits for the job's result; a panic in the job goes on here.
    pub(crate) fn join(self) -> T {
        match self.result.recv() {
            Ok(Ok(value)) => value,
            Ok(Err(panic)) => resume_unwind(panic),
            // The job is caught whole: its thread cannot end without it.
            Err(_) => unreachable!("a kept thread ended before its job"),
        }
    }
}

/// Runs `f` on a thread of this thread's pool that waits for a job, else
/// on a new one started as `thread` builds it and kept in the pool for
/// later jobs. Every job of the threads kept must suit the way `thread`
/// builds them (their stack size): one kind of thread per caller. A kept
/// thread keeps the name it was started with. Fails only when no thread
/// can be had.
fn run_on_pool<T: Send + 'static>(
    thread: impl FnOnce() -> Builder,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<JobHandle<T>> {
    let (tell, result) = sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = tell.send(catch_unwind(AssertUnwindSafe(f)));
    });
    let job = POOL.with(|kept| {
        let mut job = job;
        for k in kept.borrow().iter() {
            if k.idle
                .compare_exchange(true, false, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            match k.jobs.send(job) {
                Ok(()) => return None,
                Err(back) => job = back.0,
            }
        }
        Some(job)
    });
    let Some(job) = job else {
        return Ok(JobHandle { result });
    };
    let (jobs, next) = sync_channel::<Job>(1);
    let idle = Arc::new(AtomicBool::new(false));
    let waiting = idle.clone();
    thread().spawn(move || {
        job();
        loop {
            waiting.store(true, Ordering::Release);
            let Ok(job) = next.recv() else {
                break;
            };
            job();
        }
    })?;
    POOL.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() < POOL_MAX {
            kept.push(PoolThread { jobs, idle });
        }
    });
    Ok(JobHandle { result })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (briefly) until this thread's pool threads all wait for a job.
    fn kept_idle() {
        for _ in 0..2000 {
            let idle = POOL.with(|k| k.borrow().iter().all(|k| k.idle.load(Ordering::Acquire)));
            if idle {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("a kept thread never came back for a job");
    }

    #[test]
    fn a_pool_thread_takes_the_next_job_and_survives_a_panic() {
        let builder = || Builder::new().name("kept".into());
        let first = run_on_pool(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_ne!(first, std::thread::current().id());
        kept_idle();
        let second = run_on_pool(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_eq!(first, second, "the kept thread took the next job");
        kept_idle();
        let panicked = run_on_pool(builder, || -> u8 { panic!("in the job") }).unwrap();
        let caught = catch_unwind(AssertUnwindSafe(|| panicked.join()));
        assert!(caught.is_err(), "the job's panic goes on in join");
        kept_idle();
        let after = run_on_pool(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_eq!(after, first, "still kept after a panic");
        // A busy kept thread is not waited for: a second thread takes the job.
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let busy = run_on_pool(builder, move || wait.recv().ok()).unwrap();
        let other = run_on_pool(builder, || std::thread::current().id())
            .unwrap()
            .join();
        assert_ne!(other, first);
        go.send(()).unwrap();
        busy.join();
    }

    #[test]
    fn deep_jobs_get_the_deep_stack() {
        // Far more than a default thread's 2 MiB of frames.
        fn burn(left: usize) -> usize {
            let frame = std::hint::black_box([left as u8; 1024]);
            if left == 0 {
                return 0;
            }
            burn(left - 1) + std::hint::black_box(frame)[1] as usize
        }
        let levels = 16 * 1024;
        let expected: usize = (1..=levels).map(|l| l as u8 as usize).sum();
        let got = spawn_deep("deep", move || burn(levels)).unwrap().join();
        assert_eq!(got, expected);
    }
}
