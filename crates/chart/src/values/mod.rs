//! Chart values: reading `values.yaml`, merging several user sources
//! (`-f` files and `--set` flags), and Helm's coalescing of user values with
//! chart defaults and subchart values (`pkg/chart/common/util/coalesce.go`),
//! with the same warnings.
//!
//! Values are plain JSON objects, as Helm's are `map[string]interface{}`.
//! Coalescing never depends on the order of keys in a JSON object: Helm
//! walks Go maps in random order, and no result here depends on it except
//! the order of warnings, which are sorted by their first occurrence along a
//! sorted walk.

pub mod methods;
pub mod prepare;
pub mod strvals;

use crate::dependencies::ChartView;
use serde_json::{Map, Value as Json};

/// The values of a chart: a JSON object, as Helm's `map[string]interface{}`
/// (chartutil's `Values`).
pub type Values = Map<String, Json>;

/// Warnings Helm prints while coalescing (its `log.Printf` lines), in the
/// order they first occurred, without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Warnings(pub Vec<String>);

impl Warnings {
    pub fn push(&mut self, w: String) {
        if !self.0.contains(&w) {
            self.0.push(w);
        }
    }
}

/// A failure while coalescing values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesError {
    /// A subchart's key in the values is not a table.
    #[error("type mismatch on {name}: {value}")]
    TypeMismatch { name: String, value: String },
}

/// Reads a values file the way Helm's `loader.LoadValues` does: each YAML
/// document must be a mapping (or empty), and documents are merged in order.
pub fn read_values(text: &str) -> Result<Values, String> {
    thread_local! {
        static MEMO: std::cell::RefCell<gocodec::memo::Memo<Result<Values, String>>> =
            std::cell::RefCell::new(gocodec::memo::Memo::new(32 << 20));
    }
    if let Some(v) = MEMO.with(|m| m.borrow().get(text.as_bytes())) {
        return v;
    }
    let v = parse_values(text);
    MEMO.with(|m| m.borrow_mut().put(text.as_bytes(), v.clone()));
    v
}

pub(crate) fn parse_values(text: &str) -> Result<Values, String> {
    let mut values = Values::new();
    for doc in split_yaml_documents(text) {
        let parsed = gocodec::yaml::parse_yaml_to_json(&doc)
            .map_err(|e| format!("cannot unmarshal yaml document: {e}"))?;
        match parsed {
            Json::Null => {}
            Json::Object(m) => values = merge_maps_with_lists(values, m),
            other => {
                return Err(format!(
                    "cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    crate::chartfile::json_kind(&other)
                ))
            }
        }
    }
    Ok(values)
}

/// Splits a YAML stream into documents as Kubernetes' `YAMLReader` does: at
/// lines starting with `---` followed by nothing but spaces or a comment.
pub(crate) fn split_yaml_documents(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            let t = rest.trim();
            if t.is_empty() || t.starts_with('#') {
                if !cur.is_empty() {
                    docs.push(std::mem::take(&mut cur));
                }
                continue;
            }
        }
        cur.push_str(line);
    }
    if !cur.is_empty() {
        docs.push(cur);
    }
    docs
}

/// Helm's `loader.MergeMaps` for multi-document values files: tables merge
/// recursively, lists of the same kind are concatenated, anything else is
/// replaced by `b`.
fn merge_maps_with_lists(a: Values, b: Values) -> Values {
    let mut out = a;
    for (k, v) in b {
        match (out.remove(&k), v) {
            (Some(Json::Object(av)), Json::Object(bv)) => {
                out.insert(k, Json::Object(merge_maps_with_lists(av, bv)));
            }
            (Some(Json::Array(mut av)), Json::Array(bv)) => {
                av.extend(bv);
                out.insert(k, Json::Array(av));
            }
            (_, v) => {
                out.insert(k, v);
            }
        }
    }
    out
}

/// Merges user value sources the way `helm -f a.yaml -f b.yaml` does
/// (`mergeMaps` in `pkg/cli/values`): nested tables merge, anything else in a
/// later source replaces the earlier value (a `null` included; coalescing
/// removes it later).
pub(crate) fn merge_user_values(sources: impl IntoIterator<Item = Values>) -> Values {
    let mut base = Values::new();
    for s in sources {
        base = merge_maps(base, s);
    }
    base
}

