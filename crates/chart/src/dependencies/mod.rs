//! Helm's dependency processing (`pkg/chart/v2/util/dependencies.go`):
//! aliases, enabling and disabling subcharts by `condition` and `tags`, and
//! `import-values`, applied in Helm's order. Helm rewrites the loaded chart
//! in place (its CLI loads the chart for the one release it makes):
//! disabled subcharts and their metadata entries go away, aliased subcharts
//! are renamed copies, and each chart's default values become the merge of
//! its own and its subcharts' values plus the imported ones.
//!
//! Here a loaded chart is shared by every release rendered from it, so it is
//! never changed: processing works on a [`ChartView`] of it, which borrows
//! the chart (templates, files, schema) and keeps beside it only what
//! processing changes (metadata and default values, copied on first change)
//! and which subcharts are enabled, under which names.

use std::borrow::Cow;

use crate::chartfile::{Dependency, Metadata};
use crate::loader::Chart;
use crate::values::Values;
use crate::values::{self, Warnings};
use serde_json::Value as Json;

/// A loaded chart as one release sees it: before processing, the chart and
/// all of its subcharts as loaded; after [`process_dependencies`], the
/// chart as Helm's processing would have left it.
#[derive(Debug, Clone)]
pub(crate) struct ChartView<'a> {
    /// The loaded chart: its templates, files and schema, which processing
    /// never changes.
    pub(crate) chart: &'a Chart,
    /// `Chart.yaml`: a subchart's name becomes its alias, and the entries
    /// of `dependencies` are enabled, aliased or dropped.
    pub(crate) metadata: Cow<'a, Metadata>,
    /// The chart's default values (`values.yaml`), or what processing
    /// made of them with `import-values`.
    pub(crate) values: Cow<'a, Values>,
    /// The subcharts: every loaded one, then the enabled ones, aliased
    /// (one chart named by two aliases is seen twice).
    pub(crate) dependencies: Vec<ChartView<'a>>,
}

impl<'a> ChartView<'a> {
    /// `chart` and its subcharts as loaded.
    pub(crate) fn new(chart: &'a Chart) -> ChartView<'a> {
        ChartView {
            chart,
            metadata: Cow::Borrowed(&chart.metadata),
            values: Cow::Borrowed(&chart.values),
            dependencies: chart.dependencies.iter().map(ChartView::new).collect(),
        }
    }

    /// The name the chart goes by: its alias, once processed under one.
    pub(crate) fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Whether this is a library chart, whose templates only supply helpers.
    pub(crate) fn is_library(&self) -> bool {
        self.metadata.is_library()
    }
}

/// A dependency problem that stops a release.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DependencyError {
    #[error(transparent)]
    Values(#[from] values::ValuesError),
    /// A dependency listed in `Chart.yaml` has no chart in `charts/`.
    #[error("An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}", .0.join(", "))]
    Missing(Vec<String>),
}

/// Helm's `IsCompatibleRange`: whether `version` satisfies `constraint`
/// (false when either does not parse).
pub(crate) fn is_compatible_range(constraint: &str, version: &str) -> bool {
    sprig::constraint_matches(constraint, version).unwrap_or(false)
}

/// Helm's `action.CheckDependencies`, run on a freshly loaded chart: every
/// dependency in `Chart.yaml` must have a chart of that name in `charts/`.
pub(crate) fn check_dependencies(chart: &Chart) -> Result<(), DependencyError> {
    let missing: Vec<String> = chart
        .metadata
        .deps()
        .filter(|r| !chart.dependencies.iter().any(|d| d.name() == r.name))
        .map(|r| r.name.clone())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(DependencyError::Missing(missing))
    }
}

/// Helm's `ProcessDependencies` (`merge == false`) and
/// `ProcessDependenciesWithMerge` (`merge == true`, what install and upgrade
/// use): enables/disables subcharts against the user values `vals`, then
/// imports values from children into parents.
pub(crate) fn process_dependencies(
    chart: &mut ChartView<'_>,
    vals: &Values,
    merge: bool,
    warn: &mut Warnings,
) -> Result<(), DependencyError> {
    process_enabled(chart, vals, "", warn)?;
    process_import_values_rec(chart, merge, warn)
}

/// Whether dependency entry `dep` names chart `c`: its name, in the
/// entry's version range.
fn names_chart(dep: &Dependency, c: &ChartView<'_>) -> bool {
    c.name() == dep.name && is_compatible_range(&dep.version, &c.metadata.version)
}

