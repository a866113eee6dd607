//! `rudder values KIND/NAME`: the values the operator gives a CR's release, as YAML —
//! the CR's `.spec` with its watch's `overrideValues` on top, composed by the
//! operator's own code (`operator::release_values`), so what is printed is what the
//! next install or upgrade renders with. It reads the watches file and the CR and
//! writes nothing. `--show-overrides` marks each value `watches.yaml` decided.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context as _};
use kube::api::{Api, DynamicObject};
use operator::{CustomResource, Watch};
use serde_json::{Map, Value};

use crate::release_cmds::KubeArgs;

/// The comment that marks a value from `overrideValues`.
pub(crate) const OVERRIDE_MARK: &str = "# overrideValues (watches.yaml)";

/// Flags of `rudder values`.
#[derive(clap::Args)]
pub(crate) struct ValuesArgs {
    /// The custom resource: KIND/NAME, KIND as watches.yaml names it (case does not
    /// matter; KIND.GROUP when two watches share a kind).
    resource: String,
    /// The watches file the operator runs with.
    #[arg(long, default_value = "./watches.yaml")]
    watches_file: PathBuf,
    /// Mark every value that comes from the watch's overrideValues (they win over
    /// the spec) with a comment.
    #[arg(long)]
    show_overrides: bool,
    #[command(flatten)]
    kube: KubeArgs,
}

pub(crate) fn run(args: ValuesArgs) -> anyhow::Result<()> {
    let rt = crate::runtime::deep_stack_runtime().context("starting the async runtime")?;
    let out = rt.block_on(values(args))?;
    print!("{out}");
    Ok(())
}

async fn values(args: ValuesArgs) -> anyhow::Result<String> {
    let (kind, name) = args.resource.split_once('/').ok_or_else(|| {
        anyhow!(
            "{:?} names no custom resource: give KIND/NAME, e.g. memcached/my-cache",
            args.resource
        )
    })?;
    if kind.is_empty() || name.is_empty() || name.contains('/') {
        bail!(
            "{:?} names no custom resource: give KIND/NAME, e.g. memcached/my-cache",
            args.resource
        );
    }
    let watches = operator::load_watches(&args.watches_file)?;
    let watch = find_watch(&watches, kind, &args.watches_file)?;
    let (client, namespace) = crate::release_cmds::client(&args.kube).await?;
    let (resource, _) = kube::discovery::pinned_kind(&client, &watch.gvk())
        .await
        .with_context(|| {
            format!(
                "cannot find the kind {} in the cluster; is its CRD installed?",
                watch.gvk_string()
            )
        })?;
    let api: Api<DynamicObject> = Api::namespaced_with(client, &namespace, &resource);
    let cr = api
        .get_opt(name)
        .await
        .with_context(|| format!("cannot read {} {namespace}/{name}", watch.kind))?
        .ok_or_else(|| anyhow!("{} {namespace}/{name} not found", watch.kind))?;
    let (values, overrides) = operator::release_values(watch, &CustomResource::from(cr))
        .with_context(|| format!("{} {namespace}/{name}", watch.kind))?;
    if args.show_overrides {
        return Ok(annotated(&values, &overrides));
    }
    let mut yaml = gocodec::yaml::json_to_yaml(&Value::Object(values))
        .map_err(|e| anyhow!("cannot write YAML: {e}"))?;
    yaml.push('\n');
    Ok(yaml)
}

/// The watch of `kind` (`Kind` or `Kind.group`, any case).
fn find_watch<'w>(
    watches: &'w [Watch],
    kind: &str,
    file: &std::path::Path,
) -> anyhow::Result<&'w Watch> {
    let found: Vec<&Watch> = watches
        .iter()
        .filter(|w| {
            w.kind.eq_ignore_ascii_case(kind)
                || format!("{}.{}", w.kind, w.group).eq_ignore_ascii_case(kind)
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => {
            let kinds: Vec<&str> = watches.iter().map(|w| w.kind.as_str()).collect();
            bail!(
                "{} watches no kind {kind:?} (it watches: {})",
                file.display(),
                kinds.join(", ")
            )
        }
        many => {
            let names: Vec<String> = many
                .iter()
                .map(|w| format!("{}.{}", w.kind, w.group))
                .collect();
            bail!(
                "{} watches {kind:?} in more than one group; name one: {}",
                file.display(),
                names.join(", ")
            )
        }
    }
}

