//! Go's `time.ParseInLocation`, element by element with Go's error texts.

use super::format::{is_digit_at, next_std_chunk, Std};
use super::{days_in, is_leap, Location, Time, LONG_DAYS, LONG_MONTHS};

/// Go's internal `quote` for time error messages.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        if ch as u32 >= 0x80 || (ch as u32) < 0x20 {
            let mut buf = [0u8; 4];
            for byte in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            if ch == '"' || ch == '\\' {
                out.push('\\');
            }
            out.push(ch);
        }
    }
    out.push('"');
    out
}

fn parse_error(
    layout: &str,
    value: &str,
    layout_elem: &str,
    value_elem: &str,
    msg: &str,
) -> String {
    if msg.is_empty() {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            go_quote(value),
            go_quote(layout),
            go_quote(value_elem),
            go_quote(layout_elem)
        )
    } else {
        format!("parsing time {}{}", go_quote(value), msg)
    }
}

/// The rest of `s` from byte `i`, backing up to a character boundary
/// (a mismatch can fall inside a multi-byte character).
fn tail_from(s: &str, mut i: usize) -> &str {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    &s[i..]
}

/// Go's `skip`: consume the literal `prefix` from `value`, any run of
/// spaces matching any run of spaces. The error carries the unmatched rest.
fn skip<'a>(value: &'a str, prefix: &str) -> Result<&'a str, &'a str> {
    let (v, p) = (value.as_bytes(), prefix.as_bytes());
    let (mut i, mut j) = (0, 0);
    while j < p.len() {
        if p[j] == b' ' {
            if i < v.len() && v[i] != b' ' {
                return Err(tail_from(value, i));
            }
            while j < p.len() && p[j] == b' ' {
                j += 1;
            }
            while i < v.len() && v[i] == b' ' {
                i += 1;
            }
            continue;
        }
        if i >= v.len() || v[i] != p[j] {
            return Err(tail_from(value, i));
        }
        i += 1;
        j += 1;
    }
    Ok(tail_from(value, i))
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    if !is_digit_at(b, 0) {
        return None;
    }
    if !is_digit_at(b, 1) {
        if fixed {
            return None;
        }
        return Some(((b[0] - b'0') as i64, &s[1..]));
    }
    Some((((b[0] - b'0') * 10 + (b[1] - b'0')) as i64, &s[2..]))
}

fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let mut n = 0i64;
    let mut i = 0;
    while i < 3 && is_digit_at(b, i) {
        n = n * 10 + (b[i] - b'0') as i64;
        i += 1;
    }
    if i == 0 || (fixed && i != 3) {
        return None;
    }
    Some((n, &s[i..]))
}

fn lookup_name<'a>(tab: &[&str], val: &'a str, short: bool) -> Option<(usize, &'a str)> {
    for (i, name) in tab.iter().enumerate() {
        let name = if short { &name[..3] } else { name };
        if val.len() >= name.len()
            && val.as_bytes()[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        {
            return Some((i, &val[name.len()..]));
        }
    }
    None
}

/// Go's `parseNanoseconds`: `value` starts with the separator.
fn parse_nanos(value: &str, nbytes: usize) -> Result<u32, ()> {
    let b = value.as_bytes();
    if !matches!(b.first(), Some(b'.' | b',')) {
        return Err(());
    }
    let nbytes = nbytes.min(10);
    let digits = value.get(1..nbytes).ok_or(())?;
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(());
    }
    let mut ns: u32 = if digits.is_empty() {
        0
    } else {
        digits.parse().map_err(|_| ())?
    };
    for _ in 0..(10 - nbytes) {
        ns *= 10;
    }
    Ok(ns)
}

fn parse_signed_offset(value: &str) -> usize {
    let b = value.as_bytes();
    if !matches!(b.first(), Some(b'+' | b'-')) {
        return 0;
    }
    let digits = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return 0;
    }
    match value[1..1 + digits].parse::<u64>() {
        Ok(x) if x <= 23 => 1 + digits,
        _ => 0,
    }
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start.
fn parse_time_zone(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if value.starts_with("ChST") || value.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = value.strip_prefix("GMT") {
        return Some(3 + parse_signed_offset(rest));
    }
    if b[0] == b'+' || b[0] == b'-' {
        let n = parse_signed_offset(value);
        return (n > 0).then_some(n);
    }
    let upper = b
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match upper {
        5 if b[4] == b'T' => Some(5),
        4 if b[3] == b'T' || value.starts_with("WITA") => Some(4),
        3 => Some(3),
        _ => None,
    }
}

