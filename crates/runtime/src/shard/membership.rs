//! Sharding membership on `coordination.k8s.io` Leases: one Lease per replica in the
//! operator's namespace, labelled with the group, holding the replica's identity,
//! the kinds it watches and its ack (see [`super::handoff`]). Each round the replica
//! renews its Lease, then lists the group's Leases and applies what it read; a Lease
//! expired for twice its duration (a replica killed without leaving) is deleted.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::Client;
use tokio::time::Instant;

use super::assign::fingerprint;
use super::handoff::{ack_text, Roster, View, ACK_ANNOTATION, WATCHES_ANNOTATION};
use super::{ShardError, ShardSettings, Shards};
use crate::leader::jitter;

/// The label naming a member Lease's group.
pub(crate) const GROUP_LABEL: &str = "rudder.dev/shard-group";

/// One replica's Lease and how it is kept.
pub(crate) struct Membership {
    api: Api<Lease>,
    settings: ShardSettings,
    lease_name: String,
    group_label: String,
    watches: String,
}

impl Membership {
    /// `watches`: the kinds this replica reconciles (`Watch::gvk_string`).
    pub(crate) fn new(
        client: Client,
        settings: ShardSettings,
        watches: &[String],
    ) -> Result<Membership, ShardError> {
        check(&settings)?;
        let group = dns_name(&settings.group);
        let lease_name = format!(
            "{group}-shard-{:012x}",
            fingerprint(settings.identity.as_bytes()) & 0xffff_ffff_ffff
        );
        let group_label = if group.len() <= 63 {
            group.clone()
        } else {
            format!(
                "{}-{:016x}",
                group[..46].trim_end_matches(['-', '.']),
                fingerprint(group.as_bytes())
            )
        };
        Ok(Membership {
            api: Api::namespaced(client, &settings.namespace),
            lease_name,
            group_label,
            watches: watches.join(";"),
            settings,
        })
    }

    pub(crate) fn lease_name(&self) -> &str {
        &self.lease_name
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.settings.namespace
    }

    /// Keeps the membership until the Lease cannot be renewed within the renew
    /// deadline; then stands down (claims nothing more) and returns why.
    pub(crate) async fn run(&self, shards: Arc<Shards>) -> ShardError {
        let s = &self.settings;
        let mut roster = Roster::default();
        let mut ours: Option<Lease> = None;
        let mut renewed = Instant::now();
        let mut last_error = String::from("no renewal yet");
        loop {
            let attempt = Instant::now();
            let ack = shards.ack_to_publish();
            let budget = s
                .renew_deadline
                .saturating_sub(attempt.duration_since(renewed))
                .max(Duration::from_millis(100));
            match tokio::time::timeout(budget, self.renew(ours.take(), ack.as_ref())).await {
                Ok(Ok(written)) => {
                    ours = Some(written);
                    renewed = attempt;
                    if let Some(view) = &ack {
                        shards.published(view);
                    }
                }
                Ok(Err(e)) => last_error = e,
                Err(_) => last_error = format!("no answer within {budget:?}"),
            }
            if renewed.elapsed() >= s.renew_deadline {
                shards.stand_down();
                return ShardError::Lost {
                    namespace: s.namespace.clone(),
                    name: self.lease_name.clone(),
                    deadline: s.renew_deadline,
                    last_error,
                };
            }
            let selector = format!("{GROUP_LABEL}={}", self.group_label);
            let listed = tokio::time::timeout(
                s.renew_deadline,
                self.api.list(&ListParams::default().labels(&selector)),
            )
            .await;
            match listed {
                Ok(Ok(list)) => {
                    let (live, stale) =
                        roster.update(&list.items, Instant::now(), s.lease_duration * 2);
                    shards.observe(&live);
                    for lease in list.items.iter().filter(|l| {
                        l.metadata
                            .name
                            .as_ref()
                            .is_some_and(|n| stale.contains(n) && *n != self.lease_name)
                    }) {
                        self.forget(lease).await;
                    }
                }
                Ok(Err(e)) => tracing::debug!(
                    target: "rudder::shard",
                    "listing the shard Leases failed (keeping the last view): {}",
                    apierror::describe(&e)
                ),
                Err(_) => {
                    tracing::debug!(target: "rudder::shard", "listing the shard Leases timed out")
                }
            }
            tokio::time::sleep(jitter(s.retry_period)).await;
        }
    }

