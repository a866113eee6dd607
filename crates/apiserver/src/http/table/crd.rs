//! Custom resources' columns: the CRD version's
//! `additionalPrinterColumns`, each cell read with the JSONPath subset
//! they use, or AGE when a version declares none.

use super::{CellFn, Printer};
use crate::App;
use apitypes::printers::{col_json, describe, human_duration, parse_rfc3339, NAME};
use serde_json::{json, Value};

/// The printer of the custom resources of `crd` at `version`.
pub(super) fn printer(app: &App, crd: &str, version: &str) -> Printer {
    let def = app
        .store
        .get(&format!(
            "apiextensions.k8s.io/customresourcedefinitions//{crd}"
        ))
        .and_then(|c| {
            c.pointer("/spec/versions")
                .and_then(Value::as_array)
                .and_then(|vs| {
                    vs.iter()
                        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
                        .cloned()
                })
        })
        .and_then(|v| v.get("additionalPrinterColumns").cloned())
        .and_then(|v| v.as_array().cloned())
        .filter(|a| !a.is_empty())
        // No printer columns: the real server shows AGE from the creation time.
        .unwrap_or_else(|| {
            vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
        });
    let mut columns = vec![col_json(
        NAME.name,
        NAME.kind,
        NAME.format,
        0,
        &describe("Name"),
    )];
    let mut paths = Vec::new();
    let mut kinds = Vec::new();
    for d in &def {
        let name = d.get("name").and_then(Value::as_str).unwrap_or_default();
        let kind = d.get("type").and_then(Value::as_str).unwrap_or("string");
        columns.push(json!({
            "name": name,
            "type": kind,
            "format": d.get("format").and_then(Value::as_str).unwrap_or_default(),
            "description": d.get("description").and_then(Value::as_str).unwrap_or_default(),
            "priority": d.get("priority").and_then(Value::as_u64).unwrap_or(0),
        }));
        paths.push(
            d.get("jsonPath")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        );
        kinds.push(kind.to_string());
    }
    Printer {
        columns,
        cells: CellFn::Custom(paths, kinds),
    }
}

/// One cell of a custom column: the first value at `path`, shown as the
/// column's `type` says.
pub(super) fn cell(obj: &Value, path: &str, kind: &str, now: u64) -> Value {
    let found = jsonpath(obj, path);
    let Some(v) = found.first() else {
        return Value::Null;
    };
    match kind {
        "date" => v
            .as_str()
            .and_then(parse_rfc3339)
            .map(|t| json!(human_duration(now as i64 - t as i64)))
            .unwrap_or(Value::Null),
        "integer" | "number" | "boolean" => (*v).clone(),
        _ => match v {
            Value::String(s) => json!(s),
            other => json!(other.to_string()),
        },
    }
}

/// Evaluates the JSONPath subset CRD printer columns use: `.a.b`, `.a[0]`,
/// `.a[*].b` and `.a[?(@.k=="v")].b`. Unsupported syntax yields nothing.
pub(crate) fn jsonpath<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut cur: Vec<&Value> = vec![obj];
    let mut rest = path.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            rest = &r[end..];
            if key.is_empty() {
                continue;
            }
            cur = cur.into_iter().filter_map(|v| v.get(key)).collect();
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Vec::new();
            };
            // A filter may itself contain ']' only inside quotes; the subset
            // supported here does not.
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                cur = cur
                    .into_iter()
                    .flat_map(|v| match v {
                        Value::Array(a) => a.iter().collect::<Vec<_>>(),
                        Value::Object(m) => m.values().collect(),
                        _ => Vec::new(),
                    })
                    .collect();
            } else if let Ok(i) = inner.parse::<i64>() {
                cur = cur
                    .into_iter()
                    .filter_map(|v| {
                        let a = v.as_array()?;
                        let idx = if i < 0 { a.len() as i64 + i } else { i };
                        usize::try_from(idx).ok().and_then(|i| a.get(i))
                    })
                    .collect();
            } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                let Some((lhs, rhs)) = f.split_once("==") else {
                    return Vec::new();
                };
                let field = lhs.trim().trim_start_matches('@').trim_start_matches('.');
                let want = rhs.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .into_iter()
                    .filter_map(Value::as_array)
                    .flatten()
                    .filter(|item| {
                        let mut v = Some(*item);
                        for p in field.split('.') {
                            v = v.and_then(|x| x.get(p));
                        }
                        match v {
                            Some(Value::String(s)) => s == want,
                            Some(Value::Bool(b)) => b.to_string() == want,
                            Some(Value::Number(x)) => x.as_f64() == want.parse::<f64>().ok(),
                            Some(_) => false,
                            None => false,
                        }
                    })
                    .collect();
            } else {
                let key = inner.trim_matches(|c| c == '"' || c == '\'');
                cur = cur.into_iter().filter_map(|v| v.get(key)).collect();
            }
        } else {
            return Vec::new();
        }
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpaths() {
        let o = json!({"spec": {"size": 3, "items": [{"name": "a"}, {"name": "b"}]},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(jsonpath(&o, ".spec.size"), vec![&json!(3)]);
        assert_eq!(jsonpath(&o, ".spec.items[1].name"), vec![&json!("b")]);
        assert_eq!(
            jsonpath(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![&json!("True")]
        );
        assert_eq!(jsonpath(&o, ".spec.items[*].name").len(), 2);
        assert!(jsonpath(&o, ".spec.missing").is_empty());
        assert!(jsonpath(&o, "garbage").is_empty());
    }
}
