//! What a tool that waits the kstatus way (Helm 4's `--wait`, Flux's health checks,
//! `kpt live status`) would say about a CR in every state the operator can leave it
//! in: each state is reached through real reconciles against the fake actions, the
//! CR's stored status is rebuilt from the status patches the reconciler sent, and
//! [`kstatus`] reads it by kstatus' documented rules for custom resources
//! (sigs.k8s.io/cli-utils `pkg/kstatus/status`: `Compute`'s generic checks). Also
//! how many status writes each step costs.

use super::*;
use crate::annotations::PREFIX;
use crate::status::{READY, RECONCILING, STALLED};

/// kstatus' result for a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KStatus {
    InProgress,
    Failed,
    Current,
    Terminating,
}

/// kstatus' rules for a custom resource, as its README ("Conditions") and `Compute`
/// document them: a resource being deleted is Terminating; one whose
/// `status.observedGeneration` is set and differs from `metadata.generation` is
/// InProgress (a missing one is not checked); otherwise the first condition that is
/// `Reconciling=True` (InProgress) or `Stalled=True` (Failed) decides; without either
/// the resource is Current. `Ready` is not read: that is Flux's and Argo CD's
/// convention, checked separately below.
fn kstatus(obj: &Value) -> (KStatus, String) {
    if obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| t.as_str().is_some_and(|t| !t.is_empty()))
    {
        return (
            KStatus::Terminating,
            "Resource scheduled for deletion".into(),
        );
    }
    let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
    let observed = obj
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    if let (Some(g), Some(o)) = (generation, observed) {
        if g != o {
            return (
                KStatus::InProgress,
                format!("Demo generation is {g}, but latest observed generation is {o}"),
            );
        }
    }
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in &conditions {
        let message = c["message"].as_str().unwrap_or_default().to_string();
        match (c["type"].as_str(), c["status"].as_str()) {
            (Some("Reconciling"), Some("True")) => return (KStatus::InProgress, message),
            (Some("Stalled"), Some("True")) => return (KStatus::Failed, message),
            _ => {}
        }
    }
    (KStatus::Current, "Resource is current".into())
}

/// RFC 7386 merge patch, as the API server applies the reconciler's status patches.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(t) = target {
        for (k, v) in patch {
            if v.is_null() {
                t.remove(k);
            } else {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// The bodies of the status patches the reconciler sent, in order.
fn status_writes(api: &FakeApi) -> Vec<Value> {
    api.requests()
        .into_iter()
        .filter(|(m, p, _)| m == Method::PATCH && p.ends_with("/status"))
        .map(|(_, _, body)| body)
        .collect()
}

/// The CR as stored after the first `n` status writes (all of them with `None`).
fn stored(cr: &DynamicObject, api: &FakeApi, n: Option<usize>) -> Value {
    let mut obj = serde_json::to_value(cr).unwrap_or_default();
    let writes = status_writes(api);
    let n = n.unwrap_or(writes.len());
    for w in writes.iter().take(n) {
        merge(&mut obj, w);
    }
    obj
}

/// The condition `type_` of a stored CR as (status, reason).
fn cond(obj: &Value, type_: &str) -> Option<(String, String)> {
    let c = obj
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((s("status"), s("reason")))
}

/// A Demo CR at `generation` with `spec`, annotations and a stored `status`.
fn demo(
    generation: i64,
    spec: Value,
    annotations: &[(&str, &str)],
    status: Value,
) -> DynamicObject {
    let mut o = cr(spec);
    o.metadata.generation = Some(generation);
    if !annotations.is_empty() {
        o.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string()))
                .collect(),
        );
    }
    if !status.is_null() {
        o.data["status"] = status;
    }
    o
}

fn readiness_setup() -> Setup {
    let mut setup = Setup::default();
    setup.watch.install_wait = true;
    setup
}

/// One state of the table: the CR as stored, what kstatus must say, and the `Ready`
/// condition's status a Flux-style reader sees (`None`: no such condition).
struct Row {
    state: &'static str,
    obj: Value,
    want: KStatus,
    ready: Option<&'static str>,
}

