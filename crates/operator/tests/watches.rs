//! `watches.yaml` through the public API: the fixture file as an operator-sdk project
//! would have it, charts found beside the file, and the selector agreeing with what
//! the test cluster's API server selects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use operator::{DryRunOption, Watch};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/watches")
}

#[test]
fn fixture_file_loads_with_charts_beside_it() {
    let file = fixtures().join("watches.yaml");
    let ws = operator::load_watches(&file).expect("fixture loads");
    assert_eq!(ws.len(), 2);
    // `chart: chart` is not in the working directory (the crate), so it is found
    // beside the file.
    assert!(!Path::new("chart").exists());
    for w in &ws {
        assert_eq!(w.chart, fixtures().join("chart"));
        let chart = w.load_chart().expect("chart loads");
        assert_eq!(chart.metadata.name, "demo");
    }
    let tuned = &ws[1];
    assert_eq!(tuned.dry_run_option, DryRunOption::Server);
    let values = tuned.override_values().expect("typed overrides");
    assert_eq!(
        values["replicas"],
        serde_json::json!("3"),
        "strings, as --set-string"
    );
    assert_eq!(
        values["image"]["repository"],
        serde_json::json!("quay.io/example/app")
    );
}

#[test]
fn watch_is_constructible_by_other_modules() {
    // Other modules build watches in tests; Default keeps that working as fields grow.
    let w = Watch {
        group: "demo.rudder.dev".into(),
        version: "v1alpha1".into(),
        kind: "Hello".into(),
        chart: fixtures().join("chart"),
        ..Watch::default()
    };
    assert!(w.watch_dependent_resources);
    assert_eq!(w.api_version(), "demo.rudder.dev/v1alpha1");
    assert_eq!(w.gvk().kind, "Hello");
    assert!(w.override_values().expect("empty").is_empty());
}

#[tokio::test]
async fn selector_string_selects_what_matches_labels_selects() {
    let text = format!(
        "- group: demo.rudder.dev\n  version: v1alpha1\n  kind: Hello\n  chart: {}\n  selector:\n    matchLabels: {{app: web}}\n    matchExpressions:\n      - {{key: env, operator: In, values: [prod, staging]}}\n      - {{key: legacy, operator: DoesNotExist}}\n      - {{key: owner, operator: Exists}}\n      - {{key: tier, operator: NotIn, values: [cache]}}\n",
        fixtures().join("chart").display()
    );
    let w = &operator::parse_watches(&text, &fixtures()).expect("parses")[0];
    let selector = w.label_selector_string().expect("a selector");

    let ns = testkit::Cluster::start().namespace("watches-selector");
    let api: Api<ConfigMap> = Api::default_namespaced(ns.client());
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("match", &[("app", "web"), ("env", "prod"), ("owner", "x")]),
        (
            "match-tier",
            &[
                ("app", "web"),
                ("env", "staging"),
                ("owner", "x"),
                ("tier", "db"),
            ],
        ),
        (
            "wrong-app",
            &[("app", "db"), ("env", "prod"), ("owner", "x")],
        ),
        (
            "wrong-env",
            &[("app", "web"), ("env", "dev"), ("owner", "x")],
        ),
        (
            "legacy",
            &[
                ("app", "web"),
                ("env", "prod"),
                ("owner", "x"),
                ("legacy", "1"),
            ],
        ),
        ("no-owner", &[("app", "web"), ("env", "prod")]),
        (
            "cache",
            &[
                ("app", "web"),
                ("env", "prod"),
                ("owner", "x"),
                ("tier", "cache"),
            ],
        ),
        ("no-labels", &[]),
    ];
    let mut expected = Vec::new();
    for (name, labels) in cases {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if w.matches_labels(&labels) {
            expected.push(name.to_string());
        }
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    assert_eq!(expected, vec!["match", "match-tier"]);

    let listed = api
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("list with selector");
    let mut names: Vec<String> = listed
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, expected, "selector {selector:?}");
}
