//! Loading a chart from a directory or a `.tgz` archive into a [`Chart`],
//! as Helm v4's `pkg/chart/v2/loader` does: files are sorted into metadata,
//! values, schema, templates, other files and subcharts (from `charts/`,
//! directories and archives), `.helmignore` is honoured for directories, and
//! paths are `/`-separated and relative to the chart root.

pub mod budget;
pub mod ignore;

pub use budget::{Budget, TooLarge};

use crate::chartfile::{ChartfileError, Lock, Metadata, API_VERSION_V1, API_VERSION_V2};
use crate::values::Values;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// One file of a chart, with its path relative to the chart root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// `/`-separated path relative to the chart root, e.g. `templates/a.yaml`.
    pub name: String,
    /// The file's bytes, never changed once loaded: every release rendered
    /// from the chart (its templates' texts, its `.Files`, its CRDs) shares
    /// them rather than copying them.
    pub data: Arc<[u8]>,
}

impl File {
    /// The file's text: its bytes as UTF-8, invalid sequences replaced.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        utf8_lossy(&self.data)
    }
}

/// A loaded chart and, recursively, its subcharts.
///
/// Rendering only reads it (see [`crate::render`]): a chart loaded once
/// serves any number of releases, shared behind an `Arc`. File contents
/// are shared too, so that a clone copies names and metadata, not data.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// `Chart.yaml` (with `requirements.yaml` merged in for v1 charts).
    pub metadata: Metadata,
    /// `Chart.lock`, or `requirements.lock` for v1 charts.
    pub lock: Option<Lock>,
    /// Every file under `templates/`, in load order.
    pub templates: Vec<File>,
    /// The parsed `values.yaml` (empty when there is none).
    pub values: Values,
    /// The text of `values.yaml`, when present.
    pub raw_values: Option<String>,
    /// `values.schema.json`, when present (shared as file contents are).
    pub schema: Option<Arc<[u8]>>,
    /// Every other file (what `.Files` sees), including `crds/`, `.helmignore`,
    /// `charts/*.prov`, and `requirements.*` of v1 charts.
    pub files: Vec<File>,
    /// Subcharts found in `charts/`, sorted by directory/archive name.
    pub dependencies: Vec<Chart>,
}

