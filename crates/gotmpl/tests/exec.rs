//! Execution semantics checked against what Go's text/template does.

use std::rc::Rc;

use gotmpl::{Func, FuncMap, MissingKey, Options, Templates, Ty, Value};

fn data() -> Value {
    Value::from_json(&serde_json::json!({
        "name": "world", "n": 3, "list": ["a", "b", "c"], "m": {"b": 2, "a": 1},
        "nested": {"x": {"y": "deep"}}, "nul": null, "empty": "", "t": true
    }))
}

/// The functions the tests' templates call: `upper`.
fn funcs() -> Rc<FuncMap> {
    let mut funcs = FuncMap::new();
    funcs.insert(
        "upper",
        Func::new(&[Ty::String], |_, a| {
            Ok(Value::string(
                a[0].as_str().unwrap_or_default().to_uppercase(),
            ))
        }),
    );
    Rc::new(funcs)
}

fn run_with(src: &str, missing: MissingKey) -> Result<String, String> {
    let mut set = Templates::new(funcs());
    set.set_options(Options {
        missing_key: missing,
        ..Options::default()
    });
    set.parse("t", src).map_err(|e| e.to_string())?;
    Rc::new(set)
        .execute("t", &data())
        .map_err(|e| e.to_string())
}

fn run(src: &str) -> Result<String, String> {
    run_with(src, MissingKey::Default)
}

fn ok(src: &str, want: &str) {
    assert_eq!(run(src).as_deref(), Ok(want), "template {src:?}");
}

fn err(src: &str, want: &str) {
    match run(src) {
        Ok(out) => {
            panic!("template {src:?}: expected error containing {want:?}, got output {out:?}")
        }
        Err(e) => assert!(
            e.contains(want),
            "template {src:?}: error {e:?} lacks {want:?}"
        ),
    }
}

#[test]
fn text_fields_and_trim() {
    ok("hello {{ .name }}", "hello world");
    ok("a  {{- .name -}}  b", "aworldb");
    ok("{{ .nested.x.y }}", "deep");
    ok("{{ .missing }}", "<no value>");
    ok("{{/* comment */}}x", "x");
}

#[test]
fn control_flow() {
    ok("{{ if .t }}yes{{ else }}no{{ end }}", "yes");
    ok("{{ if .empty }}a{{ else if .n }}b{{ else }}c{{ end }}", "b");
    ok("{{ with .nested.x }}{{ .y }}{{ end }}", "deep");
    ok(
        "{{ with .missing }}a{{ else with .name }}{{ . }}{{ end }}",
        "world",
    );
    ok(
        "{{ range $i, $v := .list }}{{ $i }}{{ $v }}{{ end }}",
        "0a1b2c",
    );
    ok(
        "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}",
        "a=1;b=2;",
    );
    ok("{{ range .missing }}x{{ else }}empty{{ end }}", "empty");
    ok("{{ range 3 }}{{ . }}{{ end }}", "012");
    ok(
        "{{ range .list }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }}",
        "a",
    );
    ok(
        "{{ range .list }}{{ if eq . \"b\" }}{{ continue }}{{ end }}{{ . }}{{ end }}",
        "ac",
    );
}

#[test]
fn variables_and_scoping() {
    ok(
        "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}",
        "2",
    );
    ok(
        "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ end }}{{ $x }}",
        "1",
    );
    ok("{{ range .list }}{{ $.name }}{{ end }}", "worldworldworld");
    err("{{ $y }}", "undefined variable \"$y\"");
}

#[test]
fn define_template_block() {
    ok(
        "{{ define \"x\" }}[{{ . }}]{{ end }}{{ template \"x\" .name }}",
        "[world]",
    );
    ok("{{ block \"b\" .n }}<{{ . }}>{{ end }}", "<3>");
    err("{{ template \"nope\" }}", "template \"nope\" not defined");
    // Go shows the whole action as the error context.
    err(
        "{{ template \"nope\" .name }}",
        "at <{{template \"nope\" .name}}>: template \"nope\" not defined",
    );
    err(
        "{{ template \"nope\" }}",
        "at <{{template \"nope\"}}>: template",
    );
}

