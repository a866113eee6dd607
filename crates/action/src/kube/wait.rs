//! Waiting for a release's objects (`wait`): what "ready" means per kind, close to
//! Helm's readiness checker, and polling until everything is ready or the timeout
//! passes, with a message naming each object still not ready and why.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use serde_json::Value;

use super::{condition, KubeClient, Object, Owner};
use crate::error::{Error, Result};

/// The log target of the lines a wait writes while it goes on; the CLI prints them on
/// stderr, the operator logs them like its other lines.
pub const WAIT_LOG_TARGET: &str = "rudder::wait";

/// How often a wait says again what it is still waiting for.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// Where the lines a wait writes go besides the log: the operator puts them in a CR's
/// status while an install or upgrade waits. Called at most every 5 s per
/// wait, with the line as logged.
#[derive(Clone, Default)]
pub struct WaitReport(Option<Arc<WaitReportFn>>);

/// The function inside a [`WaitReport`].
pub type WaitReportFn = dyn Fn(&str) + Send + Sync;

impl WaitReport {
    /// Reports to `f` as well as to the log.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> WaitReport {
        WaitReport(Some(Arc::new(f)))
    }

    fn send(&self, line: &str) {
        if let Some(f) = &self.0 {
            f(line);
        }
    }
}

impl std::fmt::Debug for WaitReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "WaitReport(..)"
        } else {
            "WaitReport(log only)"
        })
    }
}

/// Hears of every write an action makes to its release's objects (applies, field
/// ownership take-overs, deletions): when it is sent, and how it ended. The
/// operator's dependent watches tell these from drift, so its own applies do not come
/// back as repairs.
#[derive(Clone, Default)]
pub struct WriteReport(Option<Arc<WriteReportFn>>);

/// The function inside a [`WriteReport`].
pub type WriteReportFn = dyn Fn(&super::ObjectRef, Write<'_>) + Send + Sync;

/// One step of a write to a release object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write<'a> {
    /// About to be sent.
    Sending,
    /// The server stored it at this resourceVersion (`None`: deleted it).
    Done(Option<&'a str>),
    /// It failed (or found nothing to delete).
    Failed,
}

impl WriteReport {
    pub fn new(f: impl Fn(&super::ObjectRef, Write<'_>) + Send + Sync + 'static) -> WriteReport {
        WriteReport(Some(Arc::new(f)))
    }

    pub(crate) fn report(&self, object: &super::ObjectRef, step: Write<'_>) {
        if let Some(f) = &self.0 {
            f(object, step);
        }
    }
}

impl std::fmt::Debug for WriteReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteReport(..)")
    }
}

impl PartialEq for WriteReport {
    fn eq(&self, _: &WriteReport) -> bool {
        true
    }
}

impl Eq for WriteReport {}

/// Every report is as good as another: owners compare by release only.
impl PartialEq for WaitReport {
    fn eq(&self, _: &WaitReport) -> bool {
        true
    }
}

impl Eq for WaitReport {}

/// Says what a wait is waiting for while it goes on, instead of minutes of silence:
/// once when the first check finds something not done, then every [`REPORT_EVERY`].
pub(crate) struct Progress<'a> {
    owner: &'a Owner,
    start: Instant,
    timeout: Duration,
    next: Option<Instant>,
}

impl<'a> Progress<'a> {
    pub(crate) fn new(owner: &'a Owner, timeout: Duration) -> Progress<'a> {
        Progress {
            owner,
            start: Instant::now(),
            timeout,
            next: None,
        }
    }

    /// Reports `what` (built only when it is time to report) as still awaited.
    pub(crate) fn still_waiting(&mut self, what: impl FnOnce() -> String) {
        let now = Instant::now();
        if self.next.is_some_and(|next| now < next) {
            return;
        }
        self.next = Some(now + REPORT_EVERY);
        let line = format!(
            "release {:?}: waiting for {} ({}s elapsed, timeout {}s)",
            self.owner.name,
            what(),
            self.start.elapsed().as_secs(),
            self.timeout.as_secs()
        );
        tracing::info!(target: WAIT_LOG_TARGET, "{line}");
        self.owner.report.send(&line);
    }
}

/// What a readiness check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Readiness {
    Ready,
    /// Not yet; the text says why.
    Pending(String),
    /// Will not become ready (a failed Job).
    Failed(String),
}