/// Why a chart could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("Chart.yaml file is missing")]
    MissingChartYaml,
    #[error(transparent)]
    Chartfile(#[from] ChartfileError),
    #[error("cannot load values.yaml: {0}")]
    Values(String),
    #[error("{0}")]
    Archive(String),
    /// A subchart did not load; why is its `source()` (Helm's words, on one line with
    /// the cause once a caller words the chain).
    #[error("error unpacking subchart {name} in {parent}")]
    Subchart {
        name: String,
        parent: String,
        source: Box<LoadError>,
    },
    #[error(transparent)]
    Ignore(#[from] ignore::IgnoreError),
    /// `Chart.yaml` names an API version other than v1 and v2. Helm v4
    /// loads v3 charts (experimental) but refuses to render or install
    /// them; any other version it cannot load at all.
    #[error("{}", if .0 == "v3" { "invalid chart apiVersion" } else { "unsupported chart version" })]
    ApiVersion(String),
    /// Decompressing an archive would pass the chart or file size budget.
    #[error(transparent)]
    TooLarge(#[from] budget::TooLarge),
}

impl Chart {
    /// The chart's name (`Chart.yaml` `name`; a release may know a
    /// subchart by its alias instead, see [`crate::render`]).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Whether this is a library chart, whose templates only supply helpers.
    pub fn is_library(&self) -> bool {
        self.metadata.is_library()
    }

    /// The files of this chart's `crds/` folder (`.yaml`, `.yml`, `.json`),
    /// not including subcharts'.
    pub fn crds(&self) -> impl Iterator<Item = &File> {
        self.files.iter().filter(|f| {
            f.name.starts_with("crds/") && {
                let ext = go_ext(&f.name).to_ascii_lowercase();
                ext == ".yaml" || ext == ".yml" || ext == ".json"
            }
        })
    }
}

/// A file read from a directory or archive, before it is sorted.
#[derive(Debug, Clone)]
pub struct BufferedFile {
    pub name: String,
    pub data: Vec<u8>,
}

/// Loads a chart from a directory or a `.tgz` file, within Helm's default
/// size [`Budget`].
pub fn load(path: impl AsRef<Path>) -> Result<Chart, LoadError> {
    load_with(path, &Budget::default())
}

/// [`load`] within the given size budget.
pub fn load_with(path: impl AsRef<Path>, budget: &Budget) -> Result<Chart, LoadError> {
    load_in(path.as_ref(), budget, &ValuesMode::Parse)
}

/// What the loader does with a `values.yaml` text.
pub(crate) enum ValuesMode<'a> {
    /// Parses it into [`Chart::values`] at once.
    Parse,
    /// Hands it (and each `values.schema.json`, and each file of a chart
    /// directory as it is read) on, leaving [`Chart::values`] empty: see
    /// [`crate::ahead`].
    Aside(&'a dyn LoadSink),
}

/// Takes the files a loader meets.
pub(crate) trait LoadSink {
    /// Each values file, in load order.
    fn values(&self, text: &str);
    /// Each schema file, in load order.
    fn schema(&self, data: &[u8]);
    /// Each file of a chart directory (by its path in the directory), as
    /// the directory is read and before any of it is loaded.
    fn read(&self, name: &str, data: &[u8]);
}

pub(crate) fn load_in(path: &Path, budget: &Budget, mode: &ValuesMode) -> Result<Chart, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if meta.is_dir() {
        load_dir_in(path, budget, mode)
    } else {
        let data = std::fs::read(path).map_err(|e| io_err(path, e))?;
        load_archive_in(&data, budget, mode)
    }
}

/// Whether the loader leaves out the entry `name` of a chart's `charts/`
/// folder (named `_…` or `.…`), as Helm's does.
pub(crate) fn skips_subchart(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.')
}

fn io_err(path: &Path, e: std::io::Error) -> LoadError {
    LoadError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(UTF8_BOM) {
        data.drain(..3);
    }
    data
}

/// Loads a chart from a directory, skipping what `.helmignore` ignores.
pub fn load_dir(dir: impl AsRef<Path>) -> Result<Chart, LoadError> {
    load_dir_with(dir, &Budget::default())
}

/// [`load_dir`] within the given size budget (a directory's files are held
/// to the per-file limit, as Helm holds them).
pub fn load_dir_with(dir: impl AsRef<Path>, budget: &Budget) -> Result<Chart, LoadError> {
    load_dir_in(dir.as_ref(), budget, &ValuesMode::Parse)
}

fn load_dir_in(dir: &Path, budget: &Budget, mode: &ValuesMode) -> Result<Chart, LoadError> {
    let mut rules = ignore::Rules::empty();
    let ifile = dir.join(".helmignore");
    if ifile.exists() {
        let text = std::fs::read(&ifile).map_err(|e| io_err(&ifile, e))?;
        rules = ignore::Rules::parse(&utf8_lossy(&text))?;
    }
    rules.add_defaults();
    let mut files = Vec::new();
    let sink = match mode {
        ValuesMode::Parse => None,
        ValuesMode::Aside(sink) => Some(*sink),
    };
    walk(dir, "", &rules, budget, sink, &mut files)?;
    load_files_in(files, budget, mode)
}

/// Walks like Go's `filepath.Walk` (entries sorted by name, symlinks
/// followed as Helm's `sympath.Walk` does).
fn walk(
    dir: &Path,
    rel: &str,
    rules: &ignore::Rules,
    budget: &Budget,
    sink: Option<&dyn LoadSink>,
    out: &mut Vec<BufferedFile>,
) -> Result<(), LoadError> {
    // The directory listing already says what each entry is; only
    // symlinks (which Helm follows) need a stat of their own.
    let mut entries: Vec<(String, std::path::PathBuf, Option<std::fs::FileType>)> =
        std::fs::read_dir(dir)
            .map_err(|e| io_err(dir, e))?
            .filter_map(|e| e.ok())
            .map(|e| {
                let kind = e.file_type().ok().filter(|t| !t.is_symlink());
                (e.file_name().to_string_lossy().into_owned(), e.path(), kind)
            })
            .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, path, kind) in entries {
        let n = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let meta = match kind.map_or_else(|| std::fs::metadata(&path).map(|m| m.file_type()), Ok) {
            Ok(m) => m,
            Err(e) => {
                // A broken symlink that .helmignore skips is fine.
                if rules.ignore(&n, false) {
                    continue;
                }
                return Err(io_err(&path, e));
            }
        };
        if meta.is_dir() {
            if rules.ignore(&n, true) {
                continue;
            }
            walk(&path, &n, rules, budget, sink, out)?;
            continue;
        }
        if rules.ignore(&n, false) {
            continue;
        }
        if !meta.is_file() {
            return Err(LoadError::Io {
                path: path.display().to_string(),
                message: format!(
                    "cannot load irregular file {} as it has file mode type bits set",
                    path.display()
                ),
            });
        }
        let data = read_within(&path, budget).map_err(|e| match e {
            DirReadError::TooLarge(t) => LoadError::TooLarge(t),
            DirReadError::Io(e) => LoadError::Io {
                path: n.clone(),
                message: format!("error reading {n}: {e}"),
            },
        })?;
        let file = BufferedFile {
            name: n,
            data: strip_bom(data),
        };
        if let Some(sink) = sink {
            sink.read(&file.name, &file.data);
        }
        out.push(file);
    }
    Ok(())
}

