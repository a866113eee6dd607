//! The inputs digest of a release: sha256 over everything that decides what the chart
//! renders (chart metadata, templates, values files, schema, other files, subcharts)
//! and the merged values as canonical JSON. Stored as a label on each record, it tells
//! "inputs unchanged" without rendering, so charts with random output never upgrade
//! in a loop.
//!
//! The chart is fixed per watch, so its part is hashed once ([`ChartDigest::new`]) and
//! each reconcile only adds its values.

use chart::loader::Chart;
use chart::values::Values;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The record label holding the digest.
pub(crate) const LABEL: &str = "rudder.dev/inputs-digest";
/// Label values are limited to 63 characters.
const MAX_LABEL: usize = 63;

/// The chart's part of the inputs digest, hashed once per chart load.
#[derive(Clone)]
pub(crate) struct ChartDigest {
    /// The hasher state after the chart.
    state: Sha256,
    /// Some template (of the chart or a subchart) calls `lookup`: what it renders
    /// depends on the cluster too, which the digest cannot see.
    uses_lookup: bool,
}

impl std::fmt::Debug for ChartDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChartDigest(..)")
    }
}

impl ChartDigest {
    /// Hashes `chart` (and its subcharts).
    pub(crate) fn new(chart: &Chart) -> ChartDigest {
        let mut state = Sha256::new();
        field(&mut state, b"rudder-inputs-v1");
        hash_chart(&mut state, chart);
        ChartDigest {
            state,
            uses_lookup: calls_lookup(chart),
        }
    }

    /// Whether a template may call `lookup` (a word search, so a mention in a
    /// comment counts too: that only costs a render per periodic reconcile).
    pub(crate) fn uses_lookup(&self) -> bool {
        self.uses_lookup
    }

    /// The digest of the chart with `values`, as a label value (hex, 63 chars).
    pub(crate) fn with_values(&self, values: &Values) -> String {
        let mut h = self.state.clone();
        let mut json = Vec::new();
        canonical(&Value::Object(values.clone()), &mut json);
        field(&mut h, b"values");
        field(&mut h, &json);
        let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        hex[..MAX_LABEL].to_string()
    }
}

/// The digest of a chart and its merged values, as a label value (hex, 63 chars).
#[cfg(test)]
pub(crate) fn inputs_digest(chart: &Chart, values: &Values) -> String {
    ChartDigest::new(chart).with_values(values)
}

fn calls_lookup(chart: &Chart) -> bool {
    let word = b"lookup";
    chart
        .templates
        .iter()
        .any(|t| t.data.windows(word.len()).any(|w| w == word))
        || chart.dependencies.iter().any(calls_lookup)
}

/// A length-prefixed field, so concatenations cannot collide.
fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
}

fn hash_chart(h: &mut Sha256, chart: &Chart) {
    field(h, b"chart");
    let mut meta = action::chart_metadata(chart);
    // Records used to leave these out, and so did the digest: hashing them now would
    // change the digest of every deployed release whose chart has maintainers or
    // dependencies, and the operator's next start would upgrade each of them once
    // (running its hooks) for nothing. Subcharts and values are hashed below.
    meta.maintainers.clear();
    meta.dependencies.clear();
    let meta = serde_json::to_value(meta).unwrap_or(Value::Null);
    let mut buf = Vec::new();
    canonical(&meta, &mut buf);
    field(h, &buf);
    for (tag, files) in [("templates", &chart.templates), ("files", &chart.files)] {
        field(h, tag.as_bytes());
        h.update((files.len() as u64).to_be_bytes());
        for f in files {
            field(h, f.name.as_bytes());
            field(h, &f.data);
        }
    }
    buf.clear();
    canonical(&Value::Object(chart.values.clone()), &mut buf);
    field(h, b"chart-values");
    field(h, &buf);
    field(h, b"schema");
    field(h, chart.schema.as_deref().unwrap_or_default());
    field(h, b"dependencies");
    h.update((chart.dependencies.len() as u64).to_be_bytes());
    for dep in &chart.dependencies {
        hash_chart(h, dep);
    }
}

