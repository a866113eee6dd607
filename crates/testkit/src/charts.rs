//! Charts written by a test: a directory built from `(path in the chart, text)` pairs, in
//! a temporary directory removed when the value is dropped, or under a directory the test
//! already owns.

use std::path::{Path, PathBuf};

/// A chart directory in a temporary directory of its own.
pub struct ChartDir {
    // Held for its Drop, which removes the chart.
    _root: tempfile::TempDir,
    path: PathBuf,
}

impl ChartDir {
    /// Writes chart `name` from `files` (`Chart.yaml`, `values.yaml`, `templates/x.yaml`,
    /// …) into a new temporary directory.
    pub fn new(name: &str, files: &[(&str, &str)]) -> ChartDir {
        let root = match tempfile::Builder::new().prefix("rudder-chart-").tempdir() {
            Ok(d) => d,
            Err(e) => panic!("cannot create a temporary directory for chart {name}: {e}"),
        };
        let path = write_chart(root.path(), name, files);
        ChartDir { _root: root, path }
    }

    /// The chart's directory (`<tmp>/<name>`).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes chart `name` from `files` into `dir/name` and returns that path; directories
/// inside the chart are created as needed.
pub fn write_chart(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let chart = dir.join(name);
    for (path, text) in files {
        let file = chart.join(path);
        if let Some(parent) = file.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                panic!("cannot create {}: {e}", parent.display());
            }
        }
        if let Err(e) = std::fs::write(&file, text) {
            panic!("cannot write {}: {e}", file.display());
        }
    }
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_land_under_the_chart_and_go_with_it() {
        let chart = ChartDir::new(
            "demo",
            &[
                ("Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n"),
                ("templates/nested/cm.yaml", "kind: ConfigMap\n"),
            ],
        );
        let path = chart.path().to_path_buf();
        assert!(path.ends_with("demo"));
        assert_eq!(
            std::fs::read_to_string(path.join("templates/nested/cm.yaml"))
                .ok()
                .as_deref(),
            Some("kind: ConfigMap\n")
        );
        drop(chart);
        assert!(!path.exists());
    }
}
