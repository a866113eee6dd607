//! The real Helm engine (v4, from the `helm_python` wheel) reads the records we write:
//! list, history, status and rollback work on them, and we read back what Helm wrote.
//!
//! Needs `python3` with `helm_python` (`/work/shared/tools/install-oracle.sh`); skipped
//! with a message otherwise. Set `RUDDER_PYTHON` to pick the interpreter.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use base64::Engine;
use release::driver::objects::{ChunkConfig, MemoryKind, MemoryObjects, ObjectBackend, RawObject};
use release::driver::ObjectDriver;
use release::record::{Chart, File, Metadata};
use release::{Release, Status, Storage};
use serde_json::{json, Value};

fn python() -> Option<String> {
    let py = std::env::var("RUDDER_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import helm_python"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then_some(py)
}

fn gen_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gen")
}

fn manifest(rev: i64) -> String {
    format!("---\n# Source: tiny/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-cm\ndata:\n  revision: \"{rev}\"\n")
}

fn release(version: i64, status: Status) -> Release {
    let mut r = Release {
        name: "app".into(),
        version,
        namespace: "demo".into(),
        manifest: manifest(version),
        apply_method: "ssa".into(),
        chart: Some(Chart {
            metadata: Some(Metadata {
                name: "tiny".into(),
                version: "0.1.0".into(),
                api_version: "v2".into(),
                app_version: "1.0".into(),
                ..Metadata::default()
            }),
            templates: vec![File::new(
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-cm\n",
            )],
            values: Some(serde_json::Map::new()),
            ..Chart::default()
        }),
        ..Release::default()
    };
    r.labels.insert("team".into(), "web".into());
    let now = release::Time::now();
    let info = r.info.get_or_insert_with(Default::default);
    info.first_deployed = Some(now);
    info.last_deployed = Some(now);
    r.set_status(status, format!("rudder revision {version}"));
    r
}

fn to_api_json(obj: &RawObject, secret: bool) -> Value {
    let data: serde_json::Map<String, Value> = obj
        .data
        .iter()
        .map(|(k, v)| {
            let text = if secret {
                base64::engine::general_purpose::STANDARD.encode(v)
            } else {
                String::from_utf8_lossy(v).into_owned()
            };
            (k.clone(), Value::String(text))
        })
        .collect();
    let mut o = json!({
        "metadata": {"name": obj.name, "labels": obj.labels, "annotations": obj.annotations},
        "data": data,
    });
    if let Some(t) = &obj.type_ {
        o["type"] = json!(t);
    }
    o
}

fn from_api_json(o: &Value, secret: bool) -> RawObject {
    let data = o["data"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = v.as_str().unwrap_or_default();
                    let bytes = if secret {
                        base64::engine::general_purpose::STANDARD.decode(s).unwrap()
                    } else {
                        s.as_bytes().to_vec()
                    };
                    (k.clone(), bytes)
                })
                .collect()
        })
        .unwrap_or_default();
    RawObject {
        name: o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        labels: serde_json::from_value(o["metadata"]["labels"].clone()).unwrap_or_default(),
        type_: o["type"].as_str().map(str::to_string),
        data,
        ..RawObject::default()
    }
}

async fn scenario(py: &str, kind: MemoryKind) {
    let secret = kind == MemoryKind::Secret;
    let driver = Arc::new(ObjectDriver::new(MemoryObjects::new(kind)));
    let storage = Storage::new(driver.clone());
    storage.create(&release(1, Status::Deployed)).await.unwrap();
    let mut v1 = storage.get("app", 1).await.unwrap();
    v1.set_status(Status::Superseded, "Superseded");
    storage.update(&v1).await.unwrap();
    storage.create(&release(2, Status::Deployed)).await.unwrap();

    // A chunked record of another release: Helm must skip it, not crash.
    let mut big = release(1, Status::Deployed);
    big.name = "big".into();
    big.manifest = (0..400).map(|i| format!("# line {i}\n")).collect();
    let chunky = ObjectDriver::new(MemoryObjects::new(kind)).with_chunking(ChunkConfig {
        max_object_data: 500,
        chunk_size: 200,
    });
    release::Driver::create(&chunky, &release::make_key("big", 1), &big)
        .await
        .unwrap();

    let mut objects: Vec<Value> = driver
        .backend()
        .objects()
        .iter()
        .map(|o| to_api_json(o, secret))
        .collect();
    objects.extend(
        chunky
            .backend()
            .objects()
            .iter()
            .map(|o| to_api_json(o, secret)),
    );
    assert!(objects.len() > 4, "expected chunk objects too");

    let path = std::env::temp_dir().join(format!(
        "rudder-release-helm-reads-{}-{}.json",
        std::process::id(),
        if secret { "secret" } else { "configmap" }
    ));
    std::fs::write(&path, serde_json::to_vec(&objects).unwrap()).unwrap();
    let out = Command::new(py)
        .current_dir(gen_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("helm_reads.py")
        .arg(&path)
        .arg(if secret { "secret" } else { "configmap" })
        .output()
        .expect("run helm_reads.py");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "helm_reads.py failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("bad output {e}: {stdout}"));
    let show = || serde_json::to_string_pretty(&result).unwrap();

    // helm list --all: our release, and not the chunked one.
    let list = result["list"]
        .as_array()
        .unwrap_or_else(|| panic!("list failed: {}", show()));
    let names: Vec<&str> = list.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["app"], "{}", show());
    // helm history app: both revisions with our statuses.
    let history = result["history"]
        .as_array()
        .unwrap_or_else(|| panic!("history failed: {}", show()));
    let revs: Vec<(i64, &str)> = history
        .iter()
        .map(|r| {
            (
                r["revision"].as_i64().unwrap_or(-1),
                r["status"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(revs, [(1, "superseded"), (2, "deployed")], "{}", show());
    // helm status app.
    assert_eq!(result["status"]["revision"], 2, "{}", show());
    assert_eq!(result["status"]["status"], "deployed", "{}", show());
    assert_eq!(result["status"]["labels"]["team"], "web", "{}", show());
    // helm rollback app 1, then we read what Helm wrote.
    assert_eq!(result["rollback"], "ok", "{}", show());
    let after = MemoryObjects::new(kind);
    for o in result["objects"].as_array().unwrap() {
        after.insert_raw(from_api_json(o, secret));
    }
    let labels: BTreeMap<String, String> = after
        .get("sh.helm.release.v1.app.v3")
        .await
        .unwrap()
        .expect("helm wrote revision 3")
        .labels;
    assert_eq!(labels["owner"], "helm");
    let storage = Storage::new(Arc::new(ObjectDriver::new(after)));
    let deployed = storage.deployed("app").await.unwrap().unwrap();
    assert_eq!(deployed.version, 3);
    assert_eq!(deployed.manifest, manifest(1));
    assert_eq!(
        storage.get("app", 2).await.unwrap().status(),
        Status::Superseded
    );
    // The chunked record is still there and still ours to read.
    assert_eq!(storage.get("big", 1).await.unwrap(), big);
}

#[tokio::test]
async fn real_helm_reads_our_secrets_and_configmaps() {
    let Some(py) = python() else {
        eprintln!(
            "SKIP: python3 with helm_python not found; run /work/shared/tools/install-oracle.sh"
        );
        return;
    };
    scenario(&py, MemoryKind::Secret).await;
    scenario(&py, MemoryKind::ConfigMap).await;
}
