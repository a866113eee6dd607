//! Sprig's JSON functions beyond Helm's own: `toPrettyJson`, `toRawJson`,
//! their `must` forms and `mustFromJson`, over [`gocodec::json`] (Go's
//! `encoding/json`). Helm replaces Sprig's `toJson`, `mustToJson` and
//! `fromJson` with its own, so those live with Helm's functions in `chart`.

use gocodec::json::{self, Target};
use gotmpl::{Func, FuncError, FuncMap, Ty, Value};

fn arg(args: &[Value]) -> &Value {
    args.first().unwrap_or(&Value::Nil)
}

/// Registers Sprig's JSON functions.
pub(crate) fn register(m: &mut FuncMap) {
    const ANY: &[Ty] = &[Ty::Any];
    const S: &str = "string";
    const S_ERR: &str = "(string, error)";

    m.insert(
        "toPrettyJson",
        Func::pure(ANY, S, |a| {
            Ok(Value::string(
                json::to_pretty_json(arg(a)).unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "mustToPrettyJson",
        Func::pure(ANY, S_ERR, |a| {
            json::to_pretty_json(arg(a))
                .map(Value::string)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    // Sprig's toRawJson panics on failure, so it fails the render too.
    m.insert(
        "toRawJson",
        Func::pure(ANY, S, |a| {
            json::to_raw_json(arg(a))
                .map(Value::string)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert(
        "mustToRawJson",
        Func::pure(ANY, S_ERR, |a| {
            json::to_raw_json(arg(a))
                .map(Value::string)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert(
        "mustFromJson",
        Func::pure(&[Ty::String], "(interface {}, error)", |a| {
            json::parse(a.first().and_then(Value::as_str).unwrap_or(""), Target::Any)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    #[test]
    fn pretty_raw_and_must_forms() {
        assert_eq!(
            call("toPrettyJson", vec![Value::list(vec![])])
                .unwrap()
                .as_str(),
            Some("[]")
        );
        assert!(call("mustToPrettyJson", vec![Value::Float(f64::NAN)]).is_err());
        assert!(call("toRawJson", vec![Value::Float(f64::NAN)]).is_err());
        assert_eq!(
            call("toRawJson", vec![Value::str("<&>")]).unwrap().as_str(),
            Some("\"<&>\"")
        );
        assert!(call("mustFromJson", vec![Value::str("[")]).is_err());
    }
}
