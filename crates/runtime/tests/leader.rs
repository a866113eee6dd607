//! Leader election against the test cluster: one leader at a time, quick
//! hand-over on release, take-over after a dead leader's Lease expires, and loss
//! reported when someone else takes the Lease.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use kube::Client;
use runtime::leader::{LeaderElection, LeaderError};
use testkit::apiserver::faults::{Match, Rule, Trigger, When};
use testkit::{Cluster, TestNamespace};
const LEASE: &str = "rudder-test-lock";
/// Generous bound on waits that must end; the elections themselves run in ~seconds.
const PATIENCE: Duration = Duration::from_secs(60);

/// A namespace of the test's own, and a client defaulting to it.
fn start() -> (TestNamespace, Client) {
    let ns = Cluster::builder()
        .simulate_readiness(false)
        .start()
        .namespace("leader");
    let client = ns.client();
    (ns, client)
}

fn elector(client: &Client, identity: &str) -> LeaderElection {
    LeaderElection::new(client.clone(), client.default_namespace(), LEASE, identity)
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(200))
}

/// Polls `cond` until it holds; panics after `PATIENCE`.
async fn wait_until(cond: impl Fn() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("condition reached in time");
}

async fn holder(client: &Client) -> Option<String> {
    let api: Api<Lease> = Api::default_namespaced(client.clone());
    api.get(LEASE)
        .await
        .expect("lease exists")
        .spec
        .and_then(|s| s.holder_identity)
}

async fn transitions(client: &Client) -> i32 {
    let api: Api<Lease> = Api::default_namespaced(client.clone());
    api.get(LEASE)
        .await
        .expect("lease exists")
        .spec
        .and_then(|s| s.lease_transitions)
        .unwrap_or_default()
}

#[tokio::test]
async fn one_leader_then_hand_over_on_release() {
    let (_ns, client) = start();
    let a = elector(&client, "replica-a");
    let b = elector(&client, "replica-b");

    let first = tokio::time::timeout(PATIENCE, a.acquire())
        .await
        .expect("a becomes leader")
        .expect("no error");
    assert_eq!(first.identity(), "replica-a");
    assert_eq!(holder(&client).await.as_deref(), Some("replica-a"));

    // While a renews, b must not become leader, even well past a lease duration.
    let mut b_acquire = Box::pin(b.acquire());
    let waited = tokio::time::timeout(Duration::from_secs(5), &mut b_acquire).await;
    assert!(
        waited.is_err(),
        "b became leader while a still held the lease"
    );
    assert!(!first.is_lost(), "a lost the lease while renewing it");
    assert_eq!(holder(&client).await.as_deref(), Some("replica-a"));

    // a releases: b takes over without waiting for expiry.
    first.release().await.expect("release");
    let second = tokio::time::timeout(PATIENCE, b_acquire)
        .await
        .expect("b becomes leader after release")
        .expect("no error");
    assert_eq!(second.identity(), "replica-b");
    assert_eq!(holder(&client).await.as_deref(), Some("replica-b"));
    assert_eq!(transitions(&client).await, 1);
    assert!(!second.is_lost());
    second.release().await.expect("release");
    assert_eq!(holder(&client).await, None);
}

#[tokio::test]
async fn standby_takes_over_after_a_dead_leader_expires() {
    let (_ns, client) = start();
    let a = elector(&client, "replica-a");
    let b = elector(&client, "replica-b");

    let guard = tokio::time::timeout(PATIENCE, a.acquire())
        .await
        .expect("a becomes leader")
        .expect("no error");
    let b_task = tokio::spawn(async move { b.acquire().await });
    // The process "dies": renewing stops, the Lease is not released.
    drop(guard);
    assert_eq!(holder(&client).await.as_deref(), Some("replica-a"));

    let second = tokio::time::timeout(PATIENCE, b_task)
        .await
        .expect("b becomes leader after the lease expired")
        .expect("task")
        .expect("no error");
    assert_eq!(second.identity(), "replica-b");
    assert_eq!(holder(&client).await.as_deref(), Some("replica-b"));
    assert_eq!(transitions(&client).await, 1);
}

#[tokio::test]
async fn leader_notices_when_another_holder_takes_the_lease() {
    let (_ns, client) = start();
    let a = elector(&client, "replica-a");
    let guard = tokio::time::timeout(PATIENCE, a.acquire())
        .await
        .expect("a becomes leader")
        .expect("no error");

    // Someone (a misconfigured replica, an admin) overwrites the holder.
    let api: Api<Lease> = Api::default_namespaced(client.clone());
    let mut lease = api.get(LEASE).await.expect("lease");
    loop {
        let spec = lease.spec.as_mut().expect("spec");
        spec.holder_identity = Some("intruder".into());
        spec.lease_duration_seconds = Some(3600);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        match api.replace(LEASE, &PostParams::default(), &lease).await {
            Ok(_) => break,
            // a renewed in between: read again and retry.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                lease = api.get(LEASE).await.expect("lease");
            }
            Err(e) => panic!("overwrite lease: {e}"),
        }
    }

    tokio::time::timeout(PATIENCE, guard.lost())
        .await
        .expect("a notices it lost the lease");
    assert!(guard.is_lost());
    // Releasing a lease someone else holds leaves it alone.
    guard.release().await.expect("release");
    assert_eq!(holder(&client).await.as_deref(), Some("intruder"));
}

#[tokio::test]
async fn leader_survives_one_failed_renewal_but_not_a_dead_api() {
    let (ns, client) = start();
    let Some(server) = ns.cluster().embedded() else {
        testkit::skip!("failed renewals are injected by the embedded API server");
    };
    let a = elector(&client, "replica-a");
    let guard = tokio::time::timeout(PATIENCE, a.acquire())
        .await
        .expect("a becomes leader")
        .expect("no error");
    let leases = || Match::writes().resource("leases");

    // One failed renewal is retried within the renew deadline.
    let once = server.faults().add(Rule::nth(leases(), 1, 500));
    wait_until(|| server.faults().stats(once).injected > 0).await;
    // Several more renewals go through after the failure.
    let counter = server.faults().add(Rule::count(leases()));
    wait_until(|| server.faults().stats(counter).matched >= 5).await;
    assert!(
        !guard.is_lost(),
        "one failed renewal must not cost leadership"
    );
    assert_eq!(holder(&client).await.as_deref(), Some("replica-a"));

    // Every renewal fails: leadership is lost once the renew deadline passes.
    server.faults().add(Rule {
        matcher: leases(),
        trigger: Trigger::Always,
        code: 503,
        when: When::Before,
    });
    tokio::time::timeout(PATIENCE, guard.lost())
        .await
        .expect("renewals fail past the deadline: leadership is lost");
    assert!(guard.is_lost());
}

#[tokio::test]
async fn inconsistent_durations_are_refused() {
    let (_ns, client) = start();
    let bad = LeaderElection::new(client.clone(), client.default_namespace(), LEASE, "x")
        .lease_duration(Duration::from_secs(5))
        .renew_deadline(Duration::from_secs(10));
    let e = bad
        .acquire()
        .await
        .expect_err("renew deadline beyond lease");
    assert!(matches!(e, LeaderError::Config(_)), "{e}");
    assert!(e.to_string().contains("renew deadline"), "{e}");
}

#[test]
fn in_cluster_namespace_is_none_outside_a_pod() {
    let file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
    if std::path::Path::new(file).exists() {
        println!("skipping: running inside a pod ({file} exists)");
        return;
    }
    assert_eq!(runtime::leader::in_cluster_namespace(), None);
}
