//! Go's `strconv.FormatFloat` (every format, 32- and 64-bit) and the float
//! text of `encoding/json`. Shortest forms take their digits from Rust's
//! shortest round-trip formatting, fixed precisions from Rust's correctly
//! rounded formatting; the layout around the digits is Go's.

use std::fmt::Write as _;

/// Go's `strconv.FormatFloat(f, fmt, prec, bit_size)` for `fmt` in `b'e'`,
/// `b'E'`, `b'f'`, `b'g'`, `b'G'`, `b'x'`, `b'X'` and `b'b'`; a negative
/// `prec` asks for the shortest representation that reads back to the same
/// float of `bit_size` (32 or 64) bits.
pub fn format_float(f: f64, fmt: u8, prec: i32, bit_size: u32) -> String {
    let mut out = String::new();
    append_float(&mut out, f, fmt, prec, bit_size);
    out
}

/// [`format_float`] onto the end of `out` (Go's `strconv.AppendFloat`).
pub fn append_float(out: &mut String, f: f64, fmt: u8, prec: i32, bit_size: u32) {
    let single = bit_size == 32;
    let f = if single { f as f32 as f64 } else { f };
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    let neg = f.is_sign_negative();
    match fmt {
        b'b' if single => return format_float32_b(out, f as f32),
        b'b' | b'x' | b'X' => return format_float_binary(out, f, fmt, prec),
        b'e' | b'E' | b'f' | b'g' | b'G' => {}
        other => {
            out.push('%');
            out.push(other as char);
            return;
        }
    }
    if prec < 0 && (fmt == b'g' || fmt == b'G') {
        return append_shortest_g(out, f, single, fmt);
    }
    let a = f.abs();
    // Go's fmt never asks for more than a million digits; the cap keeps an
    // absurd direct request from exhausting memory.
    let mut prec = prec.min(1_000_000);
    let shortest = prec < 0;
    let digs = if shortest {
        let d = shortest_digits(a, single);
        prec = match fmt {
            b'e' | b'E' => (d.nd() - 1).max(0),
            b'f' => (d.nd() - d.dp).max(0),
            _ => d.nd(),
        };
        d
    } else if fmt == b'f' {
        fixed_point_digits(a, prec as usize)
    } else {
        let digits = if fmt == b'e' || fmt == b'E' {
            prec + 1
        } else {
            if prec == 0 {
                prec = 1;
            }
            prec
        };
        // An f64 has at most 767 significant decimal digits; later digits
        // are zeros, which the formatters pad. Rust's formatter also rejects
        // precisions above u16::MAX.
        parse_exp_form(&format!("{:.*e}", (digits - 1).clamp(0, 800) as usize, a))
    };
    match fmt {
        b'e' | b'E' => fmt_e(out, neg, &digs, prec, fmt),
        b'f' => fmt_f(out, neg, &digs, prec),
        _ => {
            let mut eprec = prec;
            if eprec > digs.nd() && digs.nd() >= digs.dp {
                eprec = digs.nd();
            }
            // Go decides between %e and %f on six digits when printing the
            // shortest form, so 100000 stays plain and 1e+06 does not.
            if shortest {
                eprec = 6;
            }
            let exp = digs.dp - 1;
            if exp < -4 || exp >= eprec {
                if prec > digs.nd() {
                    prec = digs.nd();
                }
                fmt_e(out, neg, &digs, prec - 1, fmt + b'e' - b'g');
            } else {
                if prec > digs.dp {
                    prec = digs.nd();
                }
                fmt_f(out, neg, &digs, (prec - digs.dp).max(0));
            }
        }
    }
}

/// Decimal digits `d` (no leading or trailing zeros) with the decimal point
/// `dp` digits from the left, as Go's `decimalSlice`. Zero has no digits.
struct Digits {
    d: Vec<u8>,
    dp: i32,
}

impl Digits {
    fn nd(&self) -> i32 {
        self.d.len() as i32
    }

    fn normalized(mut d: Vec<u8>, mut dp: i32) -> Digits {
        let lead = d.iter().take_while(|&&c| c == b'0').count();
        d.drain(..lead);
        dp -= lead as i32;
        while d.last() == Some(&b'0') {
            d.pop();
        }
        if d.is_empty() {
            dp = 0;
        }
        Digits { d, dp }
    }
}

