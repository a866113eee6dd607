//! The four constraint patterns of Masterminds/semver v3.4 (`constraintRegex`,
//! `constraintRangeRegex`, `findConstraintRegex`, `validConstraintRegex`),
//! scanned by hand with exactly the regexes' matches and captures.
//!
//! Every bitnami chart checks a constraint (`semverCompare` in the
//! `common.capabilities.*` helpers) and compiling the four large regexes
//! was a few percent of a whole `rudder template` run. The patterns are
//! built from
//!
//! ```text
//! CV  = v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-(ID(\.ID)*))?(\+(ID(\.ID)*))?
//! ID  = [0-9A-Za-z\-]+
//! OPS = =||!=|>|<|>=|=>|<=|=<|~|~>|\^      (the second alternative is empty)
//! \s  = [\t\n\f\r ]                        (Go's ASCII class)
//! ```
//!
//! Two facts make a greedy left-to-right scan give the leftmost-first
//! (RE2) result without backtracking:
//! - Inside `CV` each greedy part stops at a byte that only the next part
//!   could start with, so giving any byte back can never let a match
//!   succeed (or change which one is found first) where taking it failed.
//! - An operator is always followed by `\s`, `v` or a `CV` digit, none of
//!   which is an operator byte, so the alternative that matches is the one
//!   equal to the whole run of operator bytes; their order never matters.
//!
//! The regexes themselves stay in this module's tests as the oracle.

use std::ops::Range;

/// Go's `\s`: ASCII space, `\t`, `\n`, `\f`, `\r` (no `\v`).
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

/// CV's number class `[0-9|x|X|\*]`: the `|` is literally in the class.
fn is_number(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'|' | b'x' | b'X' | b'*')
}

/// The prerelease/metadata identifier class `[0-9A-Za-z\-]`.
fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn is_op_byte(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'>' | b'<' | b'~' | b'^')
}

fn is_op(op: &[u8]) -> bool {
    matches!(
        op,
        b"" | b"=" | b"!=" | b">" | b"<" | b">=" | b"=>" | b"<=" | b"=<" | b"~" | b"~>" | b"^"
    )
}

/// The end of the run of bytes from `at` that satisfy `f`.
fn run(b: &[u8], at: usize, f: fn(u8) -> bool) -> usize {
    at + b[at..].iter().take_while(|&&c| f(c)).count()
}

fn skip_space(b: &[u8], at: usize) -> usize {
    run(b, at, is_space)
}

/// The end of the operator that starts at `at`, if the run of operator
/// bytes there is one of OPS (the empty run is the empty alternative).
/// No operator is longer than two bytes, so a longer run is rejected
/// after looking at three.
fn op_end(b: &[u8], at: usize) -> Option<usize> {
    let n = b[at..]
        .iter()
        .take(3)
        .take_while(|&&c| is_op_byte(c))
        .count();
    is_op(&b[at..at + n]).then_some(at + n)
}

/// `ID(\.ID)*` scans, remembering the last one: a scan that starts at
/// an identifier byte inside it ends where it ended (it walks the same
/// bytes to the same stop), which keeps the range search linear when many
/// starts share one long prerelease (`1-1-1-…`).
#[derive(Default)]
struct Identifiers {
    last: Range<usize>,
}

impl Identifiers {
    /// The end of `ID(\.ID)*` from `at`, where `b[at]` is an identifier byte.
    fn end(&mut self, b: &[u8], at: usize) -> usize {
        if self.last.contains(&at) {
            return self.last.end;
        }
        let mut i = run(b, at, is_ident);
        while b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(|&c| is_ident(c)) {
            i = run(b, i + 1, is_ident);
        }
        self.last = at..i;
        i
    }
}

/// Whether an optional group led by `sep` starts at `at`: the byte after
/// `sep` must satisfy `first` (else the group matches nothing).
fn part_follows(b: &[u8], at: usize, sep: u8, first: fn(u8) -> bool) -> bool {
    b.get(at) == Some(&sep) && b.get(at + 1).is_some_and(|&c| first(c))
}