#[test]
fn builtins_and_pipelines() {
    ok("{{ .name | upper }}", "WORLD");
    ok("{{ len .list }}", "3");
    ok("{{ index .list 1 }}", "b");
    ok("{{ index .m \"a\" }}", "1");
    ok("{{ and 1 0 2 }}|{{ or 0 \"\" \"x\" }}", "0|x");
    ok("{{ not .empty }}", "true");
    ok("{{ eq 1 2 1 }}", "true");
    ok("{{ lt 1 2 }}{{ ge \"b\" \"a\" }}", "truetrue");
    ok("{{ print 1 2 \"a\" \"b\" 3 }}", "1 2ab3");
    ok("{{ html \"<a&b>\" }}", "&lt;a&amp;b&gt;");
    ok("{{ urlquery \"a b&c\" }}", "a+b%26c");
    ok("{{ slice .list 1 }}", "[b c]");
    ok("{{ .n }}", "3");
    err("{{ eq 1 1.0 }}", "incompatible types for comparison");
    err(
        "{{ eq .list .list }}",
        "non-comparable type [a b c]: []interface {}",
    );
    err(
        "{{ eq .m .m }}",
        "non-comparable type map[a:%!s(float64=1) b:%!s(float64=2)]: map[string]interface {}",
    );
    err("{{ index .list 5 }}", "index out of range");
    err("{{ upper 1 }}", "expected string; found 1");
    err(
        "{{ upper .n }}",
        "wrong type for value; expected string; got float64",
    );
    err("{{ len 3 }}", "len of type int");
}

#[test]
fn nil_and_missing_semantics() {
    assert_eq!(
        run_with("{{ .missing }}", MissingKey::Zero).as_deref(),
        Ok("<no value>")
    );
    let e = run_with("{{ .missing.x }}", MissingKey::Zero).unwrap_err();
    assert!(e.contains("nil pointer evaluating interface {}.x"), "{e}");
    assert_eq!(
        run_with("{{ (.missing).x }}", MissingKey::Zero).as_deref(),
        Ok("<no value>")
    );
    let e = run_with("{{ .missing }}", MissingKey::Error).unwrap_err();
    assert!(e.contains("map has no entry for key \"missing\""), "{e}");
    err(
        "{{ .name.x }}",
        "can't evaluate field x in type interface {}",
    );
}

#[test]
fn error_locations_like_go() {
    let e = run("line1\n  {{ .name.x }}").unwrap_err();
    assert_eq!(
        e,
        "template: t:2:10: executing \"t\" at <.name.x>: can't evaluate field x in type interface {}"
    );
    let e = run("{{ if }}").unwrap_err();
    assert_eq!(e, "template: t:1: missing value for if");
}

#[test]
fn recursion_and_output_limits() {
    let e =
        run("{{ define \"r\" }}{{ template \"r\" . }}{{ end }}{{ template \"r\" . }}").unwrap_err();
    assert!(e.contains("exceeded maximum template depth"), "{e}");
    let mut set = Templates::new(Rc::new(FuncMap::new()));
    set.set_options(Options {
        max_output: 100,
        ..Options::default()
    });
    set.parse("t", "{{ range 1000 }}xxxxxxxx{{ end }}")
        .expect("parses");
    let e = Rc::new(set)
        .execute("t", &Value::Nil)
        .unwrap_err()
        .to_string();
    assert!(e.contains("output exceeds"), "{e}");
}

#[test]
fn deeply_nested_parentheses_do_not_overflow() {
    let src = format!("{{{{ {}1{} }}}}", "(".repeat(5000), ")".repeat(5000));
    assert_eq!(run(&src).as_deref(), Ok("1"));
}

