//! Go's `*time.Location`: UTC, the local zone (`$TZ`, UTC when unset, as Go
//! resolves it), fixed offsets, and IANA zones from the database compiled into
//! `chrono-tz`.

use std::sync::OnceLock;

use chrono::{Offset, TimeZone};
use chrono_tz::{OffsetName, Tz};

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
    pub(crate) fn lookup(&self, unix: i64) -> (String, i32) {
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
