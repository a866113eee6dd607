//! Adoption against the embedded API server: a release whose records were deleted while
//! its objects run gets a fresh record over the same objects (same UIDs, no hooks);
//! with no live objects nothing happens; another release's object stops adoption with
//! nothing deleted.

mod common;

use action::{ActionConfig, Adopt, Error, Install, Upgrade};
use common::{opts, start, values, write_chart};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::Client;
use release::record::Status;
use serde_json::json;
use std::sync::Arc;

async fn release_secrets(client: &Client, name: &str) -> Vec<Secret> {
    Api::<Secret>::default_namespaced(client.clone())
        .list(&ListParams::default().labels(&format!("owner=helm,name={name}")))
        .await
        .expect("list Secrets")
        .items
}

async fn delete_release_secrets(client: &Client, name: &str) {
    let api = Api::<Secret>::default_namespaced(client.clone());
    for s in release_secrets(client, name).await {
        let n = s.metadata.name.unwrap_or_default();
        api.delete(&n, &DeleteParams::default())
            .await
            .expect("delete Secret");
    }
    assert!(release_secrets(client, name).await.is_empty());
}

async fn uid<K>(api: &Api<K>, name: &str) -> String
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get(name)
        .await
        .expect("object exists")
        .meta()
        .uid
        .clone()
        .unwrap_or_default()
}

#[tokio::test]
async fn lost_records_are_rewritten_over_live_objects() {
    let (ns, client) = start();
    let chart = Arc::new(chart::loader::load(write_chart(ns.dir())).expect("chart loads"));
    let vals = values(json!({"greeting": "hi"}));
    let cfg = ActionConfig::new(client.clone());
    Install::new(&cfg, opts(&ns, "web"))
        .run(&chart, vals.clone())
        .await
        .expect("install");
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let deploy_uid = uid(&deployments, "web-web").await;
    let cm_uid = uid(&configmaps, "web-cfg").await;
    // The install ran the hook; remove its Job so a second run would show.
    jobs.delete("web-migrate", &DeleteParams::background())
        .await
        .expect("delete hook Job");

    delete_release_secrets(&client, "web").await;

    let rel = Adopt::new(&cfg, opts(&ns, "web"))
        .run(&chart, vals.clone())
        .await
        .expect("adopt")
        .expect("a record was written");
    assert_eq!(rel.version, 1);
    assert_eq!(rel.status(), Status::Deployed);
    assert_eq!(
        rel.info.as_ref().map(|i| i.description.as_str()),
        Some("Adopted 3 existing objects after the release records were lost")
    );
    assert!(
        rel.hooks.iter().all(|h| h.last_run.phase.is_empty()),
        "no hook ran: {:?}",
        rel.hooks
    );
    assert!(
        jobs.get_opt("web-migrate")
            .await
            .expect("read Job")
            .is_none(),
        "hook Job not re-run"
    );
    assert_eq!(
        uid(&deployments, "web-web").await,
        deploy_uid,
        "same Deployment"
    );
    assert_eq!(uid(&configmaps, "web-cfg").await, cm_uid, "same ConfigMap");

    let secrets = release_secrets(&client, "web").await;
    assert_eq!(secrets.len(), 1);
    let labels = secrets[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("status").map(String::as_str), Some("deployed"));

    // With records present again, a normal upgrade works on top of the adopted one.
    let up = Upgrade::new(&cfg, opts(&ns, "web"))
        .run(&chart, vals)
        .await
        .expect("upgrade after adoption");
    assert_eq!(up.version, 2);
    assert_eq!(uid(&deployments, "web-web").await, deploy_uid);
}

#[tokio::test]
async fn nothing_live_means_a_normal_install() {
    let (ns, client) = start();
    let chart = Arc::new(chart::loader::load(write_chart(ns.dir())).expect("chart loads"));
    let cfg = ActionConfig::new(client.clone());
    let out = Adopt::new(&cfg, opts(&ns, "fresh"))
        .run(&chart, values(json!({})))
        .await
        .expect("adopt");
    assert!(out.is_none());
    assert!(
        release_secrets(&client, "fresh").await.is_empty(),
        "no record written"
    );
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    assert!(deployments
        .get_opt("fresh-web")
        .await
        .expect("read")
        .is_none());
}

#[tokio::test]
async fn objects_of_another_release_stop_adoption_without_deleting() {
    let (ns, client) = start();
    let chart = Arc::new(chart::loader::load(write_chart(ns.dir())).expect("chart loads"));
    let vals = values(json!({}));
    let cfg = ActionConfig::new(client.clone());
    Install::new(&cfg, opts(&ns, "web"))
        .run(&chart, vals.clone())
        .await
        .expect("install");
    delete_release_secrets(&client, "web").await;
    // The ConfigMap now claims to belong to another release.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let patch = json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "other"}}});
    configmaps
        .patch("web-cfg", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("re-annotate");
    let live = Adopt::new(&cfg, opts(&ns, "web"))
        .live_objects(&chart, vals.clone())
        .await
        .expect("look up");
    assert_eq!((live.owned.len(), live.foreign.len()), (2, 1));

    let err = Adopt::new(&cfg, opts(&ns, "web"))
        .run(&chart, vals)
        .await
        .expect_err("conflict surfaces");
    assert!(matches!(err, Error::Adopt { found: 2, .. }), "{err:?}");
    let msg = release::api_error::chain(&err);
    assert!(
        msg.contains(&format!("ConfigMap {}/web-cfg", ns.name())),
        "{msg}"
    );
    assert!(msg.contains("nothing was deleted"), "{msg}");
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    assert!(deployments
        .get_opt("web-web")
        .await
        .expect("read")
        .is_some());
    assert!(configmaps.get_opt("web-cfg").await.expect("read").is_some());
}
