use super::*;

fn parse(layout: &str, value: &str) -> Time {
    parse_in_location(layout, value, Location::Utc).unwrap()
}

fn dur(nanos: i64) -> String {
    Duration(nanos).to_string()
}

const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

#[test]
fn parses_and_prints_like_go() {
    assert_eq!(
        parse("2006-01-02", "2021-03-04").to_string(),
        "2021-03-04 00:00:00 +0000 UTC"
    );
    let t = parse(RFC3339, "2021-03-04T05:06:07+02:00");
    assert_eq!(t.unix, 1614827167);
    assert_eq!(t.to_string(), "2021-03-04 05:06:07 +0200 +0200");
    assert_eq!(
        t.add(Duration(90 * 60 * 1_000_000_000)).to_string(),
        "2021-03-04 06:36:07 +0200 +0200"
    );
    assert_eq!(parse("Jan 2 2006", "Mar 4 2021").unix, 1614816000);
    assert_eq!(Time::zero().to_string(), "0001-01-01 00:00:00 +0000 UTC");
    let frac = parse("2006-01-02 15:04:05.000", "2021-03-04 05:06:07.120");
    assert_eq!(frac.nsec, 120_000_000);
    assert_eq!(frac.to_string(), "2021-03-04 05:06:07.12 +0000 UTC");
}

#[test]
fn parse_errors() {
    let e = parse_in_location("2006-01-02", "bogus", Location::Utc).unwrap_err();
    assert_eq!(
        e.to_string(),
        "parsing time \"bogus\" as \"2006-01-02\": cannot parse \"bogus\" as \"2006\""
    );
    let e = parse_in_location("2006-01-02", "2021-13-01", Location::Utc).unwrap_err();
    assert_eq!(
        e.to_string(),
        "parsing time \"2021-13-01\": month out of range"
    );
    let e = parse_in_location("2006-01-02", "2021-02-30", Location::Utc).unwrap_err();
    assert_eq!(
        e.to_string(),
        "parsing time \"2021-02-30\": day out of range"
    );
    let e = parse_in_location("2006", "2021x", Location::Utc).unwrap_err();
    assert_eq!(e.to_string(), "parsing time \"2021x\": extra text: \"x\"");
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
    assert_eq!(dur(0), "0s");
    assert_eq!(dur(3600 * 1_000_000_000), "1h0m0s");
    assert_eq!(dur(3_723_500_000_000), "1h2m3.5s");
    assert_eq!(dur(1500), "1.5µs");
    assert_eq!(dur(-1_500_000), "-1.5ms");
    assert_eq!(dur(12), "12ns");
    let from_std = |d| Duration::from_std(d).to_string();
    assert_eq!(
        from_std(std::time::Duration::from_millis(90_500)),
        "1m30.5s"
    );
    assert_eq!(
        from_std(std::time::Duration::MAX),
        "2562047h47m16.854775807s"
    );
    assert_eq!(Duration::parse("1h30m").unwrap().0, 5_400_000_000_000);
    assert_eq!(Duration::parse("-1.5s").unwrap().0, -1_500_000_000);
    // The forms settings and annotations use (operator reconcile periods,
    // `--timeout` flags).
    for (text, nanos) in [
        ("0", 0),
        ("+30s", 30_000_000_000),
        ("1.5h", 5_400_000_000_000),
        ("250ms", 250_000_000),
        ("1µs", 1_000),
        ("1us", 1_000),
        (".5s", 500_000_000),
    ] {
        assert_eq!(Duration::parse(text).unwrap().0, nanos, "{text}");
    }
    for bad in ["", "1d", ".s", "-", "10"] {
        assert!(Duration::parse(bad).is_err(), "{bad:?} must be refused");
    }
    assert_eq!(
        Duration::parse("bogus").unwrap_err().to_string(),
        "time: invalid duration \"bogus\""
    );
    assert_eq!(
        Duration::parse("1").unwrap_err().to_string(),
        "time: missing unit in duration \"1\""
    );
    assert_eq!(
        Duration::parse("1x").unwrap_err().to_string(),
        "time: unknown unit \"x\" in duration \"1x\""
    );
    assert_eq!(
        Duration(1_500_000_000).round(Duration(1_000_000_000)),
        Duration(2_000_000_000)
    );
    assert_eq!(
        Duration(-1_400_000_000).round(Duration(1_000_000_000)),
        Duration(-1_000_000_000)
    );
}

#[test]
fn parses_zones_and_layouts() {
    let l = |layout: &str, value: &str| {
        parse_in_location(layout, value, Location::Local)
            .map(|t| t.to_string())
            .unwrap_or_else(|e| e.to_string())
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
        Time::from_unix(1625000000)
            .in_loc(Location::load(zone).unwrap_or(Location::Utc))
            .format("2006-01-02 15:04 MST")
    };
    assert_eq!(z("Europe/London"), "2021-06-29 21:53 BST");
    assert_eq!(z("Asia/Kolkata"), "2021-06-30 02:23 IST");
    assert_eq!(z("America/Sao_Paulo"), "2021-06-29 17:53 -03");
    assert_eq!(z("utc"), "2021-06-29 20:53 UTC");
    // Go finds zones by file name: the spelling must match exactly.
    assert_eq!(z("europe/london"), "2021-06-29 20:53 UTC");
    assert_eq!(z("US/Pacific"), "2021-06-29 13:53 PDT");
    assert_eq!(z("Asia/Kathmandu"), "2021-06-30 02:38 +0545");
    assert_eq!(z("Local"), "2021-06-29 20:53 UTC");
    let v = parse_in_location("2006-01-02", "2021-03-04", Location::Local).unwrap();
    assert_eq!(
        v.go_string(),
        "time.Date(2021, time.March, 4, 0, 0, 0, 0, time.Local)"
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
            .to_string(),
        "2021-01-01 00:00:00 +0000 UTC"
    );
    assert!(Time::zero().format("éJanñ2006").starts_with("éJanñ0001"));
}
