//! The operator runtime end to end against the test cluster: CRs become
//! releases, spec edits upgrade them, deleted release objects come back through the
//! dependent watches (the reconcile period is an hour, so only a watch can do it),
//! deleted CRs are uninstalled, label selectors are honoured, a missing CRD is waited
//! for, the metrics endpoint counts reconciles, and shutdown returns cleanly.
//!
//! Each test has a namespace, and its kinds a group (`<namespace>.test.rudder.dev`), of
//! its own, so a CRD that appears late really is new and nothing else reconciles its CRs.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::channel::oneshot;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Client, ResourceExt};
use operator::Options;
use serde_json::{json, Value};
use testkit::{Cluster, TestNamespace};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

/// Generous: the embedded server and a debug build on a shared machine.
const WAIT: Duration = Duration::from_secs(90);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/controller")
}

fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A namespace of the test's own (simulated readiness), and a client defaulting to it.
fn start() -> (TestNamespace, Client) {
    init_logs();
    let ns = Cluster::start().namespace("controller");
    let client = ns.client();
    (ns, client)
}

/// The group of the test's kinds: its namespace's name under `test.rudder.dev`.
fn group(client: &Client) -> String {
    format!("{}.test.rudder.dev", client.default_namespace())
}

/// Installs the fixture CRDs whose kind is in `kinds`, in the test's group; they are
/// deleted with the namespace.
async fn install_crds(ns: &TestNamespace, kinds: &[&str]) {
    let client = ns.client();
    let text = std::fs::read_to_string(fixtures().join("crds.yaml")).expect("crds.yaml");
    let text = text.replace("test.rudder.dev", &group(&client));
    for doc in text.split("\n---\n") {
        let value = gocodec::yaml::parse_yaml_to_json(doc).expect("CRD fixture is YAML");
        let crd: CustomResourceDefinition =
            serde_json::from_value(value.clone()).expect("CRD fixture is a CRD");
        if kinds.contains(&crd.spec.names.kind.as_str()) {
            let name = crd.metadata.name.clone().unwrap_or_default();
            ns.delete_on_teardown(testkit::crd::crd_resource(), &name);
            testkit::crd::install_crd(&client, &value).await;
        }
    }
}

/// The fixture watches.yaml for the test's group, beside the fixture chart.
fn watches_file(ns: &TestNamespace) -> PathBuf {
    let text = std::fs::read_to_string(fixtures().join("watches.yaml")).expect("watches.yaml");
    let text = text
        .replace("test.rudder.dev", &format!("{}.test.rudder.dev", ns.name()))
        .replace(
            "chart: chart",
            &format!("chart: {}", fixtures().join("chart").display()),
        );
    let path = ns.dir().join("watches.yaml");
    std::fs::write(&path, text).expect("write watches.yaml");
    path
}

struct Operator {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<operator::Result<()>>,
    metrics_port: u16,
}

impl Operator {
    fn start(ns: &TestNamespace, client: &Client) -> Operator {
        let metrics_port = testkit::free_port();
        let options = Options {
            watches_file: watches_file(ns),
            watch_namespaces: vec![ns.name().into()],
            reconcile_period: Duration::from_secs(3600),
            max_concurrent_reconciles: 2,
            metrics_bind_address: format!("127.0.0.1:{metrics_port}"),
            health_probe_bind_address: "0".into(),
            shutdown_timeout: Duration::from_secs(30),
            ..Options::default()
        };
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(operator::run_with_shutdown(
            client.clone(),
            options,
            async move {
                let _ = rx.await;
            },
        ));
        Operator {
            stop: Some(tx),
            task,
            metrics_port,
        }
    }

    /// Asks for a graceful shutdown and returns what `run_with_shutdown` returned.
    async fn stop(mut self) -> operator::Result<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(WAIT, &mut self.task)
            .await
            .expect("the operator stops within the bounded wait")
            .expect("the operator task does not panic")
    }

    async fn metrics(&self) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.metrics_port))
            .await
            .expect("connect to the metrics server");
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await
            .expect("send request");
        let mut out = String::new();
        stream
            .read_to_string(&mut out)
            .await
            .expect("read response");
        out
    }
}

fn resource(client: &Client, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(&group(client), "v1", kind))
}

fn crs(client: &Client, kind: &str) -> Api<DynamicObject> {
    Api::default_namespaced_with(client.clone(), &resource(client, kind))
}

