//! The APIService availability controller: kube-aggregator's
//! `AvailableConditionController` and its local twin, which keep each
//! APIService's `Available` condition. A local APIService
//! (`spec.service: null`) is always available; one with a Service is
//! checked as kube-aggregator checks it, with its reasons and messages:
//! the Service must exist (`ServiceNotFound`), a ClusterIP Service must
//! listen on the APIService's port (`ServicePortError`) and have
//! EndpointSlices (`EndpointsNotFound`) with a ready endpoint for that
//! port's name (`MissingEndpoints`). Past those checks kube-aggregator asks
//! the aggregated server for its discovery; the embedded server never
//! reaches one, so it reports that check failed (`FailedDiscoveryCheck`),
//! and its proxy answers 503 whatever the reason (see `crate::aggregation`).
//!
//! Nothing here runs an EndpointSlice controller: a Service has slices
//! only when a client writes them, so a Service without any reads
//! `EndpointsNotFound` where a real cluster's controller would have written
//! an empty slice (`MissingEndpoints`).

use super::{Change, Changes};
use crate::aggregation::PREFIX;
use crate::object::{self, meta, Target, WriteOpts};
use crate::App;
use serde_json::{json, Value};
use std::sync::Arc;

const SERVICES: &str = "/services/";
const ENDPOINT_SLICES: &str = "discovery.k8s.io/endpointslices/";
/// The label tying an EndpointSlice to its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Runs until shutdown: every change to an APIService, a Service or an
/// EndpointSlice rechecks the APIServices.
pub(super) async fn run(app: Arc<App>, mut changes: Changes) {
    while let Some(change) = changes.next().await {
        let recheck = match &change {
            Change::Listed(_) => true,
            Change::Event(ev) => [PREFIX, SERVICES, ENDPOINT_SLICES]
                .iter()
                .any(|p| ev.key.starts_with(p)),
        };
        if recheck {
            for (key, stored) in app.store.entries(PREFIX) {
                sync(&app, &key, &stored.value());
            }
        }
    }
}

/// An `Available` condition without its transition time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Availability {
    pub(crate) status: &'static str,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl Availability {
    fn unavailable(reason: &'static str, message: String) -> Self {
        Availability {
            status: "False",
            reason,
            message,
        }
    }
}

/// What kube-aggregator's checks say of `apiservice` given the store.
pub(crate) fn availability(app: &App, apiservice: &Value) -> Availability {
    let spec = apiservice.get("spec").unwrap_or(&Value::Null);
    let Some(svc) = spec.get("service").filter(|s| s.is_object()) else {
        return Availability {
            status: "True",
            reason: "Local",
            message: "Local APIServices are always available".into(),
        };
    };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (name, ns) = (text(svc, "name"), text(svc, "namespace"));
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    let Some(service) = app.store.get(&format!("{SERVICES}{ns}/{name}")) else {
        return Availability::unavailable(
            "ServiceNotFound",
            format!("service/{name} in {ns:?} is not present"),
        );
    };
    let service_spec = service.get("spec").unwrap_or(&Value::Null);
    let kind = service_spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if kind == "ClusterIP" {
        let port_name = service_spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
            .map(|p| text(p, "name"));
        let Some(port_name) = port_name else {
            return Availability::unavailable(
                "ServicePortError",
                format!("service/{name} in {ns:?} is not listening on port {port}"),
            );
        };
        let slices: Vec<Value> = app
            .store
            .entries(&format!("{ENDPOINT_SLICES}{ns}/"))
            .iter()
            .filter(|(_, s)| s.label(SERVICE_NAME_LABEL) == Some(name.as_str()))
            .map(|(_, s)| s.value())
            .collect();
        if slices.is_empty() {
            return Availability::unavailable(
                "EndpointsNotFound",
                format!("cannot find endpointslices for service/{name} in {ns:?}"),
            );
        }
        if !slices.iter().any(|s| serves(s, &port_name)) {
            return Availability::unavailable(
                "MissingEndpoints",
                format!(
                    "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
                ),
            );
        }
    }
    // kube-aggregator resolves the Service to its cluster IP (or external
    // name) and asks for the group version's discovery there.
    let host = match kind {
        "ExternalName" => text(service_spec, "externalName"),
        _ => text(service_spec, "clusterIP"),
    };
    let (group, version) = (text(spec, "group"), text(spec, "version"));
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    Availability::unavailable(
        "FailedDiscoveryCheck",
        format!(
            "failing or missing response from https://{host}:{port}{path}: \
             the embedded API server does not reach aggregated API servers"
        ),
    )
}

