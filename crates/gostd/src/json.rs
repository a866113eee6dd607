//! The nesting limit of Go's `encoding/json` scanner: Go refuses JSON nested
//! deeper than 10,000 levels ("exceeded max depth"). Counting the depth of
//! the raw text first lets a recursive parser be refused such input before
//! it recurses.

/// How deep `{` and `[` nest in JSON text, brackets inside strings skipped;
/// counting stops once the depth passes `stop_above` (it is then
/// `stop_above + 1`), so a caller that only compares with a limit reads no
/// further than it must.
pub fn nesting_depth(text: &[u8], stop_above: usize) -> usize {
    let (mut open, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                open += 1;
                deepest = deepest.max(open);
                if deepest > stop_above {
                    break;
                }
            }
            b'}' | b']' => open = open.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::nesting_depth;

    #[test]
    fn counts_brackets_outside_strings() {
        assert_eq!(nesting_depth(br#"{"a": [1, {"b": "[[["}]}"#, usize::MAX), 3);
        assert_eq!(nesting_depth(br#""\"[""#, usize::MAX), 0);
        assert_eq!(nesting_depth(b"[[[[[]]]]]", 2), 3);
    }
}
