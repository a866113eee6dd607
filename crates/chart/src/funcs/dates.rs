//! Sprig's date functions over a Go-compatible `time.Time`.
//!
//! Templates see times as host objects printing like Go's `Time.String()`,
//! and format/parse them with Go reference layouts (`2006-01-02T15:04:05Z07:00`),
//! so this module carries its own port of Go's layout handling and of
//! `time.ParseDuration` / `Duration.String`, rather than strftime. Zones come
//! from the IANA database compiled into `chrono-tz`; the local zone is `$TZ`
//! (UTC when unset), as Go resolves it.

use std::any::Any;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use chrono::{Offset, TimeZone};
use chrono_tz::{OffsetName, Tz};
use gotmpl::{Func, FuncError, FuncMap, IntKind, Kind, Object, Ty, Value};

/// Where a time is displayed: Go's `*time.Location`.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Utc,
    /// Go's `time.Local`.
    Local,
    /// `time.FixedZone(name, offset)`, as parsing a numeric offset creates.
    Fixed(String, i32),
    Tz(Tz),
}

fn local_tz() -> Option<Tz> {
    static LOCAL: OnceLock<Option<Tz>> = OnceLock::new();
    *LOCAL.get_or_init(|| {
        let tz = std::env::var("TZ").ok()?;
        let tz = tz.strip_prefix(':').unwrap_or(&tz);
        if tz.is_empty() || tz == "UTC" {
            return None;
        }
        tz.parse::<Tz>().ok()
    })
}

impl Location {
    /// Go's `time.LoadLocation`.
    pub fn load(name: &str) -> Option<Location> {
        match name {
            "" | "UTC" => Some(Location::Utc),
            "Local" => Some(Location::Local),
            _ => name.parse::<Tz>().ok().map(Location::Tz),
        }
    }

    /// Zone abbreviation and offset east of UTC in effect at `unix`.
    fn lookup(&self, unix: i64) -> (String, i32) {
        let tz = match self {
            Location::Utc => return ("UTC".into(), 0),
            Location::Fixed(n, o) => return (n.clone(), *o),
            Location::Local => match local_tz() {
                Some(tz) => tz,
                None => return ("UTC".into(), 0),
            },
            Location::Tz(tz) => *tz,
        };
        match chrono::DateTime::from_timestamp(unix, 0) {
            Some(dt) => {
                let off = tz.offset_from_utc_datetime(&dt.naive_utc());
                let secs = off.fix().local_minus_utc();
                // tzdata writes numeric abbreviations ("-03", "+0545")
                // that chrono-tz does not carry.
                let name = match off.abbreviation() {
                    Some(a) if !a.is_empty() => a.to_string(),
                    _ => numeric_abbreviation(secs),
                };
                (name, secs)
            }
            None => ("UTC".into(), 0),
        }
    }
}

fn numeric_abbreviation(offset: i32) -> String {
    let sign = if offset < 0 { '-' } else { '+' };
    let m = offset.unsigned_abs() / 60;
    match m % 60 {
        0 => format!("{sign}{:02}", m / 60),
        rem => format!("{sign}{:02}{rem:02}", m / 60),
    }
}

/// Go's `time.Time`: an instant, the location it is shown in, and (for
/// `now`) the monotonic clock reading that `String()` prints as `m=+…`.
#[derive(Debug, Clone, PartialEq)]
pub struct GoTime {
    pub unix: i64,
    pub nsec: u32,
    pub loc: Location,
    pub mono: Option<i64>,
}

/// Civil fields of a time in its zone.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    min: u32,
    sec: u32,
    wday: u32,
    yday: u32,
    zone: String,
    offset: i32,
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in(month: u32, year: i64) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

fn process_start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

impl GoTime {
    /// Go's zero `time.Time{}` (January 1, year 1, UTC).
    pub fn zero() -> GoTime {
        GoTime {
            unix: days_from_civil(1, 1, 1) * 86400,
            nsec: 0,
            loc: Location::Utc,
            mono: None,
        }
    }

    /// `time.Now()`, in the local zone, with a monotonic reading.
    pub fn now() -> GoTime {
        let start = process_start();
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mono = i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
        GoTime {
            unix: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
            loc: Location::Local,
            mono: Some(mono),
        }
    }

    /// `time.Unix(sec, 0)` (local zone).
    pub fn from_unix(sec: i64) -> GoTime {
        GoTime {
            unix: sec,
            nsec: 0,
            loc: Location::Local,
            mono: None,
        }
    }

    /// `t.In(loc)`.
    pub fn in_loc(&self, loc: Location) -> GoTime {
        GoTime {
            loc,
            mono: None,
            ..self.clone()
        }
    }

    /// Nanoseconds since the Unix epoch (saturating, like Go's `UnixNano`
    /// is undefined beyond ±292 years).
    fn unix_nanos(&self) -> i128 {
        self.unix as i128 * 1_000_000_000 + self.nsec as i128
    }

    fn from_nanos(n: i128, loc: Location) -> GoTime {
        GoTime {
            unix: n.div_euclid(1_000_000_000) as i64,
            nsec: n.rem_euclid(1_000_000_000) as u32,
            loc,
            mono: None,
        }
    }

