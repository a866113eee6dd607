//! Log lines as controller-runtime's zap logger writes them: the JSON encoder of
//! production mode (`{"level":"info","ts":"…","logger":"controller-runtime.metrics","msg":"…",…}`)
//! or the console encoder of `--zap-devel` (`<time>\tINFO\t<logger>\t<msg>\t{…}`), with
//! `--zap-time-encoding`'s clocks. Fields follow in the order they were given, as
//! zap writes a logger's context fields before the call's.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use super::LoggingError;

/// `--zap-encoder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoder {
    /// One JSON object per line (production mode's default).
    #[default]
    Json,
    /// Tab-separated human-readable lines (`--zap-devel`'s default).
    Console,
}

/// `--zap-time-encoding`; controller-runtime's default is RFC 3339.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeEncoding {
    /// Seconds since the epoch, as a float.
    Epoch,
    /// Milliseconds since the epoch, as a float.
    Millis,
    /// Nanoseconds since the epoch, as an integer.
    Nano,
    /// `2006-01-02T15:04:05.000Z0700`.
    Iso8601,
    /// `2006-01-02T15:04:05Z07:00`.
    #[default]
    Rfc3339,
    /// `2006-01-02T15:04:05.999999999Z07:00`.
    Rfc3339Nano,
}

impl FromStr for TimeEncoding {
    type Err = LoggingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "epoch" => TimeEncoding::Epoch,
            "millis" => TimeEncoding::Millis,
            "nano" => TimeEncoding::Nano,
            "iso8601" => TimeEncoding::Iso8601,
            "rfc3339" => TimeEncoding::Rfc3339,
            "rfc3339nano" => TimeEncoding::Rfc3339Nano,
            _ => return Err(LoggingError::TimeEncoding(s.to_string())),
        })
    }
}

