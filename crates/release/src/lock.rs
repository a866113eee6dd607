//! A per-release lock so two actions on one release never interleave, kept in the
//! cluster as a `coordination.k8s.io/v1` Lease named after the release.
//!
//! The Lease records the holder's identity, when it was acquired and last renewed, and
//! how long it stays valid. A holder renews it while working and deletes it when done.
//! If a holder dies, its Lease expires `duration` after the last renewal and anyone may
//! take it over. Every write carries the resource version it read, so two contenders
//! racing for the same Lease cannot both win: the loser gets [`LockError::Contended`].

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Client};

/// Prefix of Lease names: `rudder.release.<release name>`.
pub const LEASE_PREFIX: &str = "rudder.release.";

/// Why a lock could not be taken or kept.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else holds a live lock.
    #[error("release {release:?} is locked by {holder:?} until {expires}; retry after that")]
    Held {
        release: String,
        holder: String,
        expires: Timestamp,
    },
    /// Another contender wrote the Lease between our read and our write.
    #[error("lock for release {0:?} was taken concurrently; retry")]
    Contended(String),
    /// Our lock expired and was taken over, or was deleted.
    #[error("lock for release {0:?} is no longer held by us")]
    Lost(String),
    /// The Kubernetes API call failed.
    #[error("{context}: {}", crate::api_error::describe(source))]
    Api {
        context: String,
        #[source]
        source: Box<kube::Error>,
    },
}

/// The lock state as stored (a Lease's spec plus its resource version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseState {
    pub name: String,
    pub holder: String,
    pub duration_seconds: i32,
    pub acquired: Timestamp,
    pub renewed: Timestamp,
    pub transitions: i32,
    pub resource_version: Option<String>,
}

impl LeaseState {
    /// When the lock lapses unless renewed.
    pub fn expires(&self) -> Timestamp {
        self.renewed
            .checked_add(jiff::SignedDuration::from_secs(i64::from(
                self.duration_seconds,
            )))
            .unwrap_or(Timestamp::MAX)
    }
}

/// Where lock records live.
#[async_trait]
pub trait LockBackend: Send + Sync {
    async fn get(&self, name: &str) -> Result<Option<LeaseState>, LockError>;
    /// [`LockError::Contended`] if it exists already.
    async fn create(&self, state: &LeaseState) -> Result<LeaseState, LockError>;
    /// [`LockError::Contended`] if the resource version is stale, [`LockError::Lost`] if gone.
    async fn replace(&self, state: &LeaseState) -> Result<LeaseState, LockError>;
    /// Deletes only if the resource version still matches; missing is fine.
    async fn delete(&self, state: &LeaseState) -> Result<(), LockError>;
}

/// A lock we hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHandle {
    pub release: String,
    pub state: LeaseState,
}

/// Takes, renews and gives back per-release locks for one holder identity.
pub struct ReleaseLocks<B> {
    backend: B,
    holder: String,
    duration: Duration,
}

/// The Lease name for a release.
pub fn lease_name(release: &str) -> String {
    format!("{LEASE_PREFIX}{release}")
}

