//! The columns of Kubernetes' own printers for the built-in kinds
//! (`kubectl get pods`, `-o wide`), and the cells computed from each
//! object, as kube-apiserver's table convertors print them.

use super::{col_json, describe, human_duration, parse_rfc3339, s, CellsOf, Col, Columns, NAME};
use crate::ResourceType;
use serde_json::{json, Map, Value};

const fn c(name: &'static str, kind: &'static str) -> Col {
    Col {
        name,
        kind,
        format: "",
        priority: 0,
    }
}

const fn wide(name: &'static str, kind: &'static str) -> Col {
    Col {
        name,
        kind,
        format: "",
        priority: 1,
    }
}

/// The printer of a built-in kind: Kubernetes' own columns, or NAME and
/// AGE for kinds it has none for.
pub(super) fn printer(rt: &ResourceType) -> Columns {
    let (cols, f): (Vec<Col>, CellsOf) = match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Pod") => (
            vec![
                NAME,
                c("Ready", "string"),
                c("Status", "string"),
                c("Restarts", "string"),
                c("Age", "string"),
                wide("IP", "string"),
                wide("Node", "string"),
                wide("Nominated Node", "string"),
                wide("Readiness Gates", "string"),
            ],
            pod_cells,
        ),
        ("apps", "Deployment") => (
            vec![
                NAME,
                c("Ready", "string"),
                c("Up-to-date", "integer"),
                c("Available", "integer"),
                c("Age", "string"),
                wide("Containers", "string"),
                wide("Images", "string"),
                wide("Selector", "string"),
            ],
            deployment_cells,
        ),
        ("apps", "ReplicaSet") => (
            vec![
                NAME,
                c("Desired", "integer"),
                c("Current", "integer"),
                c("Ready", "integer"),
                c("Age", "string"),
                wide("Containers", "string"),
                wide("Images", "string"),
                wide("Selector", "string"),
            ],
            replicaset_cells,
        ),
        ("apps", "StatefulSet") => (
            vec![
                NAME,
                c("Ready", "string"),
                c("Age", "string"),
                wide("Containers", "string"),
                wide("Images", "string"),
            ],
            statefulset_cells,
        ),
        ("apps", "DaemonSet") => (
            vec![
                NAME,
                c("Desired", "integer"),
                c("Current", "integer"),
                c("Ready", "integer"),
                c("Up-to-date", "integer"),
                c("Available", "integer"),
                c("Node Selector", "string"),
                c("Age", "string"),
                wide("Containers", "string"),
                wide("Images", "string"),
                wide("Selector", "string"),
            ],
            daemonset_cells,
        ),
        ("batch", "Job") => (
            vec![
                NAME,
                c("Status", "string"),
                c("Completions", "string"),
                c("Duration", "string"),
                c("Age", "string"),
                wide("Containers", "string"),
                wide("Images", "string"),
                wide("Selector", "string"),
            ],
            job_cells,
        ),
        ("batch", "CronJob") => (
            vec![
                NAME,
                c("Schedule", "string"),
                c("Timezone", "string"),
                c("Suspend", "boolean"),
                c("Active", "integer"),
                c("Last Schedule", "string"),
                c("Age", "string"),
                wide("Containers", "string"),
                wide("Images", "string"),
                wide("Selector", "string"),
            ],
            cronjob_cells,
        ),
        ("", "Service") => (
            vec![
                NAME,
                c("Type", "string"),
                c("Cluster-IP", "string"),
                c("External-IP", "string"),
                c("Port(s)", "string"),
                c("Age", "string"),
                wide("Selector", "string"),
            ],
            service_cells,
        ),
        ("networking.k8s.io", "Ingress") => (
            vec![
                NAME,
                c("Class", "string"),
                c("Hosts", "string"),
                c("Address", "string"),
                c("Ports", "string"),
                c("Age", "string"),
            ],
            ingress_cells,
        ),
        ("", "ConfigMap") => (
            vec![NAME, c("Data", "string"), c("Age", "string")],
            configmap_cells,
        ),
        ("", "Secret") => (
            vec![
                NAME,
                c("Type", "string"),
                c("Data", "string"),
                c("Age", "string"),
            ],
            secret_cells,
        ),
        ("", "Namespace") => (
            vec![NAME, c("Status", "string"), c("Age", "string")],
            namespace_cells,
        ),
        ("", "ServiceAccount") => (
            vec![NAME, c("Secrets", "string"), c("Age", "string")],
            serviceaccount_cells,
        ),
        ("", "PersistentVolumeClaim") => (
            vec![
                NAME,
                c("Status", "string"),
                c("Volume", "string"),
                c("Capacity", "string"),
                c("Access Modes", "string"),
                c("StorageClass", "string"),
                c("VolumeAttributesClass", "string"),
                c("Age", "string"),
                wide("VolumeMode", "string"),
            ],
            pvc_cells,
        ),
        ("", "Endpoints") => (
            vec![NAME, c("Endpoints", "string"), c("Age", "string")],
            endpoints_cells,
        ),
        ("apiregistration.k8s.io", "APIService") => (
            vec![
                NAME,
                c("Service", "string"),
                c("Available", "string"),
                c("Age", "string"),
            ],
            apiservice_cells,
        ),
        ("coordination.k8s.io", "Lease") => (
            vec![NAME, c("Holder", "string"), c("Age", "string")],
            lease_cells,
        ),
        ("apiextensions.k8s.io", "CustomResourceDefinition")
        | ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => (
            vec![
                NAME,
                Col {
                    name: "Created At",
                    kind: "date",
                    format: "",
                    priority: 0,
                },
            ],
            created_at_cells,
        ),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => (
            vec![
                NAME,
                c("Role", "string"),
                c("Age", "string"),
                wide("Users", "string"),
                wide("Groups", "string"),
                wide("ServiceAccounts", "string"),
            ],
            rolebinding_cells,
        ),
        ("policy", "PodDisruptionBudget") => (
            vec![
                NAME,
                c("Min Available", "string"),
                c("Max Unavailable", "string"),
                c("Allowed Disruptions", "integer"),
                c("Age", "string"),
            ],
            pdb_cells,
        ),
        ("" | "events.k8s.io", "Event") => (
            vec![
                c("Last Seen", "string"),
                c("Type", "string"),
                c("Reason", "string"),
                c("Object", "string"),
                c("Message", "string"),
                wide("Subobject", "string"),
                wide("Source", "string"),
                wide("First Seen", "string"),
                wide("Count", "string"),
                wide("Name", "string"),
            ],
            event_cells,
        ),
        _ => (vec![NAME, c("Age", "string")], name_age_cells),
    };
    Columns {
        definitions: cols
            .iter()
            .map(|c| {
                col_json(
                    c.name,
                    c.kind,
                    c.format,
                    u64::from(c.priority),
                    &describe(c.name),
                )
            })
            .collect(),
        cells: f,
    }
}

