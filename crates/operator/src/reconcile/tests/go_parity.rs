//! The reconciler's decisions for what the Go helm-operator's users rely on (issue
//! 12): duplicate release names, CR-owned and chart-labelled records, candidate
//! failures, `uninstall-wait`, override Events, pausing, the readiness mode and
//! charts that call `lookup`, all through the fake actions.

use super::*;
use crate::annotations::{CHART_LABEL, PREFIX};

fn annotated(spec: Value, pairs: &[(&str, &str)]) -> DynamicObject {
    let mut o = cr(spec);
    o.metadata.annotations = Some(
        pairs
            .iter()
            .map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string()))
            .collect(),
    );
    o
}

fn deleting(mut o: DynamicObject) -> DynamicObject {
    o.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::now(),
    ));
    o.metadata.finalizers = Some(vec![
        "helm.sdk.operatorframework.io/uninstall-release".into()
    ]);
    o
}

fn with_status(mut o: DynamicObject, status: Value) -> DynamicObject {
    o.data["status"] = status;
    o
}

fn configmap(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(NS.into()),
        name: name.into(),
    }
}

#[tokio::test]
async fn a_release_of_another_chart_is_refused_and_left_alone() {
    let spec = json!({"greeting": "hi"});
    let theirs = labels(&[(CHART_LABEL, "other"), (digest::LABEL, "x")]);
    let actions = FakeActions::with_history(vec![meta(1, Status::Deployed, theirs)]);
    let (result, api) = reconcile_once(&actions, cr(spec.clone())).await;
    let err = result.expect_err("refused");
    assert!(matches!(err, ReconcileError::DuplicateName { .. }), "{err}");
    assert_eq!(actions.calls(), ["history"], "no action on their release");
    assert!(api.finalizer_patches().is_empty(), "no finalizer either");
    let (status, reason, message) = api.condition(st::IRRECONCILABLE).expect("Irreconcilable");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ReconcileError")
    );
    assert_eq!(
        message,
        "failed to get helm release name: duplicate release name: found existing release with name \"app\" for chart \"other\""
    );
    assert!(api
        .events()
        .iter()
        .any(|(t, r, m)| t == "Warning" && r == "ReconcileError" && *m == message));

    // Records without the chart label: one is decoded to tell.
    let actions = FakeActions::with_history(vec![bare_meta(1, Status::Deployed, BTreeMap::new())]);
    actions.lock().chart = Some("other".into());
    let (result, _) = reconcile_once(&actions, cr(spec.clone())).await;
    assert!(matches!(result, Err(ReconcileError::DuplicateName { .. })));
    assert_eq!(actions.calls(), ["history", "release_chart"]);
    // Our chart's (helm installed it): compared by render, stamped, labelled.
    let actions = FakeActions::with_history(vec![bare_meta(1, Status::Deployed, BTreeMap::new())]);
    actions.lock().chart = Some("demo".into());
    let (result, _) = reconcile_once(&actions, cr(spec)).await;
    result.expect("ours");
    assert_eq!(
        actions.calls(),
        ["history", "release_chart", "diff", "repair"]
    );
    let stamped = actions.lock().history[0].labels.clone();
    assert_eq!(stamped.get(CHART_LABEL).map(String::as_str), Some("demo"));

    // Deleting a CR named like their release drops only the finalizer.
    let theirs = labels(&[(CHART_LABEL, "other")]);
    let actions = FakeActions::with_history(vec![meta(1, Status::Deployed, theirs)]);
    let (result, api) = reconcile_once(&actions, deleting(cr(json!({})))).await;
    result.expect("finalized");
    assert_eq!(actions.calls(), ["history"], "never uninstalled");
    assert_eq!(api.finalizer_patches(), [json!([])]);
}

