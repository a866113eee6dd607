//! The hand-written rules of Kubernetes' Go validation that charts commonly
//! run into: metadata (label and annotation syntax and size), ConfigMap and
//! Secret keys and sizes, port ranges, and the fields that may not change
//! after creation. Messages are the real server's.

use super::FieldError;
use crate::schema::{Scalar, Schema, Ty};
use serde_json::Value;

/// `metadata.labels` / `metadata.annotations` rules.
pub(crate) fn metadata(obj: &Value, errs: &mut Vec<FieldError>) {
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            for msg in qualified_name(k) {
                errs.push(FieldError::invalid("metadata.labels", &json_str(k), &msg));
            }
            if let Some(v) = v.as_str() {
                for msg in label_value(v) {
                    errs.push(FieldError::invalid("metadata.labels", &json_str(v), &msg));
                }
            }
        }
    }
    if let Some(ann) = obj
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        let mut total = 0usize;
        for (k, v) in ann {
            for msg in qualified_name(&k.to_lowercase()) {
                errs.push(FieldError::invalid(
                    "metadata.annotations",
                    &json_str(k),
                    &msg,
                ));
            }
            total += k.len() + v.as_str().map(str::len).unwrap_or(0);
        }
        if total > TOTAL_ANNOTATION_BYTES {
            errs.push(FieldError::too_long(
                "metadata.annotations",
                TOTAL_ANNOTATION_BYTES,
            ));
        }
    }
}

const TOTAL_ANNOTATION_BYTES: usize = 256 * 1024;
/// ConfigMap and Secret payloads (`core.MaxSecretSize`).
const MAX_PAYLOAD_BYTES: usize = 1024 * 1024;

fn json_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