fn process_enabled(
    chart: &mut ChartView<'_>,
    vals: &Values,
    path: &str,
    warn: &mut Warnings,
) -> Result<(), DependencyError> {
    if chart.metadata.dependencies.is_empty() {
        return Ok(());
    }
    // The subcharts no entry declares first, then, per entry, the first
    // chart it names (under its alias). Copying a view copies no file:
    // the subcharts below are not processed yet, so their views borrow
    // everything.
    let loaded = std::mem::take(&mut chart.dependencies);
    let mut chart_deps: Vec<ChartView<'_>> = loaded
        .iter()
        .filter(|c| !chart.metadata.deps().any(|r| names_chart(r, c)))
        .cloned()
        .collect();
    let metadata = chart.metadata.to_mut();
    for req in metadata.dependencies.iter_mut().flatten() {
        if let Some(c) = loaded.iter().find(|c| names_chart(req, c)) {
            let mut c = c.clone();
            if !req.alias.is_empty() {
                c.metadata.to_mut().name = req.alias.clone();
            }
            chart_deps.push(c);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    for r in metadata.dependencies.iter_mut().flatten() {
        r.enabled = true;
    }
    chart.dependencies = chart_deps;
    let cvals = values::coalesce_values(chart, vals, warn)?;
    process_tags(chart.metadata.to_mut(), &cvals);
    process_conditions(chart.metadata.to_mut(), &cvals, path);

    let removed: std::collections::BTreeSet<String> = chart
        .metadata
        .deps()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    chart.dependencies.retain(|d| !removed.contains(d.name()));
    chart
        .metadata
        .to_mut()
        .dependencies
        .retain(|r| r.as_ref().is_none_or(|r| !removed.contains(&r.name)));
    for t in &mut chart.dependencies {
        let sub_path = format!("{path}{}.", t.name());
        process_enabled(t, &cvals, &sub_path, warn)?;
    }
    Ok(())
}

fn process_tags(metadata: &mut Metadata, cvals: &Values) {
    let Some(vt) = values::table(cvals, "tags") else {
        return;
    };
    for r in metadata.dependencies.iter_mut().flatten() {
        let (mut has_true, mut has_false) = (false, false);
        for k in &r.tags {
            match vt.get(k) {
                Some(Json::Bool(true)) => has_true = true,
                Some(Json::Bool(false)) => has_false = true,
                _ => {}
            }
        }
        if !has_true && has_false {
            r.enabled = false;
        } else if has_true || !has_false {
            r.enabled = true;
        }
    }
}

fn process_conditions(metadata: &mut Metadata, cvals: &Values, cpath: &str) {
    for r in metadata.dependencies.iter_mut().flatten() {
        for c in r.condition.trim().split(',') {
            if c.is_empty() {
                continue;
            }
            if let Some(Json::Bool(b)) = values::path_value(cvals, &format!("{cpath}{c}")) {
                r.enabled = *b;
                break;
            }
        }
    }
}

fn process_import_values_rec(
    chart: &mut ChartView<'_>,
    merge: bool,
    warn: &mut Warnings,
) -> Result<(), DependencyError> {
    for d in &mut chart.dependencies {
        process_import_values_rec(d, merge, warn)?;
    }
    process_import_values(chart, merge, warn)
}

/// Go's `fmt.Sprintf("%v", x)` of an import-values `child`/`parent` entry.
fn sprint_opt(v: Option<&Json>) -> String {
    match v {
        None => "<nil>".into(),
        Some(v) => values::go_sprint(v),
    }
}

/// Nests `data` under the dotted `path` (`.` means the root).
fn path_to_map(path: &str, data: Values) -> Values {
    if path == "." {
        return data;
    }
    let mut cur = data;
    for part in path.split('.').rev() {
        let mut m = Values::new();
        m.insert(part.to_string(), Json::Object(cur));
        cur = m;
    }
    cur
}

fn process_import_values(
    chart: &mut ChartView<'_>,
    merge: bool,
    warn: &mut Warnings,
) -> Result<(), DependencyError> {
    if chart.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let empty = Values::new();
    let cvals = if merge {
        values::merge_values(chart, &empty, warn)?
    } else {
        values::coalesce_values(chart, &empty, warn)?
    };
    let mut b = Values::new();
    let combine = |b: &mut Values, src: Values, warn: &mut Warnings| {
        if merge {
            values::merge_tables(b, src, warn)
        } else {
            values::coalesce_tables(b, src, warn)
        }
    };
    for r in chart.metadata.to_mut().dependencies.iter_mut().flatten() {
        let mut outiv = Vec::new();
        for riv in &r.import_values {
            match riv {
                Json::Object(iv) => {
                    let child = sprint_opt(iv.get("child"));
                    let parent = sprint_opt(iv.get("parent"));
                    let mut entry = serde_json::Map::new();
                    entry.insert("child".into(), Json::String(child.clone()));
                    entry.insert("parent".into(), Json::String(parent.clone()));
                    outiv.push(Json::Object(entry));
                    let Some(vv) = values::table(&cvals, &format!("{}.{}", r.name, child)) else {
                        continue;
                    };
                    combine(&mut b, path_to_map(&parent, vv.clone()), warn);
                }
                Json::String(iv) => {
                    let child = format!("exports.{iv}");
                    let mut entry = serde_json::Map::new();
                    entry.insert("child".into(), Json::String(child.clone()));
                    entry.insert("parent".into(), Json::String(".".into()));
                    outiv.push(Json::Object(entry));
                    let Some(vm) = values::table(&cvals, &format!("{}.{}", r.name, child)) else {
                        continue;
                    };
                    combine(&mut b, vm.clone(), warn);
                }
                _ => {}
            }
        }
        r.import_values = outiv;
    }
    let mut cvals = cvals;
    if merge {
        values::merge_tables(&mut cvals, b, warn);
    } else {
        trim_nil_values(&mut cvals);
        values::coalesce_tables(&mut cvals, b, warn);
    }
    chart.values = Cow::Owned(cvals);
    Ok(())
}

fn trim_nil_values(m: &mut Values) {
    m.retain(|_, v| !v.is_null());
    for v in m.values_mut() {
        if let Json::Object(sub) = v {
            trim_nil_values(sub);
        }
    }
}

#[cfg(test)]
mod tests;
