//! Hostile and broken input to every parser of nested data and everything
//! that expands: each must get a clear error (or Helm's own answer) with
//! bounded memory, never a stack overflow. The hostile files are generated
//! here, never committed.
//!
//! Input nested past the limit is refused on the test thread's own small
//! stack (2 MiB): refusing it builds nothing deep. Input within the limit
//! is handled on a deep stack, as `rudder template` handles it: the
//! compiler's recursive `Drop` and `Clone` of such deep values need it.

use chart::loader::{load_archive_with, load_files, Budget, BufferedFile, LoadError};
use chart::render::{render_templates, RenderOptions};
use gocodec::depth::{drop_json, on_deep_stack, MAX_DEPTH};
use serde_json::json;

/// A block mapping nested `levels` deep: `k:` one more space in each line.
fn block_maps(levels: usize) -> String {
    let mut s = String::new();
    for i in 0..levels {
        s.push_str(&" ".repeat(i));
        s.push_str("k:\n");
    }
    s.push_str(&" ".repeat(levels));
    s.push_str("leaf\n");
    s
}

/// `a:` holding compact block sequences `- - - x`, `levels` of them.
fn block_seqs(levels: usize) -> String {
    format!("a:\n{}x\n", "- ".repeat(levels))
}

fn file(name: &str, data: impl Into<Vec<u8>>) -> BufferedFile {
    BufferedFile {
        name: name.into(),
        data: data.into(),
    }
}

const CHART_YAML: &str = "apiVersion: v2\nname: c\nversion: 0.1.0\n";

/// A chart of the given templates (and files), loaded from memory.
fn chart_of(files: &[(&str, &str)]) -> chart::loader::Chart {
    let mut all = vec![file("Chart.yaml", CHART_YAML)];
    all.extend(files.iter().map(|(n, d)| file(n, *d)));
    load_files(all).expect("chart loads")
}

/// Renders on a deep stack, as `rudder template` does.
fn render_deep(
    c: chart::loader::Chart,
    values: serde_json::Value,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    on_deep_stack(move || {
        let vals = chart::values::as_values(values);
        let r = render_templates(&c, vals, &RenderOptions::default()).map_err(|e| e.to_string());
        r.map(|r| r.files)
    })
}

#[test]
fn values_nested_past_go_limits_are_refused_naming_the_line_and_depth() {
    let e = chart::values::read_values(&block_seqs(MAX_DEPTH)).unwrap_err();
    assert_eq!(
        e,
        "cannot unmarshal yaml document: error converting YAML to JSON: yaml: line 2: exceeded max depth of 10000"
    );
    let e = chart::values::read_values(&block_maps(MAX_DEPTH + 1)).unwrap_err();
    assert!(
        e.ends_with("yaml: line 10001: exceeded max depth of 10000"),
        "{e}"
    );
}

#[test]
fn values_as_deep_as_helm_reads_are_accepted() {
    // 10,000 nested maps: Helm takes this (go-yaml's and encoding/json's
    // limit), and so do we.
    let depth = on_deep_stack(|| {
        let v = chart::values::read_values(&block_maps(MAX_DEPTH)).expect("accepted");
        let d = gocodec::depth::json_depth(&serde_json::Value::Object(v.clone()));
        drop_json(serde_json::Value::Object(v));
        d
    });
    assert_eq!(depth, MAX_DEPTH);
}

#[test]
fn deep_chart_yaml_and_values_yaml_name_their_file() {
    let deep = format!(
        "{CHART_YAML}extra:\n{}",
        block_maps(MAX_DEPTH + 1).replace('\n', "\n ")
    );
    let e = load_files(vec![file("Chart.yaml", deep)]).unwrap_err();
    assert!(e.to_string().starts_with("cannot load Chart.yaml: "), "{e}");
    assert!(
        e.to_string().ends_with("exceeded max depth of 10000"),
        "{e}"
    );

    let e = load_files(vec![
        file("Chart.yaml", CHART_YAML),
        file("values.yaml", block_seqs(MAX_DEPTH + 5)),
    ])
    .unwrap_err();
    assert!(
        e.to_string().starts_with("cannot load values.yaml: "),
        "{e}"
    );
    assert!(
        e.to_string().ends_with("exceeded max depth of 10000"),
        "{e}"
    );
}

