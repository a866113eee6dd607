//! `rudder template` as a user runs it, on the example chart shipped in
//! `examples/charts/hello`.

use std::process::Command;

fn rudder(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run rudder");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn yaml_output_like_helm_template() {
    let (code, out, err) = rudder(&[
        "template",
        "demo",
        "examples/charts/hello",
        "--set",
        "replicaCount=3",
        "-n",
        "web",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("---\n# Source: hello/templates/configmap.yaml\n"),
        "{out}"
    );
    // Install order: ConfigMap, Service, Deployment.
    let cm = out.find("kind: ConfigMap").expect("configmap");
    let svc = out.find("kind: Service").expect("service");
    let dep = out.find("kind: Deployment").expect("deployment");
    assert!(cm < svc && svc < dep);
    assert!(out.contains("replicas: 3"));
    assert!(out.contains("name: demo-hello"));
    assert!(!out.contains("NOTES"), "notes are not part of the manifest");
}

#[test]
fn json_output_in_oracle_shape() {
    let (code, out, err) = rudder(&["template", "examples/charts/hello", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(j["error"].is_null());
    let m = j["manifests"].as_object().expect("manifests");
    assert!(m.contains_key("hello/templates/deployment.yaml"));
    assert!(m.contains_key("hello/templates/NOTES.txt"));
    assert!(!m.keys().any(|k| k.contains("_helpers")));
}

#[test]
fn schema_violation_is_a_clear_error() {
    let (code, _, err) = rudder(&[
        "template",
        "demo",
        "examples/charts/hello",
        "--set",
        "replicaCount=-1",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("values don't meet the specifications of the schema"),
        "{err}"
    );
    assert!(err.contains("/replicaCount"), "{err}");
    assert!(!err.contains("backtrace"), "{err}");
    let (code, out, _) = rudder(&[
        "template",
        "demo",
        "examples/charts/hello",
        "--set",
        "replicaCount=-1",
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(j["error"].as_str().unwrap_or_default().contains("schema"));
}

#[test]
fn template_errors_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("rudder-cli-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("templates")).expect("mkdir");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "a: 1\nb: {{ .Values.x.y }}\n",
    )
    .expect("write");
    let (code, _, err) = rudder(&["template", dir.to_str().expect("utf8")]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1);
    assert!(err.contains("bad/templates/cm.yaml:2"), "{err}");
    assert!(
        err.contains("nil pointer evaluating interface {}.y"),
        "{err}"
    );
}