fn n(obj: &Value, ptr: &str) -> i64 {
    obj.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn or_none(v: String) -> String {
    if v.is_empty() {
        "<none>".into()
    } else {
        v
    }
}

fn age(obj: &Value, now: u64) -> Value {
    since(s(obj, "/metadata/creationTimestamp"), now)
}

fn since(ts: &str, now: u64) -> Value {
    match parse_rfc3339(ts) {
        Some(t) => json!(human_duration(now as i64 - t as i64)),
        None => json!("<unknown>"),
    }
}

fn name(obj: &Value) -> Value {
    json!(s(obj, "/metadata/name"))
}

fn name_age_cells(obj: &Value, now: u64) -> Vec<Value> {
    vec![name(obj), age(obj, now)]
}

fn created_at_cells(obj: &Value, _now: u64) -> Vec<Value> {
    vec![name(obj), json!(s(obj, "/metadata/creationTimestamp"))]
}

fn containers_images(obj: &Value, tmpl: &str) -> (Value, Value) {
    let cs = obj
        .pointer(tmpl)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = cs
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or_default())
        .collect();
    let images: Vec<&str> = cs
        .iter()
        .map(|c| c.get("image").and_then(Value::as_str).unwrap_or_default())
        .collect();
    (json!(names.join(",")), json!(images.join(",")))
}

