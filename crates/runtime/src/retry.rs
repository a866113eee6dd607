//! When a failed reconcile runs again: controller-runtime's default rate limiter
//! (`workqueue.DefaultTypedControllerRateLimiter`), the larger of a per-object
//! exponential delay ([`Backoff::RECONCILE`], forgotten on success) and a token
//! bucket shared by the controller's objects ([`RetryBucket::RECONCILE`]). The
//! policies are values ([`Backoff`], [`RetryBucket`]); [`RetryLimiter`] keeps their
//! state for one controller.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// An exponential backoff: `base` after the first failure, doubling per failure, at
/// most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    /// After any failed reconcile, counted per object by the controller and forgotten
    /// on success: controller-runtime's default per-item limiter
    /// (`ItemExponentialFailureRateLimiter(5ms, 1000s)`). A failure that names a
    /// longer delay of its own waits that long.
    pub const RECONCILE: Backoff = Backoff {
        base: Duration::from_millis(5),
        max: Duration::from_secs(1000),
    };

    /// The delay after `failures` consecutive failures (the first waits `base`).
    pub fn delay(self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1);
        let max = self.max.as_nanos();
        let nanos = if exp >= 64 {
            max
        } else {
            self.base.as_nanos().saturating_mul(1u128 << exp).min(max)
        };
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// A token bucket shared by all objects of one controller, on top of the per-object
/// [`Backoff::RECONCILE`]: controller-runtime's overall limiter (10 retries a second,
/// bursts of 100), so a failure that breaks every object at once does not retry them
/// all at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBucket {
    pub per_second: u32,
    pub burst: u32,
}

impl RetryBucket {
    /// `BucketRateLimiter{Limiter: rate.NewLimiter(rate.Limit(10), 100)}`.
    pub const RECONCILE: RetryBucket = RetryBucket {
        per_second: 10,
        burst: 100,
    };
}

/// An object, by namespace and name.
pub type Key = (String, String);

/// The retry state of one controller.
#[derive(Debug)]
pub struct RetryLimiter {
    backoff: Backoff,
    bucket: RetryBucket,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Consecutive failures per object.
    failures: HashMap<Key, u32>,
    /// Tokens left in the bucket (negative: reserved ahead), as of `refilled`.
    tokens: f64,
    refilled: Option<Instant>,
}

impl RetryLimiter {
    pub fn new(backoff: Backoff, bucket: RetryBucket) -> RetryLimiter {
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
    pub fn reconcile() -> RetryLimiter {
        RetryLimiter::new(Backoff::RECONCILE, RetryBucket::RECONCILE)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The maps stay consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One more failure of `key` at `now`: how long until it runs again, and how many
    /// consecutive failures it has had (`When` plus `NumRequeues` in client-go).
    pub fn failed(&self, key: &Key, now: Instant) -> (Duration, u32) {
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
    pub fn forget(&self, key: &Key) {
        self.state().failures.remove(key);
    }

    /// Consecutive failures of `key` so far.
    pub fn failures(&self, key: &Key) -> u32 {
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
    fn the_backoff_doubles_up_to_its_cap() {
        // controller-runtime's per-item limiter: 5ms, 10ms, 20ms, ... 1000s.
        assert_eq!(Backoff::RECONCILE.delay(1), Duration::from_millis(5));
        assert_eq!(Backoff::RECONCILE.delay(2), Duration::from_millis(10));
        assert_eq!(Backoff::RECONCILE.delay(11), Duration::from_millis(5120));
        assert_eq!(Backoff::RECONCILE.delay(18), Duration::from_millis(5 << 17));
        assert_eq!(Backoff::RECONCILE.delay(19), Duration::from_secs(1000));
        assert_eq!(Backoff::RECONCILE.delay(64), Duration::from_secs(1000));
        assert_eq!(Backoff::RECONCILE.delay(65), Duration::from_secs(1000));
        assert_eq!(
            Backoff::RECONCILE.delay(u32::MAX),
            Duration::from_secs(1000)
        );
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
