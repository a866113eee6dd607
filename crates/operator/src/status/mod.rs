//! The CR status in the Go helm-operator's exact shape (conditions and
//! `deployedRelease`), plus what GitOps tools wait on: `observedGeneration` and the
//! `Ready`, `Reconciling` and `Stalled` conditions kstatus and Flux read ([`Standing`]).
//! Conditions keep their `lastTransitionTime` unless their status flips, and the status
//! is written only when it changed (status subresource, or the main resource when the
//! CRD has none). What `deployedRelease.manifest` holds is the watch's
//! [`StatusManifest`] choice (`manifest`).
//!
//! The operator's cache of CRs keeps a stand-in for `deployedRelease.manifest` (its
//! digest, see [`slim`]): comparisons treat a stand-in as the manifest it stands for,
//! and a status write leaves the stored manifest alone unless it sets a new one.

use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::cr::CustomResource;

mod manifest;
pub use manifest::StatusManifest;

/// How a stand-in for a manifest starts; no YAML manifest Helm writes does.
const STAND_IN: &str = "rudder.dev/manifest-sha256:";

pub(crate) const INITIALIZED: &str = "Initialized";
pub(crate) const DEPLOYED: &str = "Deployed";
pub(crate) const RELEASE_FAILED: &str = "ReleaseFailed";
pub(crate) const IRRECONCILABLE: &str = "Irreconcilable";
/// rudder extension: the CR carries `reconcile-paused: "true"`.
pub(crate) const PAUSED: &str = "Paused";

pub(crate) const TRUE: &str = "True";
pub(crate) const FALSE: &str = "False";

pub(crate) const INSTALL_SUCCESSFUL: &str = "InstallSuccessful";
pub(crate) const UPGRADE_SUCCESSFUL: &str = "UpgradeSuccessful";
pub(crate) const UNINSTALL_SUCCESSFUL: &str = "UninstallSuccessful";
pub(crate) const INSTALL_ERROR: &str = "InstallError";
pub(crate) const UPGRADE_ERROR: &str = "UpgradeError";
pub(crate) const RECONCILE_ERROR: &str = "ReconcileError";
pub(crate) const UNINSTALL_ERROR: &str = "UninstallError";
/// rudder extension: `Paused`'s reason.
pub(crate) const RECONCILE_PAUSED: &str = "ReconcilePaused";
/// rudder extension: `Deployed=False` while the workloads of a release installed or
/// upgraded with `install-wait`/`upgrade-wait` are not ready yet.
pub(crate) const AWAITING_READINESS: &str = "AwaitingReadiness";

/// kstatus' conditions (abnormal-true: present only while they are True) and the
/// `Ready` condition Flux and most GitOps tools read.
pub(crate) const READY: &str = "Ready";
pub(crate) const RECONCILING: &str = "Reconciling";
pub(crate) const STALLED: &str = "Stalled";
pub(crate) const UNKNOWN: &str = "Unknown";
/// `Reconciling`'s reasons (and `Ready=Unknown`'s with them).
pub(crate) const INSTALLING: &str = "Installing";
pub(crate) const UPGRADING: &str = "Upgrading";
pub(crate) const UNINSTALLING: &str = "Uninstalling";
/// `Reconciling`'s reason after a failed attempt the operator retries by itself.
pub(crate) const RETRYING: &str = "Retrying";

/// Go's message on `Deployed=False/UninstallSuccessful` while `uninstall-wait` waits.
pub(crate) const WAITING_FOR_DELETION: &str = "Waiting until all resources are deleted.";

/// One condition (`HelmAppCondition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// RFC 3339 with seconds, as `metav1.Time` marshals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// The release a CR deployed (`HelmAppRelease`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeployedRelease {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
}

impl DeployedRelease {
    /// The manifest, unless this is a cached copy holding only its stand-in.
    pub(crate) fn manifest(&self) -> Option<&str> {
        (!is_stand_in(&self.manifest)).then_some(self.manifest.as_str())
    }

    fn same(&self, other: &DeployedRelease) -> bool {
        self.name == other.name && stand_in(&self.manifest) == stand_in(&other.manifest)
    }
}

fn is_stand_in(manifest: &str) -> bool {
    manifest.starts_with(STAND_IN)
}

