//! When a failed reconcile runs again: controller-runtime's default rate limiter
//! (`workqueue.DefaultTypedControllerRateLimiter`), the larger of a per-CR
//! exponential delay ([`Backoff::RECONCILE`], forgotten on success) and a token
//! bucket shared by the controller's CRs ([`RetryBucket::RECONCILE`]). The policy's
//! numbers live in `reconcile::plan`; this is only their state.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::reconcile::plan::{Backoff, RetryBucket};

/// A CR, by namespace and name.
pub(crate) type Key = (String, String);

/// The retry state of one controller.
#[derive(Debug)]
pub(crate) struct RetryLimiter {
    backoff: Backoff,
    bucket: RetryBucket,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Consecutive failures per CR.
    failures: HashMap<Key, u32>,
    /// Tokens left in the bucket (negative: reserved ahead), as of `refilled`.
    tokens: f64,
    refilled: Option<Instant>,
}

impl RetryLimiter {
    pub(crate) fn new(backoff: Backoff, bucket: RetryBucket) -> RetryLimiter {
        RetryLimiter {
            backoff,
            bucket,
            state: Mutex::new(State {
                failures: HashMap::new(),
                tokens: f64::from(bucket.burst),
                refilled: None,
            }),
        }
    }

    /// The controller-runtime default.
    pub(crate) fn reconcile() -> RetryLimiter {
        RetryLimiter::new(Backoff::RECONCILE, RetryBucket::RECONCILE)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The maps stay consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One more failure of `key` at `now`: how long until it runs again, and how many
    /// consecutive failures it has had (`When` plus `NumRequeues` in client-go).
    pub(crate) fn failed(&self, key: &Key, now: Instant) -> (Duration, u32) {
        let mut state = self.state();
        let failures = {
            let n = state.failures.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let per_item = self.backoff.delay(failures);
        let shared = state.reserve(self.bucket, now);
        (per_item.max(shared), failures)
    }

    /// `key` succeeded or is gone: its next failure starts from the base delay again.
    pub(crate) fn forget(&self, key: &Key) {
        self.state().failures.remove(key);
    }

    /// Consecutive failures of `key` so far.
    #[cfg(test)]
    pub(crate) fn failures(&self, key: &Key) -> u32 {
        self.state().failures.get(key).copied().unwrap_or(0)
    }
}

impl State {
    /// Takes one token (`rate.Limiter.Reserve`): zero delay while the bucket has
    /// tokens, else the time until the token reserved becomes available.
    fn reserve(&mut self, bucket: RetryBucket, now: Instant) -> Duration {
        let rate = f64::from(bucket.per_second.max(1));
        let burst = f64::from(bucket.burst.max(1));
        if let Some(then) = self.refilled {
            let elapsed = now.saturating_duration_since(then).as_secs_f64();
            self.tokens = (self.tokens + elapsed * rate).min(burst);
        }
        self.refilled = Some(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        ("ns".to_string(), name.to_string())
    }

    #[test]
    fn per_cr_delays_double_from_5ms_and_reset_on_success() {
        let limiter = RetryLimiter::reconcile();
        let now = Instant::now();
        let a = key("a");
        let delays: Vec<Duration> = (0..4).map(|_| limiter.failed(&a, now).0).collect();
        assert_eq!(
            delays,
            [5, 10, 20, 40].map(Duration::from_millis).to_vec(),
            "one CR's failures"
        );
        assert_eq!(limiter.failures(&a), 4);
        // Another CR starts from the base.
        assert_eq!(limiter.failed(&key("b"), now).0, Duration::from_millis(5));
        limiter.forget(&a);
        assert_eq!(limiter.failures(&a), 0);
        assert_eq!(limiter.failed(&a, now), (Duration::from_millis(5), 1));
    }

    #[test]
    fn the_shared_bucket_spreads_a_burst_of_failures() {
        let limiter = RetryLimiter::reconcile();
        let now = Instant::now();
        // 100 CRs failing at once all retry at their own (tiny) backoff...
        for i in 0..100 {
            let (delay, _) = limiter.failed(&key(&format!("cr{i}")), now);
            assert_eq!(delay, Duration::from_millis(5), "cr{i}");
        }
        // ...the next ones wait for the bucket: 10 a second.
        assert_eq!(
            limiter.failed(&key("cr100"), now).0,
            Duration::from_millis(100)
        );
        assert_eq!(
            limiter.failed(&key("cr101"), now).0,
            Duration::from_millis(200)
        );
        // The bucket refills with time.
        let later = now + Duration::from_secs(60);
        assert_eq!(
            limiter.failed(&key("cr102"), later).0,
            Duration::from_millis(5)
        );
    }
}
