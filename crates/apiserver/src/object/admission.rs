//! Admission: what every write goes through before it is stored, answered
//! with the real server's status codes and messages. The endpoint's
//! apiVersion and kind, the name's syntax and etcd's size limit; Go decode
//! errors (400) and unknown fields under `fieldValidation` (400 under
//! Strict, a `Warning` header under Warn); Secret `stringData` and the
//! defaults clients rely on; field errors of Kubernetes' Go validation and
//! of CRD structural schemas (422 `Invalid`); and what server-side apply
//! refuses before merging (duplicate keys, undeclared fields). The checks
//! themselves are `apitypes::validation`'s; this is what the server
//! answers for them.

use crate::error::ApiError;
use crate::object::meta::{self, meta_mut, name_of};
use crate::App;
use apitypes::validation::{self, FieldError};
use apitypes::{typed, ResourceType, Schema};
use serde_json::{json, Value};

/// The `fieldValidation` directive of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter (absent means Warn, the server default).
    pub(crate) fn parse(v: Option<&str>) -> Result<Self, ApiError> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// The 422 `Invalid` status for a list of field errors.
pub(crate) fn invalid(rt: &ResourceType, name: &str, errs: &[FieldError]) -> ApiError {
    let qualified = if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    };
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    let list = if shown.len() == 1 {
        shown[0].clone()
    } else {
        format!("[{}]", shown.join(", "))
    };
    let mut e = ApiError::new(
        422,
        "Invalid",
        format!("{qualified} \"{name}\" is invalid: {list}"),
    );
    let causes: Vec<Value> = errs
        .iter()
        .map(|c| json!({"reason": c.reason(), "message": c.body(), "field": c.field()}))
        .collect();
    let mut d = json!({"name": name, "kind": rt.kind, "causes": causes});
    if !rt.group.is_empty() {
        d["group"] = json!(rt.group);
    }
    e.details = Some(d);
    e
}

fn cannot_handle(rt: &ResourceType, msg: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version {:?} cannot be handled as a {}: {msg}",
        rt.kind, rt.version, rt.kind
    ))
}

/// Decoding a write of `obj`: Go type errors and unknown fields (which
/// become warnings under Warn).
pub(crate) fn check_decode(
    rt: &ResourceType,
    schema: &Schema,
    obj: &Value,
    mode: FieldValidation,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    if !schema.is_deduced() {
        let d = validation::decode(schema, obj);
        if rt.crd.is_none() {
            if let Some(e) = &d.type_error {
                return Err(cannot_handle(rt, e));
            }
        }
        if !d.unknown.is_empty() {
            match mode {
                FieldValidation::Strict => {
                    let list: Vec<String> = d
                        .unknown
                        .iter()
                        .map(|u| format!("unknown field {u:?}"))
                        .collect();
                    return Err(cannot_handle(
                        rt,
                        &format!("strict decoding error: {}", list.join(", ")),
                    ));
                }
                FieldValidation::Warn => {
                    warnings.extend(d.unknown.iter().map(|u| format!("unknown field {u:?}")));
                }
                FieldValidation::Ignore => {}
            }
        }
    }
    Ok(())
}

/// Validation of a defaulted write of `obj` (replacing `old`, if any);
/// custom resources are pruned to their schema.
pub(crate) fn check_rules(
    rt: &ResourceType,
    schema: &Schema,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let errs = validation::field_errors(rt, schema, obj, old);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, &name, &errs))
    }
}

/// What server-side apply refuses before it merges: duplicate keys of
/// associative lists and fields the schema does not declare (500, as the
/// real server answers a typed-conversion failure).
pub(crate) fn check_applied(
    rt: &ResourceType,
    schema: &Schema,
    ns: &str,
    config: &Value,
) -> Result<(), ApiError> {
    if schema.is_deduced() {
        return Ok(());
    }
    let mut problems = apitypes::typed::duplicates(schema, config);
    problems.extend(apitypes::typed::undeclared(schema, config));
    if problems.is_empty() {
        return Ok(());
    }
    let detail = if problems.len() == 1 {
        problems.remove(0)
    } else {
        let mut lines = vec!["errors:".to_string()];
        lines.extend(problems.iter().map(|p| format!("  {p}")));
        lines.join("\n")
    };
    let obj_ns = config
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(if rt.namespaced { ns } else { "" });
    let name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({obj_ns}/{name}; {}/{}, Kind={}): {detail}",
            rt.group, rt.version, rt.kind
        ),
    ))
}

