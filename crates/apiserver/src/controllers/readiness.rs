//! Simulated readiness: with `--simulate-readiness`, workloads report
//! ready replicas, Jobs complete and Pods run shortly after they change,
//! so `kubectl wait`, rollout checks and operators see a settled cluster.
//! Deployments also get a ReplicaSet and Pods (see `workloads`).

use super::{Change, Changes};
use crate::object::{self, Target, WriteOpts};
use crate::storage::{EventType, Stored};
use crate::App;
use apitypes::ResourceType;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

const DELAY: Duration = Duration::from_millis(200);

/// The resources whose objects report simulated status (`group/plural/`
/// of their storage keys).
const SIMULATED: &[&str] = &[
    "apps/deployments/",
    "apps/statefulsets/",
    "apps/daemonsets/",
    "apps/replicasets/",
    "batch/jobs/",
    "/pods/",
];

fn simulated(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.kind.as_str()),
        (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        ) | ("batch", "Job")
            | ("", "Pod")
    )
}

fn gen(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn replicas(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn has_condition(obj: &Value, t: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(t)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Whether an object of `kind` already shows the simulated settled state.
pub(super) fn settled(kind: &str, obj: &Value) -> bool {
    let observed = obj
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        == Some(gen(obj));
    match kind {
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            observed
                && obj
                    .pointer("/status/readyReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    == replicas(obj)
                && obj
                    .pointer("/status/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(-1)
                    == replicas(obj)
        }
        "DaemonSet" => observed,
        "Job" => {
            has_condition(obj, "Complete")
                || obj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
        }
        "Pod" => obj.pointer("/status/phase").and_then(Value::as_str) == Some("Running"),
        _ => true,
    }
}

fn desired_status(rt: &ResourceType, obj: &Value) -> Value {
    let now = crate::object::meta::now_rfc3339();
    let name = object::name_of(obj);
    let g = gen(obj);
    let r = replicas(obj);
    let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastUpdateTime": now, "lastTransitionTime": now, "reason": reason, "message": msg});
    match rt.kind.as_str() {
        "Deployment" => json!({
            "observedGeneration": g, "replicas": r, "updatedReplicas": r, "readyReplicas": r, "availableReplicas": r,
            "conditions": [
                cond("Available", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                cond("Progressing", "NewReplicaSetAvailable", &format!("ReplicaSet \"{name}-{}\" has successfully progressed.", super::workloads::template_hash(obj.pointer("/spec/template").unwrap_or(&Value::Null)))),
            ]
        }),
        "StatefulSet" => json!({
            "observedGeneration": g, "replicas": r, "readyReplicas": r, "currentReplicas": r, "updatedReplicas": r,
            "availableReplicas": r, "currentRevision": format!("{name}-rudder"), "updateRevision": format!("{name}-rudder"),
            "collisionCount": 0
        }),
        "ReplicaSet" => json!({
            "observedGeneration": g, "replicas": r, "readyReplicas": r, "availableReplicas": r, "fullyLabeledReplicas": r
        }),
        "DaemonSet" => json!({
            "observedGeneration": g, "currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberReady": 1,
            "numberAvailable": 1, "updatedNumberScheduled": 1, "numberMisscheduled": 0
        }),
        "Job" => {
            let completions = obj
                .pointer("/spec/completions")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let start = obj
                .pointer("/status/startTime")
                .cloned()
                .unwrap_or(json!(now));
            json!({
                "startTime": start, "completionTime": now, "succeeded": completions, "active": 0, "ready": 0,
                "terminating": 0, "uncountedTerminatedPods": {},
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": now, "lastTransitionTime": now, "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"},
                    {"type": "Complete", "status": "True", "lastProbeTime": now, "lastTransitionTime": now, "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}
                ]
            })
        }
        "Pod" => {
            let containers: Vec<Value> = obj.pointer("/spec/containers").and_then(Value::as_array).map(|cs| cs.iter().map(|c| json!({
                "name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": true, "started": true,
                "restartCount": 0, "state": {"running": {"startedAt": now}}
            })).collect()).unwrap_or_default();
            let pc = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
            json!({
                "phase": "Running", "podIP": "10.244.0.10", "hostIP": "10.0.0.1", "startTime": now,
                "conditions": [pc("PodScheduled"), pc("Initialized"), pc("ContainersReady"), pc("Ready")],
                "containerStatuses": containers
            })
        }
        _ => obj.get("status").cloned().unwrap_or(json!({})),
    }
}

/// An object waiting for its simulated status.
struct Due {
    at: Instant,
    rt: Arc<ResourceType>,
    key: String,
}

/// Runs until shutdown: every object of a simulated kind that changes and
/// is not settled gets its simulated status [`DELAY`] later.
pub(super) async fn run(app: Arc<App>, mut changes: Changes) {
    // Everything waits the same delay, so the queue is in due order.
    let mut due: VecDeque<Due> = VecDeque::new();
    loop {
        let next = due.front().map(|d| d.at);
        tokio::select! {
            change = changes.next() => match change {
                None => return,
                Some(Change::Event(ev)) if ev.kind != EventType::Deleted => {
                    due.extend(consider(&app, &ev.key, &ev.object));
                }
                Some(Change::Event(_)) => {}
                Some(Change::Listed(all)) => {
                    due.extend(all.iter().filter_map(|(key, obj)| consider(&app, key, obj)));
                }
            },
            _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                let now = Instant::now();
                while due.front().is_some_and(|d| d.at <= now) {
                    if let Some(d) = due.pop_front() {
                        report(&app, &d.rt, &d.key);
                    }
                }
            }
        }
    }
}

/// The object to report on later, if it is of a simulated kind and not
/// settled yet.
fn consider(app: &App, key: &str, stored: &Stored) -> Option<Due> {
    if stored.deleting() || !SIMULATED.iter().any(|p| key.starts_with(p)) {
        return None;
    }
    let (g, p) = super::resource_of(key)?;
    let rt = app.registry.find_any_version(g, p)?;
    if !simulated(&rt) || settled(&rt.kind, &stored.value()) {
        return None;
    }
    Some(Due {
        at: Instant::now() + DELAY,
        rt,
        key: key.to_string(),
    })
}

/// Writes the object's simulated status, unless it has settled meanwhile.
fn report(app: &App, rt: &ResourceType, key: &str) {
    let opts = WriteOpts {
        dry_run: false,
        manager: "rudder-readiness".into(),
        ..Default::default()
    };
    let res = object::modify(app, rt, key, Target::Status, &opts, true, |cur| {
        let mut n = cur.clone();
        if !settled(&rt.kind, cur) {
            n["status"] = desired_status(rt, cur);
        }
        Ok(n)
    });
    match res {
        Err(e) if e.code != 404 => {
            tracing::debug!("readiness update of {key} failed: {e}");
        }
        _ => {}
    }
}
