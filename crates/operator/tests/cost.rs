//! What a reconcile costs against the test cluster, counted on the wire: a first
//! install renders the chart once, and a no-op reconcile (unchanged spec, nothing
//! drifted) decodes one release record, renders nothing and writes no record (the lock
//! is two annotation patches of the newest one). With the whole operator running, an
//! idle periodic reconcile (dependent watches on, nothing drifted) writes nothing at
//! all and reads one label-selected list of the release's records, while a deleted
//! or edited object is still put back. The counts are printed (`--nocapture`) for the
//! record; the bounds are asserted.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::watch_run::WatchRun;
use common::{create_cr, get_cr, start, watch};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use operator::{reconcile, Context};
use serde_json::json;
use testkit::eventually;

/// What a client asked the API server, by kind of request.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Counts {
    /// GETs of one release record Secret: each is one record decoded.
    record_gets: usize,
    /// Label-selected lists of release record Secrets (labels only are read).
    record_lists: usize,
    /// Creates, updates and deletes of release record Secrets.
    record_writes: usize,
    /// Annotation patches of a release record: taking and giving back its lock.
    lock_writes: usize,
    /// Writes of Leases (the release lock takes none).
    lease_writes: usize,
    /// Every request.
    total: usize,
}

type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// `inner`, with every request's method and path (query included) noted in `seen`.
fn counting_client(inner: Client, seen: Seen) -> Client {
    let namespace = inner.default_namespace().to_string();
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let seen = seen.clone();
        async move {
            let uri = req.uri();
            let path = match uri.query() {
                Some(q) => format!("{}?{q}", uri.path()),
                None => uri.path().to_string(),
            };
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((req.method().to_string(), path));
            inner.send(req).await
        }
    });
    Client::new(svc, namespace)
}

fn counts(seen: &Seen) -> Counts {
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    let mut c = Counts::default();
    for (method, path) in seen.iter() {
        c.total += 1;
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let record = path.contains("/secrets/sh.helm.release.v1.");
        let secrets = path.ends_with("/secrets");
        match method.as_str() {
            "GET" if record => c.record_gets += 1,
            "GET" if secrets && query.contains("owner%3Dhelm") => c.record_lists += 1,
            "GET" => {}
            "PATCH" if record => c.lock_writes += 1,
            _ if record || secrets => c.record_writes += 1,
            _ => {}
        }
        if path.contains("/leases") && method != "GET" {
            c.lease_writes += 1;
        }
    }
    c
}

/// `action::renders()` counts for the whole process: the tests of this file take
/// turns so one test's renders never show in another's count.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_install_renders_once_and_a_no_op_reconcile_decodes_one_record() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (_ns, plain) = start();
    let seen: Seen = Arc::default();
    let client = counting_client(plain.clone(), seen.clone());
    let chart = chart::loader::load(common::chart_dir()).expect("chart");
    let ctx = Context::new(
        client,
        Arc::new(watch()),
        Arc::new(chart),
        common::resource(),
    )
    .expect("context");
    let ctx = Arc::new(ctx);
    create_cr(&plain, "app", json!({"greeting": "hi"})).await;

    let renders = action::renders();
    let cr = get_cr(&plain, "app").await;
    reconcile(Arc::new(cr.into()), ctx.clone())
        .await
        .expect("install");
    let install = counts(&seen);
    let install_renders = action::renders() - renders;

    seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let renders = action::renders();
    let cr = get_cr(&plain, "app").await;
    reconcile(Arc::new(cr.into()), ctx.clone())
        .await
        .expect("no-op");
    let noop = counts(&seen);
    let noop_renders = action::renders() - renders;

    eprintln!("first install: {install:?}, renders: {install_renders}");
    eprintln!("no-op reconcile: {noop:?}, renders: {noop_renders}");
    for (method, path) in seen.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        eprintln!("  {method} {path}");
    }
    assert_eq!(install_renders, 1, "a first install renders once");
    assert_eq!(noop_renders, 0, "a no-op reconcile renders nothing");
    assert!(
        noop.record_gets <= 1,
        "a no-op reconcile decodes at most one record: {noop:?}"
    );
    assert_eq!(noop.record_writes, 0, "and writes no record: {noop:?}");
    assert!(
        noop.lock_writes <= 2,
        "besides taking and giving back the lock: {noop:?}"
    );
    assert_eq!(
        install.lease_writes + noop.lease_writes,
        0,
        "no Lease: {noop:?}"
    );
}

