//! What an upgrade would change, without writing anything: the new render compared
//! with the deployed release, document by document (parsed, so formatting, comments,
//! key and document order do not matter), hooks and values included.

use std::sync::Arc;

use chart::loader::Chart;
use chart::render::Rendered;
use chart::values::Values;
use release::Storage;

use crate::error::{Error, Result};
use crate::record::manifest_documents;
use crate::render::Revision;
use crate::store;
use crate::upgrade::Upgrade;

/// What an upgrade would change ([`Upgrade::diff`], `--dry-run`).
#[derive(Debug, Clone, Default)]
pub struct UpgradeDiff {
    /// The manifest's objects, the hooks or the values differ.
    pub changed: bool,
    /// The notes differ (text for text; they change no object, so not `changed`).
    pub notes_changed: bool,
    /// The deployed release's manifest.
    pub current_manifest: String,
    /// The manifest the upgrade would record.
    pub new_manifest: String,
    /// The digest of what the render's `lookup` calls returned (`None`: it made none),
    /// as [`crate::ActionOptions::lookups_label`] records it.
    pub lookups: Option<String>,
}

impl Upgrade<'_> {
    /// Renders the upgrade (against the cluster, as the upgrade would) and compares it
    /// with the deployed release; [`Error::NotDeployed`] without one.
    pub async fn diff(&self, chart: &Arc<Chart>, values: Values) -> Result<UpgradeDiff> {
        let opts = &self.opts;
        let store = self.cfg.storage(&opts.namespace);
        let name = &opts.name;
        let current = store::deployed(&store, name).await?;
        let version = store
            .next_version(name)
            .await
            .map_err(|e| Error::storage(name, e))?;
        let input = self.reuse.apply(chart, values, Some(&current));
        let values = input.values.clone();
        let (rendered, lookups) = self
            .cfg
            .render_in_cluster(input, opts, Revision::upgrade(version))
            .await?;
        Ok(UpgradeDiff {
            lookups,
            ..compare(&current, &values, &rendered)
        })
    }

    /// [`Upgrade::diff`] of an upgrade already rendered.
    pub(crate) async fn diff_rendered(
        &self,
        store: &Storage,
        values: &Values,
        rendered: &Rendered,
    ) -> Result<UpgradeDiff> {
        let current = store::deployed(store, &self.opts.name).await?;
        Ok(compare(&current, values, rendered))
    }
}

fn compare(current: &release::Release, values: &Values, rendered: &Rendered) -> UpgradeDiff {
    let new_manifest = rendered.manifest_text();
    let hooks_now = normalized_docs(current.hooks.iter().map(|h| h.manifest.as_str()));
    let hooks_new = normalized_docs(rendered.hooks.iter().map(|h| h.manifest.as_str()));
    let changed = !same_manifest(&current.manifest, &new_manifest)
        || !same_documents(hooks_now, hooks_new)
        || current.config != *values;
    let notes_now = current.info.as_ref().map_or("", |i| i.notes.as_str());
    UpgradeDiff {
        changed,
        notes_changed: notes_now != rendered.notes.as_deref().unwrap_or_default(),
        current_manifest: current.manifest.clone(),
        new_manifest,
        lookups: None,
    }
}

/// A manifest's documents as parsed values (unparseable ones as their trimmed text),
/// empty documents dropped: formatting, comments and key order do not matter.
fn normalized_docs<'a>(docs: impl IntoIterator<Item = &'a str>) -> Vec<serde_json::Value> {
    docs.into_iter()
        .filter_map(|d| match gocodec::yaml::parse_yaml_to_json(d) {
            Ok(serde_json::Value::Null) => None,
            Ok(v) => Some(v),
            Err(_) => Some(serde_json::Value::String(d.trim().to_string())),
        })
        .collect()
}

/// Whether two document lists hold the same documents in any order.
fn same_documents(a: Vec<serde_json::Value>, mut b: Vec<serde_json::Value>) -> bool {
    if a.len() != b.len() {
        return false;
    }
    for doc in a {
        match b.iter().position(|d| *d == doc) {
            Some(i) => {
                b.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

/// Whether two stored manifests hold the same objects, ignoring formatting and order.
pub fn same_manifest(a: &str, b: &str) -> bool {
    let docs = |m: &str| {
        let d = manifest_documents(m);
        normalized_docs(d.iter().map(|(_, d)| d.as_str()))
    };
    same_documents(docs(a), docs(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_compare_by_content() {
        let a = "---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {k: v}\n---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n";
        let reordered = "---\n# Source: c/templates/b.yaml\n# a comment\napiVersion: v1\nmetadata: {name: b}\nkind: ConfigMap\n---\n# Source: c/templates/a.yaml\nkind: ConfigMap\napiVersion: v1\nmetadata:\n  name: a\ndata:\n  k: v\n";
        assert!(same_manifest(a, reordered));
        assert!(!same_manifest(a, &a.replace("k: v", "k: w")));
        assert!(!same_manifest(a, "---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"));
    }
}
