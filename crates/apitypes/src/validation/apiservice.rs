//! kube-aggregator's validation of an `APIService`
//! (`apiregistration/validation.ValidateAPIService`): its name is
//! `version.group`, the group and version are DNS names, the priorities in
//! range, and a Service reference complete; a local APIService has no TLS
//! settings.

use super::rules::validate_subdomain;
use super::FieldError;
use serde_json::Value;

const DNS1035_LABEL: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        errs.push(DNS1035_LABEL.to_string());
    }
    errs
}

pub(crate) fn validate(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or_default();
    let (group, version) = (text("group"), text("version"));
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let required = format!("{version}.{group}");
    if name != required {
        errs.push(FieldError::invalid(
            "metadata.name",
            &format!("{name:?}"),
            &format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(FieldError {
            field: "spec.group".into(),
            reason: "FieldValueRequired",
            body: "Required value: only v1 may have an empty group and it better be legacy kube"
                .into(),
        });
    }
    if !group.is_empty() {
        if let Err(msg) = validate_subdomain(group) {
            errs.push(FieldError::invalid(
                "spec.group",
                &format!("{group:?}"),
                &msg,
            ));
        }
    }
    for msg in dns1035_label(version) {
        errs.push(FieldError::invalid(
            "spec.version",
            &format!("{version:?}"),
            &msg,
        ));
    }
    let int = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or_default();
    let group_priority = int("groupPriorityMinimum");
    if !(1..=20000).contains(&group_priority) {
        errs.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            &group_priority.to_string(),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int("versionPriority");
    if !(1..=1000).contains(&version_priority) {
        errs.push(FieldError::invalid(
            "spec.versionPriority",
            &version_priority.to_string(),
            "must be positive and less than 1000",
        ));
    }
    // The Go type holds the CA as bytes: its length is the decoded one.
    let ca_len = spec
        .get("caBundle")
        .and_then(Value::as_str)
        .map(decoded_len)
        .unwrap_or_default();
    let insecure = spec
        .get("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or_default();
    let Some(service) = spec.get("service").filter(|s| s.is_object()) else {
        if ca_len != 0 {
            errs.push(FieldError::invalid(
                "spec.caBundle",
                &format!("\"{ca_len} bytes\""),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                "true",
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return;
    };
    for field in ["namespace", "name"] {
        if service
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
        {
            errs.push(FieldError::required(&format!("spec.service.{field}")));
        }
    }
    if insecure && ca_len > 0 {
        errs.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            "true",
            "may not be true if caBundle is present",
        ));
    }
}

fn decoded_len(b64: &str) -> usize {
    let n = b64.trim_end_matches('=').len();
    n * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(obj: Value) -> Vec<String> {
        let mut errs = Vec::new();
        validate(&obj, &mut errs);
        errs.iter().map(ToString::to_string).collect()
    }

    fn apiservice(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn a_complete_apiservice_is_valid() {
        let spec = json!({"group": "custom.metrics.k8s.io", "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100, "insecureSkipTLSVerify": true,
            "service": {"name": "adapter", "namespace": "monitoring", "port": 443}});
        assert!(errors(apiservice("v1beta1.custom.metrics.k8s.io", spec)).is_empty());
        let local = json!({"group": "apps", "version": "v1",
            "groupPriorityMinimum": 17800, "versionPriority": 15});
        assert!(errors(apiservice("v1.apps", local)).is_empty());
    }

    #[test]
    fn kube_aggregators_messages() {
        let spec = json!({"group": "metrics.example.com", "version": "V1",
            "groupPriorityMinimum": 0, "versionPriority": 1001,
            "service": {"namespace": "", "port": 443}});
        assert_eq!(
            errors(apiservice("metrics", spec)),
            [
                "metadata.name: Invalid value: \"metrics\": must be `spec.version+\".\"+spec.group`: \"V1.metrics.example.com\"",
                "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
            ]
        );
        let local = json!({"version": "v1beta1", "groupPriorityMinimum": 1,
            "versionPriority": 1, "caBundle": "YWJjZA==", "insecureSkipTLSVerify": true});
        assert_eq!(
            errors(apiservice("v1beta1.", local)),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.caBundle: Invalid value: \"4 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
    }
}
