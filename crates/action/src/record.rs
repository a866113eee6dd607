//! Building Helm release records from a loaded chart and a render, and reading the
//! documents of a stored release manifest back.

use std::collections::BTreeMap;

use chart::loader::{Chart as LoadedChart, Values};
use chart::manifest::split_documents;
use release::record::{Chart, File, Hook, Info, Metadata, Release, Status};
use release::Time;

/// Helm v4's `apply_method` for releases applied with server-side apply.
pub const APPLY_METHOD_SSA: &str = "ssa";

/// The chart part of a release record, as Helm stores it.
pub fn chart_record(chart: &LoadedChart) -> Chart {
    let m = &chart.metadata;
    let metadata = Metadata {
        name: m.name.clone(),
        home: m.home.clone(),
        sources: m.sources.clone(),
        version: m.version.clone(),
        description: m.description.clone(),
        keywords: m.keywords.clone(),
        icon: m.icon.clone(),
        api_version: m.api_version.clone(),
        condition: m.condition.clone(),
        tags: m.tags.clone(),
        app_version: m.app_version.clone(),
        deprecated: m.deprecated,
        annotations: m.annotations.clone().unwrap_or_default(),
        kube_version: m.kube_version.clone(),
        chart_type: m.chart_type.clone(),
        ..Metadata::default()
    };
    let files = |v: &[chart::loader::File]| {
        v.iter()
            .map(|f| File::new(f.name.clone(), f.data.clone()))
            .collect::<Vec<_>>()
    };
    Chart {
        metadata: Some(metadata),
        templates: files(&chart.templates),
        values: Some(chart.values.clone()),
        schema: chart.schema.clone(),
        files: files(&chart.files),
        ..Chart::default()
    }
}

/// A rendered hook in the record's shape.
pub fn hook_record(h: &chart::manifest::Hook) -> Hook {
    Hook {
        name: h.name.clone(),
        kind: h.kind.clone(),
        path: h.path.clone(),
        manifest: h.manifest.clone(),
        events: h.events.clone(),
        weight: h.weight,
        delete_policies: h.delete_policies.clone(),
        output_log_policies: h.output_log_policies.clone(),
        ..Hook::default()
    }
}

/// A new release record in `status`, deployed now.
#[allow(clippy::too_many_arguments)]
pub fn new_release(
    name: &str,
    namespace: &str,
    version: i64,
    chart: Chart,
    config: Values,
    manifest: String,
    hooks: Vec<Hook>,
    notes: Option<String>,
    status: Status,
    description: &str,
) -> Release {
    let now = Time::now();
    Release {
        name: name.to_string(),
        info: Some(Info {
            first_deployed: Some(now),
            last_deployed: Some(now),
            description: description.to_string(),
            status: Some(status),
            notes: notes.unwrap_or_default(),
            ..Info::default()
        }),
        chart: Some(chart),
        config,
        manifest,
        hooks,
        version,
        namespace: namespace.to_string(),
        apply_method: APPLY_METHOD_SSA.to_string(),
        labels: BTreeMap::new(),
        ..Release::default()
    }
}

/// The documents of a stored manifest, each with its `# Source:` path.
pub fn manifest_documents(manifest: &str) -> Vec<(String, String)> {
    split_documents(manifest)
        .into_iter()
        .map(|doc| {
            let source = doc
                .lines()
                .find_map(|l| l.strip_prefix("# Source: "))
                .unwrap_or("manifest")
                .trim()
                .to_string();
            (source, doc)
        })
        .collect()
}

/// Sorts objects by their kind's position in `order` (unknown kinds last), stably.
pub fn sort_by_kind<T>(items: &mut [T], order: &[&str], kind: impl Fn(&T) -> &str) {
    items.sort_by_key(|it| {
        let k = kind(it);
        order.iter().position(|o| *o == k).unwrap_or(order.len())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stored_manifest_documents() {
        let text = "---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n";
        let docs = manifest_documents(text);
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].0, "c/templates/a.yaml");
        assert!(docs[1].1.contains("kind: Namespace"));
    }

    #[test]
    fn sorts_by_kind_order() {
        let mut kinds = vec!["Deployment", "Weird", "Namespace", "ConfigMap"];
        sort_by_kind(&mut kinds, chart::manifest::INSTALL_ORDER, |k| k);
        assert_eq!(kinds, ["Namespace", "ConfigMap", "Deployment", "Weird"]);
    }
}
