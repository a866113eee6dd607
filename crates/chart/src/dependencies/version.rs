//! Semantic versions and version ranges in Masterminds semver v3 syntax, the
//! small part Helm's chart code needs: validating `Chart.yaml` versions and
//! checking a vendored subchart against the range its parent asks for.

use std::cmp::Ordering;

/// A parsed version (Masterminds `NewVersion`: an optional `v`, one to three
/// numeric parts, an optional prerelease and build metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

impl Version {
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let (rest, build) = match s.split_once('+') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        if let Some(b) = build {
            if !ident_ok(b) {
                return None;
            }
        }
        let (core, pre) = match rest.split_once('-') {
            Some((a, b)) => (a, b),
            None => (rest, ""),
        };
        if !pre.is_empty() {
            if !ident_ok(pre) {
                return None;
            }
            // Numeric prerelease identifiers may not have leading zeros.
            for p in pre.split('.') {
                if p.len() > 1 && p.starts_with('0') && p.chars().all(|c| c.is_ascii_digit()) {
                    return None;
                }
            }
        } else if rest.ends_with('-') {
            return None;
        }
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return None;
        }
        let mut nums = [0u64; 3];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            nums[i] = p.parse().ok()?;
        }
        Some(Version {
            major: nums[0],
            minor: nums[1],
            patch: nums[2],
            pre: pre.to_string(),
        })
    }

    fn cmp_pre(a: &str, b: &str) -> Ordering {
        match (a.is_empty(), b.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        let (mut ai, mut bi) = (a.split('.'), b.split('.'));
        loop {
            match (ai.next(), bi.next()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(x), Some(y)) => {
                    let o = match (x.parse::<u64>(), y.parse::<u64>()) {
                        (Ok(p), Ok(q)) => p.cmp(&q),
                        (Ok(_), Err(_)) => Ordering::Less,
                        (Err(_), Ok(_)) => Ordering::Greater,
                        _ => x.cmp(y),
                    };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
            }
        }
    }

    pub fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| Self::cmp_pre(&self.pre, &o.pre))
    }
}

