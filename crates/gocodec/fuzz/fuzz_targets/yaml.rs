//! Fuzzes the YAML reader and writer: any text must parse or give an error
//! (never a panic, a hang, a stack overflow or unbounded memory), and what
//! parses must write back as YAML that reads again to the same data.
#![no_main]

use gotmpl::Value;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = gocodec::yaml::parse_yaml_documents(text);
    let Ok(json) = gocodec::yaml::parse_yaml_to_json(text) else {
        return;
    };
    let value = Value::from_json(&json);
    if let Ok(written) = gocodec::yaml::to_yaml(&value) {
        // `toYaml` drops the final newline of what `yaml.Marshal` wrote, as Helm's
        // does; a `|+` block scalar needs it back to read the same.
        let written = written + "\n";
        let again = gocodec::yaml::parse_yaml_to_json(&written)
            .unwrap_or_else(|e| panic!("toYaml wrote unreadable YAML ({e}):\n{written}"));
        // Numbers compare as the float64 templates see them.
        let (before, after) = (value.to_json(), Value::from_json(&again).to_json());
        assert_eq!(after, before, "toYaml changed the data:\n{written}");
        gocodec::depth::drop_json(again);
    }
    let _ = gocodec::yaml::to_yaml_pretty(&value);
    gocodec::depth::drop_json(json);
});