/// `values` as YAML (keys sorted, as `helm get values` prints them) with every value
/// `overrides` decided marked by [`OVERRIDE_MARK`]: a leaf or a list the overrides
/// hold at the same path (a map of overrides marks what it holds).
fn annotated(values: &Map<String, Value>, overrides: &Map<String, Value>) -> String {
    let mut out = String::new();
    emit_map(&mut out, values, Some(overrides), 0);
    out
}

fn scalar(v: &Value) -> String {
    gocodec::yaml::json_to_yaml(v).unwrap_or_else(|_| v.to_string())
}

/// Writes `text` (one YAML node, maybe several lines) after `head`, the lines after
/// the first indented by `pad`, with `mark` on the first line.
fn push_node(out: &mut String, head: &str, text: &str, pad: &str, mark: bool) {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    out.push_str(head);
    out.push_str(first);
    if mark {
        out.push(' ');
        out.push_str(OVERRIDE_MARK);
    }
    out.push('\n');
    for line in lines {
        out.push_str(pad);
        out.push_str(line);
        out.push('\n');
    }
}

fn emit_map(
    out: &mut String,
    map: &Map<String, Value>,
    overrides: Option<&Map<String, Value>>,
    indent: usize,
) {
    let pad = " ".repeat(indent);
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for key in keys {
        let value = &map[key];
        let over = overrides.and_then(|o| o.get(key));
        let key_text = scalar(&Value::String(key.clone()));
        match value {
            Value::Object(child) if !child.is_empty() => {
                let child_over = over.and_then(Value::as_object);
                let whole = over.is_some() && child_over.is_none();
                push_node(out, &format!("{pad}{key_text}:"), "", &pad, whole);
                emit_map(out, child, child_over, indent + 2);
            }
            Value::Array(items) if !items.is_empty() => {
                // Lists stay at the key's indentation, as Go's YAML writes them.
                push_node(out, &format!("{pad}{key_text}:"), "", &pad, over.is_some());
                let text = scalar(value);
                for line in text.lines() {
                    out.push_str(&pad);
                    out.push_str(line);
                    out.push('\n');
                }
            }
            _ => push_node(
                out,
                &format!("{pad}{key_text}: "),
                &scalar(value),
                &pad,
                over.is_some(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn overrides_are_marked_and_the_yaml_still_reads_as_the_values() {
        let values = map(json!({
            "replicaCount": 2,
            "image": {"repository": "registry.local/app", "tag": "1.2"},
            "note": "two\nlines",
            "ports": [80, 443],
            "empty": {},
            "odd key": "true",
            "extra": {"a": "1", "b": {"c": "x"}},
        }));
        let overrides = map(json!({
            "image": {"repository": "registry.local/app"},
            "odd key": "true",
            "extra": {"a": "1", "b": {"c": "x"}},
        }));
        let text = annotated(&values, &overrides);
        let back = gocodec::yaml::parse_yaml_to_json(&text).expect("valid YAML");
        assert_eq!(back, Value::Object(values.clone()), "{text}");
        let marked: Vec<&str> = text
            .lines()
            .filter(|l| l.ends_with(OVERRIDE_MARK))
            .map(|l| l.split(':').next().unwrap_or_default().trim())
            .collect();
        assert_eq!(marked, ["a", "c", "repository", "odd key"], "{text}");
        assert!(text.contains("replicaCount: 2\n"), "{text}");
        assert!(text.contains("ports:\n- 80\n- 443\n"), "{text}");
        // Without overrides, nothing is marked and the text is Helm's YAML.
        let plain = annotated(&values, &Map::new());
        assert!(!plain.contains(OVERRIDE_MARK));
        assert_eq!(
            gocodec::yaml::parse_yaml_to_json(&plain).expect("valid YAML"),
            Value::Object(values)
        );
    }

    #[test]
    fn the_kind_is_found_by_name_or_by_name_and_group() {
        let w = |group: &str, kind: &str| Watch {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            ..Watch::default()
        };
        let watches = [w("a.dev", "Web"), w("b.dev", "Web"), w("a.dev", "Cache")];
        let file = std::path::Path::new("watches.yaml");
        assert_eq!(find_watch(&watches, "cache", file).unwrap().kind, "Cache");
        assert_eq!(
            find_watch(&watches, "web.b.dev", file).unwrap().group,
            "b.dev"
        );
        let e = find_watch(&watches, "web", file).unwrap_err().to_string();
        assert!(e.contains("Web.a.dev, Web.b.dev"), "{e}");
        let e = find_watch(&watches, "db", file).unwrap_err().to_string();
        assert!(
            e.contains("watches no kind \"db\" (it watches: Web, Web, Cache)"),
            "{e}"
        );
    }
}