/// How a time is written, in JSON (a number for the epoch clocks, else a string).
fn encode_time(t: jiff::Timestamp, enc: TimeEncoding) -> Value {
    let nanos = t.as_nanosecond();
    match enc {
        TimeEncoding::Epoch => json_f64(nanos as f64 / 1e9),
        TimeEncoding::Millis => json_f64(nanos as f64 / 1e6),
        TimeEncoding::Nano => Value::from(i64::try_from(nanos).unwrap_or(i64::MAX)),
        TimeEncoding::Iso8601 => Value::from(t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()),
        TimeEncoding::Rfc3339 => Value::from(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        TimeEncoding::Rfc3339Nano => {
            // Go's `.999999999` drops trailing zeros, and the dot with them.
            let base = t.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            let frac = format!("{:09}", t.subsec_nanosecond());
            let frac = frac.trim_end_matches('0');
            Value::from(if frac.is_empty() {
                format!("{base}Z")
            } else {
                format!("{base}.{frac}Z")
            })
        }
    }
}

fn json_f64(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// zap's level names: logr's `V(1)` is zap's debug, `V(2)` and beyond are
/// `Level(-2)`.
fn level_name(level: &Level, capital: bool) -> &'static str {
    match (*level, capital) {
        (Level::ERROR, false) => "error",
        (Level::WARN, false) => "warn",
        (Level::INFO, false) => "info",
        (Level::DEBUG, false) => "debug",
        (Level::TRACE, false) => "Level(-2)",
        (Level::ERROR, true) => "ERROR",
        (Level::WARN, true) => "WARN",
        (Level::INFO, true) => "INFO",
        (Level::DEBUG, true) => "DEBUG",
        (Level::TRACE, true) => "LEVEL(-2)",
    }
}

/// The `logger` of an event: its target, written as zap names loggers
/// (`controller-runtime.metrics`, `leaderelection`; a Rust module path with dots).
fn logger_name(target: &str) -> String {
    target.replace("::", ".")
}

/// An event's message and fields, in order.
#[derive(Default)]
struct Fields {
    message: String,
    pairs: Vec<(String, Value)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.pairs
                .push((field.name().to_string(), Value::from(value)));
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.pairs
            .push((field.name().to_string(), Value::from(value)));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.pairs
            .push((field.name().to_string(), Value::from(value)));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.pairs
            .push((field.name().to_string(), Value::from(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.pairs.push((field.name().to_string(), json_f64(value)));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // An error value reads with its causes, as every message words an error.
        self.pairs.push((
            field.name().to_string(),
            Value::from(apierror::chain(value)),
        ));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here too, formatted with Display.
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else if field.name() == "object" && text.starts_with('{') {
            // controller-runtime's `object` is a klog.KRef, which zap writes as
            // `{"name":…,"namespace":…}`.
            let value = serde_json::from_str(&text).unwrap_or(Value::from(text));
            self.pairs.push(("object".to_string(), value));
        } else {
            self.pairs
                .push((field.name().to_string(), Value::from(text)));
        }
    }
}

/// The event formatter.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZapFormat {
    pub encoder: Encoder,
    pub time: TimeEncoding,
}

impl ZapFormat {
    /// One line (without the newline) for an event at `now`.
    fn line(&self, now: jiff::Timestamp, level: &Level, target: &str, fields: Fields) -> String {
        let logger = logger_name(target);
        let ts = encode_time(now, self.time);
        let mut out = String::with_capacity(128);
        match self.encoder {
            Encoder::Json => {
                out.push_str("{\"level\":");
                push_json(&mut out, &Value::from(level_name(level, false)));
                out.push_str(",\"ts\":");
                push_json(&mut out, &ts);
                if !logger.is_empty() {
                    out.push_str(",\"logger\":");
                    push_json(&mut out, &Value::from(logger));
                }
                out.push_str(",\"msg\":");
                push_json(&mut out, &Value::from(fields.message));
                for (k, v) in &fields.pairs {
                    out.push(',');
                    push_json(&mut out, &Value::from(k.as_str()));
                    out.push(':');
                    push_json(&mut out, v);
                }
                out.push('}');
            }
            Encoder::Console => {
                match &ts {
                    Value::String(s) => out.push_str(s),
                    other => push_json(&mut out, other),
                }
                out.push('\t');
                out.push_str(level_name(level, true));
                if !logger.is_empty() {
                    out.push('\t');
                    out.push_str(&logger);
                }
                out.push('\t');
                out.push_str(&fields.message);
                if !fields.pairs.is_empty() {
                    // zap's console encoder writes the fields as spaced JSON.
                    out.push_str("\t{");
                    for (i, (k, v)) in fields.pairs.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        push_json(&mut out, &Value::from(k.as_str()));
                        out.push_str(": ");
                        push_json(&mut out, v);
                    }
                    out.push('}');
                }
            }
        }
        out
    }
}

fn push_json(out: &mut String, v: &Value) {
    // Serializing a Value into a String cannot fail.
    let _ = write!(out, "{v}");
}

impl<S, N> FormatEvent<S, N> for ZapFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let line = self.line(jiff::Timestamp::now(), meta.level(), meta.target(), fields);
        writeln!(writer, "{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(message: &str, pairs: &[(&str, Value)]) -> Fields {
        Fields {
            message: message.into(),
            pairs: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    fn at() -> jiff::Timestamp {
        "2024-05-01T10:00:00.120Z".parse().expect("timestamp")
    }

    #[test]
    fn json_lines_are_zaps_production_encoding() {
        let f = ZapFormat::default();
        let line = f.line(
            at(),
            &Level::INFO,
            "example.controller",
            fields(
                "Installed release",
                &[
                    ("namespace", "default".into()),
                    ("name", "memcached-sample".into()),
                    ("apiVersion", "cache.example.com/v1alpha1".into()),
                    ("kind", "Memcached".into()),
                    ("release", "memcached-sample".into()),
                ],
            ),
        );
        assert_eq!(
            line,
            r#"{"level":"info","ts":"2024-05-01T10:00:00Z","logger":"example.controller","msg":"Installed release","namespace":"default","name":"memcached-sample","apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","release":"memcached-sample"}"#
        );
        let err = f.line(
            at(),
            &Level::ERROR,
            "",
            fields("Reconciler error", &[("error", "boom \"x\"".into())]),
        );
        assert_eq!(
            err,
            r#"{"level":"error","ts":"2024-05-01T10:00:00Z","msg":"Reconciler error","error":"boom \"x\""}"#
        );
    }

    #[test]
    fn console_lines_are_zaps_development_encoding() {
        let f = ZapFormat {
            encoder: Encoder::Console,
            time: TimeEncoding::Rfc3339,
        };
        let line = f.line(
            at(),
            &Level::DEBUG,
            "operator::controller",
            fields(
                "Reconciling",
                &[("namespace", "ns".into()), ("n", 3.into())],
            ),
        );
        assert_eq!(
            line,
            "2024-05-01T10:00:00Z\tDEBUG\toperator.controller\tReconciling\t{\"namespace\": \"ns\", \"n\": 3}"
        );
        let bare = f.line(at(), &Level::INFO, "", fields("Starting", &[]));
        assert_eq!(bare, "2024-05-01T10:00:00Z\tINFO\tStarting");
    }

    #[test]
    fn time_encodings() {
        let t = at();
        assert_eq!(encode_time(t, TimeEncoding::Epoch), json!(1714557600.12));
        assert_eq!(encode_time(t, TimeEncoding::Millis), json!(1714557600120.0));
        assert_eq!(
            encode_time(t, TimeEncoding::Nano),
            json!(1714557600120000000i64)
        );
        assert_eq!(
            encode_time(t, TimeEncoding::Iso8601),
            json!("2024-05-01T10:00:00.120Z")
        );
        assert_eq!(
            encode_time(t, TimeEncoding::Rfc3339Nano),
            json!("2024-05-01T10:00:00.12Z")
        );
        let whole: jiff::Timestamp = "2024-05-01T10:00:00Z".parse().expect("ts");
        assert_eq!(
            encode_time(whole, TimeEncoding::Rfc3339Nano),
            json!("2024-05-01T10:00:00Z")
        );
        assert_eq!(
            "RFC3339".parse::<TimeEncoding>().ok(),
            Some(TimeEncoding::Rfc3339)
        );
        assert!("sundial".parse::<TimeEncoding>().is_err());
    }

    use serde_json::json;
}
