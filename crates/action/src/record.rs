//! Building Helm release records from a loaded chart and a render, and reading the
//! documents of a stored release manifest back.

use std::collections::BTreeMap;

use chart::loader::Chart as LoadedChart;
use chart::manifest::{split_documents, INSTALL_ORDER};
use chart::render::Rendered;
use chart::values::prepare::ProcessedChart;
use chart::values::Values;
use kube::core::GroupVersionKind;
use release::record::{
    Chart, Dependency, File, Hook, Info, Lock, Maintainer, Metadata, Release, Status,
};
use release::Time;

use crate::options::ActionOptions;

/// Helm v4's `apply_method` for releases applied with server-side apply: what every
/// record rudder writes says, since rudder always applies server-side (after taking
/// over the ownership Helm's client-side apply recorded, see `kube::managers`), as
/// `helm upgrade|rollback --server-side=true` does. Helm's default (`auto`) then
/// applies the next upgrade server-side as well.
pub const APPLY_METHOD_SSA: &str = "ssa";

/// A dependency entry (of `Chart.yaml` or of the lock file) as Helm's
/// `chart.Dependency` writes it. A macro, as the chart crate keeps the type of its
/// `Chart.yaml` model private: only its fields are reachable.
macro_rules! dependency_record {
    ($d:expr) => {{
        let d = $d;
        Dependency {
            name: d.name.clone(),
            version: d.version.clone(),
            repository: d.repository.clone(),
            condition: d.condition.clone(),
            tags: d.tags.clone(),
            enabled: d.enabled,
            import_values: d.import_values.clone(),
            alias: d.alias.clone(),
            ..Dependency::default()
        }
    }};
}

/// `Chart.yaml` as a release record holds it: every field Helm's `chart.Metadata`
/// writes, as the chart has it.
pub fn chart_metadata(chart: &LoadedChart) -> Metadata {
    let m = &chart.metadata;
    Metadata {
        name: m.name.clone(),
        home: m.home.clone(),
        sources: m.sources.clone(),
        version: m.version.clone(),
        description: m.description.clone(),
        keywords: m.keywords.clone(),
        // Validation refuses `null` list items, so none reach a record.
        maintainers: m
            .maintainers
            .iter()
            .flatten()
            .map(|x| Maintainer {
                name: x.name.clone(),
                email: x.email.clone(),
                url: x.url.clone(),
                ..Maintainer::default()
            })
            .collect(),
        icon: m.icon.clone(),
        api_version: m.api_version.clone(),
        condition: m.condition.clone(),
        tags: m.tags.clone(),
        app_version: m.app_version.clone(),
        deprecated: m.deprecated,
        annotations: m.annotations.clone().unwrap_or_default(),
        kube_version: m.kube_version.clone(),
        dependencies: m.deps().map(|d| dependency_record!(d)).collect(),
        chart_type: m.chart_type.clone(),
        ..Metadata::default()
    }
}

/// `Chart.lock` (or `requirements.lock`) as a record holds it.
fn lock_record(chart: &LoadedChart) -> Option<Lock> {
    let lock = chart.lock.as_ref()?;
    Some(Lock {
        // Helm's loader fails on a time it cannot read; ours keeps the text.
        generated: Time::parse(lock.generated.trim()).unwrap_or(Time::ZERO),
        digest: lock.digest.clone(),
        dependencies: Some(
            lock.dependencies
                .iter()
                .flatten()
                .map(|d| dependency_record!(d))
                .collect(),
        ),
        ..Lock::default()
    })
}

/// The chart part of a release record for `chart` as loaded: its metadata, lock,
/// templates, default values, schema and files (subcharts are not recorded, as in
/// Helm).
pub fn chart_record(chart: &LoadedChart) -> Chart {
    chart_record_with(chart, chart_metadata(chart), chart.values.clone())
}