#[test]
fn from_yaml_and_from_json_report_depth_as_helm_does() {
    let deep_yaml = block_seqs(MAX_DEPTH + 1);
    let deep_json = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    let c = chart_of(&[
        ("files/deep.yaml", &deep_yaml),
        ("files/deep.json", &deep_json),
        (
            "templates/a.yaml",
            "y: {{ (fromYaml (.Files.Get \"files/deep.yaml\")).Error | quote }}\nj: {{ (fromJson (.Files.Get \"files/deep.json\")).Error | quote }}\n",
        ),
    ]);
    let out = render_deep(c, json!({})).unwrap();
    let a = &out["c/templates/a.yaml"];
    assert!(
        a.contains(
            "y: \"error converting YAML to JSON: yaml: line 2: exceeded max depth of 10000\""
        ),
        "{a}"
    );
    assert!(
        a.contains("j: \"invalid character '[' exceeded max depth\""),
        "{a}"
    );
}

#[test]
fn json_decoding_stops_at_go_depth() {
    let text = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let e = gocodec::json::parse(&text(MAX_DEPTH + 1), gocodec::json::Target::Any).unwrap_err();
    assert_eq!(e.to_string(), "invalid character '[' exceeded max depth");
    let ok = on_deep_stack(move || {
        gocodec::json::parse(&text(MAX_DEPTH), gocodec::json::Target::Any).is_ok()
    });
    assert!(ok);
}

/// A manifest whose `data` nests `levels` block sequences on one line.
fn deep_manifest(levels: usize) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  k: {}x\n",
        "- ".repeat(levels)
    )
    .replace("k: -", "k:\n  -")
}

#[test]
fn rendered_output_as_deep_as_the_api_server_takes_is_sorted_and_deeper_is_refused() {
    // 9,000 levels: Helm renders it, the API server would store it.
    let c = chart_of(&[("templates/deep.yaml", "{{ .Values.text }}")]);
    let text = deep_manifest(9_000);
    let sorted = on_deep_stack(move || {
        let vals = chart::values::as_values(json!({ "text": text }));
        let r = render_templates(&c, vals, &RenderOptions::default()).expect("renders");
        let s = chart::manifest::sort_manifests(&r.files, chart::manifest::INSTALL_ORDER)
            .map(|s| (s.manifests.len(), s.manifests[0].content.len()));
        s.map_err(|e| e.to_string())
    });
    assert_eq!(sorted.unwrap().0, 1);

    let files = std::collections::BTreeMap::from([(
        "c/templates/deep.yaml".to_string(),
        deep_manifest(MAX_DEPTH + 1),
    )]);
    let e = chart::manifest::sort_manifests(&files, chart::manifest::INSTALL_ORDER).unwrap_err();
    assert!(e.to_string().contains("c/templates/deep.yaml"), "{e}");
    assert!(e.to_string().contains("exceeded max depth of 10000"), "{e}");
}

#[test]
fn a_cr_whose_values_render_3000_levels_parses_on_a_worker_sized_stack() {
    // A CR spec nested 3,000 levels that the chart writes out with toYaml.
    let mut tree = serde_json::Value::from("leaf");
    for _ in 0..3_000 {
        // (`json!` would copy `tree` through `Serialize`, recursively.)
        let mut m = serde_json::Map::new();
        m.insert("k".into(), tree);
        tree = serde_json::Value::Object(m);
    }
    let c = chart_of(&[(
        "templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n{{ toYaml .Values.tree | indent 2 }}\n",
    )]);
    let mut vals = serde_json::Map::new();
    vals.insert("tree".into(), tree);
    let out = render_deep(c, serde_json::Value::Object(vals)).expect("renders");
    let manifest = out["c/templates/cm.yaml"].clone();
    assert!(manifest.len() > 3_000 * 3);
    // What the release actions do with each document, on a thread with a
    // tokio worker's 2 MiB stack: the parse itself needs none of it.
    let depth = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let v = gocodec::yaml::parse_yaml_to_json(&manifest).expect("parses");
            let d = gocodec::depth::json_depth(&v);
            drop_json(v);
            d
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(depth, 3_001);
}

