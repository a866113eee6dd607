//! Go's `path` package where charts and Sprig expose it: `path.Clean`, the
//! lexical normalisation chart archives' entry names and Sprig's `clean`
//! go through.

/// Go's `path.Clean`: the shortest path naming the same file, by lexical
/// processing only (`.` removed, `..` folded into its parent, repeated
/// slashes joined; an empty result is `.`).
pub fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn cleans_as_go_does() {
        // Cases from Go's path_test.go.
        for (input, want) in [
            ("", "."),
            ("abc", "abc"),
            ("abc/def/", "abc/def"),
            ("/", "/"),
            ("//abc", "/abc"),
            ("abc/./def", "abc/def"),
            ("abc/../../..", "../.."),
            ("/../abc", "/abc"),
            ("abc/def/../ghi/../jkl", "abc/jkl"),
            ("../../abc/../def", "../../def"),
        ] {
            assert_eq!(clean(input), want, "clean({input:?})");
        }
    }
}
