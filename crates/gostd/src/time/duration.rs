//! Go's `time.Duration`: an int64 count of nanoseconds, parsed by
//! `time.ParseDuration` and printed by `Duration.String` (`1h2m3.5s`).

use std::fmt;

use super::go_quote;

/// One nanosecond, Go's `time.Nanosecond`; the other units follow.
pub const NANOSECOND: u64 = 1;
pub const MICROSECOND: u64 = 1000 * NANOSECOND;
pub const MILLISECOND: u64 = 1000 * MICROSECOND;
pub const SECOND: u64 = 1000 * MILLISECOND;
pub const MINUTE: u64 = 60 * SECOND;
pub const HOUR: u64 = 60 * MINUTE;

/// Go's `time.Duration`: nanoseconds, negative allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub i64);

/// Why a text is not a Go duration; the message is Go's
/// (`time: unknown unit "d" in duration "1d"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseDurationError(String);

/// Go's `fmtFrac`: the fraction of `v / 10^prec` without trailing zeros.
fn fmt_frac(out: &mut Vec<u8>, mut v: u64, prec: usize) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            out.push(digit as u8 + b'0');
        }
        v /= 10;
    }
    if print {
        out.push(b'.');
    }
    v
}

fn fmt_int(out: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        out.push(b'0');
    }
    while v > 0 {
        out.push((v % 10) as u8 + b'0');
        v /= 10;
    }
}

/// `Duration.String()`: `1h2m3.5s`, `1.5µs`, `0s`.
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&duration_string(self.0))
    }
}

fn duration_string(d: i64) -> String {
    // Built back to front, as Go does.
    let mut out: Vec<u8> = Vec::with_capacity(32);
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    if u < SECOND {
        out.push(b's');
        if u == 0 {
            return "0s".into();
        }
        let prec = if u < MICROSECOND {
            out.push(b'n');
            0
        } else if u < MILLISECOND {
            // 'µ' reversed (UTF-8 0xC2 0xB5).
            out.extend_from_slice(&[0xB5, 0xC2]);
            3
        } else {
            out.push(b'm');
            6
        };
        u = fmt_frac(&mut out, u, prec);
        fmt_int(&mut out, u);
    } else {
        out.push(b's');
        u = fmt_frac(&mut out, u, 9);
        fmt_int(&mut out, u % 60);
        u /= 60;
        if u > 0 {
            out.push(b'm');
            fmt_int(&mut out, u % 60);
            u /= 60;
            if u > 0 {
                out.push(b'h');
                fmt_int(&mut out, u);
            }
        }
    }
    if neg {
        out.push(b'-');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

impl Duration {
    /// `time.ParseDuration`: a signed sequence of decimal numbers, each with
    /// an optional fraction and a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`),
    /// or a bare `0`; Go's error messages.
    pub fn parse(text: &str) -> Result<Duration, ParseDurationError> {
        parse_duration(text)
            .map(Duration)
            .map_err(ParseDurationError)
    }

    /// `d.Round(m)`: half away from zero, saturating.
    pub fn round(self, m: Duration) -> Duration {
        Duration(duration_round(self.0, m.0))
    }

    /// The duration as a [`std::time::Duration`]; `None` when negative.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }

    /// A [`std::time::Duration`] as Go holds it (whole nanoseconds in an
    /// `int64`), saturating at Go's largest duration (about 292 years).
    pub fn from_std(d: std::time::Duration) -> Duration {
        Duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

fn parse_duration(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {}", go_quote(orig));
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next() {
        if c == '-' || c == '+' {
            neg = c == '-';
            s = &s[1..];
        }
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return Err(invalid());
        }
        // Leading integer.
        let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut v: u64 = 0;
        for &c in &b[..n] {
            if v > (1u64 << 63) / 10 {
                return Err(invalid());
            }
            v = v * 10 + (c - b'0') as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        let pre = n > 0;
        s = &s[n..];
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if s.starts_with('.') {
            s = &s[1..];
            let fb = s.as_bytes();
            let fnum = fb.iter().take_while(|c| c.is_ascii_digit()).count();
            let mut overflow = false;
            for &c in &fb[..fnum] {
                if overflow {
                    continue;
                }
                if f > ((1u64 << 63) - 1) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + (c - b'0') as u64;
                if y > 1 << 63 {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = fnum > 0;
            s = &s[fnum..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        let ulen = s
            .char_indices()
            .find(|&(_, c)| c == '.' || c.is_ascii_digit())
            .map(|(i, _)| i)
            .unwrap_or(s.len());
        if ulen == 0 {
            return Err(format!("time: missing unit in duration {}", go_quote(orig)));
        }
        let u = &s[..ulen];
        s = &s[ulen..];
        let unit = match u {
            "ns" => NANOSECOND,
            "us" | "µs" | "μs" => MICROSECOND,
            "ms" => MILLISECOND,
            "s" => SECOND,
            "m" => MINUTE,
            "h" => HOUR,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(u),
                    go_quote(orig)
                ))
            }
        };
        if v > (1u64 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        d += v;
        if d > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > (1u64 << 63) - 1 {
        return Err(invalid());
    }
    Ok(d as i64)
}

fn duration_round(d: i64, m: i64) -> i64 {
    if m <= 0 {
        return d;
    }
    let mut r = d % m;
    if d < 0 {
        r = -r;
        if (r as u64) * 2 < m as u64 {
            return d + r;
        }
        if let Some(d1) = (d - m).checked_add(r) {
            if d1 < d {
                return d1;
            }
        }
        return i64::MIN;
    }
    if (r as u64) * 2 < m as u64 {
        return d - r;
    }
    if let Some(d1) = (d + m).checked_sub(r) {
        if d1 > d {
            return d1;
        }
    }
    i64::MAX
}