fn selector_string(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return "<none>".into();
    };
    let mut parts = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let vals: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => parts.push(format!("{key} in ({})", vals.join(","))),
                Some("NotIn") => parts.push(format!("{key} notin ({})", vals.join(","))),
                Some("Exists") => parts.push(key.to_string()),
                Some("DoesNotExist") => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    or_none(parts.join(","))
}

fn map_string(m: Option<&Value>) -> String {
    or_none(
        m.and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
    )
}

fn pod_cells(obj: &Value, now: u64) -> Vec<Value> {
    let total = obj
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = obj
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses.iter().map(|c| n(c, "/restartCount")).sum();
    let mut reason = s(obj, "/status/reason").to_string();
    if reason.is_empty() {
        reason = s(obj, "/status/phase").to_string();
    }
    for c in &statuses {
        let w = s(c, "/state/waiting/reason");
        let t = s(c, "/state/terminated/reason");
        if !w.is_empty() {
            reason = w.to_string();
        } else if !t.is_empty() && reason != "Running" {
            reason = t.to_string();
        }
    }
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    if reason.is_empty() {
        reason = "Pending".into();
    }
    let ip = or_none(s(obj, "/status/podIP").to_string());
    let node = or_none(s(obj, "/spec/nodeName").to_string());
    let nominated = or_none(s(obj, "/status/nominatedNodeName").to_string());
    vec![
        name(obj),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        age(obj, now),
        json!(ip),
        json!(node),
        json!(nominated),
        json!("<none>"),
    ]
}

fn deployment_cells(obj: &Value, now: u64) -> Vec<Value> {
    let desired = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let (cs, is) = containers_images(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(format!("{}/{desired}", n(obj, "/status/readyReplicas"))),
        json!(n(obj, "/status/updatedReplicas")),
        json!(n(obj, "/status/availableReplicas")),
        age(obj, now),
        cs,
        is,
        json!(selector_string(obj.pointer("/spec/selector"))),
    ]
}

fn replicaset_cells(obj: &Value, now: u64) -> Vec<Value> {
    let (cs, is) = containers_images(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(obj
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)),
        json!(n(obj, "/status/replicas")),
        json!(n(obj, "/status/readyReplicas")),
        age(obj, now),
        cs,
        is,
        json!(selector_string(obj.pointer("/spec/selector"))),
    ]
}

fn statefulset_cells(obj: &Value, now: u64) -> Vec<Value> {
    let (cs, is) = containers_images(obj, "/spec/template/spec/containers");
    let desired = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    vec![
        name(obj),
        json!(format!("{}/{desired}", n(obj, "/status/readyReplicas"))),
        age(obj, now),
        cs,
        is,
    ]
}

fn daemonset_cells(obj: &Value, now: u64) -> Vec<Value> {
    let (cs, is) = containers_images(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(n(obj, "/status/desiredNumberScheduled")),
        json!(n(obj, "/status/currentNumberScheduled")),
        json!(n(obj, "/status/numberReady")),
        json!(n(obj, "/status/updatedNumberScheduled")),
        json!(n(obj, "/status/numberAvailable")),
        json!(map_string(obj.pointer("/spec/template/spec/nodeSelector"))),
        age(obj, now),
        cs,
        is,
        json!(selector_string(obj.pointer("/spec/selector"))),
    ]
}

