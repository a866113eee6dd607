//! A release whose record outgrows the 1 MiB a Secret may hold, end to end against the
//! test cluster (embedded, or `RUDDER_TEST_KUBECONFIG`'s): `rudder install` stores it in
//! chunks (every Secret within the limit the server enforces), reads it back for
//! `get`, `history` and `upgrade`, uninstalls every chunk, and the real `helm` CLI,
//! which cannot read a chunked record, is seen to skip it without failing.

mod cli;

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use kube::ResourceExt;
use testkit::{Cluster, TestNamespace};

/// Pseudo-random lowercase text: gzip keeps it above 60% of its size.
fn noise(seed: u64, len: usize) -> String {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

/// A chart of one ConfigMap per blob, and a values file with three 450 KB blobs:
/// values and manifest together gzip to about 1.6 MB.
fn write_chart(dir: &Path) -> (PathBuf, PathBuf) {
    let chart = dir.join("big");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: big\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/cms.yaml"),
        "{{- range $i, $b := .Values.blobs }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $.Release.Name }}-{{ $i }}\ndata:\n  blob: {{ $b | quote }}\n{{- end }}\n",
    )
    .unwrap();
    let blobs: Vec<String> = (1..=3).map(|i| noise(i, 450_000)).collect();
    let values = dir.join("values.yaml");
    std::fs::write(
        &values,
        serde_json::to_string(&serde_json::json!({ "blobs": blobs })).unwrap(),
    )
    .unwrap();
    (chart, values)
}

async fn rudder(kc: &Path, args: &[&str]) -> String {
    let o = cli::rudder(kc, args).await;
    assert!(
        o.status.success(),
        "rudder {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

async fn secrets(ns: &TestNamespace, selector: &str) -> Vec<Secret> {
    let api: Api<Secret> = Api::namespaced(ns.client(), ns.name());
    let mut items = api
        .list(&ListParams::default().labels(selector))
        .await
        .expect("list secrets")
        .items;
    items.sort_by_key(|s| s.name_any());
    items
}

fn data_bytes(s: &Secret) -> usize {
    s.data
        .as_ref()
        .map_or(0, |d| d.values().map(|v| v.0.len()).sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_over_one_mib_is_chunked_read_back_and_skipped_by_helm() {
    let ns: TestNamespace = Cluster::start().namespace("large-records");
    let kc = ns.kubeconfig().to_path_buf();
    let dir = std::env::temp_dir().join(format!("rudder-large-records-{}", std::process::id()));
    let (chart, values) = write_chart(&dir);
    let (chart, values) = (chart.to_str().unwrap(), values.to_str().unwrap());

    rudder(&kc, &["install", "big", chart, "-f", values]).await;
    let index = secrets(&ns, "owner=helm,name=big").await;
    assert_eq!(index.len(), 1, "Helm's selector sees only the index");
    let chunks = secrets(&ns, "owner=rudder,name=big").await;
    assert!(chunks.len() >= 2, "{} chunks", chunks.len());
    let stored: usize = chunks.iter().map(data_bytes).sum();
    assert!(stored > 1 << 20, "the record is {stored} bytes");
    for s in index.iter().chain(&chunks) {
        assert!(
            data_bytes(s) <= 1 << 20,
            "{}: {} bytes",
            s.name_any(),
            data_bytes(s)
        );
    }

    let manifest = rudder(&kc, &["get", "manifest", "big"]).await;
    assert!(
        manifest.contains(&noise(3, 450_000)),
        "the manifest reads back whole"
    );
    rudder(&kc, &["upgrade", "big", chart, "-f", values]).await;
    let history = rudder(&kc, &["history", "big", "-o", "json"]).await;
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    let statuses: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["superseded", "deployed"]);

    if let Some(helm) = testkit::tools::helm() {
        // helm lists what it can decode and leaves out what it cannot, exit 0.
        let o = cli::run(helm.path(), &kc, &["list", "-n", ns.name(), "-o", "json"]).await;
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(out.trim(), "[]", "helm cannot read a chunked record");
        // helm history skips the record it cannot decode too: a header, no revision.
        let o = cli::run(helm.path(), &kc, &["history", "big", "-n", ns.name()]).await;
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            out.lines().filter(|l| !l.trim().is_empty()).count(),
            1,
            "only the header: {out}"
        );
    }

    rudder(&kc, &["uninstall", "big"]).await;
    assert!(
        secrets(&ns, "name=big").await.is_empty(),
        "every chunk is deleted"
    );
    std::fs::remove_dir_all(&dir).ok();
}
