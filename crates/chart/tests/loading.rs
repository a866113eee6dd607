//! Chart loading, dependency processing and values against the public chart
//! corpus and the real Helm (through the rendering oracle when installed),
//! plus small charts built in temporary directories.

use chart::loader;
use chart::values::prepare::{prepare, prepare_with, PrepareOptions};
use chart::values::Values;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn shared_dir() -> PathBuf {
    std::env::var_os("RUDDER_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")))
}

fn corpus() -> Option<PathBuf> {
    let c = shared_dir().join("corpus");
    if c.join("charts").is_dir() {
        Some(c)
    } else {
        eprintln!(
            "SKIP: no chart corpus at {} (set RUDDER_SHARED_DIR)",
            c.display()
        );
        None
    }
}

fn sorted_dir(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn read_values_file(p: &Path) -> Values {
    let text = std::fs::read_to_string(p).unwrap();
    chart::values::read_values(&text).unwrap()
}

/// A unique scratch directory under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rudder-chart-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn loads_every_corpus_chart() {
    let Some(corpus) = corpus() else { return };
    let mut n = 0;
    for dir in sorted_dir(&corpus.join("charts")) {
        let c = loader::load(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(!c.name().is_empty());
        assert!(c
            .files
            .iter()
            .all(|f| !f.name.contains('\\') && !f.name.starts_with('/')));
        n += 1;
    }
    eprintln!("loaded {n} corpus charts");
    assert!(n > 30);
}

struct Scenario {
    chart: String,
    name: String,
    values: Values,
    options: Json,
    expected: Json,
}

fn scenarios(corpus: &Path) -> Vec<Scenario> {
    let mut out = Vec::new();
    for dir in sorted_dir(&corpus.join("expected")) {
        let chart = dir.file_name().unwrap().to_string_lossy().into_owned();
        for f in sorted_dir(&dir) {
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            let expected: Json = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
            let sdir = corpus.join("scenarios").join(&chart);
            let vf = sdir.join(format!("{name}.yaml"));
            let values = if vf.exists() {
                read_values_file(&vf)
            } else {
                Values::new()
            };
            let of = sdir.join(format!("{name}.options.json"));
            let options = if of.exists() {
                serde_json::from_slice(&std::fs::read(&of).unwrap()).unwrap()
            } else {
                json!({})
            };
            out.push(Scenario {
                chart: chart.clone(),
                name,
                values,
                options,
                expected,
            });
        }
    }
    out
}

/// Chart paths (`root/charts/sub`) that have a rendered file in `manifests`.
fn rendered_chart_paths(manifests: &serde_json::Map<String, Json>) -> BTreeSet<String> {
    manifests
        .keys()
        .filter_map(|k| k.rsplit_once("/templates/").map(|(c, _)| c.to_string()))
        .collect()
}

/// For every corpus case, the charts whose templates we would render are
/// exactly the charts Helm rendered, schema errors happen where Helm's do,
/// and Helm's coalescing warnings are the ones we report.
#[test]
fn enabled_subcharts_match_helm() {
    let Some(corpus) = corpus() else { return };
    let mut checked = 0;
    let mut failures = Vec::new();
    for s in scenarios(&corpus) {
        let id = format!("{}/{}", s.chart, s.name);
        let c = loader::load(corpus.join("charts").join(&s.chart)).unwrap();
        let res = prepare(&c, s.values.clone());
        let helm_err = s.expected["error"].as_str();
        match (res, helm_err) {
            (Err(e), Some(he)) => {
                if !he.starts_with("values don't meet") {
                    failures.push(format!(
                        "{id}: we failed ({e}) where Helm failed at render: {he}"
                    ));
                } else if e.to_string() != he {
                    // Wording is close but not compared strictly.
                    eprintln!(
                        "{id}: schema message differs:\n  helm: {he:?}\n  ours: {:?}",
                        e.to_string()
                    );
                }
            }
            (Err(e), None) => failures.push(format!("{id}: unexpected error: {e}")),
            (Ok(_), Some(he)) if he.starts_with("values don't meet") => {
                failures.push(format!("{id}: Helm rejected the values, we did not: {he}"))
            }
            (Ok(_), Some(_)) => {} // a template error; nothing to compare here
            (Ok(p), None) => {
                let manifests = s.expected["manifests"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let want = rendered_chart_paths(&manifests);
                let got: BTreeSet<String> = p
                    .templates
                    .iter()
                    .filter(|t| !t.name.rsplit('/').next().unwrap_or("").starts_with('_'))
                    .map(|t| p.charts[t.chart].full_path.clone())
                    .collect();
                if want != got {
                    failures.push(format!(
                        "{id}: enabled charts differ\n  helm: {want:?}\n  ours: {got:?}"
                    ));
                }
                if s.options["include_crds"].as_bool() == Some(true) {
                    let want: BTreeSet<&String> = manifests
                        .keys()
                        .filter(|k| k.contains("/crds/") && !k.contains("/templates/"))
                        .collect();
                    let got: BTreeSet<&String> = p.crds.iter().map(|(n, _)| n).collect();
                    if want != got {
                        failures.push(format!(
                            "{id}: CRDs differ\n  helm: {want:?}\n  ours: {got:?}"
                        ));
                    }
                }
                let want_w: BTreeSet<String> = s.expected["warnings"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|w| w.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                let got_w: BTreeSet<String> = p.warnings.iter().cloned().collect();
                if want_w != got_w {
                    failures.push(format!(
                        "{id}: warnings differ\n  helm: {want_w:?}\n  ours: {got_w:?}"
                    ));
                }
                checked += 1;
            }
        }
    }
    eprintln!("checked {checked} rendered corpus cases");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Compares our coalesced, scoped values with the real Helm's for every
/// corpus case: a probe template `{{ toJson .Values }}` is added to every
/// application chart of a scratch copy of the corpus and rendered by the
/// oracle. Skipped when the oracle is not installed.
#[test]
fn scoped_values_match_helm_oracle() {
    let Some(corpus) = corpus() else { return };
    let oracle = shared_dir().join("tools/helm-oracle");
    let probe_ok = std::process::Command::new("python3")
        .args(["-c", "import helm_python"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !oracle.exists() || !probe_ok {
        eprintln!(
            "SKIP: helm-oracle not installed (run {}/tools/install-oracle.sh)",
            shared_dir().display()
        );
        return;
    }
    let only = std::env::var("RUDDER_ORACLE_ONLY").ok();
    let tmp = scratch("oracle");
    let tcorpus = tmp.join("corpus");
    // Deeper than any real template, so Helm renders it first, before any
    // template mutates `.Values` with `set`.
    let probe = "p/r/o/b/e/d/e/e/p/rudder-values-probe.yaml";
    for dir in sorted_dir(&corpus.join("charts")) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|x| x == name))
        {
            continue;
        }
        copy_tree(&dir, &tcorpus.join("charts").join(&name));
        add_probes(&tcorpus.join("charts").join(&name), probe);
    }
    copy_tree(&corpus.join("scenarios"), &tcorpus.join("scenarios"));
    let out_dir = tmp.join("out");
    let mut cmd = std::process::Command::new(&oracle);
    cmd.arg("corpus")
        .arg(&tcorpus)
        .arg(&out_dir)
        .args(["--runs", "1"]);
    if let Some(o) = &only {
        cmd.args(["--only", o]);
    }
    let st = cmd.output().unwrap();
    assert!(
        st.status.success() || out_dir.exists(),
        "oracle failed: {}",
        String::from_utf8_lossy(&st.stderr)
    );

    let mut failures = Vec::new();
    let mut compared = 0;
    for s in scenarios(&corpus) {
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|x| x == s.chart))
        {
            continue;
        }
        let f = out_dir.join(&s.chart).join(format!("{}.json", s.name));
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        let got: Json = serde_json::from_slice(&bytes).unwrap();
        let Some(manifests) = got["manifests"].as_object() else {
            continue;
        };
        let c = loader::load(tcorpus.join("charts").join(&s.chart)).unwrap();
        let Ok(p) = prepare_with(&c, s.values.clone(), PrepareOptions::default()) else {
            continue;
        };
        for (i, scope) in p.charts.iter().enumerate() {
            let key = format!("{}/templates/{probe}", scope.full_path);
            let Some(text) = manifests.get(&key).and_then(|v| v.as_str()) else {
                continue;
            };
            let Ok(helm_vals) = serde_json::from_str::<Json>(text.trim()) else {
                continue;
            };
            let ours = Json::Object(p.scoped_values(i));
            if !same_json(&helm_vals, &ours) {
                failures.push(format!(
                    "{}/{} {}: values differ: {}",
                    s.chart,
                    s.name,
                    scope.full_path,
                    first_diff(&helm_vals, &ours, "")
                ));
            }
            compared += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("compared {compared} scoped value sets with Helm");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for p in sorted_dir(from) {
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn add_probes(chart_dir: &Path, probe: &str) {
    let cy = std::fs::read_to_string(chart_dir.join("Chart.yaml")).unwrap_or_default();
    if !cy.lines().any(|l| l.trim() == "type: library") {
        write(
            chart_dir,
            &format!("templates/{probe}"),
            "{{ toJson .Values }}\n",
        );
    }
    for sub in sorted_dir(&chart_dir.join("charts")) {
        if sub.is_dir() {
            add_probes(&sub, probe);
        }
    }
}

fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

fn first_diff(a: &Json, b: &Json, path: &str) -> String {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) if same_json(v, w) => {}
                    (Some(v), Some(w)) => return first_diff(v, w, &p),
                    (Some(v), None) => return format!("{p}: helm has {v}, we have nothing"),
                    (None, Some(w)) => return format!("{p}: helm has nothing, we have {w}"),
                    (None, None) => {}
                }
            }
            format!("{path}: ?")
        }
        _ => format!("{path}: helm {a}, ours {b}"),
    }
}

