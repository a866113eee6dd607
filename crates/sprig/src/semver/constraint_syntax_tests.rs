//! The scanners against Masterminds' own patterns (compiled with the
//! `regex` crate, whose leftmost-first matching is RE2's): every short
//! string over an alphabet that reaches every branch, ranges built from
//! short versions, edge cases, and every constraint in the corpus charts.

use super::*;
use regex::Regex;
use std::path::PathBuf;

const CV_REGEX: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

struct Oracle {
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

impl Oracle {
    fn new() -> Oracle {
        // Go's `\s` is ASCII `[\t\n\f\r ]`; the regex crate's is Unicode.
        let build = |s: String| Regex::new(&s.replace(r"\s", r"[\t\n\f\r ]")).unwrap();
        Oracle {
            constraint: build(format!(r"^\s*({OPS})\s*({CV_REGEX})\s*$")),
            range: build(format!(r"\s*({CV_REGEX})\s+-\s+({CV_REGEX})\s*")),
            find: build(format!(r"({OPS})\s*({CV_REGEX})")),
            valid: build(format!(
                r"^(\s*({OPS})\s*({CV_REGEX})\s*)((?:\s+|,\s*)({OPS})\s*({CV_REGEX})\s*)*$"
            )),
        }
    }

    /// Asserts that all four scanners agree with the regexes on `s`.
    fn check(&self, s: &str) {
        let by_regex = self.constraint.captures(s).map(|c| {
            let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
            ComparatorParts {
                op: g(1),
                version: g(2),
                major: g(3),
                minor: g(4),
                patch: g(5),
                pre: g(6),
            }
        });
        assert_eq!(comparator_parts(s), by_regex, "constraint {s:?}");

        let by_regex: Vec<&str> = self.find.find_iter(s).map(|m| m.as_str()).collect();
        assert_eq!(find_comparators(s), by_regex, "find {s:?}");

        assert_eq!(is_valid_group(s), self.valid.is_match(s), "valid {s:?}");

        let by_regex: Vec<RangeMatch> = self
            .range
            .captures_iter(s)
            .map(|c| {
                let g = |i: usize| c.get(i).map_or("", |m| m.as_str());
                RangeMatch {
                    whole: g(0),
                    from: g(1),
                    to: g(11),
                }
            })
            .collect();
        assert_eq!(find_ranges(s), by_regex, "range {s:?}");
    }
}

/// Every string of length 1 to `max` over `alphabet`, handed to `f`.
fn each_string(alphabet: &[char], max: usize, mut f: impl FnMut(&str)) {
    let mut s = String::new();
    fn walk(alphabet: &[char], left: usize, s: &mut String, f: &mut impl FnMut(&str)) {
        for &c in alphabet {
            s.push(c);
            f(s);
            if left > 1 {
                walk(alphabet, left - 1, s, f);
            }
            s.pop();
        }
    }
    f("");
    walk(alphabet, max, &mut s, &mut f);
}

#[test]
fn scanners_match_the_regexes_on_every_short_string() {
    let oracle = Oracle::new();
    // A digit, CV's other number-class bytes (`|` is in the class), the
    // separators of CV's parts, `v`, every operator byte, Go's spaces and
    // `\v` (not one of them), a comma, a letter and a non-ASCII letter.
    let alphabet = [
        '1', 'x', 'X', '*', '|', '.', '-', '+', 'v', '=', '!', '>', '<', '~', '^', ' ', '\t',
        '\x0b', ',', 'a', 'é',
    ];
    let mut n = 0;
    each_string(&alphabet, 4, |s| {
        oracle.check(s);
        n += 1;
    });
    assert_eq!(n, 1 + 21 + 21 * 21 + 21 * 21 * 21 + 21 * 21 * 21 * 21);
}

#[test]
fn scanners_match_the_regexes_on_longer_strings_of_fewer_bytes() {
    let oracle = Oracle::new();
    // Enough length for two comparators, `1.1.1`, `>=1-a` and `1 - 1`.
    each_string(&['1', '.', '-', '+', 'a', '>', '=', ' ', ','], 6, |s| {
        oracle.check(s)
    });
}

#[test]
fn scanners_match_the_regexes_on_ranges() {
    let oracle = Oracle::new();
    let mut versions = Vec::new();
    each_string(&['1', 'x', '.', '-', 'v', 'a', '+'], 3, |s| {
        versions.push(s.to_string())
    });
    let separators = [" - ", "  -\t", "\n-\r", " -", "- ", "-", " - - ", " -  - "];
    for (i, a) in versions.iter().enumerate() {
        // Every pair would be a quarter of a million strings per separator;
        // a stride over the second keeps each first version's every
        // neighbour kind while the test stays a few seconds long.
        for b in versions.iter().skip(i % 7).step_by(7) {
            for sep in separators {
                oracle.check(&format!("{a}{sep}{b}"));
                oracle.check(&format!(">{a}{sep}{b} || x{a} - {b}"));
            }
        }
    }
}

#[test]
fn scanners_match_the_regexes_on_edge_cases() {
    let oracle = Oracle::new();
    let cases = [
        ">= 1.21-0",
        ">=1.19-0",
        "~> 1.2",
        "=> 1.2, =< 2",
        ">>=1",
        "!=1.2.3",
        "1.2 - 1.4",
        "v1.2 - v1.4 || >= 3",
        ">1.2 - 1.4",
        "1.2.3.4 - 5",
        "a 1 - 2 b 3 - 4",
        "1 - 2 - 3 - 4",
        "1.2 - 1.4 1.2 - 1.4",
        "1-1-1-1_1 - 2",
        ">=1.2.3 <1.2.4 || 2.x",
        ">= 1.2.3, < 2",
        "1.2.3-beta.1+build.5",
        "^1.2.3-a..b",
        "1.2.3-a.+b",
        "1|2.3",
        "*.*.*",
        "1.x.X-x",
        "v",
        "vv1",
        "  ",
        ",1",
        "1,",
        "1,,2",
        "1 , 2",
        "1\x0b2",
        "~ 1",
        "=\t1",
        "1.2.3.",
        "é1.2",
        "1.2é",
    ];
    // Many starts sharing one prerelease, metadata or run of spaces (the
    // scanners' memos), and a long version.
    let long = [
        format!("{}1_ - 2", "1-".repeat(40)),
        format!("{}1{} x - 2", "1-2.3.".repeat(20), " ".repeat(30)),
        format!("1-2.3.4.5+6-7.8 - 9 {}", "1+a.".repeat(20)),
        format!("v{}.2 - 3", "9".repeat(64)),
    ];
    for c in cases.iter().copied().chain(long.iter().map(String::as_str)) {
        oracle.check(c);
        for part in c.split("||") {
            oracle.check(part);
        }
    }
}

/// The constraints of the shared corpus charts: `semverCompare "…"` in
/// templates, `kubeVersion` and dependency versions in Chart.yaml.
fn corpus_constraints(charts: &std::path::Path) -> Vec<String> {
    fn walk(dir: &std::path::Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, files);
            } else {
                files.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(charts, &mut files);
    let semver_compare = Regex::new(r#"semverCompare\s+"([^"]*)""#).unwrap();
    let chart_field =
        Regex::new(r#"(?m)^\s*-?\s*(?:kubeVersion|version):\s*["']?([^"'\n]*)"#).unwrap();
    let mut found = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let re = match f.file_name().and_then(|n| n.to_str()) {
            Some("Chart.yaml") => &chart_field,
            Some(n) if n.ends_with(".tpl") || n.ends_with(".yaml") => &semver_compare,
            _ => continue,
        };
        found.extend(re.captures_iter(&text).map(|c| c[1].trim_end().to_string()));
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn scanners_match_the_regexes_on_corpus_constraints() {
    let shared = std::env::var_os("RUDDER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")));
    let charts = shared.join("corpus/charts");
    if !charts.is_dir() {
        eprintln!(
            "skipping: {} is absent (the shared corpus)",
            charts.display()
        );
        return;
    }
    let oracle = Oracle::new();
    let constraints = corpus_constraints(&charts);
    assert!(
        constraints.iter().any(|c| c.contains("-0")),
        "no constraints found under {}",
        charts.display()
    );
    for c in &constraints {
        oracle.check(c);
        for part in c.split("||") {
            oracle.check(part);
        }
    }
}
