//! Rendered output to Kubernetes manifests, as Helm's `releaseutil`:
//! splitting files into YAML documents, separating hooks (`helm.sh/hook`)
//! from the release manifest, and sorting by kind in install order.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

/// Helm's install order of kinds; unknown kinds go last, sorted by name.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Helm's uninstall order of kinds.
pub const UNINSTALL_ORDER: &[&str] = &[
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
];

pub(crate) const HOOK_ANNOTATION: &str = "helm.sh/hook";
pub(crate) const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
pub(crate) const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";
pub(crate) const HOOK_OUTPUT_LOG_ANNOTATION: &str = "helm.sh/hook-output-log-policy";

/// The hook events Helm knows.
pub(crate) const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// The identifying head of a manifest document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub annotations: BTreeMap<String, String>,
}

/// One document of the release manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The template it came from (`<chart>/templates/x.yaml`).
    pub source: String,
    pub content: String,
    pub head: Head,
}

/// A hook document, in Helm's release-record shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    pub name: String,
    pub kind: String,
    pub path: String,
    pub manifest: String,
    pub events: Vec<String>,
    pub weight: i64,
    pub delete_policies: Vec<String>,
    pub output_log_policies: Vec<String>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("YAML parse error on {path}: {message}")]
pub struct ManifestError {
    pub path: String,
    pub message: String,
}

/// Splits a rendered file into YAML documents as Helm ≥ 4.2's
/// `SplitManifests` does: a separator is `---` at the start of a line,
/// with the whitespace after it (so `---apiVersion: v1`, a separator glued
/// to its document by a `{{-`, still splits, as in every Helm). Each
/// document loses its leading whitespace and keeps its trailing newlines
/// (helm/helm#31952): `helm template` prints them, a blank line before
/// each `---`. Empty documents are dropped.
pub fn split_documents(text: &str) -> Vec<String> {
    let t = text.trim_start();
    let b = t.as_bytes();
    let mut pieces = Vec::new();
    let (mut beg, mut pos) = (0, 0);
    // `pos` is always at the start of a line.
    while pos < b.len() {
        if b[pos..].starts_with(b"---") {
            let mut end = pos + 3;
            // RE2's `\s`: what Helm's `---\s*` takes after the dashes.
            while end < b.len() && matches!(b[end], b'\t' | b'\n' | b'\x0c' | b'\r' | b' ') {
                end += 1;
            }
            pieces.push(&t[beg..pos]);
            beg = end;
            pos = end;
            if b[end - 1] == b'\n' {
                continue;
            }
        }
        match b[pos..].iter().position(|&c| c == b'\n') {
            Some(i) => pos += i + 1,
            None => break,
        }
    }
    pieces.push(&t[beg..]);
    pieces
        .into_iter()
        .map(str::trim_start)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect()
}

/// The parts of a document its [`Head`] is made of, as key paths: what
/// Helm's `releaseutil.SimpleHead` reads.
const HEAD_PATHS: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "annotations"],
];

/// Reads one document for its head. The document is decoded and checked
/// in full, so a bad one fails with the message reading all of it gives;
/// only the head is converted to JSON.
fn read_head(doc: &str) -> Result<Head, gocodec::yaml::YamlError> {
    let mut picked = gocodec::yaml::parse_yaml_picks(doc, HEAD_PATHS)?.into_iter();
    let mut next = || picked.next().flatten();
    let mut text = || match next() {
        Some(serde_json::Value::String(s)) => s,
        _ => String::new(),
    };
    let (api_version, kind, name, namespace) = (text(), text(), text(), text());
    let annotations = match next() {
        Some(serde_json::Value::Object(a)) => a
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s,
                    other => {
                        let shown = other.to_string();
                        gocodec::depth::drop_json(other);
                        shown
                    }
                };
                (k, v)
            })
            .collect(),
        Some(other) => {
            gocodec::depth::drop_json(other);
            BTreeMap::new()
        }
        None => BTreeMap::new(),
    };
    Ok(Head {
        api_version,
        kind,
        name,
        namespace,
        annotations,
    })
}

/// Hooks and manifests of a render, each sorted in install order.
#[derive(Debug, Clone, Default)]
pub struct Sorted {
    pub hooks: Vec<Hook>,
    pub manifests: Vec<Manifest>,
}

