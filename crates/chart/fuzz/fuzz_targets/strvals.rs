//! Fuzzes `--set`, `--set-string`, `--set-json` and `--set-literal`
//! parsing: any line must merge into the values or give an error.
#![no_main]

use chart::values::strvals;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let mut values = chart::loader::Values::new();
    let _ = strvals::parse_into(line, &mut values);
    let _ = strvals::parse_into_string(line, &mut values);
    let _ = strvals::parse_json(line, &mut values);
    let _ = strvals::parse_literal_into(line, &mut values);
    chart::depth::drop_json(serde_json::Value::Object(values));
});
