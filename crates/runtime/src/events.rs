//! Kubernetes Events recorded on the reconciled object through the core/v1 API, as
//! controller-runtime's recorder (client-go's `record` package) writes them: `source`
//! and `reportingComponent` name the controller (the [`Reporter`]'s), an Event seen
//! again within the cache's lifetime is patched (`count` + 1, `lastTimestamp` now) instead
//! of created anew, more than ten different messages of one reason on one object within
//! ten minutes are combined ("(combined from similar events): …"), and a spam filter
//! caps each object's Events (a burst of 25, then one per five minutes). So `kubectl
//! get events --sort-by=.lastTimestamp` and dashboards built on a Go controller's
//! Events read ours the same way. RBAC for core/v1 `events` (create, patch) is all it
//! needs (kube's `Recorder` writes events.k8s.io/v1, which needs other rules).
//!
//! Publishing is best effort: a failed Event never fails a reconcile.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::Reporter;
use kube::Client;
use serde_json::json;

/// Event types.
pub const NORMAL: &str = "Normal";
pub const WARNING: &str = "Warning";

/// Keep messages well under the API's limits (the Go recorder does not cut; the
/// server refuses messages over 1 MiB with the object, so this only guards that).
const MAX_MESSAGE: usize = 1024;

/// client-go's defaults (`record.NewEventCorrelator`).
const CACHE_SIZE: usize = 4096;
const AGGREGATE_MAX_EVENTS: usize = 10;
const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
const SPAM_BURST: f64 = 25.0;
const SPAM_REFILL_EVERY: Duration = Duration::from_secs(300);
const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// What the cache remembers of an Event it wrote.
#[derive(Debug, Clone)]
struct Observation {
    name: String,
    count: i32,
    first_timestamp: Time,
}

/// Messages seen per (object, type, reason) within the aggregation interval.
#[derive(Debug)]
struct Similar {
    messages: HashSet<String>,
    last: Instant,
}

/// A token bucket per object.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    refilled: Instant,
}

#[derive(Debug, Default)]
struct Correlator {
    seen: HashMap<String, Observation>,
    similar: HashMap<String, Similar>,
    buckets: HashMap<String, Bucket>,
}

/// What to write for one Event, after correlation.
#[derive(Debug, PartialEq)]
enum Write {
    Create {
        name: String,
        message: String,
    },
    Patch {
        name: String,
        message: String,
        count: i32,
        first_timestamp: Time,
    },
}

impl Correlator {
    /// Decides how an Event of `type_`/`reason`/`message` on the object with key
    /// `object` is written at `now`; `None` when the spam filter drops it.
    fn observe(
        &mut self,
        object: &str,
        type_: &str,
        reason: &str,
        message: &str,
        now: Instant,
        name_now: impl Fn() -> String,
    ) -> Option<(String, Write)> {
        if !self.allow(object, now) {
            return None;
        }
        let aggregate = format!("{object}\u{0}{type_}\u{0}{reason}");
        let similar = self
            .similar
            .entry(aggregate.clone())
            .or_insert_with(|| Similar {
                messages: HashSet::new(),
                last: now,
            });
        if now.duration_since(similar.last) > AGGREGATE_INTERVAL {
            similar.messages.clear();
        }
        similar.last = now;
        let (key, message) = if similar.messages.len() < AGGREGATE_MAX_EVENTS {
            similar.messages.insert(message.to_string());
            (format!("{aggregate}\u{0}{message}"), message.to_string())
        } else {
            (aggregate, format!("{COMBINED_PREFIX}{message}"))
        };
        let write = match self.seen.get(&key) {
            Some(o) => Write::Patch {
                name: o.name.clone(),
                message,
                count: o.count.saturating_add(1),
                first_timestamp: o.first_timestamp.clone(),
            },
            None => Write::Create {
                name: name_now(),
                message,
            },
        };
        if self.seen.len() >= CACHE_SIZE {
            // A bounded cache: forgetting means the next copy is created, not patched.
            self.seen.clear();
        }
        if self.similar.len() >= CACHE_SIZE {
            self.similar.clear();
        }
        Some((key, write))
    }