/// Helm's `SortManifests`: files in path order, partials and empty files
/// skipped, documents split, hooks separated, both sorted by kind.
pub fn sort_manifests(
    files: &BTreeMap<String, String>,
    order: &[&str],
) -> Result<Sorted, ManifestError> {
    sort_on(files, order, 1)
}

/// [`sort_manifests`] for a finished render that has the machine to
/// itself: large renders are split and parsed on two threads. The result,
/// and on bad YAML the error (the first failing document in path order),
/// are the same. A render still running can instead hand its files over
/// as they come (`rudder template` does, see [`crate::oneshot`]). An operator, which
/// runs many renders at once, keeps to [`sort_manifests`]: a thread per
/// render would only add a start and a join to each.
pub fn sort_manifests_parallel(
    files: &BTreeMap<String, String>,
    order: &[&str],
) -> Result<Sorted, ManifestError> {
    let threads = crate::oneshot::threads::cores().min(MAX_THREADS);
    sort_on(files, order, threads)
}

/// [`sort_manifests`] reading the documents on up to `threads` threads.
fn sort_on(
    files: &BTreeMap<String, String>,
    order: &[&str],
    threads: usize,
) -> Result<Sorted, ManifestError> {
    let rendered: Vec<(&str, &str)> = files
        .iter()
        .filter(|(path, content)| holds_manifests(path, content))
        .map(|(path, content)| (path.as_str(), content.as_str()))
        .collect();
    Ok(in_order(read_files(&rendered, threads)?, order))
}

/// Whether a rendered file is read for manifests: partials, empty files
/// and NOTES.txt are not.
pub(crate) fn holds_manifests(path: &str, content: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    !base.starts_with('_') && !content.trim().is_empty() && !path.ends_with("NOTES.txt")
}