fn condition_true(obj: &Value, t: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(t)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

fn job_cells(obj: &Value, now: u64) -> Vec<Value> {
    let succeeded = n(obj, "/status/succeeded");
    let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let p = obj
                .pointer("/spec/parallelism")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            if p > 1 {
                format!("{succeeded}/1 of {p}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let status = if condition_true(obj, "Complete") {
        "Complete"
    } else if condition_true(obj, "Failed") {
        "Failed"
    } else if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if condition_true(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else if condition_true(obj, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(obj, "Suspended") {
        "Suspended"
    } else {
        "Running"
    };
    let start = parse_rfc3339(s(obj, "/status/startTime"));
    let end = parse_rfc3339(s(obj, "/status/completionTime"));
    let duration = match (start, end) {
        (Some(a), Some(b)) => human_duration(b as i64 - a as i64),
        (Some(a), None) => human_duration(now as i64 - a as i64),
        _ => String::new(),
    };
    let (cs, is) = containers_images(obj, "/spec/template/spec/containers");
    vec![
        name(obj),
        json!(status),
        json!(completions),
        json!(duration),
        age(obj, now),
        cs,
        is,
        json!(selector_string(obj.pointer("/spec/selector"))),
    ]
}

fn cronjob_cells(obj: &Value, now: u64) -> Vec<Value> {
    let (cs, is) = containers_images(obj, "/spec/jobTemplate/spec/template/spec/containers");
    let last = match s(obj, "/status/lastScheduleTime") {
        "" => json!("<none>"),
        t => since(t, now),
    };
    vec![
        name(obj),
        json!(s(obj, "/spec/schedule")),
        json!(or_none(s(obj, "/spec/timeZone").to_string())),
        json!(obj
            .pointer("/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
        json!(obj
            .pointer("/status/active")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)),
        last,
        age(obj, now),
        cs,
        is,
        json!(selector_string(
            obj.pointer("/spec/jobTemplate/spec/selector")
        )),
    ]
}

fn service_cells(obj: &Value, now: u64) -> Vec<Value> {
    let ty = match s(obj, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = or_none(s(obj, "/spec/clusterIP").to_string());
    let lb: Vec<String> = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    i.get("ip")
                        .or_else(|| i.get("hostname"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    let external: Vec<String> = obj
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let external_ip = match ty {
        "ExternalName" => s(obj, "/spec/externalName").to_string(),
        "LoadBalancer" => {
            let all: Vec<String> = lb.into_iter().chain(external).collect();
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        _ => or_none(external.join(",")),
    };
    let ports: Vec<String> = obj
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|p| {
                    let proto = match s(p, "/protocol") {
                        "" => "TCP",
                        x => x,
                    };
                    match p.get("nodePort").and_then(Value::as_i64) {
                        Some(np) if np > 0 => format!("{}:{np}/{proto}", n(p, "/port")),
                        _ => format!("{}/{proto}", n(p, "/port")),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    vec![
        name(obj),
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(or_none(ports.join(","))),
        age(obj, now),
        json!(map_string(obj.pointer("/spec/selector"))),
    ]
}

fn ingress_cells(obj: &Value, now: u64) -> Vec<Value> {
    let rules = obj
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let hosts: Vec<&str> = rules
        .iter()
        .filter_map(|r| r.get("host").and_then(Value::as_str))
        .collect();
    let address: Vec<&str> = obj
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    i.get("ip")
                        .or_else(|| i.get("hostname"))
                        .and_then(Value::as_str)
                })
                .collect()
        })
        .unwrap_or_default();
    let tls = obj
        .pointer("/spec/tls")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    vec![
        name(obj),
        json!(or_none(s(obj, "/spec/ingressClassName").to_string())),
        json!(if hosts.is_empty() {
            "*".to_string()
        } else {
            hosts.join(",")
        }),
        json!(address.join(",")),
        json!(if tls { "80, 443" } else { "80" }),
        age(obj, now),
    ]
}

fn count_keys(obj: &Value, fields: &[&str]) -> usize {
    fields
        .iter()
        .filter_map(|f| obj.get(*f).and_then(Value::as_object))
        .map(Map::len)
        .sum()
}

fn configmap_cells(obj: &Value, now: u64) -> Vec<Value> {
    vec![
        name(obj),
        json!(count_keys(obj, &["data", "binaryData"])),
        age(obj, now),
    ]
}

fn secret_cells(obj: &Value, now: u64) -> Vec<Value> {
    vec![
        name(obj),
        json!(match s(obj, "/type") {
            "" => "Opaque",
            t => t,
        }),
        json!(count_keys(obj, &["data", "stringData"])),
        age(obj, now),
    ]
}

/// kube-aggregator's own printer: the Service as `namespace/name` (or
/// `Local`) and the `Available` condition with its reason when not True.
fn apiservice_cells(obj: &Value, now: u64) -> Vec<Value> {
    let service = match obj.pointer("/spec/service").filter(|v| v.is_object()) {
        Some(svc) => format!("{}/{}", s(svc, "/namespace"), s(svc, "/name")),
        None => "Local".to_string(),
    };
    let available = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .map(|c| match (s(c, "/status"), s(c, "/reason")) {
            ("True", _) => "True".to_string(),
            (status, "") => status.to_string(),
            (status, reason) => format!("{status} ({reason})"),
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![name(obj), json!(service), json!(available), age(obj, now)]
}

fn namespace_cells(obj: &Value, now: u64) -> Vec<Value> {
    vec![
        name(obj),
        json!(match s(obj, "/status/phase") {
            "" => "Active",
            p => p,
        }),
        age(obj, now),
    ]
}

fn serviceaccount_cells(obj: &Value, now: u64) -> Vec<Value> {
    vec![
        name(obj),
        json!(obj
            .get("secrets")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)),
        age(obj, now),
    ]
}

fn pvc_cells(obj: &Value, now: u64) -> Vec<Value> {
    let phase = if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        s(obj, "/status/phase")
    };
    let modes: Vec<&str> = obj
        .pointer("/status/accessModes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|m| match m {
                    "ReadWriteOnce" => "RWO",
                    "ReadOnlyMany" => "ROX",
                    "ReadWriteMany" => "RWX",
                    "ReadWriteOncePod" => "RWOP",
                    other => other,
                })
                .collect()
        })
        .unwrap_or_default();
    vec![
        name(obj),
        json!(phase),
        json!(s(obj, "/spec/volumeName")),
        json!(s(obj, "/status/capacity/storage")),
        json!(modes.join(",")),
        json!(or_none(s(obj, "/spec/storageClassName").to_string())),
        json!(or_none(
            s(obj, "/spec/volumeAttributesClassName").to_string()
        )),
        age(obj, now),
        json!(match s(obj, "/spec/volumeMode") {
            "" => "Filesystem",
            m => m,
        }),
    ]
}

fn endpoints_cells(obj: &Value, now: u64) -> Vec<Value> {
    let mut eps = Vec::new();
    for subset in obj
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let ports: Vec<i64> = subset
            .get("ports")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|p| n(p, "/port")).collect())
            .unwrap_or_default();
        for a in subset
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ip = s(a, "/ip");
            if ports.is_empty() {
                eps.push(ip.to_string());
            }
            for p in &ports {
                eps.push(format!("{ip}:{p}"));
            }
        }
    }
    let shown = if eps.len() > 3 {
        format!("{} + {} more...", eps[..3].join(","), eps.len() - 3)
    } else {
        or_none(eps.join(","))
    };
    vec![name(obj), json!(shown), age(obj, now)]
}

