//! The columns Kubernetes' own printers show for the built-in kinds
//! (`kubectl get pods`, `-o wide`) and the cells computed from each object,
//! as kube-apiserver's table convertors print them; plus the helpers every
//! printer shares (column definitions, kubectl's AGE).

mod builtin;

use serde_json::{json, Value};

use crate::ResourceType;

/// Computes a row's cells from an object and the current time (Unix seconds).
pub type CellsOf = fn(&Value, u64) -> Vec<Value>;

/// A built-in kind's printer: its column definitions and its cells.
pub struct Columns {
    /// `columnDefinitions` of a `meta.k8s.io` Table.
    pub definitions: Vec<Value>,
    pub cells: CellsOf,
}

/// The printer of a built-in kind: Kubernetes' own columns, or NAME and AGE
/// for kinds it has none for.
pub fn builtin(rt: &ResourceType) -> Columns {
    builtin::printer(rt)
}

/// One column: name, type, format, priority (1 = only with `-o wide`),
/// description.
pub struct Col {
    pub name: &'static str,
    pub kind: &'static str,
    pub format: &'static str,
    pub priority: u8,
}

/// The NAME column every printer starts with.
pub const NAME: Col = Col {
    name: "Name",
    kind: "string",
    format: "name",
    priority: 0,
};

/// A column definition of a `meta.k8s.io` Table.
pub fn col_json(name: &str, kind: &str, format: &str, priority: u64, description: &str) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

/// A column's description, as Kubernetes' printers word the common ones.
pub fn describe(name: &str) -> String {
    match name {
        "Name" => "Name must be unique within a namespace. Cannot be updated.".into(),
        "Age" => "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
        other => format!("{other} of the object."),
    }
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` to Unix seconds.
pub fn parse_rfc3339(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &t[19..];
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o.get(1..3)?.parse::<i64>().ok()? * 3600
                + o.get(4..6)?.parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    // Howard Hinnant's days-from-civil.
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86400 + h * 3600 + mi * 60 + s - offset).ok()
}

/// Kubernetes' `duration.HumanDuration`, which kubectl shows as AGE.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The string at `ptr` in `obj`, or "".
pub fn s<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    obj.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(-5), "<invalid>");
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20Z"), Some(1_700_000_000));
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20.123456Z"),
            Some(1_700_000_000)
        );
        assert_eq!(
            parse_rfc3339("2023-11-14T23:13:20+01:00"),
            Some(1_700_000_000)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
