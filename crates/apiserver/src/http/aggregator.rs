//! kube-aggregator's handlers in front of the server's own: `/apis` and
//! `/apis/{group}` list the groups of APIServices beside the served ones
//! (`handler_apis.go`), and a group version whose APIService names a
//! Service answers its discovery and every request under it with 503
//! `service unavailable`, as kube-aggregator's proxy does while the
//! APIService is not Available (`handler_proxy.go`). The embedded server
//! never reaches an aggregated API server, so that is every such group
//! version (see `crate::aggregation`).
//!
//! kube-apiserver authorizes before it proxies: a resource request under
//! such a group version is refused (403) by RBAC before it can be 503.

use crate::aggregation::{self, ApiService};
use crate::error::ApiError;
use crate::faults::Verb;
use crate::http::auth::Attributes;
use crate::http::discovery;
use crate::http::params::Params;
use crate::App;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// Go's `http.Error(w, "service unavailable", 503)`: the text and its newline.
const UNAVAILABLE: &str = "service unavailable\n";

/// The `APIGroupList` of `/apis`: the served groups, with the groups and
/// versions of APIServices added in kube-aggregator's order.
pub(crate) fn api_groups(app: &App) -> Value {
    let mut list = discovery::api_groups(&app.registry);
    let services = aggregation::registered(app);
    if let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) {
        merge(groups, &services);
    }
    list
}

/// `/apis/{group}`: the group's `APIGroup`, for a served group and for the
/// group of an APIService alike (200 even while its service is down).
pub(crate) fn api_group(app: &App, name: &str) -> Result<Value, ApiError> {
    let list = api_groups(app);
    let group = list
        .get("groups")
        .and_then(Value::as_array)
        .and_then(|gs| gs.iter().find(|g| g["name"] == name && !name.is_empty()))
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        })?;
    let mut doc = group;
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Ok(doc)
}

/// Adds each APIService's version to its group, or its group after the
/// served ones.
fn merge(groups: &mut Vec<Value>, services: &[ApiService]) {
    for s in services {
        let entry = json!({"groupVersion": s.group_version(), "version": s.version});
        match groups.iter_mut().find(|g| g["name"] == s.group.as_str()) {
            Some(g) => {
                if let Some(vs) = g.get_mut("versions").and_then(Value::as_array_mut) {
                    if !vs.iter().any(|v| v["version"] == s.version.as_str()) {
                        vs.push(entry);
                    }
                }
            }
            None => groups.push(discovery::group_doc(
                &s.group,
                std::slice::from_ref(&s.version),
            )),
        }
    }
}

/// A request for `/apis/{group}/{version}` (`path`) or under it, `rest`
/// being the path segments after the version, when an APIService sends that
/// group version elsewhere: authorized as kube-apiserver authorizes it, then
/// 503. The discovery document itself was authorized by path already.
pub(crate) fn proxy(
    app: &App,
    method: &Method,
    path: &str,
    group: &str,
    rest: &[&str],
    params: &Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    if !rest.is_empty() {
        let attrs = resource_attributes(method, group, rest, params)
            .unwrap_or_else(|| Attributes::non_resource(method.as_str(), path));
        app.auth.authorize(app, headers, &attrs)?;
    }
    Ok(unavailable())
}

/// kube-apiserver's `RequestInfo` of a resource path under an aggregated
/// group version; `None` for a verb no resource request has.
fn resource_attributes(
    method: &Method,
    group: &str,
    rest: &[&str],
    params: &Params,
) -> Option<Attributes> {
    let (watch_path, rest) = match rest {
        ["watch", r @ ..] => (true, r),
        r => (false, r),
    };
    let (ns, resource, tail) = match rest {
        ["namespaces", ns, resource, tail @ ..] => (Some(*ns), *resource, tail),
        [resource, tail @ ..] => (None, *resource, tail),
        [] => return None,
    };
    let name = tail.first().copied();
    let watch = watch_path || params.flag("watch");
    let verb = Verb::of(method, name.is_some(), watch)?;
    Some(Attributes::resource(
        verb,
        group,
        resource,
        tail.get(1).copied(),
        ns,
        name,
    ))
}

/// The answer for a group version whose APIService is not available.
pub(crate) fn unavailable() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [
            ("content-type", "text/plain; charset=utf-8"),
            ("x-content-type-options", "nosniff"),
        ],
        UNAVAILABLE,
    )
        .into_response()
}
