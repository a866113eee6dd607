//! Waiting for the cluster to settle: poll a check until it holds, or fail the test with
//! where it waited (the caller's file and line) and what the check last saw. The limit
//! only stops a hung test; it measures nothing. While it waits, the test's deadline
//! watchdog knows what it waits for (see `deadline`).

use std::future::Future;
use std::panic::Location;
use std::time::{Duration, Instant};

use crate::deadline;

/// What a check returns: `bool`, `Option<T>`, or `Result<T, E>` whose error says what it
/// saw (shown when time runs out).
pub trait Settled {
    /// What the wait returns once the check holds.
    type Output;
    /// `Ok` once the check holds; otherwise what it saw, if it says.
    fn settled(self) -> Result<Self::Output, Option<String>>;
}

impl Settled for bool {
    type Output = ();
    fn settled(self) -> Result<(), Option<String>> {
        if self {
            Ok(())
        } else {
            Err(None)
        }
    }
}

impl<T> Settled for Option<T> {
    type Output = T;
    fn settled(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: std::fmt::Display> Settled for Result<T, E> {
    type Output = T;
    fn settled(self) -> Result<T, Option<String>> {
        self.map_err(|e| Some(e.to_string()))
    }
}

/// How often a check is repeated.
const PERIOD: Duration = Duration::from_millis(100);

fn timed_out(timeout: Duration, at: &Location<'_>, last: Option<String>) -> ! {
    match last {
        Some(seen) => panic!("timed out after {timeout:?} waiting at {at}; last seen: {seen}"),
        None => panic!("timed out after {timeout:?} waiting at {at} for the condition"),
    }
}

/// Polls `check` until it holds and returns what it returned; panics with where it
/// waited and the last thing it saw once `timeout` passes.
#[track_caller]
pub fn eventually<S, F, Fut>(timeout: Duration, mut check: F) -> impl Future<Output = S::Output>
where
    S: Settled,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    let at = Location::caller();
    let test = deadline::current_test();
    async move {
        let start = Instant::now();
        let _waiting = deadline::waiting_for(&test, || format!("the check at {at}"));
        loop {
            match check().await.settled() {
                Ok(v) => return v,
                Err(last) if start.elapsed() >= timeout => timed_out(timeout, at, last),
                Err(_) => tokio::time::sleep(PERIOD).await,
            }
        }
    }
}

/// [`eventually`] for synchronous tests (kubectl and child processes).
#[track_caller]
pub fn eventually_blocking<S, F>(timeout: Duration, mut check: F) -> S::Output
where
    S: Settled,
    F: FnMut() -> S,
{
    let at = Location::caller();
    let _waiting =
        deadline::waiting_for(&deadline::current_test(), || format!("the check at {at}"));
    let start = Instant::now();
    loop {
        match check().settled() {
            Ok(v) => return v,
            Err(last) if start.elapsed() >= timeout => timed_out(timeout, at, last),
            Err(_) => std::thread::sleep(PERIOD * 2),
        }
    }
}

/// [`eventually_blocking`] with what it waits for said in words: the panic names
/// `what` as well as where it waited. For suites that watch child processes and
/// kubectl, where a label reads better than a line number.
#[track_caller]
pub fn wait_for<S, F>(what: &str, timeout: Duration, mut check: F) -> S::Output
where
    S: Settled,
    F: FnMut() -> S,
{
    let at = Location::caller();
    let _waiting = deadline::waiting_for(&deadline::current_test(), || format!("{what} (at {at})"));
    let start = Instant::now();
    loop {
        match check().settled() {
            Ok(v) => return v,
            Err(last) if start.elapsed() >= timeout => {
                let seen = last
                    .map(|l| format!("; last seen: {l}"))
                    .unwrap_or_default();
                panic!("timed out after {timeout:?} waiting at {at} for {what}{seen}")
            }
            Err(_) => std::thread::sleep(PERIOD * 2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_what_the_check_found() {
        let mut n = 0;
        let got = eventually(Duration::from_secs(5), || {
            n += 1;
            let v = n;
            async move { (v >= 3).then_some(v) }
        })
        .await;
        assert_eq!(got, 3);
    }

    #[test]
    #[should_panic(expected = "last seen: still 1")]
    fn a_timeout_says_what_was_last_seen() {
        eventually_blocking(Duration::from_millis(50), || Err::<(), _>("still 1"));
    }

    #[test]
    #[should_panic(expected = "waiting at crates/testkit/src/eventually.rs")]
    fn a_timeout_says_where_the_test_waited() {
        eventually_blocking(Duration::from_millis(50), || false);
    }
}
