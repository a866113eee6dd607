//! Fuzzes the release-record decoder on what a Secret or ConfigMap may
//! hold: base64 text, or the bytes under it (gzip or plain JSON). Any input
//! must decode or give an error naming its stage, within the size bound, and
//! what decodes must encode and decode again to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use release::codec;

fuzz_target!(|data: &[u8]| {
    let _ = codec::decode_bytes(data);
    if let Ok(rel) = codec::decode_json_or_gzip(data) {
        let text = codec::encode(&rel).expect("a decoded record encodes");
        assert_eq!(codec::decode(&text).expect("an encoded record decodes"), rel);
    }
});