/// [`chart_record`] with the given metadata and default values. The record holds
/// its own copy of the chart's files: it is written out as Helm writes it.
fn chart_record_with(chart: &LoadedChart, metadata: Metadata, values: Values) -> Chart {
    let files = |v: &[chart::loader::File]| {
        v.iter()
            .map(|f| File::new(f.name.clone(), f.data.to_vec()))
            .collect::<Vec<_>>()
    };
    Chart {
        metadata: Some(metadata),
        lock: lock_record(chart),
        templates: files(&chart.templates),
        values: Some(values),
        schema: chart.schema.as_deref().map(<[u8]>::to_vec),
        files: files(&chart.files),
        ..Chart::default()
    }
}

/// The chart part of the record an install or upgrade writes: as Helm stores it after
/// `ProcessDependenciesWithMerge`, which rewrites the chart in place before the record
/// is made. `processed` is what the release's render made of the chart: disabled
/// dependencies leave `dependencies`, aliased ones carry their alias as name,
/// import-values are spelled out, and the default values are the chart's merged with
/// its subcharts' and the imported ones (or, with `--reuse-values`, the ones the
/// render used in place of the chart's).
pub(crate) fn processed_chart_record(chart: &LoadedChart, processed: &ProcessedChart) -> Chart {
    let mut metadata = chart_metadata(chart);
    metadata.dependencies = processed
        .metadata
        .deps()
        .map(|d| dependency_record!(d))
        .collect();
    let values = processed.values.as_ref().unwrap_or(&chart.values).clone();
    chart_record_with(chart, metadata, values)
}

/// A rendered hook in the record's shape.
pub(crate) fn hook_record(h: &chart::manifest::Hook) -> Hook {
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

/// What a new release record is made of (see [`new_release`]).
pub(crate) struct Draft<'a> {
    /// The release's name and namespace.
    pub(crate) opts: &'a ActionOptions,
    pub(crate) version: i64,
    pub(crate) chart: Chart,
    pub(crate) config: Values,
    pub(crate) rendered: &'a Rendered,
    pub(crate) hooks: Vec<Hook>,
}

/// A new release record in `status`, deployed now: the render's manifest and notes,
/// the hooks as given, no custom labels.
pub(crate) fn new_release(draft: Draft<'_>, status: Status, description: &str) -> Release {
    let now = Time::now();
    Release {
        name: draft.opts.name.clone(),
        info: Some(Info {
            first_deployed: Some(now),
            last_deployed: Some(now),
            description: description.to_string(),
            status: Some(status),
            notes: draft.rendered.notes.clone().unwrap_or_default(),
            ..Info::default()
        }),
        chart: Some(draft.chart),
        config: draft.config,
        manifest: draft.rendered.manifest_text(),
        hooks: draft.hooks,
        version: draft.version,
        namespace: draft.opts.namespace.clone(),
        apply_method: APPLY_METHOD_SSA.to_string(),
        labels: BTreeMap::new(),
        ..Release::default()
    }
}

/// Helm's label merge: `extra` overrides `base`, and the value `null` removes a label.
/// Records the lookup digest under the label the caller asked for.
pub(crate) fn record_lookups(
    labels: &mut BTreeMap<String, String>,
    opts: &ActionOptions,
    lookups: Option<String>,
) {
    let Some(label) = &opts.lookups_label else {
        return;
    };
    match lookups {
        Some(digest) => labels.insert(label.clone(), digest),
        None => labels.remove(label),
    };
}