#[tokio::test]
async fn kstatus_reads_every_state_the_operator_leaves_a_cr_in() {
    let spec = json!({"greeting": "hi"});
    let d = digest_of(&spec);
    let mut rows = Vec::new();

    // A CR no controller has written yet: kstatus cannot tell it from a finished one.
    let new = demo(1, spec.clone(), &[], Value::Null);
    rows.push(Row {
        state: "new CR, not seen by the operator yet",
        obj: serde_json::to_value(&new).unwrap_or_default(),
        want: KStatus::Current,
        ready: None,
    });

    // Install: the start write, then the end.
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, new.clone()).await;
    result.expect("installed");
    rows.push(Row {
        state: "installing",
        obj: stored(&new, &api, Some(1)),
        want: KStatus::InProgress,
        ready: Some("Unknown"),
    });
    let deployed = stored(&new, &api, None);
    rows.push(Row {
        state: "deployed",
        obj: deployed.clone(),
        want: KStatus::Current,
        ready: Some("True"),
    });
    let deployed_status = deployed["status"].clone();

    // The readiness mode: deployed, waiting for the workloads.
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = readiness_setup().reconcile(&actions, new.clone()).await;
    result.expect("installed");
    let waiting = stored(&new, &api, None);
    rows.push(Row {
        state: "deployed, waiting for readiness",
        obj: waiting.clone(),
        want: KStatus::InProgress,
        ready: Some("Unknown"),
    });
    // ... past its timeout.
    actions.lock().not_ready = vec!["Deployment default/app: 0/1 ready".into()];
    let long_ago = jiff::Timestamp::from_second(unix_now() - 600).expect("time");
    actions.lock().deployed_at = Some(release::Time::from_timestamp(long_ago));
    let still = demo(1, spec.clone(), &[], waiting["status"].clone());
    let (_, api) = readiness_setup().reconcile(&actions, still.clone()).await;
    rows.push(Row {
        state: "readiness timed out",
        obj: stored(&still, &api, None),
        want: KStatus::Failed,
        ready: Some("False"),
    });

    // An upgrade: the new generation before the operator looks, while it works, after.
    let changed = json!({"greeting": "hello"});
    let next = demo(2, changed.clone(), &[], deployed_status.clone());
    rows.push(Row {
        state: "spec changed, not picked up yet",
        obj: serde_json::to_value(&next).unwrap_or_default(),
        want: KStatus::InProgress,
        ready: Some("True"),
    });
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, &d)]),
    )]);
    let (result, api) = reconcile_once(&actions, next.clone()).await;
    result.expect("upgraded");
    let upgrading = stored(&next, &api, Some(1));
    assert_eq!(
        upgrading["status"]["observedGeneration"], 1,
        "the start of the work observes no generation"
    );
    rows.push(Row {
        state: "upgrading",
        obj: upgrading,
        want: KStatus::InProgress,
        ready: Some("Unknown"),
    });
    rows.push(Row {
        state: "upgraded",
        obj: stored(&next, &api, None),
        want: KStatus::Current,
        ready: Some("True"),
    });

    // A failed install the operator retries, and the same after its retries.
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().fail.insert("install", true);
    let (result, api) = reconcile_once(&actions, new.clone()).await;
    result.expect_err("failed");
    rows.push(Row {
        state: "install failed, retrying",
        obj: stored(&new, &api, None),
        want: KStatus::InProgress,
        ready: Some("False"),
    });
    let failed = |version: i64, attempt: &str| {
        meta(
            version,
            Status::Failed,
            labels(&[
                (digest::LABEL, &digest_of(&spec)),
                (ATTEMPT_LABEL, attempt),
                ("modifiedAt", "1"),
            ]),
        )
    };
    let actions = FakeActions::with_history(vec![failed(1, "1"), failed(2, "2")]);
    actions.lock().fail.insert("install", true);
    let (result, api) = reconcile_once(&actions, new.clone()).await;
    result.expect_err("failed again");
    rows.push(Row {
        state: "install failed after its retries",
        obj: stored(&new, &api, None),
        want: KStatus::Failed,
        ready: Some("False"),
    });

    // An upgrade whose chart does not render with the new spec.
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, &d)]),
    )]);
    actions.lock().render_fails = true;
    let (result, api) = reconcile_once(&actions, next.clone()).await;
    result.expect_err("does not render");
    rows.push(Row {
        state: "upgrade does not render",
        obj: stored(&next, &api, None),
        want: KStatus::Failed,
        ready: Some("False"),
    });

    // A spec that is not an object.
    let bad = demo(2, json!("hello"), &[], deployed_status.clone());
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, bad.clone()).await;
    result.expect_err("irreconcilable");
    let irreconcilable = stored(&bad, &api, None);
    assert_eq!(
        cond(&irreconcilable, st::IRRECONCILABLE)
            .map(|c| c.0)
            .as_deref(),
        Some("True")
    );
    rows.push(Row {
        state: "irreconcilable spec",
        obj: irreconcilable,
        want: KStatus::Failed,
        ready: Some("False"),
    });

    // Deletion.
    let mut gone = demo(2, spec.clone(), &[], deployed_status.clone());
    gone.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::now(),
    ));
    gone.metadata.finalizers = Some(vec![
        "helm.sdk.operatorframework.io/uninstall-release".into()
    ]);
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, &d)]),
    )]);
    let (result, api) = reconcile_once(&actions, gone.clone()).await;
    result.expect("uninstalled");
    let uninstalling = stored(&gone, &api, None);
    assert_eq!(
        cond(&uninstalling, RECONCILING),
        Some(("True".into(), "Uninstalling".into()))
    );
    rows.push(Row {
        state: "uninstalling",
        obj: uninstalling,
        want: KStatus::Terminating,
        ready: Some("Unknown"),
    });

    // Paused: at rest it stays as it was; a change waiting on the pause is not done.
    let paused = demo(
        1,
        spec.clone(),
        &[("reconcile-paused", "true")],
        deployed_status.clone(),
    );
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, paused.clone()).await;
    result.expect("paused");
    rows.push(Row {
        state: "paused, nothing pending",
        obj: stored(&paused, &api, None),
        want: KStatus::Current,
        ready: Some("True"),
    });
    let pending = demo(2, changed, &[("reconcile-paused", "true")], deployed_status);
    let (result, api) = reconcile_once(&actions, pending.clone()).await;
    result.expect("paused");
    rows.push(Row {
        state: "paused with a change pending",
        obj: stored(&pending, &api, None),
        want: KStatus::InProgress,
        ready: Some("Unknown"),
    });
    let paused_new = demo(1, spec, &[("reconcile-paused", "true")], Value::Null);
    let (result, api) = reconcile_once(&actions, paused_new.clone()).await;
    result.expect("paused");
    rows.push(Row {
        state: "new CR created paused",
        obj: stored(&paused_new, &api, None),
        want: KStatus::InProgress,
        ready: Some("Unknown"),
    });

    let mut wrong = Vec::new();
    for row in &rows {
        let (got, message) = kstatus(&row.obj);
        let ready = cond(&row.obj, READY).map(|c| c.0);
        if got != row.want || ready.as_deref() != row.ready {
            wrong.push(format!(
                "{}: kstatus {got:?} ({message}), Ready {ready:?}; want {:?}, Ready {:?}\n{:#}",
                row.state, row.want, row.ready, row.obj["status"]
            ));
        }
        // Never both abnormal conditions at once: kstatus would read whichever
        // comes first.
        let both = cond(&row.obj, RECONCILING).is_some_and(|c| c.0 == "True")
            && cond(&row.obj, STALLED).is_some_and(|c| c.0 == "True");
        assert!(!both, "{}: Reconciling and Stalled both True", row.state);
        // A finished reconcile names the generation it was of.
        if row.want == KStatus::Current && row.ready.is_some() {
            assert_eq!(
                row.obj.pointer("/status/observedGeneration"),
                row.obj.pointer("/metadata/generation"),
                "{}",
                row.state
            );
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[tokio::test]
async fn a_failure_reports_its_message_to_waiting_tools() {
    let next = demo(2, json!({"greeting": "hello"}), &[], Value::Null);
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "old")]),
    )]);
    actions.lock().render_fails = true;
    let (_, api) = reconcile_once(&actions, next.clone()).await;
    let obj = stored(&next, &api, None);
    let (status, message) = kstatus(&obj);
    assert_eq!(status, KStatus::Failed);
    assert!(
        message.contains("nil pointer evaluating interface {}.y"),
        "`helm --wait` prints this: {message}"
    );
}

