//! Step 1 of the pipeline, on two cores: loading the chart, parsing its
//! values files, compiling its schemas and parsing its templates, which
//! are most of a one-shot render. While this
//! thread reads a chart directory, another parses each template as it is
//! read, then each `values.yaml` as the loader meets it; then both threads
//! parse the templates left. Each `values.schema.json` is compiled on a
//! thread of its own, which the render waits for only at validation, once
//! the templates are rendered. The chart, the parses and every error are what
//! the plain way gives ([`load_with`], then a render): when loading fails,
//! the chart is loaded again the plain way, so that the error reported is
//! the first in load order; a template that does not parse is left for the
//! render to report, in the render's order.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::threads::{cores, spawn_deep, JobHandle};
use crate::loader::{
    load_in, load_with, skips_subchart, Budget, Chart, LoadError, LoadSink, ValuesMode,
};
use crate::schema;
use crate::values::prepare::{renders_template, subchart_path, template_name};
use crate::values::Values;

/// The steps of the start, in the order they were queued, shared by the
/// other thread and (once it has read the chart) this one.
struct Work {
    state: Mutex<Queue>,
    ready: Condvar,
    /// A values file was parsed (see [`Queue::values_done`]).
    values_ready: Condvar,
    /// Steps queued and not yet taken, readable without the lock.
    queued: AtomicUsize,
    /// What this thread knows of the directory read so far.
    read: Mutex<ReadSoFar>,
}

/// The charts of a directory met so far, and the templates queued as read.
#[derive(Default)]
struct ReadSoFar {
    /// By chart folder (`""`, `charts/a/`, `charts/a/charts/b/`): the
    /// chart's path in template names and whether it is a library chart.
    charts: HashMap<String, (String, bool)>,
    /// The names of the templates queued.
    queued: HashSet<String>,
    /// The texts queued, by [`gotmpl::ParseCache::key`]: a text met again
    /// (a library chart such as Bitnami's `common` under two subcharts)
    /// is not parsed again, as the render finds its parse under any name.
    texts: HashSet<u64>,
}

impl ReadSoFar {
    /// Whether `text` is new to the queue, which now has it.
    fn first_time(&mut self, text: &str) -> bool {
        self.texts.insert(gotmpl::ParseCache::key(text))
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<(usize, Job)>,
    sent: usize,
    closed: bool,
    /// Threads waiting for a step: a step queued wakes one only then
    /// (each wake is a system call, and the reader queues many).
    waiting: usize,
    /// Values files queued, and those parsed (by either thread), each by
    /// its place in the queue: the chart needs them all before the
    /// templates are done.
    values_sent: usize,
    values_done: Vec<(usize, ParsedValues)>,
    /// The other thread has stopped (a panic included): what it took
    /// will not come.
    helper_gone: bool,
}

/// A values file's text and what it parsed to.
type ParsedValues = (String, Result<Values, String>);

enum Job {
    Values(String),
    Template { name: String, text: String },
}

/// How long a thread out of steps looks for a new one before it sleeps.
const SPIN: std::time::Duration = std::time::Duration::from_micros(50);

impl LoadSink for Work {
    fn values(&self, text: &str) {
        self.push(Job::Values(text.to_owned()));
    }

    /// Compiled beside both threads: the render waits for it only once
    /// the templates are rendered (see [`schema::compile_beside`]).
    fn schema(&self, data: &[u8]) {
        schema::compile_beside(data);
    }

