//! Sprig's date functions (`now`, `date`, `dateInZone`, `toDate`,
//! `dateModify`, `ago`, `duration`, `durationRound`, `unixEpoch` …). Times
//! are Go `time.Time` values ([`gostd::time`], shown to templates by
//! [`gotmpl::time`]), formatted and parsed with Go reference layouts
//! (`2006-01-02T15:04:05Z07:00`) rather than strftime.

use gostd::time::{parse_in_location, Duration, Location, Time, HOUR, MINUTE, SECOND};
use gotmpl::time::{time_arg, time_value, TIME_TY};
use gotmpl::{Func, FuncError, FuncMap, IntKind, Ty, Value};

/// Sprig's date argument: a `time.Time`, or Unix seconds as int, int64 or
/// int32; anything else means "now".
fn date_like(v: &Value) -> Time {
    match v {
        Value::Object(o) => match o.as_any().downcast_ref::<Time>() {
            Some(t) => t.clone(),
            None => Time::now(),
        },
        Value::Int(i, IntKind::Int | IntKind::Int64 | IntKind::Int32) => Time::from_unix(*i),
        _ => Time::now(),
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
    match Duration::parse(str_arg(args, 0)) {
        Ok(d) => Ok(time_value(t.add(d))),
        Err(e) if must => Err(FuncError::new(e.to_string())),
        Err(_) => Ok(time_value(t)),
    }
}

fn duration_round_text(v: &Value) -> String {
    let d: i64 = match v {
        Value::String(s) => Duration::parse(s).map_or(0, |d| d.0),
        Value::Int(i, IntKind::Int64) => *i,
        Value::Object(o) => match o.as_any().downcast_ref::<Time>() {
            Some(t) => Time::now().sub(t).0,
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

/// Registers Sprig's date and duration functions.
pub(crate) fn register(m: &mut FuncMap) {
    m.insert("now", Func::new(&[], |_, _| Ok(time_value(Time::now()))));
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
                Value::Int(i, IntKind::Int | IntKind::Int64) => Time::from_unix(*i),
                Value::Object(o) => match o.as_any().downcast_ref::<Time>() {
                    Some(t) => t.clone(),
                    None => Time::now(),
                },
                _ => Time::now(),
            };
            let d = Time::now().sub(&t).round(Duration(SECOND as i64));
            Ok(Value::string(d.to_string()))
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
            Ok(Value::string(
                Duration(n.wrapping_mul(SECOND as i64)).to_string(),
            ))
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
                .unwrap_or_else(|_| Time::zero());
            Ok(time_value(t))
        }),
    );
    m.insert(
        "mustToDate",
        Func::new(&[Ty::String, Ty::String], |_, args| {
            parse_in_location(str_arg(&args, 0), str_arg(&args, 1), Location::Local)
                .map(time_value)
                .map_err(|e| FuncError::new(e.to_string()))
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

    const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

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
    fn times_print_and_answer_methods_like_go() {
        let v = time_value(parse_in_location("2006-01-02", "2021-03-04", Location::Local).unwrap());
        let Value::Object(o) = v else { panic!() };
        assert_eq!(
            o.format_sharp_v(),
            "time.Date(2021, time.March, 4, 0, 0, 0, 0, time.Local)"
        );
        assert_eq!(o.format_v(), "2021-03-04 00:00:00 +0000 UTC");
        let year = (o.method("Year").unwrap().imp)(&mut CallCtx::detached(), vec![]).unwrap();
        assert!(matches!(year, Value::Int(2021, _)));
    }
}
