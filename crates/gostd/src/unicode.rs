//! Go's `unicode` package: the classes (`IsPrint`, `IsLetter`, `IsUpper`…)
//! and the per-rune case mappings. Go maps case one rune at a time with the
//! simple (single-rune) mappings of its Unicode 15.0 tables, so `upper "ß"`
//! stays `ß`; Rust's string methods use the full mappings of a newer
//! Unicode. These helpers bridge that: categories come from Unicode 15.0
//! data, and a mapping to or from a rune Go does not know is dropped.

use unicode_general_category::{get_general_category, GeneralCategory as G};

fn cat(c: char) -> G {
    get_general_category(c)
}

/// Known to Go's Unicode 15.0 tables.
fn assigned(c: char) -> bool {
    cat(c) != G::Unassigned
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    if it.next().is_some() {
        None
    } else {
        Some(first)
    }
}

/// A Rust case mapping accepted only where Go has the same simple mapping.
fn simple(c: char, mapped: impl Iterator<Item = char>) -> char {
    if !assigned(c) {
        return c;
    }
    match single(mapped) {
        Some(m) if assigned(m) => m,
        _ => c,
    }
}

/// `unicode.ToUpper`.
pub fn to_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    // Greek letters with ypogegrammeni have a simple uppercase (the titlecase form).
    match c as u32 {
        0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => {
            return char::from_u32(c as u32 + 8).unwrap_or(c)
        }
        0x1FB3 => return '\u{1FBC}',
        0x1FC3 => return '\u{1FCC}',
        0x1FF3 => return '\u{1FFC}',
        _ => {}
    }
    simple(c, c.to_uppercase())
}

/// `unicode.ToLower`.
pub fn to_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    if c == '\u{130}' {
        return 'i';
    }
    simple(c, c.to_lowercase())
}

/// `unicode.ToTitle`.
pub fn to_title(c: char) -> char {
    match c as u32 {
        0x1C4..=0x1C6 => '\u{1C5}',
        0x1C7..=0x1C9 => '\u{1C8}',
        0x1CA..=0x1CC => '\u{1CB}',
        0x1F1..=0x1F3 => '\u{1F2}',
        // Titlecase letters and Georgian Mkhedruli are their own title case.
        0x1F88..=0x1F8F | 0x1F98..=0x1F9F | 0x1FA8..=0x1FAF | 0x1FBC | 0x1FCC | 0x1FFC => c,
        0x10D0..=0x10FA | 0x10FD..=0x10FF => c,
        _ => to_upper(c),
    }
}

/// `unicode.IsUpper` (category Lu).
pub fn is_upper(c: char) -> bool {
    cat(c) == G::UppercaseLetter
}

/// `unicode.IsLower` (category Ll).
pub fn is_lower(c: char) -> bool {
    cat(c) == G::LowercaseLetter
}

/// `unicode.IsTitle` (category Lt).
pub fn is_title(c: char) -> bool {
    cat(c) == G::TitlecaseLetter
}

/// `unicode.IsSpace`.
pub fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// `unicode.IsLetter` (categories L*).
pub fn is_letter(c: char) -> bool {
    matches!(
        cat(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
    )
}

/// `unicode.IsDigit` (category Nd).
pub fn is_digit(c: char) -> bool {
    cat(c) == G::DecimalNumber
}

/// `unicode.IsNumber` (categories Nd, Nl, No).
pub fn is_number(c: char) -> bool {
    matches!(cat(c), G::DecimalNumber | G::LetterNumber | G::OtherNumber)
}

/// `unicode.IsPunct` (categories P*).
pub fn is_punct(c: char) -> bool {
    matches!(
        cat(c),
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
    )
}

/// Go's `unicode.IsPrint` (equally `strconv.IsPrint`): letters, marks,
/// numbers, punctuation, symbols (categories L, M, N, P, S) and the ASCII
/// space.
pub fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !matches!(
        cat(c),
        G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_case_mappings() {
        assert_eq!(to_upper('ß'), 'ß');
        assert_eq!(to_upper('é'), 'É');
        assert_eq!(to_title('ǆ'), 'ǅ');
        assert_eq!(to_upper('ǆ'), 'Ǆ');
        assert_eq!(to_lower('İ'), 'i');
        assert_eq!(to_lower('Σ'), 'σ');
        assert_eq!(to_title('ა'), 'ა');
        // New in Unicode 16, unknown to Go's tables.
        assert_eq!(to_upper('ɤ'), 'ɤ');
        assert!(is_punct('\''));
        assert!(!is_punct('$'));
        assert!(is_digit('٣'));
        assert!(!is_digit('½'));
        assert!(!is_letter('Ⓐ'));
        assert!(!is_letter('\u{363}'));
    }
}
