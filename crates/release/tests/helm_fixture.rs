//! Records written by the real Helm engine (v4.2.3, through the `helm_python` wheel
//! against a fake API server; see `tests/fixtures/gen/`) decode, re-encode to the same
//! JSON bytes, and work through our drivers and storage.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use base64::Engine;
use release::codec;
use release::driver::objects::{MemoryKind, MemoryObjects, ObjectBackend, RawObject};
use release::driver::{Driver, ObjectDriver};
use release::{Status, Storage};
use serde_json::Value;

const SECRETS: &str = include_str!("fixtures/helm-v4-secrets.json");
const CONFIGMAPS: &str = include_str!("fixtures/helm-v4-configmaps.json");

fn b64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("fixture base64")
}

/// The fixture objects as `RawObject`s: Secret data is base64 in JSON, ConfigMap data is text.
fn raw_objects(fixture: &str, secret: bool) -> Vec<RawObject> {
    let objs: Vec<Value> = serde_json::from_str(fixture).expect("fixture JSON");
    objs.iter()
        .map(|o| {
            let labels: BTreeMap<String, String> =
                serde_json::from_value(o["metadata"]["labels"].clone()).unwrap();
            let data = o["data"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    let s = v.as_str().unwrap();
                    (
                        k.clone(),
                        if secret {
                            b64(s)
                        } else {
                            s.as_bytes().to_vec()
                        },
                    )
                })
                .collect();
            RawObject {
                name: o["metadata"]["name"].as_str().unwrap().to_string(),
                labels,
                type_: o["type"].as_str().map(str::to_string),
                data,
                resource_version: o["metadata"]["resourceVersion"]
                    .as_str()
                    .map(str::to_string),
                ..RawObject::default()
            }
        })
        .collect()
}

fn gunzip(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(raw)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn helm_records_decode_with_every_field() {
    let objs = raw_objects(SECRETS, true);
    assert_eq!(objs.len(), 2);
    let v1 = codec::decode_bytes(&objs[0].data["release"]).unwrap();
    assert_eq!(v1.name, "fx");
    assert_eq!(v1.version, 1);
    assert_eq!(v1.namespace, "demo");
    assert_eq!(v1.apply_method, "ssa");
    assert_eq!(v1.status(), Status::Deployed);
    let info = v1.info.as_ref().unwrap();
    assert_eq!(info.description, "fixture install");
    assert_eq!(info.notes, "Hello from fx <&>.\n");
    assert!(info.first_deployed.is_some() && info.deleted.is_none());
    let chart = v1.chart.as_ref().unwrap();
    let md = chart.metadata.as_ref().unwrap();
    assert_eq!(
        (
            md.name.as_str(),
            md.version.as_str(),
            md.app_version.as_str()
        ),
        ("tiny", "0.1.0", "1.0")
    );
    assert_eq!(md.api_version, "v2");
    assert_eq!(chart.templates.len(), 3);
    let cm = chart
        .templates
        .iter()
        .find(|t| t.name == "templates/cm.yaml")
        .unwrap();
    assert!(String::from_utf8_lossy(cm.data.as_deref().unwrap()).contains("kind: ConfigMap"));
    assert!(chart.modtime.is_some());
    assert!(chart.schemamodtime.is_zero());
    assert_eq!(v1.config["greeting"], "hi <there> & you");
    assert!(v1.manifest.contains("name: fx-cm"));
    assert_eq!(v1.hooks.len(), 1);
    let hook = &v1.hooks[0];
    assert_eq!(hook.events, ["pre-upgrade", "post-delete"]);
    assert_eq!(hook.weight, 5);
    assert_eq!(hook.delete_policies, ["before-hook-creation"]);
    assert_eq!(hook.last_run.phase, "");
    // Nothing Helm wrote was left unmodelled at the top level.
    assert!(
        v1.extra.is_empty(),
        "unexpected fields: {:?}",
        v1.extra.keys()
    );

    let v2 = codec::decode_bytes(&objs[1].data["release"]).unwrap();
    assert_eq!((v2.version, v2.status()), (2, Status::Failed));
    assert!(v2
        .info
        .unwrap()
        .description
        .starts_with("Upgrade \"fx\" failed"));
}

#[test]
fn reencoding_reproduces_helms_json_bytes() {
    for (fixture, secret) in [(SECRETS, true), (CONFIGMAPS, false)] {
        for obj in raw_objects(fixture, secret) {
            let raw = b64(std::str::from_utf8(&obj.data["release"]).unwrap());
            let helm_json = gunzip(&raw);
            let rel = codec::decode_json_or_gzip(&raw).unwrap();
            let ours = codec::to_go_json(&rel).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&helm_json),
                "{}",
                obj.name
            );
            // And our full encoding decodes to the same record.
            let encoded = codec::encode(&rel).unwrap();
            assert_eq!(codec::decode(&encoded).unwrap(), rel);
        }
    }
}

