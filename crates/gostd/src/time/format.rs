//! Go's reference-time layouts (`2006-01-02T15:04:05Z07:00`): splitting a
//! layout into elements (`nextStdChunk`) and printing a time with them.

use super::{Civil, LONG_DAYS, LONG_MONTHS};

/// A layout element of Go's reference time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    PM,
    Pm,
    Tz,
    Iso8601Tz,
    Iso8601SecondsTz,
    Iso8601ShortTz,
    Iso8601ColonTz,
    Iso8601ColonSecondsTz,
    NumTz,
    NumSecondsTz,
    NumShortTz,
    NumColonTz,
    NumColonSecondsTz,
    /// Fractional seconds: digits, `9` (trim zeros) or `0`, separator.
    Frac(usize, bool, u8),
}

fn starts_lower(s: &str) -> bool {
    s.as_bytes().first().is_some_and(|c| c.is_ascii_lowercase())
}

pub(crate) fn is_digit_at(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(|c| c.is_ascii_digit())
}

/// Go's `nextStdChunk`: the text before the first layout element, the
/// element, and the rest.
pub(crate) fn next_std_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let l = layout.as_bytes();
    let at = |i: usize, s: &str| layout.get(i..).is_some_and(|r| r.starts_with(s));
    for i in 0..l.len() {
        let found = |n: usize, std: Std| Some((&layout[..i], Some(std), &layout[i + n..]));
        let r = match l[i] {
            b'J' if at(i, "Jan") => {
                if at(i, "January") {
                    found(7, Std::LongMonth)
                } else if !starts_lower(&layout[i + 3..]) {
                    found(3, Std::Month)
                } else {
                    None
                }
            }
            b'M' if at(i, "Mon") => {
                if at(i, "Monday") {
                    found(6, Std::LongWeekDay)
                } else if !starts_lower(&layout[i + 3..]) {
                    found(3, Std::WeekDay)
                } else {
                    None
                }
            }
            b'M' if at(i, "MST") => found(3, Std::Tz),
            b'0' if l.get(i + 1).is_some_and(|c| (b'1'..=b'6').contains(c)) => {
                let std = [
                    Std::ZeroMonth,
                    Std::ZeroDay,
                    Std::ZeroHour12,
                    Std::ZeroMinute,
                    Std::ZeroSecond,
                    Std::Year,
                ][(l[i + 1] - b'1') as usize];
                found(2, std)
            }
            b'0' if at(i, "002") => found(3, Std::ZeroYearDay),
            b'1' if at(i, "15") => found(2, Std::Hour),
            b'1' => found(1, Std::NumMonth),
            b'2' if at(i, "2006") => found(4, Std::LongYear),
            b'2' => found(1, Std::Day),
            b'_' if at(i, "_2") => {
                if at(i + 1, "2006") {
                    Some((&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]))
                } else {
                    found(2, Std::UnderDay)
                }
            }
            b'_' if at(i, "__2") => found(3, Std::UnderYearDay),
            b'3' => found(1, Std::Hour12),
            b'4' => found(1, Std::Minute),
            b'5' => found(1, Std::Second),
            b'P' if at(i, "PM") => found(2, Std::PM),
            b'p' if at(i, "pm") => found(2, Std::Pm),
            b'-' if at(i, "-070000") => found(7, Std::NumSecondsTz),
            b'-' if at(i, "-07:00:00") => found(9, Std::NumColonSecondsTz),
            b'-' if at(i, "-0700") => found(5, Std::NumTz),
            b'-' if at(i, "-07:00") => found(6, Std::NumColonTz),
            b'-' if at(i, "-07") => found(3, Std::NumShortTz),
            b'Z' if at(i, "Z070000") => found(7, Std::Iso8601SecondsTz),
            b'Z' if at(i, "Z07:00:00") => found(9, Std::Iso8601ColonSecondsTz),
            b'Z' if at(i, "Z0700") => found(5, Std::Iso8601Tz),
            b'Z' if at(i, "Z07:00") => found(6, Std::Iso8601ColonTz),
            b'Z' if at(i, "Z07") => found(3, Std::Iso8601ShortTz),
            c @ (b'.' | b',') if matches!(l.get(i + 1), Some(b'0' | b'9')) => {
                let ch = l[i + 1];
                let mut j = i + 1;
                while j < l.len() && l[j] == ch {
                    j += 1;
                }
                if !is_digit_at(l, j) {
                    let std = Std::Frac(j - (i + 1), ch == b'9', c);
                    Some((&layout[..i], Some(std), &layout[j..]))
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some(r) = r {
            return r;
        }
    }
    (layout, None, "")
}

/// Go's `appendInt` with zero padding to `width` (sign not counted).
fn push_int(b: &mut String, x: i64, width: usize) {
    if x < 0 {
        b.push('-');
    }
    b.push_str(&format!("{:0width$}", x.unsigned_abs(), width = width));
}

pub(crate) fn append_std(b: &mut String, std: Std, c: &Civil, nsec: u32) {
    match std {
        Std::Year => push_int(b, c.year.rem_euclid(100), 2),
        Std::LongYear => push_int(b, c.year, 4),
        Std::Month => b.push_str(&LONG_MONTHS[c.month as usize - 1][..3]),
        Std::LongMonth => b.push_str(LONG_MONTHS[c.month as usize - 1]),
        Std::NumMonth => push_int(b, c.month as i64, 0),
        Std::ZeroMonth => push_int(b, c.month as i64, 2),
        Std::WeekDay => b.push_str(&LONG_DAYS[c.wday as usize][..3]),
        Std::LongWeekDay => b.push_str(LONG_DAYS[c.wday as usize]),
        Std::Day => push_int(b, c.day as i64, 0),
        Std::UnderDay => {
            if c.day < 10 {
                b.push(' ');
            }
            push_int(b, c.day as i64, 0);
        }
        Std::ZeroDay => push_int(b, c.day as i64, 2),
        Std::UnderYearDay => {
            if c.yday < 100 {
                b.push(' ');
                if c.yday < 10 {
                    b.push(' ');
                }
            }
            push_int(b, c.yday as i64, 0);
        }
        Std::ZeroYearDay => push_int(b, c.yday as i64, 3),
        Std::Hour => push_int(b, c.hour as i64, 2),
        Std::Hour12 | Std::ZeroHour12 => {
            let h = match c.hour % 12 {
                0 => 12,
                h => h,
            };
            push_int(b, h as i64, if std == Std::Hour12 { 0 } else { 2 });
        }
        Std::Minute => push_int(b, c.min as i64, 0),
        Std::ZeroMinute => push_int(b, c.min as i64, 2),
        Std::Second => push_int(b, c.sec as i64, 0),
        Std::ZeroSecond => push_int(b, c.sec as i64, 2),
        Std::PM => b.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
        Std::Pm => b.push_str(if c.hour >= 12 { "pm" } else { "am" }),
        Std::Iso8601Tz
        | Std::Iso8601ColonTz
        | Std::Iso8601SecondsTz
        | Std::Iso8601ShortTz
        | Std::Iso8601ColonSecondsTz
        | Std::NumTz
        | Std::NumColonTz
        | Std::NumSecondsTz
        | Std::NumShortTz
        | Std::NumColonSecondsTz => {
            let iso = matches!(
                std,
                Std::Iso8601Tz
                    | Std::Iso8601ColonTz
                    | Std::Iso8601SecondsTz
                    | Std::Iso8601ShortTz
                    | Std::Iso8601ColonSecondsTz
            );
            if c.offset == 0 && iso {
                b.push('Z');
                return;
            }
            let mut zone = c.offset / 60;
            let mut abs = c.offset;
            if zone < 0 {
                b.push('-');
                zone = -zone;
                abs = -abs;
            } else {
                b.push('+');
            }
            push_int(b, (zone / 60) as i64, 2);
            let colon = matches!(
                std,
                Std::Iso8601ColonTz
                    | Std::NumColonTz
                    | Std::Iso8601ColonSecondsTz
                    | Std::NumColonSecondsTz
            );
            if colon {
                b.push(':');
            }
            if !matches!(std, Std::NumShortTz | Std::Iso8601ShortTz) {
                push_int(b, (zone % 60) as i64, 2);
            }
            if matches!(
                std,
                Std::Iso8601SecondsTz
                    | Std::NumSecondsTz
                    | Std::NumColonSecondsTz
                    | Std::Iso8601ColonSecondsTz
            ) {
                if matches!(std, Std::NumColonSecondsTz | Std::Iso8601ColonSecondsTz) {
                    b.push(':');
                }
                push_int(b, (abs % 60) as i64, 2);
            }
        }
        Std::Tz => {
            if !c.zone.is_empty() {
                b.push_str(&c.zone);
                return;
            }
            let mut zone = c.offset / 60;
            if zone < 0 {
                b.push('-');
                zone = -zone;
            } else {
                b.push('+');
            }
            push_int(b, (zone / 60) as i64, 2);
            push_int(b, (zone % 60) as i64, 2);
        }
        Std::Frac(n, trim, sep) => {
            if trim && (n == 0 || nsec == 0) {
                return;
            }
            let digits = format!("{nsec:09}");
            let mut frac = &digits[..n.min(9)];
            if trim {
                frac = frac.trim_end_matches('0');
                if frac.is_empty() {
                    return;
                }
            }
            b.push(sep as char);
            b.push_str(frac);
        }
    }
}