/// JSON with object keys sorted at every level, whatever order the map keeps.
pub(crate) fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            out.push(b'{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                canonical(&m[k], out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chart() -> Chart {
        let mut c = Chart::default();
        c.metadata.name = "demo".into();
        c.metadata.version = "0.1.0".into();
        c.templates.push(chart::loader::File {
            name: "templates/a.yaml".into(),
            data: b"kind: ConfigMap"[..].into(),
        });
        c
    }

    fn values(v: Value) -> Values {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn digest_is_stable_and_sensitive() {
        let c = chart();
        let a = inputs_digest(&c, &values(json!({"a": 1, "b": {"c": 2}})));
        let b = inputs_digest(&c, &values(json!({"b": {"c": 2}, "a": 1})));
        assert_eq!(a, b);
        assert_eq!(a.len(), 63);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(
            a,
            inputs_digest(&c, &values(json!({"a": 2, "b": {"c": 2}})))
        );
        let mut c2 = chart();
        c2.templates[0].data = b"kind: Secret"[..].into();
        assert_ne!(
            a,
            inputs_digest(&c2, &values(json!({"a": 1, "b": {"c": 2}})))
        );
        let mut c3 = chart();
        c3.dependencies.push(chart());
        assert_ne!(
            a,
            inputs_digest(&c3, &values(json!({"a": 1, "b": {"c": 2}})))
        );
    }

    #[test]
    fn lookups_are_found_in_subcharts_too() {
        assert!(!ChartDigest::new(&chart()).uses_lookup());
        let mut sub = chart();
        sub.templates[0].data = b"{{ (lookup \"v1\" \"ConfigMap\" \"\" \"x\").data }}"[..].into();
        let mut parent = chart();
        parent.dependencies.push(sub);
        assert!(ChartDigest::new(&parent).uses_lookup());
    }

    #[test]
    fn the_chart_part_is_hashed_once_and_reused() {
        let c = chart();
        let once = ChartDigest::new(&c);
        for v in [json!({}), json!({"a": 1}), json!({"b": [1, 2]})] {
            assert_eq!(
                once.with_values(&values(v.clone())),
                inputs_digest(&c, &values(v))
            );
        }
        // Unchanged from before the split: records written then keep matching.
        assert_eq!(
            inputs_digest(&c, &values(json!({"a": 1}))),
            "8407a7921636ff37652817818f898e3e82cb2164c448c61b814129eca0c1cb1"
        );
    }

    #[test]
    fn maintainers_and_dependency_entries_keep_the_digest_records_were_stamped_with() {
        let load = |chart_yaml: &str| {
            let file = |name: &str, data: &str| chart::loader::BufferedFile {
                name: name.into(),
                data: data.as_bytes().to_vec(),
            };
            chart::loader::load_files(vec![
                file("Chart.yaml", chart_yaml),
                file("templates/a.yaml", "kind: ConfigMap"),
            ])
            .expect("chart loads")
        };
        let plain = load("apiVersion: v2\nname: demo\nversion: 0.1.0\n");
        let full = load(
            "apiVersion: v2\nname: demo\nversion: 0.1.0\nmaintainers: [{name: Ada}]\n\
             dependencies: [{name: sub, version: 0.1.0, repository: ''}]\n",
        );
        assert_eq!(
            action::chart_metadata(&full).maintainers.len(),
            1,
            "the record keeps the maintainers"
        );
        let v = values(json!({"a": 1}));
        assert_eq!(inputs_digest(&full, &v), inputs_digest(&plain, &v));
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let mut out = Vec::new();
        canonical(
            &json!({"z": [1, {"b": "x", "a": null}], "a": true}),
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":true,"z":[1,{"a":null,"b":"x"}]}"#
        );
    }
}
