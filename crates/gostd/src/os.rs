//! Go's `os.Expand` and `os.ExpandEnv`: shell-style `$VAR` and `${VAR}`
//! substitution with Go's rules for special names and bad syntax.

/// Go's `os.ExpandEnv`: `$VAR` and `${VAR}` become the variable's value, empty when
/// unset; `$` before anything else stays; a bad `${` is dropped.
pub fn expand_env(s: &str) -> String {
    expand(s, |name| std::env::var(name).unwrap_or_default())
}

/// Go's `os.Expand`: [`expand_env`] with `lookup` giving each variable's value.
pub fn expand(s: &str, lookup: impl Fn(&str) -> String) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0; // start of the text not copied yet
    let mut j = 0;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            out.push_str(&s[i..j]);
            let (name, width) = shell_name(&s[j + 1..]);
            if name.is_empty() && width > 0 {
                // Bad syntax: the characters are eaten.
            } else if name.is_empty() {
                out.push('$');
            } else {
                out.push_str(&lookup(name));
            }
            j += width;
            i = j + 1;
        }
        j += 1;
    }
    out.push_str(&s[i.min(s.len())..]);
    out
}

fn is_shell_special(c: u8) -> bool {
    matches!(
        c,
        b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
    )
}

/// Go's `getShellName`: the variable name after a `$`, and how many bytes it spans.
fn shell_name(s: &str) -> (&str, usize) {
    let b = s.as_bytes();
    if b[0] == b'{' {
        if b.len() > 2 && is_shell_special(b[1]) && b[2] == b'}' {
            return (&s[1..2], 3);
        }
        for i in 1..b.len() {
            if b[i] == b'}' {
                if i == 1 {
                    return ("", 2);
                }
                return (&s[1..i], i + 1);
            }
        }
        return ("", 1);
    }
    if is_shell_special(b[0]) {
        return (&s[0..1], 1);
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (&s[..n], n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_os_expand() {
        let env = |name: &str| match name {
            "A" => "x".to_string(),
            "LONG_NAME" => "long".to_string(),
            _ => String::new(),
        };
        assert_eq!(expand("$A", env), "x");
        assert_eq!(expand("${A}-$A", env), "x-x");
        assert_eq!(expand("pre$LONG_NAME.post", env), "prelong.post");
        assert_eq!(expand("$UNSET", env), "");
        assert_eq!(expand("cost: 5$", env), "cost: 5$");
        assert_eq!(expand("a $ b", env), "a $ b");
        assert_eq!(expand("${}x", env), "x");
        assert_eq!(expand("${A", env), "A");
        assert_eq!(expand("$1$", env), "$");
        assert_eq!(expand("ünï$A", env), "ünïx");
    }
}