    fn allow(&mut self, object: &str, now: Instant) -> bool {
        if self.buckets.len() >= CACHE_SIZE {
            self.buckets.clear();
        }
        let bucket = self.buckets.entry(object.to_string()).or_insert(Bucket {
            tokens: SPAM_BURST,
            refilled: now,
        });
        let refill =
            now.duration_since(bucket.refilled).as_secs_f64() / SPAM_REFILL_EVERY.as_secs_f64();
        bucket.tokens = (bucket.tokens + refill).min(SPAM_BURST);
        bucket.refilled = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }

    fn remember(&mut self, key: String, observation: Observation) {
        self.seen.insert(key, observation);
    }
}

/// Records core/v1 Events for one controller; shared by all its reconciles, so
/// repeated Events are counted rather than duplicated.
pub struct EventRecorder {
    client: Client,
    /// `source.component` and `reportingComponent` (the controller's name).
    component: String,
    /// `reportingInstance` (the pod), when known.
    instance: Option<String>,
    correlator: Mutex<Correlator>,
}

impl EventRecorder {
    pub fn new(client: Client, reporter: Reporter) -> EventRecorder {
        EventRecorder {
            client,
            component: reporter.controller,
            instance: reporter.instance,
            correlator: Mutex::default(),
        }
    }