impl<B: LockBackend> ReleaseLocks<B> {
    /// Locks held as `holder` (e.g. the pod name), valid `duration` after each renewal.
    pub fn new(backend: B, holder: impl Into<String>, duration: Duration) -> Self {
        ReleaseLocks {
            backend,
            holder: holder.into(),
            duration,
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    fn duration_seconds(&self) -> i32 {
        i32::try_from(self.duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// Takes the lock now, or fails with [`LockError::Held`].
    pub async fn try_acquire(&self, release: &str) -> Result<LockHandle, LockError> {
        self.try_acquire_at(release, Timestamp::now()).await
    }

    /// Takes the lock as of `now`. A lock held by our own identity is taken again (we
    /// restarted); an expired lock of another holder is taken over.
    pub async fn try_acquire_at(
        &self,
        release: &str,
        now: Timestamp,
    ) -> Result<LockHandle, LockError> {
        let name = lease_name(release);
        let state = match self.backend.get(&name).await? {
            None => {
                let fresh = LeaseState {
                    name: name.clone(),
                    holder: self.holder.clone(),
                    duration_seconds: self.duration_seconds(),
                    acquired: now,
                    renewed: now,
                    transitions: 0,
                    resource_version: None,
                };
                self.backend.create(&fresh).await?
            }
            Some(current) => {
                let ours = current.holder == self.holder;
                let free = current.holder.is_empty() || current.expires() <= now;
                if !ours && !free {
                    return Err(LockError::Held {
                        release: release.to_string(),
                        holder: current.holder.clone(),
                        expires: current.expires(),
                    });
                }
                let next = LeaseState {
                    holder: self.holder.clone(),
                    duration_seconds: self.duration_seconds(),
                    acquired: now,
                    renewed: now,
                    transitions: if ours {
                        current.transitions
                    } else {
                        current.transitions.saturating_add(1)
                    },
                    ..current
                };
                self.backend.replace(&next).await?
            }
        };
        Ok(LockHandle {
            release: release.to_string(),
            state,
        })
    }

    /// Extends a held lock; [`LockError::Lost`] if it was taken over meanwhile.
    pub async fn renew(&self, handle: &LockHandle) -> Result<LockHandle, LockError> {
        self.renew_at(handle, Timestamp::now()).await
    }

    /// Extends a held lock as of `now`.
    pub async fn renew_at(
        &self,
        handle: &LockHandle,
        now: Timestamp,
    ) -> Result<LockHandle, LockError> {
        let lost = || LockError::Lost(handle.release.clone());
        let current = self
            .backend
            .get(&handle.state.name)
            .await?
            .ok_or_else(lost)?;
        // Holder identity decides; the resource version may move for unrelated reasons
        // (e.g. someone labelling the Lease), and the replace below is still guarded by it.
        if current.holder != self.holder {
            return Err(lost());
        }
        let next = LeaseState {
            renewed: now,
            ..current
        };
        let state = self.backend.replace(&next).await.map_err(|e| match e {
            LockError::Contended(_) => lost(),
            other => other,
        })?;
        Ok(LockHandle {
            release: handle.release.clone(),
            state,
        })
    }

    /// Gives the lock back. Succeeds if it is already gone or was taken over.
    pub async fn release(&self, handle: LockHandle) -> Result<(), LockError> {
        match self.backend.get(&handle.state.name).await? {
            Some(current) if current.holder == self.holder => self.backend.delete(&current).await,
            _ => Ok(()),
        }
    }
}

/// Locks in process memory, for tests and single-process use.
#[derive(Debug, Default)]
pub struct MemoryLocks {
    inner: Mutex<(u64, BTreeMap<String, LeaseState>)>,
}

impl MemoryLocks {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, BTreeMap<String, LeaseState>)> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl LockBackend for MemoryLocks {
    async fn get(&self, name: &str) -> Result<Option<LeaseState>, LockError> {
        Ok(self.lock().1.get(name).cloned())
    }

    async fn create(&self, state: &LeaseState) -> Result<LeaseState, LockError> {
        let mut inner = self.lock();
        if inner.1.contains_key(&state.name) {
            return Err(LockError::Contended(state.name.clone()));
        }
        inner.0 += 1;
        let stored = LeaseState {
            resource_version: Some(inner.0.to_string()),
            ..state.clone()
        };
        inner.1.insert(state.name.clone(), stored.clone());
        Ok(stored)
    }

    async fn replace(&self, state: &LeaseState) -> Result<LeaseState, LockError> {
        let mut inner = self.lock();
        let current = inner
            .1
            .get(&state.name)
            .ok_or_else(|| LockError::Lost(state.name.clone()))?;
        if current.resource_version != state.resource_version {
            return Err(LockError::Contended(state.name.clone()));
        }
        inner.0 += 1;
        let stored = LeaseState {
            resource_version: Some(inner.0.to_string()),
            ..state.clone()
        };
        inner.1.insert(state.name.clone(), stored.clone());
        Ok(stored)
    }

    async fn delete(&self, state: &LeaseState) -> Result<(), LockError> {
        let mut inner = self.lock();
        if inner.1.get(&state.name).map(|s| &s.resource_version) == Some(&state.resource_version) {
            inner.1.remove(&state.name);
        }
        Ok(())
    }
}

/// Locks as Leases in one namespace.
#[derive(Clone)]
pub struct KubeLocks {
    api: Api<Lease>,
    namespace: String,
}

impl KubeLocks {
    /// Leases in `namespace` (the namespace of the custom resource).
    pub fn new(client: Client, namespace: &str) -> KubeLocks {
        KubeLocks {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
        }
    }

    fn to_lease(state: &LeaseState) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(state.name.clone()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/managed-by".to_string(),
                    "rudder".to_string(),
                )])),
                resource_version: state.resource_version.clone(),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(state.holder.clone()),
                lease_duration_seconds: Some(state.duration_seconds),
                acquire_time: Some(MicroTime(state.acquired)),
                renew_time: Some(MicroTime(state.renewed)),
                lease_transitions: Some(state.transitions),
                ..LeaseSpec::default()
            }),
        }
    }

    fn from_lease(lease: Lease) -> LeaseState {
        let spec = lease.spec.unwrap_or_default();
        let acquired = spec
            .acquire_time
            .map(|t| t.0)
            .unwrap_or(Timestamp::UNIX_EPOCH);
        LeaseState {
            name: lease.metadata.name.unwrap_or_default(),
            holder: spec.holder_identity.unwrap_or_default(),
            duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquired,
            renewed: spec.renew_time.map(|t| t.0).unwrap_or(acquired),
            transitions: spec.lease_transitions.unwrap_or(0),
            resource_version: lease.metadata.resource_version,
        }
    }

    fn err(&self, op: &str, name: &str, e: kube::Error) -> LockError {
        if let kube::Error::Api(status) = &e {
            if status.is_not_found() {
                return LockError::Lost(name.to_string());
            }
            if status.code == 409 {
                return LockError::Contended(name.to_string());
            }
        }
        LockError::Api {
            context: format!("{op} Lease {}/{name}", self.namespace),
            source: Box::new(e),
        }
    }
}

