//! Fuzzes the release-record decoder on what a Secret or ConfigMap may
//! hold: base64 text, or the bytes under it (gzip or plain JSON). Any input
//! must decode or give an error naming its stage, within the size bound, and
//! what decodes must encode to a form that reads back and writes again
//! byte for byte. (Numbers may change spelling once, as in Go: `0.0` is
//! read as a float and written as `0`, which reads back as an integer.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use release::codec;

fuzz_target!(|data: &[u8]| {
    let _ = codec::decode_bytes(data);
    if let Ok(rel) = codec::decode_json_or_gzip(data) {
        let json = codec::to_go_json(&rel).expect("a decoded record encodes");
        let text = codec::encode(&rel).expect("a decoded record encodes");
        let again = codec::decode(&text).expect("an encoded record decodes");
        assert_eq!(codec::to_go_json(&again).expect("encodes again"), json);
    }
});