    fn correlator(&self) -> std::sync::MutexGuard<'_, Correlator> {
        self.correlator.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records an Event on `regarding`.
    pub async fn record(
        &self,
        regarding: &ObjectReference,
        type_: &str,
        reason: &str,
        message: String,
    ) {
        let message = truncate(message, MAX_MESSAGE);
        let name = regarding.name.clone().unwrap_or_default();
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let object = format!(
            "{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
            regarding.api_version.as_deref().unwrap_or_default(),
            regarding.kind.as_deref().unwrap_or_default(),
            namespace,
            name,
            regarding.uid.as_deref().unwrap_or_default()
        );
        let now = Timestamp::now();
        let observed =
            self.correlator()
                .observe(&object, type_, reason, &message, Instant::now(), || {
                    event_name(&name, now)
                });
        let Some((key, write)) = observed else {
            tracing::debug!(reason, name = %name, "event dropped by the spam filter");
            return;
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let stamp = Time(now);
        let result = match write {
            Write::Patch {
                name: event,
                message,
                count,
                first_timestamp,
            } => {
                let patch = json!({"count": count, "lastTimestamp": stamp, "message": message});
                match api
                    .patch(&event, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await
                {
                    Ok(_) => Ok(Observation {
                        name: event,
                        count,
                        first_timestamp,
                    }),
                    // Gone (expired) or not ours to patch: write it anew, as client-go does.
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 403 => {
                        let fresh = event_name(&name, now);
                        self.create(&api, regarding, &namespace, &fresh, type_, reason, message)
                            .await
                    }
                    Err(e) => Err(e),
                }
            }
            Write::Create {
                name: event,
                message,
            } => {
                self.create(&api, regarding, &namespace, &event, type_, reason, message)
                    .await
            }
        };
        match result {
            Ok(observation) => self.correlator().remember(key, observation),
            Err(e) => tracing::warn!(
                reason,
                name = %name,
                namespace = %namespace,
                error = %e,
                "cannot record event"
            ),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn create(
        &self,
        api: &Api<Event>,
        regarding: &ObjectReference,
        namespace: &str,
        name: &str,
        type_: &str,
        reason: &str,
        message: String,
    ) -> Result<Observation, kube::Error> {
        let now = Time(Timestamp::now());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            reason: Some(reason.to_string()),
            message: Some(message),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now.clone()),
            count: Some(1),
            type_: Some(type_.to_string()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: self.instance.clone(),
            ..Event::default()
        };
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {}
            // The same name twice in a nanosecond: it is recorded.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
        Ok(Observation {
            name: name.to_string(),
            count: 1,
            first_timestamp: now,
        })
    }
}

/// client-go's Event name: `<object name>.<unix nanoseconds in hex>`.
fn event_name(object: &str, now: Timestamp) -> String {
    format!("{object}.{:x}", now.as_nanosecond())
}

/// Records Events on one object.
pub struct EventSink {
    recorder: Arc<EventRecorder>,
    regarding: ObjectReference,
}

impl EventSink {
    pub fn new(recorder: Arc<EventRecorder>, regarding: ObjectReference) -> EventSink {
        EventSink {
            recorder,
            regarding,
        }
    }

    /// A `Normal` event.
    pub async fn normal(&self, reason: &str, message: impl Into<String>) {
        self.recorder
            .record(&self.regarding, NORMAL, reason, message.into())
            .await
    }

    /// A `Warning` event.
    pub async fn warning(&self, reason: &str, message: impl Into<String>) {
        self.recorder
            .record(&self.regarding, WARNING, reason, message.into())
            .await
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary, marking the cut.
fn truncate(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observe(c: &mut Correlator, reason: &str, message: &str, at: Instant) -> Option<Write> {
        let out = c.observe("obj", WARNING, reason, message, at, || "n".to_string());
        out.map(|(key, write)| {
            let (name, count, first) = match &write {
                Write::Create { name, .. } => (name.clone(), 1, Time(Timestamp::UNIX_EPOCH)),
                Write::Patch {
                    name,
                    count,
                    first_timestamp,
                    ..
                } => (name.clone(), *count, first_timestamp.clone()),
            };
            c.remember(
                key,
                Observation {
                    name,
                    count,
                    first_timestamp: first,
                },
            );
            write
        })
    }

    #[test]
    fn truncates_on_char_boundary() {
        assert_eq!(truncate("short".into(), 10), "short");
        let long = "é".repeat(600);
        let t = truncate(long, MAX_MESSAGE);
        assert!(t.len() <= MAX_MESSAGE);
        assert!(t.ends_with("..."));
    }

    #[test]
    fn repeats_are_counted_on_the_first_event() {
        let mut c = Correlator::default();
        let t = Instant::now();
        assert!(matches!(
            observe(&mut c, "R", "m", t),
            Some(Write::Create { .. })
        ));
        match observe(&mut c, "R", "m", t) {
            Some(Write::Patch { name, count, .. }) => assert_eq!((name.as_str(), count), ("n", 2)),
            other => panic!("{other:?}"),
        }
        match observe(&mut c, "R", "m", t) {
            Some(Write::Patch { count, .. }) => assert_eq!(count, 3),
            other => panic!("{other:?}"),
        }
        // Another reason is another Event.
        assert!(matches!(
            observe(&mut c, "S", "m", t),
            Some(Write::Create { .. })
        ));
    }

    #[test]
    fn many_different_messages_are_combined() {
        let mut c = Correlator::default();
        let t = Instant::now();
        for i in 0..AGGREGATE_MAX_EVENTS {
            let w = observe(&mut c, "R", &format!("m{i}"), t);
            assert!(matches!(w, Some(Write::Create { .. })), "{i}: {w:?}");
        }
        match observe(&mut c, "R", "m10", t) {
            Some(Write::Create { message, .. }) => {
                assert_eq!(message, "(combined from similar events): m10")
            }
            other => panic!("{other:?}"),
        }
        match observe(&mut c, "R", "m11", t) {
            Some(Write::Patch { message, count, .. }) => {
                assert_eq!(message, "(combined from similar events): m11");
                assert_eq!(count, 2);
            }
            other => panic!("{other:?}"),
        }
        // After the interval, messages count afresh.
        let later = t + AGGREGATE_INTERVAL + Duration::from_secs(1);
        assert!(matches!(
            observe(&mut c, "R", "m12", later),
            Some(Write::Create { ref message, .. }) if message == "m12"
        ));
    }

    #[test]
    fn the_spam_filter_allows_a_burst_then_one_per_five_minutes() {
        let mut c = Correlator::default();
        let t = Instant::now();
        let allowed = (0..30)
            .filter(|i| observe(&mut c, "R", &format!("{}", i % 3), t).is_some())
            .count();
        assert_eq!(allowed, 25);
        assert!(observe(&mut c, "R", "x", t + Duration::from_secs(299)).is_none());
        assert!(observe(&mut c, "R", "x", t + Duration::from_secs(301)).is_some());
    }

    #[test]
    fn names_are_client_gos() {
        let t = Timestamp::from_nanosecond(0x1234_5678_9abc_def0).unwrap();
        assert_eq!(event_name("app", t), "app.123456789abcdef0");
    }
}