/// Reads Rust's `{:e}` form (`1.2345e6`, `0e0`) of a non-negative float.
fn parse_exp_form(s: &str) -> Digits {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let d: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    Digits::normalized(d, exp + 1)
}

/// Correctly rounded digits of `a` with `prec` digits after the point.
fn fixed_point_digits(a: f64, prec: usize) -> Digits {
    // Exact binary fractions end within 1074 decimal places; beyond that
    // only zeros follow, which the formatter pads.
    let prec = prec.min(1100);
    let s = format!("{a:.prec$}");
    let (int_part, frac) = s.split_once('.').unwrap_or((&s, ""));
    let d: Vec<u8> = int_part.bytes().chain(frac.bytes()).collect();
    Digits::normalized(d, int_part.len() as i32)
}

/// `%e`: `-d.ddddde±dd`.
fn fmt_e(out: &mut String, neg: bool, d: &Digits, prec: i32, fmt: u8) {
    if neg {
        out.push('-');
    }
    out.push(d.d.first().map_or('0', |&c| c as char));
    if prec > 0 {
        out.push('.');
        let m = d.nd().min(prec + 1);
        let mut i = 1;
        while i < m {
            out.push(d.d[i as usize] as char);
            i += 1;
        }
        while i <= prec {
            out.push('0');
            i += 1;
        }
    }
    out.push(fmt as char);
    let mut exp = d.dp - 1;
    if d.d.is_empty() {
        exp = 0;
    }
    if exp < 0 {
        out.push('-');
        exp = -exp;
    } else {
        out.push('+');
    }
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
}

/// `%f`: `-ddddd.ddd`.
fn fmt_f(out: &mut String, neg: bool, d: &Digits, prec: i32) {
    if neg {
        out.push('-');
    }
    if d.dp > 0 {
        let m = d.nd().min(d.dp);
        for &c in &d.d[..m as usize] {
            out.push(c as char);
        }
        for _ in m..d.dp {
            out.push('0');
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            let j = d.dp + i - 1;
            let c = if 0 <= j && j < d.nd() {
                d.d[j as usize] as char
            } else {
                '0'
            };
            out.push(c);
        }
    }
}