/// What the cache keeps of `manifest`: its digest.
fn stand_in(manifest: &str) -> String {
    if is_stand_in(manifest) || manifest.is_empty() {
        return manifest.to_string();
    }
    let hex: String = Sha256::digest(manifest.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{STAND_IN}{hex}")
}

/// Trims a CR's status to what reconciling it reads, for the operator's cache: a
/// stand-in for the deployed manifest (often most of a CR's size; only an
/// `uninstall-wait` deletion reads it, from the API server). The metadata is trimmed
/// as the CR is decoded ([`CustomResource`]). A status that does not parse as a
/// JSON tree serde_json reads (a hand-written one nested past 128 levels) is kept as
/// it is.
pub(crate) fn slim(cr: &mut CustomResource) {
    let Some(raw) = cr.status_raw() else {
        return;
    };
    if !raw.get().contains("\"deployedRelease\"") {
        return;
    }
    let Ok(mut status) = serde_json::from_str::<Value>(raw.get()) else {
        return;
    };
    let manifest = status
        .get_mut("deployedRelease")
        .and_then(|d| d.get_mut("manifest"));
    let Some(Value::String(m)) = manifest else {
        return;
    };
    if is_stand_in(m) || m.is_empty() {
        return;
    }
    *m = stand_in(m);
    if let Ok(slimmed) = serde_json::value::to_raw_value(&status) {
        cr.set_status(Some(slimmed));
    }
}

/// `HelmAppStatus`, and the generation the last finished reconcile was of.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HelmAppStatus {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_release: Option<DeployedRelease>,
    /// The CR's `metadata.generation` when a reconcile of it last ended (kstatus
    /// counts a CR whose generation differs as in progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Where a CR's reconcile stands, as kstatus (`Reconciling`, `Stalled`, with
/// `observedGeneration`) and Flux (`Ready`) read it. One of these is set wherever a
/// Go condition changes, so the two sets never disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// An install, upgrade, uninstall or wait is under way: `Reconciling=True`,
    /// `Ready=Unknown`.
    Progressing,
    /// The last attempt failed and the operator retries the same inputs by itself:
    /// `Reconciling=True/Retrying`, `Ready=False`.
    Retrying,
    /// Failed, and will not succeed without a change: `Stalled=True`, `Ready=False`.
    Stalled,
    /// The release of the observed generation is deployed (and ready): `Ready=True`.
    Ready,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Condition>, D::Error> {
    Ok(Option::<Vec<Condition>>::deserialize(d)?.unwrap_or_default())
}

/// `metav1.Now()` as it is serialized: RFC 3339, whole seconds, UTC.
pub(crate) fn now() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl HelmAppStatus {
    /// The status of a CR; an absent or unreadable status is empty, as in Go's `StatusFor`.
    /// Read straight from the raw status: fields it does not know (a legacy release
    /// in it, say) are skipped unparsed.
    pub(crate) fn of(cr: &CustomResource) -> HelmAppStatus {
        cr.status_raw()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default()
    }

    /// The condition of `type_`, if set.
    pub(crate) fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition, replacing one of the same type; `lastTransitionTime` changes
    /// only when the status does (Go's `SetCondition`).
    pub(crate) fn set(
        &mut self,
        type_: &str,
        status: &str,
        reason: &str,
        message: impl Into<String>,
    ) {
        let mut c = Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message: message.into(),
            last_transition_time: None,
        };
        match self.conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(old) => {
                c.last_transition_time = if old.status != c.status {
                    Some(now())
                } else {
                    old.last_transition_time.clone()
                };
                *old = c;
            }
            None => {
                c.last_transition_time = Some(now());
                self.conditions.push(c);
            }
        }
        self.order();
    }

    /// Keeps the Go operator's conditions first, in the order they were set, and the
    /// ones kstatus and Flux read after them.
    fn order(&mut self) {
        let rank = |c: &Condition| match c.type_.as_str() {
            READY => 1,
            RECONCILING => 2,
            STALLED => 3,
            _ => 0,
        };
        if self
            .conditions
            .windows(2)
            .any(|w| rank(&w[0]) > rank(&w[1]))
        {
            self.conditions.sort_by_key(rank);
        }
    }

    /// Removes the condition of `type_` (Go's `RemoveCondition`).
    pub(crate) fn remove(&mut self, type_: &str) {
        self.conditions.retain(|c| c.type_ != type_);
    }

    /// Sets `Ready`, `Reconciling` and `Stalled` for `standing`: `Reconciling` and
    /// `Stalled` are never both True, and go when not (kstatus' abnormal-true
    /// polarity, as Flux leaves them). `reason` is `Ready`'s (and `Reconciling`'s or
    /// `Stalled`'s, except `Retrying`'s own).
    pub(crate) fn stand(&mut self, standing: Standing, reason: &str, message: impl Into<String>) {
        let message = message.into();
        match standing {
            Standing::Progressing => {
                self.remove(STALLED);
                self.set(RECONCILING, TRUE, reason, message.clone());
                self.set(READY, UNKNOWN, reason, message);
            }
            Standing::Retrying => {
                self.remove(STALLED);
                self.set(RECONCILING, TRUE, RETRYING, message.clone());
                self.set(READY, FALSE, reason, message);
            }
            Standing::Stalled => {
                self.remove(RECONCILING);
                self.set(STALLED, TRUE, reason, message.clone());
                self.set(READY, FALSE, reason, message);
            }
            Standing::Ready => {
                self.remove(RECONCILING);
                self.remove(STALLED);
                self.set(READY, TRUE, reason, message);
            }
        }
    }

    /// Whether the condition of `type_` is there with status True.
    pub(crate) fn is_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|c| c.status == TRUE)
    }

    /// The status as JSON, with `deployedRelease: null` when there is none and
    /// `manifest: null` when it holds none, so a merge patch removes a stale one; a
    /// stand-in manifest is left out, so the stored one stays.
    pub(crate) fn to_patch_value(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or_else(|_| json!({}));
        let stored = v.get_mut("deployedRelease").and_then(Value::as_object_mut);
        match (&self.deployed_release, stored) {
            (None, _) => v["deployedRelease"] = Value::Null,
            (Some(d), Some(stored)) if is_stand_in(&d.manifest) => {
                stored.remove("manifest");
            }
            (Some(d), Some(stored)) if d.manifest.is_empty() => {
                stored.insert("manifest".into(), Value::Null);
            }
            _ => {}
        }
        v
    }

    /// The same status, a stand-in counting as the manifest it stands for.
    pub(crate) fn same_as(&self, other: &HelmAppStatus) -> bool {
        self.conditions == other.conditions
            && self.observed_generation == other.observed_generation
            && match (&self.deployed_release, &other.deployed_release) {
                (None, None) => true,
                (Some(a), Some(b)) => a.same(b),
                _ => false,
            }
    }
}