/// Status writes per install: one when the work starts, one when it ends; none for a
/// reconcile that changes nothing, one for a retry's end.
#[tokio::test]
async fn status_writes_per_install_and_after() {
    let spec = json!({"greeting": "hi"});
    let new = demo(1, spec.clone(), &[], Value::Null);
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(&actions, new.clone()).await;
    result.expect("installed");
    let writes = status_writes(&api);
    assert_eq!(writes.len(), 2, "install: start and end");
    assert!(
        writes[0]["status"].get("observedGeneration").is_none(),
        "only the end observes the generation: {:#}",
        writes[0]
    );
    assert_eq!(writes[1]["status"]["observedGeneration"], 1);

    let after = demo(
        1,
        spec.clone(),
        &[],
        stored(&new, &api, None)["status"].clone(),
    );
    let (result, api) = reconcile_once(&actions, after).await;
    result.expect("repaired");
    assert_eq!(
        status_writes(&api).len(),
        0,
        "nothing changed, nothing written"
    );

    // A failure ends its generation's reconcile; the retry of the same generation
    // writes only its own end.
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().fail.insert("install", true);
    let (result, api) = reconcile_once(&actions, new.clone()).await;
    result.expect_err("failed");
    assert_eq!(status_writes(&api).len(), 2);
    let failed = demo(1, spec, &[], stored(&new, &api, None)["status"].clone());
    let backoff_passed = |actions: &FakeActions| {
        for m in &mut actions.lock().history {
            m.labels.insert("modifiedAt".into(), "1".into());
        }
    };
    backoff_passed(&actions);
    let (result, api) = reconcile_once(&actions, failed.clone()).await;
    result.expect_err("failed again");
    assert_eq!(actions.lock().history.len(), 2);
    assert_eq!(status_writes(&api).len(), 0, "a retry failing the same way");
    actions.lock().fail.clear();
    backoff_passed(&actions);
    let (result, api) = reconcile_once(&actions, failed).await;
    result.expect("installed at the retry");
    assert_eq!(status_writes(&api).len(), 1, "the retry's end only");
}