async fn storage_over(
    fixture: &str,
    kind: MemoryKind,
) -> (Arc<ObjectDriver<MemoryObjects>>, Storage) {
    let backend = MemoryObjects::new(kind);
    for obj in raw_objects(fixture, kind == MemoryKind::Secret) {
        backend.insert_raw(obj);
    }
    let driver = Arc::new(ObjectDriver::new(backend));
    let storage = Storage::new(driver.clone());
    (driver, storage)
}

#[tokio::test]
async fn storage_reads_helm_history() {
    for (fixture, kind) in [
        (SECRETS, MemoryKind::Secret),
        (CONFIGMAPS, MemoryKind::ConfigMap),
    ] {
        let (_driver, storage) = storage_over(fixture, kind).await;
        let history = storage.history("fx").await.unwrap();
        assert_eq!(
            history.iter().map(|r| r.version).collect::<Vec<_>>(),
            [1, 2]
        );
        let deployed = storage.deployed("fx").await.unwrap().unwrap();
        assert_eq!(deployed.version, 1);
        // Custom labels come back, system labels do not.
        assert_eq!(
            deployed.labels,
            BTreeMap::from([("team".to_string(), "platform".to_string())])
        );
        let last = storage.last("fx").await.unwrap().unwrap();
        assert_eq!((last.version, last.status()), (2, Status::Failed));
        assert_eq!(storage.next_version("fx").await.unwrap(), 3);
        assert!(storage.deployed("other").await.unwrap().is_none());
    }
}

#[tokio::test]
async fn taking_over_a_helm_release() {
    let (driver, storage) = storage_over(SECRETS, MemoryKind::Secret).await;
    // An upgrade by us: supersede v1, write v3 deployed.
    let mut old = storage.deployed("fx").await.unwrap().unwrap();
    old.set_status(Status::Superseded, "Superseded");
    storage.update(&old).await.unwrap();
    let mut next = old.clone();
    next.version = storage.next_version("fx").await.unwrap();
    next.set_status(Status::Deployed, "Upgrade complete");
    storage.create(&next).await.unwrap();

    let deployed = storage.deployed("fx").await.unwrap().unwrap();
    assert_eq!(deployed.version, 3);
    let objs = driver.backend().objects();
    let v1 = objs
        .iter()
        .find(|o| o.name == "sh.helm.release.v1.fx.v1")
        .unwrap();
    assert_eq!(v1.labels["status"], "superseded");
    assert_eq!(v1.labels["team"], "platform");
    assert!(v1.labels.contains_key("modifiedAt"));
    // The record we wrote decodes as Helm's own did.
    let v3 = driver
        .backend()
        .get("sh.helm.release.v1.fx.v3")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v3.type_.as_deref(), Some("helm.sh/release.v1"));
    let decoded = codec::decode_bytes(&v3.data["release"]).unwrap();
    assert_eq!(decoded.chart, old.chart);
    assert_eq!(driver.get("sh.helm.release.v1.fx.v3").await.unwrap(), next);
}