/// The most a CR may weigh once its status is written: 1 MiB, under etcd's 1.5 MiB
/// request limit with room for the server's own fields (managed fields, a watch
/// event's envelope).
pub(crate) const MAX_OBJECT_BYTES: usize = 1 << 20;

/// How the note on what [`HelmAppStatus::fit`] left out begins.
const LEFT_OUT_NOTE: &str = " [left out to keep the custom resource within";

/// The shortest a condition message is cut to.
const MIN_MESSAGE: usize = 1024;

fn cut(message: &mut String, max: usize) -> bool {
    if message.len() <= max {
        return false;
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let cut = message.len() - end;
    message.truncate(end);
    message.push_str(&format!("… ({cut} bytes cut)"));
    true
}

impl HelmAppStatus {
    fn weight(&self) -> usize {
        serde_json::to_vec(&self.to_patch_value()).map_or(0, |v| v.len())
    }

    /// Keeps the status within `room` bytes, whatever the chart's NOTES and manifest
    /// weigh: first `deployedRelease.manifest` is left out, then condition messages
    /// are cut; the `Deployed` condition (else the first) says what was left out.
    pub(crate) fn fit(&mut self, room: usize) {
        // A condition kept from the last write may carry the note already.
        for c in &mut self.conditions {
            if let Some(at) = c.message.find(LEFT_OUT_NOTE) {
                c.message.truncate(at);
            }
        }
        if self.weight() <= room {
            return;
        }
        let mut left_out = Vec::new();
        if let Some(d) = self
            .deployed_release
            .as_mut()
            .filter(|d| !d.manifest.is_empty())
        {
            left_out.push(format!(
                "status.deployedRelease.manifest ({} bytes; `helm get manifest {}` shows it)",
                d.manifest.len(),
                d.name
            ));
            d.manifest.clear();
        }
        let note_room = 512;
        let over = self.weight().saturating_sub(room.saturating_sub(note_room));
        if over > 0 {
            let per =
                (room.saturating_sub(note_room) / self.conditions.len().max(1)).max(MIN_MESSAGE);
            for c in &mut self.conditions {
                if cut(&mut c.message, per) {
                    left_out.push(format!("the end of the {} message", c.type_));
                }
            }
        }
        if left_out.is_empty() {
            return;
        }
        let note = format!(
            "{LEFT_OUT_NOTE} {MAX_OBJECT_BYTES} bytes: {}]",
            left_out.join(", ")
        );
        let at = self
            .conditions
            .iter()
            .position(|c| c.type_ == DEPLOYED)
            .unwrap_or(0);
        if let Some(c) = self.conditions.get_mut(at) {
            c.message.push_str(&note);
        }
    }
}

/// Writes `status` on the CR when it differs from `original`; returns whether it wrote.
/// Uses the status subresource, falling back to the main resource when the CRD has no
/// status subresource (the API answers 404 on `/status` then; `on_main` remembers it
/// for the kind). A CR that is gone is not an error.
///
/// Without a status subresource every change of the status is a change of the object,
/// which bumps its generation: an `observedGeneration` written there would never
/// match, and each write would set off another reconcile. So none is written there
/// (kstatus then skips the generation check, as it does for any resource without one).
pub(crate) async fn write_if_changed(
    api: &Api<CustomResource>,
    name: &str,
    original: &HelmAppStatus,
    status: &HelmAppStatus,
    on_main: &AtomicBool,
) -> Result<Written, kube::Error> {
    if original.same_as(status) {
        return Ok(Written::Unchanged);
    }
    let params = PatchParams::default();
    let written = |cr: CustomResource| Written::At(cr.metadata.resource_version);
    if !on_main.load(Ordering::Relaxed) {
        let patch = json!({ "status": status.to_patch_value() });
        match api.patch_status(name, &params, &Patch::Merge(&patch)).await {
            Ok(cr) => return Ok(written(cr)),
            Err(kube::Error::Api(e)) if e.code == 404 => on_main.store(true, Ordering::Relaxed),
            Err(e) => return Err(e),
        }
    }
    let mut value = status.to_patch_value();
    if let Some(v) = value.as_object_mut() {
        v.insert("observedGeneration".into(), Value::Null);
    }
    let patch = json!({ "status": value });
    match api.patch(name, &params, &Patch::Merge(&patch)).await {
        Ok(cr) => Ok(written(cr)),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Written::Unchanged),
        Err(e) => Err(e),
    }
}

