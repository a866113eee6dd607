//! What reconciling costs the API server, counted on the wire by verb and resource,
//! as kube-apiserver's `apiserver_request_total` counts them (issue 37). With the
//! release records read from the operator's record cache (one metadata-only watch of
//! the records per namespace):
//! - a first install renders once, makes at most 12 requests and no LIST;
//! - an upgrade makes at most 10 and no LIST, and fetches no record: the one it
//!   locked is the server's answer to the lock;
//! - a re-apply of an unchanged release (repair) decodes one record and writes none;
//! - with the whole operator running, an idle period makes no request at all, while a
//!   deleted or edited object is still put back at once, and so is a deleted release
//!   Secret (re-adopted, same UIDs).
//!
//! Discovery (once per watch and refresh period) and the watches' own requests
//! (once per namespace) are shown apart: they are not per CR. The counts are printed
//! (`--nocapture`) for the record; the bounds are asserted.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::watch_run::WatchRun;
use common::{counting_client, create_cr, crs, get_cr, start, watch, Seen};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::Client;
use operator::{reconcile, Context};
use release::cache::{RecordCache, RecordCaches};
use serde_json::json;
use testkit::eventually;

/// kube-apiserver's verb and resource (`secrets`, `demos/status`) of a request, or
/// `discovery`; release records are `secrets (records)`.
fn classify(method: &str, path: &str) -> (String, String) {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    // /api/v1/... or /apis/<group>/<version>/...
    let rest: &[&str] = match parts.as_slice() {
        ["api", _, rest @ ..] => rest,
        ["apis", _, _, rest @ ..] => rest,
        _ => &[],
    };
    let rest = match rest {
        ["namespaces", _, rest @ ..] if !rest.is_empty() => rest,
        other => other,
    };
    let (resource, named) = match rest {
        [] => return ("GET".into(), "discovery".into()),
        [r] => (r.to_string(), false),
        [r, _] => (r.to_string(), true),
        [r, _, sub, ..] => (format!("{r}/{sub}"), true),
    };
    // The chart has a Secret of its own: release records are told apart.
    let resource = if resource == "secrets"
        && (path.contains("/secrets/sh.helm.release.v1.") || query.contains("owner"))
    {
        "secrets (records)".to_string()
    } else {
        resource
    };
    let verb = match method {
        "GET" if query.contains("watch=true") => "WATCH",
        "GET" if named => "GET",
        "GET" => "LIST",
        "POST" => "CREATE",
        "PUT" => "UPDATE",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        other => other,
    };
    (verb.to_string(), resource)
}

/// Requests by (verb, resource).
#[derive(Debug, Default, Clone)]
struct Tally(BTreeMap<(String, String), usize>);

impl Tally {
    fn of(seen: &Seen) -> Tally {
        let mut t = Tally::default();
        for (method, path) in seen.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            *t.0.entry(classify(method, path)).or_default() += 1;
        }
        t
    }

    fn count(&self, f: impl Fn(&str, &str) -> bool) -> usize {
        self.0
            .iter()
            .filter(|((v, r), _)| f(v, r))
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests made for this CR: not discovery, not the watches.
    fn per_cr(&self) -> usize {
        self.count(|v, r| r != "discovery" && v != "WATCH")
    }

    fn lists(&self) -> usize {
        self.count(|v, _| v == "LIST")
    }

    fn show(&self, what: &str) {
        eprintln!(
            "{what}: {} requests besides discovery and watch streams",
            self.per_cr()
        );
        for ((verb, resource), n) in &self.0 {
            eprintln!("  {n:>3}  {verb} {resource}");
        }
    }
}

fn take(seen: &Seen) -> Tally {
    let t = Tally::of(seen);
    seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
    t
}

/// Record caches of the test's namespace, filled by watches through `client`.
fn record_caches(client: &Client, namespace: &str) -> RecordCaches {
    let caches = RecordCaches {
        secrets: Some(Arc::new(RecordCache::new("Secret"))),
        configmaps: Some(Arc::new(RecordCache::new("ConfigMap"))),
    };
    let ns = Some(namespace.to_string());
    if let Some(c) = &caches.secrets {
        tokio::spawn(release::cache::watch::<Secret>(
            c.clone(),
            client.clone(),
            ns.clone(),
        ));
    }
    if let Some(c) = &caches.configmaps {
        tokio::spawn(release::cache::watch::<ConfigMap>(
            c.clone(),
            client.clone(),
            ns,
        ));
    }
    caches
}

