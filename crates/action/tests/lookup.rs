//! Helm's `lookup` during install and upgrade sees the live cluster: a found object, a
//! list, an empty map for a missing object or kind, and an error for an unserved group.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{install, opts, start, upgrade};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{json, Map};

const TEMPLATE: &str = r#"{{- $found := lookup "v1" "ConfigMap" .Release.Namespace "existing" }}
{{- $missing := lookup "v1" "ConfigMap" .Release.Namespace "nope" }}
{{- $list := lookup "v1" "ConfigMap" .Release.Namespace "" }}
{{- $noKind := lookup "v1" "Gizmo" .Release.Namespace "x" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-seen
data:
  found: {{ dig "data" "password" "" $found | quote }}
  missing: {{ len $missing | quote }}
  listKind: {{ $list.kind | quote }}
  listed: {{ range $list.items }}{{ if eq .metadata.name "existing" }}{{ .kind }}{{ end }}{{ end }}
  noKind: {{ len $noKind | quote }}
"#;

fn write_chart(dir: &Path, template: &str) -> PathBuf {
    let chart = dir.join("lookup-chart");
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: lookup-chart\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(chart.join("templates/seen.yaml"), template).expect("template");
    chart
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_sees_the_live_cluster() {
    let (ns, client) = start();
    let dir = ns.dir().to_path_buf();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let existing: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "existing"},
        "data": {"password": "kept-secret"}
    }))
    .expect("configmap");
    cms.create(&PostParams::default(), &existing)
        .await
        .expect("create existing");

    let chart = Arc::new(chart::loader::load(write_chart(&dir, TEMPLATE)).expect("chart"));
    install(&client, &chart, Map::new(), &opts(&ns, "lk"))
        .await
        .expect("install");
    let data = cms
        .get("lk-seen")
        .await
        .expect("rendered")
        .data
        .unwrap_or_default();
    let get = |k: &str| data.get(k).cloned().unwrap_or_default();
    assert_eq!(get("found"), "kept-secret");
    assert_eq!(get("missing"), "0");
    assert_eq!(get("listKind"), "ConfigMapList");
    assert_eq!(get("listed"), "ConfigMap");
    assert_eq!(get("noKind"), "0");

    // A group the cluster does not serve is an error, as in Helm.
    let bad = write_chart(
        &dir.join("bad"),
        "{{ $x := lookup \"nope.example.com/v1\" \"Thing\" \"\" \"x\" }}\n",
    );
    let chart = Arc::new(chart::loader::load(bad).expect("chart"));
    let err = install(&client, &chart, Map::new(), &opts(&ns, "bad"))
        .await
        .expect_err("unserved group");
    assert!(
        release::api_error::chain(&err).contains("unable to get apiresource"),
        "{err}"
    );
}

/// The pattern of Bitnami's `common.secrets.passwords.manage`: keep the password the
/// cluster already has, generate one only on first install.
const PASSWORD_TEMPLATE: &str = r#"{{- $old := lookup "v1" "Secret" .Release.Namespace (printf "%s-auth" .Release.Name) }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-auth
data:
  password: {{ dig "data" "password" (randAlphaNum 16 | b64enc) $old | quote }}
  round: {{ .Values.round | default "1" | b64enc | quote }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_passwords_survive_upgrades() {
    let (ns, client) = start();
    let dir = ns.dir().join("pw");
    let load =
        || Arc::new(chart::loader::load(write_chart(&dir, PASSWORD_TEMPLATE)).expect("chart"));
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::default_namespaced(client.clone());
    let password = || async {
        let s = secrets.get("pw-auth").await.expect("secret");
        s.data
            .unwrap_or_default()
            .get("password")
            .cloned()
            .expect("password")
    };
    install(&client, &load(), Map::new(), &opts(&ns, "pw"))
        .await
        .expect("install");
    let first = password().await;
    for round in 2..4 {
        let values = json!({"round": round.to_string()})
            .as_object()
            .cloned()
            .unwrap_or_default();
        upgrade(&client, &load(), values, &opts(&ns, "pw"))
            .await
            .expect("upgrade");
        assert_eq!(
            password().await,
            first,
            "upgrade {round} changed the password"
        );
    }
}
