//! Readiness on a cluster where nothing runs: patches the status subresource of
//! Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, PVCs and Pods in one
//! namespace to what a kubelet and the controllers would report once everything is up,
//! the way `rudder apiserver --simulate-readiness` does, so tests that wait for ready
//! workloads pass on a kubelet-less control plane too.
//!
//! Where kube-controller-manager runs, it computes workload status from Pods and
//! writes it back over anything else: a Deployment marked ready through its status is
//! set back to no available replicas at its next sync. So there (its leader Lease in
//! `kube-system` is held) the helper leaves workload status alone and marks the Pods
//! the controllers create Running and Ready (Succeeded for a Job's), from which the
//! controller manager reaches the same ready status itself. A claim binds unless it
//! names a StorageClass the cluster does not have (it would stay Pending on any
//! cluster); a PersistentVolume controller may set a claim back to Pending, so tests
//! that wait for claims can race with it there.

use std::time::Duration;

use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::{json, Value};

/// How often the namespace is looked at.
const PERIOD: Duration = Duration::from_millis(200);

/// The kinds the helper settles, as (group, version, kind, plural).
const KINDS: &[(&str, &str, &str, &str)] = &[
    ("apps", "v1", "Deployment", "deployments"),
    ("apps", "v1", "StatefulSet", "statefulsets"),
    ("apps", "v1", "DaemonSet", "daemonsets"),
    ("apps", "v1", "ReplicaSet", "replicasets"),
    ("batch", "v1", "Job", "jobs"),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("", "v1", "Pod", "pods"),
];

/// Kinds whose status kube-controller-manager computes from their Pods (and writes
/// back over ours).
const COMPUTED: &[&str] = &[
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
];

/// How long [`settle`] waits for a controller manager to compute a ready status from
/// the Pods it marked ready.
const COMPUTED_WAIT: Duration = Duration::from_secs(30);

/// Whether a kube-controller-manager runs: its leader Lease is held (renewed within a
/// minute). It computes workload status from Pods, overwriting status patches.
pub(crate) async fn controller_manager_runs(client: &kube::Client) -> bool {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "kube-system");
    let Ok(Some(lease)) = leases.get_opt("kube-controller-manager").await else {
        return false;
    };
    let renewed = lease.spec.and_then(|s| s.renew_time).map(|t| t.0);
    renewed.is_some_and(|t| {
        k8s_openapi::jiff::Timestamp::now().duration_since(t)
            < k8s_openapi::jiff::SignedDuration::from_secs(60)
    })
}

/// Settles `namespace`'s workloads until aborted.
pub(crate) async fn simulate(client: kube::Client, namespace: String) {
    let computed = controller_manager_runs(&client).await;
    let apis: Vec<(&str, Api<DynamicObject>)> = KINDS
        .iter()
        .filter(|(_, _, kind, _)| !(computed && COMPUTED.contains(kind)))
        .map(|(group, version, kind, plural)| {
            let gvk = GroupVersionKind::gvk(group, version, kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
            (
                *kind,
                Api::namespaced_with(client.clone(), &namespace, &resource),
            )
        })
        .collect();
    let classes: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("storage.k8s.io", "v1", "StorageClass"),
            "storageclasses",
        ),
    );
    loop {
        for (kind, api) in &apis {
            settle_all(kind, api, &classes).await;
        }
        tokio::time::sleep(PERIOD).await;
    }
}

/// Whether a claim could bind: it names no StorageClass, or one that exists.
async fn class_exists(obj: &DynamicObject, classes: &Api<DynamicObject>) -> bool {
    match field(obj, "/spec/storageClassName").and_then(Value::as_str) {
        None | Some("") => true,
        Some(class) => !matches!(classes.get_opt(class).await, Ok(None)),
    }
}

async fn settle_all(kind: &str, api: &Api<DynamicObject>, classes: &Api<DynamicObject>) {
    let Ok(list) = api.list(&ListParams::default()).await else {
        return;
    };
    for obj in list.items {
        if obj.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if kind == "PersistentVolumeClaim" && !class_exists(&obj, classes).await {
            continue;
        }
        let Some(status) = settled_status(kind, &obj) else {
            continue;
        };
        let Some(name) = obj.metadata.name.as_deref() else {
            continue;
        };
        // A conflict or a deletion in between is seen on the next pass.
        let _ = api
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await;
    }
}