#[async_trait]
impl LockBackend for KubeLocks {
    async fn get(&self, name: &str) -> Result<Option<LeaseState>, LockError> {
        self.api
            .get_opt(name)
            .await
            .map(|l| l.map(Self::from_lease))
            .map_err(|e| self.err("get", name, e))
    }

    async fn create(&self, state: &LeaseState) -> Result<LeaseState, LockError> {
        let mut lease = Self::to_lease(state);
        lease.metadata.resource_version = None;
        self.api
            .create(&PostParams::default(), &lease)
            .await
            .map(Self::from_lease)
            .map_err(|e| self.err("create", &state.name, e))
    }

    async fn replace(&self, state: &LeaseState) -> Result<LeaseState, LockError> {
        self.api
            .replace(&state.name, &PostParams::default(), &Self::to_lease(state))
            .await
            .map(Self::from_lease)
            .map_err(|e| self.err("update", &state.name, e))
    }

    async fn delete(&self, state: &LeaseState) -> Result<(), LockError> {
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: state.resource_version.clone(),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        match self.api.delete(&state.name, &dp).await {
            Ok(_) => Ok(()),
            Err(e) => match self.err("delete", &state.name, e) {
                // Gone, or changed hands since we read it: either way not ours to delete.
                LockError::Lost(_) | LockError::Contended(_) => Ok(()),
                other => Err(other),
            },
        }
    }
}

/// Shares one backend between several lock owners (e.g. in tests).
#[async_trait]
impl<T: LockBackend + ?Sized> LockBackend for std::sync::Arc<T> {
    async fn get(&self, name: &str) -> Result<Option<LeaseState>, LockError> {
        (**self).get(name).await
    }
    async fn create(&self, state: &LeaseState) -> Result<LeaseState, LockError> {
        (**self).create(state).await
    }
    async fn replace(&self, state: &LeaseState) -> Result<LeaseState, LockError> {
        (**self).replace(state).await
    }
    async fn delete(&self, state: &LeaseState) -> Result<(), LockError> {
        (**self).delete(state).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn locks(
        holder: &str,
        backend: std::sync::Arc<MemoryLocks>,
    ) -> ReleaseLocks<std::sync::Arc<MemoryLocks>> {
        ReleaseLocks::new(backend, holder, Duration::from_secs(30))
    }

    #[tokio::test]
    async fn second_holder_is_refused_until_expiry() {
        let backend = std::sync::Arc::new(MemoryLocks::default());
        let a = locks("a", backend.clone());
        let b = locks("b", backend.clone());
        let held = a.try_acquire_at("web", at(0)).await.unwrap();
        assert_eq!(held.state.name, "rudder.release.web");
        match b.try_acquire_at("web", at(10)).await {
            Err(LockError::Held {
                holder, expires, ..
            }) => {
                assert_eq!(holder, "a");
                assert_eq!(expires, at(30));
            }
            other => panic!("expected Held, got {other:?}"),
        }
        // Renewal pushes expiry out.
        let held = a.renew_at(&held, at(20)).await.unwrap();
        assert!(matches!(
            b.try_acquire_at("web", at(40)).await,
            Err(LockError::Held { .. })
        ));
        // Stale past expiry: b takes over, a has lost it.
        let taken = b.try_acquire_at("web", at(51)).await.unwrap();
        assert_eq!(taken.state.holder, "b");
        assert_eq!(taken.state.transitions, 1);
        assert!(matches!(
            a.renew_at(&held, at(52)).await,
            Err(LockError::Lost(_))
        ));
        // a's release must not drop b's lock.
        a.release(held).await.unwrap();
        assert!(backend.get("rudder.release.web").await.unwrap().is_some());
        b.release(taken).await.unwrap();
        assert!(backend.get("rudder.release.web").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn locks_are_per_release_and_reentrant_for_same_identity() {
        let backend = std::sync::Arc::new(MemoryLocks::default());
        let a = locks("a", backend.clone());
        let b = locks("b", backend.clone());
        a.try_acquire_at("one", at(0)).await.unwrap();
        b.try_acquire_at("two", at(0)).await.unwrap();
        // Same identity after a restart gets its own lock back.
        let again = a.try_acquire_at("one", at(5)).await.unwrap();
        assert_eq!(again.state.transitions, 0);
    }

    #[tokio::test]
    async fn stale_resource_version_is_contended() {
        let backend = MemoryLocks::default();
        let first = backend
            .create(&LeaseState {
                name: "x".into(),
                holder: "a".into(),
                duration_seconds: 1,
                acquired: at(0),
                renewed: at(0),
                transitions: 0,
                resource_version: None,
            })
            .await
            .unwrap();
        backend.replace(&first).await.unwrap();
        assert!(matches!(
            backend.replace(&first).await,
            Err(LockError::Contended(_))
        ));
    }
}