#[derive(Debug)]
struct Constraint {
    op: String,
    v: Version,
    minor_dirty: bool,
    patch_dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

fn parse_constraint(op: &str, ver: &str) -> Option<Constraint> {
    let ver = ver.trim();
    let ver_nov = ver.strip_prefix('v').unwrap_or(ver);
    if is_x(ver_nov) {
        return Some(Constraint {
            op: op.to_string(),
            v: Version {
                major: 0,
                minor: 0,
                patch: 0,
                pre: String::new(),
            },
            minor_dirty: true,
            patch_dirty: true,
        })
        .map(|mut c| {
            // A bare wildcard matches everything.
            if c.op.is_empty() || c.op == "=" {
                c.op = ">=".into();
            }
            c
        });
    }
    let (core, tail) = match ver_nov.find(['-', '+']) {
        Some(i) => (&ver_nov[..i], &ver_nov[i..]),
        None => (ver_nov, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut minor_dirty = false;
    let mut patch_dirty = false;
    let mut nums = vec![];
    for (i, p) in parts.iter().enumerate() {
        if is_x(p) {
            if i == 1 {
                minor_dirty = true;
            }
            patch_dirty = true;
            nums.push("0".to_string());
        } else if minor_dirty || patch_dirty {
            nums.push("0".to_string());
        } else {
            nums.push((*p).to_string());
        }
    }
    if parts.len() < 2 {
        minor_dirty = true;
        patch_dirty = true;
    } else if parts.len() < 3 {
        patch_dirty = true;
    }
    while nums.len() < 3 {
        nums.push("0".into());
    }
    let v = Version::parse(&format!("{}{}", nums.join("."), tail))?;
    Some(Constraint {
        op: op.to_string(),
        v,
        minor_dirty,
        patch_dirty,
    })
}

impl Constraint {
    fn dirty(&self) -> bool {
        self.minor_dirty || self.patch_dirty
    }

    fn check(&self, v: &Version) -> bool {
        let c = &self.v;
        if !v.pre.is_empty() && c.pre.is_empty() {
            return false;
        }
        let eq_wild = || {
            if self.minor_dirty {
                v.major == c.major
            } else if self.patch_dirty {
                v.major == c.major && v.minor == c.minor
            } else {
                v.compare(c) == Ordering::Equal
            }
        };
        match self.op.as_str() {
            "" | "=" => eq_wild(),
            "!=" => !eq_wild(),
            ">" => {
                if !self.dirty() {
                    return v.compare(c) == Ordering::Greater;
                }
                if v.major != c.major {
                    return v.major > c.major;
                }
                if self.minor_dirty {
                    return false;
                }
                v.minor > c.minor
            }
            "<" => v.compare(c) == Ordering::Less,
            ">=" | "=>" => v.compare(c) != Ordering::Less,
            "<=" | "=<" => {
                if !self.dirty() {
                    return v.compare(c) != Ordering::Greater;
                }
                if v.major != c.major {
                    return v.major < c.major;
                }
                if self.minor_dirty {
                    return true;
                }
                v.minor <= c.minor
            }
            "~" | "~>" => {
                if v.compare(c) == Ordering::Less {
                    return false;
                }
                if v.major != c.major {
                    return false;
                }
                if v.minor != c.minor && !self.minor_dirty {
                    return false;
                }
                true
            }
            "^" => {
                if v.compare(c) == Ordering::Less {
                    return false;
                }
                if c.major > 0 || self.minor_dirty {
                    return v.major == c.major;
                }
                if c.minor > 0 || self.patch_dirty {
                    return v.major == 0 && v.minor == c.minor;
                }
                v.major == 0 && v.minor == 0 && v.patch == c.patch
            }
            _ => false,
        }
    }
}

const OPS: [&str; 12] = [
    "!=", ">=", "=>", "<=", "=<", "~>", "=", ">", "<", "~", "^", "",
];

fn parse_and_group(group: &str) -> Option<Vec<Constraint>> {
    let group = group.trim();
    // Hyphen ranges: "1.2 - 1.4.5".
    let mut out = Vec::new();
    let normalised = group.replace(',', " ");
    let toks: Vec<&str> = normalised.split_whitespace().collect();
    let mut i = 0;
    while i < toks.len() {
        if i + 2 < toks.len() && toks[i + 1] == "-" {
            out.push(parse_constraint(">=", toks[i])?);
            out.push(parse_constraint("<=", toks[i + 2])?);
            i += 3;
            continue;
        }
        let mut tok = toks[i].to_string();
        // An operator separated from its version by spaces: ">= 1.2".
        if OPS.contains(&tok.as_str()) && i + 1 < toks.len() {
            tok.push_str(toks[i + 1]);
            i += 1;
        }
        let op = OPS
            .iter()
            .find(|op| !op.is_empty() && tok.starts_with(**op))
            .copied()
            .unwrap_or("");
        out.push(parse_constraint(op, &tok[op.len()..])?);
        i += 1;
    }
    if out.is_empty() {
        return None;
    }
    Some(out)
}

/// Whether `version` satisfies the Masterminds constraint `constraint`.
/// `None` when either does not parse.
pub fn matches(constraint: &str, version: &str) -> Option<bool> {
    let v = Version::parse(version)?;
    let mut any = false;
    for group in constraint.split("||") {
        let cs = parse_and_group(group)?;
        if cs.iter().all(|c| c.check(&v)) {
            any = true;
        }
    }
    Some(any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(Version::parse("1.2.3").is_some());
        assert!(Version::parse("v1.2").is_some());
        assert!(Version::parse("1.2.3-rc.1+build").is_some());
        assert!(Version::parse("1.2.3-01").is_none());
        assert!(Version::parse("one").is_none());
        assert!(Version::parse("1.2.3.4").is_none());
    }

    #[test]
    fn ranges() {
        let m = |c: &str, v: &str| matches(c, v).unwrap();
        assert!(m("2.x.x", "2.31.4"));
        assert!(!m("2.x.x", "3.0.0"));
        assert!(m("8.4.*", "8.4.0"));
        assert!(!m("8.4.*", "8.5.0"));
        assert!(m("32.4.3", "32.4.3"));
        assert!(!m("32.4.3", "32.4.4"));
        assert!(m(">= 1.0, < 2", "1.5.0"));
        assert!(m("^1.2.3", "1.9.0"));
        assert!(!m("^0.2.3", "0.3.0"));
        assert!(m("~1.2.3", "1.2.9"));
        assert!(!m("~1.2.3", "1.3.0"));
        assert!(m("1.2 - 1.4.5", "1.3.0"));
        assert!(m("<1 || >=3", "3.1.0"));
        assert!(!m(">=1.0.0", "1.1.0-beta"));
        assert!(m(">=1.20.0-0", "1.29.0"));
        assert!(m("*", "5.0.0"));
        assert!(matches("", "5.0.0").is_none());
    }
}