#[test]
fn alias_bombs_fail_fast_as_go_yaml_refuses_them() {
    // 10 KB: 1 KB leaves, each level ten aliases of the one below.
    let bomb = |levels: usize| {
        let mut s = format!("l0: &l0 \"{}\"\n", "x".repeat(1000));
        for i in 1..=levels {
            let refs = vec![format!("*l{}", i - 1); 10].join(", ");
            s.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        s
    };
    for levels in [4, 6, 10] {
        let e = gocodec::yaml::parse_yaml_to_json(&bomb(levels)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "error converting YAML to JSON: yaml: document contains excessive aliasing"
        );
    }
    // Three levels (a thousand copies) is what go-yaml still allows.
    let v = gocodec::yaml::parse_yaml_to_json(&bomb(3)).unwrap();
    assert_eq!(v["l3"].as_array().unwrap().len(), 10);
}

#[test]
fn schema_and_set_json_read_as_deep_as_go_and_no_deeper() {
    let nested = |n: usize| {
        format!(
            "{}{}",
            "{\"items\":".repeat(n),
            "{}".to_string() + &"}".repeat(n)
        )
    };
    let e = chart::schema::validate_single(&Default::default(), nested(MAX_DEPTH + 1).as_bytes())
        .unwrap_err();
    assert_eq!(e, "exceeded max depth of 10000\n");
    // Deeper than serde_json's own limit of 128.
    chart::schema::validate_single(&Default::default(), nested(300).as_bytes()).unwrap();

    let mut vals = chart::values::Values::new();
    let arr = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let e = chart::values::strvals::parse_json(&format!("a={}", arr(MAX_DEPTH + 1)), &mut vals)
        .unwrap_err();
    assert!(e.to_string().contains("exceeded max depth of 10000"), "{e}");
    chart::values::strvals::parse_json(&format!("a={}", arr(300)), &mut vals).unwrap();
    drop_json(serde_json::Value::Object(vals));
}

#[test]
fn toml_as_deep_as_go_reads_it_and_a_short_error_beyond() {
    // BurntSushi's reader (Go's stack grows) takes any depth; ours takes what
    // Go's YAML and JSON readers take. The parsed values are dropped on a deep
    // stack, as the CLI and the operator run their renders.
    let arrays = |n: usize| format!("a = {}1{}\n", "[".repeat(n - 1), "]".repeat(n - 1));
    let dotted = |n: usize| format!("{} = 1\n", vec!["a"; n].join("."));
    let inline = |n: usize| format!("a = {}1{}\n", "{b = ".repeat(n - 1), "}".repeat(n - 1));
    for (what, text) in [
        ("arrays", arrays(MAX_DEPTH)),
        ("dotted keys", dotted(MAX_DEPTH)),
        ("inline tables", inline(MAX_DEPTH)),
    ] {
        let parsed = gocodec::depth::on_deep_stack(move || {
            gocodec::toml::parse_toml_map(&text).map(|m| m.len())
        });
        assert_eq!(parsed, Ok(1), "{what} nested {MAX_DEPTH} levels");
    }
    for (what, text) in [
        ("arrays", arrays(MAX_DEPTH + 1)),
        ("dotted keys", dotted(MAX_DEPTH + 1)),
        ("inline tables", inline(MAX_DEPTH + 1)),
    ] {
        let e = gocodec::toml::parse_toml_map(&format!("x = 1\n{text}"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "toml: line 2: exceeded max depth of 10000", "{what}");
    }
}

/// A gzipped tar of `files` under `c/`; `big` entries are streamed zeros.
fn archive(files: &[(&str, &[u8])], big: &[(&str, u64)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let mut add = |name: &str, size: u64, data: &mut dyn std::io::Read| {
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, format!("c/{name}"), data).unwrap();
    };
    add(
        "Chart.yaml",
        CHART_YAML.len() as u64,
        &mut CHART_YAML.as_bytes(),
    );
    for (name, data) in files {
        add(name, data.len() as u64, &mut &data[..]);
    }
    for (name, size) in big {
        add(name, *size, &mut std::io::repeat(b' ').take(*size));
    }
    tar.into_inner().unwrap().finish().unwrap()
}

use std::io::Read as _;

#[test]
fn archives_decompress_within_helms_budget() {
    // A 256 KB gzip bomb holding one 256 MiB template.
    let bomb = archive(&[], &[("templates/big.yaml", 256 << 20)]);
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let e = load_archive_with(&bomb, &Budget::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decompressed chart is larger than the maximum size 104857600"
    );
    // One file over the per-file limit, and many files over the total.
    let small = Budget {
        max_chart_size: 64 << 10,
        max_file_size: 16 << 10,
    };
    let one = archive(&[], &[("templates/a.yaml", 20 << 10)]);
    assert_eq!(
        load_archive_with(&one, &small).unwrap_err().to_string(),
        "decompressed chart file \"c/templates/a.yaml\" is larger than the maximum file size 16384"
    );
    let many: Vec<(String, u64)> = (0..5)
        .map(|i| (format!("templates/{i}.yaml"), 15 << 10))
        .collect();
    let many: Vec<(&str, u64)> = many.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    assert!(matches!(
        load_archive_with(&archive(&[], &many), &small),
        Err(LoadError::TooLarge(chart::loader::TooLarge::Chart(65536)))
    ));
    // Within the budget it loads.
    let c = load_archive_with(&archive(&[("templates/a.yaml", b"x: 1")], &[]), &small).unwrap();
    assert_eq!(c.templates.len(), 1);
}

#[test]
fn a_directory_file_over_the_limit_is_refused_as_helm_refuses_it() {
    let dir = std::env::temp_dir().join(format!("rudder-hostile-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("Chart.yaml"), CHART_YAML).unwrap();
    std::fs::write(dir.join("templates/big.txt"), vec![b'x'; 20 << 10]).unwrap();
    let small = Budget {
        max_chart_size: 1 << 20,
        max_file_size: 16 << 10,
    };
    let e = chart::loader::load_dir_with(&dir, &small).unwrap_err();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        e.to_string(),
        "chart file \"big.txt\" is larger than the maximum file size 16384"
    );
}

#[test]
fn chart_api_versions_other_than_v1_and_v2_are_refused_with_helms_message() {
    for (v, msg) in [
        ("v3", "invalid chart apiVersion"),
        ("v4", "unsupported chart version"),
        ("V2", "unsupported chart version"),
    ] {
        let e = load_files(vec![file(
            "Chart.yaml",
            format!("apiVersion: {v}\nname: c\nversion: 0.1.0\n"),
        )])
        .unwrap_err();
        assert_eq!(e.to_string(), msg, "{v}");
    }
    // No apiVersion at all is v1, as in Helm.
    let c = load_files(vec![file("Chart.yaml", "name: c\nversion: 0.1.0\n")]).unwrap();
    assert_eq!(c.metadata.api_version, "v1");
}

#[test]
fn the_output_budget_covers_all_templates_of_a_render() {
    // Two templates of 150 MB each: each alone is within 256 MiB.
    let t = "{{ \"x\" | repeat 150000000 }}";
    let c = chart_of(&[("templates/a.yaml", t), ("templates/b.yaml", t)]);
    let e = render_deep(c, json!({})).unwrap_err();
    assert!(
        e.contains("output exceeds the limit of 268435456 bytes"),
        "{e}"
    );
}

#[test]
fn a_tpl_recursing_through_values_fails_with_a_short_error() {
    let c = chart_of(&[("templates/a.yaml", "a: {{ tpl .Values.t . }}")]);
    let e = render_deep(c, json!({ "t": "{{ tpl .Values.t . }}" })).unwrap_err();
    assert!(e.len() < 5_000, "{} bytes", e.len());
    assert!(e.contains("bytes of nested errors cut"), "{e}");
    assert!(
        e.ends_with("exceeded maximum template depth (10000)"),
        "{e}"
    );
}

#[test]
fn json_values_deeper_than_yaml_rust2_flow_limit_read_as_go_yaml_reads_them() {
    // yaml-rust2 stops flow nesting at 255; go-yaml, and so Helm, at 10,000.
    let doc = |n: usize| format!("{{\"tree\": {}1{}}}", "[".repeat(n), "]".repeat(n));
    let depth = on_deep_stack(move || {
        let v = chart::values::read_values(&doc(3_000)).expect("accepted");
        gocodec::depth::json_depth(&serde_json::Value::Object(v))
    });
    assert_eq!(depth, 3_001);
    let e = chart::values::read_values(&doc(MAX_DEPTH + 1)).unwrap_err();
    assert!(e.ends_with("yaml: exceeded max depth of 10000"), "{e}");
    // Deep flow YAML that is not JSON keeps the YAML error.
    let e =
        gocodec::yaml::parse_yaml_to_json(&format!("a: {}x{}", "[".repeat(300), "]".repeat(300)))
            .unwrap_err();
    assert_eq!(
        e.to_string(),
        "error converting YAML to JSON: yaml: flow collections ([...] or {...}) nest \
         deeper than 255 levels, the most rudder reads in YAML flow style (Helm reads 10000); \
         write them in block style, or the whole document as JSON"
    );
    // 255 levels are read.
    let v =
        gocodec::yaml::parse_yaml_to_json(&format!("a: {}x{}", "[".repeat(254), "]".repeat(254)))
            .expect("within the flow limit");
    assert_eq!(gocodec::depth::json_depth(&v), 255);
}
