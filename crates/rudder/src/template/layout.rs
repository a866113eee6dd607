//! How `helm template` lays its output out (Helm 4.2's `pkg/cmd/template.go`
//! and `renderResources`): the release manifest trimmed, then each hook; each
//! document keeps its own trailing newlines, so a blank line precedes every
//! `---` (helm/helm#31952). `--show-only` re-splits that text and picks the
//! documents whose `# Source:` path matches, pattern by pattern.

use std::fmt::Write as _;

use chart::loader::File;
use chart::manifest::Manifest;

use crate::helm_cli::glob_match;

/// What `--hide-secret` prints in place of a `v1` Secret.
const HIDDEN_SECRET: &str = "# HIDDEN: The Secret output has been suppressed\n";

/// The release manifest as Helm's `renderResources` writes it: CRDs first
/// (with `--include-crds`), then every manifest with its `# Source:` line.
pub(crate) fn release_manifest(
    crds: &[(String, File)],
    manifests: &[Manifest],
    hide_secret: bool,
) -> String {
    let mut out = String::new();
    for (name, file) in crds {
        let _ = write!(out, "---\n# Source: {name}\n{}\n", file.text());
    }
    for m in manifests {
        if hide_secret && m.head.kind == "Secret" && m.head.api_version == "v1" {
            let _ = write!(out, "---\n# Source: {}\n{HIDDEN_SECRET}", m.source);
        } else {
            let _ = write!(out, "---\n# Source: {}\n{}\n", m.source, m.content);
        }
    }
    out
}

/// Whether a hook with these events runs for `helm test` (`test`, or Helm
/// 2's `test-success`).
pub(crate) fn is_test_hook(events: &[String]) -> bool {
    events.iter().any(|e| e == "test" || e == "test-success")
}

/// `helm template`'s text: the manifest with its surrounding whitespace
/// trimmed and one newline, then each hook (`(path, manifest)`).
pub(crate) fn template_text<'a>(
    manifest: &str,
    hooks: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> String {
    let mut out = manifest.trim().to_string();
    out.push('\n');
    for (path, text) in hooks {
        let _ = write!(out, "---\n# Source: {path}\n{text}\n");
    }
    out
}

/// `--show-only`: for each pattern in the order given, every document of
/// `text` whose source path (without the chart's name) matches it as Go's
/// `filepath.Match` does. `Err` names the first pattern matching nothing.
pub(crate) fn show_only(text: &str, patterns: &[String]) -> Result<String, String> {
    let docs = chart::manifest::split_documents(text);
    let mut out = String::new();
    for pattern in patterns {
        let mut missing = true;
        for doc in &docs {
            let Some(path) = source_path(doc) else {
                continue;
            };
            if glob_match(pattern, path) {
                let _ = write!(out, "---\n{doc}\n");
                missing = false;
            }
        }
        if missing {
            return Err(pattern.clone());
        }
    }
    Ok(out)
}

/// The first match of Helm's `# Source: [^/]+/(.+)` in a document: the path
/// after the chart's own name, to the end of its line.
fn source_path(doc: &str) -> Option<&str> {
    const MARK: &str = "# Source: ";
    let mut from = 0;
    while let Some(at) = doc[from..].find(MARK) {
        let start = from + at + MARK.len();
        let rest = &doc[start..];
        if let Some(slash) = rest.find('/').filter(|&i| i > 0) {
            let after = &rest[slash + 1..];
            let line = after.split('\n').next().unwrap_or_default();
            if !line.is_empty() {
                return Some(line);
            }
        }
        from = start;
    }
    None
}

/// What Helm holds as the manifest when the rendered files do not read as
/// YAML: every file that rendered to something (NOTES.txt aside), raw, so
/// that `--debug` shows what failed to parse.
pub(crate) fn unparsed_manifest(files: &std::collections::BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (name, text) in files {
        if name.ends_with("NOTES.txt") || text.trim().is_empty() {
            continue;
        }
        let _ = write!(out, "---\n# Source: {name}\n{text}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(source: &str, kind: &str, content: &str) -> Manifest {
        Manifest {
            source: source.into(),
            content: content.into(),
            head: chart::manifest::Head {
                api_version: "v1".into(),
                kind: kind.into(),
                ..Default::default()
            },
        }
    }

    #[test]
    fn documents_keep_their_newlines_and_the_manifest_is_trimmed() {
        let m = release_manifest(
            &[(
                "c/crds/a.yaml".into(),
                File {
                    name: "crds/a.yaml".into(),
                    data: b"kind: CRD\n"[..].into(),
                },
            )],
            &[
                manifest("c/templates/a.yaml", "ConfigMap", "kind: ConfigMap\n"),
                manifest("c/templates/s.yaml", "Secret", "kind: Secret\n"),
            ],
            true,
        );
        assert_eq!(
            m,
            "---\n# Source: c/crds/a.yaml\nkind: CRD\n\n\
             ---\n# Source: c/templates/a.yaml\nkind: ConfigMap\n\n\
             ---\n# Source: c/templates/s.yaml\n# HIDDEN: The Secret output has been suppressed\n"
        );
        let text = template_text(&m, [("c/templates/t.yaml", "kind: Pod\n")]);
        assert!(text.ends_with("suppressed\n---\n# Source: c/templates/t.yaml\nkind: Pod\n\n"));
        assert_eq!(template_text("", []), "\n");
    }

    #[test]
    fn show_only_goes_pattern_by_pattern() {
        let text = "---\n# Source: c/templates/a.yaml\nkind: A\n\n\
                    ---\n# Source: c/templates/sub/b.yaml\nkind: B\n\n\
                    ---\n# Source: c/charts/d/templates/a.yaml\nkind: D\n\n";
        let picked = show_only(
            text,
            &[
                "charts/d/templates/a.yaml".into(),
                "templates/*.yaml".into(),
            ],
        )
        .expect("found");
        assert_eq!(
            picked,
            "---\n# Source: c/charts/d/templates/a.yaml\nkind: D\n\n\n\
             ---\n# Source: c/templates/a.yaml\nkind: A\n\n\n"
        );
        assert_eq!(
            show_only(text, &["templates/nope.yaml".into()]),
            Err("templates/nope.yaml".into())
        );
    }

    #[test]
    fn source_paths_drop_the_chart_name() {
        assert_eq!(
            source_path("# Source: c/templates/a.yaml\nx"),
            Some("templates/a.yaml")
        );
        assert_eq!(source_path("kind: A\n"), None);
        assert_eq!(
            source_path("# Source: c/\n# Source: d/t.yaml"),
            Some("t.yaml")
        );
    }
}
