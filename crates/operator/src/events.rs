//! Kubernetes Events recorded on the custom resource (`events.k8s.io/v1`, reporter
//! `rudder`): what the reconciler did to the release and why an action failed.
//! Publishing is best effort: a failed Event never fails a reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;

/// The reasons the reconciler records, besides the status condition reasons.
pub const REPAIRED: &str = "Repaired";
pub const ROLLED_BACK: &str = "RolledBack";
pub const ROLLBACK_ERROR: &str = "RollbackError";
pub const OVERRIDE_VALUES_IN_USE: &str = "OverrideValuesInUse";
pub const ADOPTED: &str = "Adopted";
pub const MIGRATED: &str = "Migrated";
pub const BACKING_OFF: &str = "BackingOff";

/// The Events API limits a note to 1 kB.
const MAX_NOTE: usize = 1024;

/// Records Events on one CR.
pub struct EventSink {
    recorder: Recorder,
    regarding: ObjectReference,
}

impl EventSink {
    pub fn new(client: Client, reporter: Reporter, regarding: ObjectReference) -> EventSink {
        EventSink {
            recorder: Recorder::new(client, reporter),
            regarding,
        }
    }

    /// A `Normal` event.
    pub async fn normal(&self, reason: &str, action: &str, note: impl Into<String>) {
        self.publish(EventType::Normal, reason, action, note.into())
            .await
    }

    /// A `Warning` event.
    pub async fn warning(&self, reason: &str, action: &str, note: impl Into<String>) {
        self.publish(EventType::Warning, reason, action, note.into())
            .await
    }

    async fn publish(&self, type_: EventType, reason: &str, action: &str, note: String) {
        let ev = Event {
            type_,
            reason: reason.to_string(),
            note: Some(truncate(note, MAX_NOTE)),
            action: action.to_string(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&ev, &self.regarding).await {
            tracing::warn!(
                reason,
                name = self.regarding.name.as_deref().unwrap_or_default(),
                namespace = self.regarding.namespace.as_deref().unwrap_or_default(),
                error = %e,
                "cannot record event"
            );
        }
    }
}

/// Cuts `s` to at most `max` bytes on a character boundary, marking the cut.
pub fn truncate(s: String, max: usize) -> String {
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

    #[test]
    fn truncates_on_char_boundary() {
        assert_eq!(truncate("short".into(), 10), "short");
        let long = "é".repeat(600);
        let t = truncate(long, MAX_NOTE);
        assert!(t.len() <= MAX_NOTE);
        assert!(t.ends_with("..."));
    }
}