/// How often the running operator reconciles each CR in the idle test.
const PERIOD: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(60);

async fn greeting(client: &Client, name: &str) -> Option<(String, String)> {
    let cm = Api::<ConfigMap>::default_namespaced(client.clone())
        .get_opt(name)
        .await
        .ok()??;
    let greeting = cm.data?.get("greeting")?.clone();
    Some((cm.metadata.uid?, greeting))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_periodic_reconcile_writes_nothing_and_drift_is_still_repaired() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (ns, plain) = start();
    let seen: Seen = Arc::default();
    let client = counting_client(plain.clone(), seen.clone());
    let op = WatchRun::start(&client, ns.dir(), &common::chart_dir(), PERIOD);
    create_cr(&plain, "app", json!({"greeting": "hi"})).await;
    let (uid, _) = eventually(WAIT, || {
        let plain = plain.clone();
        async move { greeting(&plain, "app-cfg").await }
    })
    .await;
    // The dependent watches list after the install, so one more periodic reconcile
    // applies in full; from then on a period has nothing to do.
    tokio::time::sleep(PERIOD * 4).await;

    seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let idle = Instant::now();
    tokio::time::sleep(PERIOD * 6).await;
    let requests = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let periods = idle.elapsed().as_secs_f64() / PERIOD.as_secs_f64();
    eprintln!(
        "idle for {periods:.1} periods: {} request(s)",
        requests.len()
    );
    for (method, path) in &requests {
        eprintln!("  {method} {path}");
    }
    let writes: Vec<_> = requests.iter().filter(|(m, _)| m != "GET").collect();
    assert!(
        writes.is_empty(),
        "an idle period writes nothing: {writes:?}"
    );
    // Watches (re)started by the runtime are not reconciles' reads.
    let reads: Vec<_> = requests
        .iter()
        .filter(|(_, p)| !p.contains("watch=true"))
        .collect();
    let not_record_lists: Vec<_> = reads
        .iter()
        .filter(|(_, p)| !(p.contains("/secrets?") && p.contains("owner%3Dhelm")))
        .collect();
    assert!(
        not_record_lists.is_empty(),
        "an idle reconcile reads only the release's record labels: {not_record_lists:?}"
    );
    assert!(
        (reads.len() as f64) <= periods.ceil() + 1.0,
        "at most one list per period: {} in {periods:.1} periods",
        reads.len()
    );

    // A deleted object comes back, from the dependent watch's report.
    Api::<ConfigMap>::default_namespaced(plain.clone())
        .delete("app-cfg", &DeleteParams::default())
        .await
        .expect("delete the ConfigMap");
    eventually(WAIT, || {
        let plain = plain.clone();
        let uid = uid.clone();
        async move {
            let (now, greeting) = greeting(&plain, "app-cfg").await?;
            (now != uid && greeting == "hi").then_some(())
        }
    })
    .await;
    // An edited one is put back as deployed.
    Api::<ConfigMap>::default_namespaced(plain.clone())
        .patch(
            "app-cfg",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"greeting": "tampered"}})),
        )
        .await
        .expect("edit the ConfigMap");
    eventually(WAIT, || {
        let plain = plain.clone();
        async move {
            let (_, greeting) = greeting(&plain, "app-cfg").await?;
            (greeting == "hi").then_some(())
        }
    })
    .await;
    op.stop(Duration::from_secs(30)).await;
}
