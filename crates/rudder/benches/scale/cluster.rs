//! What a scenario does to the cluster: the example CRD, namespaces, CRs created in
//! bulk, and a watch that counts the CRs whose `Deployed` condition is `True`.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::watcher;
use kube::Client;
use serde_json::{json, Value};

use crate::procs;

pub const GROUP: &str = "demo.rudder.dev";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "Hello";
pub const PLURAL: &str = "hellos";
/// Creates in flight at once, like `kubectl apply` of one big file (which sends them
/// one after the other) but quicker to get through.
const CREATE_CONCURRENCY: usize = 16;

pub async fn client(kubeconfig: &Path) -> Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kubeconfig");
    Client::try_from(config).expect("client")
}

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL)
}

/// Installs `examples/operator/crd.yaml` and waits until the kind is served.
pub async fn install_crd(client: &Client) {
    let text = std::fs::read_to_string(procs::repo_root().join("examples/operator/crd.yaml"))
        .expect("examples/operator/crd.yaml");
    let value = gocodec::yaml::parse_yaml_to_json(&text).expect("CRD YAML");
    let crd: CustomResourceDefinition = serde_json::from_value(value).expect("a CRD");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("create the CRD");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    let deadline = Instant::now() + Duration::from_secs(60);
    while api.list(&Default::default()).await.is_err() {
        assert!(Instant::now() < deadline, "the Hello kind is not served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The namespace the `i`th CR goes to.
pub fn namespace_of(i: usize, namespaces: usize) -> String {
    format!("scale-{:03}", i % namespaces)
}

pub fn cr_name(i: usize) -> String {
    format!("hello-{i:05}")
}

pub async fn create_namespaces(client: &Client, namespaces: usize) {
    let api: Api<Namespace> = Api::all(client.clone());
    for i in 0..namespaces {
        let ns: Namespace = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_of(i, namespaces)}}),
        )
        .expect("namespace");
        api.create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
    }
}

/// Creates `count` Hello CRs round-robin over the namespaces.
pub async fn create_crs(client: &Client, count: usize, namespaces: usize) {
    let ar = resource();
    futures::stream::iter(0..count)
        .map(|i| {
            let ns = namespace_of(i, namespaces);
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
            let cr: DynamicObject = serde_json::from_value(json!({
                "apiVersion": format!("{GROUP}/{VERSION}"),
                "kind": KIND,
                "metadata": {"name": cr_name(i), "namespace": ns},
                "spec": {"replicaCount": 1, "message": message(i, 0)},
            }))
            .expect("CR");
            async move { api.create(&PostParams::default(), &cr).await }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
        .expect("create CRs");
}

/// The message of the `i`th CR's spec; `round` 0 at creation, higher after upgrades.
pub fn message(i: usize, round: usize) -> String {
    match round {
        0 => format!("Hello number {i}"),
        r => format!("Hello number {i}, round {r}"),
    }
}

/// `Deployed=True`, and with a `round` its message (the chart's notes) shows that
/// round's message: the upgrade to it finished.
fn deployed(cr: &DynamicObject, round: usize) -> bool {
    let Some(condition) = cr
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["type"] == "Deployed" && c["status"] == "True")
        })
    else {
        return false;
    };
    if round == 0 {
        return true;
    }
    let Some(i) = cr
        .metadata
        .name
        .as_deref()
        .and_then(|n| n.strip_prefix("hello-"))
        .and_then(|n| n.parse::<usize>().ok())
    else {
        return false;
    };
    condition["message"]
        .as_str()
        .is_some_and(|m| m.contains(&format!("\"{}\"", message(i, round))))
}

/// Changes every CR's message to `round`'s: one upgrade each.
pub async fn upgrade_crs(client: &Client, count: usize, namespaces: usize, round: usize) {
    let ar = resource();
    futures::stream::iter(0..count)
        .map(|i| {
            let ns = namespace_of(i, namespaces);
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
            let patch = json!({"spec": {"message": message(i, round)}});
            async move {
                api.patch(&cr_name(i), &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
        .expect("upgrade CRs");
}

fn key(cr: &DynamicObject) -> (String, String) {
    (
        cr.metadata.namespace.clone().unwrap_or_default(),
        cr.metadata.name.clone().unwrap_or_default(),
    )
}

/// Watches every Hello until `target` are Deployed (at `round`'s message, see
/// [`upgrade_crs`]) or `timeout` passes, calling `progress(deployed)` about every
/// `every`. Returns how many were Deployed.
pub async fn wait_deployed(
    client: &Client,
    target: usize,
    round: usize,
    timeout: Duration,
    every: Duration,
    mut progress: impl FnMut(usize),
) -> usize {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource());
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    let mut done: HashSet<(String, String)> = HashSet::new();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut next_report = Instant::now() + every;
    while done.len() < target {
        let event = tokio::select! {
            e = stream.next() => e,
            _ = tokio::time::sleep_until(deadline) => break,
            _ = tokio::time::sleep(every) => { progress(done.len()); next_report = Instant::now() + every; continue }
        };
        match event {
            Some(Ok(watcher::Event::Apply(cr) | watcher::Event::InitApply(cr))) => {
                if deployed(&cr, round) {
                    done.insert(key(&cr));
                } else {
                    done.remove(&key(&cr));
                }
            }
            Some(Ok(watcher::Event::Delete(cr))) => {
                done.remove(&key(&cr));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("  (watch of the CRs failed, retrying: {e})"),
            None => break,
        }
        if Instant::now() >= next_report {
            progress(done.len());
            next_report = Instant::now() + every;
        }
    }
    done.len()
}