#[test]
fn huge_printf_precision_does_not_panic() {
    let out = run(r#"{{ printf "%.70000f|%.70000e" -1.5 2.5 }}"#).expect("renders");
    assert!(out.starts_with("-1.5000"), "{}", &out[..10]);
    assert!(out.ends_with("e+00"));
    assert_eq!(out.len(), 70003 + 1 + 70006);
}

#[test]
fn go_strings_are_bytes() {
    ok(r#"{{ len "\xff" }}"#, "1");
    ok(r#"{{ printf "%x" "\x00\xff" }}"#, "00ff");
    ok(r#"{{ printf "%q" (slice "é" 0 1) }}"#, r#""\xc3""#);
    ok(r#"{{ len (slice "é" 0 1) }}"#, "1");
    ok(r#"{{ index "\xc3\xa9" 0 }}"#, "195");
    ok(r#"{{ "\xc3\xa9" }}|{{ "\303\251" }}"#, "é|é");
    ok(r#"{{ '\xff' }}"#, "255");
    ok(
        r#"{{ eq (printf "%s%s" (slice "é" 0 1) (slice "é" 1)) "é" }}"#,
        "true",
    );
}

#[test]
fn methods_of_named_maps_win_over_keys() {
    use gotmpl::value::{Map, MapKind, MapRef};
    let mut funcs = FuncMap::new();
    funcs.insert_method(
        "my.Values",
        "Get",
        Func::new(&[Ty::Any, Ty::String], |_, a| {
            let key = a[1].as_str().unwrap_or_default().to_string();
            Ok(a[0]
                .as_map()
                .and_then(|m| m.get(&key))
                .unwrap_or(Value::Nil))
        }),
    );
    let mut m = Map::new();
    m.insert("k".into(), Value::str("v"));
    m.insert("Get".into(), Value::str("key"));
    let named = Value::Map(MapRef::with_kind(m.clone(), MapKind::Named("my.Values")));
    let plain = Value::map(m);
    let mut set = Templates::new(Rc::new(funcs));
    set.parse("t", "{{ .Get \"k\" }}").unwrap();
    let set = Rc::new(set);
    assert_eq!(set.execute("t", &named).unwrap(), "v");
    // Only the named type has the method; a plain map reads its key.
    let mut set2 = Templates::new(Rc::new(FuncMap::new()));
    set2.parse("t", "{{ .Get }}").unwrap();
    assert_eq!(Rc::new(set2).execute("t", &plain).unwrap(), "key");
    let err = set.execute("t", &plain).unwrap_err().to_string();
    assert!(
        err.contains("Get is not a method but has arguments"),
        "{err}"
    );
}

#[test]
fn error_contexts_match_go() {
    // A stray right paren is the lexer's error.
    err("{{ 1) }}", "unexpected right paren");
    // Arity errors point at the function name, call errors at the command.
    err(
        "{{ not 1 2 }}",
        "at <not>: wrong number of args for not: want 1 got 2",
    );
    err(
        "{{ upper \"a\" \"b\" }}",
        "at <upper>: wrong number of args for upper: want 1 got 2",
    );
    err("{{ index 1 2 }}", "at <index 1 2>: error calling index");
}

#[test]
fn parse_returns_the_tree_it_parsed_even_when_it_replaced_nothing() {
    // As Go's `t.New(name).Parse(text)`: an empty text leaves the earlier
    // `name` in the set, but the template returned runs the empty text.
    let mut set = Templates::new(Rc::new(FuncMap::new()));
    set.parse("t", "first").expect("parses");
    let blank = set.parse("t", "  ").expect("parses");
    let set = Rc::new(set);
    assert_eq!(set.execute("t", &Value::Nil).as_deref(), Ok("first"));
    let mut out = String::new();
    set.execute_tree(&blank, &Value::Nil, &mut out, 0)
        .expect("runs");
    assert_eq!(out, "  ");
    // A layer over the set: the same, without touching the base.
    let mut layer = Templates::layered(set.clone());
    let empty = layer.parse("t", "").expect("parses");
    let layer = Rc::new(layer);
    let mut out = String::new();
    layer
        .execute_tree(&empty, &Value::Nil, &mut out, 0)
        .expect("runs");
    assert_eq!(out, "");
    assert_eq!(layer.execute("t", &Value::Nil).as_deref(), Ok("first"));
}

/// A set's trees shared with other threads run there as they run here,
/// on all threads at once: `template` calls, string literals, and
/// templates a thread parses over the shared ones.
#[test]
fn shared_templates_run_on_other_threads_at_once_as_here() {
    let src = r#"{{ define "greet" }}{{ "hello" }}, {{ .name | upper }}{{ end }}{{ template "greet" . }}/{{ printf "%s-%v" "lit" .n }}"#;
    let mut set = Templates::new(funcs());
    set.parse("t", src).unwrap();
    let set = Rc::new(set);
    let here = set.execute("t", &data()).unwrap();
    assert_eq!(here, "hello, WORLD/lit-3");
    let shared = set.share();
    let start = std::sync::Barrier::new(3);
    let (shared, start) = (&shared, &start);
    let there: Vec<_> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || {
                    let mut theirs = Templates::from_shared(funcs(), shared);
                    theirs
                        .parse("u", r#"{{ template "t" . }}+{{ template "greet" . }}"#)
                        .unwrap();
                    let theirs = Rc::new(theirs);
                    start.wait();
                    let mut once = String::new();
                    for _ in 0..200 {
                        once = theirs.execute("t", &data()).unwrap();
                    }
                    let twice = theirs.execute("u", &data()).unwrap();
                    (once, twice, theirs.written())
                })
            })
            .collect();
        start.wait();
        for _ in 0..200 {
            assert_eq!(set.execute("t", &data()).unwrap(), here);
        }
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for (once, twice, written) in there {
        assert_eq!(once, here);
        assert_eq!(twice, "hello, WORLD/lit-3+hello, WORLD");
        assert_eq!(
            written,
            200 * once.len() + twice.len(),
            "counted on its own"
        );
    }
    // Still whole here, and still runs.
    assert_eq!(set.execute("t", &data()).unwrap(), here);
    assert_eq!(set.written(), 202 * here.len());
}
