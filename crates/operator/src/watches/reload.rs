//! Reloading a watch's chart when its files change (the `make run` loop: edit the
//! chart, the running operator picks it up and reconciles every CR of the watch).
//!
//! Polling, not file-system notifications: a chart is a few dozen small files, so
//! reading their sizes and modification times every couple of seconds costs next to
//! nothing, and polling sees every way a chart changes — editors that save by
//! renaming over the file, `git checkout`, a ConfigMap volume whose `..data`
//! symlink is swapped, network and overlay file systems where inotify is silent —
//! with one code path and no new dependency. A change is loaded once the files
//! have stopped changing for one interval, so a half-written edit is not loaded.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// How often a chart's files are looked at.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// A summary of a chart's files (names, sizes, modification times): changes when
/// any file is added, removed, resized or touched.
pub(crate) fn fingerprint(path: &Path) -> u64 {
    let mut entries: Vec<(PathBuf, u64, u128)> = Vec::new();
    collect(path, path, &mut entries, 0);
    entries.sort();
    let mut h = DefaultHasher::new();
    entries.hash(&mut h);
    h.finish()
}

/// Charts nest (subcharts, templates/), but not without bound.
const MAX_DEPTH: usize = 32;

fn collect(root: &Path, path: &Path, out: &mut Vec<(PathBuf, u64, u128)>, depth: usize) {
    // `metadata` follows symlinks, so a ConfigMap volume's files are seen.
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.is_dir() {
        if depth >= MAX_DEPTH {
            return;
        }
        let Ok(dir) = std::fs::read_dir(path) else {
            return;
        };
        for entry in dir.flatten() {
            collect(root, &entry.path(), out, depth + 1);
        }
        return;
    }
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let rel = path.strip_prefix(root).unwrap_or(path).to_path_buf();
    out.push((rel, meta.len(), modified));
}

/// Decides, one poll at a time, when a chart's files changed and settled.
#[derive(Debug)]
pub(crate) struct ChangeDetector {
    path: PathBuf,
    loaded: u64,
    pending: Option<u64>,
}

impl ChangeDetector {
    /// Starts from the files as they are now (the chart already loaded).
    pub(crate) fn new(path: &Path) -> ChangeDetector {
        ChangeDetector {
            path: path.to_path_buf(),
            loaded: fingerprint(path),
            pending: None,
        }
    }

    /// One poll: `true` when the files differ from the loaded chart and did not
    /// change since the previous poll (load the chart now).
    pub(crate) fn poll(&mut self) -> bool {
        self.observe(fingerprint(&self.path))
    }

    fn observe(&mut self, now: u64) -> bool {
        if now == self.loaded {
            self.pending = None;
            return false;
        }
        if self.pending == Some(now) {
            self.loaded = now;
            self.pending = None;
            return true;
        }
        self.pending = Some(now);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_reported_once_it_settled() {
        let dir = std::env::temp_dir().join(format!("rudder-reload-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("templates")).expect("dir");
        std::fs::write(dir.join("Chart.yaml"), "name: a\n").expect("write");
        let mut d = ChangeDetector::new(&dir);
        assert!(!d.poll(), "nothing changed");
        std::fs::write(dir.join("templates/cm.yaml"), "kind: ConfigMap\n").expect("write");
        assert!(!d.poll(), "changed, not settled yet");
        assert!(d.poll(), "settled: load it");
        assert!(!d.poll(), "loaded already");
        std::fs::write(dir.join("Chart.yaml"), "name: a\nversion: 2\n").expect("write");
        assert!(!d.poll());
        std::fs::write(dir.join("Chart.yaml"), "name: a\nversion: 3\n").expect("write");
        assert!(!d.poll(), "still changing");
        assert!(d.poll());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn detector_logic_without_files() {
        let mut d = ChangeDetector {
            path: PathBuf::new(),
            loaded: 1,
            pending: None,
        };
        assert!(!d.observe(2));
        assert!(!d.observe(3));
        assert!(d.observe(3));
        // Changed back to what is loaded before settling: nothing to do.
        assert!(!d.observe(4));
        assert!(!d.observe(3));
        assert!(!d.observe(3));
    }
}
