//! Go's `*time.Location`: UTC, the local zone (`$TZ`, UTC when unset, as Go
//! resolves it), fixed offsets, and IANA zones from the database compiled into
//! the binary (jiff's bundled TZif data).

use std::sync::OnceLock;

use jiff::tz::TimeZone;

/// Where a time is displayed: Go's `*time.Location`.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Utc,
    /// Go's `time.Local`.
    Local,
    /// `time.FixedZone(name, offset)`, as parsing a numeric offset creates.
    Fixed(String, i32),
    Tz(TimeZone),
}

/// The IANA zone named exactly `name`. Go looks zone files up by path, so
/// the name is case-sensitive, while jiff's lookup ignores case: a zone is
/// only accepted under its own spelling.
fn iana_zone(name: &str) -> Option<TimeZone> {
    static DB: OnceLock<jiff::tz::TimeZoneDatabase> = OnceLock::new();
    let tz = DB
        .get_or_init(jiff::tz::TimeZoneDatabase::bundled)
        .get(name)
        .ok()?;
    (tz.iana_name() == Some(name)).then_some(tz)
}

fn local_tz() -> Option<&'static TimeZone> {
    static LOCAL: OnceLock<Option<TimeZone>> = OnceLock::new();
    LOCAL
        .get_or_init(|| {
            let tz = std::env::var("TZ").ok()?;
            let tz = tz.strip_prefix(':').unwrap_or(&tz);
            if tz.is_empty() || tz == "UTC" {
                return None;
            }
            iana_zone(tz)
        })
        .as_ref()
}

impl Location {
    /// Go's `time.LoadLocation`.
    pub fn load(name: &str) -> Option<Location> {
        match name {
            "" | "UTC" => Some(Location::Utc),
            "Local" => Some(Location::Local),
            _ => iana_zone(name).map(Location::Tz),
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
            Location::Tz(tz) => tz,
        };
        // jiff's instants span years -9999..=9999; beyond them the zone's
        // offset at the nearest end stands in.
        let at = jiff::Timestamp::from_second(unix).unwrap_or(if unix < 0 {
            jiff::Timestamp::MIN
        } else {
            jiff::Timestamp::MAX
        });
        let info = tz.to_offset_info(at);
        let secs = info.offset().seconds();
        // TZif data carries numeric abbreviations ("-03", "+0545") as Go
        // prints them; a zone without one still gets Go's numeric form.
        let name = match info.abbreviation() {
            "" => numeric_abbreviation(secs),
            a => a.to_string(),
        };
        (name, secs)
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