    /// `t.Add(d)`, keeping the monotonic reading as Go does.
    pub fn add(&self, d: i64) -> GoTime {
        let mut t = GoTime::from_nanos(self.unix_nanos() + d as i128, self.loc.clone());
        t.mono = self.mono.map(|m| m.wrapping_add(d));
        t
    }

    /// `t.Sub(u)`, saturating to the Duration range.
    pub fn sub(&self, o: &GoTime) -> i64 {
        if let (Some(a), Some(b)) = (self.mono, o.mono) {
            return a.saturating_sub(b);
        }
        let d = self.unix_nanos() - o.unix_nanos();
        d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    fn civil(&self) -> Civil {
        let (zone, offset) = self.loc.lookup(self.unix);
        let local = self.unix + offset as i64;
        let days = local.div_euclid(86400);
        let secs = local.rem_euclid(86400) as u32;
        let (year, month, day) = civil_from_days(days);
        let wday = (days + 4).rem_euclid(7) as u32;
        let yday = (days - days_from_civil(year, 1, 1) + 1) as u32;
        Civil {
            year,
            month,
            day,
            hour: secs / 3600,
            min: secs % 3600 / 60,
            sec: secs % 60,
            wday,
            yday,
            zone,
            offset,
        }
    }

    /// `time.Date(...)` in `loc`, for in-range fields.
    #[allow(clippy::too_many_arguments)]
    fn date(
        year: i64,
        month: u32,
        day: u32,
        hour: u32,
        min: u32,
        sec: u32,
        nsec: u32,
        loc: Location,
    ) -> GoTime {
        let unix = days_from_civil(year, month, day) * 86400
            + hour as i64 * 3600
            + min as i64 * 60
            + sec as i64;
        // Go looks up the offset at the wall time taken as UTC, then again
        // at the corrected instant when that falls in another zone period.
        let (_, off) = loc.lookup(unix);
        let mut utc = unix - off as i64;
        let (_, off2) = loc.lookup(utc);
        if off2 != off {
            utc = unix - off2 as i64;
        }
        GoTime {
            unix: utc,
            nsec,
            loc,
            mono: None,
        }
    }

    /// `t.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        let c = self.civil();
        let mut b = String::with_capacity(layout.len() + 10);
        let mut rest = layout;
        loop {
            let (prefix, std, suffix) = next_std_chunk(rest);
            b.push_str(prefix);
            let Some(std) = std else { break };
            rest = suffix;
            append_std(&mut b, std, &c, self.nsec);
        }
        b
    }

    /// `t.String()`.
    pub fn go_string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let m = m.unsigned_abs();
            let (m1, m2) = (m / 1_000_000_000, m % 1_000_000_000);
            let (m0, m1) = (m1 / 1_000_000_000, m1 % 1_000_000_000);
            s.push_str(" m=");
            s.push(sign);
            if m0 != 0 {
                s.push_str(&format!("{m0}{m1:09}"));
            } else {
                s.push_str(&m1.to_string());
            }
            s.push_str(&format!(".{m2:09}"));
        }
        s
    }

    /// RFC 3339 with nanoseconds, as `MarshalJSON` writes.
    pub fn rfc3339nano(&self) -> String {
        self.format("2006-01-02T15:04:05.999999999Z07:00")
    }

    pub fn value(self) -> Value {
        Value::object(self)
    }
}

/// A layout element of Go's reference time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Std {
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

fn is_digit_at(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(|c| c.is_ascii_digit())
}

/// Go's `nextStdChunk`: the text before the first layout element, the
/// element, and the rest.
fn next_std_chunk(layout: &str) -> (&str, Option<Std>, &str) {
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

fn append_std(b: &mut String, std: Std, c: &Civil, nsec: u32) {
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

/// Go's internal `quote` for time error messages.
fn go_quote(s: &str) -> String {
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

/// `time.ParseInLocation(layout, value, loc)` with Go's error messages.
pub fn parse_in_location(
    layout: &str,
    value: &str,
    default_loc: Location,
) -> Result<GoTime, String> {
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
        return Ok(GoTime::date(year, mo, d, h, mi, s, nsec, loc));
    }
    if let Some(off) = zone_offset {
        let mut t = GoTime::date(year, mo, d, h, mi, s, nsec, Location::Utc);
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
        let mut t = GoTime::date(year, mo, d, h, mi, s, nsec, Location::Utc);
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
    Ok(GoTime::date(year, mo, d, h, mi, s, nsec, default_loc))
}

// ---------------------------------------------------------------------------
// time.Duration

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1000 * NANOSECOND;
const MILLISECOND: u64 = 1000 * MICROSECOND;
const SECOND: u64 = 1000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// Go's `fmtFrac`: the fraction of `v / 10^prec` without trailing zeros.
fn fmt_frac(out: &mut Vec<u8>, mut v: u64, prec: usize) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            out.push(digit as u8 + b'0');
        }
        v /= 10;
    }
    if print {
        out.push(b'.');
    }
    v
}

fn fmt_int(out: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        out.push(b'0');
    }
    while v > 0 {
        out.push((v % 10) as u8 + b'0');
        v /= 10;
    }
}