    /// Queues a template as soon as it is read, named as the render will
    /// name it. A directory lists `Chart.yaml` before `charts/` and
    /// `templates/`, so each chart's name is known before its templates and
    /// its subcharts'. A guess that turns out wrong costs a parse the render
    /// does not find, never a different result: the render looks its
    /// parses up by name and text.
    fn read(&self, name: &str, data: &[u8]) {
        let Some((folder, rest)) = chart_folder(name) else {
            return;
        };
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if rest == "Chart.yaml" {
            let Ok(md) = crate::chartfile::Metadata::parse(&crate::loader::utf8_lossy(data)) else {
                return;
            };
            let path = match parent_folder(folder) {
                None => md.name.clone(),
                Some(parent) => match read.charts.get(parent) {
                    Some((parent_path, _)) => subchart_path(parent_path, &md.name),
                    None => return,
                },
            };
            read.charts
                .insert(folder.to_string(), (path, md.is_library()));
        } else if rest.starts_with("templates/") {
            let Some((path, library)) = read.charts.get(folder) else {
                return;
            };
            if !renders_template(*library, rest) {
                return;
            }
            let name = template_name(path, rest);
            if read.queued.insert(name.clone()) {
                let text = crate::loader::utf8_lossy(data);
                if read.first_time(&text) {
                    self.push(Job::Template {
                        name,
                        text: text.into_owned(),
                    });
                }
            }
        }
    }
}

/// The chart folder a file of a chart directory is in (`""`, `charts/a/`,
/// `charts/a/charts/b/`) and its path within that chart; `None` inside a
/// `charts/` folder the loader skips (named `_…` or `.…`).
fn chart_folder(name: &str) -> Option<(&str, &str)> {
    let mut start = 0;
    loop {
        let rest = &name[start..];
        let Some((sub, _)) = rest
            .strip_prefix("charts/")
            .and_then(|after| after.split_once('/'))
        else {
            return Some((&name[..start], rest));
        };
        if skips_subchart(sub) {
            return None;
        }
        start += "charts/".len() + sub.len() + 1;
    }
}

/// The chart folder holding chart folder `folder`; `None` for the top one.
fn parent_folder(folder: &str) -> Option<&str> {
    let inner = folder.strip_suffix('/')?;
    let (parent, _) = inner.rsplit_once("charts/")?;
    Some(parent)
}

impl Work {
    fn new() -> Work {
        Work {
            state: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            values_ready: Condvar::new(),
            queued: AtomicUsize::new(0),
            read: Mutex::new(ReadSoFar::default()),
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a step. A values file goes before the templates queued: it
    /// is one long parse the render cannot start without, while the
    /// templates left at the end are shared by both threads.
    fn push(&self, job: Job) {
        let mut q = self.queue();
        self.queued.fetch_add(1, Ordering::Release);
        let at = q.sent;
        q.sent += 1;
        match job {
            Job::Values(_) => {
                q.values_sent += 1;
                q.jobs.push_front((at, job))
            }
            Job::Template { .. } => q.jobs.push_back((at, job)),
        }
        if q.waiting > 0 {
            self.ready.notify_one();
        }
    }

    /// Runs on the other thread: [`Work::run`], parsing templates into a
    /// cache of its own (a text that does not parse is left for the render
    /// to report), then says it has stopped, however it stops. Returns the
    /// cache, for this thread's ([`crate::engine::ParseHere::merge`]).
    fn run_on_other_thread(&self) -> gotmpl::ParseCache {
        struct Gone<'a>(&'a Work);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                self.0.queue().helper_gone = true;
                self.0.values_ready.notify_all();
            }
        }
        let _gone = Gone(self);
        let funcs = crate::engine::Engine::new().render_funcs();
        let mut parsed = gotmpl::ParseCache::new(crate::engine::PARSE_CACHE_BYTES);
        self.run(|name, text| {
            let _ = parsed.parse(name, text, &|n| funcs.contains(n));
        });
        parsed
    }

    /// No more steps are coming. The templates left are parsed longest
    /// first, so that the two threads finish close together rather than
    /// one waiting for the other's last long parse.
    fn close(&self) {
        let mut q = self.queue();
        q.closed = true;
        let size = |job: &Job| match job {
            Job::Values(_) => usize::MAX,
            Job::Template { text, .. } => text.len(),
        };
        q.jobs
            .make_contiguous()
            .sort_by_key(|(_, job)| std::cmp::Reverse(size(job)));
        drop(q);
        self.ready.notify_all();
    }

    /// The first step queued, if any, taken off the queue.
    fn take(&self, q: &mut Queue) -> Option<(usize, Job)> {
        let job = q.jobs.pop_front();
        if job.is_some() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        job
    }

