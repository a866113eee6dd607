//! Running the hooks of one lifecycle event as Helm does: in weight order, deleting a
//! previous hook object first (`before-hook-creation`, Helm's default policy), waiting
//! for Jobs and Pods to finish, and deleting hooks afterwards as their
//! `hook-succeeded`/`hook-failed` policies ask.

use std::time::Duration;

use release::record::{hook_phase, Hook};
use release::Time;
use serde_json::Value;

use super::{condition, KubeClient, Object, Owner};
use crate::error::{Error, Result};

pub(crate) const BEFORE_HOOK_CREATION: &str = "before-hook-creation";
pub(crate) const HOOK_SUCCEEDED: &str = "hook-succeeded";
pub(crate) const HOOK_FAILED: &str = "hook-failed";

/// Runs every hook of `event`, recording each one's `last_run` in `hooks`.
/// `objects[i]` is the prepared (parsed, resolved, transformed) object of `hooks[i]`;
/// `None` for an empty document.
pub(crate) async fn run(
    kube: &KubeClient,
    owner: &Owner,
    hooks: &mut [Hook],
    objects: &[Option<Object>],
    event: &str,
    timeout: Duration,
) -> Result<()> {
    let mut selected: Vec<usize> = (0..hooks.len())
        .filter(|&i| hooks[i].events.iter().any(|e| e == event))
        .collect();
    selected.sort_by(|&a, &b| {
        (hooks[a].weight, &hooks[a].name).cmp(&(hooks[b].weight, &hooks[b].name))
    });
    for i in selected {
        let Some(Some(obj)) = objects.get(i) else {
            continue;
        };
        run_one(kube, owner, &mut hooks[i], obj, event, timeout).await?;
    }
    Ok(())
}

fn has_policy(hook: &Hook, policy: &str) -> bool {
    if hook.delete_policies.is_empty() {
        return policy == BEFORE_HOOK_CREATION;
    }
    hook.delete_policies.iter().any(|p| p == policy)
}

async fn run_one(
    kube: &KubeClient,
    owner: &Owner,
    hook: &mut Hook,
    obj: &Object,
    event: &str,
    timeout: Duration,
) -> Result<()> {
    if has_policy(hook, BEFORE_HOOK_CREATION) {
        kube.delete_and_wait(owner, obj, timeout).await?;
    }
    hook.last_run.started_at = Some(Time::now());
    hook.last_run.completed_at = None;
    hook.last_run.phase = hook_phase::RUNNING.to_string();
    let outcome = match kube.apply(owner, obj, false).await {
        Ok(_) => wait_done(kube, owner, obj, timeout).await,
        Err(e) => Err(e),
    };
    hook.last_run.completed_at = Some(Time::now());
    match outcome {
        Ok(Ok(())) => {
            hook.last_run.phase = hook_phase::SUCCEEDED.to_string();
            if has_policy(hook, HOOK_SUCCEEDED) {
                kube.delete(owner, obj).await?;
            }
            Ok(())
        }
        Ok(Err(reason)) => {
            hook.last_run.phase = hook_phase::FAILED.to_string();
            if has_policy(hook, HOOK_FAILED) {
                kube.delete(owner, obj).await?;
            }
            Err(Error::HookFailed {
                release: owner.name.clone(),
                event: event.to_string(),
                object: Box::new(obj.reference.clone()),
                reason,
            })
        }
        Err(e) => {
            hook.last_run.phase = hook_phase::FAILED.to_string();
            if has_policy(hook, HOOK_FAILED) {
                // The hook already failed; a failing cleanup must not hide why.
                let _ = kube.delete(owner, obj).await;
            }
            Err(e)
        }
    }
}

/// Waits for Jobs to complete and Pods to succeed; other kinds are done once created.
async fn wait_done(
    kube: &KubeClient,
    owner: &Owner,
    obj: &Object,
    timeout: Duration,
) -> Result<Result<(), String>> {
    match (obj.reference.group(), obj.reference.kind.as_str()) {
        ("batch", "Job") => {
            kube.wait_for(owner, obj, "complete", timeout, job_done)
                .await
        }
        ("", "Pod") => {
            kube.wait_for(owner, obj, "succeed", timeout, pod_done)
                .await
        }
        _ => Ok(Ok(())),
    }
}

fn job_done(job: &kube::api::DynamicObject) -> Result<bool, String> {
    if let Some(("True", c)) = condition(job, "Failed") {
        let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
        let message = c.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(format!("job failed: {reason} {message}").trim().to_string());
    }
    Ok(matches!(condition(job, "Complete"), Some(("True", _))))
}

fn pod_done(pod: &kube::api::DynamicObject) -> Result<bool, String> {
    match pod.data.pointer("/status/phase").and_then(Value::as_str) {
        Some("Succeeded") => Ok(true),
        Some("Failed") => Err("pod failed".into()),
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> kube::api::DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn default_delete_policy_is_before_hook_creation() {
        let mut h = Hook::default();
        assert!(has_policy(&h, BEFORE_HOOK_CREATION));
        assert!(!has_policy(&h, HOOK_SUCCEEDED));
        h.delete_policies = vec![HOOK_SUCCEEDED.into()];
        assert!(!has_policy(&h, BEFORE_HOOK_CREATION));
        assert!(has_policy(&h, HOOK_SUCCEEDED));
    }

    #[test]
    fn job_states() {
        let base = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}});
        assert_eq!(job_done(&obj(base.clone())), Ok(false));
        let mut done = base.clone();
        done["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(job_done(&obj(done)), Ok(true));
        let mut failed = base;
        failed["status"] = json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]});
        assert!(job_done(&obj(failed))
            .unwrap_err()
            .contains("BackoffLimitExceeded"));
    }
}
