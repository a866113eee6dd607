//! Step 3 of the pipeline: a render's templates run on two threads at
//! once, with the outcome of one thread running them in Helm's order.
//!
//! This thread runs the templates from the first on; another runs them
//! from the last back, until the two meet. The other thread builds its own
//! chart objects (`.Values` and the rest: values are not shared between
//! threads) and executes the very trees this thread parsed, shared without
//! a copy ([`gotmpl::Templates::share`]).
//!
//! Helm runs a chart's templates one after another over the same objects,
//! so a template that changes one of them (Sprig's `set`, `unset`,
//! `merge`… on `.Values` or `$`) changes what every later template sees.
//! Both threads watch the maps their templates share
//! ([`gotmpl::value::watch`]). The other thread's outputs are kept only
//! when neither thread wrote to one, neither failed, and the output
//! together stayed within the set's limit; otherwise this thread runs the
//! other thread's share again itself, in order, after its own, which is
//! exactly the one-thread render. Errors are then the one-thread render's
//! too: this thread's share comes first in Helm's order, and a failure in
//! the other's is met again here.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};

use gotmpl::value::watch;
use gotmpl::{SharedTemplates, Templates, Value};

use super::threads::{spawn_deep, JobHandle};
use crate::engine::{run_template, Engine, RenderError, Renderable, PARSE_CACHE};

/// The templates left to run, by their place in Helm's order: this thread
/// takes them from the front, the other from the back.
struct Remaining {
    left: Mutex<(usize, usize)>,
    stop: AtomicBool,
}

impl Remaining {
    fn new(n: usize) -> Remaining {
        Remaining {
            left: Mutex::new((0, n)),
            stop: AtomicBool::new(false),
        }
    }

    fn left(&self) -> std::sync::MutexGuard<'_, (usize, usize)> {
        self.left.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn front(&self) -> Option<usize> {
        let mut left = self.left();
        (left.0 < left.1).then(|| {
            left.0 += 1;
            left.0 - 1
        })
    }

    fn back(&self) -> Option<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let mut left = self.left();
        (left.0 < left.1).then(|| {
            left.1 -= 1;
            left.1
        })
    }

    /// The first template the other thread took (the number of templates
    /// when it took none).
    fn theirs_from(&self) -> usize {
        self.left().1
    }
}

/// What the other thread did.
struct OtherReport {
    /// Outputs by place in the order.
    done: Vec<(usize, String)>,
    failed: bool,
    wrote_shared: bool,
    written: usize,
}

/// The other thread, waited for unless this thread fails (see
/// [`OtherThread::abandon`]). It reports, then sleeps until this thread lets
/// it go (when this one is dropped) before it drops its own objects: a thread woken by another may be queued on
/// the waker's core, and would wait there, its own core idle, for as long
/// as the waker kept going.
struct OtherThread {
    remaining: Arc<Remaining>,
    thread: Option<(JobHandle<()>, Receiver<OtherReport>)>,
    release: Option<SyncSender<()>>,
}

impl OtherThread {
    /// [`OtherThread::wait`] if the other thread has reported already.
    fn try_wait(&mut self) -> Option<Option<OtherReport>> {
        match &self.thread {
            Some((_, report)) => match report.try_recv() {
                Ok(theirs) => {
                    self.thread = None;
                    Some(Some(theirs))
                }
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => Some(self.wait()),
            },
            None => Some(None),
        }
    }

    /// What the other thread did, once it has stopped reading the trees.
    fn wait(&mut self) -> Option<OtherReport> {
        self.remaining.stop.store(true, Ordering::Relaxed);
        let (thread, report) = self.thread.take()?;
        match report.recv() {
            Ok(theirs) => Some(theirs),
            // It panicked: the panic goes on here.
            Err(_) => {
                thread.join();
                None
            }
        }
    }
}