/// `action::renders()` counts for the whole process: the tests of this file take
/// turns so one test's renders never show in another's count.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_and_upgrade_make_no_list_and_few_requests() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (ns, plain) = start();
    let seen: Seen = Arc::default();
    let client = counting_client(plain.clone(), seen.clone());
    let chart = chart::loader::load(common::chart_dir()).expect("chart");
    let caches = record_caches(&client, ns.name());
    let ctx = Context::new(
        client,
        Arc::new(watch()),
        Arc::new(chart),
        common::resource(),
    )
    .expect("context")
    .with_record_caches(caches);
    let ctx = Arc::new(ctx);
    create_cr(&plain, "app", json!({"greeting": "hi"})).await;
    // The watches list once for the namespace (not per CR).
    tokio::time::sleep(Duration::from_millis(500)).await;
    take(&seen).show("record watches of the namespace");

    let renders = action::renders();
    let cr = get_cr(&plain, "app").await;
    reconcile(Arc::new(cr.into()), ctx.clone())
        .await
        .expect("install");
    let install = take(&seen);
    let install_renders = action::renders() - renders;
    install.show("first install");

    let renders = action::renders();
    let cr = get_cr(&plain, "app").await;
    reconcile(Arc::new(cr.into()), ctx.clone())
        .await
        .expect("repair");
    let repair = take(&seen);
    let repair_renders = action::renders() - renders;
    repair.show("re-apply of the unchanged release (no dependent watches here)");

    crs(&plain)
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"greeting": "hello"}})),
        )
        .await
        .expect("change the spec");
    let cr = get_cr(&plain, "app").await;
    take(&seen);
    reconcile(Arc::new(cr.into()), ctx.clone())
        .await
        .expect("upgrade");
    let upgrade = take(&seen);
    upgrade.show("upgrade");

    assert_eq!(install_renders, 1, "a first install renders once");
    assert_eq!(install.lists(), 0, "an install lists nothing: {install:?}");
    assert!(
        install.per_cr() <= 12,
        "an install makes at most 12 requests: {install:?}"
    );
    assert_eq!(upgrade.lists(), 0, "an upgrade lists nothing: {upgrade:?}");
    assert!(
        upgrade.per_cr() <= 10,
        "an upgrade makes at most 10 requests: {upgrade:?}"
    );
    assert_eq!(
        upgrade.count(|v, r| v == "GET" && r == "secrets (records)"),
        0,
        "the record the upgrade locked is read from the lock's answer, not fetched: {upgrade:?}"
    );
    assert_eq!(repair_renders, 0, "a repair renders nothing");
    assert_eq!(repair.lists(), 0, "{repair:?}");
    assert!(
        repair.count(|v, r| v == "GET" && r == "secrets (records)") <= 1,
        "a repair decodes at most one record: {repair:?}"
    );
    assert_eq!(
        repair
            .count(|v, r| r == "secrets (records)" && matches!(v, "CREATE" | "UPDATE" | "DELETE")),
        0,
        "and writes no record: {repair:?}"
    );
    assert_eq!(
        install.count(|v, r| r == "leases" && v != "GET"),
        0,
        "the release lock takes no Lease: {install:?}"
    );
    let records = Api::<Secret>::namespaced(plain.clone(), ns.name())
        .list(&ListParams::default().labels("owner=helm,name=app"))
        .await
        .expect("records");
    let mut statuses: Vec<(String, String)> = records
        .items
        .iter()
        .map(|s| {
            let l = s.metadata.labels.clone().unwrap_or_default();
            (l["version"].clone(), l["status"].clone())
        })
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        [
            ("1".into(), "superseded".into()),
            ("2".into(), "deployed".into())
        ]
    );
    assert!(
        records.items.iter().all(|s| !s
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .contains_key("rudder.dev/lock")),
        "every lock was given back"
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
async fn an_idle_period_costs_nothing_and_drift_and_lost_records_are_repaired_at_once() {
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
    // Watches (re)started by the runtime are not reconciles' requests.
    let made: Vec<_> = requests
        .iter()
        .filter(|(_, p)| !p.contains("watch=true"))
        .collect();
    assert!(made.is_empty(), "an idle period makes no request: {made:?}");

    // A deleted object comes back, from the dependent watch's report.
    Api::<ConfigMap>::default_namespaced(plain.clone())
        .delete("app-cfg", &DeleteParams::default())
        .await
        .expect("delete the ConfigMap");
    let (uid, _) = eventually(WAIT, || {
        let plain = plain.clone();
        let uid = uid.clone();
        async move {
            let (now, greeting) = greeting(&plain, "app-cfg").await?;
            (now != uid && greeting == "hi").then_some((now, greeting))
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

    // A deleted release Secret is noticed by the record watch, not at a later period:
    // with an hour's period, the release is adopted again over the same objects.
    op.stop(Duration::from_secs(30)).await;
    let op = WatchRun::start(
        &client,
        ns.dir(),
        &common::chart_dir(),
        Duration::from_secs(3600),
    );
    tokio::time::sleep(PERIOD * 3).await;
    let secrets = Api::<Secret>::namespaced(plain.clone(), ns.name());
    secrets
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("owner=helm,name=app"),
        )
        .await
        .expect("delete the release records");
    let deleted = Instant::now();
    eventually(WAIT, || {
        let secrets = secrets.clone();
        async move {
            let list = secrets
                .list(&ListParams::default().labels("owner=helm,name=app,status=deployed"))
                .await
                .ok()?;
            (!list.items.is_empty()).then_some(())
        }
    })
    .await;
    eprintln!(
        "a deleted release record was re-adopted after {:.1} s",
        deleted.elapsed().as_secs_f64()
    );
    assert!(
        deleted.elapsed() < Duration::from_secs(20),
        "re-adopted in seconds, not at the next period"
    );
    let (now, greeting) = greeting(&plain, "app-cfg").await.expect("still there");
    assert_eq!(
        (now, greeting.as_str()),
        (uid, "hi"),
        "the ConfigMap was not recreated"
    );
    op.stop(Duration::from_secs(30)).await;
}