/// Where CV's groups lie in its greedy match from `start`. The optional
/// parts include their leading `.`, `-` or `+` and are empty when absent,
/// as Go reports an unmatched group.
struct CvMatch {
    start: usize,
    major: Range<usize>,
    minor: Range<usize>,
    patch: Range<usize>,
    pre: Range<usize>,
    end: usize,
}

/// CV at `start`, as leftmost-first matching takes it when nothing after
/// CV constrains it (or only bytes CV cannot contain follow it).
fn scan_cv(b: &[u8], start: usize, ids: &mut Identifiers) -> Option<CvMatch> {
    let number_start = start + usize::from(b.get(start) == Some(&b'v'));
    let number_end = run(b, number_start, is_number);
    if number_end == number_start {
        return None;
    }
    let dotted_number = |at: usize| {
        let end = if part_follows(b, at, b'.', is_number) {
            run(b, at + 1, is_number)
        } else {
            at
        };
        at..end
    };
    let minor = dotted_number(number_end);
    let patch = dotted_number(minor.end);
    let mut identifiers = |at: usize, sep: u8| {
        let end = if part_follows(b, at, sep, is_ident) {
            ids.end(b, at + 1)
        } else {
            at
        };
        at..end
    };
    let pre = identifiers(patch.end, b'-');
    let metadata = identifiers(pre.end, b'+');
    Some(CvMatch {
        start,
        major: number_start..number_end,
        minor,
        patch,
        pre,
        end: metadata.end,
    })
}

/// `constraintRegex`'s captures for one comparator: groups 1 to 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ComparatorParts<'a> {
    /// Group 1, the operator (empty for a bare version).
    pub op: &'a str,
    /// Group 2, the whole version with any `v` and metadata.
    pub version: &'a str,
    /// Group 3.
    pub major: &'a str,
    /// Group 4, with its leading `.`.
    pub minor: &'a str,
    /// Group 5, with its leading `.`.
    pub patch: &'a str,
    /// Group 6, with its leading `-`.
    pub pre: &'a str,
}

/// `^\s*(OPS)\s*(CV)\s*$`.
pub(super) fn comparator_parts(c: &str) -> Option<ComparatorParts<'_>> {
    let b = c.as_bytes();
    let op_start = skip_space(b, 0);
    let op_end = op_end(b, op_start)?;
    let cv = scan_cv(b, skip_space(b, op_end), &mut Identifiers::default())?;
    if skip_space(b, cv.end) != b.len() {
        return None;
    }
    Some(ComparatorParts {
        op: &c[op_start..op_end],
        version: &c[cv.start..cv.end],
        major: &c[cv.major],
        minor: &c[cv.minor],
        patch: &c[cv.patch],
        pre: &c[cv.pre],
    })
}

/// The end of a `(OPS)\s*(CV)` match starting at `at`.
fn comparator_at(b: &[u8], at: usize) -> Option<usize> {
    let op_end = op_end(b, at)?;
    scan_cv(b, skip_space(b, op_end), &mut Identifiers::default()).map(|cv| cv.end)
}

/// `findConstraintRegex.FindAllString(part, -1)`: the successive
/// leftmost-first matches of `(OPS)\s*(CV)`. A match may begin with
/// spaces (the empty operator, then `\s*`) or inside a run of operator
/// bytes (`>>=1` finds `>=1`).
pub(super) fn find_comparators(part: &str) -> Vec<&str> {
    let b = part.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < b.len() {
        match comparator_at(b, at) {
            Some(end) => {
                found.push(&part[at..end]);
                at = end;
            }
            // From anywhere in a run of spaces the match fails as it did
            // from its start; each other failed try costs a few bytes.
            None => at = skip_space(b, at).max(at + 1),
        }
    }
    found
}

