//! Timestamps as Go's `encoding/json` writes a `time.Time`: RFC 3339 with up to nine
//! fraction digits (trailing zeros trimmed) and the offset the value carries.
//!
//! Helm records keep the offset of the machine that wrote them, so the offset is stored
//! beside the civil date-time; re-encoding a decoded value gives back the same text.

use std::fmt;
use std::str::FromStr;

use jiff::civil::DateTime;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time with a fixed UTC offset, formatted like Go's `time.RFC3339Nano`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Time {
    local: DateTime,
    /// Offset east of UTC in seconds.
    offset_seconds: i32,
}

/// Why a timestamp could not be read.
#[derive(Debug, thiserror::Error)]
#[error("invalid RFC 3339 timestamp {text:?}: {reason}")]
pub struct TimeParseError {
    text: String,
    reason: String,
}

impl Time {
    /// Go's zero `time.Time`, `0001-01-01T00:00:00Z`.
    pub const ZERO: Time = Time {
        local: DateTime::constant(1, 1, 1, 0, 0, 0, 0),
        offset_seconds: 0,
    };

    /// The current time in UTC, with nanoseconds.
    pub fn now() -> Time {
        Time::from_timestamp(jiff::Timestamp::now())
    }

    /// A UTC time from a `jiff` timestamp.
    pub fn from_timestamp(ts: jiff::Timestamp) -> Time {
        Time {
            local: ts.to_zoned(jiff::tz::TimeZone::UTC).datetime(),
            offset_seconds: 0,
        }
    }

    /// The instant this time denotes.
    pub fn to_timestamp(&self) -> jiff::Timestamp {
        let offset =
            jiff::tz::Offset::from_seconds(self.offset_seconds).unwrap_or(jiff::tz::Offset::UTC);
        offset
            .to_timestamp(self.local)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    /// Seconds since the Unix epoch, as Helm writes into `createdAt`/`modifiedAt` labels.
    pub fn unix_seconds(&self) -> i64 {
        self.to_timestamp().as_second()
    }

    /// Whether this is Go's zero time (which Helm v4 omits from records).
    pub fn is_zero(&self) -> bool {
        self.to_timestamp() == Time::ZERO.to_timestamp()
    }

    /// The UTC offset in seconds.
    pub fn offset_seconds(&self) -> i32 {
        self.offset_seconds
    }

    /// Parses RFC 3339 text the way Go's `time.Time.UnmarshalJSON` accepts it.
    pub fn parse(text: &str) -> Result<Time, TimeParseError> {
        let err = |reason: &str| TimeParseError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let b = text.as_bytes();
        if b.len() < 20 {
            return Err(err("too short"));
        }
        let num = |range: std::ops::Range<usize>| -> Result<i32, TimeParseError> {
            let part = &b[range];
            if part.iter().all(u8::is_ascii_digit) {
                Ok(part
                    .iter()
                    .fold(0i32, |acc, d| acc * 10 + i32::from(d - b'0')))
            } else {
                Err(err("expected digits"))
            }
        };
        let sep_ok = b[4] == b'-'
            && b[7] == b'-'
            && (b[10] == b'T' || b[10] == b't')
            && b[13] == b':'
            && b[16] == b':';
        if !sep_ok {
            return Err(err("expected YYYY-MM-DDTHH:MM:SS"));
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        let mut pos = 19;
        let mut nanos = 0i32;
        if b[pos] == b'.' || b[pos] == b',' {
            pos += 1;
            let start = pos;
            while pos < b.len() && b[pos].is_ascii_digit() {
                pos += 1;
            }
            let digits = pos - start;
            if digits == 0 || digits > 9 {
                return Err(err("fraction must have 1 to 9 digits"));
            }
            nanos = num(start..pos)? * 10i32.pow(9 - digits as u32);
        }
        let rest = &b[pos..];
        let offset_seconds = match rest {
            [b'Z'] | [b'z'] => 0,
            [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
                let hh = num(pos + 1..pos + 3)?;
                let mm = num(pos + 4..pos + 6)?;
                if hh > 23 || mm > 59 {
                    return Err(err("offset out of range"));
                }
                let total = hh * 3600 + mm * 60;
                if *sign == b'-' {
                    -total
                } else {
                    total
                }
            }
            _ => return Err(err("expected Z or ±HH:MM offset")),
        };
        let local = DateTime::new(
            year as i16,
            month as i8,
            day as i8,
            hour as i8,
            minute as i8,
            second as i8,
            nanos,
        )
        .map_err(|e| err(&e.to_string()))?;
        Ok(Time {
            local,
            offset_seconds,
        })
    }
}

impl Default for Time {
    fn default() -> Self {
        Time::ZERO
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.local;
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            d.year(),
            d.month(),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        )?;
        let nanos = d.subsec_nanosecond();
        if nanos != 0 {
            let digits = format!("{nanos:09}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        if self.offset_seconds == 0 {
            f.write_str("Z")
        } else {
            let sign = if self.offset_seconds < 0 { '-' } else { '+' };
            let abs = self.offset_seconds.unsigned_abs();
            write!(f, "{sign}{:02}:{:02}", abs / 3600, (abs / 60) % 60)
        }
    }
}

impl FromStr for Time {
    type Err = TimeParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Time::parse(s)
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Time::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde helpers for optional times that Helm omits when zero.
///
/// Reading accepts a missing field, `null`, `""` (what Helm v3 writes for a zero time)
/// and Go's zero time; all of them become `None`, as in Helm v4.
pub(crate) mod opt {
    use super::Time;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(t: &Option<Time>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.collect_str(t),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Time>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => {
                let t = Time::parse(text).map_err(serde::de::Error::custom)?;
                Ok(if t.is_zero() { None } else { Some(t) })
            }
        }
    }
}

/// Serde helpers for a time that Go always writes (the zero time included).
pub(crate) mod required_ser {
    use super::Time;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text.as_deref() {
            None | Some("") => Ok(Time::ZERO),
            Some(text) => Time::parse(text).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_go_formats() {
        for text in [
            "2024-03-01T10:20:30.123456789Z",
            "2024-03-01T10:20:30.1Z",
            "2024-03-01T10:20:30Z",
            "2024-03-01T10:20:30.5+02:00",
            "2024-03-01T10:20:30.000001-07:30",
            "0001-01-01T00:00:00Z",
        ] {
            let t = Time::parse(text).unwrap();
            assert_eq!(t.to_string(), text);
        }
    }

    #[test]
    fn trims_trailing_zeros_like_go() {
        let t = Time::parse("2024-03-01T10:20:30.120000000Z").unwrap();
        assert_eq!(t.to_string(), "2024-03-01T10:20:30.12Z");
    }

    #[test]
    fn rejects_bad_text() {
        for text in [
            "",
            "2024-03-01",
            "2024-13-01T00:00:00Z",
            "2024-03-01T10:20:30",
            "x024-03-01T10:20:30Z",
        ] {
            assert!(Time::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn unix_seconds_respect_offset() {
        let a = Time::parse("1970-01-01T01:00:00+01:00").unwrap();
        assert_eq!(a.unix_seconds(), 0);
        assert!(Time::ZERO.is_zero());
        assert!(!a.is_zero());
    }

    #[test]
    fn now_is_utc() {
        let t = Time::now();
        assert_eq!(t.offset_seconds(), 0);
        assert!(t.to_string().ends_with('Z'));
    }
}