/// `time.Duration.String()`.
pub fn duration_string(d: i64) -> String {
    // Built back to front, as Go does.
    let mut out: Vec<u8> = Vec::with_capacity(32);
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    if u < SECOND {
        out.push(b's');
        if u == 0 {
            return "0s".into();
        }
        let prec = if u < MICROSECOND {
            out.push(b'n');
            0
        } else if u < MILLISECOND {
            // 'µ' reversed (UTF-8 0xC2 0xB5).
            out.extend_from_slice(&[0xB5, 0xC2]);
            3
        } else {
            out.push(b'm');
            6
        };
        u = fmt_frac(&mut out, u, prec);
        fmt_int(&mut out, u);
    } else {
        out.push(b's');
        u = fmt_frac(&mut out, u, 9);
        fmt_int(&mut out, u % 60);
        u /= 60;
        if u > 0 {
            out.push(b'm');
            fmt_int(&mut out, u % 60);
            u /= 60;
            if u > 0 {
                out.push(b'h');
                fmt_int(&mut out, u);
            }
        }
    }
    if neg {
        out.push(b'-');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// `time.ParseDuration`, with Go's error messages.
pub fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next() {
        if c == '-' || c == '+' {
            neg = c == '-';
            s = &s[1..];
        }
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Leading integer.
        let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &c in &b[..n] {
            if v > (1u64 << 63) / 10 {
                return Err(invalid());
            }
            v = v * 10 + (c - b'0') as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        let pre = n > 0;
        s = &s[n..];
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if s.starts_with('.') {
            s = &s[1..];
            let fb = s.as_bytes();
            let fnum = fb.iter().take_while(|c| c.is_ascii_digit()).count();
            let mut overflow = false;
            for &c in &fb[..fnum] {
                if overflow {
                    continue;
                }
                if f > ((1u64 << 63) - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + (c - b'0') as u64;
                if y > 1 << 63 {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = fnum > 0;
            s = &s[fnum..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        let ulen = s
            .char_indices()
            .find(|&(_, c)| c == '.' || c.is_ascii_digit())
            .map(|(i, _)| i)
            .unwrap_or(s.len());
        if ulen == 0 {
            return Err(format!("time: missing unit in duration {}", go_quote(orig)));
        }
        let u = &s[..ulen];
        s = &s[ulen..];
        let unit = match u {
            "ns" => NANOSECOND,
            "us" | "µs" | "μs" => MICROSECOND,
            "ms" => MILLISECOND,
            "s" => SECOND,
            "m" => MINUTE,
            "h" => HOUR,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(u),
                    go_quote(orig)
                ))
            }
        };
        if v > (1u64 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        d += v;
        if d > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > (1u64 << 63) - 1 {
        return Err(invalid());
    }
    Ok(d as i64)
}

/// `Duration.Round(m)`: half away from zero, saturating.
pub fn duration_round(d: i64, m: i64) -> i64 {
    if m <= 0 {
        return d;
    }
    let mut r = d % m;
    if d < 0 {
        r = -r;
        if (r as u64) * 2 < m as u64 {
            return d + r;
        }
        if let Some(d1) = (d - m).checked_add(r) {
            if d1 < d {
                return d1;
            }
        }
        return i64::MIN;
    }
    if (r as u64) * 2 < m as u64 {
        return d - r;
    }
    if let Some(d1) = (d + m).checked_sub(r) {
        if d1 > d {
            return d1;
        }
    }
    i64::MAX
}

/// A Go named integer type seen by templates (`time.Month`,
/// `time.Weekday`, `time.Duration`): prints through its `String` method.
#[derive(Debug, Clone)]
pub struct NamedInt {
    pub type_name: &'static str,
    pub value: i64,
    pub text: String,
}

impl Object for NamedInt {
    fn type_name(&self) -> String {
        self.type_name.into()
    }
    fn kind(&self) -> Kind {
        if self.type_name == "time.Duration" {
            Kind::Int64
        } else {
            Kind::Int
        }
    }
    fn method(&self, name: &str) -> Option<Func> {
        let text = self.text.clone();
        let v = self.value;
        match (name, self.type_name) {
            ("String", _) => Some(Func::new(&[], move |_, _| Ok(Value::string(text.clone())))),
            ("Seconds", "time.Duration") => {
                Some(Func::new(&[], move |_, _| Ok(Value::Float(v as f64 / 1e9))))
            }
            ("Minutes", "time.Duration") => Some(Func::new(&[], move |_, _| {
                Ok(Value::Float(v as f64 / 6e10))
            })),
            ("Hours", "time.Duration") => Some(Func::new(&[], move |_, _| {
                Ok(Value::Float(v as f64 / 3.6e12))
            })),
            ("Milliseconds", "time.Duration") => {
                Some(Func::new(&[], move |_, _| Ok(Value::int64(v / 1_000_000))))
            }
            ("Nanoseconds", "time.Duration") => {
                Some(Func::new(&[], move |_, _| Ok(Value::int64(v))))
            }
            _ => None,
        }
    }
    fn format_v(&self) -> String {
        self.text.clone()
    }
    fn format_sharp_v(&self) -> String {
        self.value.to_string()
    }
    fn truthy(&self) -> bool {
        self.value != 0
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::from(self.value))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn duration_value(d: i64) -> Value {
    Value::object(NamedInt {
        type_name: "time.Duration",
        value: d,
        text: duration_string(d),
    })
}

/// The `time.Time` argument of a function or method declared with one.
pub fn time_arg(v: &Value) -> Result<GoTime, FuncError> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<GoTime>().cloned().ok_or_else(|| {
            FuncError::new(format!(
                "wrong type for value; expected time.Time; got {}",
                v.type_name()
            ))
        }),
        Value::Invalid | Value::Nil => Err(FuncError::new("invalid value; expected time.Time")),
        other => Err(FuncError::new(format!(
            "wrong type for value; expected time.Time; got {}",
            other.type_name()
        ))),
    }
}

fn duration_arg(v: &Value) -> Result<i64, FuncError> {
    match v {
        Value::Int(i, _) => Ok(*i),
        Value::Object(o) => match o.as_any().downcast_ref::<NamedInt>() {
            Some(n) if n.type_name == "time.Duration" => Ok(n.value),
            _ => Err(FuncError::new(format!(
                "wrong type for value; expected time.Duration; got {}",
                v.type_name()
            ))),
        },
        other => Err(FuncError::new(format!(
            "wrong type for value; expected time.Duration; got {}",
            other.type_name()
        ))),
    }
}

fn method0(f: impl Fn() -> Value + 'static) -> Option<Func> {
    Some(Func::new(&[], move |_, _| Ok(f())))
}

impl Object for GoTime {
    fn type_name(&self) -> String {
        "time.Time".into()
    }

    fn method(&self, name: &str) -> Option<Func> {
        let t = self.clone();
        match name {
            "String" => method0(move || Value::string(t.go_string())),
            "Year" => method0(move || Value::int(t.civil().year)),
            "Month" => method0(move || {
                let m = t.civil().month;
                Value::object(NamedInt {
                    type_name: "time.Month",
                    value: m as i64,
                    text: LONG_MONTHS[m as usize - 1].into(),
                })
            }),
            "Day" => method0(move || Value::int(t.civil().day as i64)),
            "Hour" => method0(move || Value::int(t.civil().hour as i64)),
            "Minute" => method0(move || Value::int(t.civil().min as i64)),
            "Second" => method0(move || Value::int(t.civil().sec as i64)),
            "Nanosecond" => method0(move || Value::int(t.nsec as i64)),
            "YearDay" => method0(move || Value::int(t.civil().yday as i64)),
            "Weekday" => method0(move || {
                let w = t.civil().wday;
                Value::object(NamedInt {
                    type_name: "time.Weekday",
                    value: w as i64,
                    text: LONG_DAYS[w as usize].into(),
                })
            }),
            "Unix" => method0(move || Value::int64(t.unix)),
            "UnixMilli" => method0(move || Value::int64((t.unix_nanos() / 1_000_000) as i64)),
            "UnixMicro" => method0(move || Value::int64((t.unix_nanos() / 1000) as i64)),
            "UnixNano" => method0(move || Value::int64(t.unix_nanos() as i64)),
            "IsZero" => method0(move || Value::Bool(t.unix == GoTime::zero().unix && t.nsec == 0)),
            "UTC" => method0(move || t.in_loc(Location::Utc).value()),
            "Local" => method0(move || t.in_loc(Location::Local).value()),
            "Format" => Some(Func::new(&[Ty::String], move |_, args| {
                let layout = args.first().and_then(|a| a.as_str()).unwrap_or("");
                Ok(Value::string(t.format(layout)))
            })),
            "Add" => Some(Func::new(&[Ty::Any], move |_, args| {
                let d = duration_arg(args.first().unwrap_or(&Value::Nil))?;
                Ok(t.add(d).value())
            })),
            "Sub" => Some(Func::new(&[TIME_TY], move |_, args| {
                let o = time_arg(args.first().unwrap_or(&Value::Nil))?;
                Ok(duration_value(t.sub(&o)))
            })),
            "Before" | "After" | "Equal" | "Compare" => {
                let name = name.to_string();
                Some(Func::new(&[TIME_TY], move |_, args| {
                    let o = time_arg(args.first().unwrap_or(&Value::Nil))?;
                    let ord = t.unix_nanos().cmp(&o.unix_nanos());
                    Ok(match name.as_str() {
                        "Before" => Value::Bool(ord.is_lt()),
                        "After" => Value::Bool(ord.is_gt()),
                        "Equal" => Value::Bool(ord.is_eq()),
                        _ => Value::int(ord as i64),
                    })
                }))
            }
            "AddDate" => Some(Func::new(
                &[
                    Ty::Int(IntKind::Int),
                    Ty::Int(IntKind::Int),
                    Ty::Int(IntKind::Int),
                ],
                move |_, args| {
                    let n = |i: usize| match args.get(i) {
                        Some(Value::Int(v, _)) => *v,
                        _ => 0,
                    };
                    let c = t.civil();
                    // Go normalises month and day overflow through Date.
                    let months = c.month as i64 - 1 + n(1);
                    let year = c.year + n(0) + months.div_euclid(12);
                    let month = months.rem_euclid(12) as u32 + 1;
                    let days = days_from_civil(year, month, 1) + c.day as i64 - 1 + n(2);
                    let (y, m, d) = civil_from_days(days);
                    Ok(GoTime::date(y, m, d, c.hour, c.min, c.sec, t.nsec, t.loc.clone()).value())
                },
            )),
            _ => None,
        }
    }

    fn format_v(&self) -> String {
        self.go_string()
    }

    fn format_sharp_v(&self) -> String {
        let c = self.civil();
        let loc = match &self.loc {
            Location::Utc => "time.UTC".to_string(),
            Location::Local => "time.Local".to_string(),
            Location::Fixed(name, _) => format!("time.Location({})", go_quote(name)),
            Location::Tz(tz) => format!("time.Location({})", go_quote(tz.name())),
        };
        format!(
            "time.Date({}, time.{}, {}, {}, {}, {}, {}, {loc})",
            c.year,
            LONG_MONTHS[c.month as usize - 1],
            c.day,
            c.hour,
            c.min,
            c.sec,
            self.nsec
        )
    }

    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::Value::String(self.rfc3339nano()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The parameter type of a Go `time.Time` parameter. Until the engine can
/// check host types itself this is `interface {}` and [`time_arg`] checks
/// it, with Go's message for non-constant arguments; for constants Go says
/// `can't handle "x" for arg of type time.Time` instead.
pub const TIME_TY: Ty = Ty::Any;

/// Sprig's date argument: a `time.Time`, or Unix seconds as int, int64 or
/// int32; anything else means "now".
fn date_like(v: &Value) -> GoTime {
    match v {
        Value::Object(o) => match o.as_any().downcast_ref::<GoTime>() {
            Some(t) => t.clone(),
            None => GoTime::now(),
        },
        Value::Int(i, IntKind::Int | IntKind::Int64 | IntKind::Int32) => GoTime::from_unix(*i),
        _ => GoTime::now(),
    }
}

fn date_in_zone(fmt: &str, date: &Value, zone: &str) -> String {
    let loc = Location::load(zone).unwrap_or(Location::Utc);
    date_like(date).in_loc(loc).format(fmt)
}

fn str_arg(args: &[Value], i: usize) -> &str {
    args.get(i).and_then(|a| a.as_str()).unwrap_or("")
}

fn nil_arg(args: &[Value], i: usize) -> &Value {
    args.get(i).unwrap_or(&Value::Nil)
}

fn date_modify(args: &[Value], must: bool) -> Result<Value, FuncError> {
    let t = time_arg(nil_arg(args, 1))?;
    match parse_duration(str_arg(args, 0)) {
        Ok(d) => Ok(t.add(d).value()),
        Err(e) if must => Err(FuncError::new(e)),
        Err(_) => Ok(t.value()),
    }
}

fn duration_round_text(v: &Value) -> String {
    let d: i64 = match v {
        Value::String(s) => parse_duration(s).unwrap_or(0),
        Value::Int(i, IntKind::Int64) => *i,
        Value::Object(o) => match o.as_any().downcast_ref::<GoTime>() {
            Some(t) => GoTime::now().sub(t),
            None => 0,
        },
        _ => 0,
    };
    let u = d.unsigned_abs();
    const YEAR: u64 = HOUR * 24 * 365;
    const MONTH: u64 = HOUR * 24 * 30;
    const DAY: u64 = HOUR * 24;
    if u > YEAR {
        format!("{}y", u / YEAR)
    } else if u > MONTH {
        format!("{}mo", u / MONTH)
    } else if u > DAY {
        format!("{}d", u / DAY)
    } else if u > HOUR {
        format!("{}h", u / HOUR)
    } else if u > MINUTE {
        format!("{}m", u / MINUTE)
    } else if u > SECOND {
        format!("{}s", u / SECOND)
    } else {
        "0s".into()
    }
}

pub fn register(m: &mut FuncMap) {
    m.insert("now", Func::new(&[], |_, _| Ok(GoTime::now().value())));
    m.insert(
        "date",
        Func::new(&[Ty::String, Ty::Any], |_, args| {
            Ok(Value::string(date_in_zone(
                str_arg(&args, 0),
                nil_arg(&args, 1),
                "Local",
            )))
        }),
    );
    let in_zone = Func::new(&[Ty::String, Ty::Any, Ty::String], |_, args| {
        Ok(Value::string(date_in_zone(
            str_arg(&args, 0),
            nil_arg(&args, 1),
            str_arg(&args, 2),
        )))
    });
    m.insert("dateInZone", in_zone.clone());
    m.insert("date_in_zone", in_zone);
    m.insert(
        "htmlDate",
        Func::new(&[Ty::Any], |_, args| {
            Ok(Value::string(date_in_zone(
                "2006-01-02",
                nil_arg(&args, 0),
                "Local",
            )))
        }),
    );
    m.insert(
        "htmlDateInZone",
        Func::new(&[Ty::Any, Ty::String], |_, args| {
            Ok(Value::string(date_in_zone(
                "2006-01-02",
                nil_arg(&args, 0),
                str_arg(&args, 1),
            )))
        }),
    );
    let modify = Func::new(&[Ty::String, TIME_TY], |_, args| date_modify(&args, false));
    m.insert("dateModify", modify.clone());
    m.insert("date_modify", modify);
    let must_modify = Func::new(&[Ty::String, TIME_TY], |_, args| date_modify(&args, true));
    m.insert("mustDateModify", must_modify.clone());
    m.insert("must_date_modify", must_modify);
    m.insert(
        "ago",
        Func::new(&[Ty::Any], |_, args| {
            let t = match nil_arg(&args, 0) {
                Value::Int(i, IntKind::Int | IntKind::Int64) => GoTime::from_unix(*i),
                Value::Object(o) => match o.as_any().downcast_ref::<GoTime>() {
                    Some(t) => t.clone(),
                    None => GoTime::now(),
                },
                _ => GoTime::now(),
            };
            let d = duration_round(GoTime::now().sub(&t), SECOND as i64);
            Ok(Value::string(duration_string(d)))
        }),
    );
    m.insert(
        "duration",
        Func::new(&[Ty::Any], |_, args| {
            let n: i64 = match nil_arg(&args, 0) {
                Value::String(s) => s.parse::<i64>().unwrap_or(0),
                Value::Int(i, IntKind::Int64) => *i,
                _ => 0,
            };
            Ok(Value::string(duration_string(
                n.wrapping_mul(SECOND as i64),
            )))
        }),
    );
    m.insert(
        "durationRound",
        Func::new(&[Ty::Any], |_, args| {
            Ok(Value::string(duration_round_text(nil_arg(&args, 0))))
        }),
    );
    m.insert(
        "toDate",
        Func::new(&[Ty::String, Ty::String], |_, args| {
            let t = parse_in_location(str_arg(&args, 0), str_arg(&args, 1), Location::Local)
                .unwrap_or_else(|_| GoTime::zero());
            Ok(t.value())
        }),
    );
    m.insert(
        "mustToDate",
        Func::new(&[Ty::String, Ty::String], |_, args| {
            parse_in_location(str_arg(&args, 0), str_arg(&args, 1), Location::Local)
                .map(GoTime::value)
                .map_err(FuncError::new)
        }),
    );
    m.insert(
        "unixEpoch",
        Func::new(&[TIME_TY], |_, args| {
            let t = time_arg(nil_arg(&args, 0))?;
            Ok(Value::string(t.unix.to_string()))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gotmpl::CallCtx;

    fn map() -> FuncMap {
        let mut m = FuncMap::new();
        register(&mut m);
        m
    }

    fn call(m: &FuncMap, name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        (m.get(name).unwrap().imp)(&mut CallCtx::detached(), args)
    }

    fn text(v: Value) -> String {
        match v {
            Value::String(s) => s.to_string(),
            Value::Object(o) => o.format_v(),
            other => panic!("{other:?}"),
        }
    }

    fn parse(layout: &str, value: &str) -> GoTime {
        parse_in_location(layout, value, Location::Utc).unwrap()
    }

    const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

    #[test]
    fn parses_and_prints_like_go() {
        assert_eq!(
            parse("2006-01-02", "2021-03-04").go_string(),
            "2021-03-04 00:00:00 +0000 UTC"
        );
        let t = parse(RFC3339, "2021-03-04T05:06:07+02:00");
        assert_eq!(t.unix, 1614827167);
        assert_eq!(t.go_string(), "2021-03-04 05:06:07 +0200 +0200");
        assert_eq!(
            t.add(90 * 60 * 1_000_000_000).go_string(),
            "2021-03-04 06:36:07 +0200 +0200"
        );
        assert_eq!(parse("Jan 2 2006", "Mar 4 2021").unix, 1614816000);
        assert_eq!(GoTime::zero().go_string(), "0001-01-01 00:00:00 +0000 UTC");
        let frac = parse("2006-01-02 15:04:05.000", "2021-03-04 05:06:07.120");
        assert_eq!(frac.nsec, 120_000_000);
        assert_eq!(frac.go_string(), "2021-03-04 05:06:07.12 +0000 UTC");
    }

    #[test]
    fn parse_errors() {
        let e = parse_in_location("2006-01-02", "bogus", Location::Utc).unwrap_err();
        assert_eq!(
            e,
            "parsing time \"bogus\" as \"2006-01-02\": cannot parse \"bogus\" as \"2006\""
        );
        let e = parse_in_location("2006-01-02", "2021-13-01", Location::Utc).unwrap_err();
        assert_eq!(e, "parsing time \"2021-13-01\": month out of range");
        let e = parse_in_location("2006-01-02", "2021-02-30", Location::Utc).unwrap_err();
        assert_eq!(e, "parsing time \"2021-02-30\": day out of range");
        let e = parse_in_location("2006", "2021x", Location::Utc).unwrap_err();
        assert_eq!(e, "parsing time \"2021x\": extra text: \"x\"");
    }

    #[test]
    fn formats_every_element() {
        let t = parse(RFC3339, "2021-03-04T05:06:07+02:00");
        assert_eq!(t.format("Jan _2 03:04PM .000"), "Mar  4 05:06AM .000");
        assert_eq!(
            t.format("Monday January 2 06 3:4:5 pm"),
            "Thursday March 4 21 5:6:7 am"
        );
        assert_eq!(
            t.format("-07 -07:00 -070000 Z07:00"),
            "+02 +02:00 +020000 +02:00"
        );
        assert_eq!(t.format("__2 002"), " 63 063");
        let u = t.in_loc(Location::Utc);
        assert_eq!(u.format(RFC3339), "2021-03-04T03:06:07Z");
        assert_eq!(u.format("2006-01-02 15:04 MST"), "2021-03-04 03:06 UTC");
        let tokyo = t.in_loc(Location::load("Asia/Tokyo").unwrap());
        assert_eq!(
            tokyo.format("2006-01-02 15:04 -0700 MST"),
            "2021-03-04 12:06 +0900 JST"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(duration_string(0), "0s");
        assert_eq!(duration_string(3600 * 1_000_000_000), "1h0m0s");
        assert_eq!(duration_string(3_723_500_000_000), "1h2m3.5s");
        assert_eq!(duration_string(1500), "1.5µs");
        assert_eq!(duration_string(-1_500_000), "-1.5ms");
        assert_eq!(duration_string(12), "12ns");
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration("-1.5s").unwrap(), -1_500_000_000);
        assert_eq!(
            parse_duration("bogus").unwrap_err(),
            "time: invalid duration \"bogus\""
        );
        assert_eq!(
            parse_duration("1").unwrap_err(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            parse_duration("1x").unwrap_err(),
            "time: unknown unit \"x\" in duration \"1x\""
        );
        assert_eq!(duration_round(1_500_000_000, 1_000_000_000), 2_000_000_000);
        assert_eq!(
            duration_round(-1_400_000_000, 1_000_000_000),
            -1_000_000_000
        );
    }

    #[test]
    fn sprig_functions() {
        let m = map();
        let s = |v: &str| Value::str(v);
        let t = call(
            &m,
            "toDate",
            vec![s(RFC3339), s("2021-03-04T05:06:07+02:00")],
        )
        .unwrap();
        assert_eq!(
            text(call(&m, "date", vec![s("2006-01-02"), t.clone()]).unwrap()),
            "2021-03-04"
        );
        assert_eq!(
            text(call(&m, "date", vec![s("2006"), Value::int(0)]).unwrap()),
            "1970"
        );
        assert_eq!(
            text(
                call(
                    &m,
                    "dateInZone",
                    vec![s("15:04"), t.clone(), s("Nowhere/Zone")]
                )
                .unwrap()
            ),
            "03:06"
        );
        assert_eq!(
            text(call(&m, "htmlDateInZone", vec![t.clone(), s("Asia/Tokyo")]).unwrap()),
            "2021-03-04"
        );
        assert_eq!(
            text(call(&m, "unixEpoch", vec![t.clone()]).unwrap()),
            "1614827167"
        );
        assert_eq!(
            text(call(&m, "dateModify", vec![s("bogus"), t.clone()]).unwrap()),
            "2021-03-04 05:06:07 +0200 +0200"
        );
        assert_eq!(
            call(&m, "mustDateModify", vec![s("bogus"), t.clone()])
                .unwrap_err()
                .0,
            "time: invalid duration \"bogus\""
        );
        assert!(call(&m, "dateModify", vec![s("1h"), s("x")]).is_err());
        assert_eq!(
            text(call(&m, "duration", vec![Value::int(95)]).unwrap()),
            "0s"
        );
        assert_eq!(
            text(call(&m, "duration", vec![Value::int64(95)]).unwrap()),
            "1m35s"
        );
        assert_eq!(
            text(call(&m, "duration", vec![s("3600")]).unwrap()),
            "1h0m0s"
        );
        assert_eq!(
            text(call(&m, "durationRound", vec![s("2h10m5s")]).unwrap()),
            "2h"
        );
        assert_eq!(
            text(call(&m, "durationRound", vec![s("2400h")]).unwrap()),
            "3mo"
        );
        assert_eq!(
            text(call(&m, "durationRound", vec![Value::int(90)]).unwrap()),
            "0s"
        );
        assert_eq!(
            text(call(&m, "toDate", vec![s("2006-01-02"), s("bogus")]).unwrap()),
            "0001-01-01 00:00:00 +0000 UTC"
        );
        let old = call(&m, "toDate", vec![s("2006"), s("2000")]).unwrap();
        assert!(text(call(&m, "ago", vec![old]).unwrap()).contains('h'));
        let now = text(call(&m, "now", vec![]).unwrap());
        assert!(now.contains(" m=+"), "{now}");
        let Value::Object(o) = &t else { panic!() };
        let wd = (o.method("Weekday").unwrap().imp)(&mut CallCtx::detached(), vec![]).unwrap();
        assert_eq!(text(wd), "Thursday");
    }

    #[test]
    fn parses_zones_and_layouts() {
        let l = |layout: &str, value: &str| {
            parse_in_location(layout, value, Location::Local)
                .map(|t| t.go_string())
                .unwrap_or_else(|e| e)
        };
        assert_eq!(
            l(
                "2006-01-02T15:04:05.999999999Z07:00",
                "2021-03-04T05:06:07.123456789Z"
            ),
            "2021-03-04 05:06:07.123456789 +0000 UTC"
        );
        assert_eq!(
            l("2006-01-02 15:04:05 MST", "2021-03-04 05:06:07 PST"),
            "2021-03-04 05:06:07 +0000 PST"
        );
        assert_eq!(
            l(
                "2006-01-02 15:04:05 -0700 MST",
                "2021-03-04 05:06:07 +0900 JST"
            ),
            "2021-03-04 05:06:07 +0900 JST"
        );
        assert_eq!(
            l("Jan 2, 2006 at 3:04pm (MST)", "Feb 3, 2013 at 7:54pm (PST)"),
            "2013-02-03 19:54:00 +0000 PST"
        );
        assert_eq!(
            l("02 Jan 06 15:04 -0700", "04 Mar 21 05:06 -0130"),
            "2021-03-04 05:06:00 -0130 -0130"
        );
        assert_eq!(l("2006-1-2", "2021-3-4"), "2021-03-04 00:00:00 +0000 UTC");
        assert_eq!(
            l("2006-01-02", "2021-02-2"),
            "parsing time \"2021-02-2\" as \"2006-01-02\": cannot parse \"2\" as \"02\""
        );
        assert_eq!(
            l("2006-01-02 15:04", "2021-02-02 25:00"),
            "parsing time \"2021-02-02 25:00\": hour out of range"
        );
        assert_eq!(
            l("Mon Jan 2 2006", "Thu Mar 4 2021"),
            "2021-03-04 00:00:00 +0000 UTC"
        );
        assert_eq!(
            l("Monday Jan 2 2006", "Thursdy Mar 4 2021"),
            "parsing time \"Thursdy Mar 4 2021\" as \"Monday Jan 2 2006\": cannot parse \"Thursdy Mar 4 2021\" as \"Monday\""
        );
        assert_eq!(l("2006-002", "2021-063"), "2021-03-04 00:00:00 +0000 UTC");
        assert_eq!(
            l("15:04:05", "05:06:07.5"),
            "0000-01-01 05:06:07.5 +0000 UTC"
        );
        assert_eq!(
            l(RFC3339, "2021-03-04T05:06:07"),
            "parsing time \"2021-03-04T05:06:07\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"Z07:00\""
        );
        assert_eq!(
            l(RFC3339, "2021-03-04T05:06:07+00:00"),
            "2021-03-04 05:06:07 +0000 UTC"
        );
        assert_eq!(l("_2 Jan", " 4 Mar"), "0000-03-04 00:00:00 +0000 UTC");
        assert_eq!(l(".000", ".123"), "0000-01-01 00:00:00.123 +0000 UTC");
        let t = parse(RFC3339, "2021-03-04T15:06:07-05:30");
        assert_eq!(
            t.in_loc(Location::Utc)
                .format("3:04:05 pm Z0700 Z07 -07:00:00"),
            "8:36:07 pm Z Z +00:00:00"
        );
        let z = |zone: &str| {
            GoTime::from_unix(1625000000)
                .in_loc(Location::load(zone).unwrap_or(Location::Utc))
                .format("2006-01-02 15:04 MST")
        };
        assert_eq!(z("Europe/London"), "2021-06-29 21:53 BST");
        assert_eq!(z("Asia/Kolkata"), "2021-06-30 02:23 IST");
        assert_eq!(z("America/Sao_Paulo"), "2021-06-29 17:53 -03");
        assert_eq!(z("utc"), "2021-06-29 20:53 UTC");
        assert_eq!(z("Local"), "2021-06-29 20:53 UTC");
        let v = parse_in_location("2006-01-02", "2021-03-04", Location::Local)
            .unwrap()
            .value();
        let Value::Object(o) = v else { panic!() };
        assert_eq!(
            o.format_sharp_v(),
            "time.Date(2021, time.March, 4, 0, 0, 0, 0, time.Local)"
        );
    }

    #[test]
    fn duration_functions() {
        let m = map();
        let s = |v: &str| Value::str(v);
        for (d, want) in [
            ("1h", "60m"),
            ("-3h5m", "3h"),
            ("8760h", "12mo"),
            ("8761h", "1y"),
            ("25h", "1d"),
            ("61s", "1m"),
            ("1.5s", "1s"),
            ("bogus", "0s"),
        ] {
            assert_eq!(
                text(call(&m, "durationRound", vec![s(d)]).unwrap()),
                want,
                "{d}"
            );
        }
        assert_eq!(
            text(call(&m, "duration", vec![Value::int64(-95)]).unwrap()),
            "-1m35s"
        );
        assert_eq!(
            text(call(&m, "duration", vec![Value::int64(90061)]).unwrap()),
            "25h1m1s"
        );
        assert_eq!(text(call(&m, "duration", vec![s("1.5")]).unwrap()), "0s");
        let t = call(&m, "toDate", vec![s("2006-01-02"), s("2021-03-04")]).unwrap();
        assert_eq!(
            call(&m, "mustDateModify", vec![s("1d"), t.clone()])
                .unwrap_err()
                .0,
            "time: unknown unit \"d\" in duration \"1d\""
        );
        assert_eq!(
            call(&m, "mustDateModify", vec![s(""), t.clone()])
                .unwrap_err()
                .0,
            "time: invalid duration \"\""
        );
        assert_eq!(
            text(call(&m, "dateModify", vec![s("-90m"), t]).unwrap()),
            "2021-03-03 22:30:00 +0000 UTC"
        );
    }

    #[test]
    fn non_ascii_input_does_not_panic() {
        for (layout, value) in [
            ("-07:00", "+aé:00"),
            ("Z0700", "é"),
            ("é2006", "é2021"),
            ("é2006", "è2021"),
            ("2006 MST", "2021 ÉÉÉ"),
            ("Jan", "Jé"),
            ("PM", "é"),
            (".000", ".1é"),
            ("15:04:05", "1é:00:00"),
        ] {
            let _ = parse_in_location(layout, value, Location::Utc);
        }
        assert_eq!(
            parse_in_location("é2006", "é2021", Location::Utc)
                .unwrap()
                .go_string(),
            "2021-01-01 00:00:00 +0000 UTC"
        );
        assert!(GoTime::zero().format("éJanñ2006").starts_with("éJanñ0001"));
    }
}