/// An EndpointSlice with a ready endpoint (no `ready` condition counts as
/// ready) and a port of that name.
fn serves(slice: &Value, port_name: &str) -> bool {
    let ready = slice
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false));
    // Our round trip may drop an empty port name, which is the unnamed port.
    let port = slice
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| {
            p.get("name").and_then(Value::as_str).unwrap_or("") == port_name
                && p.get("port").is_some_and(|n| !n.is_null())
        });
    ready && port
}

/// Writes the APIService's `Available` condition when it changed; its
/// transition time moves only when its status does, as kube-aggregator's
/// `SetAPIServiceCondition` does.
fn sync(app: &App, key: &str, apiservice: &Value) {
    let want = availability(app, apiservice);
    if current(apiservice).as_ref() == Some(&want) {
        return;
    }
    let Some(rt) = app
        .registry
        .find("apiregistration.k8s.io", "v1", "apiservices")
    else {
        return;
    };
    let opts = WriteOpts {
        manager: "kube-apiserver".into(),
        ..Default::default()
    };
    let now = meta::now_rfc3339();
    let res = object::modify(app, &rt, key, Target::Status, &opts, true, move |cur| {
        let mut obj = cur.clone();
        set_condition(&mut obj, &want, &now);
        Ok(obj)
    });
    match res {
        Ok(_) => {}
        Err(e) if matches!(e.code, 404 | 409) => {
            tracing::debug!("APIService {key} status not written: {e}");
        }
        Err(e) => tracing::warn!("cannot write the status of APIService {key}: {e}"),
    }
}

/// The stored `Available` condition, if any.
fn current(apiservice: &Value) -> Option<Availability> {
    let c = conditions(apiservice)
        .iter()
        .find(|c| c["type"] == "Available")?;
    let status = match c.get("status").and_then(Value::as_str)? {
        "True" => "True",
        "False" => "False",
        _ => "Unknown",
    };
    let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
    // Only the reasons this controller writes can equal what it wants.
    let reason = REASONS.iter().find(|r| **r == reason)?;
    Some(Availability {
        status,
        reason,
        message: c
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    })
}

const REASONS: &[&str] = &[
    "Local",
    "ServiceNotFound",
    "ServicePortError",
    "EndpointsNotFound",
    "MissingEndpoints",
    "FailedDiscoveryCheck",
];

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn set_condition(obj: &mut Value, want: &Availability, now: &str) {
    let mut list: Vec<Value> = conditions(obj).to_vec();
    let since = list
        .iter()
        .find(|c| c["type"] == "Available" && c["status"] == want.status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let condition = json!({
        "type": "Available",
        "status": want.status,
        "lastTransitionTime": since,
        "reason": want.reason,
        "message": want.message,
    });
    match list.iter_mut().find(|c| c["type"] == "Available") {
        Some(c) => *c = condition,
        None => list.push(condition),
    }
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    obj["status"]["conditions"] = json!(list);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let mut obj = json!({"status": {"conditions": [
            {"type": "Other", "status": "True"},
            {"type": "Available", "status": "False", "lastTransitionTime": "2020-01-01T00:00:00Z",
             "reason": "ServiceNotFound", "message": "old"},
        ]}});
        let missing = Availability::unavailable("MissingEndpoints", "new".into());
        set_condition(&mut obj, &missing, "2030-01-01T00:00:00Z");
        let c = &obj["status"]["conditions"][1];
        assert_eq!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(
            (&c["reason"], &c["message"]),
            (&json!("MissingEndpoints"), &json!("new"))
        );
        assert_eq!(current(&obj), Some(missing));
        let local = Availability {
            status: "True",
            reason: "Local",
            message: "Local APIServices are always available".into(),
        };
        set_condition(&mut obj, &local, "2030-01-01T00:00:00Z");
        assert_eq!(
            obj["status"]["conditions"][1]["lastTransitionTime"],
            "2030-01-01T00:00:00Z"
        );
        assert_eq!(obj["status"]["conditions"][0]["type"], "Other");
    }

    #[test]
    fn a_slice_serves_a_port_with_a_ready_endpoint() {
        let slice = |ready: Value, port: Value| {
            json!({"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": ready}}],
                   "ports": [port]})
        };
        let https = json!({"name": "https", "port": 6443});
        assert!(serves(&slice(json!(true), https.clone()), "https"));
        assert!(serves(&slice(Value::Null, https.clone()), "https"));
        assert!(!serves(&slice(json!(false), https.clone()), "https"));
        assert!(!serves(&slice(json!(true), https), ""));
        assert!(serves(&slice(json!(true), json!({"port": 6443})), ""));
        assert!(!serves(
            &json!({"endpoints": [], "ports": [{"name": "", "port": 1}]}),
            ""
        ));
    }
}
