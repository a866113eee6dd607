//! Leader election on a `coordination.k8s.io` Lease, so only one replica reconciles.
//!
//! It follows client-go's `leaderelection` (what controller-runtime, and so Go
//! operators, use), so a rudder replica and a Go replica sharing a Lease name
//! respect each other: the holder renews every retry period; a standby takes over
//! once it has seen the same record unchanged for the record's lease duration
//! (measured on its own clock, so clock skew between nodes does not matter), or at
//! once when the holder released it (empty `holderIdentity`). Every write carries
//! the `resourceVersion` read, so two candidates can never both win.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Where a pod finds its own namespace.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The namespace this process runs in, when it runs in a pod (the default for the
/// Lease's namespace; outside a cluster `--leader-election-namespace` is needed).
pub fn in_cluster_namespace() -> Option<String> {
    let ns = std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok()?;
    let ns = ns.trim();
    (!ns.is_empty()).then(|| ns.to_string())
}

/// `<hostname>_<random>`, unique per process, as controller-runtime builds it.
pub fn default_identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "rudder".to_string());
    format!("{host}_{}", gostd::uuid::new_v4())
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("invalid leader election settings: {0}")]
    Config(String),
    #[error("leader election Lease {namespace}/{name}: {op} failed")]
    Api {
        namespace: String,
        name: String,
        op: &'static str,
        #[source]
        source: Box<kube::Error>,
    },
}

/// Leader election settings and the Lease they act on.
#[derive(Clone)]
pub struct LeaderElection {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl std::fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("identity", &self.identity)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .finish()
    }
}

/// What one read of a Lease told us, and when we first saw it (our clock). Sharding's
/// membership judges each replica's Lease the same way.
#[derive(Clone)]
pub(crate) struct Observed {
    pub(crate) holder: String,
    pub(crate) renew_time: Option<MicroTime>,
    pub(crate) duration: Duration,
    pub(crate) at: Instant,
}

enum Attempt {
    /// We hold the Lease (acquired or renewed).
    Held,
    /// Someone else holds a valid Lease.
    OtherHolder(String),
    /// A write raced with another candidate, or the call failed; try again.
    Retry,
}

impl LeaderElection {
    /// controller-runtime's defaults: lease 15 s, renew deadline 10 s, retry 2 s.
    pub fn new(
        client: Client,
        namespace: impl Into<String>,
        lease_name: impl Into<String>,
        identity: impl Into<String>,
    ) -> LeaderElection {
        let namespace = namespace.into();
        LeaderElection {
            api: Api::namespaced(client, &namespace),
            namespace,
            name: lease_name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// How long a standby waits after the last renewal it saw before taking over.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// How long the leader keeps retrying a failed renewal before it gives up.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Pause between attempts (to acquire, or to renew).
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn lease_name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> Result<(), LeaderError> {
        if self.identity.is_empty() {
            return Err(LeaderError::Config("the identity must not be empty".into()));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(LeaderError::Config(format!(
                "the lease duration ({:?}) must be longer than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            )));
        }
        if self.renew_deadline <= self.retry_period.mul_f64(1.2) {
            return Err(LeaderError::Config(format!(
                "the renew deadline ({:?}) must be longer than 1.2 × the retry period ({:?})",
                self.renew_deadline, self.retry_period
            )));
        }
        if self.retry_period.is_zero() {
            return Err(LeaderError::Config(
                "the retry period must not be zero".into(),
            ));
        }
        Ok(())
    }

    fn api_err(&self, op: &'static str, e: kube::Error) -> LeaderError {
        LeaderError::Api {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            op,
            source: Box::new(e),
        }
    }

    /// Waits until this process holds the Lease, then keeps renewing it in a
    /// background task. Cancel-safe: dropping the future gives up waiting.
    pub async fn acquire(&self) -> Result<LeaderGuard, LeaderError> {
        self.check()?;
        let mut observed: Option<Observed> = None;
        let mut logged_holder = String::new();
        loop {
            match self.try_acquire_or_renew(&mut observed).await {
                Attempt::Held => break,
                Attempt::OtherHolder(holder) => {
                    if holder != logged_holder {
                        tracing::info!(
                            lease = %format!("{}/{}", self.namespace, self.name),
                            %holder,
                            "waiting for leadership: another replica holds the lease"
                        );
                        logged_holder = holder;
                    }
                }
                Attempt::Retry => {}
            }
            tokio::time::sleep(jitter(self.retry_period)).await;
        }
        tracing::info!(
            lease = %format!("{}/{}", self.namespace, self.name),
            identity = %self.identity,
            "acquired leadership"
        );
        let (tx, rx) = watch::channel(false);
        let me = self.clone();
        let task = tokio::spawn(async move { me.renew_loop(observed, tx).await });
        Ok(LeaderGuard {
            election: self.clone(),
            lost: rx,
            task: Some(task),
        })
    }

    /// Renews every retry period; each renewal may be retried until the renew
    /// deadline. Ends, reporting loss, when it is missed or another holder shows up.
    async fn renew_loop(self, mut observed: Option<Observed>, lost: watch::Sender<bool>) {
        loop {
            tokio::time::sleep(self.retry_period).await;
            let deadline = Instant::now() + self.renew_deadline;
            let renewed = loop {
                let remaining = deadline.saturating_duration_since(Instant::now());
                let attempt =
                    tokio::time::timeout(remaining, self.try_acquire_or_renew(&mut observed)).await;
                match attempt {
                    Ok(Attempt::Held) => break true,
                    Ok(Attempt::OtherHolder(holder)) => {
                        tracing::warn!(
                            lease = %format!("{}/{}", self.namespace, self.name),
                            %holder,
                            "lost leadership: another replica holds the lease"
                        );
                        break false;
                    }
                    Ok(Attempt::Retry) => {}
                    Err(_) => break false,
                }
                if Instant::now() + self.retry_period >= deadline {
                    break false;
                }
                tokio::time::sleep(self.retry_period).await;
            };
            if !renewed {
                tracing::warn!(
                    lease = %format!("{}/{}", self.namespace, self.name),
                    "lost leadership: could not renew the lease within {:?}",
                    self.renew_deadline
                );
                let _ = lost.send(true);
                return;
            }
        }
    }

    /// client-go's `tryAcquireOrRenew`: one read, then at most one write.
    async fn try_acquire_or_renew(&self, observed: &mut Option<Observed>) -> Attempt {
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let lease_secs = i32::try_from(self.lease_duration.as_secs_f64().ceil() as u64)
            .unwrap_or(i32::MAX)
            .max(1);
        let current = match self.api.get_opt(&self.name).await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %apierror::Chain(&self.api_err("get", e)), "leader election");
                return Attempt::Retry;
            }
        };
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(lease_secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now.clone()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    *observed = Some(observe(&created, None));
                    Attempt::Held
                }
                Err(e) => {
                    tracing::debug!(error = %apierror::Chain(&self.api_err("create", e)), "leader election");
                    Attempt::Retry
                }
            };
        };

        let seen = observe(&lease, observed.as_ref());
        *observed = Some(seen.clone());
        let held_by_me = seen.holder == self.identity;
        if !seen.holder.is_empty() && !held_by_me && seen.at + seen.duration > Instant::now() {
            return Attempt::OtherHolder(seen.holder);
        }

        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if !held_by_me {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.lease_duration_seconds = Some(lease_secs);
        spec.renew_time = Some(now);
        // The resourceVersion read above makes this write fail if anyone wrote since.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(written) => {
                *observed = Some(observe(&written, None));
                Attempt::Held
            }
            Err(e) => {
                tracing::debug!(error = %apierror::Chain(&self.api_err("update", e)), "leader election");
                Attempt::Retry
            }
        }
    }

    /// Clears `holderIdentity` if we still hold the Lease, so a standby takes over
    /// without waiting for it to expire.
    async fn release_lease(&self) -> Result<(), LeaderError> {
        for _ in 0..3 {
            let Some(mut lease) = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| self.api_err("get", e))?
            else {
                return Ok(());
            };
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
                return Ok(());
            }
            let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.acquire_time = Some(now.clone());
            spec.renew_time = Some(now);
            match self
                .api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => {
                    tracing::info!(
                        lease = %format!("{}/{}", self.namespace, self.name),
                        "released leadership"
                    );
                    return Ok(());
                }
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(self.api_err("update", e)),
            }
        }
        Err(LeaderError::Config(format!(
            "could not release Lease {}/{}: it kept changing while releasing",
            self.namespace, self.name
        )))
    }
}