#[tokio::test]
async fn records_are_owned_by_the_cr_and_labelled_with_the_chart() {
    let actions = FakeActions::with_history(Vec::new());
    let (result, _) = reconcile_once(&actions, cr(json!({}))).await;
    result.expect("installed");
    let opts = actions.lock().last_opts.clone().expect("install options");
    let owner = opts.record_owner.expect("records owned");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Demo", "app", "u-1")
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        opts.labels.get(CHART_LABEL).map(String::as_str),
        Some("demo")
    );
    // And every object the transform sees gets the label too.
    let mut obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
    .expect("object");
    assert!(opts.transform.is_some());
    let policy = transform::Policy {
        owner,
        namespace: NS.into(),
        primary_type: "Demo.test.rudder.dev".into(),
        allow_cluster_scoped: false,
        allowed_namespaces: Vec::new(),
        watch: "test.rudder.dev/v1 Demo".into(),
        chart_label: Some("demo".into()),
    };
    policy.apply(&mut obj, &configmap("x")).expect("applies");
    assert_eq!(obj.metadata.labels.expect("labels")[CHART_LABEL], "demo");
}

#[tokio::test]
async fn an_upgrade_whose_candidate_cannot_be_built_is_irreconcilable() {
    let deployed = json!({"conditions": [{"type": "Deployed", "status": "True",
        "reason": "InstallSuccessful", "message": "the notes",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "deployedRelease": {"name": "app", "manifest": MANIFEST}});
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "old")]),
    )]);
    actions.lock().render_fails = true;
    let (result, api) = reconcile_once(&actions, with_status(cr(json!({"x": 1})), deployed)).await;
    result.expect_err("candidate fails");
    assert_eq!(
        actions.calls(),
        ["history", "upgrade"],
        "no rollback: nothing written"
    );
    let (status, reason, message) = api.condition(st::IRRECONCILABLE).expect("Irreconcilable");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ReconcileError")
    );
    assert!(
        message.starts_with("failed to get candidate release: "),
        "{message}"
    );
    assert!(message.contains("nil pointer evaluating"), "{message}");
    let (status, reason, _) = api.condition(st::DEPLOYED).expect("Deployed kept");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InstallSuccessful")
    );
    assert!(api.condition(st::RELEASE_FAILED).is_none());
}

#[tokio::test]
async fn uninstall_wait_requeues_until_every_object_is_gone() {
    let status = json!({"conditions": [{"type": "Deployed", "status": "True",
        "reason": "InstallSuccessful", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "deployedRelease": {"name": "app", "manifest": MANIFEST}});
    let cr_wait = || {
        deleting(with_status(
            annotated(json!({}), &[("uninstall-wait", "true")]),
            status.clone(),
        ))
    };
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "d")]),
    )]);
    actions.lock().leftovers = vec![vec![configmap("app-cfg")], vec![configmap("app-cfg")]];
    let (result, api) = reconcile_once(&actions, cr_wait()).await;
    let outcome = result.expect("waiting");
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(10)));
    assert_eq!(actions.calls(), ["history", "uninstall", "leftovers"]);
    assert!(api.finalizer_patches().is_empty(), "the finalizer stays");
    let (s, reason, message) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(
        (s.as_str(), reason.as_str(), message.as_str()),
        (
            "False",
            "UninstallSuccessful",
            "Waiting until all resources are deleted."
        )
    );
    assert_eq!(
        api.status()["deployedRelease"]["manifest"],
        MANIFEST,
        "the manifest to wait for stays"
    );
    assert!(actions.lock().history.is_empty(), "records deleted at once");

    // The next reconcile finds no release, deletes again, still waits.
    let (result, _) = reconcile_once(&actions, cr_wait()).await;
    assert!(result.expect("waiting").requeue_after.is_some());
    // Then everything is gone: the finalizer goes.
    let (result, api) = reconcile_once(&actions, cr_wait()).await;
    assert_eq!(result.expect("done"), Outcome::default());
    assert_eq!(api.finalizer_patches(), [json!([])]);

    // Without the annotation nothing waits.
    let actions = FakeActions::with_history(vec![meta(1, Status::Deployed, BTreeMap::new())]);
    let (result, api) =
        reconcile_once(&actions, deleting(with_status(cr(json!({})), status))).await;
    result.expect("uninstalled");
    assert!(!actions.calls().contains(&"leftovers"));
    assert_eq!(api.status()["deployedRelease"], Value::Null);
}

