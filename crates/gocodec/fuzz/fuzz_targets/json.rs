//! Fuzzes `fromJson` and `toJson`: any text must decode or give Go's error,
//! and what decodes must encode again to JSON that decodes to the same.
#![no_main]

use gocodec::json::{parse, to_json, Target};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse(text, Target::Map);
    let _ = parse(text, Target::List);
    let Ok(value) = parse(text, Target::Any) else {
        return;
    };
    let encoded = to_json(&value).expect("decoded JSON always encodes");
    let again = parse(&encoded, Target::Any).expect("encoded JSON decodes");
    assert_eq!(to_json(&again).ok(), Some(encoded));
    let _ = gocodec::json::to_pretty_json(&value);
});