fn lease_cells(obj: &Value, now: u64) -> Vec<Value> {
    vec![
        name(obj),
        json!(s(obj, "/spec/holderIdentity")),
        age(obj, now),
    ]
}

fn rolebinding_cells(obj: &Value, now: u64) -> Vec<Value> {
    let subjects = obj
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let of = |k: &str| -> String {
        subjects
            .iter()
            .filter(|s| s.get("kind").and_then(Value::as_str) == Some(k))
            .map(|x| {
                let nm = s(x, "/name");
                match (k, s(x, "/namespace")) {
                    ("ServiceAccount", ns) if !ns.is_empty() => format!("{ns}/{nm}"),
                    _ => nm.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        name(obj),
        json!(format!(
            "{}/{}",
            s(obj, "/roleRef/kind"),
            s(obj, "/roleRef/name")
        )),
        age(obj, now),
        json!(of("User")),
        json!(of("Group")),
        json!(of("ServiceAccount")),
    ]
}

fn pdb_cells(obj: &Value, now: u64) -> Vec<Value> {
    let show = |p: &str| match obj.pointer(p) {
        Some(Value::String(x)) => x.clone(),
        Some(Value::Number(x)) => x.to_string(),
        _ => "N/A".into(),
    };
    vec![
        name(obj),
        json!(show("/spec/minAvailable")),
        json!(show("/spec/maxUnavailable")),
        json!(n(obj, "/status/disruptionsAllowed")),
        age(obj, now),
    ]
}

/// Event cells, from either API shape (core/v1 or events.k8s.io/v1).
fn event_cells(obj: &Value, now: u64) -> Vec<Value> {
    let core = obj.get("involvedObject").is_some();
    let (target, message, count, first, last, source) = if core {
        let comp = match s(obj, "/source/component") {
            "" => s(obj, "/reportingComponent"),
            c => c,
        };
        let host = s(obj, "/source/host");
        (
            obj.get("involvedObject"),
            s(obj, "/message"),
            n(obj, "/count"),
            s(obj, "/firstTimestamp"),
            s(obj, "/lastTimestamp"),
            if host.is_empty() {
                comp.to_string()
            } else {
                format!("{comp}, {host}")
            },
        )
    } else {
        (
            obj.get("regarding"),
            s(obj, "/note"),
            n(obj, "/deprecatedCount"),
            s(obj, "/deprecatedFirstTimestamp"),
            s(obj, "/deprecatedLastTimestamp"),
            s(obj, "/reportingController").to_string(),
        )
    };
    let event_time = s(obj, "/eventTime");
    let series_last = s(obj, "/series/lastObservedTime");
    let last_seen = if !series_last.is_empty() {
        since(series_last, now)
    } else if count > 1 && !last.is_empty() {
        since(last, now)
    } else if !event_time.is_empty() {
        since(event_time, now)
    } else if !last.is_empty() {
        since(last, now)
    } else {
        age(obj, now)
    };
    let first_seen = if !first.is_empty() {
        since(first, now)
    } else if !event_time.is_empty() {
        since(event_time, now)
    } else {
        age(obj, now)
    };
    let target = target.cloned().unwrap_or_default();
    let kind = s(&target, "/kind").to_lowercase();
    let object = format!("{kind}/{}", s(&target, "/name"));
    let count = if count == 0 {
        obj.pointer("/series/count")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    } else {
        count
    };
    vec![
        last_seen,
        json!(match s(obj, "/type") {
            "" => "Normal",
            t => t,
        }),
        json!(s(obj, "/reason")),
        json!(object),
        json!(message.trim()),
        json!(s(&target, "/fieldPath")),
        json!(source),
        first_seen,
        json!(count.to_string()),
        name(obj),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_row() {
        let d = json!({"metadata": {"name": "web", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}});
        let cells = deployment_cells(&d, 1_577_836_800 + 90);
        assert_eq!(cells[0], json!("web"));
        assert_eq!(cells[1], json!("1/2"));
        assert_eq!(cells[2], json!(2));
        assert_eq!(cells[4], json!("90s"));
        assert_eq!(cells[7], json!("app=web"));
    }
}
