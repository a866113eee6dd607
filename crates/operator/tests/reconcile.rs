//! `reconcile()` against the test cluster (embedded, or `RUDDER_TEST_KUBECONFIG`'s): a CR becomes a release (records,
//! status, owner references, events), spec changes upgrade, unchanged inputs never
//! make a revision (even for charts with random output), drift is repaired in place,
//! bad specs and failures are reported without looping or uninstalling, objects
//! outside the CR's namespace are refused, and deleting the CR uninstalls.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use operator::{reconcile, Context, ReconcileError};
use serde_json::{json, Value};

mod common;

use common::*;

async fn set_spec(client: &Client, name: &str, spec: Value) {
    // A merge patch cannot turn an object into a string and back cleanly; replace.
    let api = crs(client);
    let mut cr = api.get(name).await.expect("get CR");
    cr.data["spec"] = spec;
    api.replace(name, &PostParams::default(), &cr)
        .await
        .expect("replace CR");
}

fn condition<'a>(cr: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    cr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn assert_condition(cr: &DynamicObject, type_: &str, status: &str, reason: &str) {
    let c = condition(cr, type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {}", cr.data["status"]));
    assert_eq!(c["status"], status, "{type_}: {c}");
    assert_eq!(c["reason"].as_str().unwrap_or(""), reason, "{type_}: {c}");
    assert!(
        c["lastTransitionTime"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{c}"
    );
}

async fn configmap(client: &Client, ns: &str, name: &str) -> Option<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    api.get_opt(name).await.expect("get configmap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_upgrade_and_idle_reconciles() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "app", json!({"greeting": "hi"})).await;

    let outcome = run(&ctx, "app").await.expect("install");
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(600)));
    let mut kinds: Vec<&str> = outcome.dependents.iter().map(|g| g.kind.as_str()).collect();
    kinds.sort();
    assert_eq!(kinds, ["ConfigMap", "Secret"]);
    assert_eq!(revisions(&client, "app").await, [(1, "deployed".into())]);
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let record = secrets
        .get("sh.helm.release.v1.app.v1")
        .await
        .expect("record secret");
    let digest = record.labels().get("rudder.dev/inputs-digest").cloned();
    assert_eq!(
        digest.as_ref().map(String::len),
        Some(63),
        "{:?}",
        record.labels()
    );

    let cr = get_cr(&client, "app").await;
    assert!(cr.finalizers().iter().any(|f| f == FINALIZER));
    let status = &cr.data["status"];
    let types: Vec<&str> = status["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| c["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types, ["Initialized", "Deployed", "Ready"]);
    assert_condition(&cr, "Initialized", "True", "");
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");
    assert_eq!(
        condition(&cr, "Deployed").unwrap()["message"],
        "Hello from app.\n"
    );
    assert_eq!(status["deployedRelease"]["name"], "app");
    let manifest = status["deployedRelease"]["manifest"].as_str().unwrap_or("");
    assert!(manifest.contains("name: app-cfg"), "{manifest}");

    let cm = configmap(&client, ns.name(), "app-cfg")
        .await
        .expect("configmap");
    let owners = cm.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(owners[0].kind, KIND);
    assert_eq!(owners[0].api_version, format!("{GROUP}/{VERSION}"));
    assert_eq!(owners[0].name, "app");
    assert_eq!(Some(&owners[0].uid), cr.metadata.uid.as_ref());
    assert_eq!(owners[0].controller, Some(true));
    assert_eq!(owners[0].block_owner_deletion, Some(true));
    let events = event_reasons(&client, "app").await;
    assert!(
        events
            .iter()
            .any(|(t, r, _)| t == "Normal" && r == "InstallSuccessful"),
        "{events:?}"
    );

    // The chart renders a random password: still no new revision, status untouched.
    let rv = get_cr(&client, "app").await.resource_version();
    for _ in 0..3 {
        run(&ctx, "app").await.expect("idle reconcile");
    }
    assert_eq!(revisions(&client, "app").await, [(1, "deployed".into())]);
    assert_eq!(get_cr(&client, "app").await.resource_version(), rv);

    set_spec(&client, "app", json!({"greeting": "hello again"})).await;
    run(&ctx, "app").await.expect("upgrade");
    assert_eq!(
        revisions(&client, "app").await,
        [(1, "superseded".into()), (2, "deployed".into())]
    );
    let cr = get_cr(&client, "app").await;
    assert_condition(&cr, "Deployed", "True", "UpgradeSuccessful");
    let cm = configmap(&client, ns.name(), "app-cfg")
        .await
        .expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello again")
    );
    for _ in 0..2 {
        run(&ctx, "app").await.expect("idle reconcile");
    }
    assert_eq!(revisions(&client, "app").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired_without_a_new_revision() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "drift", json!({})).await;
    run(&ctx, "drift").await.expect("install");
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.delete("drift-cfg", &DeleteParams::default())
        .await
        .expect("delete configmap");
    assert!(configmap(&client, ns.name(), "drift-cfg").await.is_none());

    run(&ctx, "drift").await.expect("repair");
    let cm = configmap(&client, ns.name(), "drift-cfg")
        .await
        .expect("configmap recreated");
    assert!(cm.metadata.owner_references.is_some_and(|o| !o.is_empty()));
    assert_eq!(revisions(&client, "drift").await, [(1, "deployed".into())]);
    let events = event_reasons(&client, "drift").await;
    assert!(
        events.iter().any(|(t, r, n)| t == "Normal"
            && r == "Repaired"
            && n.contains(&format!("ConfigMap {}/drift-cfg", ns.name()))),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_specs_are_reported_and_leave_the_release_alone() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "bad", json!({"greeting": "ok"})).await;
    run(&ctx, "bad").await.expect("install");

    // spec is not an object: the CRD declares it one, so the API server refuses the
    // write as kube-apiserver does (an operator given such a spec by a looser CRD
    // reports it: `reconcile::tests::unusable_inputs_are_irreconcilable_…`).
    let api = crs(&client);
    let mut cr = api.get("bad").await.expect("get CR");
    cr.data["spec"] = json!("just a string");
    match api.replace("bad", &PostParams::default(), &cr).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 422, "{e:?}");
            assert!(
                e.message
                    .contains("spec in body must be of type object: \"string\""),
                "{}",
                e.message
            );
        }
        other => panic!("a string spec was not refused: {other:?}"),
    }
    run(&ctx, "bad")
        .await
        .expect("the stored spec is still good");
    assert_eq!(revisions(&client, "bad").await, [(1, "deployed".into())]);

    // A template `fail`.
    set_spec(&client, "bad", json!({"fail": true})).await;
    let err = run(&ctx, "bad").await.expect_err("template fail");
    assert!(
        release::api_error::chain(&err).contains("the spec asked this chart to fail"),
        "{err}"
    );
    // As in Go, an upgrade whose candidate cannot be rendered is irreconcilable, and
    // the deployed release stays Deployed.
    let cr = get_cr(&client, "bad").await;
    assert_condition(&cr, "Irreconcilable", "True", "ReconcileError");
    let msg = condition(&cr, "Irreconcilable").unwrap()["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        msg.starts_with("failed to get candidate release: "),
        "{msg}"
    );
    assert!(msg.contains("the spec asked this chart to fail"), "{msg}");
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");
    assert!(
        condition(&cr, "ReleaseFailed").is_none(),
        "{}",
        cr.data["status"]
    );

    // A values.schema.json violation.
    set_spec(&client, "bad", json!({"greeting": 5})).await;
    let err = run(&ctx, "bad").await.expect_err("schema violation");
    assert!(
        release::api_error::chain(&err).contains("greeting"),
        "{err}"
    );
    let cr = get_cr(&client, "bad").await;
    assert_condition(&cr, "Irreconcilable", "True", "ReconcileError");
    let msg = condition(&cr, "Irreconcilable").unwrap()["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        msg.starts_with("failed to get candidate release: "),
        "{msg}"
    );
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");

    // The deployed release was never touched.
    assert_eq!(revisions(&client, "bad").await, [(1, "deployed".into())]);
    let cm = configmap(&client, ns.name(), "bad-cfg")
        .await
        .expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("ok")
    );

    // Reverting the spec clears the failure conditions without a new revision.
    set_spec(&client, "bad", json!({"greeting": "ok"})).await;
    run(&ctx, "bad").await.expect("back to normal");
    let cr = get_cr(&client, "bad").await;
    assert!(
        condition(&cr, "ReleaseFailed").is_none(),
        "{}",
        cr.data["status"]
    );
    assert!(
        condition(&cr, "Irreconcilable").is_none(),
        "{}",
        cr.data["status"]
    );
    assert_eq!(revisions(&client, "bad").await, [(1, "deployed".into())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_outside_the_namespace_are_refused_unless_allowed() {
    let (ns, client) = start();
    let elsewhere_ns = ns.cluster().namespace("elsewhere");
    let elsewhere = elsewhere_ns.name();

    let ctx = context(&client, watch());
    create_cr(&client, "esc", json!({"otherNamespace": elsewhere})).await;
    let err = run(&ctx, "esc").await.expect_err("refused");
    assert!(
        release::api_error::chain(&err).contains("allowedNamespaces"),
        "{err}"
    );
    let cr = get_cr(&client, "esc").await;
    assert_condition(&cr, "ReleaseFailed", "True", "InstallError");
    let msg = condition(&cr, "ReleaseFailed").unwrap()["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        msg.contains(&format!(
            "ConfigMap {elsewhere}/esc-elsewhere is in namespace \"{elsewhere}\""
        )),
        "{msg}"
    );
    assert!(configmap(&client, elsewhere, "esc-elsewhere")
        .await
        .is_none());
    assert!(configmap(&client, ns.name(), "esc-cfg").await.is_none());

    create_cr(&client, "role", json!({"clusterRole": true})).await;
    let err = run(&ctx, "role").await.expect_err("refused");
    assert!(
        release::api_error::chain(&err).contains("allowClusterScoped: true"),
        "{err}"
    );
    assert!(configmap(&client, ns.name(), "role-cfg").await.is_none());

    // Allowed by the watch: applied, and annotated with the primary resource.
    let mut w = watch();
    w.allowed_namespaces = vec![elsewhere.into()];
    let ctx = context(&client, w);
    create_cr(&client, "ok", json!({"otherNamespace": elsewhere})).await;
    run(&ctx, "ok").await.expect("allowed");
    let cm = configmap(&client, elsewhere, "ok-elsewhere")
        .await
        .expect("configmap elsewhere");
    let ann = cm.metadata.annotations.unwrap_or_default();
    assert_eq!(
        ann.get("operator-sdk/primary-resource").map(String::as_str),
        Some(format!("{}/ok", ns.name()).as_str())
    );
    assert_eq!(
        ann.get("operator-sdk/primary-resource-type")
            .map(String::as_str),
        Some("Demo.test.rudder.dev")
    );
    assert!(cm.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_cr_uninstalls_and_removes_the_finalizer() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "gone", json!({})).await;
    run(&ctx, "gone").await.expect("install");
    assert!(configmap(&client, ns.name(), "gone-cfg").await.is_some());

    crs(&client)
        .delete("gone", &DeleteParams::default())
        .await
        .expect("delete CR");
    let cr = get_cr(&client, "gone").await;
    assert!(cr.metadata.deletion_timestamp.is_some());
    reconcile(Arc::new(cr.into()), ctx.clone())
        .await
        .expect("uninstall");

    assert!(configmap(&client, ns.name(), "gone-cfg").await.is_none());
    assert!(revisions(&client, "gone").await.is_empty());
    assert!(
        crs(&client).get_opt("gone").await.expect("get").is_none(),
        "the CR is released once its finalizer is removed"
    );
    let events = event_reasons(&client, "gone").await;
    assert!(
        events.iter().any(|(_, r, _)| r == "UninstallSuccessful"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_install_is_kept_and_does_not_loop() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());

    // Refused before anything is written: no record at all, however often it runs.
    create_cr(&client, "unknown", json!({"unknownKind": true})).await;
    for _ in 0..3 {
        let err = run(&ctx, "unknown").await.expect_err("install fails");
        assert!(release::api_error::chain(&err).contains("Widget"), "{err}");
    }
    assert!(revisions(&client, "unknown").await.is_empty());
    let cr = get_cr(&client, "unknown").await;
    assert_condition(&cr, "ReleaseFailed", "True", "InstallError");

    // Fails while applying: the failed record stays, and so do the applied objects.
    create_cr(&client, "broken", json!({"badObject": true})).await;
    let err = run(&ctx, "broken").await.expect_err("install fails");
    assert!(matches!(err, ReconcileError::Action { .. }), "{err}");
    assert_eq!(err.requeue_after(), Some(Duration::from_secs(10)));
    let cr = get_cr(&client, "broken").await;
    assert_condition(&cr, "ReleaseFailed", "True", "InstallError");
    let msg = condition(&cr, "ReleaseFailed").unwrap()["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(msg.starts_with("failed to install release: "), "{msg}");
    assert!(msg.contains("Not_A_Valid_Name"), "{msg}");
    assert_eq!(revisions(&client, "broken").await, [(1, "failed".into())]);
    let events = event_reasons(&client, "broken").await;
    assert!(
        events.iter().any(|(t, r, n)| t == "Warning"
            && r == "InstallError"
            && n.contains("Not_A_Valid_Name")),
        "{events:?}"
    );

    for _ in 0..3 {
        let err = run(&ctx, "broken").await.expect_err("backing off");
        assert!(matches!(err, ReconcileError::BackingOff { .. }), "{err}");
        assert!(err
            .requeue_after()
            .is_some_and(|d| d <= Duration::from_secs(10)));
    }
    // Not uninstalled, no new revisions.
    assert_eq!(revisions(&client, "broken").await, [(1, "failed".into())]);
    assert_eq!(
        condition(&get_cr(&client, "broken").await, "ReleaseFailed").unwrap()["message"],
        msg.as_str()
    );

    // Changed inputs retry at once.
    set_spec(&client, "broken", json!({})).await;
    run(&ctx, "broken").await.expect("install after fix");
    assert_eq!(
        revisions(&client, "broken").await,
        [(1, "failed".into()), (2, "deployed".into())]
    );
    let cr = get_cr(&client, "broken").await;
    assert!(condition(&cr, "ReleaseFailed").is_none());
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_upgrade_rolls_back_and_does_not_loop() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "up", json!({"greeting": "v1"})).await;
    run(&ctx, "up").await.expect("install");

    set_spec(&client, "up", json!({"greeting": "v2", "badObject": true})).await;
    let err = run(&ctx, "up").await.expect_err("upgrade fails");
    assert!(matches!(err, ReconcileError::Action { .. }), "{err}");
    let after_failure = revisions(&client, "up").await;
    assert_eq!(after_failure[1], (2, "failed".into()), "{after_failure:?}");
    assert_eq!(after_failure.last().map(|r| r.1.as_str()), Some("deployed"));
    let cr = get_cr(&client, "up").await;
    assert_condition(&cr, "ReleaseFailed", "True", "UpgradeError");
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");

    for _ in 0..3 {
        let err = run(&ctx, "up").await.expect_err("backing off");
        assert!(matches!(err, ReconcileError::BackingOff { .. }), "{err}");
    }
    assert_eq!(revisions(&client, "up").await, after_failure);
    let cm = configmap(&client, ns.name(), "up-cfg")
        .await
        .expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("v1")
    );
    let events = event_reasons(&client, "up").await;
    assert!(
        events
            .iter()
            .any(|(t, r, _)| t == "Normal" && r == "RolledBack"),
        "{events:?}"
    );

    // A good spec upgrades at once; going back to the failing one is tried at once too
    // (the failures before the success do not count).
    set_spec(&client, "up", json!({"greeting": "v3"})).await;
    run(&ctx, "up").await.expect("upgrade after fix");
    let cr = get_cr(&client, "up").await;
    assert!(condition(&cr, "ReleaseFailed").is_none());
    assert_condition(&cr, "Deployed", "True", "UpgradeSuccessful");
    let n = revisions(&client, "up").await.len();
    set_spec(&client, "up", json!({"greeting": "v2", "badObject": true})).await;
    let err = run(&ctx, "up").await.expect_err("upgrade fails again");
    assert!(matches!(err, ReconcileError::Action { .. }), "{err}");
    assert!(revisions(&client, "up").await.len() > n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_made_by_helm_are_compared_by_render() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    let chart = std::sync::Arc::new(chart::loader::load(chart_dir()).expect("chart"));
    // As `helm install` would leave it: no inputs digest on the record.
    for (name, random) in [("steady", false), ("noisy", true)] {
        let values = json!({"greeting": "hi", "random": random})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let opts = action::ActionOptions::new(name, ns.name());
        action::Install::new(&action::ActionConfig::new(client.clone()), opts)
            .run(&chart, values)
            .await
            .expect("helm-style install");
        create_cr(&client, name, json!({"greeting": "hi", "random": random})).await;
    }

    // Same render: repaired in place, no new revision.
    for _ in 0..2 {
        run(&ctx, "steady").await.expect("reconcile");
    }
    assert_eq!(revisions(&client, "steady").await, [(1, "deployed".into())]);
    // The matching render stamped the inputs digest on the record, so later reconciles
    // compare digests instead of rendering again.
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let record = secrets
        .get("sh.helm.release.v1.steady.v1")
        .await
        .expect("record");
    assert!(record.labels().contains_key("rudder.dev/inputs-digest"));
    let cr = get_cr(&client, "steady").await;
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");
    // Repair added the owner reference the helm install did not have.
    let cm = configmap(&client, ns.name(), "steady-cfg")
        .await
        .expect("configmap");
    assert!(cm.metadata.owner_references.is_some_and(|o| o.len() == 1));

    // Random output: one upgrade records the digest, then the release is stable.
    for _ in 0..3 {
        run(&ctx, "noisy").await.expect("reconcile");
    }
    assert_eq!(
        revisions(&client, "noisy").await,
        [(1, "superseded".into()), (2, "deployed".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_period_annotation_wins() {
    let (_ns, client) = start();
    let mut w = watch();
    w.watch_dependent_resources = false;
    let ctx = context(&client, w);
    create_cr(&client, "period", json!({})).await;
    let patch = json!({"metadata": {"annotations": {
        "helm.sdk.operatorframework.io/reconcile-period": "1m30s"
    }}});
    crs(&client)
        .patch("period", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotate");
    let outcome = run(&ctx, "period").await.expect("install");
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(90)));
    assert!(outcome.dependents.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn override_values_win_and_are_announced_without_their_value() {
    let (ns, client) = start();
    let mut w = watch();
    w.override_values
        .insert("greeting".into(), "from-watches".into());
    let ctx = context(&client, w);
    create_cr(&client, "ovr", json!({"greeting": "from-spec"})).await;
    run(&ctx, "ovr").await.expect("install");
    let cm = configmap(&client, ns.name(), "ovr-cfg")
        .await
        .expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("from-watches")
    );
    let events = event_reasons(&client, "ovr").await;
    let note = events
        .iter()
        .find(|(t, r, _)| t == "Warning" && r == "OverrideValuesInUse")
        .map(|(_, _, n)| n.clone())
        .unwrap_or_default();
    // As Go: the value is shown unless --suppress-override-values.
    assert_eq!(
        note,
        "Chart value \"greeting\" overridden to \"from-watches\" by operator's watches.yaml"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_operation_is_recovered() {
    let (ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "crash", json!({"greeting": "hi"})).await;
    run(&ctx, "crash").await.expect("install");

    // `helm upgrade` is at work: revision 2 is pending-upgrade, written just now
    // without rudder's lock. The operator leaves it alone.
    let store = release::Storage::new(Arc::new(release::SecretDriver::for_namespace(
        client.clone(),
        ns.name(),
    )));
    let mut pending = store.get("crash", 1).await.expect("revision 1");
    pending.version = 2;
    pending.set_status(release::Status::PendingUpgrade, "Preparing upgrade");
    store.create(&pending).await.expect("pending record");
    let err = run(&ctx, "crash").await.expect_err("another tool at work");
    assert!(
        err.to_string().contains(
            "revision 2 of release \"crash\" is pending-upgrade: another operation is in progress"
        ),
        "{err}"
    );
    assert_eq!(
        revisions(&client, "crash").await,
        [(1, "deployed".into()), (2, "pending-upgrade".into())]
    );

    // A rudder process died in the middle of an upgrade: revision 2 carries its
    // lock, which it no longer renews.
    let long_ago = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).expect("time");
    let lock = release::lock::LockState::expired("crashed-host/4242/x", long_ago);
    store
        .driver()
        .annotate(
            &release::make_key("crash", 2),
            None,
            release::lock::LOCK_ANNOTATION,
            Some(&lock.encode()),
        )
        .await
        .expect("the crashed holder's lock");
    run(&ctx, "crash").await.expect("recovered");
    assert_eq!(
        revisions(&client, "crash").await,
        [(1, "deployed".into()), (2, "failed".into())]
    );
    let cr = get_cr(&client, "crash").await;
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_goes_to_the_main_resource_without_a_status_subresource() {
    let (ns, client) = start();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("plains.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "plains", "singular": "plain", "kind": "Plain", "listKind": "PlainList"},
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    let plain = ns.cluster().install_crd(&crd);
    let mut w = watch();
    w.kind = "Plain".into();
    let chart = chart::loader::load(chart_dir()).expect("chart");
    let ctx =
        Context::new(client.clone(), Arc::new(w), Arc::new(chart), plain.clone()).expect("context");
    let ctx = Arc::new(ctx);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &plain);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "Plain",
        "metadata": {"name": "plain", "namespace": ns.name()},
        "spec": {},
    }))
    .expect("cr");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create CR");
    let cr = api.get("plain").await.expect("get");
    let outcome = reconcile(Arc::new(cr.into()), ctx).await.expect("install");
    assert_eq!(outcome.requeue_after, None);
    let cr = api.get("plain").await.expect("get");
    assert_condition(&cr, "Deployed", "True", "InstallSuccessful");
    assert_eq!(cr.data["status"]["deployedRelease"]["name"], "plain");
}
