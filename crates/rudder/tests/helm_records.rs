//! The release records `rudder` writes are the ones the real `helm` v4 CLI writes for
//! the same install and upgrade, with both of Helm's drivers (`HELM_DRIVER` secret and
//! configmap): the same objects (name, type, labels, annotations) holding the same
//! release JSON, field by field, timestamps aside — also for a chart that sets every
//! `Chart.yaml` field Helm records, with a lock file and dependencies Helm's processing
//! rewrites (`tests/fixtures/metadata`). And each tool reads the other's
//! records as it reads its own: `helm get values|manifest|notes|hooks|metadata|all`,
//! `helm status|history|list -A` print the same for rudder's release as for Helm's,
//! and so do `rudder get values|manifest|notes|hooks|metadata|all`,
//! `rudder status|history|list` for Helm's — JSON with Helm's keys in Helm's order.
//! `status` lists the release's live objects as Helm does: the server's tables in
//! the text output, the objects themselves (and the related Pods) in JSON and YAML.
//!
//! Runs against `rudder apiserver`, or the cluster `RUDDER_TEST_KUBECONFIG` names;
//! skips (with a message) without helm or kubectl. With a helm CLI older than 4.2,
//! manifests are compared in Helm 4.1's layout (see `interop::helm_4_1_layout`):
//! rudder keeps Helm 4.2's.

mod interop;

use std::io::Read;

use base64::Engine;
use interop::{chart, path_str, state_file, Cluster, Namespace, Tool};
use serde_json::{json, Map, Value};

use Tool::{Helm, Rudder};

const RELEASE: &str = "rec";

/// Keys whose values are times (in records, labels and every `-o json` output).
const TIME_KEYS: &[&str] = &[
    "first_deployed",
    "last_deployed",
    "deleted",
    "started_at",
    "completed_at",
    "updated",
    "deployedAt",
    "createdAt",
    "modifiedAt",
];

/// Times Helm v4 records that rudder leaves out: the chart files' modification times
/// as loaded (`chart.modtime`, `templates[].modtime`, `files[].modtime`). They are
/// dropped on both sides; everything else must match, presence included.
const UNRECORDED_TIMES: &[&str] = &["modtime"];

/// `v` with times replaced by a marker (kept empty where they are empty, so a time
/// one tool sets and the other leaves out still differs) and the namespace `ns` by
/// `<ns>` wherever it appears.
fn normalized(v: &Value, ns: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !UNRECORDED_TIMES.contains(&k.as_str()))
                .map(|(k, v)| {
                    let v = if TIME_KEYS.contains(&k.as_str()) && !is_empty(v) {
                        json!("<time>")
                    } else {
                        normalized(v, ns)
                    };
                    (k.clone(), v)
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| normalized(v, ns)).collect()),
        Value::String(s) if interop::helm_has_4_1_layout() => {
            Value::String(interop::helm_4_1_layout(&s.replace(ns, "<ns>")))
        }
        Value::String(s) => Value::String(s.replace(ns, "<ns>")),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    v.is_null() || v == "" || v == "0001-01-01T00:00:00Z"
}

/// The release JSON inside a record's `release` field (base64 of gzipped JSON).
fn release_json(encoded: &str) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let gz = b64.decode(encoded.trim()).expect("release is base64");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .expect("release is gzipped");
    serde_json::from_str(&text).expect("release is JSON")
}

