//! What the operator builds on, on the test cluster: records carry the
//! caller's owner reference and the digest of what `lookup` returned, a diff tells a
//! changed looked-up object, `Uninstall::leftovers` deletes what of a manifest is
//! still there (not kept objects, not another release's), repair reports objects that
//! are not ready, and two concurrent installs of a fresh release cannot both win.

mod common;

use std::sync::Arc;
use std::time::Duration;

use action::{ActionOptions, Error, Install, Repair, Uninstall, UninstallOptions, Upgrade};
use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::{json, Map};
use testkit::TestNamespace;

const LOOKUPS: &str = "example.com/lookups";

const LOOKING: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-seen
data:
  v: {{ dig "data" "v" "none" (lookup "v1" "ConfigMap" .Release.Namespace "src") | quote }}
  nonce: {{ randAlphaNum 8 | quote }}
"#;

const HELD: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-held
  finalizers: ["example.com/hold"]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-kept
  annotations:
    helm.sh/resource-policy: keep
  finalizers: ["example.com/hold"]
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.invalid/never:1
"#;

/// A controller owner of the records that exists (the cluster's garbage collector
/// deletes what a missing owner owned, as kube-controller-manager's does): a
/// ConfigMap standing in for the operator's custom resource.
async fn owner(client: &Client) -> OwnerReference {
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "lk-owner"}})).expect("configmap");
    let cm = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("the owner");
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "lk-owner".into(),
        uid: cm.metadata.uid.expect("a uid"),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn operator_opts(ns: &TestNamespace, name: &str, owner: &OwnerReference) -> ActionOptions {
    let mut o = opts(ns, name);
    o.record_owner = Some(owner.clone());
    o.lookups_label = Some(LOOKUPS.into());
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_carry_the_owner_and_what_lookup_returned() {
    let (ns, client) = start();
    let dir = ns.dir().to_path_buf();
    let chart = Arc::new(
        chart::loader::load(testkit::write_chart(
            &dir,
            "looking",
            &[
                (
                    "Chart.yaml",
                    "apiVersion: v2\nname: looking\nversion: 0.1.0\n",
                ),
                ("templates/seen.yaml", LOOKING),
            ],
        ))
        .expect("chart"),
    );
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let src: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "src"}, "data": {"v": "1"}}))
            .expect("configmap");
    cms.create(&PostParams::default(), &src).await.expect("src");

    let owner = owner(&client).await;
    let cfg = cfg(&client);
    Install::new(&cfg, operator_opts(&ns, "lk", &owner))
        .run(&chart, Map::new())
        .await
        .expect("install");
    let record = record_secret(&client, "lk", 1).await.expect("record");
    assert_eq!(record.metadata.owner_references, Some(vec![owner.clone()]));
    let first = record.metadata.labels.unwrap_or_default()[LOOKUPS].clone();
    assert_eq!(first.len(), 32);

    // Same cluster: the diff's lookups match (though the random value differs).
    let diff = Upgrade::new(&cfg, operator_opts(&ns, "lk", &owner))
        .diff(&chart, Map::new())
        .await
        .expect("diff");
    assert!(diff.changed, "the random value always differs");
    assert_eq!(diff.lookups.as_deref(), Some(first.as_str()));
    // The looked-up object's content changes: so does the digest; its resource
    // version alone does not.
    cms.patch(
        "src",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .expect("touch src");
    cms.patch(
        "src",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": null}})),
    )
    .await
    .expect("touch src back");
    let again = Upgrade::new(&cfg, operator_opts(&ns, "lk", &owner))
        .diff(&chart, Map::new())
        .await
        .expect("diff");
    assert_eq!(again.lookups.as_deref(), Some(first.as_str()));
    cms.patch(
        "src",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .expect("change src");
    let changed = Upgrade::new(&cfg, operator_opts(&ns, "lk", &owner))
        .diff(&chart, Map::new())
        .await
        .expect("diff");
    assert!(changed.lookups.is_some() && changed.lookups.as_deref() != Some(first.as_str()));
    Upgrade::new(&cfg, operator_opts(&ns, "lk", &owner))
        .run(&chart, Map::new())
        .await
        .expect("upgrade");
    let record = record_secret(&client, "lk", 2).await.expect("record");
    assert_eq!(
        record.metadata.labels.unwrap_or_default().get(LOOKUPS),
        changed.lookups.as_ref()
    );
    // The superseded record keeps its owner reference.
    let old = record_secret(&client, "lk", 1).await.expect("record");
    assert_eq!(old.metadata.owner_references, Some(vec![owner.clone()]));

    // A chart without lookups records no digest (and the CLI's options none at all).
    let plain = Arc::new(chart::loader::load(write_chart(ns.dir())).expect("chart"));
    Install::new(&cfg, operator_opts(&ns, "plain", &owner))
        .run(&plain, Map::new())
        .await
        .expect("install");
    let labels = record_secret(&client, "plain", 1)
        .await
        .expect("record")
        .metadata
        .labels
        .unwrap_or_default();
    assert!(!labels.contains_key(LOOKUPS), "{labels:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_are_deleted_again_until_gone() {
    let (ns, client) = start();
    let dir = ns.dir().to_path_buf();
    let chart = Arc::new(
        chart::loader::load(testkit::write_chart(
            &dir,
            "held",
            &[
                ("Chart.yaml", "apiVersion: v2\nname: held\nversion: 0.1.0\n"),
                ("templates/held.yaml", HELD),
            ],
        ))
        .expect("chart"),
    );
    let cfg = cfg(&client);
    let rel = Install::new(&cfg, opts(&ns, "h"))
        .run(&chart, Map::new())
        .await
        .expect("install");
    let u = || {
        let mut u = UninstallOptions::new("h", ns.name());
        u.timeout = Duration::from_secs(10);
        u
    };
    Uninstall::new(&cfg, u()).run().await.expect("uninstall");
    assert!(
        record_secret(&client, "h", 1).await.is_none(),
        "records gone"
    );
    let left = Uninstall::new(&cfg, u())
        .leftovers(&rel.manifest)
        .await
        .expect("leftovers");
    let names: Vec<&str> = left.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["h-held"], "the kept object is not waited for");

    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.patch(
        "h-held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    let left = Uninstall::new(&cfg, u())
        .leftovers(&rel.manifest)
        .await
        .expect("leftovers");
    assert!(left.is_empty(), "{left:?}");
    assert!(
        cms.get_opt("h-kept").await.expect("read").is_some(),
        "kept stays"
    );

    // An object now owned by another release is not ours to delete or wait for.
    let theirs: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "h-held",
        "annotations": {"meta.helm.sh/release-name": "other",
            "meta.helm.sh/release-namespace": ns.name()}}}))
    .expect("configmap");
    cms.create(&PostParams::default(), &theirs)
        .await
        .expect("theirs");
    let left = Uninstall::new(&cfg, u())
        .leftovers(&rel.manifest)
        .await
        .expect("leftovers");
    assert!(left.is_empty(), "{left:?}");
    assert!(cms.get_opt("h-held").await.expect("read").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_reports_what_is_not_ready() {
    // No readiness help: the Deployment stays unready.
    let ns = testkit::Cluster::builder()
        .simulate_readiness(false)
        .start()
        .namespace("action");
    let client = ns.client();
    let dir = ns.dir().to_path_buf();
    let chart = Arc::new(
        chart::loader::load(testkit::write_chart(
            &dir,
            "web",
            &[
                ("Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n"),
                ("templates/deploy.yaml", DEPLOYMENT),
            ],
        ))
        .expect("chart"),
    );
    let cfg = cfg(&client);
    Install::new(&cfg, opts(&ns, "w"))
        .run(&chart, Map::new())
        .await
        .expect("install");
    let (_, report) = Repair::new(&cfg, opts(&ns, "w"))
        .run()
        .await
        .expect("repair");
    assert_eq!(report.not_ready.len(), 1, "{report:?}");
    assert!(
        report.not_ready[0].starts_with(&format!("Deployment {}/w-web: ", ns.name())),
        "{:?}",
        report.not_ready
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_installs_of_a_fresh_release_cannot_both_win() {
    let (ns, client) = start();
    let chart = Arc::new(chart::loader::load(write_chart(ns.dir())).expect("chart"));
    let cfg = cfg(&client);
    for round in 0..3 {
        let name = format!("race{round}");
        let (ia, ib) = (
            Install::new(&cfg, opts(&ns, &name)),
            Install::new(&cfg, opts(&ns, &name)),
        );
        let (a, b) = tokio::join!(ia.run(&chart, Map::new()), ib.run(&chart, Map::new()));
        let won = [&a, &b].iter().filter(|r| r.is_ok()).count();
        let refused = [&a, &b]
            .iter()
            .filter(|r| matches!(r, Err(Error::Locked { .. }) | Err(Error::InUse { .. })))
            .count();
        assert_eq!((won, refused), (1, 1), "{a:?} {b:?}");
        let secrets: Api<Secret> = Api::default_namespaced(client.clone());
        let records = secrets
            .list(&kube::api::ListParams::default().labels(&format!("owner=helm,name={name}")))
            .await
            .expect("records");
        assert_eq!(records.items.len(), 1, "one revision 1");
    }
}