    /// One write of our Lease: a renewal of the copy we wrote last, or a read and a
    /// write (or a create) when we have none. The resourceVersion guards each write.
    async fn renew(&self, ours: Option<Lease>, ack: Option<&View>) -> Result<Lease, String> {
        let describe =
            |op: &str, e: kube::Error| format!("{op} failed: {}", apierror::describe(&e));
        let current = match ours {
            Some(lease) => Some(lease),
            None => self
                .api
                .get_opt(&self.lease_name)
                .await
                .map_err(|e| describe("get", e))?,
        };
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let lease_secs =
            i32::try_from(self.settings.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX);
        let Some(mut lease) = current else {
            let mut annotations = BTreeMap::new();
            annotations.insert(WATCHES_ANNOTATION.to_string(), self.watches.clone());
            if let Some(view) = ack {
                annotations.insert(ACK_ANNOTATION.to_string(), ack_text(view));
            }
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.lease_name.clone()),
                    namespace: Some(self.settings.namespace.clone()),
                    labels: Some(BTreeMap::from([(
                        GROUP_LABEL.to_string(),
                        self.group_label.clone(),
                    )])),
                    annotations: Some(annotations),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.settings.identity.clone()),
                    lease_duration_seconds: Some(lease_secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    ..LeaseSpec::default()
                }),
            };
            return self
                .api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(|e| describe("create", e));
        };
        let annotations = lease.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(WATCHES_ANNOTATION.to_string(), self.watches.clone());
        if let Some(view) = ack {
            annotations.insert(ACK_ANNOTATION.to_string(), ack_text(view));
        }
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some(self.settings.identity.clone());
        spec.lease_duration_seconds = Some(lease_secs);
        spec.renew_time = Some(now);
        self.api
            .replace(&self.lease_name, &PostParams::default(), &lease)
            .await
            .map_err(|e| describe("update", e))
    }

    /// Deletes a dead replica's Lease, unless it changed since we read it.
    async fn forget(&self, lease: &Lease) {
        let Some(name) = lease.metadata.name.as_deref() else {
            return;
        };
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: lease.metadata.resource_version.clone(),
                uid: lease.metadata.uid.clone(),
            }),
            ..DeleteParams::default()
        };
        match self.api.delete(name, &params).await {
            Ok(_) => tracing::info!(
                target: "rudder::shard",
                lease = %format!("{}/{name}", self.settings.namespace),
                "removed the Lease of a replica that stopped without leaving"
            ),
            Err(e) => tracing::debug!(
                target: "rudder::shard",
                "could not remove the expired Lease {name}: {}",
                apierror::describe(&e)
            ),
        }
    }

    /// Leaves the group: claims nothing more, waits (up to `wait`) for reconciles in
    /// flight, then deletes our Lease so the others take our CRs over without waiting
    /// for it to expire.
    pub(crate) async fn leave(&self, shards: &Shards, wait: Duration) -> Result<(), String> {
        shards.stand_down();
        let deadline = Instant::now() + wait;
        while shards.busy() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if shards.busy() {
            // Deleting now would hand CRs over mid-reconcile: let the Lease expire.
            return Err("reconciles still running; the Lease is left to expire".into());
        }
        match self
            .api
            .delete(&self.lease_name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(apierror::describe(&e)),
        }
    }
}

/// The timings the hand-off needs (those leader election needs, too).
fn check(s: &ShardSettings) -> Result<(), ShardError> {
    if s.identity.is_empty() {
        return Err(ShardError::Config("the identity must not be empty".into()));
    }
    if s.namespace.is_empty() {
        return Err(ShardError::Config(
            "the Lease namespace must not be empty".into(),
        ));
    }
    if s.retry_period.is_zero() {
        return Err(ShardError::Config(
            "the retry period must not be zero".into(),
        ));
    }
    if s.lease_duration <= s.renew_deadline {
        return Err(ShardError::Config(format!(
            "the lease duration ({:?}) must be longer than the renew deadline ({:?})",
            s.lease_duration, s.renew_deadline
        )));
    }
    if s.renew_deadline <= s.retry_period.mul_f64(1.2) {
        return Err(ShardError::Config(format!(
            "the renew deadline ({:?}) must be longer than 1.2 × the retry period ({:?})",
            s.renew_deadline, s.retry_period
        )));
    }
    Ok(())
}

/// `group` as the start of a Lease name (a DNS subdomain): lower case, other
/// characters as `-`, at most 200 characters.
fn dns_name(group: &str) -> String {
    let mapped: String = group
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(200)
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.is_empty() {
        "rudder".to_string()
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_dns_names() {
        assert_eq!(dns_name("hello-operator"), "hello-operator");
        assert_eq!(
            dns_name("My_Operator.example.com"),
            "my-operator.example.com"
        );
        assert_eq!(dns_name("__"), "rudder");
        assert_eq!(dns_name(&"x".repeat(300)).len(), 200);
    }

    #[test]
    fn timings_are_checked() {
        let mut s = ShardSettings::new("ops", "g");
        assert!(check(&s).is_ok());
        s.renew_deadline = s.lease_duration;
        assert!(check(&s)
            .unwrap_err()
            .to_string()
            .contains("renew deadline"));
        let mut s = ShardSettings::new("", "g");
        assert!(check(&s).is_err());
        s.namespace = "ops".into();
        s.retry_period = Duration::ZERO;
        assert!(check(&s).is_err());
    }
}