/// Documents read in path order, separated into hooks and manifests and
/// each sorted as Helm sorts them.
pub(crate) fn in_order(entries: Vec<Entry>, order: &[&str]) -> Sorted {
    let mut out = Sorted::default();
    for entry in entries {
        match entry {
            Entry::Manifest(m) => out.manifests.push(m),
            Entry::Hook(h) => out.hooks.push(h),
        }
    }
    let rank = |k: &str| order.iter().position(|o| *o == k);
    let less = |a: &str, b: &str| -> std::cmp::Ordering {
        match (rank(a), rank(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.cmp(b),
        }
    };
    out.manifests
        .sort_by(|a, b| less(&a.head.kind, &b.head.kind));
    // Helm sorts hooks by weight, then kind, then name.
    out.hooks.sort_by(|a, b| {
        a.weight
            .cmp(&b.weight)
            .then_with(|| less(&a.kind, &b.kind))
            .then_with(|| a.name.cmp(&b.name))
    });
    out
}

/// Below this much rendered text the documents are read on the calling
/// thread. Reading costs 40–60 ns a byte and a second thread 25–40 µs to
/// start and join; `benches/sort_manifests.rs` put the break-even between
/// 4 and 8 KiB, with clear gains above (grafana's 7 KiB stays inline,
/// prometheus' 40 KiB does not).
pub(crate) const PARALLEL_MIN_BYTES: usize = 8 << 10;

/// At most this many threads read documents: the files of one chart are
/// too few to feed more.
const MAX_THREADS: usize = 2;

/// One document of a rendered file, unsorted.
pub(crate) enum Entry {
    Manifest(Manifest),
    Hook(Hook),
}

/// Reads `files` (path, text), in order, into their documents: on two
/// threads when `threads` allows and there is enough text. The calling
/// thread reads files from the front and a worker from the back until
/// they meet, so a thread slowed by a busy core reads fewer; the front's
/// list followed by the back's keeps path order, and the error returned
/// is the first in path order, as one thread reading them all would meet.
fn read_files(files: &[(&str, &str)], threads: usize) -> Result<Vec<Entry>, ManifestError> {
    let total: usize = files.iter().map(|(_, text)| text.len()).sum();
    if threads < 2 || files.len() < 2 || total < PARALLEL_MIN_BYTES {
        return read_in_order(files);
    }
    // The last file is the worker's, so that it has work once it starts.
    let unread = Mutex::new(0..files.len() - 1);
    let front_failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Parsing and dropping deep documents recurse; the worker gets the
        // stack the callers of this function give their own work.
        let spawned = std::thread::Builder::new()
            .name("sort-manifests".into())
            .stack_size(gocodec::depth::DEEP_STACK_BYTES)
            .spawn_scoped(scope, || read_from_back(files, &unread, &front_failed));
        let Ok(worker) = spawned else {
            // No thread to be had: read them all here.
            return read_in_order(files);
        };
        let mut entries = Vec::new();
        while let Some(i) = claim(&unread, Range::next) {
            let (path, text) = files[i];
            if let Err(e) = read_file(path, text, &mut entries) {
                front_failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        let back = worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        entries.extend(back?);
        Ok(entries)
    })
}

/// Takes the next unread file from one end of `unread`.
fn claim(
    unread: &Mutex<Range<usize>>,
    end: impl FnOnce(&mut Range<usize>) -> Option<usize>,
) -> Option<usize> {
    end(&mut unread.lock().unwrap_or_else(PoisonError::into_inner))
}

/// The worker's part of [`read_files`]: the last file, then files from the
/// back of `unread` until none is left or an earlier file has failed.
/// Returns the documents of the files it read in path order, or the error
/// of the earliest of them that failed.
fn read_from_back(
    files: &[(&str, &str)],
    unread: &Mutex<Range<usize>>,
    front_failed: &AtomicBool,
) -> Result<Vec<Entry>, ManifestError> {
    let mut read: Vec<Vec<Entry>> = Vec::new();
    let mut earliest_error = None;
    let mut next = Some(files.len() - 1);
    while let Some(i) = next {
        if front_failed.load(Ordering::Relaxed) {
            break;
        }
        let (path, text) = files[i];
        let mut entries = Vec::new();
        match read_file(path, text, &mut entries) {
            Ok(()) => read.push(entries),
            Err(e) => {
                // Files after this one no longer matter; earlier ones may
                // still fail first.
                read.clear();
                earliest_error = Some(e);
            }
        }
        next = claim(unread, Range::next_back);
    }
    match earliest_error {
        Some(e) => Err(e),
        None => Ok(read.into_iter().rev().flatten().collect()),
    }
}

/// Reads `files` one after another, stopping at the first bad document.
fn read_in_order(files: &[(&str, &str)]) -> Result<Vec<Entry>, ManifestError> {
    let mut entries = Vec::new();
    for (path, text) in files {
        read_file(path, text, &mut entries)?;
    }
    Ok(entries)
}

/// Splits one rendered file into documents, reads each one's head and
/// sorts it into a manifest or a hook (hooks of unknown events are
/// dropped, as Helm drops them).
pub(crate) fn read_file(
    path: &str,
    text: &str,
    entries: &mut Vec<Entry>,
) -> Result<(), ManifestError> {
    for doc in split_documents(text) {
        let head = read_head(&doc).map_err(|e| ManifestError {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        let Some(hook_types) = head.annotations.get(HOOK_ANNOTATION).cloned() else {
            entries.push(Entry::Manifest(Manifest {
                source: path.to_string(),
                content: doc,
                head,
            }));
            continue;
        };
        let mut events = Vec::new();
        let mut unknown = false;
        for t in hook_types.split(',') {
            let t = t.trim().to_ascii_lowercase();
            if HOOK_EVENTS.contains(&t.as_str()) {
                events.push(t);
            } else {
                unknown = true;
                break;
            }
        }
        if unknown {
            continue;
        }
        let weight = head
            .annotations
            .get(HOOK_WEIGHT_ANNOTATION)
            .and_then(|w| w.trim().parse::<i64>().ok())
            .unwrap_or(0);
        let list = |key: &str| -> Vec<String> {
            head.annotations
                .get(key)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        entries.push(Entry::Hook(Hook {
            name: head.name.clone(),
            kind: head.kind.clone(),
            path: path.to_string(),
            manifest: doc,
            events,
            weight,
            delete_policies: list(HOOK_DELETE_ANNOTATION),
            output_log_policies: list(HOOK_OUTPUT_LOG_ANNOTATION),
        }));
    }
    Ok(())
}

/// The release manifest text: every document with its `# Source:` header.
pub fn manifest_text(manifests: &[Manifest]) -> String {
    let mut s = String::new();
    for m in manifests {
        s.push_str("---\n# Source: ");
        s.push_str(&m.source);
        s.push('\n');
        s.push_str(&m.content);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oneshot::sort::Sorter;

    /// How a head was read before [`read_head`]: the whole document
    /// converted to JSON, then looked up. `read_head` must agree with it
    /// on every document, in the head and in the error.
    fn head_from_whole_json(doc: &str) -> Result<Head, gocodec::yaml::YamlError> {
        let doc = gocodec::yaml::parse_yaml_to_json(doc)?;
        let s = |v: Option<&serde_json::Value>| {
            v.and_then(|v| v.as_str()).unwrap_or_default().to_string()
        };
        let md = doc.get("metadata");
        Ok(Head {
            api_version: s(doc.get("apiVersion")),
            kind: s(doc.get("kind")),
            name: s(md.and_then(|m| m.get("name"))),
            namespace: s(md.and_then(|m| m.get("namespace"))),
            annotations: md
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.as_object())
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| {
                            let shown = v.as_str().map(String::from);
                            (k.clone(), shown.unwrap_or_else(|| v.to_string()))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    fn head_agrees(doc: &str) -> bool {
        let want = head_from_whole_json(doc);
        assert_eq!(read_head(doc), want, "{doc:?}");
        want.is_ok()
    }

    #[test]
    fn heads_read_as_the_whole_document_gives_them() {
        let docs = [
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: ns\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: hook-succeeded\nspec:\n  template: {}\n",
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: test\n    helm.sh/hook-weight: 5\n    other: {a: [1, 2]}\n    flag: true\n    none: null\n    f: 1.50\n",
            "kind: 5\napiVersion: [v1]\nmetadata:\n  name: 12\n  namespace:\n  annotations: [a]\n",
            "kind: A\nkind: B\nmetadata:\n  name: a\nmetadata:\n  namespace: n\n",
            "base: &b\n  kind: K\n  metadata:\n    name: n\n    annotations: {helm.sh/hook: pre-delete}\n<<: *b\n",
            "metadata:\n  <<: [{name: a}, {name: b, namespace: c}]\n  annotations: &a {x: y}\nspec: *a\n",
            "on: 1\n1: a\n\"kind\": Quoted\n'apiVersion': v2\nmetadata: {name: !!binary aGVsbG8=}\n",
            "kind: ConfigMap\ndata:\n  x: .inf\n",
            "kind: ConfigMap\ndata:\n  ~: x\n",
            "kind: ConfigMap\nmetadata:\n  annotations:\n    18446744073709551615: x\n",
            "kind: ConfigMap\ndata: [unclosed\n",
            "kind: [unclosed\n",
            "kind: ConfigMap\ndata:\n  a: *nope\n",
            "kind: ConfigMap\ndata: !!int x\n",
            "- kind: A\n",
            "just text",
            "# only a comment",
        ];
        let good = docs.iter().filter(|d| head_agrees(d)).count();
        assert!(good > 5 && good < docs.len(), "{good} of {}", docs.len());
    }

    /// Every document of every corpus render (all charts, all scenarios)
    /// has the head, or the error, reading the whole document gives.
    #[test]
    fn corpus_heads_read_as_the_whole_document_gives_them() {
        let Some(shared) = testkit::tools::shared_dir() else {
            return;
        };
        let corpus = shared.join("corpus");
        let cases = testkit::oracle::corpus_cases(&corpus);
        if cases.is_empty() {
            testkit::skip!("no corpus cases in {}", corpus.display());
        }
        let mut docs = 0;
        for (_, _, dir, values) in &cases {
            let opts = testkit::oracle::CaseOptions::for_scenario(values).unwrap_or_default();
            let Ok(render) = testkit::oracle::render_case(dir, std::slice::from_ref(values), &opts)
            else {
                continue;
            };
            for text in render.files.values() {
                for doc in split_documents(text) {
                    head_agrees(&doc);
                    docs += 1;
                }
            }
        }
        assert!(docs > 1000, "only {docs} documents in the corpus renders");
    }

    #[test]
    fn splits_and_sorts() {
        let mut files = BTreeMap::new();
        files.insert(
            "c/templates/a.yaml".to_string(),
            "kind: Deployment\nmetadata:\n  name: d\n---\nkind: Service\nmetadata:\n  name: s\n"
                .to_string(),
        );
        files.insert(
            "c/templates/h.yaml".to_string(),
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n".to_string(),
        );
        files.insert("c/templates/NOTES.txt".to_string(), "hi".to_string());
        let s = sort_manifests(&files, INSTALL_ORDER).expect("sorts");
        let kinds: Vec<_> = s.manifests.iter().map(|m| m.head.kind.as_str()).collect();
        assert_eq!(kinds, vec!["Service", "Deployment"]);
        assert_eq!(s.hooks.len(), 1);
        assert_eq!(s.hooks[0].events, vec!["pre-install", "post-upgrade"]);
        assert_eq!(s.hooks[0].weight, -5);
    }

    #[test]
    fn separators_start_a_line() {
        assert_eq!(split_documents("a: 1\n---\nb: 2\n--- \n\n---\n").len(), 2);
        assert_eq!(split_documents("a: '---x'").len(), 1);
        assert_eq!(split_documents("a: |\n  ---\n").len(), 1);
    }

    /// Helm 4.2's `SplitManifests`: leading whitespace goes, trailing
    /// newlines stay (the blank lines of `helm template`), and a separator
    /// takes the whitespace after it, even with text on its line.
    #[test]
    fn documents_keep_their_trailing_newlines() {
        let docs = |t: &str| split_documents(t);
        assert_eq!(
            docs("\n# 1\nkind: A\n\n---\n\n# 2\nkind: B\n"),
            ["# 1\nkind: A\n\n", "# 2\nkind: B\n"]
        );
        assert_eq!(docs("kind: A"), ["kind: A"]);
        assert_eq!(docs("---\nkind: A\n---\n"), ["kind: A\n"]);
        assert_eq!(
            docs("a: 1\n---apiVersion: v1\n"),
            ["a: 1\n", "apiVersion: v1\n"]
        );
        assert_eq!(docs("a: 1\n--- # c\nb: 2"), ["a: 1\n", "# c\nb: 2"]);
        assert_eq!(docs("a: 1\n----\n"), ["a: 1\n", "-\n"]);
        assert_eq!(docs("a: 1\r\n---\r\nb: 2\r\n"), ["a: 1\r\n", "b: 2\r\n"]);
        assert_eq!(docs("---\n---\n\n---  \n"), Vec::<String>::new());
        assert_eq!(docs("  \n\t"), Vec::<String>::new());
    }

    /// `doc` followed by YAML comments up to about `bytes` long, so that a
    /// handful of files is enough text for the two-thread read.
    fn padded(doc: &str, bytes: usize) -> String {
        let mut text = doc.to_string();
        while text.len() < bytes {
            text.push_str("# padding that makes the file long enough\n");
        }
        text
    }

    fn total_bytes(files: &BTreeMap<String, String>) -> usize {
        files.values().map(String::len).sum()
    }

    /// `files` fed one at a time to a [`Sorter`], in path order or
    /// backwards (as a render runs them: deeper paths first, then in
    /// reverse lexical order).
    fn sorted_ahead(
        files: &BTreeMap<String, String>,
        backwards: bool,
    ) -> Result<Sorted, ManifestError> {
        let mut ahead = Sorter::new();
        let fed: Vec<_> = if backwards {
            files.iter().rev().collect()
        } else {
            files.iter().collect()
        };
        for (path, text) in fed {
            ahead.feed(path, text);
        }
        ahead.finish(INSTALL_ORDER)
    }

    /// The same sort read on one thread, on two, and fed file by file
    /// both ways, which must all agree.
    fn sorted_both_ways(files: &BTreeMap<String, String>) -> Sorted {
        assert!(
            total_bytes(files) >= PARALLEL_MIN_BYTES,
            "enough text for two threads"
        );
        let one = sort_on(files, INSTALL_ORDER, 1).expect("sorts on one thread");
        let two = sort_on(files, INSTALL_ORDER, 2).expect("sorts on two threads");
        assert_eq!(one.manifests, two.manifests);
        assert_eq!(one.hooks, two.hooks);
        for backwards in [false, true] {
            let fed = sorted_ahead(files, backwards).expect("sorts as fed");
            assert_eq!(one.manifests, fed.manifests, "backwards: {backwards}");
            assert_eq!(one.hooks, fed.hooks, "backwards: {backwards}");
        }
        two
    }

    #[test]
    fn a_small_render_fed_file_by_file_sorts_as_a_whole() {
        let files = BTreeMap::from([
            (
                "c/templates/b.yaml".to_string(),
                "kind: Service\nmetadata:\n  name: s\n".to_string(),
            ),
            (
                "c/templates/a.yaml".to_string(),
                "kind: Namespace\nmetadata:\n  name: ns\n---\nkind: Widget\nmetadata:\n  name: w\n"
                    .to_string(),
            ),
            (
                "c/templates/_helpers.tpl".to_string(),
                "kind: Secret\n".to_string(),
            ),
            (
                "c/templates/NOTES.txt".to_string(),
                "kind: Secret\n".to_string(),
            ),
            ("c/templates/empty.yaml".to_string(), " \n".to_string()),
        ]);
        assert!(total_bytes(&files) < PARALLEL_MIN_BYTES, "read at the end");
        let whole = sort_manifests(&files, INSTALL_ORDER).expect("sorts");
        let names: Vec<&str> = whole
            .manifests
            .iter()
            .map(|m| m.head.name.as_str())
            .collect();
        assert_eq!(names, vec!["ns", "s", "w"]);
        for backwards in [false, true] {
            let fed = sorted_ahead(&files, backwards).expect("sorts as fed");
            assert_eq!(whole.manifests, fed.manifests);
        }
    }

    #[test]
    fn many_files_keep_path_order_within_a_kind_on_two_threads() {
        let files: BTreeMap<String, String> = (0..40)
            .map(|i| {
                let text = format!(
                    "kind: Service\nmetadata:\n  name: svc-{i}\n---\n\
                     kind: ConfigMap\nmetadata:\n  name: cm-{i}-a\n---\n\
                     kind: Widget\nmetadata:\n  name: w-{i}\n---\n\
                     kind: ConfigMap\nmetadata:\n  name: cm-{i}-b\n"
                );
                (format!("c/templates/f{i:02}.yaml"), padded(&text, 400))
            })
            .collect();
        let s = sorted_both_ways(&files);
        let got: Vec<(&str, &str)> = s
            .manifests
            .iter()
            .map(|m| (m.source.as_str(), m.head.name.as_str()))
            .collect();
        let mut want = Vec::new();
        for (prefix, suffixes) in [("cm", &["-a", "-b"][..]), ("svc", &[""]), ("w", &[""])] {
            for i in 0..40 {
                for suffix in suffixes {
                    want.push((
                        format!("c/templates/f{i:02}.yaml"),
                        format!("{prefix}-{i}{suffix}"),
                    ));
                }
            }
        }
        let want: Vec<(&str, &str)> = want.iter().map(|(p, n)| (p.as_str(), n.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_first_bad_file_in_path_order_wins_on_two_threads() {
        let good = |i: usize| {
            padded(
                &format!("kind: ConfigMap\nmetadata:\n  name: cm-{i}\n"),
                600,
            )
        };
        // Bad on different lines, so that the two errors differ.
        let bad = |i: usize| {
            format!(
                "{}kind: ConfigMap\nmetadata: [unclosed\n",
                "a: 1\n".repeat(i)
            )
        };
        let with_bad = |bad_files: &[usize]| -> BTreeMap<String, String> {
            (0..40)
                .map(|i| {
                    let text = if bad_files.contains(&i) {
                        bad(i)
                    } else {
                        good(i)
                    };
                    (format!("c/templates/f{i:02}.yaml"), text)
                })
                .collect()
        };
        let error_of = |i: usize| {
            gocodec::yaml::parse_yaml_to_json(bad(i).trim_start())
                .expect_err("bad YAML")
                .to_string()
        };
        // Bad files early and late, late only, and last (which the worker
        // reads first) with the one before it.
        for (bad_files, first) in [
            (&[5, 35][..], 5),
            (&[30, 35], 30),
            (&[35], 35),
            (&[38, 39], 38),
        ] {
            let files = with_bad(bad_files);
            assert!(total_bytes(&files) >= PARALLEL_MIN_BYTES);
            let fed = [false, true].map(|backwards| sorted_ahead(&files, backwards));
            let threads = [1, 2].map(|threads| sort_on(&files, INSTALL_ORDER, threads));
            for sorted in fed.into_iter().chain(threads) {
                let e = sorted.expect_err("bad YAML fails");
                assert_eq!(
                    e.path,
                    format!("c/templates/f{first:02}.yaml"),
                    "{bad_files:?}"
                );
                assert_eq!(e.message, error_of(first), "{bad_files:?}");
            }
        }
        assert_ne!(error_of(5), error_of(35));
    }

    #[test]
    fn hooks_sort_by_weight_kind_and_name_then_path_on_two_threads() {
        let hook = |kind: &str, name: &str, annotations: &str| {
            padded(
                &format!("kind: {kind}\nmetadata:\n  name: {name}\n  annotations:\n{annotations}"),
                2048,
            )
        };
        let weighted =
            |w: i64| format!("    helm.sh/hook: pre-install\n    helm.sh/hook-weight: \"{w}\"\n");
        let files = BTreeMap::from([
            ("c/templates/h0.yaml".to_string(), hook("Job", "b", &weighted(5))),
            ("c/templates/h1.yaml".to_string(), hook("ConfigMap", "z", &weighted(5))),
            ("c/templates/h2.yaml".to_string(), hook("Job", "a", &weighted(5))),
            (
                "c/templates/h3.yaml".to_string(),
                hook(
                    "Job",
                    "b",
                    "    helm.sh/hook: pre-install, Post-Install\n    helm.sh/hook-weight: \"-1\"\n    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded\n",
                ),
            ),
            ("c/templates/h4.yaml".to_string(), hook("Job", "b", &weighted(5))),
            ("c/templates/h5.yaml".to_string(), hook("Job", "x", "    helm.sh/hook: crash\n")),
            ("c/templates/h6.yaml".to_string(), hook("Secret", "s", "    helm.sh/hook: test\n")),
        ]);
        let s = sorted_both_ways(&files);
        let got: Vec<(&str, &str, i64)> = s
            .hooks
            .iter()
            .map(|h| (h.path.as_str(), h.name.as_str(), h.weight))
            .collect();
        assert_eq!(
            got,
            vec![
                ("c/templates/h3.yaml", "b", -1),
                ("c/templates/h6.yaml", "s", 0),
                ("c/templates/h1.yaml", "z", 5),
                ("c/templates/h2.yaml", "a", 5),
                ("c/templates/h0.yaml", "b", 5),
                ("c/templates/h4.yaml", "b", 5),
            ]
        );
        assert_eq!(s.hooks[0].events, vec!["pre-install", "post-install"]);
        assert_eq!(
            s.hooks[0].delete_policies,
            vec!["before-hook-creation", "hook-succeeded"]
        );
        assert!(s.manifests.is_empty(), "hooks are not release manifests");
    }

    #[test]
    fn a_deep_document_read_on_the_worker_thread_fits_its_stack() {
        // An annotation of maps nested 9,000 levels (Helm reads up to
        // 10,000), in JSON as `toJson` writes it: writing it out as the
        // annotation's text and dropping it recurse, a frame per level.
        let levels = 9_000;
        let deep = format!(
            "{{\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"deep\",\"annotations\":{{\"nested\":{}\"x\"{}}}}}}}",
            "{\"a\":".repeat(levels),
            "}".repeat(levels)
        );
        let files = BTreeMap::from([
            (
                "c/templates/a.yaml".to_string(),
                padded(
                    "kind: ConfigMap\nmetadata:\n  name: shallow\n",
                    PARALLEL_MIN_BYTES,
                ),
            ),
            // The last file is always the worker's.
            ("c/templates/z-deep.yaml".to_string(), deep),
        ]);
        // The caller's own stack is small: only the worker's may hold the
        // deep document.
        let s = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || sort_on(&files, INSTALL_ORDER, 2).map(|s| s.manifests))
            .expect("a thread starts")
            .join()
            .expect("no panic")
            .expect("sorts");
        let names: Vec<&str> = s.iter().map(|m| m.head.name.as_str()).collect();
        assert_eq!(names, vec!["shallow", "deep"]);
        let nested = &s[1].head.annotations["nested"];
        assert_eq!(nested.len(), "{\"a\":}".len() * levels + "\"x\"".len());
    }
}
