//! Byte-level judging of a render against Helm's expected render. The corpus's
//! `expected/<chart>/<scenario>.json` holds, per template, the exact text Helm's
//! engine produced, and under `nondeterministic` the values that change from
//! run to run (random passwords, keys, certificates, and checksums of them).
//! A render passes when every file's text equals Helm's byte for byte, the
//! error too when the render fails; in a file with such values, the text must
//! be equal once those values — and nothing else — are blotted out on both
//! sides (the oracle's `compare`, by contrast, judges parsed documents).

use std::collections::BTreeMap;

use serde_json::Value;

/// How close a render came to Helm's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exactness {
    /// Every file (or the error) byte for byte.
    Identical,
    /// Byte for byte outside the values Helm renders differently on every run,
    /// in this many files.
    IdenticalOutsideRandomValues(usize),
}

/// Marks a blotted-out random value.
const BLOT: char = '\u{1}';

/// Random values shorter than this are not blotted out: they would match
/// too much of the text around them.
const MIN_FRAGMENT: usize = 6;

/// Judges `actual` (in `helm-oracle render`'s JSON shape) against `expected`
/// (an expected render of the corpus) byte for byte; `Err` says where they part.
pub fn compare(expected: &Value, actual: &Value) -> Result<Exactness, String> {
    let (e_err, a_err) = (expected["error"].as_str(), actual["error"].as_str());
    if e_err.is_some() || a_err.is_some() {
        return match (e_err, a_err) {
            (Some(e), Some(a)) if e == a => Ok(Exactness::Identical),
            (Some(e), Some(a)) => Err(format!("error text differs: expected {e:?}, got {a:?}")),
            (Some(e), None) => Err(format!("expected the error {e:?}, got a render")),
            (None, _) => Err(format!("expected a render, got the error {a_err:?}")),
        };
    }
    let empty = serde_json::Map::new();
    let em = expected["manifests"].as_object().unwrap_or(&empty);
    let am = actual["manifests"].as_object().unwrap_or(&empty);
    if let Some(f) = em.keys().find(|f| !am.contains_key(*f)) {
        return Err(format!("{f}: missing"));
    }
    if let Some(f) = am.keys().find(|f| !em.contains_key(*f)) {
        return Err(format!("{f}: not in Helm's render"));
    }
    let masks = masks(expected);
    let mut blotted = 0;
    for (file, e) in em {
        let (e, a) = (
            e.as_str().unwrap_or_default(),
            am[file].as_str().unwrap_or_default(),
        );
        if e == a {
            continue;
        }
        let Some(file_masks) = masks.get(file.as_str()) else {
            return Err(format!("{file}: {}", first_difference(e, a)));
        };
        if file_masks.whole_file {
            // Even the documents vary from run to run: nothing to compare.
            blotted += 1;
            continue;
        }
        let (eb, ab) = (blot(file, e, file_masks), blot(file, a, file_masks));
        if eb != ab {
            return Err(format!(
                "{file}: {} (outside its random values)",
                first_difference(&eb, &ab)
            ));
        }
        blotted += 1;
    }
    Ok(match blotted {
        0 => Exactness::Identical,
        n => Exactness::IdenticalOutsideRandomValues(n),
    })
}

/// The random values of one file: JSON pointers by document identity.
#[derive(Debug, Default)]
struct FileMasks {
    whole_file: bool,
    pointers: BTreeMap<String, Vec<String>>,
}

/// The expected render's `nondeterministic` list (`file\tdocument\tpointer`).
fn masks(expected: &Value) -> BTreeMap<&str, FileMasks> {
    let mut out: BTreeMap<&str, FileMasks> = BTreeMap::new();
    for spec in expected["nondeterministic"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut parts = spec.as_str().unwrap_or_default().splitn(3, '\t');
        let (Some(file), Some(doc)) = (parts.next(), parts.next()) else {
            continue;
        };
        let pointer = parts.next().unwrap_or_default().to_string();
        let m = out.entry(file).or_default();
        if doc == "*" {
            m.whole_file = true;
        } else {
            m.pointers.entry(doc.to_string()).or_default().push(pointer);
        }
    }
    out
}