impl OtherThread {
    /// Stops the other thread without waiting for it: it holds the trees
    /// it runs, and stops at its next template.
    fn abandon(&mut self) {
        self.release.take();
        self.remaining.stop.store(true, Ordering::Relaxed);
        if let Some((thread, report)) = self.thread.take() {
            if let Err(TryRecvError::Disconnected) = report.try_recv() {
                // It panicked: the panic goes on here.
                thread.join();
            }
        }
    }
}

impl Drop for OtherThread {
    fn drop(&mut self) {
        self.release.take();
        self.remaining.stop.store(true, Ordering::Relaxed);
        if let Some((thread, report)) = self.thread.take() {
            if report.recv().is_err() {
                // It panicked; this thread is leaving already.
                drop(thread);
            }
        }
    }
}

/// [`Engine::render_feeding`] on two threads; `theirs` builds, on the
/// other thread, the same templates with objects of its own (the chart's
/// objects are values of the thread that builds them). Runs on this
/// thread alone when there is nothing to split, no thread to be had, or
/// `lookup` is answered (by this thread's cluster client).
pub(crate) fn render_on_two_threads(
    engine: &Engine,
    tpls: &[Renderable],
    feed: &mut dyn FnMut(&str, &str),
    theirs: impl FnOnce() -> Vec<Renderable> + Send + 'static,
) -> Result<BTreeMap<String, String>, RenderError> {
    let (set, runs) = engine.template_set(tpls)?;
    let mut out = BTreeMap::new();
    let run = |i: usize| run_template(&set, runs[i]);
    let remaining = Arc::new(Remaining::new(runs.len()));
    let other = if engine.lookup.is_none() && runs.len() > 1 {
        let names: Vec<String> = runs.iter().map(|t| t.name.clone()).collect();
        let shared = set.share();
        let strict = engine.strict;
        let their_remaining = remaining.clone();
        let (tell, report) = sync_channel(1);
        let (release, released) = sync_channel::<()>(0);
        spawn_deep("templates", move || {
            run_from_the_back(&shared, &names, &their_remaining, theirs, strict, |done| {
                if tell.send(done).is_ok() {
                    let _ = released.recv();
                }
            })
        })
        .ok()
        .map(|thread| ((thread, report), release))
    } else {
        None
    };
    let (other, release) = other.unzip();
    let mut other = OtherThread {
        remaining: remaining.clone(),
        thread: other,
        release,
    };
    let mut give = |i: usize, text: String, out: &mut BTreeMap<String, String>| {
        let name = &runs[i].name;
        feed(name, &text);
        out.insert(name.clone(), text);
    };
    if other.thread.is_none() {
        for i in 0..runs.len() {
            give(i, run(i)?, &mut out);
        }
        return Ok(out);
    }
    let contexts: Vec<Value> = tpls.iter().map(|t| Value::Map(t.vals.clone())).collect();
    watch::start(&contexts);
    // Outputs are handed on only once the other thread is done: what
    // `feed` starts (reading manifests on another core) would take
    // that core from it.
    let mut held = Vec::new();
    let mut theirs = None;
    let mut failed = None;
    while let Some(i) = remaining.front() {
        match run(i) {
            Ok(text) if theirs.is_some() => give(i, text, &mut out),
            Ok(text) => held.push((i, text)),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
        if theirs.is_none() && watch::written() {
            // The other thread's outputs cannot be kept: it stops, and
            // this one goes on with every template in order.
            remaining.stop.store(true, Ordering::Relaxed);
        }
        if theirs.is_none() && remaining.stop.load(Ordering::Relaxed) {
            theirs = other.try_wait();
            if theirs.is_some() {
                for (i, text) in held.drain(..) {
                    give(i, text, &mut out);
                }
            }
        }
    }
    let wrote_shared = watch::stop();
    if let Some(e) = failed {
        // The one-thread render stops here too: whatever the other
        // thread is running (a long loop, say) need not hold the error.
        other.abandon();
        return Err(e);
    }
    let theirs = match theirs {
        Some(theirs) => theirs,
        None => other.wait(),
    };
    for (i, text) in held {
        give(i, text, &mut out);
    }
    let from = remaining.theirs_from();
    let max_output = set.options().max_output;
    match theirs {
        Some(theirs)
            if !wrote_shared
                && !theirs.wrote_shared
                && !theirs.failed
                && theirs.done.len() == runs.len() - from
                && set.written().saturating_add(theirs.written) <= max_output =>
        {
            let mut done = theirs.done;
            done.sort_by_key(|(i, _)| *i);
            for (i, text) in done {
                give(i, text, &mut out);
            }
        }
        _ => {
            for i in from..runs.len() {
                give(i, run(i)?, &mut out);
            }
        }
    }
    Ok(out)
}

/// The other thread: builds its objects, takes the shared trees, runs
/// templates from the back until the threads meet or it is stopped, and
/// `report`s before it drops what it built.
fn run_from_the_back(
    shared: &SharedTemplates,
    names: &[String],
    remaining: &Remaining,
    theirs: impl FnOnce() -> Vec<Renderable>,
    strict: bool,
    report: impl FnOnce(OtherReport),
) {
    let tpls = theirs();
    let by_name: HashMap<&str, &Renderable> = tpls.iter().map(|t| (t.name.as_str(), t)).collect();
    let funcs = Engine::new().strict(strict).render_funcs();
    let mut set = Templates::from_shared(funcs, shared);
    PARSE_CACHE.with(|c| set.set_parse_cache(c.clone()));
    let set = Rc::new(set);
    let contexts: Vec<Value> = tpls.iter().map(|t| Value::Map(t.vals.clone())).collect();
    watch::start(&contexts);
    let mut done = Vec::new();
    let mut failed = false;
    while let Some(i) = remaining.back() {
        let ran = by_name
            .get(names[i].as_str())
            .map(|t| run_template(&set, t));
        match ran {
            Some(Ok(text)) => done.push((i, text)),
            _ => {
                failed = true;
                break;
            }
        }
        if watch::written() {
            // Its outputs cannot be kept: no use going on.
            break;
        }
    }
    report(OtherReport {
        done,
        failed,
        wrote_shared: watch::stop(),
        written: set.written(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use gotmpl::MapRef;

    /// Templates `texts` of one chart over `values`, as a render builds
    /// them (on whichever thread calls this).
    fn renderables(values: &serde_json::Value, texts: &[(String, String)]) -> Vec<Renderable> {
        let mut ctx = gotmpl::Map::new();
        ctx.insert("Values".into(), Value::from_json(values));
        let vals = MapRef::new(ctx);
        texts
            .iter()
            .map(|(name, text)| Renderable {
                name: name.clone(),
                text: text.as_bytes().into(),
                vals: vals.clone(),
                base_path: "c/templates".into(),
            })
            .collect()
    }

    /// The name of the template Helm runs `i`-th (in reverse name order).
    fn name(i: usize) -> String {
        format!("c/templates/t{:03}.yaml", 999 - i)
    }

    /// A chart of `n` templates, each busy enough that both threads take
    /// some, the ones `special` names (by place in Helm's order) replaced
    /// by their text.
    fn chart(n: usize, special: &[(usize, &str)]) -> Vec<(String, String)> {
        let mut texts: Vec<(String, String)> = (0..n)
            .map(|i| {
                let text = special
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map(|(_, t)| t.to_string())
                    .unwrap_or_else(|| {
                        format!(
                            "t{i}: {{{{ include \"c.h\" . }}}}{{{{ range until 300 }}}}{{{{ \"x\" }}}}{{{{ end }}}}\n"
                        )
                    });
                (name(i), text)
            })
            .collect();
        texts.push((
            "c/templates/_h.tpl".into(),
            r#"{{ define "c.h" }}{{ .Values.a }}-{{ .Values.b.c | default "none" }}{{ end }}"#
                .into(),
        ));
        texts
    }

    type Rendered = Result<BTreeMap<String, String>, String>;

    /// The plain render and the two-thread one of the same chart, three
    /// times over (the split differs from run to run).
    fn both_ways(texts: &[(String, String)]) -> Vec<(Rendered, Rendered)> {
        let values = serde_json::json!({"a": 1, "b": {"c": "x"}});
        (0..3)
            .map(|_| {
                let plain = Engine::new()
                    .render(&renderables(&values, texts))
                    .map_err(|e| e.to_string());
                let (theirs_values, theirs_texts) = (values.clone(), texts.to_vec());
                let beside = render_on_two_threads(
                    &Engine::new(),
                    &renderables(&values, texts),
                    &mut |_, _| {},
                    move || renderables(&theirs_values, &theirs_texts),
                )
                .map_err(|e| e.to_string());
                (plain, beside)
            })
            .collect()
    }

    #[test]
    fn renders_what_one_thread_renders() {
        for (plain, beside) in both_ways(&chart(60, &[])) {
            let plain = plain.unwrap();
            assert_eq!(plain.len(), 60);
            assert_eq!(beside.unwrap(), plain);
        }
    }

    #[test]
    fn a_template_changing_shared_values_is_seen_by_the_later_ones() {
        // Early (this thread's share) and late (the other's): either way
        // every later template sees the change, as in Helm.
        for at in [0, 40, 58] {
            let texts = chart(
                60,
                &[(
                    at,
                    r#"{{ $_ := set .Values.b "c" "changed" }}{{ $_ := set $ "seen" 1 }}w"#,
                )],
            );
            for (plain, beside) in both_ways(&texts) {
                let plain = plain.unwrap();
                assert!(plain[&name(59)].contains("changed"));
                assert_eq!(beside.unwrap(), plain, "written at {at}");
            }
        }
    }

    #[test]
    fn reports_the_first_failure_in_helms_order() {
        let fail = |m: &str| format!("{{{{ fail \"{m}\" }}}}");
        let (a, b) = (fail("first"), fail("second"));
        for failing in [
            vec![(3, &a), (50, &b)],
            vec![(45, &a), (58, &b)],
            vec![(58, &a), (59, &b)],
            vec![(59, &a)],
        ] {
            let failing: Vec<(usize, &str)> =
                failing.iter().map(|(at, t)| (*at, t.as_str())).collect();
            let texts = chart(60, &failing);
            for (plain, beside) in both_ways(&texts) {
                let plain = plain.unwrap_err();
                assert!(plain.contains("first"), "{plain}");
                assert_eq!(beside.unwrap_err(), plain);
            }
        }
    }

    #[test]
    fn a_failure_is_not_held_by_a_long_template_on_the_other_thread() {
        // The other thread takes the last template first: a loop of some
        // minutes, which the one-thread render never reaches.
        let long = "{{ range until 20000 }}{{ range until 20000 }}{{ end }}{{ end }}";
        let texts = chart(60, &[(30, "{{ fail \"early\" }}"), (59, long)]);
        let values = serde_json::json!({"a": 1, "b": {"c": "x"}});
        let (tell, told) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (theirs_values, theirs_texts) = (values.clone(), texts.clone());
            let beside = render_on_two_threads(
                &Engine::new(),
                &renderables(&values, &texts),
                &mut |_, _| {},
                move || renderables(&theirs_values, &theirs_texts),
            );
            let _ = tell.send(beside.map_err(|e| e.to_string()));
        });
        let err = told
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the error waited for the other thread's loop")
            .unwrap_err();
        assert!(err.contains("early"), "{err}");
    }

    #[test]
    fn parse_errors_come_before_any_template_runs() {
        let texts = chart(10, &[(5, "{{ if }}")]);
        for (plain, beside) in both_ways(&texts) {
            assert_eq!(beside.unwrap_err(), plain.unwrap_err());
        }
    }
}
