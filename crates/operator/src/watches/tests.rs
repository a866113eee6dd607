use super::*;
use serde_json::json;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/watches")
}

fn one(extra: &str) -> String {
    format!("- group: demo.rudder.dev\n  version: v1alpha1\n  kind: Hello\n  chart: chart\n{extra}")
}

fn parse_ok(text: &str) -> Vec<Watch> {
    match parse(text, &fixtures()) {
        Ok(w) => w,
        Err(e) => panic!("expected {text:?} to parse, got: {e}"),
    }
}

fn parse_err(text: &str) -> String {
    match parse(text, &fixtures()) {
        Ok(w) => panic!("expected an error for {text:?}, got {w:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn minimal_entry_gets_go_defaults() {
    let w = parse_ok(&one(""));
    assert_eq!(w.len(), 1);
    let w = &w[0];
    assert_eq!(w.group, "demo.rudder.dev");
    assert_eq!(w.version, "v1alpha1");
    assert_eq!(w.kind, "Hello");
    assert!(w.watch_dependent_resources);
    assert!(w.override_values.is_empty());
    assert_eq!(w.reconcile_period, None);
    assert_eq!(w.max_concurrent_reconciles, None);
    assert_eq!(w.selector, None);
    assert!(!w.allow_cluster_scoped);
    assert!(w.allowed_namespaces.is_empty());
    assert_eq!(w.dry_run_option, DryRunOption::Client);
    assert_eq!(w.chart, fixtures().join("chart"));
    assert_eq!(w.api_version(), "demo.rudder.dev/v1alpha1");
    assert_eq!(w.gvk_string(), "demo.rudder.dev/v1alpha1, Kind=Hello");
    let gvk = w.gvk();
    assert_eq!(
        (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()),
        ("demo.rudder.dev", "v1alpha1", "Hello")
    );
}

#[test]
fn every_field_is_read() {
    let w = load(&fixtures().join("watches.yaml")).expect("fixture loads");
    assert_eq!(w.len(), 2);
    let t = &w[1];
    assert_eq!(t.kind, "Tuned");
    assert!(!t.watch_dependent_resources);
    assert_eq!(t.override_values["image.repository"], "quay.io/example/app");
    // A YAML integer where Go wants a string becomes its text, as sigs.k8s.io/yaml does.
    assert_eq!(t.override_values["replicas"], "3");
    assert_eq!(t.reconcile_period, Some(Duration::from_secs(90)));
    assert_eq!(t.max_concurrent_reconciles, Some(4));
    assert_eq!(t.dry_run_option, DryRunOption::Server);
    assert!(t.allow_cluster_scoped);
    assert_eq!(t.allowed_namespaces, vec!["monitoring", "*"]);
    assert_eq!(
        t.label_selector_string().as_deref(),
        Some("tier=backend,env in (prod,staging)")
    );
    assert_eq!(
        t.override_values().expect("parsed"),
        json!({"image": {"repository": "quay.io/example/app"}, "replicas": "3"})
            .as_object()
            .cloned()
            .expect("object")
    );
}

#[test]
fn field_names_match_case_insensitively_like_encoding_json() {
    let w = parse_ok("- Group: g.example.com\n  Version: v1\n  Kind: K\n  Chart: chart\n");
    assert_eq!(w[0].gvk_string(), "g.example.com/v1, Kind=K");
}

#[test]
fn empty_file_is_an_empty_list() {
    assert!(parse_ok("").is_empty());
    assert!(parse_ok("# nothing yet\n").is_empty());
}

#[test]
fn unknown_fields_are_ignored_with_a_warning_naming_them() {
    let text = format!(
        "{}{}",
        one(""),
        one("  reconcilePeriods: 1m\n  selector:\n    matchLabel: {a: b}\n")
            .replace("Hello", "Other")
    );
    let (watches, warnings) = parse_with_warnings(&text, &fixtures()).expect("parses, as in Go");
    assert_eq!(watches.len(), 2);
    assert_eq!(
        watches[1].reconcile_period, None,
        "the misspelt field is not read"
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].starts_with("watches.yaml: entry #2 (demo.rudder.dev/v1alpha1, Kind=Other): "),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("unknown field \"reconcilePeriods\" is ignored"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("known fields: group, version, kind, chart"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("selector.matchLabel is ignored"),
        "{}",
        warnings[1]
    );
}

#[test]
fn unknown_fields_in_a_file_load() {
    let dir = std::env::temp_dir().join(format!("rudder-watches-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let file = dir.join("watches.yaml");
    let chart = fixtures().join("chart");
    std::fs::write(
        &file,
        format!(
            "- group: a.b\n  version: v1\n  kind: K\n  chart: {}\n  bogus: 1\n",
            chart.display()
        ),
    )
    .expect("write");
    let loaded = load(&file);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(loaded.expect("bogus field ignored").len(), 1);
}

#[test]
fn missing_file_is_a_read_error() {
    let e = load(Path::new("/nonexistent/watches.yaml")).expect_err("missing");
    assert!(matches!(e, WatchesError::Read { .. }));
    assert!(e.to_string().contains("/nonexistent/watches.yaml"), "{e}");
}

#[test]
fn missing_gvk_parts_are_named() {
    let e = parse_err("- group: a.b\n  kind: K\n  chart: chart\n");
    assert!(e.contains("entry #1"), "{e}");
    assert!(e.contains("version must not be empty"), "{e}");
    let e = parse_err("- version: v1\n  chart: chart\n");
    assert!(e.contains("group, kind must not be empty"), "{e}");
    let e = parse_err("- group: a.b\n  version: v1\n  kind: K\n");
    assert!(e.contains("chart must not be empty"), "{e}");
}

#[test]
fn duplicate_gvk_names_both_entries() {
    let text = format!("{}{}", one(""), one(""));
    let e = parse_err(&text);
    assert!(
        e.contains("entry #2 (demo.rudder.dev/v1alpha1, Kind=Hello)"),
        "{e}"
    );
    assert!(e.contains("duplicate GVK: entry #1"), "{e}");
}

#[test]
fn chart_paths_resolve_from_cwd_then_beside_the_file() {
    // cargo runs unit tests in the crate directory.
    let w =
        parse_ok("- group: a.b\n  version: v1\n  kind: K\n  chart: tests/fixtures/watches/chart\n");
    let cwd = std::env::current_dir().expect("cwd");
    assert_eq!(w[0].chart, cwd.join("tests/fixtures/watches/chart"));
    w[0].load_chart().expect("chart loads");

    let e = parse_err(&one("").replace("chart: chart", "chart: nope"));
    assert!(e.contains("chart nope does not exist"), "{e}");
    assert!(e.contains(&fixtures().display().to_string()), "{e}");
}

#[test]
fn unloadable_chart_is_an_error() {
    let e = parse_err(&one("").replace("chart: chart", "chart: notachart"));
    assert!(
        e.contains("entry #1 (demo.rudder.dev/v1alpha1, Kind=Hello)"),
        "{e}"
    );
    assert!(e.contains("cannot be loaded"), "{e}");
}

#[test]
fn durations_follow_go() {
    assert_eq!(parse_go_duration("1m30s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
    assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_go_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_go_duration("2µs"), Ok(Duration::from_micros(2)));
    assert_eq!(parse_go_duration("+10s"), Ok(Duration::from_secs(10)));
    for bad in ["", "10", "1d", "s", "1..5s", "-5s", "abc"] {
        assert!(parse_go_duration(bad).is_err(), "{bad:?} should be refused");
    }
}

#[test]
fn bad_reconcile_period_is_an_entry_error() {
    let e = parse_err(&one("  reconcilePeriod: 5 minutes\n"));
    assert!(e.contains("entry #1"), "{e}");
    assert!(
        e.contains("reconcilePeriod: invalid duration \"5 minutes\""),
        "{e}"
    );
    let e = parse_err(&one("  reconcilePeriod: 60\n"));
    assert!(
        e.contains("reconcilePeriod must be a duration string"),
        "{e}"
    );
    // Zero means "use the --reconcile-period flag", as in Go.
    assert_eq!(
        parse_ok(&one("  reconcilePeriod: 0s\n"))[0].reconcile_period,
        None
    );
}

#[test]
fn max_concurrent_reconciles_must_be_positive() {
    assert_eq!(
        parse_ok(&one("  maxConcurrentReconciles: 2\n"))[0].max_concurrent_reconciles,
        Some(2)
    );
    for bad in ["0", "-1", "1.5", "many"] {
        let e = parse_err(&one(&format!("  maxConcurrentReconciles: {bad}\n")));
        assert!(
            e.contains("maxConcurrentReconciles must be a whole number"),
            "{e}"
        );
    }
}

#[test]
fn max_history_is_a_count_and_zero_keeps_all() {
    assert_eq!(parse_ok(&one(""))[0].max_history, None);
    for (text, kept) in [("3", 3), ("0", 0)] {
        let w = &parse_ok(&one(&format!("  maxHistory: {text}\n")))[0];
        assert_eq!(w.max_history, Some(kept));
    }
    for bad in ["-1", "1.5", "many"] {
        let e = parse_err(&one(&format!("  maxHistory: {bad}\n")));
        assert!(e.contains("maxHistory must be a whole number"), "{e}");
    }
}

#[test]
fn status_manifest_is_full_redacted_or_none() {
    assert_eq!(parse_ok(&one(""))[0].status_manifest, None);
    for (text, mode) in [
        ("full", StatusManifest::Full),
        ("redacted", StatusManifest::Redacted),
        ("none", StatusManifest::None),
    ] {
        let w = &parse_ok(&one(&format!("  statusManifest: {text}\n")))[0];
        assert_eq!(w.status_manifest, Some(mode));
    }
    let e = parse_err(&one("  statusManifest: secret\n"));
    assert!(
        e.contains(
            "statusManifest: \"secret\" is not a status manifest mode: use full, redacted or none"
        ),
        "{e}"
    );
}

#[test]
fn bad_selector_operator_is_named() {
    let e = parse_err(&one(
        "  selector:\n    matchExpressions:\n      - {key: env, operator: Equals, values: [a]}\n",
    ));
    assert!(e.contains("entry #1"), "{e}");
    assert!(
        e.contains(
            "selector: matchExpressions[0]: \"Equals\" is not a valid label selector operator"
        ),
        "{e}"
    );
    let e = parse_err(&one(
        "  selector:\n    matchExpressions:\n      - {key: env, operator: In}\n",
    ));
    assert!(e.contains("needs at least one value"), "{e}");
    let e = parse_err(&one(
        "  selector:\n    matchExpressions:\n      - {key: env, operator: Exists, values: [x]}\n",
    ));
    assert!(e.contains("takes no values"), "{e}");
    let e = parse_err(&one(
        "  selector:\n    matchLabels:\n      \"bad key!\": x\n",
    ));
    assert!(e.contains("not a valid label key"), "{e}");
}

#[test]
fn selector_matching_and_query_string() {
    let w = &parse_ok(&one(
        "  selector:\n    matchLabels: {app: web}\n    matchExpressions:\n      - {key: env, operator: NotIn, values: [dev]}\n      - {key: owner, operator: Exists}\n      - {key: legacy, operator: DoesNotExist}\n",
    ))[0];
    assert_eq!(
        w.label_selector_string().as_deref(),
        Some("app=web,env notin (dev),owner,!legacy")
    );
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert!(w.matches_labels(&labels(&[("app", "web"), ("owner", "me")])));
    assert!(!w.matches_labels(&labels(&[("app", "web"), ("owner", "me"), ("env", "dev")])));
    assert!(!w.matches_labels(&labels(&[("app", "web")])));
    assert!(!w.matches_labels(&labels(&[("app", "web"), ("owner", "me"), ("legacy", "1")])));
    // An empty selector selects everything and needs no query parameter.
    let all = &parse_ok(&one("  selector: {}\n"))[0];
    assert_eq!(all.selector, None);
    assert_eq!(all.label_selector_string(), None);
    assert!(all.matches_labels(&BTreeMap::new()));
}

#[test]
fn override_values_expand_environment_variables() {
    // PATH is set in any test environment; setting variables here would race with
    // other tests' threads reading the environment.
    let path = std::env::var("PATH").unwrap_or_default();
    let w = &parse_ok(&one(
        "  overrideValues:\n    image: $PATH\n    braces: x${PATH}y\n    other: ${RUDDER_WATCHES_TEST_UNSET}\n    first: '{{ (\"$PATH\" | split \":\")._0 }}'\n",
    ))[0];
    assert_eq!(w.override_values["image"], path);
    assert_eq!(w.override_values["braces"], format!("x{path}y"));
    assert_eq!(w.override_values["other"], "");
    // After $VAR expansion, Go runs each value through text/template with Sprig.
    assert_eq!(
        w.override_values["first"],
        path.split(':').next().unwrap_or_default()
    );
    let e = parse_err(&one("  overrideValues:\n    bad: '{{ .x'\n"));
    assert!(
        e.contains("overrideValues.bad: invalid template string"),
        "{e}"
    );
}

#[test]
fn override_values_are_strings_like_helm_set_string() {
    let w = &parse_ok(&one(
        "  overrideValues:\n    a.b: \"true\"\n    flag: \"false\"\n    num: \"007\"\n    i: 42\n    f: 1.5\n    list: '{x,y}'\n    idx[1]: second\n    s: hello\n    e: null\n",
    ))[0];
    assert_eq!(w.override_values["f"], "1.5");
    let v = w.override_values().expect("parsed");
    assert_eq!(
        Value::Object(v),
        json!({
            "a": {"b": "true"},
            // strvals.ParseIntoString: "false" stays a string.
            "flag": "false",
            "num": "007",
            "i": "42",
            "f": "1.5",
            "list": ["x", "y"],
            "idx": [null, "second"],
            "s": "hello",
            // null reads as "" (Go's map[string]string), and `--set-string e=` gives "".
            "e": ""
        })
    );
}

#[test]
fn go_durations_print_as_go_prints_them() {
    for (secs, text) in [
        (0.0, "0s"),
        (60.0, "1m0s"),
        (90.0, "1m30s"),
        (1.5, "1.5s"),
        (0.5, "500ms"),
        (3600.0, "1h0m0s"),
        (5400.0, "1h30m0s"),
        (0.000_001, "1µs"),
    ] {
        assert_eq!(
            format_go_duration(Duration::from_secs_f64(secs)),
            text,
            "{secs}"
        );
    }
}

#[test]
fn yaml_1_1_keys_and_values_read_as_go_reads_them() {
    // go-yaml v2 reads `n` as false even as a key, and `on` as true.
    let w = &parse_ok(&one("  overrideValues:\n    n: x\n    k: on\n"))[0];
    assert_eq!(w.override_values["false"], "x");
    assert_eq!(w.override_values["k"], "true");
}

#[test]
fn override_values_that_set_refuses_name_the_watch() {
    let w = &parse_ok(&one("  overrideValues:\n    \"a[x]\": v\n"))[0];
    let e = w.override_values().expect_err("bad index").to_string();
    assert!(
        e.starts_with("overrideValues of demo.rudder.dev/v1alpha1, Kind=Hello: a[x]:"),
        "{e}"
    );
}

#[test]
fn wrong_types_are_named() {
    let e = parse_err(&one("  watchDependentResources: maybe\n"));
    assert!(
        e.contains("watchDependentResources must be true or false"),
        "{e}"
    );
    // YAML 1.1, as Go reads it: `no` is false.
    assert!(!parse_ok(&one("  watchDependentResources: no\n"))[0].watch_dependent_resources);
    let e = parse_err(&one("  overrideValues: [a]\n"));
    assert!(e.contains("overrideValues must be a mapping"), "{e}");
    let e = parse_err(&one("  overrideValues:\n    a: {b: c}\n"));
    assert!(
        e.contains("overrideValues.a: expected a string, found a mapping"),
        "{e}"
    );
    let e = parse_err("group: a\n");
    assert!(e.contains("expected a list of watches"), "{e}");
    let e = parse_err("- just a string\n");
    assert!(e.contains("entry #1: expected a mapping"), "{e}");
    let e = parse_err("- group: [\n");
    assert!(e.starts_with("watches.yaml: "), "{e}");
}

#[test]
fn dry_run_option_values() {
    assert_eq!(
        parse_ok(&one("  dryRunOption: none\n"))[0].dry_run_option,
        DryRunOption::Client
    );
    let e = parse_err(&one("  dryRunOption: always\n"));
    assert!(
        e.contains("dryRunOption \"always\" is not one of none, client, server"),
        "{e}"
    );
}

#[test]
fn allowed_namespaces_are_validated() {
    let w = &parse_ok(&one("  allowedNamespaces: [kube-system]\n"))[0];
    assert!(w.namespace_allowed("apps", "apps"));
    assert!(w.namespace_allowed("apps", "kube-system"));
    assert!(!w.namespace_allowed("apps", "default"));
    let any = &parse_ok(&one("  allowedNamespaces: [\"*\"]\n"))[0];
    assert!(any.namespace_allowed("apps", "default"));
    let e = parse_err(&one("  allowedNamespaces: [Bad_NS]\n"));
    assert!(e.contains("\"Bad_NS\" is not a namespace name"), "{e}");
    let e = parse_err(&one("  allowClusterScoped: sometimes\n"));
    assert!(
        e.contains("allowClusterScoped must be true or false"),
        "{e}"
    );
}