/// A pause while a failure is retried shows the pause; lifting it during the
/// backoff shows the retry again.
#[tokio::test]
async fn a_pause_lifted_during_a_backoff_shows_the_retry_again() {
    let spec = json!({"greeting": "hi"});
    let new = demo(1, spec.clone(), &[], Value::Null);
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().fail.insert("install", true);
    let (result, api) = reconcile_once(&actions, new.clone()).await;
    result.expect_err("failed");
    let failed = stored(&new, &api, None)["status"].clone();
    assert_eq!(
        cond(&stored(&new, &api, None), RECONCILING)
            .map(|c| c.1)
            .as_deref(),
        Some("Retrying")
    );

    let paused = demo(1, spec.clone(), &[("reconcile-paused", "true")], failed);
    let (result, api) = reconcile_once(&actions, paused.clone()).await;
    result.expect("paused");
    let during = stored(&paused, &api, None);
    assert_eq!(
        cond(&during, RECONCILING),
        Some(("True".into(), "ReconcilePaused".into()))
    );
    assert_eq!(kstatus(&during).0, KStatus::InProgress);

    let resumed = demo(1, spec, &[], during["status"].clone());
    let (result, api) = reconcile_once(&actions, resumed.clone()).await;
    assert!(
        matches!(result, Err(ReconcileError::BackingOff { .. })),
        "{result:?}"
    );
    let after = stored(&resumed, &api, None);
    assert_eq!(
        cond(&after, RECONCILING),
        Some(("True".into(), "Retrying".into())),
        "{:#}",
        after["status"]
    );
    assert!(cond(&after, st::PAUSED).is_none());
}

/// A CRD without a status subresource: the status goes on the main resource, where
/// every change bumps the generation. No `observedGeneration` is written there (it
/// could never match), and a written status sets off no further write.
#[tokio::test]
async fn a_kind_without_a_status_subresource_gets_no_observed_generation() {
    let spec = json!({"greeting": "hi"});
    let new = demo(1, spec.clone(), &[], Value::Null);
    let actions = FakeActions::with_history(Vec::new());
    let api = FakeApi::without_status_subresource(&new);
    let setup = Setup::default();
    let ctx = Context::new(
        api.client(),
        Arc::new(setup.watch),
        Arc::new(setup.chart),
        resource(),
    )
    .expect("context")
    .with_actions(actions.clone());
    let ctx = Arc::new(ctx);
    reconcile(Arc::new(new.clone().into()), ctx.clone())
        .await
        .expect("installed");
    let on_main = |api: &FakeApi| -> Vec<Value> {
        api.requests()
            .into_iter()
            .filter(|(m, p, b)| {
                m == Method::PATCH && p.ends_with("/demos/app") && b.get("status").is_some()
            })
            .map(|(_, _, b)| b)
            .collect()
    };
    let writes = on_main(&api);
    assert!(
        !writes.is_empty(),
        "the status is written on the main resource"
    );
    let mut obj = serde_json::to_value(&new).unwrap_or_default();
    for w in &writes {
        assert!(
            w["status"]["observedGeneration"].is_null(),
            "no observedGeneration there: {w:#}"
        );
        merge(&mut obj, w);
    }
    assert_eq!(cond(&obj, READY).map(|c| c.0).as_deref(), Some("True"));
    // Each write bumped the generation; the reconciles that follow write nothing.
    let bumped = demo(1 + writes.len() as i64, spec, &[], obj["status"].clone());
    let before = on_main(&api).len();
    for _ in 0..2 {
        reconcile(Arc::new(bumped.clone().into()), ctx.clone())
            .await
            .expect("reconciled");
    }
    assert_eq!(on_main(&api).len(), before, "no write sets off another");
}