/// Marks one object of `api` (of `kind`: Deployment, StatefulSet, DaemonSet, ReplicaSet,
/// Job, PersistentVolumeClaim or Pod) ready through its status subresource, as the
/// readiness helper would have, for a test that kept it waiting on purpose
/// ([`ClusterBuilder::simulate_readiness`](crate::ClusterBuilder::simulate_readiness)
/// off). `Ok(false)` when it was ready already.
///
/// Where a kube-controller-manager runs (see the module docs), a workload is made
/// ready through its Pods instead, and this waits (up to 30 s) until the controller
/// manager shows it ready; only after that, or for a workload without Pods, is its
/// status patched.
pub async fn settle(api: &Api<DynamicObject>, kind: &str, name: &str) -> Result<bool, kube::Error> {
    let obj = api.get(name).await?;
    if settled_status(kind, &obj).is_none() {
        return Ok(false);
    }
    let client = api.clone().into_client();
    if COMPUTED.contains(&kind) && controller_manager_runs(&client).await {
        let deadline = tokio::time::Instant::now() + COMPUTED_WAIT;
        while tokio::time::Instant::now() < deadline {
            settle_pods_of(&client, &obj).await;
            let now = api.get(name).await?;
            if settled_status(kind, &now).is_none() {
                return Ok(true);
            }
            tokio::time::sleep(PERIOD).await;
        }
    }
    let obj = api.get(name).await?;
    let Some(status) = settled_status(kind, &obj) else {
        return Ok(true);
    };
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await?;
    Ok(true)
}

/// Marks the Pods `workload`'s selector picks in its namespace Running and Ready
/// (Succeeded for a Job's).
async fn settle_pods_of(client: &kube::Client, workload: &DynamicObject) {
    let Some(ns) = workload.metadata.namespace.as_deref() else {
        return;
    };
    let selector: Vec<String> = field(workload, "/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
                .collect()
        })
        .unwrap_or_default();
    if selector.is_empty() {
        return;
    }
    let pods: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods"),
    );
    let Ok(list) = pods
        .list(&ListParams::default().labels(&selector.join(",")))
        .await
    else {
        return;
    };
    for pod in list.items {
        let (Some(name), Some(status)) = (pod.metadata.name.as_deref(), pod_status(&pod)) else {
            continue;
        };
        // A conflict or a deletion in between is seen on the next pass.
        let _ = pods
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await;
    }
}

fn field<'a>(obj: &'a DynamicObject, pointer: &str) -> Option<&'a Value> {
    obj.data.pointer(pointer)
}