/// A directory's file, read only when its size is within the budget (and
/// no further than that, should it grow meanwhile).
fn read_within(path: &Path, budget: &Budget) -> Result<Vec<u8>, DirReadError> {
    let file = std::fs::File::open(path).map_err(DirReadError::Io)?;
    let size = file.metadata().map_err(DirReadError::Io)?.len();
    budget::Remaining::check_dir_file(budget, path, size).map_err(DirReadError::TooLarge)?;
    let mut data = Vec::with_capacity(size as usize);
    file.take(budget.max_file_size + 1)
        .read_to_end(&mut data)
        .map_err(DirReadError::Io)?;
    budget::Remaining::check_dir_file(budget, path, data.len() as u64)
        .map_err(DirReadError::TooLarge)?;
    Ok(data)
}

enum DirReadError {
    TooLarge(TooLarge),
    Io(std::io::Error),
}

/// Loads a chart from the bytes of a gzipped tar archive. The first path
/// component of every entry (the chart's folder) is dropped; `.helmignore`
/// is not applied, as in Helm.
pub fn load_archive(data: &[u8]) -> Result<Chart, LoadError> {
    load_archive_with(data, &Budget::default())
}

/// [`load_archive`] within the given size budget, which each archive
/// (the chart's and every subchart's) has to itself, as in Helm.
pub fn load_archive_with(data: &[u8], budget: &Budget) -> Result<Chart, LoadError> {
    load_archive_in(data, budget, &ValuesMode::Parse)
}

fn load_archive_in(data: &[u8], budget: &Budget, mode: &ValuesMode) -> Result<Chart, LoadError> {
    load_files_in(archive_files_with(data, budget)?, budget, mode)
}

/// Reads the files of a chart archive with Helm's path safety checks, within the
/// given size budget: no file is read past it.
pub(crate) fn archive_files_with(
    data: &[u8],
    budget: &Budget,
) -> Result<Vec<BufferedFile>, LoadError> {
    let tripped = std::rc::Rc::new(std::cell::Cell::new(false));
    let mut remaining = budget::Remaining::new(*budget);
    let arch = |m: String| {
        if tripped.get() {
            LoadError::TooLarge(TooLarge::Chart(budget.max_chart_size))
        } else {
            LoadError::Archive(m)
        }
    };
    let gz = remaining.stream(flate2::read::GzDecoder::new(data), tripped.clone());
    let mut tar = tar::Archive::new(gz);
    let mut files = Vec::new();
    let entries = tar.entries().map_err(|e| arch(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| arch(e.to_string()))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if kind.is_gnu_longname() || kind.is_gnu_longlink() {
            continue;
        }
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let delim = if raw_name.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = raw_name.split(delim).collect();
        let n = parts[1..].join("/");
        if n.starts_with('/') {
            return Err(arch("chart illegally contains absolute paths".into()));
        }
        let n = gostd::path::clean(&n);
        if n == "." {
            return Err(arch(format!(
                "chart illegally contains content outside the base directory: {raw_name:?}"
            )));
        }
        if n.starts_with("..") {
            return Err(arch("chart illegally references parent directory".into()));
        }
        let b = n.as_bytes();
        if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
            return Err(arch("chart contains illegally named files".into()));
        }
        if parts[0] == "Chart.yaml" {
            return Err(arch("chart yaml not in base directory".into()));
        }
        let declared = entry.header().size().unwrap_or(0);
        let buf = remaining
            .read_entry(&raw_name, declared, &mut entry)
            .map_err(|e| match e {
                budget::ReadError::TooLarge(t) => LoadError::TooLarge(t),
                budget::ReadError::Io(e) => arch(format!("{raw_name}: {e}")),
            })?;
        files.push(BufferedFile {
            name: n,
            data: strip_bom(buf),
        });
    }
    if files.is_empty() {
        return Err(arch("no files in chart archive".into()));
    }
    Ok(files)
}