/// strconv's `%b` (`4503599627370496p-52`) and `%x` (`0x1.8p+01`) forms,
/// built from the float's bits.
fn format_float_binary(out: &mut String, f: f64, fmt: u8, prec: i32) {
    const MANT_BITS: u32 = 52;
    let bits = f.to_bits();
    let neg = bits >> 63 != 0;
    let mut exp = ((bits >> MANT_BITS) & 0x7FF) as i64;
    let mut mant = bits & ((1u64 << MANT_BITS) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u64 << MANT_BITS;
    }
    exp -= 1023;
    if fmt == b'b' {
        if neg {
            out.push('-');
        }
        out.push_str(&mant.to_string());
        out.push('p');
        let e = exp - MANT_BITS as i64;
        if e >= 0 {
            out.push('+');
        }
        out.push_str(&e.to_string());
        return;
    }

    if mant == 0 {
        exp = 0;
    }
    // Put the leading 1 (if any) at bit 60.
    mant <<= 60 - MANT_BITS;
    while mant != 0 && mant & (1u64 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = (prec * 4) as u32;
        let extra = (mant << shift) & ((1u64 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1u64 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1u64 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8; 16] = if fmt == b'X' {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    if neg {
        out.push('-');
    }
    out.push('0');
    out.push(fmt as char);
    out.push((b'0' + ((mant >> 60) & 1) as u8) as char);
    mant <<= 4;
    if prec < 0 && mant != 0 {
        out.push('.');
        while mant != 0 {
            out.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    } else if prec > 0 {
        out.push('.');
        for _ in 0..prec {
            out.push(hex[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    }
    out.push(if fmt == b'X' { 'P' } else { 'p' });
    if exp < 0 {
        out.push('-');
        exp = -exp;
    } else {
        out.push('+');
    }
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
}

/// The shortest `%g` (`'g'`/`'G'` with precision -1), the form `%v`,
/// `toYaml` and `toJson` print most: no intermediate digit buffer.
fn append_shortest_g(out: &mut String, f: f64, single: bool, fmt: u8) {
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    let mut buf = StackText::new();
    let a = f.abs();
    let _ = if single {
        write!(buf, "{:e}", a as f32)
    } else {
        write!(buf, "{a:e}")
    };
    let mut digit_buf = [0u8; 24];
    let (nd, dp) = split_exp_form(buf.as_str(), &mut digit_buf);
    // Only ASCII digits were copied in.
    let digits = std::str::from_utf8(&digit_buf[..nd]).unwrap_or("0");
    let exp = dp - 1;
    // Go decides between %e and %f on six digits when printing the
    // shortest form, so 100000 stays plain and 1e+06 does not.
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push(if fmt == b'G' { 'E' } else { 'e' });
        push_exp(out, exp);
    } else {
        let nd = digits.len() as i32;
        if dp <= 0 {
            out.push_str("0.");
            for _ in 0..(-dp) {
                out.push('0');
            }
            out.push_str(digits);
        } else if dp >= nd {
            out.push_str(digits);
            for _ in 0..(dp - nd) {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..dp as usize]);
            out.push('.');
            out.push_str(&digits[dp as usize..]);
        }
    }
}

/// `±dd`: a signed exponent of at least two digits.
fn push_exp(out: &mut String, exp: i32) {
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    let _ = write!(out, "{a}");
}

/// Copies the digits of Rust's shortest `{:e}` form of a positive float
/// (`d` or `d.ddd`, never with trailing zeros) into `out`; returns how many
/// and the decimal point's position from their left.
fn split_exp_form(s: &str, out: &mut [u8; 24]) -> (usize, i32) {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut n = 0;
    for &c in mant.as_bytes() {
        if c.is_ascii_digit() && n < out.len() {
            out[n] = c;
            n += 1;
        }
    }
    if n == 0 {
        out[0] = b'0';
        n = 1;
    }
    (n, exp + 1)
}

/// The shortest digits that read back to `a` (as a float32 when `single`).
fn shortest_digits(a: f64, single: bool) -> Digits {
    let mut buf = StackText::new();
    let _ = if single {
        write!(buf, "{:e}", a as f32)
    } else {
        write!(buf, "{a:e}")
    };
    parse_exp_form(buf.as_str())
}

/// strconv's `%b` of a float32 (`8388608p-23`).
fn format_float32_b(out: &mut String, f: f32) {
    const MANT_BITS: u32 = 23;
    let bits = f.to_bits();
    let neg = bits >> 31 != 0;
    let mut exp = ((bits >> MANT_BITS) & 0xFF) as i64;
    let mut mant = bits & ((1u32 << MANT_BITS) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1u32 << MANT_BITS;
    }
    exp -= 127;
    if neg {
        out.push('-');
    }
    let _ = write!(out, "{mant}p");
    let e = exp - MANT_BITS as i64;
    if e >= 0 {
        out.push('+');
    }
    let _ = write!(out, "{e}");
}

/// A float64 or float32 as `encoding/json` writes it (finite values only):
/// shortest digits, `%e` below 1e-6 and from 1e21, with `e-07` cleaned up
/// to `e-7`.
pub fn format_json_float(f: f64, bit_size: u32) -> String {
    let mut out = String::new();
    append_json_float(&mut out, f, bit_size);
    out
}

/// [`format_json_float`] onto the end of `out`.
pub fn append_json_float(out: &mut String, f: f64, bit_size: u32) {
    let abs = f.abs();
    let single = bit_size == 32;
    let exp_form = abs != 0.0
        && if single {
            !(1e-6..1e21).contains(&(abs as f32))
        } else {
            !(1e-6..1e21).contains(&abs)
        };
    let start = out.len();
    append_float(out, f, if exp_form { b'e' } else { b'f' }, -1, bit_size);
    if exp_form {
        let n = out.len();
        let b = out.as_bytes();
        if n - start >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            out.remove(n - 2);
        }
    }
}

/// A small stack buffer for the text of one float: `{:e}` of an f64 is at
/// most 24 bytes, so formatting it needs no allocation.
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl StackText {
    fn new() -> Self {
        StackText {
            buf: [0; 40],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only `write_str` fills the buffer, with whole UTF-8 strings.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