/// The record as seen now; `at` is kept from the previous observation when the
/// record did not change (client-go's `observedTime`).
fn observe(lease: &Lease, previous: Option<&Observed>) -> Observed {
    observe_at(lease, previous, Instant::now())
}

/// [`observe`] with the clock reading given, for callers that test their timing.
pub(crate) fn observe_at(lease: &Lease, previous: Option<&Observed>, now: Instant) -> Observed {
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.unwrap_or_default();
    let renew_time = spec.renew_time;
    let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64);
    let at = match previous {
        Some(p) if p.holder == holder && p.renew_time == renew_time => p.at,
        _ => now,
    };
    Observed {
        holder,
        renew_time,
        duration,
        at,
    }
}

/// client-go waits `retryPeriod` plus up to 20 % more between acquire attempts, so
/// candidates started together do not keep colliding.
pub(crate) fn jitter(d: Duration) -> Duration {
    let mut b = [0u8; 1];
    let frac = if getrandom::fill(&mut b).is_ok() {
        f64::from(b[0]) / 255.0
    } else {
        0.5
    };
    d + d.mul_f64(0.2 * frac)
}

/// Leadership held by this process. Dropping it stops renewing (the Lease then
/// expires after its duration); [`LeaderGuard::release`] hands it over at once.
pub struct LeaderGuard {
    election: LeaderElection,
    lost: watch::Receiver<bool>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LeaderGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderGuard")
            .field("election", &self.election)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl LeaderGuard {
    /// Resolves once leadership is lost: a renewal missed the renew deadline, or
    /// another replica took the Lease. The caller must then stop reconciling.
    pub async fn lost(&self) {
        let mut rx = self.lost.clone();
        // A renew task that ended without saying so (it panicked) counts as lost.
        let _ = rx.wait_for(|lost| *lost).await;
    }

    pub fn is_lost(&self) -> bool {
        *self.lost.borrow() || self.task.as_ref().is_none_or(|t| t.is_finished())
    }

    pub fn identity(&self) -> &str {
        self.election.identity()
    }

    /// Stops renewing and clears the holder, so a standby takes over right away.
    pub async fn release(mut self) -> Result<(), LeaderError> {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.election.release_lease().await
    }
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_host_and_uuid() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').expect("host_uuid");
        assert!(!host.is_empty());
        assert_eq!(uuid.len(), 36, "{uuid}");
        assert_eq!(uuid.matches('-').count(), 4, "{uuid}");
        assert_eq!(&uuid[14..15], "4", "version 4: {uuid}");
    }

    #[test]
    fn jitter_stays_within_twenty_percent() {
        for _ in 0..100 {
            let j = jitter(Duration::from_secs(2));
            assert!(
                j >= Duration::from_secs(2) && j <= Duration::from_millis(2400),
                "{j:?}"
            );
        }
    }
}