/// `text` with the file's random values replaced by a mark, and each run of
/// lines that held nothing but a random value (a certificate's lines, whose
/// number may vary) cut to one line.
fn blot(file: &str, text: &str, masks: &FileMasks) -> String {
    let mut fragments = fragments(file, text, masks);
    fragments.sort_by_key(|f| std::cmp::Reverse(f.len()));
    fragments.dedup();
    let mut out: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let mut line = line.to_string();
        for f in &fragments {
            if line.contains(f.as_str()) {
                line = line.replace(f.as_str(), &BLOT.to_string());
            }
        }
        let only_blots = |l: &str| {
            let t = l.trim();
            !t.is_empty() && t.chars().all(|c| c == BLOT)
        };
        if only_blots(&line) {
            let indent = line.len() - line.trim_start().len();
            let bare = format!("{}{BLOT}", &line[..indent]);
            if out.last() == Some(&bare) {
                continue;
            }
            line = bare;
        }
        out.push(line);
    }
    out.join("\n")
}

/// The texts of a file's random values: every string (or number) at the
/// masked pointers of its documents, line by line.
fn fragments(file: &str, text: &str, masks: &FileMasks) -> Vec<String> {
    let docs = documents(file, text);
    let mut out = Vec::new();
    for (ident, pointers) in &masks.pointers {
        let doc = match ident.strip_prefix('@') {
            Some(pos) => pos
                .parse::<usize>()
                .ok()
                .and_then(|i| docs.get(i))
                .map(|(_, d)| d),
            None => docs.iter().find(|(id, _)| id == ident).map(|(_, d)| d),
        };
        let Some(doc) = doc else {
            continue;
        };
        for p in pointers {
            let (pointer, line) = match p.rsplit_once("#L") {
                Some((ptr, n)) if n.chars().all(|c| c.is_ascii_digit()) => (ptr, n.parse().ok()),
                _ => (p.as_str(), None),
            };
            if let Some(v) = doc.pointer(pointer) {
                leaves(v, line, &mut out);
            }
        }
    }
    out.retain(|f| f.len() >= MIN_FRAGMENT);
    out
}

/// Strings and numbers under `v`, each line separately (only line `only` of
/// a multi-line string when given).
fn leaves(v: &Value, only: Option<usize>, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            for (i, line) in s.split('\n').enumerate() {
                if only.is_none_or(|n| n == i) {
                    out.push(line.trim().to_string());
                }
            }
        }
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| leaves(i, only, out)),
        Value::Object(m) => m.values().for_each(|i| leaves(i, only, out)),
        _ => {}
    }
}

