//! `get hooks`, `get metadata` and `get all`: what Helm prints of one record beyond
//! its values, manifest and notes, worded and laid out as Helm v4 prints it.

use std::collections::BTreeMap;

use action::Get;
use release::record::{Dependency, Release};
use serde::Serialize;

use super::format::{self, Sections};
use super::{connect, not_found, KubeArgs, OutputFormat};

/// `get metadata NAME`.
#[derive(clap::Args, Debug)]
pub(crate) struct GetMetadataArgs {
    /// Release name.
    #[arg(value_name = "RELEASE_NAME")]
    pub args: Vec<String>,
    /// Read this revision instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `get all NAME`.
#[derive(clap::Args, Debug)]
pub(crate) struct GetAllArgs {
    /// Release name.
    #[arg(value_name = "RELEASE_NAME")]
    pub args: Vec<String>,
    /// Read this revision instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
    /// A Go template to print instead, run on `.Release` (Helm's release
    /// struct, e.g. '{{.Release.Chart.Metadata.Version}}').
    #[arg(long)]
    pub template: Option<String>,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// Helm's `action.Metadata`, its fields in Helm's order.
#[derive(Serialize)]
struct Metadata<'a> {
    name: &'a str,
    chart: &'a str,
    version: &'a str,
    #[serde(rename = "appVersion")]
    app_version: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    dependencies: &'a [Dependency],
    namespace: &'a str,
    revision: i64,
    status: &'a str,
    #[serde(rename = "deployedAt")]
    deployed_at: String,
    #[serde(rename = "applyMethod", skip_serializing_if = "str::is_empty")]
    apply_method: &'a str,
}

/// The record's labels as Helm's `get metadata` shows them. Helm reads the newest
/// revision through a label query, whose records keep every label of the stored
/// object (`name`, `owner`, `status`, `version`, `modifiedAt` too), and a given
/// revision with a get, whose records keep only the custom ones.
async fn shown_labels(
    cfg: &action::ActionConfig,
    ns: &str,
    rel: &Release,
    revision: Option<i64>,
) -> anyhow::Result<BTreeMap<String, String>> {
    if revision.is_some_and(|r| r > 0) {
        return Ok(rel.labels.clone());
    }
    let metas = cfg.storage(ns).history_meta(&rel.name).await.map_err(|e| {
        anyhow::anyhow!(
            "reading the records of release {}: {}",
            rel.name,
            apierror::Chain(&e)
        )
    })?;
    Ok(metas
        .into_iter()
        .find(|m| m.version == rel.version)
        .map(|m| m.labels)
        .unwrap_or_else(|| rel.labels.clone()))
}

/// Helm's words for a record's apply method in `get metadata`'s table.
fn apply_method_text(method: &str) -> &str {
    match method {
        "ssa" => "server-side apply",
        "csa" => "client-side apply",
        // Records of Helm v3 (and of v4 before it recorded one) applied client-side.
        "" => "client-side apply (defaulted)",
        other => other,
    }
}

pub(super) async fn metadata(a: GetMetadataArgs) -> anyhow::Result<String> {
    let (cfg, ns) = connect(&a.kube).await?;
    let rel = Get::new(&cfg, ns.clone())
        .run(super::release_name(&a.args), a.revision)
        .await
        .map_err(not_found)?;
    let labels = shown_labels(&cfg, &ns, &rel, a.revision).await?;
    metadata_output(&rel, &labels, a.output)
}

fn metadata_output(
    rel: &Release,
    labels: &BTreeMap<String, String>,
    output: OutputFormat,
) -> anyhow::Result<String> {
    let chart = rel
        .chart
        .as_ref()
        .and_then(|c| c.metadata.clone())
        .unwrap_or_default();
    let info = rel.info.clone().unwrap_or_default();
    let status = rel.status();
    let meta = Metadata {
        name: &rel.name,
        chart: &chart.name,
        version: &chart.version,
        app_version: &chart.app_version,
        annotations: &chart.annotations,
        labels,
        dependencies: &chart.dependencies,
        namespace: &rel.namespace,
        revision: rel.version,
        status: status.as_str(),
        deployed_at: format::rfc3339(info.last_deployed.as_ref()),
        apply_method: &rel.apply_method,
    };
    Ok(match output {
        OutputFormat::Json => format::json(&meta),
        OutputFormat::Yaml => format::yaml(&serde_json::to_value(&meta)?)?,
        OutputFormat::Table => {
            let mut deps: Vec<&str> = chart.dependencies.iter().map(|d| d.name.as_str()).collect();
            deps.sort_unstable();
            [
                ("NAME", meta.name.to_string()),
                ("CHART", meta.chart.to_string()),
                ("VERSION", meta.version.to_string()),
                ("APP_VERSION", meta.app_version.to_string()),
                ("ANNOTATIONS", format::label_set(meta.annotations)),
                ("LABELS", format::label_set(labels)),
                ("DEPENDENCIES", deps.join(",")),
                ("NAMESPACE", meta.namespace.to_string()),
                ("REVISION", meta.revision.to_string()),
                ("STATUS", meta.status.to_string()),
                ("DEPLOYED_AT", meta.deployed_at.clone()),
                (
                    "APPLY_METHOD",
                    apply_method_text(meta.apply_method).to_string(),
                ),
            ]
            .iter()
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect()
        }
    })
}

/// `get hooks NAME`.
pub(super) async fn hooks(a: super::GetTextArgs) -> anyhow::Result<String> {
    let rel = super::get(&a.kube, super::release_name(&a.args), a.revision).await?;
    Ok(format::hooks_text(&rel))
}

/// `get all NAME`: the status printer with the chart's name and versions, both sets
/// of values, the hooks and the manifest; or `--template` run on the release.
pub(super) async fn all(a: GetAllArgs) -> anyhow::Result<String> {
    let rel = super::get(&a.kube, super::release_name(&a.args), a.revision).await?;
    match a.template.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => super::go_release::execute(t, &rel),
        None => all_text(&rel),
    }
}