fn name_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsQualifiedName`: `[prefix/]name`.
fn qualified_name(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) if !n.contains('/') => (Some(p), n),
        Some(_) => {
            return vec![format!("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")];
        }
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else if let Err(m) = validate_subdomain(p) {
            errs.push(format!("prefix part {m}"));
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    } else if !name_part_ok(name) {
        errs.push(format!("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}')"));
    }
    errs
}

/// `validation.IsValidLabelValue`.
fn label_value(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".into());
    }
    if !v.is_empty() && !name_part_ok(v) {
        errs.push("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".into());
    }
    errs
}

/// `validation.IsConfigMapKey`.
fn config_key(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push("must be no more than 253 characters".into());
    }
    if k.is_empty()
        || !k
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".into());
    }
    if k == "." {
        errs.push("must not be '.'".into());
    } else if k == ".." {
        errs.push("must not be '..'".into());
    } else if k.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

fn decoded_len(v: &Value) -> usize {
    use base64::Engine as _;
    v.as_str()
        .map(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(|b| b.len())
                .unwrap_or(s.len())
        })
        .unwrap_or(0)
}

/// ConfigMap `data`/`binaryData` and Secret `data` keys and sizes.
pub(crate) fn payload(kind: &str, obj: &Value, errs: &mut Vec<FieldError>) {
    let mut total = 0usize;
    for field in ["data", "binaryData"] {
        if kind == "Secret" && field == "binaryData" {
            continue;
        }
        let Some(m) = obj.get(field).and_then(Value::as_object) else {
            continue;
        };
        for (k, v) in m {
            for msg in config_key(k) {
                errs.push(FieldError::invalid(
                    &format!("{field}[{k}]"),
                    &json_str(k),
                    &msg,
                ));
            }
            total += if kind == "Secret" || field == "binaryData" {
                decoded_len(v)
            } else {
                v.as_str().map(str::len).unwrap_or(0)
            };
        }
    }
    if total > MAX_PAYLOAD_BYTES {
        let path = if kind == "Secret" { "data" } else { "[]" };
        errs.push(FieldError::too_long(path, MAX_PAYLOAD_BYTES));
    }
}

fn port_range(path: &str, v: Option<&Value>, allow_zero: bool, errs: &mut Vec<FieldError>) {
    let Some(n) = v.and_then(Value::as_i64) else {
        return;
    };
    if allow_zero && n == 0 {
        return;
    }
    if !(1..=65535).contains(&n) {
        errs.push(FieldError::invalid(
            path,
            &n.to_string(),
            "must be between 1 and 65535, inclusive",
        ));
    }
}

/// The pod spec of a workload kind, with its field path.
fn pod_spec<'a>(kind: &str, obj: &'a Value) -> Option<(&'static str, &'a Value)> {
    let (prefix, pointer) = match kind {
        "Pod" => ("spec", "/spec"),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            ("spec.template.spec", "/spec/template/spec")
        }
        "CronJob" => (
            "spec.jobTemplate.spec.template.spec",
            "/spec/jobTemplate/spec/template/spec",
        ),
        _ => return None,
    };
    Some((prefix, obj.pointer(pointer)?))
}

/// The elements of a list field, with their field paths (`at.field[i]`).
fn items<'a>(at: &str, v: &'a Value, field: &str) -> Vec<(String, &'a Value)> {
    v.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| (format!("{at}.{field}[{i}]"), c))
        .collect()
}

/// Every container (init containers first) of a workload, with its path.
fn containers<'a>(kind: &str, obj: &'a Value) -> Vec<(String, &'a Value)> {
    let Some((prefix, spec)) = pod_spec(kind, obj) else {
        return Vec::new();
    };
    ["initContainers", "containers"]
        .iter()
        .flat_map(|list| items(prefix, spec, list))
        .collect()
}

/// Port numbers in a pod spec and in a Service.
pub(crate) fn ports(kind: &str, obj: &Value, errs: &mut Vec<FieldError>) {
    for (at, c) in containers(kind, obj) {
        for (at, p) in items(&at, c, "ports") {
            port_range(
                &format!("{at}.containerPort"),
                p.get("containerPort"),
                false,
                errs,
            );
            port_range(&format!("{at}.hostPort"), p.get("hostPort"), true, errs);
        }
    }
    if kind == "Service" {
        let Some(spec) = obj.get("spec") else { return };
        for (at, p) in items("spec", spec, "ports") {
            port_range(&format!("{at}.port"), p.get("port"), false, errs);
            if p.get("targetPort").is_some_and(Value::is_number) {
                port_range(
                    &format!("{at}.targetPort"),
                    p.get("targetPort"),
                    false,
                    errs,
                );
            }
        }
    }
}

/// Pull policies and restart policies: Go's `Unsupported value` checks.
pub(crate) fn enums(kind: &str, obj: &Value, errs: &mut Vec<FieldError>) {
    const PULL: &[&str] = &["Always", "IfNotPresent", "Never"];
    for (at, c) in containers(kind, obj) {
        if let Some(p) = c.get("imagePullPolicy").and_then(Value::as_str) {
            if !PULL.contains(&p) {
                errs.push(FieldError::unsupported(
                    &format!("{at}.imagePullPolicy"),
                    p,
                    PULL,
                ));
            }
        }
    }
    let Some((prefix, spec)) = pod_spec(kind, obj) else {
        return;
    };
    if let Some(p) = spec.get("restartPolicy").and_then(Value::as_str) {
        let allowed: &[&str] = match kind {
            "Job" | "CronJob" => &["OnFailure", "Never"],
            "Pod" => &["Always", "OnFailure", "Never"],
            _ => &["Always"],
        };
        if !allowed.contains(&p) {
            errs.push(FieldError::unsupported(
                &format!("{prefix}.restartPolicy"),
                p,
                allowed,
            ));
        }
    }
}

/// Fields the Go types require (non-optional in the OpenAPI definitions):
/// a missing or empty string, list or object is `Required value`, as Go
/// validation reports it. Numbers and booleans are left to their range
/// checks (a Go zero value is not "missing"), and status to controllers.
pub(crate) fn required(s: &Schema, obj: &Value, errs: &mut Vec<FieldError>) {
    fn rec(s: &Schema, ty: &Ty, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
        match ty {
            Ty::Obj(i) => {
                let o = s.obj(*i);
                let Value::Object(m) = v else { return };
                for (k, f) in &o.fields {
                    if path.is_empty() && matches!(k.as_str(), "status" | "metadata") {
                        continue;
                    }
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    match m.get(k) {
                        Some(c) if !missing(c) => rec(s, &f.ty, c, &p, errs),
                        _ if f.required && checked(&f.ty) => errs.push(FieldError::required(&p)),
                        _ => {}
                    }
                }
            }
            Ty::List { elem, .. } => {
                if let Value::Array(items) = v {
                    for (i, c) in items.iter().enumerate() {
                        rec(s, elem, c, &format!("{path}[{i}]"), errs);
                    }
                }
            }
            Ty::Map { elem, .. } => {
                if let Value::Object(m) = v {
                    for (k, c) in m {
                        rec(s, elem, c, &format!("{path}[{k}]"), errs);
                    }
                }
            }
            _ => {}
        }
    }
    fn missing(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => false,
        }
    }
    fn checked(ty: &Ty) -> bool {
        matches!(
            ty,
            Ty::Scalar(Scalar::String) | Ty::List { .. } | Ty::Obj(_)
        )
    }
    rec(s, &s.root_ty(), obj, "", errs);
}

/// Go's `%#v` of a label selector, as immutability errors print it.
fn go_selector(v: Option<&Value>) -> String {
    let labels = v
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .map(|m| {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", json_str(k), v))
                .collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        })
        .unwrap_or_else(|| "map[string]string(nil)".into());
    format!(
        "v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}"
    )
}