async fn create_cr(client: &Client, kind: &str, name: &str, labels: Value, spec: Value) {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/v1", group(client)),
        "kind": kind,
        "metadata": {"name": name, "namespace": client.default_namespace(), "labels": labels},
        "spec": spec,
    }))
    .expect("CR");
    crs(client, kind)
        .create(&PostParams::default(), &obj)
        .await
        .expect("create CR");
}

/// Polls `check` until it gives `Some`, failing the test after `WAIT`.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn condition<'a>(cr: &'a DynamicObject, kind: &str) -> Option<&'a Value> {
    cr.data
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// Waits until the CR reports `Deployed=True`; returns it.
async fn deployed(client: &Client, kind: &str, name: &str) -> DynamicObject {
    let api = crs(client, kind);
    eventually(&format!("{kind} {name} to be deployed"), || {
        let api = api.clone();
        async move {
            let cr = api.get_opt(name).await.ok()??;
            let ok = condition(&cr, "Deployed")?.get("status")?.as_str()? == "True";
            ok.then_some(cr)
        }
    })
    .await
}

async fn release_record(client: &Client, release: &str, version: i64) -> Option<Secret> {
    Api::<Secret>::default_namespaced(client.clone())
        .get_opt(&format!("sh.helm.release.v1.{release}.v{version}"))
        .await
        .expect("read release record")
}