#[test]
fn loads_directory_with_helmignore_and_subcharts() {
    let d = scratch("dir");
    write(&d, "Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 0.1.0\n  alias: other\n");
    write(&d, ".helmignore", "*.bak\n/secret.txt\nignored/\n");
    write(&d, "values.yaml", "a: 1\nother:\n  b: 2\n");
    write(&d, "templates/x.yaml", "x");
    write(&d, "templates/.hidden", "h");
    write(&d, "templates/old.bak", "b");
    write(&d, "secret.txt", "s");
    write(&d, "files/secret.txt", "kept");
    write(&d, "ignored/file.txt", "i");
    write(&d, "crds/crd.yaml", "kind: CustomResourceDefinition");
    write(
        &d,
        "charts/sub/Chart.yaml",
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    );
    write(&d, "charts/sub/values.yaml", "b: 1\nc: 3\n");
    write(&d, "charts/sub/templates/y.yaml", "y");
    let c = loader::load(&d).unwrap();
    let names: Vec<&str> = c.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["templates/x.yaml"]);
    let files: Vec<&str> = c.files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        files,
        vec![".helmignore", "crds/crd.yaml", "files/secret.txt"]
    );

    let p = prepare(&c, Values::new()).unwrap();
    let names: Vec<&str> = p.templates.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["app/charts/other/templates/y.yaml", "app/templates/x.yaml"]
    );
    assert_eq!(p.templates[0].base_path, "app/charts/other/templates");
    let sub = p.templates[0].chart;
    assert_eq!(p.charts[sub].values_path, vec!["other"]);
    assert_eq!(p.charts[sub].metadata.name, "other");
    assert_eq!(
        Json::Object(p.scoped_values(sub)),
        json!({"b": 2, "c": 3, "global": {}})
    );
    assert_eq!(p.crds[0].0, "app/crds/crd.yaml");
    let _ = std::fs::remove_dir_all(&d);
}