/// Go's `filepath.Ext`.
pub(crate) fn go_ext(name: &str) -> &str {
    let base_start = name.rfind('/').map_or(0, |i| i + 1);
    match name[base_start..].rfind('.') {
        Some(i) => &name[base_start + i..],
        None => "",
    }
}

/// `String::from_utf8_lossy`, checking with `from_utf8` first: that is
/// several times faster on the (usual) valid input.
pub(crate) fn utf8_lossy(data: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(data) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(data),
    }
}

/// Sorts in-memory files into a chart (Helm's `LoadFiles`).
pub fn load_files(files: Vec<BufferedFile>) -> Result<Chart, LoadError> {
    load_files_with(files, &Budget::default())
}

/// [`load_files`], reading subchart archives within `budget`.
pub(crate) fn load_files_with(
    files: Vec<BufferedFile>,
    budget: &Budget,
) -> Result<Chart, LoadError> {
    load_files_in(files, budget, &ValuesMode::Parse)
}

fn load_files_in(
    files: Vec<BufferedFile>,
    budget: &Budget,
    mode: &ValuesMode,
) -> Result<Chart, LoadError> {
    let mut c = Chart::default();
    let mut have_metadata = false;
    for f in &files {
        if f.name == "Chart.yaml" {
            c.metadata = Metadata::parse(&utf8_lossy(&f.data))?;
            if !matches!(
                c.metadata.api_version.as_str(),
                API_VERSION_V1 | API_VERSION_V2
            ) {
                return Err(LoadError::ApiVersion(c.metadata.api_version.clone()));
            }
            have_metadata = true;
        }
    }
    let mut subcharts: std::collections::BTreeMap<String, Vec<BufferedFile>> = Default::default();
    for f in files {
        let text = || utf8_lossy(&f.data).into_owned();
        match f.name.as_str() {
            "Chart.yaml" => {}
            "Chart.lock" => c.lock = Some(Lock::parse(&text(), "Chart.lock")?),
            "values.yaml" => {
                let t = text();
                match mode {
                    ValuesMode::Parse => {
                        c.values = crate::values::read_values(&t).map_err(LoadError::Values)?
                    }
                    ValuesMode::Aside(work) => work.values(&t),
                }
                c.raw_values = Some(t);
            }
            "values.schema.json" => {
                if let ValuesMode::Aside(work) = mode {
                    work.schema(&f.data);
                }
                c.schema = Some(f.data.into())
            }
            "requirements.yaml" => {
                if !have_metadata {
                    have_metadata = true;
                }
                c.metadata.merge_yaml(&text(), "requirements.yaml")?;
                if c.metadata.api_version == API_VERSION_V1 {
                    c.files.push(File {
                        name: f.name,
                        data: f.data.into(),
                    });
                }
            }
            "requirements.lock" => {
                c.lock = Some(Lock::parse(&text(), "requirements.lock")?);
                have_metadata = true;
                if c.metadata.api_version == API_VERSION_V1 {
                    c.files.push(File {
                        name: f.name,
                        data: f.data.into(),
                    });
                }
            }
            n if n.starts_with("templates/") => c.templates.push(File {
                name: f.name,
                data: f.data.into(),
            }),
            n if n.starts_with("charts/") => {
                if go_ext(n) == ".prov" {
                    c.files.push(File {
                        name: f.name,
                        data: f.data.into(),
                    });
                    continue;
                }
                let fname = n["charts/".len()..].to_string();
                let cname = fname.split('/').next().unwrap_or_default().to_string();
                subcharts.entry(cname).or_default().push(BufferedFile {
                    name: fname,
                    data: f.data,
                });
            }
            _ => c.files.push(File {
                name: f.name,
                data: f.data.into(),
            }),
        }
    }
    if !have_metadata {
        return Err(LoadError::MissingChartYaml);
    }
    c.metadata.validate()?;

    for (n, files) in subcharts {
        if skips_subchart(&n) {
            continue;
        }
        let sub = if go_ext(&n) == ".tgz" {
            let file = &files[0];
            if file.name != n {
                return Err(LoadError::Archive(format!(
                    "error unpacking subchart tar in {}: expected {}, got {}",
                    c.name(),
                    n,
                    file.name
                )));
            }
            load_archive_in(&file.data, budget, mode)
        } else {
            let buff = files
                .into_iter()
                .filter_map(|f| {
                    f.name.split_once('/').map(|(_, rest)| BufferedFile {
                        name: rest.to_string(),
                        data: f.data,
                    })
                })
                .collect();
            load_files_in(buff, budget, mode)
        };
        match sub {
            Ok(s) => c.dependencies.push(s),
            Err(e) => {
                return Err(LoadError::Subchart {
                    name: n,
                    parent: c.name().to_string(),
                    source: Box::new(e),
                })
            }
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf(name: &str, data: &str) -> BufferedFile {
        BufferedFile {
            name: name.into(),
            data: data.as_bytes().to_vec(),
        }
    }

    #[test]
    fn sorts_files() {
        let c = load_files(vec![
            bf("values.yaml", "a: 1\n"),
            bf("Chart.yaml", "apiVersion: v2\nname: x\nversion: 1.0.0\n"),
            bf("templates/a.yaml", "x"),
            bf("crds/c.yaml", "c"),
            bf("crds/notes.txt", "n"),
            bf(
                "charts/sub/Chart.yaml",
                "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            ),
            bf("charts/sub/templates/b.yaml", "y"),
            bf("charts/_skip/Chart.yaml", "bad"),
            bf("files/f.txt", "f"),
        ])
        .unwrap();
        assert_eq!(c.templates.len(), 1);
        assert_eq!(c.values.get("a"), Some(&serde_json::json!(1)));
        assert_eq!(c.files.len(), 3);
        assert_eq!(c.crds().count(), 1);
        assert_eq!(c.dependencies.len(), 1);
        assert_eq!(c.dependencies[0].templates[0].name, "templates/b.yaml");
    }

    #[test]
    fn missing_chart_yaml() {
        let e = load_files(vec![bf("values.yaml", "")]).unwrap_err();
        assert_eq!(e.to_string(), "Chart.yaml file is missing");
    }

    #[test]
    fn subchart_errors_name_the_subchart() {
        let e = load_files(vec![
            bf("Chart.yaml", "apiVersion: v2\nname: x\nversion: 1.0.0\n"),
            bf("charts/sub/values.yaml", "a: 1"),
        ])
        .unwrap_err();
        assert_eq!(e.to_string(), "error unpacking subchart sub in x");
        assert_eq!(
            apierror::chain(&e),
            "error unpacking subchart sub in x: Chart.yaml file is missing"
        );
    }

    #[test]
    fn v1_charts_take_dependencies_from_requirements() {
        let c = load_files(vec![
            bf("Chart.yaml", "name: old\nversion: 1.0.0\n"),
            bf(
                "requirements.yaml",
                "dependencies:\n- name: sub\n  version: 0.1.0\n  condition: sub.on\n",
            ),
            bf(
                "requirements.lock",
                "dependencies:\n- name: sub\n  version: 0.1.0\ndigest: x\n",
            ),
            bf("charts/sub/Chart.yaml", "name: sub\nversion: 0.1.0\n"),
        ])
        .unwrap();
        assert_eq!(c.metadata.api_version, "v1");
        assert_eq!(c.metadata.deps().next().unwrap().condition, "sub.on");
        assert_eq!(c.lock.as_ref().unwrap().digest, "x");
        let names: Vec<&str> = c.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["requirements.yaml", "requirements.lock"]);
    }

    #[test]
    fn clean() {
        assert_eq!(gostd::path::clean("a/./b/../c"), "a/c");
        assert_eq!(gostd::path::clean(""), ".");
        assert_eq!(gostd::path::clean("../a"), "../a");
    }
}
