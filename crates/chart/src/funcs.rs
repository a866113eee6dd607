//! Helm's own template functions beside Sprig's (Helm's `funcs.go`): the
//! serialization functions `toYaml`, `mustToYaml`, `toYamlPretty`,
//! `fromYaml`, `fromYamlArray`, `toJson`, `mustToJson`, `fromJson`,
//! `fromJsonArray`, `toToml`, `mustToToml` and `fromToml`, and the methods of
//! `.Values`. Each keeps Helm's error handling: some swallow errors into
//! `""`, some put the message in an `Error` key or a one-item list, the
//! `must` forms fail the render. (`include`, `tpl`, `required` and `lookup`
//! need the render and are added by the engine.)

use gotmpl::{Func, FuncError, FuncMap, Map, Ty, Value};

use gocodec::json::{self, Target};
use gocodec::{toml, yaml};

fn arg(args: &[Value]) -> &Value {
    args.first().unwrap_or(&Value::Nil)
}

fn str_arg(args: &[Value]) -> &str {
    args.first().and_then(Value::as_str).unwrap_or("")
}

fn error_map(msg: String) -> Value {
    let mut m = Map::new();
    m.insert("Error".into(), Value::string(msg));
    Value::map(m)
}

/// BurntSushi's encoder panics on a nil interface (reflection on the zero
/// Value), which fails the render.
fn nil_toml(args: &[Value]) -> Result<(), FuncError> {
    if arg(args).is_nil() {
        return Err(FuncError::new(
            "reflect: call of reflect.Value.Type on zero Value",
        ));
    }
    Ok(())
}