    /// The next step, waiting for one while the queue is open.
    fn next(&self) -> Option<(usize, Job)> {
        let mut q = self.queue();
        let mut spun = false;
        loop {
            if let Some(job) = self.take(&mut q) {
                return Some(job);
            }
            if q.closed {
                return None;
            }
            if !spun {
                // The reader queues a template every few microseconds:
                // looking again for a moment beats a sleep and a wake-up
                // (a system call on each side) per template.
                drop(q);
                spun = true;
                let until = std::time::Instant::now() + SPIN;
                while std::time::Instant::now() < until && self.queued.load(Ordering::Acquire) == 0
                {
                    std::hint::spin_loop();
                }
                q = self.queue();
                continue;
            }
            q.waiting += 1;
            q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            q.waiting -= 1;
        }
    }

    /// Does steps until the queue is closed and empty; `template` parses
    /// a template the way this thread can.
    fn run(&self, mut template: impl FnMut(&str, &str)) {
        while let Some((at, job)) = self.next() {
            match job {
                Job::Values(text) => self.parse_values(at, text),
                Job::Template { name, text } => template(&name, &text),
            }
        }
    }

    fn parse_values(&self, at: usize, text: String) {
        let parsed = crate::values::parse_values(&text);
        self.queue().values_done.push((at, (text, parsed)));
        self.values_ready.notify_all();
    }

    /// Every values file of the chart, parsed, in the order the loader met
    /// them: the ones still queued are parsed here, the other thread's
    /// waited for (fewer when it stopped short), and queued templates are
    /// parsed here with `template` meanwhile rather than waiting. Only once
    /// the chart is read (every values file queued).
    fn values(&self, mut template: impl FnMut(&str, &str)) -> Vec<ParsedValues> {
        loop {
            let mut q = self.queue();
            if q.values_done.len() >= q.values_sent || q.helper_gone {
                let mut done = std::mem::take(&mut q.values_done);
                done.sort_by_key(|(at, _)| *at);
                return done.into_iter().map(|(_, v)| v).collect();
            }
            match self.take(&mut q) {
                Some((at, Job::Values(text))) => {
                    drop(q);
                    self.parse_values(at, text);
                }
                Some((_, Job::Template { name, text })) => {
                    drop(q);
                    template(&name, &text);
                }
                None => drop(self.values_ready.wait(q).unwrap_or_else(|e| e.into_inner())),
            }
        }
    }
}

/// The other thread and the work it shares. It reports what it parsed,
/// then sleeps until let go (`release` dropped) before it exits: a thread
/// woken by another may be queued on the waker's core, and would wait
/// there, its own core idle, while the waker went on exiting.
struct OtherThread {
    work: Arc<Work>,
    thread: JobHandle<()>,
    report: Receiver<gotmpl::ParseCache>,
    release: SyncSender<()>,
}

/// A loaded chart whose values may still be being parsed.
pub(crate) struct Loading {
    chart: Chart,
    other: Option<OtherThread>,
    path: PathBuf,
    budget: Budget,
}

/// Loads the chart at `path` (a directory or archive) as [`load_with`]
/// does, with its values files parsed, its schemas being compiled and then its
/// templates parsed on another thread as well as this one;
/// [`Loading::finish`] completes the work.
pub(crate) fn load(path: impl AsRef<Path>, budget: &Budget) -> Result<Loading, LoadError> {
    let path = path.as_ref();
    let plain = || {
        load_with(path, budget).map(|chart| Loading {
            chart,
            other: None,
            path: path.to_path_buf(),
            budget: *budget,
        })
    };
    if cores() < 2 {
        return plain();
    }
    let work = Arc::new(Work::new());
    let theirs = work.clone();
    let (tell, report) = sync_channel(1);
    let (release, released) = sync_channel::<()>(0);
    let Ok(thread) = spawn_deep("values", move || {
        let parsed = theirs.run_on_other_thread();
        if tell.send(parsed).is_ok() {
            let _ = released.recv();
        }
    }) else {
        return plain();
    };
    let other = OtherThread {
        work: work.clone(),
        thread,
        report,
        release,
    };
    let loaded = load_in(path, budget, &ValuesMode::Aside(&*work));
    match loaded {
        Ok(chart) => {
            let mut read =
                std::mem::take(&mut *work.read.lock().unwrap_or_else(|e| e.into_inner()));
            crate::engine::for_each_template(&chart, &mut |name, text| {
                if !read.queued.contains(name) && read.first_time(text) {
                    work.push(Job::Template {
                        name: name.to_string(),
                        text: text.to_string(),
                    })
                }
            });
            work.close();
            Ok(Loading {
                chart,
                other: Some(other),
                path: path.to_path_buf(),
                budget: *budget,
            })
        }
        Err(_) => {
            work.close();
            plain()
        }
    }
}