/// Why a text does not match a layout; the message is Go's
/// (`parsing time "x" as "2006": cannot parse "x" as "2006"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(String);

/// `time.ParseInLocation(layout, value, loc)` with Go's error messages.
pub fn parse_in_location(layout: &str, value: &str, loc: Location) -> Result<Time, ParseError> {
    parse(layout, value, loc).map_err(ParseError)
}

fn parse(layout: &str, value: &str, default_loc: Location) -> Result<Time, String> {
    let (alayout, avalue) = (layout, value);
    let mut layout = layout;
    let mut value = value;
    let (mut am_set, mut pm_set) = (false, false);
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0u32);
    let mut z: Option<Location> = None;
    let mut zone_offset: Option<i32> = None;
    let mut zone_name = String::new();
    loop {
        let (prefix, std, suffix) = next_std_chunk(layout);
        let stdstr = &layout[prefix.len()..layout.len() - suffix.len()];
        value = skip(value, prefix).map_err(|v| parse_error(alayout, avalue, prefix, v, ""))?;
        let Some(std) = std else {
            if !value.is_empty() {
                return Err(parse_error(
                    alayout,
                    avalue,
                    "",
                    value,
                    &format!(": extra text: {}", go_quote(value)),
                ));
            }
            break;
        };
        layout = suffix;
        let hold = value;
        let mut range_err = "";
        let ok: bool = 'elem: {
            match std {
                Std::Year => {
                    let Some(p) = value.get(..2) else {
                        break 'elem false;
                    };
                    let Ok(y) = p.parse::<i64>() else {
                        break 'elem false;
                    };
                    value = &value[2..];
                    year = if y >= 69 { y + 1900 } else { y + 2000 };
                    true
                }
                Std::LongYear => {
                    if value.len() < 4 || !is_digit_at(value.as_bytes(), 0) {
                        break 'elem false;
                    }
                    let Some(Ok(y)) = value.get(..4).map(|p| p.parse::<i64>()) else {
                        break 'elem false;
                    };
                    year = y;
                    value = &value[4..];
                    true
                }
                Std::Month | Std::LongMonth => {
                    match lookup_name(&LONG_MONTHS, value, std == Std::Month) {
                        Some((i, rest)) => {
                            month = i as i64 + 1;
                            value = rest;
                            true
                        }
                        None => false,
                    }
                }
                Std::NumMonth | Std::ZeroMonth => match getnum(value, std == Std::ZeroMonth) {
                    Some((m, rest)) => {
                        month = m;
                        value = rest;
                        if !(1..=12).contains(&m) {
                            range_err = "month";
                        }
                        true
                    }
                    None => false,
                },
                Std::WeekDay | Std::LongWeekDay => {
                    match lookup_name(&LONG_DAYS, value, std == Std::WeekDay) {
                        Some((_, rest)) => {
                            value = rest;
                            true
                        }
                        None => false,
                    }
                }
                Std::Day | Std::UnderDay | Std::ZeroDay => {
                    if std == Std::UnderDay && value.starts_with(' ') {
                        value = &value[1..];
                    }
                    match getnum(value, std == Std::ZeroDay) {
                        Some((d, rest)) => {
                            day = d;
                            value = rest;
                            true
                        }
                        None => false,
                    }
                }
                Std::UnderYearDay | Std::ZeroYearDay => {
                    for _ in 0..2 {
                        if std == Std::UnderYearDay && value.starts_with(' ') {
                            value = &value[1..];
                        }
                    }
                    match getnum3(value, std == Std::ZeroYearDay) {
                        Some((d, rest)) => {
                            yday = d;
                            value = rest;
                            true
                        }
                        None => false,
                    }
                }
                Std::Hour => match getnum(value, false) {
                    Some((h, rest)) => {
                        hour = h;
                        value = rest;
                        if !(0..24).contains(&h) {
                            range_err = "hour";
                        }
                        true
                    }
                    None => false,
                },
                Std::Hour12 | Std::ZeroHour12 => match getnum(value, std == Std::ZeroHour12) {
                    Some((h, rest)) => {
                        hour = h;
                        value = rest;
                        if !(0..=12).contains(&h) {
                            range_err = "hour";
                        }
                        true
                    }
                    None => false,
                },
                Std::Minute | Std::ZeroMinute => match getnum(value, std == Std::ZeroMinute) {
                    Some((m, rest)) => {
                        min = m;
                        value = rest;
                        if !(0..60).contains(&m) {
                            range_err = "minute";
                        }
                        true
                    }
                    None => false,
                },
                Std::Second | Std::ZeroSecond => {
                    let Some((s, rest)) = getnum(value, std == Std::ZeroSecond) else {
                        break 'elem false;
                    };
                    sec = s;
                    value = rest;
                    if !(0..60).contains(&s) {
                        range_err = "second";
                        break 'elem true;
                    }
                    let vb = value.as_bytes();
                    if vb.len() >= 2 && matches!(vb[0], b'.' | b',') && is_digit_at(vb, 1) {
                        if let (_, Some(Std::Frac(..)), _) = next_std_chunk(layout) {
                            break 'elem true;
                        }
                        let mut n = 2;
                        while is_digit_at(vb, n) {
                            n += 1;
                        }
                        match parse_nanos(value, n) {
                            Ok(ns) => nsec = ns,
                            Err(()) => break 'elem false,
                        }
                        value = &value[n..];
                    }
                    true
                }
                Std::PM | Std::Pm => {
                    let Some(p) = value.get(..2) else {
                        break 'elem false;
                    };
                    let (pm, am) = if std == Std::PM {
                        ("PM", "AM")
                    } else {
                        ("pm", "am")
                    };
                    if p == pm {
                        pm_set = true;
                    } else if p == am {
                        am_set = true;
                    } else {
                        break 'elem false;
                    }
                    value = &value[2..];
                    true
                }
                Std::Iso8601Tz
                | Std::Iso8601ShortTz
                | Std::Iso8601ColonTz
                | Std::Iso8601SecondsTz
                | Std::Iso8601ColonSecondsTz
                    if value.starts_with('Z') =>
                {
                    value = &value[1..];
                    z = Some(Location::Utc);
                    true
                }
                Std::Iso8601Tz
                | Std::Iso8601ShortTz
                | Std::Iso8601ColonTz
                | Std::Iso8601SecondsTz
                | Std::Iso8601ColonSecondsTz
                | Std::NumTz
                | Std::NumShortTz
                | Std::NumColonTz
                | Std::NumSecondsTz
                | Std::NumColonSecondsTz => {
                    let vb = value.as_bytes();
                    let need = match std {
                        Std::Iso8601ColonTz | Std::NumColonTz => 6,
                        Std::NumShortTz | Std::Iso8601ShortTz => 3,
                        Std::Iso8601ColonSecondsTz | Std::NumColonSecondsTz => 9,
                        Std::Iso8601SecondsTz | Std::NumSecondsTz => 7,
                        _ => 5,
                    };
                    // Every byte taken must be a sign, digit or colon, so
                    // non-ASCII input fails here as it would in Go.
                    if vb.len() < need || !vb[..need].is_ascii() {
                        break 'elem false;
                    }
                    let (sign, hh, mm, ss, rest) = match std {
                        Std::Iso8601ColonTz | Std::NumColonTz => {
                            if vb.len() < 6 || vb[3] != b':' {
                                break 'elem false;
                            }
                            (&value[..1], &value[1..3], &value[4..6], "00", &value[6..])
                        }
                        Std::NumShortTz | Std::Iso8601ShortTz => {
                            if vb.len() < 3 {
                                break 'elem false;
                            }
                            (&value[..1], &value[1..3], "00", "00", &value[3..])
                        }
                        Std::Iso8601ColonSecondsTz | Std::NumColonSecondsTz => {
                            if vb.len() < 9 || vb[3] != b':' || vb[6] != b':' {
                                break 'elem false;
                            }
                            (
                                &value[..1],
                                &value[1..3],
                                &value[4..6],
                                &value[7..9],
                                &value[9..],
                            )
                        }
                        Std::Iso8601SecondsTz | Std::NumSecondsTz => {
                            if vb.len() < 7 {
                                break 'elem false;
                            }
                            (
                                &value[..1],
                                &value[1..3],
                                &value[3..5],
                                &value[5..7],
                                &value[7..],
                            )
                        }
                        _ => {
                            if vb.len() < 5 {
                                break 'elem false;
                            }
                            (&value[..1], &value[1..3], &value[3..5], "00", &value[5..])
                        }
                    };
                    let nums = (getnum(hh, true), getnum(mm, true), getnum(ss, true));
                    let (Some((h, _)), Some((m, _)), Some((s, _))) = nums else {
                        break 'elem false;
                    };
                    if h > 24 {
                        range_err = "time zone offset hour";
                    }
                    if m > 60 {
                        range_err = "time zone offset minute";
                    }
                    if s > 60 {
                        range_err = "time zone offset second";
                    }
                    let off = ((h * 60 + m) * 60 + s) as i32;
                    zone_offset = Some(match sign {
                        "+" => off,
                        "-" => -off,
                        _ => break 'elem false,
                    });
                    value = rest;
                    true
                }
                Std::Tz => {
                    if value.starts_with("UTC") {
                        z = Some(Location::Utc);
                        value = &value[3..];
                        break 'elem true;
                    }
                    let Some(n) = parse_time_zone(value) else {
                        break 'elem false;
                    };
                    zone_name = value[..n].to_string();
                    value = &value[n..];
                    true
                }
                Std::Frac(n, false, _) => {
                    let ndigit = 1 + n;
                    if value.len() < ndigit {
                        break 'elem false;
                    }
                    match parse_nanos(value, ndigit) {
                        Ok(ns) => nsec = ns,
                        Err(()) => break 'elem false,
                    }
                    value = &value[ndigit..];
                    true
                }
                Std::Frac(_, true, _) => {
                    let vb = value.as_bytes();
                    if vb.len() < 2 || !matches!(vb[0], b'.' | b',') || !vb[1].is_ascii_digit() {
                        break 'elem true;
                    }
                    let mut i = 0;
                    while is_digit_at(vb, i + 1) {
                        i += 1;
                    }
                    match parse_nanos(value, 1 + i) {
                        Ok(ns) => nsec = ns,
                        Err(()) => break 'elem false,
                    }
                    value = &value[1 + i..];
                    true
                }
            }
        };
        if !range_err.is_empty() {
            return Err(parse_error(
                alayout,
                avalue,
                stdstr,
                value,
                &format!(": {range_err} out of range"),
            ));
        }
        if !ok {
            return Err(parse_error(alayout, avalue, stdstr, hold, ""));
        }
    }
    if pm_set && hour < 12 {
        hour += 12;
    } else if am_set && hour == 12 {
        hour = 0;
    }
    if yday >= 0 {
        let (mut m, mut d) = (0i64, 0i64);
        let mut yd = yday;
        if is_leap(year) {
            if yd == 31 + 29 {
                m = 2;
                d = 29;
            } else if yd > 31 + 29 {
                yd -= 1;
            }
        }
        if !(1..=365).contains(&yd) {
            return Err(parse_error(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year out of range",
            ));
        }
        if m == 0 {
            const BEFORE: [i64; 13] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];
            m = (yd - 1) / 31 + 1;
            if BEFORE[m as usize] < yd {
                m += 1;
            }
            d = yd - BEFORE[m as usize - 1];
        }
        if month >= 0 && month != m {
            return Err(parse_error(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year does not match month",
            ));
        }
        month = m;
        if day >= 0 && day != d {
            return Err(parse_error(
                alayout,
                avalue,
                "",
                value,
                ": day-of-year does not match day",
            ));
        }
        day = d;
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }
    if day < 1 || day > days_in(month as u32, year) as i64 {
        return Err(parse_error(
            alayout,
            avalue,
            "",
            value,
            ": day out of range",
        ));
    }
    let (mo, d, h, mi, s) = (
        month as u32,
        day as u32,
        hour as u32,
        min as u32,
        sec as u32,
    );
    if let Some(loc) = z {
        return Ok(Time::date(year, mo, d, h, mi, s, nsec, loc));
    }
    if let Some(off) = zone_offset {
        let mut t = Time::date(year, mo, d, h, mi, s, nsec, Location::Utc);
        t.unix -= off as i64;
        let (name, local_off) = default_loc.lookup(t.unix);
        if local_off == off && (zone_name.is_empty() || name == zone_name) {
            t.loc = default_loc;
        } else {
            t.loc = Location::Fixed(zone_name, off);
        }
        return Ok(t);
    }
    if !zone_name.is_empty() {
        let mut t = Time::date(year, mo, d, h, mi, s, nsec, Location::Utc);
        let (name, off) = default_loc.lookup(t.unix);
        if default_loc != Location::Utc && name == zone_name {
            t.unix -= off as i64;
            t.loc = default_loc;
            return Ok(t);
        }
        let mut off = 0;
        if zone_name.len() > 3 && zone_name.starts_with("GMT") {
            off = zone_name[3..].parse::<i32>().unwrap_or(0) * 3600;
        }
        // Go keeps the wall clock as if UTC here (the offset is unknown).
        t.loc = Location::Fixed(zone_name, off);
        return Ok(t);
    }
    Ok(Time::date(year, mo, d, h, mi, s, nsec, default_loc))
}