fn without(v: Option<&Value>, keep: &[&str]) -> Value {
    match v {
        Some(Value::Object(m)) => Value::Object(
            m.iter()
                .filter(|(k, _)| !keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// `spec.selector` of workloads and Jobs never changes.
fn selector_immutable(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let (o, n) = (old.pointer("/spec/selector"), new.pointer("/spec/selector"));
    if o.is_some() && o != n {
        errs.push(FieldError::invalid(
            "spec.selector",
            &go_selector(n),
            "field is immutable",
        ));
    }
}

/// Fields that may not change after creation.
pub(crate) fn immutable(kind: &str, old: &Value, new: &mut Value, errs: &mut Vec<FieldError>) {
    match kind {
        "Deployment" | "ReplicaSet" | "DaemonSet" => {
            selector_immutable(old, new, errs);
        }
        "StatefulSet" => {
            let keep = [
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ];
            if without(old.get("spec"), &keep) != without(new.get("spec"), &keep) {
                errs.push(FieldError::forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"));
            }
        }
        "Job" => {
            selector_immutable(old, new, errs);
            // Job templates are immutable except the scheduling directives
            // of a suspended Job; the whole template is compared here.
            let strip = |v: Option<&Value>| {
                let mut t = v.cloned().unwrap_or(Value::Null);
                if let Some(l) = t
                    .pointer_mut("/metadata/labels")
                    .and_then(Value::as_object_mut)
                {
                    l.retain(|k, _| !k.contains("controller-uid") && k != "job-name");
                }
                t
            };
            if strip(old.pointer("/spec/template")) != strip(new.pointer("/spec/template")) {
                errs.push(FieldError::invalid(
                    "spec.template",
                    "core.PodTemplateSpec{...}",
                    "field is immutable",
                ));
            }
        }
        "Service" => {
            let o = old
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .unwrap_or("");
            let n = new
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .unwrap_or("");
            if n.is_empty() && !o.is_empty() {
                // An update that leaves the allocated IP out keeps it.
                if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("clusterIP".into(), Value::String(o.into()));
                    if let Some(ips) = old.pointer("/spec/clusterIPs") {
                        spec.entry("clusterIPs").or_insert(ips.clone());
                    }
                }
            } else if !o.is_empty() && o != n && o != "None" {
                errs.push(FieldError::invalid(
                    "spec.clusterIPs[0]",
                    &format!("[]string{{{}}}", json_str(n)),
                    "may not change once set",
                ));
            }
        }
        "PersistentVolumeClaim" => {
            let strip = |v: Option<&Value>| {
                let mut s = v.cloned().unwrap_or(Value::Null);
                if let Some(m) = s.as_object_mut() {
                    m.remove("volumeAttributesClassName");
                    if let Some(r) = m.get_mut("resources").and_then(Value::as_object_mut) {
                        r.remove("requests");
                    }
                    // The binder fills these in.
                    m.remove("volumeName");
                }
                s
            };
            if strip(old.get("spec")) != strip(new.get("spec")) {
                errs.push(FieldError::forbidden("spec", "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"));
            }
        }
        _ => {}
    }
}

/// Checks a DNS-1123 subdomain (most object names); returns the reason on failure.
pub fn validate_subdomain(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err("must be no more than 253 characters".into());
    }
    let ok = !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        });
    if ok {
        Ok(())
    } else {
        Err(("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')").to_string())
    }
}

/// Checks a DNS-1123 label (namespaces, services).
pub fn validate_label(name: &str) -> Result<(), String> {
    if name.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    if name.contains('.') {
        return Err(("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')").to_string());
    }
    validate_subdomain(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_and_key_syntax() {
        assert!(label_value("ok-1.2_3").is_empty());
        assert!(label_value("").is_empty());
        assert_eq!(label_value("bad value").len(), 1);
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert_eq!(qualified_name("bad key"), vec!["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()]);
        assert!(config_key("a.b_C-1").is_empty());
        assert_eq!(config_key("..x").len(), 1);
    }

    #[test]
    fn object_names() {
        assert!(validate_subdomain("a.b-c").is_ok());
        assert!(validate_subdomain("A").is_err());
        assert!(validate_subdomain("-a").is_err());
        assert!(validate_label("a.b").is_err());
    }

    #[test]
    fn service_port_range() {
        let mut errs = Vec::new();
        ports(
            "Service",
            &json!({"spec": {"ports": [{"port": 70000}]}}),
            &mut errs,
        );
        assert_eq!(
            errs[0].to_string(),
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
    }
}