/// `validConstraintRegex.MatchString(part)`:
/// `^(\s*(OPS)\s*(CV)\s*)((?:\s+|,\s*)(OPS)\s*(CV)\s*)*$`, that is
/// comparators separated by spaces or by one comma with optional spaces.
/// A version ends at the first byte CV cannot contain, and neither a
/// space nor a comma can be, so one pass decides.
pub(super) fn is_valid_group(part: &str) -> bool {
    let b = part.as_bytes();
    let mut ids = Identifiers::default();
    let mut at = skip_space(b, 0);
    loop {
        let Some(op_end) = op_end(b, at) else {
            return false;
        };
        let Some(cv) = scan_cv(b, skip_space(b, op_end), &mut ids) else {
            return false;
        };
        let next = skip_space(b, cv.end);
        if next == b.len() {
            return true;
        }
        at = if b[next] == b',' {
            skip_space(b, next + 1)
        } else if next > cv.end {
            next
        } else {
            return false;
        };
    }
}

/// One `constraintRangeRegex` match: the whole text and groups 1 and 11.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RangeMatch<'a> {
    pub whole: &'a str,
    pub from: &'a str,
    pub to: &'a str,
}

/// The search state of `find_ranges`.
struct RangeSearch<'a> {
    s: &'a str,
    ids: Identifiers,
    /// The end of a first version after which no range followed. Every
    /// start inside one run of non-space bytes that reaches a space ends
    /// its first version there, so this spares rescanning the spaces.
    failed_after: Option<usize>,
}

impl<'a> RangeSearch<'a> {
    /// `\s*(CV)\s+-\s+(CV)\s*` starting at `at`.
    fn match_at(&mut self, at: usize) -> Option<RangeMatch<'a>> {
        let (s, b) = (self.s, self.s.as_bytes());
        let from = scan_cv(b, skip_space(b, at), &mut self.ids)?;
        if self.failed_after == Some(from.end) {
            return None;
        }
        let rest = self.rest_at(from.end);
        if rest.is_none() {
            self.failed_after = Some(from.end);
        }
        let (to, end) = rest?;
        Some(RangeMatch {
            whole: &s[at..end],
            from: &s[from.start..from.end],
            to: &s[to],
        })
    }

    /// `\s+-\s+(CV)\s*` at `at`: the second version and the match's end.
    fn rest_at(&mut self, at: usize) -> Option<(Range<usize>, usize)> {
        let b = self.s.as_bytes();
        let dash = skip_space(b, at);
        if dash == at || b.get(dash) != Some(&b'-') {
            return None;
        }
        let to_start = skip_space(b, dash + 1);
        if to_start == dash + 1 {
            return None;
        }
        let to = scan_cv(b, to_start, &mut Identifiers::default())?;
        Some((to.start..to.end, skip_space(b, to.end)))
    }
}

/// Where the next range match may start after none starts at `at`. All
/// starts in one run of spaces, or in one `v?` and number run, scan the
/// same first version to the same end, so they fail alike.
fn next_range_start(b: &[u8], at: usize) -> usize {
    let after_space = skip_space(b, at);
    if after_space > at {
        return after_space;
    }
    let number_start = at + usize::from(b[at] == b'v');
    run(b, number_start, is_number).max(at + 1)
}

/// `constraintRangeRegex.FindAllStringSubmatch(s, -1)` (unanchored, so a
/// range is found inside longer text).
pub(super) fn find_ranges(s: &str) -> Vec<RangeMatch<'_>> {
    let b = s.as_bytes();
    let mut found = Vec::new();
    // A range needs `\s-\s`; most constraints have none.
    if !b
        .windows(3)
        .any(|w| is_space(w[0]) && w[1] == b'-' && is_space(w[2]))
    {
        return found;
    }
    let mut search = RangeSearch {
        s,
        ids: Identifiers::default(),
        failed_after: None,
    };
    let mut at = 0;
    while at < b.len() {
        match search.match_at(at) {
            Some(m) => {
                at += m.whole.len();
                found.push(m);
            }
            None => at = next_range_start(b, at),
        }
    }
    found
}

#[cfg(test)]
#[path = "constraint_syntax_tests.rs"]
mod tests;