fn tgz(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (name, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        // Raw name bytes: the builder would refuse hostile paths.
        let raw = &mut h.as_gnu_mut().unwrap().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        h.set_cksum();
        b.append(&h, data.as_bytes()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

#[test]
fn loads_tgz_archives_and_tgz_subcharts() {
    let sub = tgz(&[
        (
            "sub/Chart.yaml",
            "apiVersion: v2\nname: sub\nversion: 0.2.0\n",
        ),
        ("sub/templates/s.yaml", "s"),
    ]);
    let d = scratch("tgz");
    write(
        &d,
        "app/Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 1.0.0\n",
    );
    write(&d, "app/templates/a.yaml", "a");
    std::fs::create_dir_all(d.join("app/charts")).unwrap();
    std::fs::write(d.join("app/charts/sub-0.2.0.tgz"), &sub).unwrap();
    let c = loader::load(d.join("app")).unwrap();
    assert_eq!(c.dependencies.len(), 1);
    assert_eq!(c.dependencies[0].name(), "sub");

    let top = tgz(&[
        (
            "app/Chart.yaml",
            "apiVersion: v2\nname: app\nversion: 1.0.0\n",
        ),
        ("app/values.yaml", "x: 1\n"),
        ("app/templates/a.yaml", "a"),
    ]);
    std::fs::write(d.join("app-1.0.0.tgz"), &top).unwrap();
    let c = loader::load(d.join("app-1.0.0.tgz")).unwrap();
    assert_eq!(c.templates[0].name, "templates/a.yaml");
    assert_eq!(c.values["x"], json!(1));

    let bad = tgz(&[("Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n")]);
    let e = loader::load_archive(&bad).unwrap_err();
    assert_eq!(
        e.to_string(),
        "chart illegally contains content outside the base directory: \"Chart.yaml\""
    );
    let evil = tgz(&[("app/../../etc/passwd", "x")]);
    assert!(loader::load_archive(&evil).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn library_chart_templates_are_helpers_only() {
    let d = scratch("lib");
    write(&d, "Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n- name: common\n  version: 2.x.x\n");
    write(&d, "templates/a.yaml", "a");
    write(
        &d,
        "charts/common/Chart.yaml",
        "apiVersion: v2\nname: common\nversion: 2.1.0\ntype: library\n",
    );
    write(
        &d,
        "charts/common/templates/_helpers.tpl",
        "{{ define \"x\" }}{{ end }}",
    );
    write(&d, "charts/common/templates/ignored.yaml", "kind: x");
    let p = prepare(&loader::load(&d).unwrap(), Values::new()).unwrap();
    let names: BTreeMap<&str, bool> = p
        .templates
        .iter()
        .map(|t| (t.name.as_str(), p.charts[t.chart].is_library))
        .collect();
    assert_eq!(
        names,
        BTreeMap::from([
            ("app/charts/common/templates/_helpers.tpl", true),
            ("app/templates/a.yaml", false)
        ])
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn schema_violations_fail_prepare() {
    let d = scratch("schema");
    write(
        &d,
        "Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 1.0.0\n",
    );
    write(&d, "values.yaml", "port: 80\n");
    write(
        &d,
        "values.schema.json",
        r#"{"type":"object","properties":{"port":{"type":"integer"}}}"#,
    );
    let c = loader::load(&d).unwrap();
    assert!(prepare(&c, Values::new()).is_ok());
    let user = json!({"port": "eighty"}).as_object().unwrap().clone();
    let e = prepare(&c, user).unwrap_err().to_string();
    assert_eq!(
        e,
        "values don't meet the specifications of the schema(s) in the following chart(s):\napp:\n- at '/port': got string, want integer\n"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Renders share the loaded chart (an operator loads it once for every
/// release): each must come out as a render of a freshly loaded chart,
/// whichever values the renders before it processed the chart's
/// dependencies with, and the chart must stay as loaded.
#[test]
fn one_loaded_chart_serves_releases_as_fresh_loads_do() {
    use chart::render::{render_chart, RenderOptions};
    let d = scratch("shared");
    write(
        &d,
        "Chart.yaml",
        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n\
         - name: lib\n  version: 1.x.x\n\
         - name: cache\n  version: 7.x.x\n  alias: front\n\
         - name: cache\n  version: 7.x.x\n  alias: back\n  condition: back.enabled\n\
         - name: db\n  version: '*'\n  condition: db.enabled\n  tags: [store]\n\
         - name: metrics\n  version: '*'\n  import-values:\n  - data\n  - child: deep.table\n    parent: fromChild\n",
    );
    write(
        &d,
        "values.yaml",
        "db:\n  enabled: false\nfromChild:\n  keep: parent\nglobal:\n  domain: example.org\n",
    );
    write(&d, "crds/top.yaml", "kind: CustomResourceDefinition\n");
    write(&d, "files/greeting.txt", "hello");
    write(
        &d,
        "templates/app.yaml",
        "name: {{ .Chart.Name }}\nsubcharts: {{ keys .Subcharts | sortAlpha }}\n\
         deps: {{ range .Chart.Dependencies }}{{ .Name }}={{ .Enabled }} {{ end }}\n\
         imported: {{ .Values.endpoint }} {{ toJson .Values.fromChild }}\n\
         file: {{ .Files.Get \"files/greeting.txt\" }}\n",
    );
    write(
        &d,
        "templates/NOTES.txt",
        "{{ .Release.Name }} of {{ .Chart.Name }}",
    );
    write(
        &d,
        "charts/lib/Chart.yaml",
        "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
    );
    write(
        &d,
        "charts/lib/templates/_name.tpl",
        "{{ define \"lib.name\" }}{{ .Chart.Name }}-{{ .Values.port | default 0 }}{{ end }}",
    );
    write(
        &d,
        "charts/cache/Chart.yaml",
        "apiVersion: v2\nname: cache\nversion: 7.1.0\ndependencies:\n\
         - name: sidecar\n  version: '*'\n  condition: sidecar.enabled\n",
    );
    write(
        &d,
        "charts/cache/values.yaml",
        "port: 6379\nsidecar:\n  enabled: true\n",
    );
    write(
        &d,
        "charts/cache/crds/cache.yaml",
        "kind: CustomResourceDefinition\n",
    );
    write(
        &d,
        "charts/cache/templates/svc.yaml",
        "svc: {{ include \"lib.name\" . }} {{ .Values.global.domain }}\n",
    );
    write(
        &d,
        "charts/cache/charts/sidecar/Chart.yaml",
        "apiVersion: v2\nname: sidecar\nversion: 0.1.0\n",
    );
    write(
        &d,
        "charts/cache/charts/sidecar/templates/s.yaml",
        "sidecar: {{ .Chart.Name }} of {{ .Template.BasePath }}\n",
    );
    write(
        &d,
        "charts/db/Chart.yaml",
        "apiVersion: v2\nname: db\nversion: 2.0.0\n",
    );
    write(
        &d,
        "charts/db/templates/db.yaml",
        "db: {{ .Values.size | default \"small\" }}\n",
    );
    write(
        &d,
        "charts/metrics/Chart.yaml",
        "apiVersion: v2\nname: metrics\nversion: 0.3.0\n",
    );
    write(
        &d,
        "charts/metrics/values.yaml",
        "exports:\n  data:\n    endpoint: http://metrics\ndeep:\n  table:\n    keep: child\n    extra: 1\n",
    );
    write(
        &d,
        "charts/metrics/templates/m.yaml",
        "m: {{ .Values.deep.table.extra }}\n",
    );

    let shared = loader::load(&d).unwrap();
    let loaded = format!("{shared:?}");
    let values = |v: Json| v.as_object().cloned().unwrap_or_default();
    let releases = [
        (json!({}), None),
        (
            json!({"back": {"enabled": false}, "db": {"enabled": true}, "front": {"sidecar": {"enabled": false}}}),
            None,
        ),
        (
            json!({"tags": {"store": true}, "db": {"enabled": null}}),
            None,
        ),
        (json!({}), None),
        // `--reuse-values`: other defaults for the root, the chart unchanged.
        (
            json!({}),
            Some(json!({"back": {"enabled": false}, "fromChild": {"keep": "reused"}})),
        ),
        (json!({"back": {"enabled": true}}), None),
    ];
    let mut seen = BTreeSet::new();
    for (user, defaults) in releases {
        let opts = RenderOptions {
            chart_values: defaults.clone().map(values),
            ..RenderOptions::default()
        };
        let from_shared = render_chart(&shared, values(user.clone()), &opts).unwrap();
        let mut fresh = loader::load(&d).unwrap();
        if let Some(defaults) = defaults {
            fresh.values = values(defaults);
        }
        let fresh_opts = RenderOptions::default();
        let from_fresh = render_chart(&fresh, values(user.clone()), &fresh_opts).unwrap();
        assert_eq!(
            format!("{from_shared:?}"),
            format!("{from_fresh:?}"),
            "values {user}"
        );
        assert_eq!(format!("{shared:?}"), loaded, "the chart changed");
        seen.insert(from_shared.files["app/templates/app.yaml"].clone());
    }
    // The values above do enable and disable subcharts.
    assert!(seen.len() >= 4, "{seen:#?}");
    let _ = std::fs::remove_dir_all(&d);
}
