//! `.helmignore` rules, as Helm's `internal/ignore` evaluates them: one Go
//! `filepath.Match` glob per line, `#` comments, a leading `/` anchors the
//! pattern at the chart root, a pattern with a `/` matches the whole path and
//! one without matches only the base name, a trailing `/` matches only
//! directories, `**` is refused, and a matching `!pattern` keeps the file.

/// A parsed `.helmignore`.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    /// The glob's characters, split once: a chart has many files.
    glob: Vec<char>,
    /// The glob's shape when it has a cheaper test than matching it.
    shape: Shape,
    negate: bool,
    must_dir: bool,
    kind: MatchKind,
}

/// Most `.helmignore` lines are a name (`.git`, `OWNERS`) or a star and a
/// suffix (`*.swp`, `*~`), tested on every file of a chart: such globs are
/// compared as text.
#[derive(Debug, Clone)]
enum Shape {
    /// No special character: only the same text matches.
    Literal(String),
    /// `*` then no special character: any text ending so, with no `/` before
    /// the suffix (Go's `*` stops at `/`).
    StarSuffix(String),
    Glob,
}

impl Shape {
    fn of(glob: &str) -> Shape {
        let special = |c: char| matches!(c, '*' | '?' | '[' | '\\');
        match glob.strip_prefix('*') {
            Some(rest) if !rest.contains(special) => Shape::StarSuffix(rest.to_string()),
            _ if !glob.contains(special) => Shape::Literal(glob.to_string()),
            _ => Shape::Glob,
        }
    }

    /// Whether `name` matches, or `None` when the glob must be matched.
    fn matches(&self, name: &str) -> Option<bool> {
        match self {
            Shape::Literal(text) => Some(name == text),
            Shape::StarSuffix(suffix) => Some(
                name.strip_suffix(suffix.as_str())
                    .is_some_and(|head| !head.contains('/')),
            ),
            Shape::Glob => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum MatchKind {
    Rooted,
    Path,
    Base,
}

/// A line of `.helmignore` that Helm refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    #[error("double-star (**) syntax is not supported")]
    DoubleStar,
    #[error("syntax error in pattern")]
    BadPattern,
}

impl Rules {
    /// An empty rule set.
    pub fn empty() -> Rules {
        Rules::default()
    }

    /// Parses the text of a `.helmignore` file.
    pub fn parse(text: &str) -> Result<Rules, IgnoreError> {
        let mut r = Rules::default();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for line in text.lines() {
            r.add(line)?;
        }
        Ok(r)
    }

    /// Helm's defaults: every dotfile directly under `templates/`.
    pub(crate) fn add_defaults(&mut self) {
        // The default pattern is well-formed.
        let _ = self.add("templates/.?*");
    }

    fn add(&mut self, rule: &str) -> Result<(), IgnoreError> {
        let rule = rule.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(IgnoreError::DoubleStar);
        }
        glob_match(rule, "abc")?;
        let mut glob = rule;
        let negate = glob.starts_with('!');
        if negate {
            glob = &glob[1..];
        }
        let must_dir = glob.ends_with('/');
        if must_dir {
            glob = &glob[..glob.len() - 1];
        }
        let kind = if glob.starts_with('/') {
            glob = &glob[1..];
            MatchKind::Rooted
        } else if glob.contains('/') {
            MatchKind::Path
        } else {
            MatchKind::Base
        };
        self.patterns.push(Pattern {
            glob: glob.chars().collect(),
            shape: Shape::of(glob),
            negate,
            must_dir,
            kind,
        });
        Ok(())
    }

    /// Whether `path` (relative to the chart root, `/`-separated) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        let mut positive = false;
        let mut negative = false;
        let base = go_base(path);
        // Split into characters only for a pattern that needs it.
        let mut full_chars: Option<Vec<char>> = None;
        let mut base_chars: Option<Vec<char>> = None;
        for p in &self.patterns {
            if p.must_dir && !is_dir {
                continue;
            }
            let (subject, chars) = match p.kind {
                MatchKind::Rooted | MatchKind::Path => (path, &mut full_chars),
                MatchKind::Base => (base, &mut base_chars),
            };
            let matched = p.shape.matches(subject).unwrap_or_else(|| {
                let chars = chars.get_or_insert_with(|| subject.chars().collect());
                // Patterns were checked when added, so matching cannot fail.
                match_from(&p.glob, chars).unwrap_or(false)
            });
            if matched {
                if p.negate {
                    negative = true;
                }
                positive = true;
            }
        }
        positive && !negative
    }
}

fn go_base(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return if p.is_empty() { "." } else { "/" };
    }
    match t.rfind('/') {
        Some(i) => &t[i + 1..],
        None => t,
    }
}

/// Go's `path/filepath.Match` on Unix: `*` matches any run of non-`/`
/// characters, `?` one non-`/` character, `[...]` a class (`^` negates,
/// ranges with `-`), and `\` escapes. The whole name must match.
pub(crate) fn glob_match(pattern: &str, name: &str) -> Result<bool, IgnoreError> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let ok = match_from(&p, &n)?;
    if !ok {
        // Go still reports a malformed pattern even when matching stops
        // early; check the rest of the pattern.
        validate(&p)?;
    }
    Ok(ok)
}