/// etcd's default request limit; larger objects are refused like etcd does.
pub(crate) const MAX_OBJECT_BYTES: usize = 1_572_864;

pub(crate) fn check_size(obj: &Value) -> Result<(), ApiError> {
    let n = crate::storage::json::to_string(obj).len();
    if n > MAX_OBJECT_BYTES {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "etcdserver: request is too large ({n} bytes; the limit is {MAX_OBJECT_BYTES})"
            ),
        ));
    }
    Ok(())
}

/// Checks apiVersion/kind against the endpoint and the name's syntax.
pub(crate) fn validate(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON or YAML object",
        ));
    }
    let name = name_of(obj).to_string();
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            obj["apiVersion"] = json!(rt.api_version());
        }
        Some(v) if v == rt.api_version() => {}
        Some(v) => {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                &name,
                "apiVersion",
                &format!(
                    "Invalid value: {v:?}: must be {:?} for this endpoint",
                    rt.api_version()
                ),
            ));
        }
    }
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            obj["kind"] = json!(rt.kind);
        }
        Some(k) if k == rt.kind => {}
        Some(k) => {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                &name,
                "kind",
                &format!(
                    "Invalid value: {k:?}: must be {:?} for this endpoint",
                    rt.kind
                ),
            ));
        }
    }
    if name.is_empty() {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            &name,
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    }
    let res = if matches!(rt.kind.as_str(), "Namespace" | "Service") && rt.group.is_empty() {
        apitypes::validation::validate_label(&name)
    } else {
        apitypes::validation::validate_subdomain(&name)
    };
    if let Err(msg) = res {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            &name,
            "metadata.name",
            &format!("Invalid value: {name:?}: {msg}"),
        ));
    }
    for field in ["labels", "annotations"] {
        if let Some(m) = obj.pointer(&format!("/metadata/{field}")) {
            let ok = m.is_null()
                || m.as_object()
                    .is_some_and(|m| m.values().all(Value::is_string));
            if !ok {
                return Err(ApiError::bad_request(format!(
                    "metadata.{field} must be a map of strings"
                )));
            }
        }
    }
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        apitypes::registry::crd_types(obj)
            .map_err(|e| ApiError::invalid(&rt.group, &rt.kind, &name, "spec", &e))?;
    }
    Ok(())
}

/// Folds a Secret's write-only `stringData` into base64 `data`.
fn normalize(rt: &ResourceType, obj: &mut Value) {
    use base64::Engine;
    if !(rt.group.is_empty() && rt.kind == "Secret") {
        return;
    }
    let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    if !obj.get("data").is_some_and(Value::is_object) {
        obj["data"] = json!({});
    }
    for (k, v) in sd {
        let text = v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string());
        obj["data"][k.as_str()] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// Built-in defaulting that clients commonly rely on. On an update (`old`), what the
/// server allocated (a Service's cluster IPs) is kept from the stored object when the
/// new one leaves it out, as kube-apiserver's Service strategy does.
fn default_fields(app: &App, rt: &ResourceType, obj: &mut Value, old: Option<&Value>) {
    let name = name_of(obj).to_string();
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Secret")
            if obj
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty) =>
        {
            obj["type"] = json!("Opaque");
        }
        // Set once, at creation: finalizers and phases are the server's to change.
        ("", "Namespace") if old.is_none() => {
            meta_mut(obj)
                .entry("labels")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|l| l.insert("kubernetes.io/metadata.name".into(), json!(name)));
            if obj.pointer("/spec/finalizers").is_none() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
            obj["status"] = json!({"phase": "Active"});
        }
        ("", "Service") => {
            if !obj.get("spec").is_some_and(Value::is_object) {
                obj["spec"] = json!({});
            }
            let spec = &mut obj["spec"];
            if spec.get("type").is_none() {
                spec["type"] = json!("ClusterIP");
            }
            if spec.get("sessionAffinity").is_none() {
                spec["sessionAffinity"] = json!("None");
            }
            let external = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
            if let Some(old_spec) = old.and_then(|o| o.get("spec")).filter(|_| !external) {
                for k in ["clusterIP", "clusterIPs"] {
                    let unset = spec.get(k).is_none_or(|v| v.is_null() || v == "");
                    if let Some(v) = old_spec.get(k).filter(|_| unset) {
                        spec[k] = v.clone();
                    }
                }
            }
            if !external
                && spec
                    .get("clusterIP")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                let n = app.next_ip();
                spec["clusterIP"] = json!(format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff));
            }
            if let Some(ip) = spec.get("clusterIP").cloned() {
                if spec.get("clusterIPs").is_none() && !external {
                    spec["clusterIPs"] = json!([ip]);
                }
            }
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter(|p| p.is_object()) {
                    if p.get("protocol").is_none() {
                        p["protocol"] = json!("TCP");
                    }
                    if p.get("targetPort").is_none() {
                        if let Some(port) = p.get("port").cloned() {
                            p["targetPort"] = port;
                        }
                    }
                }
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") if old.is_none() => {
            let fins = meta_mut(obj)
                .entry("finalizers")
                .or_insert_with(|| json!([]));
            if let Some(a) = fins.as_array_mut() {
                if !a.iter().any(|f| f == CRD_CLEANUP) {
                    a.push(json!(CRD_CLEANUP));
                }
            }
        }
        // kube-aggregator's `SetDefaults_ServiceReference`.
        ("apiregistration.k8s.io", "APIService") => {
            if let Some(svc) = obj
                .pointer_mut("/spec/service")
                .and_then(Value::as_object_mut)
            {
                if svc.get("port").is_none_or(Value::is_null) {
                    svc.insert("port".into(), json!(443));
                }
            }
        }
        ("", "Pod") if old.is_none() && obj.get("status").is_none() => {
            obj["status"] = json!({"phase": "Pending"});
        }
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet")
            if obj.pointer("/spec/replicas").is_none() =>
        {
            if let Some(s) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                s.insert("replicas".into(), json!(1));
            }
        }
        _ => {}
    }
}

