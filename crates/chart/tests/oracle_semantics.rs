//! Differential tests against the real Helm engine (`helm-oracle`): the
//! nesting of `tpl`, `include` and `define` (what a `tpl` text defines, what
//! it shadows, what it runs when it is empty), Go's parse errors for
//! malformed character constants, and the Go types Sprig's functions return.
//! Each case becomes a one-template chart in a temporary folder; the oracle
//! renders them all in one process (`helm-oracle corpus --runs 1`), rudder
//! renders the same charts, and output or error text must be identical.
//! Skips, saying why, where the oracle or `helm_python` is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use chart::oracle::{render_case, to_oracle_json, CaseOptions};

/// How a case is judged.
#[derive(Clone, Copy, PartialEq)]
enum Judge {
    /// Same output, or the same error message, byte for byte.
    Exact,
    /// Both fail; rudder's message must contain this text. For limits that
    /// are deliberately lower than Go's (template depth 10,000, not 100,000).
    BothFail(&'static str),
}

struct Case {
    id: &'static str,
    template: &'static str,
    helpers: &'static str,
    /// Values as JSON (which is YAML).
    values: &'static str,
    judge: Judge,
}

const fn case(id: &'static str, template: &'static str, values: &'static str) -> Case {
    Case {
        id,
        template,
        helpers: "",
        values,
        judge: Judge::Exact,
    }
}

const fn with_helpers(
    id: &'static str,
    template: &'static str,
    helpers: &'static str,
    values: &'static str,
) -> Case {
    Case {
        id,
        template,
        helpers,
        values,
        judge: Judge::Exact,
    }
}

const OUTER: &str = "{{ tpl .Values.outer . }}";

const TPL_CASES: &[Case] = &[
    // The issue's reproducer and its relatives: an inner text that parses to
    // nothing runs as itself, not as the outer text that has its name.
    case(
        "tpl-empty-inner",
        OUTER,
        r#"{"outer": "a={{ tpl .Values.inner . }};", "inner": ""}"#,
    ),
    case(
        "tpl-blank-inner",
        OUTER,
        r#"{"outer": "a={{ tpl .Values.inner . }};", "inner": "  \n "}"#,
    ),
    case(
        "tpl-comment-inner",
        OUTER,
        r#"{"outer": "a={{ tpl .Values.inner . }};", "inner": "{{/* c */}}"}"#,
    ),
    case(
        "tpl-define-only-inner",
        OUTER,
        r#"{"outer": "a={{ tpl .Values.inner . }};", "inner": "{{define \"x\"}}X{{end}}"}"#,
    ),
    case(
        "tpl-define-and-blank-inner",
        OUTER,
        r#"{"outer": "a={{ tpl .Values.inner . }}{{ include \"x\" . }};", "inner": "{{define \"x\"}}X{{end}} "}"#,
    ),
    case(
        "tpl-empty-top",
        "[{{ tpl .Values.e . }}][{{ tpl \"  \" . }}]",
        r#"{"e": ""}"#,
    ),
    // Defines made inside a tpl text: visible to that text and to the tpl
    // calls nested in it, gone once it returns.
    case(
        "tpl-define-gone-after",
        "{{ tpl .Values.outer . }}|{{ include \"x\" . }}",
        r#"{"outer": "{{define \"x\"}}X{{end}}"}"#,
    ),
    with_helpers(
        "tpl-define-shadows-chart",
        "{{ tpl .Values.outer . }}|{{ include \"x\" . }}",
        "{{define \"x\"}}chart{{end}}",
        r#"{"outer": "{{define \"x\"}}X{{end}}{{ include \"x\" . }}"}"#,
    ),
    with_helpers(
        "tpl-empty-define-keeps-chart",
        "{{ tpl .Values.outer . }}|{{ include \"x\" . }}",
        "{{define \"x\"}}chart{{end}}",
        r#"{"outer": "{{define \"x\"}} {{end}}[{{ include \"x\" . }}]"}"#,
    ),
    case(
        "tpl-outer-define-seen-by-nested",
        OUTER,
        r#"{"outer": "{{define \"x\"}}X{{end}}{{ tpl .Values.inner . }}", "inner": "{{ include \"x\" . }}"}"#,
    ),
    case(
        "tpl-nested-define-not-seen-by-outer",
        OUTER,
        r#"{"outer": "{{ tpl .Values.inner . }}{{ include \"y\" . }}", "inner": "{{define \"y\"}}Y{{end}}"}"#,
    ),
    with_helpers(
        "tpl-include-sees-tpl-defines",
        OUTER,
        "{{define \"h\"}}[{{ tpl .Values.inner . }}]{{end}}{{define \"x\"}}chart{{end}}",
        r#"{"outer": "{{define \"x\"}}OX{{end}}{{ include \"h\" . }}", "inner": "{{ include \"x\" . }}"}"#,
    ),
    case(
        "tpl-template-action",
        OUTER,
        r#"{"outer": "{{define \"y\"}}Y{{.Release.Name}}{{end}}{{template \"y\" .}}"}"#,
    ),
    case(
        "tpl-recursive-define",
        OUTER,
        r#"{"outer": "{{define \"r\"}}{{if .}}{{first .}}{{include \"r\" (rest .)}}{{end}}{{end}}{{include \"r\" (list 1 2 3)}}"}"#,
    ),
    // The text's own name: a define of it runs in its place, and a body
    // beside such a define is Go's "multiple definition".
    case(
        "tpl-define-own-name",
        "{{ tpl \"{{define \\\"gotpl\\\"}}G{{end}}\" . }}",
        "{}",
    ),
    case(
        "tpl-define-own-name-nested",
        OUTER,
        r#"{"outer": "<{{ tpl .Values.inner . }}>", "inner": "{{define \"gotpl\"}}G{{end}}"}"#,
    ),
    case(
        "tpl-define-own-name-and-body",
        "{{ tpl \"{{define \\\"gotpl\\\"}}G{{end}}x\" . }}",
        "{}",
    ),
    case(
        "tpl-define-own-name-and-body-multiline",
        OUTER,
        r#"{"outer": "a\n{{define \"gotpl\"}}G{{end}}\nx\n"}"#,
    ),
    Case {
        judge: Judge::BothFail("exceeded maximum template depth"),
        ..case(
            "tpl-template-own-name",
            "{{ tpl \"{{ template \\\"gotpl\\\" }}\" . }}",
            "{}",
        )
    },
    // `<no value>` goes from tpl's own result, before a pipeline sees it.
    case(
        "tpl-no-value-literal",
        "{{ tpl \"<no value>\" . | len }}",
        "{}",
    ),
    case(
        "tpl-no-value-missing",
        "{{ tpl \"{{ .Values.nope }}\" . | len }}",
        "{}",
    ),
    case("tpl-plain-text", "{{ tpl \"plain\" . }}", "{}"),
    case(
        "tpl-template-name",
        "{{ tpl \"{{ .Template.Name }}\" . }}",
        "{}",
    ),
    case(
        "tpl-dict-context",
        "{{ tpl \"{{ .x }}\" (dict \"x\" 1) }}",
        "{}",
    ),
    case(
        "tpl-nil-context",
        "{{ tpl \"[{{ . }}]\" .Values.missing }}",
        "{}",
    ),
    // Error texts, each nesting level wrapped as Go wraps it.
    case("tpl-parse-error", "{{ tpl \"{{ \" . }}", "{}"),
    case(
        "tpl-nested-parse-error",
        OUTER,
        r#"{"outer": "a{{ tpl .Values.inner . }}", "inner": "x\n{{ if }}"}"#,
    ),
    case("tpl-fail", "{{ tpl \"{{ fail \\\"boom\\\" }}\" . }}", "{}"),
    case(
        "tpl-nested-required",
        OUTER,
        r#"{"outer": "{{ tpl .Values.inner . }}", "inner": "{{ required \"need x\" .Values.x }}"}"#,
    ),
    case("tpl-exec-error", "{{ tpl \"{{ .Values.a.b }}\" . }}", "{}"),
    case(
        "tpl-nested-exec-error",
        "{{ tpl \"{{ tpl \\\"{{ .Values.a.b }}\\\" . }}\" . }}",
        "{}",
    ),
    case(
        "tpl-include-missing",
        "{{ tpl \"{{ include \\\"nope\\\" . }}\" . }}",
        "{}",
    ),
    // include -> tpl -> include of the calling file: Helm's limit of 1,000
    // nested includes of one name stops it, with the whole chain.
    case(
        "tpl-include-recursion",
        "{{ tpl \"{{ include \\\"t/templates/t.txt\\\" . }}\" . }}",
        "{}",
    ),
];

/// Go's `strconv.UnquoteChar` errors ("invalid syntax"), malformed and
/// unterminated constants, and the escapes that are valid.
const CHAR_CASES: &[Case] = &[
    case("char-empty", "{{ '' }}", "{}"),
    case("char-empty-line2", "x\n{{ '' }}", "{}"),
    case("char-empty-arg", "{{ print '' }}", "{}"),
    case("char-empty-if", "{{ if '' }}x{{ end }}", "{}"),
    case("char-empty-decl", "{{ $x := '' }}", "{}"),
    case("char-two", "{{ 'ab' }}", "{}"),
    case("char-two-pipe", "{{ 'ab' | print }}", "{}"),
    case("char-bad-escape", "{{ '\\z' }}", "{}"),
    case("char-dquote-escape", "{{ '\\\"' }}", "{}"),
    case("char-octal-big", "{{ '\\400' }}", "{}"),
    case("char-octal-short", "{{ '\\08' }}", "{}"),
    case("char-hex-bad", "{{ '\\xZZ' }}", "{}"),
    case("char-hex-short", "{{ '\\x4' }}", "{}"),
    case("char-u-short", "{{ '\\u12' }}", "{}"),
    case("char-surrogate", "{{ '\\ud800' }}", "{}"),
    case("char-too-big", "{{ '\\U00110000' }}", "{}"),
    case("char-unterminated", "{{ 'a }}", "{}"),
    case("char-unterminated-eof", "{{ 'a", "{}"),
    case("char-quote-eof", "{{ '", "{}"),
    case("char-backslash", "{{ '\\' }}", "{}"),
    case("char-newline", "{{ 'a\nb' }}", "{}"),
    case("char-field", "{{ 'a'.x }}", "{}"),
    case(
        "char-valid",
        "{{ '\\n' }} {{ '\\x41' }} {{ '\\u00e9' }} {{ '\\U0001F600' }} {{ '\\101' }} {{ '\\'' }} {{ '\"' }} {{ 'é' }} {{ '\\xff' }} {{ '\\377' }}",
        "{}",
    ),
    case(
        "char-simple-escapes",
        "{{ '\\a' }}{{ '\\b' }}{{ '\\f' }}{{ '\\v' }}{{ '\\t' }}{{ '\\r' }}{{ '\\\\' }}",
        "{}",
    ),
];

/// `typeOf`/`kindOf` of Sprig's list and dict results and Helm's objects.
const TYPE_CASES: &[Case] = &[
    case(
        "type-chunk",
        "{{ typeOf (chunk 1 (list 1)) }} {{ typeOf (chunk 2 (list)) }} {{ typeOf (mustChunk 2 (splitList \",\" \"a,b,c\")) }} {{ kindOf (chunk 1 (list 1)) }}",
        "{}",
    ),
    case(
        "type-chunk-element",
        "{{ typeOf (index (chunk 2 (list 1 2 3)) 0) }} {{ range chunk 2 (list 1 2 3) }}{{ typeOf . }}{{ end }}",
        "{}",
    ),
    case(
        "type-lists",
        "{{ typeOf (list) }} {{ typeOf (until 2) }} {{ typeOf (untilStep 0 4 2) }} {{ typeOf (splitList \",\" \"a\") }} {{ typeOf (keys (dict \"a\" 1)) }} {{ typeOf (values (dict \"a\" 1)) }} {{ typeOf (sortAlpha (list 2 1)) }} {{ typeOf (toStrings (list 1)) }} {{ typeOf (regexSplit \"a\" \"bab\" -1) }} {{ typeOf (pluck \"a\" (dict \"a\" 1)) }} {{ typeOf (uniq (splitList \",\" \"a,a\")) }} {{ typeOf (concat (list 1) (list 2)) }}",
        "{}",
    ),
    case(
        "type-dicts",
        "{{ typeOf (dict) }} {{ typeOf (merge (dict) (dict)) }} {{ typeOf (pick (dict \"a\" 1) \"a\") }} {{ typeOf (deepCopy (dict \"a\" 1)) }} {{ typeOf (split \",\" \"a,b\") }} {{ typeOf (splitn \",\" 2 \"a,b\") }} {{ typeOf (fromYaml \"a: 1\") }} {{ typeOf (fromYamlArray \"- 1\") }}",
        "{}",
    ),
    case(
        "type-objects",
        "{{ typeOf .Capabilities.HelmVersion }} {{ typeOf .Capabilities.KubeVersion }} {{ typeOf .Capabilities.APIVersions }} {{ typeOf .Values }} {{ typeOf .Files }} {{ typeOf .Release }} {{ typeOf .Chart }}",
        "{}",
    ),
];

fn shared() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"))
}