fn validate(p: &[char]) -> Result<(), IgnoreError> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return Err(IgnoreError::BadPattern);
                }
                i += 2;
            }
            '[' => {
                let (_, next) = class(p, i, None)?;
                i = next;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Parses the class starting at `p[i] == '['`; returns whether `c` is in it
/// and the index after `]`.
fn class(p: &[char], mut i: usize, c: Option<char>) -> Result<(bool, usize), IgnoreError> {
    i += 1;
    let mut negated = false;
    if i < p.len() && p[i] == '^' {
        negated = true;
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        if i >= p.len() {
            return Err(IgnoreError::BadPattern);
        }
        if p[i] == ']' && !first {
            i += 1;
            break;
        }
        first = false;
        let (lo, ni) = class_char(p, i)?;
        i = ni;
        let mut hi = lo;
        if i < p.len() && p[i] == '-' {
            let (h, ni) = class_char(p, i + 1)?;
            hi = h;
            i = ni;
        }
        if let Some(c) = c {
            if lo <= c && c <= hi {
                matched = true;
            }
        }
    }
    Ok((matched != negated, i))
}

fn class_char(p: &[char], i: usize) -> Result<(char, usize), IgnoreError> {
    match p.get(i) {
        None | Some('-') | Some(']') => Err(IgnoreError::BadPattern),
        Some('\\') => match p.get(i + 1) {
            Some(c) => Ok((*c, i + 2)),
            None => Err(IgnoreError::BadPattern),
        },
        Some(c) => Ok((*c, i + 1)),
    }
}

fn match_from(p: &[char], n: &[char]) -> Result<bool, IgnoreError> {
    if p.is_empty() {
        return Ok(n.is_empty());
    }
    match p[0] {
        '*' => {
            let rest = &p[1..];
            for k in 0..=n.len() {
                if k > 0 && n[k - 1] == '/' {
                    break;
                }
                if match_from(rest, &n[k..])? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        '?' => {
            if n.is_empty() || n[0] == '/' {
                return Ok(false);
            }
            match_from(&p[1..], &n[1..])
        }
        '[' => {
            if n.is_empty() || n[0] == '/' {
                class(p, 0, None)?;
                return Ok(false);
            }
            let (ok, next) = class(p, 0, Some(n[0]))?;
            if !ok {
                return Ok(false);
            }
            match_from(&p[next..], &n[1..])
        }
        '\\' => {
            let Some(c) = p.get(1) else {
                return Err(IgnoreError::BadPattern);
            };
            if n.first() != Some(c) {
                return Ok(false);
            }
            match_from(&p[2..], &n[1..])
        }
        c => {
            if n.first() != Some(&c) {
                return Ok(false);
            }
            match_from(&p[1..], &n[1..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*.txt", "a.txt").unwrap());
        assert!(!glob_match("*.txt", "d/a.txt").unwrap());
        assert!(glob_match("a?c", "abc").unwrap());
        assert!(glob_match("[a-c]x", "bx").unwrap());
        assert!(!glob_match("[^a-c]x", "bx").unwrap());
        assert!(glob_match("\\*", "*").unwrap());
        assert!(glob_match("[", "x").is_err());
    }

    #[test]
    fn helm_rules() {
        let r = Rules::parse("# comment\n.git/\n*.swp\n/secret.txt\ndocs/*.md\n*.tmp\n!keep.tmp\n")
            .unwrap();
        assert!(r.ignore(".git", true));
        assert!(!r.ignore(".git", false));
        assert!(r.ignore("x.swp", false));
        assert!(r.ignore("templates/x.swp", false));
        assert!(r.ignore("secret.txt", false));
        assert!(!r.ignore("sub/secret.txt", false));
        assert!(r.ignore("docs/a.md", false));
        assert!(!r.ignore("docs/x/a.md", false));
        assert!(r.ignore("a.tmp", false));
        assert!(!r.ignore("keep.tmp", false));
        assert!(!r.ignore("Chart.yaml", false));
        assert_eq!(
            Rules::parse("a/**/b\n").unwrap_err(),
            IgnoreError::DoubleStar
        );
    }

    #[test]
    fn names_and_star_suffixes_match_as_their_globs_do() {
        let globs = ["*.swp", "*~", "*", "OWNERS", ".git", "a/b", "*/x", ""];
        let names = [
            "",
            "a.swp",
            ".swp",
            "d/a.swp",
            "a.swp.x",
            "x~",
            "~",
            "OWNERS",
            "OWNERS2",
            ".git",
            "docs/a.md",
            "docs/x/a.md",
            "docs/.md",
            "a/b",
            "a/x",
            "b/x",
            "é~",
        ];
        for g in globs {
            let shape = Shape::of(g);
            assert!(!matches!(shape, Shape::Glob), "{g:?}");
            let chars: Vec<char> = g.chars().collect();
            for n in names {
                let want = match_from(&chars, &n.chars().collect::<Vec<_>>()).unwrap();
                assert_eq!(shape.matches(n), Some(want), "{g:?} on {n:?}");
            }
        }
        for g in ["a?c", "[ab]", "\\*", "*.t?p", "a*b", "docs/*.md"] {
            assert!(matches!(Shape::of(g), Shape::Glob), "{g:?}");
        }
    }

    #[test]
    fn defaults_hide_template_dotfiles() {
        let mut r = Rules::empty();
        r.add_defaults();
        assert!(r.ignore("templates/.hidden", false));
        assert!(!r.ignore("templates/shown.yaml", false));
        assert!(!r.ignore("templates/a/.hidden", false));
    }
}
