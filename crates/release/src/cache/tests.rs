//! The record cache without a cluster: events fed by hand.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::driver::selector;

fn meta(name: &str, version: &str, status: &str) -> ObjectMeta {
    let release = parse_key(name)
        .map(|(r, _)| r.to_string())
        .unwrap_or_default();
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        resource_version: Some(version.into()),
        labels: Some(
            [
                ("owner", "helm"),
                ("name", release.as_str()),
                ("status", status),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ),
        annotations: Some(
            [
                ("rudder.dev/lock".to_string(), "{}".to_string()),
                ("unrelated".to_string(), "x".repeat(100)),
            ]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}

const V1: &str = "sh.helm.release.v1.web.v1";
const V2: &str = "sh.helm.release.v1.web.v2";

fn cache() -> (Arc<RecordCache>, usize, Arc<Mutex<Vec<RecordChange>>>) {
    let cache = Arc::new(RecordCache::new("Secret").with_wait(Duration::from_millis(200)));
    let scope = cache.add_scope(Some("ns"));
    let changes: Arc<Mutex<Vec<RecordChange>>> = Arc::default();
    let seen = changes.clone();
    cache.on_change(move |c| seen.lock().unwrap().push(c));
    (cache, scope, changes)
}

fn listed(cache: &RecordCache, scope: usize, objects: &[ObjectMeta]) {
    cache.observe(scope, WatchEvent::Init);
    for o in objects {
        cache.observe(scope, WatchEvent::InitApply(o.clone()));
    }
    cache.observe(scope, WatchEvent::InitDone);
}

/// Whether a read would still wait, without waiting long enough to give up.
async fn waits(cache: &RecordCache, release: &str) -> bool {
    tokio::time::timeout(Duration::from_millis(30), cache.fresh("ns", Some(release)))
        .await
        .is_err()
}

fn names(cache: &RecordCache) -> Vec<String> {
    let mut out: Vec<String> = cache
        .list("ns", &selector([("name", "web")]))
        .into_iter()
        .map(|o| o.name)
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn reads_wait_for_the_first_list_and_keep_only_metadata() {
    let (cache, scope, changes) = cache();
    assert!(!cache.fresh("elsewhere", None).await, "no watch covers it");
    // Not listed yet: a reader waits, then gives up.
    assert!(!cache.fresh("ns", Some("web")).await);
    listed(&cache, scope, &[meta(V1, "1", "deployed")]);
    assert!(cache.fresh("ns", Some("web")).await);
    let o = cache.get("ns", V1).expect("cached");
    assert_eq!(o.labels["status"], "deployed");
    assert_eq!(o.resource_version.as_deref(), Some("1"));
    assert!(o.annotations.contains_key("rudder.dev/lock"));
    assert!(
        !o.annotations.contains_key("unrelated"),
        "only rudder.dev/ ones"
    );
    assert!(o.data.is_empty());
    assert!(
        changes.lock().unwrap().is_empty(),
        "a first list reports nothing"
    );
}

fn stored(name: &str, version: &str, status: &str) -> Written {
    Written::Stored(Box::new(meta(name, version, status)))
}

fn status_of(cache: &RecordCache, name: &str) -> String {
    cache.get("ns", name).expect("cached").labels["status"].clone()
}

#[tokio::test]
async fn a_read_sees_its_own_write_at_once() {
    let (cache, scope, changes) = cache();
    listed(&cache, scope, &[meta(V1, "1", "deployed")]);
    // In flight: a read of the release waits for the answer.
    let write = cache.write_started("ns", V2, Some("web"));
    assert!(waits(&cache, "web").await, "a write of it is in flight");
    assert!(
        cache.fresh("ns", Some("other")).await,
        "other releases are not held up"
    );
    write.done(stored(V2, "2", "pending-install"));
    assert!(cache.fresh("ns", Some("web")).await);
    assert_eq!(
        names(&cache),
        [V1, V2],
        "shown before the watch delivers it"
    );

    let write = cache.write_started("ns", V2, Some("web"));
    write.done(stored(V2, "3", "deployed"));
    assert_eq!(status_of(&cache, V2), "deployed");
    // The watch delivers the first write late: older than what the cache shows.
    cache.observe(scope, WatchEvent::Apply(meta(V2, "2", "pending-install")));
    assert_eq!(status_of(&cache, V2), "deployed");
    cache.observe(scope, WatchEvent::Apply(meta(V2, "3", "deployed")));
    assert_eq!(status_of(&cache, V2), "deployed");
    assert!(
        changes.lock().unwrap().is_empty(),
        "our own writes: {changes:?}"
    );
    // Settled: the next change is someone else's, and shown.
    cache.observe(scope, WatchEvent::Apply(meta(V2, "4", "superseded")));
    assert_eq!(status_of(&cache, V2), "superseded");
    assert_eq!(changes.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_event_that_beats_the_answer_is_still_ours() {
    let (cache, scope, changes) = cache();
    listed(&cache, scope, &[meta(V1, "1", "deployed")]);
    let write = cache.write_started("ns", V1, Some("web"));
    cache.observe(scope, WatchEvent::Apply(meta(V1, "5", "superseded")));
    write.done(stored(V1, "5", "superseded"));
    assert!(cache.fresh("ns", Some("web")).await);
    assert!(changes.lock().unwrap().is_empty());

    // Someone else's write while ours was in flight is reported when ours returns.
    let write = cache.write_started("ns", V1, Some("web"));
    cache.observe(scope, WatchEvent::Apply(meta(V1, "6", "superseded")));
    cache.observe(scope, WatchEvent::Apply(meta(V1, "7", "superseded")));
    write.done(stored(V1, "7", "superseded"));
    assert!(cache.fresh("ns", Some("web")).await);
    assert_eq!(changes.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn others_changes_and_deletions_are_reported() {
    let (cache, scope, changes) = cache();
    listed(&cache, scope, &[meta(V1, "1", "deployed")]);
    cache.observe(scope, WatchEvent::Apply(meta(V2, "2", "deployed")));
    cache.observe(scope, WatchEvent::Delete(meta(V1, "3", "deployed")));
    let got = changes.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert!(!got[0].deleted && got[1].deleted);
    assert_eq!(
        (got[1].namespace.as_str(), got[1].release.as_str()),
        ("ns", "web")
    );
    assert_eq!(names(&cache), [V2]);

    // Our own delete shows at once, and is not reported.
    let write = cache.write_started("ns", V2, None);
    write.done(Written::Gone);
    assert!(cache.fresh("ns", Some("web")).await);
    assert!(names(&cache).is_empty());
    cache.observe(scope, WatchEvent::Delete(meta(V2, "4", "deployed")));
    assert_eq!(changes.lock().unwrap().len(), 2);
    assert!(names(&cache).is_empty());
}

#[tokio::test]
async fn a_relist_settles_earlier_writes_and_reports_what_changed_meanwhile() {
    let (cache, scope, changes) = cache();
    listed(
        &cache,
        scope,
        &[meta(V1, "1", "deployed"), meta(V2, "2", "deployed")],
    );
    // Our write is answered, then the watch breaks and relists: the list is newer.
    let write = cache.write_started("ns", V2, Some("web"));
    write.done(stored(V2, "3", "deployed"));
    cache.failed(scope);
    listed(&cache, scope, &[meta(V2, "9", "deployed")]);
    assert!(cache.fresh("ns", Some("web")).await);
    assert_eq!(names(&cache), [V2]);
    let got = changes.lock().unwrap().clone();
    assert!(
        got.iter().any(|c| c.deleted),
        "v1 went while the watch was down: {got:?}"
    );
}

#[tokio::test]
async fn a_failed_write_is_not_awaited_and_a_dropped_one_neither() {
    let (cache, scope, _) = cache();
    listed(&cache, scope, &[]);
    cache
        .write_started("ns", V1, Some("web"))
        .done(Written::Failed);
    drop(cache.write_started("ns", V1, Some("web")));
    assert!(cache.fresh("ns", Some("web")).await);
}

#[tokio::test]
async fn a_watch_that_cannot_list_sends_readers_to_the_server() {
    let (cache, scope, _) = cache();
    cache.failed(scope);
    let started = tokio::time::Instant::now();
    assert!(!cache.fresh("ns", Some("web")).await);
    assert!(started.elapsed() < Duration::from_millis(100), "no wait");
}

#[tokio::test]
async fn a_write_in_flight_too_long_sends_readers_to_the_server() {
    let (cache, scope, _) = cache();
    listed(&cache, scope, &[]);
    let write = cache.write_started("ns", V1, Some("web"));
    assert!(!cache.fresh("ns", Some("web")).await);
    write.done(stored(V1, "1", "deployed"));
    assert!(cache.fresh("ns", Some("web")).await);
}

#[tokio::test]
async fn a_relist_keeps_showing_our_writes_newer_than_it() {
    let (cache, scope, _) = cache();
    listed(&cache, scope, &[meta(V1, "1", "deployed")]);
    cache.failed(scope);
    cache.observe(scope, WatchEvent::Init);
    cache.observe(scope, WatchEvent::InitApply(meta(V1, "1", "deployed")));
    // Written while the list ran, after the point it lists.
    cache
        .write_started("ns", V2, Some("web"))
        .done(stored(V2, "2", "pending-install"));
    cache.observe(scope, WatchEvent::InitDone);
    assert_eq!(names(&cache), [V1, V2]);
}