/// A file's documents as the oracle identifies them
/// (`apiVersion|kind|namespace|name#n`); a file that is not YAML is one text.
fn documents(file: &str, text: &str) -> Vec<(String, Value)> {
    let yaml = file.ends_with(".yaml")
        || file.ends_with(".yml")
        || file.ends_with(".tpl")
        || file.ends_with(".json")
        || file.contains("/crds/");
    if file.ends_with("NOTES.txt") || !yaml {
        return vec![("text#0".into(), Value::String(text.to_string()))];
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for piece in chart::manifest::split_documents(text) {
        let piece = piece.trim();
        let doc = match gocodec::yaml::parse_yaml_to_json(piece) {
            Ok(Value::Null) => continue,
            Ok(d) => d,
            Err(_) => Value::String(piece.to_string()),
        };
        let ident = match &doc {
            Value::Object(m) => {
                let s =
                    |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
                let md = m.get("metadata");
                let name = md
                    .and_then(|md| md.get("name").or_else(|| md.get("generateName")))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                format!(
                    "{}|{}|{}|{name}",
                    s(m.get("apiVersion")),
                    s(m.get("kind")),
                    s(md.and_then(|md| md.get("namespace")))
                )
            }
            Value::String(_) => "text".into(),
            _ => "scalar".into(),
        };
        let n = seen.entry(ident.clone()).or_default();
        out.push((format!("{ident}#{n}"), doc));
        *n += 1;
    }
    out
}

/// The first line where two texts part, both sides shown.
fn first_difference(e: &str, a: &str) -> String {
    let (el, al): (Vec<&str>, Vec<&str>) = (e.split('\n').collect(), a.split('\n').collect());
    for i in 0..el.len().max(al.len()) {
        let (x, y) = (el.get(i), al.get(i));
        if x != y {
            let show = |l: Option<&&str>| match l {
                Some(l) => format!("{:?}", l.chars().take(100).collect::<String>()),
                None => "end of text".into(),
            };
            return format!("line {}: expected {}, got {}", i + 1, show(x), show(y));
        }
    }
    "texts differ".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(files: &[(&str, &str)]) -> Value {
        let m: serde_json::Map<String, Value> = files
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        json!({"manifests": m, "error": null})
    }

    const SECRET: &str =
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  password: \"RANDOMVALUE1\"\n";

    #[test]
    fn equal_bytes_are_identical_and_a_blank_line_is_not() {
        let e = render(&[("c/templates/a.yaml", "kind: A\n\n")]);
        assert_eq!(compare(&e, &e), Ok(Exactness::Identical));
        let a = render(&[("c/templates/a.yaml", "kind: A\n")]);
        let err = compare(&e, &a).unwrap_err();
        assert!(err.contains("c/templates/a.yaml: line 3"), "{err}");
    }

    #[test]
    fn only_random_values_may_differ() {
        let mut e = render(&[("c/templates/s.yaml", SECRET)]);
        e["nondeterministic"] = json!(["c/templates/s.yaml\tv1|Secret||s#0\t/data/password"]);
        let a = render(&[(
            "c/templates/s.yaml",
            &SECRET.replace("RANDOMVALUE1", "OTHERRANDOM2"),
        )]);
        assert_eq!(
            compare(&e, &a),
            Ok(Exactness::IdenticalOutsideRandomValues(1))
        );
        // Quoting around the random value is still compared.
        let a = render(&[(
            "c/templates/s.yaml",
            &SECRET.replace("\"RANDOMVALUE1\"", "OTHERRANDOM2"),
        )]);
        assert!(compare(&e, &a).is_err());
        // So is everything else in the file.
        let a = render(&[(
            "c/templates/s.yaml",
            &SECRET
                .replace("RANDOMVALUE1", "OTHERRANDOM2")
                .replace("name: s", "name: t"),
        )]);
        assert!(compare(&e, &a).is_err());
    }

    #[test]
    fn certificates_may_take_more_lines() {
        let cert =
            |lines: &[&str]| {
                format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  ca.crt: |\n{}\n",
                lines.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
            )
            };
        let mut e = render(&[("c/templates/c.yaml", &cert(&["AAAAAAAAAA", "BBBBBBBBBB"]))]);
        e["nondeterministic"] = json!(["c/templates/c.yaml\tv1|ConfigMap||c#0\t/data/ca.crt"]);
        let a = render(&[(
            "c/templates/c.yaml",
            &cert(&["CCCCCCCCCC", "DDDDDDDDDD", "EEEEEEEEEE"]),
        )]);
        assert_eq!(
            compare(&e, &a),
            Ok(Exactness::IdenticalOutsideRandomValues(1))
        );
    }

    #[test]
    fn errors_compare_as_text() {
        let e = json!({"manifests": {}, "error": "boom"});
        assert_eq!(compare(&e, &e), Ok(Exactness::Identical));
        assert!(compare(&e, &json!({"manifests": {}, "error": "bang"})).is_err());
        assert!(compare(&e, &render(&[])).is_err());
    }
}
