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

/// `json.NewEncoder(out).Encode(v)`: compact, HTML characters and the two line
/// separators escaped, a newline. Structs keep their fields' order, as Go's do; maps
/// (`Value` objects) print sorted, as Go's do.
pub(super) fn json(v: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    // These characters only occur inside JSON strings, where Go escapes them.
    let mut out = text
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
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

/// What Helm's status printer shows beyond the status lines.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sections {
    /// `CHART`, `VERSION` and `APP_VERSION` after `REVISION` (`helm get all`).
    pub metadata: bool,
    /// The user's values and the computed values, then hooks and manifest
    /// (`helm get all`).
    pub debug: bool,
    /// Hooks and manifest, as Helm prints them for a dry run.
    pub dry_run: bool,
}

/// The text `helm status` prints (and install/upgrade after their first line). With
/// `dry_run`, hooks and the manifest follow, as Helm prints them for a dry run.
pub(super) fn status_text(rel: &Release, dry_run: bool) -> String {
    let sections = Sections {
        dry_run,
        ..Sections::default()
    };
    // Without `debug` there are no values to encode, so nothing can fail.
    status_text_with(rel, sections).unwrap_or_default()
}

/// Helm's status printer (`statusPrinter.WriteTable`) with the sections asked for.
pub(super) fn status_text_with(rel: &Release, sections: Sections) -> anyhow::Result<String> {
    let mut out = String::new();
    let info = rel.info.clone().unwrap_or_default();
    let _ = writeln!(out, "NAME: {}", rel.name);
    if let Some(t) = info.last_deployed.as_ref().filter(|t| !t.is_zero()) {
        let _ = writeln!(out, "LAST DEPLOYED: {}", ansic(t));
    }
    let _ = writeln!(out, "NAMESPACE: {}", rel.namespace);
    let _ = writeln!(out, "STATUS: {}", rel.status());
    let _ = writeln!(out, "REVISION: {}", rel.version);
    if sections.metadata {
        let meta = rel
            .chart
            .as_ref()
            .and_then(|c| c.metadata.clone())
            .unwrap_or_default();
        let _ = writeln!(out, "CHART: {}", meta.name);
        let _ = writeln!(out, "VERSION: {}", meta.version);
        let _ = writeln!(out, "APP_VERSION: {}", meta.app_version);
    }
    let _ = writeln!(out, "DESCRIPTION: {}", info.description);
    if !info.resources.is_empty() {
        let body = super::resources::resources_text(&info.resources);
        let _ = writeln!(out, "RESOURCES:\n{body}");
    }
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
    if sections.debug {
        let user = action::release_values(rel, false);
        let computed = action::release_values(rel, true);
        let _ = writeln!(out, "USER-SUPPLIED VALUES:\n{}", yaml(&user)?);
        let _ = writeln!(out, "COMPUTED VALUES:\n{}", yaml(&computed)?);
    }
    if sections.dry_run || sections.debug {
        out.push_str("HOOKS:\n");
        out.push_str(&hooks_text(rel));
        let _ = writeln!(out, "MANIFEST:\n{}", rel.manifest);
    }
    if !info.notes.is_empty() {
        let _ = writeln!(out, "NOTES:\n{}", info.notes.trim());
    }
    Ok(out)
}

/// The release's hooks as `helm get hooks` prints them, in the record's order.
pub(super) fn hooks_text(rel: &Release) -> String {
    let mut out = String::new();
    for h in &rel.hooks {
        let _ = writeln!(out, "---\n# Source: {}\n{}", h.path, h.manifest);
    }
    out
}

/// Go's `time.RFC3339` layout (`2006-01-02T15:04:05Z07:00`), in the time's own offset;
/// Go's zero time when there is none.
pub(super) fn rfc3339(t: Option<&Time>) -> String {
    let Some(t) = t.filter(|t| !t.is_zero()) else {
        return "0001-01-01T00:00:00Z".into();
    };
    let off = t.offset_seconds();
    let offset = jiff::tz::Offset::from_seconds(off).unwrap_or(jiff::tz::Offset::UTC);
    let zoned = t.to_timestamp().to_zoned(jiff::tz::TimeZone::fixed(offset));
    let clock = zoned.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    if off == 0 {
        format!("{clock}Z")
    } else {
        let sign = if off < 0 { '-' } else { '+' };
        let abs = off.unsigned_abs();
        format!("{clock}{sign}{:02}:{:02}", abs / 3600, (abs / 60) % 60)
    }
}

/// `k8s.io/apimachinery/pkg/labels.Set.String()`: `key=value` pairs, sorted as
/// whole strings, joined by commas.
pub(super) fn label_set(labels: &std::collections::BTreeMap<String, String>) -> String {
    let mut pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    pairs.join(",")
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
    fn rfc3339_like_go() {
        let t = Time::parse("2024-03-05T07:08:09.5Z").expect("time");
        assert_eq!(rfc3339(Some(&t)), "2024-03-05T07:08:09Z");
        let t = Time::parse("2024-03-15T07:08:09.25-05:30").expect("time");
        assert_eq!(rfc3339(Some(&t)), "2024-03-15T07:08:09-05:30");
        assert_eq!(rfc3339(None), "0001-01-01T00:00:00Z");
    }

    #[test]
    fn label_sets_sort_whole_pairs() {
        // `a.b=…` sorts before `a=…`: Go sorts the joined pairs, not the keys.
        let labels = [("a", "1"), ("a.b", "2"), ("owner", "helm")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into_iter()
            .collect();
        assert_eq!(label_set(&labels), "a.b=2,a=1,owner=helm");
        assert_eq!(label_set(&Default::default()), "");
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