impl Loading {
    /// The chart, with empty values until [`Loading::finish`].
    #[cfg(test)]
    fn chart(&self) -> &Chart {
        &self.chart
    }

    /// The chart with its values, for a test: [`Loading::finish_with`]
    /// with nothing to stage.
    #[cfg(test)]
    fn finish(self) -> Result<Chart, LoadError> {
        self.finish_with(|chart| chart)
    }

    /// Completes the load: this thread takes its share of the steps still
    /// queued, then waits for the other thread's. The chart goes to
    /// `stage` as soon as its values are parsed, while the other thread
    /// goes on parsing templates: work that needs the chart but not its
    /// templates parsed (coalescing values, building the render's objects)
    /// is done beside that parse rather than after it. Every template is
    /// parsed into this thread's parse cache when this returns; a schema
    /// still compiling is waited for by the validation that needs it. When
    /// the chart cannot be completed this way, it is loaded again the
    /// plain way once the templates are done, so that a loading error is
    /// the plain one, and `stage` is not called then.
    pub(crate) fn finish_with<T>(self, stage: impl FnOnce(Chart) -> T) -> Result<T, LoadError> {
        let Loading {
            mut chart,
            other,
            path,
            budget,
        } = self;
        let Some(OtherThread {
            work,
            thread,
            report,
            release,
        }) = other
        else {
            return Ok(stage(chart));
        };
        let mut here = crate::engine::ParseHere::new();
        let mut parsed = work.values(|name, text| here.parse(name, text)).into_iter();
        let filled = fill(&mut chart, &mut parsed) && parsed.next().is_none();
        let staged = if filled { Ok(stage(chart)) } else { Err(stage) };
        work.run(|name, text| here.parse(name, text));
        match report.recv() {
            Ok(theirs) => here.merge(theirs),
            // It panicked: the panic goes on here.
            Err(_) => thread.join(),
        }
        drop(release);
        match staged {
            Ok(staged) => Ok(staged),
            Err(stage) => load_with(&path, &budget).map(stage),
        }
    }
}

