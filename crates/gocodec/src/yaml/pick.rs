//! A few values of a YAML document, read as `sigs.k8s.io/yaml.Unmarshal`
//! reads the whole of it: what sorting rendered manifests needs, which
//! looks only at each document's head (Helm's `releaseutil.SimpleHead`)
//! but must refuse every document Helm refuses, with Helm's message.
//!
//! The document is decoded in full, as [`super::parse_yaml_to_json`]
//! decodes it, so that every decoding error is met in the same place.
//! Only the conversion to JSON is cut short: the picked values are
//! converted, and everything else is only checked for what the conversion
//! would refuse (non-finite floats, keys JSON has no string for), in the
//! same order, so that the first error is the one the full conversion
//! would have returned.

use serde_json::Value as J;

use super::parse::{dismantle, json_key, non_finite, to_json, Node};
use super::YamlError;
use crate::depth::guarded;

/// A path still to follow from the node being walked: which slot of the
/// result it fills, and the mapping keys left to go down.
type Wanted<'p> = (usize, &'p [&'p str]);

/// The values at `paths` of the JSON form of `doc`, in `paths` order;
/// `None` where a key is missing or a value on the way is not a mapping.
/// No path may be a prefix of another (each picked value is moved out of
/// the document once).
pub(crate) fn pick(doc: Node, paths: &[&[&str]]) -> Result<Vec<Option<J>>, YamlError> {
    let mut out: Vec<Option<J>> = std::iter::repeat_with(|| None).take(paths.len()).collect();
    let wanted: Vec<Wanted> = paths.iter().copied().enumerate().collect();
    walk(doc, &wanted, &mut out)?;
    Ok(out)
}

/// [`pick`] from a document already in JSON form (the deep JSON that
/// [`super::parse_yaml_to_json`] reads as JSON rather than YAML).
pub(crate) fn pick_json(mut doc: J, paths: &[&[&str]]) -> Vec<Option<J>> {
    let out = paths
        .iter()
        .map(|path| {
            let mut at = &mut doc;
            for key in *path {
                at = at.as_object_mut()?.get_mut(*key)?;
            }
            Some(at.take())
        })
        .collect();
    crate::depth::drop_json(doc);
    out
}

/// Walks `n` along `wanted` (never empty), filling their slots of `out`.
fn walk(n: Node, wanted: &[Wanted], out: &mut [Option<J>]) -> Result<(), YamlError> {
    if let Some(&(slot, _)) = wanted.iter().find(|(_, rest)| rest.is_empty()) {
        // Paths are prefix-free: this is the only path that reaches here.
        out[slot] = Some(to_json(n)?);
        return Ok(());
    }
    let Node::Map(entries) = n else {
        // Nothing below a scalar or a sequence is picked.
        let checked = check(&n);
        dismantle(n);
        return checked;
    };
    guarded(|| {
        let mut rest = entries.into_iter();
        while let Some((k, v)) = rest.next() {
            let read = entry(k, v, wanted, out);
            if read.is_err() {
                rest.for_each(|(k, v)| {
                    dismantle(k);
                    dismantle(v);
                });
                return read;
            }
        }
        Ok(())
    })
}

/// One mapping entry of a walk: followed when a path goes on through its
/// key, else only checked.
fn entry(k: Node, v: Node, wanted: &[Wanted], out: &mut [Option<J>]) -> Result<(), YamlError> {
    let key = match json_key(&k, &v) {
        Ok(key) => key,
        Err(e) => {
            dismantle(k);
            dismantle(v);
            return Err(e);
        }
    };
    let below: Vec<Wanted> = wanted
        .iter()
        .filter(|(_, rest)| rest[0] == key)
        .map(|&(slot, rest)| (slot, &rest[1..]))
        .collect();
    drop(key);
    dismantle(k);
    if below.is_empty() {
        let checked = check(&v);
        dismantle(v);
        return checked;
    }
    // A key seen again (a string and, say, a bool that prints the same)
    // replaces what an earlier entry gave, as in the JSON object.
    for &(slot, _) in &below {
        if let Some(old) = out[slot].take() {
            crate::depth::drop_json(old);
        }
    }
    walk(v, &below, out)
}

/// Whether [`to_json`] would convert `n`, and if not, its first error.
fn check(n: &Node) -> Result<(), YamlError> {
    match n {
        Node::Float(f) if !f.is_finite() => Err(non_finite(*f)),
        Node::Seq(items) => guarded(|| items.iter().try_for_each(check)),
        Node::Map(entries) => guarded(|| {
            entries.iter().try_for_each(|(k, v)| {
                json_key(k, v)?;
                check(v)
            })
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_yaml_picks, parse_yaml_to_json};
    use super::*;

    /// What the picks must equal: the whole document converted, then
    /// looked up.
    fn reference(text: &str, paths: &[&[&str]]) -> Result<Vec<Option<J>>, YamlError> {
        let doc = parse_yaml_to_json(text)?;
        Ok(paths
            .iter()
            .map(|path| {
                let mut at = &doc;
                for key in *path {
                    at = at.as_object()?.get(*key)?;
                }
                Some(at.clone())
            })
            .collect())
    }

    /// Path sets to pick with: a manifest's head, none (checking only),
    /// the whole document, and keys that other keys print as.
    const PATH_SETS: &[&[&[&str]]] = &[
        &[
            &["apiVersion"],
            &["kind"],
            &["metadata", "name"],
            &["metadata", "namespace"],
            &["metadata", "annotations"],
        ],
        &[],
        &[&[]],
        &[
            &["true"],
            &["1"],
            &["spec", "x"],
            &["metadata", "name", "deeper"],
        ],
    ];

    fn agrees(text: &str) -> bool {
        let mut failed = false;
        for paths in PATH_SETS {
            let want = reference(text, paths);
            assert_eq!(parse_yaml_picks(text, paths), want, "{text:?} {paths:?}");
            failed |= want.is_err();
        }
        failed
    }

    /// Heads of manifests, good and odd.
    const HEADS: &[&str] = &[
        "apiVersion: v1\nkind: Job\nmetadata:\n  name: j\n  namespace: ns\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n",
        "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook-weight: 5\n    helm.sh/hook: test\n",
        "kind: ConfigMap\nmetadata:\n  annotations: {a: {b: [1, 2]}, c: null, d: 1.5, e: true, f: 0x10}\n",
        "kind: 5\napiVersion: [v1]\nmetadata:\n  name: 12\n  namespace:\n",
        "kind: {a: b}\nmetadata: x\n",
        "metadata: [1, 2]\n",
        "on: 1\nyes: 2\n1: a\n1.5: b\n\"kind\": Quoted\n'apiVersion': v2\n",
        "kind: A\nkind: B\nmetadata:\n  name: a\nmetadata:\n  namespace: n\n",
        "true: a\n\"true\": b\n1: c\n'1': d\n1.0: e\n",
        "base: &b\n  kind: K\n  metadata: &m\n    name: n\n<<: *b\n",
        "x: &m {name: a, annotations: {k: v}}\nmetadata: *m\nkind: *m\n",
        "metadata:\n  <<: {name: merged, namespace: ns}\n  name: own\n",
        "metadata:\n  <<: [{name: a}, {name: b, namespace: c}]\n",
        "kind: !!str 5\nmetadata: !!map {name: !!binary aGVsbG8=}\napiVersion: !!float 1\n",
        "kind: .nan\n",
        "metadata:\n  name: .inf\n",
        "metadata:\n  annotations:\n    a: -.inf\n",
        "metadata:\n  annotations:\n    ~: v\n",
        "metadata:\n  ~: v\n",
        "metadata:\n  18446744073709551615: v\n",
        "kind: [a\n",
        "metadata:\n  name: a: b\n",
        "metadata:\n\tname: x\n",
        "metadata:\n  name: *nope\n",
        "metadata:\n  <<: 1\n",
        "metadata:\n  <<: [1]\n",
        "? [a, b]\n: 1\n",
        "? {a: b}\n: 1\n",
        "kind: !!int x\n",
        "",
    ];

    /// The rest of a document, good and bad.
    const BODIES: &[&str] = &[
        "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: c\n        image: i\n",
        "data:\n  a: |\n    text\n  b: >\n    folded\n",
        "spec:\n  x: .inf\n",
        "spec:\n  list: [1, .nan]\n",
        "spec:\n  x: .inf\nspec:\n  x: 1\n",
        "spec:\n  <<: {x: .inf}\n  x: 2\n",
        "spec:\n  a: 1\n  b: .nan\n  a: .inf\n",
        "spec:\n  ~: 1\n",
        "spec:\n  - a\n  b: c\n",
        "spec: !!int x\n",
        "spec: *nope\n",
        "spec: !!binary \"@@\"\n",
        "spec: [unclosed\n",
        "spec:\n  18446744073709551615: x\n",
        "spec:\n  ? [a]\n  : x\n",
        "spec: &s {x: 1}\nother: *s\n",
        "spec:\n  <<: [1, 2]\n",
        "spec: \"\u{1}\"\n",
        "status: {}\n",
    ];

    #[test]
    fn picks_and_errors_equal_the_whole_conversion() {
        let mut failures = 0;
        let mut total = 0;
        for head in HEADS {
            agrees(head);
            for body in BODIES {
                for text in [format!("{head}{body}"), format!("{body}{head}")] {
                    total += 1;
                    if agrees(&text) {
                        failures += 1;
                    }
                }
            }
        }
        // Both kinds of document are met, many of each.
        assert!(
            failures > 500 && total - failures > 100,
            "{failures} of {total}"
        );
    }

    #[test]
    fn the_first_error_is_the_one_the_whole_conversion_meets() {
        let error = |text: &str| {
            let head: &[&[&str]] = &[&["kind"], &["metadata", "name"]];
            parse_yaml_picks(text, head).unwrap_err().to_string()
        };
        let unsupported =
            |v: &str| format!("error converting YAML to JSON: json: unsupported value: {v}");
        // Outside the head, before it, after it.
        assert_eq!(
            error(
                "spec: [1, .inf]
kind: .nan
"
            ),
            unsupported("+Inf")
        );
        assert_eq!(
            error(
                "kind: .nan
spec: [.inf]
"
            ),
            unsupported("NaN")
        );
        // A key set twice keeps its first place and its last value.
        assert_eq!(
            error(
                "spec: {a: 1, b: .nan, a: -.inf}
"
            ),
            unsupported("-Inf")
        );
        assert_eq!(
            parse_yaml_picks(
                "spec: .inf
spec: 1
",
                &[]
            ),
            Ok(vec![])
        );
        assert_eq!(
            error("spec:
  ~: [1]
"),
            "error converting YAML to JSON: unsupported map key of type: %!s(<nil>), key: <nil>, value: []interface {}{...}"
        );
        // Decoding errors come before any conversion error.
        assert_eq!(
            error(
                "spec: .inf
x: !!int z
"
            ),
            "error converting YAML to JSON: yaml: cannot decode !!str `z` as a !!int"
        );
    }

    #[test]
    fn documents_of_every_shape() {
        for text in [
            "# only a comment\n",
            "null",
            "[]",
            "- kind: A\n",
            "just a string",
            "kind: A\n---\nkind: B\n",
            "kind: A\n---\n: [\n",
            "{\"kind\": \"A\", \"metadata\": {\"name\": \"n\"}}",
            "kind: A\nmetadata:\n  name: x\n  1: y\n  true: z\n  1.5: w\n",
            "a: &a [1, 2]\nb: &b [*a, *a]\nc: &c [*b, *b]\nkind: *c\n",
        ] {
            agrees(text);
        }
    }

    #[test]
    fn deep_documents() {
        // Block nesting deeper than the head, under the head and beside it.
        let block = |levels: usize, leaf: &str| {
            let mut s = String::new();
            for i in 0..levels {
                s.push_str(&"  ".repeat(i));
                s.push_str("a:\n");
            }
            s.push_str(&"  ".repeat(levels));
            s.push_str(leaf);
            s.push('\n');
            s
        };
        let indent = |text: &str, by: &str| {
            text.lines()
                .map(|l| format!("{by}{l}\n"))
                .collect::<String>()
        };
        for leaf in ["x: 1", "x: .inf"] {
            let deep = block(300, leaf);
            agrees(&format!("kind: K\nspec:\n{}", indent(&deep, "  ")));
            agrees(&format!(
                "kind: K\nmetadata:\n  annotations:\n{}",
                indent(&deep, "    ")
            ));
        }
        // Flow nesting past yaml-rust2's limit: read as JSON when it is
        // JSON, refused when it is not.
        let levels = 400;
        let json = format!(
            "{{\"kind\":\"K\",\"metadata\":{{\"name\":\"deep\",\"annotations\":{{\"n\":{}1{}}}}}}}",
            "{\"a\":".repeat(levels),
            "}".repeat(levels)
        );
        assert!(!agrees(&json));
        assert!(agrees(&format!(
            "kind: K\nspec: {}1{}\n",
            "[".repeat(levels),
            "]".repeat(levels)
        )));
        // Past Go's own limit.
        let too_deep = format!(
            "{{\"kind\":\"K\",\"spec\":{}1{}}}",
            "[".repeat(10_001),
            "]".repeat(10_001)
        );
        assert!(agrees(&too_deep));
    }

    #[test]
    #[should_panic(expected = "prefix")]
    fn paths_must_not_overlap() {
        let _ = parse_yaml_picks("a: 1", &[&["metadata"], &["metadata", "name"]]);
    }
}
