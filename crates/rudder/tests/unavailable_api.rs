//! `rudder install` on a cluster with an aggregated API whose service is down (the
//! most common broken state of a metrics stack): like `helm`, it skips that group
//! version with one warning naming it and its APIService, asks it once without
//! retries, and installs. The cluster is testkit's, behind its unavailable-API proxy
//! (which counts the requests), or with a real APIService whose Service is missing.

mod cli;

use std::time::Instant;

use cli::rudder;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use testkit::{ChartDir, Cluster};

fn one_configmap() -> ChartDir {
    ChartDir::new(
        "pc",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: pc\nversion: 0.1.0\n"),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pc\ndata:\n  a: b\n",
            ),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_skips_an_unavailable_aggregated_api_with_one_warning() {
    let ns = Cluster::start().namespace("unavailable-api-cli");
    let proxy = ns.unavailable_api("custom.metrics.k8s.io/v1beta1");
    let chart = one_configmap();
    let o = rudder(
        proxy.kubeconfig(),
        &["install", "pc", chart.path().to_str().expect("utf-8")],
    )
    .await;
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "install failed\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("STATUS: deployed"), "{out}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("custom.metrics.k8s.io/v1beta1"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning:\n{err}");
    assert!(
        warnings[0].contains("APIService v1beta1.custom.metrics.k8s.io"),
        "{err}"
    );
    assert_eq!(proxy.requests(), 1, "asked once, never retried");
    let cms: Api<ConfigMap> = Api::namespaced(ns.client(), ns.name());
    assert!(cms.get_opt("pc").await.expect("read").is_some());
}

/// The same with a real APIService on the cluster whose Service is missing (no proxy),
/// as a broken metrics adapter leaves a real cluster: the install finishes and names the
/// group it skipped and its APIService, once. How long it took is printed, not judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_skips_a_real_unavailable_apiservice_with_one_warning() {
    let ns = Cluster::start().namespace("unavailable-apiservice-cli");
    let gv = format!("{}.metrics.rudder.dev/v1beta1", ns.name());
    let apiservice = ns.unavailable_apiservice(&gv);
    let chart = one_configmap();
    let started = Instant::now();
    let o = rudder(
        ns.kubeconfig(),
        &["install", "pc", chart.path().to_str().expect("utf-8")],
    )
    .await;
    let took = started.elapsed();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "install failed\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.contains("STATUS: deployed"), "{out}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains(&gv)).collect();
    assert_eq!(warnings.len(), 1, "one warning:\n{err}");
    assert!(
        warnings[0].contains(&format!("APIService {apiservice}")),
        "{err}"
    );
    let cms: Api<ConfigMap> = Api::namespaced(ns.client(), ns.name());
    assert!(cms.get_opt("pc").await.expect("read").is_some());
    eprintln!("rudder install of a one-ConfigMap chart with {apiservice} unavailable: {took:?}");
}