/// What [`write_if_changed`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written {
    /// Nothing to write (or the CR is gone).
    Unchanged,
    /// Written; the CR's resourceVersion after the write.
    At(Option<String>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_keeps_transition_time_unless_status_flips() {
        let mut s = HelmAppStatus::default();
        s.set(DEPLOYED, TRUE, INSTALL_SUCCESSFUL, "notes");
        s.conditions[0].last_transition_time = Some("2020-01-01T00:00:00Z".into());
        s.set(DEPLOYED, TRUE, UPGRADE_SUCCESSFUL, "more notes");
        assert_eq!(
            s.conditions[0].last_transition_time.as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
        assert_eq!(s.conditions[0].reason, UPGRADE_SUCCESSFUL);
        s.set(DEPLOYED, FALSE, UNINSTALL_SUCCESSFUL, "");
        assert_ne!(
            s.conditions[0].last_transition_time.as_deref(),
            Some("2020-01-01T00:00:00Z")
        );
        s.remove(DEPLOYED);
        assert!(s.conditions.is_empty());
    }

    #[test]
    fn serializes_like_go() {
        let mut s = HelmAppStatus::default();
        s.set(INITIALIZED, TRUE, "", "");
        s.deployed_release = Some(DeployedRelease {
            name: "r".into(),
            manifest: "m".into(),
        });
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["conditions"][0]["type"], "Initialized");
        assert_eq!(v["conditions"][0]["status"], "True");
        assert!(v["conditions"][0].get("reason").is_none());
        assert!(v["conditions"][0]["lastTransitionTime"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
        assert_eq!(v["deployedRelease"], json!({"name": "r", "manifest": "m"}));
        let empty = HelmAppStatus::default().to_patch_value();
        assert_eq!(empty, json!({"conditions": [], "deployedRelease": null}));
    }

    #[test]
    fn the_cache_keeps_a_stand_in_for_the_manifest() {
        let mut cr: CustomResource = serde_json::from_value(json!({
            "apiVersion": "test.rudder.dev/v1", "kind": "Demo",
            "metadata": {
                "name": "app",
                "annotations": {crate::cr::LAST_APPLIED: "{...}", "keep": "me"},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            },
            "spec": {"a": 1},
            "status": {"conditions": [], "deployedRelease": {"name": "app", "manifest": "kind: ConfigMap"}},
        }))
        .unwrap();
        let full = HelmAppStatus::of(&cr);
        slim(&mut cr);
        assert!(cr.metadata.managed_fields.is_none());
        let annotations = cr.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["keep"]);
        let cached = HelmAppStatus::of(&cr);
        let d = cached.deployed_release.clone().unwrap();
        assert_eq!(d.manifest(), None, "a stand-in is no manifest");
        assert_eq!(
            full.deployed_release.as_ref().unwrap().manifest(),
            Some("kind: ConfigMap")
        );
        assert!(
            cached.same_as(&full) && full.same_as(&cached),
            "the same release"
        );
        let mut changed = full.clone();
        changed.deployed_release.as_mut().unwrap().manifest = "kind: Secret".into();
        assert!(!cached.same_as(&changed));
        // Slimming twice changes nothing; writing keeps the stored manifest.
        slim(&mut cr);
        assert_eq!(HelmAppStatus::of(&cr), cached);
        let mut failed = cached.clone();
        failed.set(RELEASE_FAILED, TRUE, UPGRADE_ERROR, "boom");
        assert!(!failed.same_as(&cached));
        assert_eq!(
            failed.to_patch_value()["deployedRelease"],
            json!({"name": "app"})
        );
        assert_eq!(
            full.to_patch_value()["deployedRelease"]["manifest"],
            "kind: ConfigMap"
        );
    }

    #[test]
    fn reads_status_tolerantly() {
        let cr: CustomResource =
            serde_json::from_value(json!({"status": {"conditions": null, "extra": 1}})).unwrap();
        assert_eq!(HelmAppStatus::of(&cr), HelmAppStatus::default());
        let cr: CustomResource = serde_json::from_value(json!({"status": "weird"})).unwrap();
        assert_eq!(HelmAppStatus::of(&cr), HelmAppStatus::default());
        // A legacy release nested deeper than serde_json's trees go is skipped.
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        let text = format!(
            r#"{{"status":{{"release":{deep},"conditions":[{{"type":"Deployed","status":"True"}}]}}}}"#
        );
        let cr: CustomResource = serde_json::from_str(&text).unwrap();
        assert_eq!(HelmAppStatus::of(&cr).conditions.len(), 1);
    }

    #[test]
    fn a_status_too_large_for_the_object_leaves_out_the_manifest_then_cuts_messages() {
        let mut s = HelmAppStatus::default();
        s.set(INITIALIZED, TRUE, "", "");
        s.set(DEPLOYED, TRUE, INSTALL_SUCCESSFUL, "n".repeat(300_000));
        s.deployed_release = Some(DeployedRelease {
            name: "r".into(),
            manifest: "m".repeat(2_000_000),
        });
        let mut small = s.clone();
        small.deployed_release.as_mut().unwrap().manifest = "m".into();
        let mut unchanged = small.clone();
        unchanged.fit(MAX_OBJECT_BYTES);
        assert_eq!(unchanged, small, "a status that fits stays as it is");

        let mut fitted = s.clone();
        fitted.fit(MAX_OBJECT_BYTES);
        assert!(fitted.weight() <= MAX_OBJECT_BYTES);
        assert_eq!(fitted.deployed_release.as_ref().unwrap().manifest, "");
        let deployed = fitted.condition(DEPLOYED).unwrap();
        assert!(deployed.message.starts_with(&"n".repeat(300_000)));
        assert!(
            deployed.message.ends_with(
                " [left out to keep the custom resource within 1048576 bytes: \
             status.deployedRelease.manifest (2000000 bytes; `helm get manifest r` shows it)]"
            ),
            "{}",
            &deployed.message[300_000..]
        );

        // Fitting again what was written (the note on it) changes nothing.
        let mut again = fitted.clone();
        again.deployed_release.as_mut().unwrap().manifest = "m".repeat(2_000_000);
        again.fit(MAX_OBJECT_BYTES);
        assert_eq!(again, fitted);

        // A spec that leaves little room: the messages are cut too, and say so.
        let mut tight = s;
        tight.fit(100_000);
        assert!(tight.weight() <= 100_000, "{}", tight.weight());
        let deployed = tight.condition(DEPLOYED).unwrap();
        assert!(
            deployed.message.contains("bytes cut)"),
            "{}",
            deployed.message
        );
        assert!(
            deployed.message.ends_with(
                "status.deployedRelease.manifest (2000000 bytes; `helm get manifest r` shows it), \
             the end of the Deployed message]"
            ),
            "{}",
            deployed.message
        );
    }
}
