//! Step 4 of the pipeline: rendered files read into manifests while the
//! render is still going. The render hands each file over as soon as the
//! other core is free of templates (all at once when the render ran on
//! both cores); here each file is split and its documents read on that
//! core, so that little is left to read once the last template has run.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::threads::{spawn_deep, JobHandle};
use crate::manifest::{
    holds_manifests, in_order, read_file, Entry, ManifestError, Sorted, PARALLEL_MIN_BYTES,
};

/// One file's documents, or the error of its first bad one.
type FileRead = Result<Vec<Entry>, ManifestError>;

/// Files handed to the worker (path, text), and whether more may come.
#[derive(Default)]
struct Queue {
    files: VecDeque<(String, String)>,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    filled: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn close(&self) {
        self.lock().closed = true;
        self.filled.notify_all();
    }
}

/// Takes rendered files one at a time, as a render gives them out (in any
/// order), and sorts them into hooks and manifests: what
/// [`crate::manifest::sort_manifests`] gives for all of them at once, the error on
/// bad YAML included (the first bad document in path order).
///
/// Until the files fed add up to enough text to be worth a thread, they
/// are only kept; smaller renders are read on the calling thread at
/// [`Sorter::finish`].
#[derive(Default)]
pub(crate) struct Sorter {
    held: Vec<(String, String)>,
    held_bytes: usize,
    shared: Arc<Shared>,
    worker: Option<Worker>,
    no_thread: bool,
}

/// The worker thread. It reports what it read, then sleeps until let go
/// (`_release` dropped, with the `Sorter`) before it exits: a thread
/// woken by another may be queued on the waker's core, and would wait
/// there, its own core idle, while the waker went on exiting.
struct Worker {
    thread: JobHandle<()>,
    report: Receiver<Vec<(String, FileRead)>>,
    /// Held only to be dropped: the worker then exits.
    _release: SyncSender<()>,
}

impl Sorter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// One rendered file: its path and output.
    pub(crate) fn feed(&mut self, path: &str, text: &str) {
        if !holds_manifests(path, text) {
            return;
        }
        let file = (path.to_string(), text.to_string());
        if self.worker.is_some() {
            self.shared.lock().files.push_back(file);
            self.shared.filled.notify_one();
            return;
        }
        self.held_bytes += file.1.len();
        self.held.push(file);
        if self.held_bytes >= PARALLEL_MIN_BYTES && !self.no_thread {
            self.start_worker();
        }
    }

    fn start_worker(&mut self) {
        let shared = self.shared.clone();
        // Parsing and dropping deep documents recurse; the worker gets the
        // stack the callers of the sort give their own work.
        let (tell, report) = sync_channel(1);
        let (release, released) = sync_channel::<()>(0);
        let spawned = spawn_deep("sort-manifests", move || {
            if tell.send(read_queued(&shared)).is_ok() {
                let _ = released.recv();
            }
        });
        match spawned {
            Ok(thread) => {
                self.worker = Some(Worker {
                    thread,
                    report,
                    _release: release,
                });
                self.shared.lock().files.extend(self.held.drain(..));
                self.shared.filled.notify_one();
            }
            // No thread to be had: everything is read at the end.
            Err(_) => self.no_thread = true,
        }
    }

    /// Hooks and manifests of every file fed, sorted in `order`. Files the
    /// worker has not reached yet are read here alongside it.
    pub(crate) fn finish(mut self, order: &[&str]) -> Result<Sorted, ManifestError> {
        let mut read: BTreeMap<String, FileRead> = BTreeMap::new();
        for (path, text) in std::mem::take(&mut self.held) {
            let r = read_one(&path, &text);
            read.insert(path, r);
        }
        if let Some(worker) = self.worker.take() {
            self.shared.close();
            loop {
                let next = self.shared.lock().files.pop_back();
                let Some((path, text)) = next else { break };
                let r = read_one(&path, &text);
                read.insert(path, r);
            }
            match worker.report.recv() {
                Ok(theirs) => read.extend(theirs),
                // It panicked: the panic goes on here.
                Err(_) => worker.thread.join(),
            }
        }
        let mut entries = Vec::new();
        for (_, file) in read {
            entries.extend(file?);
        }
        Ok(in_order(entries, order))
    }
}

impl Drop for Sorter {
    /// A render that failed leaves its files unread: the worker stops.
    fn drop(&mut self) {
        self.shared.lock().files.clear();
        self.shared.close();
    }
}

fn read_one(path: &str, text: &str) -> FileRead {
    let mut entries = Vec::new();
    read_file(path, text, &mut entries)?;
    Ok(entries)
}

/// The worker: reads files from the front of the queue until it is closed
/// and empty.
fn read_queued(shared: &Shared) -> Vec<(String, FileRead)> {
    let mut read = Vec::new();
    loop {
        let mut queue = shared.lock();
        let next = loop {
            if let Some(file) = queue.files.pop_front() {
                break Some(file);
            }
            if queue.closed {
                break None;
            }
            queue = shared
                .filled
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        };
        drop(queue);
        let Some((path, text)) = next else {
            return read;
        };
        let r = read_one(&path, &text);
        read.push((path, r));
    }
}