#[tokio::test]
async fn override_events_quote_as_go_and_come_before_every_attempt() {
    let mut setup = Setup::default();
    setup
        .watch
        .override_values
        .insert("image.tag".into(), "v\u{7f}2".into());
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().fail.insert("install", true);
    let (result, api) = setup.reconcile(&actions, cr(json!({}))).await;
    result.expect_err("install fails");
    let events = api.events();
    assert!(
        events.iter().any(|(t, r, m)| {
            t == "Warning"
            && r == "OverrideValuesInUse"
            && m == "Chart value \"image.tag\" overridden to \"v\\x7f2\" by operator's watches.yaml"
        }),
        "{events:?}"
    );
    let first = events
        .iter()
        .position(|(_, r, _)| r == "OverrideValuesInUse");
    let failed = events.iter().position(|(_, r, _)| r == "InstallError");
    assert!(first < failed, "{events:?}");
}

#[tokio::test]
async fn a_paused_cr_is_left_alone_until_resumed() {
    let actions = FakeActions::with_history(Vec::new());
    let (result, api) = reconcile_once(
        &actions,
        annotated(json!({}), &[("reconcile-paused", "true")]),
    )
    .await;
    assert_eq!(result.expect("paused"), Outcome::default());
    assert!(actions.calls().is_empty(), "{:?}", actions.calls());
    assert!(api.finalizer_patches().is_empty());
    let (s, reason, message) = api.condition(st::PAUSED).expect("Paused");
    assert_eq!((s.as_str(), reason.as_str()), ("True", "ReconcilePaused"));
    assert!(message.contains("reconcile-paused"), "{message}");

    // Resumed: the condition goes, the release is installed.
    let paused = json!({"conditions": [{"type": "Paused", "status": "True",
        "reason": "ReconcilePaused", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let (result, api) = reconcile_once(&actions, with_status(cr(json!({})), paused)).await;
    result.expect("installed");
    assert!(api.condition(st::PAUSED).is_none());
    assert_eq!(actions.calls(), ["history", "install"]);
}

#[tokio::test]
async fn the_readiness_mode_holds_deployed_until_the_workloads_are_ready() {
    let mut setup = Setup::default();
    setup.watch.install_wait = true;
    let actions = FakeActions::with_history(Vec::new());
    actions.lock().deployed_at = Some(release::Time::now());
    let (result, api) = setup.reconcile(&actions, cr(json!({}))).await;
    let outcome = result.expect("installed");
    assert_eq!(outcome.requeue_after, Some(timing::READINESS_POLL));
    let (s, reason, message) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(
        (s.as_str(), reason.as_str()),
        ("False", "AwaitingReadiness")
    );
    assert!(message.contains("waiting up to 5m0s"), "{message}");
    let waiting = api.status();

    // Not ready yet: still waiting, checked again soon.
    actions.lock().not_ready = vec!["Deployment default/app: 0 of 1 replicas ready".into()];
    let mut setup = Setup::default();
    setup.watch.install_wait = true;
    let (result, api) = setup
        .reconcile(&actions, with_status(cr(json!({})), waiting.clone()))
        .await;
    assert_eq!(
        result.expect("waiting").requeue_after,
        Some(timing::READINESS_POLL)
    );
    let (_, reason, message) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(reason, "AwaitingReadiness");
    assert!(message.contains("0 of 1 replicas ready"), "{message}");

    // Past the timeout: ReleaseFailed, still looking.
    let long_ago = jiff::Timestamp::from_second(unix_now() - 600).expect("time");
    actions.lock().deployed_at = Some(release::Time::from_timestamp(long_ago));
    let mut setup = Setup::default();
    setup.watch.install_wait = true;
    let (result, api) = setup
        .reconcile(&actions, with_status(cr(json!({})), waiting.clone()))
        .await;
    result.expect("reported");
    let (s, reason, message) = api.condition(st::RELEASE_FAILED).expect("ReleaseFailed");
    assert_eq!((s.as_str(), reason.as_str()), ("True", "InstallError"));
    assert!(
        message.contains("is not ready 5m0s after it was deployed"),
        "{message}"
    );

    // Ready: Deployed, as Go says it.
    actions.lock().not_ready.clear();
    let mut setup = Setup::default();
    setup.watch.install_wait = true;
    let (result, api) = setup
        .reconcile(&actions, with_status(cr(json!({})), api.status()))
        .await;
    assert_eq!(result.expect("ready").requeue_after, None);
    let (s, reason, _) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!((s.as_str(), reason.as_str()), ("True", "InstallSuccessful"));
    assert!(api.condition(st::RELEASE_FAILED).is_none());

    // The annotation opts in per CR, for upgrades too.
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, "old")]),
    )]);
    let (result, api) = reconcile_once(
        &actions,
        annotated(json!({"a": 1}), &[("upgrade-wait", "true")]),
    )
    .await;
    result.expect("upgraded");
    let (_, reason, _) = api.condition(st::DEPLOYED).expect("Deployed");
    assert_eq!(reason, "AwaitingReadiness");
}

