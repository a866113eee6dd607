//! huandu/xstrings case conversions as Sprig v3.3.0 ships them:
//! `camelcase` (words split on `_`, `-` and spaces, joined in UpperCamel)
//! and the word-splitting `snakecase`/`kebabcase`.

use gostd::unicode::{is_letter, is_number, is_punct, is_space, is_upper, to_lower, to_upper};

fn is_connector(r: char) -> bool {
    r == '-' || r == '_' || is_space(r)
}

/// A letter that is not a CJK ideograph.
fn is_alphabet(r: char) -> bool {
    if !is_letter(r) {
        return false;
    }
    let u = r as u32;
    !((0x4E00..=0x9FCC).contains(&u)
        || (0x3400..=0x4D85).contains(&u)
        || (0x20000..=0x2B81D).contains(&u))
}

/// xstrings v1.5 `ToPascalCase`, which Sprig's `camelcase` calls: words split
/// on `_`, `-` and spaces are capitalised and joined; a word that starts
/// upper case has its following upper-case run lowered ("GOLANG" → "Golang").
pub(crate) fn camelcase(st: &str) -> String {
    let chars: Vec<char> = st.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut idx = 0;
    let mut r0 = '\0';
    let mut first_upper = false;
    // Leading connectors are kept.
    while idx < chars.len() {
        r0 = chars[idx];
        idx += 1;
        if !is_connector(r0) {
            first_upper = is_upper(r0);
            r0 = to_upper(r0);
            break;
        }
        out.push(r0);
    }
    if idx >= chars.len() {
        // Go writes the last rune again even when it was a leading connector.
        out.push(r0);
        return out;
    }
    while idx < chars.len() {
        let r1 = r0;
        r0 = chars[idx];
        idx += 1;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = is_upper(r0);
            r0 = to_upper(r0);
        } else {
            if first_upper {
                if is_upper(r0) {
                    r0 = to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings `nextWord`: the type and length of the word at the start of `s`.
fn next_word(s: &[char]) -> (Word, usize) {
    if s.is_empty() {
        return (Word::Invalid, 0);
    }
    let r = s[0];
    let run = |from: usize, pred: &dyn Fn(char) -> bool| -> usize {
        let mut n = from;
        while n < s.len() && pred(s[n]) {
            n += 1;
        }
        n
    };
    if is_connector(r) {
        (Word::Connector, run(1, &is_connector))
    } else if is_punct(r) {
        (Word::Punct, run(1, &is_punct))
    } else if is_upper(r) {
        if s.len() == 1 {
            return (Word::Upper, 1);
        }
        let r1 = s[1];
        if is_upper(r1) {
            let end = run(2, &is_upper);
            // "HTTPStatus" splits as "HTTP" + "Status".
            if end < s.len() && is_alphabet(s[end]) {
                (Word::Upper, end - 1)
            } else {
                (Word::Upper, end)
            }
        } else if is_alphabet(r1) {
            (Word::Upper, run(2, &|c| is_alphabet(c) && !is_upper(c)))
        } else {
            (Word::Upper, 1)
        }
    } else if is_alphabet(r) {
        (Word::Alphabet, run(1, &|c| is_alphabet(c) && !is_upper(c)))
    } else if is_number(r) {
        (Word::Number, run(1, &is_number))
    } else {
        (
            Word::Other,
            run(1, &|c| {
                !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c))
            }),
        )
    }
}

fn write_lower(out: &mut String, wt: Word, word: &[char], connector: char) {
    if wt != Word::Upper && wt != Word::Connector {
        out.extend(word.iter());
        return;
    }
    for &r in word {
        if is_connector(r) {
            out.push(connector);
        } else if is_upper(r) {
            out.push(to_lower(r));
        } else {
            out.push(r);
        }
    }
}

/// A cursor over the words of a string.
struct Words<'a> {
    rest: &'a [char],
}

impl<'a> Words<'a> {
    fn next(&mut self) -> (Word, &'a [char]) {
        let (wt, n) = next_word(self.rest);
        let word = &self.rest[..n];
        self.rest = &self.rest[n..];
        (wt, word)
    }
}

/// xstrings `camelCaseToLowerCase` (`ToSnakeCase` with '_', `ToKebabCase` with '-').
pub(crate) fn to_lower_case(st: &str, connector: char) -> String {
    let chars: Vec<char> = st.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let mut it = Words { rest: &chars };
    let (mut wt, mut word) = it.next();
    while !it.rest.is_empty() {
        if wt != Word::Connector {
            write_lower(&mut out, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word) = it.next();
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    write_lower(&mut out, wt, word, connector);
                    (wt, word) = it.next();
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => write_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if it.rest.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word) = it.next();
                // A number followed by a non-letter belongs to the previous word: "Bld4Floor".
                if wt != Word::Alphabet {
                    write_lower(&mut out, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                // Letters after a number start a new word with it: "HTTP2xx".
                out.push(connector);
                write_lower(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    write_lower(&mut out, wt, word, connector);
                    (wt, word) = it.next();
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    write_lower(&mut out, wt, word, connector);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_samples_from_xstrings_docs() {
        for (i, o) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("GO-PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
        ] {
            assert_eq!(to_lower_case(i, '_'), o, "{i}");
        }
    }

    #[test]
    fn camel() {
        assert_eq!(camelcase("some_words"), "SomeWords");
        assert_eq!(camelcase("no_https"), "NoHttps");
        assert_eq!(camelcase("a"), "A");
        assert_eq!(camelcase("__"), "___");
        assert_eq!(camelcase("GOLANG_IS_GREAT"), "GolangIsGreat");
        assert_eq!(camelcase("HTTPServer"), "Httpserver");
        assert_eq!(camelcase("someWords"), "SomeWords");
    }
}
