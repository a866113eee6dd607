//! Go's `time.Time`, `time.Duration`, `time.Month` and `time.Weekday` as
//! template values: what Go's reflection shows a template of them, their
//! exported methods (`.Year`, `.Format`, `.Add`, `.Seconds` …) and how they
//! print. The time arithmetic itself is [`gostd::time`]'s; Sprig's date
//! functions and `fromToml` hand these values to templates.

use std::any::Any;

use gostd::time::{Duration, Location, Time, LONG_DAYS, LONG_MONTHS};

use crate::value::{Func, FuncError, IntKind, Kind, Object, Ty, Value};

/// A `time.Time` value.
pub fn time_value(t: Time) -> Value {
    Value::object(t)
}

/// A Go named integer type seen by templates (`time.Month`,
/// `time.Weekday`, `time.Duration`): prints through its `String` method.
#[derive(Debug, Clone)]
pub(crate) struct NamedInt {
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

/// A `time.Duration` value.
pub(crate) fn duration_value(d: i64) -> Value {
    Value::object(NamedInt {
        type_name: "time.Duration",
        value: d,
        text: Duration(d).to_string(),
    })
}

/// The `time.Time` argument of a function or method declared with one.
pub fn time_arg(v: &Value) -> Result<Time, FuncError> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Time>().cloned().ok_or_else(|| {
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

/// The `time.Duration` argument of a function or method declared with one.
pub(crate) fn duration_arg(v: &Value) -> Result<i64, FuncError> {
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

impl Object for Time {
    fn type_name(&self) -> String {
        "time.Time".into()
    }

    fn method(&self, name: &str) -> Option<Func> {
        let t = self.clone();
        match name {
            "String" => method0(move || Value::string(t.to_string())),
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
            "IsZero" => method0(move || Value::Bool(t.is_zero())),
            "UTC" => method0(move || time_value(t.in_loc(Location::Utc))),
            "Local" => method0(move || time_value(t.in_loc(Location::Local))),
            "Format" => Some(Func::new(&[Ty::String], move |_, args| {
                let layout = args.first().and_then(|a| a.as_str()).unwrap_or("");
                Ok(Value::string(t.format(layout)))
            })),
            "Add" => Some(Func::new(&[Ty::Any], move |_, args| {
                let d = duration_arg(args.first().unwrap_or(&Value::Nil))?;
                Ok(time_value(t.add(Duration(d))))
            })),
            "Sub" => Some(Func::new(&[TIME_TY], move |_, args| {
                let o = time_arg(args.first().unwrap_or(&Value::Nil))?;
                Ok(duration_value(t.sub(&o).0))
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
                    Ok(time_value(t.add_date(n(0), n(1), n(2))))
                },
            )),
            _ => None,
        }
    }

    fn format_v(&self) -> String {
        self.to_string()
    }

    fn format_sharp_v(&self) -> String {
        self.go_string()
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
