//! Go's `time` package as templates and Kubernetes tools meet it: `time.Time`
//! with its location and monotonic reading, reference-time layouts for
//! formatting and parsing, and `time.Duration` with `ParseDuration`,
//! `String` and `Round`. Error texts are Go's, since users see them.
//!
//! Start at [`Time`], [`parse_in_location`] and [`Duration`].

mod duration;
mod format;
mod parse;
mod zone;

use std::fmt;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use duration::{
    Duration, ParseDurationError, HOUR, MICROSECOND, MILLISECOND, MINUTE, NANOSECOND, SECOND,
};
pub use parse::{parse_in_location, ParseError};
pub use zone::Location;

use format::{append_std, next_std_chunk};
use parse::go_quote;

/// Go's `time.Time`: an instant, the location it is shown in, and (for
/// `now`) the monotonic clock reading that `String()` prints as `m=+…`.
#[derive(Debug, Clone, PartialEq)]
pub struct Time {
    /// Seconds since the Unix epoch.
    pub unix: i64,
    /// Nanoseconds within the second.
    pub nsec: u32,
    /// Where the time is displayed.
    pub loc: Location,
    /// Nanoseconds on the process's monotonic clock (`time.Now` only).
    pub mono: Option<i64>,
}

/// Civil fields of a time in its zone (Go's `Date`, `Clock`, `Weekday`,
/// `YearDay` and `Zone` at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    /// 0 (Sunday) to 6.
    pub wday: u32,
    /// 1 to 366.
    pub yday: u32,
    /// The zone's abbreviation.
    pub zone: String,
    /// Seconds east of UTC.
    pub offset: i32,
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The proleptic Gregorian date `z` days after 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
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

pub(crate) fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub(crate) fn days_in(month: u32, year: i64) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Go's `time.Month` names.
pub const LONG_MONTHS: [&str; 12] = [
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
/// Go's `time.Weekday` names.
pub const LONG_DAYS: [&str; 7] = [
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

impl Time {
    /// Go's zero `time.Time{}` (January 1, year 1, UTC).
    pub fn zero() -> Time {
        Time {
            unix: days_from_civil(1, 1, 1) * 86400,
            nsec: 0,
            loc: Location::Utc,
            mono: None,
        }
    }

    /// `time.Now()`, in the local zone, with a monotonic reading.
    pub fn now() -> Time {
        let start = process_start();
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let mono = i64::try_from(start.elapsed().as_nanos()).unwrap_or(i64::MAX);
        Time {
            unix: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
            loc: Location::Local,
            mono: Some(mono),
        }
    }

    /// `time.Unix(sec, 0)` (local zone).
    pub fn from_unix(sec: i64) -> Time {
        Time {
            unix: sec,
            nsec: 0,
            loc: Location::Local,
            mono: None,
        }
    }

    /// `t.In(loc)`.
    pub fn in_loc(&self, loc: Location) -> Time {
        Time {
            loc,
            mono: None,
            ..self.clone()
        }
    }

    /// Nanoseconds since the Unix epoch (saturating, like Go's `UnixNano`
    /// is undefined beyond ±292 years).
    pub fn unix_nanos(&self) -> i128 {
        self.unix as i128 * 1_000_000_000 + self.nsec as i128
    }

    fn from_nanos(n: i128, loc: Location) -> Time {
        Time {
            unix: n.div_euclid(1_000_000_000) as i64,
            nsec: n.rem_euclid(1_000_000_000) as u32,
            loc,
            mono: None,
        }
    }

    /// `t.Add(d)`, keeping the monotonic reading as Go does.
    pub fn add(&self, d: Duration) -> Time {
        let d = d.0;
        let mut t = Time::from_nanos(self.unix_nanos() + d as i128, self.loc.clone());
        t.mono = self.mono.map(|m| m.wrapping_add(d));
        t
    }

    /// `t.Sub(u)`, saturating to the Duration range.
    pub fn sub(&self, o: &Time) -> Duration {
        if let (Some(a), Some(b)) = (self.mono, o.mono) {
            return Duration(a.saturating_sub(b));
        }
        let d = self.unix_nanos() - o.unix_nanos();
        Duration(d.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
    }

    /// The civil fields in the time's location.
    pub fn civil(&self) -> Civil {
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
    pub fn date(
        year: i64,
        month: u32,
        day: u32,
        hour: u32,
        min: u32,
        sec: u32,
        nsec: u32,
        loc: Location,
    ) -> Time {
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
        Time {
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

    /// `t.GoString()`, what `%#v` prints:
    /// `time.Date(2021, time.March, 4, 0, 0, 0, 0, time.Local)`.
    pub fn go_string(&self) -> String {
        let c = self.civil();
        let loc = match &self.loc {
            Location::Utc => "time.UTC".to_string(),
            Location::Local => "time.Local".to_string(),
            Location::Fixed(name, _) => format!("time.Location({})", go_quote(name)),
            Location::Tz(tz) => format!(
                "time.Location({})",
                go_quote(tz.iana_name().unwrap_or_default())
            ),
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

    /// `t.AddDate(years, months, days)`: month and day overflow normalised
    /// as Go's `Date` does.
    pub fn add_date(&self, years: i64, months: i64, days: i64) -> Time {
        let c = self.civil();
        let months = c.month as i64 - 1 + months;
        let year = c.year + years + months.div_euclid(12);
        let month = months.rem_euclid(12) as u32 + 1;
        let days = days_from_civil(year, month, 1) + c.day as i64 - 1 + days;
        let (y, m, d) = civil_from_days(days);
        Time::date(y, m, d, c.hour, c.min, c.sec, self.nsec, self.loc.clone())
    }

    /// Whether this is Go's zero time (`IsZero`).
    pub fn is_zero(&self) -> bool {
        self.unix == Time::zero().unix && self.nsec == 0
    }

    /// RFC 3339 with nanoseconds, as `MarshalJSON` writes.
    pub fn rfc3339nano(&self) -> String {
        self.format("2006-01-02T15:04:05.999999999Z07:00")
    }
}

/// `t.String()`: `2006-01-02 15:04:05.999999999 -0700 MST`, then the
/// monotonic reading (`m=+0.000012345`) when the time has one.
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format("2006-01-02 15:04:05.999999999 -0700 MST"))?;
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let m = m.unsigned_abs();
            let (m1, m2) = (m / 1_000_000_000, m % 1_000_000_000);
            let (m0, m1) = (m1 / 1_000_000_000, m1 % 1_000_000_000);
            write!(f, " m={sign}")?;
            if m0 != 0 {
                write!(f, "{m0}{m1:09}")?;
            } else {
                write!(f, "{m1}")?;
            }
            write!(f, ".{m2:09}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