async fn configmap(client: &Client, name: &str) -> Option<ConfigMap> {
    Api::<ConfigMap>::default_namespaced(client.clone())
        .get_opt(name)
        .await
        .expect("read configmap")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cr_lifecycle_install_upgrade_repair_uninstall() {
    let (ns, client) = start();
    install_crds(&ns, &["Widget", "Gadget"]).await;
    let op = Operator::start(&ns, &client);

    // Create: installed, status Deployed.
    create_cr(
        &client,
        "Widget",
        "w1",
        json!({}),
        json!({"greeting": "hi"}),
    )
    .await;
    let cr = deployed(&client, "Widget", "w1").await;
    assert!(
        cr.finalizers()
            .iter()
            .any(|f| f == "helm.sdk.operatorframework.io/uninstall-release"),
        "the uninstall finalizer is set: {:?}",
        cr.finalizers()
    );
    let record = release_record(&client, "w1", 1).await.expect("revision 1");
    assert_eq!(
        record
            .metadata
            .labels
            .unwrap_or_default()
            .get("status")
            .map(String::as_str),
        Some("deployed")
    );
    let cm = configmap(&client, "w1-cfg")
        .await
        .expect("the release's ConfigMap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hi")
    );

    // Edit the spec: upgraded to revision 2 with the new values.
    crs(&client, "Widget")
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"greeting": "hello again"}})),
        )
        .await
        .expect("patch CR");
    eventually("revision 2 deployed with the new values", || {
        let client = client.clone();
        async move {
            let r2 = release_record(&client, "w1", 2).await?;
            let status = r2.metadata.labels?.get("status").cloned()?;
            let cm = configmap(&client, "w1-cfg").await?;
            let greeting = cm.data?.get("greeting").cloned()?;
            (status == "deployed" && greeting == "hello again").then_some(())
        }
    })
    .await;

    // Delete a release object: the dependent watch brings it back (the reconcile
    // period is an hour, so nothing else would).
    let old_uid = configmap(&client, "w1-cfg")
        .await
        .and_then(|c| c.metadata.uid)
        .expect("uid");
    // Give the dependent watch a moment to start after the reconcile that needs it:
    // a deletion before the watch lists would be invisible to it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    Api::<ConfigMap>::default_namespaced(client.clone())
        .delete("w1-cfg", &DeleteParams::default())
        .await
        .expect("delete the ConfigMap");
    let restored = eventually("the deleted ConfigMap to come back", || {
        let client = client.clone();
        let old_uid = old_uid.clone();
        async move {
            let cm = configmap(&client, "w1-cfg").await?;
            (cm.metadata.uid.as_deref() != Some(old_uid.as_str())).then_some(cm)
        }
    })
    .await;
    assert_eq!(
        restored
            .data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello again"),
        "repaired with the deployed values"
    );
    assert!(
        release_record(&client, "w1", 3).await.is_none(),
        "a repair writes no new revision"
    );

    // The metrics endpoint counts the reconciles.
    let metrics = op.metrics().await;
    assert!(metrics.starts_with("HTTP/1."), "{metrics}");
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("controller_runtime_reconcile_total")
                && l.contains("controller=\"widget-controller\"")
                && l.contains("result=\"requeue_after\"")
        })
        .unwrap_or_else(|| panic!("no reconcile total for widget-controller in:\n{metrics}"));
    let count: f64 = line
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .expect("a number");
    assert!(
        count >= 3.0,
        "install, upgrade and repair were counted: {line}"
    );

    // Delete the CR: the release is uninstalled, then the CR goes away.
    crs(&client, "Widget")
        .delete("w1", &DeleteParams::default())
        .await
        .expect("delete CR");
    eventually("the CR and its release to be gone", || {
        let client = client.clone();
        async move {
            let cr_gone = crs(&client, "Widget").get_opt("w1").await.ok()?.is_none();
            let records_gone = release_record(&client, "w1", 1).await.is_none()
                && release_record(&client, "w1", 2).await.is_none();
            let objects_gone = configmap(&client, "w1-cfg").await.is_none();
            (cr_gone && records_gone && objects_gone).then_some(())
        }
    })
    .await;

    op.stop().await.expect("a graceful shutdown returns Ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_and_late_crd() {
    let (ns, client) = start();
    // Only Widget's CRD exists when the operator starts: Gadget's controller waits.
    install_crds(&ns, &["Widget"]).await;
    let op = Operator::start(&ns, &client);
    create_cr(&client, "Widget", "first", json!({}), json!({})).await;
    deployed(&client, "Widget", "first").await;

    install_crds(&ns, &["Gadget"]).await;
    // Not selected (no label), then selected: the second is deployed once the late CRD
    // was found; the first must have been left alone.
    create_cr(&client, "Gadget", "ignored", json!({}), json!({})).await;
    create_cr(
        &client,
        "Gadget",
        "selected",
        json!({"rudder.test/enabled": "true"}),
        json!({}),
    )
    .await;
    deployed(&client, "Gadget", "selected").await;
    let ignored = crs(&client, "Gadget").get("ignored").await.expect("get");
    assert!(
        ignored.data.get("status").is_none(),
        "an unselected CR gets no status: {:?}",
        ignored.data
    );
    assert!(ignored.finalizers().is_empty(), "and no finalizer");
    assert!(
        release_record(&client, "ignored", 1).await.is_none(),
        "and no release"
    );

    // Labelling it selects it.
    crs(&client, "Gadget")
        .patch(
            "ignored",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"rudder.test/enabled": "true"}}})),
        )
        .await
        .expect("label CR");
    deployed(&client, "Gadget", "ignored").await;

    op.stop().await.expect("a graceful shutdown returns Ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_errors_name_the_problem() {
    let (ns, client) = start();
    let watches = ns.dir().join("missing-chart-watches.yaml");
    std::fs::write(
        &watches,
        "- group: test.rudder.dev\n  version: v1\n  kind: Widget\n  chart: ./no-such-chart\n",
    )
    .expect("write watches.yaml");
    let options = Options {
        watches_file: watches.clone(),
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        ..Options::default()
    };
    let err = operator::run_with_shutdown(client.clone(), options, async {})
        .await
        .expect_err("a missing chart stops the operator");
    assert!(
        release::api_error::chain(&err).contains("no-such-chart"),
        "{err}"
    );

    let options = Options {
        watches_file: watches_file(&ns),
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        leader_elect: true,
        leader_election_id: None,
        ..Options::default()
    };
    if std::env::var("OPERATOR_NAME").is_err() {
        let err = operator::run_with_shutdown(client, options, async {})
            .await
            .expect_err("--leader-elect without a lease name is refused");
        assert!(
            release::api_error::chain(&err).contains("--leader-election-id"),
            "{err}"
        );
    }
}

async fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await.ok()?;
    Some(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_election_gates_reconciles_and_releases_the_lease() {
    use k8s_openapi::api::coordination::v1::Lease;

    let (ns, client) = start();
    // Ready means every watch's controller runs, so both CRDs must exist.
    install_crds(&ns, &["Widget", "Gadget"]).await;
    let health_port = testkit::free_port();
    let options = |health: String| Options {
        watches_file: watches_file(&ns),
        watch_namespaces: vec![ns.name().into()],
        reconcile_period: Duration::from_secs(3600),
        metrics_bind_address: "0".into(),
        health_probe_bind_address: health,
        leader_elect: true,
        leader_election_id: Some("rudder-test-lock".into()),
        leader_election_namespace: Some(ns.name().into()),
        ..Options::default()
    };
    let (stop_a, stop_rx) = oneshot::channel::<()>();
    let leader = tokio::spawn(operator::run_with_shutdown(
        client.clone(),
        options(format!("127.0.0.1:{health_port}")),
        async move {
            let _ = stop_rx.await;
        },
    ));
    create_cr(&client, "Widget", "led", json!({}), json!({})).await;
    deployed(&client, "Widget", "led").await;
    eventually("/readyz to report ready", || async move {
        let r = http_get(health_port, "/readyz").await?;
        let status = r.lines().next()?.to_string();
        status.contains(" 200 ").then_some(())
    })
    .await;
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let holder = leases
        .get("rudder-test-lock")
        .await
        .expect("the lease exists")
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(!holder.is_empty(), "the leader holds the lease");

    // A second replica stands by, ready (so rolling updates of the operator proceed);
    // asked to stop, it returns Ok without ever leading.
    let standby_port = testkit::free_port();
    let (stop_b, stop_rx) = oneshot::channel::<()>();
    let standby = tokio::spawn(operator::run_with_shutdown(
        client.clone(),
        options(format!("127.0.0.1:{standby_port}")),
        async move {
            let _ = stop_rx.await;
        },
    ));
    eventually("the standby's /readyz to report ready", || async move {
        let r = http_get(standby_port, "/readyz").await?;
        let status = r.lines().next()?.to_string();
        status.contains(" 200 ").then_some(())
    })
    .await;
    let _ = stop_b.send(());
    tokio::time::timeout(WAIT, standby)
        .await
        .expect("the standby stops")
        .expect("no panic")
        .expect("a standby's shutdown is Ok");
    let still = leases
        .get("rudder-test-lock")
        .await
        .expect("lease")
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert_eq!(still, holder, "the standby never took the lease");

    // The leader's graceful shutdown hands the lease back.
    let _ = stop_a.send(());
    tokio::time::timeout(WAIT, leader)
        .await
        .expect("the leader stops")
        .expect("no panic")
        .expect("a graceful shutdown returns Ok");
    let after = leases
        .get("rudder-test-lock")
        .await
        .expect("lease")
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(
        after.is_empty(),
        "the lease was released, holder is {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_namespaces_limit_the_operator() {
    let (ns, client) = start();
    install_crds(&ns, &["Widget", "Gadget"]).await;
    let team_b_ns = ns.cluster().namespace("team-b");
    let outside_ns = ns.cluster().namespace("outside");
    let (team_b, outside) = (team_b_ns.name(), outside_ns.name());
    let (stop, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(operator::run_with_shutdown(
        client.clone(),
        Options {
            watches_file: watches_file(&ns),
            reconcile_period: Duration::from_secs(3600),
            metrics_bind_address: "0".into(),
            health_probe_bind_address: "0".into(),
            watch_namespaces: vec![ns.name().into(), team_b.into()],
            ..Options::default()
        },
        async move {
            let _ = stop_rx.await;
        },
    ));
    let widgets = |ns: &str| -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), ns, &resource(&client, "Widget"))
    };
    for ns in [outside, team_b] {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{}/v1", group(&client)),
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": ns},
            "spec": {"greeting": ns},
        }))
        .expect("CR");
        widgets(ns)
            .create(&PostParams::default(), &obj)
            .await
            .expect("create CR");
    }
    let cms = Api::<ConfigMap>::namespaced(client.clone(), team_b);
    let old_uid = eventually("the team-b release", || {
        let cms = cms.clone();
        async move { cms.get_opt("w-cfg").await.ok()??.metadata.uid }
    })
    .await;
    let outside = widgets(outside).get("w").await.expect("get");
    assert!(
        outside.data.get("status").is_none() && outside.finalizers().is_empty(),
        "a CR outside WATCH_NAMESPACE is left alone: {:?}",
        outside.data
    );

    // Drift in a watched namespace is routed to that namespace's controller.
    tokio::time::sleep(Duration::from_secs(2)).await;
    cms.delete("w-cfg", &DeleteParams::default())
        .await
        .expect("delete ConfigMap");
    eventually("the team-b ConfigMap to come back", || {
        let cms = cms.clone();
        let old_uid = old_uid.clone();
        async move {
            let uid = cms.get_opt("w-cfg").await.ok()??.metadata.uid?;
            (uid != old_uid).then_some(())
        }
    })
    .await;

    let _ = stop.send(());
    tokio::time::timeout(WAIT, task)
        .await
        .expect("stops")
        .expect("no panic")
        .expect("a graceful shutdown returns Ok");
}