/// Lays the cases out as a corpus folder the oracle's `corpus` command reads.
fn write_corpus(root: &Path, cases: &[&Case]) {
    for c in cases {
        let dir = root.join("charts").join(c.id);
        std::fs::create_dir_all(dir.join("templates")).expect("mkdir chart");
        std::fs::write(
            dir.join("Chart.yaml"),
            "apiVersion: v2\nname: t\nversion: 0.1.0\n",
        )
        .expect("Chart.yaml");
        std::fs::write(dir.join("values.yaml"), "{}\n").expect("values.yaml");
        std::fs::write(dir.join("templates/t.txt"), c.template).expect("template");
        if !c.helpers.is_empty() {
            std::fs::write(dir.join("templates/_h.tpl"), c.helpers).expect("helpers");
        }
        let sdir = root.join("scenarios").join(c.id);
        std::fs::create_dir_all(&sdir).expect("mkdir scenario");
        std::fs::write(sdir.join("case.yaml"), c.values).expect("values");
    }
}

/// `Ok(text of t/templates/t.txt)` or `Err(message)` from a render result
/// in the oracle's JSON shape.
fn outcome(json: &serde_json::Value) -> Result<String, String> {
    match json.get("error").and_then(|e| e.as_str()) {
        Some(e) => Err(e.to_string()),
        None => Ok(json["manifests"]["t/templates/t.txt"]
            .as_str()
            .unwrap_or("<missing t/templates/t.txt>")
            .to_string()),
    }
}