fn all_text(rel: &Release) -> anyhow::Result<String> {
    let sections = Sections {
        metadata: true,
        debug: true,
        dry_run: false,
    };
    format::status_text_with(rel, sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> Release {
        serde_json::from_value(json!({
            "name": "web",
            "namespace": "prod",
            "version": 3,
            "apply_method": "ssa",
            "info": {
                "first_deployed": "2024-03-05T07:08:09.5Z",
                "last_deployed": "2024-03-06T07:08:09.5Z",
                "description": "Upgrade complete",
                "status": "deployed",
                "notes": "  hello\n"
            },
            "chart": {
                "metadata": {
                    "name": "site", "version": "1.2.3", "appVersion": "4.5",
                    "annotations": {"z": "1", "a.b": "2"},
                    "dependencies": [
                        {"name": "redis", "version": "1.x", "enabled": true},
                        {"name": "common", "version": "2.x", "enabled": true}
                    ]
                },
                "values": {"replicas": 1, "image": {"tag": "a"}}
            },
            "config": {"replicas": 2},
            "manifest": "---\n# Source: site/templates/a.yaml\nkind: ConfigMap",
            "hooks": [{
                "name": "t", "kind": "Pod", "path": "site/templates/test.yaml",
                "manifest": "kind: Pod", "events": ["post-install"],
                "last_run": {"started_at": "", "completed_at": "", "phase": ""}
            }]
        }))
        .expect("a record")
    }

    #[test]
    fn metadata_table_as_helm_prints_it() {
        let labels = [("owner", "helm"), ("name", "web"), ("team", "x")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into_iter()
            .collect();
        let text = metadata_output(&record(), &labels, OutputFormat::Table).expect("table");
        assert_eq!(
            text,
            "NAME: web\nCHART: site\nVERSION: 1.2.3\nAPP_VERSION: 4.5\n\
             ANNOTATIONS: a.b=2,z=1\nLABELS: name=web,owner=helm,team=x\n\
             DEPENDENCIES: common,redis\nNAMESPACE: prod\nREVISION: 3\nSTATUS: deployed\n\
             DEPLOYED_AT: 2024-03-06T07:08:09Z\nAPPLY_METHOD: server-side apply\n"
        );
    }

    #[test]
    fn metadata_json_keeps_helms_field_order_and_omissions() {
        let mut rel = record();
        rel.apply_method.clear();
        let text = metadata_output(&rel, &BTreeMap::new(), OutputFormat::Json).expect("json");
        let keys: Vec<&str> = [
            "\"name\"",
            "\"chart\"",
            "\"version\"",
            "\"appVersion\"",
            "\"annotations\"",
            "\"dependencies\"",
            "\"namespace\"",
            "\"revision\"",
            "\"status\"",
            "\"deployedAt\"",
        ]
        .to_vec();
        let mut at = 0;
        for k in &keys {
            let found = text[at..]
                .find(k)
                .unwrap_or_else(|| panic!("{k} after {at} in {text}"));
            at += found + k.len();
        }
        assert!(
            !text.contains("\"labels\""),
            "empty labels are left out: {text}"
        );
        assert!(
            !text.contains("applyMethod"),
            "no apply method, no key: {text}"
        );
        let table = metadata_output(&rel, &BTreeMap::new(), OutputFormat::Table).expect("table");
        assert!(table.ends_with("APPLY_METHOD: client-side apply (defaulted)\n"));
    }

    #[test]
    fn all_shows_metadata_values_hooks_manifest_and_notes() {
        let text = all_text(&record()).expect("text");
        let expected = "NAME: web\nLAST DEPLOYED: Wed Mar  6 07:08:09 2024\nNAMESPACE: prod\n\
            STATUS: deployed\nREVISION: 3\nCHART: site\nVERSION: 1.2.3\nAPP_VERSION: 4.5\n\
            DESCRIPTION: Upgrade complete\nTEST SUITE: None\n\
            USER-SUPPLIED VALUES:\nreplicas: 2\n\n\
            COMPUTED VALUES:\nimage:\n  tag: a\nreplicas: 2\n\n\
            HOOKS:\n---\n# Source: site/templates/test.yaml\nkind: Pod\n\
            MANIFEST:\n---\n# Source: site/templates/a.yaml\nkind: ConfigMap\n\
            NOTES:\nhello\n";
        assert_eq!(text, expected);
    }
}