fn int(obj: &DynamicObject, pointer: &str) -> Option<i64> {
    obj.data.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(obj: &'a DynamicObject, pointer: &str) -> Option<&'a str> {
    obj.data.pointer(pointer).and_then(Value::as_str)
}

/// `status.observedGeneration` has caught up with `metadata.generation`.
fn observed(obj: &DynamicObject) -> bool {
    match (
        obj.metadata.generation,
        int(obj, "/status/observedGeneration"),
    ) {
        (Some(g), Some(o)) => o >= g,
        (None, _) => true,
        (Some(_), None) => false,
    }
}

fn desired_replicas(obj: &DynamicObject) -> i64 {
    int(obj, "/spec/replicas").unwrap_or(1)
}

/// Whether `obj` is ready; kinds without a notion of readiness are ready at once.
/// Jobs are only checked with `jobs` (Helm's `--wait-for-jobs`).
pub(crate) fn readiness(group: &str, kind: &str, obj: &DynamicObject, jobs: bool) -> Readiness {
    use Readiness::*;
    let waiting_generation = || Pending("the controller has not observed the latest spec".into());
    match (group, kind) {
        ("apps", "Deployment") => {
            if !observed(obj) {
                return waiting_generation();
            }
            if obj.data.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
                return Ready;
            }
            let want = desired_replicas(obj);
            let updated = int(obj, "/status/updatedReplicas").unwrap_or(0);
            let available = int(obj, "/status/availableReplicas").unwrap_or(0);
            if updated < want {
                Pending(format!("{updated} of {want} replicas updated"))
            } else if available < want {
                Pending(format!("{available} of {want} replicas available"))
            } else {
                Ready
            }
        }
        ("apps", "StatefulSet") => {
            if !observed(obj) {
                return waiting_generation();
            }
            if text(obj, "/spec/updateStrategy/type") == Some("OnDelete") {
                return Ready;
            }
            let want = desired_replicas(obj);
            let partition = int(obj, "/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0);
            let ready = int(obj, "/status/readyReplicas").unwrap_or(0);
            let updated = int(obj, "/status/updatedReplicas").unwrap_or(0);
            if ready < want {
                return Pending(format!("{ready} of {want} replicas ready"));
            }
            if updated < (want - partition).max(0) {
                return Pending(format!("{updated} of {want} replicas updated"));
            }
            let (cur, upd) = (
                text(obj, "/status/currentRevision"),
                text(obj, "/status/updateRevision"),
            );
            if partition == 0 && upd.is_some() && cur != upd {
                return Pending("the rolling update has not finished".into());
            }
            Ready
        }
        ("apps", "DaemonSet") => {
            if !observed(obj) {
                return waiting_generation();
            }
            if text(obj, "/spec/updateStrategy/type") == Some("OnDelete") {
                return Ready;
            }
            let want = int(obj, "/status/desiredNumberScheduled").unwrap_or(0);
            let updated = int(obj, "/status/updatedNumberScheduled").unwrap_or(0);
            let ready = int(obj, "/status/numberReady").unwrap_or(0);
            if updated < want {
                Pending(format!("{updated} of {want} pods updated"))
            } else if ready < want {
                Pending(format!("{ready} of {want} pods ready"))
            } else {
                Ready
            }
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            if !observed(obj) {
                return waiting_generation();
            }
            let want = desired_replicas(obj);
            let ready = int(obj, "/status/readyReplicas").unwrap_or(0);
            if ready < want {
                Pending(format!("{ready} of {want} replicas ready"))
            } else {
                Ready
            }
        }
        ("", "PersistentVolumeClaim") => match text(obj, "/status/phase") {
            Some("Bound") => Ready,
            phase => Pending(format!("phase is {}, not Bound", phase.unwrap_or("unset"))),
        },
        ("", "Service") => {
            if text(obj, "/spec/type") != Some("LoadBalancer") {
                return Ready;
            }
            let has_ingress = obj
                .data
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if has_ingress {
                Ready
            } else {
                Pending("the load balancer has no ingress address yet".into())
            }
        }
        ("", "Pod") => match text(obj, "/status/phase") {
            Some("Succeeded") => Ready,
            Some("Failed") => Failed("the pod failed".into()),
            _ if matches!(condition(obj, "Ready"), Some(("True", _))) => Ready,
            _ => Pending("the pod is not Ready".into()),
        },
        ("batch", "Job") if jobs => {
            if let Some(("True", c)) = condition(obj, "Failed") {
                let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
                return Failed(format!("the job failed {reason}").trim().to_string());
            }
            if matches!(condition(obj, "Complete"), Some(("True", _))) {
                Ready
            } else {
                Pending("the job has not completed".into())
            }
        }
        _ => Ready,
    }
}

/// Polls `objects` until all are ready; on timeout (or a failed Job) the error lists
/// every object that is not ready with the reason.
pub(crate) async fn wait_ready(
    kube: &KubeClient,
    owner: &Owner,
    objects: &[Object],
    jobs: bool,
    timeout: Duration,
) -> Result<()> {
    let start = Instant::now();
    let mut progress = Progress::new(owner, timeout);
    let mut pending: Vec<&Object> = objects.iter().collect();
    let mut pause = Duration::from_millis(100);
    loop {
        let mut still = Vec::new();
        let mut reasons = Vec::new();
        for o in pending {
            let r = &o.reference;
            let state = match kube.get(owner, o).await? {
                Some(live) => readiness(r.group(), &r.kind, &live, jobs),
                None => Readiness::Pending("it does not exist".into()),
            };
            match state {
                Readiness::Ready => {}
                Readiness::Pending(why) => {
                    reasons.push(format!("{r}: {why}"));
                    still.push(o);
                }
                Readiness::Failed(why) => {
                    return Err(Error::NotReady {
                        release: owner.name.clone(),
                        timeout,
                        not_ready: vec![format!("{r}: {why}")],
                    })
                }
            }
        }
        if still.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(Error::NotReady {
                release: owner.name.clone(),
                timeout,
                not_ready: reasons,
            });
        }
        progress.still_waiting(|| {
            format!(
                "{} resource(s) to be ready: {}",
                reasons.len(),
                reasons.join("; ")
            )
        });
        tokio::time::sleep(pause.min(timeout.saturating_sub(start.elapsed()))).await;
        pause = (pause * 3 / 2).min(Duration::from_secs(2));
        pending = still;
    }
}

/// Polls until none of `objects` exists any more.
pub(crate) async fn wait_deleted(
    kube: &KubeClient,
    owner: &Owner,
    objects: &[&Object],
    timeout: Duration,
) -> Result<()> {
    let start = Instant::now();
    let mut progress = Progress::new(owner, timeout);
    let mut pending: Vec<&Object> = objects.to_vec();
    let mut pause = Duration::from_millis(100);
    loop {
        let mut still = Vec::new();
        for o in pending {
            if kube.get(owner, o).await?.is_some() {
                still.push(o);
            }
        }
        if still.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(Error::NotReady {
                release: owner.name.clone(),
                timeout,
                not_ready: still
                    .iter()
                    .map(|o| format!("{}: still exists after deletion", o.reference))
                    .collect(),
            });
        }
        progress.still_waiting(|| {
            let names: Vec<String> = still.iter().map(|o| o.reference.to_string()).collect();
            format!(
                "{} resource(s) to be deleted: {}",
                names.len(),
                names.join(", ")
            )
        });
        tokio::time::sleep(pause).await;
        pause = (pause * 3 / 2).min(Duration::from_secs(2));
        pending = still;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn deployments() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": 2}, "spec": {"replicas": 3},
            "status": {"observedGeneration": 1, "updatedReplicas": 3, "availableReplicas": 3}});
        assert!(matches!(
            readiness("apps", "Deployment", &obj(d.clone()), false),
            Readiness::Pending(_)
        ));
        d["status"]["observedGeneration"] = json!(2);
        d["status"]["availableReplicas"] = json!(1);
        assert_eq!(
            readiness("apps", "Deployment", &obj(d.clone()), false),
            Readiness::Pending("1 of 3 replicas available".into())
        );
        d["status"]["availableReplicas"] = json!(3);
        assert_eq!(
            readiness("apps", "Deployment", &obj(d), false),
            Readiness::Ready
        );
    }

    #[test]
    fn pvcs_services_jobs() {
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"}, "status": {"phase": "Pending"}});
        assert!(
            matches!(readiness("", "PersistentVolumeClaim", &obj(pvc), false), Readiness::Pending(m) if m.contains("Pending"))
        );
        let lb = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"}});
        assert!(matches!(
            readiness("", "Service", &obj(lb.clone()), false),
            Readiness::Pending(_)
        ));
        let mut lb_ready = lb;
        lb_ready["status"] = json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}});
        assert_eq!(
            readiness("", "Service", &obj(lb_ready), false),
            Readiness::Ready
        );
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"}});
        assert_eq!(readiness("", "Service", &obj(svc), false), Readiness::Ready);
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}});
        assert_eq!(
            readiness("batch", "Job", &obj(job.clone()), false),
            Readiness::Ready
        );
        assert!(matches!(
            readiness("batch", "Job", &obj(job.clone()), true),
            Readiness::Pending(_)
        ));
        let mut failed = job;
        failed["status"] = json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]});
        assert!(
            matches!(readiness("batch", "Job", &obj(failed), true), Readiness::Failed(m) if m.contains("BackoffLimitExceeded"))
        );
    }
}
