//! HTTPS: kube-rs and kubectl verify the server through the CA in the
//! kubeconfig it writes, clients without that CA are refused, and a data
//! directory keeps the CA across restarts.

use apiserver::{Config, Server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn tls_config() -> Config {
    Config {
        tls: true,
        ..Config::default()
    }
}

/// A client configured exactly as a user's would be: from the kubeconfig file.
async fn client_from_kubeconfig(server: &Server) -> kube::Client {
    let kc = Kubeconfig::read_from(server.kubeconfig_path()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_over_tls_create_get_watch() {
    let server = Server::start(tls_config()).await.unwrap();
    assert!(
        server.url().starts_with("https://127.0.0.1:"),
        "{}",
        server.url()
    );
    let yaml = std::fs::read_to_string(server.kubeconfig_path()).unwrap();
    assert!(yaml.contains("certificate-authority-data: "), "{yaml}");
    assert!(yaml.contains("server: https://"), "{yaml}");
    assert!(!yaml.contains("insecure"), "{yaml}");

    let client = client_from_kubeconfig(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let rv = cms
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("over-tls"))
        .await
        .unwrap();
    let got = cms.get("over-tls").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");
    let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("watch event in time")
        .unwrap();
    match ev {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("over-tls")),
        other => panic!("expected ADDED, got {other:?}"),
    }

    // The helper client trusts the CA too.
    let cms2: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    assert!(cms2.get_opt("over-tls").await.unwrap().is_some());

    // Without the CA the server is not trusted: verification really happens.
    let mut untrusting = kube::Config::new(server.url().parse().unwrap());
    untrusting.accept_invalid_certs = false;
    let untrusting: Api<ConfigMap> =
        Api::namespaced(kube::Client::try_from(untrusting).unwrap(), "default");
    assert!(untrusting.get_opt("over-tls").await.is_err());

    // Plain HTTP to the TLS port gets nowhere.
    let plain = kube::Config::new(server.url().replace("https", "http").parse().unwrap());
    let plain: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(plain).unwrap(), "default");
    let res = tokio::time::timeout(Duration::from_secs(15), plain.get_opt("over-tls")).await;
    assert!(!matches!(res, Ok(Ok(_))));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_dir_keeps_the_ca_across_restarts() {
    let dir = std::env::temp_dir().join(format!("rudder-apiserver-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = Config {
        data_dir: Some(dir.clone()),
        ..tls_config()
    };
    let server = Server::start(cfg.clone()).await.unwrap();
    let ca = server.ca_pem().unwrap().to_string();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    cms.create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();
    let old_kubeconfig = std::fs::read_to_string(server.kubeconfig_path()).unwrap();
    server.stop().await;
    assert!(dir.join("ca.crt").exists() && dir.join("ca.key").exists());

    let server = Server::start(cfg).await.unwrap();
    assert_eq!(server.ca_pem(), Some(ca.as_str()));
    // The first run's kubeconfig, pointed at the new port, still verifies.
    let old = old_kubeconfig.replace(
        old_kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .unwrap(),
        &server.url(),
    );
    let kc = Kubeconfig::from_yaml(&old).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    assert!(cms.get_opt("kept").await.unwrap().is_some());
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_over_tls() {
    if !kubectl_available() {
        eprintln!("SKIPPED kubectl_over_tls: `kubectl` is not on PATH");
        return;
    }
    let server = Server::start(tls_config()).await.unwrap();
    let kubeconfig = server.kubeconfig_path().to_path_buf();
    let dir = kubeconfig.parent().unwrap().to_path_buf();
    // Same server, but a kubeconfig that does not name the CA.
    let no_ca: String = server
        .kubeconfig_yaml()
        .lines()
        .filter(|l| !l.contains("certificate-authority-data"))
        .map(|l| format!("{l}\n"))
        .collect();
    let no_ca_path = dir.join("kubeconfig-no-ca");
    std::fs::write(&no_ca_path, no_ca).unwrap();
    let handle = tokio::task::spawn_blocking(move || {
        let kubectl = |kc: &std::path::Path, args: &[&str]| {
            let out = Command::new("kubectl")
                .args(args)
                .env("KUBECONFIG", kc)
                .env("KUBECACHEDIR", dir.join("cache"))
                .output()
                .expect("kubectl runs");
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (ok, out, err) = kubectl(
            &kubeconfig,
            &["create", "configmap", "tls-cm", "--from-literal=a=b"],
        );
        assert!(ok, "kubectl create failed: {out}{err}");
        let (ok, out, err) = kubectl(
            &kubeconfig,
            &["get", "configmap", "tls-cm", "-o", "jsonpath={.data.a}"],
        );
        assert!(ok && out == "b", "kubectl get: {out}{err}");
        let (ok, out, err) = kubectl(&kubeconfig, &["get", "namespaces", "-o", "name"]);
        assert!(ok && out.contains("namespace/default"), "{out}{err}");
        let (ok, out, err) = kubectl(&no_ca_path, &["get", "namespaces"]);
        assert!(!ok, "kubectl without the CA must fail: {out}");
        assert!(
            err.contains("certificate signed by unknown authority") || err.contains("x509"),
            "{err}"
        );
    });
    handle.await.unwrap();
    server.stop().await;
}
