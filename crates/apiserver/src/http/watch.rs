//! Watch streams: newline-delimited JSON events (ADDED/MODIFIED/DELETED/
//! BOOKMARK/ERROR) from a resourceVersion, with selectors, bookmarks,
//! `sendInitialEvents` and timeouts.

use crate::error::ApiError;
use crate::http::params::{list_prefix, Params};
use crate::http::response::{present, stream_body};
use crate::http::table::{Printer, TableOpts};
use crate::object::meta::{FieldSelector, LabelSelector};
use crate::storage::{Event, EventType, Stored};
use crate::App;
use apitypes::ResourceType;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

const BOOKMARK_EVERY: Duration = Duration::from_secs(2);

struct Filter {
    prefix: String,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, obj: &Stored) -> bool {
        self.labels.matches_stored(obj) && self.fields.matches_stored(obj)
    }

    /// Translates a store event into what this watcher should see.
    fn translate(&self, ev: &Event) -> Option<(&'static str, Value)> {
        if !ev.in_prefix(&self.prefix) {
            return None;
        }
        let new_m = self.matches(&ev.object);
        let old_m = ev.old.as_ref().is_some_and(|o| self.matches(o));
        let t = match (ev.kind, old_m, new_m) {
            (EventType::Added, _, true) => "ADDED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, false, true) => "ADDED",
            (EventType::Modified, true, false) => "DELETED",
            (EventType::Deleted, _, true) => "DELETED",
            _ => return None,
        };
        Some((t, ev.object.value()))
    }
}

/// Shapes watched objects: the requested API version, or Table rows when
/// the client asked for `as=Table` (`kubectl get -w`); column definitions
/// ride on the first event only, as with the real server.
struct Shaper {
    rt: Arc<ResourceType>,
    table: Option<(Printer, TableOpts)>,
    headers_sent: bool,
}

impl Shaper {
    fn shape(&mut self, obj: Value) -> Value {
        let obj = present(&self.rt, obj);
        match &self.table {
            None => obj,
            Some((printer, opts)) => {
                let md = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))});
                let t = printer.table(&[obj], md, *opts, !self.headers_sent);
                self.headers_sent = true;
                t
            }
        }
    }
}

/// One watch event line, `type` before `object` as kube-apiserver writes it (Go's
/// field order): clients that decode the object in one pass (kube-rs with a raw
/// spec) need the type first.
fn line(event_type: &str, object: &Value) -> Bytes {
    let mut s = format!("{{\"type\":{},\"object\":", Value::from(event_type));
    s.push_str(&crate::storage::json::to_string(object));
    s.push_str("}\n");
    Bytes::from(s)
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool) -> Bytes {
    let mut md = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": md}),
    )
}

/// Starts a watch; the response streams until timeout, shutdown or the
/// client disconnects.
pub(crate) async fn serve(
    app: Arc<App>,
    rt: Arc<ResourceType>,
    ns: Option<String>,
    params: &Params,
    table: Option<TableOpts>,
) -> Result<Response, ApiError> {
    let mut shaper = Shaper {
        rt: rt.clone(),
        table: table.map(|t| (Printer::for_type(&app, &rt), t)),
        headers_sent: false,
    };
    let (labels, fields) = params.selectors(&rt)?;
    let filter = Filter {
        prefix: list_prefix(&rt, ns.as_deref()),
        labels,
        fields,
    };
    let bookmarks = params.flag("allowWatchBookmarks");
    let send_initial = params.flag("sendInitialEvents");
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|t| *t > 0);
    let rv_param = params.get("resourceVersion").unwrap_or("");
    let (tx, rx) = mpsc::channel::<Bytes>(512);
    let mut initial: Vec<Bytes> = Vec::new();
    let mut last_rv;
    let live: broadcast::Receiver<Arc<Event>>;
    if send_initial || rv_param.is_empty() || rv_param == "0" {
        let (items, rv, recv) = app.store.snapshot_and_watch(&filter.prefix);
        for obj in items.into_iter().filter(|o| filter.matches(o)) {
            let obj = obj.value();
            initial.push(line("ADDED", &shaper.shape(obj)));
        }
        if send_initial && bookmarks {
            initial.push(bookmark(&rt, rv, true));
        }
        last_rv = rv;
        live = recv;
    } else {
        let from: u64 = rv_param.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resourceVersion {rv_param:?}: must be a decimal number"
            ))
        })?;
        let current = app.store.current_rv();
        if from > current {
            // A resourceVersion from a previous (memory-only) server run:
            // make the client list again rather than silently skip events.
            let status = ApiError::gone(format!(
                "resource version {from} is newer than the server's current {current}; list again"
            ))
            .to_status();
            let body = line("ERROR", &status);
            return Ok(
                (StatusCode::OK, [("content-type", "application/json")], body).into_response(),
            );
        }
        match app.store.watch_from(&filter.prefix, from) {
            Ok((backlog, recv)) => {
                last_rv = backlog.last().map(|e| e.rv).unwrap_or(from);
                for ev in backlog {
                    if let Some((t, obj)) = filter.translate(&ev) {
                        initial.push(line(t, &shaper.shape(obj)));
                    }
                }
                live = recv;
            }
            Err(floor) => {
                let status = ApiError::gone(format!("too old resource version: {from} ({floor})"))
                    .to_status();
                let body = line("ERROR", &status);
                return Ok(
                    (StatusCode::OK, [("content-type", "application/json")], body).into_response(),
                );
            }
        }
    }
    let mut shutdown = app.shutdown.clone();
    tokio::spawn(async move {
        let mut live = live;
        for b in initial {
            if tx.send(b).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(
            timeout
                .map(Duration::from_secs)
                .unwrap_or(Duration::from_secs(365 * 24 * 3600)),
        );
        tokio::pin!(deadline);
        let mut tick = tokio::time::interval(BOOKMARK_EVERY);
        tick.tick().await;
        loop {
            tokio::select! {
                ev = live.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= last_rv {
                            // Already part of the snapshot or backlog.
                            continue;
                        }
                        last_rv = ev.rv;
                        if let Some((t, obj)) = filter.translate(&ev) {
                            if tx.send(line(t, &shaper.shape(obj))).await.is_err() {
                                return;
                            }
                        }
                    }
                    // Lagging or closed: end the stream; clients re-watch.
                    Err(_) => return,
                },
                _ = tick.tick(), if bookmarks => {
                    if tx.send(bookmark(&rt, last_rv, false)).await.is_err() {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
            }
        }
    });
    let resp = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(stream_body(rx))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_name_their_type_before_the_object() {
        let event = line("ADDED", &json!({"kind": "Demo", "apiVersion": "v1"}));
        assert_eq!(
            &event[..],
            b"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Demo\"}}\n"
        );
    }
}