/// Gives `c` and its subcharts their parsed values, in the order the
/// loader met them (each chart's own `values.yaml` before its subcharts');
/// false if one did not parse or the order does not match.
fn fill(c: &mut Chart, parsed: &mut impl Iterator<Item = ParsedValues>) -> bool {
    if let Some(raw) = &c.raw_values {
        match parsed.next() {
            Some((text, Ok(values))) if text == *raw => c.values = values,
            _ => return false,
        }
    }
    c.dependencies.iter_mut().all(|d| fill(d, parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    use testkit::ChartDir;

    const CHART: &[(&str, &str)] = &[
        ("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
        ("values.yaml", "a: 1\nsub:\n  b: 2\n"),
        ("templates/x.yaml", "x: {{ .Values.a }}\n"),
        (
            "charts/sub/Chart.yaml",
            "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
        ),
        ("charts/sub/values.yaml", "b: 3\nc: [1, 2]\n"),
        (
            "charts/other/Chart.yaml",
            "apiVersion: v2\nname: other\nversion: 1.0.0\n",
        ),
        ("charts/other/values.yaml", "b: 3\nc: [1, 2]\n"),
        ("charts/other/values.schema.json", r#"{"type": "object"}"#),
    ];

    /// The test chart with `changes` written over its files.
    fn chart_dir(changes: &[(&str, &str)]) -> ChartDir {
        let mut files: Vec<(&str, &str)> = CHART
            .iter()
            .filter(|(p, _)| !changes.iter().any(|(c, _)| c == p))
            .copied()
            .collect();
        files.extend_from_slice(changes);
        ChartDir::new("top", &files)
    }

    #[test]
    fn gives_the_chart_the_plain_loader_gives() {
        let d = chart_dir(&[]);
        let budget = Budget::default();
        let loading = load(d.path(), &budget).unwrap();
        assert!(loading.chart().values.is_empty());
        assert_eq!(loading.chart().dependencies.len(), 2);
        let aside = loading.finish().unwrap();
        let plain = load_with(d.path(), &budget).unwrap();
        assert_eq!(format!("{aside:?}"), format!("{plain:?}"));
        assert_eq!(aside.values["a"], serde_json::json!(1));
        assert_eq!(aside.dependencies[1].values["c"], serde_json::json!([1, 2]));
    }

    #[test]
    fn reports_the_first_error_in_load_order() {
        let budget = Budget::default();
        // A bad values file in the first subchart loaded (`other`), and a
        // bad Chart.yaml in the second: the plain loader stops at the first.
        let d = chart_dir(&[
            ("charts/other/values.yaml", "b: [\n"),
            ("charts/sub/Chart.yaml", "apiVersion: v2\nname: [\n"),
        ]);
        let plain = load_with(d.path(), &budget).unwrap_err();
        let text = apierror::chain(&plain);
        assert!(text.contains("values.yaml"), "{text}");
        let aside = load(d.path(), &budget)
            .and_then(Loading::finish)
            .unwrap_err();
        assert_eq!(aside, plain);
        // Only the values file is bad: the error comes from `finish`.
        let d = chart_dir(&[("charts/other/values.yaml", "b: [\n")]);
        let plain = load_with(d.path(), &budget).unwrap_err();
        let loading = load(d.path(), &budget).unwrap();
        assert_eq!(loading.finish().unwrap_err(), plain);
    }

    /// The test chart with `n` more templates, each defining and using a
    /// partial, and `broken` (if any) as one more.
    fn many_templates(n: usize, broken: Option<&str>) -> ChartDir {
        let texts: Vec<(String, String)> = (0..n)
            .map(|i| {
                (
                    format!("templates/t{i:02}.yaml"),
                    format!(
                        "{{{{- define \"p{i}\" }}}}v{i}: {{{{ .Values.a }}}}{{{{ end }}}}\nk{i}: {{{{ include \"p{i}\" . | quote }}}}\n"
                    ),
                )
            })
            .chain(broken.map(|b| ("templates/zz.yaml".to_string(), b.to_string())))
            .collect();
        let extra: Vec<(&str, &str)> = texts
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        chart_dir(&extra)
    }

    fn render(chart: Chart) -> Result<crate::render::RenderedFiles, String> {
        let opts = crate::render::RenderOptions::default();
        crate::render::render_templates(&chart, Values::new(), &opts).map_err(|e| e.to_string())
    }

    #[test]
    fn templates_parsed_on_both_threads_render_as_the_plain_way() {
        let budget = Budget::default();
        for broken in [None, Some("x: {{ .Values.a \n"), Some("{{ nosuchfunc }}")] {
            let d = many_templates(40, broken);
            crate::engine::clear_caches();
            let plain = render(load_with(d.path(), &budget).unwrap());
            crate::engine::clear_caches();
            let ahead = render(load(d.path(), &budget).and_then(Loading::finish).unwrap());
            match (&plain, &ahead) {
                (Ok(p), Ok(a)) => {
                    assert_eq!(p.files, a.files);
                    assert_eq!(p.files.len(), 41);
                }
                (Err(p), Err(a)) => assert_eq!(p, a),
                _ => panic!("{broken:?}: plain {plain:?}, ahead {ahead:?}"),
            }
            assert_eq!(broken.is_some(), ahead.is_err(), "{broken:?}");
        }
    }

    #[test]
    fn staging_beside_the_template_parse_renders_as_the_plain_way() {
        let budget = Budget::default();
        let opts = crate::render::RenderOptions::default();
        for broken in [None, Some("x: {{ .Values.a \n")] {
            let d = many_templates(40, broken);
            crate::engine::clear_caches();
            let plain_chart = load_with(d.path(), &budget).unwrap();
            let plain = render(plain_chart.clone());
            crate::engine::clear_caches();
            let mut seen = None;
            let staged = load(d.path(), &budget)
                .and_then(|a| {
                    a.finish_with(|chart| {
                        seen = Some(format!("{chart:?}"));
                        crate::render::stage(&chart, Values::new(), &opts)
                    })
                })
                .unwrap()
                .unwrap();
            assert_eq!(seen, Some(format!("{plain_chart:?}")), "the chart staged");
            let ahead = staged
                .render_feeding(&mut |_, _| {})
                .map_err(|e| e.to_string());
            match (&plain, &ahead) {
                (Ok(p), Ok(a)) => assert_eq!(p.files, a.files),
                (Err(p), Err(a)) => assert_eq!(p, a),
                _ => panic!("{broken:?}: plain {plain:?}, ahead {ahead:?}"),
            }
        }
    }

    #[test]
    fn a_chart_that_does_not_load_is_never_staged() {
        let budget = Budget::default();
        let d = chart_dir(&[("charts/other/values.yaml", "b: [\n")]);
        let plain = load_with(d.path(), &budget).unwrap_err();
        let mut staged = false;
        let err = load(d.path(), &budget)
            .unwrap()
            .finish_with(|_| staged = true)
            .unwrap_err();
        assert_eq!(err, plain);
        assert!(!staged);
    }

    #[test]
    fn schemas_compiled_aside_serve_this_thread() {
        let d = chart_dir(&[(
            "values.schema.json",
            r#"{"type": "object", "required": ["zz"]}"#,
        )]);
        let chart = load(d.path(), &Budget::default())
            .and_then(Loading::finish)
            .unwrap();
        let err = crate::schema::validate_single(&chart.values, chart.schema.as_deref().unwrap())
            .unwrap_err();
        assert!(err.contains("zz"), "{err}");
    }

    #[test]
    fn values_that_break_the_schema_fail_with_its_error_whatever_the_render_gives() {
        let budget = Budget::default();
        for template in ["x: {{ .Values.a }}\n", "{{ fail \"from the template\" }}"] {
            let d = chart_dir(&[
                (
                    "values.schema.json",
                    r#"{"properties": {"a": {"type": "string"}}}"#,
                ),
                ("templates/x.yaml", template),
            ]);
            let plain = render(load_with(d.path(), &budget).unwrap()).unwrap_err();
            let ahead = render(load(d.path(), &budget).and_then(Loading::finish).unwrap());
            assert_eq!(ahead.unwrap_err(), plain);
            assert!(
                plain.starts_with("values don't meet the specifications")
                    && plain.contains("- at '/a': got number, want string"),
                "{plain}"
            );
        }
    }

    #[test]
    fn queues_templates_as_read_under_the_names_the_render_uses() {
        let d = ChartDir::new(
            "top",
            &[
                ("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
                ("templates/a.yaml", "a: 1\n"),
                ("templates/sub/b.yaml", "b: 1\n"),
                // Folder names differ from chart names.
                (
                    "charts/lib-dir/Chart.yaml",
                    "apiVersion: v2\nname: lib\ntype: library\nversion: 1.0.0\n",
                ),
                (
                    "charts/lib-dir/templates/_h.tpl",
                    "{{ define \"h\" }}h{{ end }}",
                ),
                ("charts/lib-dir/templates/skipped.yaml", "s: 1\n"),
                (
                    "charts/s-dir/Chart.yaml",
                    "apiVersion: v2\nname: s\nversion: 1.0.0\n",
                ),
                ("charts/s-dir/templates/c.yaml", "c: 1\n"),
                (
                    "charts/s-dir/charts/t-dir/Chart.yaml",
                    "apiVersion: v2\nname: t\nversion: 1.0.0\n",
                ),
                ("charts/s-dir/charts/t-dir/templates/d.yaml", "d: 1\n"),
                (
                    "charts/_hidden/Chart.yaml",
                    "apiVersion: v2\nname: hidden\nversion: 1.0.0\n",
                ),
                ("charts/_hidden/templates/e.yaml", "e: 1\n"),
            ],
        );
        let work = Work::new();
        let chart = load_in(d.path(), &Budget::default(), &ValuesMode::Aside(&work)).unwrap();
        let queued = work.read.lock().unwrap().queued.clone();
        let mut rendered = HashSet::new();
        crate::engine::for_each_template(&chart, &mut |name, _| {
            rendered.insert(name.to_string());
        });
        assert_eq!(queued, rendered);
        assert!(
            queued.contains("top/charts/s/charts/t/templates/d.yaml"),
            "{queued:?}"
        );
        assert!(
            queued.contains("top/charts/lib/templates/_h.tpl"),
            "{queued:?}"
        );
        assert_eq!(queued.len(), 5, "{queued:?}");
    }

    #[test]
    fn a_text_met_twice_is_parsed_once_and_renders_under_both_names() {
        let common = "{{ define \"common.name\" }}{{ .Chart.Name }}{{ end }}";
        let user = "name: {{ include \"common.name\" . }}\nfile: {{ .Template.Name }}\n";
        let sub = |n: &'static str| {
            [
                (
                    format!("charts/{n}/Chart.yaml"),
                    format!("apiVersion: v2\nname: {n}\nversion: 1.0.0\n"),
                ),
                (format!("charts/{n}/templates/user.yaml"), user.to_string()),
                (
                    format!("charts/{n}/charts/common/Chart.yaml"),
                    "apiVersion: v2\nname: common\ntype: library\nversion: 1.0.0\n".to_string(),
                ),
                (
                    format!("charts/{n}/charts/common/templates/_names.tpl"),
                    common.to_string(),
                ),
            ]
        };
        let files: Vec<(String, String)> = sub("a").into_iter().chain(sub("b")).collect();
        let mut all: Vec<(&str, &str)> =
            vec![("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n")];
        all.extend(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let d = ChartDir::new("top", &all);

        let work = Work::new();
        load_in(d.path(), &Budget::default(), &ValuesMode::Aside(&work)).unwrap();
        let queued = work.read.lock().unwrap().queued.len();
        let jobs = work.queue().jobs.len();
        assert_eq!(queued, 4, "four templates by name");
        assert_eq!(jobs, 2, "two texts to parse");

        let budget = Budget::default();
        crate::engine::clear_caches();
        let plain = render(load_with(d.path(), &budget).unwrap()).unwrap();
        crate::engine::clear_caches();
        let ahead = render(load(d.path(), &budget).and_then(Loading::finish).unwrap()).unwrap();
        assert_eq!(format!("{ahead:?}"), format!("{plain:?}"));
        let text = format!("{ahead:?}");
        assert!(text.contains("top/charts/b/templates/user.yaml"), "{text}");
    }

    #[test]
    fn chart_folders() {
        assert_eq!(
            chart_folder("templates/a.yaml"),
            Some(("", "templates/a.yaml"))
        );
        assert_eq!(
            chart_folder("charts/a/Chart.yaml"),
            Some(("charts/a/", "Chart.yaml"))
        );
        assert_eq!(
            chart_folder("charts/a/charts/b/templates/x"),
            Some(("charts/a/charts/b/", "templates/x"))
        );
        assert_eq!(chart_folder("charts/a.tgz"), Some(("", "charts/a.tgz")));
        assert_eq!(chart_folder("charts/.git/x"), None);
        assert_eq!(parent_folder(""), None);
        assert_eq!(parent_folder("charts/a/"), Some(""));
        assert_eq!(
            parent_folder("charts/xcharts/charts/b/"),
            Some("charts/xcharts/")
        );
    }
}
