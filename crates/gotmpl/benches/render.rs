//! Parse and execute of a large, chart-like template (many defines,
//! ranges, pipelines and template calls). Reports time per parse, time per
//! render and bytes allocated per render.
//!
//! Run: `cargo bench -p gotmpl --bench render`

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use counting_alloc::{ALLOCATED, ALLOCS};
use gotmpl::{FuncMap, Templates, Value};

fn helpers() -> String {
    let mut s = String::new();
    for i in 0..60 {
        s.push_str(&format!(
            "{{{{- define \"chart.helper{i}\" -}}}}\n\
             app.kubernetes.io/name: {{{{ .name }}}}\n\
             app.kubernetes.io/instance: {{{{ printf \"%s-%d\" .name {i} }}}}\n\
             {{{{- if .labels }}}}{{{{ range $k, $v := .labels }}}}\n{{{{ $k }}}}: {{{{ $v | print }}}}{{{{ end }}}}{{{{ end }}}}\n\
             {{{{- end -}}}}\n"
        ));
    }
    s
}

fn main_template() -> String {
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{{{ .name }}}}-{i}\n  labels:\n{{{{ template \"chart.helper{i}\" . }}}}\n\
             spec:\n  replicas: {{{{ .replicas }}}}\n  template:\n    spec:\n      containers:\n\
             {{{{- range $idx, $c := .containers }}}}\n        - name: {{{{ $c.name }}}}\n          image: {{{{ printf \"%s:%s\" $c.image $c.tag }}}}\n\
             {{{{- if and $c.ports (gt (len $c.ports) 0) }}}}\n          ports:\n{{{{- range $c.ports }}}}\n            - containerPort: {{{{ . }}}}{{{{ end }}}}{{{{ end }}}}\n\
             {{{{- with $c.env }}}}\n          env:\n{{{{- range $k, $v := . }}}}\n            - name: {{{{ $k }}}}\n              value: {{{{ $v | printf \"%q\" }}}}{{{{ end }}}}{{{{ end }}}}\n\
             {{{{- end }}}}\n"
        ));
    }
    s
}

fn data() -> Value {
    let containers: Vec<serde_json::Value> = (0..5)
        .map(|i| {
            serde_json::json!({
                "name": format!("c{i}"), "image": "registry.example/app", "tag": format!("1.{i}.0"),
                "ports": [8080, 8443, 9090],
                "env": {"A": "1", "B": "two", "C": "three", "LOG_LEVEL": "debug"}
            })
        })
        .collect();
    Value::from_json(&serde_json::json!({
        "name": "demo", "replicas": 3,
        "labels": {"team": "core", "tier": "backend", "env": "prod"},
        "containers": containers
    }))
}

fn main() {
    let funcs = Rc::new(FuncMap::new());
    let (h, m) = (helpers(), main_template());
    let iters = 200;

    let t0 = Instant::now();
    for _ in 0..iters {
        let mut set = Templates::new(funcs.clone());
        set.parse("_helpers.tpl", &h).expect("helpers parse");
        set.parse("deploy.yaml", &m).expect("main parse");
    }
    let parse = t0.elapsed() / iters;

    let mut set = Templates::new(funcs);
    set.parse("_helpers.tpl", &h).expect("helpers parse");
    set.parse("deploy.yaml", &m).expect("main parse");
    let set = Rc::new(set);
    let d = data();
    let out = set.execute("deploy.yaml", &d).expect("renders");

    let (b0, a0) = (
        ALLOCATED.load(Ordering::Relaxed),
        ALLOCS.load(Ordering::Relaxed),
    );
    let t1 = Instant::now();
    for _ in 0..iters {
        let o = set.execute("deploy.yaml", &d).expect("renders");
        std::hint::black_box(o);
    }
    let exec = t1.elapsed() / iters;
    let bytes = (ALLOCATED.load(Ordering::Relaxed) - b0) / iters as usize;
    let allocs = (ALLOCS.load(Ordering::Relaxed) - a0) / iters as usize;

    println!(
        "template: {} bytes of source ({} + {}), output {} bytes",
        h.len() + m.len(),
        h.len(),
        m.len(),
        out.len()
    );
    println!(
        "parse:   {:>10.1} µs per parse of both files",
        parse.as_secs_f64() * 1e6
    );
    println!("execute: {:>10.1} µs per render", exec.as_secs_f64() * 1e6);
    println!("alloc:   {bytes} bytes in {allocs} allocations per render");
}