/// One stored record: the object's name, type, labels and annotations, and the
/// decoded release, normalized.
fn records(ns: &Namespace<'_>, driver: &str) -> Vec<Value> {
    let kind = if driver == "configmap" {
        "configmaps"
    } else {
        "secrets"
    };
    let mut out: Vec<Value> = ns
        .items(kind, Some("owner=helm"))
        .into_iter()
        .map(|o| {
            let field = &o["data"]["release"];
            let encoded = if kind == "secrets" {
                // Secret data is base64 once more on the wire.
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(field.as_str().unwrap_or_default())
                    .expect("Secret data is base64");
                String::from_utf8(raw).expect("release text")
            } else {
                field.as_str().unwrap_or_default().to_string()
            };
            let data_keys: Vec<&String> = o["data"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .collect();
            let record = json!({
                "name": o["metadata"]["name"],
                "type": o.get("type"),
                "labels": o["metadata"]["labels"],
                "annotations": o["metadata"].get("annotations"),
                "immutable": o.get("immutable"),
                "dataKeys": data_keys,
                "release": release_json(&encoded),
            });
            normalized(&record, &ns.name)
        })
        .collect();
    out.sort_by_key(|r| r["name"].as_str().unwrap_or_default().to_string());
    out
}

/// Installs state A and upgrades to state B with `tool`, keeping records with `driver`.
fn install_and_upgrade(ns: &Namespace<'_>, tool: Tool, driver: &str) {
    let chart = chart();
    for (verb, state) in [("install", 'a'), ("upgrade", 'b')] {
        let file = state_file(state);
        ns.ok(tool, Some(driver), &[verb, RELEASE, &chart, "-f", &file]);
    }
}

/// Field-by-field differences between two JSON values, as `path: left != right`.
fn differences(path: &str, left: &Value, right: &Value, out: &mut Vec<String>) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            let keys: std::collections::BTreeSet<&String> = l.keys().chain(r.keys()).collect();
            for k in keys {
                let (a, b) = (
                    l.get(k).unwrap_or(&Value::Null),
                    r.get(k).unwrap_or(&Value::Null),
                );
                if l.contains_key(k) != r.contains_key(k) {
                    out.push(format!("{path}/{k}: {a} != {b} (present only on one side)"));
                } else {
                    differences(&format!("{path}/{k}"), a, b, out);
                }
            }
        }
        (Value::Array(l), Value::Array(r)) if l.len() == r.len() => {
            for (i, (a, b)) in l.iter().zip(r).enumerate() {
                differences(&format!("{path}/{i}"), a, b, out);
            }
        }
        _ if left != right => out.push(format!("{path}: {left} != {right}")),
        _ => {}
    }
}

fn assert_same(what: &str, rudder: &Value, helm: &Value) {
    let mut diffs = Vec::new();
    differences("", rudder, helm, &mut diffs);
    assert!(
        diffs.is_empty(),
        "{what}: rudder's differs from helm's (left: rudder, right: helm):\n  {}",
        diffs.join("\n  ")
    );
}

/// What `reader` prints for `args` about the release in `ns`: JSON parsed (or text
/// as a string), normalized.
fn read(ns: &Namespace<'_>, reader: Tool, driver: &str, args: &[&str]) -> Value {
    let out = ns.ok(reader, Some(driver), args);
    let mut v = serde_json::from_str(&out).unwrap_or_else(|_| Value::String(untimed(&out)));
    // `status` shows the live objects too: what the server assigned (uids, versions,
    // pod names) is the cluster's, not the record's.
    if let Some(info) = v.get_mut("info").and_then(Value::as_object_mut) {
        info.remove("resources");
    }
    normalized(&v, &ns.name)
}