/// Reads values files and merges them as `helm -f a.yaml -f b.yaml` does; errors name
/// the file.
pub fn read_values_files(files: &[std::path::PathBuf]) -> Result<Values, String> {
    let mut sources = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        sources.push(read_values(&text).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    Ok(merge_user_values(sources))
}

/// `mergeMaps` of `pkg/cli/values`: `b` wins, tables merge recursively.
pub fn merge_maps(a: Values, b: Values) -> Values {
    let mut out = a;
    for (k, v) in b {
        match (out.remove(&k), v) {
            (Some(Json::Object(av)), Json::Object(bv)) => {
                out.insert(k, Json::Object(merge_maps(av, bv)));
            }
            (_, v) => {
                out.insert(k, v);
            }
        }
    }
    out
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

/// Helm's `CoalesceValues`: user values `vals` over the chart's defaults,
/// then each subchart's defaults under its name, with `global` flowing down.
/// A `null` in the user values removes the key.
pub(crate) fn coalesce_values(
    chart: &ChartView<'_>,
    vals: &Values,
    warn: &mut Warnings,
) -> Result<Values, ValuesError> {
    let mut dest = vals.clone();
    coalesce(chart, &mut dest, "", false, warn)?;
    Ok(dest)
}

/// Helm's `MergeValues`: like [`coalesce_values`] but `null`s are kept.
pub(crate) fn merge_values(
    chart: &ChartView<'_>,
    vals: &Values,
    warn: &mut Warnings,
) -> Result<Values, ValuesError> {
    let mut dest = vals.clone();
    coalesce(chart, &mut dest, "", true, warn)?;
    Ok(dest)
}

fn coalesce(
    chart: &ChartView<'_>,
    dest: &mut Values,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) -> Result<(), ValuesError> {
    coalesce_chart_values(chart, dest, prefix, merge, warn);
    coalesce_deps(chart, dest, prefix, merge, warn)
}

fn coalesce_deps(
    chart: &ChartView<'_>,
    dest: &mut Values,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) -> Result<(), ValuesError> {
    for sub in &chart.dependencies {
        let name = sub.name().to_string();
        let mut dv = match dest.remove(&name) {
            None => Values::new(),
            Some(Json::Object(m)) => m,
            Some(other) => {
                let value = go_bad_verb_t(&other);
                dest.insert(name.clone(), other);
                return Err(ValuesError::TypeMismatch { name, value });
            }
        };
        let sub_prefix = concat_prefix(prefix, chart.name());
        coalesce_globals(&mut dv, dest, &sub_prefix, warn);
        let res = coalesce(sub, &mut dv, &sub_prefix, merge, warn);
        dest.insert(name, Json::Object(dv));
        res?;
    }
    Ok(())
}

/// Copies the parent's `global` table into the subchart's, the parent's
/// entries winning.
fn coalesce_globals(dest: &mut Values, src: &Values, prefix: &str, warn: &mut Warnings) {
    let mut dg = match dest.get("global") {
        None => Values::new(),
        Some(Json::Object(m)) => m.clone(),
        Some(_) => {
            warn.push(
                "warning: skipping globals because destination global is not a table.".into(),
            );
            return;
        }
    };
    let sg = match src.get("global") {
        None => Values::new(),
        Some(Json::Object(m)) => m.clone(),
        Some(_) => {
            warn.push("warning: skipping globals because source global is not a table.".into());
            return;
        }
    };
    for (key, val) in sg {
        if let Json::Object(vv) = val {
            let mut vv = vv;
            match dg.get(&key) {
                None => {
                    dg.insert(key, Json::Object(vv));
                }
                Some(Json::Object(destv)) => {
                    let destv = destv.clone();
                    coalesce_tables_full_key(
                        &mut vv,
                        destv,
                        &concat_prefix(prefix, &key),
                        true,
                        warn,
                    );
                    dg.insert(key, Json::Object(vv));
                }
                Some(_) => {
                    warn.push(format!(
                        "Conflict: cannot merge map onto non-map for {:?}. Skipping.",
                        key
                    ));
                }
            }
        } else if matches!(dg.get(&key), Some(Json::Object(_))) {
            warn.push(format!("key {key} is table. Skipping"));
        } else {
            dg.insert(key, val);
        }
    }
    dest.insert("global".into(), Json::Object(dg));
}

/// Helm's `coalesceValues`: the chart's own defaults under the values `v`.
fn coalesce_chart_values(
    chart: &ChartView<'_>,
    v: &mut Values,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) {
    let sub_prefix = concat_prefix(prefix, chart.name());
    for (key, val) in Values::clone(&chart.values) {
        if let Some(value) = v.get_mut(&key) {
            if value.is_null() && !merge {
                v.remove(&key);
            } else if let Json::Object(dest) = value {
                match val {
                    Json::Object(mut src) => {
                        // A subchart's table merges (keeping nulls).
                        let merge = merge || chart.dependencies.iter().any(|d| d.name() == key);
                        // Null defaults are dropped when coalescing (Helm
                        // v4.2.3; a later Helm keeps the top chart's own).
                        if !merge {
                            clean_nil_values(&mut src);
                        }
                        coalesce_tables_full_key(
                            dest,
                            src,
                            &concat_prefix(&sub_prefix, &key),
                            merge,
                            warn,
                        );
                    }
                    Json::Null => {}
                    _ => warn.push(format!(
                        "warning: skipped value for {sub_prefix}.{key}: Not a table."
                    )),
                }
            }
        } else {
            // Null defaults (also nested ones) are dropped when coalescing,
            // as Helm v4.2.3 does, so they neither shadow globals nor print
            // as `%!s(<nil>)`.
            let mut val = val;
            if !merge {
                match &mut val {
                    Json::Null => continue,
                    Json::Object(m) => clean_nil_values(m),
                    _ => {}
                }
            }
            v.insert(key, val);
        }
    }
}

/// Helm's `CoalesceTables`: `dst` wins over `src`; a `null` in `dst` removes
/// the key when `src` had a value.
pub fn coalesce_tables(dst: &mut Values, src: Values, warn: &mut Warnings) {
    coalesce_tables_full_key(dst, src, "", false, warn)
}

/// Helm's `MergeTables`: like [`coalesce_tables`], keeping `null`s.
pub(crate) fn merge_tables(dst: &mut Values, src: Values, warn: &mut Warnings) {
    coalesce_tables_full_key(dst, src, "", true, warn)
}

fn coalesce_tables_full_key(
    dst: &mut Values,
    mut src: Values,
    prefix: &str,
    merge: bool,
    warn: &mut Warnings,
) {
    let src_non_nil: std::collections::BTreeSet<String> = src
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    for (k, v) in dst.iter() {
        if v.is_null() {
            src.insert(k.clone(), Json::Null);
        }
    }
    for (key, val) in src {
        let full_key = concat_prefix(prefix, &key);
        match dst.get_mut(&key) {
            Some(dv) if !merge && dv.is_null() && src_non_nil.contains(&key) => {
                dst.remove(&key);
            }
            None => {
                dst.insert(key, val);
            }
            Some(dv) => match (dv, val) {
                (Json::Object(dvm), Json::Object(valm)) => {
                    coalesce_tables_full_key(dvm, valm, &full_key, merge, warn);
                }
                (_, val @ Json::Object(_)) => warn.push(format!(
                    "warning: cannot overwrite table with non table for {full_key} ({})",
                    go_sprint(&val)
                )),
                (Json::Object(_), val) if !val.is_null() => warn.push(format!(
                    "warning: destination for {full_key} is a table. Ignoring non-table value ({})",
                    go_sprint(&val)
                )),
                _ => {}
            },
        }
    }
}

/// Removes `null` entries, recursively, so subchart defaults' nulls do not
/// leak into the result.
fn clean_nil_values(m: &mut Values) {
    m.retain(|_, v| !v.is_null());
    for v in m.values_mut() {
        if let Json::Object(sub) = v {
            clean_nil_values(sub);
        }
    }
}

/// Looks a dotted path up the way Helm's `Values.Table` does: every part must
/// be a table.
pub fn table<'a>(vals: &'a Values, path: &str) -> Option<&'a Values> {
    let mut cur = vals;
    for part in path.split('.') {
        match cur.get(part) {
            Some(Json::Object(m)) => cur = m,
            _ => return None,
        }
    }
    Some(cur)
}

/// Helm's `Values.PathValue`: the non-table value at a dotted path.
pub(crate) fn path_value<'a>(vals: &'a Values, path: &str) -> Option<&'a Json> {
    if path.is_empty() {
        return None;
    }
    let (parent, key) = match path.rsplit_once('.') {
        Some((p, k)) => (table(vals, p)?, k),
        None => (vals, path),
    };
    match parent.get(key) {
        Some(Json::Object(_)) | None => None,
        Some(v) => Some(v),
    }
}

/// Go's `%v` of a JSON value (numbers are float64), for warning texts.
pub(crate) fn go_sprint(v: &Json) -> String {
    gotmpl::fmt::format_value(&gotmpl::Value::from_json(v))
}

/// Go's `%t` of a non-bool value (`%!t(type=value)`), for Helm's
/// "type mismatch" error.
fn go_bad_verb_t(v: &Json) -> String {
    gotmpl::fmt::sprintf("%t", &[gotmpl::Value::from_json(v)])
}

/// Converts a JSON value known to be an object into [`Values`].
pub fn as_values(v: Json) -> Values {
    match v {
        Json::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests;