/// Registers Helm's functions under their template names.
pub(crate) fn register(m: &mut FuncMap) {
    crate::values::methods::register(m);
    const ANY: &[Ty] = &[Ty::Any];
    const STR: &[Ty] = &[Ty::String];
    const S: &str = "string";
    const MAP: &str = "map[string]interface {}";
    const LIST: &str = "[]interface {}";

    // YAML (Helm).
    m.insert(
        "toYaml",
        Func::pure(ANY, S, |a| {
            Ok(Value::string(yaml::to_yaml(arg(a)).unwrap_or_default()))
        }),
    );
    m.insert(
        "mustToYaml",
        Func::pure(ANY, S, |a| {
            yaml::to_yaml(arg(a))
                .map(Value::string)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert(
        "toYamlPretty",
        Func::pure(ANY, S, |a| {
            Ok(Value::string(
                yaml::to_yaml_pretty(arg(a)).unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "fromYaml",
        Func::pure(STR, MAP, |a| {
            Ok(match yaml::parse_yaml_map(str_arg(a)) {
                Ok(m) => Value::map(m),
                Err(e) => error_map(e.to_string()),
            })
        }),
    );
    m.insert(
        "fromYamlArray",
        Func::pure(STR, LIST, |a| {
            Ok(match yaml::parse_yaml_list(str_arg(a)) {
                Ok(l) => Value::list(l),
                Err(e) => Value::list(vec![Value::string(e.to_string())]),
            })
        }),
    );

    // JSON (Helm's; Sprig adds toPrettyJson, toRawJson and mustFromJson).
    m.insert(
        "toJson",
        Func::pure(ANY, S, |a| {
            Ok(Value::string(json::to_json(arg(a)).unwrap_or_default()))
        }),
    );
    m.insert(
        "mustToJson",
        Func::pure(ANY, S, |a| {
            json::to_json(arg(a))
                .map(Value::string)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert(
        "fromJson",
        Func::pure(STR, MAP, |a| {
            let (v, err) = json::parse_partial(str_arg(a), Target::Map);
            let m = match v {
                Value::Map(m) => m,
                _ => gotmpl::MapRef::new(Map::new()),
            };
            if let Some(e) = err {
                m.insert("Error", Value::string(e.to_string()));
            }
            Ok(Value::Map(m))
        }),
    );
    m.insert(
        "fromJsonArray",
        Func::pure(STR, LIST, |a| {
            Ok(match json::parse(str_arg(a), Target::List) {
                Ok(Value::List(l)) => Value::List(l),
                Ok(_) => Value::list(Vec::new()),
                Err(e) => Value::list(vec![Value::string(e.to_string())]),
            })
        }),
    );

    // TOML (Helm).
    m.insert(
        "toToml",
        Func::pure(ANY, S, |a| {
            nil_toml(a)?;
            Ok(Value::string(match toml::to_toml(arg(a)) {
                Ok(s) => s,
                Err(e) => e.to_string(),
            }))
        }),
    );
    m.insert(
        "mustToToml",
        Func::pure(ANY, S, |a| {
            nil_toml(a)?;
            toml::to_toml(arg(a))
                .map(Value::string)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert(
        "fromToml",
        Func::pure(STR, MAP, |a| Ok(toml::parse_toml_value(str_arg(a)))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        let mut m = FuncMap::new();
        register(&mut m);
        let f = m
            .get(name)
            .unwrap_or_else(|| panic!("{name} not registered"));
        (f.imp)(&mut gotmpl::CallCtx::detached(), args)
    }

    fn s(v: Result<Value, FuncError>) -> String {
        match v {
            Ok(Value::String(s)) => s.to_string(),
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn from_yaml_reports_errors_in_the_map() {
        let v = call("fromYaml", vec![Value::str("a: [bad")]).unwrap();
        let m = v.as_map().unwrap();
        assert_eq!(
            m.get("Error")
                .and_then(|e| e.as_str().map(str::to_string))
                .as_deref(),
            Some("error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'")
        );
        let v = call("fromYaml", vec![Value::str("just a string")]).unwrap();
        assert_eq!(
            v.as_map().unwrap().get("Error").unwrap().as_str(),
            Some("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type map[string]interface {}")
        );
        let v = call("fromYamlArray", vec![Value::str("a: 1")]).unwrap();
        assert_eq!(
            v.as_list().unwrap().items()[0].as_str(),
            Some("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal object into Go value of type []interface {}")
        );
        let v = call("fromYamlArray", vec![Value::str("")]).unwrap();
        assert!(v.as_list().unwrap().is_empty());
    }

    #[test]
    fn json_functions() {
        assert_eq!(s(call("toJson", vec![Value::Float(f64::NAN)])), "");
        assert!(call("mustToJson", vec![Value::Float(f64::NAN)]).is_err());
        let v = call("fromJson", vec![Value::str("{bad")]).unwrap();
        assert_eq!(
            v.as_map().unwrap().get("Error").unwrap().as_str(),
            Some("invalid character 'b' looking for beginning of object key string")
        );
        let v = call("fromJson", vec![Value::str("null")]).unwrap();
        assert!(v.as_map().unwrap().is_empty());
        let v = call("fromJsonArray", vec![Value::str("{}")]).unwrap();
        assert_eq!(
            v.as_list().unwrap().items()[0].as_str(),
            Some("json: cannot unmarshal object into Go value of type []interface {}")
        );
    }

    #[test]
    fn yaml_and_toml_functions() {
        assert_eq!(s(call("toYaml", vec![Value::str("plain")])), "plain");
        assert_eq!(s(call("toYaml", vec![Value::Float(f64::INFINITY)])), "");
        assert!(call("mustToYaml", vec![Value::Float(f64::INFINITY)]).is_err());
        assert_eq!(
            s(call(
                "toToml",
                vec![Value::list(vec![Value::int(1), Value::int(2)])]
            )),
            "[1, 2]"
        );
        assert_eq!(s(call("mustToToml", vec![Value::str("x")])), "\"x\"");
        let v = call("fromToml", vec![Value::str("bad toml")]).unwrap();
        assert_eq!(
            v.as_map().unwrap().get("Error").unwrap().as_str(),
            Some("toml: line 1: expected '.' or '=', but got 't' instead")
        );
    }
}
