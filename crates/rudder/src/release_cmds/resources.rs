//! The `RESOURCES:` section of `helm status`: the release's live objects as the
//! server's tables, printed the way kubectl's table printer (which Helm uses)
//! prints them — one aligned block per object, headers only where the columns
//! change, a blank line after each kind.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// kubectl's tab writer: cells at least 6 wide, 3 spaces between columns.
const MIN_WIDTH: usize = 6;
const PADDING: usize = 3;

/// The section's body (what follows `RESOURCES:`), for `info.resources` read as
/// tables. Kinds come in key order: Helm walks a Go map, so its order varies
/// from run to run, and a sorted one is the order a reader can rely on.
pub(super) fn resources_text(resources: &Map<String, Value>) -> String {
    let mut printer = TablePrinter::default();
    let mut keys: Vec<&String> = resources.keys().collect();
    keys.sort();
    let mut out = String::new();
    for key in keys {
        let _ = writeln!(out, "==> {key}");
        let objects = match &resources[key] {
            Value::Array(items) => items.as_slice(),
            other => std::slice::from_ref(other),
        };
        for object in objects {
            printer.print(key, object, &mut out);
        }
        out.push('\n');
    }
    out
}

/// The state kubectl's human-readable printer keeps between objects: the last
/// column definitions, and whether a header was printed for them.
#[derive(Default)]
struct TablePrinter {
    last_columns: Option<Value>,
    printed_headers: bool,
}

impl TablePrinter {
    fn print(&mut self, key: &str, object: &Value, out: &mut String) {
        if object.get("kind").and_then(Value::as_str) != Some("Table") {
            let _ = writeln!(
                out,
                "failed to print object type {key}: the server did not answer with a Table"
            );
            return;
        }
        let mut columns = object
            .get("columnDefinitions")
            .cloned()
            .unwrap_or(Value::Null);
        let defined = columns.as_array().is_some_and(|c| !c.is_empty());
        let headers =
            !(self.printed_headers && (!defined || self.last_columns.as_ref() == Some(&columns)));
        if !defined {
            // A table without columns is laid out with the last ones printed.
            columns = self.last_columns.clone().unwrap_or(Value::Null);
        } else if self.last_columns.as_ref() != Some(&columns) {
            self.last_columns = Some(columns.clone());
            self.printed_headers = false;
        }
        let rows: &[Value] = object
            .get("rows")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        if rows.is_empty() {
            // A header over no rows is not printed at all.
            return;
        }
        self.printed_headers = true;
        let columns: &[Value] = columns.as_array().map_or(&[], Vec::as_slice);
        // Only priority-0 columns show without `-o wide`.
        let shown: Vec<usize> = (0..columns.len())
            .filter(|&i| {
                columns[i]
                    .get("priority")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    == 0
            })
            .collect();
        let mut lines: Vec<Vec<String>> = Vec::new();
        if headers {
            lines.push(
                shown
                    .iter()
                    .map(|&i| {
                        let name = columns[i].get("name").and_then(Value::as_str);
                        name.unwrap_or_default().to_uppercase()
                    })
                    .collect(),
            );
        }
        for row in rows {
            let cells: &[Value] = row
                .get("cells")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice);
            lines.push(
                shown
                    .iter()
                    .filter_map(|&i| cells.get(i).map(cell_text))
                    .collect(),
            );
        }
        tabwrite(&lines, out);
    }
}

/// A cell as kubectl prints it: strings cut at their first line break (marked
/// with `...`), everything else as Go's `fmt.Sprint` shows the decoded value.
fn cell_text(cell: &Value) -> String {
    let text = match cell {
        Value::Null => return String::new(),
        Value::String(s) => match s.find(['\n', '\r', '\u{c}']) {
            Some(at) => format!("{}...", &s[..at]),
            None => s.clone(),
        },
        other => go_sprint(other),
    };
    escape_terminal(&text)
}

fn go_sprint(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => gostd::strconv::format_float(f, b'g', -1, 64),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sprint).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", go_sprint(&m[k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// kubectl's `EscapeTerminal`: an escape character would drive the terminal,
/// so it is shown as `^[` (and a carriage return as `\r`).
fn escape_terminal(s: &str) -> String {
    s.replace('\u{1b}', "^[").replace('\r', "\\r")
}

/// Go's `text/tabwriter` over lines of cells (min width 6, padding 3, spaces):
/// every cell but a line's last is padded to its column's width.
fn tabwrite(lines: &[Vec<String>], out: &mut String) {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![MIN_WIDTH; columns];
    for line in lines {
        for (i, cell) in line.iter().enumerate().take(line.len().saturating_sub(1)) {
            widths[i] = widths[i].max(cell.chars().count() + PADDING);
        }
    }
    for line in lines {
        for (i, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < line.len() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(cols: &[(&str, i64)], rows: &[Vec<Value>]) -> Value {
        json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "columnDefinitions": cols.iter()
                .map(|(n, p)| json!({"name": n, "type": "string", "priority": p}))
                .collect::<Vec<_>>(),
            "rows": rows.iter().map(|c| json!({"cells": c})).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn each_object_is_aligned_alone_and_repeated_headers_are_left_out() {
        let cols = [("Name", 0), ("Ready", 0), ("Age", 0), ("Images", 1)];
        let a = table(
            &cols,
            &[vec![json!("a"), json!("1/1"), json!("5s"), json!("x")]],
        );
        let b = table(
            &cols,
            &[vec![
                json!("a-much-longer-name"),
                json!("0/1"),
                json!("5s"),
                json!("x"),
            ]],
        );
        let svc = table(
            &[("Name", 0), ("Type", 0)],
            &[vec![json!("s"), json!("ClusterIP")]],
        );
        let none = table(&[("Name", 0), ("Ready", 0)], &[]);
        let resources = json!({
            "v1/Service": [svc],
            "v1/Deployment": [a, b],
            "v1/Pod(related)": [none],
        });
        let text = resources_text(resources.as_object().expect("an object"));
        assert_eq!(
            text,
            "==> v1/Deployment\n\
             NAME   READY   AGE\n\
             a      1/1     5s\n\
             a-much-longer-name   0/1   5s\n\
             \n\
             ==> v1/Pod(related)\n\
             \n\
             ==> v1/Service\n\
             NAME   TYPE\n\
             s      ClusterIP\n\
             \n"
        );
    }

    #[test]
    fn cells_print_as_go_prints_them() {
        assert_eq!(cell_text(&json!(3)), "3");
        assert_eq!(cell_text(&json!(0.5)), "0.5");
        assert_eq!(cell_text(&json!(1e21)), "1e+21");
        assert_eq!(cell_text(&json!(true)), "true");
        assert_eq!(cell_text(&json!(null)), "");
        assert_eq!(cell_text(&json!("two\nlines")), "two...");
        assert_eq!(cell_text(&json!("esc\u{1b}[0m")), "esc^[[0m");
        assert_eq!(cell_text(&json!(["a", "b"])), "[a b]");
    }
}
