//! Every cluster-facing test has an overall deadline: from its first [`Cluster`] on,
//! a test may run for `RUDDER_TEST_DEADLINE` seconds (default 30 minutes, or what
//! [`ClusterBuilder::deadline`] says). A test that overruns it is reported with what it
//! was waiting for (the check of an `eventually`, a teardown, a CRD being served); then
//! every test namespace of the process is torn down, the run's CRDs are let go, and
//! the process exits, so a hung test neither hangs the run nor leaves anything behind
//! on the cluster.
//!
//! [`Cluster`]: crate::Cluster
//! [`ClusterBuilder::deadline`]: crate::ClusterBuilder::deadline

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::cluster::Inner;
use crate::namespace::ClusterObjects;

/// The environment variable that sets every test's deadline, in seconds.
pub const DEADLINE_ENV: &str = "RUDDER_TEST_DEADLINE";

/// A test's deadline unless `RUDDER_TEST_DEADLINE` or the builder says otherwise.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// How long the clean-up after an overrun may take per namespace.
const CLEANUP: Duration = Duration::from_secs(120);

struct Test {
    started: Instant,
    deadline: Duration,
    clusters: usize,
    /// What the test waits for now, innermost last.
    waiting: Vec<(u64, String)>,
}

/// A live test namespace, for the clean-up after an overrun.
struct LiveNamespace {
    cluster: Weak<Inner>,
    objects: ClusterObjects,
}

#[derive(Default)]
struct Registry {
    tests: HashMap<String, Test>,
    namespaces: HashMap<String, LiveNamespace>,
}

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The name of the test running on this thread (the harness names threads after
/// their tests).
pub(crate) fn current_test() -> String {
    std::thread::current().name().unwrap_or("main").to_string()
}

/// The deadline of tests that do not set their own.
pub(crate) fn default_deadline() -> Duration {
    std::env::var(DEADLINE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_DEADLINE)
}

/// A cluster of `test` was started: its clock starts with its first cluster.
pub(crate) fn cluster_started(test: &str, deadline: Duration) {
    start_watchdog();
    let mut r = registry();
    let t = r.tests.entry(test.to_string()).or_insert_with(|| Test {
        started: Instant::now(),
        deadline,
        clusters: 0,
        waiting: Vec::new(),
    });
    t.clusters += 1;
    t.deadline = t.deadline.max(deadline);
}

/// A cluster of `test` was dropped: the test is over with its last one.
pub(crate) fn cluster_dropped(test: &str) {
    let mut r = registry();
    if let Some(t) = r.tests.get_mut(test) {
        t.clusters = t.clusters.saturating_sub(1);
        if t.clusters == 0 {
            r.tests.remove(test);
        }
    }
}

pub(crate) fn namespace_created(name: &str, cluster: Weak<Inner>, objects: ClusterObjects) {
    registry()
        .namespaces
        .insert(name.to_string(), LiveNamespace { cluster, objects });
}

pub(crate) fn namespace_gone(name: &str) {
    registry().namespaces.remove(name);
}

/// Notes what `test` waits for until the guard is dropped.
pub(crate) struct Waiting {
    test: String,
    id: u64,
}

/// Notes that `test` waits for `what` (built only when the test is a cluster test).
pub(crate) fn waiting_for(test: &str, what: impl FnOnce() -> String) -> Waiting {
    static IDS: AtomicU64 = AtomicU64::new(0);
    let id = IDS.fetch_add(1, Ordering::Relaxed);
    if let Some(t) = registry().tests.get_mut(test) {
        t.waiting.push((id, what()));
    }
    Waiting {
        test: test.to_string(),
        id,
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(t) = registry().tests.get_mut(&self.test) {
            t.waiting.retain(|(id, _)| *id != self.id);
        }
    }
}

fn start_watchdog() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("testkit-deadline".into())
            .spawn(|| loop {
                std::thread::sleep(Duration::from_secs(2));
                if let Some(report) = overrun() {
                    expire(&report);
                }
            });
        if let Err(e) = spawned {
            eprintln!("testkit: cannot start the deadline watchdog: {e}");
        }
    });
}

/// The report of the first test past its deadline, if any.
fn overrun() -> Option<String> {
    let r = registry();
    let (name, t) = r
        .tests
        .iter()
        .find(|(_, t)| t.started.elapsed() > t.deadline)?;
    let what = t
        .waiting
        .last()
        .map(|(_, w)| w.as_str())
        .unwrap_or("nothing the kit knows of (a request or a child process)");
    Some(format!(
        "testkit: test {name} did not finish within its deadline of {}s ({DEADLINE_ENV}); \
         it was waiting for {what}",
        t.deadline.as_secs()
    ))
}

/// Reports the overrun, tears down every live test namespace, lets the run's CRDs go,
/// and exits. The work runs on a runtime of the watchdog's own with clients of its own:
/// the kit's runtime may be what hangs. On the embedded server, which goes with the
/// process, there is nothing to clean up.
fn expire(report: &str) -> ! {
    eprintln!("{report}");
    let live: Vec<(String, LiveNamespace)> = registry().namespaces.drain().collect();
    let mut external = Vec::new();
    for (name, ns) in live {
        let Some(inner) = ns.cluster.upgrade() else {
            continue;
        };
        if inner.is_external() {
            external.push((name, inner.config.clone(), ns.objects.take()));
        }
    }
    if !external.is_empty() {
        eprintln!("testkit: deleting what this run created, then exiting");
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt.block_on(clean_up(external)),
            Err(e) => eprintln!("testkit: cannot clean up: {e}"),
        }
    }
    std::process::exit(101)
}

/// A namespace to delete after an overrun: its name, its cluster, what was registered.
type Leftover = (String, kube::Config, Vec<(kube::api::ApiResource, String)>);

async fn clean_up(namespaces: Vec<Leftover>) {
    let mut last = None;
    for (name, config, objects) in namespaces {
        let mut once = config.clone();
        once.default_retry = false;
        let (Ok(client), Ok(quick)) =
            (kube::Client::try_from(config), kube::Client::try_from(once))
        else {
            eprintln!("testkit: cannot build a client to delete namespace {name}");
            continue;
        };
        let teardown = crate::namespace::delete_all(client.clone(), quick, name.clone(), objects);
        match tokio::time::timeout(CLEANUP, teardown).await {
            Ok(Ok(())) => eprintln!("testkit: deleted namespace {name}"),
            Ok(Err(e)) => eprintln!("testkit: {}", apierror::Chain(&e)),
            Err(_) => eprintln!("testkit: namespace {name} was still there after {CLEANUP:?}"),
        }
        last = Some(client);
    }
    if let Some(client) = last {
        crate::crd::release_used(&client).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overrun_names_the_test_and_what_it_waited_for() {
        let test = "deadline::tests::overrun";
        registry().tests.insert(
            test.into(),
            Test {
                started: Instant::now(),
                deadline: Duration::ZERO,
                clusters: 1,
                waiting: Vec::new(),
            },
        );
        let waiting = waiting_for(test, || "the check at tests/x.rs:1:2".into());
        std::thread::sleep(Duration::from_millis(5));
        let report = overrun().expect("past its deadline");
        assert!(report.contains(test), "{report}");
        assert!(report.contains("the check at tests/x.rs:1:2"), "{report}");
        drop(waiting);
        assert!(registry().tests[test].waiting.is_empty());
        cluster_dropped(test);
        assert!(overrun().is_none());
    }
}
