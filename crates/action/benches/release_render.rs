//! What one release costs the action layer, the way the operator runs it: a chart
//! loaded once and shared, then rendered for release after release. Times, per
//! release, [`action::render`] (what every reconcile's dry-run diff does: prepare the
//! chart for the release and run its templates) and a client dry-run install (the
//! render plus the record the install would write, with its processed chart).
//!
//! The chart is made here, in memory: a root with many templates and files (a
//! dashboard folder, CRDs), a library of helpers, one subchart under two aliases, one
//! enabled by a condition, one disabled by it, one by tags, and one whose exports the
//! root imports. `RUDDER_BENCH_CHART` names a chart directory or archive to measure
//! instead, `RUDDER_BENCH_RENDERS` (default 300) how many releases each figure takes.
//!
//! The allocator is the `rudder` binary's (mimalloc), whose handling of freed memory
//! shapes these figures: glibc's, trimming the heap after each release, made a chart
//! of large files look slower for copying less. For the settings `rudder run` gives
//! it, run with `MIMALLOC_PURGE_DELAY=0 MIMALLOC_ARENA_EAGER_COMMIT=0`.
//!
//! Run: `cargo bench -p action --bench release_render`

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use action::{ActionConfig, ActionOptions, DryRun, Install, Revision};
use chart::loader::{BufferedFile, Chart};
use chart::values::Values;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A template of an application chart: a Deployment, a Service and a ConfigMap
/// driven by the chart's values and the library's helpers.
fn app_template(i: usize) -> String {
    let mut t = String::new();
    let _ = write!(
        t,
        r#"{{{{- if .Values.enabled }}}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ include "lib.fullname" . }}}}-part{i}
  labels:
    {{{{- include "lib.labels" . | nindent 4 }}}}
    part: "{i}"
spec:
  replicas: {{{{ .Values.replicas }}}}
  selector:
    matchLabels:
      {{{{- include "lib.selector" . | nindent 6 }}}}
  template:
    metadata:
      labels:
        {{{{- include "lib.selector" . | nindent 8 }}}}
      annotations:
        checksum/config: {{{{ .Values.image.tag | sha256sum | trunc 16 }}}}
    spec:
      containers:
        - name: main
          image: "{{{{ .Values.image.repository }}}}:{{{{ .Values.image.tag }}}}"
          args:
          {{{{- range $k, $v := .Values.args }}}}
            - --{{{{ $k }}}}={{{{ $v }}}}
          {{{{- end }}}}
          env:
          {{{{- range .Values.env }}}}
            - name: {{{{ .name }}}}
              value: {{{{ .value | quote }}}}
          {{{{- end }}}}
          resources:
            {{{{- toYaml .Values.resources | nindent 12 }}}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{{{ include "lib.fullname" . }}}}-part{i}
  labels:
    {{{{- include "lib.labels" . | nindent 4 }}}}
spec:
  ports:
  {{{{- range .Values.ports }}}}
    - name: {{{{ .name }}}}
      port: {{{{ .port }}}}
  {{{{- end }}}}
  selector:
    {{{{- include "lib.selector" . | nindent 4 }}}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{{{ include "lib.fullname" . }}}}-part{i}
data:
  global: {{{{ .Values.global.domain | quote }}}}
  settings.yaml: |
    {{{{- toYaml .Values.settings | nindent 4 }}}}
{{{{- end }}}}
"#
    );
    t
}

/// An application chart's default values.
fn app_values(name: &str) -> String {
    let mut v = format!(
        "enabled: true\nreplicas: 2\nimage:\n  repository: registry.example/{name}\n  tag: \"1.4.2\"\n"
    );
    v.push_str("args:\n");
    for i in 0..12 {
        let _ = writeln!(v, "  flag{i}: value-{i}");
    }
    v.push_str("env:\n");
    for i in 0..12 {
        let _ = writeln!(v, "  - name: VAR_{i}\n    value: \"{i}\"");
    }
    v.push_str("ports:\n  - name: http\n    port: 80\n  - name: metrics\n    port: 9090\n");
    v.push_str("resources:\n  limits: {cpu: 500m, memory: 256Mi}\n  requests: {cpu: 100m, memory: 128Mi}\n");
    v.push_str("settings:\n");
    for i in 0..30 {
        let _ = writeln!(v, "  key{i}: {{nested: {i}, list: [a, b, c]}}");
    }
    v.push_str("exports:\n  data:\n    endpoint: http://metrics:9090\n");
    v
}

/// `len` bytes of a JSON-ish dashboard (what `files/` folders typically hold).
fn blob(seed: usize, len: usize) -> Vec<u8> {
    let mut s = String::with_capacity(len + 64);
    let mut i = 0;
    while s.len() < len {
        let _ = writeln!(
            s,
            "{{\"panel\": {i}, \"seed\": {seed}, \"expr\": \"rate(http_requests_total[5m])\"}},"
        );
        i += 1;
    }
    s.into_bytes()
}

fn file(name: impl Into<String>, data: impl Into<Vec<u8>>) -> BufferedFile {
    BufferedFile {
        name: name.into(),
        data: data.into(),
    }
}

