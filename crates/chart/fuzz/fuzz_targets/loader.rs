//! Fuzzes the chart loader: the bytes are read both as a chart archive
//! (`.tgz`) and as the files of a chart directory (`name` NUL `data` NUL …);
//! either must load or give an error, within the loader's size budgets.
#![no_main]

use chart::loader::{load_archive, load_files, BufferedFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = load_archive(data);
    let mut parts = data.split(|b| *b == 0);
    let mut files = Vec::new();
    while let (Some(name), Some(body)) = (parts.next(), parts.next()) {
        let Ok(name) = std::str::from_utf8(name) else {
            return;
        };
        files.push(BufferedFile {
            name: name.to_string(),
            data: body.to_vec(),
        });
    }
    let _ = load_files(files);
});