/// rudder caps long error chains (Helm prints them whole): both failed, and
/// rudder's message is Helm's with the middle cut out, its note counting
/// exactly the bytes that are missing.
fn same_error_but_capped(helm: &Result<String, String>, ours: &Result<String, String>) -> bool {
    let (Err(helm), Err(ours)) = (helm, ours) else {
        return false;
    };
    let Some((head, rest)) = ours.split_once(" … [") else {
        return false;
    };
    let Some((count, tail)) = rest.split_once(" bytes of nested errors cut] … ") else {
        return false;
    };
    helm.starts_with(head)
        && helm.ends_with(tail)
        && count.parse::<usize>().ok() == Some(helm.len() - head.len() - tail.len())
}

fn oracle_ready(oracle: &Path) -> bool {
    oracle.exists()
        && Command::new("python3")
            .args(["-c", "import helm_python, yaml"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
}

fn run_group(group: &str, cases: &[Case]) {
    let oracle = shared().join("tools/helm-oracle");
    if !oracle_ready(&oracle) {
        eprintln!(
            "SKIP {group}: helm-oracle, helm_python or PyYAML missing (run ../shared/tools/install-oracle.sh)"
        );
        return;
    }
    let root = std::env::temp_dir().join(format!("rudder-{group}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let all: Vec<&Case> = cases.iter().collect();
    write_corpus(&root, &all);
    let expected = root.join("expected");
    let run = Command::new("python3")
        .arg(&oracle)
        .args(["corpus", "--runs", "1"])
        .arg(&root)
        .arg(&expected)
        .output()
        .expect("run helm-oracle corpus");
    assert!(
        run.status.success(),
        "helm-oracle corpus failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut failures = Vec::new();
    for c in cases {
        let read =
            std::fs::read_to_string(expected.join(c.id).join("case.json")).expect("oracle result");
        let helm = outcome(&serde_json::from_str(&read).expect("oracle json"));
        let dir = root.join("charts").join(c.id);
        let values = root.join("scenarios").join(c.id).join("case.yaml");
        let ours = outcome(&to_oracle_json(
            &render_case(&dir, &[values], &CaseOptions::default()),
            false,
        ));
        let same = match c.judge {
            Judge::Exact => helm == ours || same_error_but_capped(&helm, &ours),
            Judge::BothFail(needle) => {
                helm.is_err() && ours.as_ref().is_err_and(|m| m.contains(needle))
            }
        };
        if !same {
            failures.push(format!(
                "{}:\n  template: {:?}\n  helm:   {:?}\n  rudder: {:?}",
                c.id,
                c.template,
                helm.map_err(gotmpl::limits::cap_message),
                ours
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    println!(
        "{group}: {}/{} cases as Helm renders them",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tpl_include_define_nesting_matches_helm() {
    run_group("tpl", TPL_CASES);
}

#[test]
fn character_constant_errors_match_go() {
    run_group("char", CHAR_CASES);
}

#[test]
fn sprig_result_types_match_go() {
    run_group("types", TYPE_CASES);
}
