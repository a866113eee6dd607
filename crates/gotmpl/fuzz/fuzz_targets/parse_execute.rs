//! Fuzzes parse + execute: any input must give output or an error, never a
//! panic, a hang or a stack overflow.
#![no_main]

use std::rc::Rc;

use gotmpl::{FuncMap, Options, Templates, Value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut set = Templates::new(Rc::new(FuncMap::new()));
    set.set_options(Options {
        max_depth: 200,
        max_output: 1 << 20,
        ..Options::default()
    });
    // A second file lets `template` calls cross files, as charts do.
    if set.parse("helpers", r#"{{define "h"}}[{{.}}]{{end}}"#).is_err() {
        return;
    }
    if set.parse("t", text).is_err() {
        return;
    }
    let set = Rc::new(set);
    let data = Value::from_json(&serde_json::json!({
        "s": "str", "n": 3, "l": [1, "a", null], "m": {"k": "v", "n": {"x": 1}}, "b": true
    }));
    let _ = set.execute("t", &data);
});
