//! Output in Helm's formats: uitable-style tables, Go's time layouts, the status
//! text of `helm status`/`helm install`, and JSON/YAML encoded like Helm's
//! `output.EncodeJSON`/`EncodeYAML`.

use std::fmt::Write as _;

use release::{Release, Time};
use serde_json::Value;

/// A table as `gosuri/uitable` prints it for Helm: every cell padded to its column's
/// width, cells joined by a tab, one line per row, a final newline.
pub(super) fn table(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            if i >= widths.len() {
                widths.push(w);
            } else if w > widths[i] {
                widths[i] = w;
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = widths[i]))
            .collect();
        out.push_str(&cells.join("\t"));
        out.push('\n');
    }
    out
}

/// Go's `time.Time.String()` for a record time: `2006-01-02 15:04:05.999999999 -0700 MST`.
pub(super) fn go_time(t: &Time) -> String {
    let rfc = t.to_string();
    // `Time` displays as RFC 3339 with Go's trimmed nanoseconds; reshape it.
    let (date, rest) = rfc.split_once('T').unwrap_or((rfc.as_str(), ""));
    let clock_end = rest.find(['Z', '+', '-']).unwrap_or(rest.len());
    let clock = &rest[..clock_end];
    let off = t.offset_seconds();
    let zone = if off == 0 {
        "+0000 UTC".to_string()
    } else {
        let sign = if off < 0 { '-' } else { '+' };
        let abs = off.unsigned_abs();
        let hhmm = format!("{sign}{:02}{:02}", abs / 3600, (abs / 60) % 60);
        format!("{hhmm} {hhmm}")
    };
    format!("{date} {clock} {zone}")
}

/// Go's `time.ANSIC` layout (`Mon Jan _2 15:04:05 2006`), in the time's own offset.
pub(super) fn ansic(t: &Time) -> String {
    let offset =
        jiff::tz::Offset::from_seconds(t.offset_seconds()).unwrap_or(jiff::tz::Offset::UTC);
    let zoned = t.to_timestamp().to_zoned(jiff::tz::TimeZone::fixed(offset));
    zoned.strftime("%a %b %e %H:%M:%S %Y").to_string()
}

/// `json.NewEncoder(out).Encode(v)`: compact, HTML characters escaped, a newline.
pub(super) fn json(v: &Value) -> String {
    let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    // `<`, `>` and `&` only occur inside JSON strings, where Go escapes them.
    let mut out = text
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    out.push('\n');
    out
}

/// `sigs.k8s.io/yaml.Marshal(v)`, ending in a newline.
pub(super) fn yaml(v: &Value) -> anyhow::Result<String> {
    let mut s =
        gocodec::yaml::json_to_yaml(v).map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
    s.push('\n');
    Ok(s)
}

/// `name-version` of the record's chart, or Helm's `MISSING`.
pub(super) fn chart_name(rel: &Release) -> String {
    match rel.chart.as_ref().and_then(|c| c.metadata.as_ref()) {
        Some(m) => format!("{}-{}", m.name, m.version),
        None => "MISSING".into(),
    }
}

/// The chart's appVersion, or Helm's `MISSING`.
pub(super) fn app_version(rel: &Release) -> String {
    match rel.chart.as_ref().and_then(|c| c.metadata.as_ref()) {
        Some(m) => m.app_version.clone(),
        None => "MISSING".into(),
    }
}

/// The text `helm status` prints (and install/upgrade after their first line). With
/// `dry_run`, hooks and the manifest follow, as Helm prints them for a dry run.
pub(super) fn status_text(rel: &Release, dry_run: bool) -> String {
    let mut out = String::new();
    let info = rel.info.clone().unwrap_or_default();
    let _ = writeln!(out, "NAME: {}", rel.name);
    if let Some(t) = info.last_deployed.as_ref().filter(|t| !t.is_zero()) {
        let _ = writeln!(out, "LAST DEPLOYED: {}", ansic(t));
    }
    let _ = writeln!(out, "NAMESPACE: {}", rel.namespace);
    let _ = writeln!(out, "STATUS: {}", rel.status());
    let _ = writeln!(out, "REVISION: {}", rel.version);
    let _ = writeln!(out, "DESCRIPTION: {}", info.description);
    let tests: Vec<_> = rel
        .hooks
        .iter()
        .filter(|h| h.events.iter().any(|e| e == "test"))
        .collect();
    if tests.is_empty() {
        out.push_str("TEST SUITE: None\n");
    } else {
        for h in tests {
            let Some(started) = h.last_run.started_at.as_ref().filter(|t| !t.is_zero()) else {
                continue;
            };
            let completed = h
                .last_run
                .completed_at
                .as_ref()
                .map(ansic)
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "TEST SUITE:     {}\nLast Started:   {}\nLast Completed: {}\nPhase:          {}",
                h.name,
                ansic(started),
                completed,
                h.last_run.phase
            );
        }
    }
    if dry_run {
        out.push_str("HOOKS:\n");
        for h in &rel.hooks {
            let _ = writeln!(out, "---\n# Source: {}\n{}", h.path, h.manifest);
        }
        let _ = writeln!(out, "MANIFEST:\n{}", rel.manifest);
    }
    if !info.notes.is_empty() {
        let _ = writeln!(out, "NOTES:\n{}", info.notes.trim());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_every_cell_and_join_with_tabs() {
        let t = table(&[
            vec!["NAME".into(), "REVISION".into()],
            vec!["hello-world".into(), "1".into()],
        ]);
        assert_eq!(t, "NAME       \tREVISION\nhello-world\t1       \n");
    }

    #[test]
    fn go_time_layouts() {
        let t = Time::parse("2024-03-05T07:08:09.5Z").expect("time");
        assert_eq!(go_time(&t), "2024-03-05 07:08:09.5 +0000 UTC");
        assert_eq!(ansic(&t), "Tue Mar  5 07:08:09 2024");
        let t = Time::parse("2024-03-15T07:08:09+02:00").expect("time");
        assert_eq!(go_time(&t), "2024-03-15 07:08:09 +0200 +0200");
        assert_eq!(ansic(&t), "Fri Mar 15 07:08:09 2024");
    }

    #[test]
    fn json_escapes_like_go() {
        assert_eq!(
            json(&serde_json::json!({"a": "<&>"})),
            "{\"a\":\"\\u003c\\u0026\\u003e\"}\n"
        );
    }

    #[test]
    fn yaml_like_sigs_yaml() {
        // go-yaml v2 quotes YAML 1.1 booleans such as `y`.
        let v = serde_json::json!({"b": 1, "a": {"x": "y", "z": "w"}});
        assert_eq!(yaml(&v).expect("yaml"), "a:\n  x: \"y\"\n  z: w\nb: 1\n");
        assert_eq!(yaml(&Value::Null).expect("yaml"), "null\n");
    }
}