pub(crate) fn merge_labels(
    base: &BTreeMap<String, String>,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = base.clone();
    for (k, v) in extra {
        if v == "null" {
            out.remove(k);
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// The custom labels of a new record of revision `version`: Helm's merge of the
/// action's labels over `base` (the labels the record inherits), plus the revision
/// label when the action asks for one.
pub(crate) fn record_labels(
    base: &BTreeMap<String, String>,
    opts: &ActionOptions,
    version: i64,
) -> BTreeMap<String, String> {
    let mut labels = merge_labels(base, &opts.labels);
    if let Some(label) = &opts.revision_label {
        labels.insert(label.clone(), version.to_string());
    }
    labels
}

/// The documents of a stored manifest, each with its `# Source:` path.
pub(crate) fn manifest_documents(manifest: &str) -> Vec<(String, String)> {
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
pub(crate) fn sort_by_kind<T>(items: &mut [T], order: &[&str], kind: impl Fn(&T) -> &str) {
    items.sort_by_key(|it| {
        let k = kind(it);
        order.iter().position(|o| *o == k).unwrap_or(order.len())
    });
}

/// The documents of a stored manifest in install order, by the kind each declares
/// (parsing happens when they are planned).
pub(crate) fn install_ordered_documents(manifest: &str) -> Vec<(String, String)> {
    let mut docs = manifest_documents(manifest);
    sort_by_kind(&mut docs, INSTALL_ORDER, |(_, d)| doc_kind(d));
    docs
}

/// The `kind:` a YAML document declares at its top level, for ordering.
fn doc_kind(doc: &str) -> &str {
    doc.lines()
        .find_map(|l| l.strip_prefix("kind:"))
        .map(|k| k.trim().trim_matches(|c| c == '"' || c == '\''))
        .unwrap_or("")
}

/// The kinds of the objects in a stored manifest, each once, in first-seen order
/// (documents that are not objects are skipped): what a release's objects are made
/// of, for watching them.
pub fn manifest_kinds(release: &str, manifest: &str) -> Vec<GroupVersionKind> {
    let mut out: Vec<GroupVersionKind> = Vec::new();
    for (source, doc) in manifest_documents(manifest) {
        let Ok(Some(obj)) = crate::kube::KubeClient::parse_document(release, &source, &doc) else {
            continue;
        };
        let Some(types) = obj.types else { continue };
        let (group, version) = match types.api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), types.api_version.clone()),
        };
        let gvk = GroupVersionKind {
            group,
            version,
            kind: types.kind,
        };
        if !out.contains(&gvk) {
            out.push(gvk);
        }
    }
    out
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
    fn lists_manifest_kinds_once() {
        let manifest = "---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: c/templates/b.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\n---\n# Source: c/templates/c.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
        let kinds = manifest_kinds("r", manifest);
        assert_eq!(kinds.len(), 2);
        assert_eq!(kinds[0].kind, "ConfigMap");
        assert_eq!(kinds[0].group, "");
        assert_eq!(kinds[1].group, "apps");
    }

    #[test]
    fn orders_stored_documents_for_install() {
        let text = "---\n# Source: c/templates/d.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n---\n# Source: c/templates/n.yaml\napiVersion: v1\nkind: \"Namespace\"\nmetadata:\n  name: n\n";
        let docs = install_ordered_documents(text);
        assert_eq!(docs[0].0, "c/templates/n.yaml");
        assert_eq!(docs[1].0, "c/templates/d.yaml");
    }

    #[test]
    fn merges_labels_as_helm() {
        let base = BTreeMap::from([("a".to_string(), "1".to_string()), ("b".into(), "2".into())]);
        let extra = BTreeMap::from([
            ("b".to_string(), "null".to_string()),
            ("c".into(), "3".into()),
        ]);
        let merged = merge_labels(&base, &extra);
        assert_eq!(merged.get("a").map(String::as_str), Some("1"));
        assert!(!merged.contains_key("b"));
        assert_eq!(merged.get("c").map(String::as_str), Some("3"));
    }

    #[test]
    fn records_carry_their_own_revision_when_asked() {
        let base = BTreeMap::from([("rudder.dev/revision".to_string(), "3".to_string())]);
        let mut opts = ActionOptions::new("r", "ns");
        assert_eq!(
            record_labels(&base, &opts, 4),
            base,
            "copied as Helm copies"
        );
        opts.revision_label = Some("rudder.dev/revision".into());
        let labels = record_labels(&base, &opts, 4);
        assert_eq!(
            labels.get("rudder.dev/revision").map(String::as_str),
            Some("4")
        );
    }

    #[test]
    fn sorts_by_kind_order() {
        let mut kinds = vec!["Deployment", "Weird", "Namespace", "ConfigMap"];
        sort_by_kind(&mut kinds, chart::manifest::INSTALL_ORDER, |k| k);
        assert_eq!(kinds, ["Namespace", "ConfigMap", "Deployment", "Weird"]);
    }
}