/// Text output with its times marked: the time lines (`LAST DEPLOYED: …`,
/// `DEPLOYED_AT: …`) and the record's time labels in `LABELS: …`.
fn untimed(text: &str) -> String {
    text.lines()
        .map(|l| match l.split_once(": ") {
            Some((key @ ("LAST DEPLOYED" | "DEPLOYED_AT"), _)) => format!("{key}: <time>"),
            Some(("LABELS", labels)) => {
                let pairs: Vec<String> = labels
                    .split(',')
                    .map(|p| match p.split_once('=') {
                        Some((k, _)) if TIME_KEYS.contains(&k) => format!("{k}=<time>"),
                        _ => p.to_string(),
                    })
                    .collect();
                format!("LABELS: {}", pairs.join(","))
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The object keys of JSON `text` in the order they are written, down to `depth`
/// levels of nesting, leaving out the key `skip` and everything under it: Helm
/// encodes structs in their fields' order, and a reader may rely on it.
fn key_order(text: &str, depth: usize, skip: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let (mut level, mut skipping_below) = (0usize, None::<usize>);
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' | '[' => level += 1,
            '}' | ']' => {
                level -= 1;
                if skipping_below.is_some_and(|l| level < l) {
                    skipping_below = None;
                }
            }
            '"' => {
                let mut end = at + 1;
                while let Some((i, c)) = chars.next() {
                    end = i;
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                let rest = text[end + 1..].trim_start();
                if rest.starts_with(':') && skipping_below.is_none() && level <= depth {
                    let key = text[at + 1..end].to_string();
                    if key == skip {
                        skipping_below = Some(level + 1);
                    } else {
                        keys.push(key);
                    }
                }
            }
            _ => {}
        }
    }
    keys
}

/// The reads both tools offer, by args (without `-n`).
const COMMON_READS: &[&[&str]] = &[
    &["get", "values", RELEASE, "-o", "json"],
    &["get", "values", RELEASE, "--all", "-o", "json"],
    &["get", "values", RELEASE, "--revision", "1", "-o", "json"],
    &["get", "manifest", RELEASE],
    &["get", "manifest", RELEASE, "--revision", "1"],
    &["get", "notes", RELEASE],
    &["get", "hooks", RELEASE],
    &["get", "hooks", RELEASE, "--revision", "1"],
    &["get", "metadata", RELEASE],
    &["get", "metadata", RELEASE, "-o", "json"],
    &["get", "metadata", RELEASE, "--revision", "1", "-o", "json"],
    &["get", "all", RELEASE],
    &["get", "all", RELEASE, "--revision", "1"],
    &["status", RELEASE, "-o", "json"],
    &["history", RELEASE, "-o", "json"],
    &["list", "-o", "json"],
];

/// Whether `reader`'s JSON for `args` about the release in `ns` has the keys of
/// `helm`'s, in the same order (`status` down to `info`'s own keys: what lies
/// under `info.resources` is the cluster's objects, not the record).
fn assert_same_key_order(
    what: &str,
    ns: &Namespace<'_>,
    reader: Tool,
    driver: &str,
    args: &[&str],
) {
    if !args.contains(&"json") {
        return;
    }
    let (depth, skip) = if args[0] == "status" {
        (2, "resources")
    } else {
        (usize::MAX, "")
    };
    let ours = key_order(&ns.ok(reader, Some(driver), args), depth, skip);
    let theirs = key_order(&ns.ok(Helm, Some(driver), args), depth, skip);
    assert_eq!(ours, theirs, "{what}: the keys in Helm's order");
}

/// The ways `status` shows the live objects (`info.resources`).
const LIVE_READS: &[&[&str]] = &[
    &["status", RELEASE],
    &["status", RELEASE, "-o", "json"],
    &["status", RELEASE, "-o", "yaml"],
];

/// `status` text with its `RESOURCES:` kinds in key order (Helm walks a Go map, so
/// its order differs from run to run) and the ages in its tables marked: a second
/// may pass between two reads.
fn resources_sorted(text: &str) -> String {
    let (head, rest) = match text.split_once("RESOURCES:\n") {
        Some((head, rest)) => (head, rest),
        None => return text.to_string(),
    };
    let (body, tail) = rest.split_once("\n\nTEST SUITE:").unwrap_or((rest, ""));
    let mut kinds: Vec<String> = body
        .split("==> ")
        .filter(|k| !k.is_empty())
        .map(|k| {
            k.lines()
                .map(|l| {
                    // The built-in tables end with AGE (`5s`, `2m3s`), unpadded.
                    let age = l.rsplit(' ').next().unwrap_or_default();
                    let is_age = age.starts_with(|c: char| c.is_ascii_digit())
                        && age.ends_with(['s', 'm', 'h', 'd', 'y'])
                        && age
                            .chars()
                            .all(|c| c.is_ascii_digit() || "smhdy".contains(c));
                    if is_age {
                        format!("{}<age>", &l[..l.len() - age.len()])
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .map(|k| format!("==> {k}"))
        .collect();
    kinds.sort();
    format!(
        "{head}RESOURCES:\n{}\n\nTEST SUITE:{tail}",
        kinds.join("\n")
    )
}

/// `rudder status` and `helm status` show the same live objects for the release in
/// `ns` — the same tables, the same JSON and YAML.
fn live_reads_agree(ns: &Namespace<'_>, driver: &str) {
    for args in LIVE_READS {
        let what = format!(
            "HELM_DRIVER={driver} rudder/helm {} in {}",
            args.join(" "),
            ns.name
        );
        // The objects may still be settling (a Deployment's status): read again
        // until both tools saw the same cluster.
        let text = testkit::eventually_blocking(std::time::Duration::from_secs(20), || {
            let ours = resources_sorted(&ns.ok(Rudder, Some(driver), args));
            let theirs = resources_sorted(&ns.ok(Helm, Some(driver), args));
            if ours == theirs {
                Ok(ours)
            } else {
                Err(format!("{what}:\n--- rudder\n{ours}\n--- helm\n{theirs}"))
            }
        });
        if args.len() == 2 {
            for kind in ["==> v1/Deployment", "==> v1/Pod(related)", "==> v1/Service"] {
                assert!(text.contains(kind), "{what}: lists {kind}:\n{text}");
            }
        }
    }
}

fn records_match(driver: &str) {
    let Some(cluster) = Cluster::start(&format!("records-{driver}")) else {
        return;
    };
    let by_helm = cluster.namespace("by-helm");
    let by_rudder = cluster.namespace("by-rudder");
    install_and_upgrade(&by_helm, Helm, driver);
    install_and_upgrade(&by_rudder, Rudder, driver);

    // The records themselves.
    let (ours, theirs) = (records(&by_rudder, driver), records(&by_helm, driver));
    assert_eq!(ours.len(), 2, "rudder wrote two records: {}", json!(ours));
    assert_eq!(theirs.len(), 2, "helm wrote two records: {}", json!(theirs));
    for (r, h) in ours.iter().zip(&theirs) {
        assert_same(&format!("{driver} record {}", h["name"]), r, h);
    }

    // Helm reads rudder's records as its own...
    for args in COMMON_READS {
        let what = format!("HELM_DRIVER={driver} helm {}", args.join(" "));
        assert_same(
            &what,
            &read(&by_rudder, Helm, driver, args),
            &read(&by_helm, Helm, driver, args),
        );
    }
    // ...and rudder reads Helm's as Helm does.
    for args in COMMON_READS {
        let what = format!("HELM_DRIVER={driver} rudder/helm {}", args.join(" "));
        assert_same(
            &what,
            &read(&by_helm, Rudder, driver, args),
            &read(&by_helm, Helm, driver, args),
        );
        assert_same_key_order(&what, &by_helm, Rudder, driver, args);
    }
    // Across namespaces, both releases listed alike by both tools.
    let all = |tool: Tool| {
        let out = by_helm.ok(tool, Some(driver), &["list", "-A", "-o", "json"]);
        let rows: Value = serde_json::from_str(&out).expect("list prints JSON");
        let mut rows: Vec<Value> = rows
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["namespace"] == by_helm.name || r["namespace"] == by_rudder.name)
            .map(|r| {
                let mut r = normalized(&normalized(r, &by_helm.name), &by_rudder.name);
                r["namespace"] = json!("<ns>");
                r
            })
            .collect();
        rows.sort_by_key(|r| r.to_string());
        Value::Array(rows)
    };
    live_reads_agree(&by_helm, driver);
    live_reads_agree(&by_rudder, driver);
    let helm_all = all(Helm);
    assert_eq!(
        helm_all.as_array().map(Vec::len),
        Some(2),
        "helm list -A shows both releases: {helm_all:#}"
    );
    assert_same("list -A (helm's rows)", &helm_all[0], &helm_all[1]);
    assert_same("rudder/helm list -A", &all(Rudder), &helm_all);
}

#[test]
fn rudder_writes_and_reads_helms_secret_records() {
    records_match("secret");
}

#[test]
fn rudder_writes_and_reads_helms_configmap_records() {
    records_match("configmap");
}

/// The `Chart.yaml` fields Helm writes into a record's `chart.metadata`. The
/// `metadata` fixture chart sets every one, so the comparison below cannot pass by
/// both records lacking one.
const METADATA_FIELDS: &[&str] = &[
    "name",
    "home",
    "sources",
    "version",
    "description",
    "keywords",
    "maintainers",
    "icon",
    "apiVersion",
    "appVersion",
    "deprecated",
    "annotations",
    "kubeVersion",
    "dependencies",
    "type",
];

#[test]
fn records_keep_every_chart_metadata_field() {
    let Some(cluster) = Cluster::start("records-metadata") else {
        return;
    };
    let chart = path_str(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/metadata/chart"),
    );
    let by_helm = cluster.namespace("meta-helm");
    let by_rudder = cluster.namespace("meta-rudder");
    for (ns, tool) in [(&by_helm, Helm), (&by_rudder, Rudder)] {
        // Revision 1 with one dependency disabled, revision 2 with both enabled.
        ns.ok(tool, Some("secret"), &["install", RELEASE, &chart]);
        let upgrade = ["upgrade", RELEASE, &chart, "--set", "spare.enabled=true"];
        ns.ok(tool, Some("secret"), &upgrade);
    }
    let (ours, theirs) = (records(&by_rudder, "secret"), records(&by_helm, "secret"));
    assert_eq!(theirs.len(), 2, "helm wrote two records: {}", json!(theirs));
    assert_eq!(ours.len(), 2, "rudder wrote two records: {}", json!(ours));
    for (revision, h) in theirs.iter().enumerate() {
        let chart = &h["release"]["chart"];
        for field in METADATA_FIELDS {
            let v = &chart["metadata"][field];
            assert!(
                !is_empty(v),
                "helm's record {revision} has {field}: {chart:#}"
            );
        }
        assert!(
            chart["lock"].is_object(),
            "helm records the lock: {chart:#}"
        );
    }
    let deps = |r: &Value| r["release"]["chart"]["metadata"]["dependencies"].clone();
    assert_eq!(deps(&theirs[0]).as_array().map(Vec::len), Some(1));
    assert_eq!(deps(&theirs[1]).as_array().map(Vec::len), Some(2));
    for (r, h) in ours.iter().zip(&theirs) {
        assert_same(&format!("record {}", h["name"]), r, h);
    }
    let metadata = ["get", "metadata", RELEASE, "-o", "json"];
    assert_same(
        "helm get metadata",
        &read(&by_rudder, Helm, "secret", &metadata),
        &read(&by_helm, Helm, "secret", &metadata),
    );
}

#[test]
fn key_order_reads_keys_as_written() {
    let text =
        r#"{"name":"a","info":{"z":1,"resources":{"v1/X":[{"k":"\"q\":"}]},"a":2},"b":[{"c":3}]}"#;
    assert_eq!(
        key_order(text, usize::MAX, ""),
        ["name", "info", "z", "resources", "v1/X", "k", "a", "b", "c"]
    );
    // Arrays count as a level too.
    assert_eq!(
        key_order(text, 2, "resources"),
        ["name", "info", "z", "a", "b"]
    );
}
