use super::*;
use crate::chartfile::Metadata;
use serde_json::json;

fn chart(yaml: &str, values: Json, deps: Vec<Chart>) -> Chart {
    let mut md = Metadata::parse(yaml).unwrap();
    md.validate().unwrap();
    Chart {
        metadata: md,
        values: values.as_object().cloned().unwrap_or_default(),
        dependencies: deps,
        ..Default::default()
    }
}

fn sub(name: &str, version: &str, values: Json) -> Chart {
    chart(
        &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        values,
        vec![],
    )
}

fn names(c: &ChartView<'_>) -> Vec<String> {
    let mut n: Vec<String> = c
        .dependencies
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    n.sort();
    n
}

/// `c` as processing for the user values `user` leaves it.
fn process(c: &Chart, user: Json) -> ChartView<'_> {
    let mut view = ChartView::new(c);
    let mut w = Warnings::default();
    process_dependencies(&mut view, user.as_object().unwrap(), true, &mut w).unwrap();
    view
}

const PARENT: &str = "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n\
- name: a\n  version: 1.x.x\n  condition: a.enabled,global.aEnabled\n  tags: [front]\n\
- name: b\n  version: '>=0.1.0'\n  condition: b.enabled\n  tags: [back]\n";

#[test]
fn conditions_and_tags() {
    let mk = || {
        chart(
            PARENT,
            json!({"a": {"enabled": true}, "b": {"enabled": false}}),
            vec![sub("a", "1.2.0", json!({})), sub("b", "0.2.0", json!({}))],
        )
    };
    let c = mk();
    let c = process(&c, json!({}));
    assert_eq!(names(&c), vec!["a"]);
    assert_eq!(c.metadata.deps().count(), 1);

    // A condition that resolves wins over tags.
    let c = mk();
    let c = process(&c, json!({"tags": {"front": false, "back": true}}));
    assert_eq!(names(&c), vec!["a"]);

    // Tags decide when no condition resolves.
    let c = mk();
    let c = process(
        &c,
        json!({"a": {"enabled": "yes"}, "b": {"enabled": null}, "tags": {"front": false, "back": true}}),
    );
    assert_eq!(names(&c), vec!["b"]);

    // The second condition path is used when the first does not resolve.
    let c = mk();
    let c = process(
        &c,
        json!({"a": {"enabled": null}, "global": {"aEnabled": false}}),
    );
    assert_eq!(names(&c), Vec::<String>::new());
}

#[test]
fn aliases_copy_the_subchart() {
    let yaml = "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n\
- name: cache\n  version: 7.x.x\n  alias: front\n\
- name: cache\n  version: 7.x.x\n  alias: back\n  condition: back.enabled\n";
    let c = chart(
        yaml,
        json!({}),
        vec![sub("cache", "7.9.7", json!({"port": 1, "enabled": true}))],
    );
    let c = process(&c, json!({"back": {"enabled": false}}));
    assert_eq!(names(&c), vec!["front"]);
    assert_eq!(c.metadata.deps().next().unwrap().name, "front");
    let mut w = Warnings::default();
    let v = values::coalesce_values(&c, &Values::new(), &mut w).unwrap();
    assert_eq!(v["front"]["port"], json!(1));
    assert!(v.get("cache").is_none());
}

#[test]
fn a_chart_named_by_two_entries_serves_both_and_undeclared_charts_stay() {
    let yaml = "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n\
- name: cache\n  version: 7.x.x\n  alias: front\n\
- name: other\n  version: 1.x.x\n\
- name: cache\n  version: 7.x.x\n  alias: back\n";
    let c = chart(
        yaml,
        json!({}),
        vec![
            sub("loose", "0.1.0", json!({"l": 1})),
            sub("cache", "7.9.7", json!({"port": 1})),
            sub("other", "1.0.0", json!({"o": 2})),
        ],
    );
    let c = process(&c, json!({"back": {"port": 2}}));
    let in_order: Vec<&str> = c.dependencies.iter().map(|d| d.name()).collect();
    assert_eq!(in_order, ["loose", "front", "other", "back"]);
    let mut w = Warnings::default();
    let v = values::coalesce_values(&c, &Values::new(), &mut w).unwrap();
    assert_eq!(v["front"]["port"], json!(1));
    assert_eq!(v["back"]["port"], json!(1));
    assert_eq!(v["other"]["o"], json!(2));
    assert_eq!(v["loose"]["l"], json!(1));
}

#[test]
fn version_mismatch_keeps_chart_unaliased() {
    let yaml = "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n- name: a\n  version: 2.x.x\n  alias: z\n";
    let c = chart(yaml, json!({}), vec![sub("a", "1.0.0", json!({}))]);
    let c = process(&c, json!({}));
    assert_eq!(names(&c), vec!["a"]);
}

#[test]
fn missing_dependency_is_reported() {
    let c = chart(PARENT, json!({}), vec![sub("a", "1.2.0", json!({}))]);
    let e = check_dependencies(&c).unwrap_err().to_string();
    assert!(
        e.ends_with("found in Chart.yaml, but missing in charts/ directory: b"),
        "{e}"
    );
}

#[test]
fn import_values_both_forms() {
    let yaml = "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n\
- name: sub\n  version: 0.1.x\n  import-values:\n  - data\n  - child: a.b\n    parent: c\n";
    let c = chart(
        yaml,
        json!({"c": {"keep": "parent"}, "x": 5}),
        vec![sub(
            "sub",
            "0.1.0",
            json!({"exports": {"data": {"x": 1, "y": 2}}, "a": {"b": {"q": 2, "keep": "child"}}}),
        )],
    );
    let c = process(&c, json!({}));
    let mut w = Warnings::default();
    let v = values::coalesce_values(&c, &Values::new(), &mut w).unwrap();
    // Imported values have lower priority than the parent's own.
    assert_eq!(v["x"], json!(5));
    assert_eq!(v["y"], json!(2));
    assert_eq!(v["c"], json!({"q": 2, "keep": "parent"}));
    let d = c.metadata.deps().next().unwrap();
    assert_eq!(
        d.import_values,
        vec![
            json!({"child": "exports.data", "parent": "."}),
            json!({"child": "a.b", "parent": "c"})
        ]
    );
}

#[test]
fn nested_conditions_use_the_parent_path() {
    let mid_yaml = "apiVersion: v2\nname: mid\nversion: 1.0.0\ndependencies:\n- name: leaf\n  version: '*'\n  condition: leaf.enabled\n";
    let mid = chart(
        mid_yaml,
        json!({"leaf": {"enabled": true}}),
        vec![sub("leaf", "1.0.0", json!({}))],
    );
    let top_yaml =
        "apiVersion: v2\nname: top\nversion: 1.0.0\ndependencies:\n- name: mid\n  version: '*'\n";
    let c = chart(top_yaml, json!({}), vec![mid.clone()]);
    let c = process(&c, json!({"mid": {"leaf": {"enabled": false}}}));
    assert!(c.dependencies[0].dependencies.is_empty());
    let c = chart(top_yaml, json!({}), vec![mid]);
    let c = process(&c, json!({}));
    assert_eq!(c.dependencies[0].dependencies.len(), 1);
}