/// The status kube-apiserver's naming controller keeps on a CRD: accepted names,
/// stored versions, `NamesAccepted`. `Established` is the establishing controller's
/// (`controllers::crds`), written a moment after the create as on a real server, and
/// kept from then on; until then the CRD's kinds are not served (404).
pub(crate) fn crd_status(obj: &mut Value) {
    let now = meta::now_rfc3339();
    let established = established_condition(obj).cloned();
    let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none() {
        if let Some(k) = names.get("kind").and_then(Value::as_str) {
            accepted["singular"] = json!(k.to_lowercase());
        }
    }
    if accepted.get("listKind").is_none() {
        if let Some(k) = names.get("kind").and_then(Value::as_str) {
            accepted["listKind"] = json!(format!("{k}List"));
        }
    }
    let storage: Vec<Value> = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut conditions = vec![json!(
        {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
         "reason": "NoConflicts", "message": "no conflicts found"}
    )];
    conditions.extend(established);
    obj["status"] = json!({
        "acceptedNames": accepted,
        "storedVersions": storage,
        "conditions": conditions,
    });
}

/// Whether a stored CRD is `Established` (its kinds are served).
pub(crate) fn crd_established(obj: &Value) -> bool {
    established_condition(obj).is_some()
}

/// A CRD's `Established=True` condition, if it has one.
fn established_condition(obj: &Value) -> Option<&Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Established" && c["status"] == "True")
}

/// Marks a CRD `Established`, as the establishing controller does.
pub(crate) fn establish_crd(obj: &mut Value) {
    if crd_established(obj) {
        return;
    }
    let now = meta::now_rfc3339();
    let condition = json!(
        {"type": "Established", "status": "True", "lastTransitionTime": now,
         "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
    );
    match obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        Some(cs) => cs.push(condition),
        None => obj["status"]["conditions"] = json!([condition]),
    }
}

/// The finalizer through which a deleted CRD removes its custom resources.
pub(crate) const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Validates, normalises and shapes an incoming object as the server
/// stores it (the Go round trip for built-in kinds); returns the warnings
/// for the response.
pub(crate) fn admit(
    app: &App,
    rt: &ResourceType,
    schema: &Schema,
    obj: &mut Value,
    old: Option<&Value>,
    field_validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let mut warnings = Vec::new();
    check_decode(rt, schema, obj, field_validation, &mut warnings)?;
    normalize(rt, obj);
    // Go validation sees the decoded (round-tripped) object, defaulted.
    if rt.crd.is_none() && !schema.is_deduced() {
        typed::as_stored(schema, obj);
    }
    // kube-apiserver defaults every object it decodes, an update's and an apply's
    // result too: a field an applier stops setting that has a default gets it back.
    default_fields(app, rt, obj, old);
    check_rules(rt, schema, obj, old)?;
    Ok(warnings)
}