/// An application subchart at `charts/<name>/`.
fn app_chart(out: &mut Vec<BufferedFile>, name: &str, templates: usize, files: usize) {
    let at = format!("charts/{name}");
    out.push(file(
        format!("{at}/Chart.yaml"),
        format!("apiVersion: v2\nname: {name}\nversion: 1.2.0\n"),
    ));
    out.push(file(format!("{at}/values.yaml"), app_values(name)));
    for i in 0..templates {
        out.push(file(
            format!("{at}/templates/part{i}.yaml"),
            app_template(i),
        ));
    }
    out.push(file(
        format!("{at}/templates/_helpers.tpl"),
        LIB_HELPERS.replace("lib.", &format!("{name}.")),
    ));
    for i in 0..files {
        out.push(file(format!("{at}/files/f{i}.json"), blob(i, 4 << 10)));
    }
}

const LIB_HELPERS: &str = r#"{{- define "lib.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "lib.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "lib.labels" -}}
{{ include "lib.selector" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
"#;

const ROOT_CHART: &str = "apiVersion: v2
name: shop
version: 3.1.0
appVersion: \"3.1\"
dependencies:
  - name: lib
    version: 1.x.x
  - name: web
    version: 1.x.x
    alias: frontend
  - name: web
    version: 1.x.x
    alias: admin
  - name: db
    version: 1.x.x
    condition: db.enabled
  - name: cache
    version: 1.x.x
    condition: cache.enabled
  - name: worker
    version: 1.x.x
    tags: [batch]
  - name: metrics
    version: 1.x.x
    import-values: [data]
";

/// The chart described in the module's documentation, in memory.
fn synthetic_chart() -> Chart {
    let mut out = vec![file("Chart.yaml", ROOT_CHART)];
    let mut values = app_values("shop");
    values.push_str("db:\n  enabled: true\ncache:\n  enabled: false\ntags:\n  batch: true\n");
    values.push_str("global:\n  domain: shop.example\n");
    out.push(file("values.yaml", values));
    out.push(file(
        "values.schema.json",
        r#"{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 0}}}"#,
    ));
    for i in 0..40 {
        out.push(file(format!("templates/part{i}.yaml"), app_template(i)));
    }
    out.push(file(
        "templates/dashboards.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-dashboards\ndata:\n{{ (.Files.Glob \"files/dashboards/d1*.json\").AsConfig | indent 2 }}\n",
    ));
    out.push(file(
        "templates/NOTES.txt",
        "Installed {{ .Release.Name }} with {{ len .Subcharts }} subcharts.\n",
    ));
    for i in 0..48 {
        out.push(file(
            format!("files/dashboards/d{i}.json"),
            blob(i, 16 << 10),
        ));
    }
    for i in 0..3 {
        out.push(file(format!("crds/crd{i}.yaml"), blob(i, 32 << 10)));
    }
    out.push(file(
        "charts/lib/Chart.yaml",
        "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
    ));
    out.push(file("charts/lib/templates/_helpers.tpl", LIB_HELPERS));
    app_chart(&mut out, "web", 16, 12);
    app_chart(&mut out, "db", 16, 12);
    app_chart(&mut out, "cache", 16, 12);
    app_chart(&mut out, "worker", 16, 12);
    app_chart(&mut out, "metrics", 8, 4);
    chart::loader::load_files(out).expect("the synthetic chart loads")
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A client for a cluster that is never asked: a client dry run needs none.
fn offline_client() -> kube::Client {
    let svc = tower::service_fn(|_: http::Request<kube::client::Body>| async {
        Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("no cluster"))
    });
    kube::Client::new(svc, "default")
}

fn main() {
    let chart = match std::env::var("RUDDER_BENCH_CHART") {
        Ok(path) => chart::loader::load(&path).expect("RUDDER_BENCH_CHART loads"),
        Err(_) => synthetic_chart(),
    };
    let renders: usize = std::env::var("RUDDER_BENCH_RENDERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let chart = Arc::new(chart);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let cfg = rt.block_on(async { ActionConfig::new(offline_client()) });
    let opts = |i: usize| ActionOptions::new(format!("shop-{i}"), "default");
    let values = || -> Values {
        serde_json::json!({"replicas": 3, "worker": {"replicas": 1}})
            .as_object()
            .cloned()
            .unwrap_or_default()
    };

    let first = rt
        .block_on(action::render(
            &chart,
            values(),
            &opts(0),
            Revision::install(1),
        ))
        .expect("the chart renders");
    let bytes: usize = first.files.values().map(String::len).sum();
    println!(
        "chart {}: {} rendered files, {} KiB of output; {renders} releases per figure",
        chart.name(),
        first.files.len(),
        bytes >> 10,
    );

    let mut render = Vec::with_capacity(renders);
    let mut dry_run = Vec::with_capacity(renders);
    // Interleaved, so that both figures see the same machine.
    for i in 0..renders {
        let t = Instant::now();
        let r = rt.block_on(action::render(
            &chart,
            values(),
            &opts(i),
            Revision::install(1),
        ));
        render.push(t.elapsed());
        assert!(r.is_ok());
        let t = Instant::now();
        let r = rt.block_on(Install::new(&cfg, opts(i)).dry_run(&chart, values(), DryRun::Client));
        dry_run.push(t.elapsed());
        assert!(r.is_ok());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let total = |v: &[Duration]| v.iter().sum::<Duration>() / v.len() as u32;
    println!(
        "render one release:            median {:.3} ms, mean {:.3} ms",
        ms(median(&mut render)),
        ms(total(&render))
    );
    println!(
        "dry-run install (client):      median {:.3} ms, mean {:.3} ms",
        ms(median(&mut dry_run)),
        ms(total(&dry_run))
    );
}