fn lookup_chart() -> Chart {
    let mut chart = demo_chart();
    chart.templates.push(chart::loader::File {
        name: "templates/cm.yaml".into(),
        data: b"v: {{ (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"src\").data.v }}"[..]
            .into(),
    });
    chart
}

#[tokio::test]
async fn a_changed_lookup_upgrades_and_an_unchanged_one_repairs() {
    let spec = json!({});
    let d = digest::inputs_digest(&lookup_chart(), &spec_values(&spec));
    let run = |actions: Arc<FakeActions>| async move {
        let setup = Setup {
            chart: lookup_chart(),
            ..Setup::default()
        };
        setup.reconcile(&actions, cr(json!({}))).await
    };
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, &d), (LOOKUPS_LABEL, "l1")]),
    )]);
    actions.lock().lookups = Some("l1".into());
    run(actions.clone()).await.0.expect("repaired");
    assert_eq!(actions.calls(), ["history", "diff", "repair"]);

    // A looked-up object changed, and with it the render: an upgrade.
    actions.lock().lookups = Some("l2".into());
    actions.lock().diff_changed = true;
    run(actions.clone()).await.0.expect("upgraded");
    assert_eq!(
        actions.calls(),
        ["history", "diff", "repair", "history", "diff", "upgrade"]
    );
    let newest = actions.lock().history.last().cloned().expect("record");
    assert_eq!(newest.labels.get(digest::LABEL), Some(&d), "same inputs");
    assert_eq!(
        newest.labels.get(LOOKUPS_LABEL).map(String::as_str),
        Some("l2")
    );
    // Now stable: no loop.
    actions.lock().diff_changed = false;
    run(actions.clone()).await.0.expect("repaired");
    assert_eq!(actions.calls().last(), Some(&"repair"));

    // A looked-up object changed but the release renders as deployed (a chart that
    // looks up what it created): the new digest is recorded, no revision written.
    actions.lock().lookups = Some("l3".into());
    let revisions = actions.lock().history.len();
    run(actions.clone()).await.0.expect("repaired");
    assert_eq!(
        &actions.calls()[actions.calls().len() - 3..],
        ["history", "diff", "repair"]
    );
    let history = actions.lock().history.clone();
    assert_eq!(history.len(), revisions, "no new revision");
    assert_eq!(
        history
            .last()
            .and_then(|m| m.labels.get(LOOKUPS_LABEL))
            .map(String::as_str),
        Some("l3")
    );
    run(actions.clone()).await.0.expect("repaired");
    assert_eq!(actions.lock().history.len(), revisions, "and it stays");

    // A record from before lookups were tracked gets the digest, without an upgrade.
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, &d)]),
    )]);
    actions.lock().lookups = Some("l1".into());
    run(actions.clone()).await.0.expect("repaired");
    assert_eq!(actions.calls(), ["history", "diff", "repair"]);
    assert_eq!(
        actions.lock().history[0]
            .labels
            .get(LOOKUPS_LABEL)
            .map(String::as_str),
        Some("l1")
    );
    // A chart without lookup never renders on the periodic path.
    let actions = FakeActions::with_history(vec![meta(
        1,
        Status::Deployed,
        labels(&[(digest::LABEL, &digest_of(&spec))]),
    )]);
    reconcile_once(&actions, cr(spec))
        .await
        .0
        .expect("repaired");
    assert_eq!(actions.calls(), ["history", "repair"]);
}