fn int(obj: &DynamicObject, pointer: &str, default: i64) -> i64 {
    field(obj, pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn condition_true(obj: &DynamicObject, ty: &str) -> bool {
    field(obj, "/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == ty && c["status"] == "True"))
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// The status `obj` would have once up, or `None` when it already shows that.
pub(crate) fn settled_status(kind: &str, obj: &DynamicObject) -> Option<Value> {
    let generation = obj.metadata.generation.unwrap_or(1);
    let caught_up = int(obj, "/status/observedGeneration", 0) >= generation;
    let replicas = int(obj, "/spec/replicas", 1);
    let name = obj.metadata.name.clone().unwrap_or_default();
    match kind {
        "Deployment" => {
            let done = caught_up
                && int(obj, "/status/updatedReplicas", -1) == replicas
                && int(obj, "/status/availableReplicas", -1) == replicas
                && int(obj, "/status/readyReplicas", -1) == replicas;
            (!done).then(|| {
                let at = now();
                json!({
                    "observedGeneration": generation,
                    "replicas": replicas, "updatedReplicas": replicas,
                    "readyReplicas": replicas, "availableReplicas": replicas,
                    "conditions": [
                        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                         "message": "Deployment has minimum availability.",
                         "lastUpdateTime": at, "lastTransitionTime": at},
                        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                         "message": format!("Deployment \"{name}\" has successfully progressed."),
                         "lastUpdateTime": at, "lastTransitionTime": at},
                    ],
                })
            })
        }
        "StatefulSet" => {
            let revision = format!("{name}-testkit");
            let done = caught_up
                && int(obj, "/status/readyReplicas", -1) == replicas
                && int(obj, "/status/updatedReplicas", -1) == replicas
                && field(obj, "/status/currentRevision") == field(obj, "/status/updateRevision");
            (!done).then(|| {
                json!({
                    "observedGeneration": generation, "replicas": replicas,
                    "readyReplicas": replicas, "currentReplicas": replicas,
                    "updatedReplicas": replicas, "availableReplicas": replicas,
                    "currentRevision": revision, "updateRevision": revision,
                })
            })
        }
        "ReplicaSet" => {
            let done = caught_up
                && int(obj, "/status/readyReplicas", -1) == replicas
                && int(obj, "/status/availableReplicas", -1) == replicas;
            (!done).then(|| {
                json!({
                    "observedGeneration": generation, "replicas": replicas,
                    "readyReplicas": replicas, "availableReplicas": replicas,
                    "fullyLabeledReplicas": replicas,
                })
            })
        }
        "DaemonSet" => {
            let want = int(obj, "/status/desiredNumberScheduled", 0).max(1);
            let done = caught_up
                && int(obj, "/status/numberReady", -1) >= want
                && int(obj, "/status/updatedNumberScheduled", -1) >= want;
            (!done).then(|| {
                json!({
                    "observedGeneration": generation,
                    "desiredNumberScheduled": want, "currentNumberScheduled": want,
                    "updatedNumberScheduled": want, "numberReady": want,
                    "numberAvailable": want, "numberMisscheduled": 0,
                })
            })
        }
        "Job" => {
            let finished = condition_true(obj, "Complete")
                || condition_true(obj, "Failed")
                || field(obj, "/spec/suspend") == Some(&json!(true));
            (!finished).then(|| {
                let at = now();
                let start = field(obj, "/status/startTime")
                    .cloned()
                    .unwrap_or(json!(at));
                let met = |ty: &str| {
                    json!({"type": ty, "status": "True", "reason": "CompletionsReached",
                           "message": "Reached expected number of succeeded pods",
                           "lastProbeTime": at, "lastTransitionTime": at})
                };
                json!({
                    "startTime": start, "completionTime": at,
                    "succeeded": int(obj, "/spec/completions", 1),
                    "active": 0, "ready": 0, "terminating": 0,
                    "uncountedTerminatedPods": {},
                    "conditions": [met("SuccessCriteriaMet"), met("Complete")],
                })
            })
        }
        "PersistentVolumeClaim" => {
            let bound = field(obj, "/status/phase") == Some(&json!("Bound"));
            (!bound).then(|| {
                let modes = field(obj, "/spec/accessModes")
                    .cloned()
                    .unwrap_or(json!([]));
                let size = field(obj, "/spec/resources/requests/storage")
                    .cloned()
                    .unwrap_or(json!("1Gi"));
                json!({"phase": "Bound", "accessModes": modes, "capacity": {"storage": size}})
            })
        }
        "Pod" => pod_status(obj),
        _ => None,
    }
}

/// A Job's Pods succeed, other Pods run and are Ready.
fn pod_status(obj: &DynamicObject) -> Option<Value> {
    let of_job = obj
        .metadata
        .owner_references
        .as_ref()
        .is_some_and(|o| o.iter().any(|r| r.kind == "Job"));
    let phase = field(obj, "/status/phase").and_then(Value::as_str);
    let done = if of_job {
        matches!(phase, Some("Succeeded" | "Failed"))
    } else {
        phase == Some("Running") && condition_true(obj, "Ready")
    };
    if done {
        return None;
    }
    let at = now();
    let containers: Vec<Value> = field(obj, "/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let state = if of_job {
                        json!({"terminated": {"exitCode": 0, "reason": "Completed",
                                              "startedAt": at, "finishedAt": at}})
                    } else {
                        json!({"running": {"startedAt": at}})
                    };
                    json!({"name": c["name"], "image": c["image"], "imageID": "",
                           "ready": !of_job, "started": !of_job, "restartCount": 0,
                           "state": state})
                })
                .collect()
        })
        .unwrap_or_default();
    let ready = if of_job { "False" } else { "True" };
    let cond = |ty: &str, status: &str| json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": at});
    Some(json!({
        "phase": if of_job { "Succeeded" } else { "Running" },
        "startTime": at,
        "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
                       cond("ContainersReady", ready), cond("Ready", ready)],
        "containerStatuses": containers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> DynamicObject {
        match serde_json::from_value(v) {
            Ok(o) => o,
            Err(e) => panic!("test object: {e}"),
        }
    }

    #[test]
    fn a_deployment_is_settled_once_and_then_left_alone() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": 2}, "spec": {"replicas": 3}});
        let status = settled_status("Deployment", &obj(d.clone())).expect("unsettled");
        assert_eq!(status["availableReplicas"], 3);
        assert_eq!(status["observedGeneration"], 2);
        d["status"] = status;
        assert_eq!(settled_status("Deployment", &obj(d)), None);
    }

    #[test]
    fn jobs_complete_once_and_failed_jobs_stay_failed() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"completions": 2}});
        let status = settled_status("Job", &obj(job.clone())).expect("unfinished");
        assert_eq!(status["succeeded"], 2);
        assert_eq!(status["conditions"][1]["type"], "Complete");
        let mut failed = job;
        failed["status"] = json!({"conditions": [{"type": "Failed", "status": "True"}]});
        assert_eq!(settled_status("Job", &obj(failed)), None);
    }

    #[test]
    fn claims_bind_with_their_requested_size() {
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}});
        let status = settled_status("PersistentVolumeClaim", &obj(pvc)).expect("pending");
        assert_eq!(status["phase"], "Bound");
        assert_eq!(status["capacity"]["storage"], "5Gi");
    }

    #[test]
    fn a_jobs_pods_succeed_and_other_pods_run() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        let status = settled_status("Pod", &obj(pod.clone())).expect("pending");
        assert_eq!(status["phase"], "Succeeded");
        let mut plain = pod;
        plain["metadata"]["ownerReferences"] = json!([]);
        let status = settled_status("Pod", &obj(plain)).expect("pending");
        assert_eq!(status["phase"], "Running");
        assert_eq!(status["conditions"][3]["status"], "True");
    }
}
